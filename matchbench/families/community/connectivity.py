"""The connectivity certificate of a partition: which communities are not connected.

A community is *connected* when the subgraph its vertices induce is connected (a single
vertex is). The Leiden algorithm guarantees it of every community it returns (Traag,
Waltman & van Eck, *From Louvain to Leiden: guaranteeing well-connected communities*,
Sci. Rep. 9, 5233, 2019, Table 1: even gamma-connected), the Louvain method does not (same
paper, abstract: up to 25% of its communities badly connected, up to 16% disconnected).

:func:`disconnected_communities` checks it independently of every solver, by union-find
over the edges whose two ends share a community (one compiled pass over the CSR, no
edge-sized temporaries): a community is connected exactly when its vertices lie in one
connected component of that subgraph.
:meth:`~matchbench.families.community.problem.Community.verify` calls it on every answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from matchbench.graphs.weighted import WeightedGraph

__all__ = ["Disconnected", "disconnected_communities"]


@njit(cache=True, nogil=True)
def _pieces(n, ptr, ind, c):
    """The piece of every vertex: the smallest vertex joined to it inside its community.

    Union-find over the CSR entries ``(x, y)`` with ``c[x] == c[y]``, the larger root linked
    under the smaller one and paths halved, so ``parent[v] <= v`` throughout; one pass in
    vertex order then leaves each vertex's root. O((n + m) log n) worst case, no
    temporaries but ``parent``.
    """
    parent = np.arange(n, dtype=np.int64)
    for x in range(n):
        cx = c[x]
        for p in range(ptr[x], ptr[x + 1]):
            y = ind[p]
            if y == x or c[y] != cx:
                continue
            rx = x
            while parent[rx] != rx:
                parent[rx] = parent[parent[rx]]
                rx = parent[rx]
            ry = y
            while parent[ry] != ry:
                parent[ry] = parent[parent[ry]]
                ry = parent[ry]
            if rx < ry:
                parent[ry] = rx
            elif ry < rx:
                parent[rx] = ry
    for x in range(n):  # parent[x] <= x, and every smaller vertex already holds its root
        parent[x] = parent[parent[x]]
    return parent


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
    checked from its definition: union-find joins the ends of every CSR entry ``(i, j)``
    with ``C(i) == C(j)`` (:func:`_pieces`), labelling the pieces of that subgraph; each
    piece lies inside one community, so a community is disconnected exactly when it holds
    more than one piece. Near-linear time, O(n) memory beyond the graph; independent of
    every solver (tested against networkx).

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
    piece = _pieces(n, np.asarray(graph.ptr), np.asarray(graph.ind), c)
    # a piece is named by its smallest vertex, which lies in the piece's community
    roots = np.flatnonzero(piece == np.arange(n))
    if int(c.max()) < 2 * n:  # ids small enough to count by index
        pieces = np.bincount(c[roots], minlength=int(c.max()) + 1)
        bad = np.flatnonzero(pieces > 1)
        communities = int(np.count_nonzero(pieces))
    else:  # sparse large ids (never an array as long as the largest id)
        ids, counts = np.unique(c[roots], return_counts=True)
        bad, communities = ids[counts > 1], int(ids.shape[0])
        pieces = dict(zip(bad.tolist(), counts[counts > 1].tolist(), strict=True))
    if bad.shape[0] == 0:
        return Disconnected(0, communities)
    example = int(bad[0])
    members = np.flatnonzero(c == example)
    x = int(members[0])
    y = int(members[np.flatnonzero(piece[members] != piece[x])[0]])
    return Disconnected(int(bad.shape[0]), communities, example, int(pieces[example]), (x, y))
