"""Agreement of a partition with planted communities: normalized mutual information (NMI).

The generators that plant communities (:func:`~matchbench.families.community.datasets.community_planted`,
:func:`~matchbench.families.community.datasets.community_lfr`) let a result say how much of
the planted structure a solver found, besides its modularity: :func:`truth_nmi` compares an
answer with the instance's ground truth
(:func:`~matchbench.families.community.datasets.ground_truth`), :func:`nmi` any two
partitions.

NMI (Danon, Díaz-Guilera, Duch & Arenas, *Comparing community structure identification*,
J. Stat. Mech. P09008, 2005; the arithmetic-mean normalisation, scikit-learn's default
``normalized_mutual_info_score``)::

    NMI(A, B) = I(A; B) / ((H(A) + H(B)) / 2)
    I(A; B)   = sum_ij (n_ij / N) log(N n_ij / (a_i b_j))
    H(A)      = -sum_i (a_i / N) log(a_i / N)

with ``n_ij`` the vertices in community ``i`` of ``A`` and ``j`` of ``B`` (the contingency
table), ``a_i``, ``b_j`` its row and column sums, ``N`` the vertices. It is 1 for equal
partitions (up to renaming the communities) and 0 for independent ones; like
scikit-learn, two partitions that each have one community (or no vertex) have NMI 1, and
one community against several has NMI 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["nmi", "truth_nmi"]


def _dense_ids(x: Any, what: str) -> tuple[np.ndarray, int]:
    """``x`` (integer community ids, any values) renumbered ``0 .. k - 1``, and ``k``.

    O(n) by counting where the ids span at most a few times ``n`` values (solvers' dense
    ids, the truths'); a sort otherwise.

    >>> _dense_ids(np.array([7, -2, 7, 5]), "labels")
    (array([2, 0, 2, 1]), 3)
    """
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"{what} must be a 1-d array of community ids, not of shape {x.shape}")
    if x.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"{what} must hold integer community ids, not dtype {x.dtype}")
    lo, hi = int(x.min()), int(x.max())
    if hi - lo <= 4 * x.size + 16:
        shifted = (x - x.min()).astype(np.int64)
        used = np.bincount(shifted, minlength=hi - lo + 1) > 0
        return (np.cumsum(used) - 1)[shifted], int(np.count_nonzero(used))
    _, inverse = np.unique(x, return_inverse=True)
    inverse = inverse.ravel().astype(np.int64)
    return inverse, int(inverse.max()) + 1


def _entropy(counts: np.ndarray, total: int) -> float:
    p = counts[counts > 0] / total
    return float(-np.sum(p * np.log(p)))


def nmi(truth: Any, labels: Any) -> float:
    """Normalized mutual information of two partitions of the same vertices.

    Parameters
    ----------
    truth, labels : array_like of int
        One community id per vertex (any integer values; only which vertices share an id
        matters), of equal length.

    Returns
    -------
    float
        In [0, 1] (module docstring): exactly 1.0 for equal partitions up to renaming,
        also for two one-community partitions and for no vertex; 0.0 for one community
        against several. Natural logarithms; the ratio is clipped to [0, 1] against
        rounding.

    Raises
    ------
    ValueError
        Naming the argument: not 1-d, not of an integer dtype, or lengths that differ.

    Notes
    -----
    O(n + k): ids renumbered densely by counting, the contingency table as a sparse matrix
    (one entry per pair of communities that share a vertex, summed by scipy's COO to CSR
    conversion), entropies from its row and column sums.

    >>> nmi([0, 0, 1, 1], [5, 5, 3, 3])
    1.0
    >>> nmi([0, 0, 1, 1], [0, 1, 0, 1])
    0.0
    """
    a, ka = _dense_ids(truth, "truth")
    b, kb = _dense_ids(labels, "labels")
    if a.size != b.size:
        raise ValueError(
            f"truth and labels must have one id per vertex each: lengths {a.size} and {b.size}"
        )
    n = a.size
    if n == 0 or (ka == 1 and kb == 1):
        return 1.0
    table = sp.coo_matrix((np.ones(n, dtype=np.int64), (a, b)), shape=(ka, kb)).tocsr()
    table.sum_duplicates()
    if table.nnz == ka == kb:
        return 1.0  # a bijection of communities: equal partitions
    rows = np.repeat(np.arange(ka), np.diff(table.indptr))
    n_ij = table.data.astype(np.float64)
    a_i = np.bincount(a, minlength=ka).astype(np.float64)
    b_j = np.bincount(b, minlength=kb).astype(np.float64)
    mi = float(
        np.sum(n_ij * (np.log(n_ij) + np.log(n) - np.log(a_i[rows]) - np.log(b_j[table.indices])))
        / n
    )
    mean_h = 0.5 * (_entropy(a_i, n) + _entropy(b_j, n))
    if mean_h <= 0.0:
        return 1.0
    return float(min(max(mi / mean_h, 0.0), 1.0))


def truth_nmi(graph: Any, community: Any) -> float | None:
    """NMI of an answer's communities against the instance's planted ones, if known.

    Parameters
    ----------
    graph : WeightedGraph
        The instance (a :class:`~matchbench.families.community.problem.CommunityGraph`).
    community : array_like of int
        The answer: one community id per vertex (``Partition.community``).

    Returns
    -------
    float or None
        :func:`nmi` of the ground truth
        (:func:`~matchbench.families.community.datasets.ground_truth`, recomputed from
        the graph's parameters in O(n)) and ``community``; None for a graph without
        planted communities (a file, a Kronecker graph...).

    Raises
    ------
    ValueError
        For ``community`` not one integer id per vertex of ``graph``.
    """
    # imported here: datasets imports the problem module, which may import this one
    from matchbench.families.community.datasets import ground_truth

    truth = ground_truth(graph)
    if truth is None:
        return None
    community = np.asarray(community)
    if community.shape != (graph.n,):
        raise ValueError(
            f"{graph.name}: community must hold one id per vertex ({graph.n}), not shape "
            f"{community.shape}"
        )
    return nmi(truth, community)
