"""APFB and APsB: GPU maximum-cardinality bipartite matching (Deveci et al. 2013).

Two solver classes, :class:`APFB` and :class:`APsB`, share one driver. Each phase runs a
level-synchronous BFS from all unmatched columns (one kernel launch per level), then
ALTERNATE flips the edges of the augmenting paths found and FIXMATCHING repairs the
conflicts that concurrent flips leave. The variant parameters select the paper's eight
algorithms ({APFB, APsB} x {GPUBFS, GPUBFS-WR} x {CT, MT}) and how often the host looks
at the BFS's progress (``sync``).

The kernels are in ``kernels/mcm/apfb.cu``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import (
    MISSING,
    block_size,
    choice,
    integer,
    positive_int,
    renamed,
)
from matchbench.core.solver import BaseSolver
from matchbench.gpu.common import device_attributes

#: BFS start level L0 (Deveci et al. 2013, Alg. 1 line 3). 2 keeps every BFS level and the
#: "unvisited" value L0 - 1 positive, which the APsB-GPUBFS-WR refinement needs.
L0 = 2
# Layout of the device flags array; kept in step with the #defines of kernels/mcm/apfb.cu.
_FOUND, _BASE, _LEVELS, _ERR, _EDGES = 3, 4, 5, 6, 7
_NFLAGS = 8

BFS_KINDS = ("plain", "wr")
THREAD_LAYOUTS = ("ct", "mt")
SYNC_MODES = ("level", "batched", "graph")
FRONTIERS = ("scan", "queue")


def chunk_schedule(first: int, cap: int):
    """Sizes of the successive batches of BFS levels queued between two host checks.

    The first batch is ``first`` levels (the previous phase's BFS depth is a good guess,
    since consecutive phases search similar depths), then each batch doubles up to
    ``cap``: a BFS of depth D costs O(log D) host round trips and at most about D
    surplus launches, which exit at once on the device.
    """
    k = max(1, min(int(first), int(cap)))
    while True:
        yield k
        k = min(2 * k, int(cap))


def power_of_two_parts(k: int) -> list[int]:
    """``k`` as a sum of distinct powers of two, largest first (graphs to replay)."""
    if k < 1:
        raise ValueError(f"batch size must be positive, got {k}")
    return [1 << b for b in range(k.bit_length() - 1, -1, -1) if k >> b & 1]


@dataclass
class _DeviceState:
    """Everything kept on the GPU for one instance (reused across repetitions)."""

    instance: Any
    device_id: int
    stream: Any
    graph: Any  # DeviceBipartite
    rmatch: Any
    cmatch: Any
    predecessor: Any
    bfs_array: Any
    root: Any
    queue: Any
    flags: Any
    flags_host: np.ndarray
    flags_pinned: Any
    event: Any
    kernels: dict[str, Any]
    idx: type
    grids: dict[str, tuple[int, int]]
    cuda_graphs: dict[int, Any] = field(default_factory=dict)

    @property
    def nbytes(self) -> int:
        arrays = [
            self.graph.row_ptr,
            self.graph.row_ind,
            self.graph.col_ptr,
            self.graph.col_ind,
            self.rmatch,
            self.cmatch,
            self.predecessor,
            self.bfs_array,
            self.flags,
        ]
        arrays += [a for a in (self.root, self.queue) if a is not None]
        return int(sum(a.nbytes for a in arrays))


class _AugmentingPathsGPU(BaseSolver):
    """Driver shared by :class:`APFB` and :class:`APsB`.

    Parameters
    ----------
    bfs : {"plain", "wr"}
        BFS kernel: GPUBFS (Alg. 2) or GPUBFS-WR (Alg. 4, with the root array and its
        early exit).
    threads : {"ct", "mt"}
        The paper's thread assignment (not a count): CT, a constant grid of
        ``ct_blocks`` blocks of ``threads_per_block`` threads that stride over the
        vertices; MT, one thread per vertex in blocks of ``threads_per_block``, the grid
        capped by the device's maximum.
    ct_blocks : int
        CT's grid size (the paper's CT is 256 x 256).
    threads_per_block : int
        The CUDA block size of every kernel, a multiple of 32 in [32, 1024].
    ct_threads, mt_threads : int, optional
        Deprecated spellings of ``threads_per_block`` for the CT and the MT assignment
        (one release; a ``FutureWarning``): the one of the chosen ``threads`` sets it.
    sync : {"level", "batched", "graph"}
        How the host follows the BFS. ``level``: the paper's loop, one host read of the
        flags after every level. ``batched``: batches of levels are queued with one host
        read per batch; a level whose predecessor inserted nothing (or, for APsB, that
        follows a level that found a path) exits at once on the device. ``graph``: as
        ``batched``, but each batch replays captured CUDA graphs instead of launching
        kernels one by one from Python. With the paper's frontier scan, ``batched`` and
        ``graph`` were within run-to-run variation in the sync study of
        ``docs/benchmarks/mcm.md`` (``level`` was slowest); with the frontier queue a BFS
        level is a few microseconds of GPU work, less than a launch from Python, so
        ``graph`` (the default) keeps the GPU busy where ``batched`` waits on the host.
    batch : int
        Largest batch of levels per host read (``batched`` and ``graph``).
    frontier : {"scan", "queue"}
        How a BFS level finds its frontier. ``scan``: the paper's kernels, every level
        reads ``bfs_array`` over all columns (Alg. 2/4 line 4), one thread walks each
        frontier column's adjacency. ``queue`` (not in the paper): each level reads the
        columns the previous level inserted from a queue, claims a column with an atomic
        compare-and-swap so it is queued once, and hands a column's adjacency to one
        thread, one warp or the whole block by its degree (< 32, < 1024, >= 1024), so that
        hub columns of power-law graphs are not walked by one thread. The paper's
        algorithms are otherwise unchanged (same levels, roots, predecessors, ALTERNATE).
        ``queue`` is the configured default: it was faster than ``scan`` on the
        seed-family suite (``docs/benchmarks/mcm.md``).
    count_edges : bool
        Instrumentation, not a variant (kept out of :meth:`variant`): build the kernels
        with an adjacency-entry counter and report ``edges_scanned``. Costs a block
        reduction per level, so benchmarks time uninstrumented runs.

    Notes
    -----
    Deveci, Kaya, Ucar & Catalyurek, "GPU accelerated maximum cardinality matching
    algorithms for bipartite graphs", Euro-Par 2013: Alg. 1 (APsB; APFB drops its lines
    9-10), Alg. 2 (GPUBFS), Alg. 3 (ALTERNATE), Alg. 4 (GPUBFS-WR), FIXMATCHING and the
    L0 = 2 refinement of APsB-GPUBFS-WR (Sec. 3). The device-side flags that let several
    levels run per host read are this implementation's, not the paper's.

    Every phase that finds a path matches at least one more column (the walk that
    reaches the lowest level flipped in that phase ends at a root), so there are at most
    n_cols + 1 phases; the loop stops with a RuntimeError beyond that, and likewise if a
    BFS outgrows n_cols + 1 levels or an ALTERNATE walk outgrows its bound.
    """

    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("apfb",)
    instrumentable: ClassVar[bool] = True
    device_init: ClassVar[bool] = True
    #: Alg. 1 lines 9-10: stop the BFS at the first level that finds an augmenting path.
    early_stop: ClassVar[bool]

    def __init__(
        self,
        *,
        bfs: str,
        threads: str,
        ct_blocks: int,
        threads_per_block: int = MISSING,
        sync: str,
        batch: int,
        frontier: str,
        count_edges: bool = False,
        ct_threads: int | None = MISSING,
        mt_threads: int | None = MISSING,
    ) -> None:
        threads = choice("threads", threads, THREAD_LAYOUTS)
        # The old name of the chosen assignment's block size sets threads_per_block.
        old = "ct_threads" if threads == "ct" else "mt_threads"
        other = "mt_threads" if threads == "ct" else "ct_threads"
        olds = {"ct_threads": ct_threads, "mt_threads": mt_threads}
        if olds[other] is not None and olds[other] is not MISSING:
            # warned about and unused, as before (the other assignment's block size)
            renamed(other, olds[other], "threads_per_block", 0)
        threads_per_block = renamed(old, olds[old], "threads_per_block", threads_per_block)
        super().__init__(
            bfs=choice("bfs", bfs, BFS_KINDS),
            threads=threads,
            ct_blocks=positive_int("ct_blocks", ct_blocks, 2**31 - 1),
            # The queue kernels split work among whole warps (ballot and shuffles), and a
            # block of a scan kernel that is not a whole number of warps idles lanes.
            threads_per_block=block_size("threads_per_block", threads_per_block),
            sync=choice("sync", sync, SYNC_MODES),
            batch=integer("batch", batch, 1, 4096),
            frontier=choice("frontier", frontier, FRONTIERS),
        )
        self.count_edges = bool(count_edges)
        self._state: _DeviceState | None = None
        self._dinit: Any = None  # a GPU initializer run at the start of run()
        self._t_solve = float("nan")
        self._t_init = float("nan")
        self._t_transfer = float("nan")
        self._counters: dict[str, int] = {}

    # -- contract -------------------------------------------------------------------

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        from matchbench.gpu.common import device_memory_skip

        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def estimate_bytes(self, instance: Any) -> int:
        """Device bytes this solver allocates for ``instance`` (both CSRs + O(n) arrays)."""
        item = np.dtype(instance.col_ptr.dtype).itemsize
        n_work = 2 * instance.n_rows + (3 if self.params["bfs"] == "wr" else 2) * instance.n_cols
        if self.params["frontier"] == "queue":
            n_work += 2 * instance.n_cols  # the two queue halves
        return int(instance.nbytes + item * n_work + 8 * _NFLAGS)

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        import cupy as cp

        st = self._state
        if st is None or st.instance is not instance or st.device_id != cp.cuda.Device().id:
            self._state = None  # let the previous instance's arrays go first
            st = self._state = self._build_state(instance)
        dt = st.rmatch.dtype
        self._dinit = init if getattr(init, "device", None) == "gpu" else None
        with st.stream:
            if self._dinit is not None:
                self._dinit.attach(st.graph.n_rows, st.graph.n_cols, dt)  # run() builds it
            elif init is None:
                st.rmatch.fill(-1)
                st.cmatch.fill(-1)
            else:
                st.rmatch.set(np.ascontiguousarray(init.row_match, dtype=dt))
                st.cmatch.set(np.ascontiguousarray(init.col_match, dtype=dt))
            st.flags.fill(0)
        st.stream.synchronize()
        self._t_solve = self._t_init = self._t_transfer = float("nan")
        self._counters = {}

    def run(self) -> None:
        from matchbench.gpu.common import EventTimer

        st = self._require_state()
        with st.stream:
            init_launches = 0
            if self._dinit is not None:
                g = st.graph
                init_timer = EventTimer()
                with init_timer:
                    init_launches = self._dinit.launch(
                        col_ptr=g.col_ptr, col_ind=g.col_ind, row_ptr=g.row_ptr,
                        row_ind=g.row_ind, row_match=st.rmatch, col_match=st.cmatch,
                    )
            timer = EventTimer()
            with timer:
                counters = self._solve(st)
            self._t_solve = timer.seconds
            if self._dinit is not None:
                self._t_init = init_timer.seconds
                counters["init_launches"] = init_launches
                counters["init_objective"] = self._dinit.cardinality()
        self._counters = counters

    def result(self) -> Any:
        from matchbench.graphs.bipartite import Matching

        st = self._require_state()
        t0 = time.perf_counter()
        st.stream.synchronize()
        row_match = st.rmatch.get(stream=st.stream)
        col_match = st.cmatch.get(stream=st.stream)
        self._t_transfer = time.perf_counter() - t0
        return Matching(row_match=row_match, col_match=col_match)

    def timings(self) -> dict[str, float]:
        out = {"solve": self._t_solve, "transfer": self._t_transfer}
        if self._state is not None:
            out["upload"] = self._state.graph.upload_s
        if self._dinit is not None:
            out["init"] = self._t_init
        return out

    def counters(self) -> dict[str, int | float]:
        return dict(self._counters)

    def instrument(self, on: bool) -> None:
        """``count_edges`` for the following runs (the kernels are built with or without it)."""
        if bool(on) != self.count_edges:
            self.count_edges = bool(on)
            self._state = None  # the next prepare builds the state with the other kernels

    def memory_peak_bytes(self) -> int | None:
        # Everything is allocated in prepare and nothing in run, so what the state holds
        # is the solver's peak.
        return None if self._state is None else self._state.nbytes

    # -- internals ------------------------------------------------------------------

    def _require_state(self) -> _DeviceState:
        if self._state is None:
            raise RuntimeError(f"{self.name}: run() or result() before prepare()")
        return self._state

    def _kernel_names(self) -> dict[str, str]:
        wr = self.params["bfs"] == "wr"
        # The -(row) refinement belongs to APsB-GPUBFS-WR only (Sec. 3 after Alg. 4).
        refined = wr and self.early_stop
        if self.params["frontier"] == "queue":
            return {
                "init": "apfb_init_queue_wr" if wr else "apfb_init_queue",
                "bfs": "apfb_bfs_queue_wr_negrow"
                if refined
                else ("apfb_bfs_queue_wr" if wr else "apfb_bfs_queue"),
                "alternate": "apfb_alternate_roots" if refined else "apfb_alternate",
                "fix": "apfb_fix_matching_q",
                "advance": "apfb_advance",
            }
        return {
            "init": "apfb_init_bfs_array_wr" if wr else "apfb_init_bfs_array",
            "bfs": "apfb_bfs_wr_negrow" if refined else ("apfb_bfs_wr" if wr else "apfb_bfs"),
            "alternate": "apfb_alternate_roots" if refined else "apfb_alternate",
            "fix": "apfb_fix_matching",
            "advance": "apfb_advance",
        }

    def _grid(self, n: int, max_grid: int) -> tuple[int, int]:
        p = self.params
        block = p["threads_per_block"]
        if p["threads"] == "ct":
            return p["ct_blocks"], block
        return max(1, min(-(-n // block), max_grid)), block

    def _build_state(self, instance: Any) -> _DeviceState:
        import cupy as cp

        from matchbench.gpu.common import DeviceBipartite
        from matchbench.gpu.kernels import get_module

        dt = np.dtype(instance.col_ptr.dtype)
        if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise TypeError(f"{instance.name}: index dtype {dt} is neither int32 nor int64")
        options = ("-DMB_INDEX64",) if dt == np.int64 else ()
        if self.count_edges:
            options += ("-DAPFB_COUNT_EDGES",)
        module = get_module("apfb", options)
        kernels = {k: module.get_function(v) for k, v in self._kernel_names().items()}
        stream = cp.cuda.Stream(non_blocking=True)
        nr, nc = int(instance.n_rows), int(instance.n_cols)
        with stream:
            g = DeviceBipartite.resident(instance)  # the instance's CSRs hold dt indices
            rmatch = cp.full(nr, -1, dtype=dt)
            cmatch = cp.full(nc, -1, dtype=dt)
            predecessor = cp.full(nr, -1, dtype=dt)
            bfs_array = cp.zeros(nc, dtype=dt)
            root = cp.zeros(nc, dtype=dt) if self.params["bfs"] == "wr" else None
            queue = cp.zeros(2 * nc, dtype=dt) if self.params["frontier"] == "queue" else None
            flags = cp.zeros(_NFLAGS, dtype=np.int64)
        pinned = cp.cuda.alloc_pinned_memory(_NFLAGS * 8)
        flags_host = np.frombuffer(pinned, dtype=np.int64, count=_NFLAGS)
        max_grid = int(device_attributes()["MaxGridDimX"])
        st = _DeviceState(
            instance=instance,
            device_id=cp.cuda.Device().id,
            stream=stream,
            graph=g,
            rmatch=rmatch,
            cmatch=cmatch,
            predecessor=predecessor,
            bfs_array=bfs_array,
            root=root,
            queue=queue,
            flags=flags,
            flags_host=flags_host,
            flags_pinned=pinned,
            event=cp.cuda.Event(),
            kernels=kernels,
            idx=np.int64 if dt == np.int64 else np.int32,
            grids={"col": self._grid(nc, max_grid), "row": self._grid(nr, max_grid), "one": (1, 1)},
        )
        self._warm_up(st)
        if self.params["sync"] == "graph":
            self._capture_graphs(st)
        stream.synchronize()
        return st

    def _warm_up(self, st: _DeviceState) -> None:
        """Load every kernel once (empty launches) so that run() times no module loading."""
        zero = st.idx(0)
        with st.stream:
            _CupyLaunches(self, st, n_rows=zero, n_cols=zero).warm_up()
            st.flags.fill(0)

    def _capture_graphs(self, st: _DeviceState) -> None:
        """One CUDA graph per power-of-two batch size: k BFS levels, then the base advance."""
        launches = _CupyLaunches(self, st)
        size = 1
        while size <= self.params["batch"]:
            with st.stream:
                st.stream.begin_capture()
                try:
                    launches.bfs_direct(0, size)
                    st.kernels["advance"]((1,), (1,), (st.flags, np.int64(size)))
                finally:
                    cuda_graph = st.stream.end_capture()
            cuda_graph.upload(st.stream)
            st.cuda_graphs[size] = cuda_graph
            size *= 2

    def _solve(self, st: _DeviceState) -> dict[str, int]:
        launches = _CupyLaunches(self, st)
        counters = solve_loop(
            launches,
            n_cols=st.graph.n_cols,
            early_stop=self.early_stop,
            sync=self.params["sync"],
            batch=self.params["batch"],
            name=self.name,
        )
        if self.count_edges:
            counters["edges_scanned"] = int(launches.last_flags[_EDGES])
        return counters


class _CupyLaunches:
    """The kernel launches of one instance, in the shape :func:`solve_loop` drives."""

    def __init__(self, solver: _AugmentingPathsGPU, st: _DeviceState, n_rows=None, n_cols=None):
        self.st = st
        self.graph_mode = solver.params["sync"] == "graph"
        self.early_stop = solver.early_stop
        names = solver._kernel_names()
        self.roots_alternate = names["alternate"] == "apfb_alternate_roots"
        self.nr = st.idx(st.graph.n_rows) if n_rows is None else n_rows
        self.nc = st.idx(st.graph.n_cols) if n_cols is None else n_cols
        self.root = st.root if st.root is not None else st.bfs_array  # unused without WR
        self.queue = st.queue
        self.last_flags: np.ndarray | None = None

    def init(self) -> int:
        st = self.st
        grid, block = st.grids["col"]
        base = L0 if self.graph_mode else 0  # graph mode: the level base lives on the device
        q = () if self.queue is None else (self.queue,)
        st.kernels["init"](
            (grid,),
            (block,),
            (st.cmatch, st.bfs_array, self.root, st.flags, *q, self.nc, np.int64(base)),
        )
        return 1

    def bfs_direct(self, first_offset: int, size: int) -> None:
        st = self.st
        grid, block = st.grids["col"]
        stop = np.int32(1 if self.early_stop else 0)
        g = st.graph
        q = () if self.queue is None else (self.queue,)
        for i in range(size):
            st.kernels["bfs"](
                (grid,),
                (block,),
                (
                    g.col_ptr,
                    g.col_ind,
                    st.bfs_array,
                    st.rmatch,
                    st.predecessor,
                    self.root,
                    st.flags,
                    *q,
                    self.nc,
                    np.int64(first_offset + i),
                    stop,
                ),
            )

    def bfs(self, level: int, size: int) -> tuple[int, int]:
        if not self.graph_mode:
            self.bfs_direct(level, size)
            return size, 0
        parts = power_of_two_parts(size)
        for part in parts:
            self.st.cuda_graphs[part].launch(self.st.stream)
        return size + len(parts), len(parts)

    def read_flags(self) -> np.ndarray:
        import cupy as cp

        st = self.st
        cp.cuda.runtime.memcpyAsync(
            st.flags_host.ctypes.data,
            st.flags.data.ptr,
            _NFLAGS * 8,
            cp.cuda.runtime.memcpyDeviceToHost,
            st.stream.ptr,
        )
        st.event.record(st.stream)
        st.event.synchronize()
        self.last_flags = st.flags_host.copy()
        return self.last_flags

    def alternate_fix(self) -> int:
        st = self.st
        if self.roots_alternate:
            grid, block = st.grids["col"]
            st.kernels["alternate"](
                (grid,),
                (block,),
                (st.cmatch, st.rmatch, st.predecessor, st.bfs_array, st.flags, self.nc),
            )
        else:
            grid, block = st.grids["row"]
            st.kernels["alternate"](
                (grid,),
                (block,),
                (st.cmatch, st.rmatch, st.predecessor, st.flags, self.nr, self.nc),
            )
        grid, block = st.grids["row"]
        if self.queue is None:
            st.kernels["fix"]((grid,), (block,), (st.cmatch, st.rmatch, self.nr))
        else:
            st.kernels["fix"]((grid,), (block,), (st.cmatch, st.rmatch, st.flags, self.nr))
        return 2

    def warm_up(self) -> None:
        self.init()
        self.bfs_direct(0, 1)
        self.alternate_fix()
        self.st.kernels["advance"]((1,), (1,), (self.st.flags, np.int64(0)))


def solve_loop(
    launches: Any, *, n_cols: int, early_stop: bool, sync: str, batch: int, name: str
) -> dict[str, int]:
    """The host side of Alg. 1 (APsB; APFB with ``early_stop=False``).

    ``launches`` queues the kernels (``init``, ``bfs(level, size)``, ``alternate_fix``)
    and reads the device flags (``read_flags``, the only host synchronization). Kept
    apart from CuPy so that the same loop can drive an emulation of the kernels.

    Returns
    -------
    dict
        The run's counters: ``kernel_launches``, ``host_syncs``, ``bfs_levels`` (levels
        that did work), ``phases`` (phases that augmented), ``bfs_launches`` (level
        launches, including those that exited at once) and ``graph_launches``.
    """
    per_level = sync == "level"
    n_launches = syncs = bfs_launches = graph_launches = phases = 0
    hint = 1
    levels_before = 0
    while True:  # Alg. 1 line 2
        if phases > n_cols + 1:
            raise RuntimeError(f"{name}: more than n_cols + 1 = {n_cols + 1} phases")
        n_launches += launches.init()  # Alg. 1 lines 3-4
        level = L0  # the next level to launch
        chunks = chunk_schedule(1 if per_level else hint, 1 if per_level else batch)
        while True:  # Alg. 1 line 6
            size = next(chunks)
            n, g = launches.bfs(level, size)
            n_launches += n
            graph_launches += g
            bfs_launches += size
            level += size
            flags = launches.read_flags()
            syncs += 1
            found = bool(flags[_FOUND])
            # Alg. 1 lines 6 and 9-10: the last level launched inserted nothing, or
            # (APsB) a path was found.
            if flags[(level - 1) % 3] == 0 or (early_stop and found):
                break
            if level - L0 > n_cols + 1:
                raise RuntimeError(f"{name}: BFS deeper than n_cols + 1 = {n_cols + 1} levels")
        hint = max(1, int(flags[_LEVELS]) - levels_before)
        levels_before = int(flags[_LEVELS])
        if not found:
            break
        n_launches += launches.alternate_fix()  # Alg. 1 lines 12-13
        phases += 1
    if flags[_ERR]:
        raise RuntimeError(f"{name}: an ALTERNATE walk exceeded n_cols + 1 steps")
    return {
        "kernel_launches": n_launches,
        "host_syncs": syncs,
        "bfs_levels": int(flags[_LEVELS]),
        "phases": phases,
        "bfs_launches": bfs_launches,
        "graph_launches": graph_launches,
    }


class APFB(_AugmentingPathsGPU):
    """APFB: the BFS of every phase runs to completion (GPU HKDW).

    Notes
    -----
    Deveci et al. 2013, Alg. 1 without lines 9-10, with Alg. 2 or Alg. 4 as BFS kernel and
    Alg. 3 (ALTERNATE) plus FIXMATCHING. See :class:`_AugmentingPathsGPU` for parameters.
    """

    name: ClassVar[str] = "apfb"
    early_stop: ClassVar[bool] = False


class APsB(_AugmentingPathsGPU):
    """APsB: each BFS stops at the first level that finds an augmenting path (GPU HK).

    Notes
    -----
    Deveci et al. 2013, Alg. 1, with Alg. 2 or Alg. 4 as BFS kernel; with GPUBFS-WR the
    L0 = 2 refinement (bfs_array[root] = -(end row), Sec. 3 after Alg. 4) and an ALTERNATE
    that starts once per root from that row. See :class:`_AugmentingPathsGPU` for parameters.
    """

    name: ClassVar[str] = "apsb"
    early_stop: ClassVar[bool] = True
