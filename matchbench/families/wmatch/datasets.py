"""Weighted general graphs for half-approximate weighted matching (the ``wmatch`` family).

Every function returns a :class:`~matchbench.graphs.weighted.WeightedGraph`.

- :func:`graph_mtx`: a Matrix Market file read as Naim et al., HiPC 2015 (paper I of Naim's
  thesis), Sec. 5.1 read the SuiteSparse matrices: vertex i per row and column, an edge per
  off-diagonal entry, weight ``|a_ij|``; diagonal entries and zero weights dropped; pattern
  files get weights uniform in (0, 1], seeded.
- :func:`graph_suitesparse`: a SuiteSparse matrix by ``Group/Name``, downloaded and cached by
  :func:`matchbench.graphs.suitesparse.resolve`, then read by :func:`graph_mtx`.
- :func:`kronecker`, :func:`delaunay`, :func:`rgg`, :func:`grid`, :func:`road`: the MCM
  generators' graphs (:mod:`matchbench.graphs.generators`, same arguments, same edges) with
  weights ``uniform`` (the paper's uniform random weights, in (0, 1], seeded) or, for the two
  point-set families, ``geometric`` (the Euclidean length of the edge between its points).
- :func:`wmatch_smoke`: tiny graphs built in code for the quickstart and the tests.

Capacities (b-matching): every function takes ``capacity`` (named so because the Kronecker
generator already has an argument ``b``): None for ordinary matching (b = 1), an integer
``>= 0`` for every vertex, or ``"random"``: independent uniform integers in
``[1, capacity_max]`` drawn with ``capacity_seed``. Instance names say which (``_b2``,
``_brand3``).

The generators are tagged ``@dataset("wmatch", disk_cache=True)``; a change that makes one
return another graph for the same arguments must bump
:data:`~matchbench.datasets.CACHE_FORMAT`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from matchbench.core.errors import DatasetError
from matchbench.datasets import dataset, sizes
from matchbench.graphs import generators as G
from matchbench.graphs.bipartite import INT32_MAX, BipartiteGraph
from matchbench.graphs.mtx import read_weighted, stem
from matchbench.graphs.weighted import WeightedGraph, uniform_weights

__all__ = [
    "SMOKE",
    "delaunay",
    "graph_mtx",
    "graph_suitesparse",
    "grid",
    "kronecker",
    "rgg",
    "road",
    "wmatch_smoke",
]

WEIGHTS = ("uniform", "geometric")


def _where(what: str) -> str:
    return f"wmatch dataset {what}"


def capacities(
    capacity: Any, n: int, capacity_max: int, capacity_seed: int, where: str
) -> tuple[np.ndarray | None, str, dict[str, Any]]:
    """The capacity array, the name suffix and the params entries of a ``capacity`` argument.

    Raises
    ------
    DatasetError
        Naming ``where`` and the problem, for a negative or non-integer capacity, or a
        ``capacity_max`` below 1 with ``"random"``.
    """
    if capacity is None:
        return None, "", {}
    if isinstance(capacity, str):
        if capacity != "random":
            raise DatasetError(
                f"{where}: capacity must be null, an integer >= 0 or 'random', not {capacity!r}"
            )
        cmax = capacity_max
        if (
            isinstance(cmax, bool)
            or not isinstance(cmax, int | np.integer)
            or not 1 <= cmax <= INT32_MAX
        ):
            raise DatasetError(f"{where}: capacity_max must be an integer >= 1, not {cmax!r}")
        b = np.random.default_rng(capacity_seed).integers(1, int(cmax) + 1, size=n, dtype=np.int32)
        info = {
            "capacity": "random",
            "capacity_max": int(cmax),
            "capacity_seed": int(capacity_seed),
        }
        return b, f"_brand{int(cmax)}", info
    if isinstance(capacity, bool) or not isinstance(capacity, int | np.integer):
        raise DatasetError(
            f"{where}: capacity must be null, an integer >= 0 or 'random', not {capacity!r}"
        )
    if capacity < 0 or capacity > INT32_MAX:
        raise DatasetError(f"{where}: capacity b = {capacity} must be in [0, {INT32_MAX}]")
    return (
        np.full(n, int(capacity), dtype=np.int32),
        f"_b{int(capacity)}",
        {"capacity": int(capacity)},
    )


# ---------------------------------------------------------------------------------------
# Matrix Market


@dataset("wmatch")
def graph_mtx(
    path: str | os.PathLike,
    weight_seed: int = 1,
    capacity: int | str | None = None,
    capacity_max: int = 3,
    capacity_seed: int = 1,
    data_dir: str | os.PathLike | None = None,
    *,
    name: str | None = None,
    family: str = "mtx",
    params: dict[str, Any] | None = None,
) -> WeightedGraph:
    """Read a Matrix Market file (``.mtx`` or ``.mtx.gz``) as a weighted undirected graph.

    Parameters
    ----------
    path : path
        The file; a relative path not found from the working directory is looked up in
        ``data_dir`` (default :func:`~matchbench.datasets.default_data_dir`).
    weight_seed : int
        Seed of the weights of a ``pattern`` file, uniform in (0, 1], drawn per undirected
        edge in the order of (min, max) endpoint: independent of the file's entry order.
    capacity, capacity_max, capacity_seed
        Vertex capacities (module docstring).
    name, family, params
        Instance name (default: the file name without ``.mtx``/``.mtx.gz``), dataset family,
        extra ``params`` entries.

    Returns
    -------
    WeightedGraph
        n = the matrix order; edge {i, j} for every stored off-diagonal entry, weight
        ``|a_ij|``. ``params`` holds ``path``, ``field``, ``symmetry``, ``n_entries``,
        ``n_diagonal`` (dropped), ``n_zero`` (zero-weight edges dropped), ``n_duplicates``
        (entries for an edge already given: merged by the largest ``|a|``, with a
        :class:`DatasetWarning`), ``symmetrized``, ``n_asymmetric`` and, for pattern files,
        ``weight_seed``.

    Raises
    ------
    DatasetError
        Naming the file and the problem ("wmatch"): every error of the MCM reader's header
        checks (:mod:`matchbench.graphs.mtx`: missing file, bad header, complex field,
        array format, empty matrix, wrong entry count, a non-numeric field, an index out of
        range), a non-square matrix, a NaN or infinite value (naming the entry), a negative
        capacity, or no edge left.

    Notes
    -----
    Naim et al. 2015 (paper I), Sec. 5.1: "We downloaded matrices that are symmetric and
    converted the negative nonzero values to positive. For matrices without weights, weights
    were added uniformly at random between zero and one, and zero-weight edges were
    discarded. [...] The diagonal entries are ignored." A ``general`` (unsymmetric) file is
    symmetrized here, weight ``max(|a_ij|, |a_ji|)`` (an absent entry counts 0), and says so:
    ``params["symmetrized"] = True``, ``params["n_asymmetric"]`` = the pairs whose two
    entries differ. ``skew-symmetric`` and ``hermitian`` (real) headers read as
    ``symmetric`` (the absolute values agree). The reading is the one shared with the
    community family, :func:`matchbench.graphs.mtx.read_weighted` with ``absolute=True``.
    """
    entries = read_weighted(path, data_dir, where="wmatch graph_mtx", absolute=True)
    n, p, pattern = entries.n, entries.path, entries.pattern
    u, v, w, info = entries.edges()
    if pattern:
        w = uniform_weights(u.shape[0], weight_seed)
        info["weight_seed"] = int(weight_seed)
    where = _where(f"graph_mtx {p}")
    b, suffix, cap_info = capacities(capacity, n, capacity_max, capacity_seed, where)
    info.update(cap_info)
    info.update(params or {})
    return WeightedGraph.from_edges(
        u, v, w, n, b=b, name=(name or stem(p)) + suffix, family=family, params=info
    )


@dataset("wmatch")
def graph_suitesparse(
    name: str,
    weight_seed: int = 1,
    capacity: int | str | None = None,
    capacity_max: int = 3,
    capacity_seed: int = 1,
    data_dir: str | os.PathLike | None = None,
    offline: bool = False,
) -> WeightedGraph:
    """SuiteSparse matrix ``Group/Name`` (fetched once, see
    :func:`~matchbench.graphs.suitesparse.resolve`) read by :func:`graph_mtx`; family
    ``suitesparse``, ``params["suitesparse"] = "Group/Name"``."""
    from matchbench.graphs.suitesparse import read_with

    return read_with(
        graph_mtx,
        name,
        data_dir,
        offline,
        weight_seed=weight_seed,
        capacity=capacity,
        capacity_max=capacity_max,
        capacity_seed=capacity_seed,
    )


# ---------------------------------------------------------------------------------------
# Generators: the MCM families, weighted


def _weighted(
    g: BipartiteGraph,
    weights: str,
    weight_seed: int | None,
    capacity: Any,
    capacity_max: int,
    capacity_seed: int,
    points: np.ndarray | None = None,
) -> WeightedGraph:
    """The undirected graph of a symmetric MCM graph ``g`` with weights and capacities."""
    where = _where(f"{g.family} ({g.name})")
    if weights not in WEIGHTS:
        raise DatasetError(f"{where}: weights must be one of {WEIGHTS}, not {weights!r}")
    if weights == "geometric" and points is None:
        raise DatasetError(
            f"{where}: weights 'geometric' (Euclidean edge length) needs a point set: only "
            "delaunay and rgg have one; use weights 'uniform'"
        )
    n = g.n_rows
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(g.row_ptr))
    cols = g.row_ind.astype(np.int64)
    upper = rows < cols
    u, v = rows[upper], cols[upper]
    seed = g.params.get("seed", 0) if weight_seed is None else weight_seed
    if weights == "uniform":
        w = uniform_weights(u.shape[0], int(seed))
    else:
        w = np.hypot(*(points[u] - points[v]).T)
    b, suffix, cap_info = capacities(capacity, n, capacity_max, capacity_seed, where)
    params = dict(g.params, weights=weights, **cap_info)
    if weights == "uniform":
        params["weight_seed"] = int(seed)
    return WeightedGraph.from_edges(
        u, v, w, n, b=b, name=f"{g.name}_{weights}{suffix}", family=g.family, params=params
    )


@dataset("wmatch", disk_cache=True, size_hint=lambda scale, edge_factor=16, **_: sizes.scaled(scale, edge_factor))
def kronecker(
    scale: int,
    edge_factor: int = 16,
    seed: int = 1,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    weights: str = "uniform",
    weight_seed: int | None = None,
    capacity: int | str | None = None,
    capacity_max: int = 3,
    capacity_seed: int = 1,
) -> WeightedGraph:
    """:func:`matchbench.graphs.generators.kronecker` with weights; ``weights="uniform"`` only.

    ``weight_seed`` (default: ``seed``) seeds the weights, drawn per edge in CSR order.
    Name ``kron_g500-logn{scale}_uniform`` (plus ``_b...`` with capacities).

    Notes
    -----
    Naim et al. 2015 (paper I), Sec. 5.1: random weights uniform between zero and one for
    matrices without values; zero excluded here, so no edge is dropped.
    """
    g = G.kronecker(scale, edge_factor=edge_factor, seed=seed, a=a, b=b, c=c)
    return _weighted(g, weights, weight_seed, capacity, capacity_max, capacity_seed)


@dataset("wmatch", disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
def delaunay(
    scale: int,
    seed: int = 1,
    weights: str = "uniform",
    weight_seed: int | None = None,
    capacity: int | str | None = None,
    capacity_max: int = 3,
    capacity_seed: int = 1,
) -> WeightedGraph:
    """:func:`matchbench.graphs.generators.delaunay` with ``uniform`` or ``geometric`` weights.

    Geometric: the Euclidean distance between the two points of the edge (the generator's
    points, :func:`~matchbench.graphs.generators.unit_square_points`).
    """
    g = G.delaunay(scale, seed=seed)
    points = G.unit_square_points(g.n_rows, seed) if weights == "geometric" else None
    return _weighted(g, weights, weight_seed, capacity, capacity_max, capacity_seed, points)


@dataset("wmatch", disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
def rgg(
    scale: int,
    seed: int = 1,
    radius_factor: float = 0.55,
    weights: str = "uniform",
    weight_seed: int | None = None,
    capacity: int | str | None = None,
    capacity_max: int = 3,
    capacity_seed: int = 1,
) -> WeightedGraph:
    """:func:`matchbench.graphs.generators.rgg` with ``uniform`` or ``geometric`` weights
    (geometric: the Euclidean distance between the edge's points, below the radius)."""
    g = G.rgg(scale, seed=seed, radius_factor=radius_factor)
    points = G.unit_square_points(g.n_rows, seed) if weights == "geometric" else None
    return _weighted(g, weights, weight_seed, capacity, capacity_max, capacity_seed, points)


@dataset("wmatch", disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
def grid(
    scale: int,
    seed: int = 1,
    weights: str = "uniform",
    weight_seed: int | None = None,
    capacity: int | str | None = None,
    capacity_max: int = 3,
    capacity_seed: int = 1,
) -> WeightedGraph:
    """:func:`matchbench.graphs.generators.grid` with uniform weights (seeded by
    ``weight_seed``, default ``seed``: the grid itself does not depend on the seed)."""
    g = G.grid(scale, seed=seed)
    return _weighted(g, weights, weight_seed, capacity, capacity_max, capacity_seed)


@dataset("wmatch", disk_cache=True, size_hint=lambda scale, **_: sizes.scaled(scale))
def road(
    scale: int,
    seed: int = 1,
    remove_fraction: float = 0.35,
    shortcut_fraction: float = 0.02,
    weights: str = "uniform",
    weight_seed: int | None = None,
    capacity: int | str | None = None,
    capacity_max: int = 3,
    capacity_seed: int = 1,
) -> WeightedGraph:
    """:func:`matchbench.graphs.generators.road` with uniform weights."""
    g = G.road(
        scale, seed=seed, remove_fraction=remove_fraction, shortcut_fraction=shortcut_fraction
    )
    return _weighted(g, weights, weight_seed, capacity, capacity_max, capacity_seed)


# ---------------------------------------------------------------------------------------
# The smoke set


def _clique(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n, 1)


def _smoke_edges(name: str) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, Any]:
    """``(n, u, v, w, b)`` of one smoke graph (see :data:`SMOKE`)."""
    rng = np.random.default_rng(7)
    if name == "path_ties":
        n = 12
        u = np.arange(n - 1)
        return n, u, u + 1, np.ones(n - 1), None
    if name == "star":
        n = 9
        leaves = np.arange(1, n)
        return (
            n,
            np.zeros(n - 1, dtype=np.int64),
            leaves,
            np.array([2.0, 5, 5, 1, 3, 5, 2, 4]),
            None,
        )
    if name == "clique_ties":
        u, v = _clique(10)
        return 10, u, v, rng.choice([1.0, 2.0, 3.0], size=u.size), None
    if name == "isolated":
        n = 30
        u = np.array([3, 3, 4, 10, 11, 12, 20, 21, 22, 20])
        v = np.array([4, 5, 5, 11, 12, 13, 21, 22, 23, 23])
        return n, u, v, np.array([1.0, 1, 1, 0.5, 0.75, 0.5, 2, 2, 2, 2]), None
    if name == "grid_ties":
        g = G.grid(6, seed=1)
        rows = np.repeat(np.arange(g.n_rows), np.diff(g.row_ptr))
        upper = rows < g.row_ind
        u, v = rows[upper], g.row_ind[upper].astype(np.int64)
        return g.n_rows, u, v, rng.choice([1.0, 2.0], size=u.size), None
    if name == "clique_b2":
        u, v = _clique(9)
        return 9, u, v, rng.choice([0.5, 1.0, 1.5], size=u.size), np.full(9, 2)
    if name == "random_brand":
        n = 60
        u, v = _clique(n)
        keep = rng.random(u.size) < 0.1
        u, v = u[keep], v[keep]
        return n, u, v, 1.0 - rng.random(u.size), rng.integers(0, 4, size=n)
    raise KeyError(name)


#: The smoke graphs: name -> what it exercises.
SMOKE = {
    "path_ties": "a 12-vertex path, all weights equal: the answer is decided by the tie order",
    "star": "a star with 8 leaves and repeated weights: one edge matched",
    "clique_ties": "K10 with weights in {1, 2, 3}: heavy ties, every vertex adjacent",
    "isolated": "30 vertices, 19 of them isolated; a triangle, a path, a 4-cycle",
    "grid_ties": "the 8 x 8 grid of generators.grid(6) with weights in {1, 2}",
    "clique_b2": "K9 with weights in {0.5, 1, 1.5} and capacity b = 2 everywhere",
    "random_brand": "G(60, 0.1) with uniform weights and capacities in [0, 3] (some 0)",
}


@dataset("wmatch")
def wmatch_smoke(name: str | None = None) -> WeightedGraph:
    """One of the tiny weighted graphs built in code (:data:`SMOKE` lists them), family
    ``wmatch_smoke``; deterministic.

    Raises
    ------
    DatasetError
        For a missing or unknown name (the message lists the choices).
    """
    if name is None or name not in SMOKE:
        what = "a name is required" if name is None else f"no smoke graph {name!r}"
        raise DatasetError(f"wmatch_smoke: {what}; available: {', '.join(SMOKE)}")
    n, u, v, w, b = _smoke_edges(name)
    return WeightedGraph.from_edges(
        u, v, w, n, b=b, name=name, family="wmatch_smoke", params={"smoke": name}
    )
