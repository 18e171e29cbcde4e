"""Batched tasks (``run.batch``): per-instance rows as unbatched, failures per instance,
batchable solvers and their fallback, resume per instance, the ``many`` dataset form."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import sys
from pathlib import Path

import pytest

from matchbench.datasets import DatasetError, expand
from matchbench.results.store import RunWriter, read_results
from matchbench.runner.batch import (
    BATCHES_PER_WORKER,
    Batch,
    BatchLimit,
    batch_key,
    make_batches,
    parse_batch,
)
from matchbench.runner.child import TaskProcess
from matchbench.runner.execute import _warm_instances, execute
from matchbench.runner.plan import Task, build_plan
from matchbench.runner.task import execute_batch

TESTS = Path(__file__).parent
RGG = "matchbench.families.mcm.datasets.rgg"
MANY = {"name": "tiny_many", "many": {"_target_": RGG}, "count": 6, "seed": 1, "draw": {"scale": [5, 7]}}


@pytest.fixture
def faulty_path(monkeypatch):
    """Make tests/_faulty_solvers.py importable here and in task processes."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))


def _cfg(tmp_path, algorithm, dataset=MANY, workers=1, reps=2, **run):
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "gpu": {"repetitions": reps, "warmup": 1},
        "cluster": {"kind": "local_cpu", "n_workers": workers, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "isolate": True,
                "verify": True} | run,
        "data_dir": str(tmp_path / "data"),
    }


def _batch(tmp_path, algorithm, dataset=MANY, **kw):
    plan = build_plan(_cfg(tmp_path, algorithm, dataset, **kw))
    assert not plan.error_rows, plan.error_rows
    return Batch(batch_id="b0", tasks=plan.tasks)


def _by_task(rows):
    out: dict[str, list] = {}
    for r in rows:
        out.setdefault(r["task_id"], []).append(r)
    return out


# --------------------------------------------------------------------------- pickling


def test_a_batch_pickles_as_columns_and_comes_back_equal(tmp_path):
    import pickle

    batch = _batch(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"})
    packed = pickle.dumps(batch)
    back = pickle.loads(packed)
    assert back == batch and back.tasks == batch.tasks
    assert [t.instance_spec for t in back.tasks] == [t.instance_spec for t in batch.tasks]
    # the shared fields travel once: each further task adds under half what it adds as an object
    def grows(make):
        return len(pickle.dumps(make(batch.tasks))) - len(pickle.dumps(make(batch.tasks[:3])))

    assert grows(lambda ts: Batch("b0", ts)) < 0.5 * grows(list)
    # the shared objects stay shared after the trip
    assert back.tasks[0].algorithm_cfg is back.tasks[5].algorithm_cfg
    # only what differs between the specs travels per instance (MANY draws seed and scale)
    from matchbench.runner.batch import _pack

    _, columns = _pack(batch.tasks)
    template, varying, values = columns[1]
    assert varying == ("seed", "scale") and "_target_" in template
    assert values == [(t.instance_spec["seed"], t.instance_spec["scale"]) for t in batch.tasks]


def test_a_sealed_batch_crosses_the_worker_unread(tmp_path):
    """``Batch.sealed``: the columns pickled once by the client; the worker's copy gives
    its length, first task and the whole batch again without reading them, and the task
    process's copy is the batch."""
    import pickle

    batch = _batch(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"})
    sealed = batch.sealed()
    assert sealed == batch and sealed.sealed() is sealed
    worker = pickle.loads(pickle.dumps(sealed))
    assert len(worker) == len(batch) and worker.first == batch.tasks[0] and worker.joint
    assert worker._packed is None and worker._tasks is None  # nothing read yet
    whole = worker.subset(list(range(len(batch))), joint=False)
    assert whole._blob is worker._blob and whole._packed is None and whole.joint is False
    forwarded = pickle.dumps(whole)
    assert worker._blob in forwarded  # the client's bytes, handed on as they are
    child = pickle.loads(forwarded)
    assert child.tasks == batch.tasks and child.task_ids == batch.task_ids and child.joint is False
    assert child.spec_columns() == batch.spec_columns()
    assert worker.subset([5, 1]).tasks == [batch.tasks[5], batch.tasks[1]]
    assert worker.column("instance_key") == batch.column("instance_key")
    # tasks that are not one batch's stay as they are
    unlike = Batch("b", [batch.tasks[0], dataclasses.replace(batch.tasks[1], repetitions=7)])
    assert unlike.sealed() is unlike


def test_sealed_values_open_to_what_was_sealed():
    import pickle

    import pyarrow as pa

    from matchbench.runner.batch import Sealed, opened

    t1, t2 = pa.table({"x": [1, 2]}), pa.table({"x": [3]})
    one, two = Sealed(t1), pickle.loads(pickle.dumps(Sealed([t1, t2])))
    assert one.open().equals(t1) and "bytes" in repr(one)
    got = opened([one, two, t2])
    assert [t.to_pydict() for t in got] == [{"x": [1, 2]}, {"x": [1, 2]}, {"x": [3]}, {"x": [3]}]


def test_a_batch_of_unlike_tasks_or_specs_pickles_as_objects(tmp_path):
    import pickle

    tasks = _batch(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}).tasks
    unlike = [tasks[0], dataclasses.replace(tasks[1], repetitions=7)]  # not one batch's
    back = pickle.loads(pickle.dumps(Batch("b", unlike, joint=False)))
    assert back.tasks == unlike and back.joint is False and back.tasks[1].repetitions == 7
    # specs with other keys (or the same keys in another order) travel whole
    odd = [tasks[0], dataclasses.replace(tasks[1], instance_spec={"path": "x.mtx"}),
           dataclasses.replace(tasks[2], instance_spec=dict(reversed(list(tasks[2].instance_spec.items()))))]
    back = pickle.loads(pickle.dumps(Batch("b", odd)))
    assert [list(t.instance_spec.items()) for t in back.tasks] == [list(t.instance_spec.items()) for t in odd]
    assert pickle.loads(pickle.dumps(Batch("one", tasks[:1]))).tasks == tasks[:1]


def test_a_plan_packs_its_batches_from_columns_as_its_tasks_would(tmp_path):
    import pickle

    from matchbench.runner.batch import Packer, _pack

    hk = {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}
    many = dict(MANY, count=40)
    pf = {"_target_": "matchbench.families.mcm.ref_numba.PothenFanPlus"}
    # the middle plan has no tasks (its "solver" is a dataset function: an error row)
    plans = [build_plan(_cfg(tmp_path, hk, many)), build_plan(_cfg(tmp_path, {"_target_": RGG}, many)),
             build_plan(_cfg(tmp_path, pf, many))]
    assert not plans[1].tasks and len(plans[2].tasks) == 40
    tasks: dict[str, Task] = {}
    for p in plans:
        for t in p.tasks:
            tasks.setdefault(t.task_id, t)
    # the plan's shared fields are those its tasks share
    shared, _ = _pack(plans[0].tasks)
    assert plans[0].shared == shared
    packer = Packer(plans, tasks)
    pf = plans[2].tasks
    cuts = [
        [t.task_id for t in plans[0].tasks[5:17]],  # a slice
        [t.task_id for t in plans[0].tasks[::-3]],  # out of order
        [t.task_id for t in pf[:1] + pf[30:33]],  # another plan's
        [plans[0].tasks[0].task_id, pf[0].task_id],  # two plans: packed task by task
        [t.task_id for t in plans[0].tasks if t.instance_spec["scale"] == 6][:5],  # scale the same in all
    ]
    for ids in cuts:
        made = packer.batch("b", ids)
        byhand = Batch("b", [tasks[i] for i in ids])
        assert made.task_ids == ids and len(made) == len(ids)
        back = pickle.loads(pickle.dumps(made))
        assert back.tasks == byhand.tasks == [tasks[i] for i in ids]
        assert back.spec_columns() == byhand.spec_columns()
        assert back.first == byhand.first
    # the plans' batch keys are those of their tasks, and cut the same batches
    from matchbench.runner.batch import _batch_keys, plan_batch_keys

    order = list(tasks)
    known = plan_batch_keys(plans, tasks)
    assert known == _batch_keys(order, tasks) and set(known) == set(tasks)
    sizes = dict.fromkeys(order, 1.0)
    for limit in (BatchLimit(count=7), BatchLimit(bytes=5)):
        assert make_batches(order, tasks, limit, sizes, {"cpu": 2}, known) == make_batches(order, tasks, limit, sizes, {"cpu": 2})
    # a key constant within the batch is no column of it, though it varies in the plan
    assert set(packer.batch("b", cuts[4]).spec_columns()[1]) == {"seed"}
    assert packer.batch("one", cuts[0][:1]).tasks == [tasks[cuts[0][0]]]


# --------------------------------------------------------------------------- run.batch


@pytest.mark.parametrize(
    ("value", "limit"),
    [
        (None, None), (False, None), (0, None), ("off", None), ("null", None),
        (256, BatchLimit(count=256)), ("256", BatchLimit(count=256)),
        ("64MiB", BatchLimit(bytes=64 << 20)), ("500 kB", BatchLimit(bytes=500_000)),
        ({"count": 8}, BatchLimit(count=8)), ({"bytes": "1KiB"}, BatchLimit(bytes=1024)),
        ({"count": 8, "bytes": 4096}, BatchLimit(count=8, bytes=4096)),
    ],
)  # fmt: skip
def test_parse_batch(value, limit):
    assert parse_batch(value) == limit


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-3, "run.batch must be a positive integer"),
        (True, "run.batch=true says no limit"),
        (2.5, "run.batch=2.5 is not understood"),
        ("64XB", "'64XB' is neither a count nor a size"),
        ("lots", "is neither a count nor a size"),
        ({"size": 3}, "unknown key(s) ['size']"),
        ({}, "give count, bytes or both"),
        ({"count": 0}, "run.batch.count must be a positive integer"),
        ({"bytes": "big"}, "run.batch.bytes: 'big' is not a size"),
        ([256], "is not understood"),
    ],
)
def test_parse_batch_errors_name_the_setting_and_the_forms(value, message):
    with pytest.raises(ValueError) as info:
        parse_batch(value)
    assert message in str(info.value)
    if "unknown" in message or "not understood" in message or "neither" in message:
        assert "{count: 256, bytes: 64MiB}" in str(info.value)


def test_bad_run_batch_ends_the_sweep_before_anything_runs(tmp_path):
    plan = build_plan(_cfg(tmp_path, {"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"},
                           batch="64XB"))
    log = io.StringIO()
    with pytest.raises(SystemExit) as info:
        execute([plan], stream=log)
    assert info.value.code == 2
    assert log.getvalue().startswith("matchbench: error: run.batch='64XB' is neither")
    assert not (tmp_path / "runs").exists()


def test_config_default_is_off():
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(TESTS.parent / "conf" / "config.yaml")
    assert parse_batch(cfg.run.batch) is None


# --------------------------------------------------------------------------- batches


def _tasks(n, algorithm="a", device="cpu"):
    return {
        f"{algorithm}{i}": Task(task_id=f"{algorithm}{i}", algorithm=algorithm, problem="p", device=device,
                                variant="default", algorithm_cfg={"_target_": algorithm},
                                instance_spec={"i": i}, provenance={"job_index": i})
        for i in range(n)
    }


def test_batches_by_count_keep_the_order_and_group_by_algorithm():
    tasks = {**_tasks(5, "a"), **_tasks(3, "b")}
    order = ["a0", "b0", "a1", "a2", "b1", "a3", "b2", "a4"]  # largest first, interleaved
    batches = make_batches(order, tasks, BatchLimit(count=2), {t: 1.0 for t in tasks})
    assert batches == [["a0", "a1"], ["b0", "b1"], ["a2", "a3"], ["b2"], ["a4"]]
    # The provenance (another job) does not separate tasks; the algorithm config does.
    assert batch_key(tasks["a0"]) == batch_key(tasks["a1"]) != batch_key(tasks["b0"])


def test_batches_by_bytes_split_as_documented():
    tasks = _tasks(7)
    order = list(tasks)
    sizes = dict(zip(order, [900.0, 600.0, 300.0, 300.0, 200.0, 0.0, 0.0], strict=True))
    # 1000 bytes: a batch closes before the instance that would pass the limit; one
    # larger than the limit is alone; unknown sizes (0) add nothing.
    assert make_batches(order, tasks, BatchLimit(bytes=1000), sizes) == [
        ["a0"], ["a1", "a2"], ["a3", "a4", "a5", "a6"],
    ]
    assert make_batches(order, tasks, BatchLimit(bytes=500), sizes) == [
        ["a0"], ["a1"], ["a2"], ["a3", "a4", "a5", "a6"],
    ]
    # Both limits: whichever comes first.
    assert make_batches(order, tasks, BatchLimit(count=2, bytes=1000), sizes) == [
        ["a0"], ["a1", "a2"], ["a3", "a4"], ["a5", "a6"],
    ]


def test_batches_spread_over_several_workers():
    tasks = {**_tasks(40), **_tasks(40, "g", device="gpu")}
    order = list(tasks)
    sizes = dict.fromkeys(tasks, 1.0)
    # 2 CPU workers: at most ceil(40 / (BATCHES_PER_WORKER * 2)) per batch; 1 GPU: as asked.
    batches = make_batches(order, tasks, BatchLimit(count=256), sizes, {"cpu": 2, "gpu": 1})
    cpu = [b for b in batches if b[0].startswith("a")]
    gpu = [b for b in batches if b[0].startswith("g")]
    assert len(cpu) == 2 * BATCHES_PER_WORKER and {len(b) for b in cpu} == {5}
    assert gpu == [[f"g{i}" for i in range(40)]]


# --------------------------------------------------------------------------- many


def test_many_is_seeded_prefix_stable_and_drawn_in_range():
    specs = expand({**MANY, "count": 50, "draw": {"scale": [5, 7], "avg": {"low": 2, "high": 64, "log": True}}})
    assert [s["seed"] for s in specs] == list(range(1, 51))
    assert {s["scale"] for s in specs} == {5, 6, 7}
    assert all(2 <= s["avg"] <= 64 for s in specs) and min(s["avg"] for s in specs) < 8
    assert all(s["_target_"] == RGG and s["rcp"] is False for s in specs)
    fewer = expand({**MANY, "count": 7, "draw": {"scale": [5, 7], "avg": {"low": 2, "high": 64, "log": True}}})
    assert fewer == specs[:7]
    assert len(expand({**MANY, "rcp": "both"})) == 12


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"count": 0}, "count must be an integer >= 1"),
        ({"many": {"scale": 5}}, "many must be a mapping with _target_"),
        ({"many": {"_target_": RGG, "seed": 3}}, "many sets ['seed'] itself"),
        ({"draw": {"scale": [7, 5]}}, "draw.scale.high must be an integer >= 7"),
        ({"draw": {"scale": 5}}, "draw.scale must be [low, high]"),
        ({"draw": {"scale": {"low": 0, "high": 5, "log": True}}}, "draw.scale.low must be an integer >= 1"),
        ({"draw": {"scale": {"lo": 1, "high": 5}}}, "unknown keys ['lo']"),
        ({"instances": []}, "one of _target_, instances and many"),
        ({"size": 3}, "unknown keys ['size'] next to many"),
    ],
)
def test_many_errors(change, message):
    with pytest.raises(DatasetError) as info:
        expand({**MANY, **change})
    assert message in str(info.value)


@pytest.mark.parametrize("name", ["lap_many", "mcm_many"])
def test_many_configs_plan_10000_instances_in_one_job(tmp_path, name):
    import time

    from omegaconf import OmegaConf

    dataset = OmegaConf.to_container(OmegaConf.load(TESTS.parent / "conf" / "dataset" / f"{name}.yaml"))
    algorithm = ("matchbench.families.lap.refs.ScipyLSA" if name == "lap_many"
                 else "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp")
    t0 = time.perf_counter()
    plan = build_plan(_cfg(tmp_path, {"_target_": algorithm}, dataset))
    elapsed = time.perf_counter() - t0
    assert not plan.error_rows and not plan.skipped_pairs
    assert len(plan.tasks) == 10_000 == len({t.task_id for t in plan.tasks})
    assert len({t.instance_spec["seed"] for t in plan.tasks}) == 10_000
    assert elapsed < 60  # linear: about a second here; a quadratic plan would take minutes
    sizes = [t.instance_spec.get("n", t.instance_spec.get("scale")) for t in plan.tasks]
    assert (min(sizes), max(sizes)) == ((32, 512) if name == "lap_many" else (8, 12))


# --------------------------------------------------------------------------- in a batch


def test_one_by_one_batch_rows_are_those_of_single_tasks(tmp_path):
    from matchbench.runner.task import execute_task

    batch = _batch(tmp_path, {"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"})
    rows, notes = execute_batch(batch)
    assert not notes
    single = [r for t in batch.tasks for r in execute_task(t)]
    assert len(rows) == len(single) == 12
    skip = {"timestamp", "batch_id"} | {k for r in rows for k in r if k.startswith("t_") or k.endswith("_per_s")}
    for a, b in zip(rows, single, strict=True):
        assert {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}
        assert a["batch_id"] == "b0" and a.get("batch_size") is None and a["t_total_s"] > 0


def test_a_failing_instance_is_its_row_and_the_others_go_on(tmp_path, faulty_path):
    bad_file = {"_target_": "matchbench.families.mcm.datasets.mtx_file", "path": str(tmp_path / "missing.mtx")}
    specs = expand(MANY)
    dataset = {"instances": [specs[0], bad_file, *specs[1:4]]}
    s_raise, s_wrong = f"_s{specs[1]['seed']}", f"_s{specs[2]['seed']}"
    for target in ("_faulty_solvers.Picky", "_faulty_solvers.Batched"):
        algorithm = ({"_target_": target, "mode": "raise", "on": s_raise} if target.endswith("Picky")
                     else {"_target_": target, "wrong": s_wrong})
        rows, _ = execute_batch(_batch(tmp_path, algorithm, dataset))
        by = _by_task(rows)
        assert len(by) == 5
        for task_rows in by.values():
            name = task_rows[0]["instance"]
            if "missing" in name:
                assert [r["status"] for r in task_rows] == ["error"] and "missing.mtx" in task_rows[0]["error"]
            elif target.endswith("Picky") and name.endswith(s_raise):  # planted at repetition 0
                assert [r["status"] for r in task_rows] == ["error", "ok"], task_rows
                assert "planted failure" in task_rows[0]["error"]
            elif target.endswith("Batched") and name.endswith(s_wrong):
                assert [r["verified"] for r in task_rows] == [False, False]
            else:
                assert [(r["status"], r["verified"]) for r in task_rows] == [("ok", True)] * 2, task_rows


def test_batchable_solver_gets_the_batch_and_each_instance_a_share(tmp_path, faulty_path):
    import _faulty_solvers

    _faulty_solvers.Batched.log.clear()
    batch = _batch(tmp_path, {"_target_": "_faulty_solvers.Batched"})
    rows, notes = execute_batch(batch)
    assert not notes
    calls = _faulty_solvers.Batched.log
    assert [c[0] for c in calls] == ["prepare_batch", "result_batch"] * 3  # warm-up + 2 repetitions
    names = calls[0][1]
    inits = calls[0][2]  # the cheap matchings of the MCM family, one per instance, in order
    assert len(names) == 6 and [m.row_match.shape[0] for m in inits] == [
        int(r["n_rows"]) for t in batch.tasks for r in rows if r["task_id"] == t.task_id
    ][::2]
    assert len(rows) == 12
    by = _by_task(rows)
    assert [by[t.task_id][0]["instance"] for t in batch.tasks] == names  # answers in input order
    for r in rows:
        assert r["status"] == "ok" and r["verified"] is True, r
        assert r["batch_size"] == 6 and r["batch_id"] == "b0"
        assert r["t_solve_s"] == pytest.approx(0.8 / 6)
        counters = json.loads(r["counters_json"])
        assert counters["batch_solve_s"] == 0.8 and r["kernel_launches"] == 1


@pytest.mark.parametrize("mode", ["raise", "short"])
def test_whole_batch_failure_falls_back_to_one_by_one(tmp_path, faulty_path, mode):
    import _faulty_solvers

    _faulty_solvers.Batched.log.clear()
    rows, notes = execute_batch(_batch(tmp_path, {"_target_": "_faulty_solvers.Batched", "mode": mode}))
    assert len(notes) == 1 and "they were solved one by one" in notes[0]
    assert ("planted batch failure" if mode == "raise" else "gave 5 answers for 6") in notes[0]
    assert len(rows) == 12 and len(_by_task(rows)) == 6
    assert all(r["status"] == "ok" and r["verified"] is True and r.get("batch_size") is None for r in rows)
    assert sum(c[0] == "prepare" for c in _faulty_solvers.Batched.log) == 6 * 3


@pytest.mark.parametrize(("mode", "message", "limit"), [("crash", "SIGKILL", 5.0), ("sleep", "exceeded its limits", 3.0)])
def test_joint_solve_killed_or_crashed_falls_back_in_a_fresh_process(tmp_path, faulty_path, mode, message, limit):
    # sleep: task_timeout_s=3 gives the joint solve of 6 eighteen seconds, which its sleep
    # of 60 exceeds; a crash needs no tight limit. 1 s per instance failed the one-by-one
    # path on a loaded host (a fresh task process starts it), once with the crash and once
    # with the sleep (11 rows of 12, the host busy with other work)
    batch = _batch(tmp_path, {"_target_": "_faulty_solvers.Batched", "mode": mode}, task_timeout_s=limit)
    proc = TaskProcess()
    try:
        rows, notes = proc.run_batch(batch)
    finally:
        proc.close()
    assert len(notes) == 1 and message in notes[0] and "one by one" in notes[0]
    assert len(rows) == 12 and all(r["status"] == "ok" and r.get("batch_size") is None for r in rows), rows


@pytest.mark.parametrize(("mode", "status", "message"), [
    ("sleep", "timeout", "timeout_s=3"), ("crash", "crashed", "SIGKILL"), ("oom", "oom", "planted out of memory"),
])  # fmt: skip
def test_isolated_batch_instance_timeout_or_crash_is_its_row(tmp_path, faulty_path, mode, status, message):
    specs = expand(MANY)
    on = f"_s{specs[2]['seed']}"
    batch = _batch(tmp_path, {"_target_": "_faulty_solvers.Picky", "mode": mode, "on": on, "at": 1},
                   task_timeout_s=3.0)
    proc = TaskProcess()
    try:
        rows, notes = proc.run_batch(batch)
    finally:
        proc.close()
    assert not notes
    by = _by_task(rows)
    assert len(by) == 6
    for task_rows in by.values():
        assert all(r["batch_id"] == "b0" and r["t_total_s"] > 0 for r in task_rows)
        if task_rows[0]["instance"].endswith(on):
            assert [r["status"] for r in task_rows] == ["ok", status], task_rows
            assert message in task_rows[1]["error"] and task_rows[1]["repetition"] == 1
            assert task_rows[1]["n_rows"] == task_rows[0]["n_rows"]  # still named and sized
        else:
            assert [r["status"] for r in task_rows] == ["ok", "ok"]


# --------------------------------------------------------------------------- sweeps


_SKIP_COLS = {"timestamp", "run_id", "batch_id", "batch_size", "config_json", "phases_json"}


def _comparable(df):
    cols = [c for c in df.columns
            if c not in _SKIP_COLS and not c.startswith("t_") and not c.endswith("_per_s")]
    return df.sort_values(["task_id", "repetition"])[cols].reset_index(drop=True)


@pytest.mark.slow
def test_batched_sweep_rows_equal_unbatched_rows(tmp_path):
    algo = {"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"}
    off = execute([build_plan(_cfg(tmp_path, algo, id="off"))], stream=io.StringIO())
    log = io.StringIO()
    on = execute([build_plan(_cfg(tmp_path, algo, id="on", batch=4))], stream=log)
    assert on["batches"] == 2 and on["tasks"] == off["tasks"] == 6
    text = log.getvalue()
    assert "6 task(s) in 2 batch(es) of at most 4 instance(s)" in text
    assert "[4/6]" in text and "[6/6]" in text  # progress counts instances
    a, b = read_results(off["dir"]), read_results(on["dir"])
    assert len(a) == len(b) == 12 and a.batch_id.isna().all() and b.batch_id.notna().all()
    assert b.batch_size.isna().all()  # solved one by one: each its own time
    assert len(list(Path(on["dir"]).glob("part-batch-*.parquet"))) == 2
    assert _comparable(a).equals(_comparable(b))
    for x, y in zip(a.sort_values("task_id").config_json, b.sort_values("task_id").config_json, strict=True):
        cx, cy = json.loads(x), json.loads(y)
        for c in (cx, cy):
            c["run"].pop("batch", None)
            c["run"].pop("id")
        assert cx == cy


@pytest.mark.slow
def test_resume_of_a_batched_sweep_runs_each_unfinished_instance_once(tmp_path):
    algo = {"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"}
    dataset = {**MANY, "count": 9}
    first = execute([build_plan(_cfg(tmp_path, algo, dataset, id="res", batch=3))], stream=io.StringIO())
    run_dir = Path(first["dir"])
    parts = sorted(run_dir.glob("part-batch-*.parquet"))
    assert len(parts) == 3 and first["batches"] == 3
    # The sweep died with one batch in flight and another being written (a torn temp file).
    lost = read_results(parts[0])
    torn = read_results(parts[1])
    parts[0].unlink()
    data = parts[1].read_bytes()
    parts[1].unlink()
    (run_dir / f".{parts[1].name}.tmp").write_bytes(data[: len(data) // 2])
    writer = RunWriter(tmp_path / "runs", "res", run_dir.parent.name.split("=", 1)[1])
    unfinished = set(lost.task_id) | set(torn.task_id)
    assert len(unfinished) == 6 and writer.done_tasks() == set(read_results(run_dir).task_id)

    # Resumed with other batches (2 per batch): only the 6 unfinished instances run, once.
    log = io.StringIO()
    again = execute([build_plan(_cfg(tmp_path, algo, dataset, id="res", batch=2, resume=True))], stream=log)
    assert "3 task(s) already in run res, skipped" in log.getvalue()
    assert again["tasks"] == 6 and again["batches"] == 3 and again["rows"] == {"ok": 12}
    final = read_results(run_dir)
    assert final.task_id.nunique() == 9 and len(final) == 18
    assert final.groupby(["task_id", "repetition"]).size().max() == 1
    new = [p for p in run_dir.glob("part-batch-*.parquet") if p.name != parts[2].name]
    assert len(new) == 3 and set(read_results(*new).task_id) == unfinished


def test_gpu_batches_without_gpu_worker_are_skipped_rows_in_batch_files(tmp_path):
    plan = build_plan(_cfg(tmp_path, {"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"},
                           batch=4))
    plan.tasks[:] = [dataclasses.replace(t, device="gpu") for t in plan.tasks]
    summary = execute([plan], stream=io.StringIO())
    df = read_results(summary["dir"])
    assert len(df) == 6 and (df.status == "skipped").all() and df.batch_id.notna().all()
    assert len(list(Path(summary["dir"]).glob("part-batch-*.parquet"))) == 2


def test_gpu_batches_warm_their_instances_in_one_task_each(tmp_path):
    class Client:
        def __init__(self):
            self.calls = []

        def submit(self, fn, specs, **kw):
            self.calls.append((fn.__name__, [s for s, _ in specs], kw))
            return object()

    # erdos_renyi: disk-cached, and no bulk hook (rgg's instances are left to the batch)
    many = {**MANY, "many": {"_target_": "matchbench.families.mcm.datasets.erdos_renyi"}}
    plan = build_plan(_cfg(tmp_path, {"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"}, many))
    plan.tasks[:] = [dataclasses.replace(t, device="gpu") for t in plan.tasks]
    units = [plan.tasks[:4], plan.tasks[2:6], plan.tasks[:1]]  # overlapping: made once
    client = Client()
    warm = _warm_instances(client, units, 1, 1, io.StringIO())
    assert [len(c[1]) for c in client.calls] == [4, 2]
    assert all(c[0] == "warm_disk_caches" and c[2]["resources"] == {"CPU": 1} for c in client.calls)
    assert len(warm[0]) == 1 and len(warm[1]) == 2 and len(warm[2]) == 1
    assert _warm_instances(client, units, 1, 0, io.StringIO()) == {}  # no CPU worker: no warming


def test_gpu_batches_leave_bulk_made_instances_to_the_batch(tmp_path):
    """A batch whose dataset function makes its instances in bulk (matchbench_bulk) makes
    them itself and never reads the disk cache: nothing is generated into it first; alone
    (unbatched), such an instance is still warmed."""
    class Client:
        def __init__(self):
            self.calls = []

        def submit(self, fn, specs, **kw):
            self.calls.append([s for s, _ in specs])
            return object()

    lap = {"name": "lap_many4", "many": {"_target_": "matchbench.families.lap.datasets.uniform", "n": 8},
           "count": 4, "seed": 1}
    plan = build_plan(_cfg(tmp_path, {"_target_": "matchbench.families.lap.refs.ScipyLSA"}, dataset=lap))
    assert not plan.error_rows, plan.error_rows
    plan.tasks[:] = [dataclasses.replace(t, device="gpu") for t in plan.tasks]
    client = Client()
    assert _warm_instances(client, [plan.tasks], 1, 1, io.StringIO()) == {}
    assert client.calls == []
    warm = _warm_instances(client, [plan.tasks[:1]], 1, 1, io.StringIO())
    assert len(client.calls) == 1 and len(warm[0]) == 1


def test_schema_batch_columns_and_old_files(tmp_path):
    import pyarrow as pa

    from matchbench.results.schema import SCHEMA, SCHEMA_VERSION, upgrade

    assert SCHEMA_VERSION >= 5
    assert SCHEMA.field("batch_id").type == pa.string() and SCHEMA.field("batch_size").type == pa.int32()
    old = pa.table({"status": ["ok"], "t_solve_s": [1.0]})
    up = upgrade(old, 4)
    assert up.column("batch_id").to_pylist() == [None] and up.column("batch_size").to_pylist() == [None]
    w = RunWriter(tmp_path, "r", "2026-01-01")
    w.write_task("t1", [{"task_id": "t1", "status": "ok"}])
    w.write_batch("abc", [{"task_id": t, "status": "ok", "batch_id": "abc"} for t in ("t2", "t3", "t3")])
    assert w.done_tasks() == {"t1", "t2", "t3"}
    assert (w.dir / "part-batch-abc.parquet").exists()


def _cli(tmp_path, run_id, *extra):
    return [
        sys.executable, "-m", "matchbench", "dataset=mcm_many", "dataset.count=8", "dataset.draw.scale=[5,6]",
        "cluster=local_cpu", "cluster.n_workers=1", "cluster.dashboard_address=:0", "gpu.repetitions=1",
        "gpu.warmup=0", f"run.results_dir={tmp_path / 'runs'}", f"data_dir={tmp_path / 'data'}",
        f"run.id={run_id}", *extra,
    ]  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_ctrl_c_of_a_batched_sweep_then_resume_runs_each_instance_once(tmp_path, faulty_path):
    import signal
    import subprocess
    import time

    args = _cli(tmp_path, "ctrlc", "algorithm._target_=_faulty_solvers.Faulty", "+algorithm.mode=sleep",
                "+algorithm.at=-1", "+algorithm.seconds=0.5", "run.batch=2")
    sweep = subprocess.Popen(args, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
    runs = tmp_path / "runs"
    deadline = time.time() + 120
    while time.time() < deadline and not list(runs.glob("date=*/run=ctrlc/part-batch-*.parquet")):
        time.sleep(0.1)
    assert list(runs.glob("date=*/run=ctrlc/part-batch-*.parquet")), "no batch finished"
    os.killpg(sweep.pid, signal.SIGINT)
    _, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "run.resume=true run.id=ctrlc" in err, err[-2000:]
    first = read_results(runs)
    assert 0 < first.task_id.nunique() < 8 and first.task_id.nunique() % 2 == 0  # whole batches
    assert f"interrupted: {first.task_id.nunique()} of 8 task(s) finished" in err, err[-1000:]
    resumed = subprocess.run([*args, "run.resume=true"], env=dict(os.environ), capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"resume: {first.task_id.nunique()} task(s) already in run ctrlc" in resumed.stderr
    final = read_results(runs)
    assert final.task_id.nunique() == 8 and len(final) == 8 and (final.status == "ok").all()


@pytest.mark.slow
def test_batch_whose_worker_dies_reruns_its_instances_alone(tmp_path, faulty_path):
    import subprocess

    specs = expand({**MANY, "count": 3, "draw": {"scale": [5, 6]}})
    args = _cli(tmp_path, "killed", "algorithm._target_=_faulty_solvers.Picky", "+algorithm.mode=kill_worker",
                "+algorithm.at=-1", f"+algorithm.on=_s{specs[1]['seed']}", "dataset.count=3", "run.batch=3",
                "gpu.warmup=1")
    done = subprocess.run(args, env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "its worker died (KilledWorker); its instances run again, one task each" in done.stderr
    df = read_results(tmp_path / "runs")
    assert df.task_id.nunique() == 3 and df.groupby("task_id").size().max() == 1
    crashed = df[df.status == "crashed"]
    assert len(crashed) == 1 and json.loads(crashed.instance_params.iloc[0])["seed"] == specs[1]["seed"]
    assert (df[df.status != "crashed"].status == "ok").all()
    assert df.batch_id.isna().all()  # the reruns were tasks of their own


def test_batch_without_isolation_runs_in_the_worker(tmp_path):
    from matchbench.runner.child import run_batch

    batch = _batch(tmp_path, {"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"}, isolate=False)
    out = run_batch(batch)
    assert out["notes"] == [] and len(out["rows"]) == 12
    assert all(r["status"] == "ok" and r["batch_id"] == "b0" and r["t_total_s"] > 0 for r in out["rows"])
