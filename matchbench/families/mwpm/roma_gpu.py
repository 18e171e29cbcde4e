"""Parallel ROMA on the GPU (``kernels/mwpm/roma.cu``): Parallel ROMA 1 and 2 of Hovland 2020.

:class:`Roma1GPU` (``roma1_gpu``) runs Alg. 6 as the phase kernel, a thread per matched edge
scanning the other matched edges serially; :class:`Roma2GPU` (``roma2_gpu``) runs Alg. 8, a
block per matched edge whose threads scan block-strided and reduce to the best flip. Both
flip through atomicFlip (Alg. 7) and share the host loop of Alg. 9, here in
:meth:`_RomaGPU.run`: a launch per phase, the device's flip counter read back, a stop at a
phase without flips (``converged``) or after ``max_phases``.

The kernel file's header holds the correctness argument (with the one check strengthened
beyond the text, and why). Between phases, outside the timed region, a check kernel
confirms that ``M`` is a perfect matching and every lock is released; a failure raises
(the row becomes an error naming the phase), so no phase's matching goes unchecked. The
weight after each phase is recomputed from ``M`` on the device (float64 gather and sum) for
the per-phase table.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import block_size, choice, non_negative_float, non_negative_int
from matchbench.core.solver import BaseSolver
from matchbench.families.mwpm.init import neighbour_matching
from matchbench.families.mwpm.problem import CompleteGraph, PerfectMatching
from matchbench.gpu.common import device_matrix, resident_matrix

#: Slots of the kernel's stats array (kernels/mwpm/roma.cu).
FLIPS, ATTEMPTS, GAIN = 0, 1, 2

class _RomaGPU(BaseSolver):
    """The host loop of Parallel ROMA (Alg. 9), shared by both phase kernels.

    Parameters
    ----------
    max_phases : int
        At most this many phases (Alg. 9's ``k``, default 8).
    threshold : float
        A flip is attempted only when it gains more than this (default 1e-5, Sec. 5.5.4).
    threads_per_block : int
        A multiple of 32 in [32, 1024] (default 1024, the thesis's choice for both).
    on_fail : {"wait", "rescan"}
        ``roma2_gpu`` only: what a block does when its atomicFlip fails. ``wait`` for the
        next phase (the thesis's choice, Sec. 4.1.2) or ``rescan``: search the matched
        edges one more time and try that flip (the alternative of Fig. 5.7).

    Notes
    -----
    Counters: ``phases`` (the ``iterations`` column), ``flips`` and ``attempts`` (applied
    flips and atomicFlip calls, all phases), ``converged``, ``weight_init`` and ``weight``
    (float64, recomputed from ``M``), ``threshold``, ``kernel_launches``, ``host_syncs`` (one
    per phase: the flip counter, Alg. 9 line 9), ``phase_checks`` (phases whose matching and
    locks were checked on the device), and ``per_phase``: ``{"phase", "flips", "attempts",
    "gain", "weight", "t_s"}`` per phase (the gain is the device's sum of the applied flips'
    gains; the weight is recomputed after the phase). Timings: ``solve`` (the phases:
    memset, kernel and flip read-back of each, wall clock with syncs), ``phase_<i>``,
    ``upload``, ``transfer`` (``M`` back to the host).
    """

    problem: ClassVar[str] = "mwpm"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("roma",)
    _kernel: ClassVar[str]
    _on_fail: ClassVar[tuple[str, ...]] = ("wait",)

    def __init__(
        self,
        *,
        max_phases: int,
        threshold: float,
        threads_per_block: int,
        on_fail: str | None = None,
    ) -> None:
        if on_fail is None and len(self._on_fail) == 1:  # roma1_gpu's one choice, unconfigured
            on_fail = self._on_fail[0]
        self.max_phases = non_negative_int(f"{self.name}: max_phases", max_phases)
        self.threshold = non_negative_float(f"{self.name}: threshold", threshold)
        self.tpb = block_size(f"{self.name}: threads_per_block", threads_per_block)
        self.on_fail = choice(f"{self.name}: on_fail", on_fail, self._on_fail)
        params = dict(max_phases=max_phases, threshold=threshold, threads_per_block=self.tpb)
        if self.name == "roma2_gpu":
            params["on_fail"] = on_fail
        super().__init__(**params)
        self._st: dict[str, Any] | None = None
        self._answer: PerfectMatching | None = None
        self._counters: dict[str, Any] = {}
        self._timings: dict[str, float] = {}

    def estimate_bytes(self, instance: CompleteGraph) -> int:
        n = instance.n
        return 4 * n * n + 16 * n + 64

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        from matchbench.gpu.common import device_memory_skip

        if resident_matrix(instance) is not None:
            return False, None  # already resident: the estimate would count it twice
        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def prepare(self, instance: CompleteGraph, init: Any | None = None) -> None:
        import cupy as cp

        from matchbench.gpu.kernels import get_module

        if init is None:
            mate = neighbour_matching(instance.n)
        else:
            mate = np.asarray(init.mate if isinstance(init, PerfectMatching) else init)
            if mate.shape != (instance.n,):
                raise ValueError(
                    f"{self.name}: the initial matching has shape {mate.shape}, "
                    f"expected ({instance.n},)"
                )
        w, upload_s = device_matrix(instance)
        st = self._st
        if st is None or st["w"] is not w:
            module = get_module("roma")
            st = self._st = {
                "w": w,
                "n": int(instance.n),
                "phase": module.get_function(self._kernel),
                "check": module.get_function("roma_check"),
                "locks": cp.full(instance.n, -1, dtype=np.int32),
                "stats": cp.zeros(3, dtype=np.uint64),
                "bad": cp.zeros(2, dtype=np.uint64),
                "upload_s": upload_s,
            }
        st["M"] = cp.asarray(mate.astype(np.int32))
        st["locks"].fill(-1)
        cp.cuda.get_current_stream().synchronize()
        self._answer = None
        self._counters = {}
        self._timings = {}

    def _grid(self, n: int) -> tuple[int, int]:
        raise NotImplementedError

    def _weight(self, st: dict[str, Any]) -> float:
        """Float64 weight of ``M`` on the device (instrumentation, outside the timed loop)."""
        import cupy as cp

        n, M = st["n"], st["M"]
        v = cp.arange(n, dtype=np.int64)
        sel = M > v
        flat = st["w"].ravel()
        return float(flat[v[sel] * n + M[sel].astype(np.int64)].astype(np.float64).sum())

    def _check(self, st: dict[str, Any], phase: int) -> None:
        st["bad"].fill(0)
        n = st["n"]
        grid = max(1, min(-(-n // 256), 4096))
        st["check"]((grid,), (256,), (st["M"], st["locks"], np.int64(n), st["bad"]))
        bad = st["bad"].get()
        if bad[0] or bad[1]:
            raise RuntimeError(
                f"{self.name}: after phase {phase} the matching is not perfect at {int(bad[0])} "
                f"vertices and {int(bad[1])} locks are still held (a kernel bug)"
            )

    def run(self) -> None:
        if self._st is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        st = self._st
        n = st["n"]
        grid, block = self._grid(n)
        args_tail: tuple[Any, ...] = (np.int64(n), np.float64(self.threshold), st["stats"])
        if self.name == "roma2_gpu":
            args_tail += (np.int32(1 if self.on_fail == "rescan" else 0),)
        weight_init = weight = self._weight(st)
        per_phase: list[dict[str, Any]] = []
        converged = False
        flips_total = attempts_total = 0
        solve = 0.0
        launches = 0
        checks = 0
        for phase in range(self.max_phases):  # Alg. 9 lines 6-10
            t0 = time.perf_counter()
            st["stats"].fill(0)  # line 7
            st["phase"]((grid,), (block,), (st["w"], st["M"], st["locks"]) + args_tail)  # line 8
            s = st["stats"].get()  # line 9 (the phase's one host sync)
            t = time.perf_counter() - t0
            launches += 2
            solve += t
            flips, attempts = int(s[FLIPS]), int(s[ATTEMPTS])
            gain = float(np.array([s[GAIN]], dtype=np.uint64).view(np.float64)[0])
            self._check(st, phase)
            checks += 1
            weight = self._weight(st)
            per_phase.append(
                {"phase": phase, "flips": flips, "attempts": attempts, "gain": gain,
                 "weight": weight, "t_s": t}
            )
            self._timings[f"phase_{phase}"] = t
            flips_total += flips
            attempts_total += attempts
            if flips == 0:
                converged = True
                break
        t0 = time.perf_counter()
        mate = st["M"].get().astype(np.int64)
        self._timings["transfer"] = time.perf_counter() - t0
        self._timings["solve"] = solve
        self._timings["upload"] = st["upload_s"]
        self._counters = {
            "phases": len(per_phase),
            "flips": flips_total,
            "attempts": attempts_total,
            "converged": converged,
            "weight_init": weight_init,
            "weight": weight,
            "threshold": self.threshold,
            "kernel_launches": launches,
            "host_syncs": len(per_phase),
            "phase_checks": checks,
            "per_phase": per_phase,
        }
        self._answer = PerfectMatching(mate, converged=converged, threshold=self.threshold)

    def result(self) -> PerfectMatching:
        if self._answer is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        return self._answer

    def counters(self) -> dict[str, Any]:
        return dict(self._counters)

    def timings(self) -> dict[str, float]:
        return dict(self._timings)


class Roma1GPU(_RomaGPU):
    """Parallel ROMA 1 (``roma1_gpu``): Alg. 9 with Alg. 6, a thread per matched edge.

    ``n / threads_per_block`` blocks (rounded up); the threads with ``u < M[u]`` each run
    Alg. 5's serial scan over the other matched edges, then atomicFlip (Alg. 7). Slow by
    design (a warp reads 32 rows at one column: a sector per lane), the thesis's first
    version, kept for its comparison.
    """

    name: ClassVar[str] = "roma1_gpu"
    _kernel: ClassVar[str] = "roma_phase1"

    def _grid(self, n: int) -> tuple[int, int]:
        return -(-n // self.tpb), self.tpb


class Roma2GPU(_RomaGPU):
    """Parallel ROMA 2 (``roma2_gpu``): Alg. 9 with Alg. 8, a block per matched edge.

    ``n`` blocks of ``threads_per_block`` threads (the blocks of vertices with ``u > M[u]``
    return at once); each block scans the matched edges block-strided, reduces to its best
    flip, and its thread 0 calls atomicFlip once (``on_fail="wait"``; ``"rescan"``: after a
    failure the block searches once more and tries again).
    """

    name: ClassVar[str] = "roma2_gpu"
    _kernel: ClassVar[str] = "roma_phase2"
    _on_fail: ClassVar[tuple[str, ...]] = ("wait", "rescan")

    def _grid(self, n: int) -> tuple[int, int]:
        return n, self.tpb
