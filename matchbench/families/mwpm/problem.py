"""Maximum weight perfect matching on complete graphs (the ROMA family): data model, certificate.

An instance is a :class:`CompleteGraph`: the full symmetric ``n x n`` weight matrix of a
complete graph, float32, non-negative, zero diagonal, C-contiguous (row ``i`` holds the weights
of the edges at vertex ``i``). Weight ``(i, j)`` sits at flat offset ``i * n + j``, which passes
2^31 from ``n = 46341``: every index into the matrix is 64-bit (numba's ``intp`` here; the GPU
kernels must compute it in ``long long``). ``n`` is always even: an input with an odd number of
vertices gets one dummy vertex, the last one, joined to every vertex by an edge of weight 0, so
that a perfect matching exists; the dummy's partner is the vertex the matching leaves single in
the real graph, and the maximum weight perfect matching of the padded graph weighs exactly the
maximum weight of a matching of the real graph that leaves one vertex single. ``n_vertices`` is
the number of real vertices (``n`` or ``n - 1``) and ``params["dummy_vertex"]`` is the dummy's
index, or None: the result rows carry both in ``instance_params``.

An answer is a :class:`PerfectMatching`: a mate array over all ``n`` vertices (the dummy
included), and what the solver claims about it: ``converged`` (a phase of ROMA found no 4-cycle
flip with gain above ``threshold``).

The certificate (:meth:`MWPM.verify`, independent of the solvers)
----------------------------------------------------------------
1. Valid: ``mate`` is a perfect matching: every entry a vertex, no vertex its own mate, no
   vertex the mate of two vertices, ``mate[mate[v]] == v``, none unmatched.
2. Objective: the weight recomputed from the matrix, the float64 sum of ``w[v, mate[v]]`` over
   ``v < mate[v]`` in vertex order (equal answers give equal sums, bit for bit).
3. Local optimality, where the answer claims ``converged``: an exhaustive check (numba,
   parallel) of every pair of matched edges ``(u, mate[u])``, ``(x, mate[x])`` that no flip to
   ``{(u, x), (mate[u], mate[x])}`` or ``{(u, mate[x]), (mate[u], x)}`` gains more than
   ``threshold``, up to the float tolerance ``CONVERGENCE_RTOL * max w`` (room for solvers that
   add in float32 on the device; in float64 the gains of ROMA's numba kernel and of this check
   are the same expression, bit for bit). O(n^2 / 8) pairs; on the GPU (``kernels/mwpm/mwpm.cu``,
   the same expression and choice) for ``n >= GPU_CHECK_MIN_N`` where a GPU solver of the
   process left the matrix on the device.
4. Reference and bound (computed once per instance, cached): ``reference`` is the exact optimum,
   networkx's ``max_weight_matching(maxcardinality=True)`` (Galil's blossom algorithm, O(n^3) in
   pure Python), for ``n <= EXACT_MAX_N``. ``bound`` is an upper bound on every perfect matching's
   weight: the optimum itself where known; else, for ``n <= LSA_MAX_N``, half the optimum of the
   assignment problem of the bipartite double cover (:func:`assignment_bound`, the value of the
   fractional perfect-matching LP without odd-set constraints); else the objective of a feasible
   dual of that LP, half the row maxima improved by ``DUAL_SWEEPS`` Jacobi steps
   (:func:`dual_bound`; never above ``sum_v max_u w_vu / 2``, :func:`row_max_bound`). Each
   docstring says why its number bounds every perfect matching. A valid answer weighing more
   than ``bound`` (beyond rounding) is rejected: the bound itself would be wrong.

Gap to optimality (Hovland 2020, Sec. 5.4.4): ``GTO = 1 - weight / reference``,
:func:`gap_to_optimality`. The rows carry ``objective``, ``reference_objective`` and ``bound``;
the report's quality view computes the same gap, against the reference where known and else
against the bound, where it over-estimates the true gap (the bound is at least the optimum).
"""

from __future__ import annotations

import warnings
import weakref
from dataclasses import InitVar, dataclass, field
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from matchbench.core.errors import DatasetError, DatasetWarning
from matchbench.core.problem import Problem, Verification

__all__ = [
    "CONVERGENCE_RTOL",
    "EXACT_MAX_N",
    "GPU_CHECK_MIN_N",
    "LSA_MAX_N",
    "MWPM",
    "CompleteGraph",
    "PerfectMatching",
    "assignment_bound",
    "best_flip",
    "dual_bound",
    "exact_optimum",
    "gap_to_optimality",
    "matching_weight",
    "matrix_defect",
    "row_max_bound",
    "upper_bound",
]

#: Largest matrices (padded vertex count) whose exact optimum the verifier computes:
#: networkx's blossom algorithm takes about 2.5 s at n = 200 and 8 s at n = 300 (complete
#: graph, uniform weights, one core).
EXACT_MAX_N = 256
#: Largest matrices whose double-cover assignment bound the verifier computes (scipy's
#: ``linear_sum_assignment`` on an n x n float64 copy, two cores: at n = 2048 0.2 s on
#: exponential, 0.4 s on uniform, 4.5 s on geometric weights; 44 s for geometric at 4096).
LSA_MAX_N = 2048
#: Jacobi sweeps of :func:`dual_bound`, the bound above ``LSA_MAX_N`` (one O(n^2) pass each).
DUAL_SWEEPS = 8
#: Tolerance of the local-optimality check, relative to the largest weight (see item 3 of
#: the module docstring): a float32 gain ``(a + b) - (c + d)`` of weights at most ``W`` is off
#: by at most about ``3 * 2^-24 * 2W``; 2^-20 leaves room on top.
CONVERGENCE_RTOL = 2.0**-20
#: Relative slack when the verifier compares a weight with its own upper bound.
BOUND_RTOL = 1e-9
#: Smallest matrices whose local-optimality check runs on the GPU (:func:`best_flip`), where a
#: GPU solver left the matrix resident: the CPU scan makes four random loads for each of the
#: n^2 / 8 pairs of matched edges.
GPU_CHECK_MIN_N = 8192
#: Tile edge of the blocked symmetry scan (two 128 x 128 float32 tiles fit in L2; measured
#: fastest of 16 to 512 at n = 8192).
_TILE = 128


def _err(name: str, msg: str) -> DatasetError:
    return DatasetError(f"mwpm instance {name!r}: {msg}")


# ---------------------------------------------------------------------------------------
# Matrix checks (numba): one parallel blocked pass finds whether anything is wrong, a
# sequential one (only then) names the first defect in row-major order.


@njit(cache=True, nogil=True, inline="always")
def _bad_entry(x):
    """NaN, infinite or negative (NaN fails every comparison)."""
    return not (x >= 0.0 and x < np.inf)


@njit(cache=True, nogil=True)
def _tile_row_defects(a, n_vertices, bi, nt):
    """Defects in tile row ``bi``, upper triangle and diagonal only (see :func:`_count_defects`)."""
    n = a.shape[0]
    i0 = bi * _TILE
    i1 = min(i0 + _TILE, n)
    bad = 0
    for i in range(i0, i1):  # the diagonal tile
        if a[i, i] != 0.0:
            bad += 1
        for j in range(i + 1, i1):
            x = a[i, j]
            if _bad_entry(x) or x != a[j, i] or (j >= n_vertices and x != 0.0):
                bad += 1
    for bj in range(bi + 1, nt):  # branch-free: the common case has no defect
        j0 = bj * _TILE
        j1 = min(j0 + _TILE, n)
        for i in range(i0, i1):
            for j in range(j0, j1):
                x = a[i, j]
                bad += _bad_entry(x) | (x != a[j, i]) | ((j >= n_vertices) & (x != 0.0))
    return bad


@njit(cache=True, parallel=True)
def _count_defects(a, n_vertices):
    """Number of defective entries of the strict upper triangle, plus nonzero diagonal entries.

    An upper entry ``(i, j)`` is defective when it is NaN, infinite or negative, differs from
    ``(j, i)``, or is a nonzero edge of the dummy vertex (``j >= n_vertices``); since ``(j, i)``
    must equal it, the lower triangle needs no check of its own. Square tiles; tile rows are
    folded (``t`` with ``nt - 1 - t``) so that every parallel iteration has the same work.
    """
    n = a.shape[0]
    nt = (n + _TILE - 1) // _TILE
    half = (nt + 1) // 2
    out = np.zeros(half, dtype=np.int64)
    for t_ in prange(half):
        t = np.int64(t_)
        c = _tile_row_defects(a, n_vertices, t, nt)
        if nt - 1 - t != t:
            c += _tile_row_defects(a, n_vertices, nt - 1 - t, nt)
        out[t] = c
    return out.sum()


@njit(cache=True, nogil=True)
def _first_defect(a, n_vertices):
    """``(code, i, j)`` of the first defect in row-major order of the upper triangle, or 0.

    Codes: 1 ``a[i, j]`` not finite; 2 ``a[i, j]`` negative; 3 ``a[i, j] != a[j, i]``;
    4 ``a[i, i] != 0``; 5 a nonzero edge ``(i, j)`` of the dummy vertex ``j``.
    """
    n = a.shape[0]
    for i in range(n):
        if a[i, i] != 0.0:
            return 4, i, i
        for j in range(i + 1, n):
            x = a[i, j]
            y = a[j, i]
            if not (x > -np.inf and x < np.inf):
                return 1, i, j
            if not (y > -np.inf and y < np.inf):
                return 1, j, i
            if x < 0.0:
                return 2, i, j
            if y < 0.0:
                return 2, j, i
            if x != y:
                return 3, i, j
            if j >= n_vertices and a[i, j] != 0.0:
                return 5, i, j
    return 0, -1, -1


def matrix_defect(a: np.ndarray, n_vertices: int | None = None) -> str | None:
    """What is wrong with a square float32 weight matrix, or None.

    Parameters
    ----------
    a : ndarray, shape (n, n), float32, C-contiguous
    n_vertices : int, optional
        Real vertices; the rows and columns from ``n_vertices`` on are dummies whose edges
        must weigh 0. Default ``n``.

    Returns
    -------
    str or None
        The first defect in row-major order of the upper triangle (entry, value, why): a
        weight that is NaN or infinite, a negative weight, an asymmetric pair, a nonzero
        diagonal entry, a nonzero dummy edge.
    """
    n_vertices = a.shape[0] if n_vertices is None else int(n_vertices)
    if a.shape[0] == 0 or _count_defects(a, n_vertices) == 0:
        return None
    code, i, j = _first_defect(a, n_vertices)
    x = a[i, j]
    return {
        1: f"w[{i}, {j}] = {x} is not finite (weights must be finite numbers, stored as float32)",
        2: f"w[{i}, {j}] = {x} is negative (weights must be >= 0)",
        3: f"the matrix is not symmetric: w[{i}, {j}] = {x} but w[{j}, {i}] = {a[j, i]}",
        4: f"diagonal entry w[{i}, {i}] = {x} is not 0 (a complete graph has no self-loops)",
        5: f"edge ({i}, {j}) of the dummy vertex {j} weighs {x}, not 0",
    }.get(int(code), "the parallel and the sequential matrix checks disagree")


# ---------------------------------------------------------------------------------------
# Data model


@dataclass(eq=False)
class CompleteGraph:
    """A complete graph on ``n`` vertices (``n`` even), given by its full weight matrix.

    Attributes
    ----------
    weight : ndarray, shape (n, n)
        float32, C-contiguous, symmetric, finite, ``>= 0``, zero diagonal. 64-bit indexing
        (module docstring).
    n_vertices : int
        Real vertices: ``n``, or ``n - 1`` when the input had an odd count and vertex
        ``n - 1`` is the zero-weight dummy. Default ``n``.
    name, family : str
        Instance name (``complete_uniform_n1024_s0``) and dataset family.
    params : dict
        Generator or loader parameters, plain data; the constructor adds ``n_vertices`` and
        ``dummy_vertex`` (the dummy's index, or None).
    validate : bool
        Scan the matrix with :func:`matrix_defect` (default). ``False`` skips the scan, which
        reads the matrix twice (3.8 s at n = 32768 on two cores, half of the generation time):
        only for matrices valid by construction, the generators of
        :mod:`matchbench.families.mwpm.datasets`, whose tests check their output with the scan.

    Raises
    ------
    DatasetError
        (a ``ValueError``) naming the instance and the problem: not a square float32
        C-contiguous 2-D array (use :meth:`from_matrix` to convert, pad and zero the
        diagonal), an odd size, fewer than 2 real vertices, or what :func:`matrix_defect`
        finds.
    """

    weight: np.ndarray
    n_vertices: int | None = None
    name: str = "complete"
    family: str = "custom"
    params: dict[str, Any] = field(default_factory=dict)
    validate: InitVar[bool] = True

    problem: ClassVar[str] = "mwpm"

    def __post_init__(self, validate: bool = True) -> None:
        name = self.name
        w = self.weight
        if not isinstance(w, np.ndarray) or w.ndim != 2 or w.shape[0] != w.shape[1]:
            shape = getattr(w, "shape", None)
            raise _err(name, f"weight must be a square 2-D array, got shape {shape}")
        if w.dtype != np.float32 or not w.flags.c_contiguous:
            raise _err(
                name,
                f"weight must be a C-contiguous float32 array, got {w.dtype} "
                f"({'' if w.flags.c_contiguous else 'not '}C-contiguous); "
                "CompleteGraph.from_matrix converts",
            )
        n = int(w.shape[0])
        if n % 2:
            raise _err(
                name,
                f"{n} vertices: the stored matrix must have an even size "
                "(CompleteGraph.from_matrix adds the dummy vertex)",
            )
        nv = n if self.n_vertices is None else int(self.n_vertices)
        if nv not in (n, n - 1):
            raise _err(name, f"n_vertices = {nv} for a {n} x {n} matrix (expected {n} or {n - 1})")
        if nv < 2:
            raise _err(name, f"{nv} vertices: a matching needs at least 2")
        defect = matrix_defect(w, nv) if validate else None
        if defect is not None:
            raise _err(name, defect)
        self.n_vertices = nv
        self.params = dict(self.params, n_vertices=nv, dummy_vertex=n - 1 if nv < n else None)

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_matrix(
        cls,
        a: Any,
        *,
        name: str = "complete",
        family: str = "custom",
        params: dict[str, Any] | None = None,
    ) -> CompleteGraph:
        """From any square real matrix: converted to float32, padded, diagonal set to 0.

        An odd number of vertices gets the dummy vertex (module docstring). The diagonal is
        no edge: it is ignored and stored as 0, with a :class:`DatasetWarning` when it held
        anything else. Reads ``a`` once (a ``numpy.memmap`` streams).

        Raises
        ------
        DatasetError
            For an array that is not 2-D and square, empty or of one vertex, of a non-real
            dtype (bool, complex, object, strings), and what the constructor rejects (NaN,
            infinite or negative weights, asymmetry), naming the instance.
        """
        arr = np.asarray(a) if not isinstance(a, np.ndarray) else a
        if arr.ndim != 2:
            raise _err(name, f"the weight matrix must be 2-D, got shape {arr.shape}")
        if arr.shape[0] != arr.shape[1]:
            raise _err(name, f"the weight matrix is {arr.shape[0]} x {arr.shape[1]}, not square")
        if arr.dtype.kind not in "iuf" or arr.dtype == np.bool_:
            raise _err(name, f"weights have dtype {arr.dtype}; expected real numbers")
        nv = int(arr.shape[0])
        if nv < 2:
            raise _err(name, f"{nv} vertices: a matching needs at least 2")
        n = nv + (nv % 2)
        if (
            n == nv
            and arr.dtype == np.float32
            and arr.flags.c_contiguous
            and not isinstance(arr, np.memmap)
        ):
            w = arr.copy()
        else:
            w = np.zeros((n, n), dtype=np.float32)
            w[:nv, :nv] = arr
        diag = np.diagonal(w)
        if np.any(diag != 0):  # NaN included
            k = int(np.count_nonzero(diag != 0))
            warnings.warn(
                f"mwpm instance {name!r}: {k} nonzero diagonal entries ignored (no self-loops)",
                DatasetWarning,
                stacklevel=2,
            )
            np.fill_diagonal(w, 0.0)
        return cls(w, n_vertices=nv, name=name, family=family, params=dict(params or {}))

    # -- views ----------------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Vertices of the stored (padded, even) matrix."""
        return int(self.weight.shape[0])

    @property
    def dummy(self) -> int | None:
        """The dummy vertex (``n - 1``) of an odd input, else None."""
        return self.n - 1 if self.n_vertices < self.n else None

    @property
    def n_rows(self) -> int:
        return int(self.n_vertices)

    @property
    def n_cols(self) -> int:
        return int(self.n_vertices)

    @property
    def n_edges(self) -> int:
        """Edges of the real complete graph, ``n_vertices (n_vertices - 1) / 2``."""
        nv = int(self.n_vertices)
        return nv * (nv - 1) // 2

    @property
    def nbytes(self) -> int:
        return int(self.weight.nbytes)

    def describe(self) -> dict[str, Any]:
        """Instance columns: ``n_rows = n_cols`` = real vertices, ``n_edges`` their edges
        (the dummy, if any, is in ``instance_params``)."""
        return {
            "instance": self.name,
            "family": self.family,
            "n_rows": self.n_rows,
            "n_cols": self.n_cols,
            "n_edges": self.n_edges,
        }

    def permuted(self, seed: int) -> CompleteGraph:
        """The real vertices renumbered by a random permutation (the dummy stays last).

        ROMA's answer depends on the numbering (the neighbour initial matching, the scan
        order of Alg. 5); the optimum does not.
        """
        nv = int(self.n_vertices)
        perm = np.arange(self.n)
        perm[:nv] = np.random.default_rng(seed).permutation(nv)
        inv = np.empty_like(perm)
        inv[perm] = np.arange(self.n)
        w = np.ascontiguousarray(self.weight[inv][:, inv])
        params = dict(self.params, rcp=True, rcp_seed=int(seed))
        return CompleteGraph(
            w, n_vertices=nv, name=f"{self.name}_rcp", family=self.family, params=params
        )


@dataclass
class PerfectMatching:
    """An answer, or an initial matching: ``mate[v]`` for every vertex of the padded graph.

    Attributes
    ----------
    mate : ndarray
        Integer array of ``n`` entries.
    converged : bool
        The solver's claim that no 4-cycle flip gains more than ``threshold`` (a ROMA phase
        without flips); :meth:`MWPM.verify` then checks it exhaustively.
    threshold : float or None
        The gain threshold of that claim.
    weight : float or None
        The producer's own weight (initializers: the row's ``objective_init``); the verifier
        never reads it.
    """

    mate: np.ndarray
    converged: bool = False
    threshold: float | None = None
    weight: float | None = None


# ---------------------------------------------------------------------------------------
# The certificate (numba)


@njit(cache=True, nogil=True)
def _check_mate(mate, n):
    """``(code, v, x, y)`` of the first defect of a mate array, or code 0.

    Codes: 1 ``mate[v] = x`` is not a vertex; 2 ``v`` unmatched (-1); 3 ``v`` matched to
    itself; 4 ``x`` is the mate of both ``v`` and ``y`` (``y < v``); 5 ``mate[v] = x`` but
    ``mate[x] = y``.
    """
    first = np.full(n, -1, dtype=np.int64)  # the first vertex naming each vertex its mate
    for v in range(n):
        x = mate[v]
        if x == -1:
            return 2, v, -1, -1
        if x < 0 or x >= n:
            return 1, v, x, -1
        if x == v:
            return 3, v, x, -1
        if first[x] >= 0:
            return 4, v, x, first[x]
        first[x] = v
    for v in range(n):
        x = mate[v]
        if mate[x] != v:
            return 5, v, x, mate[x]
    return 0, -1, -1, -1


@njit(cache=True, nogil=True)
def _weight(w, mate):
    """Float64 sum of ``w[v, mate[v]]`` over ``v < mate[v]``, in vertex order."""
    total = 0.0
    for v in range(mate.shape[0]):
        x = mate[v]
        if v < x:
            total += np.float64(w[v, x])
    return total


@njit(cache=True, parallel=True)
def _flip_scan(w, lo, hi, tol):
    """For every matched edge ``p``: its best flip with a later edge, and how many gain > tol.

    Matched edges are ``(lo[p], hi[p])``, ``lo[p] < hi[p]``, in ascending ``lo``. For a pair
    ``p < q`` with ``u, mu = lo[p], hi[p]`` and ``x, mx = lo[q], hi[q]``: ``cur = w[u, mu] +
    w[x, mx]``, ``w1 = w[u, x] + w[mu, mx]``, ``w2 = w[u, mx] + w[mu, x]`` (float64) and the
    gain is ``max(w1, w2) - cur``. Rows are folded (``t`` with ``m - 1 - t``) to balance the
    triangle. Returns ``(gain, q, count)`` arrays over ``p``.
    """
    m = lo.shape[0]
    best = np.full(m, -np.inf)
    arg = np.full(m, -1, dtype=np.int64)
    cnt = np.zeros(m, dtype=np.int64)
    mw = np.empty(m)
    for p in range(m):
        mw[p] = np.float64(w[lo[p], hi[p]])
    half = (m + 1) // 2
    for t_ in prange(half):
        t = np.int64(t_)
        for r in range(2):
            p = t if r == 0 else m - 1 - t
            if r == 1 and p == t:
                break
            u = lo[p]
            mu = hi[p]
            bg = -np.inf
            bq = -1
            c = 0
            for q in range(p + 1, m):
                x = lo[q]
                mx = hi[q]
                cur = mw[p] + mw[q]
                w1 = np.float64(w[u, x]) + np.float64(w[mu, mx])
                w2 = np.float64(w[u, mx]) + np.float64(w[mu, x])
                g = (w1 if w1 > w2 else w2) - cur
                if g > tol:
                    c += 1
                if g > bg:
                    bg = g
                    bq = q
            best[p] = bg
            arg[p] = bq
            cnt[p] = c
    return best, arg, cnt


@njit(cache=True, parallel=True)
def _row_max(w):
    n = w.shape[0]
    out = np.empty(n, dtype=np.float64)
    for i_ in prange(n):
        i = np.int64(i_)
        best = 0.0
        for j in range(n):
            x = np.float64(w[i, j])
            if x > best:
                best = x
        out[i] = best
    return out


def matching_weight(graph: CompleteGraph, mate: np.ndarray) -> float:
    """The weight of a valid perfect matching, float64 (module docstring, item 2)."""
    return float(_weight(graph.weight, np.asarray(mate, dtype=np.int64)))


def _flip_scan_gpu(w_dev: Any, lo: np.ndarray, hi: np.ndarray, tol: float):
    """:func:`_flip_scan` on the GPU (``kernels/mwpm/mwpm.cu``), on a device copy of the matrix."""
    import cupy as cp

    from matchbench.gpu.kernels import get_module

    n = int(w_dev.shape[0])
    m = int(lo.shape[0])
    d_lo, d_hi = cp.asarray(lo), cp.asarray(hi)
    mw = w_dev.ravel()[d_lo * n + d_hi].astype(cp.float64)
    best = cp.empty(m, dtype=cp.float64)
    arg = cp.empty(m, dtype=cp.int64)
    cnt = cp.empty(m, dtype=cp.uint64)
    if m:
        kernel = get_module("mwpm").get_function("mwpm_flip_scan")
        grid = min(m, 1 << 20)
        kernel((grid,), (256,), (w_dev, d_lo, d_hi, mw, np.int64(m), np.int64(n),
                                 np.float64(tol), best, arg, cnt))
    return best.get(), arg.get(), cnt.get().astype(np.int64)


def _resident_device_matrix(graph: CompleteGraph) -> Any | None:
    """The device copy of the matrix a GPU solver of this process left resident, or None."""
    if graph.n < GPU_CHECK_MIN_N:
        return None
    try:
        from matchbench.gpu.common import resident_matrix

        return resident_matrix(graph)
    except Exception:  # no CuPy or no device: the CPU check
        return None


def best_flip(
    graph: CompleteGraph, mate: np.ndarray, threshold: float = 0.0, device: str = "auto"
) -> dict[str, Any]:
    """The best 4-cycle flip of a valid perfect matching, found exhaustively (item 3).

    ``device``: ``"cpu"`` (numba, parallel), ``"gpu"`` (``kernels/mwpm/mwpm.cu``, the matrix
    uploaded unless resident) or ``"auto"``: the GPU where a GPU solver of this process left
    the matrix on the device and ``n >= GPU_CHECK_MIN_N``, else the CPU (a CPU task never
    touches a GPU that other workers time). Both compute every gain with the same float64
    expression and pick the same pair (the largest gain, ties to the first ``p``, then the
    first ``q``).

    Returns
    -------
    dict
        ``gain`` (float64, ``-inf`` for n = 2), ``u``, ``x`` (the two matched edges are
        ``(u, mate[u])`` and ``(x, mate[x])``, ``u < mate[u]``, ``x < mate[x]``), ``new``
        (the two edges after the flip) and ``improving`` (pairs of matched edges whose best
        flip gains more than ``threshold``).
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"best_flip: device must be 'auto', 'cpu' or 'gpu', not {device!r}")
    mate = np.asarray(mate, dtype=np.int64)
    lo = np.flatnonzero(mate > np.arange(mate.shape[0]))
    hi = mate[lo]
    w_dev = None
    if device == "gpu":
        from matchbench.gpu.common import device_matrix

        w_dev = device_matrix(graph)[0]
    elif device == "auto":
        w_dev = _resident_device_matrix(graph)
    if w_dev is not None:
        best, arg, cnt = _flip_scan_gpu(w_dev, lo, hi, float(threshold))
    else:
        best, arg, cnt = _flip_scan(graph.weight, lo, hi, float(threshold))
    out: dict[str, Any] = {
        "gain": -np.inf,
        "u": -1,
        "x": -1,
        "new": None,
        "improving": int(cnt.sum()),
    }
    if lo.shape[0] < 2:
        return out
    p = int(np.argmax(best))
    q = int(arg[p])
    u, mu, x, mx = (int(v) for v in (lo[p], hi[p], lo[q], hi[q]))
    w = graph.weight
    w1 = float(w[u, x]) + float(w[mu, mx])
    w2 = float(w[u, mx]) + float(w[mu, x])
    new = ((u, x), (mu, mx)) if w1 > w2 else ((u, mx), (mu, x))
    out.update(gain=float(best[p]), u=u, x=x, new=new)
    return out


def gap_to_optimality(weight: float, reference: float | None) -> float:
    """``1 - weight / reference`` (Hovland 2020, Sec. 5.4.4); NaN without a positive reference."""
    if reference is None or not np.isfinite(reference) or reference <= 0:
        return float("nan")
    return 1.0 - float(weight) / float(reference)


# ---------------------------------------------------------------------------------------
# References and bounds (cached per instance object)

_exact_cache: weakref.WeakKeyDictionary[CompleteGraph, float] = weakref.WeakKeyDictionary()
_lsa_cache: weakref.WeakKeyDictionary[CompleteGraph, float] = weakref.WeakKeyDictionary()
_rowmax_cache: weakref.WeakKeyDictionary[CompleteGraph, np.ndarray] = weakref.WeakKeyDictionary()
_dual_cache: weakref.WeakKeyDictionary[CompleteGraph, dict[int, float]] = (
    weakref.WeakKeyDictionary()
)


def exact_matching(graph: CompleteGraph) -> np.ndarray:
    """A maximum weight perfect matching as a mate array, by networkx (no size limit here).

    ``networkx.max_weight_matching(G, maxcardinality=True)`` on the padded graph: every edge
    (weight-0 ones included) is given, so the maximum cardinality is ``n / 2``.
    """
    import networkx as nx

    n = graph.n
    iu, ju = np.triu_indices(n, 1)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_weighted_edges_from(
        zip(iu.tolist(), ju.tolist(), graph.weight[iu, ju].astype(np.float64).tolist(), strict=True)
    )
    mate = np.full(n, -1, dtype=np.int64)
    for a, b in nx.max_weight_matching(g, maxcardinality=True):
        mate[a] = b
        mate[b] = a
    return mate


def exact_optimum(graph: CompleteGraph) -> float | None:
    """The maximum weight of a perfect matching for ``n <= EXACT_MAX_N``, else None (cached).

    Notes
    -----
    ``networkx.max_weight_matching`` (Galil, ACM Computing Surveys 18(1), 1986, after
    Edmonds), as Hovland 2020, Sec. 5.4.4 computes the GTO against Edmonds' algorithm.
    """
    if graph.n > EXACT_MAX_N:
        return None
    got = _exact_cache.get(graph)
    if got is None:
        mate = exact_matching(graph)
        if _check_mate(mate, graph.n)[0]:
            raise RuntimeError(f"{graph.name}: networkx returned no perfect matching")
        got = matching_weight(graph, mate)
        _exact_cache[graph] = got
    return got


def assignment_bound(graph: CompleteGraph) -> float | None:
    """Half the maximum weight assignment of the bipartite double cover (``n <= LSA_MAX_N``).

    The double cover has a row and a column per vertex and weight ``w[i, j]`` on ``(i, j)``,
    ``i != j`` (the diagonal is forbidden: -inf). A perfect matching ``M`` gives the assignment
    ``i -> M[i]`` of weight ``2 w(M)`` (each edge counted from both ends), so the maximum
    assignment is at least twice the optimum and half of it bounds every perfect matching from
    above. It equals the optimum of the fractional perfect-matching LP without the odd-set
    (blossom) constraints, ``max w.x`` s.t. ``x(delta(v)) = 1``, ``x >= 0`` (the symmetrised
    assignment is feasible for it, and conversely). scipy's ``linear_sum_assignment`` on a
    float64 copy; None above the limit. Cached.
    """
    if graph.n > LSA_MAX_N:
        return None
    got = _lsa_cache.get(graph)
    if got is None:
        from scipy.optimize import linear_sum_assignment

        a = graph.weight.astype(np.float64)
        np.fill_diagonal(a, -np.inf)
        r, c = linear_sum_assignment(a, maximize=True)
        got = float(a[r, c].sum()) / 2.0
        _lsa_cache[graph] = got
    return got


def row_max_bound(graph: CompleteGraph) -> float:
    """``sum_v max_u w[v, u] / 2``: each vertex's matched edge weighs at most its heaviest
    edge, and the sum over vertices counts every matched edge twice. O(n^2), cached."""
    rm = _rowmax_cache.get(graph)
    if rm is None:
        rm = _row_max(graph.weight)
        _rowmax_cache[graph] = rm
    return float(rm.sum()) / 2.0


@njit(cache=True, parallel=True)
def _slacks(w, y, d):
    """``d[v] = y[v] - max_{u != v} (w[v, u] - y[u])``: the slack of v's tightest constraint
    ``y[u] + y[v] >= w[u, v]`` (negative where one is violated)."""
    n = w.shape[0]
    for v_ in prange(n):
        v = np.int64(v_)
        best = -np.inf
        for u in range(n):
            if u != v:
                t = np.float64(w[v, u]) - y[u]
                if t > best:
                    best = t
        d[v] = y[v] - best


def dual_bound(graph: CompleteGraph, sweeps: int | None = None) -> float:
    """An upper bound from a feasible dual of the fractional perfect-matching LP (cached).

    The LP ``max sum w_uv x_uv`` s.t. ``x(delta(v)) = 1``, ``x >= 0`` has the dual
    ``min sum_v y_v`` s.t. ``y_u + y_v >= w_uv`` for all ``u != v`` (``y`` free). For a perfect
    matching ``M`` and a feasible ``y``, ``w(M) = sum_{uv in M} w_uv <= sum_{uv in M} (y_u + y_v)
    = sum_v y_v``: every feasible ``y`` bounds every perfect matching. Start: ``y_v = max_u
    w_vu / 2`` (feasible; its sum is :func:`row_max_bound`). Then ``sweeps`` Jacobi steps, each
    one parallel O(n^2) pass: with ``d_v`` v's smallest slack (:func:`_slacks`), every ``y_v``
    drops by ``d_v / 2``; the slack of ``(u, v)`` was at least ``max(d_u, d_v)``, so it stays
    ``>= 0`` and ``y`` stays feasible while the bound only decreases. A last pass raises every
    ``y_v`` by its float rounding deficit, if any (raising ``y`` never breaks a constraint), so
    the bound holds up to the rounding of that one addition. Never above the row-maximum bound;
    within 0.2 % (geometric), 1.5 % (exponential) and 0.01 % (uniform) of the assignment
    bound at n = 2048 with 8 sweeps.
    """
    sweeps = DUAL_SWEEPS if sweeps is None else int(sweeps)
    got = _dual_cache.get(graph, {}).get(sweeps)
    if got is not None:
        return got
    row_max_bound(graph)
    y = _rowmax_cache[graph] / 2.0
    d = np.empty_like(y)
    for _ in range(sweeps):
        _slacks(graph.weight, y, d)
        y -= d / 2.0
    _slacks(graph.weight, y, d)
    y -= np.minimum(d, 0.0)
    got = float(y.sum())
    _dual_cache.setdefault(graph, {})[sweeps] = got
    return got


def max_weight(graph: CompleteGraph) -> float:
    """The largest weight of the matrix (cached with the row maxima)."""
    row_max_bound(graph)
    rm = _rowmax_cache[graph]
    return float(rm.max()) if rm.size else 0.0


def upper_bound(graph: CompleteGraph) -> tuple[float, str]:
    """The tightest upper bound the verifier computes, and which one it is.

    ``(optimum, "exact")`` for ``n <= EXACT_MAX_N``, else the double-cover assignment bound
    for ``n <= LSA_MAX_N`` (``"assignment"``), else the dual bound (``"dual"``, module
    docstring, item 4).
    """
    ref = exact_optimum(graph)
    if ref is not None:
        return ref, "exact"
    lsa = assignment_bound(graph)
    if lsa is not None:
        return lsa, "assignment"
    return dual_bound(graph), "dual"


def _as_mate(graph: CompleteGraph, solution: Any) -> tuple[np.ndarray, bool, float | None] | str:
    """The answer as an int64 mate array and its claim, or why it is not a well-formed answer."""
    n = graph.n
    if isinstance(solution, PerfectMatching):
        mate, converged, threshold = solution.mate, bool(solution.converged), solution.threshold
    elif isinstance(solution, np.ndarray):
        mate, converged, threshold = solution, False, None
    else:
        return f"expected a PerfectMatching or a mate array, got {type(solution).__name__}"
    mate = np.asarray(mate)
    if mate.shape != (n,):
        return f"mate array has shape {mate.shape}, expected ({n},) (the padded vertex count)"
    if mate.dtype.kind not in "iu":
        return f"mate array has dtype {mate.dtype}, expected integers"
    if converged:
        if threshold is None or not np.isfinite(threshold) or threshold < 0:
            return f"claims convergence with gain threshold {threshold!r}; expected a number >= 0"
    return mate.astype(np.int64), converged, None if threshold is None else float(threshold)


class MWPM(Problem):
    """Maximum weight perfect matching on a complete graph; approximations judged by GTO.

    An instance is a :class:`CompleteGraph`, an answer a :class:`PerfectMatching` (or a bare
    mate array, claiming nothing); the objective is its weight. The family's initial matching
    (:meth:`initialize`, used when no ``init=mwpm_*`` config is given) is the neighbour
    matching ``(2i, 2i + 1)`` of Hovland 2020, Sec. 5.5.5.

    Notes
    -----
    Hovland, *Maximum weighted matching on a GPU*, MSc thesis, Bergen 2020: sequential ROMA
    (Alg. 3 and 5) and Parallel ROMA (Alg. 6-9) on complete graphs, after Maue & Sanders,
    *Engineering algorithms for approximate weighted matching*, WEA 2007 (ROMA) and Pettie &
    Sanders 2004 (RAMA).
    """

    name: ClassVar[str] = "mwpm"
    objective: ClassVar[str] = "weight"
    sense: ClassVar[str] = "max"
    exact: ClassVar[bool] = False

    def initialize(self, instance: CompleteGraph) -> PerfectMatching:
        """The neighbour matching, see :func:`matchbench.families.mwpm.init.neighbour_matching`."""
        from matchbench.families.mwpm.init import NeighbourInit

        return NeighbourInit()(instance)

    def initial_objective(self, init: PerfectMatching | None) -> float | None:
        return None if init is None or init.weight is None else float(init.weight)

    def verify(self, instance: CompleteGraph, solution: Any) -> Verification:
        """Certify that ``solution`` is a perfect matching, and locally optimal where it says so.

        Returns
        -------
        Verification
            ``verified`` when the answer is a valid perfect matching of the padded graph,
            weighs no more than the bound, and, if it claims ``converged``, no 4-cycle flip
            gains more than its threshold (plus the tolerance). ``objective`` is the
            recomputed weight (NaN for an invalid answer), ``reference`` the exact optimum
            (``n <= EXACT_MAX_N``), ``bound`` the upper bound of :func:`upper_bound`.
            ``reason`` names the instance ("mwpm answer on 'NAME'") and the defect: the
            vertex unmatched, matched to itself or twice, the non-mutual pair, or the
            improving 4-cycle and its gain.
        """
        nan = float("nan")
        where = f"mwpm answer on {instance.name!r}"
        got = _as_mate(instance, solution)
        if isinstance(got, str):
            return Verification(False, f"{where}: invalid: {got}", nan)
        mate, converged, threshold = got
        n = instance.n
        code, v, x, y = (int(c) for c in _check_mate(mate, n))
        if code:
            why = {
                1: f"mate[{v}] = {x} is not a vertex in [0, {n})",
                2: f"vertex {v} is unmatched (mate -1): not a perfect matching",
                3: f"vertex {v} is matched to itself",
                4: f"vertex {x} is matched twice (the mate of both {y} and {v})",
                5: f"mate[{v}] = {x} but mate[{x}] = {y}",
            }[code]
            return Verification(False, f"{where}: invalid: {why}", nan)
        weight = matching_weight(instance, mate)
        reference = exact_optimum(instance)
        bound, kind = upper_bound(instance)
        if weight > bound * (1.0 + BOUND_RTOL) + BOUND_RTOL:
            return Verification(
                False,
                f"{where}: weighs {weight!r}, above the verifier's {kind} upper bound {bound!r} "
                "(the bound is wrong)",
                weight,
                bound,
                reference,
            )
        if converged:
            tol = float(threshold) + CONVERGENCE_RTOL * max_weight(instance)
            flip = best_flip(instance, mate, tol)
            if flip["gain"] > tol:
                u, xx = flip["u"], flip["x"]
                (a1, b1), (a2, b2) = flip["new"]
                return Verification(
                    False,
                    f"{where}: claims convergence at gain threshold {threshold!r} but is not "
                    f"locally optimal: flipping ({u}, {int(mate[u])}) and ({xx}, {int(mate[xx])}) "
                    f"to ({a1}, {b1}) and ({a2}, {b2}) gains {flip['gain']!r} "
                    f"({flip['improving']} improving pairs of matched edges)",
                    weight,
                    bound,
                    reference,
                )
        return Verification(True, None, weight, bound, reference)
