"""CPU references for community detection by modularity (the Louvain method).

- :class:`Louvain` (``louvain``): the Louvain method of Naim, Manne, Halappanavar & Tumeo,
  *Community Detection on the GPU*, IPDPS 2017 (paper III of Naim's 2017 thesis), run
  sequentially in numba: Alg. 1 (modularity optimization, Eq. 2 gains) with its move rules
  and thresholds, Alg. 3 (aggregation), stages until no improvement. The host reference of
  the GPU solver: same rules, same thresholds.
- :class:`NkPLM` (``nk_plm``): NetworKit's parallel Louvain method (PLM, Staudt & Meyerhenke
  2016), every core by default.
- :class:`IgraphLouvain` (``igraph_louvain``): igraph's ``community_multilevel`` (Blondel et
  al. 2008).
- :class:`NxLouvain` (``nx_louvain``): networkx's ``louvain_partitions`` (pure Python), small
  graphs only (:data:`NX_MAX_VERTICES`, :data:`NX_MAX_EDGES`).

Every solver returns a :class:`~matchbench.families.community.problem.Partition` with dense ids, the
hierarchy where the library gives one, and the modularity it claims (its own computation:
ours on the contracted graph for ``louvain``, the library's for the others); the verifier
recomputes Q from the partition alone. Library graphs are built in ``prepare`` (untimed);
the libraries' own Q is computed in ``result`` (untimed on the CPU).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.params import (
    boolean,
    host_cores,
    non_negative_float,
    non_negative_int,
    parse_threads,
    positive_int,
)
from matchbench.core.solver import BaseSolver
from matchbench.families.community.problem import Partition
from matchbench.graphs.weighted import WeightedGraph

__all__ = [
    "BIN_LIMIT",
    "NX_MAX_EDGES",
    "NX_MAX_VERTICES",
    "IgraphLouvain",
    "Louvain",
    "NkPLM",
    "NxLouvain",
    "louvain",
    "stage_totals",
]

#: Graphs with more vertices than this use ``t_bin``, smaller ones ``t_final`` (Naim et al.
#: 2017, Sec. 5, after Lu et al. 2015: 100,000 vertices).
BIN_LIMIT = 100_000
#: Largest graphs (vertices, undirected edges) ``nx_louvain`` runs: pure Python, about 10 s
#: at 100,000 edges.
NX_MAX_VERTICES = 50_000
NX_MAX_EDGES = 100_000


def stage_totals(timings: dict[str, float]) -> dict[str, float]:
    """``timings`` with ``optimize`` and ``aggregate`` added: the sums of the per-stage
    ``level{r}_optimize`` and ``level{r}_aggregate`` seconds (the stage breakdown); and
    ``host_tail`` where a ``level{r}_host_tail`` is there (``louvain_gpu``'s option)."""
    out = dict(timings)
    for what in ("optimize", "aggregate", "host_tail"):
        parts = [v for k, v in timings.items() if k.startswith("level") and k.endswith(f"_{what}")]
        if parts or what != "host_tail":
            out[what] = sum(parts)
    return out


# ---------------------------------------------------------------------------------------
# Kernels (numba). A level's graph: CSR (ptr, ind, w) without self-loops and the self-loop
# weights ``loop`` made by aggregation (community module docstring: a loop counts twice in
# k_i and in e_{i -> C(i)}, once in m).


@njit(cache=True, nogil=True)
def _weighted_degrees(n, ptr, w, loop):
    k = np.empty(n, dtype=np.float64)
    for i in range(n):
        s = 2.0 * loop[i]
        for p in range(ptr[i], ptr[i + 1]):
            s += w[p]
        k[i] = s
    return k


@njit(cache=True, nogil=True)
def _quality(n, ptr, ind, w, loop, comm, a, two_m):
    """Eq. 1 from the running community degrees ``a`` (indexed by community id < n)."""
    inside = 0.0
    for i in range(n):
        ci = comm[i]
        inside += 2.0 * loop[i]
        for p in range(ptr[i], ptr[i + 1]):
            if comm[ind[p]] == ci:
                inside += w[p]
    spread = 0.0
    for c in range(n):
        spread += a[c] * a[c]
    return inside / two_m - spread / (two_m * two_m)


# inlined into its callers' loops (here, 23.7-25.1 ns per CSR entry an optimization pass
# on road graphs instead of 30-41; the whole method 2-13% faster, the same answers)
@njit(cache=True, nogil=True, inline="always")
def _best_move(i, ptr, ind, w, comm, a, size, k, m, acc, touched):
    """Alg. 2 computeMove(i), sequential: the community i should join, or -1 to stay.

    ``acc`` (zero on entry and on exit) plays the hash table ``hashWeight`` keyed by
    community: edge weights are positive, so a zero entry is an empty slot. Only the
    communities of i's neighbours are candidates; the best Eq. 2 gain wins, ties to the
    lowest community id; a gain must be > 0. Then the swap guard of Lu et al. 2015
    (Grappolo), which paper III adopts: if i is a singleton and the winner is a singleton
    with a higher id, i stays.
    """
    ci = comm[i]
    ki = k[i]
    e_own = 0.0  # e_{i -> C(i) \ {i}}: the CSR holds no loop, so j != i
    nt = 0
    for p in range(ptr[i], ptr[i + 1]):
        c = comm[ind[p]]
        if c == ci:
            e_own += w[p]
            continue
        if acc[c] == 0.0:
            touched[nt] = c
            nt += 1
        acc[c] += w[p]
    a_own = a[ci] - ki  # a_{C(i) \ {i}}
    best = -1
    best_gain = 0.0
    scale = ki / (2.0 * m * m)
    for t in range(nt):
        c = touched[t]
        gain = (acc[c] - e_own) / m + scale * (a_own - a[c])  # Eq. 2
        acc[c] = 0.0
        if gain > best_gain or (gain == best_gain and best != -1 and c < best):
            best = c
            best_gain = gain
    if best != -1 and size[ci] == 1 and size[best] == 1 and best > ci:
        best = -1
    return best


@njit(cache=True, nogil=True)
def _optimize(n, ptr, ind, w, loop, threshold, relaxed, max_iterations):
    """Alg. 1 ModOpt on one level, sequential, from singletons.

    Iterates over the vertices (in id order) until an iteration gains less than
    ``threshold`` in Q (Eq. 1, recomputed after each iteration), no vertex moves, or
    ``max_iterations``. ``relaxed``: every move of an iteration is computed from the
    configuration at its start and committed at its end (paper III, Sec. 5, "relaxed"),
    and the last iteration, the one that gained less than ``threshold`` (possibly a loss:
    simultaneous moves can undo each other), is undone, as Grappolo does; otherwise each
    move is committed at once (sequential Louvain: every move gains, Q never drops; the GPU
    commits once per degree bucket, in between).

    Returns ``(comm, q_start, q, iterations, moves)``: community per vertex (ids < n, not
    dense), Q of the singletons, Q at the end, iterations run (the undone one included),
    vertex moves kept.
    """
    k = _weighted_degrees(n, ptr, w, loop)
    two_m = 0.0
    for i in range(n):
        two_m += k[i]
    comm = np.arange(n)
    if two_m == 0.0:
        return comm, 0.0, 0.0, 0, 0
    m = two_m / 2.0
    a = k.copy()
    size = np.ones(n, dtype=np.int64)
    acc = np.zeros(n, dtype=np.float64)
    touched = np.empty(n, dtype=np.int64)
    new = np.empty(n, dtype=np.int64)
    past = np.empty(n, dtype=np.int64)
    q_start = _quality(n, ptr, ind, w, loop, comm, a, two_m)
    q = q_start
    iterations = 0
    moves = 0
    while iterations < max_iterations:
        iterations += 1
        moved = 0
        if relaxed:
            for i in range(n):
                best = _best_move(i, ptr, ind, w, comm, a, size, k, m, acc, touched)
                new[i] = comm[i] if best == -1 else best
            past[:] = comm
            for i in range(n):
                if new[i] != comm[i]:
                    moved += 1
                    comm[i] = new[i]
            _community_degrees(n, comm, k, a, size)
        else:
            for i in range(n):
                best = _best_move(i, ptr, ind, w, comm, a, size, k, m, acc, touched)
                if best != -1:
                    ci = comm[i]
                    a[ci] -= k[i]
                    a[best] += k[i]
                    size[ci] -= 1
                    size[best] += 1
                    comm[i] = best
                    moved += 1
        if moved == 0:
            break
        q_new = _quality(n, ptr, ind, w, loop, comm, a, two_m)
        if relaxed and q_new - q < threshold:
            # Simultaneous moves can lower Q; as Lu et al.'s Grappolo (which computes every
            # move from the previous assignment too), the iteration that did not gain
            # enough is undone: the stage ends with the assignment before it.
            comm[:] = past
            _community_degrees(n, comm, k, a, size)
            break
        moves += moved
        gain = q_new - q
        q = q_new
        if gain < threshold:
            break
    return comm, q_start, q, iterations, moves


@njit(cache=True, nogil=True)
def _community_degrees(n, comm, k, a, size):
    """``a_c`` and the member count of every community, from scratch (Alg. 1 line 11)."""
    a[:] = 0.0
    size[:] = 0
    for i in range(n):
        a[comm[i]] += k[i]
        size[comm[i]] += 1


@njit(cache=True, nogil=True)
def _renumber(n, comm):
    """Alg. 3 lines 2-12: consecutive new ids of the non-empty communities, in id order."""
    new_id = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        new_id[comm[i] + 1] = 1
    for c in range(n):
        new_id[c + 1] += new_id[c]
    lab = np.empty(n, dtype=np.int64)
    for i in range(n):
        lab[i] = new_id[comm[i]]
    return lab, new_id[n]


@njit(cache=True, nogil=True)
def _contract(n, ptr, ind, w, loop, lab, k):
    """Alg. 3 lines 13-23, sequential: the graph of the ``k`` communities ``lab``.

    Members are bucketed by community (prefix sums, lines 15-19), then each community's
    edges are merged (mergeCommunity) in ``acc`` keyed by new vertex; the edges inside a
    community and its members' loops become its loop, their weight sum. Returns the new
    ``(ptr, ind, w, loop)``, rows sorted by neighbour.
    """
    start = np.zeros(k + 1, dtype=np.int64)
    for i in range(n):
        start[lab[i] + 1] += 1
    for c in range(k):
        start[c + 1] += start[c]
    pos = start[:k].copy()
    members = np.empty(n, dtype=np.int64)
    for i in range(n):
        members[pos[lab[i]]] = i
        pos[lab[i]] += 1
    nptr = np.zeros(k + 1, dtype=np.int64)
    nind = np.empty(ind.shape[0], dtype=np.int64)
    nw = np.empty(ind.shape[0], dtype=np.float64)
    nloop = np.zeros(k, dtype=np.float64)
    acc = np.zeros(k, dtype=np.float64)
    touched = np.empty(k, dtype=np.int64)
    e = 0
    for c in range(k):
        nt = 0
        for t in range(start[c], start[c + 1]):
            x = members[t]
            nloop[c] += loop[x]
            for p in range(ptr[x], ptr[x + 1]):
                d = lab[ind[p]]
                if d == c:
                    nloop[c] += 0.5 * w[p]  # each inside edge is seen from both ends
                    continue
                if acc[d] == 0.0:
                    touched[nt] = d
                    nt += 1
                acc[d] += w[p]
        row = np.sort(touched[:nt])
        for t in range(nt):
            d = row[t]
            nind[e] = d
            nw[e] = acc[d]
            acc[d] = 0.0
            e += 1
        nptr[c + 1] = e
    return nptr, nind[:e].copy(), nw[:e].copy(), nloop


# ---------------------------------------------------------------------------------------
# The driver


def louvain(
    graph: WeightedGraph,
    t_bin: float = 1e-2,
    t_final: float = 1e-6,
    bin_limit: int = BIN_LIMIT,
    relaxed: bool = False,
    max_iterations: int = 1000,
) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """The Louvain method of paper III, sequential: stages of Alg. 1 then Alg. 3.

    Parameters
    ----------
    graph : WeightedGraph
    t_bin, t_final : float
        The least gain in Q per iteration (and per stage) to go on: ``t_bin`` while the
        stage's graph has more than ``bin_limit`` vertices, ``t_final`` afterwards.
    bin_limit : int
        The vertex count above which ``t_bin`` applies.
    relaxed : bool
        Commit the moves of an iteration only at its end (see :func:`_optimize`).
    max_iterations : int
        Iterations per stage at most (a guard; the thresholds end every stage before).

    Returns
    -------
    (Partition, counters, timings)
        The partition (dense ids; ``levels`` the kept stages' maps, None when no vertex
        moved; ``modularity`` the Q of the last kept stage, computed on its contracted
        graph); counters ``levels`` (stages kept), ``iterations`` and ``moves`` (totals),
        ``communities`` and, per stage run ``r`` (kept or not), ``level_vertices``,
        ``level_edges`` (CSR entries), ``level_threshold``, ``level_iterations``,
        ``level_moves``, ``level_q`` (lists indexed by ``r``); timings
        ``level{r}_optimize`` and ``level{r}_aggregate`` seconds.

    Notes
    -----
    Naim, Manne, Halappanavar, Tumeo, *Community Detection on the GPU*, IPDPS 2017, Sec. 2
    (Eq. 1, Eq. 2, the two-phase stages), Sec. 4 (Alg. 1 ModOpt, Alg. 2 computeMove, Alg. 3
    Contract; the singleton and lowest-id rules after Lu et al. 2015), Sec. 5 (thresholds
    ``t_bin = 1e-2`` above 100,000 vertices and ``t_final = 1e-6``; the relaxed variant).

    Stages: each starts from singletons on the current graph. A stage in which no vertex
    moves ends the method (under ``t_bin`` it is first run again under ``t_final``: relaxed,
    it may have undone its only iteration), as does one whose communities are all
    singletons again (a relaxed swap).
    A stage that moved is kept and its graph contracted; then, if its gain in Q is below
    its threshold, the method ends if that threshold was ``t_final``, and otherwise goes on
    with ``t_final`` from then on (as Lu et al.'s Grappolo, which paper III follows: the
    high threshold only makes the first, costly stages end early). A stage whose Q is lower
    than at its start (possible only when ``relaxed``) is dropped and ends the method, so
    the answer is never worse than the previous stage's.
    """
    check_params(t_bin, t_final, bin_limit, relaxed, max_iterations)
    return _louvain(*_csr64(graph), t_bin, t_final, bin_limit, relaxed, max_iterations)


def check_params(
    t_bin: Any, t_final: Any, bin_limit: Any, relaxed: Any, max_iterations: Any
) -> None:
    """The one check of :func:`louvain`'s and :class:`Louvain`'s parameters; ``ValueError``
    naming the parameter."""
    non_negative_float("louvain: t_bin", t_bin)
    non_negative_float("louvain: t_final", t_final)
    non_negative_int("louvain: bin_limit", bin_limit)
    boolean("louvain: relaxed", relaxed)
    positive_int("louvain: max_iterations", max_iterations)


def _csr64(graph: WeightedGraph) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``(n, ptr, ind, weight)`` with int64 indices: the contracted levels' dtype, so the
    kernels compile once."""
    return (
        graph.n,
        graph.ptr.astype(np.int64, copy=False),
        graph.ind.astype(np.int64, copy=False),
        graph.weight,
    )


def _louvain(
    n0: int,
    ptr: np.ndarray,
    ind: np.ndarray,
    w: np.ndarray,
    t_bin: float,
    t_final: float,
    bin_limit: int,
    relaxed: bool,
    max_iterations: int,
    loop: np.ndarray | None = None,
) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """:func:`louvain` on an int64 CSR (parameters checked by the caller); ``loop``: the
    self-loop weights of an aggregated graph (float64, zeros where None)."""
    loop = np.zeros(n0, dtype=np.float64) if loop is None else loop
    n = n0
    levels: list[np.ndarray] = []
    stage: dict[str, list[Any]] = {
        "level_vertices": [],
        "level_edges": [],
        "level_threshold": [],
        "level_iterations": [],
        "level_moves": [],
        "level_q": [],
    }
    timings: dict[str, float] = {}
    use_bin = True
    q_kept = None
    while True:
        r = len(stage["level_q"])  # the stage run, the index of the level_* lists
        binned = use_bin and n > bin_limit
        threshold = float(t_bin if binned else t_final)
        t0 = time.perf_counter()
        comm, q_start, q, iters, moves = _optimize(
            n, ptr, ind, w, loop, threshold, bool(relaxed), int(max_iterations)
        )
        timings[f"level{r}_optimize"] = time.perf_counter() - t0
        if q_kept is None:
            q_kept = float(q_start)
        values = (n, int(ind.shape[0]), threshold, int(iters), int(moves), float(q))
        for key, value in zip(stage, values, strict=True):
            stage[key].append(value)
        if moves == 0 or q < q_start:
            if binned:  # relaxed may have undone its only iteration under t_bin: retry
                use_bin = False
                continue
            break
        t0 = time.perf_counter()
        lab, k = _renumber(n, comm)
        k = int(k)
        if k == n:  # a relaxed swap left singletons only: contracting changes nothing
            timings[f"level{r}_aggregate"] = time.perf_counter() - t0
            break
        ptr, ind, w, loop = _contract(n, ptr, ind, w, loop, lab, k)
        timings[f"level{r}_aggregate"] = time.perf_counter() - t0
        levels.append(lab)
        q_kept = float(q)
        n = k
        if q - q_start < threshold:
            if binned:
                use_bin = False
                continue
            break
    community = np.arange(n0, dtype=np.int64)
    for lab in levels:
        community = lab[community]
    counters: dict[str, Any] = {
        "levels": len(levels),
        "iterations": int(sum(stage["level_iterations"])),
        "moves": int(sum(stage["level_moves"])),
        "communities": int(community.max()) + 1 if n0 else 0,
        **stage,
    }
    return Partition(community, levels or None, q_kept), counters, stage_totals(timings)


# ---------------------------------------------------------------------------------------
# Solvers


def _tiny() -> WeightedGraph:
    """Two triangles joined by an edge: compiles every kernel (both modes, aggregation)."""
    return WeightedGraph.from_edges([0, 0, 1, 3, 3, 4, 2], [1, 2, 2, 4, 5, 5, 3], np.ones(7), 6)


class _CommunityCPU(BaseSolver):
    """Shared life cycle of the family's CPU references."""

    problem: ClassVar[str] = "community"
    device: ClassVar[str] = "cpu"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._graph: WeightedGraph | None = None
        self._answer: Partition | None = None
        self._counters: dict[str, Any] = {}
        self._timings: dict[str, float] = {}
        self._compiled = False
        self._csr: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None

    def _warm(self) -> None:
        """Run the method on a tiny graph in each of its compiled forms (numba)."""
        raise NotImplementedError

    def prepare(self, instance: WeightedGraph, init: Any | None = None) -> None:
        if not self._compiled:  # numba compiles (or loads its cache) here, untimed
            self._warm()
            self._compiled = True
        if self._graph is not instance:  # int64 indices, copied once per instance, untimed
            self._csr = _csr64(instance)
        self._graph = instance
        self._answer = None
        self._counters = {}
        self._timings = {}

    def result(self) -> Partition:
        if self._answer is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        return self._answer

    def counters(self) -> dict[str, Any]:
        return dict(self._counters)

    def timings(self) -> dict[str, float]:
        return dict(self._timings)


class Louvain(_CommunityCPU):
    """The Louvain method of paper III, sequential (numba); see :func:`louvain`.

    Parameters
    ----------
    t_bin, t_final : float
        Thresholds on the gain in Q per iteration: ``t_bin`` (default 1e-2) while the graph
        has more than ``bin_limit`` (default 100,000) vertices, ``t_final`` (1e-6) after.
    bin_limit : int
    relaxed : bool
        Commit moves at the end of each iteration only (paper III's "relaxed" variant).
    max_iterations : int
        Iterations per stage at most.

    Notes
    -----
    Naim et al., IPDPS 2017, Alg. 1-3 with Eq. 1-2; deterministic (vertices in id order).
    Counters and timings as :func:`louvain` (``iterations`` fills the row's column; the
    per-stage lists go to ``counters_json``, the per-stage seconds to ``phases_json``).
    """

    name: ClassVar[str] = "louvain"

    def __init__(
        self, *, t_bin: float, t_final: float, bin_limit: int, relaxed: bool, max_iterations: int
    ) -> None:
        check_params(t_bin, t_final, bin_limit, relaxed, max_iterations)  # here, not per run
        super().__init__(
            t_bin=t_bin,
            t_final=t_final,
            bin_limit=bin_limit,
            relaxed=relaxed,
            max_iterations=max_iterations,
        )

    def _warm(self) -> None:
        for relaxed in (False, True):
            louvain(_tiny(), relaxed=relaxed)

    def run(self) -> None:
        if self._csr is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        p = self.params
        self._answer, self._counters, self._timings = _louvain(
            *self._csr,
            p["t_bin"],
            p["t_final"],
            p["bin_limit"],
            p["relaxed"],
            p["max_iterations"],
        )


def _dense(labels: Any) -> np.ndarray:
    """Integer labels renumbered ``0 .. k-1`` in ascending order of their values."""
    return np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.int64).ravel()


def _hierarchy(memberships: list[np.ndarray]) -> list[np.ndarray]:
    """Per-stage memberships of the original vertices (nested) as the ``levels`` maps."""
    out = [memberships[0]]
    for prev, cur in zip(memberships, memberships[1:], strict=False):
        lev = np.empty(int(prev.max()) + 1, dtype=np.int64)
        lev[prev] = cur
        out.append(lev)
    return out


class NkPLM(_CommunityCPU):
    """NetworKit's ``PLM`` (parallel Louvain method), every core by default.

    Parameters
    ----------
    threads : int or None
        OpenMP threads (``networkit.setNumberOfThreads``); None: every core of the host.
    refine : bool
        PLMR: a second move phase after each prolongation (default False: plain PLM).
    turbo : bool
        NetworKit's faster variant with O(n) memory per thread.
    max_iter : int
        Iterations of a move phase at most (NetworKit's default 32).
    seed : int
        ``networkit.engineering.setSeed(seed, False)`` before each run; the result still
        depends on thread scheduling when ``threads > 1``.

    Notes
    -----
    Staudt & Meyerhenke, *Engineering parallel algorithms for community detection in massive
    networks*, IEEE TPDS 27(1), 2016 (PLM, PLMR), as implemented in NetworKit
    (``networkit/cpp/community/PLM.cpp``); the parallel reference Naim et al. 2017, Sec. 5
    compare with. The claimed Q is NetworKit's ``community.Modularity``.
    """

    name: ClassVar[str] = "nk_plm"

    def __init__(
        self, *, threads: int | None, refine: bool, turbo: bool, max_iter: int, seed: int
    ) -> None:
        self.threads = parse_threads(threads)
        super().__init__(
            threads=threads,
            refine=boolean("nk_plm: refine", refine),
            turbo=boolean("nk_plm: turbo", turbo),
            max_iter=positive_int("nk_plm: max_iter", max_iter),
            seed=non_negative_int("nk_plm: seed", seed),
        )
        self._nk_graph: Any = None
        self._nk_for: WeightedGraph | None = None
        self._raw: Any = None

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        try:
            import networkit  # noqa: F401
        except ImportError as exc:
            return True, f"networkit is not installed (pip install 'matchbench[ref]'): {exc}"
        return False, None

    def prepare(self, instance: WeightedGraph, init: Any | None = None) -> None:
        import networkit as nk

        threads = self.threads or host_cores()
        nk.setNumberOfThreads(threads)
        nk.engineering.setSeed(int(self.params["seed"]), False)
        if self._nk_for is not instance:
            u, v, w = instance.edges()
            self._nk_graph = nk.GraphFromCoo(
                (w, (u.astype(np.int64), v.astype(np.int64))),
                n=instance.n,
                weighted=True,
                directed=False,
            )
            self._nk_for = instance
        self._graph = instance
        self._answer = None
        self._raw = None
        self._counters = {"threads": threads}

    def run(self) -> None:
        import networkit as nk

        if self._nk_graph is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        plm = nk.community.PLM(
            self._nk_graph,
            refine=bool(self.params["refine"]),
            gamma=1.0,
            par="balanced",
            maxIter=int(self.params["max_iter"]),
            turbo=bool(self.params["turbo"]),
            recurse=True,
        )
        plm.run()
        self._raw = plm.getPartition()

    def result(self) -> Partition:
        import networkit as nk

        if self._raw is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        if self._answer is None:
            community = _dense(self._raw.getVector())
            q = nk.community.Modularity().getQuality(self._raw, self._nk_graph)
            self._answer = Partition(community, None, float(q))
            self._counters["communities"] = int(community.max()) + 1 if community.size else 0
        return self._answer


class IgraphLouvain(_CommunityCPU):
    """igraph's ``community_multilevel`` (Blondel et al.'s Louvain method), sequential.

    Parameters
    ----------
    seed : int
        Seeds the random vertex order igraph uses (through a ``random.Random(seed)`` set as
        igraph's random number generator for the run, then restored).

    Notes
    -----
    Blondel, Guillaume, Lambiotte & Lefebvre, *Fast unfolding of communities in large
    networks*, J. Stat. Mech. P10008, 2008, as ``igraph_community_multilevel``. The answer is
    the level of highest modularity (what igraph returns without ``return_levels``), with
    the levels up to it as the hierarchy; the claimed Q is igraph's. Counter ``levels``.
    """

    name: ClassVar[str] = "igraph_louvain"

    def __init__(self, *, seed: int) -> None:
        super().__init__(seed=non_negative_int("igraph_louvain: seed", seed))
        self._ig_graph: Any = None
        self._ig_for: WeightedGraph | None = None
        self._raw: Any = None

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        try:
            import igraph  # noqa: F401
        except ImportError as exc:
            return True, f"igraph is not installed (pip install 'matchbench[ref]'): {exc}"
        return False, None

    def prepare(self, instance: WeightedGraph, init: Any | None = None) -> None:
        import igraph

        if self._ig_for is not instance:
            u, v, w = instance.edges()
            g = igraph.Graph(n=instance.n, edges=np.column_stack([u, v]).tolist())
            g.es["weight"] = w.tolist()
            self._ig_graph = g
            self._ig_for = instance
        self._graph = instance
        self._answer = None
        self._raw = None
        self._counters = {}

    def run(self) -> None:
        import random

        import igraph

        if self._ig_graph is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        igraph.set_random_number_generator(random.Random(int(self.params["seed"])))
        try:
            self._raw = self._ig_graph.community_multilevel(weights="weight", return_levels=True)
        finally:
            igraph.set_random_number_generator(random)

    def result(self) -> Partition:
        if self._raw is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        if self._answer is None:
            qs = [float(c.modularity) for c in self._raw]
            best = int(np.argmax(qs))
            members = [_dense(c.membership) for c in self._raw[: best + 1]]
            self._answer = Partition(members[-1], _hierarchy(members), qs[best])
            self._counters = {
                "levels": best + 1,
                "level_q": qs,
                "communities": int(members[-1].max()) + 1,
            }
        return self._answer


class NxLouvain(_CommunityCPU):
    """networkx's ``louvain_partitions`` (pure Python), small graphs only.

    Parameters
    ----------
    seed : int
        networkx's ``seed`` (the random order of the vertices).
    threshold : float
        networkx's ``threshold``: a level gaining less Q than this ends the method.

    Skipped above :data:`NX_MAX_VERTICES` vertices or :data:`NX_MAX_EDGES` edges.

    Notes
    -----
    Blondel et al. 2008 as ``networkx.community.louvain_partitions``; the answer is its last
    level, the hierarchy its levels, the claimed Q networkx's ``community.modularity``.
    """

    name: ClassVar[str] = "nx_louvain"

    def __init__(self, *, seed: int, threshold: float) -> None:
        non_negative_float("nx_louvain: threshold", threshold)
        super().__init__(seed=non_negative_int("nx_louvain: seed", seed), threshold=threshold)
        self._nx_graph: Any = None
        self._nx_for: WeightedGraph | None = None
        self._raw: list[Any] | None = None

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        if instance.n > NX_MAX_VERTICES or instance.n_edges > NX_MAX_EDGES:
            return True, (
                f"nx_louvain: {instance.name} has {instance.n} vertices and {instance.n_edges} "
                f"edges; networkx's pure-Python Louvain runs up to {NX_MAX_VERTICES} vertices "
                f"and {NX_MAX_EDGES} edges (use louvain, igraph_louvain or nk_plm)"
            )
        return False, None

    def prepare(self, instance: WeightedGraph, init: Any | None = None) -> None:
        import networkx as nx

        if self._nx_for is not instance:
            h = nx.Graph()
            h.add_nodes_from(range(instance.n))
            u, v, w = instance.edges()
            h.add_weighted_edges_from(zip(u.tolist(), v.tolist(), w.tolist(), strict=True))
            self._nx_graph = h
            self._nx_for = instance
        self._graph = instance
        self._answer = None
        self._raw = None
        self._counters = {}

    def run(self) -> None:
        import networkx as nx

        if self._nx_graph is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        self._raw = list(
            nx.community.louvain_partitions(
                self._nx_graph,
                weight="weight",
                resolution=1,
                threshold=float(self.params["threshold"]),
                seed=int(self.params["seed"]),
            )
        )

    def result(self) -> Partition:
        import networkx as nx

        if self._raw is None or self._graph is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        if self._answer is None and not self._raw:  # no edge: no level
            self._answer = Partition(np.arange(self._graph.n, dtype=np.int64), None, 0.0)
            self._counters = {"levels": 0, "communities": self._graph.n}
        if self._answer is None:
            n = self._graph.n
            members = []
            for sets in self._raw:
                lab = np.empty(n, dtype=np.int64)
                for c, s in enumerate(sets):
                    lab[list(s)] = c
                members.append(lab)
            q = nx.community.modularity(self._nx_graph, self._raw[-1], weight="weight")
            self._answer = Partition(members[-1], _hierarchy(members), float(q))
            self._counters = {"levels": len(members), "communities": len(self._raw[-1])}
        return self._answer
