"""CPU references for half-approximate weighted (b-)matching: all compute the greedy answer.

- :class:`Greedy` (``greedy``): sort the edges in the global order, scan, keep what fits.
- :class:`LocallyDominant` (``ld``): the queue-based locally-dominant algorithm, Naim et al.,
  HiPC 2015 (paper I of Naim's thesis), Alg. 1-2, sequential. ``b = 1`` only.
- :class:`Suitor` (``suitor``): the Suitor algorithm, paper I, Alg. 3, sequential, with the
  known slip fixed (line 28: ``next <- current``). ``b = 1`` only.
- :class:`BSuitor` (``bsuitor``): b-Suitor, Khan, Pothen, Patwary, Satish, Sundaram, Manne,
  Halappanavar & Dubey, *Efficient approximation algorithms for weighted b-matching*, SISC
  38(5), 2016 (sequential b-Suitor), any capacities.
- :class:`NkSuitor` (``nk_suitor``) and :class:`NkBSuitor` (``nk_bsuitor``): NetworKit's
  ``SuitorMatcher`` and ``BSuitorMatcher`` (the ``ref`` extra).
- :class:`MwmExact` (``mwm_exact``): networkx's exact maximum weight matching, small graphs.

Every heuristic follows the global edge order of :mod:`matchbench.graphs.weighted` (heavier
first, ties by the larger endpoint, then the smaller one, larger first), through
:func:`~matchbench.graphs.weighted.precedes` (numba) or
:func:`~matchbench.graphs.weighted.edge_order` (GREEDY), so every answer is the unique
greedy (b-)matching and is certified as such.

NetworKit breaks ties its own way (equal weights: the *smaller* neighbour id wins, in
``SuitorMatcher::findSuitor`` and ``BSuitorMatcher::findPreffered``/``sortInsert``), which
would differ from our order exactly on ties. It is therefore given rank-encoded weights:
the edge at position r (from 0) of the global order weighs ``m - r``, so that its weights are
distinct and its unique greedy answer is ours; the row's objective is recomputed from the
real weights by the verifier. The rank computation and graph construction are in
``prepare`` (untimed).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.params import host_cores, parse_threads
from matchbench.core.solver import BaseSolver
from matchbench.families.wmatch.problem import (
    EXACT_MAX_EDGES,
    EXACT_MAX_VERTICES,
    WeightedGraph,
    WMatching,
    edge_order,
    exact_matching,
    precedes,
)

# ---------------------------------------------------------------------------------------
# Kernels


@njit(cache=True)
def greedy_kernel(n, eu, ev, cap):
    """GREEDY over edges already in the global order: keep an edge when both ends have room.

    Returns a bool mask over the edges. O(n + m) after the sort.
    """
    count = np.zeros(n, dtype=np.int64)
    keep = np.zeros(eu.shape[0], dtype=np.bool_)
    for k in range(eu.shape[0]):
        u = eu[k]
        v = ev[k]
        if count[u] < cap[u] and count[v] < cap[v]:
            keep[k] = True
            count[u] += 1
            count[v] += 1
    return keep


@njit(cache=True, inline="always")
def _process_vertex(s, ptr, ind, w, mate, candidate, queue, tail):
    """Alg. 2 ProcessVertex(s, Q): point s at its heaviest unmatched neighbour (lines 2-8);
    if that neighbour points back, match the pair and enqueue both (lines 9-12).

    "Heaviest" is first in the global order (the paper breaks weight ties by vertex id,
    Sec. 2.1, "Line 5"). Returns the new queue length.
    """
    best = -1
    best_w = 0.0
    for p in range(ptr[s], ptr[s + 1]):
        t = ind[p]
        if mate[t] == -1 and (best == -1 or precedes(w[p], s, t, best_w, s, best)):
            best = t
            best_w = w[p]
    candidate[s] = best
    if best != -1 and candidate[best] == s:
        mate[s] = best
        mate[best] = s
        queue[tail] = s
        queue[tail + 1] = best
        tail += 2
    return tail


@njit(cache=True)
def ld_kernel(n, ptr, ind, w):
    """The locally-dominant algorithm, Alg. 1 (with Alg. 2), run sequentially.

    Returns ``(mate, rounds, processed)``: the mate array, the iterations of the while loop
    (line 8) and the calls of ProcessVertex.

    Notes
    -----
    Line 11 tests ``candidate[v] = u`` only; a vertex v matched to u also points at u, so the
    test here is ``mate[v] = none and candidate[v] = u`` (re-processing u's own mate would
    match it twice; Halappanavar et al.'s LD checks that v is unmatched likewise). A vertex is
    enqueued once, when it is matched, so each queue holds at most n vertices.
    """
    mate = np.full(n, -1, dtype=np.int64)
    candidate = np.full(n, -1, dtype=np.int64)
    q_cur = np.empty(n, dtype=np.int64)
    q_next = np.empty(n, dtype=np.int64)
    processed = 0
    n_cur = 0
    for v in range(n):  # lines 6-7
        n_cur = _process_vertex(v, ptr, ind, w, mate, candidate, q_cur, n_cur)
        processed += 1
    rounds = 0
    while n_cur > 0:  # line 8
        rounds += 1
        n_next = 0
        for i in range(n_cur):  # line 9
            u = q_cur[i]
            for p in range(ptr[u], ptr[u + 1]):  # line 10
                v = ind[p]
                if mate[v] == -1 and candidate[v] == u:  # line 11
                    n_next = _process_vertex(v, ptr, ind, w, mate, candidate, q_next, n_next)
                    processed += 1
        q_cur, q_next = q_next, q_cur  # line 13
        n_cur = n_next
    return mate, rounds, processed


@njit(cache=True)
def suitor_kernel(n, ptr, ind, w):
    """The Suitor algorithm, Alg. 3, run sequentially; ``suitor`` plays the paper's ``mate``.

    Returns ``(suitor, proposals, displaced)``: ``suitor[v]`` is v's final suitor, which is
    mutual (the matching), the successful proposals (lines 24-25) and the suitors displaced
    (lines 21-23). "w(a) > w(b)" of lines 14 and 20 is "edge a precedes edge b" in the global
    order; an empty offer (``suitor = -1``, ``ws = 0``) is preceded by every edge because
    weights are positive.

    Notes
    -----
    Lines 26-28 (else-branch) read ``next <- u`` in the paper, a slip: the partner received a
    better offer between the scan and the lock, so ``current`` (not the outer loop's u) must
    search again, ``next <- current``. Run sequentially nothing happens between the scan and
    the test of line 20, so the branch can only be reached with ``partner`` the initial
    ``mate[current]`` (line 10), which the Suitor invariant rules out (a vertex's offer never
    exceeds the proposal it holds); reaching it twice in a row would repeat forever, and is
    raised as an error instead.
    """
    suitor = np.full(n, -1, dtype=np.int64)
    ws = np.zeros(n, dtype=np.float64)
    proposals = 0
    displaced = 0
    for u in range(n):  # line 6
        current = u  # line 7
        done = False  # line 8
        stalled = 0
        while not done:  # line 9
            partner = suitor[current]  # line 10
            heaviest = ws[current]  # line 11
            nxt = -1  # line 12
            for p in range(ptr[current], ptr[current + 1]):  # line 13
                v = ind[p]
                wv = w[p]
                # line 14: (current, v) before the best so far and before v's current offer
                if precedes(wv, current, v, heaviest, current, partner) and precedes(
                    wv, current, v, ws[v], v, suitor[v]
                ):
                    partner = v  # line 15
                    heaviest = wv  # line 16
            done = True  # line 17
            if partner != -1:  # line 18: heaviest != NULL
                if precedes(heaviest, current, partner, ws[partner], partner, suitor[partner]):
                    if suitor[partner] != -1:  # lines 21-23
                        nxt = suitor[partner]
                        done = False
                        displaced += 1
                    suitor[partner] = current  # line 24
                    ws[partner] = heaviest  # line 25
                    proposals += 1
                    stalled = 0
                else:  # lines 26-28, slip fixed
                    done = False
                    nxt = current
                    stalled += 1
                    if stalled > 1:
                        raise RuntimeError("suitor: the else-branch of Alg. 3 repeats")
            if not done:  # lines 30-31
                current = nxt
    return suitor, proposals, displaced


@njit(cache=True, inline="always")
def _heap_less(hw, hs, i, j, v):
    """Heap entry i is lower in the global order than entry j (entries of vertex v's heap)."""
    return precedes(hw[j], hs[j], v, hw[i], hs[i], v)


@njit(cache=True)
def _sift_down(hw, hs, base, size, v, k):
    while True:
        left = 2 * k + 1
        if left >= size:
            return
        child = left
        if left + 1 < size and _heap_less(hw, hs, base + left + 1, base + left, v):
            child = left + 1
        if _heap_less(hw, hs, base + child, base + k, v):
            a = base + child
            b = base + k
            hw[a], hw[b] = hw[b], hw[a]
            hs[a], hs[b] = hs[b], hs[a]
            k = child
        else:
            return


@njit(cache=True)
def _sift_up(hw, hs, base, v, k):
    while k > 0:
        parent = (k - 1) // 2
        if _heap_less(hw, hs, base + k, base + parent, v):
            a = base + k
            b = base + parent
            hw[a], hw[b] = hw[b], hw[a]
            hs[a], hs[b] = hs[b], hs[a]
            k = parent
        else:
            return


@njit(cache=True, inline="always")
def _would_accept(v, wuv, u, cap, hsize, hoff, hw, hs):
    """S(v) takes u's proposal: room left, or (u, v) precedes its lowest suitor's edge."""
    if cap[v] == 0:
        return False
    if hsize[v] < cap[v]:
        return True
    r = hoff[v]
    return precedes(wuv, u, v, hw[r], hs[r], v)


@njit(cache=True)
def _find_preferred(y, ptr, ind, w, prop, cap, hsize, hoff, hw, hs):
    """The first (in the global order) neighbour x of y not in T(y) whose S(x) would take y.

    The argmax of Khan et al. 2016's b-Suitor (its step for u and MakeSuitor's for a
    displaced y); returns ``(x, p)`` with p the CSR position of (y, x), or ``(-1, -1)``.
    """
    best = -1
    best_p = -1
    best_w = 0.0
    for p in range(ptr[y], ptr[y + 1]):
        if prop[p]:
            continue
        x = ind[p]
        wp = w[p]
        if best != -1 and not precedes(wp, y, x, best_w, y, best):
            continue
        if _would_accept(x, wp, y, cap, hsize, hoff, hw, hs):
            best = x
            best_p = p
            best_w = wp
    return best, best_p


@njit(cache=True)
def bsuitor_kernel(n, ptr, ind, w, b):
    """b-Suitor (Khan et al. 2016), sequential, with MakeSuitor's tail recursion as a loop.

    S(v), the suitors of v, is a min-heap (lowest edge at the root) of at most
    ``min(b(v), deg(v))`` entries; T(u), the vertices u proposed to, is a flag per CSR entry.
    Returns ``(prop, proposals, displaced)``: ``prop[p]`` is true for entry (u, x) when u is
    in S(x); at the end the relation is symmetric and is the b-matching.
    """
    deg = ptr[1:] - ptr[:-1]
    cap = np.minimum(b.astype(np.int64), deg.astype(np.int64))
    hoff = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        hoff[v + 1] = hoff[v] + cap[v]
    hw = np.zeros(hoff[n], dtype=np.float64)
    hs = np.full(hoff[n], -1, dtype=np.int64)
    hsize = np.zeros(n, dtype=np.int64)
    prop = np.zeros(ind.shape[0], dtype=np.bool_)
    proposals = 0
    displaced = 0
    for u in range(n):
        for _i in range(b[u]):  # u seeks up to b(u) partners
            x, p = _find_preferred(u, ptr, ind, w, prop, cap, hsize, hoff, hw, hs)
            if x == -1:  # no eligible partner left, and none can become one
                break
            # MakeSuitor(u, x); its recursive call on the displaced suitor becomes the loop,
            # on (s, x, p): s proposes to x through CSR entry p.
            s = u
            while True:
                proposals += 1
                base = hoff[x]
                y = -1
                if hsize[x] == cap[x]:  # y = S(x).last, the lowest suitor, is displaced
                    y = hs[base]
                    hs[base] = s
                    hw[base] = w[p]
                    _sift_down(hw, hs, base, hsize[x], x, 0)
                else:
                    k = hsize[x]
                    hs[base + k] = s
                    hw[base + k] = w[p]
                    hsize[x] = k + 1
                    _sift_up(hw, hs, base, x, k)
                prop[p] = True  # T(s) gets x
                if y == -1:
                    break
                displaced += 1
                # y leaves S(x), x leaves T(y)
                lo = ptr[y]
                hi = ptr[y + 1]
                while lo < hi:
                    mid = (lo + hi) // 2
                    if ind[mid] < x:
                        lo = mid + 1
                    else:
                        hi = mid
                prop[lo] = False
                z, pz = _find_preferred(y, ptr, ind, w, prop, cap, hsize, hoff, hw, hs)
                if z == -1:
                    break
                s, x, p = y, z, pz  # MakeSuitor(y, z)
    return prop, proposals, displaced


# ---------------------------------------------------------------------------------------
# Solvers


def _tiny(dtype: np.dtype) -> WeightedGraph:
    """A 4-cycle with a chord, in the index dtype of an instance: compiles the kernels."""
    g = WeightedGraph.from_edges([0, 1, 2, 3, 0], [1, 2, 3, 0, 2], [1.0, 2.0, 1.0, 2.0, 3.0], 4)
    g.ptr = g.ptr.astype(dtype)
    g.ind = g.ind.astype(dtype)
    return g


class _WMatchCPU(BaseSolver):
    """Shared life cycle: compile in ``prepare`` (once per index dtype), solve in ``run``."""

    problem: ClassVar[str] = "wmatch"
    device: ClassVar[str] = "cpu"
    #: whether the solver handles capacities b(v) other than 1
    b_matching: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._graph: WeightedGraph | None = None
        self._answer: WMatching | None = None
        self._counters: dict[str, int | float] = {}
        self._compiled: set[str] = set()

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        if not self.b_matching and not instance.is_matching:
            return True, (
                f"{self.name} computes matchings (b = 1); {instance.name} has capacities "
                "b(v) != 1 (use greedy, bsuitor or nk_bsuitor)"
            )
        return False, None

    def _solve(self, graph: WeightedGraph) -> tuple[WMatching, dict[str, int | float]]:
        raise NotImplementedError

    def prepare(self, instance: WeightedGraph, init: Any | None = None) -> None:
        key = str(instance.ind.dtype)
        if key not in self._compiled:
            self._solve(_tiny(instance.ind.dtype))
            self._compiled.add(key)
        self._graph = instance
        self._answer = None
        self._counters = {}

    def run(self) -> None:
        if self._graph is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        self._answer, self._counters = self._solve(self._graph)

    def result(self) -> WMatching:
        if self._answer is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        return self._answer

    def counters(self) -> dict[str, int | float]:
        return dict(self._counters)


class Greedy(_WMatchCPU):
    """GREEDY: sort the edges in the global order, then keep each edge that fits (any b).

    The sort is part of the timed run (it is the algorithm's cost). Counter: ``edges``.

    Notes
    -----
    Naim et al. 2015 (paper I), Sec. 2.1, first sentence: "considering the edges in a
    non-increasing order of weights, and adding all edges that do not violate the matching
    condition"; with capacities, the greedy b-matching of Khan et al. 2016, Sec. 2.
    """

    name: ClassVar[str] = "greedy"
    b_matching: ClassVar[bool] = True

    def _solve(self, graph: WeightedGraph) -> tuple[WMatching, dict[str, int | float]]:
        eu, ev, _ = edge_order(graph)
        keep = greedy_kernel(graph.n, eu, ev, graph.capacity)
        return WMatching(eu[keep].astype(np.int64), ev[keep].astype(np.int64)), {
            "edges": int(eu.shape[0])
        }


class LocallyDominant(_WMatchCPU):
    """The queue-based locally-dominant algorithm (sequential), ``b = 1``.

    Counters: ``iterations`` (rounds of the while loop), ``processed`` (ProcessVertex calls).

    Notes
    -----
    Naim et al. 2015 (paper I), Alg. 1 (Parallel Locally-Dominant) and Alg. 2
    (ProcessVertex), after Halappanavar et al.; see :func:`ld_kernel` for the one guard added
    to line 11. O(n + m * Delta).
    """

    name: ClassVar[str] = "ld"

    def _solve(self, graph: WeightedGraph) -> tuple[WMatching, dict[str, int | float]]:
        mate, rounds, processed = ld_kernel(graph.n, graph.ptr, graph.ind, graph.weight)
        return WMatching.from_mate(mate), {"iterations": int(rounds), "processed": int(processed)}


class Suitor(_WMatchCPU):
    """The Suitor algorithm (sequential), ``b = 1``.

    Counters: ``proposals``, ``displaced``.

    Notes
    -----
    Naim et al. 2015 (paper I), Alg. 3 (OMP-Suitor, after Manne & Halappanavar, IPDPS
    2014), without the locks; the else-branch slip of line 28 is fixed (see
    :func:`suitor_kernel`). O(m * Delta).
    """

    name: ClassVar[str] = "suitor"

    def _solve(self, graph: WeightedGraph) -> tuple[WMatching, dict[str, int | float]]:
        suitor, proposals, displaced = suitor_kernel(graph.n, graph.ptr, graph.ind, graph.weight)
        return WMatching.from_mate(suitor), {
            "proposals": int(proposals),
            "displaced": int(displaced),
        }


class BSuitor(_WMatchCPU):
    """b-Suitor (sequential), any capacities; equals Suitor for ``b = 1``.

    Counters: ``proposals``, ``displaced``.

    Notes
    -----
    Khan et al., *Efficient approximation algorithms for weighted b-matching*, SISC 38(5),
    2016: b-Suitor with MakeSuitor (their text is not in the repository; this follows
    NetworKit's ``BSuitorMatcher`` structure); the b-matching generalization of paper I's
    Suitor (the thesis's paper II, absent from its text).
    """

    name: ClassVar[str] = "bsuitor"
    b_matching: ClassVar[bool] = True

    def _solve(self, graph: WeightedGraph) -> tuple[WMatching, dict[str, int | float]]:
        prop, proposals, displaced = bsuitor_kernel(
            graph.n, graph.ptr, graph.ind, graph.weight, graph.capacity
        )
        rows = np.repeat(np.arange(graph.n, dtype=np.int64), np.diff(graph.ptr))
        pick = prop & (rows < graph.ind)
        return WMatching(rows[pick], graph.ind[pick].astype(np.int64)), {
            "proposals": int(proposals),
            "displaced": int(displaced),
        }


class _NetworKit(_WMatchCPU):
    """NetworKit matchers on rank-encoded weights (module docstring), in ``threads`` threads.

    Parameters
    ----------
    threads : int or None
        OpenMP threads (``networkit.setNumberOfThreads``); None: every core of the host.
    """

    def __init__(self, *, threads: int | None) -> None:
        self.threads = parse_threads(threads)
        super().__init__(threads=threads)
        self._nk_graph: Any = None
        self._nk_for: WeightedGraph | None = None
        self._raw: Any = None

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        try:
            import networkit  # noqa: F401
        except ImportError as exc:
            return True, f"networkit is not installed (pip install 'matchbench[ref]'): {exc}"
        return super().skip(instance)

    def _build(self, graph: WeightedGraph) -> Any:
        """The NetworKit graph with weight ``m - rank`` per edge, adjacency sorted by weight.

        Edges at a vertex of capacity 0 are left out: no b-matching uses them, and
        NetworKit's BSuitorMatcher reads the last of a vertex's b suitors unguarded.
        """
        import networkit as nk

        eu, ev, _ = edge_order(graph)
        m = eu.shape[0]
        rank_w = (m - np.arange(m)).astype(np.float64)
        cap = graph.capacity
        keep = (cap[eu] > 0) & (cap[ev] > 0)
        g = nk.GraphFromCoo(
            (rank_w[keep], (eu[keep].astype(np.int64), ev[keep].astype(np.int64))),
            n=graph.n,
            weighted=True,
            directed=False,
        )
        nk.graphtools.sortEdgesByWeight(g, True)
        return g

    def prepare(self, instance: WeightedGraph, init: Any | None = None) -> None:
        import networkit as nk

        nk.setNumberOfThreads(self.threads or host_cores())
        if self._nk_for is not instance:
            self._nk_graph = self._build(instance)
            self._nk_for = instance
        self._graph = instance
        self._answer = None
        self._raw = None
        self._counters = {"threads": self.threads or host_cores()}

    def run(self) -> None:
        if self._nk_graph is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        self._raw = self._match(self._nk_graph)

    def _match(self, g: Any) -> Any:
        raise NotImplementedError

    def result(self) -> WMatching:
        if self._raw is None or self._graph is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        return self._convert(self._raw, self._graph.n)


class NkSuitor(_NetworKit):
    """NetworKit's ``SuitorMatcher`` (the SortSuitor variant on weight-sorted adjacency), b = 1.

    Notes
    -----
    Manne & Halappanavar, *New effective multithreaded matching algorithms*, IPDPS 2014, as
    implemented in NetworKit (``networkit/cpp/matching/SuitorMatcher.cpp``); its main loop
    runs sequentially in NetworKit 11, only building the result uses the threads.
    """

    name: ClassVar[str] = "nk_suitor"

    def _match(self, g: Any) -> Any:
        import networkit as nk

        matcher = nk.matching.SuitorMatcher(g, True, False)
        matcher.run()
        return matcher.getMatching().getVector()

    @staticmethod
    def _convert(raw: Any, n: int) -> WMatching:
        mate = np.asarray(raw, dtype=np.uint64)
        out = np.where(mate >= np.uint64(n), -1, mate.astype(np.int64))
        return WMatching.from_mate(out)


class NkBSuitor(_NetworKit):
    """NetworKit's ``BSuitorMatcher`` with the instance's capacities.

    Notes
    -----
    Khan et al. 2016, b-Suitor, as implemented in NetworKit
    (``networkit/cpp/matching/BSuitorMatcher.cpp``; sequential, MakeSuitor recursive in C++).
    """

    name: ClassVar[str] = "nk_bsuitor"
    b_matching: ClassVar[bool] = True

    def _match(self, g: Any) -> Any:
        import networkit as nk

        assert self._graph is not None
        matcher = nk.matching.BSuitorMatcher(g, [int(c) for c in self._graph.capacity])
        matcher.run()
        return matcher.getBMatching().getMatches()

    @staticmethod
    def _convert(raw: Any, n: int) -> WMatching:
        u = [x for x, partners in enumerate(raw) for y in partners if x < y]
        v = [y for x, partners in enumerate(raw) for y in partners if x < y]
        return WMatching(np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64))


class MwmExact(_WMatchCPU):
    """networkx's exact maximum weight matching; the answer claims optimality.

    Skipped above :data:`~matchbench.families.wmatch.problem.EXACT_MAX_VERTICES` vertices or
    :data:`~matchbench.families.wmatch.problem.EXACT_MAX_EDGES` edges (O(n^3) in Python), and on
    b-matching instances.

    Notes
    -----
    ``networkx.max_weight_matching``: Galil, *Efficient algorithms for finding maximum
    matching in graphs*, ACM Computing Surveys 18(1), 1986 (Edmonds' blossoms with duals).
    """

    name: ClassVar[str] = "mwm_exact"

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        skip, reason = super().skip(instance)
        if skip:
            return skip, reason
        if instance.n > EXACT_MAX_VERTICES or instance.n_edges > EXACT_MAX_EDGES:
            return True, (
                f"mwm_exact: {instance.name} has {instance.n} vertices and {instance.n_edges} "
                f"edges; the exact (O(n^3), pure Python) solver runs up to "
                f"{EXACT_MAX_VERTICES} vertices and {EXACT_MAX_EDGES} edges"
            )
        return False, None

    def prepare(self, instance: WeightedGraph, init: Any | None = None) -> None:
        self._graph = instance
        self._answer = None
        self._counters = {}

    def _solve(self, graph: WeightedGraph) -> tuple[WMatching, dict[str, int | float]]:
        return WMatching.from_mate(exact_matching(graph), claim="optimal"), {}
