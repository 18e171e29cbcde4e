"""The degree buckets, hash table sizes and sort keys of GPU Louvain, on the host.

What the kernels of ``kernels/community/louvain.cu`` compute from the degrees, written out in
NumPy so that the driver (:mod:`matchbench.families.community.louvain_gpu`) can size its
launches, the host model (:mod:`matchbench.families.community.louvain_model`) can follow the
same buckets, and the tests can check both against brute force and against the ``.cu``
file's ``#define``s. Naim, Manne, Halappanavar & Tumeo, IPDPS 2017 (paper III), Sec. 4.1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Threads per block (Sec. 4.1: four warps).
BLOCK = 128
#: Upper degrees of the move buckets 1-6 (Sec. 4.1); bucket 7 is above, bucket 0 isolated.
MOVE_BOUNDS = (4, 8, 16, 32, 84, 319)
#: Threads per vertex in buckets 1-7: 2^(k+1) for k = 1..4, a warp, a block, a block.
MOVE_THREADS = (4, 8, 16, 32, 32, 128, 128)
#: Shared hash table slots per vertex in buckets 1-6 (the table size of the bucket's
#: largest degree); bucket 7's tables are in global memory.
MOVE_SLOTS = (7, 13, 29, 53, 127, 479)
#: Upper community degrees (sum of the members' degrees) of the aggregation buckets 1-2
#: (Sec. 4.1); bucket 3 is above.
MERGE_BOUNDS = (127, 479)
#: Their shared table slots (a warp's, a block's).
MERGE_SLOTS = (191, 719)
#: Bytes the global hash tables of bucket 7 (and aggregation bucket 3) may take at least; more
#: blocks share the work up to 4 per SM while their tables fit max(this, 4 bytes per entry).
GLOBAL_TABLE_BYTES = 64 << 20
#: Bytes per hash table slot: an int32 key and a float64 weight.
SLOT_BYTES = 12
#: Sort keys: the bucket above this bit (``kernels/community/louvain.cu``, LV_KEY_SHIFT).
KEY_SHIFT = 40
_KEY_LOW = (1 << KEY_SHIFT) - 1

def is_prime(x: int) -> bool:
    """Whether ``x`` is prime (deterministic Miller-Rabin, exact for every 64-bit ``x``)."""
    x = int(x)
    if x < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if x % p == 0:
            return x == p
    d, s = x - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in small:
        y = pow(a, d, x)
        if y in (1, x - 1):
            continue
        for _ in range(s - 1):
            y = y * y % x
            if y == x - 1:
                break
        else:
            return False
    return True


def table_size(degree: int) -> int:
    """The hash table size for ``degree`` entries: the smallest prime above 1.5 ``degree``.

    >>> [table_size(d) for d in (0, 1, 4, 32, 84, 319)]
    [2, 2, 7, 53, 127, 479]

    Notes
    -----
    Paper III, Sec. 4 (after Alg. 2): "the smallest value larger than 1.5 times the degree",
    so a table is at most 2/3 full. ``3 d // 2 + 1`` is the smallest integer above 1.5 d.
    """
    x = 3 * max(int(degree), 0) // 2 + 1
    while not is_prime(x):
        x += 1
    return x


def move_bucket(degree: Any) -> np.ndarray:
    """The optimization bucket of each degree: 0 isolated, 1-6 up to :data:`MOVE_BOUNDS`, 7."""
    d = np.asarray(degree, dtype=np.int64)
    return np.where(d <= 0, 0, np.searchsorted(np.asarray(MOVE_BOUNDS), d, side="left") + 1)


def merge_bucket(com_degree: Any, com_size: Any) -> np.ndarray:
    """The aggregation bucket of each community: 0 empty, 1 (<= 127), 2 (<= 479), 3."""
    d = np.asarray(com_degree, dtype=np.int64)
    b = np.searchsorted(np.asarray(MERGE_BOUNDS), d, side="left") + 1
    return np.where(np.asarray(com_size) == 0, 0, b)


def _keys(bucket: np.ndarray, degree: np.ndarray, last: int) -> np.ndarray:
    low = np.where(bucket == last, _KEY_LOW - np.minimum(degree, _KEY_LOW), 0)
    return (bucket.astype(np.uint64) << np.uint64(KEY_SHIFT)) | low.astype(np.uint64)


def move_keys(degree: Any) -> np.ndarray:
    """The device's sort keys of the vertices (``louvain_setup``): a stable argsort of them
    lists the buckets in turn, each by vertex id, except bucket 7, by decreasing degree."""
    d = np.asarray(degree, dtype=np.int64)
    return _keys(move_bucket(d), d, 7)


def merge_keys(com_degree: Any, com_size: Any) -> np.ndarray:
    """The device's sort keys of the communities (``louvain_com_keys``), as :func:`move_keys`."""
    d = np.asarray(com_degree, dtype=np.int64)
    return _keys(merge_bucket(d, com_size), d, 3)


def global_blocks(count: int, slots: int, nnz: int, sms: int) -> int:
    """Blocks (each with a global table of ``slots`` slots) for ``count`` large items.

    At most ``count`` and 4 per SM, as many as the tables fit in
    ``max(GLOBAL_TABLE_BYTES, 4 * nnz)`` bytes, at least 1 (paper III, Sec. 4.1: "we might need
    to assign multiple vertices to each thread block since the size of the global memory is
    fixed").
    """
    budget = max(GLOBAL_TABLE_BYTES, 4 * int(nnz))
    fit = budget // max(1, SLOT_BYTES * int(slots))
    return int(max(1, min(int(count), 4 * max(1, int(sms)), fit)))
