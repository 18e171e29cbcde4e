"""``hungarian_batch_gpu`` without a GPU: the kernel's algorithm in numpy, and the host side.

:func:`~matchbench.families.lap.batch_gpu.sap_reference` is the per-block algorithm of
``kernels/lap/lap_batch.cu`` step for step; here it solves hundreds of instances (n = 1..600,
every kind of :mod:`_lap_cases`: ties, constant and negative matrices, huge ranges) and
every answer must be certified by the LAP verifier from its own duals and cost what
SciPy's costs. The rest: grouping, packing and unpacking of a batch (with the kernel
replaced by the reference, so offsets and orders are checked end to end), block size and
shared memory sizes, parameters, configs, memory estimates, and the kernel source's
constants against the driver's.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _lap_cases import KINDS, cost_mismatch, make_costs, make_instance, scipy_cost
from hydra.utils import instantiate
from omegaconf import OmegaConf

from matchbench.core.params import configured
from matchbench.core.solver import BaseSolver
from matchbench.families.lap import batch_gpu as LB
from matchbench.families.lap.batch_gpu import HungarianBatchGPU, sap_reference
from matchbench.families.lap.problem import LAP, Assignment, CostMatrix

PROBLEM = LAP()
ROOT = Path(__file__).resolve().parents[2]


def _specs() -> list[tuple[str, int, int]]:
    """(kind, n, seed): every kind at the edge sizes, then random sizes up to 600."""
    specs = []
    seed = 0
    for kind in KINDS:
        for n in (1, 2, 3, 31, 32, 33, 64):
            specs.append((kind, n, seed))
            seed += 1
    rng = np.random.default_rng(18)
    for k in range(160):
        specs.append((KINDS[k % len(KINDS)], int(rng.integers(4, 130)), 1000 + k))
    for k, n in enumerate((200, 257, 333, 512, 512, 600)):
        for kind in ("int_n", "int_10n", "float32", "int64_neg", "geometric"):
            specs.append((kind, n, 2000 + 10 * k + len(specs) % 7))
    return specs


SPECS = _specs()


def _certify(inst: CostMatrix, ans: Assignment) -> str | None:
    v = PROBLEM.verify(inst, ans)
    if not v.verified:
        return f"not certified: {v.reason}"
    return cost_mismatch(inst, ans.row_to_col)


def test_reference_certified_and_optimal_on_hundreds_of_instances():
    assert len(SPECS) >= 300
    failures = []
    for kind, n, seed in SPECS:
        inst = make_instance(kind, n, seed)
        perm, u, v, steps, initial = sap_reference(inst.costs)
        assert u.dtype == (np.int64 if inst.costs.dtype.kind == "i" else np.float64)
        why = _certify(inst, Assignment(perm, u, v))
        # Each augmentation scans at most n columns; the greedy start leaves n - initial.
        if why is None and not (0 <= steps <= (n - initial) * n and 1 <= initial <= n):
            why = f"steps {steps} or initial {initial} out of bounds"
        if why:
            failures.append(f"{inst.name}: {why}")
    assert not failures, f"{len(failures)} of {len(SPECS)}:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("kind", ["constant", "rank_one", "binary", "float64_const_neg"])
def test_reference_on_ties_ends_every_search_at_once(kind):
    # With every reduced cost zero after the column reduction, each free row's first step
    # finds a tied unassigned column (the tie-break prefers those): n - initial steps.
    n = 40
    costs = make_costs(kind, n, 3)
    _perm, _u, _v, steps, initial = sap_reference(costs)
    if kind in ("constant", "float64_const_neg"):
        assert initial == 1 and steps == n - 1
    assert steps <= (n - initial) * n


def test_reference_matches_brute_force_on_tiny_matrices():
    import itertools

    rng = np.random.default_rng(7)
    for trial in range(150):
        n = int(rng.integers(1, 7))
        costs = rng.integers(-3, 4, (n, n)).astype(np.int32 if trial % 2 else np.int64)
        if trial % 3 == 0:
            costs = (costs * 0.5).astype(np.float32)
        perm, u, v, _s, _i = sap_reference(costs)
        best = min(
            float(costs[np.arange(n), list(p)].astype(np.float64).sum())
            for p in itertools.permutations(range(n))
        )
        assert float(costs[np.arange(n), perm].astype(np.float64).sum()) == best
        assert PROBLEM.verify(CostMatrix(costs), Assignment(perm, u, v)).verified


def test_verifier_rejects_a_broken_reference_answer():
    inst = make_instance("int_n", 30, 5)
    perm, u, v, _s, _i = sap_reference(inst.costs)
    assert PROBLEM.verify(inst, Assignment(perm, u, v)).verified
    u2 = u.copy()
    u2[3] += 1  # infeasible dual
    assert not PROBLEM.verify(inst, Assignment(perm, u2, v)).verified
    p2 = perm.copy()
    p2[[0, 1]] = p2[[1, 0]]  # a different permutation with the same duals
    r = PROBLEM.verify(inst, Assignment(p2, u, v))
    assert (
        not r.verified
        or inst.costs[np.arange(30), p2].sum() == inst.costs[np.arange(30), perm].sum()
    )


def test_reference_on_a_padded_rectangular_instance():
    rng = np.random.default_rng(3)
    costs = rng.integers(0, 100, (40, 65)).astype(np.int32)
    inst = CostMatrix.from_array(costs, name="rect", pad=True)
    perm, u, v, _s, _i = sap_reference(inst.costs)
    assert PROBLEM.verify(inst, Assignment(perm, u, v)).verified
    rows, cols = inst.real_pairs(Assignment(perm))
    assert costs[rows, cols].sum() == scipy_cost(CostMatrix.from_array(costs, pad=True))


# -- host side: block sizes, shared memory, groups, packing ------------------------------


def test_auto_threads_by_n():
    want = {1: 32, 2: 32, 31: 32, 33: 32, 64: 32, 65: 32, 128: 32, 129: 64, 256: 64}
    want |= {257: 128, 384: 128, 512: 128, 513: 256, 1024: 256, 5000: 256}
    assert {n: LB.auto_threads(n) for n in want} == want


def test_smem_bytes_is_the_kernel_carve():
    # u, v, sp (8 bytes) + 64 scratch duals; costs; path, row4col, col4row (4 bytes) + 64
    # scratch ints; one flag byte per column.
    for n in (1, 33, 64, 512):
        for item, smem in ((4, False), (4, True), (8, True)):
            want = 8 * (3 * n + 64) + (item * n * n if smem else 0) + 4 * (3 * n + 64) + n
            assert LB.smem_bytes(n, item, smem) == want
    assert LB.smem_bytes(512, 4, False) < 20 * 1024  # n = 512 state fits 48 KiB easily
    assert LB.smem_bytes(64, 4, True) < 20 * 1024  # n = 64 float32 with its costs too
    for limit in (48 * 1024, 227 * 1024):
        m = LB.max_n(limit)
        assert LB.smem_bytes(m, 8, False) <= limit < LB.smem_bytes(m + 1, 8, False)


def test_plan_groups_by_dtype_block_size_and_placement():
    shapes = [
        (64, np.int32),  # 0: 32 threads, costs in shared memory (16 KiB)
        (64, np.float64),  # 1: 32 KiB > 16 KiB: global
        (512, np.int32),  # 2: 128 threads, global
        (300, np.int32),  # 3: 128 threads, global
        (50, np.int32),  # 4: 32 threads, shared
        (64, np.int32),  # 5
        (1, np.float32),  # 6: 32 threads, shared
        (600, np.int32),  # 7: 256 threads, global
        (400, np.int32),  # 8: 128 threads, global
    ]
    groups = LB.plan_groups(shapes, smem_cost_bytes=16 * 1024)
    by = {(g.dtype.name, g.threads_per_block, g.smem_costs): g for g in groups}
    assert set(by) == {
        ("int32", 32, True),
        ("float64", 32, False),
        ("int32", 128, False),
        ("int32", 256, False),
        ("float32", 32, True),
    }
    g = by[("int32", 128, False)]
    assert g.members == [2, 8, 3] and g.ns == [512, 400, 300]  # largest first
    assert g.kernel == "lap_batch_sap_i32"
    assert g.shared_bytes == LB.smem_bytes(512, 4, False)
    g = by[("int32", 32, True)]
    assert g.members == [0, 5, 4] and g.kernel == "lap_batch_sap_smem_i32"  # ties in input order
    assert g.shared_bytes == LB.smem_bytes(64, 4, True)
    assert sorted(k for g in groups for k in g.members) == list(range(len(shapes)))
    # the default keeps every matrix in global memory
    assert not any(g.smem_costs for g in LB.plan_groups(shapes))
    # a fixed block size: one group per dtype and placement
    groups = LB.plan_groups(shapes, threads_per_block=128, smem_cost_bytes=0)
    assert {(g.dtype.name, g.threads_per_block, g.smem_costs) for g in groups} == {
        ("int32", 128, False),
        ("float64", 128, False),
        ("float32", 128, False),
    }
    # a larger shared-memory budget takes the float64 n = 64 matrix in, if the block fits
    g = LB.plan_groups([(64, np.float64)], smem_cost_bytes=32 * 1024, smem_limit=227 * 1024)[0]
    assert g.smem_costs and g.kernel == "lap_batch_sap_smem_f64"
    g = LB.plan_groups([(64, np.float64)], smem_cost_bytes=32 * 1024, smem_limit=32 * 1024)[0]
    assert not g.smem_costs


def test_small_batches_of_large_instances_get_larger_blocks():
    # 100 LAPs of n = 512 on 132 SMs leave SMs idle: 512 threads; 2,000 fill them: auto's 128
    (g,) = LB.plan_groups([(512, np.int32)] * 100, sms=132)
    assert g.threads_per_block == 512 and g.members == list(range(100))
    (g,) = LB.plan_groups([(512, np.int32)] * 2000, sms=132)
    assert g.threads_per_block == LB.auto_threads(512) == 128
    # without the SM count, or a block size given, or small n: as before
    assert LB.plan_groups([(512, np.int32)] * 100)[0].threads_per_block == 128
    assert LB.plan_groups([(512, np.int32)] * 100, threads_per_block=64, sms=132)[0].threads_per_block == 64
    assert LB.plan_groups([(64, np.int32)] * 10, sms=132)[0].threads_per_block == 32
    # counted per size: 100 of n = 200 among 5,000 of n = 64
    shapes = [(64, np.int32)] * 5000 + [(200, np.int32)] * 100
    by = {g.ns[0]: g for g in LB.plan_groups(shapes, sms=132)}
    assert by[200].threads_per_block == 256 and by[64].threads_per_block == 32


def test_a_stack_of_one_size_is_planned_without_a_step_per_instance():
    shapes = [(64, np.int32)] * 200_000
    (g,) = LB.plan_groups(shapes, sms=132)
    assert g.members == list(range(200_000)) and g.shared_bytes == LB.smem_bytes(64, 4, False)
    # a bad shape is named by its first instance, as before
    with pytest.raises(ValueError, match="instance 3: cost dtype"):
        LB.plan_groups([(4, np.int32)] * 3 + [(4, np.int16)] * 2 + [(4, "bogus")])
    with pytest.raises(ValueError, match="instance 2: cost dtype bogus"):
        LB.plan_groups([(4, np.int32)] * 2 + [(4, "bogus")])
    with pytest.raises(ValueError, match="instance 1: n = 0"):
        LB.plan_groups([(4, np.int32), (0, np.int32), (0, np.int16)])


def test_plan_groups_refuses_what_the_kernel_cannot_hold():
    with pytest.raises(ValueError, match="instance 1: cost dtype uint8"):
        LB.plan_groups([(4, np.int32), (4, np.uint8)])
    with pytest.raises(ValueError, match=r"instance 0: n = 5000 needs \d+ bytes of shared memory"):
        LB.plan_groups([(5000, np.int32)], smem_limit=48 * 1024)
    assert LB.plan_groups([(LB.max_n(48 * 1024), np.int32)], smem_limit=48 * 1024)


@pytest.mark.parametrize(("n", "count", "dtype", "tpb", "smem_costs"), [
    (512, 100, np.int32, 0, 0), (512, 2000, np.int32, 0, 0), (200, 10, np.float64, 0, 0),
    (64, 10_000, np.float32, 0, 16 * 1024), (64, 10, np.int64, 0, 0), (33, 40, np.int32, 64, 16 * 1024),
    (128, 500, np.float32, 0, 200 * 1024),
])  # fmt: skip
def test_a_stacks_group_is_the_group_plan_groups_gives_its_instances(n, count, dtype, tpb, smem_costs):
    """``stack_group`` (both device-stack paths: the solver's and ``solve_batch``'s) plans
    one shape, yet picks what ``plan_groups`` picks for the stack's ``count`` instances:
    block size (the count decides ``small_batch_threads``), dtype and cost placement."""
    limit, sms = 232448, 132
    (want,) = LB.plan_groups([(n, dtype)] * count, threads_per_block=tpb, smem_cost_bytes=smem_costs,
                             smem_limit=limit, sms=sms)
    got = LB.stack_group(n, count, dtype, tpb, smem_costs, smem_limit=limit, sms=sms)
    assert (got.dtype, got.threads_per_block, got.smem_costs, got.kernel) == (
        want.dtype, want.threads_per_block, want.smem_costs, want.kernel)
    with pytest.raises(ValueError, match=r"instance 0: n = 5000 needs \d+ bytes"):
        LB.stack_group(5000, count, dtype, tpb, smem_costs, smem_limit=48 * 1024, sms=sms)


def _emulate_launch(group: LB.Group, flat: np.ndarray, meta: np.ndarray):
    """What a launch of the group's kernel writes, with sap_reference as each block."""
    total = int(meta[:, 2].sum())
    dual = np.int64 if group.dtype.kind == "i" else np.float64
    r2c = np.full(total, -7, dtype=np.int32)
    u = np.full(total, 99, dtype=dual)
    v = np.full(total, 99, dtype=dual)
    for co, vo, n in meta:
        costs = flat[co : co + n * n].reshape(n, n)
        p, uu, vv, _s, _i = sap_reference(costs)
        r2c[vo : vo + n], u[vo : vo + n], v[vo : vo + n] = p, uu, vv
    assert (r2c != -7).all()  # the vector offsets tile the answer arrays exactly
    return r2c, u, v


def test_pack_unpack_round_trip_in_input_order():
    rng = np.random.default_rng(11)
    kinds = ("int_n", "float32", "int64_neg", "float64", "constant")
    insts = [make_instance(kinds[k % len(kinds)], int(rng.integers(1, 90)), k) for k in range(60)]
    groups = LB.plan_groups([(i.n, i.costs.dtype) for i in insts], smem_cost_bytes=16 * 1024)
    assert len(groups) >= 5
    answers: list = [None] * len(insts)
    for g in groups:
        flat, meta = LB.pack_group([i.costs for i in insts], g)
        assert flat.dtype == g.dtype and flat.size == sum(n * n for n in g.ns)
        assert meta.dtype == np.int64 and meta.shape == (len(g.members), 3)
        assert list(meta[:, 2]) == g.ns and meta[0, 0] == 0 and meta[0, 1] == 0
        for k, ans in LB.unpack_group(g, meta, *_emulate_launch(g, flat, meta)):
            assert answers[k] is None
            answers[k] = ans
    for inst, ans in zip(insts, answers, strict=True):
        direct = sap_reference(inst.costs)
        assert ans.row_to_col.dtype == np.int64
        np.testing.assert_array_equal(ans.row_to_col, direct[0])
        np.testing.assert_array_equal(ans.u, direct[1])
        np.testing.assert_array_equal(ans.v, direct[2])
        assert PROBLEM.verify(inst, ans).verified


def test_uniform_batch_is_one_contiguous_block_array():
    insts = [make_instance("int_n", 64, s) for s in range(5)]
    (g,) = LB.plan_groups([(i.n, i.costs.dtype) for i in insts])
    flat, meta = LB.pack_group([i.costs for i in insts], g)
    np.testing.assert_array_equal(flat.reshape(5, 64, 64), np.stack([i.costs for i in insts]))
    assert list(meta[:, 0]) == [0, 4096, 8192, 12288, 16384]


def test_pack_group_checks_the_plan():
    insts = [make_instance("int_n", 8, 1)]
    (g,) = LB.plan_groups([(8, np.int32)])
    with pytest.raises(ValueError, match="do not match the plan"):
        LB.pack_group([make_costs("float32", 8, 1)], g)
    LB.pack_group([i.costs for i in insts], g)


# -- the solver's parameters, config and sizes ------------------------------------------


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"threads_per_block": 48}, "threads_per_block"),
        ({"threads_per_block": 2048}, "threads_per_block"),
        ({"threads_per_block": -32}, "threads_per_block"),
        ({"threads_per_block": True}, "threads_per_block"),
        ({"threads_per_block": 64.0}, "threads_per_block"),
        ({"threads": 48}, "threads_per_block"),  # the deprecated spelling, checked as the new
        ({"smem_cost_bytes": -1}, "smem_cost_bytes"),
        ({"smem_cost_bytes": 300 * 1024}, "smem_cost_bytes"),
        ({"smem_cost_bytes": "16KiB"}, "smem_cost_bytes"),
        ({"smem_cost_bytes": False}, "smem_cost_bytes"),
    ],
)
@pytest.mark.filterwarnings("ignore:algorithm.threads is deprecated:FutureWarning")
def test_rejects_bad_parameters_naming_the_solver(kw, match):
    with pytest.raises(ValueError, match=match) as err:
        configured(HungarianBatchGPU, **kw)
    assert "hungarian_batch_gpu" in str(err.value)


def test_accepts_good_parameters():
    assert configured(HungarianBatchGPU, threads_per_block=96, smem_cost_bytes=0).params == {
        "threads_per_block": 96,
        "smem_cost_bytes": 0,
    }
    s = configured(HungarianBatchGPU, threads_per_block=np.int64(1024))
    assert s.params["threads_per_block"] == 1024


def test_threads_is_the_deprecated_spelling_of_threads_per_block():
    with pytest.warns(FutureWarning, match=r"^algorithm\.threads is deprecated; use algorithm\.threads_per_block$"):
        s = configured(HungarianBatchGPU, threads=64)
    assert s.params == {"threads_per_block": 64, "smem_cost_bytes": LB.SMEM_COST_BYTES}


def test_config_instantiates_the_batchable_solver():
    s = instantiate(OmegaConf.load(ROOT / "conf" / "algorithm" / "hungarian_batch_gpu.yaml"))
    assert type(s) is HungarianBatchGPU and s.name == "hungarian_batch_gpu"
    assert s.problem == "lap" and s.device == "gpu" and s.batchable
    assert s.kernel_families == ("lap_batch",)
    assert s.params == {"threads_per_block": 0, "smem_cost_bytes": LB.SMEM_COST_BYTES}


def test_base_solver_is_not_batchable_by_default():
    class One(BaseSolver):
        name, problem = "one", "lap"

    s = One()
    assert One.batchable is False
    with pytest.raises(NotImplementedError):
        s.prepare_batch([])
    with pytest.raises(NotImplementedError):
        s.result_batch()


def test_estimate_bytes():
    inst = make_instance("int_n", 64, 1)
    one = HungarianBatchGPU.estimate_bytes(inst)
    assert one == 64 * 64 * 4 + 20 * 64 + 40
    f = make_instance("float64", 100, 1)
    assert HungarianBatchGPU.estimate_batch_bytes([inst, inst, f]) == 2 * one + (
        100 * 100 * 8 + 20 * 100 + 40
    )


def test_life_cycle_errors_without_a_prepared_batch():
    s = configured(HungarianBatchGPU)
    with pytest.raises(RuntimeError, match="run\\(\\) before prepare_batch"):
        s.run()
    with pytest.raises(RuntimeError, match="before run"):
        s.result_batch()
    assert s.timings() == {} and s.counters() == {}


def test_skip_names_the_reason_without_a_device():
    try:
        import cupy

        if cupy.is_available():
            pytest.skip("a GPU is present")
    except ImportError:
        pass
    skip, reason = configured(HungarianBatchGPU).skip(make_instance("int_n", 8, 1))
    assert skip and "no usable CUDA device" in reason


def test_kernel_source_agrees_with_the_driver():
    src = (ROOT / "kernels" / "lap" / "lap_batch.cu").read_text()
    codes = {int(c): name for name, c in re.findall(r"#define LAP_BATCH_E_(\w+) (\d+)", src)}
    assert set(codes) == set(LB.KERNEL_ERRORS)
    entries = set(re.findall(r"LAP_BATCH_ENTRY\((lap_batch_\w+),", src))
    want = {
        f"lap_batch_sap_{mid}{suf}" for mid in ("", "smem_") for suf in LB.DTYPE_SUFFIX.values()
    }
    assert entries == want
    # the carve: 64 scratch entries of each kind, as smem_bytes counts them
    assert "rv = sp + n;" in src and "(char*)(rv + 64)" in src and "(char*)(rk + 64)" in src
