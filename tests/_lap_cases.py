"""Random LAP cost matrices of many shapes for the batched solver's tests (CPU and GPU).

:func:`make_costs` draws one matrix of a named kind; :data:`KINDS` lists them: integer
ranges of Date & Nagi 2016 (``[0, n/10]``, ``[0, n]``, ``[0, 10n]``), negative int64 costs,
the whole int32 range, int64 costs at the LAP validator's limit, 0/1 and constant
matrices and rank-one sums (massive ties: every permutation optimal), float32 on a coarse
grid (ties), float32 uniform and over a huge range, float64 normal, tiny and constant
negative, Euclidean distances.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from matchbench.families.lap.problem import CostMatrix, certificate_atol

KINDS = (
    "int_n10",
    "int_n",
    "int_10n",
    "int64_neg",
    "int32_wide",
    "int64_huge",
    "binary",
    "constant",
    "rank_one",
    "float32_grid",
    "float32",
    "float32_wide",
    "float64",
    "float64_tiny",
    "float64_const_neg",
    "geometric",
)


def make_costs(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    shape = (n, n)
    if kind in ("int_n10", "int_n", "int_10n"):
        hi = {"int_n10": n // 10, "int_n": n, "int_10n": 10 * n}[kind]
        return rng.integers(0, hi + 1, shape).astype(np.int32)
    if kind == "int64_neg":
        return rng.integers(-5 * n, 5 * n + 1, shape).astype(np.int64)
    if kind == "int32_wide":
        i32 = np.iinfo(np.int32)
        return rng.integers(i32.min, i32.max, shape, dtype=np.int64, endpoint=True).astype(np.int32)
    if kind == "int64_huge":  # at the validator's limit for exact int64 duals
        lim = (2**62) // (2 * n + 2)
        return rng.integers(-lim, lim, shape, dtype=np.int64, endpoint=True)
    if kind == "binary":
        return rng.integers(0, 2, shape).astype(np.int32)
    if kind == "constant":
        return np.full(shape, int(rng.integers(-9, 10)), dtype=np.int32)
    if kind == "rank_one":
        a, b = rng.integers(-9, 10, n), rng.integers(-9, 10, n)
        return (a[:, None] + b[None, :]).astype(np.int32)
    if kind == "float32_grid":
        return (rng.integers(-4, 8, shape) * 0.125).astype(np.float32)
    if kind == "float32":
        return rng.random(shape).astype(np.float32)
    if kind == "float32_wide":
        return ((rng.random(shape) - 0.5) * 2e30).astype(np.float32)
    if kind == "float64":
        return rng.standard_normal(shape) * 1e6
    if kind == "float64_tiny":
        return rng.random(shape) * 1e-12
    if kind == "float64_const_neg":
        return np.full(shape, -3.5)
    if kind == "geometric":
        p, q = rng.random((n, 2)), rng.random((n, 2))
        return np.sqrt(((p[:, None, :] - q[None, :, :]) ** 2).sum(axis=2))
    raise ValueError(kind)


def make_instance(kind: str, n: int, seed: int) -> CostMatrix:
    return CostMatrix(make_costs(kind, n, seed), name=f"{kind}_n{n}_s{seed}", family="test")


def scipy_cost(inst: CostMatrix) -> int | float:
    """The cost of SciPy's assignment: exact (int) for integer costs, float64 otherwise."""
    rows, cols = linear_sum_assignment(inst.costs)
    picked = inst.costs[rows, cols]
    if inst.costs.dtype.kind == "i":
        return int(picked.sum(dtype=np.int64))
    return float(picked.astype(np.float64).sum())


def cost_mismatch(inst: CostMatrix, perm: np.ndarray) -> str | None:
    """None when ``perm`` costs what SciPy's assignment costs, else what differs.

    Integer costs compare exactly, except that above 2**53 / n SciPy (which solves in
    float64) may miss the optimum by rounding: there ``perm`` (certified exactly by the
    caller) may only be cheaper. Float costs compare within the certificate's bound
    ``2 n atol``.
    """
    picked = inst.costs[np.arange(inst.n), np.asarray(perm)]
    ref = scipy_cost(inst)
    if inst.costs.dtype.kind == "i":
        ours = int(picked.sum(dtype=np.int64))
        lossy = int(np.abs(inst.costs).max()) * inst.n > 2**53
        if ours == ref or (lossy and ours < ref):
            return None
        return f"cost {ours} != scipy's {ref}"
    ours = float(picked.astype(np.float64).sum())
    if abs(ours - ref) <= 2 * inst.n * certificate_atol(inst.costs) + 1e-9:
        return None
    return f"cost {ours} != scipy's {ref}"
