"""A batch as one stack (issue #31, ``matchbench.runner.stack``): the instances made as one
array by the dataset's ``matchbench_stack`` hook, solved per repetition by a ``stackable``
solver, certified by the family's ``verify_stack``, rows as one Arrow table; with the rows,
failures and resume of the per-instance paths, and the batch kept as columns throughout.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from matchbench.core.stack import InstanceStack
from matchbench.families.lap import datasets as L
from matchbench.families.lap.problem import LAP, Assignment, AssignmentStack, CostMatrix
from matchbench.results.schema import COLUMNS, SCHEMA, CompactTable
from matchbench.results.store import read_results
from matchbench.runner.batch import Batch
from matchbench.runner.execute import execute
from matchbench.runner.plan import build_plan
from matchbench.runner.stack import stack_batch
from matchbench.runner.task import execute_batch

TESTS = Path(__file__).parent
UNIFORM = "matchbench.families.lap.datasets.uniform"
LAPS = {"name": "tiny_laps", "many": {"_target_": UNIFORM, "n": 6, "cost_range": "n"}, "count": 7, "seed": 1}
SCIPY = {"_target_": "matchbench.families.lap.refs.ScipyLSA"}
TIMES = {"timestamp"} | {c for c in COLUMNS if c.startswith("t_") or c.endswith("_per_s")}
#: what a stack's rows say differently from one-by-one rows: solved together
JOINT = {"batch_size", "counters_json"}


@pytest.fixture
def solvers_path(monkeypatch):
    """Make tests/_columnar_solvers.py importable here and in task processes."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))


def _cfg(tmp_path, algorithm, dataset=LAPS, reps=2, **run):
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "gpu": {"repetitions": reps, "warmup": 1},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "isolate": True, "verify": True}
        | run,
        "data_dir": str(tmp_path / "data"),
    }


def _batch(tmp_path, algorithm=SCIPY, dataset=LAPS, **kw):
    plan = build_plan(_cfg(tmp_path, algorithm, dataset, **kw))
    assert not plan.error_rows, plan.error_rows
    return Batch(batch_id="b0", tasks=plan.tasks)


def _whole(tables):
    """The schema's tables of ``tables`` (a stack's come compact)."""
    return [t.full() if isinstance(t, CompactTable) else t for t in tables]


def _stacked(batch):
    sent: list = []
    tables = stack_batch(batch, lambda k, p: sent.append((k, p)), notes := [])
    if tables is not None:
        assert all(isinstance(t, CompactTable) for t in tables)
        tables = [pa.concat_tables(_whole(tables))]
    return tables, sent, notes


def _content(rows, skip=frozenset()):
    out = []
    for r in rows:
        full = {c: r.get(c) for c in COLUMNS if c not in skip}
        out.append(tuple((c, (v is None) if c in TIMES else v) for c, v in full.items()))
    return sorted(out, key=lambda t: (dict(t)["task_id"], dict(t)["repetition"]))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_stack_rows_are_the_one_by_one_rows_of_a_joint_solve(tmp_path, dtype):
    dataset = {**LAPS, "many": {**LAPS["many"], "dtype": dtype}}
    batch = _batch(tmp_path, dataset=dataset)
    tables, sent, notes = _stacked(pickle.loads(pickle.dumps(batch)))
    assert tables is not None and not notes
    (table,) = tables
    assert table.schema.equals(SCHEMA)
    new = table.to_pylist()
    old, _ = execute_batch(batch)  # one by one, a dict per row
    assert len(new) == len(old) == 2 * len(batch.tasks)
    # t_init_s: no initializer ran on the stack (one by one, the family's no-op is timed)
    assert _content(new, JOINT | {"t_init_s"}) == _content(old, JOINT | {"t_init_s"})
    for r in new:
        assert r["status"] == "ok" and r["verified"] is True and r["batch_size"] == 7
        assert json.loads(r["counters_json"])["batch_solve_s"] > 0
        assert r["t_init_s"] is None and r["t_load_s"] > 0 and r["t_verify_s"] > 0
        assert r["t_total_s"] >= r["t_solve_s"] > 0
    # the parent hears of the whole batch first, then gets every instance's rows at once
    assert sent[0] == ("joint", list(range(7)))
    kinds = [k for k, _ in sent]
    assert kinds.count("start") == 3 and kinds[-1] == "chunk"
    assert sorted(sent[-1][1][1]) == list(range(7))
    # the rows travel compact: what all of them share once, not in every row
    compact = sent[-1][1][0]
    assert compact[0].constants["config_json"] and "config_json" not in compact[0].table.column_names
    assert len(pickle.dumps(compact)) < len(pickle.dumps(table)) / 2


def test_the_stack_is_the_instances_value_for_value():
    seeds = [5, 9, 2, 11]
    stack = L.uniform.matchbench_stack({"n": 7, "cost_range": "10n"}, {"seed": seeds}, 4, device="cpu")
    assert isinstance(stack, InstanceStack) and stack.data.shape == (4, 7, 7)
    for k, seed in enumerate(seeds):
        alone = L.uniform(n=7, cost_range="10n", seed=seed)
        assert np.array_equal(stack.data[k], alone.costs) and stack.data.dtype == alone.costs.dtype
        assert stack.instance(k).name == alone.name == stack.columns["instance"][k]
        assert json.loads(stack.columns["instance_params"][k]) == alone.params
    assert stack.columns["n_edges"] == 49 and stack.columns["instance_bytes"] == 7 * 7 * 4
    # another varying argument: no stack (the per-instance path makes them)
    assert L.uniform.matchbench_stack({"cost_range": "n"}, {"seed": [1, 2], "n": [3, 4]}, 2) is None


def _npy_stack(tmp_path, shape=(9, 5, 5), dtype=np.int32):
    path = tmp_path / "many.npy"
    np.save(path, np.random.default_rng(4).integers(0, 30, size=shape).astype(dtype))
    return {"name": "from_file", "many": {"_target_": "matchbench.families.lap.datasets.stack",
                                          "path": str(path), "pad": False}, "count": shape[0], "seed": 0}


def test_a_file_stack_gives_the_rows_of_its_matrices_one_by_one(tmp_path):
    batch = _batch(tmp_path, dataset=_npy_stack(tmp_path))
    tables, _, notes = _stacked(batch)
    assert tables is not None and not notes
    new = tables[0].to_pylist()
    old, _ = execute_batch(batch)
    assert _content(new, JOINT | {"t_init_s"}) == _content(old, JOINT | {"t_init_s"})
    assert all(r["status"] == "ok" and r["verified"] for r in new) and len(new) == 18


@pytest.mark.parametrize("what", ["float", "rect", "outside"])
def test_a_file_stack_the_hook_does_not_take_goes_one_by_one(tmp_path, what):
    shape, dtype = {"float": ((4, 5, 5), np.float64), "rect": ((4, 5, 6), np.int32),
                    "outside": ((4, 5, 5), np.int32)}[what]
    dataset = _npy_stack(tmp_path, shape, dtype)
    if what == "outside":
        dataset["count"] = 6  # indices 4 and 5 are not in the file: their own error rows
    batch = _batch(tmp_path, dataset=dataset)
    assert stack_batch(batch, lambda k, p: None) is None
    out: list = []
    rows, _ = execute_batch(batch, tables=out)
    got = rows + (pa.concat_tables(_whole(out)).to_pylist() if out else [])
    bad = [r for r in got if r["status"] != "ok"]
    if what == "outside":
        assert len(bad) == 2 and all("outside the 4 matrices" in r["error"] for r in bad)
    elif what == "rect":
        assert len(bad) == 4 and all("square" in r["error"] or "pad" in r["error"] for r in bad)
    else:
        assert not bad and len(got) == 8


def _answers(stack, rng, spoil):
    """Optimal answers with duals (the tree solver's) and spoiled ones at ``spoil``."""
    from matchbench.families.lap.refs import HungarianTree

    perms, us, vs = [], [], []
    for k in range(stack.count):
        s = HungarianTree()
        s.prepare(stack.instance(k))
        s.run()
        a = s.result()
        perms.append(a.row_to_col)
        us.append(a.u)
        vs.append(a.v)
    perms, us, vs = np.stack(perms), np.stack(us), np.stack(vs)
    for k, how in spoil.items():
        if how == "perm":
            perms[k, 0] = perms[k, 1]
        elif how == "dual":
            us[k, 0] += 1
        elif how == "swap":
            perms[k, [0, 1]] = perms[k, [1, 0]]
    return perms, us, vs


@pytest.mark.parametrize("duals", [True, False])
def test_verify_stack_gives_the_verdicts_of_verify(duals):
    rng = np.random.default_rng(3)
    stack = L.uniform.matchbench_stack({"n": 9, "cost_range": "n"}, {"seed": list(range(40))}, 40)
    perms, us, vs = _answers(stack, rng, {3: "perm", 7: "dual", 11: "swap", 12: "swap"})
    answers = AssignmentStack(perms, us, vs) if duals else AssignmentStack(perms)
    got = LAP().verify_stack(stack, answers)
    for k in range(stack.count):
        one = Assignment(perms[k], us[k], vs[k]) if duals else Assignment(perms[k])
        want = LAP().verify(stack.instance(k), one)
        assert bool(got.verified[k]) == want.verified, k
        if want.verified:
            assert got.objective[k] == want.objective and got.bound[k] == want.bound
            assert got.reference[k] == want.reference and k not in got.reasons
        else:
            assert got.reasons[k] == want.reason
    assert not got.verified[3] and not got.verified[11] and (not got.verified[7] or not duals)


def test_verify_stack_of_float_costs_with_and_without_duals():
    rng = np.random.default_rng(0)
    data = rng.random((25, 6, 6))
    insts = [CostMatrix(data[k], name=f"f{k}") for k in range(25)]
    stack = InstanceStack("lap", data, 25, {}, insts.__getitem__)
    perms, us, vs = _answers(stack, rng, {4: "swap"})
    for answers in (AssignmentStack(perms, us, vs), AssignmentStack(perms)):
        got = LAP().verify_stack(stack, answers)
        want = LAP().verify_batch(insts, [Assignment(perms[k], *(() if answers.u is None else (us[k], vs[k])))
                                          for k in range(25)])
        assert got.verified.tolist() == [w.verified for w in want]
        ok = got.verified
        assert np.allclose(got.objective[ok], [w.objective for w in want if w.verified])


def test_a_wrong_answer_in_a_stack_is_that_instances_wrong_row(tmp_path, solvers_path):
    from scipy.optimize import linear_sum_assignment

    algorithm = {"_target_": "_columnar_solvers.LapStackBroken", "mode": "wrong", "at": 2}
    batch = _batch(tmp_path, algorithm)
    tables, _, notes = _stacked(batch)
    rows = pa.concat_tables(tables).to_pylist()
    bad = [r for r in rows if r["status"] != "ok"]
    inst = L.uniform(n=6, cost_range="n", seed=batch.tasks[2].instance_spec["seed"])
    assert len(bad) == 2 and {r["instance"] for r in bad} == {inst.name}
    assert all(r["status"] == "wrong" and r["verified"] is False for r in bad)
    perm = linear_sum_assignment(inst.costs)[1]
    perm[0] = perm[1]
    want = LAP().verify(inst, Assignment(perm))  # the one-by-one verdict, word for word
    assert all(r["verify_reason"] == want.reason and r["error"] == f"certificate: {want.reason}" for r in bad)
    assert sum(r["verified"] is True for r in rows) == 12 and not notes


def test_a_stack_solve_that_raises_runs_the_batch_one_by_one(tmp_path, solvers_path):
    batch = _batch(tmp_path, {"_target_": "_columnar_solvers.LapStackBroken", "mode": "raise"})
    tables, _, notes = _stacked(batch)
    assert tables is None and "planted failure of a stack" in notes[0]
    out: list = []
    rows, notes = execute_batch(batch, tables=out)
    got = pa.concat_tables(_whole(out)).to_pylist()
    assert not rows and len(got) == 14 and all(r["status"] == "ok" and r["verified"] for r in got)
    assert any("one by one" in n for n in notes)


def test_a_bad_argument_is_every_instances_own_error_row(tmp_path):
    batch = _batch(tmp_path, dataset={**LAPS, "many": {**LAPS["many"], "cost_range": "huge"}})
    tables, _, notes = _stacked(batch)
    assert tables is None and "making the instances" in notes[0]
    out: list = []
    rows, _ = execute_batch(batch, tables=out)
    got = rows + (pa.concat_tables(_whole(out)).to_pylist() if out else [])
    assert len({r["task_id"] for r in got}) == 7
    assert all(r["status"] == "error" and "cost_range" in r["error"] for r in got)


def test_what_the_stack_path_does_not_take_goes_one_by_one(tmp_path, monkeypatch):
    tell = lambda k, p: None  # noqa: E731
    # no hook (uniform_float), an rcp set, a solver that is not stackable, a single instance
    float_set = {**LAPS, "many": {"_target_": "matchbench.families.lap.datasets.uniform_float", "n": 5}}
    assert stack_batch(_batch(tmp_path / "a", dataset=float_set), tell) is None
    rcp = {"instances": [{"_target_": UNIFORM, "n": 5, "seed": s, "rcp": True, "rcp_seed": 2} for s in (1, 2)]}
    assert stack_batch(_batch(tmp_path / "b", dataset=rcp), tell) is None
    lapjv = {"_target_": "matchbench.families.lap.refs.HungarianTree"}
    assert stack_batch(_batch(tmp_path / "c", algorithm=lapjv), tell) is None
    one = _batch(tmp_path / "d")
    assert stack_batch(one.subset([0]), tell) is None
    monkeypatch.setenv("MATCHBENCH_NO_STACK", "1")
    assert stack_batch(_batch(tmp_path / "e"), tell) is None


def test_a_shipped_batch_stays_columns_through_the_stack_path(tmp_path):
    batch = pickle.loads(pickle.dumps(_batch(tmp_path)))
    assert batch._tasks is None and len(batch) == 7
    tables, _, _ = _stacked(batch)
    assert tables is not None and batch._tasks is None  # no Task per instance was made
    assert tables[0].column("task_id").to_pylist()[:7] == batch.task_ids


def test_batch_columns_subset_and_first(tmp_path):
    batch = _batch(tmp_path)
    shipped = pickle.loads(pickle.dumps(batch))
    assert shipped.first == batch.tasks[0] and shipped.task_ids == [t.task_id for t in batch.tasks]
    template, varying = shipped.spec_columns()
    assert varying == {"seed": [t.instance_spec["seed"] for t in batch.tasks]}
    assert {**template, "seed": varying["seed"][3]} == batch.tasks[3].instance_spec
    part = shipped.subset([4, 1], joint=False)
    assert part._tasks is None and part.joint is False
    assert part.tasks == [batch.tasks[4], batch.tasks[1]]
    assert shipped.column("instance_key") == [t.instance_key for t in batch.tasks]
    assert pickle.loads(pickle.dumps(part)) == part
    assert shipped == batch


@pytest.mark.slow
def test_a_stack_sweep_writes_every_row_and_resumes_by_instance(tmp_path):
    dataset = {**LAPS, "count": 9}
    log = io.StringIO()
    first = execute([build_plan(_cfg(tmp_path, SCIPY, dataset, id="st", batch=4))], stream=log)
    assert first["rows"] == {"ok": 18} and "[9/9]" in log.getvalue()
    rows = read_results(first["dir"])
    assert len(rows) == 18 and rows["verified"].all() and rows["run_id"].eq("st").all()
    # every batch of several went as one stack: its rows say how many were solved together
    size = rows.groupby("batch_id")["task_id"].transform("nunique")
    assert (rows["batch_size"][size > 1] == size[size > 1]).all() and rows["batch_size"][size == 1].isna().all()
    assert "one by one" not in log.getvalue()
    more = {**dataset, "count": 12}
    again = execute([build_plan(_cfg(tmp_path, SCIPY, more, id="st", batch=4, resume=True))], stream=log)
    assert "9 task(s) already in run st, skipped" in log.getvalue() and again["rows"] == {"ok": 6}
    rows = read_results(first["dir"])
    assert len(rows) == 24 and rows.groupby("task_id").size().eq(2).all() and rows["verified"].all()


@pytest.mark.slow
def test_a_stack_sweep_equals_the_unbatched_sweep(tmp_path):
    off = execute([build_plan(_cfg(tmp_path, SCIPY, id="off"))], stream=io.StringIO())
    on = execute([build_plan(_cfg(tmp_path, SCIPY, id="on", batch=7))], stream=io.StringIO())
    skip = {"run_id", "batch_id", "config_json", "timestamp"} | JOINT | TIMES
    cols = [c for c in COLUMNS if c not in skip]
    a = read_results(off["dir"]).sort_values(["task_id", "repetition"])[cols].reset_index(drop=True)
    b = read_results(on["dir"]).sort_values(["task_id", "repetition"])[cols].reset_index(drop=True)
    assert len(a) == 14 and a.equals(b)
    assert read_results(on["dir"])["batch_size"].eq(7).all()


# ----------------------------------------------------------------------------- GPU

GPU_BATCHED = {"_target_": "matchbench.families.lap.batch_gpu.HungarianBatchGPU", "smem_cost_bytes": 0,
               "threads_per_block": 0}


def _gpu_batch(tmp_path, n, count, seed=1, cost_range="n"):
    dataset = {"name": "g", "many": {"_target_": UNIFORM, "n": n, "cost_range": cost_range}, "count": count,
               "seed": seed}
    return _batch(tmp_path, GPU_BATCHED, dataset, reps=1)


@pytest.mark.gpu
@pytest.mark.parametrize(("source", "n", "count"), [("drawn", 64, 300), ("drawn", 33, 40), ("drawn", 200, 100),
                                                     ("file", 64, 300)])
def test_gpu_stack_rows_equal_the_joint_solves_rows(tmp_path, monkeypatch, source, n, count):
    """On the GPU: drawn there (n = 64: 300 x 16 KiB, over the GPU draw's 1 MiB) or on the
    host and uploaded (n = 33), or read from a file into pinned buffers and uploaded;
    solved in one launch, certified there; the rows are the per-instance joint solve's,
    counter for counter."""
    if source == "file":
        batch = _batch(tmp_path, GPU_BATCHED, _npy_stack(tmp_path, (count, n, n)), reps=1)
    else:
        batch = _gpu_batch(tmp_path, n, count)
    tables, _, notes = _stacked(pickle.loads(pickle.dumps(batch)))
    assert tables is not None and not notes
    new = tables[0].to_pylist()
    monkeypatch.setenv("MATCHBENCH_NO_STACK", "1")
    out: list = []
    execute_batch(batch, tables=out)
    old = pa.concat_tables(_whole(out)).to_pylist()
    assert len(new) == len(old) == count
    skip = {"counters_json", "t_init_s", "gpu_mem_peak_bytes"}
    assert _content(new, skip) == _content(old, skip)
    drop = lambda r: {k: v for k, v in json.loads(r["counters_json"]).items() if k != "batch_solve_s"}  # noqa: E731
    assert [drop(r) for r in sorted(new, key=lambda r: r["task_id"])] == [
        drop(r) for r in sorted(old, key=lambda r: r["task_id"])]
    assert all(r["status"] == "ok" and r["verified"] is True and r["batch_size"] == count for r in new)


@pytest.mark.gpu
def test_gpu_stack_stress_hundreds_of_random_stacks_zero_wrong(tmp_path):
    """400 stacks of random sizes, ranges and seeds through the stack path on the GPU:
    every answer certified by the device certificate and equal in cost to scipy's."""
    from scipy.optimize import linear_sum_assignment

    from matchbench.families.lap.batch_gpu import HungarianBatchGPU

    rng = np.random.default_rng(31)
    wrong = 0
    for trial in range(400):
        n = int(rng.integers(2, 130))
        count = int(rng.integers(2, 40))
        cost_range = ["n/10", "n", "10n"][trial % 3]
        seeds = rng.integers(0, 2**40, size=count).tolist()
        stack = L.uniform.matchbench_stack({"n": n, "cost_range": cost_range}, {"seed": seeds}, count,
                                           device="gpu")
        solver = HungarianBatchGPU(threads_per_block=0, smem_cost_bytes=int(rng.choice([0, 16384])))
        solver.prepare_stack(stack)
        solver.run()
        verdicts = LAP().verify_stack(stack, solver.result_stack())
        wrong += int((~verdicts.verified).sum())
        for k in rng.choice(count, size=min(3, count), replace=False).tolist():
            costs = stack.instance(k).costs
            r, c = linear_sum_assignment(costs)
            assert verdicts.objective[k] == costs[r, c].sum()
    assert wrong == 0


def test_a_compact_table_is_the_schemas_table_of_its_rows():
    from datetime import UTC, datetime

    from matchbench.results.schema import record_batch

    now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    varying = pa.table({"task_id": ["a", "b", "c"], "objective": [1.0, None, 3.0]})
    shared = {"algorithm": "x", "timestamp": now, "n_rows": 5, "verify_reason": None, "verified": True}
    whole = CompactTable(varying, shared).full()
    want = record_batch({"task_id": ["a", "b", "c"], "objective": [1.0, None, 3.0], "algorithm": ["x"] * 3,
                         "timestamp": [now] * 3, "n_rows": [5] * 3, "verified": [True] * 3}, 3)
    assert whole.schema.equals(SCHEMA) and whole.equals(pa.Table.from_batches([want]))
    with pytest.raises(KeyError, match="outside the schema"):
        CompactTable(varying, {"no_such_column": 1})
    with pytest.raises(ValueError, match="both varying and constant"):
        CompactTable(varying, {"task_id": "d"})


@pytest.mark.gpu
def test_the_fused_certificate_gives_certify_stacks_verdicts():
    """int32 costs: the one-pass dual feasibility kernel (kernels/lap/lap_certify.cu) and
    certify_stack agree on every answer, with infeasible cells, broken slackness, broken
    permutations and off objectives planted at random, n from 1 to 300."""
    import cupy as cp

    from matchbench.families.lap.problem import _device_verdicts

    rng = np.random.default_rng(5)
    rejected = 0
    for trial in range(60):
        n, count = int(rng.integers(1, 300)), int(rng.integers(1, 30))
        stack = L.uniform.matchbench_stack({"n": n, "cost_range": "n"}, {"seed": rng.integers(0, 2**32, count).tolist()},
                                           count)
        perms, us, vs = _answers(stack, rng, {})
        for k in range(count):
            how = rng.integers(0, 5)
            i, j = rng.integers(0, n, 2)
            if how == 1:  # an infeasible cell (and a wrong objective)
                us[k, i] += int(stack.data[k, i, j]) - us[k, i] - vs[k, j] + 1
            elif how == 2 and n > 1:
                perms[k, [0, 1]] = perms[k, [1, 0]]
            elif how == 3 and n > 1:
                perms[k, 0] = perms[k, 1]
            elif how == 4:  # feasible everywhere, slack broken on an assigned cell
                us[k, i] -= 1
        c = cp.asarray(stack.data)
        args = (c, cp.asarray(perms), cp.asarray(us), cp.asarray(vs))
        fused = _device_verdicts(*args)
        plain = _device_verdicts(*args, fused=False)
        assert np.array_equal(fused[0], plain[0]), trial
        ok = fused[0]
        assert np.array_equal(fused[1][ok], plain[1][ok]) and np.array_equal(fused[2][ok], plain[2][ok])
        rejected += int((~ok).sum())
    assert rejected > 100


def test_writes_on_their_own_thread_keep_order_and_raise_the_first_error_in_the_caller():
    import errno
    import threading
    import time

    from matchbench.runner.execute import _Writes

    done, threads = [], set()

    def write(name, rows=None):
        threads.add(threading.current_thread().name)
        if name == "bad":
            raise OSError(errno.ENOSPC, "No space left on device")
        time.sleep(0.01)
        done.append(name)

    w = _Writes(write)
    for k in range(5):
        w(f"b{k}", [])
    w.close()
    assert done == [f"b{k}" for k in range(5)] and threads == {"matchbench-writer"}

    done.clear()
    w = _Writes(write)
    w("b0")
    w("bad")
    with pytest.raises(OSError, match="No space left"):
        for k in range(1, 10):  # raised at a later call, in this thread
            w(f"b{k}")
            time.sleep(0.02)
    w.close(quiet=True)
    assert done == ["b0"]  # nothing after the failed write

    done.clear()
    w = _Writes(write)
    w("bad")
    with pytest.raises(OSError):
        w.close()


def test_an_error_in_making_a_stacks_rows_runs_the_batch_one_by_one(tmp_path, monkeypatch):
    import matchbench.runner.stack as S

    def broken(*a, **k):
        raise TypeError("planted error of the rows")

    monkeypatch.setattr(S, "_verdict_columns", broken)
    batch = _batch(tmp_path)
    tables, _, notes = _stacked(batch)
    assert tables is None and "planted error of the rows" in notes[0]
    out: list = []
    rows, notes = execute_batch(batch, tables=out)
    got = rows + pa.concat_tables(_whole(out)).to_pylist()
    assert len(got) == 14 and all(r["status"] == "ok" and r["verified"] for r in got)
