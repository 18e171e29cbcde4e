"""The cheap matching: the greedy initializer every MCM algorithm starts from.

Every MCM solver, CPU reference or GPU driver, is handed the same initial matching, and its
time is recorded apart from the solvers' (``t_init_s``), so that solvers are compared on the
augmentation work alone: ``init=cheap_cpu`` (:class:`CheapCPU`, the default). The device
initializer ``init=cheap_gpu`` is :class:`matchbench.families.mcm.init_gpu.CheapGPU`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.solver import BaseInitializer
from matchbench.graphs.bipartite import BipartiteGraph, Matching
from matchbench.graphs.stack import MatchingStack


@njit(cache=True)
def _cheap(n_rows, col_ptr, col_ind, row_match, col_match):
    for j in range(col_ptr.shape[0] - 1):
        for p in range(col_ptr[j], col_ptr[j + 1]):
            i = col_ind[p]
            if row_match[i] == -1:
                row_match[i] = j
                col_match[j] = i
                break


@njit(cache=True, nogil=True)
def _cheap_many(table, buf, row_match, col_match, row_at, col_at):
    """:func:`_cheap` on every graph of a chunk of a
    :class:`~matchbench.graphs.stack.GraphStack` (``table``: its rows, ``buf``: its
    arrays), into the mate arrays at ``row_at[g]`` and ``col_at[g]``; returns each
    graph's cardinality."""
    card = np.zeros(table.shape[0], np.int64)
    for g in range(table.shape[0]):
        nr, nc = table[g, 0], table[g, 1]
        cpa, cia, cin = table[g, 5], table[g, 6], table[g, 7]
        rm = row_match[row_at[g] : row_at[g] + nr]
        cm = col_match[col_at[g] : col_at[g] + nc]
        rm[:] = -1
        cm[:] = -1
        _cheap(nr, buf[cpa : cpa + nc + 1], buf[cia : cia + cin], rm, cm)
        for j in range(nc):
            card[g] += cm[j] >= 0
    return card


def cheap_matching(graph: BipartiteGraph) -> Matching:
    """Greedy maximal matching: each column, in order, takes its first unmatched row.

    Parameters
    ----------
    graph : BipartiteGraph
        The instance; its column CSR (``col_ptr``, ``col_ind``) is scanned once.

    Returns
    -------
    Matching
        A maximal matching (every edge has at least one matched endpoint), with mate
        arrays of the graph's index dtype.

    Notes
    -----
    The "cheap matching" heuristic of Duff, Kaya & Uçar, *Design, implementation, and
    analysis of maximum transversal algorithms*, ACM TOMS 38(2), 2011 (its simplest
    variant: no degree ordering). Deveci et al., Euro-Par 2013, Sec. 4 initialize
    all their algorithms with it and time the algorithms after it; we do the same.
    O(n + m): each adjacency entry is read at most once.
    """
    dtype = graph.col_ind.dtype
    row_match = np.full(graph.n_rows, -1, dtype=dtype)
    col_match = np.full(graph.n_cols, -1, dtype=dtype)
    _cheap(graph.n_rows, graph.col_ptr, graph.col_ind, row_match, col_match)
    return Matching(row_match=row_match, col_match=col_match)


class CheapCPU(BaseInitializer):
    """``init=cheap_cpu``: :func:`cheap_matching` on one host core (the papers' protocol).

    The runner times it on the host (``t_init_s``); GPU solvers upload its mate arrays in
    their ``prepare`` (O(n), outside every timed region).
    """

    name: ClassVar[str] = "cheap_cpu"
    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "cpu"
    stackable: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()

    def __call__(self, instance: BipartiteGraph) -> Matching:
        return cheap_matching(instance)

    def initialize_stack(self, graphs: Any) -> MatchingStack:
        """:func:`cheap_matching` of every graph of a
        :class:`~matchbench.graphs.stack.GraphStack`, chunk by chunk on host threads
        (each graph's mates equal to its own call's), with each one's cardinality."""
        return cheap_stack(graphs)


def cheap_stack(graphs: Any, threads: int | None = None) -> MatchingStack:
    """:func:`cheap_matching` of every graph of ``graphs`` (a
    :class:`~matchbench.graphs.stack.GraphStack`) as one
    :class:`~matchbench.graphs.stack.MatchingStack` (int32 mates), on up to ``threads``
    host threads (default: :func:`~matchbench.core.params.batch_threads`)."""
    from matchbench.core.params import batch_threads
    from matchbench.graphs.stack import map_chunks

    ro, co = graphs.row_offsets(), graphs.col_offsets()
    rm = np.empty(int(ro[-1]), dtype=np.int32)
    cm = np.empty(int(co[-1]), dtype=np.int32)
    card = np.zeros(len(graphs), dtype=np.int64)

    def one(c: Any) -> None:
        sl = slice(c.first, c.first + len(c))
        card[sl] = _cheap_many(c.table, c.buf, rm, cm, ro[sl], co[sl])

    map_chunks(one, graphs.chunks, batch_threads() if threads is None else int(threads))
    return MatchingStack(rm, cm, ro, co, card)
