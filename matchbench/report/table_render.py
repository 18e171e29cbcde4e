"""Tables as text: the cells of :mod:`matchbench.report.table_cells` formatted, with
captions, paper and ratio columns, the geometric-mean line and the best number in bold,
written as Markdown or as a small plain HTML page (:func:`render_experiment`).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from matchbench.report.table_cells import (
    NUMBER_MARKS,
    Grid,
    default_unit,
    geomean,
    is_time,
    ratio_column,
    table_grid,
    value_name,
)
from matchbench.report.table_fields import is_null
from matchbench.report.table_papers import PAPERS_DIR, paper_columns
from matchbench.report.table_spec import ReportSpecError, check_spec
from matchbench.results.compare_format import md_escape
from matchbench.results.selection import normalize

__all__ = ["render_experiment"]


def _num(x: float, digits: int) -> str:
    if not math.isfinite(x):
        return str(x)
    return np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")


def _info_text(v: Any, digits: int) -> str:
    if is_null(v) or v == "":
        return "-"
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        return str(int(v)) if float(v).is_integer() else _num(float(v), digits)
    return str(v)


def _cell_text(v: float, mark: str, kind: str, unit: str, digits: int) -> str:
    if mark not in NUMBER_MARKS or pd.isna(v):
        return mark if mark not in NUMBER_MARKS else "-"
    if kind == "ratio":
        text = f"{_num(v, digits)}x"
    else:
        text = _num(v, digits)
        if mark and unit:
            text = f"{text} {unit}"
    return f"{mark} {text}" if mark else text


@dataclass
class _Rendered:
    title: str
    caption: list[str]
    header: list[str]
    body: list[list[str]]
    bold: list[list[bool]]


def _geomean_line(grid: Grid) -> tuple[pd.Series, pd.Series, dict[str, str]]:
    value = pd.Series(np.nan, index=grid.value.columns)
    mark = pd.Series("-", index=grid.value.columns, dtype=object)
    counts: dict[str, str] = {}
    n = len(grid.value.index)
    for c in grid.value.columns:
        has = grid.has_number(c)
        marks = set(grid.mark[c][has])
        if not has.any() or {">", "<"} <= marks:
            continue
        value[c] = geomean(grid.value[c][has].tolist())
        mark[c] = ">" if ">" in marks else "<" if "<" in marks else ""
        if has.sum() < n:
            counts[c] = f" ({int(has.sum())}/{n} rows)"
    return value, mark, counts


def _bold(grid: Grid, values: pd.Series, marks: pd.Series, best: str | None) -> set[str]:
    if best is None:
        return set()
    ours = [c for c, k in grid.kind.items() if k == "ours"]
    exact = {c: values[c] for c in ours if marks[c] == "" and pd.notna(values[c])}
    if not exact:
        return set()
    target = min(exact.values()) if best == "min" else max(exact.values())
    return {c for c, v in exact.items() if v == target}


def _provenance(used: pd.DataFrame) -> str:
    runs = sorted(used["run_id"].dropna().astype(str).unique().tolist())
    gpus = sorted(used["gpu_model"].fillna("cpu").astype(str).unique().tolist())
    commits = sorted(used["git_commit"].dropna().astype(str).str[:12].unique().tolist())
    dirty = " (uncommitted changes)" if used["git_dirty"].eq(True).any() else ""
    return (
        f"Run {', '.join(runs) or '?'}; GPU {', '.join(gpus) or '?'}; "
        f"commit {', '.join(commits) or '?'}{dirty}."
    )


def _render_table(frame: pd.DataFrame, t: Mapping[str, Any], papers_dir: Path) -> _Rendered:
    title = str(t["title"])
    value = t.get("value", "t_solve_s")
    scale = float(t.get("scale", 1))
    unit = str(t.get("unit", default_unit(value, scale)))
    digits = int(t.get("digits", 3))
    grid, used = table_grid(frame, t)

    scaled = f"{value_name(value)} x {t['scale']}" if scale != 1 else value_name(value)
    caption = [
        f"Cells: {scaled}{f' in {unit}' if unit else ''}, the median over an instance's "
        "verified ok repetitions (instrumented ones left out), the geometric mean over "
        "the instances of a cell"
        + (f"; > T {unit} = killed at the time limit T" if is_time(value) else "")
        + "; - = no rows."
    ]
    if t.get("paper"):
        caption += paper_columns(grid, t, title, unit, papers_dir)
    for r in t.get("ratios") or []:
        v, m = ratio_column(grid, r["num"], r["den"])
        grid.add(str(r["label"]), v, m, "ratio", title)
    if t.get("geomean"):
        caption.append(
            "Last line: each column's geometric mean over the rows where it has a number "
            "(k/n rows: over k of the n rows)."
        )
    if used.empty:
        caption.append("No rows of the run match this table.")
    else:
        caption.append(_provenance(used))

    info = grid.info if grid.info is not None else pd.DataFrame(index=grid.value.index)
    rows_template = t["rows"] if isinstance(t["rows"], str) else t["rows"][0]
    row_header = re.sub(r"[{}]", "", rows_template).strip() or "row"
    header = [row_header, *info.columns, *grid.value.columns]
    body, bold = [], []
    for r in grid.value.index:
        cells = [str(r), *(_info_text(info.at[r, c], digits) for c in info.columns)]
        cells += [
            _cell_text(grid.value.at[r, c], grid.mark.at[r, c], grid.kind[c], unit, digits)
            for c in grid.value.columns
        ]
        best = _bold(grid, grid.value.loc[r], grid.mark.loc[r], t.get("best"))
        body.append(cells)
        bold.append([False] * (1 + len(info.columns)) + [c in best for c in grid.value.columns])
    if t.get("geomean") and len(grid.value.index):
        gv, gm, counts = _geomean_line(grid)
        cells = ["geometric mean", *("" for _ in info.columns)]
        cells += [
            (_cell_text(gv[c], gm[c], grid.kind[c], unit, digits) + counts.get(c, ""))
            if gm[c] in NUMBER_MARKS
            else "-"
            for c in grid.value.columns
        ]
        # Only columns with a number in every row compete for the best mean.
        full = gm.where([c not in counts for c in gm.index], "-")
        best = _bold(grid, gv, full, t.get("best"))
        body.append(cells)
        bold.append([False] * (1 + len(info.columns)) + [c in best for c in grid.value.columns])
    return _Rendered(title, caption, [str(h) for h in header], body, bold)


def _markdown(spec: Mapping[str, Any], tables: list[_Rendered], command: str | None) -> str:
    out = [f"## {spec.get('title') or 'matchbench report'}", ""]
    if spec.get("description"):
        out += [" ".join(str(spec["description"]).split()), ""]
    if command:
        out += [f"Made by: `{command}`", ""]
    for t in tables:
        out += [f"### {t.title}", "", " ".join(t.caption), ""]
        out.append("| " + " | ".join(md_escape(h) for h in t.header) + " |")
        out.append("|" + "|".join(":---" if i == 0 else "---:" for i in range(len(t.header))) + "|")
        for cells, bold in zip(t.body, t.bold, strict=True):
            shown = [
                f"**{md_escape(c)}**" if b else md_escape(c)
                for c, b in zip(cells, bold, strict=True)
            ]
            out.append("| " + " | ".join(shown) + " |")
        out.append("")
    return "\n".join(out)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 80em; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 2em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.geomean td { border-top: 2px solid #888; }
p.caption { color: #444; font-size: 0.9em; max-width: 60em; }
"""


def _html(spec: Mapping[str, Any], tables: list[_Rendered], command: str | None) -> str:
    e = html.escape
    title = str(spec.get("title") or "matchbench report")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h2>{e(title)}</h2>",
    ]
    if spec.get("description"):
        out.append(f"<p>{e(' '.join(str(spec['description']).split()))}</p>")
    if command:
        out.append(f"<p>Made by: <code>{e(command)}</code></p>")
    for t in tables:
        out += [f"<h3>{e(t.title)}</h3>", f'<p class="caption">{e(" ".join(t.caption))}</p>']
        out.append(
            "<table><thead><tr>"
            + "".join(f"<th>{e(h)}</th>" for h in t.header)
            + "</tr></thead><tbody>"
        )
        for k, (cells, bold) in enumerate(zip(t.body, t.bold, strict=True)):
            geo = k == len(t.body) - 1 and cells[0] == "geometric mean"
            tds = []
            for i, (c, b) in enumerate(zip(cells, bold, strict=True)):
                text = f"<b>{e(c)}</b>" if b else e(c)
                tds.append(f"<td>{text}</td>" if i == 0 else f'<td class="num">{text}</td>')
            out.append(('<tr class="geomean">' if geo else "<tr>") + "".join(tds) + "</tr>")
        out.append("</tbody></table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def render_experiment(
    frame: pd.DataFrame,
    spec: dict[str, Any],
    *,
    fmt: str = "md",
    command: str | None = None,
    papers_dir: str | Path | None = None,
) -> str:
    """The tables of an experiment's ``report`` section, drawn from result rows.

    Parameters
    ----------
    frame : DataFrame
        Result rows (:data:`~matchbench.results.schema.SCHEMA` columns), usually
        :func:`select_experiment_rows`.
    spec : dict
        The ``report`` section (module docstring), e.g. :func:`experiment_spec`.
    fmt : {"md", "html"}
        Markdown, or a self-contained HTML page (plain tables, a few lines of CSS).
    command : str, optional
        The command that made the report, shown under the title.
    papers_dir : path, optional
        Where the paper CSV files are (default :data:`PAPERS_DIR`).

    Raises
    ------
    ReportSpecError
        For a spec that does not fit the rows (a template field found nowhere, a paper
        file or table that does not exist, an unknown key).
    """
    if fmt not in ("md", "html"):
        raise ReportSpecError(f"format must be md or html, not {fmt!r}")
    check_spec(spec)
    frame = normalize(frame)
    papers = Path(papers_dir) if papers_dir is not None else PAPERS_DIR
    tables = [_render_table(frame, t, papers) for t in spec["tables"]]
    return _markdown(spec, tables, command) if fmt == "md" else _html(spec, tables, command)
