"""G-PR: atomic- and lock-free GPU push-relabel maximum-cardinality bipartite matching.

One solver class, :class:`GPR`, runs the three algorithms of Deveci, Kaya, Uçar &
Çatalyürek's G-PR paper, chosen by ``variant``:

- ``first``: G-PR-First (Alg. 3 with the push kernel of Alg. 6, one thread per column);
- ``noshr``: G-PR with active-column lists (Alg. 7-9) without shrinking;
- ``shr``: G-PR with active-column lists compacted after every global relabel when they
  hold at least 512 entries (Alg. 7 lines 11-13).

All three relabel globally on the GPU (Alg. 4-5) before the first push and then as often
as GETITERGR (``strategy``, ``k``) says. The kernels are in ``kernels/mcm/gpr.cu``.

This module holds the solver: its parameters and life cycle, and the launch of the
persistent kernel. The paper's host loop is :mod:`~matchbench.families.mcm.gpr_loop`
(:class:`~matchbench.families.mcm.gpr_loop.GPRLoop`, written against a small launcher
interface so that the CPU tests drive it over an emulation of the kernels), the device
state and the CuPy launcher :mod:`~matchbench.families.mcm.gpr_device`.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import (
    MISSING,
    block_size,
    boolean,
    choice,
    non_negative_int,
    positive_float,
    positive_int,
    renamed,
)
from matchbench.core.solver import BaseSolver
from matchbench.families.mcm.gpr_device import (
    P_ABORT,
    P_BARRIER_TIMEOUT_NS,
    P_COUNTERS,
    P_LEN,
    P_LOCAL,
    P_RELABEL_NS,
    P_SIZE,
    P_STOPS,
    CupyOps,
    DeviceState,
    build_state,
)
from matchbench.families.mcm.gpr_loop import (
    CTL_BGUARD,
    CTL_GUARD,
    CTL_LEN,
    CTL_SIZE,
    K_VALUES,
    RING_SIZE,
    SCANS,
    STRATEGIES,
    VARIANTS,
    GPRLoop,
)

__all__ = ["GPR", "K_VALUES", "LAUNCH_MODES", "SCANS", "STRATEGIES", "VARIANTS"]

LAUNCH_MODES = ("graph", "plain")
#: The persistent kernel's mapping: each walk by a thread, a warp or the block, by degree.
PERSISTENT_SCAN = "tiered"
#: Where a global relabel's BFS ends: "full" = the paper's (no row added), "active" = after
#: the level at which every active column has its label (persistent kernel only).
RELABEL_STOPS = ("full", "active")
#: The persistent kernel's default local_max: one block's threads at the default size.
PERSISTENT_LOCAL_MAX = 512


class GPR(BaseSolver):
    """G-PR: GPU push-relabel maximum-cardinality bipartite matching.

    Parameters
    ----------
    variant : {"first", "noshr", "shr"}
        G-PR-First (Alg. 3 + 6), G-PR-NoShr (Alg. 7-9) or G-PR-Shr (Alg. 7-9 with the
        active lists compacted after each global relabel when they hold >= 512 entries).
    strategy : {"fix", "adaptive"}
        GETITERGR: a global relabel every ``k`` push iterations (``fix``) or every
        ``k * maxLevel`` iterations (``adaptive``), see :func:`relabel_interval`.
    k : float
        The strategy's multiplier; the paper sweeps 0.3, 0.5, 0.7, 1, 1.5, 2.
    threads_per_block : int or None
        The CUDA block size (a multiple of 32 in [32, 1024]); None: 512 for the
        persistent kernel, 256 for the host loop.
    launch : {"graph", "plain"}
        How the host loop queues its batches: replayed CUDA graphs (captured once per
        instance and batch shape), or one Python call per kernel. Not used by the
        persistent kernel (one launch).
    scan : {"thread", "warp", "tiered"}, optional
        Who walks an adjacency list (the BFS levels and the pushes' minimum search).
        Host loop: ``thread``, the paper's one thread per vertex, or ``warp``, the 32
        lanes of a warp together (``kernels/mcm/gpr.cu``, "Warp-cooperative scans").
        Persistent kernel: ``tiered``, a thread, a warp or the whole block by the
        vertex's degree. The steps are the paper's either way. Default: ``tiered`` when
        ``persistent``, else ``warp``; other pairings raise ``ValueError``.
    persistent : bool
        Run the whole loop in one cooperative launch of ``gpr_persistent`` (the default;
        beyond the paper): grid-wide barriers where the host loop has kernel boundaries,
        G-GR over frontier queues, one host read per solve. ``False`` runs the paper's
        kernels from the host loop (:class:`GPRLoop`).
    blocks_per_sm : int
        Persistent kernel: blocks per multiprocessor (capped by the occupancy
        calculator, so that the grid is co-resident). More blocks hide more memory
        latency; fewer make each grid barrier cheaper.
    relabel_stop : {"full", "active"}, optional
        Where a global relabel's BFS ends: ``full``, the paper's, when a level adds no
        row; ``active`` (beyond the paper; persistent kernel only) after the level at
        which every active column has its label. Default: ``active`` when
        ``persistent``, else ``full``. Vertices farther away keep the label
        ``inf`` until the next relabel; no push selects them (``kernels/mcm/gpr.cu``,
        "Early-stopped relabel"). maxLevel, and so the adaptive interval, is then the
        depth reached.
    local_max : int, optional
        Persistent kernel: BFS levels with at most this many frontier rows, and push
        iterations of lists (``noshr``, ``shr``) with at most this many slots, run in
        block 0 alone with block barriers instead of grid barriers ("Local phases" in
        ``kernels/mcm/gpr.cu``). 0 turns local phases off. Default: 512 when
        ``persistent``, else 0.
    threads : int, optional
        Deprecated spelling of ``threads_per_block`` (one release; a ``FutureWarning``).

    Notes
    -----
    Deveci, Kaya, Uçar & Çatalyürek, atomic- and lock-free GPU push-relabel for bipartite
    matching: Alg. 3 (G-PR), Alg. 4-5 (G-GR, G-GR-KRNL), Alg. 6 (G-PR-KRNL), Alg. 7-9
    (G-PR with active-column lists, G-PR-INITKRNL, G-PR-PUSHKRNL, G-PR-SHRKRNL) and
    FIXMATCHING. The default, (``shr``, ``adaptive``, 0.7), is the configuration the paper
    found best (Fig. 1) and compares with the other algorithms (Table I). Starts from the
    initial matching given to :meth:`prepare` (the shared cheap matching) and relabels
    globally before the first push (Sec. III-A). The host reads the device once per batch
    of launches instead of after every kernel (see :class:`GPRLoop`).

    The persistent kernel (``kernels/mcm/gpr.cu``, "Persistent G-PR") runs the same steps; its
    global relabel reads each BFS level's rows from a queue (a compare-and-swap claims a
    column, so that its row is queued once) instead of scanning every row, and its
    shrink compacts with a prefix sum of its own (CuPy's scan cannot run inside a
    kernel).

    Counters: ``push_kernels`` (iterations of the paper's loop that had active columns),
    ``global_relabels``, ``bfs_levels`` (G-GR-KRNL calls of the paper's loop),
    ``max_level`` (of the last relabel), ``shrinks``, ``kernel_launches`` (every kernel
    queued, in graphs too, surplus ones that exited at once included; CuPy array
    operations count one each), ``graph_launches``, ``graph_captures`` (captures
    during this run; they are cached per instance), ``host_syncs``; persistent mode also
    ``grid_barriers``, ``persistent_blocks``, ``local_steps`` (BFS levels and push
    iterations run by one block in local phases) and ``early_stops`` (relabels that
    ``relabel_stop: active`` ended before the paper's).
    """

    name: ClassVar[str] = "gpr"
    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("gpr", "mcm_init")
    device_init: ClassVar[bool] = True
    #: Seconds after which run() gives up with ``TimeoutError`` (None: never). Not a
    #: variant parameter: a guard for benchmarks; the runner has its own timeouts.
    time_limit_s: float | None = None

    def __init__(
        self,
        *,
        variant: str,
        strategy: str,
        k: float,
        threads_per_block: int | None = MISSING,
        launch: str,
        scan: str | None,
        persistent: bool,
        blocks_per_sm: int,
        relabel_stop: str | None,
        local_max: int | None,
        threads: int | None = MISSING,
    ) -> None:
        persistent = boolean("persistent", persistent)
        if scan is None:
            scan = PERSISTENT_SCAN if persistent else "warp"
        if persistent and scan != PERSISTENT_SCAN:
            raise ValueError(
                f"scan must be {PERSISTENT_SCAN!r} with persistent: true (the persistent "
                f"kernel picks a thread, a warp or the block by degree), got {scan!r}; "
                f"set persistent: false for the host loop's {SCANS} scans"
            )
        if not persistent and scan not in SCANS:
            raise ValueError(
                f"scan must be one of {SCANS} with persistent: false, got {scan!r}"
                + (" (tiered walks need persistent: true)" if scan == PERSISTENT_SCAN else "")
            )
        threads_per_block = renamed("threads", threads, "threads_per_block", threads_per_block)
        if threads_per_block is None:
            threads_per_block = 512 if persistent else 256
        if relabel_stop is None:
            relabel_stop = "active" if persistent else "full"
        relabel_stop = choice("relabel_stop", relabel_stop, RELABEL_STOPS)
        if relabel_stop != "full" and not persistent:
            raise ValueError(
                f"relabel_stop: {relabel_stop} needs persistent: true (the host loop runs "
                "the paper's full relabel)"
            )
        if local_max is None:
            local_max = PERSISTENT_LOCAL_MAX if persistent else 0
        local_max = non_negative_int("local_max", local_max)
        if local_max and not persistent:
            raise ValueError("local_max > 0 needs persistent: true (local phases are its own)")
        super().__init__(
            variant=choice("variant", variant, VARIANTS),
            strategy=choice("strategy", strategy, STRATEGIES),
            k=positive_float("k", k),
            threads_per_block=block_size("threads_per_block", threads_per_block),
            launch=choice("launch", launch, LAUNCH_MODES),
            scan=scan,
            persistent=persistent,
            blocks_per_sm=positive_int("blocks_per_sm", blocks_per_sm),
            relabel_stop=relabel_stop,
            local_max=local_max,
        )
        self._state: DeviceState | None = None
        self._n_active: int | None = 0  # None: the matching is built on the device in run()
        self._dinit: Any = None
        self._t_solve = float("nan")
        self._t_init = float("nan")
        self._t_relabel = float("nan")
        self._t_transfer = float("nan")
        self._counters: dict[str, int | float] = {}

    # -- contract -------------------------------------------------------------------

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        from matchbench.gpu.common import device_memory_skip

        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def estimate_bytes(self, instance: Any) -> int:
        """Device bytes for ``instance``: both CSRs, mu and psi (m + n each), iA and the
        two lists (n each at most), the cumulative sum of a shrink and the persistent
        kernel's two frontier queues (m each)."""
        item = np.dtype(instance.col_ptr.dtype).itemsize
        m, n = int(instance.n_rows), int(instance.n_cols)
        return int(instance.nbytes + item * (2 * (m + n) + 3 * n + 2 * m) + 4 * n + 8 * RING_SIZE)

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        import cupy as cp

        st = self._state
        if st is None or st.instance is not instance or st.device_id != cp.cuda.Device().id:
            self._state = None  # let the previous instance's arrays go first
            st = self._state = self._build_state(instance)
        a = st.arrays
        m = int(instance.n_rows)
        self._dinit = init if getattr(init, "device", None) == "gpu" else None
        if self._dinit is not None:
            self._prepare_device_init(st)
            return
        col_match = _initial_col_match(instance, init)
        row_match = np.full(m, -1, dtype=col_match.dtype)
        matched = np.flatnonzero(col_match >= 0)
        # The row side is rebuilt from the columns so the two always agree (the loop
        # relies on mu(mu(v)) == v for every matched column).
        row_match[col_match[matched]] = matched
        unmatched = np.flatnonzero(col_match < 0).astype(st.idx)
        self._n_active = int(unmatched.size)
        with st.stream:
            a["mu"].set(np.concatenate([row_match, col_match]).astype(st.idx, copy=False))
            # Alg. 7: both lists start as the unmatched columns. The buffers themselves
            # are allocated once per instance: captured CUDA graphs hold their addresses.
            if self._n_active:
                for lst in a["lists"]:
                    lst[: self._n_active].set(unmatched)
            a["ia"].fill(-1)
            a["ring"].fill(-1)
            ctl = np.zeros(CTL_SIZE, dtype=np.int32)
            ctl[[CTL_GUARD, CTL_BGUARD]] = -1
            ctl[CTL_LEN] = self._n_active
            a["ctl"].set(ctl)
        st.stream.synchronize()
        self._t_solve = self._t_init = self._t_relabel = self._t_transfer = float("nan")
        self._counters = {}

    def _prepare_device_init(self, st: DeviceState) -> None:
        """prepare() for a GPU initializer: run() builds the matching and the lists."""
        a = st.arrays
        self._dinit.attach(st.instance.n_rows, st.instance.n_cols, a["mu"].dtype)
        self._n_active = None
        with st.stream:
            a["ia"].fill(-1)
            a["ring"].fill(-1)
            ctl = np.zeros(CTL_SIZE, dtype=np.int32)
            ctl[[CTL_GUARD, CTL_BGUARD]] = -1
            a["ctl"].set(ctl)
            if "pctl" in a:
                a["pctl"].fill(0)
            if "lists_len" not in a:
                import cupy as cp

                a["lists_len"] = cp.zeros(1, dtype=np.uint64)
        st.stream.synchronize()
        self._t_solve = self._t_init = self._t_relabel = self._t_transfer = float("nan")
        self._counters = {}

    def _launch_device_init(self, st: DeviceState) -> tuple[Any, int]:
        """Queue the GPU initializer on mu (its timer, its launches)."""
        from matchbench.gpu.common import EventTimer

        a, m = st.arrays, int(st.instance.n_rows)
        timer = EventTimer()
        with timer:
            launches = self._dinit.launch(
                col_ptr=a["col_ptr"], col_ind=a["col_ind"], row_ptr=a["row_ptr"],
                row_ind=a["row_ind"], row_match=a["mu"][:m], col_match=a["mu"][m:],
            )
        return timer, launches

    def _finish_device_init(self, timer: Any, launches: int, counters: dict[str, Any]) -> None:
        """After the solve: the initializer's seconds, launches and cardinality."""
        self._t_init = timer.seconds
        card = self._dinit.cardinality()
        counters.update(init_launches=launches, init_objective=card)
        counters.setdefault("initial_active", int(self._require_state().instance.n_cols) - card)

    def run(self) -> None:
        if self.params["persistent"]:
            self._run_persistent()
            return
        from matchbench.families.mcm.init_gpu import launch_unmatched_lists
        from matchbench.gpu.common import EventTimer

        st = self._require_state()
        a, m = st.arrays, int(st.instance.n_rows)
        ops = CupyOps(st, self.params["threads_per_block"], self.params["launch"])

        def make_loop() -> GPRLoop:
            return GPRLoop(
                ops,
                st.arrays,
                m=st.instance.n_rows,
                n=st.instance.n_cols,
                n_active=self._n_active,
                variant=self.params["variant"],
                strategy=self.params["strategy"],
                k=self.params["k"],
                idx=st.idx,
                scan=self.params["scan"],
                deadline=None
                if self.time_limit_s is None
                else time.perf_counter() + float(self.time_limit_s),
            )

        init_timer = None
        timer = EventTimer()
        with st.stream:
            if self._dinit is None:
                loop = make_loop()
                with timer:
                    stats = loop.solve()
            else:
                init_timer, init_launches = self._launch_device_init(st)
                with timer:
                    # The host loop sizes its grids from the lists' length: one host read
                    # after the lists are built, inside the solve's timer.
                    length = a["lists_len"]
                    length.fill(0)
                    launch_unmatched_lists(a["mu"][m:], a["lists"][0], a["lists"][1], length)
                    self._n_active = int(length.get()[0])
                    a["ctl"][CTL_LEN] = self._n_active
                    loop = make_loop()
                    stats = loop.solve()
            self._t_solve = timer.seconds
        self._t_relabel = loop.relabel_seconds()
        stats["host_syncs"] += 1  # the timer's final synchronization
        self._counters = dict(
            stats,
            kernel_launches=ops.kernel_launches,
            graph_launches=ops.graph_launches,
            graph_captures=ops.graph_captures,
        )
        if init_timer is not None:
            self._counters["host_syncs"] += 1  # the read of the lists' length
            self._counters["kernel_launches"] += 1  # the lists
            self._finish_device_init(init_timer, init_launches, self._counters)

    def _run_persistent(self) -> None:
        """The whole loop in one cooperative launch of ``gpr_persistent``; one host read."""
        from matchbench.families.mcm.init_gpu import launch_unmatched_lists
        from matchbench.gpu.common import EventTimer

        st = self._require_state()
        a, idx = st.arrays, st.idx
        m, n = int(st.instance.n_rows), int(st.instance.n_cols)
        device_init = self._dinit is not None
        ctl = np.zeros(P_SIZE, dtype=np.int64)
        ctl[P_LEN] = self._n_active or 0
        limit = self.time_limit_s
        args = (
            idx(m),
            idx(n),
            a["row_ptr"],
            a["row_ind"],
            a["col_ptr"],
            a["col_ind"],
            a["mu"],
            a["psi"],
            idx(m + n),
            a["lists"][0],
            a["lists"][1],
            a["ia"],
            a["queue"],
            a["blk"],
            a["pctl"],
            np.int32(VARIANTS.index(self.params["variant"])),
            np.int32(self.params["strategy"] == "adaptive"),
            np.float64(self.params["k"]),
            np.int32(self.params["relabel_stop"] == "active"),
            np.int64(self.params["local_max"]),
            np.uint64(0 if limit is None else max(1, int(float(limit) * 1e9))),
            np.uint64(P_BARRIER_TIMEOUT_NS),
        )
        with st.stream:
            if device_init:
                # pctl was zeroed in prepare; the lists' length lands in its LEN slot on
                # the device, and the kernel is launched without a host look at it (with
                # no active column it ends after one relabel and one empty push).
                init_timer, init_launches = self._launch_device_init(st)
            else:
                a["pctl"].set(ctl)
            timer = EventTimer()
            with timer:
                if device_init:
                    launch_unmatched_lists(
                        a["mu"][m:], a["lists"][0], a["lists"][1], a["pctl"][P_LEN : P_LEN + 1]
                    )
                if self._n_active or device_init:
                    # RawKernel's call has no cooperative switch; its compiled Function does.
                    st.kernels["gpr_persistent"].kernel(
                        (st.p_grid,),
                        (self.params["threads_per_block"],),
                        args,
                        enable_cooperative_groups=True,
                    )
            self._t_solve = timer.seconds
            out = a["pctl"].get(stream=st.stream)
        counters: dict[str, int | float] = {k: int(out[i]) for k, i in P_COUNTERS.items()}
        counters.update(
            final_list_length=int(out[P_LEN]),
            local_steps=int(out[P_LOCAL]),
            early_stops=int(out[P_STOPS]),
            kernel_launches=2 if device_init else (1 if self._n_active else 0),
            graph_launches=0,
            graph_captures=0,
            host_syncs=2,  # the timer's synchronization and the read of the counters
            persistent_blocks=st.p_grid,
        )
        if device_init:
            self._finish_device_init(init_timer, init_launches, counters)
        self._counters = counters
        self._t_relabel = int(out[P_RELABEL_NS]) / 1e9
        abort = int(out[P_ABORT]) & 0xFFFFFFFF
        if abort == 2:
            raise TimeoutError("G-PR: time limit reached")
        if abort:
            raise RuntimeError(
                f"{self.name}: a grid barrier of the persistent kernel timed out "
                f"({st.p_grid} blocks of {self.params['threads_per_block']} threads; after "
                f"{counters['global_relabels']} relabels and {counters['loops']} push "
                "iterations): the grid was not co-resident"
            )

    def barrier_seconds(self, reps: int = 20000) -> float:
        """Seconds per grid barrier of the persistent kernel's grid (``gpr_barrier_probe``:
        ``reps`` barriers and nothing else, one launch), on the prepared instance's state.
        """
        from matchbench.gpu.common import EventTimer

        st = self._require_state()
        if not self.params["persistent"]:
            raise RuntimeError(f"{self.name}: barrier_seconds() needs persistent: true")
        a = st.arrays
        with st.stream:
            a["pctl"].fill(0)
            timer = EventTimer()
            with timer:
                st.kernels["gpr_barrier_probe"].kernel(
                    (st.p_grid,),
                    (self.params["threads_per_block"],),
                    (a["pctl"], np.int32(reps), np.uint64(P_BARRIER_TIMEOUT_NS)),
                    enable_cooperative_groups=True,
                )
            abort = int(a["pctl"][P_ABORT].get()) & 0xFFFFFFFF
        if abort:
            raise RuntimeError(f"{self.name}: the barrier probe timed out")
        return timer.seconds / max(1, int(reps))

    def result(self) -> Any:
        from matchbench.graphs.bipartite import Matching

        st = self._require_state()
        m = st.instance.n_rows
        t0 = time.perf_counter()
        st.stream.synchronize()
        mu = st.arrays["mu"].get(stream=st.stream)
        self._t_transfer = time.perf_counter() - t0
        return Matching(row_match=mu[:m].copy(), col_match=mu[m:].copy())

    def timings(self) -> dict[str, float]:
        out = {
            "solve": self._t_solve,
            "transfer": self._t_transfer,
            "global_relabel": self._t_relabel,
            "push": self._t_solve - self._t_relabel,
        }
        if self._state is not None:
            out["upload"] = self._state.upload_s
        if self._dinit is not None:
            out["init"] = self._t_init
        return out

    def counters(self) -> dict[str, int | float]:
        return dict(self._counters)

    def memory_peak_bytes(self) -> int | None:
        return None if self._state is None else self._state.nbytes

    # -- internals ------------------------------------------------------------------

    def _require_state(self) -> DeviceState:
        if self._state is None:
            raise RuntimeError(f"{self.name}: run() or result() before prepare()")
        return self._state

    def _build_state(self, instance: Any) -> DeviceState:
        return build_state(instance, self.params, self.name)


def _initial_col_match(instance: Any, init: Any | None) -> np.ndarray:
    """Column mates of the initial matching (all -1 when ``init`` is None), as int64."""
    n = int(instance.n_cols)
    if init is None:
        return np.full(n, -1, dtype=np.int64)
    col_match = np.asarray(init.col_match).astype(np.int64)
    if col_match.shape != (n,):
        raise ValueError(
            f"{instance.name}: initial matching has {col_match.shape} column mates, expected ({n},)"
        )
    m = int(instance.n_rows)
    bad = (col_match < -1) | (col_match >= m)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{instance.name}: initial col_match[{j}] = {col_match[j]} not in [-1, {m})"
        )
    return col_match
