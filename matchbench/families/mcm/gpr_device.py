"""G-PR on the device: what an instance keeps on the GPU, and the CuPy launcher.

:func:`build_state` uploads an instance (both CSRs, shared with the family's other GPU
solvers), allocates G-PR's arrays, loads the kernels of ``kernels/mcm/gpr.cu`` and launches
each once with nothing to do (:func:`warm_up`), so that no timed run loads a module;
:class:`CupyOps` is :class:`~matchbench.families.mcm.gpr_loop.GPRLoop`'s launcher interface
over CuPy (plain launches or replayed CUDA graphs); :func:`persistent_grid` sizes the
persistent kernel's co-resident grid. The slots of the persistent kernel's control block
are kept in step with its ``GPR_P_*`` ``#define``s here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from matchbench.families.mcm.gpr_loop import CTL_GUARD, CTL_SIZE, RING_SIZE
from matchbench.gpu.common import device_attributes

#: Slots of the persistent kernel's control block (int64); GPR_P_* in kernels/mcm/gpr.cu.
P_ABORT = 1
P_LEN = 8
P_COUNTERS = {
    "push_kernels": 9,
    "global_relabels": 10,
    "bfs_levels": 11,
    "max_level": 12,
    "shrinks": 13,
    "grid_barriers": 14,
    "loops": 15,
}
P_RELABEL_NS = 16
P_LOCAL = 28
P_STOPS = 29
P_SIZE = 32
#: Largest block of the persistent kernel (GPR_P_MAX_THREADS).
P_MAX_THREADS = 1024
#: A grid barrier that waits longer than this gives up (a grid that is not co-resident).
P_BARRIER_TIMEOUT_NS = 2_000_000_000


@dataclass
class DeviceState:
    """What one instance keeps on the GPU across repetitions."""

    instance: Any
    device_id: int
    stream: Any
    arrays: dict[str, Any]
    kernels: dict[str, Any]
    idx: type
    pinned: list[np.ndarray]
    events: list[Any]
    max_blocks: int
    graphs: dict[tuple, tuple[Any, int]] = field(default_factory=dict)
    p_grid: int = 0  # blocks of the persistent kernel (0: host loop)
    upload_s: float = float("nan")  # the graph's host-to-device copy (t_upload_s)

    @property
    def nbytes(self) -> int:
        total = 0
        for v in self.arrays.values():
            for arr in v if isinstance(v, list | tuple) else (v,):
                total += int(arr.nbytes)
        return total


KERNELS = (
    "gpr_init_relabel",
    "gpr_gr_level",
    "gpr_gr_level_warp",
    "gpr_push_first",
    "gpr_push_first_warp",
    "gpr_init_active",
    "gpr_push_active",
    "gpr_push_active_warp",
    "gpr_compact",
    "gpr_shrink_len",
    "gpr_advance",
    "gpr_fix_matching",
    "gpr_persistent",
    "gpr_barrier_probe",
)


class CupyOps:
    """The launcher interface of :class:`~matchbench.families.mcm.gpr_loop.GPRLoop` over CuPy,
    on the instance's stream."""

    def __init__(self, st: DeviceState, threads_per_block: int, mode: str) -> None:
        import cupy as cp

        self.xp = cp
        self.st = st
        self.threads_per_block = int(threads_per_block)
        self.max_blocks = st.max_blocks
        self.mode = mode
        self.kernel_launches = 0
        self.graph_launches = 0
        self.graph_captures = 0
        self._captured = 0
        self._capturing = False
        self._n_snap = 0
        self._marks: list[Any] = []

    def _count(self, k: int) -> None:
        if self._capturing:
            self._captured += k
        else:
            self.kernel_launches += k

    def count_array_ops(self, k: int) -> None:
        # CuPy array operations (a comparison, a scan) queued by the loop, each counted as
        # one launch.
        self._count(k)

    def launch_blocks(self, name: str, blocks: int, args: tuple) -> None:
        block = 1 if name in _SINGLE else self.threads_per_block
        self.st.kernels[name]((int(blocks),), (block,), args)
        self._count(1)

    def launch(self, name: str, n_items: int, args: tuple) -> None:
        if n_items <= 0:
            return  # nothing to do; a stamp it would not publish reads as "no work"
        blocks = min(-(-int(n_items) // self.threads_per_block), self.max_blocks)
        self.st.kernels[name]((blocks,), (self.threads_per_block,), args)
        self._count(1)

    def batch(self, key: tuple, enqueue: Callable[[], None]) -> None:
        if self.mode == "plain":
            enqueue()
            return
        entry = self.st.graphs.get(key)
        stream = self.st.stream
        if entry is None:
            self._captured = 0
            self._capturing = True
            stream.begin_capture()
            try:
                enqueue()
            finally:
                graph = stream.end_capture()
                self._capturing = False
            graph.upload(stream)
            entry = self.st.graphs[key] = (graph, self._captured)
            self.graph_captures += 1
        entry[0].launch(stream)
        self.kernel_launches += entry[1]
        self.graph_launches += 1

    def snapshot(self) -> tuple[np.ndarray, Any]:
        import cupy as cp

        st = self.st
        # Rotating pinned buffers: a buffer is reused only after a later copy was waited
        # for, and stream order then guarantees the earlier one had completed.
        i = self._n_snap % len(st.pinned)
        self._n_snap += 1
        buf, ev = st.pinned[i], st.events[i]
        ring = st.arrays["ring"]
        cp.cuda.runtime.memcpyAsync(
            buf.ctypes.data,
            ring.data.ptr,
            ring.nbytes,
            cp.cuda.runtime.memcpyDeviceToHost,
            st.stream.ptr,
        )
        ev.record(st.stream)
        return buf, ev

    def read(self, handle: tuple[np.ndarray, Any]) -> np.ndarray:
        buf, ev = handle
        ev.synchronize()
        return buf.copy()

    def mark(self) -> Any:
        import cupy as cp

        ev = cp.cuda.Event()
        ev.record(self.st.stream)
        return ev

    def elapsed(self, a: Any, b: Any) -> float:
        import cupy as cp

        return cp.cuda.get_elapsed_time(a, b) / 1e3


# Kernels that run with a single thread (one block of one thread).
_SINGLE = frozenset({"gpr_advance", "gpr_shrink_len"})


def build_state(instance: Any, params: dict[str, Any], name: str) -> DeviceState:
    """The device state of ``instance`` for a G-PR solver's ``params``: its graph (shared,
    :meth:`DeviceBipartite.resident`), arrays, kernels, stream and pinned buffers, every
    kernel loaded once (:func:`warm_up`)."""
    import cupy as cp

    from matchbench.gpu.common import DeviceBipartite
    from matchbench.gpu.kernels import get_module

    dt = np.dtype(instance.col_ptr.dtype)
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{instance.name}: index dtype {dt} is neither int32 nor int64")
    module = get_module("gpr", ("-DMB_INDEX64",) if dt == np.int64 else ())
    kernels = {k: module.get_function(k) for k in KERNELS}
    stream = cp.cuda.Stream(non_blocking=True)
    m, n = int(instance.n_rows), int(instance.n_cols)
    with stream:
        g = DeviceBipartite.resident(instance)
        arrays = {
            "row_ptr": g.row_ptr.astype(dt, copy=False),
            "row_ind": g.row_ind.astype(dt, copy=False),
            "col_ptr": g.col_ptr.astype(dt, copy=False),
            "col_ind": g.col_ind.astype(dt, copy=False),
            "mu": cp.full(m + n, -1, dtype=dt),
            "psi": cp.zeros(m + n, dtype=dt),
            "ia": cp.full(max(n, 1), -1, dtype=np.int32),
            "ring": cp.full(RING_SIZE + 1, -1, dtype=np.int32),
            "ctl": cp.zeros(CTL_SIZE, dtype=np.int32),
            "lists": [cp.full(max(n, 1), -1, dtype=dt) for _ in range(2)],
        }
        if params["persistent"]:
            arrays["queue"] = cp.empty(max(2 * m, 1), dtype=dt)
            arrays["pctl"] = cp.zeros(P_SIZE, dtype=np.int64)
    pinned = []
    for _ in range(3):
        mem = cp.cuda.alloc_pinned_memory((RING_SIZE + 1) * 4)
        pinned.append(np.frombuffer(mem, dtype=np.int32, count=RING_SIZE + 1))
    dev = cp.cuda.Device()
    sms = int(device_attributes(dev.id)["MultiProcessorCount"])
    threads = params["threads_per_block"]
    # Two waves of full occupancy; grid-stride loops cover larger inputs.
    max_blocks = max(1, sms * max(1, 2048 // threads) * 2)
    st = DeviceState(
        instance=instance,
        device_id=dev.id,
        stream=stream,
        arrays=arrays,
        kernels=kernels,
        idx=np.int64 if dt == np.int64 else np.int32,
        pinned=pinned,
        events=[cp.cuda.Event() for _ in range(3)],
        max_blocks=max_blocks,
        upload_s=g.upload_s,
    )
    if params["persistent"]:
        st.p_grid = persistent_grid(kernels["gpr_persistent"], dev, sms, params, name)
        with stream:
            arrays["blk"] = cp.zeros(st.p_grid, dtype=np.int64)
    warm_up(st, params)
    stream.synchronize()
    return st


def persistent_grid(kern: Any, dev: Any, sms: int, params: dict[str, Any], name: str) -> int:
    """Blocks of ``gpr_persistent``: co-resident, or its grid barriers never return.

    ``blocks_per_sm`` per multiprocessor, at most what the occupancy calculator allows
    at this block size.
    """
    from cupy.cuda import driver

    if not device_attributes(dev.id).get("CooperativeLaunch", 0):
        raise RuntimeError(
            f"{name}: persistent: true needs cooperative launch support; "
            "set persistent: false"
        )
    threads = params["threads_per_block"]
    per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(kern.kernel.ptr, threads, 0)
    if per_sm < 1:
        raise RuntimeError(
            f"{name}: gpr_persistent cannot run {threads} threads per block here "
            "(occupancy 0); lower threads_per_block or set persistent: false"
        )
    return sms * min(int(per_sm), params["blocks_per_sm"])


def warm_up(st: DeviceState, params: dict[str, Any]) -> None:
    """Load every kernel and CuPy's scan once, so that run() times no module loading.

    Every launch here has nothing to do: zero-length loops, or guards that fail.
    """
    import cupy as cp

    a, idx = st.arrays, st.idx
    z, i0 = idx(0), np.int32(0)
    ring, ctl, mask = a["ring"], a["ctl"], np.int32(RING_SIZE - 1)
    one = (1,)
    with st.stream:
        # A guard stamp (0) that is absent from the ring: every guarded kernel returns.
        ctl.set(np.array([1, 0, 0, 0, 0, 0, 0, 0], dtype=np.int32))
        ring.fill(-1)
        k = st.kernels
        k["gpr_init_relabel"](one, one, (z, z, a["mu"], a["psi"], z, ring, mask, ctl))
        lst = a["lists"][0]
        level_args = (z, a["row_ptr"], a["row_ind"], a["mu"], a["mu"], a["psi"], a["psi"])
        first_args = (z, a["col_ptr"], a["col_ind"], a["mu"], a["mu"], a["psi"], a["psi"])
        push_args = (a["col_ptr"], a["col_ind"], a["mu"], a["mu"], a["psi"], a["psi"], z)
        for suffix in ("", "_warp"):
            k["gpr_gr_level" + suffix](one, one, (*level_args, z, ring, mask, ctl, i0))
            k["gpr_push_first" + suffix](one, one, (*first_args, z, ring, mask, ctl, i0))
            k["gpr_push_active" + suffix](
                one, one, (*push_args, lst, lst, a["ia"], ring, mask, ctl, np.int32(1))
            )
        k["gpr_init_active"](
            one, one, (lst, lst, a["mu"], a["mu"], a["ia"], ring, mask, ctl, np.int32(1))
        )
        k["gpr_fix_matching"](one, one, (z, a["mu"], a["mu"]))
        ctl.fill(0)  # LEN = 0: the compaction does nothing
        pos = cp.cumsum(lst[:1] != -1, dtype=idx)
        k["gpr_compact"](one, one, (lst, pos, lst, ctl))
        k["gpr_shrink_len"](one, one, (pos, ring, mask, ctl))
        k["gpr_advance"](one, one, (ctl, i0, i0, i0, np.int32(CTL_GUARD)))
        ring.fill(-1)
        if params["persistent"]:
            # m = n = 0 and an empty list: one relabel of no level, one push iteration
            # that finds no active column, then FIXMATCHING of no column.
            a["pctl"].fill(0)
            k["gpr_persistent"].kernel(
                (st.p_grid,),
                (params["threads_per_block"],),
                (
                    z,
                    z,
                    *(a[x] for x in ("row_ptr", "row_ind", "col_ptr", "col_ind")),
                    a["mu"],
                    a["psi"],
                    z,
                    lst,
                    lst,
                    a["ia"],
                    a["queue"],
                    a["blk"],
                    a["pctl"],
                    np.int32(2),
                    np.int32(1),
                    np.float64(0.7),
                    np.int32(1),
                    np.int64(1),
                    np.uint64(0),
                    np.uint64(P_BARRIER_TIMEOUT_NS),
                ),
                enable_cooperative_groups=True,
            )
