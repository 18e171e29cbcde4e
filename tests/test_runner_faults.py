"""Faults and the GPU's memory, on a CPU (issue #18): each item of the audit by the code
path that handles it, with the device faked where one would be needed.

- an out-of-memory error inside a task is an ``oom`` row with the sizes, the pool is
  emptied before the next task and the worker goes on;
- a task that never returns is a ``timeout`` row, its task process is killed and the
  sweep goes on;
- a task that cannot fit on the device is a ``skipped`` row before ``prepare``: the
  solver's ``estimate_bytes`` against the device's free memory, counted with the pool
  emptied;
- an instance is made once per worker and reused by every algorithm, a kernel family
  compiled once per process.

The GPU counterparts (a real OOM, a kernel that spins forever, compilation counted in
the rows) are in ``tests/gpu/test_faults_gpu.py``.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
import time
import weakref
from pathlib import Path

import pytest
import yaml

from matchbench.results.store import read_results
from matchbench.runner.child import TaskProcess
from matchbench.runner.execute import execute
from matchbench.runner.plan import Task, build_plan

TESTS = Path(__file__).parent
ROOT = TESTS.parent
ER = {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 6, "avg_degree": 3.0, "seed": 3}


@pytest.fixture
def helpers_path(monkeypatch):
    """tests/_fault_helpers.py (and _faulty_solvers.py) importable here and in task processes."""
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))


def _cfg(tmp_path, algorithm, dataset=ER, cluster=None, **run):
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "gpu": {"repetitions": 2, "warmup": 1},
        "cluster": cluster or {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "isolate": True,
                "verify": True, "id": "faults"} | run,
        "data_dir": str(tmp_path / "data"),
    }


def _task(tmp_path, algorithm, **run) -> Task:
    plan = build_plan(_cfg(tmp_path, algorithm, **run))
    assert not plan.error_rows, plan.error_rows
    (task,) = plan.tasks
    return task


def _cupy():
    return pytest.importorskip("cupy", reason="CuPy's error and memory classes (the cuda12 extra)")


# -- a fake device for the runner's GPU path -----------------------------------------------------


class _Events(list):
    """What the fake device saw, in order: ("free", n failed solvers alive), ("skip", tag), ..."""


class FakePool:
    """CuPy's memory pool as the runner uses it; notes each emptying."""

    def __init__(self, events: _Events, failed: weakref.WeakSet) -> None:
        self.events, self.failed = events, failed

    def free_all_blocks(self) -> None:
        import gc

        gc.collect()  # only what is unreachable is back in the pool, as CuPy's refcounts say
        self.events.append(("free", len(self.failed)))

    def total_bytes(self) -> int:
        return 0


@pytest.fixture
def fake_gpu(monkeypatch):
    """Run GPU tasks in this process with no device: provenance, the pool, synchronization
    and the free memory (``memGetInfo``: 1 GiB free of 2) are faked."""
    cupy = _cupy()
    from matchbench.runner import provenance, task

    events, failed = _Events(), weakref.WeakSet()
    pool = FakePool(events, failed)
    monkeypatch.setattr(task, "_gpu_pool", lambda: pool)
    monkeypatch.setattr(task, "_sync", lambda gpu: None)
    real = provenance.worker_provenance
    monkeypatch.setattr(provenance, "worker_provenance",
                        lambda device: real("cpu") | {"gpu_model": "fake"})
    monkeypatch.setattr(cupy.cuda.runtime, "memGetInfo", lambda: (1 << 30, 2 << 30))
    return events, failed


class FakeGPUSolver:
    """A GPU solver in its interface (skip by ``device_memory_skip``), computing on the host.

    ``need``: its ``estimate_bytes``; ``oom_at``: the repetition whose run raises CuPy's
    out-of-memory error (its "device arrays" are still held by the solver then).
    """

    name = "fake_gpu"
    problem = "mcm"
    device = "gpu"
    kernel_families = ()
    instrumentable = False
    device_init = False
    init_label = None

    def __init__(self, tag: str = "", need: int = 1 << 20, oom_at: int | None = None,
                 events: _Events | None = None, failed: weakref.WeakSet | None = None) -> None:
        self.params = {"tag": tag}
        self.tag, self.need, self.oom_at = tag, need, oom_at
        self.events, self.failed = events, failed
        self.calls = -1  # the warm-up is repetition -1

    def variant(self) -> str:
        return f"tag={self.tag}"

    def estimate_bytes(self, instance) -> int:
        return self.need

    def skip(self, instance):
        from matchbench.gpu.common import device_memory_skip

        self.events.append(("skip", self.tag))
        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def prepare(self, graph, init=None) -> None:
        self.events.append(("prepare", self.tag))
        self.graph = graph
        self.device_arrays = bytearray(1024)  # what an OOM leaves held, until the solver goes

    def run(self) -> None:
        import cupy
        import numpy as np
        from scipy.sparse.csgraph import maximum_bipartite_matching

        from matchbench.graphs.bipartite import Matching

        rep, self.calls = self.calls, self.calls + 1
        if rep == self.oom_at:
            self.failed.add(self)
            raise cupy.cuda.memory.OutOfMemoryError(3 << 30, 1 << 30, 0)
        col = maximum_bipartite_matching(self.graph.to_scipy(), perm_type="row")
        self.match = Matching.from_col_match(np.asarray(col), self.graph.n_rows)

    def result(self):
        return self.match

    def timings(self) -> dict:
        return {}

    def counters(self) -> dict:
        return {}

    def memory_peak_bytes(self) -> int:
        return 1024


def _gpu_task(tmp_path, monkeypatch, events, failed, **solver) -> Task:
    """A task whose solver is a :class:`FakeGPUSolver` (made in this process, unpicklable
    arguments included), to run with ``execute_task`` under ``fake_gpu``."""
    from matchbench.runner import task as task_module

    task = _task(tmp_path, {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}, isolate=False)
    task = dataclasses.replace(task, device="gpu", kernel_families=[], algorithm="fake_gpu",
                               algorithm_cfg={"_fake": solver})
    real = task_module.new_solver

    def new_solver(cfg):
        if "_fake" in cfg:
            return FakeGPUSolver(events=events, failed=failed, **cfg["_fake"])
        return real(cfg)

    monkeypatch.setattr(task_module, "new_solver", new_solver)
    return task


# -- (a) out of memory ----------------------------------------------------------------------------


def test_cupy_out_of_memory_is_an_oom_row_with_the_sizes_and_the_process_goes_on(tmp_path, helpers_path):
    """CuPy's own error class, raised in the task process: an ``oom`` row whose message
    carries the bytes asked for and held; the repetitions before it stay; the same task
    process then runs the next task."""
    _cupy()
    task = _task(tmp_path, {"_target_": "_fault_helpers.CupyOutOfMemory", "at": 1, "nbytes": 5 << 30})
    proc = TaskProcess()
    try:
        rows = proc.run(task)
        pid = proc._proc.pid
        assert [r["status"] for r in rows] == ["ok", "oom"], rows
        oom = rows[1]
        assert oom["error_type"] == "OutOfMemoryError" and oom["repetition"] == 1
        assert "Out of memory allocating 5,368,709,120 bytes (allocated so far: 3,145,728 bytes)" in oom["error"]
        assert oom["n_rows"] == 64 and oom["n_edges"] > 0 and oom["instance_bytes"] > 0  # the instance's size
        again = proc.run(dataclasses.replace(
            task, algorithm_cfg={"_target_": "_fault_helpers.CupyOutOfMemory", "at": 99}))
        assert [r["status"] for r in again] == ["ok", "ok"]
        assert proc._proc.pid == pid  # the same task process: an OOM is no crash
    finally:
        proc.close()


def test_gpu_oom_leaves_the_pool_emptied_before_the_next_task_and_it_runs(tmp_path, monkeypatch, fake_gpu):
    """After an OOM the failed solver (and the device arrays it held) is gone and the pool
    emptied before the next GPU task weighs its estimate against the free memory."""
    from matchbench.runner.task import execute_task

    events, failed = fake_gpu
    rows = execute_task(_gpu_task(tmp_path, monkeypatch, events, failed, tag="first", oom_at=1))
    assert [r["status"] for r in rows] == ["ok", "oom"] and "3,221,225,472 bytes" in rows[1]["error"]
    events.append(("task ended", None))
    rows = execute_task(_gpu_task(tmp_path, monkeypatch, events, failed, tag="second"))
    assert [r["status"] for r in rows] == ["ok", "ok"], rows
    after = events[events.index(("task ended", None)):]
    check = after.index(("skip", "second"))
    assert ("free", 0) in after[:check], events  # emptied, with the failed solver gone, before the check


# -- (b) a task that never returns ----------------------------------------------------------------


@pytest.mark.slow
def test_stuck_task_is_a_timeout_row_its_process_killed_and_the_sweep_goes_on(tmp_path, helpers_path):
    """One worker; a task stuck in its solve (as a kernel that never returns: the task
    process does not answer) and two good ones. The stuck one is killed at
    ``run.task_timeout_s`` and written as ``timeout``; the worker goes on with the others."""
    stuck = _cfg(tmp_path, {"_target_": "_faulty_solvers.Faulty", "mode": "sleep", "at": 0, "seconds": 600},
                 task_timeout_s=4)
    good = [_cfg(tmp_path, {"_target_": f"matchbench.families.mcm.ref_numba.{c}"}, task_timeout_s=4)
            for c in ("HopcroftKarp", "PothenFanPlus")]
    plans = [build_plan(c, job_index=i) for i, c in enumerate([stuck, *good])]
    t0 = time.monotonic()
    summary = execute(plans, stream=io.StringIO())
    assert time.monotonic() - t0 < 120  # not the 600 s of the stuck solve
    df = read_results(summary["dir"])
    by = df.groupby("algorithm").status.apply(list).to_dict()
    assert by == {"faulty": ["timeout"], "hk": ["ok", "ok"], "pfp": ["ok", "ok"]}, by
    (row,) = df[df.status == "timeout"].itertuples()
    assert "task exceeded timeout_s=4 s and was killed" in row.error and row.time_limit_s == 4
    assert row.repetition == 0 and row.instance.startswith("er_")


# -- (c) a task that cannot fit -------------------------------------------------------------------


def test_device_memory_skip_weighs_the_estimate_against_the_free_memory(monkeypatch):
    cupy = _cupy()
    from matchbench.gpu.common import device_memory_skip

    monkeypatch.setattr(cupy.cuda.runtime, "memGetInfo", lambda: (1000, 4000))
    assert device_memory_skip(lambda: 999) == (False, None)
    skip, reason = device_memory_skip(lambda: 1001)
    assert skip and reason == "needs about 1001 bytes of GPU memory, 1000 free"


def test_a_batch_reads_the_free_memory_once_and_a_task_each_time(monkeypatch):
    cupy = _cupy()
    from matchbench.gpu.common import device_memory_skip, free_memory_read_once

    calls = []
    monkeypatch.setattr(cupy.cuda.runtime, "memGetInfo", lambda: calls.append(1) or (1000, 4000))
    with free_memory_read_once():
        assert [device_memory_skip(lambda: 10)[0] for _ in range(5)] == [False] * 5
        assert device_memory_skip(lambda: 1001)[0]
    assert len(calls) == 1
    device_memory_skip(lambda: 10)
    device_memory_skip(lambda: 10)
    assert len(calls) == 3


def _gpu_algorithms() -> list[tuple[str, dict]]:
    out = []
    for path in sorted((ROOT / "conf" / "algorithm").glob("*.yaml")):
        cfg = yaml.safe_load(path.read_text())
        module, _, name = cfg["_target_"].rpartition(".")
        cls = getattr(__import__(module, fromlist=[name]), name)
        if getattr(cls, "device", "cpu") == "gpu":
            out.append((path.stem, cfg))
    return out


#: A small instance of each problem (the first of its smoke set).
SMOKE = {"mcm": "smoke", "lap": "lap_smoke", "wmatch": "wmatch_smoke", "smarriage": "sm_smoke",
         "mwpm": "complete_smoke", "community": "community_smoke"}


@pytest.mark.parametrize(("name", "cfg"), _gpu_algorithms(), ids=[n for n, _ in _gpu_algorithms()])
def test_every_gpu_solver_skips_what_cannot_fit_with_its_estimate(monkeypatch, name, cfg):
    """Every configured GPU solver's ``skip`` compares its ``estimate_bytes`` with the
    device's free memory: with one byte too few free it is skipped, the reason saying both."""
    cupy = _cupy()
    from matchbench.datasets import expand, load
    from matchbench.runner.task import new_solver

    solver = new_solver(cfg)
    data = yaml.safe_load((ROOT / "conf" / "dataset" / f"{SMOKE[solver.problem]}.yaml").read_text())
    instance = load(expand(data)[0])
    need = solver.estimate_bytes(instance)
    assert need > 0

    class OneDevice:  # what solvers ask of the device besides its memory
        id = 0
        attributes: dict = {}
        compute_capability = "90"

        def __init__(self, device=None):  # cupy.cuda.Device(device=None)
            pass

    from matchbench.gpu import common

    monkeypatch.setattr(cupy.cuda.runtime, "memGetInfo", lambda: (need - 1, 80 << 30))
    monkeypatch.setattr(cupy.cuda.runtime, "getDeviceCount", lambda: 1)
    monkeypatch.setattr(cupy.cuda, "Device", OneDevice)
    # the attributes are read once per device and process: neither the real ones nor the
    # fake's may outlive this test
    common._device_attributes.cache_clear()
    try:
        skip, reason = solver.skip(instance)
    finally:
        common._device_attributes.cache_clear()
    assert skip and f"needs about {need} bytes of GPU memory" in reason and f"{need - 1} free" in reason, reason


def test_task_that_cannot_fit_is_a_skipped_row_before_prepare(tmp_path, monkeypatch, fake_gpu):
    from matchbench.runner.task import execute_task

    events, failed = fake_gpu
    (row,) = execute_task(_gpu_task(tmp_path, monkeypatch, events, failed, tag="big", need=3 << 30))
    assert row["status"] == "skipped"
    assert row["error"] == f"needs about {3 << 30} bytes of GPU memory, {1 << 30} free"
    assert row["instance"].startswith("er_") and row["n_rows"] == 64
    assert ("prepare", "big") not in events
    assert events.index(("free", 0)) < events.index(("skip", "big"))  # the pool emptied first


# -- (d) an instance made once per worker, a kernel family compiled once per process ------------------


@pytest.mark.slow
def test_instance_is_made_once_per_worker_and_reused_by_every_algorithm(tmp_path, helpers_path):
    """Three algorithms x one instance on one worker: the instance is made once, in that
    worker's task process, and each algorithm's rows carry the same instance."""
    log = tmp_path / "made.log"
    dataset = {"_target_": "_fault_helpers.counted_er", "scale": 6, "seed": 2, "log": str(log)}
    from matchbench.core.params import config_defaults

    plans = [build_plan(_cfg(tmp_path, {"_target_": f"matchbench.families.mcm.ref_numba.{c}",
                                        **config_defaults("algorithm", name)}, dataset),
                        job_index=i)
             for i, (c, name) in enumerate((("HopcroftKarp", "hk"), ("PothenFanPlus", "pfp"),
                                            ("PushRelabel", "pr")))]
    summary = execute(plans, stream=io.StringIO())
    df = read_results(summary["dir"])
    assert len(df) == 6 and (df.status == "ok").all() and df.instance_key.nunique() == 1
    assert len(log.read_text().split()) == 1, log.read_text()  # made once


def test_kernel_family_compiles_once_per_process(monkeypatch):
    """``get_module`` caches per family, device and options: ``precompile`` (the worker
    plugin) and the tasks after it find the module compiled, and ``compile_seconds`` (the
    rows' ``t_compile_s``) does not grow. CuPy's RawModule is faked: no device here."""
    cupy = _cupy()
    from matchbench.gpu import kernels

    compiled = []

    class FakeModule:
        def __init__(self, code, options, backend):
            self.options = options

        def compile(self):
            compiled.append(self.options)

    class FakeDevice:
        id = 0

    monkeypatch.setattr(cupy, "RawModule", FakeModule)
    monkeypatch.setattr(cupy.cuda, "Device", FakeDevice)
    monkeypatch.setattr(kernels, "_modules", {})
    monkeypatch.setattr(kernels, "compile_seconds", {})
    kernels.precompile(["apfb", "gpr"])
    first = dict(kernels.compile_seconds)
    mod = kernels.get_module("apfb")
    kernels.precompile(["apfb", "gpr"])
    assert kernels.get_module("apfb") is mod
    assert len(compiled) == 2 and kernels.compile_seconds == first
    kernels.get_module("apfb", ("-DMB_INSTRUMENT",))  # other options: their own build
    assert len(compiled) == 3


def test_a_gpu_worker_warms_its_families_with_the_gpu_as_the_verify_device(monkeypatch):
    from types import SimpleNamespace

    from matchbench.core import problem as P
    from matchbench.runner import child, execute

    seen = []
    monkeypatch.setattr(type(P.get_problem("lap")), "warm_up", lambda self: seen.append(P.VERIFY_DEVICE.get()))
    child.warm_up([], ["lap"], "gpu")
    child.warm_up([], ["lap"])
    assert seen == ["gpu", "cpu"] and P.VERIFY_DEVICE.get() == "cpu"

    sent = []

    class Process:
        def warm(self, modules, problems, device="cpu"):
            sent.append(device)

    monkeypatch.setattr(child, "task_process", lambda: Process())
    plugin = execute.WarmTaskProcesses(["m"], ["lap"])
    plugin.setup(SimpleNamespace(state=SimpleNamespace(total_resources={"GPU": 1})))
    plugin.setup(SimpleNamespace(state=SimpleNamespace(total_resources={})))
    assert sent == ["gpu", "cpu"]
