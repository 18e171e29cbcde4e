"""Batched GPU maximum-cardinality matching: many small graphs in one launch, a block each.

:class:`MCMBatchGPU` (``mcm_batch_gpu``) solves a whole batch of
:class:`~matchbench.graphs.bipartite.BipartiteGraph` instances (``run.batch``; e.g.
``dataset=mcm_many``, 2^8..2^12 vertices) with one kernel launch per group of graphs
(below) and no host synchronization inside the solve: each thread block runs the whole
APFB search of its graph (Deveci et al. 2013, Alg. 1 without lines 9-10, with GPUBFS-WR,
Alg. 4, ALTERNATE, Alg. 3, and FIXMATCHING), BFS levels separated by ``__syncthreads``
instead of kernel launches. The per-graph APFB of :mod:`matchbench.families.mcm.apfb`
costs about 86 launches and 7 host syncs on such a graph.

Which graphs it takes (:func:`size_rule`, :meth:`MCMBatchGPU.skip`): graphs with
``n_rows + n_cols <= MAX_VERTICES`` (65,536) and fewer than 2^31 edges. A graph's state
(five int arrays, :func:`state_bytes` = 4 (3 n_rows + 2 n_cols) bytes) lives in the
block's shared memory when it fits the device's opt-in limit per block (227 KiB on an
H100 or H200: about 11,600 rows and 11,600 columns), else in global scratch (slower, same
code). Larger graphs are skipped with a reason pointing at ``apfb``, which spreads one
graph over the whole GPU: one block per graph then leaves most of the GPU idle.

Layout (``kernels/mcm/mcm_batch.cu``): all graphs' CSR (rows -> columns) concatenated,
``indptr`` holding each graph's ``n_rows + 1`` local row pointers in turn and ``indices``
its local column indices; a ``meta`` row per graph (:data:`META_SLOTS`) gives its sizes,
the offsets of its row pointers, indices, answers and state and how it starts; ``stats``
(:data:`STAT_SLOTS`) gets phases, BFS levels, an error code, the initial and final
cardinality. The answers are two concatenated mate arrays (``row_match``, ``col_match``,
int32, -1 unmatched).

Groups. Graphs of one launch share the block size (:func:`auto_threads` of their row
count, or ``threads_per_block``) and the state placement (shared or global); groups are
launched one after the other, largest graphs first within a group.

:func:`apfb_reference` is the kernel's algorithm in numpy, statement for statement; with
an ``rng`` it interleaves the threads' shared-memory accesses at random (every row or
column a thread of its own, which covers every block size), the way the CPU tests
exercise the kernel's race arguments.

Timing. ``prepare_batch`` packs and uploads (untimed; the graphs are cached by identity
across repetitions, the initial mates re-uploaded each time); ``run`` queues the launches
between two CUDA events; ``result_batch`` copies the answers back (one host sync) and
raises if a block reported an error (:data:`KERNEL_ERRORS`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import block_size
from matchbench.core.solver import BaseSolver
from matchbench.graphs.bipartite import BipartiteGraph, Matching

#: BFS start level (Deveci et al. 2013, Alg. 1 line 3); MCM_BATCH_L0 in the kernel.
L0 = 2
#: Slots of a graph's ``meta`` row (int64), the MCM_BATCH_M_* of the kernel.
META_SLOTS = {
    "ROWS": 0,
    "COLS": 1,
    "PTR": 2,
    "IND": 3,
    "RMATE": 4,
    "CMATE": 5,
    "SCRATCH": 6,
    "START": 7,
}
META_SIZE = 8
#: Slots of a graph's ``stats`` row (int64), the MCM_BATCH_S_* of the kernel.
STAT_SLOTS = {"PHASES": 0, "LEVELS": 1, "ERR": 2, "INITIAL": 3, "CARD": 4}
STAT_SIZE = 5
#: How a graph starts (MCM_BATCH_START_*): the given mates, the block's greedy, empty.
START_GIVEN, START_GREEDY, START_EMPTY = 0, 1, 2
#: stats ERR codes of the kernel (MCM_BATCH_E_*); none is expected for a valid input.
KERNEL_ERRORS = {
    1: "more than min(n_rows, n_cols) + 2 phases",
    2: "a BFS ran more than n_rows + 1 levels",
    3: "an ALTERNATE walk ran more than n_rows + 1 steps",
    4: "after FIXMATCHING a row's column was not matched back to it",
}
#: The largest graph (n_rows + n_cols) the solver takes; beyond, one block per graph
#: leaves most of the GPU idle (use ``apfb``).
MAX_VERTICES = 1 << 16
#: Largest edge count: local indices and row pointers are int32.
MAX_EDGES = (1 << 31) - 1
#: Dynamic shared memory a block gets without opting in.
SMEM_DEFAULT_LIMIT = 48 * 1024


def state_bytes(n_rows: int, n_cols: int) -> int:
    """Bytes of one graph's state: rmate, level, root (rows), cmate, pred (columns), int32.

    >>> state_bytes(2048, 2048), state_bytes(0, 5)
    (40960, 40)
    """
    return 4 * (3 * int(n_rows) + 2 * int(n_cols))


def auto_threads(n_rows: int) -> int:
    """The block size for a graph of ``n_rows`` rows (``threads_per_block: 0``).

    About one thread per four rows (the BFS side), at least a warp and at most 256:
    ``clamp(next_pow2(n_rows) / 4, 32, 256)``. Not measured yet: a first choice after the
    batched LAP solver's rule (:func:`matchbench.families.lap.batch_gpu.auto_threads`).

    >>> [auto_threads(n) for n in (0, 1, 128, 129, 512, 1024, 4096)]
    [32, 32, 32, 64, 128, 256, 256]
    """
    p = 1 << max(0, int(n_rows) - 1).bit_length()
    return int(min(256, max(32, p // 4)))


def size_rule(n_rows: int, n_cols: int, n_edges: int) -> str | None:
    """Why the solver does not take a graph of these sizes, or None (it does).

    >>> size_rule(2048, 2048, 10**5) is None
    True
    >>> print(size_rule(40000, 30000, 10**6))
    n_rows + n_cols = 70000 is more than the 65536 vertices one thread block takes; use apfb
    """
    n = int(n_rows) + int(n_cols)
    if n > MAX_VERTICES:
        return (
            f"n_rows + n_cols = {n} is more than the {MAX_VERTICES} vertices one thread "
            f"block takes; use apfb"
        )
    if int(n_edges) > MAX_EDGES:
        return f"{int(n_edges)} edges do not fit int32 indices; use apfb"
    return None


# ---------------------------------------------------------------------------------------
# Packing
# ---------------------------------------------------------------------------------------


@dataclass
class Packed:
    """A batch of CSR graphs as the kernel reads it (host arrays).

    ``indptr`` and ``indices`` are int32; ``shapes`` (B, 2), ``ptr_off``, ``ind_off``,
    ``row_off`` and ``col_off`` (B,) int64: graph k's row pointers start at
    ``indptr[ptr_off[k]]``, its indices at ``indices[ind_off[k]]``, its answers at
    ``row_match[row_off[k]]`` and ``col_match[col_off[k]]``.
    """

    indptr: np.ndarray
    indices: np.ndarray
    shapes: np.ndarray
    ptr_off: np.ndarray
    ind_off: np.ndarray
    row_off: np.ndarray = field(init=False)
    col_off: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.row_off = _exclusive_cumsum(self.shapes[:, 0])
        self.col_off = _exclusive_cumsum(self.shapes[:, 1])

    @property
    def size(self) -> int:
        return int(self.shapes.shape[0])

    @property
    def total_rows(self) -> int:
        return int(self.shapes[:, 0].sum())

    @property
    def total_cols(self) -> int:
        return int(self.shapes[:, 1].sum())

    def graph(self, k: int) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Graph k as ``(indptr, indices, n_rows, n_cols)`` (views)."""
        nr, nc = int(self.shapes[k, 0]), int(self.shapes[k, 1])
        p = self.indptr[int(self.ptr_off[k]) : int(self.ptr_off[k]) + nr + 1]
        o = int(self.ind_off[k])
        return p, self.indices[o : o + int(p[-1])], nr, nc


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    out = np.zeros(len(a), dtype=np.int64)
    if len(a) > 1:
        out[1:] = np.cumsum(np.asarray(a, dtype=np.int64))[:-1]
    return out


def pack_graphs(graphs: list[BipartiteGraph]) -> Packed:
    """The graphs' row CSRs back to back (row pointers local to each graph)."""
    shapes = np.array([(g.n_rows, g.n_cols) for g in graphs], dtype=np.int64).reshape(-1, 2)
    nnz = np.array([g.n_edges for g in graphs], dtype=np.int64)
    indptr = np.empty(int(shapes[:, 0].sum()) + len(graphs), dtype=np.int32)
    indices = np.empty(int(nnz.sum()), dtype=np.int32)
    ptr_off = _exclusive_cumsum(shapes[:, 0] + 1)
    ind_off = _exclusive_cumsum(nnz)
    for k, g in enumerate(graphs):
        p, o = int(ptr_off[k]), int(ind_off[k])
        indptr[p : p + g.n_rows + 1] = g.row_ptr
        indices[o : o + g.n_edges] = g.row_ind
    return Packed(indptr, indices, shapes, ptr_off, ind_off)


def check_packed(
    indptr: np.ndarray,
    indices: np.ndarray,
    shapes: np.ndarray,
    ptr_off: np.ndarray,
    ind_off: np.ndarray,
) -> str | None:
    """Why the packed host arrays are not a batch of CSR graphs, or None; names the first
    graph at fault.

    Every graph's row pointers lie inside ``indptr``, start at 0 and do not decrease; its
    edges lie inside ``indices`` and name columns of the graph. O(rows + edges), numpy.

    >>> ok = np.array([0, 1, 2, 0, 1]), np.array([0, 1, 0])
    >>> check_packed(*ok, np.array([[2, 2], [1, 1]]), np.array([0, 3]), np.array([0, 2])) is None
    True
    >>> check_packed(*ok, np.array([[2, 1], [1, 1]]), np.array([0, 3]), np.array([0, 2]))
    'graph 0: column index 1 not in [0, 1)'
    """
    shapes = np.asarray(shapes, dtype=np.int64).reshape(-1, 2)
    ptr_off = np.asarray(ptr_off, dtype=np.int64)
    ind_off = np.asarray(ind_off, dtype=np.int64)
    B = shapes.shape[0]
    if ptr_off.shape != (B,) or ind_off.shape != (B,):
        return f"offsets of shapes {ptr_off.shape} and {ind_off.shape} for {B} graphs"
    if B == 0:
        return None
    nr, nc = shapes[:, 0], shapes[:, 1]
    bad = np.flatnonzero((shapes < 0).any(axis=1))
    if bad.size:
        return f"graph {int(bad[0])}: negative size {tuple(int(x) for x in shapes[bad[0]])}"
    bad = np.flatnonzero((ptr_off < 0) | (ptr_off + nr + 1 > indptr.shape[0]))
    if bad.size:
        return f"graph {int(bad[0])}: its row pointers run past the end of indptr"
    ip = np.asarray(indptr, dtype=np.int64)
    bad = np.flatnonzero(ip[ptr_off] != 0)
    if bad.size:
        return f"graph {int(bad[0])}: its row pointers do not start at 0"
    total = int(nr.sum())
    owner = np.repeat(np.arange(B), nr)
    at = np.repeat(ptr_off - _exclusive_cumsum(nr), nr) + np.arange(total)
    bad = np.flatnonzero(ip[at + 1] < ip[at])
    if bad.size:
        return f"graph {int(owner[bad[0]])}: its row pointers decrease"
    nnz = ip[ptr_off + nr]
    bad = np.flatnonzero((ind_off < 0) | (ind_off + nnz > indices.shape[0]))
    if bad.size:
        return f"graph {int(bad[0])}: its edges run past the end of indices"
    m = int(nnz.sum())
    if m:
        owner = np.repeat(np.arange(B), nnz)
        pos = np.repeat(ind_off - _exclusive_cumsum(nnz), nnz) + np.arange(m)
        col = np.asarray(indices)[pos].astype(np.int64)
        bad = np.flatnonzero((col < 0) | (col >= nc[owner]))
        if bad.size:
            k = int(owner[bad[0]])
            return f"graph {k}: column index {int(col[bad[0]])} not in [0, {int(nc[k])})"
    return None


@dataclass
class Group:
    """The graphs of one launch: same block size and state placement; members are batch
    indices, largest graph first (ties in input order)."""

    threads_per_block: int
    in_smem: bool
    members: list[int] = field(default_factory=list)
    shared_bytes: int = 0


def _auto_threads_many(n_rows: np.ndarray) -> np.ndarray:
    """:func:`auto_threads` of every entry of ``n_rows`` (int64)."""
    x = np.maximum(np.asarray(n_rows, dtype=np.int64) - 1, 0)
    bits = np.zeros_like(x)
    pos = x > 0
    bits[pos] = np.floor(np.log2(x[pos])).astype(np.int64) + 1
    # log2 of an int64 near a power of two may round: correct to the exact bit length
    bits[pos] += (x[pos] >> np.minimum(bits[pos], 62)) > 0
    bits[pos] -= (x[pos] >> np.maximum(bits[pos] - 1, 0)) == 0
    return np.clip((np.int64(1) << bits) // 4, 32, 256)


def plan_groups(
    shapes: np.ndarray, threads_per_block: int = 0, smem_limit: int = SMEM_DEFAULT_LIMIT
) -> list[Group]:
    """Split a batch, given as its (n_rows, n_cols) rows, into launches.

    A graph's state goes to shared memory when :func:`state_bytes` fits ``smem_limit``,
    else to global scratch. Groups in a fixed order (block size, shared first); members
    largest first (``n_rows + n_cols``), ties in input order. Vectorized (a batch of
    thousands of graphs plans in well under a millisecond).

    Raises
    ------
    ValueError
        For a graph :func:`size_rule` refuses (edges are not counted here).
    """
    shp = np.asarray(shapes, dtype=np.int64).reshape(-1, 2)
    nr, nc = shp[:, 0], shp[:, 1]
    sizes = nr + nc
    over = np.flatnonzero(sizes > MAX_VERTICES)
    if over.size:
        k = int(over[0])
        raise ValueError(f"graph {k}: {size_rule(nr[k], nc[k], 0)}")
    t = (np.full(nr.shape, int(threads_per_block), dtype=np.int64) if threads_per_block
         else _auto_threads_many(nr))
    sb = 4 * (3 * nr + 2 * nc)
    in_global = sb > smem_limit
    order = np.lexsort((np.arange(nr.shape[0]), -sizes, in_global, t))
    out: list[Group] = []
    if order.size == 0:
        return out
    t_o, g_o = t[order], in_global[order]
    cuts = np.flatnonzero((t_o[1:] != t_o[:-1]) | (g_o[1:] != g_o[:-1])) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]).tolist(), np.concatenate([cuts, [order.size]]).tolist(),
                      strict=True):
        members = order[lo:hi]
        in_smem = not bool(g_o[lo])
        out.append(Group(int(t_o[lo]), in_smem, members.tolist(),
                         int(sb[members].max()) if in_smem else 0))
    return out


def make_meta(
    p: Packed, groups: list[Group], start: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """The ``meta`` rows in launch order (groups one after the other), the launch order
    (batch indices) and the ints of global scratch the batch needs."""
    order = np.array([k for g in groups for k in g.members], dtype=np.int64)
    in_smem = np.concatenate([np.full(len(g.members), g.in_smem) for g in groups]) if groups \
        else np.zeros(0, dtype=bool)
    meta = np.zeros((len(order), META_SIZE), dtype=np.int64)
    if not len(order):
        return meta, order, 0
    nr, nc = p.shapes[order, 0], p.shapes[order, 1]
    words = np.where(in_smem, 0, (3 * nr + 2 * nc))  # state_bytes // 4 of global-state graphs
    scratch_at = np.cumsum(words) - words
    meta[:, 0], meta[:, 1] = nr, nc
    meta[:, 2], meta[:, 3] = p.ptr_off[order], p.ind_off[order]
    meta[:, 4], meta[:, 5] = p.row_off[order], p.col_off[order]
    meta[:, 6] = np.where(in_smem, -1, scratch_at)
    meta[:, 7] = np.asarray(start)[order]
    return meta, order, int(words.sum())


# ---------------------------------------------------------------------------------------
# The kernel's algorithm in numpy (the CPU tests' oracle for its logic)
# ---------------------------------------------------------------------------------------


class KernelError(RuntimeError):
    """A block (or :func:`apfb_reference`) stopped with one of :data:`KERNEL_ERRORS`."""

    def __init__(self, code: int):
        super().__init__(KERNEL_ERRORS.get(code, f"error code {code}"))
        self.code = code


def _interleave(threads: list[Iterator[None]], rng: np.random.Generator | None) -> None:
    """Run generator "threads" to completion: in order (rng None) or one shared-memory
    access at a time from a thread chosen at random."""
    if rng is None:
        for t in threads:
            for _ in t:
                pass
        return
    live = list(threads)
    while live:
        i = int(rng.integers(len(live)))
        try:
            next(live[i])
        except StopIteration:
            live[i] = live[-1]
            live.pop()


def apfb_reference(
    indptr: np.ndarray,
    indices: np.ndarray,
    n_rows: int,
    n_cols: int,
    *,
    start: int = START_GREEDY,
    row_match: np.ndarray | None = None,
    col_match: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Solve one graph exactly as a block of ``mcm_batch_apfb`` does.

    Parameters
    ----------
    indptr, indices : ndarray
        CSR rows -> columns of the graph (local indices).
    n_rows, n_cols : int
    start : int
        :data:`START_GREEDY`, :data:`START_EMPTY` or :data:`START_GIVEN` (then
        ``row_match`` and ``col_match`` are the initial matching).
    rng : numpy Generator, optional
        None: the threads run one after the other. Else each row (BFS, greedy) or column
        (ALTERNATE) is a thread of its own and their shared-memory accesses interleave at
        random between the barriers, as they may on the GPU.

    Returns
    -------
    row_match, col_match : ndarray of int32
    stats : dict
        ``phases``, ``levels``, ``initial`` and ``cardinality``, the kernel's stats.

    Raises
    ------
    KernelError
        Where the kernel would set an error code.

    Notes
    -----
    Deveci et al., Euro-Par 2013: Alg. 1 without lines 9-10 (APFB), Alg. 4 (GPUBFS-WR),
    Alg. 3 (ALTERNATE) and FIXMATCHING, with the sides swapped (the BFS runs from free
    rows over the rows' CSR); see ``kernels/mcm/mcm_batch.cu`` for the race arguments.
    """
    ptr = np.asarray(indptr, dtype=np.int64)
    ind = np.asarray(indices, dtype=np.int64)
    nr, nc = int(n_rows), int(n_cols)
    if start == START_GIVEN:
        rmate = [int(x) for x in row_match]
        cmate = [int(x) for x in col_match]
    else:
        rmate, cmate = [-1] * nr, [-1] * nc
    level, root, pred = [0] * nr, [0] * nr, [0] * nc

    if start == START_GREEDY:

        def greedy(r: int) -> Iterator[None]:
            for p in range(int(ptr[r]), int(ptr[r + 1])):
                c = int(ind[p])
                v = cmate[c]
                yield
                if v == -1:
                    if cmate[c] == -1:  # atomicCAS: read and write as one access
                        cmate[c] = r
                        yield
                        rmate[r] = c
                        yield
                        return
                    yield

        _interleave([greedy(r) for r in range(nr)], rng)
    initial = sum(1 for x in rmate if x >= 0)

    def bfs(r: int, L: int, flags: dict[str, int]) -> Iterator[None]:
        lv = level[r]
        yield
        if lv != L:
            return
        my_root = root[r]
        yield
        lr = level[my_root]
        yield
        if lr < L0 - 1:
            return
        for p in range(int(ptr[r]), int(ptr[r + 1])):
            c = int(ind[p])
            row_of_c = cmate[c]
            yield
            if row_of_c > -1:
                lv = level[row_of_c]
                yield
                if lv == L0 - 1:
                    flags["inserted"] = 1
                    level[row_of_c] = L + 1
                    yield
                    root[row_of_c] = my_root
                    yield
                    pred[c] = r
                    yield
            elif row_of_c == -1:
                level[my_root] = L0 - 2
                yield
                cmate[c] = -2
                yield
                pred[c] = r
                yield
                flags["found"] = 1

    def walk(c: int, out: list[int]) -> Iterator[None]:
        steps = 0
        while c != -1:
            r = pred[c]
            yield
            cn = rmate[r]
            yield
            if cn != -1:
                pc = pred[cn]
                yield
                if pc == r:
                    return
            cmate[c] = r
            yield
            rmate[r] = c
            yield
            c = cn
            steps += 1
            if steps > nr + 1:
                out.append(3)
                return

    phases = levels = 0
    max_phases = min(nr, nc) + 2
    while True:
        phases += 1
        if phases > max_phases:
            raise KernelError(1)
        for r in range(nr):
            level[r] = L0 if rmate[r] == -1 else L0 - 1
            root[r] = r
        flags = {"inserted": 0, "found": 0}
        L = L0
        while True:
            if L - L0 > nr:
                raise KernelError(2)
            levels += 1
            flags["inserted"] = 0
            _interleave([bfs(r, L, flags) for r in range(nr)], rng)
            if not flags["inserted"]:
                break
            L += 1
        if not flags["found"]:
            break
        errs: list[int] = []
        ends = [c for c in range(nc) if cmate[c] == -2]
        _interleave([walk(c, errs) for c in ends], rng)
        if errs:
            raise KernelError(max(errs))
        for c in range(nc):
            r = cmate[c]
            if r == -2 or (r >= 0 and rmate[r] != c):
                cmate[c] = -1
    for r in range(nr):
        c = rmate[r]
        if c >= 0 and cmate[c] != r:
            raise KernelError(4)
    rm = np.asarray(rmate, dtype=np.int32)
    cm = np.asarray(cmate, dtype=np.int32)
    stats = {
        "phases": phases,
        "levels": levels,
        "initial": initial,
        "cardinality": int((rm >= 0).sum()),
    }
    return rm, cm, stats


# ---------------------------------------------------------------------------------------
# Device launch (shared by the solver and matchbench.families.mcm.api.solve_batch)
# ---------------------------------------------------------------------------------------


def smem_limit() -> int:
    """The dynamic shared memory a block of the current device may opt in to."""
    from matchbench.gpu.common import device_attributes

    attrs = device_attributes()
    return int(attrs.get("MaxSharedMemoryPerBlockOptin", SMEM_DEFAULT_LIMIT))


class DeviceBatch:
    """A packed batch on the current device, ready to launch (arrays kept for reuse).

    ``indptr``/``indices`` may be CuPy arrays already on the device (the array API
    passes them through) or host arrays (uploaded here).
    """

    def __init__(
        self,
        p: Packed,
        start: np.ndarray,
        threads_per_block: int = 0,
        indptr_dev: Any = None,
        indices_dev: Any = None,
    ):
        import cupy as cp

        from matchbench.gpu.kernels import get_module

        self.packed = p
        self.groups = plan_groups(p.shapes, threads_per_block, smem_limit())
        meta, self.order, scratch = make_meta(p, self.groups, start)
        self.meta_host = meta
        self.indptr = cp.asarray(p.indptr if indptr_dev is None else indptr_dev, dtype=cp.int32)
        self.indices = cp.asarray(p.indices if indices_dev is None else indices_dev, dtype=cp.int32)
        if self.indices.size == 0:  # a valid pointer for graphs without edges
            self.indices = cp.zeros(1, dtype=cp.int32)
        self.meta = cp.asarray(meta)
        self.row_match = cp.full(max(1, p.total_rows), -1, dtype=cp.int32)
        self.col_match = cp.full(max(1, p.total_cols), -1, dtype=cp.int32)
        self.scratch = cp.zeros(max(1, scratch), dtype=cp.int32)
        self.stats = cp.zeros((max(1, len(self.order)), STAT_SIZE), dtype=cp.int64)
        self.kern = get_module("mcm_batch").get_function("mcm_batch_apfb")
        need = max((g.shared_bytes for g in self.groups), default=0)
        if need > SMEM_DEFAULT_LIMIT:
            self.kern.max_dynamic_shared_size_bytes = max(
                need, int(getattr(self.kern, "max_dynamic_shared_size_bytes", 0) or 0)
            )

    def set_start(self, row_match: np.ndarray | None, col_match: np.ndarray | None) -> None:
        """The initial mates of START_GIVEN graphs (concatenated, host arrays)."""
        if row_match is not None:
            self.row_match[: row_match.shape[0]].set(row_match.astype(np.int32, copy=False))
            self.col_match[: col_match.shape[0]].set(col_match.astype(np.int32, copy=False))
        else:
            self.row_match.fill(-1)
            self.col_match.fill(-1)

    def launch(self) -> int:
        """Queue the group launches on the current stream; returns their number."""
        q = 0
        for g in self.groups:
            n = len(g.members)
            self.kern(
                (n,),
                (g.threads_per_block,),
                (
                    self.indptr,
                    self.indices,
                    self.meta[q : q + n],
                    self.row_match,
                    self.col_match,
                    self.scratch,
                    self.stats[q : q + n],
                ),
                shared_mem=g.shared_bytes if g.in_smem else 0,
            )
            q += n
        return len(self.groups)

    def stats_by_graph(self) -> np.ndarray:
        """The stats rows in batch order (one host copy)."""
        st = self.stats.get()[: len(self.order)]
        out = np.zeros_like(st)
        out[self.order] = st
        return out


def raise_on_errors(stats: np.ndarray, describe) -> None:
    """Raise :class:`RuntimeError` naming the first graph whose block set an error code."""
    bad = np.flatnonzero(stats[:, STAT_SLOTS["ERR"]])
    if bad.size:
        k = int(bad[0])
        code = int(stats[k, STAT_SLOTS["ERR"]])
        raise RuntimeError(
            f"the block of graph {k} ({describe(k)}) stopped: "
            f"{KERNEL_ERRORS.get(code, f'error code {code}')} ({bad.size} graph(s) of "
            f"{stats.shape[0]} failed)"
        )


# ---------------------------------------------------------------------------------------
# The solver
# ---------------------------------------------------------------------------------------


class MCMBatchGPU(BaseSolver):
    """Many small maximum matchings at once on one GPU: one thread block per graph.

    Takes graphs with ``n_rows + n_cols <= 65536`` (:data:`MAX_VERTICES`) and fewer than
    2^31 edges (:func:`size_rule`); their state sits in shared memory when
    4 (3 n_rows + 2 n_cols) bytes fit the block's opt-in limit, else in global scratch.
    Larger graphs are skipped, with the reason, in favour of ``apfb``.

    Parameters
    ----------
    threads_per_block : int
        The CUDA block size, a multiple of 32 in [32, 1024]; 0 (the configured default)
        picks it per graph by :func:`auto_threads` (graphs with different picks go to
        different launches).

    Notes
    -----
    Deveci et al., Euro-Par 2013: APFB (Alg. 1 without lines 9-10) with GPUBFS-WR
    (Alg. 4), ALTERNATE (Alg. 3) and FIXMATCHING, one graph per thread block, the BFS
    levels separated by block barriers; see ``kernels/mcm/mcm_batch.cu`` and
    :func:`apfb_reference`. A graph starts from the initial matching the runner hands
    over (``init=cheap_cpu``, the papers' protocol), else from the block's own greedy
    matching. Counters of a batch: ``batch_size``, ``kernel_launches`` (one per group),
    ``host_syncs`` (0 inside the solve), ``groups``, and after :meth:`result_batch`
    ``phases``, ``bfs_levels`` and ``initial_cardinality`` summed over the batch.
    """

    name: ClassVar[str] = "mcm_batch_gpu"
    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("mcm_batch",)
    batchable: ClassVar[bool] = True
    #: solves a whole :class:`~matchbench.graphs.stack.GraphStack` (:meth:`prepare_stack`)
    stackable: ClassVar[bool] = True

    def __init__(self, *, threads_per_block: int = 0) -> None:
        super().__init__(
            threads_per_block=block_size(
                f"{self.name}: threads_per_block", threads_per_block, auto=0
            )
        )
        self._instances: list[BipartiteGraph] | None = None
        self._stack: Any = None
        self._dev: DeviceBatch | None = None
        self._start_rm: np.ndarray | None = None
        self._start_cm: np.ndarray | None = None
        self._timer: Any = None
        self._answers: list[Matching] | None = None
        self._counters: dict[str, int] = {}

    # -- sizes -----------------------------------------------------------------------

    @staticmethod
    def estimate_bytes(instance: BipartiteGraph) -> int:
        """Device bytes of one graph in a batch: its row CSR, answers, meta and stats,
        and its state if that goes to global scratch."""
        nr, nc = instance.n_rows, instance.n_cols
        return int(
            4 * (nr + 1 + instance.n_edges + nr + nc)
            + 8 * (META_SIZE + STAT_SIZE)
            + state_bytes(nr, nc)
        )

    @classmethod
    def estimate_batch_bytes(cls, instances: list[BipartiteGraph]) -> int:
        return int(sum(cls.estimate_bytes(g) for g in instances))

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        """Skip graphs over :func:`size_rule`'s limits (checked first, so the reason is
        the same with or without a GPU), then where no CUDA device is usable."""
        from matchbench.gpu.common import device_memory_skip

        why = size_rule(instance.n_rows, instance.n_cols, instance.n_edges)
        if why is not None:
            return True, why
        return device_memory_skip(lambda: self.estimate_bytes(instance))

    # -- life cycle ------------------------------------------------------------------

    def prepare(self, instance: BipartiteGraph, init: Any | None = None) -> None:
        """A batch of one."""
        self.prepare_batch([instance], None if init is None else [init])

    def result(self) -> Matching:
        return self.result_batch()[0]

    def prepare_batch(self, instances: list, inits: list | None = None) -> None:
        """Pack and upload the batch (untimed; reused for the same instances) and set each
        graph's start: its ``inits`` entry (a :class:`Matching`) where given, else the
        block's greedy matching."""
        import cupy as cp

        from matchbench.gpu.common import EventTimer

        instances = list(instances)
        if not instances:
            raise ValueError(f"{self.name}: prepare_batch() got no instances")
        for k, g in enumerate(instances):
            if not isinstance(g, BipartiteGraph):
                raise TypeError(
                    f"{self.name}: instance {k} is a {type(g).__name__}, not a BipartiteGraph"
                )
        inits = list(inits) if inits is not None else [None] * len(instances)
        if len(inits) != len(instances):
            raise ValueError(f"{self.name}: {len(inits)} inits for {len(instances)} instances")
        start = np.array(
            [START_GREEDY if m is None else START_GIVEN for m in inits], dtype=np.int64
        )
        held = self._instances
        if (
            self._dev is None
            or held is None
            or len(held) != len(instances)
            or any(a is not b for a, b in zip(held, instances, strict=True))
            or not np.array_equal(
                self._dev.meta_host[:, META_SLOTS["START"]], start[self._dev.order]
            )
        ):
            self._dev = None  # let the previous batch's arrays go first
            self._stack = None
            self._dev = DeviceBatch(pack_graphs(instances), start, self.params["threads_per_block"])
            self._instances = instances
        p = self._dev.packed
        if (start == START_GIVEN).any():
            rm = np.full(max(1, p.total_rows), -1, dtype=np.int32)
            cm = np.full(max(1, p.total_cols), -1, dtype=np.int32)
            for k, m in enumerate(inits):
                if m is None:
                    continue
                g = instances[k]
                why = _start_problem(g, m)
                if why is not None:
                    raise ValueError(f"{self.name}: init of instance {k} ({g.name}): {why}")
                ro, co = int(p.row_off[k]), int(p.col_off[k])
                rm[ro : ro + g.n_rows] = m.row_match
                cm[co : co + g.n_cols] = m.col_match
            self._start_rm, self._start_cm = rm, cm
        else:
            self._start_rm = self._start_cm = None
        self._dev.set_start(self._start_rm, self._start_cm)
        self._timer = EventTimer()
        self._answers = None
        self._counters = {}
        cp.cuda.get_current_stream().synchronize()

    def run(self) -> None:
        import cupy as cp

        d = self._dev
        if d is None:
            raise RuntimeError(f"{self.name}: run() before prepare_batch()")
        cp.cuda.get_current_stream().synchronize()  # keep the uploads out of the timing
        with self._timer:
            launches = d.launch()
        self._answers = None
        self._counters = {
            "batch_size": d.packed.size,
            "kernel_launches": launches,
            "host_syncs": 0,
            "groups": len(d.groups),
        }

    def result_batch(self) -> list[Matching]:
        """The answers in input order; raises if a block reported an error."""
        if self._answers is not None:
            return self._answers
        d = self._dev
        if d is None or not self._counters:
            raise RuntimeError(f"{self.name}: result_batch() before run()")
        stats = d.stats_by_graph()
        insts = self._instances
        assert insts is not None
        raise_on_errors(stats, lambda k: f"{insts[k].name}, {insts[k].n_rows} x {insts[k].n_cols}")
        rm = d.row_match.get()
        cm = d.col_match.get()
        p = d.packed
        answers = []
        for k, g in enumerate(insts):
            ro, co = int(p.row_off[k]), int(p.col_off[k])
            answers.append(Matching(rm[ro : ro + g.n_rows].copy(), cm[co : co + g.n_cols].copy()))
        self._counters["phases"] = int(stats[:, STAT_SLOTS["PHASES"]].sum())
        self._counters["bfs_levels"] = int(stats[:, STAT_SLOTS["LEVELS"]].sum())
        self._counters["initial_cardinality"] = int(stats[:, STAT_SLOTS["INITIAL"]].sum())
        self._answers = answers
        return answers

    # -- a batch as one stack (matchbench.core.stack) ----------------------------------

    def skip_stack(self, stack: Any) -> tuple[bool, str | None]:
        """Skip (each graph then goes alone, with its own verdict) a stack that is not a
        :class:`~matchbench.graphs.stack.GraphStack`, one with a graph over
        :func:`size_rule`'s limits, or one the device's free memory does not hold."""
        from matchbench.gpu.common import device_memory_skip
        from matchbench.graphs.stack import GraphStack

        graphs = stack.data
        if not isinstance(graphs, GraphStack):
            return True, f"{self.name}: not a stack of graphs"
        over = (graphs.shapes.sum(axis=1) > MAX_VERTICES) | (graphs.n_edges > MAX_EDGES)
        if over.any():
            return True, f"{self.name}: {int(over.sum())} graph(s) over the size rule"
        nr, nc = graphs.shapes[:, 0], graphs.shapes[:, 1]
        need = int(
            sum(4 * c.buf.shape[0] for c in graphs.chunks)
            + 4 * (nr.sum() + nc.sum())
            + 8 * (META_SIZE + STAT_SIZE) * len(graphs)
            + 4 * (3 * nr + 2 * nc).sum()
        )
        return device_memory_skip(lambda: need)

    def prepare_stack(self, stack: Any, init: Any | None = None) -> None:
        """Upload a :class:`~matchbench.graphs.stack.GraphStack` as it lies (each chunk's
        buffer once, with whatever it holds beside the row CSR; the kernel reads the row
        CSR where the chunk's table says) and set each graph's start: ``init`` (a
        :class:`~matchbench.graphs.stack.MatchingStack`) where given, else the block's
        greedy matching. The upload is kept for the next repetition of the same stack."""
        import cupy as cp

        from matchbench.gpu.common import EventTimer

        graphs = stack.data
        count = len(graphs)
        start = np.full(count, START_GREEDY if init is None else START_GIVEN, dtype=np.int64)
        if (
            self._dev is None
            or self._stack is not stack
            or not np.array_equal(self._dev.meta_host[:, META_SLOTS["START"]], start)
        ):
            self._dev = None
            self._instances = None
            sizes = [int(c.buf.shape[0]) for c in graphs.chunks]
            bases = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            buf = cp.empty(max(1, int(bases[-1])), dtype=cp.int32)
            for c, b in zip(graphs.chunks, bases.tolist(), strict=False):
                buf[b : b + c.buf.shape[0]].set(c.buf)
            base = np.repeat(bases[:-1], [len(c) for c in graphs.chunks])
            table = np.concatenate([c.table for c in graphs.chunks])
            empty = np.zeros(0, dtype=np.int32)
            packed = Packed(empty, empty, graphs.shapes, base + table[:, 2], base + table[:, 3])
            self._dev = DeviceBatch(packed, start, self.params["threads_per_block"], buf, buf)
            self._stack = stack
        if init is not None:
            self._dev.set_start(init.row_match, init.col_match)
        else:
            self._dev.set_start(None, None)
        self._timer = EventTimer()
        self._answers = None
        self._counters = {}
        cp.cuda.get_current_stream().synchronize()

    def result_stack(self) -> Any:
        """The answers as a :class:`~matchbench.graphs.stack.MatchingStack` (host);
        raises if a block reported an error."""
        from matchbench.graphs.stack import MatchingStack

        d, stack = self._dev, self._stack
        if d is None or stack is None or not self._counters:
            raise RuntimeError(f"{self.name}: result_stack() before run()")
        graphs = stack.data
        stats = d.stats_by_graph()
        raise_on_errors(
            stats, lambda k: f"{graphs.names[k]}, {graphs.shapes[k, 0]} x {graphs.shapes[k, 1]}"
        )
        import cupyx

        ro, co = graphs.row_offsets(), graphs.col_offsets()
        # into pinned host memory: the copy at the bus's speed, not through a staging buffer
        rm = d.row_match[: int(ro[-1])].get(out=cupyx.empty_pinned(int(ro[-1]), dtype=np.int32))
        cm = d.col_match[: int(co[-1])].get(out=cupyx.empty_pinned(int(co[-1]), dtype=np.int32))
        self._counters["phases"] = int(stats[:, STAT_SLOTS["PHASES"]].sum())
        self._counters["bfs_levels"] = int(stats[:, STAT_SLOTS["LEVELS"]].sum())
        self._counters["initial_cardinality"] = int(stats[:, STAT_SLOTS["INITIAL"]].sum())
        return MatchingStack(rm, cm, ro, co, stats[:, STAT_SLOTS["CARD"]].astype(np.int64))

    def timings(self) -> dict[str, float]:
        if self._timer is None or not self._counters:
            return {}
        return {"solve": self._timer.seconds}

    def counters(self) -> dict[str, int]:
        return dict(self._counters)


def _start_problem(g: BipartiteGraph, m: Any) -> str | None:
    """Why ``m`` cannot start the kernel on ``g`` (shapes and mutual consistency), or None.

    The kernel's invariants assume a matching; edges are not checked here (the verifier
    checks the answer).
    """
    if not isinstance(m, Matching):
        return f"expected a Matching, got {type(m).__name__}"
    rm, cm = np.asarray(m.row_match), np.asarray(m.col_match)
    if rm.shape != (g.n_rows,) or cm.shape != (g.n_cols,):
        return f"mate arrays of shapes {rm.shape}, {cm.shape} for a {g.n_rows} x {g.n_cols} graph"
    if ((rm < -1) | (rm >= g.n_cols)).any() or ((cm < -1) | (cm >= g.n_rows)).any():
        return "a mate out of range"
    rows = np.flatnonzero(rm >= 0)
    cols = np.flatnonzero(cm >= 0)
    if (cm[rm[rows]] != rows).any() or (rm[cm[cols]] != cols).any():
        return "row_match and col_match disagree"
    return None
