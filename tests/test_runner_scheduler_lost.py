"""A sweep whose Dask scheduler goes away: it stops, keeps what finished, and resumes.

The loss of the scheduler is not a failure of the tasks in flight: they are not written
as ``crashed`` rows (which ``run.resume`` would then skip for good) but left to the
resume. The external cluster's case, with real ``dask scheduler`` and ``dask worker``
processes, is in ``test_external_cluster.py``.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from matchbench.results.store import read_results
from matchbench.runner import cluster as cluster_mod
from matchbench.runner.execute import EXIT_SCHEDULER_LOST, execute
from matchbench.runner.plan import build_plan

TESTS = Path(__file__).parent


@pytest.fixture
def faulty_path(monkeypatch):
    """Make tests/_faulty_solvers.py importable here and in task processes."""
    import os
    import sys

    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))


def _client(status: str = "running"):
    return SimpleNamespace(status=status, scheduler=SimpleNamespace(address="tcp://head:8786"))


def _cancelled(reason):
    from distributed.client import FutureCancelledError

    return FutureCancelledError(key="hk-1", reason=reason, msg="Client lost the connection")


def _comm_closed():
    from distributed.comm import CommClosedError

    return CommClosedError("in <TCP>: Stream is closed")


def _closed_client():
    from distributed.client import ClosedClientError

    return ClosedClientError("Client is closed. Can't send update-graph message.")


def _killed_worker():
    from distributed.scheduler import KilledWorker

    return KilledWorker("hk-1", "tcp://w:1", allowed_failures=1)


LOST = {
    "connection lost": (_cancelled("scheduler-connection-lost"), "running",
                        "lost the connection to the Dask scheduler at tcp://head:8786"),
    "other cancellation": (_cancelled("scheduler-restart"), "running",
                           "cancelled task hk-1 (scheduler-restart)"),
    "comm closed": (_comm_closed(), "running", "CommClosedError"),
    "closed client": (_closed_client(), "closed", "ClosedClientError"),
    "any call while reconnecting": (RuntimeError("boom"), "connecting", "RuntimeError: boom"),
}


@pytest.mark.parametrize(("exc", "status", "words"), LOST.values(), ids=LOST)
def test_scheduler_lost_names_the_scheduler(exc, status, words):
    why = cluster_mod.scheduler_lost(_client(status), exc)
    assert why is not None and words in why, why


@pytest.mark.parametrize(
    "exc", [_killed_worker(), RuntimeError("a task's own error"), FileNotFoundError("disk")],
    ids=["killed worker", "task error", "local OSError"],
)
def test_a_task_or_worker_failure_is_not_a_lost_scheduler(exc):
    # A dead worker is the task's `crashed` row; an error of this process is re-raised.
    assert cluster_mod.scheduler_lost(_client("running"), exc) is None


def _task_processes(marker: str) -> set[int]:
    """Live ``matchbench.runner.child`` processes with ``marker`` in their environment."""
    import os

    out = set()
    for name in (n for n in os.listdir("/proc") if n.isdigit()):
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            env = Path(f"/proc/{name}/environ").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"matchbench.runner.child" in cmd and marker.encode() in env and state != "Z":
            out.add(int(name))
    return out


def _plans(tmp_path, n: int, seconds: float, **run):
    plans = []
    for i in range(n):
        cfg = {
            "algorithm": {"_target_": "_faulty_solvers.Faulty", "mode": "sleep", "at": -1, "seconds": seconds},
            "dataset": {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 6, "seed": i + 1},
            "gpu": {"repetitions": 1, "warmup": 0},
            "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
            "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "verify": True,
                    "id": "lost"} | run,
            "data_dir": str(tmp_path / "data"),
        }
        plans.append(build_plan(cfg, job_index=i))
    return plans


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_local_scheduler_dying_stops_the_sweep_then_resume_runs_the_rest(tmp_path, faulty_path, monkeypatch):
    """The local cluster's scheduler closes after the first task: exit status 75, one
    message with the resume command, the finished row kept, no ``crashed`` rows; the
    resume runs the other tasks, each once."""
    import uuid

    marker = uuid.uuid4().hex  # tags this test's task processes
    monkeypatch.setenv("MB_TEST_MARKER", marker)
    clients = []
    real = cluster_mod.make_client

    @contextlib.contextmanager
    def spy(cfg):
        with real(cfg) as client:
            clients.append(client)
            yield client

    monkeypatch.setattr(cluster_mod, "make_client", spy)
    runs = tmp_path / "runs"
    running: set[int] = set()

    def kill_scheduler() -> None:
        deadline = time.monotonic() + 120
        while not list(runs.glob("date=*/run=lost/part-*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.05)
        running.update(_task_processes(marker))
        lc = clients[0].cluster
        lc.sync(lc.scheduler.close)

    killer = threading.Thread(target=kill_scheduler, daemon=True)
    killer.start()
    log = io.StringIO()
    started = time.monotonic()
    with pytest.raises(SystemExit) as info:
        execute(_plans(tmp_path, 6, 2.0), stream=log)
    took = time.monotonic() - started
    killer.join(10)
    text = log.getvalue()
    assert info.value.code == EXIT_SCHEDULER_LOST == 75, text
    lines = [ln for ln in text.splitlines() if ln.startswith("matchbench: lost the connection")]
    assert len(lines) == 1 and "of 6 task(s) finished" in lines[0], text
    assert "run.resume=true run.id=lost" in text, text
    assert "crashed" not in text, text
    # Closing a cluster whose scheduler is gone does not wait out Dask's 30 s connect timeout.
    assert took < 60, took
    # ... and ends its workers, with their task processes.
    assert running, "no task process ran when the scheduler closed"
    deadline = time.monotonic() + 30
    while _task_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _task_processes(marker)

    first = read_results(runs)
    assert 1 <= len(first) < 6 and (first.status == "ok").all(), first[["status", "error"]]

    resumed = execute(_plans(tmp_path, 6, 2.0, resume=True), stream=io.StringIO())
    assert resumed["tasks"] == 6 - len(first)
    final = read_results(runs)
    assert final.task_id.nunique() == 6 and final.groupby("task_id").size().max() == 1
    assert (final.status == "ok").all() and set(first.task_id) <= set(final.task_id)
