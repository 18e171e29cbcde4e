"""The cells of one table: result rows to numbers with marks (:class:`Grid`), before any
text.

Cells
-----
One cell is one row label x one column label. Its rows are those not ``instrumented``
(those repetitions ran with counters on; their times are not comparable). Per instance
(``instance`` column), the cell's number is the median of ``value`` x ``scale`` over the
rows with status ok and ``verified`` true; over the instances of the cell, the geometric
mean. An instance with no such row is, if it has a ``timeout`` row and ``value`` is a
time (``*_s``), the lower bound "> T" with T the largest ``time_limit_s`` of those rows x
``scale`` (several instances: the geometric mean with T substituted, still "> x");
otherwise the cell shows the worst word among wrong (an answer its certificate
rejected), unverified (ok rows not verified: an objective a program only reported),
crashed, error, oom, timeout, "no value" and skipped. A cell with no rows is "-".

Numbers and their marks ("" measured, ">" lower bound, "<" upper bound, else the word)
stay structured (:class:`Grid`) until the last step, so ratios and the geometric-mean line
reason with them: num / den is "> r" when num is a lower bound, "< r" when den is one, and
"-" when both are. ``best_of`` takes per row the smallest measured number of the listed
columns, or, when all of them are lower bounds, the smallest bound (still a bound).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from matchbench.report.table_fields import (
    Fields,
    MissingField,
    field_error,
    fill_label,
    is_null,
    json_number,
    row_matches,
    where_value,
)
from matchbench.report.table_spec import JSON_FIELDS, ReportSpecError

__all__ = [
    "NUMBER_MARKS",
    "Grid",
    "default_unit",
    "geomean",
    "is_time",
    "ratio_column",
    "table_grid",
    "value_name",
]

#: Words a cell without a number shows, worst first.
_WORDS = ("wrong", "unverified", "crashed", "error", "oom", "timeout", "no value", "skipped")
NUMBER_MARKS = ("", ">", "<")


@dataclass
class Grid:
    """One table's cells, before formatting.

    ``value`` holds the numbers (NaN where none); ``mark`` says what each is: "" a
    measured number, ">" a lower bound, "<" an upper bound, else the word the cell
    shows ("-" for no rows). ``kind`` maps each column to "ours", "paper" or "ratio".
    """

    value: pd.DataFrame
    mark: pd.DataFrame
    kind: dict[str, str] = field(default_factory=dict)
    info: pd.DataFrame | None = None

    def has_number(self, col: str) -> pd.Series:
        return self.mark[col].isin(NUMBER_MARKS) & self.value[col].notna()

    def add(self, col: str, value: pd.Series, mark: pd.Series, kind: str, table: str = "") -> None:
        if col in self.value.columns:
            raise ReportSpecError(f"table {table!r}: two columns labelled {col!r}")
        self.value[col] = value.reindex(self.value.index).astype(float)
        self.mark[col] = mark.reindex(self.mark.index).fillna("-").astype(object)
        self.kind[col] = kind


def geomean(values: Sequence[float]) -> float:
    a = np.asarray(values, dtype=float)
    if len(a) == 0:
        return math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.exp(np.mean(np.log(a))))


def _worst(words: Sequence[str]) -> str:
    return min(words, key=lambda w: _WORDS.index(w) if w in _WORDS else len(_WORDS))


def _instance_cell(g: pd.DataFrame, value: str, scale: float) -> tuple[float, str]:
    """One instance of one cell: (median, ""), (limit, ">") or (nan, word)."""
    vals = pd.to_numeric(g[value], errors="coerce")
    ok = g["status"].eq("ok")
    good = ok & g["verified"].eq(True) & vals.notna()
    if good.any():
        return float(vals[good].median()) * scale, ""
    timeouts = g[g["status"].eq("timeout")]
    if len(timeouts) and is_time(value):
        limit = pd.to_numeric(timeouts["time_limit_s"], errors="coerce").max()
        if pd.notna(limit):
            return float(limit) * scale, ">"
    words = []
    for status, verified in zip(g["status"], g["verified"], strict=True):
        if status == "ok":
            words.append("no value" if verified is True or verified == True else "unverified")  # noqa: E712
        else:
            words.append(str(status) if not is_null(status) else "error")
    return math.nan, _worst(words)


def _cell(parts: list[tuple[float, str]]) -> tuple[float, str]:
    words = [m for _, m in parts if m not in NUMBER_MARKS]
    if words:
        return math.nan, _worst(words)
    mark = ">" if any(m == ">" for _, m in parts) else ""
    return geomean([v for v, _ in parts]), mark


def _natural_key(s: str) -> list[Any]:
    return [
        (0, float(t), "") if t[0].isdigit() else (1, 0.0, t)
        for t in re.findall(r"\d+(?:\.\d+)?|\D+", s)
    ]


def _order(labels: Sequence[str], first: Sequence[Any] | None = None) -> list[str]:
    first = [str(x) for x in (first or []) if str(x) in labels]
    rest = sorted((x for x in labels if x not in first), key=_natural_key)
    return [*first, *rest]


def is_time(value: str | Mapping[str, str]) -> bool:
    """A column of seconds (``t_solve_s``), not a rate per second (``edges_per_s``): only
    those read a timeout as the lower bound "> T" (a derived quotient never does)."""
    if isinstance(value, Mapping):
        return False
    return value.endswith("_s") and not value.endswith("_per_s")


#: the column a derived ``{num, den}`` value is computed into before the cells are drawn
_DERIVED = "_value"


def value_name(value: str | Mapping[str, str]) -> str:
    """The caption's name of ``value``: a column, or ``num / den``."""
    if isinstance(value, Mapping):
        quotient = f"{value['num']} / {value['den']}"
        return f"1 - {quotient}" if value.get("complement") else quotient
    return str(value)


def _with_value(frame: pd.DataFrame, value: str | Mapping[str, str]) -> tuple[pd.DataFrame, str]:
    """``frame`` and the column holding the table's numbers: ``value`` itself, or the
    row-wise quotient ``num / den`` in float64 (NaN where either side is null or den is 0),
    or ``1 - num / den`` with ``complement``."""
    if not isinstance(value, Mapping):
        if str(value) in frame.columns:
            return frame, str(value)
        return frame.assign(**{_DERIVED: _column(frame, str(value))}), _DERIVED
    num = _column(frame, value["num"])
    den = _column(frame, value["den"])
    quotient = num / den.where(den != 0)
    if value.get("complement"):
        quotient = 1.0 - quotient
    return frame.assign(**{_DERIVED: quotient}), _DERIVED


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    """A value's numbers per row (float64, NaN where none): a result column, or a key of
    the rows' counters_json / phases_json (``counters.NAME``, ``phases.NAME``)."""
    for prefix, column in JSON_FIELDS.items():
        if name.startswith(prefix):
            key = name[len(prefix) :]
            texts = frame[column] if column in frame.columns else pd.Series(None, index=frame.index)
            return pd.Series(
                [json_number(t, key) for t in texts], index=frame.index, dtype="float64"
            )
    return pd.to_numeric(frame[name], errors="coerce").astype("float64")


def default_unit(value: str | Mapping[str, str], scale: float) -> str:
    if not (is_time(value) or (isinstance(value, str) and value.startswith("phases."))):
        return ""
    return {1.0: "s", 1e3: "ms", 1e6: "us"}.get(float(scale), "")


def _side(grid: Grid, side: Any) -> tuple[pd.Series, pd.Series]:
    """A ratio's numerator or denominator: a column, or ``{best_of: [...]}`` of columns."""
    index = grid.value.index
    if isinstance(side, Mapping):
        cols = [str(c) for c in side["best_of"] if str(c) in grid.value.columns]
        value = pd.Series(np.nan, index=index)
        mark = pd.Series("-", index=index, dtype=object)
        for r in index:
            exact = [
                grid.value.at[r, c]
                for c in cols
                if grid.mark.at[r, c] == "" and pd.notna(grid.value.at[r, c])
            ]
            bounds = [grid.value.at[r, c] for c in cols if grid.mark.at[r, c] == ">"]
            if exact:
                value[r], mark[r] = min(exact), ""
            elif bounds:
                value[r], mark[r] = min(bounds), ">"
        return value, mark
    col = str(side)
    if col not in grid.value.columns:
        return pd.Series(np.nan, index=index), pd.Series("-", index=index, dtype=object)
    return grid.value[col], grid.mark[col]


def ratio_column(grid: Grid, num: Any, den: Any) -> tuple[pd.Series, pd.Series]:
    nv, nm = _side(grid, num)
    dv, dm = _side(grid, den)
    value = pd.Series(np.nan, index=grid.value.index)
    mark = pd.Series("-", index=grid.value.index, dtype=object)
    for r in value.index:
        if nm[r] not in ("", ">") or dm[r] not in ("", ">") or pd.isna(nv[r]) or pd.isna(dv[r]):
            continue
        if nm[r] == ">" and dm[r] == ">":
            continue  # both unknown: no bound either way
        with np.errstate(divide="ignore", invalid="ignore"):
            value[r] = float(np.float64(nv[r]) / np.float64(dv[r]))
        mark[r] = ">" if nm[r] == ">" else "<" if dm[r] == ">" else ""
    return value, mark


def table_grid(frame: pd.DataFrame, t: Mapping[str, Any]) -> tuple[Grid, pd.DataFrame]:
    """One table's cells (our columns and ``row_info``) from normalized result rows.

    Returns the grid and the rows the table used: those passing ``where``, instrumented
    ones included (they count for provenance and ``row_info``, not for cells). Paper and
    ratio columns are added by the renderer.
    """
    title = str(t.get("title", ""))
    value = t.get("value", "t_solve_s")
    scale = float(t.get("scale", 1))
    where = t.get("where") or {}
    positions, rows, cols, fields = [], [], [], []
    for i, rec in enumerate(frame.to_dict("records")):
        f = Fields(rec)
        try:
            ok = all(row_matches(where_value(f, k, v), v) for k, v in where.items())
        except MissingField as exc:
            raise field_error(title, "where", exc.args[0]) from None
        if not ok:
            continue
        positions.append(i)
        fields.append(f)
        rows.append(fill_label(t["rows"], f, title, "rows"))
        cols.append(fill_label(t["columns"], f, title, "columns"))
    used = frame.iloc[positions].copy()
    used["_row"], used["_col"] = rows, cols
    timed, value = _with_value(used[~used["instrumented"].eq(True)], value)

    row_labels = _order(sorted(set(rows)))
    col_labels = _order(sorted(set(timed["_col"])), t.get("column_order"))
    value_df = pd.DataFrame(np.nan, index=pd.Index(row_labels, dtype=object), columns=col_labels)
    mark_df = pd.DataFrame("-", index=value_df.index, columns=col_labels, dtype=object)
    for (r, c), g in timed.groupby(["_row", "_col"], sort=False):
        parts = [
            _instance_cell(gi, value, scale)
            for _, gi in g.groupby(g["instance"].fillna(""), sort=False)
        ]
        value_df.at[r, c], mark_df.at[r, c] = _cell(parts)

    info = pd.DataFrame(index=value_df.index)
    for label, name in (t.get("row_info") or {}).items():
        firsts: dict[str, Any] = {}
        for f, r in zip(fields, rows, strict=True):
            if r in firsts:
                continue
            try:
                v = f[name]
            except MissingField as exc:
                raise field_error(title, f"row_info {label!r}", exc.args[0]) from None
            if not is_null(v) and v != "":
                firsts[r] = v
        info[str(label)] = pd.Series(firsts, dtype=object).reindex(info.index)
    grid = Grid(value_df, mark_df, {c: "ours" for c in col_labels}, info)
    return grid, used
