"""One König certificate for a whole batch of matchings, independent of the solver.

The disjoint union of the batch's graphs (their biadjacency matrices placed block-diagonally)
is one bipartite graph; an alternating path never leaves the graph it starts in, so a
matching of the union is maximum exactly when each graph's part is. :func:`certify_batch`
therefore runs the family's verifier (:func:`~matchbench.families.mcm.problem._check_mates`
and :func:`~matchbench.families.mcm.problem.konig_certificate`, the checks of
:meth:`MCM.verify`) once on the union. When it passes, every graph is certified. The
verifier stops at its first offender, so when it fails the graphs are certified one by
one with the same checks (the failure path, one more O(n + m) pass in all), and every
wrong graph gets its own reason in its own local indices, not just the first.

Mate values are range-checked per graph before the union is formed: a column index that
belongs to the next graph of the batch would otherwise become a valid union index.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from matchbench.families.mcm.batch_gpu import _exclusive_cumsum, check_packed
from matchbench.families.mcm.problem import _check_mates, konig_certificate
from matchbench.graphs.bipartite import BipartiteGraph, Matching


class BatchCertificate(NamedTuple):
    """Per-graph verdicts of :func:`certify_batch`.

    ``ok[k]`` is True when graph k's answer is a maximum matching; ``reasons[k]`` is None
    then, else why not (``invalid: ...``, ``not maximum: ...`` or ``no certificate: ...``,
    the wording of :meth:`MCM.verify`, with the graph's local indices);
    ``cardinality[k]`` is its answer's size (-1 for an invalid answer).
    """

    ok: np.ndarray
    reasons: list[str | None]
    cardinality: np.ndarray


def _host(a) -> np.ndarray:
    get = getattr(a, "get", None)  # a CuPy array
    return np.asarray(get() if callable(get) and not isinstance(a, np.ndarray) else a)


def _union(
    indptr: np.ndarray,
    indices: np.ndarray,
    shapes: np.ndarray,
    ptr_off: np.ndarray,
    ind_off: np.ndarray,
    keep: np.ndarray,
) -> tuple[BipartiteGraph, np.ndarray, np.ndarray]:
    """The block-diagonal union of the graphs in ``keep`` (indices into the batch), and
    the row and column offset of each kept graph in it."""
    import scipy.sparse as sp

    nr, nc = shapes[keep, 0], shapes[keep, 1]
    r0, c0 = _exclusive_cumsum(nr), _exclusive_cumsum(nc)
    ip = indptr.astype(np.int64, copy=False)
    nnz = ip[ptr_off[keep] + nr]
    m = int(nnz.sum())
    # Each edge's local row: the row whose pointer block holds it.
    rows = np.empty(m, dtype=np.int64)
    cols = np.empty(m, dtype=np.int64)
    e = 0
    for q, k in enumerate(keep):
        p = ip[ptr_off[k] : ptr_off[k] + nr[q] + 1]
        n = int(p[-1])
        rows[e : e + n] = np.repeat(np.arange(nr[q], dtype=np.int64), np.diff(p)) + r0[q]
        cols[e : e + n] = indices[ind_off[k] : ind_off[k] + n].astype(np.int64) + c0[q]
        e += n
    a = sp.csr_matrix(
        (np.ones(m, dtype=np.int8), (rows, cols)), shape=(int(nr.sum()), int(nc.sum()))
    )
    return BipartiteGraph.from_scipy(a, name="batch-union"), r0, c0


def _one(indptr, indices, shapes, ptr_off, ind_off, k, rm, cm) -> tuple[str | None, int]:
    """Graph k alone, as :meth:`MCM.verify` checks it (without its search for the maximum)."""
    g, _, _ = _union(indptr, indices, shapes, ptr_off, ind_off, np.array([k]))
    m = Matching(rm, cm)
    why = _check_mates(g, m)
    if why is not None:
        return f"invalid: {why}", -1
    size, augmenting, failure = konig_certificate(g, rm.astype(np.int64), cm.astype(np.int64))
    card = int(np.count_nonzero(cm >= 0))
    if failure is not None:
        return f"no certificate: {failure}", card
    if augmenting is not None:
        col, row = augmenting
        return f"not maximum: augmenting path from column {col} to row {row}", card
    return None, card


def certify_batch(
    indptr,
    indices,
    shapes,
    row_match,
    col_match,
    *,
    indices_offsets=None,
) -> BatchCertificate:
    """Certify a batch of maximum matchings with one König certificate of the union.

    Parameters
    ----------
    indptr, indices, shapes, indices_offsets
        The batch as :func:`matchbench.families.mcm.api.solve_batch` takes it: each
        graph's ``n_rows + 1`` local row pointers in turn, its local column indices, the
        ``(n_rows, n_cols)`` of every graph, and optionally where each graph's indices
        start (default: one after the other). NumPy or CuPy (copied to the host).
    row_match, col_match
        The answers, concatenated in batch order (graph k's ``n_rows`` entries, then the
        next graph's; -1 unmatched; local indices), as ``solve_batch`` returns them.

    Returns
    -------
    BatchCertificate
        ``ok``, ``reasons`` and ``cardinality`` per graph.

    Raises
    ------
    ValueError
        For arrays that are not a batch of graphs (the input, not the answer, is wrong).

    Notes
    -----
    König's theorem (a vertex cover as large as the matching proves it maximum), applied
    to the disjoint union, whose maximum matching is the union of the graphs' maximum
    matchings and whose minimum cover is the union of their covers. O(n + m) when every
    graph passes; a failure costs one more O(n + m) pass, graph by graph.
    """
    ip = _host(indptr)
    ind = _host(indices)
    shapes = _host(shapes).astype(np.int64).reshape(-1, 2)
    B = shapes.shape[0]
    ptr_off = _exclusive_cumsum(shapes[:, 0] + 1)
    if indices_offsets is None:
        if B and int((ptr_off + shapes[:, 0]).max()) >= ip.shape[0]:
            raise ValueError("row pointers run past the end of indptr")
        ind_off = _exclusive_cumsum(ip[ptr_off + shapes[:, 0]]) if B else ptr_off
    else:
        ind_off = _host(indices_offsets).astype(np.int64).reshape(-1)[:B]
    why = check_packed(ip, ind, shapes, ptr_off, ind_off)
    if why is not None:
        raise ValueError(f"certify_batch: {why}")
    rm_all = _host(row_match).reshape(-1)
    cm_all = _host(col_match).reshape(-1)
    nr, nc = shapes[:, 0], shapes[:, 1]
    r0, c0 = _exclusive_cumsum(nr), _exclusive_cumsum(nc)
    if rm_all.shape[0] != int(nr.sum()) or cm_all.shape[0] != int(nc.sum()):
        raise ValueError(
            f"certify_batch: row_match has {rm_all.shape[0]} entries and col_match "
            f"{cm_all.shape[0]}, the batch has {int(nr.sum())} rows and {int(nc.sum())} columns"
        )
    ok = np.ones(B, dtype=bool)
    reasons: list[str | None] = [None] * B
    card = np.full(B, -1, dtype=np.int64)
    if not (np.issubdtype(rm_all.dtype, np.integer) and np.issubdtype(cm_all.dtype, np.integer)):
        for k in range(B):
            ok[k] = False
            reasons[k] = f"invalid: mate arrays of dtype {rm_all.dtype}, {cm_all.dtype}"
        return BatchCertificate(ok, reasons, card)
    rm64 = rm_all.astype(np.int64)
    cm64 = cm_all.astype(np.int64)
    # Per graph range checks (vectorized): a mate must name a vertex of its own graph.
    row_owner = np.repeat(np.arange(B), nr)
    col_owner = np.repeat(np.arange(B), nc)
    for mates, owner, bound, label, other in (
        (rm64, row_owner, nc, "row_match", "column"),
        (cm64, col_owner, nr, "col_match", "row"),
    ):
        bad = np.flatnonzero((mates < -1) | (mates >= bound[owner]))
        for e in bad[::-1]:  # the first offender of each graph wins
            k = int(owner[e])
            local = int(e - (r0 if label == "row_match" else c0)[k])
            ok[k] = False
            reasons[k] = (
                f"invalid: {label}[{local}] = {int(mates[e])} is not a {other} index in "
                f"[-1, {int(bound[k])})"
            )
    # The union of the graphs that passed, with their mates shifted to union indices.
    keep = np.flatnonzero(ok)
    if keep.size:
        union, ur0, uc0 = _union(ip, ind, shapes, ptr_off, ind_off, keep)
        rows = np.concatenate([np.arange(r0[k], r0[k] + nr[k]) for k in keep])
        cols = np.concatenate([np.arange(c0[k], c0[k] + nc[k]) for k in keep])
        urm = rm64[rows].copy()
        ucm = cm64[cols].copy()
        urm[urm >= 0] += np.repeat(uc0, nr[keep])[urm >= 0]
        ucm[ucm >= 0] += np.repeat(ur0, nc[keep])[ucm >= 0]
        passed = _check_mates(union, Matching(urm, ucm)) is None
        if passed:
            _size, augmenting, failure = konig_certificate(union, urm, ucm)
            passed = augmenting is None and failure is None
        if passed:
            owner = np.repeat(np.arange(keep.size), nc[keep])
            card[keep] = np.bincount(owner[ucm >= 0], minlength=keep.size)
        else:
            # The failure path: each kept graph alone, so every wrong graph is named.
            for k in keep:
                rm = rm_all[r0[k] : r0[k] + nr[k]]
                cm = cm_all[c0[k] : c0[k] + nc[k]]
                why, card[k] = _one(ip, ind, shapes, ptr_off, ind_off, int(k), rm, cm)
                if why is not None:
                    ok[k] = False
                    reasons[k] = why
    return BatchCertificate(ok, reasons, card)
