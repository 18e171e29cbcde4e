"""Compiled pieces of :mod:`matchbench.graphs.stack`: a chunk of a
:class:`~matchbench.graphs.stack.GraphStack` from row CSRs stored elsewhere (a bulk
file's arrays), both directions in canonical form, or a verdict that it is not canonical.

A module of its own so that importing the stack does not import numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["csr_chunk", "csr_chunk_size"]


@njit(cache=True, nogil=True)
def csr_chunk_size(shapes, nnz):
    """The int32 entries of the chunk's buffer: both CSR directions of each graph."""
    total = 0
    for g in range(shapes.shape[0]):
        total += shapes[g, 0] + 1 + shapes[g, 1] + 1 + 2 * nnz[g]
    return total


@njit(cache=True, nogil=True)
def csr_chunk(indptr, indices, ptr_off, ind_off, shapes, nnz, buf, table):
    """Graphs ``g`` (row pointers at ``indptr[ptr_off[g]:]``, columns at
    ``indices[ind_off[g]:]``, sizes ``shapes[g]``, ``nnz[g]`` edges) into ``buf``
    (:func:`csr_chunk_size` int32 entries): each graph's ``row_ptr``, ``row_ind``, ``col_ptr``,
    ``col_ind`` (the transpose, by a counting sort over the rows in order: each column's
    rows increasing; the order ``BipartiteGraph.from_scipy`` gives), and ``table`` (``(graphs, 8)``, the stack's columns).

    Returns -1 where every graph is in canonical CSR (pointers from 0, not decreasing,
    ending at ``nnz[g]``; each row's columns strictly increasing and in
    ``[0, n_cols)``), else the first graph that is not (its part of ``buf`` is then
    unfinished): the caller reads that graph the checked way.
    """
    n_cols = 1
    for g in range(shapes.shape[0]):
        n_cols = max(n_cols, shapes[g, 1])
    cur = np.empty(n_cols, np.int64)
    at = 0
    for g in range(shapes.shape[0]):
        nr, nc, m = shapes[g, 0], shapes[g, 1], nnz[g]
        p0, o0 = ptr_off[g], ind_off[g]
        rp, ri = at, at + nr + 1
        cp, ci = ri + m, ri + m + nc + 1
        if np.int64(indptr[p0]) != 0 or np.int64(indptr[p0 + nr]) != m:
            return g
        buf[rp] = 0
        for j in range(nc + 1):
            buf[cp + j] = 0
        for i in range(nr):
            a, b = np.int64(indptr[p0 + i]), np.int64(indptr[p0 + i + 1])
            if b < a or b > m:  # checked before any index is read: never past the graph
                return g
            buf[rp + i + 1] = b
            last = -1
            for e in range(a, b):
                j = np.int64(indices[o0 + e])
                if j <= last or j >= nc:
                    return g
                last = j
                buf[ri + e] = j
                buf[cp + j + 1] += 1
        for j in range(nc):
            buf[cp + j + 1] += buf[cp + j]
        # the transpose: rows in order, each to its column's next slot
        cur[:nc] = buf[cp : cp + nc]
        for i in range(nr):
            for e in range(buf[rp + i], buf[rp + i + 1]):
                j = buf[ri + e]
                buf[ci + cur[j]] = i
                cur[j] += 1
        table[g, 0] = nr
        table[g, 1] = nc
        table[g, 2] = rp
        table[g, 3] = ri
        table[g, 4] = m
        table[g, 5] = cp
        table[g, 6] = ci
        table[g, 7] = m
        at = ci + m
    return -1
