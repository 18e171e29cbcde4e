"""``matchbench.lap.solve_batch``: stacks of LAPs from arrays, answers on the same device.

CPU tests run the NumPy path (SciPy per problem, duals derived by the LAP verifier's
:func:`~matchbench.families.lap.problem.derive_duals`; on a GPU machine ``_gpu_usable`` is
patched off where the host path is meant), check objectives against SciPy and every
answer with :func:`~matchbench.lap.certify_stack`, and the errors. GPU tests solve
hundreds of random CuPy stacks (sizes, shapes, dtypes, batch sizes), keep the answers on
the input's device, catch a planted wrong answer with ``verify=True``, and compare with
:class:`~matchbench.families.lap.batch_gpu.HungarianBatchGPU` bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import matchbench.lap as public
from matchbench.core.errors import AnswerError
from matchbench.families.lap import api
from matchbench.families.lap.problem import certificate_atol
from matchbench.lap import BatchAssignment, certify_stack, solve_batch

DTYPES = (np.int32, np.int64, np.float32, np.float64)


@pytest.fixture
def host_only(monkeypatch):
    """The SciPy path, also on a machine with a GPU."""
    monkeypatch.setattr(api, "_gpu_usable", lambda: False)


def _stack(rng, B, n, m, dtype, lo=-50, hi=100):
    if np.dtype(dtype).kind == "i":
        return rng.integers(lo, hi, (B, n, m)).astype(dtype)
    return (rng.random((B, n, m)) * (hi - lo) + lo).astype(dtype)


def _scipy_objectives(c: np.ndarray, maximize: bool) -> list:
    out = []
    for k in range(c.shape[0]):
        r, cols = linear_sum_assignment(c[k], maximize=maximize)
        picked = c[k][r, cols]
        out.append(
            int(picked.sum(dtype=np.int64))
            if c.dtype.kind == "i"
            else float(picked.astype(np.float64).sum())
        )
    return out


def _check(c: np.ndarray, res: BatchAssignment, maximize: bool) -> None:
    """Certified, costing what SciPy's assignment costs, shapes and dtypes as documented."""
    B, n, m = c.shape
    a = api._host(res.assignment)
    obj = api._host(res.objective)
    u, v = api._host(res.u), api._host(res.v)
    dual = np.int64 if c.dtype.kind == "i" else np.float64
    assert a.shape == (B, n) and a.dtype == np.int64
    assert obj.shape == (B,) and obj.dtype == dual
    assert u.shape == (B, n) and v.shape == (B, m) and u.dtype == v.dtype == dual
    if n > m:
        assert ((a == -1).sum(axis=1) == n - m).all()
    ok, why = certify_stack(c, a, u, v, maximize=maximize)
    assert ok.all(), [w for w in why if w][:5]
    want = _scipy_objectives(c, maximize)
    for k in range(B):
        rows = np.flatnonzero(a[k] >= 0)
        got = c[k][rows, a[k][rows]]
        got = (
            int(got.sum(dtype=np.int64))
            if c.dtype.kind == "i"
            else float(got.astype(np.float64).sum())
        )
        assert (
            got == obj[k] if c.dtype.kind == "i" else abs(got - obj[k]) <= 1e-9 * max(1, abs(got))
        )
        if c.dtype.kind == "i":
            assert got == want[k], (k, got, want[k])
        else:
            assert abs(got - want[k]) <= 2 * max(n, m) * certificate_atol(c[k]) + 1e-9


def test_public_module_reexports_the_api():
    assert public.solve_batch is api.solve_batch and public.BatchAssignment is api.BatchAssignment
    assert set(public.__all__) == {"BatchAssignment", "certify_stack", "solve_batch"}


def test_doctests():
    import doctest

    from matchbench.families.lap import bulk

    assert doctest.testmod(api).failed == 0
    assert doctest.testmod(bulk).failed == 0


# -- the host path -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("n", "m"), [(1, 1), (2, 2), (8, 8), (5, 9), (9, 5), (1, 6), (6, 1), (25, 25)]
)
@pytest.mark.parametrize("maximize", [False, True])
def test_host_path_matches_scipy_and_is_certified(host_only, dtype, n, m, maximize):
    rng = np.random.default_rng(n * 31 + m)
    c = _stack(rng, 5, n, m, dtype)
    res = solve_batch(c, maximize=maximize, verify=True)
    assert isinstance(res, BatchAssignment)
    assert all(isinstance(x, np.ndarray) for x in (res.assignment, res.objective, res.u, res.v))
    _check(c, res, maximize)


def test_hundreds_of_random_stacks_on_the_host(host_only):
    rng = np.random.default_rng(77)
    total = 0
    for trial in range(40):
        dtype = DTYPES[trial % 4]
        n, m = int(rng.integers(1, 20)), int(rng.integers(1, 20))
        B = int(rng.integers(1, 12))
        c = _stack(rng, B, n, m, dtype)
        maximize = bool(trial % 3 == 0)
        _check(c, solve_batch(c, maximize=maximize), maximize)
        total += B
    assert total >= 200


def test_frozen_result_and_a_single_matrix(host_only):
    c = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]], dtype=np.int64)
    res = solve_batch(c)
    assert res.assignment.tolist() == [1, 0, 2] and res.objective.shape == ()
    assert int(res.objective) == 5 and res.u.shape == (3,) and res.v.shape == (3,)
    assert int(res.u.sum() + res.v.sum()) == 5
    with pytest.raises(AttributeError):
        res.assignment = None  # type: ignore[misc]


def test_ties_and_constant_matrices(host_only):
    c = np.stack(
        [np.full((7, 7), 3, np.int32), np.zeros((7, 7), np.int32), np.eye(7, dtype=np.int32)]
    )
    res = solve_batch(c, verify=True)
    assert res.objective.tolist() == [21, 0, 0]
    assert all(sorted(r) == list(range(7)) for r in res.assignment.tolist())


def test_int64_costs_beyond_scipys_float_precision(host_only):
    # SciPy rounds costs this large; the host path falls back to exact arithmetic when its
    # assignment cannot be certified, so verify=True still passes.
    n = 12
    lim = (2**62) // (2 * n + 2)
    rng = np.random.default_rng(3)
    c = rng.integers(-lim, lim, (4, n, n), dtype=np.int64, endpoint=True)
    res = solve_batch(c, verify=True)
    assert certify_stack(c, res.assignment, res.u, res.v)[0].all()


def test_int32_extremes_maximized(host_only):
    i32 = np.iinfo(np.int32)
    c = np.array([[[i32.min, i32.max], [i32.max, i32.min]], [[0, i32.min], [i32.min, 0]]], np.int32)
    res = solve_batch(c, maximize=True, verify=True)
    assert res.objective.tolist() == [2 * i32.max, 0] and res.objective.dtype == np.int64


def test_dlpack_input_on_the_host(host_only):
    c = np.random.default_rng(0).random((3, 6, 4))

    class Tensor:  # only the DLPack protocol, as a CPU torch/JAX tensor offers
        def __dlpack__(self, **kw):
            return c.__dlpack__(**kw)

        def __dlpack_device__(self):
            return c.__dlpack_device__()

    res = solve_batch(Tensor(), verify=True)
    assert isinstance(res.assignment, np.ndarray)
    ref = solve_batch(c)
    np.testing.assert_array_equal(res.assignment, ref.assignment)
    assert solve_batch(c.tolist()).objective.tolist() == ref.objective.tolist()


@pytest.mark.parametrize(
    ("shape", "a_shape", "u_shape", "v_shape"),
    [
        ((0, 4, 5), (0, 4), (0, 4), (0, 5)),
        ((3, 0, 5), (3, 0), (3, 0), (3, 5)),
        ((3, 4, 0), (3, 4), (3, 4), (3, 0)),
        ((0, 0, 0), (0, 0), (0, 0), (0, 0)),
        ((0, 3), (0,), (0,), (3,)),
    ],
)
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_empty_inputs(host_only, shape, a_shape, u_shape, v_shape, dtype):
    res = solve_batch(np.zeros(shape, dtype), verify=True)
    assert res.assignment.shape == a_shape and res.u.shape == u_shape and res.v.shape == v_shape
    assert res.objective.shape == ((shape[0],) if len(shape) == 3 else ())
    assert (res.objective == 0).all() and (res.u == 0).all() and (res.v == 0).all()
    assert (res.assignment == -1).all()  # m = 0: no row has a column


@pytest.mark.parametrize(
    "dtype", [np.uint8, np.int16, np.float16, np.bool_, np.complex64, np.uint64]
)
def test_other_dtypes_are_a_type_error_naming_the_dtype(dtype):
    with pytest.raises(TypeError, match=f"dtype {np.dtype(dtype)}"):
        solve_batch(np.zeros((2, 3, 3), dtype))


@pytest.mark.parametrize("shape", [(5,), (2, 2, 2, 2), ()])
def test_other_ranks_are_a_value_error(shape):
    with pytest.raises(ValueError, match=r"must be \(B, n, m\) or \(n, m\)"):
        solve_batch(np.zeros(shape, np.float64))


def test_no_array_is_a_type_error():
    with pytest.raises(TypeError, match="costs is a str"):
        solve_batch("costs")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_costs_name_the_problem(bad):
    c = np.ones((4, 3, 5))
    c[2, 1, 4] = bad
    with pytest.raises(ValueError, match=rf"problem 2: cost c\[1, 4\] = {bad} is not finite"):
        solve_batch(c)


def test_overflowing_magnitudes_name_the_problem():
    c = np.ones((3, 4, 4))
    c[1, 0, 0] = 1e308
    with pytest.raises(ValueError, match="problem 1: cost magnitudes up to 1e"):
        solve_batch(c)
    c = np.zeros((2, 4, 4), np.int64)
    c[1, 2, 2] = -(2**61)
    with pytest.raises(ValueError, match="problem 1: int64 costs up to 2305843009213693952"):
        solve_batch(c)


@pytest.mark.parametrize("tpb", [48, 2048, -32, True, 64.0])
def test_bad_block_size(tpb):
    with pytest.raises(ValueError, match="solve_batch: threads_per_block must be a multiple of 32"):
        solve_batch(np.zeros((1, 2, 2)), threads_per_block=tpb)


def test_verify_catches_a_planted_wrong_answer(host_only, monkeypatch):
    real = api._solve_host

    def wrong(sq, tpb):
        a, u, v = real(sq, tpb)
        a = a.copy()
        a[3, [0, 1]] = a[3, [1, 0]]  # another permutation, same duals: not tight
        return a, u, v

    monkeypatch.setattr(api, "_solve_host", wrong)
    c = np.random.default_rng(4).integers(0, 1000, (6, 9, 9)).astype(np.int32)
    solve_batch(c)  # unchecked: no error
    with pytest.raises(AnswerError, match=r"problem 3 is not certified: complementary slackness"):
        solve_batch(c, verify=True)


# -- on the GPU --------------------------------------------------------------------------------


def _gpu_cases():
    rng = np.random.default_rng(2025)
    cases = []
    for n, m in (
        (1, 1),
        (2, 2),
        (31, 31),
        (32, 32),
        (33, 33),
        (64, 64),
        (100, 100),
        (129, 129),
        (200, 200),
    ):
        cases.append((n, m))
    for _ in range(30):
        cases.append((int(rng.integers(1, 90)), int(rng.integers(1, 90))))
    return cases


@pytest.mark.gpu
def test_hundreds_of_cupy_stacks_match_scipy_and_stay_on_their_device():
    import cupy as cp

    rng = np.random.default_rng(99)
    total = 0
    for idx, (n, m) in enumerate(_gpu_cases()):
        dtype = DTYPES[idx % 4]
        B = int(rng.choice([1, 3, 17, 64]))
        maximize = idx % 5 == 4
        c = _stack(rng, B, n, m, dtype, lo=-(n + 5) * 3, hi=(n + 5) * 7)
        dc = cp.asarray(c)
        res = solve_batch(dc, maximize=maximize, verify=True)
        for x in (res.assignment, res.objective, res.u, res.v):
            assert isinstance(x, cp.ndarray) and x.device.id == dc.device.id
        ok, why = certify_stack(dc, res.assignment, res.u, res.v, maximize=maximize)
        assert isinstance(ok, cp.ndarray) and bool(ok.all()), why
        _check(c, res, maximize)
        total += B
    assert total >= 300


@pytest.mark.gpu
def test_numpy_input_on_a_gpu_machine_gives_numpy_and_the_same_answers():
    import cupy as cp

    c = np.random.default_rng(1).integers(0, 50, (20, 16, 23)).astype(np.int32)
    host = solve_batch(c, verify=True)
    dev = solve_batch(cp.asarray(c))
    assert isinstance(host.assignment, np.ndarray) and isinstance(host.u, np.ndarray)
    for f in ("assignment", "objective", "u", "v"):
        np.testing.assert_array_equal(getattr(host, f), getattr(dev, f).get())


@pytest.mark.gpu
def test_gpu_dlpack_and_non_contiguous_input():
    import cupy as cp

    base = cp.asarray(np.random.default_rng(2).random((5, 12, 12)))

    class Tensor:  # a GPU tensor seen only through DLPack (torch.cuda, JAX on GPU)
        def __dlpack__(self, **kw):
            return base.__dlpack__(**kw)

        def __dlpack_device__(self):
            return base.__dlpack_device__()

    res = solve_batch(Tensor(), verify=True)
    assert isinstance(res.assignment, cp.ndarray)
    ref = solve_batch(base)
    cp.testing.assert_array_equal(res.assignment, ref.assignment)
    view = base.transpose(0, 2, 1)  # not C-contiguous
    res_t = solve_batch(view, verify=True)
    _check(view.get(), res_t, False)


@pytest.mark.gpu
@pytest.mark.parametrize("tpb", [None, 32, 96, 256])
def test_block_sizes_give_identical_answers(tpb):
    import cupy as cp

    c = cp.asarray(np.random.default_rng(5).integers(0, 200, (50, 150, 150)).astype(np.int32))
    res = solve_batch(c, threads_per_block=tpb, verify=True)
    ref = solve_batch(c)
    for f in ("assignment", "u", "v"):
        cp.testing.assert_array_equal(getattr(res, f), getattr(ref, f))


@pytest.mark.gpu
def test_gpu_edge_cases():
    import cupy as cp

    for shape in ((0, 4, 4), (3, 0, 4), (3, 4, 0)):
        res = solve_batch(cp.zeros(shape, cp.float32), verify=True)
        assert isinstance(res.assignment, cp.ndarray) and res.assignment.shape == shape[:2]
    c = cp.ones((4, 3, 3))
    c[2, 0, 1] = cp.nan
    with pytest.raises(ValueError, match=r"problem 2: cost c\[0, 1\] = nan"):
        solve_batch(c)
    i32 = np.iinfo(np.int32)
    c = cp.asarray(np.array([[[i32.min, i32.max], [i32.max, i32.min]]], np.int32))
    assert solve_batch(c, maximize=True, verify=True).objective.tolist() == [2 * i32.max]


@pytest.mark.gpu
def test_verify_catches_a_planted_wrong_answer_on_the_gpu(monkeypatch):
    import cupy as cp

    real = api._solve_device

    def wrong(sq, work, tpb):
        a, objective, u, v = real(sq, work, tpb)
        u = u.copy()
        u[7, 2] -= 1  # row 2's assigned cell no longer tight
        return a, objective, u, v

    monkeypatch.setattr(api, "_solve_device", wrong)
    c = cp.asarray(np.random.default_rng(6).integers(0, 99, (10, 20, 20)).astype(np.int64))
    with pytest.raises(
        AnswerError,
        match=r"problem 7 is not certified: complementary slackness fails: assigned cell c\[2,",
    ):
        solve_batch(c, verify=True)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_bit_identical_to_the_batch_solver(dtype):
    import cupy as cp

    from matchbench.families.lap.batch_gpu import SMEM_COST_BYTES, HungarianBatchGPU
    from matchbench.families.lap.problem import CostMatrix

    rng = np.random.default_rng(8)
    for n, B in ((1, 5), (33, 40), (128, 20), (300, 6)):
        c = _stack(rng, B, n, n, dtype, lo=0, hi=n + 1)
        res = solve_batch(cp.asarray(c))
        # the configured defaults (conf/algorithm/hungarian_batch_gpu.yaml), without Hydra
        s = HungarianBatchGPU(threads_per_block=0, smem_cost_bytes=SMEM_COST_BYTES)
        s.prepare_batch([CostMatrix(c[k]) for k in range(B)])
        s.run()
        answers = s.result_batch()
        for k, ans in enumerate(answers):
            np.testing.assert_array_equal(res.assignment[k].get(), ans.row_to_col)
            np.testing.assert_array_equal(res.u[k].get(), ans.u)
            np.testing.assert_array_equal(res.v[k].get(), ans.v)


@pytest.mark.gpu
def test_a_stack_on_another_gpu_is_solved_there():
    import cupy as cp

    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    c = np.random.default_rng(10).integers(0, 50, (8, 20, 30)).astype(np.int32)
    with cp.cuda.Device(1):
        dc = cp.asarray(c)
    with cp.cuda.Device(0):
        res = solve_batch(dc, verify=True)
    for x in (res.assignment, res.objective, res.u, res.v):
        assert x.device.id == 1
    _check(c, res, False)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_finish_kernel_gathers_sums_and_finds_the_first_failed_block(dtype):
    """``lap_batch_finish_*`` directly: the int64 assignment of the r real rows, each
    objective from the caller's costs (exact for integers), out-of-range columns adding
    nothing, and the first problem whose stats carry an error code."""
    import cupy as cp

    from matchbench.families.lap.batch_gpu import DTYPE_SUFFIX
    from matchbench.gpu.kernels import get_module

    rng = np.random.default_rng(12)
    B, r, N = 37, 45, 50
    W = _stack(rng, B, r, N, dtype, lo=-1000, hi=1000)
    r2c = np.stack([rng.permutation(N)[:N] for _ in range(B)]).astype(np.int32)
    r2c[3, 4] = -1
    r2c[6, 0] = N + 7  # a failed block's garbage: adds nothing
    stats = np.zeros((B, 3), np.int64)
    stats[[9, 5, 30], 1] = [2, 1, 3]
    dual = np.int64 if np.dtype(dtype).kind == "i" else np.float64
    assign = cp.full((B, r), -5, dtype=cp.int64)
    obj = cp.zeros(B, dtype=dual)
    first = cp.asarray(np.array([B], np.uint64))
    get_module("lap_batch").get_function(f"lap_batch_finish_{DTYPE_SUFFIX[np.dtype(dtype)]}")(
        (3,), (64,),  # 8 warps for 37 problems: the grid-stride loop too
        (cp.asarray(W), cp.asarray(r2c), cp.asarray(stats), np.int64(B), np.int64(r), np.int64(N),
         np.int64(N), assign, obj, first),
    )
    np.testing.assert_array_equal(assign.get(), r2c[:, :r].astype(np.int64))
    for k in range(B):
        cols = r2c[k, :r]
        ok = (cols >= 0) & (cols < N)
        want = W[k][np.flatnonzero(ok), cols[ok]].astype(dual).sum()
        got = obj[k].get()
        assert got == want if dual is np.int64 else abs(got - want) <= 1e-9 * max(1.0, abs(want))
    assert int(first.get()[0]) == 5


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_value_check_kernel_is_the_largest_magnitude_or_inf(dtype):
    import cupy as cp

    rng = np.random.default_rng(13)
    c = (rng.random((23, 17, 29)) * 2000 - 1000).astype(dtype)
    c[4, 3, 2] = np.nan
    c[7, 0, 0] = -np.inf
    c[11, 16, 28] = np.inf
    c[15, 5, 5] = -1e30 if dtype is np.float64 else -3e38
    top = api._abs_max(cp, cp.asarray(c))
    want = np.abs(c.reshape(23, -1).astype(np.float64))
    want = np.where(np.isfinite(want), want, np.inf).max(axis=1)
    np.testing.assert_array_equal(top, want)
    np.testing.assert_array_equal(api._abs_max(np, c), want)


@pytest.mark.gpu
def test_gpu_value_errors_name_the_problem():
    import cupy as cp

    c = cp.ones((6, 4, 5), dtype=cp.float64)
    c[4, 1, 3] = 1e307  # 4 * 5 * 1e307 overflows float64
    with pytest.raises(ValueError, match="problem 4: cost magnitudes up to 1e\\+307"):
        solve_batch(c)
    c = cp.ones((6, 4, 5), dtype=cp.float32)
    c[3, 2, 1] = -cp.inf
    c[5, 0, 0] = cp.nan
    with pytest.raises(ValueError, match=r"problem 3: cost c\[2, 1\] = -inf is not finite \(1 such"):
        solve_batch(c)
    lim = (2**62) // (2 * 5 + 2)
    c = cp.zeros((3, 5, 4), dtype=cp.int64)
    c[1, 0, 0] = -(lim + 1)
    with pytest.raises(ValueError, match=f"problem 1: int64 costs up to {lim + 1} are too large"):
        solve_batch(c)
