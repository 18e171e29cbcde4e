"""The host driver shared by CU-CLASS and CU-TREE (Date & Nagi 2016), on one GPU or several.

:class:`HungarianGPU` holds what both variants do the same way: the parameters common to
both, the life cycle (skip, prepare, run, result, timings), the split of the cost matrix
into one block per device (:func:`split`, :class:`Part`: Sec. 5) with the device-to-device
copies and events that order them, the initial reduction's column pass, the optimality
check, the reverse and augmentation passes, phase timing by CUDA events, and the slots
of the control block shared with ``kernels/lap/hungarian.cu`` (the ``HUNG_*``
``#define``s). The variants add their forward pass and dual update:
:mod:`~matchbench.families.lap.hungarian_class` (CU-CLASS) and
:mod:`~matchbench.families.lap.hungarian_tree` (CU-TREE, with its persistent kernel). An
overview of both is :mod:`matchbench.families.lap.hungarian`.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import boolean, integer, positive_int
from matchbench.core.solver import BaseSolver
from matchbench.families.lap.problem import Assignment, CostMatrix, dual_dtype, tight_eps

# ctrl layout; kept in step with the HUNG_* #defines of kernels/lap/hungarian.cu.
CTRL_MATCH, CTRL_NF, CTRL_REV, CTRL_NCOMP, CTRL_ERR, CTRL_DONE = 0, 1, 2, 3, 4, 5
# persistent kernel: frontier counts at 8..10, then its counters
CTRL_LEVELS, CTRL_PHASES, CTRL_DUALS, CTRL_INIT, CTRL_SYNCS = 11, 12, 13, 14, 15
NCTRL = 16
#: The HUNG_DTYPE code per cost dtype.
DTYPE_CODE = {
    np.dtype(np.int32): 0,
    np.dtype(np.int64): 1,
    np.dtype(np.float32): 2,
    np.dtype(np.float64): 3,
}
#: HUNG_INF of the kernels: "no slack yet" / "no theta".
INF = {np.dtype(np.int64): 1 << 62, np.dtype(np.float64): 1e300}
BLOCK = 256
SCAN = 1024  # HUNG_SCAN_THREADS
COL_CHUNK = 256  # rows per block row of the column reduction

#: Names of the phase times, as in Date & Nagi 2016, Table 3 and Fig. 3.
PHASES = (
    "initial_reduction",
    "optimality_check",
    "compression",
    "forward_pass",
    "dual_update",
    "augment",
)


def grid_1d(n: int, block: int = BLOCK) -> tuple[int]:
    """The 1-D grid of ``block``-thread blocks covering ``n`` items."""
    return (max(1, (int(n) + block - 1) // block),)


def batch_schedule(cap: int):
    """Sizes of the successive batches of BFS levels between two host checks: 2, 4, ... cap."""
    k = min(2, cap)
    while True:
        yield k
        k = min(2 * k, cap)


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


class Part:
    """One block of the cost matrix and the arrays of the device that holds it."""

    def __init__(self, index: int, device_id: int, row0: int, rows: int, col0: int, cols: int):
        self.index = index
        self.device_id = device_id
        self.row0, self.rows, self.col0, self.cols = row0, rows, col0, cols
        self.kern: dict[str, Any] = {}
        self.switch = False  # whether launches need this device made current
        self.event: Any = None
        self.reset_cols_args: tuple | None = None  # the column state this device holds


class State:
    """Everything kept on the GPUs for one instance (reused across repetitions)."""

    def __init__(self, instance: CostMatrix, parts: list[Part]):
        self.instance = instance
        self.parts = parts
        self.n = instance.n
        self.arrays_bytes = 0


class HungarianGPU(BaseSolver):
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

    def __init__(self, *, devices: int, allow_shared_device: bool, batch: int, fuse: bool):
        super().__init__(
            devices=positive_int("devices", devices),
            allow_shared_device=boolean("allow_shared_device", allow_shared_device),
            batch=integer("batch", batch, 1, 4096),
            fuse=boolean("fuse", fuse),
        )
        self._st: State | None = None
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
        extra = 96 * n + 8 * n * (-(-n // COL_CHUNK))
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

    def _ctx(self, part: Part):
        import cupy as cp

        return cp.cuda.Device(part.device_id) if part.switch else nullcontext()

    def _k(self, part: Part, name: str, grid, block, args) -> None:
        kern = part.kern[name]
        if part.switch:
            import cupy as cp

            with cp.cuda.Device(part.device_id):
                kern(grid, block, args)
        else:
            kern(grid, block, args)
        self._counters["kernel_launches"] += 1

    def _copy(self, on: Part, dst, src) -> None:
        """``dst[...] = src`` between devices, queued on ``on``'s stream."""
        with self._ctx(on):
            dst.data.copy_from_device_async(src.data, src.nbytes)

    def _wait(self, waiter: Part, producer: Part) -> None:
        """Make ``waiter``'s stream wait for the work queued so far on ``producer``'s."""
        if waiter.device_id == producer.device_id:
            return  # one device, one stream: already ordered
        import cupy as cp

        with cp.cuda.Device(producer.device_id):
            producer.event.record()
        with cp.cuda.Device(waiter.device_id):
            cp.cuda.get_current_stream().wait_event(producer.event)

    def _read_ctrl(self, part: Part) -> np.ndarray:
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
            (SCAN,),
            (flag, np.int32(n), np.int32(clear), out, count),
        )

    # -- building the state ----------------------------------------------------------

    def _build(self, instance: CostMatrix) -> State:
        import cupy as cp

        from matchbench.gpu.kernels import get_module

        n = instance.n
        costs = instance.costs
        code = DTYPE_CODE[np.dtype(costs.dtype)]
        dt = dual_dtype(costs)
        ids = self._device_ids()
        blocks = split(n, len(ids))
        parts = []
        for q, (dev, (a, size)) in enumerate(zip(ids, blocks, strict=True)):
            if self.split_by == "rows":
                part = Part(q, dev, a, size, 0, n)
            else:
                part = Part(q, dev, 0, n, a, size)
            part.switch = dev != ids[0]
            parts.append(part)
        st = State(instance, parts)
        st.dual = dt
        st.eps = dt.type(tight_eps(costs))
        st.inf = INF[dt]
        for part in parts:
            with cp.cuda.Device(part.device_id):
                # int32 costs are the source's default: the module the runner precompiles.
                mod = get_module("hungarian", (f"-DHUNG_DTYPE={code}",) if code else ())
                part.kern = {name: mod.get_function(name) for name in KERNELS}
                part.event = cp.cuda.Event(disable_timing=True)
                block = costs[part.row0 : part.row0 + part.rows, part.col0 : part.col0 + part.cols]
                part.C = cp.asarray(np.ascontiguousarray(block))
        self._allocate(st)
        return st

    def _alloc(self, st: State, part: Part, shape, dtype, fill=None):
        import cupy as cp

        with cp.cuda.Device(part.device_id):
            a = cp.empty(shape, dtype=dtype) if fill is None else cp.full(shape, fill, dtype=dtype)
        st.arrays_bytes += a.nbytes
        return a

    def _allocate(self, st: State) -> None:
        """Root arrays of length n (rows and columns) shared by both variants."""
        root = st.parts[0]
        n = st.n
        i32, i8 = np.int32, np.int8
        for name in ("Ar", "Ac", "Pr", "Sr", "Pc", "Sc", "Fin", "Fcomp"):
            setattr(root, name, self._alloc(st, root, n, i32, -1))
        for name in ("Vr", "active", "visited", "aug", "rev"):
            setattr(root, name, self._alloc(st, root, n, i8, 0))
        root.ctrl = self._alloc(st, root, NCTRL, i32, 0)
        root.nf = root.ctrl[CTRL_NF : CTRL_NF + 1]
        root.ncomp = root.ctrl[CTRL_NCOMP : CTRL_NCOMP + 1]
        root.theta = self._alloc(st, root, 1, st.dual, 0)
        root.theta_parts = self._alloc(st, root, len(st.parts), st.dual, 0)
        for q in st.parts[1:]:
            q.ctrl = self._alloc(st, q, NCTRL, i32, 0)
            q.nf = q.ctrl[CTRL_NF : CTRL_NF + 1]
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

    def _col_reduce(self, part: Part, u, out) -> None:
        """Alg. 1 column reduction of ``part``'s block: ``out = min_i C[i, :] - u[i]``."""
        import cupy as cp

        chunks = -(-part.rows // COL_CHUNK)
        with self._ctx(part):
            scratch = cp.empty((chunks, part.cols), dtype=self._st.dual)
        self._k(
            part,
            "hungarian_col_min",
            (-(-part.cols // 32), chunks),
            (32, 8),
            (part.C, np.int32(part.rows), np.int32(part.cols), u, np.int32(COL_CHUNK), scratch),
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
            grid_1d(n),
            (BLOCK,),
            (root.Fcomp, root.ncomp, root.Pr, root.Pc, root.Sr, root.Sc, root.aug),
        )
        self._compact(root.aug, root.Fcomp, root.ncomp, n)
        self._k(
            root,
            "hungarian_augment",
            grid_1d(n),
            (BLOCK,),
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
            grid_1d(n),
            (BLOCK,),
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
                    grid_1d(q.reset_cols_args[0]),
                    (BLOCK,),
                    q.reset_cols_args,
                )
        return int(self._read_ctrl(root)[CTRL_MATCH])

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


KERNELS = (
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
