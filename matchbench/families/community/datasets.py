"""Graphs for community detection by modularity (the ``community`` family).

Every function returns a :class:`~matchbench.families.community.problem.CommunityGraph` (the weighted
family's :class:`~matchbench.graphs.weighted.WeightedGraph` data model, tagged
``"community"``) and is tagged ``@dataset("community")``, so the planner pairs it with the
Louvain solvers only.

- :func:`community_mtx`: a Matrix Market file, read as :func:`matchbench.families.wmatch.datasets.graph_mtx`
  reads it, except that a ``pattern`` file gives every edge weight 1 (the unweighted graph,
  as Naim et al., IPDPS 2017, Sec. 5 take the SuiteSparse, SNAP and Koblenz graphs) and that a
  negative value is an error unless ``negative="abs"``.
- :func:`community_suitesparse`: a SuiteSparse matrix by ``Group/Name``, downloaded and cached
  by :func:`matchbench.graphs.suitesparse.resolve`, then read by :func:`community_mtx`.
- :func:`community_planted`: the planted partition model: ``k`` groups, an edge inside a
  group with probability ``p_in``, between groups with ``p_out``; the ground truth is known
  (:func:`planted_truth`).
- :func:`community_kron`, :func:`community_delaunay`, :func:`community_rgg`,
  :func:`community_grid`, :func:`community_road`: the MCM generators' graphs
  (:mod:`matchbench.graphs.generators`, same arguments, same edges), weight 1 by default.
- :func:`community_smoke`: tiny graphs built in code (:data:`SMOKE`) for the quickstart and
  the tests.

Bad input
---------
Every error is a :class:`~matchbench.datasets.DatasetError` naming the family, the file or
generator and the defect: a missing file, a malformed Matrix Market file (what the MCM
reader's header checks catch), a non-square matrix, a NaN or infinite value, a negative
value (with ``negative="error"``, the default: modularity needs weights >= 0), a bad
generator parameter, or a graph with no edge.

Self-loops
----------
A :class:`~matchbench.graphs.weighted.WeightedGraph` holds none, so the diagonal entries of
a file are dropped and counted in ``params["n_diagonal"]`` (with ``self_loops="error"`` they
are an error instead). Dropping a loop changes Q (Eq. 1 counts a loop in ``k_i``, ``m`` and
``e_{i -> C(i)}``): the instance is the loop-free graph, and every solver and the verifier
see that same graph. Zero weights are dropped too (an edge of weight 0 changes no term of
Eq. 1), counted in ``params["n_zero"]``.

Generators are deterministic for their arguments and tagged ``disk_cache=True``; a change
that makes one return another graph for the same arguments must bump
:data:`~matchbench.datasets.CACHE_FORMAT`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from matchbench.core.errors import DatasetError
from matchbench.datasets import dataset, sizes
from matchbench.families.community.problem import CommunityGraph
from matchbench.graphs import generators as G
from matchbench.graphs.bipartite import INT32_MAX, BipartiteGraph
from matchbench.graphs.mtx import read_weighted, stem
from matchbench.graphs.weighted import uniform_weights

__all__ = [
    "SMOKE",
    "community_delaunay",
    "community_grid",
    "community_kron",
    "community_mtx",
    "community_planted",
    "community_rgg",
    "community_road",
    "community_smoke",
    "community_suitesparse",
    "planted_truth",
]

#: Edge weights of the generated graphs: all 1, uniform in (0, 1] (seeded), or the
#: Euclidean length of the edge (point-set families only).
WEIGHTS = ("unit", "uniform", "geometric")


# ---------------------------------------------------------------------------------------
# Matrix Market


@dataset("community")
def community_mtx(
    path: str | os.PathLike,
    negative: str = "error",
    self_loops: str = "drop",
    data_dir: str | os.PathLike | None = None,
    *,
    name: str | None = None,
    family: str = "mtx",
    params: dict[str, Any] | None = None,
) -> CommunityGraph:
    """Read a Matrix Market file (``.mtx`` or ``.mtx.gz``) as a graph for community detection.

    Parameters
    ----------
    path : path
        The file; a relative path not found from the working directory is looked up in
        ``data_dir`` (default :func:`~matchbench.datasets.default_data_dir`).
    negative : {"error", "abs"}
        What a negative value is: an error (modularity is defined for weights >= 0), or
        read as its absolute value (as the weighted family reads SuiteSparse matrices).
    self_loops : {"drop", "error"}
        What a diagonal entry is: dropped and counted (module docstring), or an error.
    name, family, params
        Instance name (default: the file name without ``.mtx``/``.mtx.gz``), dataset family,
        extra ``params`` entries.

    Returns
    -------
    CommunityGraph
        n = the matrix order; edge {i, j} for every stored off-diagonal entry, weight 1 in a
        ``pattern`` file, else ``a_ij`` (``|a_ij|`` with ``negative="abs"``). ``params``
        holds ``path``, ``field``, ``symmetry``, ``n_entries``, ``n_diagonal`` (dropped),
        ``n_zero`` (zero weights dropped), ``n_duplicates`` (entries for an edge already
        given: merged by the largest value, with a :class:`DatasetWarning`),
        ``symmetrized`` and ``n_asymmetric`` (a ``general`` file: weight
        ``max(a_ij, a_ji)``, an absent entry counting 0: the shared weighted reading,
        :func:`matchbench.graphs.mtx.read_weighted`), ``negative``. A ``skew-symmetric``
        file reads ``|a_ij|`` whatever ``negative`` (its two directions differ in sign only:
        one of them is always negative).

    Raises
    ------
    DatasetError
        Naming the file and the family: a missing file, what the MCM reader's header checks
        reject (bad header, complex field, array format, empty matrix, wrong entry count,
        an index out of range), a non-square matrix, a NaN or infinite value, a negative
        value (``negative="error"``), a diagonal entry (``self_loops="error"``), a bad
        option, or no edge left.
    """
    if negative not in ("error", "abs"):
        raise DatasetError(
            f"community community_mtx: negative must be 'error' or 'abs', not {negative!r}"
        )
    if self_loops not in ("drop", "error"):
        raise DatasetError(
            f"community community_mtx: self_loops must be 'drop' or 'error', not {self_loops!r}"
        )
    entries = read_weighted(path, data_dir, where="community community_mtx")
    if entries.header.symmetry == "skew-symmetric" or negative == "abs":
        # skew-symmetric: a_ji = -a_ij, the two directions of one undirected weight
        entries.values = np.abs(entries.values)
    neg = entries.values < 0
    if neg.any():
        raise entries.entry_error(
            int(np.flatnonzero(neg)[0]),
            f"modularity needs weights >= 0 ({int(neg.sum())} negative entries; "
            "negative='abs' reads |a_ij|)",
        )
    diagonal = entries.rows == entries.cols
    n_diagonal = int(np.count_nonzero(diagonal))
    if n_diagonal and self_loops == "error":
        k = int(entries.rows[np.flatnonzero(diagonal)[0]])
        raise entries.fail(
            f"self-loop ({k + 1}, {k + 1}) ({n_diagonal} diagonal entries); a community "
            "instance holds none (self_loops='drop' drops them)"
        )
    del diagonal
    n, p = entries.n, entries.path
    u, v, w, info = entries.edges()
    info["negative"] = negative
    info.update(params or {})
    return CommunityGraph.from_edges(u, v, w, n, name=name or stem(p), family=family, params=info)


@dataset("community")
def community_suitesparse(
    name: str,
    negative: str = "abs",
    self_loops: str = "drop",
    data_dir: str | os.PathLike | None = None,
    offline: bool = False,
) -> CommunityGraph:
    """SuiteSparse matrix ``Group/Name`` (fetched once, see
    :func:`~matchbench.graphs.suitesparse.resolve`) read by :func:`community_mtx`; family
    ``suitesparse``, ``params["suitesparse"] = "Group/Name"``. ``negative`` defaults to
    ``"abs"`` here: many of the collection's matrices hold negative values."""
    from matchbench.graphs.suitesparse import read_with

    return read_with(
        community_mtx, name, data_dir, offline, negative=negative, self_loops=self_loops
    )


# ---------------------------------------------------------------------------------------
# The planted partition model


def _where(what: str) -> str:
    return f"community dataset {what}"


def _prob(what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise DatasetError(f"{_where('community_planted')}: {what} must be a number, not {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise DatasetError(
            f"{_where('community_planted')}: {what} = {value} is not a probability in [0, 1]"
        )
    return value


def _pair_rows(t: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs ``(i, j)``, ``i < j < s``, at positions ``t`` of the row-major upper triangle."""
    t = t.astype(np.int64)
    # offset(i) = i (2s - i - 1) / 2 pairs come before row i; invert it, then fix rounding
    b = 2.0 * s - 1.0
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8.0 * t, 0.0))) / 2.0).astype(np.int64)
    i = np.clip(i, 0, max(s - 2, 0))

    def offset(r: np.ndarray) -> np.ndarray:
        return r * (2 * s - r - 1) // 2

    for _ in range(2):
        i = np.where(offset(i) > t, i - 1, i)
        i = np.where(offset(i + 1) <= t, i + 1, i)
    return i, t - offset(i) + i + 1


def _sample_pairs(rng: np.random.Generator, s: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    """Each of the ``s (s - 1) / 2`` pairs of ``s`` vertices independently with probability
    ``p``, as ``(i, j)`` with ``i < j``, in ascending order of the pair."""
    total = s * (s - 1) // 2
    if total == 0 or p == 0.0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    count = int(rng.binomial(total, p))
    t = np.sort(rng.choice(total, size=count, replace=False))
    return _pair_rows(t, s)


def _group_sizes(n: int, k: int) -> np.ndarray:
    """``k`` group sizes summing to ``n``, the first ``n % k`` one larger."""
    sizes = np.full(k, n // k, dtype=np.int64)
    sizes[: n % k] += 1
    return sizes


def planted_truth(graph: CommunityGraph) -> np.ndarray:
    """The planted communities of a :func:`community_planted` graph (also after RCP).

    Group ``g`` holds the vertices ``sum(sizes[:g]) .. sum(sizes[:g + 1]) - 1`` (sizes as
    equal as possible, the first ``n % k`` groups one larger); an RCP-permuted instance
    (``params["rcp"]``) moves them with the permutation of
    :meth:`~matchbench.graphs.weighted.WeightedGraph.permuted`.

    Raises
    ------
    ValueError
        For a graph that :func:`community_planted` did not make.
    """
    params = graph.params
    if params.get("generator") != "planted_partition":
        raise ValueError(f"{graph.name}: not a community_planted graph (no planted partition)")
    sizes = _group_sizes(int(params["n"]), int(params["k"]))
    truth = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)
    if params.get("rcp"):
        perm = np.random.default_rng(int(params["rcp_seed"])).permutation(graph.n)
        moved = np.empty_like(truth)
        moved[perm] = truth
        truth = moved
    return truth


@dataset("community", disk_cache=True, size_hint=lambda n, **_: sizes.dense(n))
def community_planted(
    n: int,
    k: int,
    p_in: float,
    p_out: float,
    seed: int = 1,
    weights: str = "unit",
    weight_seed: int | None = None,
) -> CommunityGraph:
    """The planted partition model: ``k`` groups of ``n`` vertices, dense inside, sparse between.

    Parameters
    ----------
    n, k : int
        Vertices and groups (``1 <= k <= n``); group sizes as equal as possible, each group
        a contiguous range of vertex ids (:func:`planted_truth`).
    p_in, p_out : float
        Probability of each pair inside a group, and of each pair across two groups, to be
        an edge (independently; Condon & Karp 2001). Communities are planted when
        ``p_in > p_out``; they are recoverable by modularity when the gap is large.
    seed : int
        The random stream (``numpy.random.default_rng``): the same arguments give the same
        graph.
    weights : {"unit", "uniform"}
        Weight 1 on every edge, or uniform in (0, 1] drawn with ``weight_seed`` (default
        ``seed``) per edge in CSR order.

    Returns
    -------
    CommunityGraph
        Named ``planted_n{n}_k{k}_pin{p_in}_pout{p_out}_s{seed}`` (plus ``_uniform``), family
        ``planted``; ``params`` holds ``generator = "planted_partition"`` and the arguments,
        from which :func:`planted_truth` rebuilds the ground truth (it is not stored: it
        would make every result row's ``instance_params`` as large as the graph).

    Raises
    ------
    DatasetError
        For ``n < 1``, ``k`` outside ``[1, n]``, a probability outside [0, 1], an unknown
        ``weights``, or a draw without any edge.

    Notes
    -----
    Pairs are drawn without enumerating them: per group, a binomial count of the
    ``s (s - 1) / 2`` inside pairs, then that many distinct pair positions; across groups
    likewise over all ``n (n - 1) / 2`` pairs with ``p_out``, keeping those whose ends lie in
    two groups (each such pair is then an edge with probability ``p_out``, independently).
    O(n + m) memory and time.
    """
    where = _where("community_planted")
    n = G.check_int(f"{where}: n", n, 1, INT32_MAX)
    k = G.check_int(f"{where}: k", k, 1, n)
    p_in = _prob("p_in", p_in)
    p_out = _prob("p_out", p_out)
    if weights not in ("unit", "uniform"):
        raise DatasetError(f"{where}: weights must be 'unit' or 'uniform', not {weights!r}")
    rng = np.random.default_rng(seed)
    sizes = _group_sizes(n, k)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    us, vs = [], []
    for g in range(k):
        i, j = _sample_pairs(rng, int(sizes[g]), p_in)
        us.append(i + starts[g])
        vs.append(j + starts[g])
    if k > 1:
        i, j = _sample_pairs(rng, n, p_out)
        group = np.repeat(np.arange(k), sizes)
        across = group[i] != group[j]
        us.append(i[across])
        vs.append(j[across])
    u = np.concatenate(us)
    v = np.concatenate(vs)
    if u.shape[0] == 0:
        raise DatasetError(
            f"{where}: the draw has no edge (n = {n}, k = {k}, p_in = {p_in}, p_out = {p_out}, "
            f"seed = {seed}); raise p_in or p_out"
        )
    name = f"planted_n{n}_k{k}_pin{p_in:g}_pout{p_out:g}_s{seed}"
    params: dict[str, Any] = {
        "generator": "planted_partition",
        "n": n,
        "k": k,
        "p_in": p_in,
        "p_out": p_out,
        "seed": int(seed),
        "weights": weights,
    }
    g = CommunityGraph.from_edges(u, v, np.ones(u.shape[0]), n, name=name, family="planted")
    if weights == "uniform":
        ws = int(seed if weight_seed is None else weight_seed)
        params["weight_seed"] = ws
        eu, ev, _ = g.edges()
        return CommunityGraph.from_edges(
            eu,
            ev,
            uniform_weights(eu.shape[0], ws),
            n,
            name=f"{name}_uniform",
            family="planted",
            params=params,
        )
    g.params = params
    return g


# ---------------------------------------------------------------------------------------
# The MCM generators' graphs


def _from_mcm(
    g: BipartiteGraph, weights: str, weight_seed: int | None, points: np.ndarray | None = None
) -> CommunityGraph:
    """The undirected graph of a symmetric MCM graph ``g``, with ``weights``."""
    where = _where(f"{g.family} ({g.name})")
    if weights not in WEIGHTS:
        raise DatasetError(f"{where}: weights must be one of {WEIGHTS}, not {weights!r}")
    if weights == "geometric" and points is None:
        raise DatasetError(
            f"{where}: weights 'geometric' (Euclidean edge length) needs a point set: only "
            "delaunay and rgg have one; use weights 'unit' or 'uniform'"
        )
    n = g.n_rows
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(g.row_ptr))
    cols = g.row_ind.astype(np.int64)
    upper = rows < cols
    u, v = rows[upper], cols[upper]
    params = dict(g.params, weights=weights)
    if weights == "unit":
        w = np.ones(u.shape[0])
    elif weights == "uniform":
        seed = int(g.params.get("seed", 0) if weight_seed is None else weight_seed)
        w = uniform_weights(u.shape[0], seed)
        params["weight_seed"] = seed
    else:
        w = np.hypot(*(points[u] - points[v]).T)
    if u.shape[0] == 0:
        raise DatasetError(f"{where}: the graph has no edge")
    suffix = "" if weights == "unit" else f"_{weights}"
    return CommunityGraph.from_edges(
        u, v, w, n, name=f"{g.name}{suffix}", family=g.family, params=params
    )


@dataset("community", disk_cache=True, size_hint=lambda scale, edge_factor=16, **_: sizes.scaled(scale, edge_factor))
def community_kron(
    scale: int,
    edge_factor: int = 16,
    seed: int = 1,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    weights: str = "unit",
    weight_seed: int | None = None,
) -> CommunityGraph:
    """:func:`matchbench.graphs.generators.kronecker` (Graph500) as a community instance;
    ``weights`` ``"unit"`` or ``"uniform"`` (``weight_seed``, default ``seed``)."""
    g = G.kronecker(scale, edge_factor=edge_factor, seed=seed, a=a, b=b, c=c)
    return _from_mcm(g, weights, weight_seed)


@dataset("community", disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
def community_delaunay(
    scale: int, seed: int = 1, weights: str = "unit", weight_seed: int | None = None
) -> CommunityGraph:
    """:func:`matchbench.graphs.generators.delaunay` as a community instance; ``weights``
    ``"unit"``, ``"uniform"`` or ``"geometric"`` (the Euclidean length of the edge)."""
    g = G.delaunay(scale, seed=seed)
    points = G.unit_square_points(g.n_rows, seed) if weights == "geometric" else None
    return _from_mcm(g, weights, weight_seed, points)


@dataset("community", disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
def community_rgg(
    scale: int,
    seed: int = 1,
    radius_factor: float = 0.55,
    weights: str = "unit",
    weight_seed: int | None = None,
) -> CommunityGraph:
    """:func:`matchbench.graphs.generators.rgg` as a community instance; ``weights``
    ``"unit"``, ``"uniform"`` or ``"geometric"``."""
    g = G.rgg(scale, seed=seed, radius_factor=radius_factor)
    points = G.unit_square_points(g.n_rows, seed) if weights == "geometric" else None
    return _from_mcm(g, weights, weight_seed, points)


@dataset("community", disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
def community_grid(
    scale: int, seed: int = 1, weights: str = "unit", weight_seed: int | None = None
) -> CommunityGraph:
    """:func:`matchbench.graphs.generators.grid` as a community instance (``seed`` only
    seeds ``uniform`` weights: the grid does not depend on it)."""
    return _from_mcm(G.grid(scale, seed=seed), weights, weight_seed)


@dataset("community", disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
def community_road(
    scale: int,
    seed: int = 1,
    remove_fraction: float = 0.35,
    shortcut_fraction: float = 0.02,
    weights: str = "unit",
    weight_seed: int | None = None,
) -> CommunityGraph:
    """:func:`matchbench.graphs.generators.road` (a road-network-like grid) as a community
    instance."""
    g = G.road(
        scale, seed=seed, remove_fraction=remove_fraction, shortcut_fraction=shortcut_fraction
    )
    return _from_mcm(g, weights, weight_seed)


# ---------------------------------------------------------------------------------------
# The smoke set


def _ring_of_cliques(cliques: int, size: int) -> tuple[int, np.ndarray, np.ndarray]:
    us, vs = [], []
    for c in range(cliques):
        i, j = np.triu_indices(size, 1)
        us.append(i + c * size)
        vs.append(j + c * size)
        us.append(np.array([c * size]))
        vs.append(np.array([((c + 1) % cliques) * size + 1]))
    return cliques * size, np.concatenate(us), np.concatenate(vs)


def _smoke_edges(name: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``(n, u, v, w)`` of one smoke graph (see :data:`SMOKE`)."""
    if name == "two_triangles":
        u = np.array([0, 0, 1, 3, 3, 4, 2])
        v = np.array([1, 2, 2, 4, 5, 5, 3])
        return 6, u, v, np.ones(7)
    if name == "ring_of_cliques":
        n, u, v = _ring_of_cliques(8, 5)
        return n, u, v, np.ones(u.shape[0])
    if name == "karate":
        import networkx as nx

        h = nx.karate_club_graph()
        e = np.array(sorted(h.edges()), dtype=np.int64)
        return h.number_of_nodes(), e[:, 0], e[:, 1], np.ones(e.shape[0])
    if name == "weighted_isolated":
        rng = np.random.default_rng(11)
        n, u, v = _ring_of_cliques(4, 6)
        w = rng.choice([0.5, 1.0, 2.0], size=u.shape[0])
        return n + 5, u, v, w  # five isolated vertices at the end
    raise KeyError(name)


#: The smoke graphs: name -> what it exercises.
SMOKE = {
    "two_triangles": "two triangles joined by one edge: Q = 5/14 for the two triangles",
    "ring_of_cliques": "8 cliques K5 in a ring, one edge between neighbours (Fortunato's ring)",
    "karate": "Zachary's karate club (34 vertices, 78 edges, unweighted; via networkx)",
    "weighted_isolated": "a ring of 4 K6 with weights in {0.5, 1, 2}, plus 5 isolated vertices",
}


@dataset("community")
def community_smoke(name: str | None = None) -> CommunityGraph:
    """One of the tiny graphs built in code (:data:`SMOKE` lists them), family
    ``community_smoke``; deterministic.

    Raises
    ------
    DatasetError
        For a missing or unknown name (the message lists the choices).
    """
    if name is None or name not in SMOKE:
        what = "a name is required" if name is None else f"no smoke graph {name!r}"
        raise DatasetError(f"community_smoke: {what}; available: {', '.join(SMOKE)}")
    n, u, v, w = _smoke_edges(name)
    return CommunityGraph.from_edges(
        u, v, w, n, name=name, family="community_smoke", params={"smoke": name}
    )
