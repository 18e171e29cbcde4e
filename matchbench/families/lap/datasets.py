"""LAP instances: random generators (deterministic by seed) and file loaders.

Every function returns a :class:`~matchbench.families.lap.problem.CostMatrix`.

- :func:`uniform`: integer costs uniform in ``[0, hi]``, ``hi`` one of the three ranges of
  Balas et al. 1991 that Date & Nagi 2016 use (Sec. 6.2): ``n/10``, ``n``, ``10n``.
- :func:`uniform_float`: float costs uniform in ``[0, high)``.
- :func:`geometric`: Euclidean distances between two random point sets in the unit cube.
- :func:`from_file`: ``.npy`` arrays and Matrix Market files, dense (``array``) or sparse
  (``coordinate``, the absent entries set to ``missing_cost``).
- :func:`stack`: one instance of a bulk file, a ``.npy`` stack of shape ``(B, n, m)`` (or a
  folder of single-matrix ``.npy`` files), memory-mapped and checked before any read.

Bulk generation (``run.batch``): :func:`uniform` and :func:`uniform_float` carry
``matchbench_bulk``, a function that makes many instances of the generator at once, each
bit-identical to the generator's own instance for its seed (one ``default_rng(seed)``
stream each), into one ``(B, n, n)`` array; the runner calls it for the instances of a
batch instead of loading them one by one (and instead of the disk cache: for matrices
this small, generating is faster than reading a file back). :func:`stack` carries one
that maps its file once for all the instances of a batch.

The three generators are tagged ``@dataset("lap", disk_cache=True)``, so that
:func:`~matchbench.datasets.load` keeps the matrices they make on disk across runs. A
change that makes a generator return another matrix for the same arguments must bump
:data:`~matchbench.datasets.CACHE_FORMAT`, or runs go on reading the old matrices.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from matchbench.core import limits
from matchbench.core.canonical import to_json_each
from matchbench.core.npy import read_header
from matchbench.core.paths import missing_file
from matchbench.core.stack import InstanceStack
from matchbench.datasets import dataset, sizes
from matchbench.families.lap.problem import (
    CostMatrix,
    DatasetError,
    DeviceCostMatrix,
    validate_costs,
)

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


def _trusted(costs: np.ndarray, name: str, family: str, params: dict[str, Any]) -> CostMatrix:
    """A :class:`CostMatrix` over ``costs`` without checking it again: for the instances of
    a bulk generator, whose whole stack was made valid by construction (a square,
    C-contiguous block of one of the cost dtypes, in range)."""
    inst = CostMatrix.__new__(CostMatrix)
    inst.costs, inst.name, inst.family, inst.params = costs, name, family, params
    return inst


#: Bytes of a bulk group above which its matrices are drawn by several threads (NumPy's
#: generators fill arrays without the GIL; each instance keeps its own ``default_rng``),
#: where each matrix has at least :data:`BULK_THREAD_MATRIX_BYTES`: smaller ones spend
#: their time seeding, under the GIL, and threads made 2,000 LAPs of n = 64 slower on an
#: H100's host (125 against 54 us each) while n = 512 went from 1,268 to 219 us.
BULK_THREAD_BYTES = 4 << 20
BULK_THREAD_MATRIX_BYTES = 64 << 10


def bulk_threads() -> int:
    """Threads that draw a large bulk group: the process's CPUs, at most 8."""
    import os

    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(8, cpus))


def _bulk(
    make_one: Any, fill: Any, kwargs_list: list[dict[str, Any]], gpu_draw: Any = None
) -> list[CostMatrix]:
    """Instances of a generator for each of ``kwargs_list`` (its keyword arguments).

    Instances of equal shape and dtype share one ``(B, n, n)`` array, filled by
    ``fill(stack, i, **kwargs)``; each instance is a view of its block, in the order of
    ``kwargs_list`` (consecutive blocks: :func:`~matchbench.families.lap.problem.stacked`
    gives the stack back without a copy). ``make_one`` (the generator, on its first
    arguments) checks the arguments and gives the name, family and params of an instance,
    whose matrix the stack's block replaces. A group of more than
    :data:`BULK_THREAD_BYTES` (of matrices of :data:`BULK_THREAD_MATRIX_BYTES` or more) is
    filled by :func:`bulk_threads` threads, each block by the same call as alone.
    ``gpu_draw(kwargs, proto)``, where given, may draw a whole group on the GPU instead:
    it returns the group's ``(B, n, n)`` device stack, whose blocks become the instances
    (:class:`~matchbench.families.lap.problem.DeviceCostMatrix`: solved and certified
    there, copied to the host only if something reads ``costs``), or None where it does
    not draw that group (the host fills it).
    """
    out: list[CostMatrix | None] = [None] * len(kwargs_list)
    groups: dict[tuple[Any, ...], list[int]] = {}
    protos: dict[tuple[Any, ...], CostMatrix] = {}
    for i, kw in enumerate(kwargs_list):
        key = tuple(sorted((k, repr(v)) for k, v in kw.items() if k != "seed"))
        if key not in protos:
            protos[key] = make_one(**kw)  # checks the arguments once per group
        groups.setdefault(key, []).append(i)
    for key, members in groups.items():
        proto = protos[key]
        n, dt = proto.n, proto.costs.dtype
        seed0 = proto.params["seed"]
        stem = proto.name[: -len(f"_s{seed0}")]
        stack = gpu_draw([kwargs_list[i] for i in members], proto) if gpu_draw is not None else None
        if stack is not None:
            for b, i in enumerate(members):
                seed = kwargs_list[i].get("seed", 1)
                out[i] = DeviceCostMatrix(stack, b, f"{stem}_s{seed}", proto.family, dict(proto.params, seed=seed))
            continue
        block = np.empty((len(members), n, n), dtype=dt)

        def draw(
            lo: int, hi: int, members: list[int] = members, block: np.ndarray = block, name: str = proto.name
        ) -> None:
            for b in range(lo, hi):
                fill(block, b, **kwargs_list[members[b]])
                if block.dtype.kind == "f":  # a float32 overflow is refused as the generator refuses it
                    validate_costs(block[b], name)

        large = block.nbytes > BULK_THREAD_BYTES and block[0].nbytes >= BULK_THREAD_MATRIX_BYTES
        threads = min(bulk_threads(), len(members)) if large else 1
        if threads > 1:
            from concurrent.futures import ThreadPoolExecutor

            cuts = np.linspace(0, len(members), threads + 1).astype(int)
            with ThreadPoolExecutor(threads) as pool:
                for done in [pool.submit(draw, int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]:
                    done.result()  # the first error of a block, as alone
        else:
            draw(0, len(members))
        for b, i in enumerate(members):
            seed = kwargs_list[i].get("seed", 1)
            params = dict(proto.params, seed=seed)
            out[i] = _trusted(block[b], f"{stem}_s{seed}", proto.family, params)
    return out  # type: ignore[return-value]


def _fill_uniform(
    block: np.ndarray,
    b: int,
    n: int,
    cost_range: str | int | float = "n",
    seed: int = 1,
    dtype: str = "int32",
) -> None:
    hi = cost_high(int(n), cost_range)
    block[b] = np.random.default_rng(seed).integers(
        0, hi + 1, size=(int(n), int(n)), dtype=block.dtype
    )


#: Bytes of a group of int32 matrices from which :func:`uniform_bulk` draws them on the GPU
#: (``device="gpu"``).
GPU_DRAW_BYTES = 1 << 20


def _gpu_uniform(kwargs: list[dict[str, Any]], proto: CostMatrix) -> Any | None:
    """A group of :func:`uniform` int32 matrices drawn on the GPU, the device stack
    (:func:`~matchbench.families.lap.draw_gpu.draw_uniform_int32_device`); None where it
    does not apply (another dtype, a small group, no usable GPU, a seed outside
    [0, 2**64)) or the GPU fails: the host draws the group then, the same values."""
    hi = int(proto.params["high"])
    seeds = [kw.get("seed", 1) for kw in kwargs]
    if proto.costs.dtype != np.int32 or len(seeds) * proto.costs.nbytes < GPU_DRAW_BYTES or not 1 <= hi <= 2**31 - 2:
        return None
    column = np.asarray(seeds) if seeds else np.zeros(0, dtype=np.int64)
    plain = column.dtype.kind in "iu" and (column.dtype.kind == "u" or int(column.min()) >= 0)
    if not plain and not all(
        isinstance(s, int | np.integer) and not isinstance(s, bool) and 0 <= s < 2**64 for s in seeds
    ):
        return None
    try:
        from matchbench.families.lap.draw_gpu import draw_uniform_int32_device

        return draw_uniform_int32_device([int(s) for s in seeds], proto.n, hi)
    except Exception:  # no CuPy or device, out of memory: NumPy draws the same values
        return None


def uniform_bulk(kwargs_list: list[dict[str, Any]], device: str | None = None) -> list[CostMatrix]:
    """:func:`uniform` for each of ``kwargs_list`` at once (``uniform.matchbench_bulk``).

    Each instance is bit-identical to ``uniform(**kwargs)`` (tested): the same
    ``numpy.random.default_rng(seed)`` stream, drawn straight into its block of one
    ``(B, n, n)`` array, without the per-instance checks and objects of the one-by-one
    path (the arguments are checked once per group of equal ``n``, range and dtype).
    ``device="gpu"`` (a GPU worker's batch) draws groups of int32 matrices of at least
    :data:`GPU_DRAW_BYTES` on the GPU from the same seeds, value for value NumPy's
    (:mod:`~matchbench.families.lap.draw_gpu`), and leaves them there: those instances are
    :class:`~matchbench.families.lap.problem.DeviceCostMatrix` blocks of the stack.
    """
    return _bulk(uniform, _fill_uniform, kwargs_list, _gpu_uniform if device == "gpu" else None)


uniform.matchbench_bulk = uniform_bulk  # type: ignore[attr-defined]


def _seed_column(template: dict[str, Any], varying: dict[str, list[Any]], count: int) -> list[Any] | None:
    """The seeds of a stack's instances where only the seed varies; None otherwise."""
    if set(varying) - {"seed"}:
        return None
    seeds = varying.get("seed", [template.get("seed", 1)] * count)
    return seeds if len(seeds) == count else None


def uniform_stack(
    template: dict[str, Any], varying: dict[str, list[Any]], count: int, device: str | None = None
) -> InstanceStack | None:
    """:func:`uniform` for many seeds as one :class:`~matchbench.core.stack.InstanceStack`
    (``uniform.matchbench_stack``): a ``(B, n, n)`` stack whose block ``k`` is
    ``uniform(**template, seed=seeds[k])`` value for value, drawn on the GPU where
    :func:`uniform_bulk` draws it there (``device="gpu"``), else on the host; with the
    instances' result columns (the names and parameters of the one-by-one instances).
    None where an argument other than the seed varies."""
    seeds = _seed_column(template, varying, count)
    if seeds is None or count < 1:
        return None
    kwargs = {k: v for k, v in template.items() if k != "seed"}
    proto = uniform(**kwargs, seed=seeds[0])  # checks the arguments, as the first instance would
    seed0 = proto.params["seed"]
    stem = proto.name[: -len(f"_s{seed0}")]
    data = None
    if device == "gpu":
        data = _gpu_uniform([{"seed": s} for s in seeds], proto)
    if data is None:
        if not all(isinstance(s, int | np.integer) and not isinstance(s, bool) for s in seeds):
            return None  # other seeds: the one-by-one instances say what is wrong with them
        data = np.empty((count, proto.n, proto.n), dtype=proto.costs.dtype)
        for b, seed in enumerate(seeds):
            _fill_uniform(data, b, **kwargs, seed=seed)
    names = [f"{stem}_s{s}" for s in seeds]
    family = proto.family
    columns = dict(proto.describe())
    columns.update(
        instance=names,
        instance_params=to_json_each(proto.params, "seed", seeds),
        rcp=False,
        instance_bytes=int(proto.nbytes),
    )

    def instance(k: int) -> CostMatrix:
        params = dict(proto.params, seed=seeds[k])
        if isinstance(data, np.ndarray):
            return _trusted(data[k], names[k], family, params)
        return DeviceCostMatrix(data, k, names[k], family, params)

    return InstanceStack("lap", data, count, columns, instance)


uniform.matchbench_stack = uniform_stack  # type: ignore[attr-defined]


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


def _fill_uniform_float(
    block: np.ndarray, b: int, n: int, seed: int = 1, high: float = 1.0, dtype: str = "float64"
) -> None:
    block[b] = (np.random.default_rng(seed).random((int(n), int(n))) * float(high)).astype(
        block.dtype
    )


def uniform_float_bulk(kwargs_list: list[dict[str, Any]]) -> list[CostMatrix]:
    """:func:`uniform_float` for each of ``kwargs_list`` at once (see :func:`uniform_bulk`)."""
    return _bulk(uniform_float, _fill_uniform_float, kwargs_list)


uniform_float.matchbench_bulk = uniform_float_bulk  # type: ignore[attr-defined]


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


# --------------------------------------------------------------------------- bulk files


def _stack_header(p: Path, name: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """(shape, dtype, data offset) of the ``.npy`` file ``p``, checked against the file.

    Reads only the header (never unpickles: an object dtype is refused by name), and
    refuses a header that is too long, a shape that is not 3-D (or 2-D: one matrix), a
    dtype that is not a real number, and a declared size that the file does not hold
    (a truncated file, or a huge shape in a tiny file), before anything is mapped.
    """
    what = f"lap stack {name!r}:"
    size = p.stat().st_size
    try:
        with open(p, "rb") as f:
            shape, fortran, dtype, offset = read_header(f)
    except (ValueError, EOFError, OSError, SyntaxError) as exc:
        raise DatasetError(
            f"{what} {p} is not a readable .npy file ({exc or type(exc).__name__})"
        ) from None
    if dtype.hasobject:
        raise DatasetError(
            f"{what} {p} holds Python objects (dtype {dtype}); costs must be numbers"
        )
    if dtype.kind not in "iuf" or (dtype.kind == "f" and dtype.itemsize > 8):
        raise DatasetError(f"{what} {p} has dtype {dtype}; costs must be real integers or floats")
    if len(shape) not in (2, 3):
        raise DatasetError(f"{what} {p} has shape {shape}; a stack is (B, n, m), one matrix (n, m)")
    if fortran:
        raise DatasetError(f"{what} {p} is Fortran-ordered; save the stack in C order")
    if any(d < 1 for d in shape):
        raise DatasetError(f"{what} {p} has an empty shape {shape}")
    need = offset + int(np.prod(shape, dtype=object)) * dtype.itemsize
    if need > size:
        raise DatasetError(
            f"{what} {p} declares shape {shape} of {dtype} ({need:,} bytes with its header) but "
            f"holds {size:,} bytes: a truncated file or a bad header"
        )
    return tuple(int(d) for d in shape), np.dtype(dtype), offset


def _stack_files(p: Path, name: str) -> list[Path]:
    files = sorted(f for f in p.iterdir() if f.suffix == ".npy" and not f.name.startswith("."))
    if not files:
        raise DatasetError(f"lap stack {name!r}: the folder {p} holds no .npy files")
    return files


def _stack_name(p: Path) -> str:
    return p.name[: -len(".npy")] if p.name.endswith(".npy") else p.name


def _stack_map(p: Path, name: str) -> np.ndarray:
    """The checked stack of ``p``, memory-mapped read-only, as (B, n, m)."""
    shape, dtype, offset = _stack_header(p, name)
    limits.check_allocation(
        int(np.prod(shape[-2:])) * dtype.itemsize,
        p,
        f"lap stack {name!r}:",
        "one cost matrix of this stack",
    )
    arr = np.memmap(p, dtype=dtype, mode="r", offset=offset, shape=shape, order="C")
    return arr if arr.ndim == 3 else arr[None]


def _stack_item(arr: np.ndarray, index: int, p: Path, name: str, pad: bool) -> CostMatrix:
    if not 0 <= index < arr.shape[0]:
        raise DatasetError(
            f"lap stack {name!r}: index {index} is outside the {arr.shape[0]} matrices of {p}"
        )
    params = {"path": str(p), "index": int(index), "pad": bool(pad)}
    item = f"{name}_i{index}"
    # a copy of one block: the instance outlives the mapping, and validate_costs names NaN/inf
    return CostMatrix.from_array(
        np.array(arr[index]), name=item, family="lap_stack", params=params, pad=pad
    )


def _stack_bytes(path: str | Path, seed: int = 0, pad: bool = False, **_: Any) -> int | None:
    """The bytes of one matrix of the stack ``path`` (its header's), for the sweep's
    size order and ``run.batch`` byte limits; None for a folder or a bad file."""
    return _stack_bytes_cached(str(path), bool(pad))


@functools.lru_cache(maxsize=64)
def _stack_bytes_cached(path: str, pad: bool) -> int | None:
    p = Path(path)
    if not p.is_file():
        return None
    try:
        shape, dtype, _offset = _stack_header(p, _stack_name(p))
    except DatasetError:
        return None
    n, m = shape[-2:]
    return (max(n, m) ** 2 if pad else n * m) * max(dtype.itemsize, 4)


@dataset("lap", size_hint=_stack_bytes)
def stack(path: str | Path, seed: int = 0, pad: bool = False) -> CostMatrix:
    """Matrix ``seed`` (its index, from 0) of a bulk file: a ``.npy`` stack ``(B, n, m)``.

    Parameters
    ----------
    path : str or Path
        A ``.npy`` file of shape ``(B, n, m)`` (one matrix per leading index; ``(n, m)``
        is one matrix), or a folder of ``.npy`` files of one matrix each (in name order).
    seed : int
        The index of the matrix. A ``many`` set gives instance ``i`` the set's seed
        ``+ i``: ``conf/dataset/lap_stack.yaml`` (``seed: 0``, ``count: B``) names every
        matrix of the file once.
    pad : bool
        Pad rectangular matrices with zero-cost dummies (see :func:`from_file`).

    Raises
    ------
    DatasetError
        Naming the file: missing, not ``.npy``, a header over numpy's size limit, object
        (pickled) or non-real dtypes, an ndim other than 2 or 3, a declared size the file
        does not hold (truncated, or a huge shape in a tiny file), a matrix over the input
        limit (:mod:`matchbench.core.limits`), an index outside the stack, and every bad
        matrix :class:`~matchbench.families.lap.problem.CostMatrix` rejects (NaN, inf).

    Notes
    -----
    The file is mapped with ``numpy.memmap`` after its header is checked (never
    ``allow_pickle``); only the blocks asked for are read.
    """
    p = Path(path)
    name = _stack_name(p)
    if (why := missing_file(p)) is not None and not p.is_dir():
        raise DatasetError(f"lap stack {name!r}: {str(p)!r} {why}")
    index = _check_index(seed, name)
    if p.is_dir():
        files = _stack_files(p, name)
        if index >= len(files):
            raise DatasetError(
                f"lap stack {name!r}: index {index} is outside the {len(files)} files of {p}"
            )
        return _stack_item(_stack_map(files[index], files[index].name), 0, files[index], name, pad)
    if p.suffix != ".npy":
        raise DatasetError(f"lap stack {name!r}: {p} is not a .npy file")
    return _stack_item(_stack_map(p, name), index, p, name, pad)


def _check_index(seed: Any, name: str) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or int(seed) < 0:
        raise DatasetError(
            f"lap stack {name!r}: the index (seed) must be an integer >= 0, got {seed!r}"
        )
    return int(seed)


def stack_bulk(kwargs_list: list[dict[str, Any]], device: str | None = None) -> list[CostMatrix]:
    """:func:`stack` for each of ``kwargs_list``, mapping each file once (``stack.matchbench_bulk``).

    ``device="gpu"`` (a GPU worker's batch): the int32 matrices of a square ``.npy`` stack,
    at least :data:`GPU_DRAW_BYTES` of them from one file, are read once and uploaded as
    one device stack (:func:`_device_stack`); the instances are its blocks
    (:class:`~matchbench.families.lap.problem.DeviceCostMatrix`), solved and certified
    there without another upload. int32 costs need no check of their
    values (every int32 is a valid cost), so the instances are those of :func:`stack`.
    """
    maps: dict[str, np.ndarray] = {}
    out: list[CostMatrix | None] = [None] * len(kwargs_list)
    on_gpu: dict[str, list[int]] = {}
    for i, kw in enumerate(kwargs_list):
        p = Path(kw["path"])
        if p.is_dir() or p.suffix != ".npy":
            out[i] = stack(**kw)
            continue
        name = _stack_name(p)
        if str(p) not in maps:
            maps[str(p)] = _stack_map(p, name)
        arr = maps[str(p)]
        index = _check_index(kw.get("seed", 0), name)
        if device == "gpu" and arr.dtype == np.dtype(np.int32) and arr.shape[1] == arr.shape[2] and index < arr.shape[0]:
            on_gpu.setdefault(str(p), []).append(i)
            continue
        out[i] = _stack_item(arr, index, p, name, bool(kw.get("pad", False)))
    for path, members in on_gpu.items():
        arr, p = maps[path], Path(path)
        name = _stack_name(p)
        idx = np.array([int(kwargs_list[i].get("seed", 0)) for i in members], dtype=np.int64)
        dev = _device_stack(arr, idx) if len(members) * arr[0].nbytes >= GPU_DRAW_BYTES else None
        for b, i in enumerate(members):
            pad = bool(kwargs_list[i].get("pad", False))
            if dev is None:
                out[i] = _stack_item(arr, int(idx[b]), p, name, pad)
                continue
            params = {"path": str(p), "index": int(idx[b]), "pad": pad}
            out[i] = DeviceCostMatrix(dev, b, f"{name}_i{int(idx[b])}", "lap_stack", params)
    return out  # type: ignore[return-value]


#: Bytes of each pinned buffer through which :func:`_device_stack` uploads a stack.
STACK_UPLOAD_CHUNK_BYTES = 64 << 20
#: Pinned buffers of :func:`_device_stack`: two fill while the third uploads.
STACK_UPLOAD_BUFFERS = 3
#: Most threads that copy a mapped stack into the pinned buffers (:func:`read_threads`).
STACK_READ_THREADS_MAX = 16


def read_threads() -> int:
    """Threads that copy a mapped stack file into pinned memory: the process's CPUs, at
    most :data:`STACK_READ_THREADS_MAX`. Copies out of the page cache release the GIL and
    scale with threads: on an H100 machine's 16-core host, 1 MiB matrices went at 5.8 GB/s
    on one thread, 18.1 on 4, 27.6 on 8 and 39.3 on 16 (the device's pinned upload ran at
    54 GB/s)."""
    import os

    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(STACK_READ_THREADS_MAX, cpus))


def _device_stack(arr: np.ndarray, idx: np.ndarray, outside_pool: bool = False,
                  threads: int | None = None) -> Any | None:
    """Matrices ``idx`` of a mapped stack as one device array, None where the GPU fails.

    The file is copied in chunks of :data:`STACK_UPLOAD_CHUNK_BYTES` into
    :data:`STACK_UPLOAD_BUFFERS` pinned host buffers by :func:`read_threads` threads, each
    chunk's parts queued as soon as its buffer's previous upload has left it, so the
    threads go from one chunk to the next without waiting while a full buffer uploads
    asynchronously. Nothing of it stays on the host (a ``DeviceCostMatrix`` copies its
    block back only if ``costs`` is read). ``outside_pool``: the device array is allocated
    by ``cudaMalloc`` itself, not from CuPy's pool, so a read ahead (:class:`_ReadAhead`)
    neither counts in the pool's peak of the batch being solved nor keeps pool blocks.
    ``threads``: the readers (default :func:`read_threads`).
    """
    try:
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        import cupy as cp
        import cupyx

        n_mat = int(idx.size)
        shape = arr.shape[1:]
        one = int(np.prod(shape)) * arr.dtype.itemsize
        rows = max(1, min(n_mat, STACK_UPLOAD_CHUNK_BYTES // max(1, one)))
        if outside_pool:
            mem = cp.cuda.Memory(max(1, n_mat * one))
            dev = cp.ndarray((n_mat, *shape), dtype=arr.dtype, memptr=cp.cuda.MemoryPointer(mem, 0))
        else:
            dev = cp.empty((n_mat, *shape), dtype=arr.dtype)
        nbuf = max(2, min(STACK_UPLOAD_BUFFERS, -(-n_mat // rows)))
        pinned = [cupyx.empty_pinned((rows, *shape), dtype=arr.dtype) for _ in range(nbuf)]
        stream = cp.cuda.Stream(non_blocking=True)
        uploaded: list[Any] = [None] * nbuf
        lo = int(idx[0])
        consecutive = np.array_equal(idx, np.arange(lo, lo + n_mat))
        threads = threads or read_threads()

        def part(buf: np.ndarray, at: int, a: int, b: int) -> None:
            if consecutive:
                np.copyto(buf[a:b], arr[lo + at + a : lo + at + b])
            else:
                np.take(arr, idx[at + a : at + b], axis=0, out=buf[a:b])

        def upload(k: int, at: int, count: int, parts: list[Any]) -> None:
            for f in parts:
                f.result()  # the first error of a part, as one thread
            slot = k % nbuf
            dev[at : at + count].set(pinned[slot][:count], stream=stream)
            uploaded[slot] = stream.record()

        filling: deque[tuple[int, int, int, list[Any]]] = deque()
        with ThreadPoolExecutor(threads) as pool:
            for k, at in enumerate(range(0, n_mat, rows)):
                count = min(rows, n_mat - at)
                slot = k % nbuf
                if uploaded[slot] is not None:
                    uploaded[slot].synchronize()  # its previous upload has left the buffer
                cuts = np.linspace(0, count, min(threads, count) + 1).astype(int)
                filling.append((k, at, count, [
                    pool.submit(part, pinned[slot], at, int(a), int(b))
                    for a, b in zip(cuts[:-1], cuts[1:], strict=True)
                ]))
                if len(filling) == nbuf - 1:  # the oldest chunk's upload, while the next fills
                    upload(*filling.popleft())
            while filling:
                upload(*filling.popleft())
        stream.synchronize()
        return dev
    except Exception:  # no CuPy or device, out of memory: the host copies serve
        return None


stack.matchbench_bulk = stack_bulk  # type: ignore[attr-defined]


#: A read ahead may take at most this share of the device's free memory.
READ_AHEAD_FREE_SHARE = 0.25
#: CPUs a read ahead leaves to the task process's own work (the solve's launches, the
#: certificate, the rows), which runs meanwhile: the read takes the rest of
#: :func:`read_threads`, at least one.
READ_AHEAD_SPARE_CPUS = 4


def _room_on_device(nbytes: int) -> int | None:
    """The current device's id if ``nbytes`` are at most :data:`READ_AHEAD_FREE_SHARE` of
    its free memory, else None (None too without CuPy or a device)."""
    try:
        import cupy as cp

        from matchbench.gpu.common import free_device_memory

        return int(cp.cuda.Device().id) if nbytes <= READ_AHEAD_FREE_SHARE * free_device_memory() else None
    except Exception:
        return None


def _on_device(device_id: int) -> Any:
    """A context in which CuPy works on ``device_id`` (a thread's own current device)."""
    import cupy as cp

    return cp.cuda.Device(device_id)


class _ReadAhead:
    """The next batch of a stack file, read onto the device by a thread of its own while
    the task process solves and certifies the batch before it.

    A sweep over one file asks the stack hook for ranges of it, batch after batch, in one
    task process (the GPU worker's): consecutive ranges with one worker, every second one
    with two that alternate. After a consecutive range is read, the range one stride on is
    read in the background, where the stride is that from the last call's start to this
    one's and the last call had it too (a process's first call on a file assumes the
    batches follow each other). The next call takes the read if it asks for exactly that
    range of the same, unchanged file (else the read is dropped). The read costs device
    memory of one batch, outside CuPy's pool, and only where that is at most
    :data:`READ_AHEAD_FREE_SHARE` of the free memory.
    """

    _pending: _ReadAhead | None = None
    _last: tuple[Any, int, int] | None = None  # (file key, start, stride) of the last call
    _pool: Any = None

    def __init__(self, key: tuple[Any, ...], future: Any) -> None:
        self.key, self.future = key, future

    @staticmethod
    def file_key(p: Path) -> tuple[Any, ...]:
        st = p.stat()
        return (str(p.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    @classmethod
    def take(cls, fkey: tuple[Any, ...], lo: int, count: int) -> Any | None:
        """The device array of matrices ``[lo, lo + count)`` if they were read ahead (waits
        for the read to end), else None; a read ahead of another range is dropped."""
        pending, cls._pending = cls._pending, None
        if pending is None:
            return None
        try:
            data = pending.future.result()  # None where the read failed: read again
        except Exception:
            data = None
        return data if pending.key == (fkey, lo, count) else None

    @classmethod
    def after(cls, arr: np.ndarray, fkey: tuple[Any, ...], lo: int, count: int) -> None:
        """Matrices ``[lo, lo + count)`` were asked for: read the range one stride on
        ahead, where the stride repeats and the device has room (see the class)."""
        last = cls._last
        if last is None or last[0] != fkey:
            stride, repeated = count, True
        else:
            stride = lo - last[1]
            repeated = stride == last[2]
        cls._last = (fkey, lo, stride)
        start = lo + stride
        ahead = min(count, int(arr.shape[0]) - start)
        if not repeated or stride == 0 or start < 0 or ahead < 1:
            return
        device_id = _room_on_device(ahead * arr[0].nbytes)
        if device_id is None:
            return
        if cls._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            cls._pool = ThreadPoolExecutor(1, thread_name_prefix="matchbench-read-ahead")

        def read() -> Any | None:
            with _on_device(device_id):
                return _device_stack(arr, np.arange(start, start + ahead, dtype=np.int64),
                                     outside_pool=True,
                                     threads=max(1, read_threads() - READ_AHEAD_SPARE_CPUS))

        cls._pending = _ReadAhead((fkey, start, ahead), cls._pool.submit(read))


def stack_stack(
    template: dict[str, Any], varying: dict[str, list[Any]], count: int, device: str | None = None
) -> InstanceStack | None:
    """Matrices of one square int32 ``.npy`` stack as one
    :class:`~matchbench.core.stack.InstanceStack` (``stack.matchbench_stack``): block ``k``
    is ``stack(path, seed=seeds[k])``'s matrix. ``device="gpu"``: read by threads into
    pinned buffers and uploaded in turn (:func:`_device_stack`), where there are at least
    :data:`GPU_DRAW_BYTES` of them, the batch expected next read meanwhile in the
    background (:class:`_ReadAhead`); else one gathered host copy. int32 costs need no check
    of their values; other dtypes, rectangular matrices, folders and indices outside the
    stack give None (one by one, each matrix is checked, or named in its own error)."""
    seeds = _seed_column(template, varying, count)
    if seeds is None or count < 1 or set(template) - {"path", "seed", "pad"}:
        return None
    p = Path(template["path"])
    if p.is_dir() or p.suffix != ".npy" or missing_file(p) is not None:
        return None
    name = _stack_name(p)
    arr = _stack_map(p, name)
    if arr.dtype != np.dtype(np.int32) or arr.shape[1] != arr.shape[2]:
        return None
    if not all(isinstance(s, int | np.integer) and not isinstance(s, bool) for s in seeds):
        return None
    idx = np.asarray(seeds, dtype=np.int64)
    if int(idx.min()) < 0 or int(idx.max()) >= arr.shape[0]:
        return None
    n = int(arr.shape[1])
    data = None
    if device == "gpu" and count * arr[0].nbytes >= GPU_DRAW_BYTES:
        lo = int(idx[0])
        consecutive = bool(np.array_equal(idx, np.arange(lo, lo + count)))
        fkey = _ReadAhead.file_key(p)
        # a gathered range is never read ahead: take() then only drops a pending read
        data = _ReadAhead.take(fkey, lo, count) if consecutive else _ReadAhead.take(fkey, -1, 0)
        if data is None:
            data = _device_stack(arr, idx)
        if data is not None and consecutive:
            _ReadAhead.after(arr, fkey, lo, count)
    if data is None:
        data = np.take(arr, idx, axis=0)
    pad = bool(template.get("pad", False))
    names = [f"{name}_i{i}" for i in seeds]
    columns = {
        "instance": names,
        "family": "lap_stack",
        "n_rows": n,
        "n_cols": n,
        "n_edges": n * n,
        "instance_params": to_json_each({"path": str(p), "index": 0, "pad": pad}, "index", list(seeds)),
        "rcp": False,
        "instance_bytes": int(arr[0].nbytes),
    }

    def instance(k: int) -> CostMatrix:
        params = {"path": str(p), "index": int(seeds[k]), "pad": pad}
        if isinstance(data, np.ndarray):
            return _trusted(data[k], names[k], "lap_stack", params)
        return DeviceCostMatrix(data, k, names[k], "lap_stack", params)

    return InstanceStack("lap", data, count, columns, instance)


stack.matchbench_stack = stack_stack  # type: ignore[attr-defined]
