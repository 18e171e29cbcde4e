"""The cheap matching: the greedy initializer every MCM algorithm starts from.

Every MCM solver, CPU reference or GPU driver, is handed the same initial matching, and its
time is recorded apart from the solvers' (``t_init_s``), so that solvers are compared on the
augmentation work alone: ``init=cheap_cpu`` (:class:`CheapCPU`, the default). The device
initializer ``init=cheap_gpu`` is :class:`matchbench.families.mcm.init_gpu.CheapGPU`.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numba import njit

from matchbench.core.solver import BaseInitializer
from matchbench.graphs.bipartite import BipartiteGraph, Matching


@njit(cache=True)
def _cheap(n_rows, col_ptr, col_ind, row_match, col_match):
    for j in range(col_ptr.shape[0] - 1):
        for p in range(col_ptr[j], col_ptr[j + 1]):
            i = col_ind[p]
            if row_match[i] == -1:
                row_match[i] = j
                col_match[j] = i
                break


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

    def __init__(self) -> None:
        super().__init__()

    def __call__(self, instance: BipartiteGraph) -> Matching:
        return cheap_matching(instance)
