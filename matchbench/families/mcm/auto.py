"""``mcm_gpu``: maximum matching on the GPU for a user who does not want to pick a solver.

It starts like any GPU solver of the family (from ``init=cheap_gpu`` on the device, or
from the cheap matching uploaded from the host), reads two cheap statistics of the graph
and of that matching in one small kernel, and hands the matching, on the device, to the
solver the rule picks: G-PR (:class:`~matchbench.families.mcm.gpr.GPR`), APFB or APsB
(:mod:`matchbench.families.mcm.apfb`), each with its defaults. Its times include the
statistics, the choice and the hand-over: ``t_e2e_s`` is what the user waits for.

The rule and the instances it was fitted on are in ``docs/benchmarks/mcm_e2e.md``; the
instances it is judged on there are others (held back).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import choice, configured, non_negative_float
from matchbench.core.solver import BaseSolver

CANDIDATES = ("gpr", "apfb", "apsb")


def choose(
    *,
    max_degree: int,
    n_edges: int,
    nonempty: int,
    matched: int,
    near: int,
    skew_min: float,
    ordered_min: float,
    deficiency_max: float,
    skewed: str,
    low: str,
    high: str,
) -> tuple[str, dict[str, float]]:
    """The rule of :class:`MCMAuto`: the solver's name and the statistics it looked at.

    ``skew`` is the largest column degree over the mean degree of the columns that have an
    edge; ``ordered`` the share of those columns with a row numbered close to their own
    (``mcm_init_stats``: a graph numbered along its geometry); ``deficiency`` the share of
    them the initial matching left unmatched. A skewed graph (``skew >= skew_min``:
    scale-free, Kronecker) goes to ``skewed``; an ordered one (``ordered >= ordered_min``)
    whose deficiency is at most ``deficiency_max`` to ``low``; every other to ``high``.

    >>> kw = dict(skew_min=20, ordered_min=0.5, deficiency_max=0.075, skewed="gpr",
    ...           low="apsb", high="apfb")
    >>> choose(max_degree=5000, n_edges=10**7, nonempty=10**5, matched=4 * 10**4, near=0, **kw)[0]
    'gpr'
    >>> choose(max_degree=12, n_edges=6 * 10**6, nonempty=10**6, matched=94 * 10**4,
    ...        near=10**6, **kw)[0]
    'apsb'
    >>> choose(max_degree=12, n_edges=6 * 10**6, nonempty=10**6, matched=94 * 10**4,
    ...        near=10, **kw)[0]
    'apfb'
    """
    mean = n_edges / nonempty if nonempty else 0.0
    skew = max_degree / mean if mean else 0.0
    ordered = near / nonempty if nonempty else 0.0
    deficiency = (nonempty - matched) / nonempty if nonempty else 0.0
    stats = {"skew": skew, "ordered": ordered, "deficiency": deficiency}
    if skew >= skew_min:
        return skewed, stats
    if ordered >= ordered_min and deficiency <= deficiency_max:
        return low, stats
    return high, stats


class MCMAuto(BaseSolver):
    """Picks G-PR, APFB or APsB from cheap statistics, on the device, and runs it.

    Parameters
    ----------
    skew_min : float
        Graphs whose largest column degree is at least this many times the mean are
        "skewed" (scale-free).
    ordered_min : float
        Graphs where at least this share of the non-empty columns has a row numbered
        within 32 of its own (among its first 32 entries) are "ordered": numbered along
        their geometry, as meshes in their natural order are.
    deficiency_max : float
        On ordered graphs: the largest share of unmatched non-empty columns after the
        initializer for which ``low`` is picked.
    skewed, low, high : {"gpr", "apfb", "apsb"}
        The solver for skewed graphs, for ordered ones with a small deficiency, and for
        all others, each with its defaults (``conf/algorithm/<name>.yaml``).

    Notes
    -----
    The statistics cost one kernel over the column pointers, the first entries of each
    list and the mates (``mcm_init_stats``) and one host read; the hand-over one
    device-to-device copy of the mate arrays. Measured on the held-back instances the
    rule was fitted on (experiment ``mcm_auto_train``, ``docs/benchmarks/mcm_e2e.md``),
    from ``cheap_gpu``: G-PR wins on the Kronecker graphs (skew 477-741; every other
    instance below 5); APsB on the meshes in their natural order (ordered share near 1)
    whose initial matching leaves at most 6% of the columns unmatched, where the
    remaining augmenting paths are short and local; APFB on the randomly permuted meshes
    (ordered share near 0) and on the road-like graphs (9-11% unmatched, ordered or not).
    """

    name: ClassVar[str] = "mcm_gpu"
    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("apfb", "gpr", "mcm_init")
    device_init: ClassVar[bool] = True

    def __init__(
        self,
        *,
        skew_min: float,
        ordered_min: float,
        deficiency_max: float,
        skewed: str,
        low: str,
        high: str,
    ) -> None:
        super().__init__(
            skew_min=non_negative_float("skew_min", skew_min),
            ordered_min=non_negative_float("ordered_min", ordered_min),
            deficiency_max=non_negative_float("deficiency_max", deficiency_max),
            skewed=choice("skewed", skewed, CANDIDATES),
            low=choice("low", low, CANDIDATES),
            high=choice("high", high, CANDIDATES),
        )
        self._subs: dict[str, Any] = {}
        self._instance: Any = None
        self._dinit: Any = None
        self._rm = self._cm = self._stats = None
        self._hand: Any = None
        self._chosen: str | None = None
        self._t: dict[str, float] = {}
        self._counters: dict[str, Any] = {}

    # -- contract -------------------------------------------------------------------

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        from matchbench.gpu.common import device_memory_skip

        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def estimate_bytes(self, instance: Any) -> int:
        """The graph once (shared) plus each candidate's own arrays."""
        graph = int(instance.nbytes)
        own = sum(self._make(name).estimate_bytes(instance) - graph for name in self._names())
        item = np.dtype(instance.col_ptr.dtype).itemsize
        return graph + own + item * (int(instance.n_rows) + int(instance.n_cols))

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        import cupy as cp

        from matchbench.families.mcm.init_gpu import DeviceMatching
        from matchbench.gpu.common import DeviceBipartite

        dt = np.dtype(instance.col_ptr.dtype)
        if self._instance is not instance:
            self._subs, self._instance = {}, None  # let the previous instance's arrays go
            graph = DeviceBipartite.resident(instance)
            self._rm = cp.full(int(instance.n_rows), -1, dtype=dt)
            self._cm = cp.full(int(instance.n_cols), -1, dtype=dt)
            self._stats = cp.zeros(4, dtype=np.uint64)
            self._hand = DeviceMatching(self._rm, self._cm)
            self._subs = {name: self._make(name) for name in self._names()}
            self._graph, self._instance = graph, instance
        self._dinit = init if getattr(init, "device", None) == "gpu" else None
        if self._dinit is not None:
            self._dinit.attach(int(instance.n_rows), int(instance.n_cols), dt)
        elif init is None:
            self._rm.fill(-1)
            self._cm.fill(-1)
        else:
            self._rm.set(np.ascontiguousarray(init.row_match, dtype=dt))
            self._cm.set(np.ascontiguousarray(init.col_match, dtype=dt))
        for sub in self._subs.values():
            sub.prepare(instance, self._hand)
        cp.cuda.Device().synchronize()
        self._chosen, self._t, self._counters = None, {}, {}

    def run(self) -> None:
        from matchbench.families.mcm.init_gpu import launch_stats
        from matchbench.gpu.common import EventTimer

        g = self._graph
        init_timer = EventTimer() if self._dinit is not None else None
        init_launches = 0
        if init_timer is not None:
            with init_timer:
                init_launches = self._dinit.launch(
                    col_ptr=g.col_ptr, col_ind=g.col_ind, row_ptr=g.row_ptr,
                    row_ind=g.row_ind, row_match=self._rm, col_match=self._cm,
                )
        timer, select = EventTimer(), EventTimer()
        with timer:
            with select:
                launch_stats(g.col_ptr, g.col_ind, self._cm, self._stats)
                matched, max_degree, nonempty, near = (int(x) for x in self._stats.get())
                p = self.params
                chosen, stats = choose(
                    max_degree=max_degree, n_edges=int(g.n_edges), nonempty=nonempty,
                    matched=matched, near=near, skew_min=p["skew_min"],
                    ordered_min=p["ordered_min"], deficiency_max=p["deficiency_max"],
                    skewed=p["skewed"], low=p["low"], high=p["high"],
                )
            self._hand.matched = matched
            sub = self._subs[chosen]
            sub.run()
        self._chosen = chosen
        sub_t = sub.timings()
        self._t = {
            "solve": timer.seconds,
            "select": select.seconds,
            "handover": sub_t.get("init", float("nan")),
            "chosen_solve": sub_t.get("solve", float("nan")),
            "upload": g.upload_s,
        }
        if init_timer is not None:
            self._t["init"] = init_timer.seconds
        counters = {k: v for k, v in sub.counters().items() if not k.startswith("init_")}
        counters.update(
            choice=chosen, skew=stats["skew"], ordered=stats["ordered"],
            deficiency=stats["deficiency"],
            max_degree=max_degree, nonempty_cols=nonempty, matched_before=matched,
            host_syncs=int(counters.get("host_syncs", 0)) + 1,
            kernel_launches=int(counters.get("kernel_launches", 0)) + 1 + 2,
        )
        if init_timer is not None:
            counters.update(init_launches=init_launches, init_objective=self._dinit.cardinality())
        self._counters = counters

    def result(self) -> Any:
        if self._chosen is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        return self._subs[self._chosen].result()

    def timings(self) -> dict[str, float]:
        out = dict(self._t)
        if self._chosen is not None:
            out["transfer"] = self._subs[self._chosen].timings().get("transfer", float("nan"))
        return out

    def counters(self) -> dict[str, Any]:
        return dict(self._counters)

    def memory_peak_bytes(self) -> int | None:
        if not self._subs:
            return None
        graph = int(self._instance.nbytes)
        own = sum((s.memory_peak_bytes() or graph) - graph for s in self._subs.values())
        return graph + own + int(self._rm.nbytes + self._cm.nbytes)

    # -- internals ------------------------------------------------------------------

    def _names(self) -> list[str]:
        p = self.params
        return sorted({p["skewed"], p["low"], p["high"]})

    @staticmethod
    def _make(name: str) -> Any:
        from matchbench.families.mcm.apfb import APFB, APsB
        from matchbench.families.mcm.gpr import GPR

        return configured({"gpr": GPR, "apfb": APFB, "apsb": APsB}[name])
