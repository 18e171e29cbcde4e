"""Run options any sweep can use: per-algorithm time limits, instrumented repetitions,
plan-time skips across problem families, CPU workers beside GPU workers, sweeper grids."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from matchbench.results.compare import normalize
from matchbench.results.store import read_results
from matchbench.runner.child import TaskProcess
from matchbench.runner.execute import execute
from matchbench.runner.plan import build_plan

TESTS = Path(__file__).parent
ER = {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 7, "avg_degree": 3.0, "seed": 3}
LAP = {"_target_": "matchbench.families.lap.datasets.uniform", "n": 16, "cost_range": "n", "seed": 1}


@pytest.fixture
def faulty_path(monkeypatch):
    """Make tests/_faulty_solvers.py importable here and in task processes."""
    import os
    import sys

    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))


def _cfg(tmp_path, algorithm, dataset=ER, gpu=None, **run):
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "gpu": {"repetitions": 3, "warmup": 1} | (gpu or {}),
        "cluster": {"kind": "local_cpu", "n_workers": 2, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path), "task_timeout_s": 60, "isolate": True, "verify": True} | run,
        "data_dir": str(tmp_path / "data"),
    }


# -- algorithm.time_limit_s ------------------------------------------------------------


def test_time_limit_is_a_run_option_not_a_solver_parameter(tmp_path):
    algo = {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp", "time_limit_s": 5}
    (task,) = build_plan(_cfg(tmp_path, algo)).tasks
    assert task.time_limit_s == 5.0 and "time_limit_s" not in task.algorithm_cfg
    assert task.variant == "default"  # the limit is not part of the variant


@pytest.mark.parametrize("bad", [0, -1, "soon", True])
def test_bad_time_limit_is_an_error_row(tmp_path, bad):
    algo = {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp", "time_limit_s": bad}
    plan = build_plan(_cfg(tmp_path, algo))
    assert not plan.tasks and "time_limit_s" in plan.error_rows[0]["error"]


def test_repetition_over_its_time_limit_is_a_timeout_row_carrying_the_limit(tmp_path, faulty_path):
    algo = {"_target_": "_faulty_solvers.Faulty", "mode": "sleep", "at": 1, "time_limit_s": 2}
    (task,) = build_plan(_cfg(tmp_path, algo)).tasks
    proc = TaskProcess()
    try:
        rows = proc.run(task)
    finally:
        proc.close()
    assert [r["status"] for r in rows] == ["ok", "timeout"]
    ok, late = rows
    assert ok["repetition"] == 0 and ok["verified"] is True
    assert late["repetition"] == 1 and late["time_limit_s"] == 2.0
    assert "repetition 1 exceeded time_limit_s=2" in late["error"]
    assert late["instance"] == ok["instance"]


def test_time_limit_covers_the_warm_up_and_task_timeout_still_applies(tmp_path, faulty_path):
    algo = {"_target_": "_faulty_solvers.Faulty", "mode": "sleep", "at": -1, "time_limit_s": 30}
    (task,) = build_plan(_cfg(tmp_path, algo, task_timeout_s=2)).tasks
    proc = TaskProcess()
    try:
        (row,) = proc.run(task)
        assert row["status"] == "timeout" and row["time_limit_s"] == 2.0  # the task's limit hit first
        assert "task exceeded timeout_s=2" in row["error"]
        (row,) = proc.run(dataclasses.replace(task, timeout_s=60.0, time_limit_s=1.5))
        assert row["status"] == "timeout" and row["time_limit_s"] == 1.5
        assert row["error"].startswith("warm-up exceeded time_limit_s=1.5")
    finally:
        proc.close()


# -- instrumented repetitions -----------------------------------------------------------


def test_instrumented_repetitions_follow_the_timed_ones(tmp_path, faulty_path):
    plan = build_plan(_cfg(tmp_path, {"_target_": "_faulty_solvers.Counting"}, gpu={"instrumented": 2}))
    summary = execute([plan], stream=io.StringIO())
    df = read_results(summary["dir"]).sort_values("repetition")
    assert list(df.repetition) == [0, 1, 2, 3, 4]
    assert list(df.instrumented) == [False, False, False, True, True]
    assert (df.status == "ok").all() and df.verified.all()
    counters = df.counters_json.map(lambda s: "edges_scanned" in s)
    assert list(counters) == [False, False, False, True, True]
    # timing views (compare, report) leave the instrumented repetitions out
    assert list(normalize(df).repetition) == [0, 1, 2]


def test_instrumented_is_ignored_by_solvers_without_instrumentation(tmp_path, faulty_path):
    plan = build_plan(_cfg(tmp_path, {"_target_": "_faulty_solvers.Faulty"}, gpu={"instrumented": 2}))
    summary = execute([plan], stream=io.StringIO())
    df = read_results(summary["dir"])
    assert len(df) == 3 and not df.instrumented.any()


def test_task_ids_are_unchanged_without_instrumented_runs(tmp_path):
    algo = {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}
    a = build_plan(_cfg(tmp_path, algo)).tasks[0].task_id
    b = build_plan(_cfg(tmp_path, algo, gpu={"instrumented": 0})).tasks[0].task_id
    c = build_plan(_cfg(tmp_path, algo, gpu={"instrumented": 1})).tasks[0].task_id
    assert a == b != c


# -- pairs across problem families ------------------------------------------------------


def test_cross_family_pairs_are_left_out_at_plan_time_in_one_line(tmp_path):
    mixed = {"instances": [ER, LAP]}
    mcm = build_plan(_cfg(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}, mixed))
    lap = build_plan(_cfg(tmp_path, {"_target_": "matchbench.families.lap.refs.ScipyLSA"}, mixed))
    assert [t.problem for t in mcm.tasks] == ["mcm"] and [t.problem for t in lap.tasks] == ["lap"]
    assert mcm.skipped_pairs == [("hk", "mcm", "uniform(n=16, cost_range='n', seed=1, rcp=False)", "lap")]
    assert lap.skipped_pairs[0][:2] == ("scipy_lsa", "lap") and lap.skipped_pairs[0][3] == "mcm"
    log = io.StringIO()
    summary = execute([mcm, lap], stream=log)
    lines = [line for line in log.getvalue().splitlines() if "different problems" in line]
    assert len(lines) == 1 and "left out 2 solver x instance pair(s)" in lines[0]
    df = read_results(summary["dir"])
    assert len(df) == 6 and (df.status == "ok").all() and df.verified.all()


def test_unknown_dataset_targets_are_not_skipped_but_fail_at_load(tmp_path):
    plan = build_plan(_cfg(tmp_path, {"_target_": "matchbench.families.lap.refs.ScipyLSA"},
                           {"_target_": "matchbench.datasets.nosuch", "n": 3}))
    assert len(plan.tasks) == 1 and not plan.skipped_pairs  # no family known: load decides
    summary = execute([plan], stream=io.StringIO())
    (row,) = read_results(summary["dir"]).to_dict("records")
    assert row["status"] == "error" and "unknown dataset" in row["error"]


# -- CPU workers beside GPU workers -----------------------------------------------------


def test_cpu_workers_join_a_cluster_and_cpu_tasks_ask_for_them():
    from distributed import Client, LocalCluster

    from matchbench.runner.cluster import add_cpu_workers, cpu_workers, gpu_workers, task_resources

    # A stand-in for a LocalCUDACluster: one worker offering GPU=1.
    with LocalCluster(n_workers=1, threads_per_worker=1, resources={"GPU": 1}, dashboard_address=":0") as cluster:
        add_cpu_workers(cluster, 2)
        with Client(cluster) as client:
            assert gpu_workers(client) == 1 and cpu_workers(client) == 2
            workers = client.scheduler_info()["workers"].values()
            cpu = [w for w in workers if "CPU" in w["resources"]]
            assert all(w["nthreads"] == 1 and "GPU" not in w["resources"] for w in cpu)
            fut = client.submit(sum, [1, 2], pure=False, resources=task_resources("cpu", 2))
            assert fut.result(timeout=60) == 3
    assert task_resources("gpu", 0) == {"GPU": 1}
    assert task_resources("cpu", 0) is None  # nobody offers CPU=1: ask for nothing, never wait forever


def test_auto_memory_limit_shares_the_host_among_workers():
    from matchbench.runner.cluster import worker_memory_limit

    assert worker_memory_limit("auto", 4, total=64 << 30) == 16 << 30
    assert worker_memory_limit(None, 3, total=90) == 30
    assert worker_memory_limit("12GiB", 4, total=64 << 30) == "12GiB"
    assert worker_memory_limit(0, 4, total=64 << 30) == 0  # no limit, as Dask reads it
    from distributed.system import MEMORY_LIMIT

    assert worker_memory_limit("auto", 1) == MEMORY_LIMIT


@pytest.mark.parametrize(("value", "want"), [(None, "dask's"), (4, 4.0), ("2.5", 2.5), ("inf", float("inf"))])
def test_a_local_schedulers_worker_saturation_is_the_clusters_setting(value, want):
    import dask

    from matchbench.runner.cluster import make_client

    if want == "dask's":
        want = float(dask.config.get("distributed.scheduler.worker-saturation"))

    cfg = {"kind": "local_cpu", "n_workers": 1, "dashboard_address": None, "worker_saturation": value}
    with make_client(cfg) as client:
        assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.WORKER_SATURATION) == want


@pytest.mark.parametrize("value", [0, -1, "many", True, float("nan"), [4]])
def test_a_bad_worker_saturation_is_one_line_naming_it(tmp_path, value):
    from matchbench.runner.cluster import ClusterError, make_client, worker_saturation

    with pytest.raises(ClusterError, match="cluster.worker_saturation must be a number > 0 or inf"):
        worker_saturation(value)
    cfg = {"algorithm": {"_target_": "matchbench.families.lap.refs.ScipyLSA"},
           "dataset": {"_target_": "matchbench.families.lap.datasets.uniform", "n": 4},
           "gpu": {"repetitions": 1, "warmup": 0},
           "cluster": {"kind": "local_cpu", "n_workers": 1, "worker_saturation": value},
           "run": {"results_dir": str(tmp_path / "runs"), "id": "s"}, "data_dir": str(tmp_path / "d")}
    log = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        execute([build_plan(cfg)], stream=log)
    assert exit_.value.code == 2 and "cluster.worker_saturation" in log.getvalue()
    with pytest.raises(ClusterError):
        with make_client(cfg["cluster"]):
            pass


@pytest.mark.parametrize(
    ("devices", "text", "workers"),
    [(0, "0", 1), ("0", "0", 1), (1, "1", 1), ("0,1", "0,1", 2), ([0, 1], "0,1", 2), (None, None, None), ("", None, None)],
)
def test_visible_devices_as_hydra_reads_them(monkeypatch, devices, text, workers):
    from matchbench.runner import cluster

    monkeypatch.setattr(cluster, "gpu_count", lambda: 4)
    cfg = {"visible_devices": devices}
    assert cluster._visible_devices(cfg) == text  # visible_devices=0 is device 0, not "all"
    assert cluster._n_gpu_workers(cfg) == (workers if workers is not None else 4)
