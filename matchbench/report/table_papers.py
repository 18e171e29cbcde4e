"""A paper's own numbers as columns of a table (``paper:`` in a table's spec).

The numbers are kept once as data, ``matchbench/data/papers/<file>.csv`` (format: that
folder's README), one row per (table, row, column) with its unit, device and source;
a time converts to the table's unit, anything else must already be in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from matchbench.report.table_cells import Grid, is_time
from matchbench.report.table_spec import ReportSpecError

__all__ = ["PAPERS_DIR", "paper_columns"]

#: The paper numbers shipped with matchbench (``<file>.csv``, see the README there).
PAPERS_DIR = Path(__file__).resolve().parents[1] / "data" / "papers"

_PAPER_CSV_COLUMNS = ("table", "row", "column", "value", "unit", "device", "source")
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def _read_paper(
    paper: Mapping[str, Any], title: str, papers_dir: Path
) -> tuple[pd.DataFrame, Path]:
    path = Path(papers_dir) / f"{paper['file']}.csv"
    if not path.is_file():
        raise ReportSpecError(f"table {title!r}: paper file {path} not found")
    try:
        df = pd.read_csv(path, dtype={c: str for c in _PAPER_CSV_COLUMNS if c != "value"})
    except (OSError, ValueError) as exc:
        raise ReportSpecError(f"table {title!r}: paper file {path}: {exc}") from None
    missing = [c for c in _PAPER_CSV_COLUMNS if c not in df.columns]
    if missing:
        raise ReportSpecError(f"table {title!r}: paper file {path} lacks columns {missing}")
    for c in ("table", "row", "column"):
        df[c] = df[c].fillna("").str.strip()
    sub = df[df["table"] == str(paper["table"])]
    if sub.empty:
        have = sorted(df["table"].unique().tolist())
        raise ReportSpecError(
            f"table {title!r}: paper file {path} has no table {str(paper['table'])!r} "
            f"(tables there: {', '.join(have) or 'none'})"
        )
    return sub, path


def paper_columns(
    grid: Grid, t: Mapping[str, Any], title: str, unit: str, papers_dir: Path
) -> list[str]:
    """Add the paper's columns to ``grid``; returns caption notes."""
    paper = t["paper"]
    sub, path = _read_paper(paper, title, papers_dir)
    value = t.get("value", "t_solve_s")
    scale = float(t.get("scale", 1))
    notes = []
    for paper_col, label in paper["columns"].items():
        c = sub[sub["column"] == str(paper_col)]
        if c.empty:
            have = sorted(sub["column"].unique().tolist())
            raise ReportSpecError(
                f"table {title!r}: paper file {path}, table {paper['table']}: no column "
                f"{paper_col!r} (columns: {', '.join(have)})"
            )
        units = c["unit"].fillna("").str.strip()
        factor = pd.Series(np.nan, index=c.index)
        if is_time(value):
            factor = units.map(_SECONDS) * scale
        factor[units == unit] = 1.0
        if factor.isna().any():
            bad = sorted(set(units[factor.isna()]))
            raise ReportSpecError(
                f"table {title!r}: paper file {path}, column {paper_col!r}: unit {bad} "
                f"does not convert to {unit or 'the table (no unit)'}"
            )
        nums = pd.to_numeric(c["value"], errors="coerce") * factor
        series = pd.Series(nums.to_numpy(), index=c["row"].to_numpy())
        series = series[~series.index.duplicated()]
        vals = series.reindex(grid.value.index)
        grid.add(str(label), vals, vals.notna().map({True: "", False: "-"}), "paper", title)
        shown = c[c["row"].isin(grid.value.index)]
        shown = shown if len(shown) else c
        devices = ", ".join(sorted(set(shown["device"].dropna())))
        sources = "; ".join(sorted(set(shown["source"].dropna())))
        where = "; ".join(x for x in (devices, sources) if x)
        notes.append(f"{label} = the paper's {paper_col}" + (f" ({where})" if where else ""))
    return [f"{'; '.join(notes)}, from {path.name}."]
