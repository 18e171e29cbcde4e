"""Complete weighted graphs (the ``mwpm`` family): a file reader and the thesis's generators.

Every function returns a :class:`~matchbench.families.mwpm.problem.CompleteGraph` (float32, symmetric,
zero diagonal, a zero-weight dummy vertex for an odd ``n``).

- :func:`complete_file`: a square float matrix in a ``.npy`` file.
- :func:`complete_uniform`, :func:`complete_exponential`, :func:`complete_geometric`: the three
  weight distributions of Hovland, *Maximum weighted matching on a GPU*, MSc thesis, Bergen
  2020, Sec. 5.1: uniform on [0, 1]; exponential with rate 3.5; Euclidean distances between
  ``n`` uniform points of the unit square.

Generators
----------
Deterministic by seed, whatever the thread count: the uniform and exponential weights of edge
``{i, j}``, ``i < j``, are a function of ``(seed, j (j - 1) / 2 + i)`` alone, the SplitMix64
hash of that counter (Steele, Lea & Flood, *Fast splittable pseudorandom number generators*,
OOPSLA 2014), so every entry is computed independently, in parallel (numba ``prange`` over
rows; each row writes its own contiguous memory and computes the weight of ``{i, j}`` from the
ordered pair, so the matrix is symmetric by construction). The geometric points are drawn
with ``numpy.random.default_rng(seed)``. The graph on the first ``n`` vertices of a larger
instance with the same seed is the instance of size ``n`` (the counter and the point stream do
not depend on ``n``). The row-parallel fill costs about one hash (uniform), one hash and a log
(exponential) or one square root (geometric) per matrix entry.

The generators are tagged ``@dataset("mwpm")`` without the disk cache: reading a matrix
back is slower than making it (n = 8192, two cores: 1.0 s to write the 256 MiB ``.npy``,
1.3 s to read it from the page cache, 0.03 to 0.6 s to generate it), and the cache would
keep ``4 n^2`` bytes per instance on disk (4 GiB at n = 32768). Generated matrices are valid
by construction and skip the constructor's O(n^2) scan (``validate=False``); the tests scan
them.

Sizes: the thesis runs n = 1024 to 90112 (32 GiB of float32). An instance holds ``4 n^2``
bytes (padded to even ``n``); the index ``i * n + j`` passes 2^31 from ``n = 46341``
(:mod:`matchbench.families.mwpm.problem`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit, prange

from matchbench.core.errors import DatasetError
from matchbench.core.paths import missing_file, resolve_path
from matchbench.datasets import dataset, sizes
from matchbench.families.mwpm.problem import CompleteGraph

__all__ = [
    "EXPONENTIAL_RATE",
    "complete_exponential",
    "complete_file",
    "complete_geometric",
    "complete_uniform",
]

#: The exponential distribution's rate in the thesis (Sec. 5.1: "lambda = 3.5, as this gives
#: a max value of x that is close to 1"; mean 1/3.5 = 0.29).
EXPONENTIAL_RATE = 3.5

#: Salts of the generators' streams, so that two distributions with one seed are independent.
_SALT_UNIFORM = np.uint64(0x5BD1E9955BD1E995)
_SALT_EXPONENTIAL = np.uint64(0x27D4EB2F165667C5)


# ---------------------------------------------------------------------------------------
# Counter-based random numbers (numba)


@njit(cache=True, nogil=True, inline="always")
def _splitmix64(z):
    """The SplitMix64 output function of state ``z`` (uint64, wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def _edge_bits(key, i, j):
    """64 random bits of edge ``{i, j}`` (either order) for the stream ``key``."""
    lo = min(i, j)
    hi = max(i, j)
    k = np.uint64(hi) * np.uint64(hi - 1) // np.uint64(2) + np.uint64(lo)
    return _splitmix64(key + (k + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15))


@njit(cache=True, parallel=True)
def _fill_uniform(w, nv, key):
    """``w[i, j] = m / (2^24 - 1)``, ``m`` the top 24 bits of the edge's hash: uniform on the
    2^24 evenly spaced float32 values of [0, 1], both ends included."""
    scale = 1.0 / 16777215.0
    for i_ in prange(nv):
        i = np.int64(i_)
        for j in range(nv):
            if j == i:
                continue
            m = _edge_bits(key, i, j) >> np.uint64(40)
            w[i, j] = np.float32(np.float64(m) * scale)


@njit(cache=True, parallel=True)
def _fill_exponential(w, nv, key, rate):
    """``w[i, j] = -log(v) / rate`` (inverse transform), ``v = (m + 1) 2^-53`` uniform on (0, 1]
    from the top 53 bits ``m`` of the edge's hash; float64, rounded to float32. ``v`` is exact,
    so small weights (``v`` near 1) keep their relative accuracy without ``log1p`` (which
    numba does not vectorise: 7x slower)."""
    scale = 1.0 / 9007199254740992.0  # 2^-53
    for i_ in prange(nv):
        i = np.int64(i_)
        for j in range(nv):
            if j == i:
                continue
            m = _edge_bits(key, i, j) >> np.uint64(11)
            v = np.float64(m + np.uint64(1)) * scale
            w[i, j] = np.float32(-np.log(v) / rate)


@njit(cache=True, parallel=True)
def _fill_geometric(w, pts):
    """``w[i, j]`` = the Euclidean distance of points ``i`` and ``j`` (float64, rounded to
    float32), computed from the ordered pair so that ``w`` is exactly symmetric."""
    nv = pts.shape[0]
    for i_ in prange(nv):
        i = np.int64(i_)
        for j in range(nv):
            if j == i:
                continue
            lo = min(i, j)
            hi = max(i, j)
            dx = pts[lo, 0] - pts[hi, 0]
            dy = pts[lo, 1] - pts[hi, 1]
            w[i, j] = np.float32(np.sqrt(dx * dx + dy * dy))


def _stream_key(seed: int, salt: np.uint64) -> np.uint64:
    """A 64-bit stream key from ``seed``, via ``numpy.random.SeedSequence`` (well mixed)."""
    word = np.random.SeedSequence(seed).generate_state(1, dtype=np.uint64)[0]
    return np.uint64(word ^ salt)


# ---------------------------------------------------------------------------------------
# Generators


def _check_int(value: Any, what: str, where: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise DatasetError(f"{where}: {what} must be an integer >= {low}, not {value!r}")
    return int(value)


def _empty(nv: int) -> np.ndarray:
    """A zeroed float32 matrix for ``nv`` vertices, padded to even (the dummy stays 0)."""
    n = nv + (nv % 2)
    return np.zeros((n, n), dtype=np.float32)


def _graph(w: np.ndarray, nv: int, family: str, params: dict[str, Any]) -> CompleteGraph:
    seed = params["seed"]
    # Valid by construction (symmetric, finite, >= 0, zero diagonal and dummy): the O(n^2)
    # scan is left to the tests (tests/test_mwpm_data.py), not paid at every generation.
    return CompleteGraph(
        w,
        n_vertices=nv,
        name=f"{family}_n{nv}_s{seed}",
        family=family,
        params=params,
        validate=False,
    )


@dataset("mwpm", size_hint=lambda n, **_: sizes.dense(n))
def complete_uniform(n: int, seed: int = 0) -> CompleteGraph:
    """Weights uniform on [0, 1] (Hovland 2020, Sec. 5.1, "random weight graphs").

    Parameters
    ----------
    n : int
        Vertices (``>= 2``); an odd ``n`` gets the dummy vertex.
    seed : int
        Seed (``>= 0``); see the module docstring for the stream.

    Returns
    -------
    CompleteGraph
        Family ``complete_uniform``, name ``complete_uniform_n{n}_s{seed}``; weights on the
        float32 grid ``k / (2^24 - 1)``, mean 0.5.
    """
    where = f"complete_uniform(n={n!r}, seed={seed!r})"
    nv = _check_int(n, "n", where, 2)
    seed = _check_int(seed, "seed", where, 0)
    w = _empty(nv)
    _fill_uniform(w, nv, _stream_key(seed, _SALT_UNIFORM))
    return _graph(w, nv, "complete_uniform", {"n": nv, "seed": seed})


@dataset("mwpm", size_hint=lambda n, **_: sizes.dense(n))
def complete_exponential(n: int, seed: int = 0, rate: float = EXPONENTIAL_RATE) -> CompleteGraph:
    """Exponential weights, density ``rate * exp(-rate x)`` (Hovland 2020, Sec. 5.1, rate 3.5).

    Returns
    -------
    CompleteGraph
        Family ``complete_exponential``, name ``complete_exponential_n{n}_s{seed}`` (with
        ``_r{rate}`` when the rate is not 3.5). Most weights are close to 0 (mean ``1/rate``):
        "similar to a general graph in that many of the edges ... can in practice be ignored".
    """
    where = f"complete_exponential(n={n!r}, seed={seed!r}, rate={rate!r})"
    nv = _check_int(n, "n", where, 2)
    seed = _check_int(seed, "seed", where, 0)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not (0 < rate < np.inf):
        raise DatasetError(f"{where}: rate must be a finite number > 0, not {rate!r}")
    w = _empty(nv)
    _fill_exponential(w, nv, _stream_key(seed, _SALT_EXPONENTIAL), float(rate))
    g = _graph(w, nv, "complete_exponential", {"n": nv, "seed": seed, "rate": float(rate)})
    if float(rate) != EXPONENTIAL_RATE:
        g.name = f"{g.name}_r{float(rate):g}"
    return g


@dataset("mwpm", size_hint=lambda n, **_: sizes.dense(n))
def complete_geometric(n: int, seed: int = 0) -> CompleteGraph:
    """Euclidean distances between ``n`` uniform points of the unit square (Sec. 5.1).

    The points are ``numpy.random.default_rng(seed).random((n, 2))``.

    Returns
    -------
    CompleteGraph
        Family ``complete_geometric``, name ``complete_geometric_n{n}_s{seed}``; weights in
        [0, sqrt 2]. Points far from the centre have many heavy edges (the thesis's "popular"
        vertices, Sec. 5.4.2).
    """
    where = f"complete_geometric(n={n!r}, seed={seed!r})"
    nv = _check_int(n, "n", where, 2)
    seed = _check_int(seed, "seed", where, 0)
    pts = np.random.default_rng(seed).random((nv, 2))
    w = _empty(nv)
    _fill_geometric(w, pts)
    return _graph(w, nv, "complete_geometric", {"n": nv, "seed": seed})


# ---------------------------------------------------------------------------------------
# Files


def _fail(path: Path, msg: str) -> DatasetError:
    return DatasetError(f"complete_file {path}: {msg}")


@dataset("mwpm")
def complete_file(
    path: str | os.PathLike, name: str | None = None, data_dir: str | os.PathLike | None = None
) -> CompleteGraph:
    """A complete graph from a ``.npy`` file holding its square weight matrix.

    Parameters
    ----------
    path : path
        The ``.npy`` file (``numpy.save`` of a 2-D real array). A relative path that does not
        exist is also looked up under ``data_dir``.
    name : str, optional
        Instance name; default the file name without ``.npy``.
    data_dir : path, optional
        Passed by :func:`~matchbench.datasets.load`.

    Returns
    -------
    CompleteGraph
        Family ``complete_file``; ``params`` holds ``path``. The matrix is converted to
        float32 (streamed from a memory map), an odd size gets the dummy vertex, a nonzero
        diagonal is ignored (set to 0, with a warning).

    Raises
    ------
    DatasetError
        Naming the file and the problem: no such file, not a ``.npy`` file or unreadable
        (pickled objects are refused), not 2-D, not square, a non-real dtype, fewer than two
        vertices, a NaN or infinite weight, a negative weight, or an asymmetric pair (naming
        the first entry and its value).
    """
    p = resolve_path(path, data_dir)
    if (why := missing_file(p)) is not None:
        raise _fail(p, why)
    if p.suffix != ".npy":
        raise _fail(p, f"unknown file type {p.suffix!r}: expected a .npy file (numpy.save)")
    try:
        a = np.load(p, mmap_mode="r", allow_pickle=False)
    except Exception as exc:  # not an .npy, truncated, pickled objects
        raise _fail(p, f"cannot read it as a .npy array ({type(exc).__name__}: {exc})") from None
    if not isinstance(a, np.ndarray):
        raise _fail(p, f"holds a {type(a).__name__}, not one array")
    stem = p.name[: -len(".npy")]
    try:
        return CompleteGraph.from_matrix(
            a, name=name or stem, family="complete_file", params={"path": str(p)}
        )
    except DatasetError as exc:
        raise _fail(p, str(exc)) from None
