"""LAP instances: random generators (deterministic by seed) and file loaders.

Every function returns a :class:`~matchbench.families.lap.problem.CostMatrix`.

- :func:`uniform`: integer costs uniform in ``[0, hi]``, ``hi`` one of the three ranges of
  Balas et al. 1991 that Date & Nagi 2016 use (Sec. 6.2): ``n/10``, ``n``, ``10n``.
- :func:`uniform_float`: float costs uniform in ``[0, high)``.
- :func:`geometric`: Euclidean distances between two random point sets in the unit cube.
- :func:`from_file`: ``.npy`` arrays and Matrix Market files, dense (``array``) or sparse
  (``coordinate``, the absent entries set to ``missing_cost``).

The three generators are tagged ``@dataset("lap", disk_cache=True)``, so that
:func:`~matchbench.datasets.load` keeps the matrices they make on disk across runs. A
change that makes a generator return another matrix for the same arguments must bump
:data:`~matchbench.datasets.CACHE_FORMAT`, or runs go on reading the old matrices.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from matchbench.core import limits
from matchbench.core.paths import missing_file
from matchbench.datasets import dataset, sizes
from matchbench.families.lap.problem import CostMatrix, DatasetError

#: Named cost ranges of Date & Nagi 2016, Sec. 6.2 (after Balas et al. 1991).
COST_RANGES = ("n/10", "n", "10n")


def _check_n(n: Any, where: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or int(n) < 1:
        raise DatasetError(f"lap {where}: n must be a positive integer, got {n!r}")
    return int(n)


def cost_high(n: int, cost_range: str | int | float) -> int:
    """The upper end ``hi`` of the integer cost range ``[0, hi]``.

    ``"n/10"`` -> ``n // 10``, ``"n"`` -> ``n``, ``"10n"`` -> ``10 * n``; a number is taken
    as ``hi`` itself.
    """
    if isinstance(cost_range, str):
        key = cost_range.strip().replace(" ", "")
        table = {"n/10": n // 10, "n": n, "10n": 10 * n}
        if key not in table:
            try:
                return cost_high(n, float(key))
            except ValueError:
                raise DatasetError(
                    f"lap uniform: cost_range must be one of {COST_RANGES} or a number, "
                    f"got {cost_range!r}"
                ) from None
        return table[key]
    if isinstance(cost_range, bool) or not isinstance(cost_range, int | float | np.number):
        raise DatasetError(
            f"lap uniform: cost_range must be one of {COST_RANGES} or a number, got {cost_range!r}"
        )
    hi = float(cost_range)
    if not np.isfinite(hi) or hi < 0 or hi != int(hi):
        raise DatasetError(
            f"lap uniform: a numeric cost_range must be a non-negative integer, got {cost_range!r}"
        )
    return int(hi)


def _range_label(cost_range: str | int | float) -> str:
    if isinstance(cost_range, str) and cost_range.strip() in COST_RANGES:
        return {"n/10": "n10th", "n": "n", "10n": "10n"}[cost_range.strip()]
    return f"{cost_range}".replace("/", "_").replace(".", "p")


@dataset("lap", disk_cache=True, size_hint=lambda n, **_: sizes.dense(n))
def uniform(
    n: int, cost_range: str | int | float = "n", seed: int = 1, dtype: str = "int32"
) -> CostMatrix:
    """Integer costs drawn uniformly from ``[0, hi]`` (both ends included).

    Parameters
    ----------
    n : int
        Rows and columns.
    cost_range : {"n/10", "n", "10n"} or int
        ``hi`` as a multiple of ``n`` (see :func:`cost_high`) or as a number.
    seed : int
        Seed of ``numpy.random.default_rng``; the same arguments give the same matrix.
    dtype : {"int32", "int64"}
        Cost dtype; ``hi`` must fit it.

    Notes
    -----
    Date & Nagi 2016, Sec. 6.1 (Table 1: ``[0, n]``) and Sec. 6.2 (Table 3: ``[0, n/10]``,
    ``[0, n]``, ``[0, 10n]``, "a slightly modified experimental setup of Balas et al.").
    """
    n = _check_n(n, "uniform")
    hi = cost_high(n, cost_range)
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise DatasetError(f"lap uniform: dtype must be int32 or int64, got {dtype!r}")
    if hi > np.iinfo(dt).max - 1:
        raise DatasetError(f"lap uniform: cost range [0, {hi}] does not fit {dt}")
    rng = np.random.default_rng(seed)
    costs = rng.integers(0, hi + 1, size=(n, n), dtype=dt)
    name = f"uniform_n{n}_r{_range_label(cost_range)}_s{seed}"
    params = {"n": n, "cost_range": cost_range, "high": hi, "seed": seed, "dtype": str(dt)}
    return CostMatrix(costs, name=name, family="lap_uniform", params=params)


@dataset("lap", disk_cache=True, size_hint=lambda n, **_: sizes.dense(n))
def uniform_float(n: int, seed: int = 1, high: float = 1.0, dtype: str = "float64") -> CostMatrix:
    """Float costs drawn uniformly from ``[0, high)`` (``dtype`` float32 or float64)."""
    n = _check_n(n, "uniform_float")
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise DatasetError(f"lap uniform_float: dtype must be float32 or float64, got {dtype!r}")
    if not np.isfinite(high) or high <= 0:
        raise DatasetError(f"lap uniform_float: high must be positive and finite, got {high!r}")
    rng = np.random.default_rng(seed)
    costs = (rng.random((n, n)) * float(high)).astype(dt)
    name = f"uniform_float_n{n}_s{seed}"
    params = {"n": n, "seed": seed, "high": float(high), "dtype": str(dt)}
    return CostMatrix(costs, name=name, family="lap_uniform_float", params=params)


@dataset("lap", disk_cache=True, size_hint=lambda n, **_: sizes.dense(n))
def geometric(n: int, seed: int = 1, dim: int = 2) -> CostMatrix:
    """Euclidean distances between ``n`` random points (rows) and ``n`` others (columns).

    Both point sets are uniform in the unit cube ``[0, 1)^dim``; float64 costs.
    """
    from scipy.spatial.distance import cdist

    n = _check_n(n, "geometric")
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
        raise DatasetError(f"lap geometric: dim must be a positive integer, got {dim!r}")
    rng = np.random.default_rng(seed)
    a = rng.random((n, int(dim)))
    b = rng.random((n, int(dim)))
    costs = cdist(a, b)
    name = f"geometric_n{n}_d{dim}_s{seed}"
    params = {"n": n, "seed": seed, "dim": int(dim)}
    return CostMatrix(costs, name=name, family="lap_geometric", params=params)


@dataset("lap")
def from_file(
    path: str | Path, missing_cost: float | int | None = None, pad: bool = False
) -> CostMatrix:
    """Load a cost matrix from ``.npy`` or Matrix Market (``.mtx``).

    Parameters
    ----------
    path : str or Path
        ``.npy`` (a 2-D array) or ``.mtx``: ``array`` format (dense) or ``coordinate``
        format (sparse, read with fast_matrix_market).
    missing_cost : number, optional
        The cost of the entries a sparse file leaves out (a large number forbids those
        pairs in effect); required for coordinate files.
    pad : bool
        Pad a rectangular matrix to a square one with zero-cost dummies (see
        :func:`~matchbench.families.lap.problem.validate_costs`).

    Raises
    ------
    DatasetError
        For a missing file, an unknown suffix, a sparse file without ``missing_cost``,
        duplicate sparse entries, pattern-only files, and every bad matrix that
        :class:`~matchbench.families.lap.problem.CostMatrix` rejects.
    """
    p = Path(path)
    name = p.name
    for suffix in (".npy", ".mtx"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if (why := missing_file(p)) is not None:
        raise DatasetError(f"lap instance {name!r}: {str(p)!r} {why}")
    params: dict[str, Any] = {"path": str(p), "missing_cost": missing_cost, "pad": bool(pad)}
    if p.suffix == ".npy":
        try:
            costs = np.load(p, allow_pickle=False)
        except (ValueError, EOFError, OSError) as exc:
            raise DatasetError(
                f"lap instance {name!r}: cannot read {p}: {exc or type(exc).__name__}"
            ) from None
    elif p.suffix == ".mtx":
        costs = _read_mtx(p, name, missing_cost)
    else:
        raise DatasetError(
            f"lap instance {name!r}: unknown file type {p.suffix!r} (expected .npy or .mtx)"
        )
    return CostMatrix.from_array(costs, name=name, family="lap_file", params=params, pad=pad)


def _read_mtx(p: Path, name: str, missing_cost: float | int | None) -> np.ndarray:
    import fast_matrix_market as fmm

    try:
        header = fmm.read_header(str(p))
    except Exception as exc:
        raise DatasetError(
            f"lap instance {name!r}: cannot read Matrix Market header of {p}: {exc}"
        ) from None
    if header.field == "pattern":
        raise DatasetError(f"lap instance {name!r}: {p} is a pattern file (no costs)")
    if header.field == "complex":
        raise DatasetError(f"lap instance {name!r}: {p} has complex entries; costs must be real")
    rows, cols = int(header.nrows), int(header.ncols)
    what = f"lap instance {name!r}:"
    if header.format == "array":
        # every entry is in the file: at least "0\n" each
        limits.check_entries(rows * cols, p, what, min_bytes=2)
        return _mmread(p, name, lambda: np.asarray(fmm.mmread(str(p))))
    limits.check_entries(int(header.nnz), p, what)
    limits.check_fill(rows * cols, int(header.nnz), p, what)
    limits.check_allocation(
        rows * cols * 8, p, what, f"the dense {rows} x {cols} cost matrix of this sparse file"
    )
    if missing_cost is None:
        raise DatasetError(
            f"lap instance {name!r}: {p} is a sparse (coordinate) Matrix "
            "Market file; give missing_cost, the cost of the absent entries"
        )
    # read_coo mirrors symmetric and skew-symmetric files into full coordinates.
    (vals, (rows, cols)), shape = _mmread(p, name, lambda: fmm.read_coo(str(p)))
    key = rows.astype(np.int64) * shape[1] + cols
    if np.unique(key).size != key.size:
        raise DatasetError(f"lap instance {name!r}: {p} lists some entries more than once")
    if vals.dtype.kind in "iu" and float(missing_cost) == int(missing_cost):
        lo = min(int(vals.min(initial=0)), int(missing_cost))
        hi = max(int(vals.max(initial=0)), int(missing_cost))
        i32 = np.iinfo(np.int32)
        dtype = np.dtype(np.int32) if i32.min <= lo and hi <= i32.max else np.dtype(np.int64)
        missing_cost = int(missing_cost)
    else:
        dtype = np.dtype(np.float64)
    dense = np.full(shape, missing_cost, dtype=dtype)
    dense[rows, cols] = vals
    return dense


def _mmread(p: Path, name: str, read: Any) -> Any:
    """``read()``, with fast_matrix_market's errors (cut files, bad numbers) naming the file."""
    try:
        return read()
    except (ValueError, OverflowError, RuntimeError, OSError, EOFError) as exc:
        raise DatasetError(
            f"lap instance {name!r}: cannot read {p}: {exc or type(exc).__name__}"
        ) from None
