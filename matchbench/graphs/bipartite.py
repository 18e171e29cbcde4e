"""Bipartite graphs for maximum-cardinality matching (MCM).

A sparse matrix with ``n_rows`` rows and ``n_cols`` columns is read as the bipartite
graph rows x columns (the convention of Deveci et al. 2013): entry (i, j) is the edge
between row vertex i and column vertex j. Both CSR directions are kept because the
GPU algorithms traverse from columns (BFS) and the references from rows.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
import scipy.sparse as sp

from matchbench.core.problem import save_instance_npz

INT32_MAX = np.iinfo(np.int32).max

#: Layout version of :meth:`BipartiteGraph.save_npz` files.
NPZ_VERSION = 1


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

    def save_npz(self, file: str | os.PathLike | IO[bytes]) -> None:
        """Write the graph to an uncompressed ``.npz`` file (see :meth:`load_npz`).

        Parameters
        ----------
        file : path or binary file
            Written exactly there (numpy's habit of appending ``.npz`` is avoided).

        Notes
        -----
        Holds both CSR directions (recomputing the transpose costs more than reading it),
        ``n_rows``, ``n_cols``, ``name``, ``family``, ``params`` as JSON, and ``kind``
        (``"module:Class"``), which tells a reader that does not know the family which
        class's ``load_npz`` to call. Uncompressed: zlib would take longer than the
        generators it saves re-running.
        """
        save_instance_npz(
            self,
            file,
            NPZ_VERSION,
            n_rows=np.asarray(self.n_rows, dtype=np.int64),
            n_cols=np.asarray(self.n_cols, dtype=np.int64),
            row_ptr=self.row_ptr,
            row_ind=self.row_ind,
            col_ptr=self.col_ptr,
            col_ind=self.col_ind,
        )

    @classmethod
    def load_npz(cls, file: str | os.PathLike | IO[bytes]) -> BipartiteGraph:
        """Read a graph written by :meth:`save_npz`.

        Raises
        ------
        ValueError
            For another layout version or inconsistent arrays (a damaged file); reading
            errors of numpy and zipfile pass through.
        """
        with np.load(file, allow_pickle=False) as z:
            version = int(z["version"])
            if version != NPZ_VERSION:
                raise ValueError(f"BipartiteGraph npz layout {version}, expected {NPZ_VERSION}")
            n_rows, n_cols = int(z["n_rows"]), int(z["n_cols"])
            arrays = {k: z[k] for k in ("row_ptr", "row_ind", "col_ptr", "col_ind")}
            name, family = str(z["name"][()]), str(z["family"][()])
            params = json.loads(str(z["params"][()]))
        for side, n, other in (("row", n_rows, n_cols), ("col", n_cols, n_rows)):
            ptr, ind = arrays[f"{side}_ptr"], arrays[f"{side}_ind"]
            if ptr.ndim != 1 or ind.ndim != 1 or ptr.shape[0] != n + 1:
                raise ValueError(f"{name}: {side}_ptr does not have {n} + 1 entries")
            if int(ptr[0]) != 0 or int(ptr[-1]) != ind.shape[0]:
                raise ValueError(f"{name}: {side}_ptr does not span {side}_ind")
            if ind.size and (int(ind.min()) < 0 or int(ind.max()) >= other):
                raise ValueError(f"{name}: {side}_ind out of range [0, {other})")
        if arrays["row_ind"].shape != arrays["col_ind"].shape:
            raise ValueError(f"{name}: the two CSR directions differ in edge count")
        if not isinstance(params, dict):
            raise ValueError(f"{name}: params is not a JSON object")
        return cls(n_rows=n_rows, n_cols=n_cols, name=name, family=family, params=params, **arrays)

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


def _mates(match: np.ndarray, n_other: int) -> np.ndarray:
    """The other side's mate array of one side's ``match`` (-1: unmatched)."""
    other = np.full(n_other, -1, dtype=match.dtype)
    k = np.flatnonzero(match >= 0)
    other[match[k]] = k
    return other


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
        return cls(row_match=_mates(col_match, n_rows), col_match=col_match)

    @classmethod
    def from_row_match(cls, row_match: np.ndarray, n_cols: int) -> Matching:
        row_match = np.asarray(row_match)
        return cls(row_match=row_match, col_match=_mates(row_match, n_cols))

    def copy(self) -> Matching:
        return Matching(self.row_match.copy(), self.col_match.copy())
