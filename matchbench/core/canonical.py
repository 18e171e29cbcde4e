"""Canonical JSON: the one text form of a value in the results' ``*_json`` columns.

Here, below every layer, so that a family's bulk hooks (which make the ``instance_params``
of many instances at once) and the results' schema write the same text.
"""

from __future__ import annotations

import json
from typing import Any

#: ``json.dumps(value, sort_keys=True, default=str)``'s encoder, made once: ``dumps`` with
#: options builds a new one per call, which a batch pays per instance.
_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def to_json(value: Any) -> str:
    """Canonical JSON (sorted keys) for the ``*_json`` columns.

    >>> to_json({"b": 1, "a": [1.5, None]})
    '{"a": [1.5, null], "b": 1}'
    """
    return _ENCODER.encode(value)


def to_json_each(params: dict[str, Any], key: str, values: list[Any]) -> list[str]:
    """``to_json(dict(params, key=value))`` for each of ``values``, by splitting the
    JSON of the template once: the ``instance_params`` of a batch's instances, which
    differ in one key (a ``json.dumps`` per instance costs a batch of 10,000 small
    instances about 20 ms).

    >>> to_json_each({"n": 4, "seed": 0}, "seed", [1, 2])
    ['{"n": 4, "seed": 1}', '{"n": 4, "seed": 2}']
    """
    mark = 7_777_777_777_777_777_777
    head, tail = to_json(dict(params, **{key: mark})).split(str(mark))
    return [f"{head}{v}{tail}" if type(v) is int else f"{head}{to_json(v)}{tail}" for v in values]
