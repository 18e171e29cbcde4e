"""Host cores and the ``threads`` parameter of multicore solvers (one definition for all)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def host_cores() -> int:
    """Cores this process may run on (its affinity mask on Linux, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def parse_threads(value: Any) -> int | None:
    """A solver's ``threads``: a positive integer, or None for every host core.

    >>> parse_threads(4), parse_threads(None)
    (4, None)

    Raises
    ------
    ValueError
        Naming ``threads`` for 0, a negative number, a bool or a non-integer.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"threads must be a positive integer or null (all cores), not {value!r}")
    return int(value)
