"""Random small bipartite graphs and an independent maximum matching, for the MCM tests.

Imported as ``from _graphs import ...``: pytest puts ``tests/`` on ``sys.path`` (rootdir
``conftest.py``, no package), as for ``_synthetic_results``.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from hypothesis import strategies as st

from matchbench.graphs.bipartite import BipartiteGraph, Matching


def nx_maximum(g: BipartiteGraph) -> Matching:
    """A maximum matching computed by networkx's Hopcroft-Karp, independent of our code.

    Parameters
    ----------
    g : BipartiteGraph
        Rows become nodes ``("r", i)``, columns ``("c", j)``.
    """
    h = nx.Graph()
    rows = [("r", i) for i in range(g.n_rows)]
    h.add_nodes_from(rows)
    h.add_nodes_from(("c", j) for j in range(g.n_cols))
    for i in range(g.n_rows):
        for j in g.row_ind[g.row_ptr[i] : g.row_ptr[i + 1]]:
            h.add_edge(("r", i), ("c", int(j)))
    mate = nx.bipartite.hopcroft_karp_matching(h, top_nodes=rows)
    row_match = np.full(g.n_rows, -1, dtype=np.int64)
    for i in range(g.n_rows):
        if ("r", i) in mate:
            row_match[i] = mate[("r", i)][1]
    return Matching.from_row_match(row_match, g.n_cols)


@st.composite
def bipartite_graphs(draw: st.DrawFn, max_side: int = 12) -> BipartiteGraph:
    """Random small graphs: rectangular, empty rows/columns, sparse to dense.

    Parameters
    ----------
    max_side : int
        The most rows, and the most columns.
    """
    n_rows = draw(st.integers(0, max_side))
    n_cols = draw(st.integers(0, max_side))
    p = draw(st.sampled_from([0.0, 0.05, 0.15, 0.3, 0.6, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    mask = np.random.default_rng(seed).random((n_rows, n_cols)) < p
    rows, cols = np.nonzero(mask)
    return BipartiteGraph.from_coo(rows, cols, n_rows, n_cols)
