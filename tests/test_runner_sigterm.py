"""SIGTERM (``kill PID``, a batch system's time limit) ends a sweep as Ctrl-C does.

Python's default would end the sweep at once, saying nothing: no line with what was
kept and the resume command, no note in the run's manifest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from matchbench.results.store import read_results
from matchbench.runner.execute import EXIT_TERMINATED

TESTS = Path(__file__).parent


def _task_processes(marker: str) -> list[str]:
    left = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            env = Path(f"/proc/{pid}/environ").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"matchbench.runner.child" in cmd and marker.encode() in env and state != "Z":
            left.append(pid)
    return left


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_sigterm_one_line_exit_143_no_orphans_then_resume_runs_the_rest_once(tmp_path):
    marker = uuid.uuid4().hex
    env = dict(os.environ, MB_TEST_MARKER=marker,
               PYTHONPATH=os.pathsep.join([str(TESTS), *sys.path]))
    args = [
        sys.executable, "-m", "matchbench", "-m",
        "algorithm._target_=_faulty_solvers.Faulty", "+algorithm.mode=sleep", "+algorithm.at=-1",
        "+algorithm.seconds=4", "dataset=er", "dataset.scale=6", "dataset.seed=1,2,3,4,5,6",
        "cluster=local_cpu", "cluster.n_workers=2", "cluster.dashboard_address=:0",
        "gpu.repetitions=1", "gpu.warmup=0", f"run.results_dir={tmp_path / 'runs'}",
        f"data_dir={tmp_path / 'data'}", "run.id=term", f"hydra.sweep.dir={tmp_path / 'h'}",
    ]
    sweep = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        runs = tmp_path / "runs"
        deadline = time.time() + 120
        while time.time() < deadline and not list(runs.glob("date=*/run=term/part-*.parquet")):
            time.sleep(0.2)
        assert list(runs.glob("date=*/run=term/part-*.parquet")), "no task finished"
        sweep.send_signal(signal.SIGTERM)  # the sweep's process only, as `kill PID` does
        _, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    assert sweep.returncode == EXIT_TERMINATED == 143, err[-2000:]
    assert "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("terminated (SIGTERM):")]
    assert len(lines) == 1 and "of 6 task(s) finished and written to" in lines[0], err[-2000:]
    assert "run.resume=true run.id=term" in err, err[-1000:]
    (manifest,) = runs.glob("date=*/run=term/_run.json")
    meta = json.loads(manifest.read_text())
    assert meta["signal"] == "SIGTERM" and "interrupted" in meta and "finished" not in meta

    deadline = time.time() + 30
    while _task_processes(marker) and time.time() < deadline:
        time.sleep(0.2)
    assert not _task_processes(marker), "task processes outlived the sweep"

    first = read_results(runs)
    assert 0 < first.task_id.nunique() < 6
    resumed = subprocess.run([*args, "run.resume=true"], env=env, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    final = read_results(runs)
    assert final.task_id.nunique() == 6 and final.groupby("task_id").size().max() == 1
    assert (final.status == "ok").all()
