"""``cluster=slurm``: the worker jobs dask-jobqueue renders from ``conf/cluster/slurm.yaml``,
the errors of a missing extra, a missing or refusing ``sbatch`` and bad settings, and a
sweep whose jobs a fake ``sbatch`` runs on this host (no queue needed).

The fake ``sbatch`` keeps each script it is given under ``jobs/`` and starts it in a
session of its own, as Slurm would start the job on a node; the fake ``scancel`` notes
the job id and ends that session as Slurm does (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import importlib.util
import io
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from matchbench.runner.cluster import (
    ClusterError,
    make_client,
    slurm_cluster,
    slurm_cluster_kwargs,
)

ROOT = Path(__file__).parent.parent


def _settings(**overrides) -> dict:
    """``conf/cluster/slurm.yaml`` through Hydra, with ``cluster.KEY=VALUE`` overrides."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    args = ["cluster=slurm", "cluster.dashboard_address=':0'"]
    args += [f"cluster.{k}={'null' if v is None else v}" for k, v in overrides.items()]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=args)
    return OmegaConf.to_container(cfg.cluster, resolve=True)


def _script(cfg: dict) -> str:
    """``SLURMCluster(...).job_script()``: what ``sbatch`` would be given (no job submitted)."""
    from dask_jobqueue import SLURMCluster

    with SLURMCluster(**slurm_cluster_kwargs(cfg)) as cluster:
        return cluster.job_script()


def _command(script: str) -> str:
    (line,) = [ln for ln in script.splitlines() if " -m " in ln]
    return line


def test_cpu_job_script_has_the_directives_and_one_thread_cpu_workers():
    cfg = _settings(queue="short", account="proj42", walltime="02:30:00", cores=8, memory="32GiB",
                    local_directory="/scratch/me", log_directory=None, interface=None)
    script = _script(cfg)
    header = [ln for ln in script.splitlines() if ln.startswith("#SBATCH")]
    assert header == [
        "#SBATCH -J matchbench", "#SBATCH -p short", "#SBATCH -A proj42", "#SBATCH -n 1",
        "#SBATCH --cpus-per-task=8", "#SBATCH --mem=32G", "#SBATCH -t 02:30:00",
    ], script
    cmd = _command(script)
    assert cmd.startswith(f"{sys.executable} -m distributed.cli.dask_worker tcp://"), cmd
    # 8 one-thread workers (one per booked core), each with an eighth of the memory and CPU=1
    for part in ("--nthreads 1", "--nworkers 8", "--memory-limit 4.00GiB", "--nanny",
                 "--resources CPU=1", "--local-directory /scratch/me", "--death-timeout 60"):
        assert part in cmd, (part, cmd)
    assert "GPU" not in script and "--gres" not in script


def test_gpu_job_script_asks_for_the_gpus_and_runs_dask_cuda_worker():
    prologue = "['module load cuda/12.4','source /shared/mb/.venv/bin/activate']"
    cfg = _settings(gpus_per_job=4, cores=32, memory="256GiB", queue="gpu", walltime="12:00:00",
                    job_script_prologue=prologue, job_extra_directives="['--constraint=h100']",
                    local_directory="$TMPDIR", python="python")
    script = _script(cfg)
    lines = script.splitlines()
    assert "#SBATCH --gres=gpu:4" in lines and "#SBATCH --constraint=h100" in lines
    assert "#SBATCH --cpus-per-task=32" in lines and "#SBATCH --mem=256G" in lines
    assert "#SBATCH -p gpu" in lines and "#SBATCH -t 12:00:00" in lines
    cmd = _command(script)
    # the prologue runs first, so `python` is the activated environment's
    assert lines.index("module load cuda/12.4") < lines.index("source /shared/mb/.venv/bin/activate") < lines.index(cmd)
    assert cmd.startswith("python -m dask_cuda.cli tcp://"), cmd
    # one worker per GPU (dask cuda worker's own count), one thread and a quarter of the memory each
    for part in ("--nthreads 1", "--memory-limit 64.00GiB", "--resources GPU=1", "--local-directory $TMPDIR"):
        assert part in cmd, (part, cmd)
    assert "--nworkers" not in cmd and "--nanny" not in cmd and "CPU=1" not in cmd  # not dask cuda worker's


def test_gpu_directive_and_skipped_directives_follow_the_site():
    cfg = _settings(gpus_per_job=2, gpu_directive="'--gpus-per-node={n}'", job_directives_skip="['--mem']")
    lines = _script(cfg).splitlines()
    assert "#SBATCH --gpus-per-node=2" in lines and not any("--gres" in ln for ln in lines)
    assert not any(ln.startswith("#SBATCH --mem") for ln in lines)


def test_dask_cuda_cli_as_a_module_is_the_worker_command_with_our_options():
    """``python -m dask_cuda.cli`` must start ``dask cuda worker`` and take every option
    the GPU job passes (read from its source: importing dask_cuda needs CUDA here)."""
    spec = importlib.util.find_spec("dask_cuda")
    if spec is None or spec.origin is None:
        pytest.skip("dask-cuda is not installed (the cuda12 / cuda13 extra)")
    source = (Path(spec.origin).parent / "cli.py").read_text()
    main = source.split('if __name__ == "__main__":', 1)
    assert len(main) == 2 and main[1].strip().startswith("worker()"), main[-1][:200]
    for option in ("--nthreads", "--name", "--memory-limit", "--death-timeout", "--local-directory",
                   "--resources", "--interface"):
        assert f'"{option}"' in source, option


BAD = {
    "processes with GPUs": ({"gpus_per_job": 2, "processes": 4}, "cluster.processes=4 with cluster.gpus_per_job=2"),
    "fewer cores than workers": ({"cores": 2, "processes": 4}, "cluster.processes=4 one-thread workers on cluster.cores=2"),
    "no memory": ({"memory": None}, "cluster.memory"),
    "not a count": ({"gpus_per_job": "two"}, "cluster.gpus_per_job='two' is not a count"),
}


@pytest.mark.parametrize(("overrides", "words"), BAD.values(), ids=BAD)
def test_bad_settings_are_errors_naming_the_setting(overrides, words):
    cfg = dict(_settings(), **overrides)
    with pytest.raises(ClusterError, match="cluster=slurm") as info:
        slurm_cluster_kwargs(cfg)
    assert words in str(info.value)


# -- submission, with fake sbatch and scancel --------------------------------------------------

FAKE_SBATCH = """#!/bin/sh
# Fake sbatch: keep the script, start it as a "job" in a session of its own, answer as Slurm.
jobs="{jobs}"
id=$$
cp "$1" "$jobs/$id.sh"
if [ -n "{run}" ]; then
    setsid sh "$jobs/$id.sh" >"$jobs/$id.log" 2>&1 </dev/null &
    echo $! >"$jobs/$id.pid"
fi
echo "Submitted batch job $id"
"""

FAKE_SCANCEL = """#!/bin/sh
# Fake scancel: note the id; SIGTERM to the job's session, SIGKILL a few seconds later
# (Slurm's KillWait: a worker busy in a task does not end on SIGTERM alone).
jobs="{jobs}"
for id in "$@"; do
    echo "$id" >>"$jobs/scancel.log"
    if [ -f "$jobs/$id.pid" ]; then
        pgid=$(cat "$jobs/$id.pid")
        kill -TERM -"$pgid" 2>/dev/null
        (sleep 3; kill -KILL -"$pgid" 2>/dev/null) >/dev/null 2>&1 </dev/null &
    fi
done
exit 0
"""

REFUSING_SBATCH = """#!/bin/sh
echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified" >&2
exit 1
"""


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """``fake_slurm(run=False)``: fake sbatch/scancel first on PATH; returns the jobs folder."""

    def install(run: bool = False, sbatch: str = FAKE_SBATCH) -> Path:
        bin_dir, jobs = tmp_path / "bin", tmp_path / "jobs"
        bin_dir.mkdir(exist_ok=True)
        jobs.mkdir(exist_ok=True)
        for name, text in (("sbatch", sbatch), ("scancel", FAKE_SCANCEL)):
            path = bin_dir / name
            path.write_text(text.format(jobs=jobs, run="1" if run else ""))
            path.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        return jobs

    yield install
    for pid_file in (tmp_path / "jobs").glob("*.pid"):  # a test that failed half-way
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _group_alive(pgid: int) -> bool:
    """A live process (not a zombie: orphans wait for init to reap them) in the group."""
    if not Path("/proc/self/stat").exists():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for name in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split() if name.isdigit() else []
        except OSError:
            continue
        if fields and fields[0] != "Z" and int(fields[2]) == pgid:
            return True
    return False


def test_scaling_submits_the_rendered_script_per_job_and_closing_cancels_them(fake_slurm):
    jobs = fake_slurm()
    cfg = _settings(jobs=3, adapt_max_jobs=5, cores=2, memory="2GiB", queue="short")
    cluster = slurm_cluster(cfg)
    try:
        scripts = sorted(jobs.glob("*.sh"))
        assert len(scripts) == 3  # submitted before slurm_cluster returned
        expected = cluster.job_script().splitlines()
        for path in scripts:
            got = path.read_text().splitlines()
            assert [ln for ln in got if ln.startswith("#SBATCH")] == [ln for ln in expected if ln.startswith("#SBATCH")]
            assert "#SBATCH -p short" in got and "--resources CPU=1" in _command(path.read_text())
            assert cluster.scheduler_address in _command(path.read_text())
        # adaptive between 3 and 5 jobs of 2 workers
        assert (cluster._adaptive.minimum, cluster._adaptive.maximum) == (6, 10)
    finally:
        cluster.close()
    cancelled = (jobs / "scancel.log").read_text().split()
    assert sorted(cancelled) == sorted(p.stem for p in scripts)


def test_missing_sbatch_is_an_error_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch there
    with pytest.raises(ClusterError, match=r"`sbatch` is not on PATH"):
        with make_client(_settings()):
            pass


def test_sbatch_refusing_the_job_is_an_error_with_its_message(fake_slurm):
    fake_slurm(sbatch=REFUSING_SBATCH)
    with pytest.raises(ClusterError, match="Invalid account or account/partition") as info:
        slurm_cluster(_settings(account="nosuch"))
    assert "the worker job was not submitted" in str(info.value)


def test_missing_dask_jobqueue_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # import fails, as where it is not installed
    with pytest.raises(ClusterError, match=r"needs dask-jobqueue.*matchbench\[slurm\]"):
        with make_client(_settings()):
            pass


def test_jobs_that_never_start_are_an_error_naming_the_setting(fake_slurm):
    fake_slurm(run=False)  # submitted, never started: a job stuck in the queue
    cfg = _settings(wait_for_workers_s=1, log_directory=None)
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=r"0 worker\(s\) joined within 1 s \(cluster.wait_for_workers_s\)"):
        with make_client(cfg):
            pass
    assert time.monotonic() - t0 < 30


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "setsid"), reason="the fake sbatch needs setsid (POSIX)")
def test_sweep_on_jobs_started_by_a_fake_sbatch(fake_slurm, tmp_path):
    """A whole sweep with ``cluster=slurm``: the fake sbatch runs the rendered job script on
    this host; its two CPU workers join, run the tasks, and the job ends with the sweep."""
    from matchbench.results.store import read_results
    from matchbench.runner.execute import execute
    from matchbench.runner.plan import build_plan

    jobs = fake_slurm(run=True)
    cluster = _settings(cores=2, memory="4GiB", min_workers=2, wait_for_workers_s=120,
                        death_timeout_s=30, log_directory=str(tmp_path / "logs"),
                        interface="lo" if sys.platform.startswith("linux") else None)
    cfg = {
        "algorithm": {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"},
        "dataset": {"instances": [
            {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 6, "seed": s} for s in (1, 2, 3)
        ]},
        "gpu": {"repetitions": 1, "warmup": 0},
        "cluster": cluster,
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "verify": True},
        "data_dir": str(tmp_path / "data"),
    }
    log = io.StringIO()
    summary = execute([build_plan(cfg)], stream=log)
    assert "2 worker(s), 0 offering GPU=1, 2 offering CPU=1" in log.getvalue(), log.getvalue()
    df = read_results(summary["dir"])
    assert len(df) == 3 and (df.status == "ok").all() and df.verified.astype(bool).all()
    (script,) = jobs.glob("*.sh")
    assert "#SBATCH --cpus-per-task=2" in script.read_text()
    assert (jobs / "scancel.log").read_text().split() == [script.stem]
    pgid = int((jobs / f"{script.stem}.pid").read_text())
    deadline = time.monotonic() + 30
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_alive(pgid), "the job's processes outlived the sweep"


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux) and setsid")
def test_sigterm_ends_the_sweep_and_cancels_its_jobs(fake_slurm, tmp_path):
    """``kill PID`` of a ``cluster=slurm`` sweep mid-task: exit status 143 with its one line,
    as on a local cluster, and every job cancelled, so no worker outlives the sweep."""
    import subprocess

    from matchbench.runner.execute import EXIT_TERMINATED

    jobs = fake_slurm(run=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), *sys.path]))
    args = [
        sys.executable, "-m", "matchbench", "-m",
        "algorithm._target_=_faulty_solvers.Faulty", "+algorithm.mode=sleep", "+algorithm.at=-1",
        "+algorithm.seconds=60", "dataset=er", "dataset.scale=5", "dataset.seed=1,2",
        "gpu.repetitions=1", "gpu.warmup=0", "cluster=slurm", "cluster.cores=2", "cluster.memory=2GiB",
        "cluster.dashboard_address=:0", "cluster.death_timeout_s=30", "cluster.min_workers=2",
        "cluster.wait_for_workers_s=120",
        f"run.results_dir={tmp_path / 'runs'}", f"data_dir={tmp_path / 'data'}",
        f"hydra.sweep.dir={tmp_path / 'h'}",
    ]
    if sys.platform.startswith("linux"):
        args.append("cluster.interface=lo")
    err_path = tmp_path / "sweep.err"
    with open(err_path, "w") as err_file:
        sweep = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err_file,
                                 start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "cluster: 2 worker(s)" not in err_path.read_text() and sweep.poll() is None:
            assert time.monotonic() < deadline, err_path.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(2)  # the tasks start (each sleeps 60 s)
        sweep.send_signal(signal.SIGTERM)
        sweep.wait(timeout=120)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    err = err_path.read_text()
    assert sweep.returncode == EXIT_TERMINATED, err[-3000:]
    assert "Traceback" not in err and "terminated (SIGTERM): 0 of 2 task(s)" in err, err[-3000:]
    (script,) = jobs.glob("*.sh")
    assert (jobs / "scancel.log").read_text().split() == [script.stem]
    pgid = int((jobs / f"{script.stem}.pid").read_text())
    deadline = time.monotonic() + 30
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_alive(pgid), "the job's processes outlived the sweep"
