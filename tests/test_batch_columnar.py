"""Batches as columns (issue #31): instances made in bulk, answers certified in bulk, rows
as Arrow tables, with the rows, failures and resume of the one-by-one batch path.

``execute_batch(batch)`` is the one-by-one path (a dict per row); ``execute_batch(batch,
tables=[])`` the columnar one (``matchbench.runner.task.columnar_batch``), which the
sweep's task processes take for solvers that are not ``batchable``.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from matchbench.datasets import expand
from matchbench.results.schema import COLUMNS, SCHEMA, record_batch, table_from_rows, with_constants
from matchbench.results.store import read_results
from matchbench.runner.batch import Batch
from matchbench.runner.child import TaskProcess
from matchbench.runner.execute import execute
from matchbench.runner.plan import build_plan
from matchbench.runner.task import bulk_instances, execute_batch

TESTS = Path(__file__).parent
UNIFORM = "matchbench.families.lap.datasets.uniform"
LAPS = {
    "name": "tiny_laps",
    "many": {"_target_": UNIFORM, "n": 6, "cost_range": "n"},
    "count": 7,
    "seed": 1,
}
SCIPY = {"_target_": "matchbench.families.lap.refs.ScipyLSA"}
TIMES = {"timestamp"} | {c for c in COLUMNS if c.startswith("t_") or c.endswith("_per_s")}


@pytest.fixture(autouse=True)
def one_by_one(monkeypatch):
    """These tests are of the per-instance columnar path: the batch as one stack
    (``matchbench.runner.stack``, tests/test_batch_stack.py) is switched off, here and
    in the task processes."""
    monkeypatch.setattr("matchbench.runner.stack.stack_batch", lambda *a, **k: None)
    monkeypatch.setenv("MATCHBENCH_NO_STACK", "1")


@pytest.fixture
def solvers_path(monkeypatch):
    """Make tests/_columnar_solvers.py importable here and in task processes."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))


def _cfg(tmp_path, algorithm, dataset=LAPS, reps=2, workers=1, **run):
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "gpu": {"repetitions": reps, "warmup": 1},
        "cluster": {"kind": "local_cpu", "n_workers": workers, "dashboard_address": ":0"},
        "run": {
            "results_dir": str(tmp_path / "runs"),
            "task_timeout_s": 60,
            "isolate": True,
            "verify": True,
        }
        | run,
        "data_dir": str(tmp_path / "data"),
    }


def _batch(tmp_path, algorithm, dataset=LAPS, **kw):
    plan = build_plan(_cfg(tmp_path, algorithm, dataset, **kw))
    assert not plan.error_rows, plan.error_rows
    return Batch(batch_id="b0", tasks=plan.tasks)


def _columnar(batch):
    tables: list = []
    rows, notes = execute_batch(batch, tables=tables)
    assert not rows and all(t.schema.equals(SCHEMA) for t in tables)
    return pa.concat_tables(tables).to_pylist() if tables else [], notes


def _by_task(rows):
    out: dict[str, list] = {}
    for r in sorted(rows, key=lambda r: (r["task_id"], r["repetition"])):
        out.setdefault(r["task_id"], []).append(r)
    return out


def _content(rows):
    """Rows as sorted tuples of their columns, times as whether they are null."""
    out = []
    for r in rows:
        full = {c: r.get(c) for c in COLUMNS}
        out.append(tuple((c, (v is None) if c in TIMES else v) for c, v in full.items()))
    return sorted(out, key=lambda t: (dict(t)["task_id"], dict(t)["repetition"]))


@pytest.mark.parametrize(
    ("algorithm", "dataset"),
    [
        (SCIPY, LAPS),  # bulk generation, the vectorized certificate
        ({"_target_": "matchbench.families.lap.refs.HungarianTree"},  # answers with duals
         {**LAPS, "many": {"_target_": "matchbench.families.lap.datasets.uniform_float", "n": 5}}),
        ({"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"},  # no hook; MCM.verify_batch
         {"name": "g", "many": {"_target_": "matchbench.families.mcm.datasets.erdos_renyi"}, "count": 4, "seed": 1,
          "draw": {"scale": [5, 6]}}),
        (SCIPY, {"instances": [{"_target_": UNIFORM, "n": 5, "seed": 3, "rcp": True, "rcp_seed": 2},
                               {"_target_": UNIFORM, "n": 4, "seed": 3}]}),  # rcp: loaded one by one
    ],
)  # fmt: skip
def test_columnar_rows_equal_the_one_by_one_rows(tmp_path, algorithm, dataset):
    batch = _batch(tmp_path, algorithm, dataset)
    old, notes = execute_batch(batch)
    new, new_notes = _columnar(batch)
    assert not notes and not new_notes
    assert len(new) == len(old) == 2 * len(batch.tasks)
    assert _content(new) == _content(old)
    assert all(r["status"] == "ok" and r["verified"] is True and r["batch_id"] == "b0" for r in new)
    for r in new:
        assert (
            r["t_total_s"] > 0 and r["t_verify_s"] > 0 and r["t_load_s"] >= 0 and r["t_solve_s"] > 0
        )


def test_instances_are_made_in_bulk_and_by_their_own_seed(tmp_path, monkeypatch):
    from matchbench.families.lap import datasets as L

    calls = []
    real = L.uniform.matchbench_bulk
    monkeypatch.setattr(
        L.uniform, "matchbench_bulk", lambda kws: calls.append(len(kws)) or real(kws)
    )
    batch = _batch(tmp_path, SCIPY)
    made = bulk_instances(batch.tasks)
    assert calls == [7] and sorted(made) == list(range(7))
    for i, t in enumerate(batch.tasks):
        inst, seconds = made[i]
        assert seconds > 0
        assert (
            inst.costs.tobytes()
            == L.uniform(
                **{k: v for k, v in t.instance_spec.items() if k not in ("_target_", "rcp")}
            ).costs.tobytes()
        )
    rows, _ = _columnar(batch)
    assert calls == [7, 7]
    assert not (tmp_path / "data" / "generated").exists()  # bulk instances bypass the disk cache


def test_a_failing_instance_is_its_row_and_the_others_go_on(tmp_path, solvers_path):
    specs = expand(LAPS)
    bad = {"_target_": UNIFORM, "n": 0, "seed": 99}  # the bulk call fails: all load one by one
    dataset = {"instances": [*specs[:5], bad]}
    s_raise, s_wrong = f"_s{specs[1]['seed']}", f"_s{specs[2]['seed']}"
    for mode, on in (("raise", s_raise), ("wrong", s_wrong)):
        batch = Batch(
            "b0",
            _batch(
                tmp_path,
                {"_target_": "_columnar_solvers.LapPicky", "mode": mode, "on": on},
                dataset,
            ).tasks,
        )
        old, _ = execute_batch(batch)
        rows, _ = _columnar(batch)
        assert _content(rows) == _content(old)
        by = _by_task(rows)
        assert len(by) == 6
        for task_rows in by.values():
            name = task_rows[0]["instance"]
            if task_rows[0]["n_rows"] is None:  # the bad spec, never loaded
                assert [r["status"] for r in task_rows] == ["error"]
                assert "n must be a positive integer" in task_rows[0]["error"]
            elif name.endswith(on) and mode == "raise":
                assert [r["status"] for r in task_rows] == ["error", "ok"]
                assert "planted failure" in task_rows[0]["error"] and task_rows[0]["n_rows"] == 6
            elif name.endswith(on):
                assert [(r["status"], r["verified"]) for r in task_rows] == [("wrong", False)] * 2
                assert "not optimal" in task_rows[0]["error"]
            else:
                assert [(r["status"], r["verified"]) for r in task_rows] == [("ok", True)] * 2
            assert all(r["t_total_s"] > 0 and r["batch_id"] == "b0" for r in task_rows)


def test_a_verify_batch_that_raises_certifies_each_answer_alone(tmp_path, monkeypatch):
    from matchbench.families.lap.problem import LAP

    def broken(self, instances, solutions):
        raise RuntimeError("planted verify_batch failure")

    monkeypatch.setattr(LAP, "verify_batch", broken)
    batch = _batch(tmp_path, SCIPY)
    rows, _ = _columnar(batch)
    assert _content(rows) == _content(execute_batch(batch)[0])
    assert all(r["verified"] is True for r in rows)


def test_a_crash_in_a_chunk_solves_its_instances_again_one_by_one(tmp_path, solvers_path):
    specs = expand(LAPS)
    on = f"_s{specs[3]['seed']}"
    batch = _batch(
        tmp_path, {"_target_": "_columnar_solvers.LapPicky", "mode": "crash", "on": on, "at": 1}
    )
    proc = TaskProcess()
    tables: list = []
    try:
        rows, notes = proc.run_batch(batch, tables)
    finally:
        proc.close()
    assert len(notes) == 1 and "SIGKILL" in notes[0] and "one by one" in notes[0]
    assert not tables  # the only chunk died: its instances came back as dict rows
    by = _by_task(rows)
    assert len(by) == 7
    for task_rows in by.values():
        if task_rows[0]["instance"].endswith(on):
            assert [r["status"] for r in task_rows] == ["ok", "crashed"], task_rows
        else:
            assert [r["status"] for r in task_rows] == ["ok", "ok"]


def test_isolated_columnar_batch_sends_tables(tmp_path):
    batch = _batch(tmp_path, SCIPY)
    proc = TaskProcess()
    tables: list = []
    try:
        rows, notes = proc.run_batch(batch, tables)
    finally:
        proc.close()
    assert not rows and not notes and sum(t.num_rows for t in tables) == 14
    assert _content(pa.concat_tables(tables).to_pylist()) == _content(execute_batch(batch)[0])


def test_a_sealed_batch_comes_back_as_sealed_tables(tmp_path):
    """The sweep's way (``run_batch``): the batch sealed by the client, its tables sealed
    by the task process; opened, they are the rows of the unsealed way."""
    from matchbench.runner.batch import Sealed, opened

    batch = _batch(tmp_path, SCIPY)
    proc = TaskProcess()
    tables: list = []
    try:
        rows, notes = proc.run_batch(batch.sealed(), tables, sealed=True)
    finally:
        proc.close()
    assert not rows and not notes and tables and all(isinstance(t, Sealed) for t in tables)
    got = pa.concat_tables(opened(tables))
    assert got.num_rows == 14
    assert _content(got.to_pylist()) == _content(execute_batch(batch)[0])


def test_chunks_are_tables_of_the_schema(tmp_path, monkeypatch):
    import matchbench.runner.task as T

    monkeypatch.setattr(T, "CHUNK_INSTANCES", 3)
    sent = []
    tables: list = []
    execute_batch(_batch(tmp_path, SCIPY), send=lambda k, p: sent.append((k, p)), tables=tables)
    assert [t.num_rows for t in tables] == [6, 6, 2]
    kinds = [k for k, _ in sent]
    assert kinds == ["joint", "joint", "chunk", "joint", "chunk", "joint", "chunk"]
    assert sent[0][1] == list(range(7)) and [p for k, p in sent if k == "joint"][1:] == [
        [0, 1, 2],
        [3, 4, 5],
        [6],
    ]
    assert [i for k, p in sent if k == "chunk" for i in p[1]] == list(range(7))


# --------------------------------------------------------------------------- sweeps


@pytest.mark.slow
def test_columnar_sweep_writes_every_row_and_resumes_by_instance(tmp_path):
    dataset = {**LAPS, "count": 9}
    log = io.StringIO()
    first = execute([build_plan(_cfg(tmp_path, SCIPY, dataset, id="col", batch=3))], stream=log)
    assert first["rows"] == {"ok": 18} and first["batches"] == 3
    assert "[9/9]" in log.getvalue()
    run_dir = Path(first["dir"])
    parts = sorted(run_dir.glob("part-batch-*.parquet"))
    assert len(parts) == 3
    df = read_results(run_dir)
    assert (
        len(df) == 18
        and df.verified.all()
        and df.run_id.eq("col").all()
        and df.git_commit.notna().all()
    )
    assert df.groupby(["task_id", "repetition"]).size().max() == 1

    lost = set(read_results(parts[0]).task_id)
    parts[0].unlink()
    log = io.StringIO()
    again = execute(
        [build_plan(_cfg(tmp_path, SCIPY, dataset, id="col", batch=2, resume=True))], stream=log
    )
    assert "6 task(s) already in run col, skipped" in log.getvalue()
    assert again["tasks"] == 3 and again["rows"] == {"ok": 6}
    final = read_results(run_dir)
    assert final.task_id.nunique() == 9 and len(final) == 18 and final.verified.all()
    new = [p for p in run_dir.glob("part-batch-*.parquet") if p not in parts]
    assert set(read_results(*new).task_id) == lost


@pytest.mark.slow
def test_columnar_sweep_equals_unbatched_sweep(tmp_path):
    off = execute([build_plan(_cfg(tmp_path, SCIPY, id="off"))], stream=io.StringIO())
    on = execute([build_plan(_cfg(tmp_path, SCIPY, id="on", batch=4))], stream=io.StringIO())
    skip = {"run_id", "batch_id", "config_json", "timestamp"}
    cols = [c for c in COLUMNS if c not in skip and c not in TIMES]
    a = read_results(off["dir"]).sort_values(["task_id", "repetition"])[cols].reset_index(drop=True)
    b = read_results(on["dir"]).sort_values(["task_id", "repetition"])[cols].reset_index(drop=True)
    assert len(a) == 14 and a.equals(b)


# --------------------------------------------------------------------------- schema


def test_record_batch_is_the_schema_and_table_from_rows_agrees():
    rows = [
        {"task_id": "a", "repetition": 0, "status": "ok", "objective": 1.5, "verified": True},
        {"task_id": "b", "repetition": 1, "status": "wrong", "error": "x", "verified": False},
    ]
    columns = {c: [r.get(c) for r in rows] for c in {k for r in rows for k in r}}
    columns["task_id"] = pa.array(["a", "b"])
    batch = record_batch(columns, 2)
    assert batch.schema.equals(SCHEMA)
    assert pa.Table.from_batches([batch]).to_pylist() == table_from_rows(rows).to_pylist()
    with pytest.raises(KeyError, match="outside the schema"):
        record_batch({"tme2": [1, 2]}, 2)
    with pytest.raises(ValueError, match="has 1 values for 2 rows"):
        record_batch({"task_id": ["a"]}, 2)
    t = with_constants(table_from_rows(rows), {"run_id": "r1", "git_dirty": False})
    assert (
        t.column("run_id").to_pylist() == ["r1", "r1"]
        and t.column("git_dirty").to_pylist() == [False] * 2
    )
    assert t.schema.equals(SCHEMA)
    assert np.isnan(record_batch({"objective": [float("nan")]}, 1).column("objective")[0].as_py())


# --------------------------------------------------------------------------- joint solves


def test_joint_solve_rows_as_columns_equal_the_dict_rows(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    import _faulty_solvers

    many = {"name": "g", "many": {"_target_": "matchbench.families.mcm.datasets.rgg"}, "count": 5, "seed": 1,
            "draw": {"scale": [5, 6]}}  # fmt: skip
    specs = expand(many)
    wrong = f"_s{specs[2]['seed']}"
    batch = _batch(tmp_path, {"_target_": "_faulty_solvers.Batched", "wrong": wrong}, many)
    _faulty_solvers.Batched.log.clear()
    old, notes = execute_batch(batch)
    sent = []
    tables: list = []
    rows, new_notes = execute_batch(batch, send=lambda k, p: sent.append(k), tables=tables)
    assert not notes and not new_notes and not rows and "chunk" in sent and "row" not in sent
    new = pa.concat_tables(tables).to_pylist()
    assert _content(new) == _content(old)
    assert [c[0] for c in _faulty_solvers.Batched.log].count("prepare_batch") == 6  # 3 per path
    for r in new:
        assert (
            r["batch_size"] == 5 and r["t_solve_s"] == pytest.approx(0.8 / 5) and r["t_total_s"] > 0
        )
        # the instance's own initialization counts in its columnar row as in its dict row
        assert r["t_init_s"] is not None and r["t_e2e_s"] == pytest.approx(r["t_solve_s"] + r["t_init_s"])
        assert (r["status"], r["verified"]) == (
            ("wrong", False) if r["instance"].endswith(wrong) else ("ok", True)
        )


def test_joint_solve_of_bulk_made_instances(tmp_path, monkeypatch):
    from matchbench.core.solver import BaseSolver
    from matchbench.families.lap.refs import ScipyLSA

    class JointLSA(BaseSolver):  # scipy on each, as one "joint" call
        name, problem, device, batchable = "joint_lsa", "lap", "cpu", True

        def prepare_batch(self, instances, inits=None):
            self.instances = instances

        def run(self):
            self.answers = []
            for inst in self.instances:
                s = ScipyLSA()
                s.prepare(inst)
                s.run()
                self.answers.append(s.result())

        def result_batch(self):
            return self.answers

    import matchbench.runner.task as T

    monkeypatch.setattr(T, "new_solver", lambda cfg: JointLSA())
    batch = _batch(tmp_path, SCIPY)
    old, _ = execute_batch(batch)
    new, _ = _columnar(batch)
    timeless = [
        {k: v for k, v in r.items() if k != "counters_json"} for r in new
    ]  # batch_solve_s: a time
    assert _content(timeless) == _content(
        [{k: v for k, v in r.items() if k != "counters_json"} for r in old]
    )
    assert len(new) == 14 and all("batch_solve_s" in r["counters_json"] for r in new)
    assert all(r["verified"] is True and r["batch_size"] == 7 and r["t_load_s"] > 0 for r in new)


def test_a_chunk_that_cannot_be_made_as_columns_is_solved_one_by_one(tmp_path, monkeypatch):
    import matchbench.runner.task as T

    monkeypatch.setattr(T, "CHUNK_INSTANCES", 4)
    real = T._rows_table
    calls = []

    def flaky(*args):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("planted columns failure")
        return real(*args)

    monkeypatch.setattr(T, "_rows_table", flaky)
    batch = _batch(tmp_path, SCIPY)
    tables: list = []
    rows, notes = execute_batch(batch, tables=tables)
    assert len(notes) == 1 and "planted columns failure" in notes[0] and "one by one" in notes[0]
    assert len(rows) == 8 and sum(t.num_rows for t in tables) == 6  # 4 alone, 3 as columns
    every = rows + pa.concat_tables(tables).to_pylist()
    assert _content(every) == _content(execute_batch(batch)[0])


def test_a_batch_makes_its_host_initializer_once(tmp_path, monkeypatch):
    from matchbench.families.mcm.cheap import CheapCPU

    made = []
    real = CheapCPU.__init__
    monkeypatch.setattr(CheapCPU, "__init__", lambda self, **kw: made.append(1) or real(self, **kw))
    many = {"name": "g", "many": {"_target_": "matchbench.families.mcm.datasets.rgg"}, "count": 6, "seed": 1,
            "draw": {"scale": [5, 6]}}  # fmt: skip
    cfg = _cfg(tmp_path, {"_target_": "matchbench.families.mcm.ref_scipy.ScipyHopcroftKarp"}, many)
    cfg["init"] = {"_target_": "matchbench.families.mcm.cheap.CheapCPU"}  # conf/init/cheap_cpu.yaml
    plan = build_plan(cfg)
    batch = Batch(batch_id="b0", tasks=plan.tasks)
    assert all(t.init_cfg for t in batch.tasks)
    made.clear()  # the planner makes one to read its label
    rows, _ = _columnar(batch)
    assert len(made) == 1  # once per batch, not per instance
    assert len(rows) == 12 and all(r["status"] == "ok" and r["init"] == "cheap_cpu" for r in rows)
    assert all(r["t_init_s"] is not None and r["objective_init"] is not None for r in rows)
