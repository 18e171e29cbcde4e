"""The bulk LAP certificate (:func:`matchbench.families.lap.bulk.certify_stack`).

Correct answers (from :func:`~matchbench.families.lap.api.solve_batch`'s SciPy path, whose
duals come from the LAP verifier's derivation) must pass; each way of breaking one (a
non-permutation, an out-of-range column, a perturbed dual, a perturbed assigned cell, a
rectangular unassigned column with a nonzero dual, non-finite or non-integral numbers,
duals large enough to wrap int64 sums) must fail with a reason naming it, and only in the
instance broken. On hundreds of random instances, square and rectangular, integer and
float, the certificate agrees with the per-instance verifier
(:meth:`matchbench.families.lap.problem.LAP.verify`, on the padded square problem) in
both directions. GPU tests run the same on CuPy stacks.
"""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.families.lap import api
from matchbench.families.lap.bulk import certify_stack
from matchbench.families.lap.problem import LAP, Assignment, CostMatrix, certificate_atol

PROBLEM = LAP()


@pytest.fixture(autouse=True)
def _host_solver(monkeypatch):
    """Answers from SciPy + derived duals, also on a GPU machine (independent of the kernel)."""
    monkeypatch.setattr(api, "_gpu_usable", lambda: False)


def _stack(rng, B, n, m, dtype):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-20, 50, (B, n, m)).astype(dtype)
    return (rng.random((B, n, m)) * 100 - 10).astype(dtype)


def _answer(c, maximize=False):
    r = api.solve_batch(c, maximize=maximize)
    return r.assignment.copy(), r.u.copy(), r.v.copy()


def _delta(c):
    """A perturbation well above the float tolerance (1 for integer costs)."""
    if c.dtype.kind == "i":
        return 1
    return 1e-4 * max(1.0, float(np.abs(c).max()))


# -- correct answers pass ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize(("n", "m"), [(1, 1), (5, 5), (7, 12), (12, 7), (1, 9), (9, 1), (30, 30)])
@pytest.mark.parametrize("maximize", [False, True])
def test_correct_answers_pass(dtype, n, m, maximize):
    rng = np.random.default_rng(n * 100 + m)
    c = _stack(rng, 6, n, m, dtype)
    a, u, v = _answer(c, maximize)
    ok, why = certify_stack(c, a, u, v, maximize=maximize)
    assert ok.dtype == bool and ok.shape == (6,)
    assert ok.all(), why
    assert why == [None] * 6
    if not maximize and n != m:  # the other sense's certificate refuses a sign-flipped answer
        ok2, _ = certify_stack(c, a, -u, -v, maximize=True)
        assert not ok2.all()


def test_empty_stacks():
    ok, why = certify_stack(
        np.zeros((0, 3, 4)), np.zeros((0, 3), int), np.zeros((0, 3)), np.zeros((0, 4))
    )
    assert ok.shape == (0,) and why == []
    ok, why = certify_stack(
        np.zeros((2, 0, 4)), np.zeros((2, 0), int), np.zeros((2, 0)), np.zeros((2, 4))
    )
    assert ok.all() and why == [None, None]
    ok, why = certify_stack(
        np.zeros((1, 0, 4)), np.zeros((1, 0), int), np.zeros((1, 0)), np.array([[0.0, -1, 0, 0]])
    )
    assert not ok[0] and "column 1 is unassigned but v[1]" in why[0]


# -- mutations: each caught, with its reason, in the broken instance only -------------------


def _broken(c, a, u, v, k, how):
    c, a, u, v = c.copy(), a.copy(), u.copy(), v.copy()
    m = c.shape[2]
    d = _delta(c)
    if how == "duplicate":  # not a permutation
        a[k, 1] = a[k, 0]
    elif how == "range":
        a[k, 2] = m
    elif how == "negative":
        a[k, 0] = -1
    elif how == "u_up":  # infeasible on the assigned cell (at least)
        u[k, 3] += d
    elif how == "u_down":  # feasible, but the assigned cell of row 3 is no longer tight
        u[k, 3] -= d
    elif how == "v_up":
        v[k, a[k, 0]] += d
    elif how == "cell":  # the assigned cell costs more: not tight
        c[k, 2, a[k, 2]] += d
    elif how == "unassigned_v":  # rectangular: an unassigned column with v < 0
        j = int(np.setdiff1d(np.arange(m), a[k])[0])
        v[k, j] -= d
    elif how == "nan_cost":
        c[k, 1, 1] = np.nan
    elif how == "inf_u":
        u[k, 0] = np.inf
    return c, a, u, v


MUTATIONS = {
    "duplicate": "not injective: column",
    "range": "row 2 is assigned to column",
    "negative": "row 0 is assigned to column -1, outside",
    "u_up": "dual infeasible: u[3] + v[",
    "u_down": "complementary slackness fails: assigned cell c[3,",
    "v_up": "dual infeasible",
    "cell": "complementary slackness fails: assigned cell c[2,",
    "unassigned_v": "is unassigned but v[",
}


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("how", sorted(MUTATIONS))
def test_each_mutation_caught_in_its_instance(dtype, how):
    rng = np.random.default_rng(5)
    n, m = (8, 13) if how == "unassigned_v" else (8, 8)
    c = _stack(rng, 5, n, m, dtype)
    a, u, v = _answer(c)
    assert certify_stack(c, a, u, v)[0].all()
    c2, a2, u2, v2 = _broken(c, a, u, v, 2, how)
    ok, why = certify_stack(c2, a2, u2, v2)
    assert ok.tolist() == [True, True, False, True, True], why
    assert MUTATIONS[how] in why[2], why[2]
    assert why[:2] == [None, None] and why[3:] == [None, None]


def test_rectangular_positive_column_dual_is_caught():
    rng = np.random.default_rng(9)
    c = _stack(rng, 3, 4, 9, np.int64)
    a, u, v = _answer(c)
    # every u_i + v_j and every slack unchanged, but the unassigned columns' v_j = 1 > 0
    u2, v2 = u - 1, v + 1
    ok, why = certify_stack(c, a, u2, v2)
    assert not ok.any()
    assert all(("breaks v <= 0" in w) for w in why), why


@pytest.mark.parametrize(
    ("how", "want"),
    [
        ("nan_cost", "cost c[1, 1] = nan is not finite"),
        ("inf_u", "dual u[0] = inf is not finite"),
    ],
)
def test_non_finite_is_never_ok(how, want):
    rng = np.random.default_rng(1)
    c = _stack(rng, 3, 5, 5, np.float64)
    a, u, v = _answer(c)
    c2, a2, u2, v2 = _broken(c, a, u, v, 1, how)
    ok, why = certify_stack(c2, a2, u2, v2)
    assert ok.tolist() == [True, False, True] and why[1] == want


def test_integer_costs_need_integer_duals():
    rng = np.random.default_rng(2)
    c = _stack(rng, 2, 6, 6, np.int32)
    a, u, v = _answer(c)
    ok, _ = certify_stack(c, a, u.astype(np.float64), v.astype(np.float32))
    assert ok.all()  # integral floats are integers
    uf = u.astype(np.float64)
    uf[0, 4] += 0.5
    ok, why = certify_stack(c, a, uf, v)
    assert ok.tolist() == [False, True]
    assert why[0].startswith("dual u[4] = ") and "not an integer" in why[0]


def test_duals_that_would_wrap_int64_are_refused():
    # u_0 + v_j wraps to a negative int64 when summed: it must not pass as feasible.
    c = np.array([[[0, 5], [5, 0]]], dtype=np.int64)
    a = np.array([[0, 1]])
    u = np.array([[2**62, -(2**62)]], dtype=np.int64)
    v = np.array([[-(2**62), 2**62]], dtype=np.int64)
    ok, why = certify_stack(c, a, u, v)
    assert not ok[0] and "beyond the exact int64 range" in why[0]
    u = np.array([[np.iinfo(np.int64).min, 0]])
    ok, why = certify_stack(c, a, u, np.zeros((1, 2), np.int64))
    assert not ok[0] and "u[0]" in why[0] and "beyond" in why[0]


def test_wide_problems_need_every_column_assigned():
    rng = np.random.default_rng(4)
    c = _stack(rng, 3, 9, 4, np.int64)
    a, u, v = _answer(c)
    assert (a == -1).sum(axis=1).tolist() == [5, 5, 5]
    assert certify_stack(c, a, u, v)[0].all()
    a2 = a.copy()
    row = int(np.flatnonzero(a2[1] == 2)[0])
    a2[1, row] = -1  # column 2 left without a row
    ok, why = certify_stack(c, a2, u, v)
    assert ok.tolist() == [True, False, True]
    assert why[1].startswith("column 2 is unassigned (with 9 rows > 4 columns")
    a3 = a.copy()
    free = int(np.flatnonzero(a3[0] == -1)[0])
    a3[0, free] = a3[0, int(np.flatnonzero(a3[0] >= 0)[0])]  # two rows on one column
    ok, why = certify_stack(c, a3, u, v)
    assert not ok[0] and why[0].startswith("not injective: column")
    u2 = u.copy()
    u2[2, int(np.flatnonzero(a[2] == -1)[0])] -= 1  # an unassigned row's dual must be 0
    ok, why = certify_stack(c, a, u2, v)
    assert ok.tolist() == [True, True, False] and "is unassigned but u[" in why[2]


def test_maximize_certifies_the_maximum_only():
    rng = np.random.default_rng(6)
    c = _stack(rng, 4, 6, 6, np.int32)
    a, u, v = _answer(c, maximize=True)
    assert certify_stack(c, a, u, v, maximize=True)[0].all()
    ok, why = certify_stack(c, a, u, v)  # as a minimum: refused
    assert not ok.any()
    amin, umin, vmin = _answer(c)
    assert not certify_stack(c, amin, umin, vmin, maximize=True)[0].any()
    u2 = u.copy()
    u2[1, 0] -= 1  # u_i + v_j >= c_ij now fails on row 0's assigned cell
    ok, why = certify_stack(c, a, u2, v, maximize=True)
    assert ok.tolist() == [True, False, True, True]
    assert why[1].startswith("dual infeasible: u[0] + v[") and " < c[0, " in why[1]


def test_bad_arguments():
    c = np.zeros((2, 3, 3), np.int32)
    a = np.zeros((2, 3), np.int64)
    z = np.zeros((2, 3), np.int64)
    with pytest.raises(ValueError, match=r"costs must be \(B, n, m\)"):
        certify_stack(c[0], a, z, z)
    with pytest.raises(ValueError, match=r"v has shape \(2, 4\), expected \(2, 3\)"):
        certify_stack(c, a, z, np.zeros((2, 4)))
    with pytest.raises(TypeError, match="assignment has dtype float64"):
        certify_stack(c, a.astype(float), z, z)
    with pytest.raises(TypeError, match="costs have dtype complex128"):
        certify_stack(c.astype(complex), a, z, z)


# -- agreement with the per-instance verifier, both directions -------------------------------


def _as_square(c, a, u, v):
    """The padded square instance of an ``n x m`` answer and its answer: dummy rows (dual 0)
    take the unassigned columns; ``n > m`` is transposed first."""
    n, m = c.shape
    if n > m:
        col4row = np.zeros(m, dtype=np.int64)
        rows = np.flatnonzero((a >= 0) & (a < m))
        col4row[a[rows]] = rows
        return _as_square(c.T, col4row, v, u)
    inst = CostMatrix.from_array(c, pad=True)
    if n == m:
        return inst, Assignment(a, u, v)
    free = np.setdiff1d(np.arange(m), a)
    if free.size != m - n:  # a non-injective answer: pad with anything
        free = np.resize(free if free.size else np.arange(m), m - n)
    full = np.concatenate([a, free])
    uu = np.concatenate([u, np.zeros(m - n, dtype=u.dtype)])
    return inst, Assignment(full, uu, v)


def test_agrees_with_the_per_instance_verifier_on_hundreds_of_instances():
    rng = np.random.default_rng(2026)
    kinds = ("duplicate", "u_up", "u_down", "cell", "unassigned_v")
    checked = broken = 0
    disagree = []
    for trial in range(60):
        dtype = (np.int32, np.int64, np.float32, np.float64)[trial % 4]
        n = int(rng.integers(4, 14))
        m = n if trial % 3 == 0 else int(rng.integers(4, 14))
        c = _stack(rng, 6, n, m, dtype)
        a, u, v = _answer(c)
        ok, why = certify_stack(c, a, u, v)
        for k in range(6):
            inst, ans = _as_square(c[k], a[k], u[k], v[k])
            ref = PROBLEM.verify(inst, ans)
            checked += 1
            if not (bool(ok[k]) and ref.verified):
                disagree.append(f"correct {trial}/{k} ({n}x{m} {c.dtype}): {why[k]} / {ref.reason}")
        if n > m:
            continue  # the mutations are phrased for rows assigned to columns
        how = kinds[trial % len(kinds)]
        if n == m and how == "unassigned_v":
            how = "cell"
        k = trial % 6
        c2, a2, u2, v2 = _broken(c, a, u, v, k, how)
        ok2, why2 = certify_stack(c2, a2, u2, v2)
        inst, ans = _as_square(c2[k], a2[k], u2[k], v2[k])
        ref = PROBLEM.verify(inst, ans)
        broken += 1
        if bool(ok2[k]) or ref.verified:
            disagree.append(f"broken {trial} {how} ({n}x{m}): bulk {why2[k]!r} ref {ref.reason!r}")
    assert checked >= 300 and broken >= 30
    assert not disagree, "\n".join(disagree[:20])


def test_float_tolerance_is_the_verifiers():
    rng = np.random.default_rng(12)
    c = _stack(rng, 1, 10, 10, np.float64) * 1e6
    a, u, v = _answer(c)
    atol = certificate_atol(c[0])
    u_in, u_out = u.copy(), u.copy()
    u_in[0, 0] -= 0.5 * atol  # within the tolerance: both accept
    u_out[0, 0] -= 3 * atol  # beyond: both refuse
    for uu, want in ((u_in, True), (u_out, False)):
        ok, _ = certify_stack(c, a, uu, v)
        ref = PROBLEM.verify(CostMatrix(c[0]), Assignment(a[0], uu[0], v[0]))
        assert bool(ok[0]) is want and ref.verified is want


# -- on the GPU --------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_cupy_stacks_checked_on_the_device(dtype):
    import cupy as cp

    rng = np.random.default_rng(31)
    for n, m in ((6, 6), (5, 11), (11, 5), (1, 1), (40, 40)):
        c = _stack(rng, 7, n, m, dtype)
        a, u, v = _answer(c)
        ok, why = certify_stack(cp.asarray(c), cp.asarray(a), cp.asarray(u), cp.asarray(v))
        assert isinstance(ok, cp.ndarray) and ok.device.id == cp.cuda.Device().id
        assert bool(ok.all()), why
        if n > m or n < 4:
            continue
        hows = ["duplicate", "range", "u_up", "u_down", "cell"] + (
            ["unassigned_v"] if n < m else []
        )
        for how in hows:
            c2, a2, u2, v2 = _broken(c, a, u, v, 3, how)
            okd, whyd = certify_stack(*(cp.asarray(x) for x in (c2, a2, u2, v2)))
            okh, whyh = certify_stack(c2, a2, u2, v2)
            assert okd.get().tolist() == okh.tolist() == [True] * 3 + [False] + [True] * 3, how
            assert whyd == whyh
