"""A dataset that counts its loads and a solver that fails as CuPy does, for the fault tests
(``tests/test_runner_faults.py``).

Imported by task processes through ``PYTHONPATH`` (the tests put ``tests/`` on it).
"""

from __future__ import annotations

import os

from _faulty_solvers import Faulty

from matchbench.datasets import dataset
from matchbench.graphs.generators import erdos_renyi


@dataset("mcm")
def counted_er(scale: int, seed: int = 1, log: str = "") -> object:
    """``erdos_renyi(scale, seed=seed)``, noting each call (with the process id) in ``log``.

    Not disk-cached: every call that the per-process instance cache does not answer
    generates the graph again, and says so in ``log``.
    """
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"{os.getpid()}\n")
    return erdos_renyi(scale, avg_degree=3.0, seed=seed)


class CupyOutOfMemory(Faulty):
    """Solves correctly, except that repetition ``at`` raises CuPy's own out-of-memory error
    (``cupy.cuda.memory.OutOfMemoryError``, made without a device), as a GPU solver's
    allocation does when the device is full."""

    name = "cupy_oom"

    def __init__(self, at: int = 0, nbytes: int = 1 << 30) -> None:
        super().__init__(mode="none", at=at)
        self.params = {"at": at, "nbytes": nbytes}
        self.nbytes = nbytes

    def run(self) -> None:
        rep = self.calls  # the repetition of this call, as Faulty.run counts them
        if rep == self.at:
            import cupy

            self.calls += 1
            raise cupy.cuda.memory.OutOfMemoryError(self.nbytes, 3 << 20, 0)
        super().run()


class DeviceHog(Faulty):
    """A GPU solver that holds ``share`` of the device's memory from ``prepare`` on (its
    ``estimate_bytes``, checked by ``skip`` against the free memory) and, at repetition
    ``oom_at``, asks for twice the device: CuPy's out-of-memory error, with its first
    allocation still held. Solves on the host."""

    name = "device_hog"
    device = "gpu"

    def __init__(self, share: float = 0.6, oom_at: int | None = None) -> None:
        super().__init__(mode="none")
        self.params = {"share": share, "oom_at": oom_at}
        self.share, self.oom_at = share, oom_at
        self.hog = None

    @staticmethod
    def _total() -> int:
        import cupy

        return int(cupy.cuda.Device().mem_info[1])

    def estimate_bytes(self, graph) -> int:
        return int(self.share * self._total())

    def skip(self, graph):
        from matchbench.gpu.common import device_memory_skip

        return device_memory_skip(lambda: self.estimate_bytes(graph))

    def prepare(self, graph, init=None) -> None:
        import cupy

        self.graph, self.hog = graph, None
        self.hog = cupy.empty(self.estimate_bytes(graph), dtype=cupy.uint8)

    def run(self) -> None:
        rep = self.calls  # as Faulty.run counts them
        if rep == self.oom_at:
            import cupy

            self.calls += 1
            cupy.empty(2 * self._total(), dtype=cupy.uint8)
        super().run()


#: A kernel that never returns (the flag it waits for is never set).
SPIN = r"""
extern "C" __global__ void fault_spin(volatile int* flag) {
    while (*flag == 0) { }
}
"""


class Spinner(Faulty):
    """A GPU solver whose repetition ``at`` launches a kernel that never returns and waits
    for it; the other repetitions solve on the host after a small device computation."""

    name = "spinner"
    device = "gpu"

    def __init__(self, at: int | None = 0) -> None:
        super().__init__(mode="none")
        self.params = {"at": at}
        self.spin_at = at

    def run(self) -> None:
        import cupy

        rep = self.calls
        if rep == self.spin_at:
            self.calls += 1
            flag = cupy.zeros(1, dtype=cupy.int32)
            cupy.RawKernel(SPIN, "fault_spin")((1,), (1,), (flag,))
            cupy.cuda.Device().synchronize()  # never returns
        assert int(cupy.arange(1000).sum()) == 499500  # the device works
        super().run()
