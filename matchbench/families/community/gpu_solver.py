"""The life cycle the GPU community solvers share (``louvain_gpu``, ``leiden_gpu``).

A solver uploads its instance once (``prepare``; ``timings()["upload"]``), warms its
kernels and CuPy's on a small graph the first time (untimed), runs the whole method under
CUDA events (``run``; ``solve`` and the method's own stage times) and copies the answer back
(``result``; ``transfer``). What differs between the methods is behind four hooks:
:meth:`DeviceCommunitySolver._kernels`, :meth:`~DeviceCommunitySolver._device_run`,
:meth:`~DeviceCommunitySolver._warm_graph` and :meth:`~DeviceCommunitySolver._finish`.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from matchbench.core.solver import BaseSolver
from matchbench.families.community.problem import Partition

#: community ids are int32 on the device
INT32_MAX = 2**31 - 1


@dataclass(eq=False)
class _State:
    instance: Any  # weakref to the host graph
    device_id: int
    n: int
    ptr: Any
    ind: Any
    w: Any
    upload_s: float
    kern: dict[str, Any]
    sms: int


def sm_count() -> int:
    """The current device's SM count."""
    from matchbench.gpu.common import device_attributes

    return int(device_attributes()["MultiProcessorCount"])


class DeviceCommunitySolver(BaseSolver):
    """A community solver that runs a whole method on the current GPU (module docstring).

    Subclasses give :meth:`_kernels` (the method's compiled kernels by name),
    :meth:`_device_run` (the method on a graph already on the device: a run with
    ``community``, ``levels`` (device arrays), ``outcome``, ``seconds`` (stage times),
    ``counters`` and ``peak``), :meth:`_warm_graph`, :meth:`_finish` (the answer and
    counters from the host copies) and :meth:`estimate_bytes`.
    """

    problem: ClassVar[str] = "community"
    device: ClassVar[str] = "gpu"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._state: _State | None = None
        self._warm = False
        self._run: Any = None
        self._answer: Partition | None = None
        self._counters: dict[str, Any] = {}
        self._timings: dict[str, float] = {}

    # -- hooks -----------------------------------------------------------------------

    def _kernels(self) -> dict[str, Any]:
        raise NotImplementedError

    def _device_run(self, kern: dict[str, Any], sms: int, n: int, ptr: Any, ind: Any, w: Any,
                    loop: Any, warm: bool = False) -> Any:
        raise NotImplementedError

    @staticmethod
    def _warm_graph() -> Any:
        raise NotImplementedError

    def _finish(self, run: Any, community: np.ndarray, levels: list[np.ndarray]
                ) -> tuple[Partition, dict[str, Any]]:
        raise NotImplementedError

    def _empty(self) -> tuple[Partition, dict[str, Any]]:
        raise NotImplementedError

    def estimate_bytes(self, instance: Any) -> int:
        raise NotImplementedError

    # -- contract --------------------------------------------------------------------

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        from matchbench.gpu.common import device_memory_skip

        if int(instance.n) > INT32_MAX:
            return True, f"{self.name}: {instance.n} vertices; community ids are int32"
        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        import cupy as cp

        from matchbench.gpu.common import EventTimer

        st = self._state
        dev = cp.cuda.Device().id
        if st is None or st.instance() is not instance or st.device_id != dev:
            self._state = None  # the previous instance's arrays go first
            if int(instance.n) > INT32_MAX:
                raise ValueError(f"{self.name}: {instance.n} vertices; ids are int32")
            kern = self._kernels()
            timer = EventTimer()
            with timer:
                ptr = cp.asarray(np.ascontiguousarray(instance.ptr, dtype=np.int64))
                ind = cp.asarray(np.ascontiguousarray(instance.ind, dtype=np.int32))
                w = cp.asarray(np.ascontiguousarray(instance.weight, dtype=np.float64))
            st = self._state = _State(weakref.ref(instance), dev, int(instance.n), ptr, ind, w,
                                      timer.seconds, kern, sm_count())
        if not self._warm:  # loads the kernels and CuPy's, untimed
            g = self._warm_graph()
            self._device_run(st.kern, st.sms, g.n, cp.asarray(g.ptr.astype(np.int64)),
                             cp.asarray(g.ind.astype(np.int32)), cp.asarray(g.weight),
                             cp.zeros(g.n), warm=True)
            self._warm = True
        cp.cuda.get_current_stream().synchronize()
        self._run = None
        self._answer = None
        self._counters = {}
        self._timings = {}

    def run(self) -> None:
        import cupy as cp

        from matchbench.gpu.common import EventTimer

        st = self._state
        if st is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        self._answer = None
        if st.n == 0:
            self._answer, self._counters = self._empty()
            self._timings = {"solve": 0.0, "upload": st.upload_s}
            return
        timer = EventTimer()
        with timer:
            loop = cp.zeros(st.n, dtype=cp.float64)
            run = self._device_run(st.kern, st.sms, st.n, st.ptr, st.ind, st.w, loop)
        self._timings = dict(run.seconds, solve=timer.seconds, upload=st.upload_s)
        self._run = run

    def result(self) -> Partition:
        import cupy as cp

        if self._answer is not None:
            return self._answer
        if self._run is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        t0 = time.perf_counter()
        cp.cuda.get_current_stream().synchronize()
        run = self._run
        community = run.community.get().astype(np.int64)
        levels = [lab.get().astype(np.int64) for lab in run.levels]
        self._timings["transfer"] = time.perf_counter() - t0
        self._answer, self._counters = self._finish(run, community, levels)
        return self._answer

    def timings(self) -> dict[str, float]:
        return dict(self._timings)

    def counters(self) -> dict[str, Any]:
        if self._run is not None and not self._counters:
            self.result()  # the counters need the partition's community count
        return dict(self._counters)

    def memory_peak_bytes(self) -> int | None:
        """The largest CuPy pool ``used_bytes`` seen during the last run (sampled by the
        method at its peaks: after each level's setup and around its aggregation)."""
        return None if self._run is None else int(self._run.peak) or None
