"""The array API as a sweep's solver: what an application calling
:func:`matchbench.lap.solve_batch <matchbench.families.lap.api.solve_batch>` waits for.

An application holds its problems as one stack on its GPU and calls ``solve_batch`` on it;
:class:`SolveBatchAPI` makes that call the timed region of a sweep (``algorithm=lap_solve_batch``
with ``run.batch``), on the same instances :class:`~matchbench.families.lap.batch_gpu.HungarianBatchGPU`
solves with CUDA events around its launch alone (the kernel-alone time). A GPU task's
bulk-made instances are blocks of one device stack, which is handed to ``solve_batch`` as it
is (a view, no copy): the stack is "already on the GPU". The call's own checks (dtype, NaN
and overflow on the device), its launch, the objective's gather and the answers' dtype
conversions are inside the timed region; with ``verify`` its device certificate too. The
sweep certifies every answer independently, from the returned duals, as for every solver.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import block_size, boolean
from matchbench.core.solver import BaseSolver
from matchbench.families.lap.problem import Assignment, CostMatrix, device_block

__all__ = ["SolveBatchAPI"]


class SolveBatchAPI(BaseSolver):
    """``matchbench.lap.solve_batch`` on a batch's stack (the array API, timed as a whole).

    Parameters
    ----------
    threads_per_block : int
        Passed to ``solve_batch``; 0 lets it pick from n (as ``hungarian_batch_gpu`` does).
    verify : bool
        Passed to ``solve_batch``: its own device certificate inside the timed call.

    Notes
    -----
    ``t_solve_s`` is the host clock around the call, the device synchronized before and
    after (what the caller waits for before it can use the answers on the device); the
    answers' copy to the host, for the sweep's certificate, is ``t_transfer_s``. One call
    needs one n and one dtype: a batch of mixed sizes raises (and the runner solves its
    instances one by one).
    """

    name: ClassVar[str] = "lap_solve_batch"
    problem: ClassVar[str] = "lap"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("lap_batch",)
    batchable: ClassVar[bool] = True

    def __init__(self, *, threads_per_block: int = 0, verify: bool = False) -> None:
        super().__init__(
            threads_per_block=block_size(f"{self.name}: threads_per_block", threads_per_block, auto=0),
            verify=boolean(f"{self.name}: verify", verify),
        )
        self._stack: Any = None
        self._count = 0
        self._result: Any = None
        self._seconds: float | None = None
        self._answers: list[Assignment] | None = None

    @staticmethod
    def estimate_bytes(instance: CostMatrix) -> int:
        """Device bytes of one instance in a call: ``hungarian_batch_gpu``'s (its costs, its
        answer and duals, its meta row and stats) and the API's int64 assignment (8 per row)
        and objective."""
        from matchbench.families.lap.batch_gpu import HungarianBatchGPU

        return int(HungarianBatchGPU.estimate_bytes(instance) + 8 * instance.n + 8)

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        from matchbench.families.lap.batch_gpu import batch_skip

        return batch_skip(instance, self.estimate_bytes)

    def prepare(self, instance: CostMatrix, init: Any | None = None) -> None:
        """A batch of one."""
        self.prepare_batch([instance])

    def prepare_batch(self, instances: list, inits: list | None = None) -> None:
        """The batch's ``(B, n, n)`` stack on the GPU (untimed): the device stack's view
        where the instances are its blocks, else one upload."""
        import cupy as cp

        instances = list(instances)
        if not instances:
            raise ValueError(f"{self.name}: prepare_batch() got no instances")
        for k, inst in enumerate(instances):
            if not isinstance(inst, CostMatrix):
                raise TypeError(f"{self.name}: instance {k} is a {type(inst).__name__}, not a CostMatrix")
        shapes = {(inst.n, np.dtype(inst.dtype)) for inst in instances}
        if len(shapes) != 1:
            raise ValueError(f"{self.name}: one call solves one n and one dtype, this batch has {sorted(map(str, shapes))}")
        self._stack = None
        stack = device_block(instances)
        self._stack = stack if stack is not None else cp.asarray(np.stack([inst.costs for inst in instances]))
        self._count = len(instances)
        self._result = self._seconds = self._answers = None
        cp.cuda.get_current_stream().synchronize()

    def run(self) -> None:
        import cupy as cp

        from matchbench.families.lap.api import solve_batch

        if self._stack is None:
            raise RuntimeError(f"{self.name}: run() before prepare_batch()")
        stream = cp.cuda.get_current_stream()
        stream.synchronize()
        t0 = time.perf_counter()
        self._result = solve_batch(
            self._stack, verify=self.params["verify"], threads_per_block=self.params["threads_per_block"] or None
        )
        stream.synchronize()
        self._seconds = time.perf_counter() - t0
        self._answers = None

    def result(self) -> Assignment:
        return self.result_batch()[0]

    def result_batch(self) -> list[Assignment]:
        if self._answers is not None:
            return self._answers
        if self._result is None:
            raise RuntimeError(f"{self.name}: result_batch() before run()")
        r = self._result
        a, u, v = r.assignment.get(), r.u.get(), r.v.get()
        self._answers = [Assignment(a[k].astype(np.int32), u[k], v[k]) for k in range(self._count)]
        return self._answers

    def timings(self) -> dict[str, float]:
        return {} if self._seconds is None else {"solve": self._seconds}

    def counters(self) -> dict[str, int]:
        return {"batch_size": self._count} if self._seconds is not None else {}
