"""Synthetic graph families, deterministic by seed, sized by ``scale = log2(vertices)``.

Each generator returns a :class:`~matchbench.graphs.bipartite.BipartiteGraph` whose
``name`` follows the DIMACS10 / SuiteSparse instance it imitates (``kron_g500-logn20``,
``delaunay_n20``, ``rgg_n_2_20_s0``) and whose ``params`` hold ``scale``, ``seed`` and the
generator's parameters. An undirected graph on n vertices is the n x n bipartite graph of
its symmetric adjacency matrix (Deveci et al. 2013, Sec. 4, take the DIMACS10 graphs so).

All work is vectorised numpy/scipy over all edges at once; the Kronecker generator also
spreads its edge chunks over threads (numpy's random generators and array operations
release the GIL). Results do not depend on the number of threads.

:func:`rgg_bulk` makes many small :func:`rgg` graphs at once (the bulk hook of the MCM
dataset ``rgg``, for batches), each equal to rgg's own, array for array, with a compiled
kernel (numba, :mod:`matchbench.graphs.rgg_numba`, imported on its first call only).

Geometric families (Delaunay, random geometric) number their points along horizontal
strips (ordered by strip, then by x), so that the original numbering has the spatial
locality that the RCP variant (a random permutation, Deveci et al. 2013, Sec. 4) removes.
The grid and road families are numbered row by row for the same reason; the Kronecker
family is randomly permuted by construction (Graph500).

Every generator is tagged ``@dataset("mcm", disk_cache=True)``, so that
:func:`~matchbench.datasets.load` keeps the graphs it makes on disk across runs. A change
that makes a generator return another graph for the same arguments must bump
:data:`~matchbench.datasets.CACHE_FORMAT`, or runs go on reading the old graphs.
"""

from __future__ import annotations

import inspect
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.sparse as sp

from matchbench.core.errors import DatasetError
from matchbench.core.params import batch_threads, host_cores
from matchbench.graphs.bipartite import INT32_MAX, BipartiteGraph, index_dtype

__all__ = [
    "check_int",
    "delaunay",
    "erdos_renyi",
    "grid",
    "kronecker",
    "rgg",
    "rgg_bulk",
    "road",
    "unit_square_points",
]

# Kronecker edges are drawn in chunks of this many, one random stream each: a constant,
# so that the graph of a seed is the same whatever the thread count.
_KRON_CHUNK = 1 << 20
_MAX_SCALE = 40


def check_int(what: str, value: Any, lo: int, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]`` (``hi`` None: no upper bound), for generator
    arguments.

    >>> check_int("grid: scale", 3, 1)
    3
    >>> check_int("grid: scale", 0, 1, 40)
    Traceback (most recent call last):
    matchbench.core.errors.DatasetError: grid: scale must be [1, 40], not 0

    Raises
    ------
    DatasetError
        Naming ``what``, for a bool, a non-integer or a value out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise DatasetError(f"{what} must be an integer, not {value!r}")
    if value < lo or (hi is not None and value > hi):
        bound = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise DatasetError(f"{what} must be {bound}, not {value}")
    return int(value)


def _from_symmetric_csr(
    a: sp.csr_matrix, *, name: str, family: str, params: dict[str, Any]
) -> BipartiteGraph:
    """A graph from a canonical CSR with a symmetric pattern: both directions are equal."""
    n = a.shape[0]
    idx = index_dtype(n, a.nnz)
    ptr = a.indptr.astype(idx, copy=False)
    ind = a.indices.astype(idx, copy=False)
    # Copies, not views: the two directions must stay independent arrays for callers.
    return BipartiteGraph(
        n_rows=n,
        n_cols=n,
        row_ptr=ptr,
        row_ind=ind,
        col_ptr=ptr.copy(),
        col_ind=ind.copy(),
        name=name,
        family=family,
        params=params,
    )


def _symmetric_graph(
    u: np.ndarray, v: np.ndarray, n: int, *, name: str, family: str, params: dict[str, Any]
) -> BipartiteGraph:
    """The undirected graph of edges (u, v), both directions, without self-loops/duplicates."""
    keep = u != v
    k = int(np.count_nonzero(keep))
    idx = np.int32 if n <= INT32_MAX else np.int64
    # Filled in place: at scale 20+ each temporary array costs seconds of page faults.
    rows = np.empty(2 * k, dtype=idx)
    cols = np.empty(2 * k, dtype=idx)
    np.compress(keep, u, out=rows[:k])
    np.compress(keep, v, out=rows[k:])
    cols[:k] = rows[k:]
    cols[k:] = rows[:k]
    del keep
    # bool data: summing duplicates saturates at True, so no edge can cancel out.
    a = sp.coo_matrix((np.ones(rows.shape[0], dtype=bool), (rows, cols)), shape=(n, n))
    del rows, cols
    a = a.tocsr()
    a.sum_duplicates()
    a.sort_indices()
    return _from_symmetric_csr(a, name=name, family=family, params=params)


def unit_square_points(n: int, seed: int) -> np.ndarray:
    """The ``n`` points of :func:`delaunay` and :func:`rgg`: uniform in the unit square, seeded,
    numbered by :func:`_strip_order` (shared so that weighted variants can measure edges)."""
    points = np.random.default_rng(seed).random((n, 2))
    return points[_strip_order(points)]


def _strip_order(points: np.ndarray) -> np.ndarray:
    """Permutation that numbers points by horizontal strip, then by x (ceil(sqrt n) strips)."""
    key, _ = _strip_key(points[:, 0], points[:, 1], _strips(points.shape[0]))
    # x < 1, so strip + x orders by strip first, then x: one argsort instead of a lexsort.
    return np.argsort(key, kind="stable")


def _strips(n: int) -> int:
    """The strips of :func:`_strip_order` for ``n`` points."""
    return math.isqrt(n - 1) + 1 if n > 1 else 1


def _strip_key(x: np.ndarray, y: np.ndarray, strips: int) -> tuple[np.ndarray, np.ndarray]:
    """``(strip + x, strip)`` of the points ``(x, y)`` (arrays of any one shape): the sort
    key of :func:`_strip_order` and the strip, ``floor(y * strips)``."""
    strip = np.minimum((y * strips).astype(np.int64), strips - 1)
    return strip + x, strip


def kronecker(
    scale: int,
    edge_factor: int = 16,
    seed: int = 1,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
) -> BipartiteGraph:
    """Graph500 Kronecker (R-MAT) graph with ``2**scale`` vertices.

    Parameters
    ----------
    scale : int
        log2 of the vertex count.
    edge_factor : int
        Generated edges per vertex (before symmetrising and removing duplicates and
        self-loops, which leaves fewer; many vertices stay isolated).
    seed : int
    a, b, c : float
        Initiator probabilities of the top-left, top-right and bottom-left quadrants
        (``d = 1 - a - b - c``).

    Returns
    -------
    BipartiteGraph
        Symmetric, no self-loops or duplicate edges; name ``kron_g500-logn{scale}``,
        family ``kron``.

    Notes
    -----
    Graph500 reference generator (``kronecker_generator.m``, also the generator of the
    DIMACS10 ``kron_g500-logn*`` graphs Deveci et al. 2013 use in Table 2): for each of
    the ``scale`` bit levels and for all edges at once, the row bit is set with
    probability ``1 - (a + b)`` and the column bit with probability ``d / (c + d)`` or
    ``b / (a + b)`` as the row bit is set or not; then the vertex labels are randomly
    permuted. The reference's final shuffle of the edge list is skipped: the CSR order
    makes it irrelevant. With ``edge_factor=48`` the edge counts come within 1% of the
    DIMACS10 matrices' nonzeros: 10,140,140 vs 10,228,360 at scale 17, 21,004,246 vs
    21,165,908 at scale 18 (seed 1).
    """
    scale = check_int("kronecker: scale", scale, 1, _MAX_SCALE)
    edge_factor = check_int("kronecker: edge_factor", edge_factor, 1)
    seed = check_int("kronecker: seed", seed, 0)
    a, b, c = float(a), float(b), float(c)
    if min(a, b, c) <= 0 or a + b + c >= 1:
        raise DatasetError(
            f"kronecker: need a, b, c > 0 and a + b + c < 1, got a={a}, b={b}, c={c}"
        )
    n = 1 << scale
    m = edge_factor * n
    ab = a + b
    c_norm = c / (1.0 - ab)
    a_norm = a / ab

    perm_seq, edge_seq = np.random.SeedSequence(seed).spawn(2)
    n_chunks = -(-m // _KRON_CHUNK)
    chunk_seqs = edge_seq.spawn(n_chunks)
    idx = np.int32 if n <= INT32_MAX else np.int64
    u = np.empty(m, dtype=idx)
    v = np.empty(m, dtype=idx)

    def draw(k: int) -> None:
        lo = k * _KRON_CHUNK
        hi = min(m, lo + _KRON_CHUNK)
        rng = np.random.Generator(np.random.PCG64(chunk_seqs[k]))
        ii = np.zeros(hi - lo, dtype=np.int64)
        jj = np.zeros(hi - lo, dtype=np.int64)
        for level in range(scale):
            ii_bit = rng.random(hi - lo) > ab
            jj_bit = rng.random(hi - lo) > np.where(ii_bit, c_norm, a_norm)
            ii += ii_bit.astype(np.int64) << level
            jj += jj_bit.astype(np.int64) << level
        u[lo:hi] = ii
        v[lo:hi] = jj

    with ThreadPoolExecutor(max_workers=min(host_cores(), n_chunks)) as pool:
        list(pool.map(draw, range(n_chunks)))
    perm = np.random.default_rng(perm_seq).permutation(n).astype(idx)
    u = perm[u]
    v = perm[v]
    params = {"scale": scale, "seed": seed, "edge_factor": edge_factor, "a": a, "b": b, "c": c}
    # Graph500's edge factor 16 keeps the plain name; other densities (48 matches the
    # DIMACS10 matrices) say so, so that two different graphs never share a name.
    name = f"kron_g500-logn{scale}" + ("" if edge_factor == 16 else f"-ef{edge_factor:g}")
    return _symmetric_graph(u, v, n, name=name, family="kron", params=params)


def delaunay(scale: int, seed: int = 1) -> BipartiteGraph:
    """Delaunay triangulation of ``2**scale`` uniform random points in the unit square.

    Returns
    -------
    BipartiteGraph
        The triangles' edges, symmetric; average degree just under 6 (``6 - O(sqrt(n)/n)``
        from the hull). Name ``delaunay_n{scale}``, family ``delaunay``.

    Notes
    -----
    As the DIMACS10 ``delaunay_n*`` graphs of Deveci et al. 2013, Table 2. Qhull (through
    ``scipy.spatial.Delaunay``) triangulates; points it leaves out as coincident, which
    uniform random doubles make practically impossible, would be isolated vertices.
    """
    scale = check_int("delaunay: scale", scale, 2, _MAX_SCALE)
    seed = check_int("delaunay: seed", seed, 0)
    from scipy.spatial import Delaunay

    n = 1 << scale
    # Sorted input also makes Qhull's incremental insertion faster (better locality).
    points = unit_square_points(n, seed)
    indptr, indices = Delaunay(points).vertex_neighbor_vertices
    a = sp.csr_matrix((np.ones(indices.shape[0], dtype=bool), indices, indptr), shape=(n, n))
    a.sum_duplicates()
    a.sort_indices()
    params = {"scale": scale, "seed": seed}
    return _from_symmetric_csr(a, name=f"delaunay_n{scale}", family="delaunay", params=params)


def _rgg_args(scale: Any, seed: Any, radius_factor: Any) -> tuple[int, int, float, float]:
    """:func:`rgg`'s arguments checked, and its radius: ``(scale, seed, radius_factor,
    radius)``. One function, so that :func:`rgg_bulk` refuses and computes what rgg does."""
    scale = check_int("rgg: scale", scale, 1, _MAX_SCALE)
    seed = check_int("rgg: seed", seed, 0)
    radius_factor = float(radius_factor)
    if radius_factor <= 0:
        raise DatasetError(f"rgg: radius_factor must be > 0, not {radius_factor}")
    n = 1 << scale
    return scale, seed, radius_factor, radius_factor * math.sqrt(math.log(n) / n)


def _rgg_params(scale: int, seed: int, radius_factor: float, radius: float) -> dict[str, Any]:
    return {"scale": scale, "seed": seed, "radius_factor": radius_factor, "radius": radius}


def rgg(scale: int, seed: int = 1, radius_factor: float = 0.55) -> BipartiteGraph:
    """Random geometric graph of ``2**scale`` uniform random points in the unit square.

    Two points are adjacent when their distance is below
    ``radius_factor * sqrt(ln n / n)``.

    Returns
    -------
    BipartiteGraph
        Symmetric, no self-loops; expected degree about ``(n - 1) * pi * r**2`` less a
        boundary loss. Name ``rgg_n_2_{scale}_s{seed}``, family ``rgg``.

    See Also
    --------
    rgg_bulk : many of these graphs at once, the same graphs.

    Notes
    -----
    As the DIMACS10 ``rgg_n_2_*_s0`` graphs of Deveci et al. 2013, Table 2, whose radius
    is ``0.55 * sqrt(ln n / n)``. Pairs come from ``scipy.spatial.cKDTree.query_pairs``.
    """
    scale, seed, radius_factor, radius = _rgg_args(scale, seed, radius_factor)
    from scipy.spatial import cKDTree

    n = 1 << scale
    points = unit_square_points(n, seed)
    pairs = cKDTree(points).query_pairs(radius, output_type="ndarray")
    params = _rgg_params(scale, seed, radius_factor, radius)
    return _symmetric_graph(
        pairs[:, 0], pairs[:, 1], n, name=f"rgg_n_2_{scale}_s{seed}", family="rgg", params=params
    )


#: The keyword arguments of :func:`rgg` and their defaults (``empty``: required), for
#: :func:`rgg_bulk`'s checks.
_RGG_PARAMETERS = {k: p.default for k, p in inspect.signature(rgg).parameters.items()}

#: Points of one chunk of :func:`rgg_bulk` (consecutive graphs, one call of its kernel,
#: whose output array, about 70 bytes a point, their arrays share); a graph with more is
#: made alone, by :func:`rgg`.
RGG_BULK_POINTS = 1 << 18


def rgg_bulk(kwargs_list: list[dict[str, Any]]) -> list[BipartiteGraph]:
    """:func:`rgg` for each of ``kwargs_list`` (its keyword arguments), many graphs at once.

    The hook ``matchbench_bulk`` of the MCM dataset function ``rgg``: for the thousands
    of small graphs of a batch (``2**8`` to ``2**12`` vertices) it is about ten times
    faster than one call of :func:`rgg` each. Per graph, Python only draws its points
    and makes its object; a compiled kernel
    (:func:`~matchbench.graphs.rgg_numba.rgg_csr_chunk`) numbers the points, finds the
    pairs and writes the CSR of a chunk of consecutive graphs at once: no k-d tree, no
    sort of the edges, no scipy. The first call of a process imports numba and loads the
    kernel from numba's cache (about half a second), or compiles it where there is none
    (seconds).

    Parameters
    ----------
    kwargs_list : list of dict
        One dict of :func:`rgg` keyword arguments (``scale``, optionally ``seed`` and
        ``radius_factor``) per graph.

    Returns
    -------
    list of BipartiteGraph
        In the order of ``kwargs_list``, each equal to ``rgg(**kwargs)``: the same
        ``row_ptr``, ``row_ind``, ``col_ptr`` and ``col_ind`` (values and dtypes; four
        arrays that do not overlap), ``n_rows``, ``n_cols``, ``name``, ``family`` and
        ``params``. The arrays are views of one array per chunk (up to
        :data:`RGG_BULK_POINTS` points of graphs, about 70 bytes a point), which stays in
        memory while any graph of the chunk does.

    Raises
    ------
    DatasetError
        Naming ``rgg``, for an unknown or missing argument or one that :func:`rgg`
        refuses; all are checked before any graph is made.

    Notes
    -----
    Why each graph is rgg's, entry for entry:

    - Points: :func:`unit_square_points`' draw, ``default_rng(seed).random((n, 2))``
      per graph, and its numbering, the stable argsort of :func:`_strip_key` (by strip,
      then ``x``; :func:`_strip_order`), by a counting sort into bins of the key, then
      an insertion sort, which give the same permutation
      (:func:`~matchbench.graphs.rgg_numba.strip_order`).
    - Candidates: each strip's width is cut into bins (two a strip: about half a point
      each), and the bin of a point is ``floor(key * bins)``, from its key as rounded; so
      a run of bins is a range of point numbers. Each point ``p`` is paired with the later
      points of its strip in the bins up to ``x + r``, and with the points of each strip
      above in the bins within the half width its disk reaches there, bounds widened by a
      margin far above their rounding errors (``1e-6 r + 1e-9``; ``1e-16`` relative,
      which a square root near 0 turns into ``1e-8``): every pair within the radius is a
      candidate exactly once, as ``(p, q)`` with ``p < q``, the ``q`` of ``p`` in
      increasing order. That needs each point's bin in its own strip, which a key rounded
      up to the next strip (``x`` within ``1e-14`` of 1) breaks: such a graph is made by
      :func:`rgg` itself.
    - Test: a candidate is kept when ``dx * dx + dy * dy <= radius * radius``, the
      arithmetic of ``cKDTree.query_pairs`` (``sqeuclidean_distance_double``, then
      ``d <= upper_bound`` with ``upper_bound = r * r`` for ``p = 2``, ``eps = 0``),
      rounded alike: numba neither fuses nor reorders the multiply-add, and the sum is
      the same for ``(p, q)`` and ``(q, p)``. The tree also takes whole node pairs
      whose bounding rectangles lie within the radius without a test per point; those
      points are as close in exact arithmetic (the tests compare thousands of graphs).
    - CSR: row ``i`` holds its columns ``j < i`` (the rows whose pairs hold ``i``,
      placed in row order), then its pairs ``(i, j)``: increasing, without repeats, the
      canonical CSR of :func:`_symmetric_graph`, in the dtype of
      :func:`~matchbench.graphs.bipartite.index_dtype` (int32; a graph of more entries
      is made by :func:`rgg`), both directions equal.
    - ``name``, ``family`` and ``params``: from the same checked arguments and radius
      (:func:`_rgg_args`).
    """
    args = [_rgg_bulk_args(kw) for kw in kwargs_list]
    out: list[BipartiteGraph | None] = [None] * len(args)
    chunks: list[list[int]] = []
    points: list[int] = []
    for i, (scale, seed, radius_factor, _) in enumerate(args):
        n = 1 << scale
        if n > RGG_BULK_POINTS:  # a k-d tree costs little per point there
            out[i] = rgg(scale, seed, radius_factor)
            continue
        if not chunks or points[-1] + n > RGG_BULK_POINTS:
            chunks.append([])
            points.append(0)
        chunks[-1].append(i)
        points[-1] += n
    if not chunks:
        return out  # type: ignore[return-value]
    from matchbench.graphs.rgg_numba import rgg_csr_chunk, work_space  # numba: when used

    # One points array and one work space for all chunks: fresh memory costs page faults.
    xy = np.empty((max(points), 2))
    work = work_space(max(points))
    for chunk, n_points in zip(chunks, points, strict=True):
        offsets = np.empty(len(chunk) + 1, dtype=np.int64)
        offsets[0] = at = 0
        for b, i in enumerate(chunk):
            end = at + (1 << args[i][0])
            np.random.default_rng(args[i][1]).random((end - at, 2), out=xy[at:end])  # as rgg
            offsets[b + 1] = at = end
        radii = np.array([args[i][3] for i in chunk], dtype=np.float64)
        arrays, starts, made, work = rgg_csr_chunk(xy[:n_points], offsets, radii, work)
        _rgg_graphs(chunk, args, arrays, starts.tolist(), made.tolist(), out)
    return out  # type: ignore[return-value]


def _rgg_bulk_args(kw: dict[str, Any]) -> tuple[int, int, float, float]:
    """One argument dict of :func:`rgg_bulk` checked as :func:`rgg` checks its call."""
    unknown = sorted(set(kw) - set(_RGG_PARAMETERS))
    if unknown:
        raise DatasetError(f"rgg: unexpected argument(s) {', '.join(map(repr, unknown))}")
    full = {k: kw.get(k, d) for k, d in _RGG_PARAMETERS.items()}
    missing = [k for k, v in full.items() if v is inspect.Parameter.empty]
    if missing:
        raise DatasetError(f"rgg: missing argument(s) {', '.join(map(repr, missing))}")
    return _rgg_args(full["scale"], full["seed"], full["radius_factor"])


def _rgg_graphs(
    chunk: list[int],
    args: list[tuple[int, int, float, float]],
    arrays: np.ndarray,
    starts: list[int],
    ok: list[bool],
    out: list[BipartiteGraph | None],
) -> None:
    """The graphs ``chunk`` (indices into ``args``, their checked arguments, and
    ``out``) into ``out``, from their arrays ``arrays[starts[b]:starts[b + 1]]`` made
    by :func:`~matchbench.graphs.rgg_numba.rgg_csr_chunk` (by :func:`rgg` where not
    ``ok``)."""
    for b, i in enumerate(chunk):
        scale, seed, radius_factor, radius = args[i]
        if not ok[b]:
            out[i] = rgg(scale, seed, radius_factor)
            continue
        n = 1 << scale
        start, end = starts[b], starts[b + 1]
        half = (start + end) >> 1
        out[i] = BipartiteGraph(
            n_rows=n,
            n_cols=n,
            row_ptr=arrays[start : start + n + 1],
            row_ind=arrays[start + n + 1 : half],
            col_ptr=arrays[half : half + n + 1],
            col_ind=arrays[half + n + 1 : end],
            name=f"rgg_n_2_{scale}_s{seed}",
            family="rgg",
            params=_rgg_params(scale, seed, radius_factor, radius),
        )


#: Points of one chunk of :func:`rgg_stack` (the unit of work of a host thread): at most
#: this many, and at least :data:`RGG_STACK_MIN_POINTS` where the stack has them; the
#: chunks a multiple of the threads, so that the threads finish together.
RGG_STACK_POINTS = 1 << 16
RGG_STACK_MIN_POINTS = 1 << 13


#: Each host thread's scratch of :func:`rgg_stack` (points, work space), kept from batch
#: to batch: fresh memory costs a page fault a page, which threads pay one at a time.
_RGG_SCRATCH = threading.local()


def rgg_stack(
    scales: list[Any], seeds: list[Any], radius_factors: list[Any], threads: int | None = None,
    empty: Any = None,
) -> Any:
    """:func:`rgg` for each ``(scales[k], seeds[k], radius_factors[k])``, as one
    :class:`~matchbench.graphs.stack.GraphStack` (a batch's graphs without an object each).

    Graph ``k`` is ``rgg(scales[k], seeds[k], radius_factors[k])`` array for array (its
    four CSR arrays, ``name``, ``family`` and ``params``), made as :func:`rgg_bulk` makes
    it, with two differences: the points are drawn in compiled code
    (:func:`~matchbench.graphs.rgg_numba.draw_points`, NumPy's PCG64 from the seeds' words
    of :func:`~matchbench.core.seeds.seed_words`: no ``Generator`` per graph), and the
    chunks of consecutive graphs (:data:`RGG_STACK_POINTS` points) are made on up to
    ``threads`` host threads (default: :func:`~matchbench.core.params.batch_threads`). A graph that
    :func:`rgg_bulk` leaves to :func:`rgg` (more than :data:`RGG_BULK_POINTS` points, a
    point's key rounded into the next strip) is made by :func:`rgg` here too.

    The graphs are symmetric, so each graph's column CSR is its row CSR: the stack holds
    one copy, which the table names for both (``graph(k)``'s ``col_ptr`` and ``col_ind``
    are its ``row_ptr`` and ``row_ind``). ``empty(size, dtype)`` allocates the chunks'
    buffers (default ``numpy.empty``; pinned host memory where a GPU uploads them).

    Raises
    ------
    DatasetError
        Naming ``rgg``, for arguments :func:`rgg` refuses; all are checked first.
    """
    from matchbench.core.seeds import seed_words
    from matchbench.graphs.rgg_numba import draw_points, rgg_csr_chunk, work_space
    from matchbench.graphs.stack import GraphStack, StackChunk, chunk_of, even_spans, map_chunks

    count = len(scales)
    if len(seeds) != count or len(radius_factors) != count:
        raise ValueError("rgg_stack: scales, seeds and radius_factors differ in length")
    # Each (scale, radius_factor) checked once, with a seed of its own; the seeds checked
    # in bulk where they are plain non-negative ints, else one by one (rgg's message).
    plain = all(type(s) is int and s >= 0 for s in seeds)
    checked: dict[tuple[Any, Any], tuple[int, int, float, float]] = {}
    args = []
    for scale, seed, rf in zip(scales, seeds, radius_factors, strict=True):
        key = (scale, rf)
        a = checked.get(key) if plain and type(scale) is int else None
        if a is None:
            a = _rgg_args(scale, seed, rf)
            if plain and type(scale) is int:
                checked[key] = a
        elif a[1] != seed:
            a = (a[0], seed, a[2], a[3])
        args.append(a)
    sc = np.array([a[0] for a in args], dtype=np.int64)
    n = np.left_shift(1, sc)
    radii = np.array([a[3] for a in args], dtype=np.float64)
    words = seed_words([a[1] for a in args])
    # chunks of consecutive graphs, a large graph alone
    threads = batch_threads() if threads is None else max(1, int(threads))
    total = int(n[n <= RGG_BULK_POINTS].sum())
    rounds = -(-total // (RGG_STACK_POINTS * threads))  # chunks a thread
    n_chunks = max(1, min(rounds * threads, -(-total // RGG_STACK_MIN_POINTS)))
    target = min(RGG_STACK_POINTS, max(RGG_STACK_MIN_POINTS, -(-total // n_chunks)))
    if count and int(n.max()) <= RGG_BULK_POINTS and target * n_chunks >= total:
        spans = even_spans(n, n_chunks)  # chunks of about equal points
    else:  # chunks of up to ``target`` points, each graph over RGG_BULK_POINTS alone
        cuts, points = [0], 0
        for k in range(count):
            if k > cuts[-1] and (points + n[k] > target or n[k] > RGG_BULK_POINTS):
                cuts.append(k)
                points = 0
            points += int(n[k])
            if n[k] > RGG_BULK_POINTS and k + 1 < count:
                cuts.append(k + 1)
                points = 0
        if cuts[-1] != count:
            cuts.append(count)
        spans = list(zip(cuts[:-1], cuts[1:], strict=True))

    alloc = np.empty if empty is None else empty

    def alone(k: int) -> BipartiteGraph:
        return rgg(*args[k][:3])

    def make(span: tuple[int, int]) -> StackChunk:
        lo, hi = span
        if hi - lo == 1 and n[lo] > RGG_BULK_POINTS:
            return chunk_of(lo, [alone(lo)], alloc)
        offsets = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(n[lo:hi], out=offsets[1:])
        points = int(offsets[-1])
        scratch = getattr(_RGG_SCRATCH, "space", None)
        if scratch is None or scratch[0].shape[0] < points:
            scratch = (np.empty((points, 2)), work_space(points))
        xy = scratch[0][:points]
        draw_points(words[lo:hi], offsets, xy)
        out, at, ok, work = rgg_csr_chunk(xy, offsets, radii[lo:hi], scratch[1], copies=1, empty=alloc)
        _RGG_SCRATCH.space = (scratch[0], work)
        nv = n[lo:hi]
        m = (at[1:] - at[:-1]) - (nv + 1)
        table = np.empty((hi - lo, 8), dtype=np.int64)
        table[:, 0] = table[:, 1] = nv
        table[:, 2] = table[:, 5] = at[:-1]
        table[:, 3] = table[:, 6] = at[:-1] + nv + 1
        table[:, 4] = table[:, 7] = m
        if ok.all():
            return StackChunk(lo, out, table)
        graphs = [
            BipartiteGraph(int(nv[q]), int(nv[q]), out[t[2] : t[3]], out[t[3] : t[3] + t[4]],
                           out[t[2] : t[3]], out[t[3] : t[3] + t[4]]) if ok[q] else alone(lo + q)
            for q, t in enumerate(table.tolist())
        ]
        return chunk_of(lo, graphs, alloc)

    chunks = map_chunks(make, spans, threads)
    names = [f"rgg_n_2_{a[0]}_s{a[1]}" for a in args]

    def params(k: int) -> dict[str, Any]:
        return _rgg_params(*args[k])

    return GraphStack(chunks, names, ["rgg"] * count, params)


def _grid_edges(h: int, w: int) -> tuple[np.ndarray, np.ndarray]:
    """4-neighbour edges of an h x w grid numbered row by row: horizontal ones first."""
    ids = np.arange(h * w, dtype=np.int64).reshape(h, w)
    u = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    v = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return u, v


def _grid_shape(scale: int) -> tuple[int, int]:
    return 1 << (scale // 2), 1 << (scale - scale // 2)


def grid(scale: int, seed: int = 1) -> BipartiteGraph:
    """2-D 4-neighbour grid of ``2**(scale // 2)`` x ``2**(scale - scale // 2)`` vertices.

    ``seed`` changes nothing (the grid is fixed); it is kept so that every family takes
    the same arguments. Name ``grid2d_{scale}``, family ``grid``.

    Notes
    -----
    A structured mesh: every maximum matching is perfect when the vertex count is even,
    and augmenting paths are long on the RCP variant (Deveci et al. 2013, Sec. 4).
    """
    scale = check_int("grid: scale", scale, 1, _MAX_SCALE)
    seed = check_int("grid: seed", seed, 0)
    h, w = _grid_shape(scale)
    u, v = _grid_edges(h, w)
    params = {"scale": scale, "seed": seed, "rows": h, "cols": w}
    return _symmetric_graph(u, v, h * w, name=f"grid2d_{scale}", family="grid", params=params)


def road(
    scale: int,
    seed: int = 1,
    remove_fraction: float = 0.35,
    shortcut_fraction: float = 0.02,
) -> BipartiteGraph:
    """A road-network-like planar graph: a thinned grid with a few diagonal shortcuts.

    Start from the grid of :func:`grid`; remove each edge independently with probability
    ``remove_fraction``; give every vertex left isolated back one of its grid edges (road
    networks have no isolated junctions); then add ``round(shortcut_fraction * n)``
    diagonals, each in a distinct grid cell and with a random orientation (one diagonal
    per cell, so the graph stays planar).

    The defaults give average degree about 2.6 and a degree distribution near
    Binomial(4, 0.65): mostly degree 2 and 3, with chains of degree-2 vertices and dead
    ends, as in the SNAP ``roadNet-*`` graphs (average degree 2.5 to 2.8) of Deveci et
    al. 2013, Table 2. Name ``road_{scale}``, family ``road``.
    """
    scale = check_int("road: scale", scale, 2, _MAX_SCALE)
    seed = check_int("road: seed", seed, 0)
    remove_fraction = float(remove_fraction)
    shortcut_fraction = float(shortcut_fraction)
    if not 0 <= remove_fraction < 1 or not 0 <= shortcut_fraction <= 1:
        raise DatasetError(
            "road: need 0 <= remove_fraction < 1 and 0 <= shortcut_fraction <= 1, got "
            f"{remove_fraction}, {shortcut_fraction}"
        )
    h, w = _grid_shape(scale)
    n = h * w
    u, v = _grid_edges(h, w)
    n_horizontal = h * (w - 1)
    rng = np.random.default_rng(seed)
    keep = rng.random(u.shape[0]) >= remove_fraction

    degree = np.bincount(u[keep], minlength=n) + np.bincount(v[keep], minlength=n)
    isolated = np.flatnonzero(degree == 0)
    if isolated.size:
        i, j = np.divmod(isolated, w)
        # Incident grid edges of each isolated vertex: right, left, down, up (-1: none).
        incident = np.stack(
            [
                np.where(j < w - 1, i * (w - 1) + j, -1),
                np.where(j > 0, i * (w - 1) + j - 1, -1),
                np.where(i < h - 1, n_horizontal + i * w + j, -1),
                np.where(i > 0, n_horizontal + (i - 1) * w + j, -1),
            ],
            axis=1,
        )
        score = rng.random(incident.shape)
        score[incident < 0] = -1.0
        keep[incident[np.arange(isolated.size), score.argmax(axis=1)]] = True
    u, v = u[keep], v[keep]

    n_cells = (h - 1) * (w - 1)
    n_shortcuts = min(round(shortcut_fraction * n), n_cells)
    if n_shortcuts:
        cells = rng.choice(n_cells, size=n_shortcuts, replace=False)
        ci, cj = np.divmod(cells, w - 1)
        down_right = rng.random(n_shortcuts) < 0.5
        su = np.where(down_right, ci * w + cj, ci * w + cj + 1)
        sv = np.where(down_right, (ci + 1) * w + cj + 1, (ci + 1) * w + cj)
        u, v = np.concatenate([u, su]), np.concatenate([v, sv])
    params = {
        "scale": scale,
        "seed": seed,
        "remove_fraction": remove_fraction,
        "shortcut_fraction": shortcut_fraction,
        "rows": h,
        "cols": w,
    }
    return _symmetric_graph(u, v, n, name=f"road_{scale}", family="road", params=params)


def erdos_renyi(
    scale: int, avg_degree: float = 8.0, seed: int = 1, aspect: float = 1.0
) -> BipartiteGraph:
    """Random bipartite graph: ``2**scale`` rows, ``round(aspect * 2**scale)`` columns.

    Each of the ``rows x cols`` possible edges is present independently with probability
    ``p = avg_degree / cols`` (so a row has ``avg_degree`` edges on average and a column
    ``avg_degree / aspect``). The edge count is drawn from Binomial(rows * cols, p), then
    that many distinct positions uniformly; isolated vertices are possible.

    Returns
    -------
    BipartiteGraph
        Not symmetric (rows and columns are different vertex sets). Name
        ``er_{scale}_d{avg_degree}`` (``_a{aspect}`` appended when aspect is not 1),
        family ``er``.
    """
    scale = check_int("erdos_renyi: scale", scale, 1, _MAX_SCALE)
    seed = check_int("erdos_renyi: seed", seed, 0)
    avg_degree = float(avg_degree)
    aspect = float(aspect)
    n_rows = 1 << scale
    n_cols = round(aspect * n_rows)
    if n_cols < 1:
        raise DatasetError(f"erdos_renyi: aspect {aspect} leaves no columns")
    p = avg_degree / n_cols
    if not 0 < p <= 1:
        raise DatasetError(
            f"erdos_renyi: avg_degree must be in (0, {n_cols}] (the column count), not {avg_degree}"
        )
    rng = np.random.default_rng(seed)
    total = n_rows * n_cols
    k = int(rng.binomial(total, p))
    positions = rng.choice(total, size=k, replace=False, shuffle=False)
    rows, cols = np.divmod(positions, n_cols)
    idx = np.int32 if max(n_rows, n_cols) <= INT32_MAX else np.int64
    a = sp.coo_matrix(
        (np.ones(k, dtype=bool), (rows.astype(idx), cols.astype(idx))), shape=(n_rows, n_cols)
    )
    name = f"er_{scale}_d{avg_degree:g}" + (f"_a{aspect:g}" if aspect != 1 else "")
    params = {"scale": scale, "seed": seed, "avg_degree": avg_degree, "aspect": aspect}
    return BipartiteGraph.from_scipy(a, name=name, family="er", params=params)
