"""Size hints for :func:`~matchbench.datasets.dataset` tags: bytes from a generator's arguments.

A dataset function declares how large its instance will be, as a function of its own
arguments, on its tag (``@dataset(..., size_hint=...)``); the runner reads it through
:func:`~matchbench.datasets.spec_size_hint` to submit the largest instances first and
``run.batch`` to cut batches by bytes. The helpers here count stored entries (edges,
matrix cells, list items) at :data:`BYTES_PER_ENTRY` bytes each::

    @dataset("mcm", disk_cache=True,
             size_hint=lambda scale, edge_factor=16, **_: sizes.scaled(scale, edge_factor))
    def kronecker(scale: int, edge_factor: int = 16, seed: int = 1): ...

Only the order of instances matters, not the value; an estimate from arguments is
compared with the sizes of files (a disk-cached instance, a Matrix Market file), hence
bytes. Each helper raises ``TypeError`` or ``ValueError`` for an argument that is no
count (a string, a bool, a negative number): the size is then unknown.
"""

from __future__ import annotations

import numbers

__all__ = ["BYTES_PER_ENTRY", "DEFAULT_DEGREE", "count", "dense", "lists", "scaled"]

#: Bytes per stored entry of an estimate (an index and a value, or two indices).
BYTES_PER_ENTRY = 8

#: Entries per vertex of a sparse generator that has no degree argument.
DEFAULT_DEGREE = 8

#: Where ``2**scale`` stops growing: a wild scale must not overflow a float.
_MAX_SCALE = 1000.0


def count(value: object, name: str = "value") -> float:
    """``value`` as a non-negative real number.

    >>> count(3), count(2.5)
    (3.0, 2.5)
    >>> count(True, "n")
    Traceback (most recent call last):
    ...
    TypeError: n must be a number, not True
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not value >= 0:
        raise ValueError(f"{name} must be >= 0, not {value!r}")
    return float(value)


def scaled(scale: object, degree: object = DEFAULT_DEGREE) -> float:
    """``2**scale`` vertices with ``degree`` entries each (Graph500-style ``scale``).

    >>> scaled(10, 16) == 2**10 * 16 * BYTES_PER_ENTRY
    True
    """
    vertices = 2.0 ** min(count(scale, "scale"), _MAX_SCALE)
    return vertices * count(degree, "degree") * BYTES_PER_ENTRY


def lists(rows: object, degree: object = DEFAULT_DEGREE) -> float:
    """``rows`` lists (adjacency or preference lists) of ``degree`` entries each.

    >>> lists(1000, 5) == 5000 * BYTES_PER_ENTRY
    True
    """
    return count(rows, "rows") * count(degree, "degree") * BYTES_PER_ENTRY


def dense(n: object) -> float:
    """An ``n x n`` matrix (a cost matrix, a complete graph, full preference lists).

    >>> dense(300) == 300 * 300 * BYTES_PER_ENTRY
    True
    """
    n = count(n, "n")
    return n * n * BYTES_PER_ENTRY
