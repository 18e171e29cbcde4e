"""``hungarian_batch_gpu`` on a GPU: hundreds of LAPs per launch, every answer certified.

The instance set (:func:`_specs`): every kind of :mod:`_lap_cases` (integer ranges, negative
and huge int64, the whole int32 range, 0/1, constant and rank-one matrices, float32 on a
grid and over 1e30, float64 normal, tiny and constant, Euclidean) at n = 1, 2, 3, 31, 32,
33, 63, 64, 65, 128, 129, then random n up to 600 and a few at 512. They are solved in one
mixed batch (several launches: dtypes, block sizes, cost placements), one by one (batches
of one), with other block sizes and cost placements, and in large batches of one size.
Every answer must be certified by the LAP verifier from the kernel's duals and cost what
SciPy's assignment costs; and since each block runs exactly
:func:`~matchbench.families.lap.batch_gpu.sap_reference` (same steps, same ties, same
floating-point operations), the kernel's assignment and duals must equal the reference's
bit for bit, whatever the block size or the placement of the costs.

Throughput is measured by the ``batch_lap`` experiment (``docs/benchmarks/batch.md``), not
here.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from _lap_cases import KINDS, cost_mismatch, make_costs, make_instance

from matchbench.core.params import configured
from matchbench.families.lap import batch_gpu as LB
from matchbench.families.lap.batch_gpu import HungarianBatchGPU, sap_reference
from matchbench.families.lap.problem import LAP, CostMatrix

pytestmark = pytest.mark.gpu

PROBLEM = LAP()


def _specs() -> list[tuple[str, int, int]]:
    specs = []
    seed = 0
    for kind in KINDS:
        for n in (1, 2, 3, 31, 32, 33, 63, 64, 65, 128, 129):
            specs.append((kind, n, seed))
            seed += 1
    rng = np.random.default_rng(2024)
    for k in range(200):
        specs.append((KINDS[k % len(KINDS)], int(rng.integers(4, 200)), 1000 + k))
    for k in range(40):
        specs.append((KINDS[k % len(KINDS)], int(rng.integers(200, 601)), 2000 + k))
    for k, kind in enumerate(("int_n", "int_10n", "float32", "geometric", "int64_neg", "binary")):
        specs.append((kind, 512, 3000 + k))
    return specs


@pytest.fixture(scope="module")
def cases():
    """(instance, the reference's answer) per spec."""
    out = []
    for kind, n, seed in _specs():
        inst = make_instance(kind, n, seed)
        out.append((inst, sap_reference(inst.costs)))
    return out


def _solve(solver: HungarianBatchGPU, insts: list[CostMatrix]):
    solver.prepare_batch(insts)
    solver.run()
    return solver.result_batch()


def _failures(insts, answers, refs=None, scipy: bool = True) -> list[str]:
    bad = []
    for k, (inst, ans) in enumerate(zip(insts, answers, strict=True)):
        v = PROBLEM.verify(inst, ans)
        why = None if v.verified else f"not certified: {v.reason}"
        if why is None and scipy:
            why = cost_mismatch(inst, ans.row_to_col)
        if why is None and refs is not None:
            perm, u, vv = refs[k][:3]
            if not (
                np.array_equal(ans.row_to_col, perm)
                and np.array_equal(ans.u, u)
                and np.array_equal(ans.v, vv)
            ):
                why = "certified, but not the reference's answer bit for bit"
        if why:
            bad.append(f"{inst.name} ({inst.costs.dtype}): {why}")
    return bad


def _assert_ok(insts, answers, refs=None, scipy=True):
    assert len(answers) == len(insts)
    bad = _failures(insts, answers, refs, scipy)
    assert not bad, f"{len(bad)} of {len(insts)} failed:\n" + "\n".join(bad[:20])


def test_one_mixed_batch_every_answer_certified_and_equal_to_the_reference(cases):
    assert len(cases) >= 400
    insts = [c[0] for c in cases]
    s = configured(HungarianBatchGPU)
    answers = _solve(s, insts)
    _assert_ok(insts, answers, [c[1] for c in cases])
    c = s.counters()
    groups = LB.plan_groups([(i.n, i.costs.dtype) for i in insts], smem_limit=LB._smem_limit(),
                            sms=LB._sm_count())
    assert c["batch_size"] == len(insts) and c["host_syncs"] == 0
    assert c["kernel_launches"] == c["groups"] == len(groups) >= 8
    assert c["dijkstra_steps"] == sum(r[3] for _, r in cases)
    assert c["initial_assignments"] == sum(r[4] for _, r in cases)
    assert s.timings()["solve"] > 0


def test_batches_of_one(cases):
    s = configured(HungarianBatchGPU)
    for inst, ref in cases[::3]:
        s.prepare(inst)
        s.run()
        ans = s.result()
        _assert_ok([inst], [ans], [ref])
        assert s.counters()["batch_size"] == 1 and s.counters()["kernel_launches"] == 1


@pytest.mark.parametrize(
    "params",
    [
        {"threads_per_block": 32},  # one warp: 19 columns per thread at n = 600, no block barrier
        {"threads_per_block": 96},  # three warps: a block size that is no power of two
        {"threads_per_block": 1024},  # most threads own no column for small n
        {"smem_cost_bytes": 0},  # every matrix read from global memory
        {"smem_cost_bytes": LB.SMEM_COST_BYTES_MAX},  # up to n = 160 (float64) in shared memory
    ],
    ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()),
)
def test_block_sizes_and_cost_placements_give_the_same_answers(cases, params):
    sub = [c for k, c in enumerate(cases) if k % 2 == 0 or c[0].n >= 300]
    insts = [c[0] for c in sub]
    answers = _solve(configured(HungarianBatchGPU, **params), insts)
    _assert_ok(insts, answers, [c[1] for c in sub], scipy=False)


@pytest.mark.parametrize(
    ("kind", "n", "count"),
    [
        ("int_n", 64, 3000),
        ("float32", 64, 2000),
        ("int_10n", 33, 2500),
        ("float64", 32, 1000),
        ("float32", 512, 200),
        ("int_n", 512, 200),
        ("constant", 256, 100),
        ("int_n", 1, 5000),
    ],
)
def test_large_batches_of_one_size(kind, n, count):
    insts = [make_instance(kind, n, 10_000 + s) for s in range(count)]
    s = configured(HungarianBatchGPU)
    answers = _solve(s, insts)
    assert s.counters()["kernel_launches"] == 1
    # all certified; SciPy's cost and the reference on a sample
    _assert_ok(insts, answers, scipy=False)
    pick = list(range(0, count, max(1, count // 25)))
    _assert_ok(
        [insts[k] for k in pick],
        [answers[k] for k in pick],
        [sap_reference(insts[k].costs) for k in pick],
    )


def test_repetitions_reuse_the_upload_and_a_new_batch_replaces_it():
    insts = [make_instance("int_n", n, n) for n in (5, 64, 100, 512)]
    s = configured(HungarianBatchGPU)
    first = _solve(s, insts)
    held = s._batch
    for _ in range(2):
        again = _solve(s, insts)
        assert s._batch is held
        for a, b in zip(first, again, strict=True):
            assert np.array_equal(a.row_to_col, b.row_to_col) and np.array_equal(a.u, b.u)
    other = insts[::-1]
    answers = _solve(s, other)
    assert s._batch is not held
    _assert_ok(other, answers)


def test_padded_rectangular_instances():
    rng = np.random.default_rng(3)
    raws = [rng.integers(0, 100, (40, 65)).astype(np.int32), rng.random((70, 9))]
    insts = [CostMatrix.from_array(c, name=f"rect{k}", pad=True) for k, c in enumerate(raws)]
    answers = _solve(configured(HungarianBatchGPU), insts)
    _assert_ok(insts, answers)


def test_mixed_dtypes_of_one_size_go_to_separate_launches():
    insts = [
        CostMatrix(make_costs(kind, 48, 1)) for kind in ("int_n", "int64_neg", "float32", "float64")
    ]
    s = configured(HungarianBatchGPU)
    _assert_ok(insts, _solve(s, insts))
    assert s.counters()["kernel_launches"] == 4


def test_skip_reasons():
    s = configured(HungarianBatchGPU)
    assert s.skip(make_instance("int_n", 600, 1)) == (False, None)
    too_big = LB.max_n(LB._smem_limit()) + 1
    fake = types.SimpleNamespace(n=too_big, dtype=np.dtype(np.int32), nbytes=4 * too_big**2)
    skip, reason = s.skip(fake)
    assert skip and "shared memory" in reason and "cu_tree" in reason
