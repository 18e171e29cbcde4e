"""The connectivity certificate of a partition: which communities are not connected.

A community is *connected* when the subgraph its vertices induce is connected (a single
vertex is). The Leiden algorithm guarantees it of every community it returns (Traag,
Waltman & van Eck, *From Louvain to Leiden: guaranteeing well-connected communities*,
Sci. Rep. 9, 5233, 2019, Table 1: even gamma-connected), the Louvain method does not (same
paper, abstract: up to 25% of its communities badly connected, up to 16% disconnected).

:func:`disconnected_communities` checks it independently of every solver, with
``scipy.sparse.csgraph.connected_components`` on the subgraph of the edges whose two ends
share a community: a community is connected exactly when its vertices lie in one
connected component of that subgraph. O(n + m), vectorized.
:meth:`~matchbench.families.community.problem.Community.verify` calls it on every answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from matchbench.graphs.weighted import WeightedGraph

__all__ = ["Disconnected", "disconnected_communities"]


@dataclass(frozen=True)
class Disconnected:
    """The verdict of :func:`disconnected_communities` on one partition.

    Attributes
    ----------
    count : int
        Communities whose vertices induce a disconnected subgraph (0: every one connected).
    communities : int
        Communities with at least one vertex.
    example : int or None
        The smallest disconnected community id (None when ``count == 0``).
    pieces : int
        The connected components of ``example``'s induced subgraph (0 when none).
    witness : tuple of int or None
        Two vertices of ``example`` in different components (no path between them inside
        the community): the smallest vertex of the community and the smallest one not
        reachable from it.
    """

    count: int
    communities: int
    example: int | None = None
    pieces: int = 0
    witness: tuple[int, int] | None = None

    def describe(self) -> str | None:
        """One sentence naming the example community and its witness, or None."""
        if self.example is None or self.witness is None:
            return None
        x, y = self.witness
        return (
            f"{self.count} of {self.communities} communities are disconnected, e.g. "
            f"community {self.example}: its vertices form {self.pieces} connected pieces "
            f"(no path inside it from vertex {x} to vertex {y})"
        )


def disconnected_communities(graph: WeightedGraph, community: Any) -> Disconnected:
    """Count the communities of ``community`` whose induced subgraph is disconnected.

    Parameters
    ----------
    graph : WeightedGraph
        Undirected, one symmetric CSR (both directions of every edge).
    community : array_like of int
        One non-negative community id per vertex (ids need not be dense: an unused id
        is no community).

    Returns
    -------
    Disconnected
        The count, the number of communities, and the smallest disconnected community with
        two of its vertices that no path inside it joins.

    Raises
    ------
    ValueError
        Naming the graph, for ``community`` of the wrong shape, a non-integer dtype or a
        negative id.

    Notes
    -----
    Traag, Waltman & van Eck, Sci. Rep. 2019 (Leiden), guarantee (connected communities)
    checked from its definition: keep the CSR entries ``(i, j)`` with ``C(i) == C(j)``;
    ``connected_components`` labels the pieces of that subgraph; each piece lies inside one
    community, so a community is disconnected exactly when it holds more than one piece.
    O(n + m) time and memory; independent of every solver.

    Examples
    --------
    Two triangles labelled one community:

    >>> g = WeightedGraph.from_edges([0, 0, 1, 3, 3, 4], [1, 2, 2, 4, 5, 5], [1.0] * 6, 6)
    >>> d = disconnected_communities(g, [0, 0, 0, 0, 0, 0])
    >>> d.count, d.example, d.pieces, d.witness
    (1, 0, 2, (0, 3))
    >>> disconnected_communities(g, [0, 0, 0, 1, 1, 1]).count
    0
    """
    n = int(graph.n)
    c = np.asarray(community)
    if c.ndim != 1 or c.shape[0] != n:
        raise ValueError(f"{graph.name}: community has shape {c.shape}, expected ({n},)")
    if c.dtype.kind not in "iu":
        raise ValueError(f"{graph.name}: community has dtype {c.dtype}, expected integers")
    if n == 0:
        return Disconnected(0, 0)
    c = c.astype(np.int64, copy=False)
    if c.min() < 0:
        x = int(np.flatnonzero(c < 0)[0])
        raise ValueError(f"{graph.name}: community[{x}] = {int(c[x])} is a negative id")
    ptr = np.asarray(graph.ptr, dtype=np.int64)
    ind = np.asarray(graph.ind, dtype=np.int64)
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    inside = c[row] == c[ind]
    keep_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row[inside], minlength=n), out=keep_ptr[1:])
    kept = ind[inside]
    sub = sp.csr_matrix((np.ones(kept.shape[0], dtype=np.int8), kept, keep_ptr), shape=(n, n))
    n_pieces, piece = connected_components(sub, directed=False)
    # every piece lies in one community: any of its vertices names it
    piece_community = np.empty(n_pieces, dtype=np.int64)
    piece_community[piece] = c
    pieces = np.bincount(piece_community, minlength=int(c.max()) + 1)
    bad = np.flatnonzero(pieces > 1)
    communities = int(np.count_nonzero(pieces))
    if bad.shape[0] == 0:
        return Disconnected(0, communities)
    example = int(bad[0])
    members = np.flatnonzero(c == example)
    x = int(members[0])
    y = int(members[np.flatnonzero(piece[members] != piece[x])[0]])
    return Disconnected(int(bad.shape[0]), communities, example, int(pieces[example]), (x, y))
