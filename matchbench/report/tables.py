"""Paper tables as views of result rows: ``matchbench report --experiment NAME``.

An experiment preset ``conf/experiment/NAME.yaml`` runs a paper's table
(``matchbench -m +experiment=NAME``; its rows carry ``experiment == NAME``) and declares,
in a ``report`` section, how the table is drawn from those rows. This module reads the
section, never times anything, and renders Markdown or a small plain HTML page. The
paper's own numbers are kept once as data in ``matchbench/data/papers/<file>.csv``
(format: that folder's README).

The ``report`` section (the contract the presets follow)
--------------------------------------------------------
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

Fields of ``rows``, ``columns``, ``where`` and ``row_info``: every result column of
:data:`~matchbench.results.schema.SCHEMA`, then the keys of the row's ``params_json``
(solver parameters: bfs, threads, strategy, k, ...), then the keys of its
``instance_params`` (n, cost_range, scale, seed, ...); the first source that has the key
(with a non-null value) wins, and a null result column found nowhere else reads as "".
One exception: a solver parameter called ``variant`` (G-PR's first/noshr/shr) wins over
the ``variant`` column, which is only the canonical join of all of a solver's parameters.
``params.NAME`` (``{params.NAME}`` in a template) reads the solver parameter NAME only,
for any other parameter shadowed by a result column; ``counters.NAME`` and ``phases.NAME``
read a key of the row's ``counters_json`` (the solver's counters) and ``phases_json`` (its
phase seconds), and may also be a table's ``value`` (or a side of a derived one). In
``where``, ``null`` among the wanted values also takes the rows where the field is null or
found nowhere (``{t_bin: [0.01, null]}``: the rows with t_bin 0.01 and those of solvers
without a t_bin). A label is stripped of surrounding blanks (``"{algorithm} {batch_size}"``
reads ``scipy_lsa`` where ``batch_size`` is null). ``{field?}`` in a template counts a
null or empty field as missing, so a list of templates moves on to the next one
(``["joint {batch_size?}", "batched{batch_id?:.0}", "alone"]``; ``:.0`` shows nothing). ``rows`` and ``columns`` may also be
a list of templates: each row takes the first whose fields it has (``["{algorithm}-{bfs}",
"{algorithm}"]`` labels APFB variants and CPU references in one table). A field found
nowhere is an error naming it and the table.

Cells
-----
One cell is one row label x one column label. Its rows are those not ``instrumented``
(those repetitions ran with counters on; their times are not comparable). Per instance
(``instance`` column), the cell's number is the median of ``value`` x ``scale`` over the
rows with status ok and ``verified`` true; over the instances of the cell, the geometric
mean. An instance with no such row is, if it has a ``timeout`` row and ``value`` is a
time (``*_s``), the lower bound "> T" with T the largest ``time_limit_s`` of those rows x
``scale`` (several instances: the geometric mean with T substituted, still "> x");
otherwise the cell shows the worst word among unverified (ok rows not verified),
crashed, error, oom, timeout, "no value" and skipped. A cell with no rows is "-".

Numbers and their marks ("" measured, ">" lower bound, "<" upper bound, else the word)
stay structured (:class:`Grid`) until the last step, so ratios and the geometric-mean line
reason with them: num / den is "> r" when num is a lower bound, "< r" when den is one, and
"-" when both are. ``best_of`` takes per row the smallest measured number of the listed
columns, or, when all of them are lower bounds, the smallest bound (still a bound).
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from matchbench.results.compare import normalize, select_many
from matchbench.results.schema import COLUMNS, SCHEMA
from matchbench.results.store import ResultsError, read_results, result_files, run_dirs

__all__ = [
    "PAPERS_DIR",
    "Grid",
    "ReportSpecError",
    "experiment_names",
    "experiment_spec",
    "render_experiment",
    "select_experiment_rows",
    "table_grid",
]

#: The paper numbers shipped with matchbench (``<file>.csv``, see the README there).
PAPERS_DIR = Path(__file__).resolve().parents[1] / "data" / "papers"

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
_PAPER_CSV_COLUMNS = ("table", "row", "column", "value", "unit", "device", "source")
_RATIO_KEYS = frozenset({"label", "num", "den"})

#: Words a cell without a number shows, worst first.
_WORDS = ("unverified", "crashed", "error", "oom", "timeout", "no value", "skipped")
_NUMBER_MARKS = ("", ">", "<")
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_INT_COLUMNS = frozenset(f.name for f in SCHEMA if pa.types.is_integer(f.type))


class ReportSpecError(ValueError):
    """An experiment's ``report`` section that cannot be rendered; the message says why."""


# --------------------------------------------------------------------------- presets


def experiment_names() -> list[str]:
    """Names of the experiment presets, ``conf/experiment/*.yaml``, sorted."""
    from matchbench.app import CONFIG_DIR

    return sorted(p.stem for p in (Path(CONFIG_DIR) / "experiment").glob("*.yaml"))


def experiment_spec(name: str) -> dict[str, Any]:
    """The ``report`` section of the experiment preset ``name``, unresolved, as plain data.

    The preset is composed as the app composes it (``+experiment=NAME`` on ``config``),
    so defaults and overrides apply; ``${...}`` interpolations are left as written.

    Raises
    ------
    ReportSpecError
        For an unknown preset (the message lists the known ones), a preset that does not
        compose, or one without a ``report.tables`` section.
    """
    import hydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from matchbench.app import CONFIG_DIR

    names = experiment_names()
    if name not in names:
        raise ReportSpecError(
            f"no experiment preset {name!r} in {Path(CONFIG_DIR) / 'experiment'} "
            f"(available: {', '.join(names) or 'none'})"
        )
    try:
        with hydra.initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = hydra.compose("config", overrides=[f"+experiment={name}"])
        report = cfg.get("report")
        spec = None if report is None else OmegaConf.to_container(report, resolve=False)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ReportSpecError(f"experiment {name!r}: {' '.join(str(exc).split())}") from None
    if not isinstance(spec, dict) or not spec.get("tables"):
        raise ReportSpecError(
            f"experiment {name!r} (conf/experiment/{name}.yaml) has no report.tables section"
        )
    _check_spec(spec)
    return spec


def _check_spec(spec: Mapping[str, Any]) -> None:
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
                if not _value_field(value[side]):
                    raise ReportSpecError(
                        f"table {title!r}: value.{side} {value[side]!r} is not a result column"
                    )
        elif not _value_field(value):
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


# --------------------------------------------------------------------------- rows


def _has_experiment(run: Path, name: str) -> bool:
    import pyarrow.parquet as pq

    for f in result_files(run):
        try:
            if "experiment" not in pq.read_schema(f).names:
                continue
            col = pq.read_table(f, columns=["experiment"]).column("experiment")
        except (OSError, pa.ArrowException):
            continue  # an unreadable file is reported when the run is read, not here
        if name in col.to_pylist():
            return True
    return False


def select_experiment_rows(
    name: str, results: Sequence[str] = (), root: str | Path = "runs"
) -> pd.DataFrame:
    """The rows of one run of experiment ``name`` (``experiment == name``), normalized.

    Parameters
    ----------
    name : str
        The experiment preset.
    results : sequence of str
        Run ids, commits or result paths, as for ``matchbench report``
        (:func:`~matchbench.results.compare.select_many`); their rows of ``name``.
        Empty: the newest run under ``root`` that has rows of ``name``.
    root : path
        The results root.

    Raises
    ------
    ResultsError
        When the selection has no rows of ``name``.
    """
    if results:
        sel = select_many(list(results), root)
        frame = sel.frame[sel.frame["experiment"] == name]
        if frame.empty:
            seen = sorted(sel.frame["experiment"].dropna().unique().tolist())
            raise ResultsError(
                f"{' '.join(results)}: no rows of experiment {name!r} "
                f"(experiments there: {', '.join(seen) or 'none recorded'})"
            )
        return frame.reset_index(drop=True)
    for run in reversed(run_dirs(root)):
        if _has_experiment(run, name):
            frame = read_results(run)
            frame = frame[frame["experiment"] == name]
            return normalize(frame.reset_index(drop=True))
    raise ResultsError(
        f"no run of experiment {name!r} under {root} (run it: matchbench -m +experiment={name})"
    )


# --------------------------------------------------------------------------- fields


class _MissingField(KeyError):
    pass


#: Prefixes of the numbers read from a row's JSON columns: ``counters.NAME``, ``phases.NAME``.
_JSON_FIELDS = {"counters.": "counters_json", "phases.": "phases_json"}


def _value_field(name: Any) -> bool:
    """Whether ``name`` can be a table's value: a result column or ``counters.`` /
    ``phases.`` and a key."""
    if not isinstance(name, str):
        return False
    return name in COLUMNS or any(
        name.startswith(p) and len(name) > len(p) for p in _JSON_FIELDS
    )


def _json_number(text: Any, key: str) -> float:
    """``key`` of the JSON object ``text`` as a float; NaN where absent or not a number."""
    v = _json_dict(text).get(key)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return float("nan")
    return float(v)


def _null(v: Any) -> bool:
    return v is None or (not isinstance(v, list | dict | tuple) and bool(pd.isna(v)))


def _json_dict(text: Any) -> dict[str, Any]:
    if not isinstance(text, str) or not text:
        return {}
    try:
        d = json.loads(text)
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


class _Params:
    """``{params.NAME}``: one solver parameter, whatever the result columns are called."""

    def __init__(self, params: dict[str, Any]) -> None:
        self._params = params

    def __getattr__(self, name: str) -> Any:
        try:
            return self._params[name]
        except KeyError:
            raise _MissingField(f"params.{name}") from None


class _Fields:
    """Template fields of one result row (see the module docstring for the lookup order)."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row
        self._params: dict[str, Any] | None = None
        self._iparams: dict[str, Any] | None = None

    @property
    def params(self) -> dict[str, Any]:
        if self._params is None:
            self._params = _json_dict(self.row.get("params_json"))
        return self._params

    @property
    def iparams(self) -> dict[str, Any]:
        if self._iparams is None:
            self._iparams = _json_dict(self.row.get("instance_params"))
        return self._iparams

    def __getitem__(self, key: str) -> Any:
        if key.endswith("?"):
            # {field?}: the field, counted missing where it is null or empty
            v = self[key[:-1]]
            if _null(v) or v == "":
                raise _MissingField(key[:-1])
            return v
        if key == "params":
            return _Params(self.params)
        if key.startswith("params."):
            return getattr(_Params(self.params), key[len("params.") :])
        for prefix, column in _JSON_FIELDS.items():
            if key.startswith(prefix):
                # a row without the key (a skipped task, another solver) reads as null
                return _json_dict(self.row.get(column)).get(key[len(prefix) :])
        if key == "variant" and key in self.params:
            # The variant column is only the canonical join of all parameters; a solver
            # parameter called variant (G-PR's first/noshr/shr) is what a table means.
            return self.params[key]
        if key in self.row and not _null(self.row[key]):
            v = self.row[key]
            # Integer columns with nulls arrive as floats; labels want "5000", not "5000.0".
            if key in _INT_COLUMNS and isinstance(v, float | np.floating):
                return int(v)
            return v.item() if isinstance(v, np.generic) else v
        for source in (self.params, self.iparams):
            if key in source:
                return source[key]
        if key in COLUMNS:
            return ""
        raise _MissingField(key)


def _missing(title: str, what: str, name: str) -> ReportSpecError:
    return ReportSpecError(
        f"table {title!r}: {what}: field {name!r} is not a result column, nor a key of "
        "params_json or instance_params of its rows"
    )


def _label(templates: str | list[str], fields: _Fields, title: str, what: str) -> str:
    """The first template whose fields the row has, filled in."""
    missing = []
    for template in [templates] if isinstance(templates, str) else templates:
        try:
            return template.format_map(fields).strip()
        except _MissingField as exc:
            missing.append(exc.args[0])
        except (ValueError, IndexError, AttributeError, TypeError) as exc:
            raise ReportSpecError(f"table {title!r}: {what} {template!r}: {exc}") from None
    row = fields.row
    raise ReportSpecError(
        f"table {title!r}: {what} {templates!r}: field {' / '.join(map(repr, missing))} is not "
        "a result column, nor a key of params_json or instance_params "
        f"(a row of {row.get('algorithm')!r} on {row.get('instance')!r})"
    )


def _matches(v: Any, wanted: Any) -> bool:
    options = wanted if isinstance(wanted, list | tuple) else [wanted]
    if (_null(v) or v == "") and any(w is None for w in options):
        return True
    return any(w is not None and (v == w or str(v) == str(w)) for w in options)


def _where_field(f: _Fields, key: str, wanted: Any) -> Any:
    """The row's ``key`` for ``where``; None where it is found nowhere and ``wanted``
    includes null (otherwise the lookup's error)."""
    try:
        return f[key]
    except _MissingField:
        options = wanted if isinstance(wanted, list | tuple) else [wanted]
        if any(w is None for w in options):
            return None
        raise


# --------------------------------------------------------------------------- cells


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
        return self.mark[col].isin(_NUMBER_MARKS) & self.value[col].notna()

    def add(self, col: str, value: pd.Series, mark: pd.Series, kind: str, table: str = "") -> None:
        if col in self.value.columns:
            raise ReportSpecError(f"table {table!r}: two columns labelled {col!r}")
        self.value[col] = value.reindex(self.value.index).astype(float)
        self.mark[col] = mark.reindex(self.mark.index).fillna("-").astype(object)
        self.kind[col] = kind


def _geomean(values: Sequence[float]) -> float:
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
    if len(timeouts) and _is_time(value):
        limit = pd.to_numeric(timeouts["time_limit_s"], errors="coerce").max()
        if pd.notna(limit):
            return float(limit) * scale, ">"
    words = []
    for status, verified in zip(g["status"], g["verified"], strict=True):
        if status == "ok":
            words.append("no value" if verified is True or verified == True else "unverified")  # noqa: E712
        else:
            words.append(str(status) if not _null(status) else "error")
    return math.nan, _worst(words)


def _cell(parts: list[tuple[float, str]]) -> tuple[float, str]:
    words = [m for _, m in parts if m not in _NUMBER_MARKS]
    if words:
        return math.nan, _worst(words)
    mark = ">" if any(m == ">" for _, m in parts) else ""
    return _geomean([v for v, _ in parts]), mark


def _natural_key(s: str) -> list[Any]:
    return [
        (0, float(t), "") if t[0].isdigit() else (1, 0.0, t)
        for t in re.findall(r"\d+(?:\.\d+)?|\D+", s)
    ]


def _order(labels: Sequence[str], first: Sequence[Any] | None = None) -> list[str]:
    first = [str(x) for x in (first or []) if str(x) in labels]
    rest = sorted((x for x in labels if x not in first), key=_natural_key)
    return [*first, *rest]


def _is_time(value: str | Mapping[str, str]) -> bool:
    """A column of seconds (``t_solve_s``), not a rate per second (``edges_per_s``): only
    those read a timeout as the lower bound "> T" (a derived quotient never does)."""
    if isinstance(value, Mapping):
        return False
    return value.endswith("_s") and not value.endswith("_per_s")


#: the column a derived ``{num, den}`` value is computed into before the cells are drawn
_DERIVED = "_value"


def _value_name(value: str | Mapping[str, str]) -> str:
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
    for prefix, column in _JSON_FIELDS.items():
        if name.startswith(prefix):
            key = name[len(prefix) :]
            texts = frame[column] if column in frame.columns else pd.Series(None, index=frame.index)
            return pd.Series([_json_number(t, key) for t in texts], index=frame.index, dtype="float64")
    return pd.to_numeric(frame[name], errors="coerce").astype("float64")


def _default_unit(value: str | Mapping[str, str], scale: float) -> str:
    if not (_is_time(value) or (isinstance(value, str) and value.startswith("phases."))):
        return ""
    return {1.0: "s", 1e3: "ms", 1e6: "us"}.get(float(scale), "")


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


def _paper_columns(
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
        if _is_time(value):
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


def _ratio(grid: Grid, num: Any, den: Any) -> tuple[pd.Series, pd.Series]:
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
        f = _Fields(rec)
        try:
            ok = all(_matches(_where_field(f, k, v), v) for k, v in where.items())
        except _MissingField as exc:
            raise _missing(title, "where", exc.args[0]) from None
        if not ok:
            continue
        positions.append(i)
        fields.append(f)
        rows.append(_label(t["rows"], f, title, "rows"))
        cols.append(_label(t["columns"], f, title, "columns"))
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
            except _MissingField as exc:
                raise _missing(title, f"row_info {label!r}", exc.args[0]) from None
            if not _null(v) and v != "":
                firsts[r] = v
        info[str(label)] = pd.Series(firsts, dtype=object).reindex(info.index)
    grid = Grid(value_df, mark_df, {c: "ours" for c in col_labels}, info)
    return grid, used


# --------------------------------------------------------------------------- format


def _num(x: float, digits: int) -> str:
    if not math.isfinite(x):
        return str(x)
    return np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")


def _info_text(v: Any, digits: int) -> str:
    if _null(v) or v == "":
        return "-"
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        return str(int(v)) if float(v).is_integer() else _num(float(v), digits)
    return str(v)


def _cell_text(v: float, mark: str, kind: str, unit: str, digits: int) -> str:
    if mark not in _NUMBER_MARKS or pd.isna(v):
        return mark if mark not in _NUMBER_MARKS else "-"
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
        value[c] = _geomean(grid.value[c][has].tolist())
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
    unit = str(t.get("unit", _default_unit(value, scale)))
    digits = int(t.get("digits", 3))
    grid, used = table_grid(frame, t)

    scaled = f"{_value_name(value)} x {t['scale']}" if scale != 1 else _value_name(value)
    caption = [
        f"Cells: {scaled}{f' in {unit}' if unit else ''}, the median over an instance's "
        "verified ok repetitions (instrumented ones left out), the geometric mean over "
        "the instances of a cell"
        + (f"; > T {unit} = killed at the time limit T" if _is_time(value) else "")
        + "; - = no rows."
    ]
    if t.get("paper"):
        caption += _paper_columns(grid, t, title, unit, papers_dir)
    for r in t.get("ratios") or []:
        v, m = _ratio(grid, r["num"], r["den"])
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
            if gm[c] in _NUMBER_MARKS
            else "-"
            for c in grid.value.columns
        ]
        # Only columns with a number in every row compete for the best mean.
        full = gm.where([c not in counts for c in gm.index], "-")
        best = _bold(grid, gv, full, t.get("best"))
        body.append(cells)
        bold.append([False] * (1 + len(info.columns)) + [c in best for c in grid.value.columns])
    return _Rendered(title, caption, [str(h) for h in header], body, bold)


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _markdown(spec: Mapping[str, Any], tables: list[_Rendered], command: str | None) -> str:
    out = [f"## {spec.get('title') or 'matchbench report'}", ""]
    if spec.get("description"):
        out += [" ".join(str(spec["description"]).split()), ""]
    if command:
        out += [f"Made by: `{command}`", ""]
    for t in tables:
        out += [f"### {t.title}", "", " ".join(t.caption), ""]
        out.append("| " + " | ".join(_md_escape(h) for h in t.header) + " |")
        out.append("|" + "|".join(":---" if i == 0 else "---:" for i in range(len(t.header))) + "|")
        for cells, bold in zip(t.body, t.bold, strict=True):
            shown = [
                f"**{_md_escape(c)}**" if b else _md_escape(c)
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
    _check_spec(spec)
    frame = normalize(frame)
    papers = Path(papers_dir) if papers_dir is not None else PAPERS_DIR
    tables = [_render_table(frame, t, papers) for t in spec["tables"]]
    return _markdown(spec, tables, command) if fmt == "md" else _html(spec, tables, command)
