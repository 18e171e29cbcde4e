"""CU-CLASS and CU-TREE: the GPU Hungarian algorithms of Date & Nagi 2016, one GPU or several.

:class:`CuClass` (``cu_class``) is the classical (Munkres) variant: the zero-slack edges
are compressed into a CSR adjacency list by a prefix sum, rebuilt only after a dual
update, and the dual update takes two stages (theta = least uncovered slack over the
matrix, then the duals). :class:`CuTree` (``cu_tree``) is Lawler's alternating tree
variant: one thread per column in the forward pass, a column slack array, theta by an O(n)
reduction of that array. Both run the augmenting path search of Sec. 4.3 in three passes:
a forward BFS from all unassigned rows (frontiers built by stream compaction), a reverse
pass from the columns marked "reverse", and an augmentation pass from the roots marked
"augment"; the races among threads leave several vertex-disjoint augmenting paths per
iteration (Props. 1 and 2; the race arguments are at the kernels in
``kernels/lap/hungarian.cu``). Both return the duals (u, v), int64 for integer costs (exact
arithmetic) and float64 for float costs, so the LAP verifier checks them directly.

Several GPUs (``devices`` > 1, Sec. 5): the cost matrix is split into ``devices`` blocks,
by rows for CU-CLASS and by columns for CU-TREE (Sec. 5 item 1), one block per GPU of
the host (``cupy.cuda.Device(i)``); device 0 is the root. What the paper does with MPI
between nodes is done here with device-to-device copies ordered by CUDA events. Per
device: the initial reduction (partial minima combined on the root), the matrix
compression (CU-CLASS; the partial CSR lists gathered on the root), the forward pass
expansion (CU-TREE; the rows reached gathered on the root, which contracts the frontier
and sends it back), theta (local minima reduced on the root) and the dual update. On the
root: the optimality check, the forward pass of CU-CLASS, and the reverse and augmentation
passes. ``allow_shared_device: true`` places several blocks on one GPU when the host has
fewer GPUs than ``devices`` (device ``q % count``), so that the multi-device code path
runs, and is tested, on one GPU; by default such a run is skipped with the reason.

Host synchronization. The host reads the device's flags after the optimality check (the
match count), after every batch of BFS levels (frontier size and "reverse" flag) and,
for CU-CLASS, after the per-row counts of a matrix compression (to size the adjacency
list). A batch queues ``b`` levels; levels queued past the end of the BFS find an empty
frontier and change nothing. Batches grow 2, 4, ... up to ``batch``. With ``fuse`` (the
default) the last block of each expansion launch builds the next frontier, one launch per
level; ``fuse: false, batch: 1`` is the paper's loop (a contraction kernel and a host check
after every level). Phase times (``timings()``) come from CUDA
events recorded at phase boundaries on the root's stream and read once after the solve:
they add no host synchronization.

Persistent CU-TREE (``persistent: true``, the default of ``cu_tree``; beyond the paper).
The whole solve loop after the initial reduction (optimality checks, BFS levels with
expansion and contraction, theta and the dual update, reverse and augmentation passes,
phase after phase until every row is assigned) runs in one cooperative launch of
``hungarian_tree_persistent``, with grid-wide barriers where the host loop has kernel
boundaries and flag reads; the host reads the device's counters and error code once, after
the solve. The grid is sized to be co-resident (occupancy calculator; the cooperative
launch refuses a grid that is not). Phase times cannot be split inside one kernel: this
mode reports ``initial_reduction`` and ``solve_loop`` (all the rest); ``persistent: false``
runs the host loop above, with the paper's phase split. One device only.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, ClassVar

import numpy as np

from matchbench.core.solver import BaseSolver
from matchbench.families.lap.problem import Assignment, CostMatrix, dual_dtype, tight_eps

# ctrl layout; kept in step with the HUNG_* #defines of kernels/lap/hungarian.cu.
_CTRL_MATCH, _CTRL_NF, _CTRL_REV, _CTRL_NCOMP, _CTRL_ERR, _CTRL_DONE = 0, 1, 2, 3, 4, 5
# persistent kernel: frontier counts at 8..10, then its counters
_CTRL_LEVELS, _CTRL_PHASES, _CTRL_DUALS, _CTRL_INIT, _CTRL_SYNCS = 11, 12, 13, 14, 15
_NCTRL = 16
#: HUNG_E_* codes of the persistent kernel (ctrl[_CTRL_ERR]).
_PERSISTENT_ERRORS = {
    1: "a dual update found no finite theta",
    2: "no progress: more phases than n + 1",
    3: "more dual updates than n + 1 per phase",
    4: "a phase ran past 2n + 2 BFS levels",
    5: "a reverse or augmentation walk left the alternating tree",
    6: "a grid barrier timed out (blocks not co-resident, or blocks out of step)",
    7: "a frontier outgrew its n entries",
}
_PERSIST_THREADS = 256  # HUNG_PERSIST_THREADS
#: A block waiting longer than this at a grid barrier gives up (a broken run, not a slow
#: one: the longest step between two barriers is one BFS level, milliseconds at n = 40000).
_BARRIER_TIMEOUT_NS = 2_000_000_000
#: The HUNG_DTYPE code per cost dtype.
_DTYPE_CODE = {
    np.dtype(np.int32): 0,
    np.dtype(np.int64): 1,
    np.dtype(np.float32): 2,
    np.dtype(np.float64): 3,
}
#: HUNG_INF of the kernels: "no slack yet" / "no theta".
_INF = {np.dtype(np.int64): 1 << 62, np.dtype(np.float64): 1e300}
_BLOCK = 256
_SCAN = 1024  # HUNG_SCAN_THREADS
_COL_CHUNK = 256  # rows per block row of the column reduction

#: Names of the phase times, as in Date & Nagi 2016, Table 3 and Fig. 3.
PHASES = (
    "initial_reduction",
    "optimality_check",
    "compression",
    "forward_pass",
    "dual_update",
    "augment",
)


def _grid(n: int, block: int = _BLOCK) -> tuple[int]:
    return (max(1, (int(n) + block - 1) // block),)


def batch_schedule(cap: int):
    """Sizes of the successive batches of BFS levels between two host checks: 2, 4, ... cap."""
    k = min(2, cap)
    while True:
        yield k
        k = min(2 * k, cap)


def persistent_smem_bytes(tiles: int) -> int:
    """Dynamic shared memory of ``hungarian_tree_persistent`` with ``tiles`` column tiles.

    Per owned column (32 per tile): slack, v and u of the assigned row (8 bytes each), the 8
    lanes' minima (8 x 8), positions and rows (8 x 4 each), P_c and A_c (4 each), cover and
    "reverse" flags (1 each): 162 bytes; plus one frontier chunk of 256 rows and duals.
    """
    return 162 * 32 * int(tiles) + 12 * _PERSIST_THREADS


def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous blocks of ``range(n)`` as (start, size); sizes differ by <= 1.

    Notes
    -----
    Date & Nagi 2016, Sec. 5 item 1: each device owns at most ceil(n/p) rows (columns).
    """
    base, extra = divmod(n, parts)
    out, a = [], 0
    for q in range(parts):
        size = base + (1 if q < extra else 0)
        out.append((a, size))
        a += size
    return out


class _Part:
    """One block of the cost matrix and the arrays of the device that holds it."""

    def __init__(self, index: int, device_id: int, row0: int, rows: int, col0: int, cols: int):
        self.index = index
        self.device_id = device_id
        self.row0, self.rows, self.col0, self.cols = row0, rows, col0, cols
        self.kern: dict[str, Any] = {}
        self.switch = False  # whether launches need this device made current
        self.event: Any = None
        self.reset_cols_args: tuple | None = None  # the column state this device holds


class _State:
    """Everything kept on the GPUs for one instance (reused across repetitions)."""

    def __init__(self, instance: CostMatrix, parts: list[_Part]):
        self.instance = instance
        self.parts = parts
        self.n = instance.n
        self.arrays_bytes = 0


class _HungarianGPU(BaseSolver):
    """Driver shared by :class:`CuClass` and :class:`CuTree`.

    Parameters
    ----------
    devices : int
        Number of GPUs (matrix blocks), Sec. 5. 1: one GPU.
    allow_shared_device : bool
        Place several blocks on one GPU when fewer than ``devices`` are present (tests the
        multi-device code path on one GPU); otherwise such a run is skipped.
    batch : int
        Most BFS levels queued between two host checks (1: check after every level).
    fuse : bool
        Contract the frontier inside the expansion kernel (its last block to finish builds
        the next F_in) instead of in a separate compaction kernel: one launch per BFS level
        instead of two. CU-TREE fuses on one device only (several devices contract on the
        root after gathering).
    """

    problem: ClassVar[str] = "lap"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("hungarian",)
    #: Split of the matrix across devices: "rows" (CU-CLASS) or "cols" (CU-TREE).
    split_by: ClassVar[str]

    def __init__(
        self,
        devices: int = 1,
        allow_shared_device: bool = False,
        batch: int = 16,
        fuse: bool = True,
    ):
        if isinstance(devices, bool) or not isinstance(devices, int | np.integer) or devices < 1:
            raise ValueError(f"devices must be a positive integer, got {devices!r}")
        if (
            isinstance(batch, bool)
            or not isinstance(batch, int | np.integer)
            or not 1 <= batch <= 4096
        ):
            raise ValueError(f"batch must be an integer in [1, 4096], got {batch!r}")
        super().__init__(
            devices=int(devices),
            allow_shared_device=bool(allow_shared_device),
            batch=int(batch),
            fuse=bool(fuse),
        )
        self._st: _State | None = None
        self._timer: Any = None
        self._marks: list[tuple[str, Any, Any]] = []
        self._counters: dict[str, int] = {}
        self._answer: Assignment | None = None

    # -- contract -------------------------------------------------------------------

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        try:
            import cupy as cp

            count = cp.cuda.runtime.getDeviceCount()
            free, _total = cp.cuda.runtime.memGetInfo()
        except Exception as exc:  # no CuPy, no driver or no device
            return True, f"no usable CUDA device: {exc}"
        p = self.params["devices"]
        if p > count and not self.params["allow_shared_device"]:
            return True, (
                f"devices={p} needs {p} GPUs, this host has {count}; set "
                "allow_shared_device=true to place several blocks on one GPU"
            )
        n = instance.n
        if p > n:
            return True, f"devices={p} exceeds n = {n} (every device needs a block)"
        per_dev = min(p, count)
        need = self.estimate_bytes(instance) // per_dev
        if need > free:
            return True, f"needs about {need} bytes of GPU memory per device, {free} free"
        return False, None

    def estimate_bytes(self, instance: CostMatrix) -> int:
        """Device bytes of the cost matrix, the O(n) arrays and the column-reduction scratch."""
        n = instance.n
        extra = 96 * n + 8 * n * (-(-n // _COL_CHUNK))
        if self.split_by == "rows":
            extra += 4 * 8 * n  # initial capacity of the adjacency list
        return int(instance.costs.nbytes + extra)

    def prepare(self, instance: CostMatrix, init: Any | None = None) -> None:
        import cupy as cp

        from matchbench.gpu.common import EventTimer

        st = self._st
        if st is None or st.instance is not instance:
            self._st = None  # let the previous instance's arrays go first
            self._st = self._build(instance)
        root = self._st.parts[0]
        with cp.cuda.Device(root.device_id):
            self._timer = EventTimer()
        self._marks = []
        self._counters = {}
        self._answer = None

    def run(self) -> None:
        import cupy as cp

        st = self._st
        if st is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        self._counters = {
            "kernel_launches": 0,
            "host_syncs": 0,
            "phases": 0,
            "bfs_levels": 0,
            "dual_updates": 0,
            "compressions": 0,
            "initial_assignments": -1,
        }
        self._marks = []
        with cp.cuda.Device(st.parts[0].device_id):
            for q in st.parts:  # nothing of an earlier run may fall into the timed region
                with cp.cuda.Device(q.device_id):
                    cp.cuda.get_current_stream().synchronize()
            with self._timer:
                self._reset_assignment()
                with self._phase("initial_reduction"):
                    self._initial_reduction()
                self._solve()
                for q in st.parts[1:]:
                    self._wait(st.parts[0], q)
            self._finish()

    def result(self) -> Assignment:
        if self._answer is None:
            if self._st is None:
                raise RuntimeError(f"{self.name}: result() before run()")
            self._answer = self._collect()
        return self._answer

    def timings(self) -> dict[str, float]:
        import cupy as cp

        if self._timer is None:
            return {}
        out = {"solve": self._timer.seconds}
        sums = dict.fromkeys(self._phase_names, 0.0)
        for name, a, b in self._marks:
            sums[name] = sums.get(name, 0.0) + cp.cuda.get_elapsed_time(a, b) / 1e3
        out.update({k: v for k, v in sums.items() if k in self._phase_names})
        return out

    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    def memory_peak_bytes(self) -> int | None:
        """None on one device (the runner reads the pool); the pools' sum across devices."""
        if self._st is None or self.params["devices"] == 1:
            return None
        import cupy as cp

        total = 0
        for dev in sorted({q.device_id for q in self._st.parts}):
            with cp.cuda.Device(dev):
                total += int(cp.get_default_memory_pool().total_bytes())
        return total

    # -- device plumbing -------------------------------------------------------------

    def _device_ids(self) -> list[int]:
        import cupy as cp

        p = self.params["devices"]
        if p == 1:
            return [cp.cuda.Device().id]
        count = cp.cuda.runtime.getDeviceCount()
        if p > count and not self.params["allow_shared_device"]:
            raise RuntimeError(f"{self.name}: devices={p} but {count} GPUs; see skip()")
        return [q % count for q in range(p)]

    def _ctx(self, part: _Part):
        import cupy as cp

        return cp.cuda.Device(part.device_id) if part.switch else nullcontext()

    def _k(self, part: _Part, name: str, grid, block, args) -> None:
        kern = part.kern[name]
        if part.switch:
            import cupy as cp

            with cp.cuda.Device(part.device_id):
                kern(grid, block, args)
        else:
            kern(grid, block, args)
        self._counters["kernel_launches"] += 1

    def _copy(self, on: _Part, dst, src) -> None:
        """``dst[...] = src`` between devices, queued on ``on``'s stream."""
        with self._ctx(on):
            dst.data.copy_from_device_async(src.data, src.nbytes)

    def _wait(self, waiter: _Part, producer: _Part) -> None:
        """Make ``waiter``'s stream wait for the work queued so far on ``producer``'s."""
        if waiter.device_id == producer.device_id:
            return  # one device, one stream: already ordered
        import cupy as cp

        with cp.cuda.Device(producer.device_id):
            producer.event.record()
        with cp.cuda.Device(waiter.device_id):
            cp.cuda.get_current_stream().wait_event(producer.event)

    def _read_ctrl(self, part: _Part) -> np.ndarray:
        with self._ctx(part):
            out = part.ctrl.get()
        self._counters["host_syncs"] += 1
        return out

    @contextmanager
    def _phase(self, name: str):
        import cupy as cp

        a = cp.cuda.Event()
        a.record()
        yield
        b = cp.cuda.Event()
        b.record()
        self._marks.append((name, a, b))

    def _compact(self, flag, out, count, n: int, clear: int = 1) -> None:
        root = self._st.parts[0]
        self._k(
            root,
            "hungarian_compact",
            (1,),
            (_SCAN,),
            (flag, np.int32(n), np.int32(clear), out, count),
        )

    # -- building the state ----------------------------------------------------------

    def _build(self, instance: CostMatrix) -> _State:
        import cupy as cp

        from matchbench.gpu.kernels import get_module

        n = instance.n
        costs = instance.costs
        code = _DTYPE_CODE[np.dtype(costs.dtype)]
        dt = dual_dtype(costs)
        ids = self._device_ids()
        blocks = split(n, len(ids))
        parts = []
        for q, (dev, (a, size)) in enumerate(zip(ids, blocks, strict=True)):
            if self.split_by == "rows":
                part = _Part(q, dev, a, size, 0, n)
            else:
                part = _Part(q, dev, 0, n, a, size)
            part.switch = dev != ids[0]
            parts.append(part)
        st = _State(instance, parts)
        st.dual = dt
        st.eps = dt.type(tight_eps(costs))
        st.inf = _INF[dt]
        for part in parts:
            with cp.cuda.Device(part.device_id):
                # int32 costs are the source's default: the module the runner precompiles.
                mod = get_module("hungarian", (f"-DHUNG_DTYPE={code}",) if code else ())
                part.kern = {name: mod.get_function(name) for name in _KERNELS}
                part.event = cp.cuda.Event(disable_timing=True)
                block = costs[part.row0 : part.row0 + part.rows, part.col0 : part.col0 + part.cols]
                part.C = cp.asarray(np.ascontiguousarray(block))
        self._allocate(st)
        return st

    def _alloc(self, st: _State, part: _Part, shape, dtype, fill=None):
        import cupy as cp

        with cp.cuda.Device(part.device_id):
            a = cp.empty(shape, dtype=dtype) if fill is None else cp.full(shape, fill, dtype=dtype)
        st.arrays_bytes += a.nbytes
        return a

    def _allocate(self, st: _State) -> None:
        """Root arrays of length n (rows and columns) shared by both variants."""
        root = st.parts[0]
        n = st.n
        i32, i8 = np.int32, np.int8
        for name in ("Ar", "Ac", "Pr", "Sr", "Pc", "Sc", "Fin", "Fcomp"):
            setattr(root, name, self._alloc(st, root, n, i32, -1))
        for name in ("Vr", "active", "visited", "aug", "rev"):
            setattr(root, name, self._alloc(st, root, n, i8, 0))
        root.ctrl = self._alloc(st, root, _NCTRL, i32, 0)
        root.nf = root.ctrl[_CTRL_NF : _CTRL_NF + 1]
        root.ncomp = root.ctrl[_CTRL_NCOMP : _CTRL_NCOMP + 1]
        root.theta = self._alloc(st, root, 1, st.dual, 0)
        root.theta_parts = self._alloc(st, root, len(st.parts), st.dual, 0)
        for q in st.parts[1:]:
            q.ctrl = self._alloc(st, q, _NCTRL, i32, 0)
            q.nf = q.ctrl[_CTRL_NF : _CTRL_NF + 1]
            q.theta = self._alloc(st, q, 1, st.dual, 0)

    def _reset_assignment(self) -> None:
        root = self._st.parts[0]
        root.Ar.fill(-1)
        root.Ac.fill(-1)
        self._counters["kernel_launches"] += 2
        for q in self._st.parts[1:]:
            if hasattr(q, "Ac_l"):
                with self._ctx(q):
                    q.Ac_l.fill(-1)
                self._counters["kernel_launches"] += 1

    def _col_reduce(self, part: _Part, u, out) -> None:
        """Alg. 1 column reduction of ``part``'s block: ``out = min_i C[i, :] - u[i]``."""
        import cupy as cp

        chunks = -(-part.rows // _COL_CHUNK)
        with self._ctx(part):
            scratch = cp.empty((chunks, part.cols), dtype=self._st.dual)
        self._k(
            part,
            "hungarian_col_min",
            (-(-part.cols // 32), chunks),
            (32, 8),
            (part.C, np.int32(part.rows), np.int32(part.cols), u, np.int32(_COL_CHUNK), scratch),
        )
        with self._ctx(part):
            # No out= here: CuPy's CUB reduction path rejects it (cupy/cupy#9032).
            cp.copyto(out, scratch.min(axis=0))
        self._counters["kernel_launches"] += 1

    def _augment(self) -> None:
        """Reverse pass (Alg. 5) and augmentation pass (Alg. 6) on the root."""
        st = self._st
        root, n = st.parts[0], st.n
        self._compact(root.rev, root.Fcomp, root.ncomp, n)
        self._k(
            root,
            "hungarian_reverse",
            _grid(n),
            (_BLOCK,),
            (root.Fcomp, root.ncomp, root.Pr, root.Pc, root.Sr, root.Sc, root.aug),
        )
        self._compact(root.aug, root.Fcomp, root.ncomp, n)
        self._k(
            root,
            "hungarian_augment",
            _grid(n),
            (_BLOCK,),
            (root.Fcomp, root.ncomp, root.Sr, root.Sc, root.Ar, root.Ac),
        )

    def _check_phase_count(self, phases: int, match: int) -> None:
        n = self._st.n
        if phases > n + 1:
            raise RuntimeError(
                f"{self.name}: no progress after {phases} iterations ({match} of {n} rows assigned)"
            )

    def _optimality_check(self, tree: int) -> int:
        """Alg. 2 and the resets of Sec. 4.2; returns the number of assigned rows."""
        st = self._st
        root, n = st.parts[0], st.n
        root.ctrl.data.memset_async(0, root.ctrl.nbytes)
        self._k(
            root,
            "hungarian_reset_rows",
            _grid(n),
            (_BLOCK,),
            (
                np.int32(n),
                root.Ar,
                root.Vr,
                root.Pr,
                root.Sr,
                root.Sc,
                root.active,
                root.visited,
                root.aug,
                np.int32(tree),
                root.ctrl,
            ),
        )
        for q in st.parts:
            if q.index > 0:
                with self._ctx(q):
                    q.ctrl.data.memset_async(0, q.ctrl.nbytes)
            if q.reset_cols_args is not None:
                self._k(
                    q,
                    "hungarian_reset_cols",
                    _grid(q.reset_cols_args[0]),
                    (_BLOCK,),
                    q.reset_cols_args,
                )
        return int(self._read_ctrl(root)[_CTRL_MATCH])

    def _note_match(self, phase: int, match: int) -> None:
        if phase == 1:
            self._counters["initial_assignments"] = match

    # -- to be provided by the variants ---------------------------------------------

    _phase_names: ClassVar[tuple[str, ...]] = PHASES

    def _initial_reduction(self) -> None:
        raise NotImplementedError

    def _solve(self) -> None:
        raise NotImplementedError

    def _collect(self) -> Assignment:
        raise NotImplementedError

    def _finish(self) -> None:
        """After the timed region: checks that need a host read (none in the host loop)."""


_KERNELS = (
    "hungarian_row_min",
    "hungarian_col_min",
    "hungarian_reset_rows",
    "hungarian_reset_cols",
    "hungarian_compact",
    "hungarian_tree_expand",
    "hungarian_tree_theta",
    "hungarian_min_reduce",
    "hungarian_dual_update_rows",
    "hungarian_dual_update_cols",
    "hungarian_merge_rows",
    "hungarian_clear_rows",
    "hungarian_zero_count",
    "hungarian_zero_scatter",
    "hungarian_class_seed",
    "hungarian_class_expand",
    "hungarian_class_min_slack",
    "hungarian_reverse",
    "hungarian_augment",
    "hungarian_tree_persistent",
)


class CuTree(_HungarianGPU):
    """CU-TREE: the alternating tree variant of the Hungarian algorithm on the GPU.

    Parameters
    ----------
    devices, allow_shared_device, batch, fuse
        As in the shared driver above; ``batch`` and ``fuse`` shape the host loop and
        are ignored when ``persistent`` is true.
    persistent : bool
        Run the solve loop in one persistent kernel (the default): one launch and one host
        read per solve instead of a few launches per BFS level and a host read per batch of
        levels. ``false`` runs the paper's host-driven loop (Sec. 3.2), with the phase
        split of ``timings()``. Needs ``devices == 1``.
    tiles_per_block : int
        Persistent kernel only: 32-column tiles each block owns. 0 (the default) takes the
        fewest that keep the grid (ceil(n / (32 tiles)) blocks) co-resident on the GPU:
        one tile up to n = 32 x (blocks the GPU holds at once). More tiles mean fewer
        blocks at each grid barrier and less parallelism per BFS level. A value whose grid
        cannot be co-resident is refused with a RuntimeError.

    Notes
    -----
    Date & Nagi, "GPU-accelerated Hungarian algorithms for the Linear Assignment Problem",
    Parallel Computing 2016: Alg. 1 (initial reduction), Alg. 2 (optimality check),
    Alg. 4 (forward pass expansion, one thread per column, with the stream-compacted
    frontier of Sec. 4.3.1), Alg. 5 and 6 (reverse and augmentation passes), Sec. 4.4 and
    Alg. 9 (theta by a reduction of the slack array, dual update); Sec. 5 item 4b for
    several devices (the columns split among them). Phase times (host loop):
    ``initial_reduction``, ``optimality_check``, ``forward_pass``, ``dual_update``,
    ``augment`` (reverse and augmentation passes); the paper's Table 3 reports forward pass
    and dual update.

    The persistent mode is ours, not the paper's: the same steps (the kernels' shared
    ``__device__`` functions) in one cooperative launch of ``hungarian_tree_persistent``,
    grid-wide barriers between them, each block owning a contiguous range of columns whose
    state stays in its shared memory, frontiers built by atomic appends (their order
    decides only ties, as the fused contraction's does). Its counters (``bfs_levels``,
    ``phases``, ``dual_updates``, ``initial_assignments``, ``grid_barriers``) are counted
    on the device; ``kernel_launches`` and ``host_syncs`` by the host. Its phase times are
    ``initial_reduction`` and ``solve_loop`` only: the split of the loop into forward
    pass, dual update and augmentation exists in the host loop alone.
    """

    name: ClassVar[str] = "cu_tree"
    split_by: ClassVar[str] = "cols"
    _phase_names: ClassVar[tuple[str, ...]] = (
        "initial_reduction",
        "optimality_check",
        "forward_pass",
        "dual_update",
        "augment",
    )

    def __init__(
        self,
        devices: int = 1,
        allow_shared_device: bool = False,
        batch: int = 16,
        fuse: bool = True,
        persistent: bool = True,
        tiles_per_block: int = 0,
    ):
        super().__init__(
            devices=devices, allow_shared_device=allow_shared_device, batch=batch, fuse=fuse
        )
        if not isinstance(persistent, bool | np.bool_):
            raise ValueError(f"persistent must be true or false, got {persistent!r}")
        if (
            isinstance(tiles_per_block, bool)
            or not isinstance(tiles_per_block, int | np.integer)
            or not 0 <= tiles_per_block <= 64
        ):
            raise ValueError(
                f"tiles_per_block must be an integer in [0, 64], got {tiles_per_block!r}"
            )
        if persistent and self.params["devices"] > 1:
            raise ValueError(
                "persistent: true runs on one GPU; set persistent: false for devices > 1 "
                f"(got devices={self.params['devices']})"
            )
        self.params["persistent"] = bool(persistent)
        self.params["tiles_per_block"] = int(tiles_per_block)
        if persistent:
            self._phase_names = ("initial_reduction", "solve_loop")

    def estimate_bytes(self, instance: CostMatrix) -> int:
        """As the driver's, plus the persistent kernel's two frontiers and row stamps."""
        return super().estimate_bytes(instance) + 28 * instance.n

    def _allocate(self, st: _State) -> None:
        super()._allocate(st)
        root, n = st.parts[0], st.n
        root.u = self._alloc(st, root, n, st.dual, 0)
        i32, i8 = np.int32, np.int8
        # Several devices contract on the root after gathering what each one reached.
        st.fused = self.params["fuse"] and len(st.parts) == 1
        for q in st.parts:
            # Column arrays of this device's block (the *_l names): for the root, views of
            # the first entries of its global column arrays.
            w = q.cols
            q.v_l = self._alloc(st, q, w, st.dual, 0)
            q.slack_l = self._alloc(st, q, w, st.dual, 0)
            q.Vc_l = self._alloc(st, q, w, i8, 0)
            if q.index == 0:
                q.Pc_l, q.rev_l, q.Ac_l = root.Pc[:w], root.rev[:w], root.Ac[:w]
                q.Fin_l, q.nf_l, q.u_l = root.Fin, root.nf, root.u
                q.Pr_l, q.Vr_l, q.act_l = root.Pr, root.Vr, root.active
                q.rowmin = self._alloc(st, q, n, st.dual, 0) if len(st.parts) > 1 else root.u
            else:
                q.Pc_l = self._alloc(st, q, w, i32, -1)
                q.rev_l = self._alloc(st, q, w, i8, 0)
                q.Ac_l = self._alloc(st, q, w, i32, -1)
                q.Fin_l = self._alloc(st, q, n, i32, 0)
                q.nf_l = q.nf
                q.u_l = self._alloc(st, q, n, st.dual, 0)
                q.Pr_l = self._alloc(st, q, n, i32, -1)
                q.Vr_l = self._alloc(st, q, n, i8, 0)
                q.act_l = self._alloc(st, q, n, i8, 0)
                q.rowmin = self._alloc(st, q, n, st.dual, 0)
                # root-side staging of what this device sends
                q.act_stage = self._alloc(st, root, n, i8, 0)
                q.pr_stage = self._alloc(st, root, n, i32, -1)
                q.rowmin_stage = self._alloc(st, root, n, st.dual, 0)
            q.reset_cols_args = (np.int32(w), q.Vc_l, q.Pc_l, q.rev_l, q.slack_l)
            nblk = -(-w // 32)
            q.blk_rows = self._alloc(st, q, nblk * 32, i32, -1)
            q.blk_cnt = self._alloc(st, q, nblk, i32, 0)
            q.expand_args = (
                q.C,
                np.int64(w),
                np.int32(w),
                np.int32(q.col0),
                q.u_l,
                q.v_l,
                q.Fin_l,
                q.nf_l,
                q.slack_l,
                q.Pc_l,
                q.Vc_l,
                q.Ac_l,
                q.Pr_l,
                q.Vr_l,
                q.act_l,
                q.rev_l,
                q.ctrl,
                st.eps,
                np.int32(1 if st.fused else 0),
                q.blk_rows,
                q.blk_cnt,
            )
            q.expand_grid = (nblk,)
            q.theta_out = (
                root.theta
                if len(st.parts) == 1
                else (root.theta_parts[:1] if q.index == 0 else q.theta)
            )
            q.theta_in = root.theta if q.index == 0 else q.theta
        if self.params["persistent"]:
            self._allocate_persistent(st)

    def _allocate_persistent(self, st: _State) -> None:
        """The persistent kernel's arrays and its grid (co-resident by construction)."""
        root, n = st.parts[0], st.n
        root.stamp = self._alloc(st, root, n, np.int32, 0)
        root.F2 = self._alloc(st, root, 2 * n, np.int32, -1)
        root.Fu2 = self._alloc(st, root, 2 * n, st.dual, 0)
        root.theta2 = self._alloc(st, root, 2, st.dual, st.inf)
        st.tiles, st.grid, st.smem = self._persistent_grid(root, n)

    def _persistent_grid(self, root: _Part, n: int) -> tuple[int, int, int]:
        """(tiles per block, blocks, dynamic shared bytes) for ``hungarian_tree_persistent``.

        The grid must be co-resident, or its barriers would wait for blocks that never
        start: blocks <= SMs x the occupancy calculator's blocks per SM at this block size
        and shared memory. The fewest tiles per block that fit (``tiles_per_block: 0``)
        give the most blocks, hence the most parallel columns per BFS level.
        """
        import cupy as cp
        from cupy.cuda import driver

        dev = cp.cuda.Device(root.device_id)
        attrs = dev.attributes
        if not attrs.get("CooperativeLaunch", 0):
            raise RuntimeError(f"{self.name}: persistent: true needs cooperative launch support")
        sms = int(attrs["MultiProcessorCount"])
        optin = int(attrs.get("MaxSharedMemoryPerBlockOptin", 48 * 1024))
        kern = root.kern["hungarian_tree_persistent"]
        ntiles = -(-n // 32)
        want = self.params["tiles_per_block"]
        tried = []
        for tiles in [want] if want else range(1, min(ntiles, 64) + 1):
            smem = persistent_smem_bytes(tiles)
            if smem > optin:
                tried.append(f"{tiles} tiles: {smem} bytes of shared memory > {optin}")
                break
            if smem > 48 * 1024:
                kern.max_dynamic_shared_size_bytes = smem
            per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(
                kern.kernel.ptr, _PERSIST_THREADS, smem
            )
            grid = -(-ntiles // tiles)
            if grid <= per_sm * sms:
                return tiles, grid, smem
            tried.append(f"{tiles} tiles: {grid} blocks > {per_sm} per SM x {sms} SMs")
        raise RuntimeError(
            f"{self.name}: no co-resident grid for the persistent kernel at n = {n} "
            f"({'; '.join(tried)}); set tiles_per_block to 0 or larger, or persistent: false"
        )

    # -- phases ----------------------------------------------------------------------

    def _initial_reduction(self) -> None:
        """Alg. 1: row minima (combined across the column blocks), then column minima."""
        import cupy as cp

        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        for q in parts:
            self._k(
                q,
                "hungarian_row_min",
                (n,),
                (_BLOCK,),
                (q.C, np.int32(n), np.int32(q.cols), q.rowmin),
            )
        if len(parts) > 1:
            for q in parts[1:]:
                self._copy(q, q.rowmin_stage, q.rowmin)
                self._wait(root, q)
            cp.copyto(root.u, root.rowmin)
            for q in parts[1:]:
                cp.minimum(root.u, q.rowmin_stage, out=root.u)
            self._counters["kernel_launches"] += len(parts)
            self._broadcast_u()
        for q in parts:
            self._col_reduce(q, q.u_l, q.v_l)

    def _broadcast_u(self) -> None:
        root = self._st.parts[0]
        for q in self._st.parts[1:]:
            self._wait(q, root)
            self._copy(q, q.u_l, root.u)

    def _broadcast_frontier(self) -> None:
        root = self._st.parts[0]
        for q in self._st.parts[1:]:
            self._wait(q, root)
            self._copy(q, q.Fin_l, root.Fin)
            self._copy(q, q.nf, root.nf)

    def _gather_rows(self) -> None:
        """Sec. 5 item 4b: the rows each device's expansion reached, merged on the root."""
        st = self._st
        root, n = st.parts[0], st.n
        for q in st.parts[1:]:
            self._copy(q, q.act_stage, q.act_l)
            self._copy(q, q.pr_stage, q.Pr_l)
            self._k(q, "hungarian_clear_rows", _grid(n), (_BLOCK,), (np.int32(n), q.act_l, q.Pr_l))
            self._wait(root, q)
            self._k(
                root,
                "hungarian_merge_rows",
                _grid(n),
                (_BLOCK,),
                (np.int32(n), q.act_stage, q.pr_stage, root.active, root.Pr, root.Vr),
            )

    def _contract(self) -> None:
        """Contraction (Sec. 4.3.1): the active rows become the next frontier F_in."""
        st = self._st
        root = st.parts[0]
        if len(st.parts) > 1:
            self._gather_rows()
        self._compact(root.active, root.Fin, root.nf, st.n)
        if len(st.parts) > 1:
            self._broadcast_frontier()

    def _forward(self) -> bool:
        """BFS levels until the frontier is empty; True when a column was marked reverse."""
        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        levels = 0
        for size in batch_schedule(self.params["batch"]):
            for _ in range(size):
                for q in parts:
                    self._k(q, "hungarian_tree_expand", q.expand_grid, (32, 8), q.expand_args)
                if not st.fused:
                    self._contract()
            levels += size
            self._counters["bfs_levels"] += size
            ctrl = self._read_ctrl(root)
            if ctrl[_CTRL_ERR]:
                raise RuntimeError(f"{self.name}: a dual update found no finite theta")
            if ctrl[_CTRL_NF] == 0:
                rev = bool(ctrl[_CTRL_REV])
                for q in parts[1:]:
                    rev = rev or bool(self._read_ctrl(q)[_CTRL_REV])
                return rev
            if levels > 2 * n + 2 + self.params["batch"]:
                raise RuntimeError(f"{self.name}: the forward pass did not end in {levels} levels")
        raise AssertionError("unreachable")

    def _dual_update(self) -> None:
        """Sec. 4.4: theta by a reduction of the slack array, then Alg. 9."""
        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        one = len(parts) == 1
        for q in parts:
            self._k(
                q,
                "hungarian_tree_theta",
                (1,),
                (_SCAN,),
                (
                    q.slack_l,
                    q.Vc_l,
                    np.int32(q.cols),
                    st.eps,
                    q.theta_out,
                    q.ctrl,
                    np.int32(1 if one else 0),
                ),
            )
        if not one:
            for q in parts[1:]:
                self._copy(q, root.theta_parts[q.index : q.index + 1], q.theta)
                self._wait(root, q)
            self._k(
                root,
                "hungarian_min_reduce",
                (1,),
                (_SCAN,),
                (root.theta_parts, np.int32(len(parts)), root.theta, root.ctrl, np.int32(1)),
            )
        self._k(
            root,
            "hungarian_dual_update_rows",
            _grid(n),
            (_BLOCK,),
            (np.int32(n), np.int32(0), root.Vr, root.theta, root.u),
        )
        if not one:
            for q in parts[1:]:
                self._wait(q, root)
                self._copy(q, q.theta, root.theta)
                self._copy(q, q.u_l, root.u)
        for q in parts:
            self._k(
                q,
                "hungarian_dual_update_cols",
                _grid(q.cols),
                (_BLOCK,),
                (
                    np.int32(q.cols),
                    q.Vc_l,
                    q.theta_in,
                    q.v_l,
                    np.int32(1),
                    q.slack_l,
                    q.Pc_l,
                    q.act_l,
                    st.eps,
                ),
            )
        self._contract()

    def _gather_columns(self) -> None:
        """Sec. 5 item 4: the devices' column predecessors and reverse marks, on the root."""
        root = self._st.parts[0]
        for q in self._st.parts[1:]:
            self._copy(q, root.Pc[q.col0 : q.col0 + q.cols], q.Pc_l)
            self._copy(q, root.rev[q.col0 : q.col0 + q.cols], q.rev_l)
            self._wait(root, q)

    def _scatter_assignment(self) -> None:
        root = self._st.parts[0]
        for q in self._st.parts[1:]:
            self._wait(q, root)
            self._copy(q, q.Ac_l, root.Ac[q.col0 : q.col0 + q.cols])

    def _solve(self) -> None:
        if self.params["persistent"]:
            self._solve_persistent()
            return
        st = self._st
        root, n = st.parts[0], st.n
        phase = 0
        while True:
            with self._phase("optimality_check"):
                match = self._optimality_check(tree=1)
            self._note_match(phase, match)
            if match == n:
                break
            phase += 1
            self._counters["phases"] = phase
            self._check_phase_count(phase, match)
            with self._phase("forward_pass"):
                # The unassigned rows, marked active by the optimality check, are F_in.
                self._compact(root.active, root.Fin, root.nf, n)
                if len(st.parts) > 1:
                    self._broadcast_frontier()
                found = self._forward()
            while not found:
                with self._phase("dual_update"):
                    self._dual_update()
                self._counters["dual_updates"] += 1
                if self._counters["dual_updates"] > (n + 1) * phase:
                    raise RuntimeError(f"{self.name}: too many dual updates")
                with self._phase("forward_pass"):
                    found = self._forward()
            with self._phase("augment"):
                if len(st.parts) > 1:
                    self._gather_columns()
                self._augment()
                if len(st.parts) > 1:
                    self._scatter_assignment()

    def _solve_persistent(self) -> None:
        """Alg. 2, 4, 5, 6 and 9 until every row is assigned, in one cooperative launch."""
        st = self._st
        root, n = st.parts[0], st.n
        root.ctrl.data.memset_async(0, root.ctrl.nbytes)  # barrier word, counts, counters
        args = (
            root.C,
            np.int32(n),
            np.int32(st.tiles),
            root.u,
            root.v_l,
            root.Ar,
            root.Ac,
            root.Pr,
            root.Pc,
            root.Sr,
            root.Sc,
            root.Vr,
            root.aug,
            root.stamp,
            root.F2,
            root.Fu2,
            root.theta2,
            root.ctrl,
            st.eps,
            np.uint64(_BARRIER_TIMEOUT_NS),
        )
        with self._phase("solve_loop"):
            # RawKernel's call has no cooperative switch; its compiled Function does.
            root.kern["hungarian_tree_persistent"].kernel(
                (st.grid,),
                (_PERSIST_THREADS,),
                args,
                shared_mem=st.smem,
                enable_cooperative_groups=True,
            )
        self._counters["kernel_launches"] += 1
        self._counters["persistent_blocks"] = st.grid
        self._counters["tiles_per_block"] = st.tiles

    def _finish(self) -> None:
        """Persistent mode: the one host read of a solve (counters and error code)."""
        if not self.params["persistent"]:
            return
        ctrl = self._read_ctrl(self._st.parts[0])
        c = self._counters
        c["bfs_levels"] = int(ctrl[_CTRL_LEVELS])
        c["phases"] = int(ctrl[_CTRL_PHASES])
        c["dual_updates"] = int(ctrl[_CTRL_DUALS])
        c["grid_barriers"] = int(ctrl[_CTRL_SYNCS])
        c["initial_assignments"] = int(ctrl[_CTRL_INIT]) if ctrl[_CTRL_PHASES] >= 1 else -1
        code = int(ctrl[_CTRL_ERR])
        if code:
            why = _PERSISTENT_ERRORS.get(code, f"error code {code}")
            raise RuntimeError(
                f"{self.name}: the persistent kernel stopped: {why} (after {c['phases']} "
                f"phases, {c['bfs_levels']} BFS levels, {c['dual_updates']} dual updates)"
            )

    def _collect(self) -> Assignment:
        import cupy as cp

        st = self._st
        root = st.parts[0]
        with cp.cuda.Device(root.device_id):
            perm = cp.asnumpy(root.Ar).astype(np.int64)
            u = cp.asnumpy(root.u)
        vs = []
        for q in st.parts:
            with cp.cuda.Device(q.device_id):
                vs.append(cp.asnumpy(q.v_l))
        return Assignment(perm, u, np.concatenate(vs))


class CuClass(_HungarianGPU):
    """CU-CLASS: the classical (Munkres) variant of the Hungarian algorithm on the GPU.

    Notes
    -----
    Date & Nagi, "GPU-accelerated Hungarian algorithms for the Linear Assignment Problem",
    Parallel Computing 2016: Alg. 1 (initial reduction), Alg. 2 (optimality check),
    Sec. 3.3 and 4.3.1 (matrix compression of the zero-slack edges into CSR by a prefix
    sum, redone only after a dual update), Alg. 3 (forward pass expansion, one thread per
    frontier row), Alg. 5 and 6 (reverse and augmentation passes), Alg. 7 and 8 (two-stage
    dual update); Sec. 5 item 4a for several devices (the rows split among them). After a
    dual update the search resumes from every tree row (V_r = 0) with the covers kept, as
    the ``search`` label of the sequential algorithm in Sec. 2.2 does; after an
    augmentation it restarts from the optimality check. Phase times:
    ``initial_reduction``, ``optimality_check``, ``compression``, ``forward_pass``,
    ``dual_update``, ``augment``, as in the paper's Table 3.
    """

    name: ClassVar[str] = "cu_class"
    split_by: ClassVar[str] = "rows"

    def _allocate(self, st: _State) -> None:
        super()._allocate(st)
        root, n = st.parts[0], st.n
        i32, i8 = np.int32, np.int8
        root.u = self._alloc(st, root, n, st.dual, 0)
        root.v = self._alloc(st, root, n, st.dual, 0)
        root.Vc = self._alloc(st, root, n, i8, 0)
        root.slack = self._alloc(st, root, n, st.dual, 0)  # unused by this variant's kernels
        root.reset_cols_args = (np.int32(n), root.Vc, root.Pc, root.rev, root.slack)
        root.P = self._alloc(st, root, n + 1, np.int64, 0)
        root.Z = self._alloc(st, root, max(4 * n, 1), i32, 0)
        for q in st.parts:
            r = q.rows
            q.cnt = self._alloc(st, q, max(r, 1), i32, 0)
            q.U = self._alloc(st, q, max(r, 1), st.dual, 0)
            if q.index == 0:
                q.u_l = root.u[q.row0 : q.row0 + r]
                q.v_l, q.Vr_l, q.Vc_l = root.v, root.Vr, root.Vc
                q.ptr = root.P[: r + 1]
                q.vpart = root.v
                q.theta_in = root.theta
            else:
                q.u_l = self._alloc(st, q, r, st.dual, 0)
                q.v_l = self._alloc(st, q, n, st.dual, 0)
                q.Vr_l = self._alloc(st, q, n, i8, 0)
                q.Vc_l = self._alloc(st, q, n, i8, 0)
                q.ptr = self._alloc(st, q, r + 1, np.int64, 0)
                q.Zl = self._alloc(st, q, max(4 * r, 1), i32, 0)
                q.vpart = self._alloc(st, q, n, st.dual, 0)
                q.vpart_stage = self._alloc(st, root, n, st.dual, 0)
                q.ptr_stage = self._alloc(st, root, r + 1, np.int64, 0)
                q.theta_in = q.theta
            q.theta_out = (
                root.theta
                if len(st.parts) == 1
                else (root.theta_parts[:1] if q.index == 0 else q.theta)
            )

    def _initial_reduction(self) -> None:
        """Alg. 1: row minima per row block, then column minima combined on the root."""
        import cupy as cp

        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        for q in parts:
            self._k(
                q,
                "hungarian_row_min",
                (q.rows,),
                (_BLOCK,),
                (q.C, np.int32(q.rows), np.int32(n), q.u_l),
            )
        for q in parts:
            self._col_reduce(q, q.u_l, q.vpart)
        if len(parts) > 1:
            for q in parts[1:]:
                self._copy(q, q.vpart_stage, q.vpart)
                self._wait(root, q)
                cp.minimum(root.v, q.vpart_stage, out=root.v)
                self._counters["kernel_launches"] += 1
            for q in parts[1:]:
                self._wait(q, root)
                self._copy(q, q.v_l, root.v)

    def _compress(self) -> None:
        """Sec. 3.3 and 4.3.1: the zero-slack edges as CSR (P, Z) on the root.

        Per device: count per row, prefix sum into the row pointer, scatter; the devices'
        lists are then gathered on the root (Sec. 5 item 4a).
        """
        import cupy as cp

        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        for q in parts:
            self._k(
                q,
                "hungarian_zero_count",
                (q.rows,),
                (_BLOCK,),
                (q.C, np.int32(q.rows), np.int32(n), q.u_l, q.v_l, st.eps, q.cnt),
            )
            with self._ctx(q):
                cp.copyto(q.ptr[1:], cp.cumsum(q.cnt[: q.rows], dtype=np.int64))
            self._counters["kernel_launches"] += 1
        sizes = []
        for q in parts:
            with self._ctx(q):
                sizes.append(int(q.ptr[q.rows : q.rows + 1].get()[0]))
            self._counters["host_syncs"] += 1
        total = sum(sizes)
        self._counters["zero_edges_max"] = max(self._counters.get("zero_edges_max", 0), total)
        if root.Z.shape[0] < total:
            root.Z = None
            root.Z = self._alloc(st, root, 2 * total, np.int32, 0)
        for q, m in zip(parts[1:], sizes[1:], strict=True):
            if q.Zl.shape[0] < m:
                q.Zl = None
                q.Zl = self._alloc(st, q, 2 * m, np.int32, 0)
        for q in parts:
            target = root.Z if q.index == 0 else q.Zl
            self._k(
                q,
                "hungarian_zero_scatter",
                (q.rows,),
                (_BLOCK,),
                (q.C, np.int32(q.rows), np.int32(n), q.u_l, q.v_l, st.eps, q.ptr, target),
            )
        off = sizes[0]
        for q, m in zip(parts[1:], sizes[1:], strict=True):
            if m:
                self._copy(q, root.Z[off : off + m], q.Zl[:m])
            self._copy(q, q.ptr_stage, q.ptr)
            self._wait(root, q)
            cp.add(q.ptr_stage, np.int64(off), out=root.P[q.row0 : q.row0 + q.rows + 1])
            self._counters["kernel_launches"] += 1
            off += m
        self._counters["compressions"] += 1

    def _forward(self) -> bool:
        """Alg. 3 levels from the tree rows until the frontier is empty; True on "reverse"."""
        st = self._st
        root, n = st.parts[0], st.n
        self._k(
            root,
            "hungarian_class_seed",
            _grid(n),
            (_BLOCK,),
            (np.int32(n), root.Vr, root.P, root.active, root.visited),
        )
        self._compact(root.active, root.Fin, root.nf, n)
        fuse = self.params["fuse"]
        args = (
            root.Fin,
            root.nf,
            root.P,
            root.Z,
            root.Ac,
            root.Pc,
            root.Pr,
            root.Vr,
            root.Vc,
            root.active,
            root.visited,
            root.rev,
            root.ctrl,
            np.int32(n),
            np.int32(1 if fuse else 0),
        )
        levels = 0
        for size in batch_schedule(self.params["batch"]):
            for _ in range(size):
                self._k(root, "hungarian_class_expand", _grid(n), (_BLOCK,), args)
                if not fuse:
                    self._compact(root.active, root.Fin, root.nf, n)
            levels += size
            self._counters["bfs_levels"] += size
            ctrl = self._read_ctrl(root)
            if ctrl[_CTRL_ERR]:
                raise RuntimeError(f"{self.name}: a dual update found no finite theta")
            if ctrl[_CTRL_NF] == 0:
                return bool(ctrl[_CTRL_REV])
            if levels > 2 * n + 2 + self.params["batch"]:
                raise RuntimeError(f"{self.name}: the forward pass did not end in {levels} levels")
        raise AssertionError("unreachable")

    def _dual_update(self) -> None:
        """Alg. 7 (theta = least uncovered slack, per device then on the root) and Alg. 8."""
        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        one = len(parts) == 1
        for q in parts[1:]:
            self._wait(q, root)
            self._copy(q, q.Vr_l, root.Vr)
            self._copy(q, q.Vc_l, root.Vc)
        for q in parts:
            self._k(
                q,
                "hungarian_class_min_slack",
                (max(q.rows, 1),),
                (_BLOCK,),
                (
                    q.C,
                    np.int32(q.rows),
                    np.int32(n),
                    np.int32(q.row0),
                    q.u_l,
                    q.v_l,
                    q.Vr_l,
                    q.Vc_l,
                    q.U,
                ),
            )
            self._k(
                q,
                "hungarian_min_reduce",
                (1,),
                (_SCAN,),
                (q.U, np.int32(q.rows), q.theta_out, q.ctrl, np.int32(1 if one else 0)),
            )
        if not one:
            for q in parts[1:]:
                self._copy(q, root.theta_parts[q.index : q.index + 1], q.theta)
                self._wait(root, q)
            self._k(
                root,
                "hungarian_min_reduce",
                (1,),
                (_SCAN,),
                (root.theta_parts, np.int32(len(parts)), root.theta, root.ctrl, np.int32(1)),
            )
            for q in parts[1:]:
                self._wait(q, root)
                self._copy(q, q.theta, root.theta)
        for q in parts:
            self._k(
                q,
                "hungarian_dual_update_rows",
                _grid(q.rows),
                (_BLOCK,),
                (np.int32(q.rows), np.int32(q.row0), q.Vr_l, q.theta_in, q.u_l),
            )
            self._k(
                q,
                "hungarian_dual_update_cols",
                _grid(n),
                (_BLOCK,),
                (np.int32(n), q.Vc_l, q.theta_in, q.v_l, np.int32(0), q.v_l, q.cnt, q.Vc_l, st.eps),
            )

    def _solve(self) -> None:
        st = self._st
        n = st.n
        phase = 0
        stale = True  # the adjacency list must be (re)built before the next forward pass
        while True:
            with self._phase("optimality_check"):
                match = self._optimality_check(tree=0)
            self._note_match(phase, match)
            if match == n:
                break
            phase += 1
            self._counters["phases"] = phase
            self._check_phase_count(phase, match)
            while True:
                if stale:
                    with self._phase("compression"):
                        self._compress()
                    stale = False
                with self._phase("forward_pass"):
                    found = self._forward()
                if found:
                    break
                with self._phase("dual_update"):
                    self._dual_update()
                stale = True
                self._counters["dual_updates"] += 1
                if self._counters["dual_updates"] > (n + 1) * phase:
                    raise RuntimeError(f"{self.name}: too many dual updates")
            with self._phase("augment"):
                self._augment()

    def _collect(self) -> Assignment:
        import cupy as cp

        st = self._st
        root = st.parts[0]
        with cp.cuda.Device(root.device_id):
            perm = cp.asnumpy(root.Ar).astype(np.int64)
            v = cp.asnumpy(root.v)
        us = []
        for q in st.parts:
            with cp.cuda.Device(q.device_id):
                us.append(cp.asnumpy(q.u_l))
        return Assignment(perm, np.concatenate(us), v)
