"""The shared weighted-graph model: an undirected graph in one symmetric CSR with weights.

:class:`WeightedGraph` is the instance of the weighted-matching family and the input of
the community and stable-marriage (Lemma 3.1) families. The global edge order
(:func:`edge_order_key`, :func:`precedes`, :func:`edge_order`) is the strict total order
every half-approximate matching algorithm follows; see :mod:`matchbench.families.wmatch`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from matchbench.core.errors import DatasetError
from matchbench.core.problem import save_instance_npz
from matchbench.graphs.bipartite import INT32_MAX, index_dtype

__all__ = [
    "NPZ_VERSION",
    "WeightedGraph",
    "csr_find",
    "edge_order",
    "edge_order_key",
    "merge_max",
    "merge_min",
    "precedes",
    "uniform_weights",
]

#: Layout version of :meth:`WeightedGraph.save_npz` files.
NPZ_VERSION = 1


def _err(name: str, msg: str) -> DatasetError:
    return DatasetError(f"wmatch instance {name!r}: {msg}")


# ---------------------------------------------------------------------------------------
# The global edge order


def edge_order_key(w: float, u: int, v: int) -> tuple[float, int, int]:
    """The sort key of edge ``{u, v}`` of weight ``w``: a larger key comes first.

    ``(w, max(u, v), min(u, v))``, compared lexicographically: heavier first, ties broken by
    the larger endpoint, then the smaller one, larger first (see the module docstring).
    """
    return (float(w), max(int(u), int(v)), min(int(u), int(v)))


@njit(cache=True, nogil=True, inline="always")
def precedes(w1, u1, v1, w2, u2, v2):
    """True when edge ``{u1, v1}`` (weight ``w1``) comes before ``{u2, v2}`` in the order.

    The numba form of comparing :func:`edge_order_key`; an edge does not precede itself.
    """
    if w1 != w2:
        return w1 > w2
    h1 = max(u1, v1)
    h2 = max(u2, v2)
    if h1 != h2:
        return h1 > h2
    return min(u1, v1) > min(u2, v2)


def edge_order(graph: WeightedGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The undirected edges ``(u, v, w)`` with ``u < v``, first to last in the global order.

    O(m log m) (one ``lexsort``); GREEDY and the rank-encoded weights fed to NetworKit use it.
    """
    u, v, w = graph.edges()
    # lexsort: the last key is the primary one; ascending, reversed = descending. Keys are
    # distinct per edge, so the reverse of the ascending order is the descending one.
    order = np.lexsort((u, v, w))[::-1]
    return u[order], v[order], w[order]


# ---------------------------------------------------------------------------------------
# Data model


@njit(cache=True, nogil=True)
def _check_csr(n, ptr, ind, w):
    """First defect of a symmetric CSR as ``(code, x, p)``, or ``(0, -1, -1)``.

    Codes: 1 ptr not non-decreasing at x; 2 index out of range (entry p of row x); 3 self-loop;
    4 row x not strictly ascending (duplicate or unsorted) at p; 5 weight not finite and
    positive; 6 reverse entry missing; 7 reverse entry has another weight.
    """
    for x in range(n):
        if ptr[x + 1] < ptr[x]:
            return 1, x, -1
    for x in range(n):
        for p in range(ptr[x], ptr[x + 1]):
            y = ind[p]
            if y < 0 or y >= n:
                return 2, x, p
            if y == x:
                return 3, x, p
            if p > ptr[x] and ind[p - 1] >= y:
                return 4, x, p
            wp = w[p]
            if not (wp > 0.0 and wp < np.inf):
                return 5, x, p
    for x in range(n):
        for p in range(ptr[x], ptr[x + 1]):
            y = ind[p]
            q = csr_find(ptr, ind, y, x)
            if q < 0:
                return 6, x, p
            if w[q] != w[p]:
                return 7, x, p
    return 0, -1, -1


@njit(cache=True, nogil=True, parallel=True)
def _csr_clean(n, ptr, ind, w):
    """Whether a CSR with a non-decreasing ``ptr`` has none of :func:`_check_csr`'s defects,
    over the rows in parallel: the rows' own checks, then each entry (x, y) above the
    diagonal looked up as (y, x) in row y, with the same weight. Every upper entry finding
    its distinct lower twin, and as many entries below the diagonal as above, make the
    lookup a bijection: the CSR is symmetric. A filter: where it says no,
    :func:`_check_csr` finds the first defect."""
    bad = 0
    for x in prange(n):
        lo, hi = ptr[x], ptr[x + 1]
        for p in range(lo, hi):
            y = ind[p]
            wp = w[p]
            if y < 0 or y >= n or y == x or (p > lo and ind[p - 1] >= y):
                bad += 1
                break
            if not (wp > 0.0 and wp < np.inf):
                bad += 1
                break
    if bad:
        return False
    upper = 0
    lower = 0
    missing = 0
    for x in prange(n):
        for p in range(ptr[x], ptr[x + 1]):
            y = ind[p]
            if y > x:
                upper += 1
                q = csr_find(ptr, ind, y, x)
                if q < 0 or w[q] != w[p]:
                    missing += 1
            else:
                lower += 1
    return missing == 0 and upper == lower


def first_csr_defect(n: int, ptr: np.ndarray, ind: np.ndarray, w: np.ndarray) -> tuple[int, int, int]:
    """:func:`_check_csr`'s answer for a CSR whose ``ptr`` spans ``ind``: a clean CSR is told
    so by :func:`_csr_clean` (rows in parallel), and only one with a defect is searched again
    for its first (the same error for the same arrays)."""
    if n and (ptr[1:] < ptr[:-1]).any():  # _csr_clean reads rows by ptr
        return _check_csr(n, ptr, ind, w)
    if _csr_clean(n, ptr, ind, w):
        return 0, -1, -1
    return _check_csr(n, ptr, ind, w)


@njit(cache=True, nogil=True, inline="always")
def csr_find(ptr, ind, x, y):
    """CSR position of entry (x, y) by binary search in the sorted row x, or -1."""
    lo = ptr[x]
    hi = ptr[x + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        z = ind[mid]
        if z < y:
            lo = mid + 1
        elif z > y:
            hi = mid
        else:
            return mid
    return -1




def _as_capacity(b: Any, n: int, name: str) -> np.ndarray | None:
    """``b`` as an int32 array of n entries, or None for ``b = 1`` everywhere (not given)."""
    if b is None:
        return None
    arr = np.asarray(b)
    if arr.ndim == 0:
        arr = np.full(n, arr)
    if arr.shape != (n,):
        raise _err(name, f"capacity b has shape {arr.shape}, expected ({n},)")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
            raise _err(name, "capacity b must hold integers")
    elif arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise _err(name, f"capacity b has dtype {arr.dtype}; expected integers")
    if arr.size and arr.min() < 0:
        k = int(np.flatnonzero(arr < 0)[0])
        raise _err(name, f"capacity b[{k}] = {arr[k]} is negative")
    if arr.size and arr.max() > INT32_MAX:
        k = int(np.argmax(arr))
        raise _err(name, f"capacity b[{k}] = {arr[k]} does not fit int32")
    return arr.astype(np.int32)


@dataclass(eq=False)
class WeightedGraph:
    """An undirected graph with positive edge weights and optional vertex capacities.

    Attributes
    ----------
    n : int
        Vertex count.
    ptr, ind : ndarray
        One symmetric CSR: the neighbours of ``x`` are ``ind[ptr[x]:ptr[x + 1]]``, strictly
        ascending; every edge ``{x, y}`` is stored as ``(x, y)`` and ``(y, x)``; no self-loops.
        int32 when ``n`` and ``2m`` fit, else int64.
    weight : ndarray
        float64, finite and positive, one per CSR entry, equal for both directions.
    b : ndarray or None
        int32 capacity per vertex (``b(v) >= 0``); None means 1 for every vertex (matching).
    name, family : str
        Instance name and dataset family.
    params : dict
        Generator or loader parameters, plain data.

    Raises
    ------
    DatasetError
        (a ``ValueError``) naming the instance and the problem, for arrays that are not such
        a CSR: wrong shapes or dtypes, an index out of range, a self-loop, an unsorted or
        duplicate neighbour, a weight that is not finite and positive, an edge stored in one
        direction only or with two weights, a negative or non-integer capacity.
    """

    n: int
    ptr: np.ndarray
    ind: np.ndarray
    weight: np.ndarray
    b: np.ndarray | None = None
    name: str = "graph"
    family: str = "custom"
    params: dict[str, Any] = field(default_factory=dict)

    problem: ClassVar[str] = "wmatch"

    def __post_init__(self) -> None:
        name = self.name
        n = int(self.n)
        if n < 0:
            raise _err(name, f"negative vertex count {n}")
        self.n = n
        ptr, ind, w = (np.asarray(a) for a in (self.ptr, self.ind, self.weight))
        for label, a in (("ptr", ptr), ("ind", ind)):
            if a.ndim != 1 or a.dtype.kind not in "iu":
                raise _err(name, f"{label} must be a 1-D integer array, got {a.dtype} {a.shape}")
        if ptr.shape[0] != n + 1:
            raise _err(name, f"ptr has {ptr.shape[0]} entries, expected n + 1 = {n + 1}")
        if int(ptr[0]) != 0 or int(ptr[-1]) != ind.shape[0]:
            raise _err(name, f"ptr does not span ind (ptr[0] = {ptr[0]}, ptr[n] = {ptr[-1]})")
        if w.shape != ind.shape:
            raise _err(name, f"weight has shape {w.shape}, ind {ind.shape}")
        if w.dtype.kind not in "iuf" or w.dtype == np.bool_:
            raise _err(name, f"weights have dtype {w.dtype}; expected real numbers")
        idx = index_dtype(n, ind.shape[0])
        self.ptr = ptr.astype(idx, copy=False)
        self.ind = ind.astype(idx, copy=False)
        self.weight = np.ascontiguousarray(w, dtype=np.float64)
        code, x, p = first_csr_defect(n, self.ptr, self.ind, self.weight)
        if code:
            raise _err(name, self._defect(int(code), int(x), int(p)))
        # Every objective of the families on this graph (a matching's weight, modularity's
        # 2m) is a sum of these weights: refuse what float64 cannot sum, rather than
        # certify an infinite objective later.
        with np.errstate(over="ignore"):  # an overflow is what is tested for
            total = float(np.sum(self.weight))
        if not np.isfinite(total * 2.0):
            raise _err(
                name,
                f"the weights sum to {total!r} (largest {float(self.weight.max())!r}): "
                "beyond float64; scale the weights down",
            )
        self.b = _as_capacity(self.b, n, name)

    def _defect(self, code: int, x: int, p: int) -> str:
        y = int(self.ind[p]) if p >= 0 else -1
        return {
            1: f"ptr decreases at vertex {x}",
            2: f"neighbour {y} of vertex {x} is outside [0, {self.n})",
            3: f"self-loop at vertex {x}",
            4: f"neighbours of vertex {x} are not strictly ascending at {y} (unsorted or duplicate)",
            5: f"edge ({x}, {y}) has weight {self.weight[p] if p >= 0 else None}; weights must be finite and > 0",
            6: f"edge ({x}, {y}) is stored but ({y}, {x}) is not (the CSR must be symmetric)",
            7: f"edge ({x}, {y}) has two weights, one per direction",
        }[code]

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_edges(
        cls,
        u: Any,
        v: Any,
        w: Any,
        n: int,
        *,
        b: Any = None,
        name: str = "graph",
        family: str = "custom",
        params: dict[str, Any] | None = None,
    ) -> WeightedGraph:
        """Build from undirected edges, each given once in either orientation.

        Raises
        ------
        DatasetError
            For indices out of range, a self-loop, an edge given twice, or a weight that is
            not finite and positive (and what the constructor rejects).
        """
        u = np.asarray(u, dtype=np.int64).ravel()
        v = np.asarray(v, dtype=np.int64).ravel()
        w = np.asarray(w, dtype=np.float64).ravel()
        if not (u.shape == v.shape == w.shape):
            raise _err(name, f"edge arrays differ in length ({u.size}, {v.size}, {w.size})")
        if u.size:
            lo, hi = min(int(u.min()), int(v.min())), max(int(u.max()), int(v.max()))
            if lo < 0 or hi >= n:
                raise _err(name, f"vertex index out of range [0, {n}) (min {lo}, max {hi})")
        loops = np.flatnonzero(u == v)
        if loops.size:
            raise _err(name, f"self-loop at vertex {int(u[loops[0]])}")
        bad = ~(np.isfinite(w) & (w > 0))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise _err(
                name,
                f"edge ({int(u[k])}, {int(v[k])}) has weight {w[k]}; weights must be finite and > 0",
            )
        lo_, hi_ = np.minimum(u, v), np.maximum(u, v)
        key = lo_ * max(n, 1) + hi_
        uniq, counts = np.unique(key, return_counts=True)
        if (counts > 1).any():
            k = int(uniq[np.flatnonzero(counts > 1)[0]])
            raise _err(name, f"edge ({k // n}, {k % n}) is given more than once")
        idx = index_dtype(n, 2 * u.size)
        rows = np.concatenate([u, v]).astype(idx)
        cols = np.concatenate([v, u]).astype(idx)
        a = sp.csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(n, n))
        a.sort_indices()
        return cls(
            n=n,
            ptr=a.indptr,
            ind=a.indices,
            weight=a.data,
            b=b,
            name=name,
            family=family,
            params=dict(params or {}),
        )

    # -- views ----------------------------------------------------------------------------

    @property
    def n_rows(self) -> int:
        return self.n

    @property
    def n_cols(self) -> int:
        return self.n

    @property
    def n_edges(self) -> int:
        """Undirected edges (half the CSR entries)."""
        return int(self.ind.shape[0]) // 2

    @property
    def capacity(self) -> np.ndarray:
        """``b`` as an int32 array, ones where no capacity was given."""
        return self.b if self.b is not None else np.ones(self.n, dtype=np.int32)

    @property
    def is_matching(self) -> bool:
        """True when every capacity is 1 (ordinary matching)."""
        return self.b is None or bool((self.b == 1).all())

    @property
    def nbytes(self) -> int:
        """Bytes of the CSR, the weights and the capacities."""
        extra = self.b.nbytes if self.b is not None else 0
        return self.ptr.nbytes + self.ind.nbytes + self.weight.nbytes + extra

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(u, v, w)`` of every undirected edge once, ``u < v``, in CSR order."""
        rows = np.repeat(np.arange(self.n, dtype=self.ind.dtype), np.diff(self.ptr))
        upper = rows < self.ind
        return rows[upper], self.ind[upper], self.weight[upper]

    def to_scipy(self) -> sp.csr_matrix:
        """The symmetric weighted adjacency matrix."""
        return sp.csr_matrix((self.weight, self.ind, self.ptr), shape=(self.n, self.n))

    def describe(self) -> dict[str, Any]:
        """Instance columns of a result row: ``n_rows = n_cols`` = vertices, undirected edges."""
        return {
            "instance": self.name,
            "family": self.family,
            "n_rows": self.n,
            "n_cols": self.n,
            "n_edges": self.n_edges,
        }

    def permuted(self, seed: int) -> WeightedGraph:
        """The graph with its vertices renumbered by a random permutation (the RCP transform).

        Weights and capacities move with their vertices; the answer changes only where the
        global order breaks ties by vertex number.
        """
        perm = np.random.default_rng(seed).permutation(self.n)
        u, v, w = self.edges()
        b = None if self.b is None else np.empty_like(self.b)
        if b is not None:
            b[perm] = self.b
        params = dict(self.params, rcp=True, rcp_seed=int(seed))
        # type(self): a subclass (the community family's CommunityGraph) stays one
        return type(self).from_edges(
            perm[u],
            perm[v],
            w,
            self.n,
            b=b,
            name=f"{self.name}_rcp",
            family=self.family,
            params=params,
        )

    # -- files ----------------------------------------------------------------------------

    def save_npz(self, file: str | os.PathLike | IO[bytes]) -> None:
        """Write the graph to an uncompressed ``.npz`` file (see :meth:`load_npz`).

        Holds ``n``, the CSR, the weights, ``b`` (empty when not given) and the header of
        :func:`~matchbench.problems.base.save_instance_npz` (``kind``, version, name, family,
        params), so that the dataset disk cache can read it back.
        """
        b = self.b if self.b is not None else np.zeros(0, dtype=np.int32)
        save_instance_npz(
            self,
            file,
            NPZ_VERSION,
            n=np.asarray(self.n, dtype=np.int64),
            ptr=self.ptr,
            ind=self.ind,
            weight=self.weight,
            has_b=np.asarray(self.b is not None),
            b=b,
        )

    @classmethod
    def load_npz(cls, file: str | os.PathLike | IO[bytes]) -> WeightedGraph:
        """Read a graph written by :meth:`save_npz`; the constructor re-validates it.

        Raises
        ------
        ValueError
            For another layout version or arrays that are not a valid instance.
        """
        with np.load(file, allow_pickle=False) as z:
            version = int(z["version"])
            if version != NPZ_VERSION:
                raise ValueError(f"WeightedGraph npz layout {version}, expected {NPZ_VERSION}")
            n = int(z["n"])
            arrays = {k: z[k] for k in ("ptr", "ind", "weight")}
            b = z["b"] if bool(z["has_b"]) else None
            name, family = str(z["name"][()]), str(z["family"][()])
            params = json.loads(str(z["params"][()]))
        if not isinstance(params, dict):
            raise ValueError(f"{name}: params is not a JSON object")
        return cls(n=n, b=b, name=name, family=family, params=params, **arrays)


def uniform_weights(m: int, seed: int) -> np.ndarray:
    """``m`` weights uniform in (0, 1] from ``numpy.random.default_rng(seed)`` (``1 - U[0, 1)``)."""
    return 1.0 - np.random.default_rng(seed).random(m)


def merge_max(key: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique keys (ascending) and the largest weight per key."""
    if key.size == 0:  # e.g. a file of diagonal entries only, all dropped
        return key, w
    order = np.argsort(key, kind="stable")
    key, w = key[order], w[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    return key[starts], np.maximum.reduceat(w, starts) if w.size else w


def merge_min(key: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The smallest weight per unique key (keys ascending, as :func:`merge_max`)."""
    if key.size == 0:
        return w
    order = np.argsort(key, kind="stable")
    key, w = key[order], w[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    return np.minimum.reduceat(w, starts) if w.size else w
