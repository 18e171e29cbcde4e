"""The Leiden algorithm, sequential (CPU, numba): our own implementation.

Traag, Waltman & van Eck, *From Louvain to Leiden: guaranteeing well-connected
communities*, Sci. Rep. 9, 5233 (2019), Supplementary Information, Algorithm A.2 (the
Leiden algorithm's pseudo-code: functions ``Leiden``, ``MoveNodesFast``,
``RefinePartition``, ``MergeNodesSubset``, ``AggregateGraph``, ``SingletonPartition``),
for modularity with a resolution ``gamma`` (the paper's quality function with node
weights ``||v|| = k_v``, the weighted degree, and resolution ``gamma / 2m``). The line
numbers in the comments below are those of Algorithm A.2 as we read it:

- ``Leiden`` (lines 1-12): repeat {MoveNodesFast; stop when every community is a single
  node (line 4); RefinePartition; AggregateGraph on the *refined* partition (line 7); the
  aggregate's initial partition is the *non-refined* one (line 8)}; return flat(P).
- ``MoveNodesFast`` (lines 13-25): a queue of every node in random order; a popped node
  goes to the community of best gain (an empty one included, line 17) if the gain is
  strictly positive (line 18); its neighbours outside its new community join the queue
  (lines 20-21) unless already queued.
- ``RefinePartition`` (lines 26-32): from singletons (line 27), ``MergeNodesSubset`` in
  each community.
- ``MergeNodesSubset`` (lines 33-43): only well-connected nodes ``v`` (line 34:
  ``E(v, S - v) >= gamma/2m k_v (K_S - k_v)``), visited in random order (line 35), and only
  while still singletons (line 36), join a well-connected sub-community ``C`` of ``S``
  (line 37: ``E(C, S - C) >= gamma/2m K_C (K_S - K_C)``) chosen at random with probability
  proportional to ``exp(dH / theta)`` among those with ``dH >= 0`` (line 38; staying
  alone, ``dH = 0``, is one of them).
- ``AggregateGraph`` (lines 44-48): one node per refined community, edges summed, the
  edges inside a refined community its self-loop (the community module's loop
  convention): the sequential Louvain's contraction
  (:func:`matchbench.families.community.louvain._contract`), run on the refined labels.

Every community is connected at the end (a node only joins a sub-community it has an edge
to, so every node of every aggregate is a connected set of vertices, and the algorithm
ends when each community is one such node): answers claim it (``Partition.connected``)
and the verifier checks it
(:func:`~matchbench.families.community.connectivity.disconnected_communities`).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.params import (
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from matchbench.families.community.louvain import (
    _CommunityCPU,
    _contract,
    _csr64,
    _quality,
    _renumber,
    _tiny,
    _weighted_degrees,
)
from matchbench.families.community.problem import Partition
from matchbench.graphs.weighted import WeightedGraph

__all__ = ["Leiden", "check_params", "leiden"]

#: Relative size (to ``k_v``) of the least gain a move must make in ``MoveNodesFast``:
#: line 18 asks for a strictly positive gain, and this keeps rounding noise in the running
#: community weights from moving a node back and forth between two equally good communities.
MOVE_RTOL = 1e-12


# ---------------------------------------------------------------------------------------
# Kernels (numba). A level's graph: CSR (ptr, ind, w) without self-loops, the self-loops
# ``loop`` made by aggregation, node weights ``k`` (weighted degrees, loops counted twice);
# ``r = gamma / 2m``. Gains are in units of edge weight: dH = m * dQ for gamma = 1, i.e.
# e(v, C) - r k_v K_C (modularity in the paper's constant Potts form: node weights k_v,
# resolution gamma / 2m), as igraph's igraph_community_leiden uses them (its beta is our
# theta); with dQ itself, theta = 0.01 would make line 38's choice nearly uniform on a
# large graph, where every dQ is O(1/m).


@njit(cache=True, nogil=True)
def _seed(seed):
    """Seed numba's generator (its own, per thread; numpy's is untouched)."""
    np.random.seed(seed)


@njit(cache=True, nogil=True)
def _move_nodes_fast(n, ptr, ind, w, k, comm, r):
    """Alg. A.2 MoveNodesFast (lines 13-25) on one level, ``comm`` (ids < n) in place.

    Returns the number of node moves.
    """
    a = np.zeros(n, dtype=np.float64)  # K_C, community weights
    size = np.zeros(n, dtype=np.int64)
    for i in range(n):
        a[comm[i]] += k[i]
        size[comm[i]] += 1
    empty = np.empty(n, dtype=np.int64)  # a stack of unused community ids: line 17's "∅"
    n_empty = 0
    for c in range(n - 1, -1, -1):
        if size[c] == 0:
            empty[n_empty] = c
            n_empty += 1
    # line 14: every node in the queue, in random order; each at most once in it (line 21's
    # "N - Q"), so a ring of n slots holds it
    queue = np.random.permutation(n)
    queued = np.ones(n, dtype=np.bool_)
    head = 0
    count = n
    acc = np.zeros(n, dtype=np.float64)
    seen = np.zeros(n, dtype=np.bool_)
    touched = np.empty(n, dtype=np.int64)
    moves = 0
    while count > 0:  # line 23
        v = queue[head]  # line 16
        head += 1
        if head == n:
            head = 0
        count -= 1
        queued[v] = False
        cv = comm[v]
        kv = k[v]
        a[cv] -= kv  # v out of its community: the gains below are of v joining each C
        size[cv] -= 1
        nt = 0
        for p in range(ptr[v], ptr[v + 1]):
            c = comm[ind[p]]
            if not seen[c]:
                seen[c] = True
                touched[nt] = c
                nt += 1
            acc[c] += w[p]
        stay = acc[cv] - r * kv * a[cv]
        best = cv
        best_gain = stay
        for t in range(nt):  # line 17: the best community; ties keep the first found
            c = touched[t]
            if c != cv:
                gain = acc[c] - r * kv * a[c]
                if gain > best_gain:
                    best = c
                    best_gain = gain
            acc[c] = 0.0
            seen[c] = False
        if size[cv] > 0 and best_gain < 0.0 and n_empty > 0:  # the empty community: gain 0
            best = empty[n_empty - 1]
            best_gain = 0.0
        if best != cv and best_gain - stay > MOVE_RTOL * kv:  # line 18: strictly positive
            if n_empty > 0 and best == empty[n_empty - 1]:
                n_empty -= 1
            if size[cv] == 0:
                empty[n_empty] = cv
                n_empty += 1
            a[best] += kv  # line 19
            size[best] += 1
            comm[v] = best
            moves += 1
            for p in range(ptr[v], ptr[v + 1]):  # lines 20-21
                u = ind[p]
                if not queued[u] and comm[u] != best:
                    queued[u] = True
                    tail = head + count
                    if tail >= n:
                        tail -= n
                    queue[tail] = u
                    count += 1
        else:
            a[cv] += kv
            size[cv] += 1
    return moves


@njit(cache=True, nogil=True)
def _refine(n, ptr, ind, w, k, comm, n_comm, r, theta):
    """Alg. A.2 RefinePartition (lines 26-32) with MergeNodesSubset (lines 33-43).

    ``comm``: the partition P (dense ids < ``n_comm``). Returns ``(refined, merges)``: the
    refined partition (ids < n, not dense: a sub-community keeps the id of the node it
    started from) and the number of nodes merged. ``theta > 0``: the random choice of
    line 38; ``theta == 0``: the greedy choice (its limit), ties to staying alone, then to
    the first sub-community found.
    """
    refined = np.arange(n)  # line 27: SingletonPartition
    cw = k.copy()  # K_C of each sub-community (id: the node it started from)
    size = np.ones(n, dtype=np.int64)
    ext = np.zeros(n, dtype=np.float64)  # E(C, S - C)
    big = np.zeros(n_comm, dtype=np.float64)  # K_S
    for v in range(n):
        s = comm[v]
        big[s] += k[v]
        for p in range(ptr[v], ptr[v + 1]):
            if comm[ind[p]] == s:
                ext[v] += w[p]
    # lines 28 and 35: community by community, the nodes of each in random order (a random
    # permutation, then a stable bucket sort by community)
    order = np.random.permutation(n)
    start = np.zeros(n_comm + 1, dtype=np.int64)
    for v in range(n):
        start[comm[v] + 1] += 1
    for s in range(n_comm):
        start[s + 1] += start[s]
    pos = start[:n_comm].copy()
    visit = np.empty(n, dtype=np.int64)
    for t in range(n):
        v = order[t]
        visit[pos[comm[v]]] = v
        pos[comm[v]] += 1
    acc = np.zeros(n, dtype=np.float64)
    seen = np.zeros(n, dtype=np.bool_)
    touched = np.empty(n, dtype=np.int64)
    gains = np.empty(n, dtype=np.float64)
    merges = 0
    for t in range(n):
        v = visit[t]
        s = comm[v]
        kv = k[v]
        ks = big[s]
        if size[v] != 1:  # line 36: v was joined by others, or has moved
            continue
        if ext[v] < r * kv * (ks - kv):  # line 34: v is not well connected to S
            continue
        nt = 0
        for p in range(ptr[v], ptr[v + 1]):
            u = ind[p]
            if comm[u] != s:
                continue
            c = refined[u]
            if not seen[c]:
                seen[c] = True
                touched[nt] = c
                nt += 1
            acc[c] += w[p]
        # line 37 and 38's "dH >= 0": the candidates, their gains kept in ``gains``; staying
        # alone is the candidate v itself (gain 0)
        best = v
        best_gain = 0.0
        for i in range(nt):
            c = touched[i]
            seen[c] = False
            gain = acc[c] - r * kv * cw[c]
            if ext[c] >= r * cw[c] * (ks - cw[c]) and gain >= 0.0:
                gains[i] = gain
                if gain > best_gain:
                    best = c
                    best_gain = gain
            else:
                gains[i] = -1.0
        chosen = best
        if theta > 0.0 and nt > 0:
            # line 38: Pr(C) ~ exp(dH / theta), shifted by the best dH so that nothing
            # overflows (the same distribution)
            total = np.exp(-best_gain / theta)  # staying alone
            for i in range(nt):
                if gains[i] >= 0.0:
                    total += np.exp((gains[i] - best_gain) / theta)
            x = np.random.random() * total
            cum = np.exp(-best_gain / theta)
            chosen = v
            if x >= cum:
                for i in range(nt):
                    if gains[i] >= 0.0:
                        chosen = touched[i]
                        cum += np.exp((gains[i] - best_gain) / theta)
                        if x < cum:
                            break
        if chosen != v:  # line 39
            e_to = acc[chosen]
            cw[chosen] += kv
            size[chosen] += 1
            ext[chosen] += ext[v] - 2.0 * e_to  # v's edges to C turn inside, the rest out
            cw[v] = 0.0
            size[v] = 0
            ext[v] = 0.0
            refined[v] = chosen
            merges += 1
        for i in range(nt):
            acc[touched[i]] = 0.0
    return refined, merges


@njit(cache=True, nogil=True)
def _pieces(n, ptr, ind, comm):
    """The connected pieces of every community of ``comm`` (dense ids, depth-first)."""
    lab = np.full(n, -1, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    k = 0
    for s in range(n):
        if lab[s] >= 0:
            continue
        lab[s] = k
        stack[0] = s
        top = 1
        while top > 0:
            top -= 1
            x = stack[top]
            for p in range(ptr[x], ptr[x + 1]):
                y = ind[p]
                if lab[y] < 0 and comm[y] == comm[x]:
                    lab[y] = k
                    stack[top] = y
                    top += 1
        k += 1
    return lab, k


@njit(cache=True, nogil=True)
def _lift(n, lab, comm, k):
    """Line 8: the aggregate's initial partition, ``P[lab[v]] = comm[v]``."""
    out = np.empty(k, dtype=np.int64)
    for v in range(n):
        out[lab[v]] = comm[v]
    return out


# ---------------------------------------------------------------------------------------
# The driver


def check_params(resolution: Any, theta: Any, max_iterations: Any, seed: Any) -> None:
    """The one check of :func:`leiden`'s and :class:`Leiden`'s parameters; ``ValueError``
    naming the parameter."""
    positive_float("leiden: resolution", resolution)
    non_negative_float("leiden: theta", theta)
    positive_int("leiden: max_iterations", max_iterations)
    non_negative_int("leiden: seed", seed)


def leiden(
    graph: WeightedGraph,
    resolution: float = 1.0,
    theta: float = 0.01,
    max_iterations: int = 1000,
    seed: int = 1,
) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """The Leiden algorithm (Traag, Waltman & van Eck 2019, Alg. A.2), iterated to a fixed point.

    Parameters
    ----------
    graph : WeightedGraph
    resolution : float
        ``gamma`` of the quality function (1: modularity). The claimed and verified Q is
        modularity (``gamma = 1``) whatever its value.
    theta : float
        The randomness of the refinement (line 38; the paper's default 0.01), relative to
        gains in units of edge weight (``m * dQ``); 0: the greedy choice.
    max_iterations : int
        Iterations of the whole algorithm at most: each starts from the previous one's
        partition, and the method stops at the first that changes nothing.
    seed : int
        The random node orders and refinement choices: the same seed, the same answer.

    Returns
    -------
    (Partition, counters, timings)
        The partition (dense ids numbered by their smallest vertex; ``levels`` the
        refined partitions of the last iteration's levels, composed to ``community``,
        None when it aggregated nothing; ``modularity`` computed on the last aggregate
        graph; ``connected`` True); counters ``iterations``, ``levels`` (of the last
        iteration), ``moves``, ``merges`` (refinement), ``fallbacks`` (see Notes),
        ``communities``, ``iteration_levels`` and ``iteration_q`` (lists, one per
        iteration); timings ``move``, ``refine`` and ``aggregate`` seconds (totals).

    Raises
    ------
    ValueError
        Naming the parameter, for a bad one.

    Notes
    -----
    Traag, Waltman & van Eck, Sci. Rep. 9, 5233 (2019), Supplementary Algorithm A.2, for
    modularity: node weights ``k_v`` and resolution ``gamma / 2m`` in the constant Potts
    form of the quality function. The paper's experiments iterate the algorithm until an
    iteration changes nothing; so do we (up to ``max_iterations``).

    One safeguard the pseudo-code leaves out: when the refinement merges nothing (every
    node of the level stays alone, which the random choice of line 38 or a gain of
    exactly 0 allow), aggregating would rebuild the same graph and partition and loop; we
    then aggregate the connected pieces of P's communities instead (a refinement too: each
    piece is a connected subset of one community), which always merges nodes (a community
    of two or more nodes has an edge inside, else its nodes would move out). Counted as
    ``fallbacks``. The connectivity guarantee holds throughout.
    """
    check_params(resolution, theta, max_iterations, seed)
    return _leiden(*_csr64(graph), float(resolution), float(theta), int(max_iterations), int(seed))


def _canonical(labels: np.ndarray) -> np.ndarray:
    """Dense ids numbered in the order of their smallest member (a partition's one form)."""
    uniq, first = np.unique(labels, return_index=True)
    relabel = np.empty(int(uniq[-1]) + 1 if uniq.size else 0, dtype=np.int64)
    relabel[uniq[np.argsort(first)]] = np.arange(uniq.shape[0], dtype=np.int64)
    return relabel[labels]


def _iteration(
    n0: int,
    ptr0: np.ndarray,
    ind0: np.ndarray,
    w0: np.ndarray,
    k0: np.ndarray,
    start: np.ndarray,
    r: float,
    theta: float,
    stats: dict[str, Any],
    timings: dict[str, float],
) -> tuple[np.ndarray, list[np.ndarray], float]:
    """One run of Alg. A.2 ``Leiden`` (lines 1-12) from the partition ``start``.

    Returns the flat partition (canonical ids), the levels (composed, they give it) and
    its modularity (on the last aggregate: one node per community).
    """
    n, ptr, ind, w, k = n0, ptr0, ind0, w0, k0
    loop = np.zeros(n0, dtype=np.float64)
    comm = start.copy()
    levels: list[np.ndarray] = []
    while True:  # lines 2-10
        t0 = time.perf_counter()
        stats["moves"] += int(_move_nodes_fast(n, ptr, ind, w, k, comm, r))  # line 3
        comm, n_comm = _renumber(n, comm)
        n_comm = int(n_comm)
        t1 = time.perf_counter()
        timings["move"] += t1 - t0
        if n_comm == n:  # line 4: every community a single node
            break
        refined, merges = _refine(n, ptr, ind, w, k, comm, n_comm, r, theta)  # line 6
        stats["merges"] += int(merges)
        lab, n_ref = _renumber(n, refined)
        n_ref = int(n_ref)
        if n_ref == n:  # nothing merged: the pieces of P's communities (see leiden's Notes)
            lab, n_ref = _pieces(n, ptr, ind, comm)
            n_ref = int(n_ref)
            stats["fallbacks"] += 1
        t2 = time.perf_counter()
        timings["refine"] += t2 - t1
        ptr, ind, w, loop = _contract(n, ptr, ind, w, loop, lab, n_ref)  # line 7 (AggregateGraph, lines 44-48)
        comm = _lift(n, lab, comm, n_ref)  # line 8: P kept on the aggregate
        levels.append(lab)
        n = n_ref
        k = _weighted_degrees(n, ptr, w, loop)
        timings["aggregate"] += time.perf_counter() - t2
    # line 11, flat(P): each community is one node of the last graph, its id comm[node]
    two_m = float(k0.sum())
    q = float(_quality(n, ptr, ind, w, loop, np.arange(n), k, two_m)) if two_m > 0 else 0.0
    if levels:
        flat = np.arange(n0, dtype=np.int64)
        for lab in levels:
            flat = lab[flat]
        flat = comm[flat]
    else:
        flat = comm
    community = _canonical(flat)
    if levels:
        # the last level maps to the final ids directly: levels compose to ``community``
        relabel = np.empty(n, dtype=np.int64)
        relabel[flat] = community
        levels[-1] = relabel[comm[levels[-1]]]
    return community, levels, q


def _leiden(
    n0: int,
    ptr: np.ndarray,
    ind: np.ndarray,
    w: np.ndarray,
    resolution: float,
    theta: float,
    max_iterations: int,
    seed: int,
) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """:func:`leiden` on an int64 CSR (parameters checked by the caller)."""
    _seed(seed)
    k0 = _weighted_degrees(n0, ptr, w, np.zeros(n0, dtype=np.float64))
    two_m = float(k0.sum())
    r = resolution / two_m if two_m > 0 else 0.0
    stats: dict[str, Any] = {"moves": 0, "merges": 0, "fallbacks": 0}
    timings = {"move": 0.0, "refine": 0.0, "aggregate": 0.0}
    it_levels: list[int] = []
    it_q: list[float] = []
    community = np.arange(n0, dtype=np.int64)  # SingletonPartition, the first start
    levels: list[np.ndarray] = []
    q = 0.0
    for _ in range(max_iterations):
        new, levels, q = _iteration(n0, ptr, ind, w, k0, community, r, theta, stats, timings)
        it_levels.append(len(levels))
        it_q.append(q)
        same = np.array_equal(new, community)
        community = new
        if same:
            break
    counters: dict[str, Any] = {
        "iterations": len(it_q),
        "levels": len(levels),
        **stats,
        "communities": int(community.max()) + 1 if n0 else 0,
        "iteration_levels": it_levels,
        "iteration_q": it_q,
    }
    answer = Partition(community, levels or None, q, connected=True)
    return answer, counters, timings


# ---------------------------------------------------------------------------------------
# The solver


class Leiden(_CommunityCPU):
    """The Leiden algorithm of Traag, Waltman & van Eck 2019, sequential (numba); see
    :func:`leiden`.

    Parameters
    ----------
    resolution : float
        ``gamma`` (1: modularity).
    theta : float
        Randomness of the refinement (0.01, the paper's; 0: greedy).
    max_iterations : int
        Iterations of the whole algorithm at most (it stops at the first that changes
        nothing).
    seed : int
        The random stream (node orders, refinement choices): deterministic given it.

    Notes
    -----
    Traag, Waltman & van Eck, *From Louvain to Leiden: guaranteeing well-connected
    communities*, Sci. Rep. 9, 5233 (2019), Supplementary Algorithm A.2. The answer claims
    connected communities (``Partition.connected``), which the verifier checks. Counters
    and timings as :func:`leiden` (``iterations`` fills the row's column; the rest go to
    ``counters_json``, the phase seconds to ``phases_json``).
    """

    name: ClassVar[str] = "leiden"

    def __init__(self, *, resolution: float, theta: float, max_iterations: int, seed: int) -> None:
        check_params(resolution, theta, max_iterations, seed)  # here, not per run
        super().__init__(
            resolution=resolution, theta=theta, max_iterations=max_iterations, seed=seed
        )

    def _warm(self) -> None:
        for theta in (0.0, 0.01):
            leiden(_tiny(), theta=theta)

    def run(self) -> None:
        if self._csr is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        p = self.params
        self._answer, self._counters, self._timings = _leiden(
            *self._csr,
            float(p["resolution"]),
            float(p["theta"]),
            int(p["max_iterations"]),
            int(p["seed"]),
        )
