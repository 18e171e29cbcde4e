"""``cluster=external``: sweeps against a running ``dask scheduler`` and ``dask worker``
processes started apart from the sweep, as on a cluster of hosts (here all on 127.0.0.1).

The scheduler and the workers are the real ``dask`` command-line programs, each in its
own process group so that a finalizer ends every one of them; the sweep is the real
``matchbench -m ...`` command.
"""

from __future__ import annotations

import dataclasses
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

TESTS = Path(__file__).parent
ROOT = TESTS.parent
DASK = [sys.executable, "-m", "dask"]
START_S = 60  # a scheduler or worker start, a process's end: generous on a loaded 2-core box
SWEEP_S = 180

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")


@pytest.fixture(scope="module")
def dask_cli() -> None:
    """Skip, saying why, where ``dask scheduler`` / ``dask worker`` cannot start at all."""
    for cmd in ("scheduler", "worker"):
        try:
            res = subprocess.run([*DASK, cmd, "--help"], capture_output=True, text=True, timeout=START_S)
        except FileNotFoundError as exc:
            pytest.skip(f"the dask CLI is unavailable: {exc}")
        if res.returncode != 0:
            pytest.skip(f"the dask CLI is unavailable: `dask {cmd} --help` says {res.stderr[-500:]!r}")


class ExternalCluster:
    """A ``dask scheduler`` and ``dask worker`` processes, ended by :meth:`close`."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.marker = uuid.uuid4().hex  # tags this test's task processes (see _task_processes)
        self.env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(TESTS), str(ROOT), *sys.path]),
            MB_TEST_MARKER=self.marker,
            PYTHONWARNINGS="ignore",
        )
        self.procs: dict[str, subprocess.Popen] = {}
        self.scheduler_file = tmp_path / "scheduler.json"
        self.address = ""

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.dir / f"{name}.log", "w")  # the process writes to it; ours closes below
        proc = subprocess.Popen(
            [*DASK, *args], env=self.env, cwd=self.dir, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the nanny, its worker, the task process
        )
        log.close()
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def start_scheduler(self) -> str:
        proc = self._start("scheduler", [
            "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(self.scheduler_file), "--idle-timeout", "600",
        ])
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"dask scheduler exited ({proc.returncode}):\n{self.log('scheduler')}")
            try:
                self.address = json.loads(self.scheduler_file.read_text())["address"]
                return self.address
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        pytest.fail(f"no scheduler file after {START_S} s:\n{self.log('scheduler')}")

    def start_worker(self, name: str, *args: str) -> subprocess.Popen:
        """``dask worker ADDRESS --nthreads 1 ARGS``: the README's CPU worker with ``--resources CPU=1``."""
        return self._start(name, [
            "worker", self.address, "--name", name, "--nthreads", "1", "--host", "127.0.0.1",
            "--no-dashboard", "--death-timeout", "60", *args,
        ])

    def close(self) -> None:
        """End every process group: SIGTERM (a graceful close), then SIGKILL."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for proc in reversed(list(self.procs.values())):  # workers before the scheduler
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 15
            for proc in self.procs.values():
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            if all(not _group_alive(p.pid) for p in self.procs.values()):
                return


@pytest.fixture
def cluster(tmp_path, dask_cli, request):
    c = ExternalCluster(tmp_path)
    request.addfinalizer(c.close)
    return c


def _sweep(cluster: ExternalCluster, *overrides: str) -> list[str]:
    return [
        sys.executable, "-m", "matchbench", "-m", *overrides, "cluster=external",
        "cluster.min_workers=2", "cluster.wait_for_workers_s=60",
        f"run.results_dir={cluster.dir / 'runs'}", f"data_dir={cluster.dir / 'data'}",
    ]


# -- processes under /proc --------------------------------------------------------------


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a live process; None when it has ended (zombies included)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if fields[0] == "Z" else (int(fields[1]), fields[0])


def _alive(pid: int) -> bool:
    return _stat(pid) is not None


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _parents() -> dict[int, int]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None:
            out[int(name)] = st[0]
    return out


def _descendants(pid: int) -> set[int]:
    parents = _parents()
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found.add(child)
                todo.append(child)
    return found


def _task_processes(marker: str) -> set[int]:
    """Live ``matchbench.runner.child`` processes started under this test's workers."""
    out = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
            env = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if b"matchbench.runner.child" in cmd and marker.encode() in env and _alive(int(name)):
            out.add(int(name))
    return out


def _wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


def _within(seconds: float, fn, *args):
    """``fn(*args)``, or a test failure if it has not returned after ``seconds`` (a hang)."""
    import threading

    out: dict = {}

    def call() -> None:
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # re-raised in the test's thread
            out["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} still running after {seconds:g} s")
    if "error" in out:
        raise out["error"]
    return out["value"]


def _enter(cfg: dict) -> None:
    from matchbench.runner.cluster import make_client

    with make_client(cfg):
        pass


def _each_task_once(df, n_tasks: int, n_reps: int) -> None:
    assert df.task_id.nunique() == n_tasks, sorted(df.task_id.unique())
    assert (df.groupby("task_id").size() == n_reps).all()
    assert df.groupby(["task_id", "repetition"]).size().max() == 1
    assert (df.status == "ok").all(), df.loc[df.status != "ok", ["status", "error"]].to_string()
    assert df.verified.astype(bool).all()
    assert df.run_id.nunique() == 1


# -- the tests ---------------------------------------------------------------------------


@pytest.mark.slow
@needs_proc
def test_sweep_runs_on_a_running_scheduler_and_its_workers(cluster):
    """`dask scheduler` + two `dask worker --resources CPU=1`, then a sweep through the
    scheduler file: every task once, ok and verified, run by those workers."""
    cluster.start_scheduler()
    workers = [cluster.start_worker(f"cpu-{i}", "--resources", "CPU=1") for i in range(2)]
    res = subprocess.run(
        _sweep(cluster, "algorithm=hk,pfp", "dataset=smoke", "gpu.repetitions=2",
               f"cluster.scheduler_file={cluster.scheduler_file}"),
        env=cluster.env, cwd=cluster.dir, capture_output=True, text=True, timeout=SWEEP_S,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "cluster: 2 worker(s), 0 offering GPU=1, 2 offering CPU=1" in res.stderr, res.stderr[-3000:]
    # The scheduler runs with --no-dashboard: no link to the port its metrics server took.
    assert f"Dask dashboard: none (the scheduler at {cluster.address} serves none" in res.stderr, res.stderr[-3000:]

    runs = cluster.dir / "runs"
    (run_dir,) = runs.glob("date=*/run=*")
    assert len(list(run_dir.glob("part-*.parquet"))) == 16  # 2 algorithms x 8 smoke instances
    df = read_results(runs)
    _each_task_once(df, n_tasks=16, n_reps=2)
    assert set(df.algorithm) == {"hk", "pfp"} and df.instance.nunique() == 8

    # The tasks ran in the external workers' task processes, not in a cluster of the sweep's own.
    children = _task_processes(cluster.marker)
    assert children
    under = set().union(*(_descendants(w.pid) for w in workers))
    assert children <= under, (children, under)


@pytest.mark.slow
@needs_proc
def test_killed_worker_is_replaced_and_every_task_is_written_once(cluster):
    """SIGKILL a worker (its `dask worker` process) while it runs a task; start a
    replacement. The sweep finishes with every task once, the killed worker's tasks
    retried elsewhere, its task process gone with it and no task process orphaned."""
    from distributed import Client

    address = cluster.start_scheduler()
    doomed = cluster.start_worker("doomed", "--resources", "CPU=1")
    survivor = cluster.start_worker("survivor", "--resources", "CPU=1")
    seeds = ",".join(str(s) for s in range(1, 7))
    sweep = subprocess.Popen(
        _sweep(cluster, "algorithm._target_=_faulty_solvers.Faulty", "+algorithm.mode=sleep",
               "+algorithm.at=-1", "+algorithm.seconds=2", "dataset=er", "dataset.scale=6",
               f"dataset.seed={seeds}", "gpu.repetitions=1", "gpu.warmup=0",
               f"cluster.address={address}"),
        env=cluster.env, cwd=cluster.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    cluster.procs["sweep"] = sweep  # the finalizer ends it too
    with Client(address, timeout=START_S, set_as_default=False) as client:
        # The doomed worker runs a task (each sleeps 2 s) in its task process. The process
        # alone proves nothing: workers start it before their first task (warm-up).
        def busy() -> tuple:
            names = {w["name"]: a for a, w in client.scheduler_info(n_workers=-1)["workers"].items()}
            if "doomed" not in names or not _descendants(doomed.pid) & _task_processes(cluster.marker):
                return ()
            return tuple(client.processing(workers=[names["doomed"]])[names["doomed"]])

        seen: list[tuple] = []
        _wait_until(lambda: seen.append(busy()) or seen[-1], START_S, "a task on the doomed worker")
        in_flight = seen[-1]
        tree = _descendants(doomed.pid)
        os.kill(doomed.pid, signal.SIGKILL)
        replacement = cluster.start_worker("replacement", "--resources", "CPU=1")

        _, err = sweep.communicate(timeout=SWEEP_S)
        assert sweep.returncode == 0, err[-3000:]
        # the sweep set its allowed_failures on the scheduler (whose own default is 3)
        assert client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures) == 1
        _wait_until(lambda: "replacement" in str(client.scheduler_info(n_workers=-1)["workers"]),
                    START_S, "the replacement worker to join")

    df = read_results(cluster.dir / "runs")
    _each_task_once(df, n_tasks=6, n_reps=1)
    assert in_flight and all(k.startswith("faulty-") for k in in_flight), in_flight
    assert {k.removeprefix("faulty-") for k in in_flight} <= set(df.task_id)  # retried, ok

    # The killed worker's processes (its worker process, its task process) ended with it;
    # every task process left belongs to a live worker.
    _wait_until(lambda: not any(_alive(p) for p in tree), 30, f"the killed worker's processes {tree}")
    alive = _descendants(survivor.pid) | _descendants(replacement.pid)
    assert _task_processes(cluster.marker) <= alive
    # Workers that stop leave no task process behind.
    cluster.close()
    _wait_until(lambda: not _task_processes(cluster.marker), 30, "task processes to end with workers")


@pytest.mark.slow
@needs_proc
def test_killed_scheduler_stops_the_sweep_and_resume_runs_the_rest(cluster):
    """SIGKILL the `dask scheduler` after the first task: the sweep exits with status 75
    and one line naming the scheduler and the resume command; the finished rows stay,
    the tasks the scheduler took with it are no rows (not `crashed`); that resume
    command, against a new scheduler and workers, runs the rest, each task once."""
    import shlex

    from matchbench.runner.execute import EXIT_SCHEDULER_LOST

    cluster.start_scheduler()
    for i in range(2):
        cluster.start_worker(f"cpu-{i}", "--resources", "CPU=1")
    seeds = ",".join(str(s) for s in range(1, 7))
    args = _sweep(cluster, "algorithm._target_=_faulty_solvers.Faulty", "+algorithm.mode=sleep",
                  "+algorithm.at=-1", "+algorithm.seconds=3", "dataset=er", "dataset.scale=6",
                  f"dataset.seed={seeds}", "gpu.repetitions=1", "gpu.warmup=0",
                  f"cluster.scheduler_file={cluster.scheduler_file}", "run.id=lost")
    sweep = subprocess.Popen(args, env=cluster.env, cwd=cluster.dir, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    cluster.procs["sweep"] = sweep
    runs = cluster.dir / "runs"
    _wait_until(lambda: list(runs.glob("date=*/run=lost/part-*.parquet")) or sweep.poll() is not None,
                SWEEP_S, "the first task to finish")
    os.killpg(cluster.procs["scheduler"].pid, signal.SIGKILL)
    _, err = sweep.communicate(timeout=SWEEP_S)
    assert sweep.returncode == EXIT_SCHEDULER_LOST == 75, err[-3000:]
    assert "Traceback" not in err and "crashed" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("matchbench: ")]
    assert len(lines) == 1, err[-3000:]
    assert f"lost the connection to the Dask scheduler at {cluster.address}" in lines[0], lines[0]
    assert "of 6 task(s) finished and written to" in lines[0], lines[0]
    command = err.splitlines()[err.splitlines().index(lines[0]) + 1].strip()
    assert command.startswith("matchbench -m ") and command.endswith("run.resume=true run.id=lost"), command

    first = read_results(runs)
    assert 1 <= len(first) < 6, first[["task_id", "status"]]
    assert (first.status == "ok").all(), first[["status", "error"]].to_string()

    # A new scheduler (writing the same scheduler file) and new workers; the old workers
    # are ended, as they would time out without a scheduler.
    cluster.close()
    cluster.procs.clear()
    cluster.scheduler_file.unlink()
    cluster.start_scheduler()
    for i in range(2):
        cluster.start_worker(f"new-{i}", "--resources", "CPU=1")
    resumed = subprocess.run(
        [sys.executable, "-m", *shlex.split(command)], env=cluster.env, cwd=cluster.dir,
        capture_output=True, text=True, timeout=SWEEP_S,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resume: {len(first)} task(s) already in run lost, skipped" in resumed.stderr, resumed.stderr[-3000:]
    df = read_results(runs)
    _each_task_once(df, n_tasks=6, n_reps=1)
    assert set(first.task_id) <= set(df.task_id)


# -- settings, without the dask CLI ---------------------------------------------------------


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BAD_SETTINGS = {
    "neither": ({}, ["neither", "cluster.address", "cluster.scheduler_file"]),
    "both": (
        {"address": "tcp://127.0.0.1:8786", "scheduler_file": "s.json"},
        ["both", "cluster.address=tcp://127.0.0.1:8786", "cluster.scheduler_file=s.json"],
    ),
    "missing file": (
        {"scheduler_file": "{tmp}/nosuch.json", "connect_timeout_s": 0.5},
        ["cluster.scheduler_file=", "nosuch.json: no such file", "cluster.connect_timeout_s"],
    ),
    "not a scheduler file": (
        {"scheduler_file": "{tmp}/bad.json", "connect_timeout_s": 0.5},
        ["cluster.scheduler_file=", "bad.json: not a Dask scheduler file"],
    ),
    "unreachable": (
        {"address": "tcp://127.0.0.1:{port}", "connect_timeout_s": 1},
        ["cannot reach the Dask scheduler at tcp://127.0.0.1:", "(cluster.address)",
         "cluster.connect_timeout_s"],
    ),
}


@pytest.mark.parametrize(("settings", "words"), BAD_SETTINGS.values(), ids=BAD_SETTINGS)
def test_bad_external_settings_are_errors_naming_the_setting(tmp_path, settings, words):
    from matchbench.runner.cluster import ClusterError

    (tmp_path / "bad.json").write_text("{not json")
    port = _closed_port()  # nothing listens there: connections are refused until the timeout
    cfg = {"kind": "external", "address": None, "scheduler_file": None}
    for key, value in settings.items():
        cfg[key] = value.format(tmp=tmp_path, port=port) if isinstance(value, str) else value
    with pytest.raises(ClusterError) as info:
        _within(20, _enter, cfg)  # not Dask's endless wait for a scheduler file
    for word in words:
        assert word in str(info.value), str(info.value)


def test_scheduler_without_workers_is_an_error_not_a_hang():
    from distributed import LocalCluster

    from matchbench.runner.cluster import ClusterError

    with LocalCluster(n_workers=0, dashboard_address=":0") as lc:
        cfg = {"kind": "external", "address": lc.scheduler_address, "wait_for_workers_s": 1}
        expected = r"0 worker\(s\) joined .* within 1 s \(cluster.wait_for_workers_s\)"
        with pytest.raises(ClusterError, match=expected):
            _within(30, _enter, cfg)


def test_workers_without_resources_run_cpu_tasks_and_skip_gpu_tasks(tmp_path):
    """An external cluster whose workers offer neither CPU nor GPU: CPU tasks ask for no
    resource (they would wait forever for CPU=1), GPU tasks are skipped rows."""
    import io

    from distributed import LocalCluster

    from matchbench.runner.execute import execute
    from matchbench.runner.plan import build_plan

    er = {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 6, "seed": 3}
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as lc:
        plans = []
        for i, target in enumerate(["HopcroftKarp", "PothenFanPlus"]):
            cfg = {
                "algorithm": {"_target_": f"matchbench.families.mcm.ref_numba.{target}"},
                "dataset": er,
                "gpu": {"repetitions": 1, "warmup": 0},
                "cluster": {"kind": "external", "address": lc.scheduler_address},
                "run": {"results_dir": str(tmp_path), "task_timeout_s": 60, "verify": True},
                "data_dir": str(tmp_path / "data"),
            }
            plans.append(build_plan(cfg, job_index=i))
        plans[1].tasks[:] = [dataclasses.replace(t, device="gpu") for t in plans[1].tasks]  # as a GPU solver's
        log = io.StringIO()
        summary = _within(120, lambda: execute(plans, stream=log))
    assert "1 worker(s), 0 offering GPU=1, 0 offering CPU=1" in log.getvalue()
    df = read_results(summary["dir"])
    assert dict(zip(df.algorithm, df.status, strict=True)) == {"hk": "ok", "pfp": "skipped"}


def test_unreachable_scheduler_ends_the_sweep_with_one_line(tmp_path):
    """From the command line: exit status 2 and one line naming the setting, no traceback."""
    port = _closed_port()
    res = subprocess.run(
        [
            sys.executable, "-m", "matchbench", "-m", "algorithm=hk", "dataset=smoke", "cluster=external",
            f"cluster.address=tcp://127.0.0.1:{port}", "cluster.connect_timeout_s=2",
            f"run.results_dir={tmp_path / 'runs'}", "hydra.sweep.dir=" + str(tmp_path / "h"),
        ],
        capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("matchbench: error:")]
    assert len(lines) == 1 and "cannot reach the Dask scheduler" in lines[0] and "cluster.address" in lines[0]
