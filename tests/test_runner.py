"""The runner: tasks to rows, failures to rows, isolation, incremental writes, resume."""

from __future__ import annotations

import dataclasses
import io
import time
from pathlib import Path

import pytest

from matchbench.results.store import read_results
from matchbench.runner.child import TaskProcess, run_task
from matchbench.runner.execute import execute
from matchbench.runner.plan import build_plan

TESTS = Path(__file__).parent
ER = {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 7, "avg_degree": 3.0, "seed": 3}


@pytest.fixture
def faulty_path(monkeypatch):
    """Make tests/_faulty_solvers.py importable here and in task processes."""
    import os
    import sys

    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))


def _cfg(tmp_path, algorithm, dataset=ER, **run):
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "gpu": {"repetitions": 3, "warmup": 1},
        "cluster": {"kind": "local_cpu", "n_workers": 2, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path), "task_timeout_s": 60, "isolate": True, "verify": True} | run,
        "data_dir": str(tmp_path / "data"),
    }


def _task(tmp_path, algorithm, **run):
    plan = build_plan(_cfg(tmp_path, algorithm, **run))
    assert not plan.error_rows, plan.error_rows
    (task,) = plan.tasks
    return task


def test_task_rows_are_timed_and_verified(tmp_path):
    task = _task(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}, isolate=False)
    rows = run_task(task)
    assert [r["repetition"] for r in rows] == [0, 1, 2]
    for r in rows:
        assert r["status"] == "ok" and r["verified"] is True, r
        assert r["objective"] == r["reference_objective"] >= r["objective_init"] > 0
        assert r["t_solve_s"] > 0 and r["t_init_s"] > 0 and r["t_total_s"] >= r["t_solve_s"]
        assert r["n_rows"] == 128 and r["algorithm"] == "hk"


def test_wrong_answer_is_an_unverified_row(tmp_path, faulty_path):
    task = _task(tmp_path, {"_target_": "_faulty_solvers.Faulty", "mode": "wrong"}, isolate=False)
    rows = run_task(task)
    assert rows and all(r["verified"] is False for r in rows)
    assert all("not maximum" in r["verify_reason"] for r in rows)
    assert all(r["reference_objective"] == r["objective"] + 1 for r in rows)


@pytest.mark.parametrize(
    ("mode", "status", "message"),
    [
        ("raise", "error", "planted failure"),
        ("oom", "oom", "planted out of memory"),
        ("crash", "crashed", "SIGKILL"),
        ("sleep", "timeout", "timeout_s=3"),
    ],
)
def test_failures_become_rows_and_finished_repetitions_survive(tmp_path, faulty_path, mode, status, message):
    task = dataclasses.replace(
        _task(tmp_path, {"_target_": "_faulty_solvers.Faulty", "mode": mode, "at": 1}), timeout_s=3.0
    )
    proc = TaskProcess()
    try:
        rows = proc.run(task)
        ok = [r for r in rows if r["status"] == "ok"]
        bad = [r for r in rows if r["status"] != "ok"]
        assert ok and ok[0]["repetition"] == 0 and ok[0]["verified"] is True  # rep 0 survived
        assert bad and bad[0]["status"] == status and message in bad[0]["error"], bad
        assert bad[0]["instance"] == ok[0]["instance"]
        # the process is usable again (a fresh child after a kill)
        task2 = dataclasses.replace(task, algorithm_cfg={"_target_": "_faulty_solvers.Faulty"})
        assert all(r["status"] == "ok" for r in proc.run(task2))
    finally:
        proc.close()


def test_sweep_writes_rows_incrementally_and_resumes(tmp_path):
    # a file that is there but cannot be read is bad input: that instance's row (a file
    # that is not there at all is a setting, refused before the sweep starts)
    (tmp_path / "missing.mtx").write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 1\n")
    cfgs = [
        _cfg(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}),
        _cfg(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.PothenFanPlus"},
             dataset={"instances": [ER, {"_target_": "matchbench.families.mcm.datasets.mtx_file",
                                         "path": str(tmp_path / "missing.mtx")}]}),
    ]
    plans = [build_plan(c, job_index=i) for i, c in enumerate(cfgs)]
    log = io.StringIO()
    summary = execute(plans, stream=log)
    text = log.getvalue()
    assert "Dask dashboard: http" in text
    df = read_results(summary["dir"])
    ok = df[df.status == "ok"]
    assert set(ok.algorithm) == {"hk", "pfp"} and ok.verified.all() and len(ok) == 6
    err = df[df.status == "error"]
    assert len(err) == 1 and "missing.mtx" in err.error.iloc[0]
    assert set(df.job_index) == {0, 1} and df.config_json.notna().all()

    # resume: nothing new runs, nothing is lost
    for p in plans:
        p.run["resume"] = True
        p.run["id"] = summary["run_id"]
    log = io.StringIO()
    again = execute(plans, stream=log)
    assert again["run_id"] == summary["run_id"] and again["tasks"] == 0
    assert "3 task(s) already in run" in log.getvalue()
    assert len(read_results(summary["dir"])) == len(df)


def test_gpu_task_without_gpu_worker_is_a_row_not_a_hang(tmp_path):
    plan = build_plan(_cfg(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}))
    plan.tasks[:] = [dataclasses.replace(t, device="gpu") for t in plan.tasks]
    summary = execute([plan], stream=io.StringIO())
    df = read_results(summary["dir"])
    assert list(df.status) == ["skipped"] and "GPU=1" in df.error.iloc[0]


def test_bad_algorithm_config_is_an_error_row(tmp_path):
    plan = build_plan(_cfg(tmp_path, {"_target_": "matchbench.solvers.cpu.nosuch.Solver"}))
    assert not plan.tasks and len(plan.error_rows) == 1
    assert "algorithm config" in plan.error_rows[0]["error"]


def test_precompile_plugin_registers_on_a_cluster():
    from distributed import Client, LocalCluster

    from matchbench.runner.execute import PrecompileKernels

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster) as client:
        client.register_plugin(PrecompileKernels([]))
        (info,) = client.scheduler_info()["workers"].values()
        assert info["id"] is not None


def test_timeout_before_any_row_still_names_the_instance(tmp_path, faulty_path):
    task = dataclasses.replace(
        _task(tmp_path, {"_target_": "_faulty_solvers.Faulty", "mode": "sleep", "at": -1}), timeout_s=3.0
    )
    proc = TaskProcess()
    try:
        (row,) = proc.run(task)
    finally:
        proc.close()
    assert row["status"] == "timeout"
    assert row["instance"].startswith("er_") and row["n_rows"] == 128 and row["n_edges"] > 0


_WORKER = """
import pickle, sys, threading, time
from matchbench.runner.child import TaskProcess
task = pickle.load(open(sys.argv[1], "rb"))
proc = TaskProcess()
threading.Thread(target=proc.run, args=(task,), daemon=True).start()
while proc._proc is None:
    time.sleep(0.01)
print(proc._proc.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_busy_task_process_dies_with_its_killed_worker(tmp_path, faulty_path):
    """A worker killed mid-task leaves no orphan child computing on (issue: parent pid 1)."""
    import os
    import pickle
    import signal
    import subprocess
    import sys

    task = _task(tmp_path, {"_target_": "_faulty_solvers.Faulty", "mode": "sleep", "at": -1, "seconds": 60})
    (tmp_path / "task.pkl").write_bytes(pickle.dumps(task))
    (tmp_path / "worker.py").write_text(_WORKER)
    worker = subprocess.Popen(
        [sys.executable, str(tmp_path / "worker.py"), str(tmp_path / "task.pkl")],
        stdout=subprocess.PIPE, text=True,
    )
    child = int(worker.stdout.readline())
    time.sleep(3)  # the child imports, loads the instance and sleeps in the warm-up
    assert _alive(child)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    deadline = time.time() + 10
    while _alive(child) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the task process outlived its killed worker"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_ctrl_c_one_line_exit_130_no_orphans_then_resume_runs_the_rest_once(tmp_path, faulty_path):
    """Ctrl-C mid-sweep: exit 130, one line with the resume command, no traceback, no
    task process left; the same command with the resume settings runs only the rest."""
    import os
    import signal
    import subprocess
    import sys
    import uuid

    marker = uuid.uuid4().hex
    env = dict(os.environ, MB_TEST_MARKER=marker)
    args = [
        sys.executable, "-m", "matchbench", "-m",
        "algorithm._target_=_faulty_solvers.Faulty", "+algorithm.mode=sleep", "+algorithm.at=-1",
        "+algorithm.seconds=4", "dataset=er", "dataset.scale=6", "dataset.seed=1,2,3,4,5,6",
        "cluster=local_cpu", "cluster.n_workers=2", "cluster.dashboard_address=:0",
        "gpu.repetitions=1", "gpu.warmup=0", f"run.results_dir={tmp_path / 'runs'}",
        f"data_dir={tmp_path / 'data'}", "run.id=ctrlc",
    ]
    sweep = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    run_dir = tmp_path / "runs"
    deadline = time.time() + 120
    while time.time() < deadline and not list(run_dir.glob("date=*/run=ctrlc/part-*.parquet")):
        time.sleep(0.2)
    assert list(run_dir.glob("date=*/run=ctrlc/part-*.parquet")), "no task finished"
    os.killpg(sweep.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    _, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 130, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    assert "interrupted:" in err and "run.resume=true run.id=ctrlc" in err, err[-1000:]
    # no task process of this sweep survives it
    time.sleep(1)
    left = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            envb = open(f"/proc/{pid}/environ", "rb").read()
        except OSError:
            continue
        if b"matchbench.runner.child" in cmd and marker.encode() in envb and _alive(int(pid)):
            left.append(pid)
    assert not left, f"task processes outlived the sweep: {left}"
    first = read_results(run_dir)
    done_before = set(first.task_id)
    assert 0 < len(done_before) < 6
    # resume: only the unfinished tasks run, each task once in the final dataset
    resumed = subprocess.run(
        [*args, "run.resume=true"], env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    final = read_results(run_dir)
    assert final.task_id.nunique() == 6
    assert final.groupby("task_id").size().max() == 1  # one repetition per task, once


def test_sweep_survives_killed_workers_with_right_counts(tmp_path, faulty_path):
    """A task that kills its Dask worker is retried once elsewhere, then recorded as
    ``crashed``; every other task's rows are written; the counts come out right."""
    import os
    import subprocess
    import sys

    args = [
        sys.executable, "-m", "matchbench", "-m",
        "algorithm._target_=_faulty_solvers.Faulty", "+algorithm.mode=none,kill_worker",
        "+algorithm.at=-1", "dataset=er", "dataset.scale=6", "dataset.seed=1,2",
        "cluster=local_cpu", "cluster.n_workers=2", "cluster.dashboard_address=:0",
        "gpu.repetitions=1", "gpu.warmup=0", f"run.results_dir={tmp_path / 'runs'}",
        f"data_dir={tmp_path / 'data'}", "run.id=killed",
    ]
    done = subprocess.run(args, env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    df = read_results(tmp_path / "runs")
    assert df.task_id.nunique() == 4 and df.groupby("task_id").size().max() == 1
    by_mode = df.assign(mode=df.variant.str.extract(r"mode=(\w+)")[0]).groupby("mode").status
    assert sorted(by_mode.get_group("none")) == ["ok", "ok"]
    crashed = df[df.status == "crashed"]
    assert len(crashed) == 2 and crashed.error.str.contains("KilledWorker|died", regex=True).all()


def test_the_task_process_imports_the_sweeps_package_not_one_in_the_working_directory(tmp_path, monkeypatch):
    """A ``matchbench/`` folder in the user's working directory must not be what the task
    process runs (its rows would then carry the other package's code under this one's
    provenance)."""
    import matchbench

    shadow = tmp_path / "cwd" / "matchbench"
    (shadow / "runner").mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "runner" / "__init__.py").write_text("")
    marker = tmp_path / "shadow-ran"
    (shadow / "runner" / "child.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(shadow.parent)
    task = _task(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"})
    proc = TaskProcess()
    try:
        rows = proc.run(task)
    finally:
        proc.close()
    assert rows and all(r["status"] == "ok" for r in rows), rows
    assert not marker.exists()
    assert Path(matchbench.__file__).resolve().parent != shadow


def test_a_task_process_that_imports_another_package_refuses_to_run(monkeypatch, capsys):
    from matchbench.runner import child

    monkeypatch.setenv(child.PACKAGE_ENV, "/somewhere/else/matchbench")
    with pytest.raises(SystemExit) as info:
        child.check_package()
    assert info.value.code == 3 and "not the sweep's /somewhere/else/matchbench" in capsys.readouterr().err


def test_a_task_over_its_memory_limit_is_an_oom_row_naming_the_sizes(tmp_path):
    """The task process is watched against ``run.task_memory_limit`` (by default a share of
    its worker's limit): an input or a solver that would exhaust the host is killed and
    written as ``oom``, and the next task gets a fresh process."""
    task = dataclasses.replace(
        _task(tmp_path, {"_target_": "_faulty_solvers.Faulty", "mode": "hog", "at": 1, "seconds": 30}),
        memory_limit="300MiB",
        timeout_s=20.0,  # without the watcher the task would end as "timeout" instead
    )
    proc = TaskProcess()
    try:
        rows = proc.run(task)
        ok = [r for r in rows if r["status"] == "ok"]
        bad = [r for r in rows if r["status"] != "ok"]
        assert ok and bad and bad[0]["status"] == "oom" and bad[0]["repetition"] == 1, bad
        assert "over its limit of 300.0 MiB (run.task_memory_limit)" in bad[0]["error"]
        again = proc.run(dataclasses.replace(task, algorithm_cfg={"_target_": "_faulty_solvers.Faulty"}))
        assert all(r["status"] == "ok" for r in again)
    finally:
        proc.close()


def test_the_memory_limit_setting():
    from matchbench.runner.child import memory_limit_bytes

    assert memory_limit_bytes(None) is None and memory_limit_bytes(0) is None
    assert memory_limit_bytes("auto") is None  # outside a Dask worker
    assert memory_limit_bytes("2GiB") == 2 << 30 and memory_limit_bytes(4096) == 4096
