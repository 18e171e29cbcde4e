"""The LAP certificate: correct answers verify, broken ones are rejected with the reason.

Mutation tests break a certified answer (swap two assigned columns, perturb a dual, break
the permutation) and check the verifier says so. Instances with distinct costs have a
unique optimum, so every swap of two assigned columns makes the answer strictly worse.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from matchbench.core.params import configured
from matchbench.core.problem import get_problem
from matchbench.datasets import DatasetError
from matchbench.families.lap.problem import (
    FLOAT_RTOL,
    LAP,
    Assignment,
    CostMatrix,
    certificate_atol,
    derive_duals,
)
from matchbench.families.lap.refs import HungarianTree

PROBLEM = LAP()


def _distinct(n: int, seed: int, dtype=np.int64) -> CostMatrix:
    """Costs 0..n*n-1 in random positions: all distinct, so the optimum is unique."""
    rng = np.random.default_rng(seed)
    return CostMatrix(rng.permutation(n * n).reshape(n, n).astype(dtype), name=f"distinct{n}")


def _solved(inst: CostMatrix) -> Assignment:
    s = configured(HungarianTree)
    s.prepare(inst)
    s.run()
    return s.result()


def test_registry_returns_lap():
    p = get_problem("lap")
    assert isinstance(p, LAP)
    assert (p.name, p.objective, p.sense, p.exact) == ("lap", "cost", "min", True)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_solver_duals_verify_and_bound_equals_cost(n, dtype):
    inst = _distinct(n, seed=n, dtype=dtype)
    ans = _solved(inst)
    v = PROBLEM.verify(inst, ans)
    assert v.verified, v.reason
    cost = inst.costs[np.arange(n), ans.row_to_col].astype(np.float64).sum()
    assert v.objective == pytest.approx(cost, rel=0, abs=1e-9 * max(1.0, cost))
    assert v.reference == v.bound
    if np.dtype(dtype).kind == "i":
        assert v.bound == v.objective  # exact for integers


@pytest.mark.parametrize("seed", range(6))
def test_swapping_two_assigned_columns_is_rejected(seed):
    n = 12
    inst = _distinct(n, seed)
    ans = _solved(inst)
    assert PROBLEM.verify(inst, ans).verified
    rng = np.random.default_rng(seed)
    i, k = rng.choice(n, 2, replace=False)
    perm = ans.row_to_col.copy()
    perm[[i, k]] = perm[[k, i]]
    # with the solver's duals: complementary slackness must fail on a new pair
    v = PROBLEM.verify(inst, Assignment(perm, ans.u, ans.v))
    assert not v.verified
    assert "complementary slackness" in v.reason
    # without duals: the derived potentials find a negative cycle
    v = PROBLEM.verify(inst, Assignment(perm))
    assert not v.verified
    assert "negative-cost alternating cycle" in v.reason
    delta = int(re.search(r"changes the cost by (-?\d+)", v.reason).group(1))
    assert delta < 0


def test_negative_cycle_of_the_reason_really_improves():
    inst = _distinct(9, seed=3)
    ans = _solved(inst)
    perm = ans.row_to_col.copy()
    perm[[0, 1, 2]] = perm[[1, 2, 0]]  # a 3-rotation: worse than the unique optimum
    v = PROBLEM.verify(inst, perm)
    assert not v.verified
    rows = [int(r) for r in re.search(r"rows \[([\d, ]+)\]", v.reason).group(1).split(",")]
    delta = int(re.search(r"changes the cost by (-?\d+)", v.reason).group(1))
    # "moving each of them to the next column on it": row rows[t] takes the column that
    # rows[t + 1] holds (cyclically); the new permutation costs exactly delta less.
    new = perm.copy()
    for t, r in enumerate(rows):
        new[r] = perm[rows[(t + 1) % len(rows)]]
    c = inst.costs
    assert sorted(new) == list(range(9))
    assert c[np.arange(9), new].sum() - c[np.arange(9), perm].sum() == delta < 0


def test_infeasible_dual_is_rejected():
    inst = _distinct(10, seed=1)
    ans = _solved(inst)
    u = ans.u.copy()
    u[4] += 1  # u_4 + v_j now exceeds c_4j on row 4's assigned pair
    v = PROBLEM.verify(inst, Assignment(ans.row_to_col, u, ans.v))
    assert not v.verified
    assert "infeasible" in v.reason and "u[4]" in v.reason


def test_feasible_but_loose_dual_fails_complementary_slackness():
    inst = _distinct(10, seed=2)
    ans = _solved(inst)
    v_ = ans.v.copy()
    v_[int(ans.row_to_col[3])] -= 1  # still feasible, no longer tight on (3, perm[3])
    v = PROBLEM.verify(inst, Assignment(ans.row_to_col, ans.u, v_))
    assert not v.verified
    assert "complementary slackness" in v.reason and "(3," in v.reason


@pytest.mark.parametrize(
    "perm, message",
    [
        ([0, 0, 2, 3], "column 0 is assigned to rows [0, 1]"),
        ([0, 1, 2, 4], "outside [0, 4)"),
        ([0, -1, 2, 3], "outside [0, 4)"),
        ([0, 1, 2], "shape (3,)"),
        ([0.0, 1.0, 2.0, 3.0], "dtype float64"),
    ],
)
def test_non_permutations_are_rejected(perm, message):
    inst = _distinct(4, seed=0)
    v = PROBLEM.verify(inst, Assignment(np.array(perm)))
    assert not v.verified
    assert message in v.reason


def test_malformed_duals_are_rejected():
    inst = _distinct(6, seed=5)
    ans = _solved(inst)
    v = PROBLEM.verify(inst, Assignment(ans.row_to_col, ans.u, None))
    assert not v.verified and "only one of the dual arrays" in v.reason
    v = PROBLEM.verify(inst, Assignment(ans.row_to_col, ans.u[:-1], ans.v))
    assert not v.verified and "shapes" in v.reason
    v = PROBLEM.verify(inst, Assignment(ans.row_to_col, ans.u + 0.5, ans.v - 0.5))
    assert not v.verified and "integer duals" in v.reason
    # integral float duals are accepted for integer costs
    v = PROBLEM.verify(inst, Assignment(ans.row_to_col, ans.u.astype(float), ans.v.astype(float)))
    assert v.verified, v.reason


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["int_ties", "int_wide", "float", "float32_ties", "negative"])
def test_scipy_answers_verify_with_derived_duals(kind, seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 120))
    costs = {
        "int_ties": lambda: rng.integers(0, 4, (n, n)).astype(np.int32),
        "int_wide": lambda: rng.integers(0, 10 * n + 1, (n, n)).astype(np.int32),
        "float": lambda: rng.random((n, n)),
        "float32_ties": lambda: (rng.integers(0, 5, (n, n)) / 4).astype(np.float32),
        "negative": lambda: rng.integers(-1000, 1000, (n, n)).astype(np.int64),
    }[kind]()
    inst = CostMatrix(costs, name=f"{kind}{seed}")
    _, cols = linear_sum_assignment(costs)
    v = PROBLEM.verify(inst, Assignment(cols))
    assert v.verified, v.reason
    best = costs[np.arange(n), cols].astype(np.float64).sum()
    assert v.bound == pytest.approx(best, abs=n * certificate_atol(costs) + 1e-9)
    u, vv = derive_duals(costs, cols.astype(np.int64))
    assert u.dtype == (np.int64 if costs.dtype.kind == "i" else np.float64)
    assert ((costs - u[:, None] - vv[None, :]) >= -certificate_atol(costs)).all()


def test_float_tolerance_is_relative_to_the_cost_scale():
    rng = np.random.default_rng(7)
    costs = rng.random((30, 30)) * 1e6
    inst = CostMatrix(costs)
    assert certificate_atol(costs) == pytest.approx(FLOAT_RTOL * costs.max())
    ans = _solved(inst)
    assert PROBLEM.verify(inst, ans).verified
    # a violation far above the tolerance is caught
    u = ans.u.copy()
    u[0] += 1e4 * certificate_atol(costs)
    assert not PROBLEM.verify(inst, Assignment(ans.row_to_col, u, ans.v)).verified
    # one well inside it is not (the answer is certified to within 2 n atol)
    u = ans.u.copy()
    u[0] += 0.1 * certificate_atol(costs)
    assert PROBLEM.verify(inst, Assignment(ans.row_to_col, u, ans.v)).verified


@pytest.mark.parametrize(
    "costs, fragment",
    [
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "non-finite"),
        (np.array([[1.0, np.inf], [0.0, 1.0]]), "non-finite"),
        (np.ones((2, 2), dtype=complex), "dtype complex128"),
        (np.array([[1, "a"], [2, 3]], dtype=object), "dtype object"),
        (np.ones((2, 2), dtype=bool), "dtype bool"),
        (np.zeros((0, 0)), "empty"),
        (np.zeros(3), "2-D"),
        (np.ones((2, 3)), "not square"),
        (np.full((2, 2), 2**61, dtype=np.int64), "too large"),
    ],
)
def test_bad_cost_matrices_raise_a_dataset_error_naming_the_instance(costs, fragment):
    with pytest.raises(DatasetError) as info:
        CostMatrix(costs, name="bad_instance")
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    assert fragment in msg and "bad_instance" in msg and "lap" in msg


def test_small_integer_dtypes_are_widened_losslessly():
    inst = CostMatrix(np.array([[1, 2], [3, 250]], dtype=np.uint8))
    assert inst.costs.dtype == np.int32 and inst.costs[1, 1] == 250
    inst = CostMatrix(np.array([[1, 2], [3, 4]], dtype=np.float16))
    assert inst.costs.dtype == np.float32


def test_padding_keeps_the_rectangular_optimum():
    rng = np.random.default_rng(11)
    for shape in [(3, 7), (7, 3), (1, 5)]:
        costs = rng.integers(1, 50, shape).astype(np.int32)
        inst = CostMatrix.from_array(costs, name="rect", pad=True)
        n = max(shape)
        assert inst.costs.shape == (n, n)
        assert inst.params["padded_from"] == list(shape)
        assert inst.original_shape == shape
        ans = _solved(inst)
        assert PROBLEM.verify(inst, ans).verified
        r, c = linear_sum_assignment(costs)  # scipy solves the rectangular problem
        rows, cols = inst.real_pairs(ans)
        assert len(rows) == min(shape)
        assert costs[rows, cols].sum() == costs[r, c].sum()


def test_rcp_permutation_keeps_the_optimum():
    inst = _distinct(15, seed=4)
    perm_inst = inst.permuted(3)
    assert perm_inst.params["rcp"] is True
    a, b = _solved(inst), _solved(perm_inst)
    va, vb = PROBLEM.verify(inst, a), PROBLEM.verify(perm_inst, b)
    assert va.verified and vb.verified and va.objective == vb.objective
