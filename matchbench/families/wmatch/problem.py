"""Half-approximate weighted (b-)matching on general graphs: data model, edge order, certificate.

An instance is a :class:`WeightedGraph`: an undirected graph in one symmetric CSR (both
directions of every edge stored, adjacency sorted by vertex), positive float64 weights and an
optional capacity ``b(v) >= 0`` per vertex (``b = 1`` everywhere, the default, is ordinary
matching). An answer is a :class:`WMatching` (the matched edges) or, for ``b = 1``, a bare mate
array.

The global edge order
---------------------
Every algorithm of the family follows one strict total order on the edges, so that every
answer is unique: edge ``e = {u, v}`` comes before edge ``f`` when its key
``edge_order_key(w_e, u, v) = (w_e, max(u, v), min(u, v))`` is lexicographically *larger*:
heavier first; among equal weights the edge whose larger endpoint is larger, then the one
whose smaller endpoint is larger. Seen from one vertex ``x``, two incident edges of equal
weight are ordered by their other endpoint, larger first. :func:`precedes` is the same order
compiled with numba, :func:`edge_order` lists the edges in it.

GREEDY (scan the edges in this order and keep each one whose endpoints both have capacity
left) gives one matching; the locally-dominant algorithm, Suitor and b-Suitor give the same
one when they break ties by this order (Preis 1999; Manne & Halappanavar 2014; Khan et al.,
SISC 2016). Its weight is at least half the optimum.

The certificate
---------------
:meth:`WMatch.verify` proves that an answer is *the* greedy matching without running greedy:

1. it is a valid b-matching: every pair an edge of the graph, listed once, and no vertex in
   more than ``b(v)`` pairs;
2. no edge blocks it: an unmatched edge ``e = {u, v}`` blocks when both endpoints "would
   accept" it, where ``x`` accepts ``e`` when ``x`` has fewer than ``b(x)`` matched edges or its
   lowest matched edge comes after ``e`` in the global order.

A valid b-matching without blocking edge equals GREEDY: take the first edge of the order on
which the two differ; if GREEDY takes it, both endpoints have room among the edges before it,
which the answer shares, so the edge would block; if the answer takes it and GREEDY does not,
one endpoint already holds ``b`` earlier edges, shared with the answer, which then exceeds
``b``. Both checks are O(n + m) (numba). Uniqueness gives the 1/2-approximation of GREEDY.

Quality columns: ``objective`` is the weight recomputed from the graph; for a valid answer
``bound`` is ``min(2 * weight, sum_v top_b(v) / 2)`` where ``top_b(v)`` sums the ``b(v)``
heaviest weights at ``v`` (an upper bound on every b-matching's weight; the first term only
holds for a verified greedy answer, and is left out otherwise; an answer certified optimal
has its own weight as bound); ``reference`` is the exact
maximum weight of a matching (networkx's blossom algorithm) for ``b = 1`` graphs of at most
:data:`EXACT_MAX_VERTICES` vertices and :data:`EXACT_MAX_EDGES` edges, computed once per
instance.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.problem import Problem, Verification
from matchbench.graphs.weighted import (
    NPZ_VERSION,
    WeightedGraph,
    csr_find,
    edge_order,
    edge_order_key,
    precedes,
)

__all__ = [
    "EXACT_MAX_EDGES",
    "EXACT_MAX_VERTICES",
    "NPZ_VERSION",
    "WMatch",
    "WMatching",
    "WeightedGraph",
    "edge_order",
    "edge_order_key",
    "exact_max_weight",
    "precedes",
]

#: Largest graphs (vertices, undirected edges) whose exact optimum the verifier computes
#: (networkx's O(n^3) blossom algorithm in Python: about 2 s at 1000 vertices, 3000 edges).
EXACT_MAX_VERTICES = 1000
EXACT_MAX_EDGES = 20_000
#: Relative tolerance when an answer that claims optimality is compared with the optimum.
OPTIMUM_RTOL = 1e-9


@dataclass
class WMatching:
    """An answer: the matched edges ``(u[k], v[k])``, each listed once, either orientation.

    Attributes
    ----------
    u, v : ndarray
        Integer arrays of equal length.
    claim : {"greedy", "optimal"}
        What the solver claims and the verifier then certifies: the greedy (b-)matching of
        the global order (every half-approximation solver), or a maximum weight matching
        (``mwm_exact``).
    """

    u: np.ndarray
    v: np.ndarray
    claim: str = "greedy"

    @property
    def size(self) -> int:
        return int(np.asarray(self.u).shape[0])

    @classmethod
    def from_mate(cls, mate: np.ndarray, claim: str = "greedy") -> WMatching:
        """From a mate array (``mate[x]`` the partner of ``x``, -1 unmatched): pairs ``x < mate[x]``."""
        mate = np.asarray(mate)
        x = np.flatnonzero(mate > np.arange(mate.shape[0]))
        return cls(u=x.astype(np.int64), v=mate[x].astype(np.int64), claim=claim)

    def mate(self, n: int) -> np.ndarray:
        """The mate array of a matching (every vertex in at most one pair), -1 unmatched.

        Raises
        ------
        ValueError
            When a vertex is in two pairs (a b-matching is not a mate array).
        """
        u = np.asarray(self.u, dtype=np.int64)
        v = np.asarray(self.v, dtype=np.int64)
        both = np.concatenate([u, v])
        if both.size and np.bincount(both, minlength=n).max() > 1:
            raise ValueError("a vertex is in two pairs: not a matching")
        mate = np.full(n, -1, dtype=np.int64)
        mate[u] = v
        mate[v] = u
        return mate


# ---------------------------------------------------------------------------------------
# The certificate (numba)


@njit(cache=True, nogil=True)
def _mark_pairs(n, ptr, ind, mu, mv, matched):
    """Mark both CSR entries of every pair; ``(code, k)`` of the first bad pair or ``(0, -1)``.

    Codes: 1 index out of range, 2 a vertex paired with itself, 3 not an edge, 4 listed twice.
    """
    for k in range(mu.shape[0]):
        x = mu[k]
        y = mv[k]
        if x < 0 or x >= n or y < 0 or y >= n:
            return 1, k
        if x == y:
            return 2, k
        p = csr_find(ptr, ind, x, y)
        if p < 0:
            return 3, k
        if matched[p]:
            return 4, k
        q = csr_find(ptr, ind, y, x)
        matched[p] = True
        matched[q] = True
    return 0, -1


@njit(cache=True, nogil=True)
def _greedy_certificate(n, ptr, ind, w, cap, matched):
    """Capacity check, weight and blocking-edge search over a marked b-matching.

    Returns ``(code, x, y, weight)``: code 1, vertex x holds y > b(x) matched edges; code 2,
    edge (x, y) blocks; 0, no defect (x = y = -1). ``weight`` sums the matched edges in CSR
    order (so that equal answers give equal sums, bit for bit). O(n + m).
    """
    count = np.zeros(n, dtype=np.int64)
    low = np.full(n, -1, dtype=np.int64)  # CSR position of x's lowest matched edge
    weight = 0.0
    for x in range(n):
        for p in range(ptr[x], ptr[x + 1]):
            if not matched[p]:
                continue
            y = ind[p]
            count[x] += 1
            if x < y:
                weight += w[p]
            q = low[x]
            if q < 0 or precedes(w[q], x, ind[q], w[p], x, y):
                low[x] = p
        if count[x] > cap[x]:
            return 1, x, count[x], weight
    for x in range(n):
        for p in range(ptr[x], ptr[x + 1]):
            y = ind[p]
            if y <= x or matched[p]:
                continue
            wp = w[p]
            # x accepts (x, y): room left, or its lowest matched edge comes after (x, y).
            qx = low[x]
            if count[x] >= cap[x] and not (qx >= 0 and precedes(wp, x, y, w[qx], x, ind[qx])):
                continue
            qy = low[y]
            if count[y] >= cap[y] and not (qy >= 0 and precedes(wp, x, y, w[qy], y, ind[qy])):
                continue
            return 2, x, y, weight
    return 0, -1, -1, weight


@njit(cache=True, nogil=True)
def _vertex_bound(n, ptr, w, cap):
    """``sum_v (sum of the b(v) heaviest weights at v) / 2``: no b-matching weighs more."""
    total = 0.0
    for x in range(n):
        lo = ptr[x]
        hi = ptr[x + 1]
        k = min(cap[x], hi - lo)
        if k <= 0:
            continue
        if k == 1:
            best = 0.0
            for p in range(lo, hi):
                if w[p] > best:
                    best = w[p]
            total += best
        else:
            s = np.sort(w[lo:hi])
            for t in range(hi - lo - k, hi - lo):
                total += s[t]
    return total / 2.0


_exact_cache: weakref.WeakKeyDictionary[WeightedGraph, float] = weakref.WeakKeyDictionary()


def exact_max_weight(graph: WeightedGraph) -> float | None:
    """The maximum weight of a matching of ``graph`` (``b = 1``), or None when not computed.

    networkx's ``max_weight_matching`` (Galil's O(n^3) blossom algorithm after Edmonds),
    for graphs within :data:`EXACT_MAX_VERTICES` and :data:`EXACT_MAX_EDGES` only, and None
    for b-matching instances. Cached per instance object.
    """
    if not graph.is_matching:
        return None
    if graph.n > EXACT_MAX_VERTICES or graph.n_edges > EXACT_MAX_EDGES:
        return None
    if graph in _exact_cache:
        return _exact_cache[graph]
    mate = exact_matching(graph)
    value = _weight_of(graph, WMatching.from_mate(mate))
    _exact_cache[graph] = value
    return value


def exact_matching(graph: WeightedGraph) -> np.ndarray:
    """A maximum weight matching as a mate array, by networkx (no size limit here)."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(graph.n))
    u, v, w = graph.edges()
    g.add_weighted_edges_from(zip(u.tolist(), v.tolist(), w.tolist(), strict=True))
    mate = np.full(graph.n, -1, dtype=np.int64)
    for a, c in nx.max_weight_matching(g, maxcardinality=False):
        mate[a] = c
        mate[c] = a
    return mate


@njit(cache=True, nogil=True)
def _matched_weight(n, ptr, ind, w, matched):
    """Sum of the matched edges' weights in CSR order (equal answers, equal sums)."""
    total = 0.0
    for x in range(n):
        for p in range(ptr[x], ptr[x + 1]):
            if matched[p] and x < ind[p]:
                total += w[p]
    return total


def _weight_of(graph: WeightedGraph, m: WMatching) -> float:
    """Weight of a valid matching ``m`` of ``graph``."""
    matched = np.zeros(graph.ind.shape[0], dtype=np.bool_)
    mu, mv = np.asarray(m.u, np.int64), np.asarray(m.v, np.int64)
    code, k = _mark_pairs(graph.n, graph.ptr, graph.ind, mu, mv, matched)
    if code:
        raise ValueError(f"{graph.name}: pair {k} is not a matched edge of the graph")
    return float(_matched_weight(graph.n, graph.ptr, graph.ind, graph.weight, matched))


def _pairs(graph: WeightedGraph, solution: Any) -> tuple[np.ndarray, np.ndarray, str] | str:
    """The answer as int64 pair arrays and its claim, or why it is not a well-formed answer."""
    n = graph.n
    if isinstance(solution, WMatching):
        claim = solution.claim
        if claim not in ("greedy", "optimal"):
            return f"claim {claim!r} is neither 'greedy' nor 'optimal'"
        u, v = np.asarray(solution.u), np.asarray(solution.v)
        for label, a in (("u", u), ("v", v)):
            if a.ndim != 1 or a.dtype.kind not in "iu":
                return f"pair array {label} must be a 1-D integer array, got {a.dtype} {a.shape}"
        if u.shape != v.shape:
            return f"pair arrays differ in length ({u.shape[0]}, {v.shape[0]})"
        return u.astype(np.int64), v.astype(np.int64), claim
    if isinstance(solution, np.ndarray):
        mate = solution
        if mate.shape != (n,):
            return f"mate array has shape {mate.shape}, expected ({n},)"
        if mate.dtype.kind not in "iu":
            return f"mate array has dtype {mate.dtype}, expected integers"
        mate = mate.astype(np.int64)
        bad = (mate < -1) | (mate >= n)
        if bad.any():
            x = int(np.flatnonzero(bad)[0])
            return f"mate[{x}] = {mate[x]} is not a vertex index in [-1, {n})"
        x_all = np.flatnonzero(mate >= 0)
        self_ = x_all[mate[x_all] == x_all]
        if self_.size:
            return f"vertex {int(self_[0])} is its own mate"
        back = mate[mate[x_all]] != x_all
        if back.any():
            x = int(x_all[np.flatnonzero(back)[0]])
            y = int(mate[x])
            return f"mate[{x}] = {y} but mate[{y}] = {int(mate[y])}"
        m = WMatching.from_mate(mate)
        return m.u, m.v, "greedy"
    return f"expected a WMatching or a mate array, got {type(solution).__name__}"


class WMatch(Problem):
    """Half-approximate maximum weight (b-)matching on a general graph: the greedy answer.

    An instance is a :class:`WeightedGraph`, an answer a :class:`WMatching` (or a mate array
    for ``b = 1``); the objective is its weight. Every half-approximation solver must return
    exactly the greedy (b-)matching of the global edge order (module docstring), which is
    unique, so answers are compared edge for edge across solvers and devices.

    Notes
    -----
    Naim, Manne, Halappanavar, Tumeo, Langguth, *Optimizing approximate weighted matching on
    Nvidia Kepler K40*, HiPC 2015 (paper I of Naim's 2017 thesis), Sec. 2: the
    locally-dominant (Alg. 1-2) and Suitor (Alg. 3) algorithms compute the greedy matching
    when ties are broken consistently; Khan et al., *Efficient approximation algorithms for
    weighted b-matching*, SISC 38(5), 2016: b-Suitor computes the greedy b-matching.
    """

    name: ClassVar[str] = "wmatch"
    objective: ClassVar[str] = "weight"
    sense: ClassVar[str] = "max"
    exact: ClassVar[bool] = False
    #: Suitor's and b-Suitor's proposals per second of the solve
    rate_columns: ClassVar[dict[str, str]] = {"proposals_per_s": "proposals"}

    def verify(self, instance: WeightedGraph, solution: Any) -> Verification:
        """Certify that ``solution`` is the greedy (b-)matching of ``instance``.

        Parameters
        ----------
        instance : WeightedGraph
        solution : WMatching or ndarray
            The matched edges, or for ``b = 1`` a mate array (-1 for unmatched vertices).

        Returns
        -------
        Verification
            ``verified`` only if the answer is a valid b-matching (pairs are edges, listed
            once, within every capacity) and no edge blocks it (module docstring); for an
            answer claiming ``"optimal"``, instead only if it is valid and weighs the exact
            optimum (within :data:`OPTIMUM_RTOL`), which the verifier computes itself.
            ``objective`` is the recomputed weight (NaN for an invalid answer); ``bound`` an
            upper bound on the optimum (module docstring); ``reference`` the exact optimum
            where :func:`exact_max_weight` computes it. ``reason`` names the offending edge or
            vertex and says "wmatch".

        Notes
        -----
        The blocking-edge certificate is the stability argument of Manne, Naim, Lerring &
        Halappanavar, *On stable marriages and greedy matchings* (paper IV of Naim's thesis),
        Sec. 3: with rankings from the edge weights, the greedy matching is the unique stable
        one (no edge whose endpoints both prefer it); here with capacities, as b-Suitor's
        greedy b-matching (Khan et al. 2016). O(n + m + k log d) for k pairs and maximum
        degree d (the bound of a b > 1 instance sorts each adjacency list: O(m log d)).
        """
        nan = float("nan")
        where = f"wmatch answer on {instance.name!r}"
        got = _pairs(instance, solution)
        if isinstance(got, str):
            return Verification(False, f"{where}: invalid: {got}", nan)
        mu, mv, claim = got
        n = instance.n
        matched = np.zeros(instance.ind.shape[0], dtype=np.bool_)
        code, k = _mark_pairs(n, instance.ptr, instance.ind, mu, mv, matched)
        if code:
            x, y = int(mu[k]), int(mv[k])
            why = {
                1: f"pair {k} ({x}, {y}) has a vertex outside [0, {n})",
                2: f"pair {k} matches vertex {x} with itself",
                3: f"pair {k} ({x}, {y}) is not an edge of the graph",
                4: f"edge ({x}, {y}) is listed twice",
            }[int(code)]
            return Verification(False, f"{where}: invalid: {why}", nan)
        cap = instance.capacity.astype(np.int64)
        code, x, y, weight = _greedy_certificate(
            n, instance.ptr, instance.ind, instance.weight, cap, matched
        )
        if code == 1:
            return Verification(
                False,
                f"{where}: invalid: vertex {int(x)} is in {int(y)} matched edges, "
                f"above its capacity b = {int(cap[x])}",
                nan,
            )
        weight = float(weight)
        vbound = float(_vertex_bound(n, instance.ptr, instance.weight, cap))
        reference = exact_max_weight(instance)
        if claim == "optimal":
            if reference is None:
                return Verification(
                    False,
                    f"{where}: an answer claiming optimality is only certified for b = 1 graphs "
                    f"of at most {EXACT_MAX_VERTICES} vertices and {EXACT_MAX_EDGES} edges",
                    weight,
                    bound=vbound,
                )
            if abs(weight - reference) > OPTIMUM_RTOL * max(1.0, abs(reference)):
                return Verification(
                    False,
                    f"{where}: claimed optimal but weighs {weight!r}, the optimum is {reference!r}",
                    weight,
                    bound=vbound,
                    reference=reference,
                )
            # certified equal to the optimum: its weight is the tightest bound
            return Verification(True, None, weight, bound=reference, reference=reference)
        if code == 2:
            pos = csr_find(instance.ptr, instance.ind, x, y)
            return Verification(
                False,
                f"{where}: not the greedy matching: unmatched edge ({int(x)}, {int(y)}) of weight "
                f"{float(instance.weight[pos])!r} blocks (each endpoint has room or holds a matched edge "
                f"later in the global order)",
                weight,
                bound=vbound,
                reference=reference,
            )
        bound = min(2.0 * weight, vbound)
        return Verification(True, None, weight, bound=bound, reference=reference)
