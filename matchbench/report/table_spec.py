"""The ``report`` section of an experiment preset: the contract, and its check.

The contract the presets follow
-------------------------------
::

    report:
      title: "Deveci et al. 2013, Table 2 on this machine"
      description: "free text paragraph"            # optional
      tables:
        - title: "Table 2: solve seconds after the cheap matching"
          where: {problem: mcm, algorithm: [apfb, hk]}   # optional: field -> value or list
          rows: "{instance}"           # row label template (str.format with the fields below)
          columns: "{algorithm}"       # column label template (either: or a list, below)
          value: t_solve_s             # numeric result column; default t_solve_s;
                                       # counters.NAME / phases.NAME: a number of the
                                       # row's counters_json / phases_json; or
                                       # {num: objective, den: bound}: per result row the
                                       # quotient of two numeric columns; with
                                       # complement: true, 1 - num / den (a gap to optimality)
          scale: 1                     # multiply values (1000 -> ms); default 1
          unit: s                      # in lower-bound cells ("> 30 s") and the caption;
                                       # default s, ms or us for a *_s value at scale 1,
                                       # 1000 or 1e6, else none
          digits: 3                    # significant digits; default 3
          row_info: {rows: n_rows, edges: n_edges, init: objective_init}
                                       # label -> field; first non-null per row label,
                                       # shown before the solver columns
          column_order: [apfb, hk]     # optional: these first, the rest in natural order
          paper:                       # optional: the paper's numbers
            file: deveci2013           # matchbench/data/papers/deveci2013.csv
            table: "2"
            columns: {"APFB-GPUBFS-WR-CT C2050": "paper C2050"}  # paper column -> our label
          ratios:                      # optional: num / den of two columns, "12.3x"
            - {label: "scipy_hk / apfb", num: scipy_hk, den: apfb}
            - {label: "best CPU / apfb", num: {best_of: [scipy_hk, hk, pfp, pr]}, den: apfb}
          geomean: true                # optional last line: each column's geometric mean
                                       # over the rows where it has a number ("(k/n rows)"
                                       # when not all)
          best: min                    # optional (min or max): bold the best number of
                                       # each row among the solver columns

Unknown keys are errors (a typo must not vanish silently).

Template fields: :mod:`matchbench.report.table_fields`; what a cell shows:
:mod:`matchbench.report.table_cells`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matchbench.results.schema import COLUMNS

__all__ = ["JSON_FIELDS", "ReportSpecError", "check_spec", "value_field"]

_REPORT_KEYS = frozenset({"title", "description", "tables"})
_TABLE_KEYS = frozenset(
    {
        "title",
        "where",
        "rows",
        "columns",
        "value",
        "scale",
        "unit",
        "digits",
        "row_info",
        "column_order",
        "paper",
        "ratios",
        "geomean",
        "best",
    }
)
_PAPER_KEYS = frozenset({"file", "table", "columns"})
_RATIO_KEYS = frozenset({"label", "num", "den"})

#: Prefixes of the numbers read from a row's JSON columns: ``counters.NAME``, ``phases.NAME``.
JSON_FIELDS = {"counters.": "counters_json", "phases.": "phases_json"}


class ReportSpecError(ValueError):
    """An experiment's ``report`` section that cannot be rendered; the message says why."""


def value_field(name: Any) -> bool:
    """Whether ``name`` can be a table's value: a result column or ``counters.`` /
    ``phases.`` and a key."""
    if not isinstance(name, str):
        return False
    return name in COLUMNS or any(name.startswith(p) and len(name) > len(p) for p in JSON_FIELDS)


def check_spec(spec: Mapping[str, Any]) -> None:
    unknown = set(spec) - _REPORT_KEYS
    if unknown:
        raise ReportSpecError(
            f"report: unknown keys {sorted(unknown)} (known: {sorted(_REPORT_KEYS)})"
        )
    tables = spec.get("tables")
    if not isinstance(tables, list) or not tables:
        raise ReportSpecError("report: 'tables' must be a non-empty list")
    for i, t in enumerate(tables):
        if not isinstance(t, Mapping):
            raise ReportSpecError(f"report.tables[{i}]: a mapping, not {type(t).__name__}")
        title = t.get("title", f"report.tables[{i}]")
        unknown = set(t) - _TABLE_KEYS
        if unknown:
            raise ReportSpecError(
                f"table {title!r}: unknown keys {sorted(unknown)} (known: {sorted(_TABLE_KEYS)})"
            )
        if not isinstance(t.get("title"), str):
            raise ReportSpecError(f"table {title!r}: 'title' must be a string")
        for key in ("rows", "columns"):
            v = t.get(key)
            if not (
                isinstance(v, str)
                or (isinstance(v, list) and v and all(isinstance(x, str) for x in v))
            ):
                raise ReportSpecError(
                    f"table {title!r}: {key!r} must be a template or a list of templates"
                )
        value = t.get("value", "t_solve_s")
        if isinstance(value, Mapping):
            if not {"num", "den"} <= set(value) <= {"num", "den", "complement"} or not isinstance(
                value.get("complement", False), bool
            ):
                raise ReportSpecError(
                    f"table {title!r}: a derived value is {{num: COLUMN, den: COLUMN}} "
                    f"(and optionally complement: true), not {dict(value)!r}"
                )
            for side in ("num", "den"):
                if not value_field(value[side]):
                    raise ReportSpecError(
                        f"table {title!r}: value.{side} {value[side]!r} is not a result column"
                    )
        elif not value_field(value):
            raise ReportSpecError(f"table {title!r}: value {value!r} is not a result column")
        if t.get("best") not in (None, "min", "max"):
            raise ReportSpecError(f"table {title!r}: best must be min or max, not {t['best']!r}")
        paper = t.get("paper")
        if paper is not None:
            if not isinstance(paper, Mapping) or set(paper) != _PAPER_KEYS:
                raise ReportSpecError(
                    f"table {title!r}: paper needs exactly the keys {sorted(_PAPER_KEYS)}"
                )
            if not isinstance(paper["columns"], Mapping):
                raise ReportSpecError(f"table {title!r}: paper.columns maps paper -> our label")
        for r in t.get("ratios") or []:
            if not isinstance(r, Mapping) or set(r) != _RATIO_KEYS:
                raise ReportSpecError(
                    f"table {title!r}: each ratio needs exactly the keys {sorted(_RATIO_KEYS)}"
                )
            for side in (r["num"], r["den"]):
                if isinstance(side, Mapping) and set(side) != {"best_of"}:
                    raise ReportSpecError(
                        f"table {title!r}: ratio {r['label']!r}: a mapping side is {{best_of: [...]}}"
                    )
