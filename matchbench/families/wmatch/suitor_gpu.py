"""GPU half-approximate weighted matching (``kernels/wmatch/wmatch.cu``): Suitor, b-Suitor, LD.

- :class:`SuitorGPU` (``suitor_gpu``): GPU-Suitor, Naim, Manne, Halappanavar, Tumeo &
  Langguth, *Optimizing approximate weighted matching on Nvidia Kepler K40*, HiPC 2015
  (paper I of Naim's 2017 thesis), Alg. 4, with its four variants (Sec. 4,
  "Synchronization and Load Balancing").
- :class:`BSuitorGPU` (``bsuitor_gpu``): b-Suitor (Khan et al., SISC 2016) on the same
  proposal words, any capacities b(v) >= 0.
- :class:`LDGPU` (``ld_gpu``): the thread-per-vertex locally-dominant algorithm the paper
  compares against (Halappanavar et al.; paper I, Alg. 1-2, one kernel sequence per round).

All return the greedy (b-)matching of the global edge order of
:mod:`matchbench.graphs.weighted`, edge for edge the answer of the CPU ``greedy``. The
order reaches the kernels as an integer rank per CSR entry (the edge at position r of the
order, from 0, has rank ``m - r``), so that comparing two offers is comparing two integers
and one ``atomicMax`` (or CAS) on a packed 64-bit word updates a vertex's offers (the
kernel file's header). The ranks are computed on the device (:func:`device_edge_ranks`:
two radix argsorts of the m forward entries and two kernels) at every :meth:`prepare`,
timed with CUDA events and reported as ``timings()["init"]``, so a row's ``t_init_s`` is
the ranking, ``t_solve_s`` the matching and ``t_e2e_s`` both; its ``init`` is
``edge_ranks``.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import block_size, choice, non_negative_int
from matchbench.core.solver import BaseSolver

#: ``variant`` values of :class:`SuitorGPU`, in the kernel's numbering.
VARIANTS = {"nosync": 0, "syncnolb": 1, "synclb": 2, "hybrid": 3}
THREADS_PER_BLOCK = (128, 192, 256)
#: vertices_per_warp: powers of two up to 256 (the paper's grid, Sec. 5.3).
VERTICES_PER_WARP = tuple(1 << k for k in range(9))
#: Slots of the Suitor kernel's stats array.
PROPOSALS, ITERATIONS, DISPLACED, REBALANCES = 0, 1, 2, 3


def edge_ranks(
    n: int, ptr: np.ndarray, ind: np.ndarray, weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The rank of every CSR entry's edge in the global order, and the ends' XOR per rank.

    Returns ``(rank, ends)``: ``rank[p]`` in ``1..m`` (uint32 where ``m < 2^32`` and the
    indices are int32, else uint64), the same for both directions of an edge, larger for an
    edge earlier in the order ``(w, max(u, v), min(u, v))``, larger first; ``ends[r - 1]``
    is ``u ^ v`` for the edge ``{u, v}`` of rank r (the int64 kernels recover a suitor from
    it), in the dtype of ``ind``.
    """
    idx = np.dtype(ind.dtype)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr.astype(np.int64)))
    cols = ind.astype(np.int64)
    hi, lo = np.maximum(rows, cols), np.minimum(rows, cols)
    # Ascending (w, hi, lo): the two entries of one edge are adjacent (equal keys).
    order = np.lexsort((lo, hi, weight))
    rdt = np.uint32 if idx == np.int32 else np.uint64
    rank = np.empty(cols.shape[0], dtype=rdt)
    rank[order] = (np.arange(cols.shape[0], dtype=np.int64) // 2 + 1).astype(rdt)
    ends = np.zeros(cols.shape[0] // 2, dtype=idx)
    ends[rank.astype(np.int64) - 1] = (rows ^ cols).astype(idx)
    return rank, ends


def device_edge_ranks(n: int, d_ptr: Any, d_ind: Any, d_w: Any, kernels: dict[str, Any]) -> tuple[Any, Any]:
    """:func:`edge_ranks` on the device, for CuPy arrays ``d_ptr``, ``d_ind``, ``d_w``.

    The forward entries (u < v) are ordered by (w, v, u) ascending with two radix
    argsorts: first by the key ``v * n + u`` (unique per edge), then by the weight's bits
    (positive finite doubles order as their bit patterns), the second sort stable (CuPy's
    ``argsort`` is; the GPU tests compare with :func:`edge_ranks` on tie-heavy graphs).
    Where ``n * n`` does not fit 64 bits, one ``lexsort`` of the three keys. Then
    ``wmatch_rank_scatter`` numbers them and ``wmatch_rank_mirror`` copies each rank to the
    backward entry. Returns ``(rank, ends)`` as :func:`edge_ranks` does, on the device.
    """
    import cupy as cp

    idx = d_ind.dtype
    nnz = int(d_ind.shape[0])
    m = nnz // 2
    rdt = cp.uint32 if idx == cp.int32 else cp.uint64
    rank = cp.zeros(max(nnz, 1), dtype=rdt)
    ends = cp.zeros(max(m, 1), dtype=idx)
    if nnz == 0:
        return rank, ends
    # row of entry p: the number of rows u with ptr[u + 1] <= p
    rows = cp.searchsorted(d_ptr[1:], cp.arange(nnz, dtype=idx), side="right").astype(idx)
    fwd = cp.flatnonzero(rows < d_ind)
    lo = rows[fwd].astype(cp.uint64)
    hi = d_ind[fwd].astype(cp.uint64)
    wbits = d_w[fwd].view(cp.uint64)
    if n <= (1 << 32):
        o1 = cp.argsort(hi * np.uint64(n) + lo)
        order = fwd[o1[cp.argsort(wbits[o1])]]
        del o1
    else:
        order = fwd[cp.lexsort(cp.stack([lo, hi, wbits]))]
    del lo, hi, wbits, fwd
    order = order.astype(cp.int64, copy=False)
    kernels["wmatch_rank_scatter"](
        (_grid(m, 256),), (256,), (order, np.int64(m), rows, d_ind, rank, ends)
    )
    del order
    kernels["wmatch_rank_mirror"](
        (_grid(nnz, 256),), (256,), (d_ptr, d_ind, rows, np.int64(nnz), rank)
    )
    return rank, ends


@dataclass(eq=False)
class _DeviceState:
    """One instance on one device: CSR, weights, ranks and the per-run arrays."""

    instance: Any  # weakref to the host graph
    device_id: int
    n: int
    idx: Any
    ptr: Any
    ind: Any
    weight: Any
    rank: Any
    ends: Any
    mate: Any
    work: Any  # Suitor: the offers S (uint64[n]); b-Suitor: the slots; LD: candidate
    extra: tuple[Any, ...]
    stats: Any
    kernels: dict[str, Any]
    upload_s: float
    rank_s: float = float("nan")


class _WMatchGPU(BaseSolver):
    problem: ClassVar[str] = "wmatch"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("wmatch",)
    #: The preprocessing reported as ``timings()["init"]`` (the row's ``init``).
    init_label: ClassVar[str | None] = "edge_ranks"
    _rank_kernels: ClassVar[tuple[str, ...]] = ("wmatch_rank_scatter", "wmatch_rank_mirror")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._state: _DeviceState | None = None
        self._ran = False
        self._t_solve = self._t_transfer = float("nan")
        self._counters: dict[str, int | float] = {}

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        if not instance.is_matching:
            return True, (
                f"{self.name} computes matchings (b = 1); {instance.name} has capacities "
                "b(v) != 1 (use greedy, bsuitor, bsuitor_gpu or nk_bsuitor)"
            )
        return self._memory_skip(instance)

    def _memory_skip(self, instance: Any) -> tuple[bool, str | None]:
        from matchbench.gpu.common import device_memory_skip

        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def estimate_bytes(self, instance: Any) -> int:
        """Peak device bytes: the ranking's sort (:func:`device_edge_ranks`) or the solve."""
        n, nnz = int(instance.n), int(instance.ind.shape[0])
        isz = np.dtype(instance.ind.dtype).itemsize
        rsz = 4 if isz == 4 else 8
        m = nnz // 2
        # CSR, weights, ranks, ends, mate and four index arrays of n
        resident = (n + 1) * isz + nnz * (isz + 8 + rsz) + m * isz + n * (isz + 8) + 4 * n * isz
        # ranking: rows, fwd, lo, hi, key, two argsorts and their temporaries (about 8 B x 8)
        ranking = nnz * isz + m * 8 * 8
        return resident + ranking

    # -- device state -------------------------------------------------------------------

    def _build_state(self, instance: Any) -> _DeviceState:
        import cupy as cp

        from matchbench.gpu.common import EventTimer
        from matchbench.gpu.kernels import get_module

        idx = np.dtype(instance.ind.dtype)
        if idx not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise TypeError(f"{instance.name}: index dtype {idx} is neither int32 nor int64")
        n = int(instance.n)
        ptr = np.ascontiguousarray(instance.ptr, dtype=idx)
        ind = np.ascontiguousarray(instance.ind, dtype=idx)
        weight = np.ascontiguousarray(instance.weight, dtype=np.float64)
        module = get_module("wmatch", ("-DMB_INDEX64",) if idx == np.int64 else ())
        kernels = {k: module.get_function(k) for k in self._kernel_names + self._rank_kernels}
        timer = EventTimer()
        with timer:
            d_ptr, d_ind, d_w = cp.asarray(ptr), cp.asarray(ind), cp.asarray(weight)
        upload_s = timer.seconds
        work, extra = self._allocate(instance, n, idx, d_ptr)
        return _DeviceState(
            instance=weakref.ref(instance),
            device_id=cp.cuda.Device().id,
            n=n,
            idx=idx,
            ptr=d_ptr,
            ind=d_ind,
            weight=d_w,
            rank=None,
            ends=None,
            mate=cp.full(max(n, 1), -1, dtype=idx),
            work=work,
            extra=extra,
            stats=cp.zeros(4, dtype=np.uint64),
            kernels=kernels,
            upload_s=upload_s,
        )

    def _rank(self, st: _DeviceState) -> None:
        """(Re)compute the edge ranks on the device, timed (``st.rank_s``)."""
        from matchbench.gpu.common import EventTimer

        st.rank = st.ends = None  # the previous ranks go before the sort's temporaries
        timer = EventTimer()
        with timer:
            st.rank, st.ends = device_edge_ranks(st.n, st.ptr, st.ind, st.weight, st.kernels)
        st.rank_s = timer.seconds

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        import cupy as cp

        st = self._state
        if st is None or st.instance() is not instance or st.device_id != cp.cuda.Device().id:
            self._state = None  # the previous instance's arrays go first
            st = self._state = self._build_state(instance)
            self._rank(st)
            self._launch(st)  # warm-up: loads every kernel outside the timed region
            cp.cuda.get_current_stream().synchronize()
        # Every repetition ranks afresh: t_init_s is measured, not carried over.
        self._rank(st)
        self._ran = False
        self._t_solve = self._t_transfer = float("nan")
        self._counters = {}

    def run(self) -> None:
        from matchbench.gpu.common import EventTimer

        st = self._require_state()
        timer = EventTimer()
        with timer:
            counters = self._launch(st)
        self._t_solve = timer.seconds
        counters.update(self._read_stats(st))
        self._counters = counters
        self._ran = True

    def result(self) -> np.ndarray:
        """The mate array (-1 for unmatched vertices), in the instance's index dtype."""
        import cupy as cp

        st = self._require_state()
        if not self._ran:
            raise RuntimeError(f"{self.name}: result() before run()")
        t0 = time.perf_counter()
        cp.cuda.get_current_stream().synchronize()
        mate = st.mate[: st.n].get()
        self._t_transfer = time.perf_counter() - t0
        return mate

    def timings(self) -> dict[str, float]:
        out = {"solve": self._t_solve, "transfer": self._t_transfer}
        if self._state is not None:
            out["upload"] = self._state.upload_s
            out["init"] = self._state.rank_s  # the edge ranks (init_label)
        return out

    def counters(self) -> dict[str, int | float]:
        return dict(self._counters)

    def _require_state(self) -> _DeviceState:
        if self._state is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        return self._state

    def _idx(self, st: _DeviceState, value: int) -> Any:
        return np.int64(value) if st.idx == np.int64 else np.int32(value)

    # -- per algorithm --------------------------------------------------------------------

    _kernel_names: ClassVar[tuple[str, ...]] = ()

    def _allocate(
        self, instance: Any, n: int, idx: Any, d_ptr: Any
    ) -> tuple[Any, tuple[Any, ...]]:
        raise NotImplementedError

    def _launch(self, st: _DeviceState) -> dict[str, int | float]:
        raise NotImplementedError

    def _read_stats(self, st: _DeviceState) -> dict[str, int | float]:
        return {}


def _grid(n: int, threads: int) -> int:
    return max(1, min(-(-int(n) // threads), 1 << 20))


class SuitorGPU(_WMatchGPU):
    """GPU-Suitor: a warp per vertex, chunks of ``vertices_per_warp`` vertices per warp.

    Parameters
    ----------
    variant : {"nosync", "syncnolb", "synclb", "hybrid"}
        The paper's four variants (Sec. 4): ``nosync`` (GPU-Suitor of Alg. 4: each warp
        runs its queue to the end alone), ``syncnolb`` (the warps of a block synchronize
        after every iteration and finish together), ``synclb`` (as ``syncnolb``, and during
        the first ``lb_iterations`` iterations the queued vertices are re-dealt evenly among
        the block's warps whenever the largest queue exceeds the average by more than 25%),
        ``hybrid`` (that load balancing during the first ``lb_iterations`` iterations, then
        no synchronization).
    threads_per_block : {128, 192, 256}
    vertices_per_warp : {1, 2, 4, ..., 256}
        Size of the chunk of vertices a warp owns (Alg. 4 line 2); also the capacity of
        its queue in shared memory. Default 32, the fastest on an H200 in
        ``naim2015_fig5`` (the paper's K40 preferred 8).
    lb_iterations : int
        The paper's k: iterations with load balancing (``synclb`` and ``hybrid`` only;
        recorded for the other variants but unused).

    Notes
    -----
    Naim et al., HiPC 2015 (paper I of Naim's thesis), Alg. 4 with Alg. 3 for each vertex;
    the else-branch slip of Alg. 3 (line 28, ``next <- u``) is read as ``next <- current``.
    The lock, compare and set of Alg. 3 lines 19-25 is one ``atomicMax`` on a 64-bit word
    ``(edge rank, suitor)`` per vertex, which returns the displaced suitor. Proposals are
    made 32 at a time (one per lane) after the warp found the 32 vertices' candidates in
    turn, where the paper finds all candidates of the chunk before proposing; both are
    Alg. 4 lines 6-8 for chunks of up to 32 vertices. The load balancing keeps the paper's
    25% tolerance; how the paper re-deals (which vertices move where) is not specified,
    here every queued vertex of the block is re-dealt in contiguous slices.
    Counters: ``kernel_launches``, ``host_syncs`` (0: one kernel and the mate kernel),
    ``proposals`` (atomicMax calls), ``displaced`` (suitors displaced), ``iterations``
    (the most iterations of one warp), ``rebalances`` (block re-deals); the edge ranks'
    seconds are ``timings()["init"]``.
    """

    name: ClassVar[str] = "suitor_gpu"
    _kernel_names: ClassVar[tuple[str, ...]] = ("wmatch_suitor", "wmatch_suitor_mate")

    def __init__(
        self, *, variant: str, threads_per_block: int, vertices_per_warp: int, lb_iterations: int
    ) -> None:
        super().__init__(
            variant=choice("suitor_gpu variant", variant, VARIANTS),
            threads_per_block=choice("threads_per_block", threads_per_block, THREADS_PER_BLOCK),
            vertices_per_warp=choice("vertices_per_warp", vertices_per_warp, VERTICES_PER_WARP),
            lb_iterations=non_negative_int("lb_iterations", lb_iterations),
        )

    def _allocate(
        self, instance: Any, n: int, idx: Any, d_ptr: Any
    ) -> tuple[Any, tuple[Any, ...]]:
        import cupy as cp

        return cp.zeros(max(n, 1), dtype=np.uint64), ()

    def _shared_bytes(self, idx: Any) -> int:
        p = self.params
        warps = p["threads_per_block"] // 32
        copies = 2 if p["variant"] in ("synclb", "hybrid") else 1
        return copies * warps * p["vertices_per_warp"] * np.dtype(idx).itemsize

    def _launch(self, st: _DeviceState) -> dict[str, int | float]:
        p = self.params
        tpb, vpw = p["threads_per_block"], p["vertices_per_warp"]
        st.work.fill(0)
        st.stats.fill(0)
        launches = 2  # the fills
        if st.n > 0:
            warps = -(-st.n // vpw)
            blocks = -(-warps // (tpb // 32))
            st.kernels["wmatch_suitor"](
                (blocks,),
                (tpb,),
                (
                    st.ptr,
                    st.ind,
                    st.rank,
                    st.ends,
                    st.work,
                    self._idx(st, st.n),
                    np.int32(vpw),
                    np.int32(VARIANTS[p["variant"]]),
                    np.int32(p["lb_iterations"]),
                    st.stats,
                ),
                shared_mem=self._shared_bytes(st.idx),
            )
            st.kernels["wmatch_suitor_mate"](
                (_grid(st.n, 256),), (256,), (st.work, st.ends, self._idx(st, st.n), st.mate)
            )
            launches += 2
        return {"kernel_launches": launches, "host_syncs": 0}

    def _read_stats(self, st: _DeviceState) -> dict[str, int | float]:
        s = st.stats.get()
        return {
            "proposals": int(s[PROPOSALS]),
            "displaced": int(s[DISPLACED]),
            "iterations": int(s[ITERATIONS]),
            "rebalances": int(s[REBALANCES]),
        }


class LDGPU(_WMatchGPU):
    """The locally-dominant algorithm on the GPU, a thread per vertex, one round at a time.

    Parameters
    ----------
    threads_per_block : int
        A multiple of 32 in [32, 1024].

    Notes
    -----
    Naim et al., HiPC 2015 (paper I), Alg. 1-2 run as GPU-LD (Halappanavar, Feo, Villa,
    Tumeo & Pothen, *Approximate weighted matching on emerging manycore and multithreaded
    architectures*, IJHPCA 2012): each round is three kernels, ``wmatch_ld_candidate``
    (Alg. 2 lines 2-8 for the round's queue: a thread finds its vertex's first unmatched
    neighbour in the global order), ``wmatch_ld_match`` (lines 9-12: mutual candidates
    are matched) and ``wmatch_ld_enqueue`` (Alg. 1 lines 9-11: the unmatched vertices
    whose candidate was just matched form the next queue); the host reads the next
    queue's length (one sync per round). Counters: ``rounds`` (= ``iterations``),
    ``processed`` (candidate searches), ``kernel_launches``, ``host_syncs``.
    """

    name: ClassVar[str] = "ld_gpu"
    _kernel_names: ClassVar[tuple[str, ...]] = (
        "wmatch_ld_candidate",
        "wmatch_ld_match",
        "wmatch_ld_enqueue",
    )

    def __init__(self, *, threads_per_block: int) -> None:
        super().__init__(threads_per_block=block_size("threads_per_block", threads_per_block))

    def _allocate(
        self, instance: Any, n: int, idx: Any, d_ptr: Any
    ) -> tuple[Any, tuple[Any, ...]]:
        import cupy as cp

        size = max(n, 1)
        # candidate; (queue, next queue, matched list, counters [n_matched, n_next])
        return cp.full(size, -1, dtype=idx), (
            cp.empty(size, dtype=idx),
            cp.empty(size, dtype=idx),
            cp.empty(size, dtype=idx),
            cp.zeros(2, dtype=np.uint64),
        )

    def _launch(self, st: _DeviceState) -> dict[str, int | float]:
        t = self.params["threads_per_block"]
        cand = st.work
        queue, nxt, matched, cnt = st.extra
        k = st.kernels
        st.mate.fill(-1)
        launches, syncs, rounds, processed = 1, 0, 0, 0
        length, all_ = st.n, 1
        stride_grid = min(_grid(st.n, t), 1024)
        while length > 0:
            cnt.fill(0)
            k["wmatch_ld_candidate"](
                (_grid(length, t),),
                (t,),
                (st.ptr, st.ind, st.rank, st.mate, queue, np.int64(length), np.int32(all_), cand),
            )
            k["wmatch_ld_match"](
                (_grid(length, t),),
                (t,),
                (queue, np.int64(length), np.int32(all_), cand, st.mate, matched, cnt[0:1]),
            )
            k["wmatch_ld_enqueue"](
                (stride_grid,),
                (t,),
                (st.ptr, st.ind, matched, cnt[0:1], st.mate, cand, nxt, cnt[1:2]),
            )
            launches += 4
            processed += length
            rounds += 1
            length = int(cnt[1:2].get()[0])  # the next queue's length: one sync per round
            syncs += 1
            queue, nxt = nxt, queue
            all_ = 0
        st.extra = (queue, nxt, matched, cnt)
        return {
            "kernel_launches": launches,
            "host_syncs": syncs,
            "rounds": rounds,
            "iterations": rounds,
            "processed": processed,
        }


#: Slots of the b-Suitor kernel's stats array.
BS_PROPOSALS, BS_DISPLACED, BS_RETRIES, BS_CHAINS = 0, 1, 2, 3


class BSuitorGPU(_WMatchGPU):
    """b-Suitor on the GPU: a warp per proposal chain, lock-free slots per vertex.

    Parameters
    ----------
    threads_per_block : int
        A multiple of 32 in [32, 1024]; each warp seeks the partners of one vertex at a
        time (grid-stride over the vertices).

    Notes
    -----
    Khan, Pothen, Patwary, Halappanavar, Satish, Sundaram & Dubey, *Efficient
    approximation algorithms for weighted b-matching*, SISC 38(5), 2016 (the b-matching
    generalization of paper I's Suitor; the thesis's paper II, absent from its text):
    each vertex keeps its ``min(b(v), deg(v))`` best offers, a vertex displaced from
    them proposes again (MakeSuitor), and the result is the greedy b-matching. Here the
    heap of offers is an array of proposal words replaced at its minimum by
    compare-and-swap, and each vertex's search state is one rank (its latest proposal;
    proposals go down the global order), claimed by CAS; the race argument is in
    ``kernels/wmatch/wmatch.cu`` (``wmatch_bsuitor``). ``b = 1`` gives Suitor's answer.
    The answer is read back as the pairs held on both sides. Counters: ``proposals``,
    ``displaced``, ``chains`` (seeks started), ``retries`` (lost compare-and-swaps),
    ``one_sided`` (offers held on one side only at the end: 0 in a correct run),
    ``kernel_launches``, ``host_syncs``.
    """

    name: ClassVar[str] = "bsuitor_gpu"
    _kernel_names: ClassVar[tuple[str, ...]] = ("wmatch_bsuitor_reset", "wmatch_bsuitor")

    def __init__(self, *, threads_per_block: int) -> None:
        super().__init__(threads_per_block=block_size("threads_per_block", threads_per_block))

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        return self._memory_skip(instance)  # any capacities

    def estimate_bytes(self, instance: Any) -> int:
        slots = int(np.minimum(instance.capacity, np.diff(instance.ptr)).sum())
        return super().estimate_bytes(instance) + 8 * slots + 8 * (int(instance.n) + 1) * 3

    def _allocate(
        self, instance: Any, n: int, idx: Any, d_ptr: Any
    ) -> tuple[Any, tuple[Any, ...]]:
        import cupy as cp

        b = cp.asarray(np.ascontiguousarray(instance.capacity, dtype=np.int32))
        deg = cp.diff(d_ptr).astype(cp.int64)
        hoff = cp.zeros(n + 1, dtype=cp.int64)
        if n:
            cp.cumsum(cp.minimum(b.astype(cp.int64), deg), out=hoff[1:])
        n_slots = int(hoff[-1].get())
        rdt = np.uint32 if idx == np.int32 else np.uint64
        slots = cp.zeros(max(n_slots, 1), dtype=np.uint64)
        thr = cp.zeros(max(n, 1), dtype=np.uint64)
        last = cp.zeros(max(n, 1), dtype=rdt)
        return slots, (b, hoff, thr, last, n_slots)

    def _launch(self, st: _DeviceState) -> dict[str, int | float]:
        b, hoff, thr, last, _ = st.extra
        t = self.params["threads_per_block"]
        st.stats.fill(0)
        launches = 1
        if st.n > 0:
            st.kernels["wmatch_bsuitor_reset"](
                (_grid(st.n, 256),), (256,),
                (st.ptr, b, self._idx(st, st.n), hoff, st.work, thr, last),
            )
            st.kernels["wmatch_bsuitor"](
                (_grid(st.n, t // 32),), (t,),
                (st.ptr, st.ind, st.rank, st.ends, b, hoff, st.work, thr, last,
                 self._idx(st, st.n), st.stats),
            )
            launches += 2
        return {"kernel_launches": launches, "host_syncs": 0}

    def _read_stats(self, st: _DeviceState) -> dict[str, int | float]:
        s = st.stats.get()
        return {
            "proposals": int(s[BS_PROPOSALS]),
            "displaced": int(s[BS_DISPLACED]),
            "retries": int(s[BS_RETRIES]),
            "chains": int(s[BS_CHAINS]),
        }

    def result(self) -> Any:
        """The b-matching as :class:`~matchbench.families.wmatch.problem.WMatching` pairs."""
        import cupy as cp

        from matchbench.families.wmatch.problem import WMatching

        st = self._require_state()
        if not self._ran:
            raise RuntimeError(f"{self.name}: result() before run()")
        t0 = time.perf_counter()
        cp.cuda.get_current_stream().synchronize()
        _, hoff, _, _, n_slots = st.extra
        words = st.work[:n_slots].get()
        hoff_h = hoff.get()
        ends = st.ends.get() if st.idx == np.int64 else None
        self._t_transfer = time.perf_counter() - t0
        holder = np.repeat(np.arange(st.n, dtype=np.int64), np.diff(hoff_h))
        held = words != 0
        holder, words = holder[held], words[held]
        if st.idx == np.int64:
            suitor = ends[(words - 1).astype(np.int64)].astype(np.int64) ^ holder
        else:
            suitor = (words & np.uint64(0xFFFFFFFF)).astype(np.int64)
        # Both sides hold a matched pair's offers; keep each pair once, and count the
        # offers held on one side only (a wrong run: the certificate then rejects it).
        lo, hi = np.minimum(holder, suitor), np.maximum(holder, suitor)
        key = lo * max(st.n, 1) + hi
        uniq, counts = np.unique(key, return_counts=True)
        self._counters["one_sided"] = int((counts == 1).sum())
        return WMatching(uniq // max(st.n, 1), uniq % max(st.n, 1))
