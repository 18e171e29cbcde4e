"""The degree buckets, hash table sizes and sort keys of GPU Louvain, on the host.

What the kernels of ``kernels/community/louvain.cu`` compute from the degrees, written out in
NumPy so that the driver (:mod:`matchbench.families.community.louvain_gpu`) can size its
launches, the host model (:mod:`matchbench.families.community.louvain_model`) can follow the
same buckets, and the tests can check both against brute force and against the ``.cu``
file's ``#define``s. Naim, Manne, Halappanavar & Tumeo, IPDPS 2017 (paper III), Sec. 4.1.
Beyond the paper (issue #33): the id ranges (contiguous, or hashed on hub-free stages)
and hub chunks that split an iteration into more steps (:func:`effective_rounds`,
:func:`stage_ranges`, :func:`move_keys`, :func:`move_counts`, :func:`move_steps`), which
both backends take from here.
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
#: Communities of aggregation bucket 1 per warp (LV_MERGE_QUAD): merged a group of
#: 32 / MERGE_QUAD lanes each when all have comDegree <= MERGE_SMALL (LV_M0), each in a
#: MERGE_QUAD-th of the warp's table, else one after another by the whole warp.
MERGE_QUAD = 4
MERGE_SMALL = 31
#: Bytes the global hash tables of bucket 7 (and aggregation bucket 3) may take at least; more
#: blocks share the work up to 4 per SM while their tables fit max(this, 4 bytes per entry).
GLOBAL_TABLE_BYTES = 64 << 20
#: Bytes per hash table slot: an int32 key and a float64 weight.
SLOT_BYTES = 12
#: Bucket 7's tables of at most this many slots hash in shared memory with ``smem_hubs``
#: (LV_TS7S: 12 bytes a slot, 42,000 bytes).
SMEM_HUB_SLOTS = 3500
#: Sort keys: the bucket above this bit (``kernels/community/louvain.cu``, LV_KEY_SHIFT).
KEY_SHIFT = 40
_KEY_LOW = (1 << KEY_SHIFT) - 1
#: Most id ranges (``rounds``) one iteration may take in turn (LV_ROUNDS_MAX: the setup
#: kernel counts each range's buckets in shared memory).
ROUNDS_MAX = 64
#: The fewest CSR entries per id range: a stage's graph of ``nnz`` entries runs at most
#: ``nnz // ROUND_MIN_ENTRIES`` ranges (at least one), so small levels (and the contracted
#: levels of skewed graphs: many vertices, few edges) do not pay for launches that move few
#: vertices each. Read at each stage (tests lower it).
ROUND_MIN_ENTRIES = 1 << 18
#: The least degree of a hub: a stage without a vertex of this degree (bucket 7's least)
#: runs one range. Read at each stage (tests lower it).
ROUND_HUB_DEGREE = 320
#: Knuth's multiplicative hash constant (2^32 / golden ratio, odd): ``hashed_rounds`` puts
#: vertex ``v`` in range ``((v * HASH_MULT) mod 2^32) * R >> 32`` (LV_HASH_MULT).
HASH_MULT = 2654435761
#: The fewest vertices of a stage whose graph ``hashed_rounds`` splits (a hub-free stage with
#: fewer runs one range). Read at each stage (tests lower it).
HASH_MIN_VERTICES = 1 << 17

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


def _keys(bucket: np.ndarray, degree: np.ndarray, last: int, group: Any = 0) -> np.ndarray:
    low = np.where(bucket == last, _KEY_LOW - np.minimum(degree, _KEY_LOW), 0)
    high = np.asarray(group, dtype=np.int64) * 8 + bucket
    return (high.astype(np.uint64) << np.uint64(KEY_SHIFT)) | low.astype(np.uint64)


def effective_rounds(nnz: int, max_degree: int, rounds: int) -> int:
    """The id ranges a stage takes in turn: ``rounds``, at most one per
    :data:`ROUND_MIN_ENTRIES` of its graph's ``nnz`` CSR entries, at least one; and one
    when no vertex has degree :data:`ROUND_HUB_DEGREE` or more (no hub: the ranges serve
    the order of hubs and their followers, and on graphs without hubs only cost launches).

    >>> effective_rounds(10**7, 1000, 8), effective_rounds(10**6, 1000, 8)
    (8, 3)
    >>> effective_rounds(10, 1000, 8), effective_rounds(10**7, 319, 8)
    (1, 1)
    """
    if int(max_degree) < ROUND_HUB_DEGREE:
        return 1
    return int(max(1, min(int(rounds), int(nnz) // max(1, ROUND_MIN_ENTRIES))))


def stage_ranges(
    n: int, nnz: int, max_degree: int, rounds: int, hashed_rounds: int = 0
) -> tuple[int, bool]:
    """The id ranges of a stage and whether they are hashed: ``(effective_rounds(...),
    False)`` where that splits the stage (a hub and enough entries) or ``hashed_rounds`` is
    under 2; else ``(hashed_rounds, True)`` on a stage without a hub (largest degree under
    :data:`ROUND_HUB_DEGREE`) of at least :data:`HASH_MIN_VERTICES` vertices; else one range.

    >>> stage_ranges(2**20, 10**7, 1000, 8, 8), stage_ranges(2**20, 10**7, 300, 8, 8)
    ((8, False), (8, True))
    >>> stage_ranges(2**20, 10**7, 300, 8, 0), stage_ranges(1000, 10**7, 300, 8, 8)
    ((1, False), (1, False))
    >>> stage_ranges(2**20, 10**5, 1000, 8, 8)  # a hub: contiguous ranges or none
    (1, False)
    """
    r = effective_rounds(nnz, max_degree, rounds)
    if r > 1 or int(hashed_rounds) < 2:
        return r, False
    if int(max_degree) >= ROUND_HUB_DEGREE or int(n) < HASH_MIN_VERTICES:
        return 1, False
    return int(hashed_rounds), True


def needs_max_degree(n: int, nnz: int, rounds: int, hashed_rounds: int = 0) -> bool:
    """Whether :func:`stage_ranges` can split the stage, so the device must read its largest
    degree (one sync); where not, any degree gives one range."""
    return (int(rounds) > 1 and int(nnz) >= 2 * ROUND_MIN_ENTRIES) or (
        int(hashed_rounds) > 1 and int(n) >= HASH_MIN_VERTICES
    )


def hashed_range(v: Any, rounds: int) -> np.ndarray:
    """The hashed id range of vertices ``v`` (``0 <= v < 2^31``): ``((v * HASH_MULT) mod
    2^32) * rounds >> 32``, in ``[0, rounds)``; the kernel's unsigned 32-bit product, then a
    64-bit one (exact in int64: ``v * HASH_MULT < 2^63``, ``2^32 * rounds < 2^63``)."""
    x = np.asarray(v, dtype=np.int64)
    return ((x * HASH_MULT) & 0xFFFFFFFF) * int(rounds) >> 32


def round_of(n: int, rounds: int, hashed: bool = False) -> np.ndarray:
    """The id range of each vertex ``v < n`` (``louvain_setup``): ``v * rounds // n``, or
    with ``hashed`` :func:`hashed_range`.

    >>> round_of(8, 4).tolist(), round_of(8, 4, hashed=True).tolist()
    ([0, 0, 1, 1, 2, 2, 3, 3], [0, 2, 0, 3, 1, 0, 2, 1])
    """
    v = np.arange(int(n), dtype=np.int64)
    if hashed:
        return hashed_range(v, rounds)
    return v * int(rounds) // max(1, int(n))


def move_keys(degree: Any, rounds: int = 1, hashed: bool = False) -> np.ndarray:
    """The device's sort keys of the vertices (``louvain_setup``): a stable argsort of them
    lists the id ranges (:func:`round_of`) in turn and within each the buckets in turn, each
    by vertex id, except bucket 7, by decreasing degree (ties by id). ``rounds`` and
    ``hashed`` are the stage's :func:`stage_ranges`; with one range the keys are the paper's
    (bucket, degree)."""
    d = np.asarray(degree, dtype=np.int64)
    return _keys(move_bucket(d), d, 7, round_of(d.shape[0], rounds, hashed))


def move_counts(degree: Any, rounds: int = 1, hashed: bool = False) -> np.ndarray:
    """``counts[r, b]``: the vertices of id range ``r`` in move bucket ``b`` (``louvain_setup``'s
    per-range counts, int64 of shape ``(rounds, 8)``)."""
    d = np.asarray(degree, dtype=np.int64)
    idx = round_of(d.shape[0], rounds, hashed) * 8 + move_bucket(d)
    return np.bincount(idx, minlength=8 * int(rounds)).reshape(int(rounds), 8).astype(np.int64)


def move_steps(counts: Any, hub_chunks: int = 1) -> list[tuple[int, int, int]]:
    """The steps of one iteration: ``(bucket, start, count)`` slices of the sorted vertex
    list (:func:`move_keys`) moved together and committed before the next step.

    Each id range in turn; within it buckets 1-6, then bucket 7 (by decreasing degree) in
    ``min(hub_chunks, count)`` consecutive chunks of nearly equal counts (the first
    ``count % chunks`` one vertex longer). Bucket 0 (isolated vertices) is skipped. One
    range and one chunk give the paper's steps: the seven buckets in turn.

    >>> move_steps([[2, 3, 0, 0, 0, 0, 1, 5]], hub_chunks=2)
    [(1, 2, 3), (6, 5, 1), (7, 6, 3), (7, 9, 2)]
    >>> move_steps([[0, 1, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 1]])
    [(1, 0, 1), (7, 2, 1)]
    """
    c = np.asarray(counts, dtype=np.int64).reshape(-1, 8)
    steps: list[tuple[int, int, int]] = []
    pos = 0
    for row in c:
        pos += int(row[0])
        for b in range(1, 8):
            cnt = int(row[b])
            if cnt and b < 7:
                steps.append((b, pos, cnt))
            elif cnt:
                parts = min(max(1, int(hub_chunks)), cnt)
                q, rem = divmod(cnt, parts)
                at = pos
                for j in range(parts):
                    size = q + (1 if j < rem else 0)
                    steps.append((7, at, size))
                    at += size
            pos += cnt
    return steps


def merge_keys(com_degree: Any, com_size: Any) -> np.ndarray:
    """The device's sort keys of the communities (``louvain_com_keys``), as :func:`move_keys`."""
    d = np.asarray(com_degree, dtype=np.int64)
    return _keys(merge_bucket(d, com_size), d, 3)


def table_budget(nnz: int) -> int:
    """Bytes the global hash tables of one launch may take: ``max(GLOBAL_TABLE_BYTES, 4 *
    nnz)`` (a third of the CSR's own 12 bytes per entry)."""
    return max(GLOBAL_TABLE_BYTES, 4 * int(nnz))


def vertex_slices(
    steps: Any, tsize: Any, smem_hubs: bool, budget_slots: int
) -> tuple[list[list[tuple[int, int]]], np.ndarray, int]:
    """Option ``vertex_tables``: each bucket-7 vertex its own global table, in launches whose
    tables fit ``budget_slots``.

    Parameters
    ----------
    steps : list of (bucket, start, count, at)
        The driver's steps; ``at`` is a bucket-7 step's first position in ``tsize``.
    tsize : array of int
        The table size of every bucket-7 vertex, in step order (``louvain_table_sizes``).
    smem_hubs : bool
        Tables of at most :data:`SMEM_HUB_SLOTS` slots are in shared memory: no global slots.
    budget_slots : int
        Global slots one launch may use; a table larger than that is a launch of its own.

    Returns
    -------
    slices : list of list of (offset, count)
        Per step (empty for buckets 1-6), its launches: vertices ``offset`` to ``offset +
        count - 1`` of the step, consecutive, covering it. Launches of one step move on the
        same configuration (the commit follows the last), so they make the step's moves.
    toff : int64 array, like ``tsize``
        Each vertex's first slot in the global region, counted from its launch's first.
    slots : int
        The region's size: the largest launch's slots (at least 1).

    >>> steps = [(1, 0, 5, 0), (7, 5, 4, 0)]
    >>> vertex_slices(steps, [9000, 5000, 4000, 100], True, 10**6)
    ([[], [(0, 4)]], array([    0,  9000, 14000, 18000]), 18000)
    >>> vertex_slices(steps, [9000, 5000, 4000, 100], True, 10000)
    ([[], [(0, 1), (1, 3)]], array([   0,    0, 5000, 9000]), 9000)
    """
    ts = np.asarray(tsize, dtype=np.int64)
    need = ts if not smem_hubs else np.where(ts > SMEM_HUB_SLOTS, ts, 0)
    toff = np.zeros(ts.shape[0], dtype=np.int64)
    budget = max(1, int(budget_slots))
    slices: list[list[tuple[int, int]]] = []
    slots = 1
    for b, _start, count, at in steps:
        if b != 7:
            slices.append([])
            continue
        own: list[tuple[int, int]] = []
        ends = np.cumsum(need[at:at + count])  # slots up to and including each vertex
        first = 0
        while first < count:
            base = int(ends[first - 1]) if first else 0
            # the longest run from `first` whose tables fit (at least one vertex)
            stop = max(first + 1, int(np.searchsorted(ends, base + budget, side="right")))
            toff[at + first:at + stop] = ends[first:stop] - need[at + first:at + stop] - base
            slots = max(slots, int(ends[stop - 1]) - base)
            own.append((first, stop - first))
            first = stop
        slices.append(own)
    return slices, toff, slots


def global_blocks(count: int, slots: int, nnz: int, sms: int) -> int:
    """Blocks (each with a global table of ``slots`` slots) for ``count`` large items.

    At most ``count`` and 4 per SM, as many as the tables fit in
    ``max(GLOBAL_TABLE_BYTES, 4 * nnz)`` bytes, at least 1 (paper III, Sec. 4.1: "we might need
    to assign multiple vertices to each thread block since the size of the global memory is
    fixed").
    """
    fit = table_budget(nnz) // max(1, SLOT_BYTES * int(slots))
    return int(max(1, min(int(count), 4 * max(1, int(sms)), fit)))
