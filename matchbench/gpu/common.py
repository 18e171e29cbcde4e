"""Pieces every GPU driver shares: graph upload, CUDA-event timing, launch/sync counts.

Everything here imports ``cupy`` lazily (inside functions or at first use), so the module
itself imports on machines without a GPU.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

# The CUDA block-size validator lives with the other parameter validators; importable here
# too, where GPU drivers looked for it before.
from matchbench.core.params import block_size  # noqa: F401


@dataclass
class DeviceBipartite:
    """Both CSR directions of a :class:`~matchbench.graphs.bipartite.BipartiteGraph` on the GPU."""

    n_rows: int
    n_cols: int
    n_edges: int
    row_ptr: Any
    row_ind: Any
    col_ptr: Any
    col_ind: Any

    #: seconds the host-to-device copy took (CUDA events), the ``t_upload_s`` column
    upload_s: float = float("nan")

    @classmethod
    def upload(cls, g) -> DeviceBipartite:
        """Copy both CSR directions to the current device, timed with CUDA events.

        All four arrays get the dtype of ``g.col_ptr`` (the kernels take one index type).
        """
        import cupy as cp
        import numpy as np

        dt = np.dtype(g.col_ptr.dtype)
        timer = EventTimer()
        with timer:
            out = cls(
                n_rows=g.n_rows,
                n_cols=g.n_cols,
                n_edges=g.n_edges,
                row_ptr=cp.asarray(np.asarray(g.row_ptr, dtype=dt)),
                row_ind=cp.asarray(np.asarray(g.row_ind, dtype=dt)),
                col_ptr=cp.asarray(g.col_ptr),
                col_ind=cp.asarray(np.asarray(g.col_ind, dtype=dt)),
            )
        out.upload_s = timer.seconds
        return out

    @classmethod
    def resident(cls, g) -> DeviceBipartite:
        """The device copy of ``g``, uploaded once per process and device and shared.

        Every GPU solver of the family reads the graph and none writes it, so solvers that
        work on one instance in turn (``mcm_gpu`` prepares two) share one copy. One
        instance is kept: a new one replaces it, its memory released first.
        """
        import cupy as cp

        dev = cp.cuda.Device().id
        held = _resident.get("entry")
        if held is not None:
            ref, held_dev, graph = held
            if ref() is g and held_dev == dev:
                return graph
        _resident.clear()
        graph = cls.upload(g)
        _resident["entry"] = (weakref.ref(g), dev, graph)
        return graph


#: ``{"entry": (weakref to the host graph, device id, DeviceBipartite)}``
_resident: dict[str, Any] = {}


def release_resident() -> None:
    """Drop the shared device copy (:meth:`DeviceBipartite.resident`)."""
    _resident.clear()


#: Host-to-device copies of a weight matrix go in row blocks of at most this many bytes.
UPLOAD_CHUNK_BYTES = 256 << 20

#: ``{"entry": (weakref to the CompleteGraph, device id, cupy matrix, upload seconds)}``: the
#: device copy of one instance, shared by the ``mwpm`` solvers and the verifier's GPU check.
_resident_matrix: dict[str, Any] = {}


def device_matrix(graph: Any) -> tuple[Any, float]:
    """The weight matrix of ``graph`` on the current device, uploaded once and shared.

    Returns ``(matrix, upload_seconds)``; the seconds are those of the one upload (CUDA
    events). One instance is kept: a new one replaces it, its memory released first (at
    n = 131072 the matrix alone is 64 GiB).
    """
    import cupy as cp

    dev = cp.cuda.Device().id
    held = _resident_matrix.get("entry")
    if held is not None and held[0]() is graph and held[1] == dev:
        return held[2], held[3]
    _resident_matrix.clear()
    _resident.clear()  # a bipartite graph held for another family's solvers
    cp.get_default_memory_pool().free_all_blocks()
    host = graph.weight
    d = cp.empty(host.shape, dtype=host.dtype)
    # Row blocks of at most UPLOAD_CHUNK_BYTES: cupy.asarray would stage the whole matrix in
    # pinned host memory first, a second host copy (64 GiB at n = 131072).
    rows = max(1, UPLOAD_CHUNK_BYTES // max(1, host.strides[0]))
    timer = EventTimer()
    with timer:
        for i in range(0, host.shape[0], rows):
            d[i : i + rows].set(host[i : i + rows])
    _resident_matrix["entry"] = (weakref.ref(graph), dev, d, timer.seconds)
    return d, timer.seconds


def resident_matrix(graph: Any) -> Any | None:
    """The device copy of ``graph``'s matrix if this process holds it on the current device."""
    held = _resident_matrix.get("entry")
    if held is None or held[0]() is not graph:
        return None
    import cupy as cp

    return held[2] if held[1] == cp.cuda.Device().id else None


def release_matrix() -> None:
    """Drop the shared device copy (:func:`device_matrix`)."""
    _resident_matrix.clear()



class EventTimer:
    """Time a region of the current stream with CUDA events.

    >>> t = EventTimer()             # doctest: +SKIP
    >>> with t:                      # doctest: +SKIP
    ...     launch_kernels()
    >>> t.seconds                    # doctest: +SKIP

    ``seconds`` synchronizes on the end event (one host sync, outside the timed region).
    """

    def __init__(self) -> None:
        import cupy as cp

        self._start = cp.cuda.Event()
        self._stop = cp.cuda.Event()

    def __enter__(self) -> EventTimer:
        self._start.record()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.record()

    @property
    def seconds(self) -> float:
        import cupy as cp

        self._stop.synchronize()
        return cp.cuda.get_elapsed_time(self._start, self._stop) / 1e3


class Counters:
    """Kernel launches and host syncs of one run, reported in the result rows."""

    def __init__(self) -> None:
        self.kernel_launches = 0
        self.host_syncs = 0

    def launch(self, kernel, grid, block, args, shared_mem: int = 0) -> None:
        kernel(grid, block, args, shared_mem=shared_mem)
        self.kernel_launches += 1

    def as_dict(self) -> dict[str, int]:
        return {"kernel_launches": self.kernel_launches, "host_syncs": self.host_syncs}


#: Within :func:`free_memory_read_once`: the free device memory, once read.
_FREE: ContextVar[dict[str, int] | None] = ContextVar("matchbench_free_memory", default=None)


@contextmanager
def free_memory_read_once() -> Iterator[None]:
    """Within it, :func:`free_device_memory` asks the driver once, then repeats that answer.

    For the instances of a batch, whose ``skip`` checks all come before anything of
    theirs is allocated: ``cudaMemGetInfo`` took 6-490 us a call on an H100 host, per
    instance.
    """
    token = _FREE.set({})
    try:
        yield
    finally:
        _FREE.reset(token)


def free_device_memory() -> int:
    """Free bytes on the current device (``cudaMemGetInfo``; see :func:`free_memory_read_once`).

    Raises whatever CuPy raises without a usable device.
    """
    memo = _FREE.get()
    if memo is not None and "free" in memo:
        return memo["free"]
    import cupy as cp

    free = int(cp.cuda.runtime.memGetInfo()[0])
    if memo is not None:
        memo["free"] = free
    return free


def device_memory_skip(need_bytes) -> tuple[bool, str | None]:
    """A GPU solver's ``skip``: no usable device, or less free memory than it needs.

    ``need_bytes`` is a callable returning the estimate (called only when a device is).
    """
    try:
        free = free_device_memory()
    except Exception as exc:  # no CuPy, no driver or no device
        return True, f"no usable CUDA device: {exc}"
    need = int(need_bytes())
    if need > free:
        return True, f"needs about {need} bytes of GPU memory, {free} free"
    return False, None


def gpu_usable() -> bool:
    """Whether CuPy can use a GPU in this process (False without CuPy, a driver or a device)."""
    try:
        import cupy

        return bool(cupy.is_available())
    except Exception:  # no CuPy, or a broken CUDA install
        return False


def device_info() -> dict[str, Any]:
    """GPU model, driver and runtime versions of the current device (provenance columns).

    Read once per device and process (:func:`_device_info`): ``cudaGetDeviceProperties``
    costs about a millisecond, and a batch's rows ask per instance.
    """
    import cupy as cp

    return dict(_device_info(cp.cuda.Device().id))


@functools.cache
def _device_info(device_id: int) -> dict[str, Any]:
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(device_id)
    name = props["name"]
    return {
        "gpu_model": name.decode() if isinstance(name, bytes) else str(name),
        "gpu_count": cp.cuda.runtime.getDeviceCount(),
        "cuda_driver_version": cp.cuda.runtime.driverGetVersion(),
        "cuda_runtime_version": cp.cuda.runtime.runtimeGetVersion(),
        "cupy_version": cp.__version__,
    }


def device_attributes(device_id: int | None = None) -> dict[str, int]:
    """``cupy.cuda.Device(device_id).attributes`` (default: the current device), read once
    per device and process: the property reads every attribute (over a hundred driver
    calls) each time, and solvers ask per instance (a shared-memory limit, the SM count)."""
    import cupy as cp

    return _device_attributes(cp.cuda.Device().id if device_id is None else int(device_id))


@functools.cache
def _device_attributes(device_id: int) -> dict[str, int]:
    import cupy as cp

    return dict(cp.cuda.Device(device_id).attributes)
