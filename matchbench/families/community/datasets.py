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
- :func:`community_lfr`: an LFR benchmark graph (Lancichinetti, Fortunato & Radicchi 2008):
  power-law degrees and community sizes, a mixing parameter ``mu``; generated here,
  vectorized (2^22 vertices in minutes); the communities are known (:func:`lfr_truth`).
  :func:`ground_truth` gives the planted communities of either kind, None for other graphs.
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

import math
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
    "community_lfr",
    "community_mtx",
    "community_planted",
    "community_rgg",
    "community_road",
    "community_smoke",
    "community_suitesparse",
    "ground_truth",
    "lfr_truth",
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
    return _follow_rcp(graph, truth)


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
# LFR benchmark graphs (Lancichinetti, Fortunato & Radicchi 2008)

#: Rounds of re-pairing the stubs of rejected edges (self-loops, repeated edges, external
#: edges inside one community) in :func:`community_lfr`; the stubs left after them are dropped.
LFR_ROUNDS = 64

#: ... and stops early when a round places less than ``1 - LFR_STALL`` of the stubs it had.
LFR_STALL = 0.995

#: Rounds of swapping degrees between vertices until each vertex's internal degree fits its
#: community (:func:`community_lfr`, step 3); more means the arguments leave no room.
_FIT_ROUNDS = 200

#: Candidates per misplaced vertex and round in that step.
_FIT_CANDIDATES = 8


def _check_real(
    what: str,
    value: Any,
    lo: float,
    hi: float | None = None,
    *,
    open_lo: bool = False,
    open_hi: bool = False,
) -> float:
    """``value`` as a finite float in the interval from ``lo`` to ``hi`` (``hi`` None: no
    upper bound; ``open_lo``/``open_hi``: the end is excluded), for generator arguments.

    >>> _check_real("lfr: mu", 0.3, 0.0, 1.0, open_hi=True)
    0.3
    >>> _check_real("lfr: mu", 1, 0.0, 1.0, open_hi=True)
    Traceback (most recent call last):
    matchbench.core.errors.DatasetError: lfr: mu must be a number in [0, 1), not 1

    Raises
    ------
    DatasetError
        Naming ``what``, for a bool, a non-number, NaN, infinity or a value out of range.
    """
    bound = (
        f"{'(' if open_lo else '['}{lo:g}, {hi:g}{')' if open_hi else ']'}"
        if hi is not None
        else f"{'>' if open_lo else '>='} {lo:g}"
    )
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise DatasetError(
            f"{what} must be a number {'in ' if hi is not None else ''}{bound}, not {value!r}"
        )
    x = float(value)
    inside = (
        math.isfinite(x)
        and (x > lo if open_lo else x >= lo)
        and (hi is None or (x < hi if open_hi else x <= hi))
    )
    if not inside:
        raise DatasetError(
            f"{what} must be a number {'in ' if hi is not None else ''}{bound}, not {value!r}"
        )
    return x


def _power_law_cdf(x: np.ndarray, tau: float, lo: float, hi: float) -> np.ndarray:
    """The distribution function at ``x`` of the density ``∝ x**-tau`` on ``[lo, hi)``."""
    x = np.clip(np.asarray(x, dtype=np.float64), lo, hi)
    if abs(tau - 1.0) < 1e-12:
        return np.log(x / lo) / math.log(hi / lo)
    e = 1.0 - tau
    return (x**e - lo**e) / (hi**e - lo**e)


def _power_law_pmf(tau: float, lo: float, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Values and probabilities of ``floor(x)``, ``x`` of density ``∝ x**-tau`` on ``[lo, hi)``."""
    ks = np.arange(math.floor(lo), hi, dtype=np.int64)
    cdf = _power_law_cdf(np.append(ks, hi).astype(np.float64), tau, lo, hi)
    return ks, np.diff(cdf)


def _power_law_ints(
    rng: np.random.Generator, size: int, tau: float, lo: float, hi: int
) -> np.ndarray:
    """``size`` draws of ``floor(x)``, ``x`` of density ``∝ x**-tau`` on ``[lo, hi)``
    (inverse transform sampling), as int64 in ``[floor(lo), hi - 1]``."""
    u = rng.random(size)
    if abs(tau - 1.0) < 1e-12:
        x = lo * (hi / lo) ** u
    else:
        e = 1.0 - tau
        x = (lo**e + u * (hi**e - lo**e)) ** (1.0 / e)
    # rounding can land on hi itself for u close to 1
    return np.minimum(np.floor(x).astype(np.int64), hi - 1)


def _power_law_mean(tau: float, lo: float, hi: int) -> float:
    ks, p = _power_law_pmf(tau, lo, hi)
    return float(np.dot(ks, p))


def _degree_xmin(where: str, avg_degree: float, max_degree: int, tau1: float) -> float:
    """The lower end ``x_min >= 1`` of the degree density ``∝ x**-tau1`` on
    ``[x_min, max_degree + 1)`` whose integer part has mean ``avg_degree`` (bisection: the
    mean grows with ``x_min``)."""
    hi = max_degree + 1
    smallest = _power_law_mean(tau1, 1.0, hi)
    if avg_degree < smallest:
        raise DatasetError(
            f"{where}: avg_degree = {avg_degree:g} is below {smallest:.4g}, the smallest mean "
            f"degree of a power law with tau1 = {tau1:g}, degrees in [1, {max_degree}]; raise "
            "avg_degree, or lower tau1 or max_degree"
        )
    a, b = 1.0, float(hi)
    for _ in range(100):
        mid = 0.5 * (a + b)
        if _power_law_mean(tau1, mid, hi) < avg_degree:
            a = mid
        else:
            b = mid
    return 0.5 * (a + b)


def _lfr_layout(
    where: str, n: int, tau2: float, min_c: int, max_c: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The communities of :func:`community_lfr`: their sizes and the vertex numbering.

    Sizes are drawn from the power law ``∝ s**-tau2`` on ``[min_c, max_c]`` until they
    cover ``n``; a remainder of at least ``min_c`` vertices is one more community, a
    smaller one is spread one vertex each over random communities below ``max_c``. Then
    ``perm`` numbers the vertices: community ``c`` holds the vertices
    ``perm[sum(sizes[:c]) .. sum(sizes[:c + 1]) - 1]``. Their own random stream (``seed``,
    stream 0), independent of the edges', so that :func:`lfr_truth` recomputes them in O(n).
    """
    rng = np.random.default_rng([seed, 0])
    # n // min_c + 1 sizes of at least min_c each always cover n
    draw = _power_law_ints(rng, n // min_c + 1, tau2, float(min_c), max_c + 1)
    ends = np.cumsum(draw)
    j = int(np.searchsorted(ends, n, side="right"))
    sizes = draw[:j].copy()
    rest = n - (int(ends[j - 1]) if j else 0)
    if rest >= min_c:
        sizes = np.append(sizes, rest)
    while rest and rest < min_c:
        room = np.flatnonzero(sizes < max_c)
        if room.size == 0:
            raise DatasetError(
                f"{where}: n = {n} vertices cannot be split into communities of "
                f"{min_c} to {max_c} vertices; change n, min_community or max_community"
            )
        pick = rng.choice(room, size=min(rest, room.size), replace=False)
        sizes[pick] += 1
        rest -= pick.size
    return sizes, rng.permutation(n)


def _fit_degrees(
    where: str, rng: np.random.Generator, k: np.ndarray, k_in: np.ndarray, cap: np.ndarray
) -> None:
    """Swap ``(k, k_in)`` between vertices (in place) until ``k_in <= cap`` everywhere.

    First the condition for a fit to exist (Hall's, for nested choices): for every ``t``,
    no more vertices of internal degree ``>= t`` than vertices of cap ``>= t``. Then in
    rounds, each vertex whose internal degree exceeds its cap (its community's size - 1)
    trades places with a random vertex whose cap takes it: the first of
    :data:`_FIT_CANDIDATES` random candidates whose own internal degree fits the first
    one's cap, else the candidate of the smallest internal degree, which then moves on in
    the next round (LFR's "kick out a random member", in disjoint swaps).

    Raises
    ------
    DatasetError
        When no fit exists, naming the threshold ``t`` and the counts.
    """
    n = k.shape[0]
    top = int(max(k_in.max(), cap.max())) + 2
    demand = np.cumsum(np.bincount(k_in, minlength=top)[::-1])[::-1]
    supply = np.cumsum(np.bincount(np.maximum(cap, 0), minlength=top)[::-1])[::-1]
    short = np.flatnonzero(demand[1:] > supply[1:]) + 1
    if short.size:
        t = int(short[-1])
        raise DatasetError(
            f"{where}: {int(demand[t])} vertices have {t} or more internal edges "
            f"(degree x (1 - mu)) but only {int(supply[t])} belong to communities of more "
            f"than {t} vertices; raise max_community or min_community, lower avg_degree or "
            "max_degree, or raise mu"
        )
    order = np.argsort(cap, kind="stable")
    sorted_cap = cap[order]
    for _ in range(_FIT_ROUNDS):
        over = k_in > cap
        bad = np.flatnonzero(over)
        if bad.size == 0:
            return
        lo = np.searchsorted(sorted_cap, k_in[bad], side="left")[:, None]
        draw = rng.random((bad.size, _FIT_CANDIDATES))
        cand = order[lo + (draw * (n - lo)).astype(np.int64)]
        clean = k_in[cand] <= cap[bad][:, None]
        pick = np.where(clean.any(axis=1), clean.argmax(axis=1), k_in[cand].argmin(axis=1))
        w = cand[np.arange(bad.size), pick]
        ok = ~over[w]
        v, w = bad[ok], w[ok]
        w, first = np.unique(w, return_index=True)
        v = v[first]
        k[v], k[w] = k[w], k[v].copy()
        k_in[v], k_in[w] = k_in[w], k_in[v].copy()
    raise DatasetError(
        f"{where}: {int(np.count_nonzero(k_in > cap))} vertices still have more internal "
        f"edges than their community has other vertices after {_FIT_ROUNDS} rounds; raise "
        "max_community or min_community, or lower max_degree"
    )


def _pair_stubs(
    rng: np.random.Generator, stubs: np.ndarray, group: np.ndarray | None, start: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """A uniformly random perfect matching of ``stubs`` (vertex ids, one per edge end)
    within each group (``group[vertex]``, the vertices of group ``g`` numbered from
    ``start[g]``; None: one group); each group must hold an even number of stubs.

    One sort of int64 keys ``group | random | offset in group`` (a sort of keys is about
    twice as fast as an argsort); a lexsort where these do not fit in 63 bits.
    """
    if stubs.size == 0:
        return stubs, stubs
    if group is None:
        gid, local, gbits = None, stubs, 0
    else:
        gid = group[stubs].astype(np.int64)
        local = stubs - start[gid]
        gbits = int(gid.max()).bit_length()
    lbits = max(int(local.max()).bit_length(), 1)
    rbits = 63 - gbits - lbits
    if rbits >= 20:
        key = rng.integers(0, 1 << rbits, size=stubs.size, dtype=np.int64) << lbits
        key |= local
        if gid is not None:
            key |= gid << (rbits + lbits)
        del gid, local
        key.sort()
        s = key & ((1 << lbits) - 1)
        if group is not None:
            s += start[key >> (rbits + lbits)]
    else:
        keys = (rng.random(stubs.size),) if gid is None else (rng.random(stubs.size), gid)
        order = np.lexsort(keys)
        s = stubs[order]
    return s[0::2], s[1::2]


def _wire(
    rng: np.random.Generator,
    stubs: np.ndarray,
    n: int,
    comm: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    *,
    internal: bool,
) -> tuple[np.ndarray, int]:
    """Simple edges from ``stubs`` by the configuration model, with re-pairing.

    ``internal``: stubs pair within their community (vertices numbered community by
    community: community ``c`` is ``start[c] .. end[c] - 1``); else across all vertices,
    and an edge inside one community is rejected too. Rejected edges (self-loops, repeats)
    give their stubs back; each round re-pairs them together with the stubs of as many
    random accepted edges of the same group (a degree-keeping rewiring), for
    :data:`LFR_ROUNDS` rounds at most.

    Returns
    -------
    keys : ndarray of int64
        The accepted edges ``u * n + v``, ``u < v``, distinct.
    dropped : int
        Stubs left unpaired.
    """
    group = comm if internal else None

    def classify(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        u, v = np.minimum(a, b), np.maximum(a, b)
        bad = u == v
        if not internal:
            bad |= comm[u] == comm[v]
        return u * n + v, bad

    a, b = _pair_stubs(rng, stubs, group, start)
    del stubs
    key, bad = classify(a, b)
    pending = [a[bad], b[bad]]
    del a, b
    main = key[~bad]
    del key, bad
    main.sort()
    repeat = np.flatnonzero(main[1:] == main[:-1]) + 1
    if repeat.size:
        pending += [main[repeat] // n, main[repeat] % n]
        main = np.delete(main, repeat)
    pend = np.concatenate(pending)
    deleted = np.zeros(main.size, dtype=bool)
    side = np.zeros(0, dtype=np.int64)
    for _ in range(LFR_ROUNDS):
        if pend.size == 0:
            break
        before = pend.size
        # partners: one random accepted edge of the same group per rejected edge
        if main.size == 0:
            idx = np.zeros(0, dtype=np.int64)
        elif internal:
            counts = np.bincount(comm[pend], minlength=start.size)
            gs = np.flatnonzero(counts)
            lo = np.searchsorted(main, start[gs] * n)
            width = np.searchsorted(main, end[gs] * n) - lo
            rep = np.repeat(np.arange(gs.size), np.minimum(counts[gs] // 2, width))
            idx = lo[rep] + (rng.random(rep.size) * width[rep]).astype(np.int64)
        else:
            idx = rng.integers(0, main.size, size=pend.size // 2)
        idx.sort()
        idx = idx[np.append(True, idx[1:] != idx[:-1])[: idx.size]]
        idx = idx[~deleted[idx]]
        deleted[idx] = True
        pend = np.concatenate([pend, main[idx] // n, main[idx] % n])
        a, b = _pair_stubs(rng, pend, group, start)
        key, bad = classify(a, b)
        # sorted: sorted needles make searchsorted fast, and repeats adjacent
        order = np.argsort(key)
        key, bad, a, b = key[order], bad[order], a[order], b[order]
        bad[1:] |= key[1:] == key[:-1]  # all copies of an edge are alike: keep the first
        if main.size:
            at = np.minimum(np.searchsorted(main, key), main.size - 1)
            bad |= (main[at] == key) & ~deleted[at]
        if side.size:
            at = np.minimum(np.searchsorted(side, key), side.size - 1)
            bad |= side[at] == key
        new = key[~bad]
        side = np.insert(side, np.searchsorted(side, new), new)
        pend = np.concatenate([a[bad], b[bad]])
        if pend.size > LFR_STALL * before:
            break  # what is left is stuck (communities too dense for a simple graph)
    return np.concatenate([main[~deleted], side]), int(pend.size)


def _follow_rcp(graph: Any, truth: np.ndarray) -> np.ndarray:
    """``truth`` moved with the RCP permutation of ``graph`` (``params["rcp"]``), if any."""
    params = graph.params
    if not params.get("rcp"):
        return truth
    perm = np.random.default_rng(int(params["rcp_seed"])).permutation(graph.n)
    moved = np.empty_like(truth)
    moved[perm] = truth
    return moved


def lfr_truth(graph: CommunityGraph) -> np.ndarray:
    """The planted communities of a :func:`community_lfr` graph (also after RCP).

    Recomputed from ``graph.params`` (``n``, ``tau2``, ``min_community``,
    ``max_community``, ``seed``) by the community layout step alone, O(n), independent of
    the edges; not stored in the graph.

    Returns
    -------
    ndarray of int64
        ``truth[i]`` the community of vertex ``i``, ids ``0 .. n_communities - 1``.

    Raises
    ------
    ValueError
        For a graph that :func:`community_lfr` did not make.
    """
    params = graph.params
    if params.get("generator") != "lfr":
        raise ValueError(f"{graph.name}: not a community_lfr graph (no planted communities)")
    sizes, perm = _lfr_layout(
        _where("community_lfr"),
        int(params["n"]),
        float(params["tau2"]),
        int(params["min_community"]),
        int(params["max_community"]),
        int(params["seed"]),
    )
    truth = np.empty(sizes.sum(), dtype=np.int64)
    truth[perm] = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    return _follow_rcp(graph, truth)


@dataset(
    "community",
    disk_cache=True,
    size_hint=lambda n, avg_degree=20.0, **_: sizes.lists(n, avg_degree),
)
def community_lfr(
    n: int,
    mu: float,
    avg_degree: float = 20.0,
    max_degree: int = 50,
    tau1: float = 2.0,
    tau2: float = 1.0,
    min_community: int = 20,
    max_community: int = 100,
    seed: int = 1,
    weights: str = "unit",
    weight_seed: int | None = None,
) -> CommunityGraph:
    """An LFR benchmark graph: power-law degrees and community sizes, mixing ``mu``.

    Parameters
    ----------
    n : int
        Vertices (``>= min_community``).
    mu : float
        Mixing parameter in [0, 1): the share of each vertex's edges that leave its
        community (the benchmark is meant for 0.1 to 0.5; above ~0.5 the communities fade).
    avg_degree : float
        Mean degree (> 1, below ``max_degree``; at least the mean of the power law on
        ``[1, max_degree]``: the minimum degree is fitted to it).
    max_degree : int
        Largest degree (``1 .. n - 1``).
    tau1 : float
        Exponent of the degree distribution ``P(k) ∝ k**-tau1`` (>= 0; LFR use 2 to 3).
    tau2 : float
        Exponent of the community-size distribution ``P(s) ∝ s**-tau2`` (>= 0; LFR use 1
        to 2).
    min_community, max_community : int
        Community sizes, ``1 <= min_community <= max_community <= n``;
        ``max_community`` must exceed the internal degree ``(1 - mu) max_degree`` of the
        largest hub.
    seed : int
        The random streams (>= 0): the same arguments give the same graph, and the same
        ``(n, tau2, min_community, max_community, seed)`` the same communities.
    weights : {"unit", "uniform"}
        Weight 1 on every edge, or uniform in (0, 1] drawn with ``weight_seed`` (default
        ``seed``) per edge in CSR order.

    Returns
    -------
    CommunityGraph
        Named ``lfr_n{n}_mu{mu}_k{avg_degree}_kmax{max_degree}_c{min}-{max}_t{tau1}-{tau2}_s{seed}``
        (plus ``_uniform``), family ``lfr``. ``params`` holds ``generator = "lfr"``, the
        arguments (from which :func:`lfr_truth` recomputes the communities), and what the
        draw realised: ``n_communities``, ``mu_realised`` (the mean over vertices with an
        edge of their share of edges leaving their community: LFR's definition),
        ``mu_realised_edges`` (the share of all edges that join two communities),
        ``avg_degree_realised`` and ``stubs_dropped`` (edge ends that no re-pairing
        placed).

    Raises
    ------
    DatasetError
        Naming the argument, for a value of the wrong type or out of range, ``avg_degree``
        not below ``max_degree`` or below the power law's smallest mean, ``max_community``
        too small for the hubs' internal degree, a size range that cannot split ``n``, or an
        unknown ``weights``.

    Notes
    -----
    After Lancichinetti, Fortunato & Radicchi, *Benchmark graphs for testing community
    detection algorithms*, Phys. Rev. E 78, 046110 (2008), Sec. II, in vectorized steps,
    O((n + m) log(n + m)):

    1. Community sizes from the power law ``tau2`` on ``[min_community, max_community]``
       until they cover ``n``, and a random numbering of the vertices (own random stream:
       :func:`lfr_truth` recomputes it).
    2. Degrees ``floor(x)``, ``x`` of density ``∝ x**-tau1`` on ``[x_min, max_degree + 1)``,
       ``x_min`` fitted so that the mean is ``avg_degree``; internal degree
       ``floor((1 - mu) k + U)`` (stochastic rounding: ``(1 - mu) k`` on average).
    3. Degrees swapped between vertices until every internal degree is below its
       community's size (LFR assign vertices to communities instead; the same constraint).
       A community with an odd internal-degree sum gives one of its members (picked by a
       random internal stub) one internal stub more or less, by a coin; an odd external sum
       likewise (the mean degree is kept, and ``mu = 0`` gives no external edge).
    4. Internal edges: the configuration model in each community (a random matching of
       the community's stubs); external edges: the configuration model over all external
       stubs. Self-loops, repeated edges and external edges that fall inside one community
       are rejected and their stubs re-paired with those of random accepted edges of the
       same group (:data:`LFR_ROUNDS` rounds; LFR rewire the same way); what is left is
       dropped (``stubs_dropped``).

    Deviations: dropped stubs lower some degrees; they are mostly internal (a small dense
    community cannot hold its members' internal degrees as a simple graph), so the
    realised mixing sits slightly above ``mu``. Measured with the defaults at
    ``n = 10**5``, ``mu`` 0.1 / 0.3 / 0.5: ``mu_realised`` 0.1006 / 0.3009 / 0.5007,
    ``stubs_dropped`` 0.9% / 0.5% / 0.2% of the stubs (mean degree 19.8 to 19.9 for 20);
    larger, sparser communities drop fewer.
    """
    where = _where("community_lfr")
    n = G.check_int(f"{where}: n", n, 2, INT32_MAX)
    mu = _check_real(f"{where}: mu", mu, 0.0, 1.0, open_hi=True)
    max_degree = G.check_int(f"{where}: max_degree", max_degree, 1, n - 1)
    avg_degree = _check_real(
        f"{where}: avg_degree", avg_degree, 1.0, float(max_degree), open_hi=True
    )
    tau1 = _check_real(f"{where}: tau1", tau1, 0.0, 10.0)
    tau2 = _check_real(f"{where}: tau2", tau2, 0.0, 10.0)
    min_c = G.check_int(f"{where}: min_community", min_community, 1, n)
    max_c = G.check_int(f"{where}: max_community", max_community, min_c, n)
    seed = G.check_int(f"{where}: seed", seed, 0)
    if weights not in ("unit", "uniform"):
        raise DatasetError(f"{where}: weights must be 'unit' or 'uniform', not {weights!r}")
    hub = math.ceil((1.0 - mu) * max_degree)
    if hub > max_c - 1:
        raise DatasetError(
            f"{where}: max_community = {max_c} cannot hold a hub: a vertex of degree "
            f"max_degree = {max_degree} has up to {hub} internal edges at mu = {mu:g}, so "
            f"max_community must be at least {hub + 1}"
        )
    xmin = _degree_xmin(where, avg_degree, max_degree, tau1)

    # 1. communities: vertex slots 0 .. n-1 numbered community by community
    sizes_, perm = _lfr_layout(where, n, tau2, min_c, max_c, seed)
    ends = np.cumsum(sizes_)
    starts = ends - sizes_
    comm = np.repeat(np.arange(sizes_.size, dtype=np.int64), sizes_)

    # 2.-3. degrees, internal degrees, fitted to the communities
    rng = np.random.default_rng([seed, 1])
    k = _power_law_ints(rng, n, tau1, xmin, max_degree + 1)
    k_in = np.minimum(np.floor((1.0 - mu) * k + rng.random(n)).astype(np.int64), k)
    _fit_degrees(where, rng, k, k_in, sizes_[comm] - 1)
    k_out = k - k_in
    del k
    per = np.add.reduceat(k_in, starts)
    odd = np.flatnonzero(per % 2)
    if odd.size:
        # a member picked by a random internal stub gains or loses one (a coin; loses at cap)
        before = np.cumsum(k_in)  # stubs of the slots 0 .. i
        first = before[starts[odd]] - k_in[starts[odd]]
        slot = np.searchsorted(
            before, first + (rng.random(odd.size) * per[odd]).astype(np.int64), side="right"
        )
        up = (rng.random(odd.size) < 0.5) & (k_in[slot] < sizes_[odd] - 1)
        k_in[slot] += np.where(up, 1, -1)
    if int(k_out.sum()) % 2:
        # a random member with an external stub gains or loses one likewise
        has = np.flatnonzero(k_out)
        k_out[has[int(rng.integers(has.size))]] += 1 if rng.random() < 0.5 else -1
    del per, odd

    # 4. edges
    slots = np.arange(n, dtype=np.int64)
    inner, drop_in = _wire(rng, np.repeat(slots, k_in), n, comm, starts, ends, internal=True)
    outer, drop_out = _wire(rng, np.repeat(slots, k_out), n, comm, starts, ends, internal=False)
    del k_in, k_out, slots
    keys = np.concatenate([inner, outer])
    u, v = perm[keys // n], perm[keys % n]
    del keys
    deg = np.bincount(np.concatenate([u, v]), minlength=n)
    ext = np.bincount(np.concatenate([u[inner.size :], v[inner.size :]]), minlength=n)
    has = deg > 0
    params: dict[str, Any] = {
        "generator": "lfr",
        "n": n,
        "mu": mu,
        "avg_degree": avg_degree,
        "max_degree": max_degree,
        "tau1": tau1,
        "tau2": tau2,
        "min_community": min_c,
        "max_community": max_c,
        "seed": seed,
        "weights": weights,
        "n_communities": int(sizes_.size),
        "mu_realised": float(np.mean(ext[has] / deg[has])) if has.any() else 0.0,
        "mu_realised_edges": float(outer.size / max(u.size, 1)),
        "avg_degree_realised": float(2.0 * u.size / n),
        "stubs_dropped": drop_in + drop_out,
    }
    del deg, ext, has, inner, outer
    if u.size == 0:
        raise DatasetError(f"{where}: the draw has no edge (n = {n}); raise avg_degree")
    name = (
        f"lfr_n{n}_mu{mu:g}_k{avg_degree:g}_kmax{max_degree}_c{min_c}-{max_c}"
        f"_t{tau1:g}-{tau2:g}_s{seed}"
    )
    g = CommunityGraph.from_edges(u, v, np.ones(u.shape[0]), n, name=name, family="lfr")
    del u, v
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
            family="lfr",
            params=params,
        )
    g.params = params
    return g


# ---------------------------------------------------------------------------------------
# Ground truth


#: ``params["generator"]`` of the generators that plant communities -> their truth function.
_TRUTHS = {"planted_partition": planted_truth, "lfr": lfr_truth}


def ground_truth(graph: Any) -> np.ndarray | None:
    """The communities a generator planted in ``graph``, or None where none are known.

    Parameters
    ----------
    graph : WeightedGraph
        An instance (also RCP-permuted, also read back from the disk cache).

    Returns
    -------
    ndarray of int64 or None
        ``truth[i]`` the planted community of vertex ``i`` for a :func:`community_planted`
        (:func:`planted_truth`) or :func:`community_lfr` (:func:`lfr_truth`) graph; None
        for any other graph (a file, a Kronecker graph...).
    """
    params = getattr(graph, "params", None) or {}
    truth = _TRUTHS.get(params.get("generator"))
    return None if truth is None else truth(graph)


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
    params = dict(g.params, weights=weights)
    if weights == "unit":
        # g's CSR is the answer (symmetric, sorted rows, no self-loop or duplicate: the
        # constructor checks it again), with a weight of 1 per entry; the same arrays as the
        # edge list below would give, without its sorts
        if g.row_ind.shape[0] == 0:
            raise DatasetError(f"{where}: the graph has no edge")
        return CommunityGraph(
            n=n, ptr=g.row_ptr, ind=g.row_ind, weight=np.ones(g.row_ind.shape[0]),
            name=g.name, family=g.family, params=params,
        )
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(g.row_ptr))
    cols = g.row_ind.astype(np.int64)
    upper = rows < cols
    u, v = rows[upper], cols[upper]
    if weights == "uniform":
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


@dataset(
    "community",
    disk_cache=True,
    size_hint=lambda scale, edge_factor=16, **_: sizes.scaled(scale, edge_factor),
)
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
