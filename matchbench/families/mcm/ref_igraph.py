"""python-igraph's maximum bipartite matching (push-relabel, in C) as a reference."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from matchbench.core.solver import BaseSolver
from matchbench.graphs.bipartite import BipartiteGraph, Matching


def _igraph_available() -> bool:
    try:
        import igraph  # noqa: F401
    except ImportError:
        return False
    return True


class IgraphPushRelabel(BaseSolver):
    """``igraph.Graph.maximum_bipartite_matching`` on the graph rows + columns.

    Rows are igraph vertices ``0 .. n_rows - 1`` (type False), columns ``n_rows ..
    n_rows + n_cols - 1`` (type True). The igraph graph is built in :meth:`prepare`
    (untimed, cached per instance); :meth:`run` times the C matching call only. Like SciPy,
    igraph takes no initial matching, so its time includes all the work the shared cheap
    matching spares the other MCM solvers (``counters()["starts_from_init"]`` is 0).

    Notes
    -----
    igraph's unweighted bipartite matching (``igraph_i_maximum_bipartite_matching_unweighted``
    in igraph's ``matching.c``) is a FIFO push-relabel algorithm with global relabeling
    (Goldberg & Tarjan, J. ACM 35, 1988), the family of our ``pr`` (Kaya, Langguth, Manne
    & Uçar, Computers & OR 40(5), 2012).
    """

    name: ClassVar[str] = "igraph_pr"
    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "cpu"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._graph: BipartiteGraph | None = None
        self._ig: Any = None
        self._mates: list[int] | None = None

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        if not _igraph_available():
            return True, "python-igraph not installed (pip install 'matchbench[ref]')"
        return False, None

    def prepare(self, instance: BipartiteGraph, init: Matching | None = None) -> None:
        import igraph

        if self._graph is not instance:
            n_rows = instance.n_rows
            rows = np.repeat(
                np.arange(n_rows, dtype=np.int64), np.diff(instance.row_ptr).astype(np.int64)
            )
            edges = np.stack([rows, instance.row_ind.astype(np.int64) + n_rows], axis=1)
            g = igraph.Graph(n=n_rows + instance.n_cols)
            # add_edges takes the (m, 2) array directly, much faster than an edge list.
            g.add_edges(edges)
            g.vs["type"] = [False] * n_rows + [True] * instance.n_cols
            self._graph = instance
            self._ig = g
        self._mates = None

    def run(self) -> None:
        from igraph import GraphBase

        if self._ig is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        # The C routine itself; the Python wrapper's Matching object adds O(n) work in
        # Python that is not part of the algorithm.
        self._mates = GraphBase._maximum_bipartite_matching(self._ig, "type", None, -1)

    def result(self) -> Matching:
        if self._graph is None or self._mates is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        n_rows = self._graph.n_rows
        dtype = self._graph.col_ind.dtype
        mates = np.asarray(self._mates, dtype=np.int64)
        row_part = mates[:n_rows]
        col_part = mates[n_rows:]
        # igraph numbers columns after the rows; -1 stays -1.
        row_match = np.where(row_part >= 0, row_part - n_rows, -1).astype(dtype)
        col_match = col_part.astype(dtype)
        return Matching(row_match=row_match, col_match=col_match)

    def counters(self) -> dict[str, int | float]:
        return {"starts_from_init": 0}
