"""Bulk LAP data (issue #31): generators in bulk, the vectorized certificate, stack files.

Bulk generation must give each instance bit-identical to one-by-one generation from its
seed; ``LAP.verify_batch`` must give the verdicts of ``LAP.verify`` on good and broken
answers; a ``.npy`` stack is read as its matrices, and hostile files are refused by name.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

from matchbench.core.errors import DatasetError
from matchbench.core.problem import VERIFY_DEVICE
from matchbench.families.lap import datasets as L
from matchbench.families.lap.problem import LAP, Assignment, CostMatrix
from matchbench.families.lap.refs import HungarianTree, ScipyLSA

PROBLEM = LAP()


@pytest.mark.parametrize(
    ("fn", "bulk", "kwargs"),
    [
        (L.uniform, L.uniform_bulk, {"n": 16, "cost_range": "n", "dtype": "int32"}),
        (L.uniform, L.uniform_bulk, {"n": 7, "cost_range": "10n", "dtype": "int64"}),
        (L.uniform, L.uniform_bulk, {"n": 33, "cost_range": "n/10"}),
        (L.uniform, L.uniform_bulk, {"n": 5, "cost_range": 1000}),
        (L.uniform_float, L.uniform_float_bulk, {"n": 9, "high": 3.5, "dtype": "float32"}),
        (L.uniform_float, L.uniform_float_bulk, {"n": 12}),
    ],
)  # fmt: skip
def test_bulk_generation_is_bit_identical_to_one_by_one(fn, bulk, kwargs):
    seeds = [1, 2, 3, 17, 10**9, 0, 5]
    kws = [dict(kwargs, seed=s) for s in seeds]
    made = bulk(kws)
    assert len(made) == len(kws)
    for kw, a in zip(kws, made, strict=True):
        b = fn(**kw)
        assert a.costs.dtype == b.costs.dtype and a.costs.shape == b.costs.shape
        assert a.costs.tobytes() == b.costs.tobytes()
        assert (a.name, a.family, a.params) == (b.name, b.family, b.params)
        assert a.describe() == b.describe() and a.nbytes == b.nbytes
        assert a.costs.flags.c_contiguous


@pytest.mark.parametrize(("fn", "bulk"), [(L.uniform, L.uniform_bulk), (L.uniform_float, L.uniform_float_bulk)])
def test_bulk_generation_in_threads_is_bit_identical(monkeypatch, fn, bulk):
    # Large groups are drawn by several threads, each instance from its own default_rng.
    monkeypatch.setattr(L, "BULK_THREAD_BYTES", 0)
    monkeypatch.setattr(L, "BULK_THREAD_MATRIX_BYTES", 0)
    monkeypatch.setattr(L, "bulk_threads", lambda: 3)
    kws = [{"n": 8, "seed": s} for s in range(1, 12)]
    made = bulk(kws)
    for kw, a in zip(kws, made, strict=True):
        assert a.costs.tobytes() == fn(**kw).costs.tobytes() and a.name == fn(**kw).name


def test_bulk_instances_stack_back_without_a_copy():
    from matchbench.families.lap.batch_gpu import Group, pack_group
    from matchbench.families.lap.problem import stacked

    made = L.uniform_bulk([{"n": 5, "seed": s} for s in range(1, 7)])
    costs = [m.costs for m in made]
    view = stacked(costs[1:5])
    assert np.shares_memory(view, costs[1]) and view.shape == (4, 5, 5)
    assert np.array_equal(view, np.stack(costs[1:5]))
    # not consecutive, other shapes, lone arrays: a copy, the same values
    for arrays in (costs[::2], [costs[0], costs[0]], [np.ones((5, 5)), np.zeros((5, 5))]):
        got = stacked(arrays)
        assert np.array_equal(got, np.stack(arrays)) and not np.shares_memory(got, arrays[0])
    group = Group(dtype=costs[0].dtype, threads_per_block=32, smem_costs=False, members=[2, 3, 4], ns=[5] * 3)
    flat, meta = pack_group(costs, group)
    assert np.shares_memory(flat, costs[2]) and np.array_equal(flat, np.concatenate([c.ravel() for c in costs[2:5]]))


def test_a_cpu_tasks_certificate_never_opens_the_gpu(monkeypatch):
    # Outside a GPU task (VERIFY_DEVICE "cpu", the default) even a large stack stays on
    # the host: CPU workers of a GPU machine must not take the device.
    from matchbench.families.lap import problem

    monkeypatch.setattr(problem, "GPU_CERTIFY_BYTES", 0)
    monkeypatch.setattr("matchbench.gpu.common.gpu_usable", lambda: pytest.fail("asked for the GPU"))
    inst = L.uniform(5, seed=1)
    assert PROBLEM.verify_batch([inst], [_solve(ScipyLSA, inst)])[0].verified


def test_bulk_generation_of_mixed_arguments_keeps_the_order():
    kws = [
        {"n": 4, "seed": 1},
        {"n": 6, "seed": 2},
        {"n": 4, "seed": 3, "dtype": "int64"},
        {"n": 6, "seed": 4},
    ]
    for kw, inst in zip(kws, L.uniform_bulk(kws), strict=True):
        assert (
            inst.costs.tobytes() == L.uniform(**kw).costs.tobytes()
            and inst.name == L.uniform(**kw).name
        )


def test_bulk_generation_refuses_what_the_generator_refuses():
    with pytest.raises(DatasetError, match="dtype must be int32 or int64"):
        L.uniform_bulk([{"n": 4, "seed": 1, "dtype": "float32"}])
    assert L.uniform.matchbench_bulk is L.uniform_bulk
    assert L.uniform_float.matchbench_bulk is L.uniform_float_bulk


# --------------------------------------------------------------------------- verify_batch


def _solve(solver_cls, inst):
    s = solver_cls()
    s.prepare(inst)
    s.run()
    return s.result()


def _instances():
    out = [L.uniform(n, seed=s) for n in (1, 2, 5, 16) for s in range(1, 6)]
    out += [L.uniform(8, cost_range="10n", seed=s, dtype="int64") for s in range(3)]
    out += [L.uniform_float(6, seed=s, dtype=d) for s in range(3) for d in ("float32", "float64")]
    out += [
        L.geometric(7, seed=2),
        CostMatrix(np.array([[-3, 2**20], [7, -(2**20)]], dtype=np.int32)),
    ]
    out += [CostMatrix(np.zeros((4, 4), dtype=np.int32), name="ties")]
    return out


def _mutations(inst, good):
    """Broken answers of ``inst`` (whose optimal answer is ``good``)."""
    n = inst.n
    perm = np.asarray(good.row_to_col)
    out = []
    if n >= 2:
        swapped = perm.copy()
        swapped[[0, 1]] = swapped[[1, 0]]
        out.append(Assignment(swapped))  # another permutation: optimal only on ties
        dup = perm.copy()
        dup[0] = dup[1]
        out.append(Assignment(dup))  # not a permutation
    out.append(Assignment(perm + n))  # out of range
    out.append(Assignment(perm[:-1]))  # wrong shape
    out.append(Assignment(perm.astype(np.float64)))  # wrong dtype
    out.append(perm.copy())  # a bare array: fine
    if good.u is not None:
        u = good.u.copy()
        u[0] += 1  # infeasible, or off slack
        out.append(Assignment(perm, u, good.v))
        out.append(Assignment(perm, good.u, None))  # one dual only
        out.append(Assignment(perm, good.u.astype(np.float64), good.v.astype(np.float64)))
        out.append(Assignment(perm, good.u[:-1], good.v))
        lower = good.u - 1  # feasible but a duality gap
        out.append(Assignment(perm, lower, good.v))
    return out


@pytest.fixture(params=["host", pytest.param("gpu", marks=pytest.mark.gpu)])
def certificate(request, monkeypatch):
    """Where verify_batch runs the family's stack certificate (certify_stack) for a GPU
    task: on the host (no usable GPU), or on the GPU for every stack (its threshold
    lowered to 0 bytes)."""
    from matchbench.families.lap import bulk, problem

    seen: list[str] = []
    real = bulk.certify_stack

    def spy(costs, *args, **kw):
        seen.append(type(costs).__module__.split(".")[0])
        return real(costs, *args, **kw)

    monkeypatch.setattr(bulk, "certify_stack", spy)
    if request.param == "host":
        monkeypatch.setattr("matchbench.gpu.common.gpu_usable", lambda: False)
    else:
        monkeypatch.setattr(problem, "GPU_CERTIFY_BYTES", 0)
    device = VERIFY_DEVICE.set("gpu")  # as the runner sets it for a GPU task
    yield request.param
    VERIFY_DEVICE.reset(device)
    if seen:  # the stacks went where asked (no silent fall-back to the host)
        assert set(seen) == {"numpy" if request.param == "host" else "cupy"}, seen


@pytest.mark.parametrize("solver_cls", [ScipyLSA, HungarianTree])
def test_verify_batch_agrees_with_verify_on_good_and_broken_answers(solver_cls, certificate):
    instances, answers = [], []
    for inst in _instances():
        good = _solve(solver_cls, inst)
        for answer in [good, *_mutations(inst, good)]:
            instances.append(inst)
            answers.append(answer)
    batch = PROBLEM.verify_batch(instances, answers)
    alone = [PROBLEM.verify(i, a) for i, a in zip(instances, answers, strict=True)]
    assert len(batch) == len(alone)
    for k, (a, b) in enumerate(zip(batch, alone, strict=True)):
        assert a.verified == b.verified and a.reason == b.reason, (k, a, b)
        assert a.bound == b.bound and a.reference == b.reference
        assert a.objective == b.objective or (np.isnan(a.objective) and np.isnan(b.objective))
    assert sum(v.verified for v in batch) > len(_instances())  # the good ones, at least
    assert sum(not v.verified for v in batch) > len(_instances())  # and the broken ones fail


def test_verify_batch_of_nothing_and_of_unequal_lengths():
    assert PROBLEM.verify_batch([], []) == []
    with pytest.raises(ValueError, match="2 instances but 1 answers"):
        PROBLEM.verify_batch([L.uniform(3), L.uniform(3)], [np.arange(3)])


def test_verify_batch_is_chunked_without_changing_verdicts(monkeypatch, certificate):
    import matchbench.families.lap.problem as P

    monkeypatch.setattr(P, "VERIFY_CHUNK_BYTES", 3 * 16 * 16 * 4)  # three instances a chunk
    insts = [L.uniform(16, seed=s) for s in range(10)]
    answers = [_solve(ScipyLSA, i) for i in insts]
    answers[4] = Assignment(np.roll(answers[4].row_to_col, 1))
    assert PROBLEM.verify_batch(insts, answers) == [
        PROBLEM.verify(i, a) for i, a in zip(insts, answers, strict=True)
    ]


# --------------------------------------------------------------------------- stack files


@pytest.mark.parametrize("gpu", [pytest.param(True, marks=pytest.mark.gpu), False])
def test_stack_file_for_a_gpu_task_gives_the_same_instances(tmp_path, gpu):
    from matchbench.families.lap.problem import DeviceCostMatrix

    data = np.random.default_rng(1).integers(0, 1000, size=(40, 128, 128), dtype=np.int32)  # 2.5 MiB
    np.save(tmp_path / "s.npy", data)
    np.save(tmp_path / "f.npy", data.astype(np.float32))  # not int32: read on the host
    order = [*range(5, 30), 2, 0, 39]  # consecutive, then gathered
    kws = [{"path": str(tmp_path / "s.npy"), "seed": i} for i in order]
    kws += [{"path": str(tmp_path / "f.npy"), "seed": 3}]
    made = L.stack_bulk(kws, device="gpu")
    for kw, inst in zip(kws, made, strict=True):
        one = L.stack(**kw)
        assert inst.costs.tobytes() == one.costs.tobytes() and inst.costs.dtype == one.costs.dtype
        assert (inst.name, inst.family, inst.params) == (one.name, one.family, one.params)
    assert all(isinstance(m, DeviceCostMatrix) for m in made[:-1]) == gpu
    assert not isinstance(made[-1], DeviceCostMatrix)
    if gpu:
        assert made[0].stack[3].get().tobytes() == data[8].tobytes()
        assert made[-2].stack[made[-2].index].get().tobytes() == data[39].tobytes()
    with pytest.raises(DatasetError, match="index 40 is outside"):
        L.stack_bulk([{"path": str(tmp_path / "s.npy"), "seed": 40}], device="gpu")


@pytest.mark.gpu
@pytest.mark.parametrize("rows, threads, buffers", [(3, 4, 3), (1, 1, 2), (7, 16, 3), (5, 2, 4)])
def test_a_stack_read_in_many_chunks_is_the_files_matrices(monkeypatch, rows, threads, buffers):
    """The pinned pipeline of ``_device_stack`` over many chunks (a chunk of ``rows``
    matrices, ``buffers`` pinned buffers, ``threads`` readers): every matrix where it
    belongs, for consecutive and gathered indices, a last chunk short or full."""
    data = np.random.default_rng(4).integers(-(2**31), 2**31 - 1, size=(61, 33, 33), dtype=np.int64).astype(np.int32)
    one = data[0].nbytes
    monkeypatch.setattr(L, "STACK_UPLOAD_CHUNK_BYTES", rows * one)
    monkeypatch.setattr(L, "STACK_UPLOAD_BUFFERS", buffers)
    monkeypatch.setattr(L, "read_threads", lambda: threads)
    rng = np.random.default_rng(rows)
    for idx in (np.arange(61), np.arange(10, 40), rng.permutation(61)[:50], np.arange(0, 61, 2)[::-1]):
        dev = L._device_stack(data, np.asarray(idx, dtype=np.int64))
        assert dev is not None, "the device copy failed"
        assert dev.get().tobytes() == data[idx].tobytes()


class _FakeDevice:
    """``_device_stack``, ``_room_on_device`` and ``_on_device`` without a GPU: a "device
    array" is a host copy, tagged with the range it holds and how it was read; every read
    is logged."""

    def __init__(self, monkeypatch, room=True, fail=()):
        self.reads: list[tuple[int, int, bool]] = []
        self.fail = set(fail)

        def device_stack(arr, idx, outside_pool=False, threads=None):
            lo, hi = int(idx[0]), int(idx[-1]) + 1
            self.reads.append((lo, hi, outside_pool))
            if (lo, hi, outside_pool) in self.fail:
                return None
            return _Tagged(np.take(arr, idx, axis=0), (lo, hi, outside_pool))

        monkeypatch.setattr(L, "_device_stack", device_stack)
        monkeypatch.setattr(L, "_room_on_device", lambda nbytes: 0 if room else None)
        monkeypatch.setattr(L, "_on_device", lambda device_id: contextlib.nullcontext())
        monkeypatch.setattr(L._ReadAhead, "_pending", None)
        monkeypatch.setattr(L._ReadAhead, "_last", None)
        monkeypatch.setattr(L, "GPU_DRAW_BYTES", 1)


class _Tagged(np.ndarray):
    """A host array standing in for a device one, with the range it was read for."""

    def __new__(cls, data, tag):
        out = np.asarray(data).view(cls)
        out.tag = tag
        return out


def _ask(path, lo, count):
    """The stack hook's call for matrices ``[lo, lo + count)``, its data's tag, and that
    the data holds exactly those matrices."""
    stack = L.stack_stack({"path": str(path)}, {"seed": list(range(lo, lo + count))}, count,
                          device="gpu")
    data = np.load(path, mmap_mode="r")[lo : lo + count]
    assert np.asarray(stack.data).tobytes() == data.tobytes()
    return stack.data.tag


@pytest.fixture
def stack_file(tmp_path):
    data = np.random.default_rng(5).integers(0, 1000, size=(23, 6, 6), dtype=np.int32)
    np.save(tmp_path / "s.npy", data)
    return tmp_path / "s.npy"


def test_a_sweep_over_a_stack_file_reads_each_next_batch_ahead(monkeypatch, stack_file):
    """Consecutive batches: the first is read in the call, every later one is the read
    ahead (outside CuPy's pool), the last one short; nothing is read past the file."""
    dev = _FakeDevice(monkeypatch)
    tags = [_ask(stack_file, lo, min(5, 23 - lo)) for lo in range(0, 23, 5)]
    assert tags == [(0, 5, False), (5, 10, True), (10, 15, True), (15, 20, True), (20, 23, True)]
    assert dev.reads == [(0, 5, False), (5, 10, True), (10, 15, True), (15, 20, True),
                         (20, 23, True)]
    assert L._ReadAhead._pending is None


def test_a_read_ahead_follows_a_repeated_stride(monkeypatch, stack_file):
    """Another range than the one read ahead is read in the call (the read dropped); a
    worker given every second batch reads ahead once its stride repeats, and so does one
    given the batches from the last down; a gathered range reads nothing ahead."""
    dev = _FakeDevice(monkeypatch)
    assert _ask(stack_file, 0, 3) == (0, 3, False)  # reads [3, 6) ahead
    assert _ask(stack_file, 6, 3) == (6, 9, False)  # not [3, 6): read in the call; stride 6
    assert _ask(stack_file, 12, 3) == (12, 15, False)  # stride 6 again: reads [18, 21) ahead
    assert _ask(stack_file, 18, 3) == (18, 21, True)
    assert dev.reads == [(0, 3, False), (3, 6, True), (6, 9, False), (12, 15, False),
                         (18, 21, True)]  # nothing from 24 on: the file has 23
    monkeypatch.setattr(L._ReadAhead, "_last", None)
    dev.reads.clear()
    tags = [_ask(stack_file, lo, 4) for lo in (0, 16, 12, 8, 4)]
    assert tags == [(0, 4, False), (16, 20, False), (12, 16, False), (8, 12, False), (4, 8, True)]
    L._ReadAhead._pending.future.result()  # the read of [0, 4) ahead has been logged
    assert dev.reads == [(0, 4, False), (4, 8, True), (16, 20, False), (12, 16, False),
                         (8, 12, False), (4, 8, True), (0, 4, True)]
    L._ReadAhead.take(None, -1, 0)  # drop the read of [0, 4)
    stack = L.stack_stack({"path": str(stack_file)}, {"seed": [3, 1, 2]}, 3, device="gpu")
    assert stack.data.tag == (3, 3, False)  # the fake logs a gather by its ends
    assert L._ReadAhead._pending is None


def test_a_changed_file_or_a_failed_read_ahead_is_read_again(monkeypatch, stack_file):
    dev = _FakeDevice(monkeypatch, fail={(5, 10, True)})
    assert _ask(stack_file, 0, 5) == (0, 5, False)
    assert _ask(stack_file, 5, 5) == (5, 10, False)  # the read ahead failed: read in the call
    assert dev.reads[1:3] == [(5, 10, True), (5, 10, False)]
    L._ReadAhead._pending.future.result()  # [10, 15) read ahead; then the file changes
    data = np.load(stack_file) + 1
    np.save(stack_file, data)
    os.utime(stack_file, ns=(1, 1))
    assert _ask(stack_file, 10, 5) == (10, 15, False)


def test_no_read_ahead_without_room_on_the_device(monkeypatch, stack_file):
    dev = _FakeDevice(monkeypatch, room=False)
    assert [_ask(stack_file, lo, 5)[2] for lo in (0, 5, 10)] == [False] * 3
    assert dev.reads == [(0, 5, False), (5, 10, False), (10, 15, False)]
    assert L._ReadAhead._pending is None


@pytest.mark.gpu
def test_gpu_a_sweep_over_a_stack_file_gets_each_batchs_matrices(monkeypatch, stack_file):
    """On the device: every batch after the first comes from the read ahead, each holds
    exactly its matrices, and the read ahead is outside CuPy's pool."""
    import cupy as cp

    monkeypatch.setattr(L._ReadAhead, "_pending", None)
    monkeypatch.setattr(L._ReadAhead, "_last", None)
    monkeypatch.setattr(L, "GPU_DRAW_BYTES", 1)
    data = np.load(stack_file)
    pool = cp.get_default_memory_pool()
    for lo in range(0, 23, 5):
        count = min(5, 23 - lo)
        if lo:
            assert L._ReadAhead._pending.key[1:] == (lo, count)
        before = pool.used_bytes()
        stack = L.stack_stack({"path": str(stack_file)}, {"seed": list(range(lo, lo + count))},
                              count, device="gpu")
        assert isinstance(stack.data, cp.ndarray)
        assert stack.data.get().tobytes() == data[lo : lo + count].tobytes()
        if lo:
            assert pool.used_bytes() == before
        del stack


def test_read_threads_stay_within_the_cpus_and_the_cap():
    import os

    n = L.read_threads()
    assert 1 <= n <= L.STACK_READ_THREADS_MAX
    assert n <= len(os.sched_getaffinity(0))


def test_stack_file_is_read_as_its_matrices(tmp_path):
    rng = np.random.default_rng(0)
    data = rng.integers(0, 100, size=(5, 4, 4), dtype=np.int32)
    np.save(tmp_path / "s.npy", data)
    one = [L.stack(tmp_path / "s.npy", seed=i) for i in range(5)]
    bulk = L.stack_bulk([{"path": str(tmp_path / "s.npy"), "seed": i} for i in range(5)])
    for i, (a, b) in enumerate(zip(one, bulk, strict=True)):
        assert a.costs.tolist() == b.costs.tolist() == data[i].tolist()
        assert a.name == b.name == f"s_i{i}" and a.params == b.params and a.family == "lap_stack"
        assert not isinstance(a.costs, np.memmap) and a.costs.flags.writeable
    with pytest.raises(DatasetError, match="index 5 is outside the 5 matrices"):
        L.stack(tmp_path / "s.npy", seed=5)
    rect = rng.random((2, 3, 4))
    np.save(tmp_path / "r.npy", rect)
    assert L.stack(tmp_path / "r.npy", seed=1, pad=True).costs.shape == (4, 4)
    with pytest.raises(DatasetError, match="pad=True"):
        L.stack(tmp_path / "r.npy", seed=1)
    np.save(tmp_path / "m.npy", data[2])  # one matrix: a stack of one
    assert L.stack(tmp_path / "m.npy").costs.tolist() == data[2].tolist()


def test_a_folder_of_single_matrix_files_is_a_stack(tmp_path):
    for i in range(3):
        np.save(tmp_path / f"m{i}.npy", np.full((2, 2), i, dtype=np.int64))
    assert [int(L.stack(tmp_path, seed=i).costs[0, 0]) for i in range(3)] == [0, 1, 2]
    with pytest.raises(DatasetError, match="outside the 3 files"):
        L.stack(tmp_path, seed=3)


def _npy_header(shape, descr="<i4"):
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: np.save(p, np.arange(5, dtype=np.int32)), "has shape (5,)"),
        (lambda p: np.save(p, np.zeros((2, 2, 2, 2))), "has shape (2, 2, 2, 2)"),
        (lambda p: np.save(p, np.array([[[1, None]]], dtype=object), allow_pickle=True), "Python objects"),
        (lambda p: np.save(p, np.ones((2, 2, 2), dtype=bool)), "dtype bool"),
        (lambda p: np.save(p, np.ones((2, 2, 2), dtype=complex)), "dtype complex"),
        (lambda p: p.write_bytes(_npy_header((2, 3, 3)) + b"\0" * 10), "truncated file or a bad header"),
        (lambda p: p.write_bytes(_npy_header((10**9, 10**6, 10**6))), "truncated file or a bad header"),
        (lambda p: p.write_bytes(b"not a numpy file at all"), "not a readable .npy file"),
        (lambda p: p.write_bytes(b"\x93NUMPY\x01\x00" + (60000).to_bytes(2, "little") + b"{" * 60000),
         "not a readable .npy file"),
        (lambda p: np.save(p, np.array([[[1.0, np.nan], [0, 1]]])), "non-finite"),
        (lambda p: np.save(p, np.array([[[1.0, np.inf], [0, 1]]])), "non-finite"),
        (lambda p: np.save(p, np.zeros((0, 2, 2))), "empty shape"),
    ],
)  # fmt: skip
def test_hostile_stack_files_are_refused_by_name(tmp_path, make, fragment):
    path = tmp_path / "bad.npy"
    make(path)
    for read in (
        lambda: L.stack(path, seed=0),
        lambda: L.stack_bulk([{"path": str(path), "seed": 0}]),
    ):
        with pytest.raises(DatasetError) as info:
            read()
        assert fragment in str(info.value) and "bad" in str(info.value)


def test_stack_never_unpickles(tmp_path, monkeypatch):
    import pickle

    np.save(tmp_path / "o.npy", np.array([[[object()]]], dtype=object), allow_pickle=True)
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("unpickled"))
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("unpickled"))
    with pytest.raises(DatasetError, match="Python objects"):
        L.stack(tmp_path / "o.npy")


def test_a_stack_matrix_over_the_input_limit_is_refused(tmp_path, monkeypatch):
    np.save(tmp_path / "big.npy", np.zeros((2, 64, 64), dtype=np.int64))
    monkeypatch.setenv("MATCHBENCH_MAX_INPUT_BYTES", "1000")
    with pytest.raises(DatasetError, match="over the input limit"):
        L.stack(tmp_path / "big.npy")


def test_missing_stack_and_bad_index(tmp_path):
    with pytest.raises(DatasetError, match="missing.npy"):
        L.stack(tmp_path / "missing.npy")
    np.save(tmp_path / "s.npy", np.zeros((1, 2, 2)))
    with pytest.raises(DatasetError, match="must be an integer >= 0"):
        L.stack(tmp_path / "s.npy", seed=-1)


def test_stack_dataset_config(tmp_path):
    from omegaconf import OmegaConf

    from matchbench.datasets import expand, load

    cfg = OmegaConf.load(L.__file__.rsplit("matchbench", 1)[0] + "conf/dataset/lap_stack.yaml")
    assert OmegaConf.is_missing(cfg.many, "path") and OmegaConf.is_missing(cfg, "count")
    data = np.arange(3 * 9, dtype=np.int32).reshape(3, 3, 3)
    np.save(tmp_path / "s.npy", data)
    cfg.many.path, cfg.count = str(tmp_path / "s.npy"), 3
    specs = expand(OmegaConf.to_container(cfg))
    assert [load(s).costs.tolist() for s in specs] == data.tolist()


def test_stack_size_hint_is_one_matrix(tmp_path):
    from matchbench.datasets import spec_size_hint
    from matchbench.runner.execute import instance_size_hint

    np.save(tmp_path / "s.npy", np.zeros((50, 6, 4), dtype=np.int64))
    spec = {
        "_target_": "matchbench.families.lap.datasets.stack",
        "path": str(tmp_path / "s.npy"),
        "seed": 3,
    }
    assert spec_size_hint(spec) == 6 * 4 * 8
    assert spec_size_hint(dict(spec, pad=True)) == 6 * 6 * 8
    assert (
        instance_size_hint(dict(spec, rcp=False), tmp_path) == 6 * 4 * 8
    )  # not the file's 50 matrices
    (tmp_path / "bad.npy").write_bytes(b"nope")
    assert spec_size_hint(dict(spec, path=str(tmp_path / "bad.npy"))) is None
