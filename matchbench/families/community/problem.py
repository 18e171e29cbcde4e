"""Community detection by modularity (the Louvain family): data model, Q, certificate.

An instance is a :class:`CommunityGraph`: the weighted-matching family's
:class:`~matchbench.graphs.weighted.WeightedGraph` data model reused as it is (an undirected
graph in one symmetric CSR, both directions of every edge stored, finite positive float64
weights), without capacities, and tagged ``problem = "community"`` so that the runner pairs it
with this family's solvers (the dataset functions of :mod:`matchbench.families.community.datasets`
return one). :func:`modularity`, :func:`aggregate` and the verifier take any ``WeightedGraph``.
An answer is a :class:`Partition`: one community id per vertex, optionally the hierarchy of the
Louvain stages, the modularity the solver claims, and whether it claims every community
connected (Leiden does).

Modularity (Naim, Manne, Halappanavar, Tumeo, *Community Detection on the GPU*, IPDPS 2017;
paper III of Naim's 2017 thesis, Sec. 2, Eq. 1)::

    Q = 1/(2m) sum_i e_{i -> C(i)}  -  sum_c a_c^2 / (4 m^2)

with ``m = sum_e w_e`` (every undirected edge once), ``k_i`` the weighted degree of ``i``,
``a_c = sum_{i in c} k_i`` and ``e_{i -> C(i)} = sum_{j in C(i)} w_ij``. Vertices without edges
have ``k_i = 0``: they change neither term, whatever their community. An edgeless graph
(``m = 0``) has ``Q = 0`` by convention here (Eq. 1 is 0/0; networkx raises).

Self-loops
----------
:class:`WeightedGraph` cannot hold a self-loop: its constructor rejects one (defect code 3),
so on every instance of this family the loop terms below vanish. The Louvain method makes
them on its own, though: its aggregation phase merges the edges inside a community into a
self-loop of the new vertex, weighing their sum (paper III, Sec. 2). :func:`modularity` and
:func:`move_gain` therefore take an optional ``loop`` array (``loop[i]`` the weight of the
self-loop at ``i``, 0 for none), read as an edge of the graph: counted once in ``m``, twice in
``k_i`` (both of its ends are at ``i``) and twice in ``e_{i -> C(i)}`` (``i`` is in its own
community; the CSR would store the loop once per direction). This is the reading under which
aggregation keeps Q: a community with internal weight ``W`` and outside weight ``X`` becomes
a vertex with ``k = 2W + X = a_c`` and ``m`` unchanged (:func:`aggregate`; tested), and it is
networkx's convention. In Eq. 2 the loop counts in ``k_i`` and is excluded from
``e_{i -> C(i) \\ {i}}``: it moves with ``i``, so the gain does not depend on it.

The certificate
---------------
:meth:`Community.verify`, independent of every solver, O(n + m): the partition covers every
vertex with integer ids that are dense (``0 .. k-1``, each used); a reported hierarchy
composes to it; Q is recomputed with Eq. 1 in float64 (numba, one pass over the CSR in vertex
order, so equal answers give equal values, bit for bit); a reported modularity must equal it
within :data:`MODULARITY_RTOL`. Louvain is a heuristic (finding the best Q is NP-hard,
Brandes et al. 2008), so there is no reference and no optimality claim to certify.

Connectivity is certified too, O(n + m) (:mod:`~matchbench.families.community.connectivity`:
scipy's connected components of the edges inside communities): an answer that claims
connected communities (``Partition.connected``, set by Leiden, whose guarantee it is: Traag,
Waltman & van Eck, Sci. Rep. 2019, Table 1) fails if one is not; an answer without the claim
(Louvain's: no such guarantee) is still verified, and its ``verify_reason`` carries the count
of disconnected communities as a note (:data:`DISCONNECTED_NOTE`), so that the row shows it.

Quality against the references
------------------------------
The ``objective`` column is the recomputed Q; ``reference_objective`` and ``bound`` stay
empty, because no optimum (nor bound) is known and the Q of another heuristic is none.
The ratio to the best reference Q on the same instance needs the rows of several solvers,
so it is computed from the rows, not in one task: :func:`reference_ratios` adds
``q_ratio = objective / best reference Q`` (the references: :data:`REFERENCES`).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numba import njit

from matchbench.core.errors import DatasetError
from matchbench.core.problem import Problem, Verification
from matchbench.families.community.connectivity import disconnected_communities
from matchbench.families.community.truth import truth_nmi
from matchbench.graphs.weighted import WeightedGraph

__all__ = [
    "DISCONNECTED_NOTE",
    "MODULARITY_RTOL",
    "REFERENCES",
    "Community",
    "CommunityGraph",
    "Partition",
    "aggregate",
    "modularity",
    "move_gain",
    "reference_ratios",
]

#: Tolerance on a solver's reported modularity, relative to ``max(1, |Q|)``: Q lies in
#: [-1/2, 1), and a poor partition's Q near 0 would make a purely relative test meaningless.
MODULARITY_RTOL = 1e-9

#: How a verified answer's ``reason`` starts when some of its communities are disconnected
#: and the answer does not claim otherwise (Louvain's): a note, not a defect.
DISCONNECTED_NOTE = "note: disconnected communities"

#: The CPU reference solvers (``algorithm`` column) whose best Q on an instance is the
#: denominator of :func:`reference_ratios`.
REFERENCES = ("louvain", "nk_plm", "igraph_louvain", "nx_louvain")


class _as_community(contextlib.AbstractContextManager):
    """Re-raise the data model's "wmatch instance ..." errors as "community instance ..."."""

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        prefix = "wmatch instance "
        if isinstance(exc, DatasetError) and str(exc).startswith(prefix):
            raise DatasetError("community instance " + str(exc)[len(prefix) :]) from None


@dataclass(eq=False)
class CommunityGraph(WeightedGraph):
    """An instance of the community family: a :class:`WeightedGraph` without capacities.

    Same attributes, construction (:meth:`~WeightedGraph.from_edges`), checks, RCP
    permutation and ``.npz`` files as its base class; only the ``problem`` tag differs, so
    that a weighted-matching solver is never paired with a community instance or the other
    way round. A graph cannot hold a self-loop (module docstring); the readers drop them.

    Raises
    ------
    DatasetError
        For what :class:`WeightedGraph` rejects, and for capacities ``b`` (meaningless here).
    """

    problem: ClassVar[str] = "community"

    def __post_init__(self) -> None:
        if self.b is not None:
            raise DatasetError(
                f"community instance {self.name!r}: capacities b are a weighted-matching "
                "notion; a community instance has none"
            )
        with _as_community():
            super().__post_init__()
        two_m = float(np.sum(self.weight))
        if two_m > 0 and not two_m * two_m > 0:
            # modularity divides by (2m)^2: subnormal weights would divide by zero
            raise DatasetError(
                f"community instance {self.name!r}: the weights sum to {two_m!r}, too small "
                "for modularity's 1 / (2m)^2 in float64; scale the weights up"
            )

    @classmethod
    def from_edges(cls, u: Any, v: Any, w: Any, n: int, **kwargs: Any) -> CommunityGraph:
        """:meth:`WeightedGraph.from_edges`, its errors naming the community family."""
        with _as_community():
            return super().from_edges(u, v, w, n, **kwargs)

    @classmethod
    def from_graph(cls, graph: WeightedGraph, **changes: Any) -> CommunityGraph:
        """The community instance of a weighted graph (same arrays; capacities dropped).

        ``changes`` replace ``name``, ``family`` or ``params``.
        """
        fields = {"name": graph.name, "family": graph.family, "params": dict(graph.params)}
        fields.update(changes)
        return cls(n=graph.n, ptr=graph.ptr, ind=graph.ind, weight=graph.weight, **fields)


@dataclass
class Partition:
    """An answer: a community per vertex.

    Attributes
    ----------
    community : ndarray
        Integer array, ``community[i]`` the community of vertex ``i``; ids dense in ``[0, k)``.
    levels : list of ndarray or None
        The hierarchy, where the solver reports it: ``levels[0]`` maps the vertices to the
        communities of the first stage, ``levels[t]`` the communities of stage ``t - 1`` (the
        vertices of the aggregated graph) to those of stage ``t``; each level dense. Composed,
        they must give ``community``.
    modularity : float or None
        The modularity the solver claims for ``community``; the verifier recomputes it.
    connected : bool
        Whether the solver claims that every community induces a connected subgraph
        (Leiden's guarantee; default False: Louvain's methods make no such claim). The
        verifier fails a claiming answer with a disconnected community, and notes the
        disconnected communities of the others.
    """

    community: np.ndarray
    levels: list[np.ndarray] | None = None
    modularity: float | None = None
    connected: bool = False

    @property
    def n_communities(self) -> int:
        c = np.asarray(self.community)
        return int(c.max()) + 1 if c.size else 0


# ---------------------------------------------------------------------------------------
# Eq. 1 and Eq. 2 (numba)


@njit(cache=True, nogil=True)
def _modularity(n, ptr, ind, w, loop, comm, k):
    """Q of Eq. 1 (module docstring for the loop convention); O(n + m), float64, vertex order."""
    a = np.zeros(k, dtype=np.float64)
    two_m = 0.0
    inside = 0.0
    for x in range(n):
        cx = comm[x]
        kx = 2.0 * loop[x]
        ex = 2.0 * loop[x]
        for p in range(ptr[x], ptr[x + 1]):
            kx += w[p]
            if comm[ind[p]] == cx:
                ex += w[p]
        a[cx] += kx
        two_m += kx
        inside += ex
    if two_m == 0.0:
        return 0.0
    spread = 0.0
    for c in range(k):
        spread += a[c] * a[c]
    return inside / two_m - spread / (two_m * two_m)


@njit(cache=True, nogil=True)
def _move_gain(n, ptr, ind, w, loop, comm, i, target):
    """Eq. 2: the change of Q when vertex ``i`` moves to community ``target``."""
    ci = comm[i]
    if target == ci:
        return 0.0
    two_m = 0.0
    a_own = 0.0  # a_{C(i) \ {i}}
    a_to = 0.0  # a_{target}
    for x in range(n):
        kx = 2.0 * loop[x]
        for p in range(ptr[x], ptr[x + 1]):
            kx += w[p]
        two_m += kx
        if x != i and comm[x] == ci:
            a_own += kx
        elif comm[x] == target:
            a_to += kx
    if two_m == 0.0:
        return 0.0
    m = two_m / 2.0
    ki = 2.0 * loop[i]
    e_own = 0.0  # e_{i -> C(i) \ {i}}: the loop excluded
    e_to = 0.0
    for p in range(ptr[i], ptr[i + 1]):
        ki += w[p]
        cj = comm[ind[p]]
        if cj == ci:
            e_own += w[p]
        elif cj == target:
            e_to += w[p]
    return (e_to - e_own) / m + ki * (a_own - a_to) / (2.0 * m * m)


# ---------------------------------------------------------------------------------------
# Checks of an answer


def _labels(a: Any, n: int, what: str) -> np.ndarray | str:
    """``a`` as dense int64 labels of ``n`` items, or why it is not."""
    a = np.asarray(a)
    if a.ndim != 1 or a.shape[0] != n:
        return f"{what} has shape {a.shape}, expected ({n},)"
    if a.dtype.kind not in "iu":
        return f"{what} has dtype {a.dtype}, expected integers"
    a = a.astype(np.int64)
    if n == 0:
        return a
    if a.min() < 0:
        x = int(np.flatnonzero(a < 0)[0])
        return f"{what}[{x}] = {int(a[x])} is a negative community id"
    top = int(a.max())
    if top >= n:  # dense ids of n items are below n; also keeps bincount's array small
        x = int(np.argmax(a))
        return (
            f"{what} ids are not dense: {what}[{x}] = {top}, but {n} items have ids below {n}"
        )
    used = np.bincount(a)
    if (used == 0).any():
        c = int(np.flatnonzero(used == 0)[0])
        return (
            f"{what} ids are not dense: {int(a.max()) + 1} ids [0, {int(a.max()) + 1}) "
            f"but id {c} is unused"
        )
    return a


def _loop(loop: Any, n: int) -> np.ndarray:
    if loop is None:
        return np.zeros(n, dtype=np.float64)
    arr = np.ascontiguousarray(loop, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"loop has shape {arr.shape}, expected ({n},)")
    if not (np.isfinite(arr).all() and (arr >= 0).all()):
        raise ValueError("self-loop weights must be finite and >= 0")
    return arr


def modularity(graph: WeightedGraph, community: Any, loop: Any = None) -> float:
    """Modularity Q of a partition, Eq. 1, recomputed in float64; O(n + m).

    Parameters
    ----------
    graph : WeightedGraph
    community : array_like of int
        Dense community ids ``[0, k)``, one per vertex.
    loop : array_like of float, optional
        Self-loop weight per vertex (aggregated graphs; module docstring), 0 where None.

    Returns
    -------
    float
        Q; 0.0 for a graph without edges.

    Raises
    ------
    ValueError
        For labels that are not dense integer ids of every vertex, or a bad ``loop``.

    Notes
    -----
    Naim et al., IPDPS 2017 (paper III of Naim's 2017 thesis), Sec. 2, Eq. 1, after Newman
    2006. Independent of every solver: one pass over the CSR in vertex order.
    """
    c = _labels(community, graph.n, "community")
    if isinstance(c, str):
        raise ValueError(f"{graph.name}: {c}")
    k = int(c.max()) + 1 if c.size else 0
    return float(
        _modularity(graph.n, graph.ptr, graph.ind, graph.weight, _loop(loop, graph.n), c, k)
    )


def move_gain(graph: WeightedGraph, community: Any, i: int, target: int, loop: Any = None) -> float:
    """The gain in Q when vertex ``i`` moves to community ``target``, Eq. 2; O(n + deg i).

    ``target`` may be an id no vertex holds yet (``i`` alone in a new community). Equals
    ``modularity`` after the move minus before, up to rounding (tested).

    Notes
    -----
    Naim et al., IPDPS 2017, Sec. 2, Eq. 2::

        dQ = (e_{i->C(j)} - e_{i->C(i)\\{i}}) / m + k_i (a_{C(i)\\{i}} - a_{C(j)}) / (2 m^2)

    with the self-loop of ``i`` counted in ``k_i`` and not in ``e_{i->C(i)\\{i}}``.
    """
    c = _labels(community, graph.n, "community")
    if isinstance(c, str):
        raise ValueError(f"{graph.name}: {c}")
    if not (0 <= i < graph.n) or target < 0:
        raise ValueError(f"{graph.name}: vertex {i} or community {target} out of range")
    return float(
        _move_gain(
            graph.n,
            graph.ptr,
            graph.ind,
            graph.weight,
            _loop(loop, graph.n),
            c,
            int(i),
            int(target),
        )
    )


def aggregate(
    graph: WeightedGraph, community: Any, loop: Any = None
) -> tuple[WeightedGraph, np.ndarray]:
    """The Louvain aggregation phase: one vertex per community, as a graph and its self-loops.

    The weight between two new vertices is the sum of the edges between their communities;
    the edges inside a community (and its members' self-loops) become the new vertex's
    self-loop, their sum (paper III, Sec. 2). Under the loop convention of the module
    docstring, ``modularity(aggregated, arange(k), loops) == modularity(graph, community,
    loop)`` up to rounding. A reference for the GPU aggregation kernels (scipy, O(n + m)).

    Returns
    -------
    (WeightedGraph, ndarray)
        The aggregated graph (``k`` vertices, no self-loop in its CSR) and its float64
        self-loop weights.
    """
    c = _labels(community, graph.n, "community")
    if isinstance(c, str):
        raise ValueError(f"{graph.name}: {c}")
    k = int(c.max()) + 1 if c.size else 0
    s = sp.csr_matrix((np.ones(graph.n), (np.arange(graph.n), c)), shape=(graph.n, k))
    coarse = (s.T @ graph.to_scipy() @ s).tocoo()
    # the symmetric CSR holds every inside edge twice: its diagonal is twice their weight
    loops = np.bincount(c, weights=_loop(loop, graph.n), minlength=k) + coarse.diagonal() / 2.0
    off = (coarse.row < coarse.col) & (coarse.data > 0)
    g = type(graph).from_edges(
        coarse.row[off], coarse.col[off], coarse.data[off], k, name=f"{graph.name}/aggregated"
    )
    return g, loops


# ---------------------------------------------------------------------------------------
# The family


class Community(Problem):
    """Community detection: a partition of the vertices, judged by its modularity Q.

    An instance is a :class:`WeightedGraph`, an answer a :class:`Partition` (or a bare array
    of community ids); the objective is Q (Eq. 1), recomputed by the verifier. Heuristic: no
    reference optimum.

    Notes
    -----
    Naim, Manne, Halappanavar, Tumeo, *Community Detection on the GPU*, IPDPS 2017 (paper III
    of Naim's 2017 thesis): the Louvain method of Blondel et al. 2008 on the GPU, Algorithms
    1-3; Q as Eq. 1, the move gain as Eq. 2.
    """

    name: ClassVar[str] = "community"
    objective: ClassVar[str] = "modularity"
    sense: ClassVar[str] = "max"
    exact: ClassVar[bool] = False

    def verify(self, instance: WeightedGraph, solution: Any) -> Verification:
        """Certify that ``solution`` is a partition of ``instance`` and recompute its Q.

        Parameters
        ----------
        instance : WeightedGraph
        solution : Partition or ndarray
            A partition, or its community ids alone.

        Returns
        -------
        Verification
            ``verified`` only if the community ids are integers, one per vertex, dense in
            ``[0, k)``; the reported ``levels`` (if any) are dense and compose to them; the
            reported modularity (if any) equals the recomputed Q within
            :data:`MODULARITY_RTOL` of ``max(1, |Q|)``; and, where the answer claims
            ``connected``, every community induces a connected subgraph. ``objective`` is
            the recomputed Q (NaN for an answer that is no partition); ``bound`` and
            ``reference`` are None. ``reason`` says "community" and names the instance and
            the defect (for a broken connectivity claim: the community and two of its
            vertices that no path inside it joins). A verified answer without the claim
            whose communities are not all connected keeps ``reason``: a note starting with
            :data:`DISCONNECTED_NOTE` and giving their count; else ``reason`` is None.

        Notes
        -----
        Eq. 1 of Naim et al., IPDPS 2017, O(n + m) (:func:`modularity`); connectivity from
        its definition (:func:`.connectivity.disconnected_communities`, O(n + m)), the
        guarantee of Traag, Waltman & van Eck, Sci. Rep. 2019 (Leiden), Table 1.
        """
        nan = float("nan")
        where = f"community answer on {instance.name!r}"
        n = instance.n
        if isinstance(solution, Partition):
            part = solution
        elif isinstance(solution, np.ndarray):
            part = Partition(community=solution)
        else:
            return Verification(
                False,
                f"{where}: invalid: expected a Partition or an array of community ids, "
                f"got {type(solution).__name__}",
                nan,
            )
        c = _labels(part.community, n, "community")
        if isinstance(c, str):
            return Verification(False, f"{where}: invalid: {c}", nan)
        if part.levels is not None:
            why = _check_levels(part.levels, c)
            if why is not None:
                return Verification(False, f"{where}: invalid: {why}", nan)
        claims_connected = part.connected
        if not isinstance(claims_connected, bool | np.bool_):
            return Verification(
                False,
                f"{where}: invalid: connected is {claims_connected!r}, expected true or false",
                nan,
            )
        k = int(c.max()) + 1 if c.size else 0
        q = float(_modularity(n, instance.ptr, instance.ind, instance.weight, np.zeros(n), c, k))
        if part.modularity is not None:
            try:
                rep = float(part.modularity)
            except (TypeError, ValueError):
                rep = nan
            if not (math.isfinite(rep) and abs(rep - q) <= MODULARITY_RTOL * max(1.0, abs(q))):
                return Verification(
                    False,
                    f"{where}: reported modularity {part.modularity!r} differs from the "
                    f"recomputed Q = {q!r} (tolerance {MODULARITY_RTOL} relative)",
                    q,
                )
        split = disconnected_communities(instance, c)
        measured = {"disconnected_communities": int(split.count), "nmi": truth_nmi(instance, c)}
        if split.count == 0:
            return Verification(True, None, q, columns=measured)
        if claims_connected:
            return Verification(
                False,
                f"{where}: the answer claims connected communities, but {split.describe()}",
                q,
                columns=measured,
            )
        return Verification(True, f"{DISCONNECTED_NOTE}: {split.describe()}", q, columns=measured)


def _check_levels(levels: Any, community: np.ndarray) -> str | None:
    """Why the hierarchy ``levels`` does not compose to ``community``, or None."""
    try:
        levels = list(levels)
    except TypeError:
        return f"levels is a {type(levels).__name__}, expected a list of arrays"
    if not levels:
        return "levels is empty (leave it None when no hierarchy is reported)"
    size = community.shape[0]
    composed = np.arange(size, dtype=np.int64)
    for t, level in enumerate(levels):
        lab = _labels(level, size, f"levels[{t}]")
        if isinstance(lab, str):
            return lab
        composed = lab[composed]
        size = int(lab.max()) + 1 if lab.size else 0
    if not np.array_equal(composed, community):
        x = int(np.flatnonzero(composed != community)[0])
        return (
            f"levels compose to community {int(composed[x])} for vertex {x}, "
            f"but community[{x}] = {int(community[x])}"
        )
    return None


def reference_ratios(rows: Any, references: tuple[str, ...] = REFERENCES) -> Any:
    """Each row's Q relative to the best reference Q on the same instance.

    Parameters
    ----------
    rows : pandas.DataFrame
        Result rows (:func:`matchbench.results.store.read_results`); only the community
        family's verified ``status == "ok"`` rows take part.
    references : tuple of str
        The ``algorithm`` values whose best Q is the denominator (default :data:`REFERENCES`).

    Returns
    -------
    pandas.DataFrame
        The family's verified rows with two more columns: ``reference_q`` (the best Q of a
        reference on the row's ``instance_key``, NaN where no reference solved it) and
        ``q_ratio = objective / reference_q`` (NaN where ``reference_q`` is NaN or not
        positive: a ratio to Q <= 0 does not say "how close to the best").

    Notes
    -----
    Naim et al., IPDPS 2017, Sec. 5, report the GPU algorithm's modularity relative to the
    sequential Louvain code's on each graph; this is that ratio against the best of our
    references. It needs the rows of several tasks, hence here and not in the verifier.
    """
    import pandas as pd

    df = rows[
        (rows["problem"] == Community.name) & (rows["status"] == "ok") & rows["verified"].eq(True)
    ].copy()
    best = df[df["algorithm"].isin(references)].groupby("instance_key")["objective"].max()
    df["reference_q"] = df["instance_key"].map(best).astype(float)
    ratio = df["objective"] / df["reference_q"]
    df["q_ratio"] = ratio.where(df["reference_q"] > 0)
    return pd.DataFrame(df)
