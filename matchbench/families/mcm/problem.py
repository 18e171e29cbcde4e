"""Maximum-cardinality bipartite matching (MCM): the family and its König certificate.

The verifier trusts nothing a solver says: it checks the mate arrays against the graph,
then proves maximality with a vertex cover of the same size (König's theorem), built from
an alternating BFS and checked edge by edge over the other CSR direction.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.problem import Problem, Verification
from matchbench.graphs.bipartite import BipartiteGraph, Matching


@njit(cache=True, nogil=True)
def _first_non_edge(col_ptr, col_ind, col_match):
    """First column j whose mate is not among its neighbours, or -1.

    A linear scan of the matched columns' adjacency (O(m) in total) that does not rely on
    the CSR being sorted.
    """
    for j in range(col_match.shape[0]):
        i = col_match[j]
        if i < 0:
            continue
        found = False
        for p in range(col_ptr[j], col_ptr[j + 1]):
            if col_ind[p] == i:
                found = True
                break
        if not found:
            return j
    return -1


@njit(cache=True, nogil=True)
def _alternating_bfs(col_ptr, col_ind, row_match, col_match):
    """Alternating BFS from all free columns (column -> any row, row -> its mate).

    Returns ``(root, free_row, col_seen, row_seen)``: ``free_row >= 0`` is an unmatched row
    reached from the free column ``root`` (an augmenting path); otherwise ``-1, -1`` and the
    reached sets.
    """
    n_cols = col_match.shape[0]
    n_rows = row_match.shape[0]
    col_seen = np.zeros(n_cols, dtype=np.bool_)
    row_seen = np.zeros(n_rows, dtype=np.bool_)
    root = np.empty(n_cols, dtype=np.int64)
    queue = np.empty(n_cols, dtype=np.int64)
    tail = 0
    for j in range(n_cols):
        if col_match[j] == -1:
            col_seen[j] = True
            root[j] = j
            queue[tail] = j
            tail += 1
    head = 0
    while head < tail:
        j = queue[head]
        head += 1
        for p in range(col_ptr[j], col_ptr[j + 1]):
            i = col_ind[p]
            if row_seen[i]:
                continue
            row_seen[i] = True
            mj = row_match[i]
            if mj == -1:
                return root[j], i, col_seen, row_seen
            if not col_seen[mj]:
                col_seen[mj] = True
                root[mj] = root[j]
                queue[tail] = mj
                tail += 1
    return -1, -1, col_seen, row_seen


@njit(cache=True, nogil=True)
def _first_uncovered_edge(row_ptr, row_ind, row_in_cover, col_in_cover):
    """First edge (i, j) with neither endpoint in the cover, as ``(i, j)``, or ``(-1, -1)``."""
    for i in range(row_ptr.shape[0] - 1):
        if row_in_cover[i]:
            continue
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = row_ind[p]
            if not col_in_cover[j]:
                return i, j
    return -1, -1


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _invalid(reason: str) -> Verification:
    # An invalid answer has no meaningful cardinality.
    return Verification(verified=False, reason=f"invalid: {reason}", objective=float("nan"))


def _check_mates(graph: BipartiteGraph, m: Any) -> str | None:
    """Why ``m`` is not a matching of ``graph``, or None. Names the first offender."""
    if not isinstance(m, Matching):
        return f"expected a Matching, got {type(m).__name__}"
    for label, arr, n, other, n_other in (
        ("row_match", m.row_match, graph.n_rows, "column", graph.n_cols),
        ("col_match", m.col_match, graph.n_cols, "row", graph.n_rows),
    ):
        if not isinstance(arr, np.ndarray):
            return f"{label} is a {type(arr).__name__}, not a numpy array"
        if arr.ndim != 1 or arr.shape[0] != n:
            return f"{label} has shape {arr.shape}, expected ({n},)"
        if not np.issubdtype(arr.dtype, np.integer):
            return f"{label} has dtype {arr.dtype}, expected an integer dtype"
        bad = (arr < -1) | (arr >= n_other)
        if bad.any():
            k = _first(bad)
            return f"{label}[{k}] = {int(arr[k])} is not a {other} index in [-1, {n_other})"
    rm = m.row_match.astype(np.int64, copy=False)
    cm = m.col_match.astype(np.int64, copy=False)
    cols = np.flatnonzero(cm >= 0)
    bad = rm[cm[cols]] != cols
    if bad.any():
        j = int(cols[_first(bad)])
        i = int(cm[j])
        return f"col_match[{j}] = {i} but row_match[{i}] = {int(rm[i])}"
    rows = np.flatnonzero(rm >= 0)
    bad = cm[rm[rows]] != rows
    if bad.any():
        i = int(rows[_first(bad)])
        j = int(rm[i])
        return f"row_match[{i}] = {j} but col_match[{j}] = {int(cm[j])}"
    # Implied by the two consistency checks; kept as its own check so that a bug there
    # cannot let a vertex matched twice through.
    counts = np.bincount(cm[cols], minlength=graph.n_rows)
    if (counts > 1).any():
        i = _first(counts > 1)
        js = cols[cm[cols] == i][:2]
        return f"row {i} is matched to columns {int(js[0])} and {int(js[1])}"
    j = _first_non_edge(graph.col_ptr, graph.col_ind, cm)
    if j >= 0:
        return f"matched pair (row {int(cm[j])}, column {j}) is not an edge"
    return None


def konig_certificate(
    graph: BipartiteGraph, row_match: np.ndarray, col_match: np.ndarray
) -> tuple[int, tuple[int, int] | None, str | None]:
    """König certificate of a *valid* matching.

    Returns ``(cover_size, augmenting, failure)``: ``augmenting = (column, row)`` names the
    ends of an augmenting path when one exists (then ``cover_size`` is -1); ``failure``
    explains a cover that does not check out (a corrupt graph: the two CSR directions
    disagree). When both are None, the cover has ``cover_size`` vertices and covers every
    edge, which proves that no matching has more than ``cover_size`` edges.

    Notes
    -----
    König's theorem (1931): in a bipartite graph the maximum matching size equals the
    minimum vertex cover size. With Z the vertices reached by alternating paths from free
    columns and no free row in Z, C = (columns not in Z) + (rows in Z) is a vertex cover of
    size |M| (e.g. Schrijver, *Combinatorial Optimization*, Thm. 16.2). The cover is built
    from the column CSR and checked over the row CSR.
    """
    root, free_row, col_seen, row_seen = _alternating_bfs(
        graph.col_ptr, graph.col_ind, row_match, col_match
    )
    if free_row >= 0:
        return -1, (int(root), int(free_row)), None
    col_in_cover = ~col_seen
    size = int(np.count_nonzero(col_in_cover)) + int(np.count_nonzero(row_seen))
    i, j = _first_uncovered_edge(graph.row_ptr, graph.row_ind, row_seen, col_in_cover)
    if i >= 0:
        return size, None, f"edge (row {int(i)}, column {int(j)}) is not covered"
    card = int(np.count_nonzero(col_match >= 0))
    if size != card:
        return size, None, f"cover has {size} vertices but the matching {card} edges"
    return size, None, None


class MCM(Problem):
    """Maximum-cardinality matching in a bipartite graph (rows x columns).

    An instance is a :class:`~matchbench.graphs.bipartite.BipartiteGraph`, an answer a
    :class:`~matchbench.graphs.bipartite.Matching`; the objective is its cardinality.
    Every solver starts from the cheap matching (:meth:`initialize`).
    """

    name: ClassVar[str] = "mcm"
    objective: ClassVar[str] = "cardinality"
    sense: ClassVar[str] = "max"
    exact: ClassVar[bool] = True
    #: the papers' protocol: the cheap matching on the host (``init=cheap_cpu``)
    default_init: ClassVar[str | None] = "cheap_cpu"

    def initialize(self, instance: BipartiteGraph) -> Matching:
        """The greedy cheap matching, see :func:`matchbench.families.mcm.cheap.cheap_matching`."""
        from matchbench.families.mcm.cheap import cheap_matching

        return cheap_matching(instance)

    def initial_objective(self, init: Matching | None) -> float | None:
        return None if init is None else float(init.cardinality)

    def verify(self, instance: BipartiteGraph, solution: Any) -> Verification:
        """Certify that ``solution`` is a maximum matching of ``instance``.

        Parameters
        ----------
        instance : BipartiteGraph
        solution : Matching
            Mate arrays, -1 for unmatched vertices; any integer dtype.

        Returns
        -------
        Verification
            ``verified`` only if the mate arrays are a matching of the graph (sane shapes
            and dtypes, indices in range, both arrays consistent, no vertex matched twice,
            every pair an edge) and a vertex cover of the same size exists (König).
            ``objective`` is the recomputed cardinality (NaN for an invalid answer),
            ``bound`` the cover size, ``reference`` the maximum cardinality. For a valid
            but not maximum answer, ``reference`` is the maximum reached by augmenting the
            answer with Hopcroft-Karp (itself certified) and ``reason`` names the ends of
            an augmenting path.

        Notes
        -----
        König's theorem; the certificate is that of :func:`konig_certificate`. The
        alternating BFS is the one of Hopcroft & Karp (1973) and of Deveci et al.,
        Euro-Par 2013, Alg. 2 (from all free columns), run to completion. O(n + m).
        """
        why = _check_mates(instance, solution)
        if why is not None:
            return _invalid(why)
        rm = solution.row_match.astype(np.int64, copy=False)
        cm = solution.col_match.astype(np.int64, copy=False)
        card = int(np.count_nonzero(cm >= 0))
        size, augmenting, failure = konig_certificate(instance, rm, cm)
        if failure is not None:
            return Verification(False, f"no certificate: {failure}", float(card))
        if augmenting is None:
            return Verification(True, None, float(card), bound=float(size), reference=float(card))
        col, row = augmenting
        best, best_size, best_failure = self._maximum_from(instance, rm, cm)
        if best_failure is not None:
            return Verification(
                False,
                f"not maximum: augmenting path from column {col} to row {row} "
                f"(maximum unknown: {best_failure})",
                float(card),
            )
        return Verification(
            False,
            f"not maximum: augmenting path from column {col} to row {row} "
            f"(maximum is {best}, got {card})",
            float(card),
            bound=float(best_size),
            reference=float(best),
        )

    @staticmethod
    def _maximum_from(
        graph: BipartiteGraph, row_match: np.ndarray, col_match: np.ndarray
    ) -> tuple[int, int, str | None]:
        """Augment a valid matching to maximum with Hopcroft-Karp and certify the result."""
        from matchbench.families.mcm.ref_numba import hopcroft_karp_kernel

        # In the graph's index dtype, as the solvers call it: one compiled signature.
        dtype = graph.col_ind.dtype
        rm = row_match.astype(dtype, copy=True)
        cm = col_match.astype(dtype, copy=True)
        hopcroft_karp_kernel(graph.col_ptr, graph.col_ind, rm, cm)
        why = _check_mates(graph, Matching(rm, cm))
        if why is not None:
            return -1, -1, f"Hopcroft-Karp returned an invalid matching: {why}"
        size, augmenting, failure = konig_certificate(graph, rm, cm)
        if augmenting is not None:
            return -1, -1, "Hopcroft-Karp stopped with an augmenting path left"
        if failure is not None:
            return -1, -1, failure
        return int(np.count_nonzero(cm >= 0)), size, None
