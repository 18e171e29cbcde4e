"""Faults on a real GPU (issue #18): a device out of memory, a kernel that never returns,
kernels compiled once per task process. The CPU side of each is in
``tests/test_runner_faults.py``."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest

from matchbench.core.params import config_defaults
from matchbench.runner.child import TaskProcess
from matchbench.runner.plan import build_plan

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).parent
ER = {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 8, "avg_degree": 3.0, "seed": 5}


@pytest.fixture
def helpers_path(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))


def _task(tmp_path, algorithm, timeout_s=120.0, **gpu):
    cfg = {
        "algorithm": algorithm,
        "dataset": ER,
        "gpu": {"repetitions": 2, "warmup": 1} | gpu,
        "run": {"results_dir": str(tmp_path), "isolate": True, "verify": True},
        "data_dir": str(tmp_path / "data"),
    }
    plan = build_plan(cfg)
    assert not plan.error_rows, plan.error_rows
    (task,) = plan.tasks
    return dataclasses.replace(task, timeout_s=timeout_s)


def test_device_oom_is_an_oom_row_and_the_next_task_gets_the_memory_back(tmp_path, helpers_path):
    """The first task holds 60 % of the device, then asks for twice the device: an ``oom``
    row with the sizes. The next task, in the same task process, needs 60 % again: it
    fits (not skipped, no OOM) only if the first one's memory went back to the device."""
    proc = TaskProcess()
    try:
        rows = proc.run(_task(tmp_path, {"_target_": "_fault_helpers.DeviceHog", "oom_at": 1}))
        assert [r["status"] for r in rows] == ["ok", "oom"], rows
        assert "Out of memory allocating" in rows[1]["error"] and "bytes" in rows[1]["error"]
        pid = proc._proc.pid
        again = proc.run(_task(tmp_path, {"_target_": "_fault_helpers.DeviceHog"}))
        assert [r["status"] for r in again] == ["ok", "ok"], again
        assert all(r["verified"] is True for r in again)
        assert proc._proc.pid == pid  # no restart: an OOM is a row, not a crash
    finally:
        proc.close()


def test_kernel_that_never_returns_is_a_timeout_and_a_fresh_process_uses_the_gpu(tmp_path, helpers_path):
    proc = TaskProcess()
    try:
        rows = proc.run(_task(tmp_path, {"_target_": "_fault_helpers.Spinner", "at": 0}, timeout_s=20.0))
        assert [r["status"] for r in rows] == ["timeout"], rows
        assert "task exceeded timeout_s=20 s and was killed" in rows[0]["error"]
        stuck = proc._proc
        assert stuck is None  # killed, not waited on
        again = proc.run(_task(tmp_path, {"_target_": "_fault_helpers.Spinner", "at": None}))
        assert [r["status"] for r in again] == ["ok", "ok"], again
    finally:
        proc.close()


def test_kernels_compile_once_per_task_process(tmp_path):
    """The worker plugin's precompile, then two APFB tasks in the same task process: both
    rows report the same NVRTC seconds (``t_compile_s``), which would grow with a second
    compilation."""
    proc = TaskProcess()
    try:
        proc.precompile(["apfb"])
        apfb = {"_target_": "matchbench.families.mcm.apfb.APFB", **config_defaults("algorithm", "apfb")}
        first = proc.run(_task(tmp_path, apfb))
        second = proc.run(_task(tmp_path, apfb | {"bfs": "plain"}))
    finally:
        proc.close()
    assert all(r["status"] == "ok" and r["verified"] is True for r in first + second), first + second
    compile_s = {r["t_compile_s"] for r in first + second}
    assert len(compile_s) == 1 and compile_s.pop() > 0
