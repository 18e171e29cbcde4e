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
