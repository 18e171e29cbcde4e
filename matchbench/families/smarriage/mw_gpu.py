"""Stable marriage on the GPU (``kernels/smarriage/smarriage.cu``): McVitie-Wilson, a warp per man.

:class:`MWGPU` (``mw_gpu``): Manne, Naim, Lerring & Halappanavar, *On stable marriages and
greedy matchings*, CSC 2016 (paper IV of Naim's 2017 thesis), the GPU McVitie-Wilson. Each
woman holds a packed (rank, man) suitor word updated by ``atomicMin``. A hopeless woman
(one who already holds a better word) is passed without an atomic. A warp scans 32
entries of a man's list at a time and carries on with every man it displaces. The race
argument is in the kernel file's header. The answer is the man-optimal stable matching,
pair for pair that of ``gs``.
"""

from __future__ import annotations

import time
import weakref
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import block_size, choice
from matchbench.core.solver import BaseSolver
from matchbench.families.smarriage.problem import SMatching

#: Slots of the kernel's stats array.
PROPOSALS, SCANNED, DISPLACED = 0, 1, 2
#: ``master_kernel`` values (the class docstring).
MASTER_KERNELS = ("fast", "lists")


class MWGPU(BaseSolver):
    """McVitie-Wilson on the GPU, one warp per man, lock-free suitor words.

    Parameters
    ----------
    threads_per_block : int
        A multiple of 32 in [32, 1024].
    master_kernel : {"fast", "lists"}
        The kernel for master-list instances (the hard ones). ``fast``:
        ``smarriage_mw_master``, where a displaced man goes on from where he was displaced,
        on the suitor words the warp already holds (the kernel file's header). ``lists``:
        the lists kernel's protocol (``nxt`` hand-over), for comparison. Other instances
        always run the lists kernel.

    Notes
    -----
    Counters: ``proposals`` (women considered, hopeless ones included: the CPU solvers'
    count, checked by the certificate), ``atomics`` (``atomicMin`` calls issued, i.e.
    proposals not skipped as hopeless), ``displaced``, ``pairs``, ``kernel_launches``,
    ``host_syncs`` (0).
    Men and women must number below 2^32 (the suitor word packs a man in 32 bits).
    """

    name: ClassVar[str] = "mw_gpu"
    problem: ClassVar[str] = "smarriage"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("smarriage",)

    def __init__(self, *, threads_per_block: int, master_kernel: str) -> None:
        super().__init__(
            threads_per_block=block_size("threads_per_block", threads_per_block),
            master_kernel=choice("mw_gpu: master_kernel", master_kernel, MASTER_KERNELS),
        )
        self._state: dict[str, Any] | None = None
        self._ran = False
        self._t_solve = self._t_transfer = float("nan")
        self._counters: dict[str, int | float] = {}

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        if max(instance.n_men, instance.n_women) >= 2**32:
            return True, f"mw_gpu packs a man into 32 bits; {instance.name} has {instance.n_men} men"
        from matchbench.gpu.common import device_memory_skip

        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def estimate_bytes(self, instance: Any) -> int:
        arrays = [instance.mlist, instance.mrank] + ([] if instance.master else [instance.mptr])
        isz = np.dtype(instance.mlist.dtype).itemsize
        return int(sum(a.nbytes for a in arrays)) + 8 * instance.n_women + 2 * isz * instance.n_men

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        import cupy as cp

        from matchbench.gpu.common import EventTimer
        from matchbench.gpu.kernels import get_module

        st = self._state
        if st is None or st["instance"]() is not instance or st["device"] != cp.cuda.Device().id:
            self._state = None
            idx = np.dtype(instance.mlist.dtype)
            module = get_module("smarriage", ("-DMB_INDEX64",) if idx == np.int64 else ())
            timer = EventTimer()
            with timer:
                d_mptr = cp.asarray(instance.mptr if not instance.master else np.zeros(1, dtype=idx))
                d_mlist = cp.asarray(instance.mlist)
                d_mrank = cp.asarray(np.ascontiguousarray(instance.mrank, dtype=np.int32))
            st = self._state = {
                "instance": weakref.ref(instance),
                "device": cp.cuda.Device().id,
                "idx": idx,
                "n_men": int(instance.n_men),
                "n_women": int(instance.n_women),
                "master": bool(instance.master),
                "mptr": d_mptr,
                "mlist": d_mlist,
                "mrank": d_mrank,
                "S": cp.empty(max(int(instance.n_women), 1), dtype=np.uint64),
                "nxt": cp.empty(max(int(instance.n_men), 1), dtype=idx),
                "wife": cp.empty(max(int(instance.n_men), 1), dtype=idx),
                "stats": cp.zeros(3, dtype=np.uint64),
                "kernels": {
                    k: module.get_function(k)
                    for k in ("smarriage_reset", "smarriage_mw", "smarriage_mw_master", "smarriage_wives")
                },
                "upload_s": timer.seconds,
            }
            self._launch(st)  # warm-up: loads the kernels outside the timed region
            cp.cuda.get_current_stream().synchronize()
        self._ran = False
        self._t_solve = self._t_transfer = float("nan")
        self._counters = {}

    def _i(self, st: dict[str, Any], v: int) -> Any:
        return np.int64(v) if st["idx"] == np.int64 else np.int32(v)

    def _launch(self, st: dict[str, Any]) -> None:
        k = st["kernels"]
        tpb = self.params["threads_per_block"]
        n_men, n_women = st["n_men"], st["n_women"]
        st["stats"].fill(0)
        st["wife"].fill(-1)
        grid = max(1, min(-(-max(n_men, n_women) // 256), 1 << 16))
        k["smarriage_reset"]((grid,), (256,), (st["S"], self._i(st, n_women), st["nxt"], self._i(st, n_men)))
        if n_men:
            warps_per_block = tpb // 32
            blocks = max(1, min(-(-n_men // warps_per_block), 1 << 20))
            if st["master"] and self.params["master_kernel"] == "fast":
                k["smarriage_mw_master"](
                    (blocks,), (tpb,),
                    (st["mlist"], st["mrank"], self._i(st, n_men), self._i(st, n_women), st["S"], st["stats"]),
                )
            else:
                k["smarriage_mw"](
                    (blocks,), (tpb,),
                    (st["mptr"], st["mlist"], st["mrank"], np.int32(st["master"]), self._i(st, n_men),
                     self._i(st, n_women), st["S"], st["nxt"], st["stats"]),
                )
        k["smarriage_wives"]((grid,), (256,), (st["S"], self._i(st, n_women), st["wife"]))

    def run(self) -> None:
        from matchbench.gpu.common import EventTimer

        st = self._require()
        timer = EventTimer()
        with timer:
            self._launch(st)
        self._t_solve = timer.seconds
        s = st["stats"].get()
        self._counters = {
            "proposals": int(s[SCANNED]),
            "atomics": int(s[PROPOSALS]),
            "displaced": int(s[DISPLACED]),
            "kernel_launches": 5 if st["n_men"] else 4,  # 2 fills, reset, solve, wives
            "host_syncs": 0,
        }
        self._ran = True

    def result(self) -> SMatching:
        import cupy as cp

        st = self._require()
        if not self._ran:
            raise RuntimeError(f"{self.name}: result() before run()")
        t0 = time.perf_counter()
        cp.cuda.get_current_stream().synchronize()
        wife = st["wife"][: st["n_men"]].get().astype(np.int64)
        self._t_transfer = time.perf_counter() - t0
        self._counters["pairs"] = int((wife >= 0).sum())
        return SMatching(wife, proposals=int(self._counters["proposals"]))

    def timings(self) -> dict[str, float]:
        out = {"solve": self._t_solve, "transfer": self._t_transfer}
        if self._state is not None:
            out["upload"] = self._state["upload_s"]
        return out

    def counters(self) -> dict[str, int | float]:
        return dict(self._counters)

    def _require(self) -> dict[str, Any]:
        if self._state is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        return self._state
