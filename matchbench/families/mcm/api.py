"""Array API of the MCM family: maximum matchings of a batch of CSR graphs in one call.

>>> import numpy as np
>>> from matchbench.families.mcm.api import solve_batch     # doctest: +SKIP
>>> # two graphs: 2 x 2 with edges (0,0) (0,1) (1,0); 1 x 3 with edge (0,2)
>>> indptr = np.array([0, 2, 3,   0, 1]); indices = np.array([0, 1, 0,   2])
>>> out = solve_batch(indptr, indices, [(2, 2), (1, 3)])    # doctest: +SKIP
>>> out.cardinality, out.row_match                          # doctest: +SKIP
(array([2, 1]), array([1, 0, 2], dtype=int32))

The solve is :mod:`matchbench.families.mcm.batch_gpu`'s kernel (APFB of Deveci et al.
2013, one thread block per graph); the certificate of ``verify=True`` is
:func:`matchbench.families.mcm.bulk.certify_batch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from matchbench.core.params import block_size
from matchbench.families.mcm.batch_gpu import (
    START_GREEDY,
    STAT_SLOTS,
    DeviceBatch,
    Packed,
    _exclusive_cumsum,
    check_packed,
    raise_on_errors,
    size_rule,
)


@dataclass
class MatchingBatch:
    """Maximum matchings of a batch, arrays on the device of the input.

    Attributes
    ----------
    row_match : array of int32
        Graph k's rows' mates at ``row_match[row_offsets[k]:row_offsets[k + 1]]`` (local
        column indices, -1 unmatched).
    col_match : array of int32
        Graph k's columns' mates at ``col_match[col_offsets[k]:col_offsets[k + 1]]``.
    cardinality : array of int64
        The size of each graph's maximum matching.
    row_offsets, col_offsets : array of int64
        ``B + 1`` entries each.
    """

    row_match: Any
    col_match: Any
    cardinality: Any
    row_offsets: Any
    col_offsets: Any

    def __len__(self) -> int:
        return int(self.cardinality.shape[0])

    def mates(self, k: int) -> tuple[Any, Any]:
        """Graph k's ``(row_match, col_match)`` (views)."""
        r0, r1 = int(self.row_offsets[k]), int(self.row_offsets[k + 1])
        c0, c1 = int(self.col_offsets[k]), int(self.col_offsets[k + 1])
        return self.row_match[r0:r1], self.col_match[c0:c1]


def _is_cupy(a: Any) -> bool:
    return type(a).__module__.startswith("cupy")


def _host(a: Any) -> np.ndarray:
    return a.get() if _is_cupy(a) else np.asarray(a)


def batch_offsets(
    indptr: Any, shapes: Any, indices_offsets: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(shapes, ptr_off, ind_off)`` of a batch as :func:`solve_batch` takes it (host).

    Graph k's row pointers start at ``sum(n_rows[:k] + 1)``; its indices at
    ``indices_offsets[k]``, default ``sum(nnz[:k])`` (graphs one after the other).

    >>> s, p, i = batch_offsets(np.array([0, 2, 3, 0, 1]), [(2, 2), (1, 3)])
    >>> p.tolist(), i.tolist()
    ([0, 3], [0, 3])
    """
    shp = np.asarray(_host(shapes) if _is_cupy(shapes) else shapes, dtype=np.int64).reshape(-1, 2)
    ptr_off = _exclusive_cumsum(shp[:, 0] + 1)
    if indices_offsets is not None:
        ind_off = np.asarray(_host(indices_offsets), dtype=np.int64).reshape(-1)
        if ind_off.shape[0] not in (shp.shape[0], shp.shape[0] + 1):
            raise ValueError(
                f"indices_offsets has {ind_off.shape[0]} entries for {shp.shape[0]} graphs"
            )
        return shp, ptr_off, ind_off[: shp.shape[0]]
    if shp.shape[0] == 0:
        return shp, ptr_off, ptr_off.copy()
    n = int(indptr.shape[0])
    ends = ptr_off + shp[:, 0]
    if int(ends.max()) >= n:
        raise ValueError(
            f"indptr has {n} entries; the shapes need {int(ends.max()) + 1} (n_rows + 1 per graph)"
        )
    last = indptr[ends]  # a gather: one small copy for CuPy input
    return shp, ptr_off, _exclusive_cumsum(_host(last).astype(np.int64))


def solve_batch(
    indptr: Any,
    indices: Any,
    shapes: Any,
    *,
    indices_offsets: Any = None,
    threads_per_block: int = 0,
    check_input: bool = True,
    verify: bool = False,
) -> MatchingBatch:
    """Maximum-cardinality matchings of a batch of bipartite graphs given as CSR.

    Parameters
    ----------
    indptr : 1-D integer array (NumPy or CuPy)
        Each graph's ``n_rows + 1`` row pointers in turn, each graph's starting at 0
        (``np.concatenate([a.indptr for a in matrices])`` for scipy CSR matrices).
    indices : 1-D integer array
        Each graph's column indices (local, in ``[0, n_cols)``), graph after graph
        (``np.concatenate([a.indices for a in matrices])``). Duplicates are allowed.
    shapes : (B, 2) integers
        ``(n_rows, n_cols)`` of each graph.
    indices_offsets : (B,) or (B + 1,) integers, optional
        Where each graph's indices start in ``indices``; default: one after the other.
    threads_per_block : int
        CUDA block size (a multiple of 32 up to 1024); 0 picks it per graph.
    check_input : bool
        Check the arrays on the host first (copies CuPy input there; O(rows + edges)):
        an out-of-range index would make the kernel read or write out of bounds.
    verify : bool
        Certify every answer (:func:`~matchbench.families.mcm.bulk.certify_batch`, one
        König cover of the batch's disjoint union, on the host) and raise if one fails.

    Returns
    -------
    MatchingBatch
        Mates, cardinalities and offsets; CuPy arrays for CuPy input, NumPy for NumPy.

    Raises
    ------
    ValueError
        For malformed input, or a graph over the solver's size limit
        (:func:`~matchbench.families.mcm.batch_gpu.size_rule`: ``n_rows + n_cols`` at most
        65,536).
    RuntimeError
        If a block reported an error, or ``verify`` found a wrong answer (a bug).

    Notes
    -----
    Deveci et al., Euro-Par 2013, APFB with GPUBFS-WR, one thread block per graph, from
    the block's greedy matching; one launch per group of graphs and no host
    synchronization inside the solve (:mod:`matchbench.families.mcm.batch_gpu`).
    """
    on_device = _is_cupy(indptr) or _is_cupy(indices)
    if not _is_cupy(indptr):
        indptr = np.asarray(indptr)
    if not _is_cupy(indices):
        indices = np.asarray(indices)
    tpb = block_size("solve_batch: threads_per_block", threads_per_block, auto=0)
    shp, ptr_off, ind_off = batch_offsets(indptr, shapes, indices_offsets)
    if (shp < 0).any():
        raise ValueError("solve_batch: negative n_rows or n_cols")
    for k in range(shp.shape[0]):
        why = size_rule(int(shp[k, 0]), int(shp[k, 1]), 0)
        if why is not None:
            raise ValueError(f"solve_batch: graph {k}: {why}")
    host_ip = host_ind = None
    if check_input:
        host_ip, host_ind = _host(indptr), _host(indices)
        for name, a in (("indptr", host_ip), ("indices", host_ind)):
            if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
                raise ValueError(f"solve_batch: {name} must be a 1-D integer array")
        why = check_packed(host_ip, host_ind, shp, ptr_off, ind_off)
        if why is not None:
            raise ValueError(f"solve_batch: {why}")
    import cupy as cp

    B = shp.shape[0]
    row_off = np.zeros(B + 1, dtype=np.int64)
    col_off = np.zeros(B + 1, dtype=np.int64)
    row_off[1:] = np.cumsum(shp[:, 0])
    col_off[1:] = np.cumsum(shp[:, 1])
    xp = cp if on_device else np
    if B == 0:
        empty = xp.zeros(0, dtype=np.int32)
        return MatchingBatch(
            empty,
            empty.copy(),
            xp.zeros(0, dtype=np.int64),
            xp.asarray(row_off),
            xp.asarray(col_off),
        )
    # Packed wants host arrays only for what DeviceBatch reads on the host (shapes and
    # offsets); the index arrays go to the device as they are.
    p = Packed(np.zeros(0, np.int32), np.zeros(0, np.int32), shp, ptr_off, ind_off)
    d = DeviceBatch(
        p, np.full(B, START_GREEDY, dtype=np.int64), tpb, indptr_dev=indptr, indices_dev=indices
    )
    d.launch()
    stats = d.stats_by_graph()  # the one host sync
    raise_on_errors(stats, lambda k: f"{int(shp[k, 0])} x {int(shp[k, 1])}")
    card = stats[:, STAT_SLOTS["CARD"]].astype(np.int64)
    rm = d.row_match[: int(row_off[-1])]
    cm = d.col_match[: int(col_off[-1])]
    if verify:
        from matchbench.families.mcm.bulk import certify_batch

        cert = certify_batch(
            host_ip if host_ip is not None else indptr,
            host_ind if host_ind is not None else indices,
            shp,
            rm,
            cm,
            indices_offsets=ind_off,
        )
        if not cert.ok.all():
            bad = np.flatnonzero(~cert.ok)
            raise RuntimeError(
                f"solve_batch: {bad.size} of {B} answers failed the certificate; graph "
                f"{int(bad[0])}: {cert.reasons[int(bad[0])]}"
            )
        if not np.array_equal(cert.cardinality, card):
            raise RuntimeError("solve_batch: the kernel's cardinalities disagree with its mates")
    if on_device:
        return MatchingBatch(rm, cm, cp.asarray(card), cp.asarray(row_off), cp.asarray(col_off))
    return MatchingBatch(rm.get(), cm.get(), card, row_off, col_off)
