"""Template fields of one result row: what ``{name}`` in a table's ``rows``, ``columns``,
``where`` and ``row_info`` reads.

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
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from matchbench.report.table_spec import JSON_FIELDS, ReportSpecError
from matchbench.results.schema import COLUMNS, SCHEMA

__all__ = [
    "Fields",
    "MissingField",
    "field_error",
    "fill_label",
    "is_null",
    "json_dict",
    "json_number",
    "row_matches",
    "where_value",
]

_INT_COLUMNS = frozenset(f.name for f in SCHEMA if pa.types.is_integer(f.type))


class MissingField(KeyError):
    pass


def json_number(text: Any, key: str) -> float:
    """``key`` of the JSON object ``text`` as a float; NaN where absent or not a number."""
    v = json_dict(text).get(key)
    if isinstance(v, bool) or not isinstance(v, int | float):
        return float("nan")
    return float(v)


def is_null(v: Any) -> bool:
    return v is None or (not isinstance(v, list | dict | tuple) and bool(pd.isna(v)))


def json_dict(text: Any) -> dict[str, Any]:
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
            raise MissingField(f"params.{name}") from None


class Fields:
    """Template fields of one result row (see the module docstring for the lookup order)."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row

    @functools.cached_property
    def params(self) -> dict[str, Any]:
        """The row's solver parameters (``params_json``)."""
        return json_dict(self.row.get("params_json"))

    @functools.cached_property
    def iparams(self) -> dict[str, Any]:
        """The row's instance parameters (``instance_params``)."""
        return json_dict(self.row.get("instance_params"))

    def __getitem__(self, key: str) -> Any:
        if key.endswith("?"):
            # {field?}: the field, counted missing where it is null or empty
            v = self[key[:-1]]
            if is_null(v) or v == "":
                raise MissingField(key[:-1])
            return v
        if key == "params":
            return _Params(self.params)
        if key.startswith("params."):
            return getattr(_Params(self.params), key[len("params.") :])
        for prefix, column in JSON_FIELDS.items():
            if key.startswith(prefix):
                # a row without the key (a skipped task, another solver) reads as null
                return json_dict(self.row.get(column)).get(key[len(prefix) :])
        if key == "variant" and key in self.params:
            # The variant column is only the canonical join of all parameters; a solver
            # parameter called variant (G-PR's first/noshr/shr) is what a table means.
            return self.params[key]
        if key in self.row and not is_null(self.row[key]):
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
        raise MissingField(key)


def field_error(title: str, what: str, name: str) -> ReportSpecError:
    return ReportSpecError(
        f"table {title!r}: {what}: field {name!r} is not a result column, nor a key of "
        "params_json or instance_params of its rows"
    )


def fill_label(templates: str | list[str], fields: Fields, title: str, what: str) -> str:
    """The first template whose fields the row has, filled in."""
    missing = []
    for template in [templates] if isinstance(templates, str) else templates:
        try:
            return template.format_map(fields).strip()
        except MissingField as exc:
            missing.append(exc.args[0])
        except (ValueError, IndexError, AttributeError, TypeError) as exc:
            raise ReportSpecError(f"table {title!r}: {what} {template!r}: {exc}") from None
    row = fields.row
    raise ReportSpecError(
        f"table {title!r}: {what} {templates!r}: field {' / '.join(map(repr, missing))} is not "
        "a result column, nor a key of params_json or instance_params "
        f"(a row of {row.get('algorithm')!r} on {row.get('instance')!r})"
    )


def row_matches(v: Any, wanted: Any) -> bool:
    options = wanted if isinstance(wanted, list | tuple) else [wanted]
    if (is_null(v) or v == "") and any(w is None for w in options):
        return True
    return any(w is not None and (v == w or str(v) == str(w)) for w in options)


def where_value(f: Fields, key: str, wanted: Any) -> Any:
    """The row's ``key`` for ``where``; None where it is found nowhere and ``wanted``
    includes null (otherwise the lookup's error)."""
    try:
        return f[key]
    except MissingField:
        options = wanted if isinstance(wanted, list | tuple) else [wanted]
        if any(w is None for w in options):
            return None
        raise
