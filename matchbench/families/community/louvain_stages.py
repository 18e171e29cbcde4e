"""The stages of GPU Louvain on the host: the loop, its parameters and its result.

:func:`drive` is the control flow of paper III (Alg. 1 lines 3-12 per stage, the stages, the
thresholds) over a *backend* that runs the steps: the device
(:class:`matchbench.families.community.louvain_gpu._DeviceLevels`, CuPy and the kernels) or
the host model (:class:`matchbench.families.community.louvain_model.HostModel`, numba).
:func:`check_params` is the one check of the method's parameters, for the solver and both
functions (it returns the :class:`Options` beyond the paper, issue #33, one record for both
backends); :func:`finish` turns a run into the family's answer, counters and timings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from matchbench.core.params import (
    boolean,
    choice,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from matchbench.families.community.louvain import _louvain
from matchbench.families.community.louvain_buckets import ROUNDS_MAX
from matchbench.families.community.problem import Partition

#: ``commit`` values: after every degree bucket (Alg. 1 lines 8-11), or at the end of each
#: iteration (paper III, Sec. 5, the "relaxed" approach).
COMMIT_MODES = ("bucket", "iteration")
#: The threshold grid of paper III, Sec. 5 (Figs. 1-2): ``(t_bin, t_final) = (10^k, 10^l)``,
#: ``k = -1..-4``, ``l = -3..-7``.
THRESHOLD_SWEEP = {
    "t_bin": tuple(10.0**k for k in range(-1, -5, -1)),
    "t_final": tuple(10.0**k for k in range(-3, -8, -1)),
}
#: ``aggregate`` values: Alg. 3's block per large community, or every large community's
#: entries hashed by the whole grid at once (:class:`Options`).
AGGREGATE_MODES = ("hash", "flat")
#: Most chunks bucket 7 may be split into (``hub_chunks``).
HUB_CHUNKS_MAX = 1024


@dataclass(frozen=True)
class Options:
    """The options beyond paper III, one record for both backends; the defaults are the
    paper's method (each option off), so the faithful variant is ``Options()``.

    Attributes
    ----------
    rounds : int
        Split each stage's vertices into this many id ranges (at most one per
        :data:`~matchbench.families.community.louvain_buckets.ROUND_MIN_ENTRIES` CSR
        entries of the stage's graph, and one where no vertex has degree > 319:
        :func:`~matchbench.families.community.louvain_buckets.effective_rounds`), taken one
        after another in every iteration, each with its degree buckets and commits: moves of
        one range see the committed moves of the ranges before, which brings the
        bucket-synchronous iteration nearer the sequential method's (on Kronecker graphs a
        low-degree-first order over all vertices is far from it).
    hashed_rounds : int
        On a stage that ``rounds`` does not split and that has no vertex of degree > 319
        and at least
        :data:`~matchbench.families.community.louvain_buckets.HASH_MIN_VERTICES` vertices,
        take its vertices in this many ranges of a hashed id, ``((v * 2654435761) mod 2^32)
        * R >> 32`` (:func:`~matchbench.families.community.louvain_buckets.stage_ranges`),
        one after another as ``rounds`` does: each range about 1/R of the vertices,
        spread over all ids, so a vertex sees the committed moves of its neighbours in the
        earlier ranges (nearly half of them) instead of none (a cheap stand-in for the
        distance-1 colouring of Lu, Halappanavar & Kalyanaraman 2015); 0 or 1: never.
    hub_chunks : int
        Move bucket 7 (degree > 319, by decreasing degree) of each range in this many chunks
        committed one after another, so hubs do not follow each other's communities in
        one simultaneous step.
    prune : bool
        Move only the vertices flagged as affected: all at a stage's start; a vertex is
        unflagged when it is evaluated, and flagged again when a neighbour moves (the
        commit after the neighbour's step marks it), as GVE-Louvain and nu-Louvain do.
    pickless : int
        Every ``pickless``-th iteration of a stage (those with ``l % pickless ==
        pickless // 2``, ``l`` counted from 0) a vertex may only move to a community of lower
        id than its own (nu-Louvain's swap guard, period 4); 0: never.
    t_drop : float
        Divide the binned threshold by this after each stage: stage ``r`` under ``t_bin``
        uses ``max(t_bin / t_drop**r, t_final)`` (GVE/nu-Louvain: 10); 1: the paper's.
    aggregation_tolerance : float
        End the method after a stage whose community count is at least this share of its
        vertex count: the stage's moves are kept, its graph is not contracted (GVE/
        nu-Louvain: 0.8); 1: only a stage left all singletons ends so (the paper's rule).
    aggregate : {"hash", "flat"}
        ``hash``: Alg. 3, a block per community of aggregation bucket 3 (one block hashes
        all of a community's entries); ``flat``: those communities' entries hashed into
        their tables by the whole grid at once, an edge per thread, then compacted by a
        block each (no block waits on one huge community; same graph).
    smem_hubs : bool
        Bucket 7's vertices whose hash table has at most ``LV_TS7S`` (3,500) slots, degrees
        up to about 2,330, hash in shared memory instead of their block's global-memory
        region (paper III keeps every bucket-7 table in global memory). The same table, so
        the same moves: the host model has nothing to model.
    vertex_tables : bool
        Each bucket-7 vertex hashes into a global-memory table of its own, a block per
        vertex, in launches whose tables fit the budget
        (:func:`~matchbench.families.community.louvain_buckets.vertex_slices`), instead of
        the paper's few blocks that each reuse one region sized for the level's largest
        table (:func:`~matchbench.families.community.louvain_buckets.global_blocks`: about
        110 blocks on Kronecker 2^20). The same tables and configuration, so the same moves.
    host_tail : int
        Once a stage after the first starts on a graph of at most this many CSR entries,
        finish the method on the host: the graph is copied back and the sequential
        reference (:func:`matchbench.families.community.louvain._louvain`, the same
        thresholds from that stage on) runs its remaining stages, whose composed labels
        become one more level. A level of a few thousand entries costs the device about as
        much as one of a hundred thousand (launches and host syncs, about 1.5 ms a level on
        road graphs), but the reference visits 30-45 ns per CSR entry, so on an H200 it was
        slower at every size tried (docs/benchmarks/louvain.md, thirteenth session).
        0: never (the paper's).
    t_level : float
        End the method after a stage under ``t_final`` (not binned) whose gain in Q is
        below this: its moves are kept, its graph is not contracted. The paper goes on
        while a stage gains at least its threshold (``t_final``, 1e-6), so a road graph's
        last levels, a few thousand vertices each, gain 1e-4 and less at about 1.5 ms of
        launches and host syncs apiece. 0: the paper's rule alone.
    iteration_graphs : bool
        The device backend captures a stage's iteration (the stats reset, the copy of the
        labels, every step's move and commit launches, the quality sum) as a CUDA graph the
        first time, and launches that graph for every iteration of the stage: one launch
        call from Python instead of one per kernel (about 15 us each on the host; an
        iteration of a hashed-range stage makes 50-100 of them). The same kernels in the
        same order on the same arrays, so the same moves: the host model has nothing to
        model. The graph is instantiated once per stage, which only pays where a stage
        iterates more than once. Measured on road, Delaunay and rgg graphs of 2^22 vertices
        (an H100): no time gained, since the solve then waits on the GPU's chain of small
        kernels instead (docs/benchmarks/louvain.md, fourteenth session).
    small_merge : bool
        Aggregation bucket 1 (comDegree <= 127, a warp per community in paper III) takes
        :data:`~matchbench.families.community.louvain_buckets.MERGE_QUAD` communities a
        warp; when all of them have comDegree <= ``MERGE_SMALL`` (31) a group of 8 lanes
        merges each, at once, in a quarter of the warp's table, else the warp merges them
        one after another. The same tables, so the same contracted graph.
    """

    rounds: int = 1
    hub_chunks: int = 1
    prune: bool = False
    pickless: int = 0
    t_drop: float = 1.0
    aggregation_tolerance: float = 1.0
    aggregate: str = "hash"
    hashed_rounds: int = 0
    smem_hubs: bool = False
    vertex_tables: bool = False
    host_tail: int = 0
    t_level: float = 0.0
    iteration_graphs: bool = False
    small_merge: bool = False

    @classmethod
    def checked(cls, **kw: Any) -> Options:
        """The options with each value checked (``ValueError`` naming it)."""
        unknown = set(kw) - set(cls.__dataclass_fields__)
        if unknown:
            raise TypeError(f"louvain_gpu: unknown options {sorted(unknown)}")
        o = cls(**kw)
        positive_int("louvain_gpu: rounds", o.rounds, ROUNDS_MAX)
        positive_int("louvain_gpu: hub_chunks", o.hub_chunks, HUB_CHUNKS_MAX)
        boolean("louvain_gpu: prune", o.prune)
        non_negative_int("louvain_gpu: pickless", o.pickless)
        if positive_float("louvain_gpu: t_drop", o.t_drop) < 1.0:
            raise ValueError(f"louvain_gpu: t_drop must be a finite number >= 1, not {o.t_drop!r}")
        tol = positive_float("louvain_gpu: aggregation_tolerance", o.aggregation_tolerance)
        if tol > 1.0:
            raise ValueError(
                "louvain_gpu: aggregation_tolerance must be a finite number in (0, 1], "
                f"not {o.aggregation_tolerance!r}"
            )
        choice("louvain_gpu: aggregate", o.aggregate, AGGREGATE_MODES)
        non_negative_int("louvain_gpu: hashed_rounds", o.hashed_rounds, ROUNDS_MAX)
        boolean("louvain_gpu: smem_hubs", o.smem_hubs)
        boolean("louvain_gpu: vertex_tables", o.vertex_tables)
        non_negative_int("louvain_gpu: host_tail", o.host_tail)
        non_negative_float("louvain_gpu: t_level", o.t_level)
        boolean("louvain_gpu: iteration_graphs", o.iteration_graphs)
        boolean("louvain_gpu: small_merge", o.small_merge)
        return cls(int(o.rounds), int(o.hub_chunks), bool(o.prune), int(o.pickless),
                   float(o.t_drop), float(tol), o.aggregate, int(o.hashed_rounds),
                   bool(o.smem_hubs), bool(o.vertex_tables), int(o.host_tail),
                   float(o.t_level), bool(o.iteration_graphs), bool(o.small_merge))

    def changed(self) -> dict[str, Any]:
        """The options whose values differ from the paper's (the defaults)."""
        base = Options()
        return {k: getattr(self, k) for k in self.__dataclass_fields__
                if getattr(self, k) != getattr(base, k)}

    def lower_only(self, iteration: int) -> bool:
        """Whether iteration ``iteration`` (from 0) of a stage is a pick-less one."""
        p = self.pickless
        return p > 0 and iteration % p == p // 2


#: The per-stage counters (lists, one entry per stage run) of every Louvain run.
STAGE_KEYS = (
    "level_vertices",
    "level_edges",
    "level_threshold",
    "level_iterations",
    "level_moves",
    "level_q",
    "level_q_start",
    "level_two_m",
    "level_buckets",
    "level_merge_buckets",
)


@dataclass
class Outcome:
    """What :func:`drive` returns: the stages' labels, the kept Q, the per-stage counters and
    the (stage, step, start, end) marks of the backend's clock."""

    levels: list[Any]
    q_kept: float
    stage: dict[str, list[Any]]
    marks: list[tuple[int, str, Any, Any]]


def drive(
    be: Any, t_bin: float, t_final: float, bin_limit: int, relaxed: bool, max_iterations: int,
    opts: Options | None = None,
) -> Outcome:
    """The stages of paper III on backend ``be``: the control flow of the sequential reference.

    Each stage: setup (Alg. 1 line 2), iterations (lines 3-12) until one moves nothing, gains
    less than the threshold, or ``max_iterations``. With ``relaxed`` (commit at the end of the
    iteration) an iteration gaining less than the threshold is undone, as the reference does;
    with bucket commits (moves of one bucket are simultaneous, so Q can drop) an iteration
    that lowers Q is undone, so a stage never ends below its previous iteration. Stages as
    :func:`matchbench.families.community.louvain.louvain`: ``t_bin`` while the graph has more than
    ``bin_limit`` vertices, then ``t_final``; a stage without moves (or below its start) ends
    the method, after one retry under ``t_final``; a stage whose communities are all
    singletons is not contracted and ends it.

    ``opts`` (:class:`Options`, default the paper's): ``t_drop`` lowers the binned threshold
    stage by stage; ``aggregation_tolerance`` ends the method after a stage that left too
    many communities, ``t_level`` after one that gained too little (``be.labels()``: its
    labels, uncontracted); ``pickless`` makes ``be.iterate(lower_only)`` restrict some
    iterations' moves; ``host_tail`` hands a small level to :func:`_host_tail`
    (``be.host_graph()``, ``be.push_level(labels)``). The other options are the backend's
    (its constructor's).
    """
    opts = Options() if opts is None else opts
    levels: list[Any] = []
    stage: dict[str, list[Any]] = {k: [] for k in STAGE_KEYS}
    marks: list[tuple[int, str, Any, Any]] = []
    use_bin = True
    q_kept: float | None = None
    while True:
        r = len(stage["level_q"])
        n = be.n
        if opts.host_tail and levels and be.nnz <= opts.host_tail:
            t_now = max(t_bin / opts.t_drop**r, t_final) if use_bin else t_final
            q_kept = _host_tail(be, levels, stage, marks, r, t_now, t_final, bin_limit,
                                max_iterations, float(q_kept))
            break
        binned = use_bin and n > bin_limit
        threshold = float(max(t_bin / opts.t_drop**r, t_final) if binned else t_final)
        t0 = be.mark()
        two_m, q_start = be.setup()
        q, iters, moves = q_start, 0, 0
        if two_m > 0:
            while iters < max_iterations:
                iters += 1
                moved, inside, spread = be.iterate(opts.lower_only(iters - 1))
                if moved == 0:
                    break
                q_new = inside / two_m - spread / (two_m * two_m)  # Eq. 1
                if (q_new - q < threshold) if relaxed else (q_new < q):
                    be.reject()
                    break
                be.accept()
                moves += moved
                gain = q_new - q
                q = q_new
                if gain < threshold:  # Alg. 1 line 12
                    break
        t1 = be.mark()
        marks.append((r, "optimize", t0, t1))
        if q_kept is None:
            q_kept = float(q_start)
        values = (
            n, be.nnz, threshold, iters, moves, float(q), float(q_start), float(two_m),
            list(be.bucket_counts), None,
        )
        for key, value in zip(STAGE_KEYS, values, strict=True):
            stage[key].append(value)
        if moves == 0 or q < q_start:
            if binned:
                use_bin = False
                continue
            break
        k = be.renumber()
        stage["level_merge_buckets"][-1] = list(be.merge_counts)
        if k == n:  # all singletons: contracting changes nothing
            marks.append((r, "aggregate", t1, be.mark()))
            break
        # too few merges to contract, or (t_level) too little gained to go on: keep and end
        small_gain = not binned and q - q_start < opts.t_level
        if k >= opts.aggregation_tolerance * n or small_gain:
            levels.append(be.labels())
            marks.append((r, "aggregate", t1, be.mark()))
            q_kept = float(q)
            break
        levels.append(be.contract())
        marks.append((r, "aggregate", t1, be.mark()))
        q_kept = float(q)
        if q - q_start < threshold:
            if binned:
                use_bin = False
                continue
            break
    return Outcome(levels, float(q_kept), stage, marks)


def _host_tail(
    be: Any, levels: list[Any], stage: dict[str, list[Any]],
    marks: list[tuple[int, str, Any, Any]], r: int, t_bin: float, t_final: float,
    bin_limit: int, max_iterations: int, q: float,
) -> float:
    """Option ``host_tail``: the remaining stages on the host, from stage ``r`` on.

    The sequential reference runs on the level's graph (``be.host_graph()``: ``n``, int64
    ``ptr`` and ``ind``, float64 weights and self-loops) with ``t_bin`` (the caller passes
    stage ``r``'s binned threshold, or ``t_final`` once it is dropped), ``t_final`` and
    ``bin_limit``, and its own sequential commits whatever the device's ``commit``; its
    composed labels, if any vertex moved, become one more level (``be.push_level``). Its
    stages are recorded as stages ``r, r + 1, ...`` (no buckets), the whole tail as the
    mark ``(r, "host_tail")``. Returns the kept Q: the tail's, or ``q`` when nothing
    moved. On integer weights every sum is exact, so the
    device and the host model hand over the same graph and get the same labels.
    """
    t0 = be.mark()
    q_tail_start = q
    n, ptr, ind, w, loop = be.host_graph()
    part, co, _ = _louvain(n, ptr, ind, w, t_bin, t_final, bin_limit, False, max_iterations,
                           loop=loop)
    if part.levels:
        levels.append(be.push_level(part.community))
        q = float(part.modularity)
    two_m = float(w.sum() + 2.0 * loop.sum())
    q_start = q_tail_start
    for i, q_i in enumerate(co["level_q"]):
        if i:  # a contracted stage starts at the last one's Q, a retry where it started
            contracted = co["level_vertices"][i] < co["level_vertices"][i - 1]
            q_start = float(co["level_q"][i - 1]) if contracted else q_start
        values = (
            co["level_vertices"][i], co["level_edges"][i], co["level_threshold"][i],
            co["level_iterations"][i], co["level_moves"][i], float(q_i), q_start, two_m,
            [], None,
        )
        for key, value in zip(STAGE_KEYS, values, strict=True):
            stage[key].append(value)
    marks.append((r, "host_tail", t0, be.mark()))
    return q


def finish(
    out: Outcome, community: np.ndarray, levels: list[np.ndarray], seconds: dict[str, float],
    extra: dict[str, Any],
) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """The answer, counters and timings of a run, from its outcome and its labels on the host."""
    st = out.stage
    counters: dict[str, Any] = {
        "levels": len(levels),
        "iterations": int(sum(st["level_iterations"])),
        "moves": int(sum(st["level_moves"])),
        "communities": int(community.max()) + 1 if community.size else 0,
        **st,
    }
    t0 = seconds.get("level0_optimize")
    if st["level_iterations"] and t0:
        # the paper's TEPS (Sec. 5): entries hashed per second in the first optimization phase,
        # each iteration hashing all 2|E| CSR entries
        counters["first_phase_edges_per_s"] = (
            st["level_iterations"][0] * st["level_edges"][0] / t0
        )
    counters.update(extra)
    return Partition(community, levels or None, out.q_kept), counters, seconds


def check_params(
    t_bin: Any, t_final: Any, bin_limit: Any, commit: Any, max_iterations: Any, **options: Any
) -> Options:
    """The one check of the method's parameters (:class:`LouvainGPU`, :func:`louvain_gpu`,
    :func:`louvain_gpu_model`); ``ValueError`` naming the parameter. Returns the
    :class:`Options` of the keyword ``options``."""
    non_negative_float("louvain_gpu: t_bin", t_bin)
    non_negative_float("louvain_gpu: t_final", t_final)
    non_negative_int("louvain_gpu: bin_limit", bin_limit)
    choice("louvain_gpu: commit", commit, COMMIT_MODES)
    positive_int("louvain_gpu: max_iterations", max_iterations)
    return Options.checked(**options)


def loop_array(loop: Any, n: int) -> np.ndarray:
    """The self-loop weights of ``n`` vertices as float64 (zeros for None), checked."""
    if loop is None:
        return np.zeros(n, dtype=np.float64)
    arr = np.ascontiguousarray(loop, dtype=np.float64)
    if arr.shape != (n,) or not (np.isfinite(arr).all() and (arr >= 0).all()):
        raise ValueError(f"louvain_gpu: loop must be {n} finite weights >= 0")
    return arr


def empty_result() -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """The answer, counters and timings of a graph without vertices."""
    counters: dict[str, Any] = {"levels": 0, "iterations": 0, "moves": 0, "communities": 0}
    counters.update({k: [] for k in STAGE_KEYS})
    return Partition(np.zeros(0, dtype=np.int64), None, 0.0), counters, {}
