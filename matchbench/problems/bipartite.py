"""Bipartite graphs for maximum-cardinality matching (MCM).

A sparse matrix with ``n_rows`` rows and ``n_cols`` columns is read as the bipartite
graph rows x columns (the convention of Deveci et al. 2013): entry (i, j) is the edge
between row vertex i and column vertex j. Both CSR directions are kept because the
GPU algorithms traverse from columns (BFS) and the references from rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

INT32_MAX = np.iinfo(np.int32).max


def index_dtype(*sizes: int) -> np.dtype:
    """int32 when every size fits, else int64."""
    return np.dtype(np.int32) if max(sizes, default=0) <= INT32_MAX else np.dtype(np.int64)


@dataclass(eq=False)
class BipartiteGraph:
    """A bipartite graph stored in both CSR directions.

    Attributes
    ----------
    n_rows, n_cols : int
        Vertex counts of the two sides.
    row_ptr, row_ind : ndarray
        CSR of rows -> columns: the columns adjacent to row ``i`` are
        ``row_ind[row_ptr[i]:row_ptr[i + 1]]``, sorted ascending.
    col_ptr, col_ind : ndarray
        CSR of columns -> rows (the transpose), sorted ascending.
    name, family : str
        Instance name (``delaunay_n16``) and dataset family (``delaunay``).
    params : dict
        Generator or loader parameters (seed, scale, source path, ``rcp``...), plain data.
    """

    n_rows: int
    n_cols: int
    row_ptr: np.ndarray
    row_ind: np.ndarray
    col_ptr: np.ndarray
    col_ind: np.ndarray
    name: str = "graph"
    family: str = "custom"
    params: dict[str, Any] = field(default_factory=dict)

    problem = "mcm"

    @property
    def n_edges(self) -> int:
        return int(self.row_ind.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of both CSR directions (the GPU memory a solver must at least hold)."""
        return sum(a.nbytes for a in (self.row_ptr, self.row_ind, self.col_ptr, self.col_ind))

    @classmethod
    def from_coo(
        cls,
        rows: np.ndarray,
        cols: np.ndarray,
        n_rows: int,
        n_cols: int,
        *,
        name: str = "graph",
        family: str = "custom",
        params: dict[str, Any] | None = None,
    ) -> BipartiteGraph:
        """Build from edge lists; duplicate edges are merged.

        Raises
        ------
        ValueError
            If an index is negative or out of range (the message names the bound).
        """
        rows = np.asarray(rows)
        cols = np.asarray(cols)
        if rows.shape != cols.shape:
            raise ValueError(f"{name}: row and column index arrays differ in length")
        if rows.size:
            if rows.min() < 0 or rows.max() >= n_rows:
                raise ValueError(
                    f"{name}: row index out of range [0, {n_rows}) "
                    f"(min {int(rows.min())}, max {int(rows.max())})"
                )
            if cols.min() < 0 or cols.max() >= n_cols:
                raise ValueError(
                    f"{name}: column index out of range [0, {n_cols}) "
                    f"(min {int(cols.min())}, max {int(cols.max())})"
                )
        data = np.ones(rows.shape[0], dtype=np.int8)
        a = sp.csr_matrix((data, (rows, cols)), shape=(n_rows, n_cols))
        return cls.from_scipy(a, name=name, family=family, params=params)

    @classmethod
    def from_scipy(
        cls,
        a: sp.spmatrix | sp.sparray,
        *,
        name: str = "graph",
        family: str = "custom",
        params: dict[str, Any] | None = None,
    ) -> BipartiteGraph:
        """Build from any scipy sparse matrix (its pattern; duplicates merged)."""
        a = sp.csr_matrix(a)
        a.sum_duplicates()
        a.sort_indices()
        n_rows, n_cols = a.shape
        idx = index_dtype(n_rows, n_cols, a.nnz)
        at = a.T.tocsr()
        at.sort_indices()
        return cls(
            n_rows=int(n_rows),
            n_cols=int(n_cols),
            row_ptr=a.indptr.astype(idx, copy=False),
            row_ind=a.indices.astype(idx, copy=False),
            col_ptr=at.indptr.astype(idx, copy=False),
            col_ind=at.indices.astype(idx, copy=False),
            name=name,
            family=family,
            params=dict(params or {}),
        )

    def to_scipy(self) -> sp.csr_matrix:
        """The rows x columns pattern as a scipy CSR matrix of ones."""
        data = np.ones(self.n_edges, dtype=np.int8)
        return sp.csr_matrix((data, self.row_ind, self.row_ptr), shape=(self.n_rows, self.n_cols))

    def permuted(self, seed: int) -> BipartiteGraph:
        """The RCP transform: a random row and a random column permutation.

        Notes
        -----
        Deveci et al. 2013, Sec. 4: "RCP" instances, whose augmenting paths get long and
        whose cheap matchings get poor, the hard case for the GPU algorithms.
        """
        rng = np.random.default_rng(seed)
        pr = rng.permutation(self.n_rows)
        pc = rng.permutation(self.n_cols)
        a = self.to_scipy()[pr][:, pc]
        params = dict(self.params, rcp=True, rcp_seed=int(seed))
        return BipartiteGraph.from_scipy(
            a, name=f"{self.name}_rcp", family=self.family, params=params
        )

    def describe(self) -> dict[str, Any]:
        """Instance columns of a result row."""
        return {
            "instance": self.name,
            "family": self.family,
            "n_rows": self.n_rows,
            "n_cols": self.n_cols,
            "n_edges": self.n_edges,
        }


@dataclass
class Matching:
    """A bipartite matching as two mate arrays; -1 marks an unmatched vertex.

    ``row_match[i] = j`` and ``col_match[j] = i`` for a matched pair (i, j).
    """

    row_match: np.ndarray
    col_match: np.ndarray

    @property
    def cardinality(self) -> int:
        return int(np.count_nonzero(self.col_match >= 0))

    @classmethod
    def from_col_match(cls, col_match: np.ndarray, n_rows: int) -> Matching:
        col_match = np.asarray(col_match)
        row_match = np.full(n_rows, -1, dtype=col_match.dtype)
        j = np.flatnonzero(col_match >= 0)
        row_match[col_match[j]] = j
        return cls(row_match=row_match, col_match=col_match)

    @classmethod
    def from_row_match(cls, row_match: np.ndarray, n_cols: int) -> Matching:
        row_match = np.asarray(row_match)
        col_match = np.full(n_cols, -1, dtype=row_match.dtype)
        i = np.flatnonzero(row_match >= 0)
        col_match[row_match[i]] = i
        return cls(row_match=row_match, col_match=col_match)

    def copy(self) -> Matching:
        return Matching(self.row_match.copy(), self.col_match.copy())
