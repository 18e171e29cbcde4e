"""LAP matrices drawn on the GPU (issue #31): bit-identical to NumPy's one-by-one draws.

``seed_words`` must be NumPy's SeedSequence for every seed; the kernel's parallel layout
(each thread jumping PCG64 ahead, then striding) is run here by a model in Python
integers, against NumPy's own ``integers``; on a GPU the kernel itself is compared.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from matchbench.families.lap import datasets as L
from matchbench.families.lap.draw_gpu import draw_uniform_int32_device, seed_words
from matchbench.families.lap.problem import Assignment, CostMatrix, DeviceCostMatrix

SEEDS = [0, 1, 2, 17, 12345, 2**32 - 1, 2**32, 2**40 + 7, 2**63 + 5, 2**64 - 1]
M64, M128 = (1 << 64) - 1, (1 << 128) - 1
MULT = (2549297995355413924 << 64) + 4865540595714422341


def test_seed_words_are_numpys_seed_sequence():
    seeds = SEEDS + list(range(100, 400))
    words = seed_words(seeds)
    for k, s in enumerate(seeds):
        assert (words[k] == np.random.SeedSequence(s).generate_state(4, np.uint64)).all(), s
    with pytest.raises(ValueError, match=r"seeds must lie in \[0, 2\*\*64\), got -1"):
        seed_words([3, -1])
    with pytest.raises(ValueError, match="got 18446744073709551616"):
        seed_words([2**64])


def _jump(delta, inc):
    """The affine map of ``delta`` steps, as the kernel's pcg_jump (pcg_advance_lcg_128)."""
    acc_m, acc_p, cur_m, cur_p = 1, 0, MULT, inc
    while delta:
        if delta & 1:
            acc_m, acc_p = acc_m * cur_m & M128, (acc_p * cur_m + cur_p) & M128
        cur_p = (cur_m + 1) * cur_p & M128
        cur_m = cur_m * cur_m & M128
        delta >>= 1
    return acc_m, acc_p


def _kernel_model(seed, n, hi, threads):
    """lap_draw_uniform_i32 for one block of ``threads`` threads, in Python integers:
    (values, flagged)."""
    w = [int(x) for x in seed_words([seed])[0]]
    initstate, initseq = (w[0] << 64) | w[1], (w[2] << 64) | w[3]
    inc = ((initseq << 1) | 1) & M128
    s = ((inc + initstate) * MULT + inc) & M128
    r = hi + 1
    threshold = (0xFFFFFFFF - hi) % r
    P = n * n
    out, flagged = [0] * P, False
    step_m, step_p = _jump(threads, inc)
    for t in range(threads):
        m, p = _jump(t + 1, inc)
        st = (s * m + p) & M128
        for q in range(t, (P + 1) // 2, threads):
            hi64, lo64 = st >> 64, st & M64
            rot, x = hi64 >> 58, hi64 ^ lo64
            x = ((x >> rot) | (x << (64 - rot))) & M64 if rot else x
            for half in (0, 1):
                if 2 * q + half < P:
                    prod = ((x >> 32) if half else (x & 0xFFFFFFFF)) * r
                    flagged |= (prod & 0xFFFFFFFF) < threshold
                    out[2 * q + half] = prod >> 32
            st = (st * step_m + step_p) & M128
    return np.array(out, dtype=np.int64).reshape(n, n), flagged


@pytest.mark.parametrize(("n", "hi", "threads"), [(1, 1, 4), (3, 9, 4), (5, 64, 3), (8, 5120, 32), (7, 2**30 + 3, 4)])
def test_the_kernels_parallel_layout_draws_numpys_values(n, hi, threads):
    flags = 0
    for seed in SEEDS:
        want = np.random.default_rng(seed).integers(0, hi + 1, size=(n, n), dtype=np.int32)
        got, flagged = _kernel_model(seed, n, hi, threads)
        flags += flagged
        if not flagged:  # a rejection shifts the stream: the host draws those again
            assert (got == want).all(), seed
    if hi == 2**30 + 3:  # about a third of the draws are rejected at this range
        assert flags >= len(SEEDS) - 2


def test_draw_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="hi must lie in"):
        draw_uniform_int32_device([1, 2], 3, 0)
    with pytest.raises(ValueError, match="n must be positive"):
        draw_uniform_int32_device([1, 2], 0, 5)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 2, 7, 64, 65, 512])
@pytest.mark.parametrize("cost_range", ["n", "10n", 2**30 + 3])
def test_gpu_draws_are_bit_identical_to_numpy(n, cost_range):
    from matchbench.families.lap.draw_gpu import _launch

    seeds = SEEDS + list(range(1, 300 if n <= 65 else 20))
    hi = L.cost_high(n, cost_range)
    block = draw_uniform_int32_device(seeds, n, hi).get()
    for b, seed in enumerate(seeds):
        want = np.random.default_rng(seed).integers(0, hi + 1, size=(n, n), dtype=np.int32)
        assert block[b].tobytes() == want.tobytes(), (seed, n, cost_range)
    if cost_range == 2**30 + 3 and n >= 2:
        assert _launch(seeds, n, hi, redraw=False)[1].size > 0  # blocks with a rejected draw
        left = _launch(seeds, n, hi)[1].size  # after the device's redraw: NumPy's part
        assert left == 0 if n <= 7 else left > 0  # a third rejected: more than its slack at n >= 64


@pytest.mark.gpu
def test_rejected_draws_are_made_again_on_the_device():
    """n = 512, hi = 512: about one matrix in 33 has a rejected draw; each is made again
    from its raw draws on the device (none left for NumPy), value for value NumPy's."""
    from matchbench.families.lap.draw_gpu import _launch

    seeds = list(range(1000, 1200))
    flagged = _launch(seeds, 512, 512, redraw=False)[1]
    assert flagged.size >= 2
    block, left = _launch(seeds, 512, 512)
    assert left.size == 0
    for b in flagged.tolist() + [0, 1]:
        want = np.random.default_rng(seeds[b]).integers(0, 513, size=(512, 512), dtype=np.int32)
        assert block[b].get().tobytes() == want.tobytes(), seeds[b]


@pytest.mark.gpu
def test_bulk_on_the_gpu_gives_the_generators_instances():
    kws = [{"n": 64, "cost_range": "n", "dtype": "int32", "seed": s} for s in range(1, 3001)]
    kws += [{"n": 9, "cost_range": "10n", "seed": s} for s in (5, 6)]  # int32 default, another group
    kws += [{"n": 8, "dtype": "int64", "seed": 3}]  # not drawn on the GPU
    made = L.uniform_bulk(kws, device="gpu")
    # the large group stays on the device, the small ones are host arrays
    assert all(isinstance(m, DeviceCostMatrix) for m in made[:3000])
    assert not any(isinstance(m, DeviceCostMatrix) for m in made[3000:])
    assert made[0].n == 64 and made[0].dtype == np.int32 and made[0]._host is None  # nothing copied yet
    for kw, inst in zip(kws, made, strict=True):
        one = L.uniform(**kw)
        assert inst.costs.tobytes() == one.costs.tobytes() and (inst.name, inst.params) == (one.name, one.params)
    back = pickle.loads(pickle.dumps(made[5]))
    assert type(back) is CostMatrix and back.costs.tobytes() == made[5].costs.tobytes()


@pytest.mark.gpu
def test_device_blocks_are_solved_and_certified_in_place():
    from matchbench.families.lap.batch_gpu import SMEM_COST_BYTES, HungarianBatchGPU
    from matchbench.families.lap.problem import LAP

    kws = [{"n": 64, "seed": s} for s in range(1, 601)]
    made = L.uniform_bulk(kws, device="gpu")
    solver = HungarianBatchGPU(threads_per_block=0, smem_cost_bytes=SMEM_COST_BYTES)
    solver.prepare_batch(made)
    assert solver._batch.dev[0]["C"].data.ptr == made[0].stack.data.ptr  # the stack itself, no copy
    solver.run()
    answers = solver.result_batch()
    assert all(m._host is None for m in made)  # solved without a host copy
    problem = LAP()
    # wrong answers among them: a swapped assignment and a loosened dual
    broken = list(answers)
    a = answers[3]
    broken[3] = Assignment(a.row_to_col[[1, 0, *range(2, 64)]].copy(), a.u, a.v)
    broken[7] = Assignment(a.row_to_col, a.u + 1, a.v)
    shuffled = [made[k] for k in (9, 2, 5)] + made[10:20]  # not consecutive blocks: a gather
    verdicts = problem.verify_batch(made, broken) + problem.verify_batch(
        shuffled, [broken[9], broken[2], broken[5], *broken[10:20]]
    )
    assert all(m._host is None for k, m in enumerate(made) if k not in (3, 7))  # certified on the device
    alone = [problem.verify(L.uniform(**kw), b) for kw, b in zip(kws, broken, strict=True)]
    alone += [alone[9], alone[2], alone[5], *alone[10:20]]
    assert verdicts == alone
    assert not verdicts[3].verified and not verdicts[7].verified and sum(v.verified for v in verdicts) == 611


class _HostStack(np.ndarray):
    """A host array with CuPy's ``get()``: a device stack's stand-in where there is no GPU."""

    def get(self):
        return np.array(self)


def test_a_device_block_reads_as_a_cost_matrix_and_copies_only_when_asked():
    from matchbench.families.lap.problem import LAP, device_block

    host = np.random.default_rng(0).integers(0, 9, size=(4, 5, 5), dtype=np.int32)
    stack = host.view(_HostStack)
    insts = [DeviceCostMatrix(stack, b, f"m{b}", "lap_uniform", {"seed": b}) for b in range(4)]
    m = insts[2]
    assert (m.n, m.nbytes, m.dtype, m.problem) == (5, 100, np.dtype(np.int32), "lap") and m._host is None
    assert m.describe()["n_edges"] == 25 and m._host is None
    assert type(m.costs) is np.ndarray and m.costs.tobytes() == host[2].tobytes()
    back = pickle.loads(pickle.dumps(m))  # what leaves the process is a plain instance
    assert type(back) is CostMatrix and back.costs.tobytes() == host[2].tobytes() and back.name == "m2"
    assert device_block(insts[1:3]).tobytes() == host[1:3].tobytes()  # consecutive: a view
    assert device_block([insts[0], CostMatrix(host[1])]) is None
    # answers without duals are certified on the host, from the copies
    from scipy.optimize import linear_sum_assignment

    perms = [linear_sum_assignment(h)[1] for h in host]
    perms[1] = perms[1][::-1].copy()
    verdicts = LAP().verify_batch(insts, perms)
    assert verdicts == [LAP().verify(CostMatrix(h), p) for h, p in zip(host, perms, strict=True)]


def test_bulk_asked_for_the_gpu_gives_the_generators_instances_wherever_it_runs():
    # Without a usable GPU (CI) the group falls back to NumPy: the same instances.
    kws = [{"n": 128, "cost_range": "n", "seed": s} for s in range(1, 20)]  # 1.2 MiB: asks the GPU
    for kw, inst in zip(kws, L.uniform_bulk(kws, device="gpu"), strict=True):
        assert inst.costs.tobytes() == L.uniform(**kw).costs.tobytes()


def test_bulk_instances_tells_a_hook_its_tasks_device(monkeypatch):
    from types import SimpleNamespace

    from matchbench.runner import task as T

    seen = []

    def gen(n, seed=1):
        return L.uniform(n, seed=seed)

    def hook(kwargs_list, device=None):
        seen.append(device)
        return [gen(**kw) for kw in kwargs_list]

    gen.matchbench_bulk = hook
    monkeypatch.setattr("hydra.utils.get_method", lambda target: gen)
    tasks = [
        SimpleNamespace(instance_spec={"_target_": "x.gen", "n": 3, "seed": s}, device="gpu") for s in (1, 2)
    ]
    made = T.bulk_instances(tasks)
    assert seen == ["gpu"] and sorted(made) == [0, 1]
    assert made[1][0].costs.tobytes() == L.uniform(3, seed=2).costs.tobytes()


@pytest.mark.gpu
def test_a_gpu_workers_warm_up_runs_the_device_certificate(monkeypatch):
    from matchbench.core.problem import VERIFY_DEVICE
    from matchbench.families.lap.problem import LAP

    calls = []
    real = LAP._certify_on_device

    def spy(self, instances, solutions, part, n, out):
        real(self, instances, solutions, part, n, out)
        calls.append(all(out[k] is not None and out[k].verified for k in part))

    monkeypatch.setattr(LAP, "_certify_on_device", spy)
    LAP().warm_up()
    assert calls == []  # a CPU worker's warm-up stays on the host
    token = VERIFY_DEVICE.set("gpu")
    try:
        LAP().warm_up()
    finally:
        VERIFY_DEVICE.reset(token)
    assert calls == [True] * 4  # int32, int64, float32, float64, each certified on the device
