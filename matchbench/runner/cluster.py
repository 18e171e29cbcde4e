"""The Dask cluster a sweep runs on, from the ``cluster`` config group.

``auto``: a LocalCUDACluster (one worker per visible GPU, each offering the resource
``GPU=1``) when dask-cuda and a GPU are present, else a LocalCluster of processes with
one thread each (a visible GPU that dask-cuda cannot drive is said in one line, with the
fix: :func:`auto_kind`). ``local_cpu`` and ``local_cuda`` force one or the other;
``external`` connects to a running scheduler by address or scheduler file.

CPU references run on CPU workers, which offer the resource ``CPU=1`` (one thread each):
every worker of ``local_cpu``, and ``cluster.cpu_workers`` extra workers beside the GPU
workers of ``local_cuda`` (default 1: one reference at a time, so references neither
share a GPU worker's cores nor disturb its timings nor each other's). CPU tasks ask for
``CPU=1`` whenever some worker offers it (see :func:`task_resources`); on an external
cluster start CPU-only workers with ``--resources CPU=1``.

``external`` takes exactly one of ``cluster.address`` and ``cluster.scheduler_file``; a
scheduler it cannot reach within ``cluster.connect_timeout_s``, or one that fewer than
``cluster.min_workers`` workers join within ``cluster.wait_for_workers_s``, is a
:class:`ClusterError` naming the setting, never a sweep that waits forever. The sweep's
``cluster.allowed_failures`` is also set on the external scheduler (a scheduler reads the
Dask setting only as it starts).

``slurm`` (dask-jobqueue, the ``matchbench[slurm]`` extra) runs the scheduler in the
sweep's process and submits worker jobs with ``sbatch``: ``dask cuda worker`` jobs (one
worker per GPU of the job, each offering ``GPU=1``) where ``cluster.gpus_per_job`` > 0,
else ``dask worker`` jobs of one-thread workers offering ``CPU=1``; see
:func:`slurm_cluster_kwargs`. The jobs are cancelled (``scancel``) when the sweep ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger(__name__)


class ClusterError(RuntimeError):
    pass


class SchedulerLost(RuntimeError):
    """The sweep's client lost its Dask scheduler (it died, or the network to it did).

    Not a failure of the tasks in flight: they are left unwritten, for ``run.resume``.
    """


def scheduler_lost(client, exc: BaseException) -> str | None:
    """Why ``exc`` (from a future or a client call) means the scheduler is gone, else None.

    When the connection to the scheduler closes, ``distributed`` cancels every future of
    the client with the reason ``scheduler-connection-lost`` and tries to reconnect for
    its connect timeout; calls made meanwhile fail with a comm error or
    ``ClosedClientError``. A future cancelled for any other reason was also stopped by
    the cluster, not by its task, and is treated alike: no row of a task that did not
    run. Any other exception (``KilledWorker``, an error of the task) is the task's.
    """
    from distributed.client import ClosedClientError, FutureCancelledError
    from distributed.comm import CommClosedError

    address = getattr(getattr(client, "scheduler", None), "address", None) or "?"
    if isinstance(exc, FutureCancelledError):
        if exc.reason == "scheduler-connection-lost":
            return f"lost the connection to the Dask scheduler at {address}"
        return f"the Dask scheduler at {address} cancelled task {exc.key} ({exc.reason})"
    if isinstance(exc, (CommClosedError, ClosedClientError)) or getattr(client, "status", "running") != "running":
        return f"lost the connection to the Dask scheduler at {address} ({type(exc).__name__}: {exc})"
    return None


def gpu_count() -> int:
    """Visible CUDA devices, 0 where CuPy or a driver is missing."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() if cupy.is_available() else 0
    except Exception:
        return 0


def dask_cuda_available() -> tuple[bool, str]:
    try:
        import dask_cuda  # noqa: F401
    except Exception as exc:
        return False, f"dask-cuda not importable ({type(exc).__name__}: {exc})"
    return True, ""


def auto_kind(stream: TextIO | None = None) -> str:
    """``cluster=auto``'s choice: ``local_cuda`` where a GPU is visible and dask-cuda
    imports, else ``local_cpu``.

    A visible GPU that dask-cuda cannot drive is never passed over silently: one line on
    ``stream`` (stderr) names the import error and the fix, then the sweep runs on CPU
    workers (its GPU tasks are ``skipped`` rows). The usual cause is a dask-cuda installed
    without its ``[cu12]``/``[cu13]`` extra, which alone brings the CUDA Python bindings
    (``cannot import name 'bindings' from 'cuda'``).
    """
    n = gpu_count()
    ok, why = dask_cuda_available() if n else (False, "no GPU visible")
    kind = "local_cuda" if ok else "local_cpu"
    log.info("cluster=auto: %s (%d GPU(s); %s)", kind, n, why or "dask-cuda present")
    if n and not ok:
        (stream or sys.stderr).write(
            f"cluster=auto: {n} GPU(s) visible but {why}; running on CPU workers, GPU "
            "solvers skipped. Fix: pip install 'matchbench[cuda12]' or 'matchbench[cuda13]' "
            "(whichever the driver supports): they bring dask-cuda[cu12] or [cu13] and its "
            "CUDA bindings\n"
        )
    return kind


@contextlib.contextmanager
def _workers_ignore_ctrl_c() -> Iterator[None]:
    """Start local workers with SIGINT ignored (inherited by their processes).

    Ctrl-C goes to the terminal's whole process group; the sweep's client turns it into
    one line and shuts the cluster down, so the nannies and workers must not each print
    a KeyboardInterrupt traceback. Python (and asyncio) keep an inherited SIG_IGN.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def worker_memory_limit(value: Any, n_workers: int, total: int | None = None) -> Any:
    """Each worker's memory limit: ``auto`` shares the host's memory among the workers.

    Dask's own ``auto`` gives a one-thread worker ``memory / cpu_count`` (1/16 of the host
    on 16 cores), so that a worker building or solving a graph of 1e8 edges is killed by
    its nanny while most of the memory is unused. Here ``auto`` (or null) is
    ``total / n_workers``, ``total`` being Dask's view of the host (cgroup limits
    included); any other value (bytes, "8GiB", 0 for no limit) goes to Dask as given.

    >>> worker_memory_limit("auto", 4, total=64 << 30) == 16 << 30
    True
    >>> worker_memory_limit("12GiB", 4, total=64 << 30)
    '12GiB'
    """
    if value not in (None, "auto"):
        return value
    if total is None:
        from distributed.system import MEMORY_LIMIT as total
    return int(total // max(1, int(n_workers)))


def worker_saturation(value: Any) -> float | None:
    """``cluster.worker_saturation`` as Dask takes it: a number > 0 or ``inf``; None (null):
    Dask's own setting.

    The tasks (here: batches) a local cluster's scheduler hands each worker thread at
    once (``distributed.scheduler.worker-saturation``; Dask's 1.1 is the task running
    and one more). The scheduler of a local cluster shares the sweep's process, which
    packs batches and writes rows meanwhile. Measured on H200 machines (a million LAPs
    of n = 64 in batches of 10,000, docs/benchmarks/batch.md): ``inf`` (every batch
    handed out at once) gave 235,008/s, 252,144/s and 190,078/s on three machines, Dask's
    1.1 gave 179,922/s, 234,746/s and 210,483/s on the same three, 4 gave 217,219/s and
    234,532/s: within the spread between machines, so the default stays Dask's. ``inf`` gives up the scheduler's
    queue (a worker's share is fixed when it is submitted, then rebalanced by work
    stealing), which has not been measured on several GPUs.

    >>> worker_saturation(4), worker_saturation("inf"), worker_saturation(None)
    (4.0, inf, None)

    Raises
    ------
    ClusterError
        For anything else, naming the setting.
    """
    if value is None:
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        out = float(value)
    except (TypeError, ValueError):
        out = float("nan")
    if not out > 0:  # NaN too
        raise ClusterError(
            f"cluster.worker_saturation must be a number > 0 or inf (tasks a worker thread holds "
            f"at once), or null for Dask's own, not {value!r}"
        )
    return out


#: Where the dashboard listens unless the config says otherwise: this host only (the Bokeh
#: dashboard has no authentication).
DEFAULT_DASHBOARD = "127.0.0.1:8787"


def dashboard_address(cfg: dict[str, Any]) -> str:
    """The scheduler's HTTP address for ``cluster.dashboard_address``.

    A bare port (``":8787"``, ``8787``) binds this host's loopback only, as the default does;
    another interface must be named (``0.0.0.0:8787`` to serve every network). ``null``
    (no dashboard): Dask's scheduler still starts an HTTP server (health, metrics), so it is
    put on a free loopback port, never on every interface.

    >>> dashboard_address({})
    '127.0.0.1:8787'
    >>> dashboard_address({"dashboard_address": ":9000"})
    '127.0.0.1:9000'
    >>> dashboard_address({"dashboard_address": None})
    '127.0.0.1:0'
    >>> dashboard_address({"dashboard_address": "0.0.0.0:8787"})
    '0.0.0.0:8787'
    """
    value = cfg.get("dashboard_address", DEFAULT_DASHBOARD)
    if value is None:
        return "127.0.0.1:0"
    text = str(value).strip()
    if text.isdigit():
        text = f":{text}"
    if text.startswith(":"):
        text = "127.0.0.1" + text
    return text


def _dashboard_kwargs(cfg: dict[str, Any]) -> dict[str, Any]:
    """``dashboard_address`` and, for ``null``, the scheduler option that turns it off."""
    out: dict[str, Any] = {"dashboard_address": dashboard_address(cfg)}
    if cfg.get("dashboard_address", DEFAULT_DASHBOARD) is None:
        out["scheduler_kwargs"] = {"dashboard": False}
    return out


def _local_cpu(cfg: dict[str, Any]):
    from distributed import LocalCluster

    n = int(cfg.get("n_workers") or max(1, (os.cpu_count() or 1)))
    return LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        **_dashboard_kwargs(cfg),
        memory_limit=worker_memory_limit(cfg.get("memory_limit", "auto"), n),
        resources={"CPU": 1},
    )


def add_cpu_workers(cluster, n: int, memory_limit: Any = "auto") -> None:
    """Start ``n`` CPU workers (one thread, ``CPU=1``, no GPU visible) in ``cluster``.

    A LocalCUDACluster's own specification makes GPU workers only; these go beside them
    as extra entries of its ``worker_spec`` (a SpecCluster starts what its specification
    lists), named ``cpu-<i>``.
    """
    from distributed import Nanny

    if n <= 0:
        return
    for i in range(int(n)):
        cluster.worker_spec[f"cpu-{i}"] = {
            "cls": Nanny,
            "options": {
                "nthreads": 1,
                "resources": {"CPU": 1},
                "memory_limit": memory_limit,
                # No CUDA context for CPU references.
                "env": {"CUDA_VISIBLE_DEVICES": ""},
            },
        }
    cluster.sync(cluster._correct_state)
    cluster.wait_for_workers(len(cluster.worker_spec))


def _visible_devices(cfg: dict[str, Any]) -> str | None:
    """``cluster.visible_devices`` as CUDA_VISIBLE_DEVICES text; None for all GPUs.

    Hydra reads ``cluster.visible_devices=0`` as the integer 0 (and ``0,1`` as a list):
    both name devices, not "none".
    """
    devices = cfg.get("visible_devices")
    if devices is None or (isinstance(devices, str) and not devices.strip()):
        return None
    if isinstance(devices, list | tuple):
        return ",".join(str(d).strip() for d in devices)
    return str(devices).strip()


def _n_gpu_workers(cfg: dict[str, Any]) -> int:
    devices = _visible_devices(cfg)
    if devices is not None:
        return len([d for d in devices.split(",") if d.strip()])
    return max(1, gpu_count())


def _local_cuda(cfg: dict[str, Any]):
    from dask_cuda import LocalCUDACluster

    kwargs: dict[str, Any] = {
        "threads_per_worker": 1,
        **_dashboard_kwargs(cfg),
        "resources": {"GPU": 1},
        "memory_limit": worker_memory_limit(
            cfg.get("memory_limit", "auto"), _n_gpu_workers(cfg) + int(cfg.get("cpu_workers", 1) or 0)
        ),
    }
    if _visible_devices(cfg) is not None:
        kwargs["CUDA_VISIBLE_DEVICES"] = _visible_devices(cfg)
    return LocalCUDACluster(**kwargs)


#: The extra that brings dask-jobqueue, named in the error where it is missing.
SLURM_EXTRA = "matchbench[slurm]"


def slurm_cluster_kwargs(cfg: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of ``dask_jobqueue.SLURMCluster`` for the ``cluster=slurm`` settings.

    Every job runs one-thread Dask workers, as the local clusters do (a worker runs one
    task at a time, in its task process):

    - ``gpus_per_job`` > 0: a GPU job. Slurm is asked for the GPUs with ``gpu_directive``
      (``--gres=gpu:{n}``); the job runs ``dask cuda worker`` (``python -m dask_cuda.cli``),
      which starts one worker per GPU Slurm gave it, each offering ``GPU=1``, so that GPU
      tasks find them. ``processes`` must then be null (or equal ``gpus_per_job``).
    - else a CPU job: ``dask worker --nworkers processes`` (null: one per core), each
      worker offering ``CPU=1``, where the CPU references go.

    ``cores`` is what Slurm books (``--cpus-per-task``; null: one per worker), ``memory``
    the job's memory (``--mem``), shared evenly among its workers as their memory limit.

    >>> kw = slurm_cluster_kwargs({"gpus_per_job": 2, "cores": 16, "memory": "64GiB"})
    >>> kw["worker_command"], kw["processes"], kw["job_cpu"], kw["job_extra_directives"]
    ('dask_cuda.cli', 2, 16, ['--gres=gpu:2'])

    Raises
    ------
    ClusterError
        Naming the setting, for a value that cannot make a job.
    """

    def count(key: str, default: int | None) -> int | None:
        value = cfg.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ClusterError(f"cluster=slurm: cluster.{key}={value!r} is not a count")
        return int(value)

    gpus = count("gpus_per_job", 0) or 0
    processes = count("processes", None)
    cores = count("cores", None)
    if gpus:
        if processes not in (None, gpus):
            raise ClusterError(
                f"cluster=slurm: cluster.processes={processes} with cluster.gpus_per_job={gpus}: a GPU "
                "job runs one worker per GPU (dask cuda worker); leave cluster.processes=null"
            )
        processes = gpus
    else:
        processes = processes or cores or 1
    if processes < 1:
        raise ClusterError("cluster=slurm: cluster.processes must be at least 1")
    cores = cores or processes
    if not gpus and cores < processes:
        raise ClusterError(
            f"cluster=slurm: cluster.processes={processes} one-thread workers on cluster.cores={cores} "
            "booked cores; book at least one core per worker"
        )
    memory = cfg.get("memory")
    if not memory:
        raise ClusterError("cluster=slurm: cluster.memory (per job, e.g. 32GiB) is not set")
    directives = [str(d) for d in cfg.get("job_extra_directives") or []]
    if gpus:
        template = str(cfg.get("gpu_directive") or "--gres=gpu:{n}")
        directives.insert(0, template.format(n=gpus))
    extra = ["--resources", "GPU=1" if gpus else "CPU=1", *map(str, cfg.get("worker_extra_args") or [])]
    return {
        "queue": cfg.get("queue"),
        "account": cfg.get("account"),
        "walltime": cfg.get("walltime"),
        # Dask's cores are the job's worker threads: one per worker. Slurm books job_cpu.
        "cores": processes,
        "processes": processes,
        "job_cpu": cores,
        "memory": str(memory),
        "job_name": cfg.get("job_name") or "matchbench",
        "job_extra_directives": directives,
        "job_directives_skip": [str(d) for d in cfg.get("job_directives_skip") or []],
        "job_script_prologue": [str(line) for line in cfg.get("job_script_prologue") or []],
        "worker_command": "dask_cuda.cli" if gpus else "distributed.cli.dask_worker",
        "worker_extra_args": extra,
        "python": cfg.get("python") or sys.executable,
        "local_directory": cfg.get("local_directory"),
        "log_directory": cfg.get("log_directory"),
        "death_timeout": cfg.get("death_timeout_s", 60),
        "interface": cfg.get("interface"),
        "scheduler_options": {
            "dashboard_address": dashboard_address(cfg),
            **_dashboard_kwargs(cfg).get("scheduler_kwargs", {}),
        },
    }


def _import_slurm_cluster():
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as exc:
        raise ClusterError(
            f"cluster=slurm needs dask-jobqueue, which is not importable ({exc}); install the "
            f"extra: pip install -e '.[slurm]' in this checkout, or pip install '{SLURM_EXTRA}' "
            "(make: EXTRAS=dev,ref,cuda12,slurm)"
        ) from None
    return SLURMCluster


def slurm_cluster(cfg: dict[str, Any]):
    """A ``SLURMCluster`` with ``cluster.jobs`` worker jobs submitted (and adapting up to
    ``cluster.adapt_max_jobs`` where set); closing it cancels them.

    The jobs are submitted before it returns, so that a missing ``sbatch`` or one that
    refuses the job (an unknown account or partition, a walltime over the limit) is a
    :class:`ClusterError` carrying ``sbatch``'s message, not a log line and a sweep that
    waits for workers that never come.
    """
    cluster_cls = _import_slurm_cluster()
    kwargs = slurm_cluster_kwargs(cfg)
    jobs = cfg.get("jobs", 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ClusterError(f"cluster=slurm: cluster.jobs={jobs!r}; give at least 1 (the sweep waits for them)")
    most = cfg.get("adapt_max_jobs")
    if most is not None and (isinstance(most, bool) or not isinstance(most, int) or most < jobs):
        raise ClusterError(
            f"cluster=slurm: cluster.adapt_max_jobs={most!r}; give null (a fixed {jobs} job(s)) or a "
            f"count of at least cluster.jobs={jobs}"
        )
    submit = cluster_cls.job_cls.submit_command.split()[0]
    if shutil.which(submit) is None:
        raise ClusterError(
            f"cluster=slurm: `{submit}` is not on PATH, so no worker job can be submitted; run the "
            "sweep where Slurm's commands are (a login node, or a job of its own), after "
            "`module load slurm` where the site needs it"
        )
    try:
        cluster = cluster_cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise ClusterError(f"cluster=slurm: dask-jobqueue refuses the settings: {exc}") from None
    try:
        log.info("cluster=slurm: submitting %d job(s) (%s) of this script:\n%s", jobs,
                 f"adapting up to {most}" if most else "fixed", cluster.job_script())
        # What cluster.scale(jobs=...) does, but awaited here: scale() submits in the
        # background, where sbatch's refusal would only be logged.
        while len(cluster.worker_spec) < jobs:
            cluster.worker_spec.update(cluster.new_worker_spec())
        try:
            cluster.sync(cluster._correct_state)
        except RuntimeError as exc:
            from distributed.core import Status

            for job in list(cluster._created):
                if getattr(job, "job_id", None) is None:  # never submitted: nothing to cancel
                    job.status = Status.failed  # (closing asserts that every job ended)
            raise ClusterError(f"cluster=slurm: the worker job was not submitted: {exc}".strip()) from None
        if most is not None:
            cluster.adapt(minimum_jobs=jobs, maximum_jobs=most)
    except BaseException:
        cluster.close()
        raise
    return cluster


def _wait_for_slurm_workers(client, cfg: dict[str, Any]) -> None:
    """Wait for ``cluster.min_workers`` workers of the submitted jobs (queued jobs may
    take a while), at most ``cluster.wait_for_workers_s``: the sweep counts the workers'
    resources once, as it starts."""
    n = max(1, int(cfg.get("min_workers") or 1))
    wait = float(cfg.get("wait_for_workers_s") or 3600)
    if worker_count(client) >= n:
        return
    log.info("cluster=slurm: waiting up to %g s for %d worker(s) of the submitted jobs", wait, n)
    try:
        client.wait_for_workers(n, timeout=wait)
    except TimeoutError:
        logs = cfg.get("log_directory")
        where = f"; the jobs' output is in {logs}" if logs else " (cluster.log_directory keeps the jobs' output)"
        raise ClusterError(
            f"cluster=slurm: {worker_count(client)} worker(s) joined within {wait:g} s "
            f"(cluster.wait_for_workers_s), fewer than cluster.min_workers={n}; `squeue --me` says "
            f"whether the jobs still wait in the queue{where}"
        ) from None


@contextlib.contextmanager
def make_client(cfg: dict[str, Any]) -> Iterator[Any]:
    """A connected ``distributed.Client`` for the cluster config; closed on exit."""
    import dask
    from distributed import Client

    kind = cfg.get("kind", "auto")
    # A task whose *task process* crashed is already a row; a task whose *worker* died
    # (host OOM kill, lost node) is retried on another worker up to allowed_failures
    # times, then the client writes it as a ``crashed`` row. Dask's default (3) would let
    # one bad instance take down four workers.
    allowed = int(cfg.get("allowed_failures", 1))
    settings: dict[str, Any] = {"distributed.scheduler.allowed-failures": allowed}
    if kind in ("auto", "local_cpu", "local_cuda"):  # a scheduler this process starts
        saturation = worker_saturation(cfg.get("worker_saturation"))
        if saturation is not None:
            settings["distributed.scheduler.worker-saturation"] = saturation
    with dask.config.set(settings):
        if kind == "external":
            with _closing(external_client(cfg)) as client:
                yield client
            return
        if kind == "slurm":
            cluster = slurm_cluster(cfg)
            try:
                client = Client(cluster)
            except BaseException:
                cluster.close()
                raise
            with _closing(client, cluster):
                _wait_for_slurm_workers(client, cfg)
                yield client
            return
        if kind == "auto":
            kind = auto_kind()
        if kind == "local_cuda":
            ok, why = dask_cuda_available()
            if not ok:
                raise ClusterError(f"cluster=local_cuda: {why}; install matchbench[cuda12] or [cuda13]")
            with _workers_ignore_ctrl_c():
                cluster = _local_cuda(cfg)
                try:
                    n_cpu = int(cfg.get("cpu_workers", 1) or 0)
                    limit = worker_memory_limit(cfg.get("memory_limit", "auto"), _n_gpu_workers(cfg) + n_cpu)
                    add_cpu_workers(cluster, n_cpu, limit)
                except BaseException:
                    cluster.close()
                    raise
        elif kind == "local_cpu":
            with _workers_ignore_ctrl_c():
                cluster = _local_cpu(cfg)
        else:
            raise ClusterError(f"unknown cluster kind {kind!r} (auto, local_cpu, local_cuda, external, slurm)")
        try:
            client = Client(cluster)
        except BaseException:
            cluster.close()
            raise
        with _closing(client, cluster):
            yield client


@contextlib.contextmanager
def _closing(client, cluster=None) -> Iterator[Any]:
    """Yield ``client``; then close it and the local ``cluster``, also on an exception.

    After a :class:`SchedulerLost` the closing is quick and quiet: each attempt to reach
    the dead scheduler (a local cluster retiring its workers) waits
    ``LOST_CONNECT_TIMEOUT_S``, not Dask's connect timeout (30 s), and the client's
    logged traceback of its abandoned reconnection is not shown: the sweep has said
    what happened in one line.
    """
    lost = False
    try:
        yield client
    except SchedulerLost:
        lost = True
        raise
    finally:
        with _scheduler_gone() if lost else contextlib.nullcontext():
            try:
                client.close()
            finally:
                if cluster is not None:
                    cluster.close()


#: How long closing waits for each attempt to reach a scheduler that has gone.
LOST_CONNECT_TIMEOUT_S = 2


@contextlib.contextmanager
def _scheduler_gone() -> Iterator[None]:
    import dask

    names = ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
    levels = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.CRITICAL + 1)
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": f"{LOST_CONNECT_TIMEOUT_S}s"}):
            yield
    finally:
        for n, level in levels.items():
            logging.getLogger(n).setLevel(level)


def scheduler_address(cfg: dict[str, Any]) -> tuple[str, str]:
    """The scheduler address of ``cluster=external`` and the setting it came from.

    Exactly one of ``cluster.address`` and ``cluster.scheduler_file`` must be set. A
    scheduler file that does not exist yet is waited for up to ``connect_timeout_s``
    (a scheduler started just before the sweep writes it within a second or two).

    >>> scheduler_address({"address": "tcp://head:8786"})
    ('tcp://head:8786', 'cluster.address')
    """
    address, path = cfg.get("address"), cfg.get("scheduler_file")
    if address and path:
        raise ClusterError(
            f"cluster=external: cluster.address={address} and cluster.scheduler_file={path} "
            "are both set; give one of them"
        )
    if not address and not path:
        raise ClusterError(
            "cluster=external: neither cluster.address nor cluster.scheduler_file is set; give "
            "cluster.address=tcp://HOST:8786 or cluster.scheduler_file=PATH (the file of "
            "`dask scheduler --scheduler-file PATH`)"
        )
    if address:
        return str(address), "cluster.address"
    timeout = float(cfg.get("connect_timeout_s") or 30)
    deadline = time.monotonic() + timeout
    while True:
        try:
            info = json.loads(Path(path).read_text(encoding="utf-8"))
            return str(info["address"]), f"cluster.scheduler_file={path}"
        except FileNotFoundError:
            why = "no such file"
        except (OSError, ValueError, KeyError, TypeError) as exc:
            why = f"not a Dask scheduler file ({type(exc).__name__}: {exc})"
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"cluster=external: cluster.scheduler_file={path}: {why} after {timeout:g} s "
                "(cluster.connect_timeout_s); start `dask scheduler --scheduler-file PATH` first, "
                "with PATH on a filesystem this host reads"
            )
        time.sleep(0.2)


def external_client(cfg: dict[str, Any]):
    """A client of the running scheduler of ``cluster=external``, with workers joined.

    Raises :class:`ClusterError` (naming the setting) when the scheduler cannot be
    reached within ``cluster.connect_timeout_s`` or fewer than ``cluster.min_workers``
    workers have joined it within ``cluster.wait_for_workers_s``: the sweep counts the
    workers' ``GPU``/``CPU`` resources once, as it starts (see :func:`task_resources`).
    """
    from distributed import Client

    address, source = scheduler_address(cfg)
    timeout = float(cfg.get("connect_timeout_s") or 30)
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(
            f"cluster=external: cannot reach the Dask scheduler at {address} ({source}) within "
            f"{timeout:g} s (cluster.connect_timeout_s): {exc}. Is `dask scheduler` running "
            "there, and its port open from this host?"
        ) from None
    try:
        n = max(1, int(cfg.get("min_workers") or 1))
        wait = float(cfg.get("wait_for_workers_s") or 60)
        if worker_count(client) < n:
            log.info("cluster=external: waiting up to %g s for %d worker(s) at %s", wait, n, address)
            try:
                client.wait_for_workers(n, timeout=wait)
            except TimeoutError:
                raise ClusterError(
                    f"cluster=external: {worker_count(client)} worker(s) joined the scheduler at "
                    f"{address} within {wait:g} s (cluster.wait_for_workers_s), fewer than "
                    f"cluster.min_workers={n}; start workers with `dask worker {address} ...` "
                    "(see the README, 'Beyond one machine')"
                ) from None
        _set_allowed_failures(client, int(cfg.get("allowed_failures", 1)))
    except BaseException:
        client.close()
        raise
    return client


def _set_allowed_failures(client, n: int) -> None:
    """Set the running scheduler's ``allowed_failures`` (how often a task may lose its worker).

    The function run on the scheduler is defined inside, so that cloudpickle sends it by
    value: the scheduler's environment need not have matchbench installed.
    """

    def swap(dask_scheduler=None, n=n):
        old = dask_scheduler.allowed_failures
        dask_scheduler.allowed_failures = n
        return old

    try:
        old = client.run_on_scheduler(swap)
    except Exception as exc:  # noqa: BLE001 - the sweep still runs, under the scheduler's own setting
        log.warning("cluster=external: could not set the scheduler's allowed-failures to %d (%s)", n, exc)
        return
    if old != n:
        log.info("cluster=external: the scheduler's allowed-failures is now %d (was %s)", n, old)


def _workers(client) -> dict:
    # Recent distributed lists only the first few workers unless asked for all.
    info = client.scheduler_info(n_workers=-1) if _takes_n_workers(client) else client.scheduler_info()
    return info["workers"]


def worker_count(client) -> int:
    return len(_workers(client))


def host_shares(workers: dict) -> dict[str, tuple[int, int]]:
    """``{host: (GPU workers, other workers)}`` of a cluster's workers (the scheduler's
    ``workers`` info): how the workers of each host share its cores
    (:func:`thread_share`).

    >>> host_shares({"tcp://a:1": {"host": "a", "resources": {"GPU": 1}},
    ...              "tcp://a:2": {"host": "a", "resources": {"CPU": 1}}})
    {'a': (1, 1)}
    """
    out: dict[str, list[int]] = {}
    for address, w in workers.items():
        host = str(w.get("host") or address.rsplit(":", 1)[0])
        pair = out.setdefault(host, [0, 0])
        pair[0 if (w.get("resources") or {}).get("GPU", 0) >= 1 else 1] += 1
    return {h: (g, c) for h, (g, c) in out.items()}


def thread_share(cores: int, gpu_workers: int, other_workers: int, gpu: bool) -> int:
    """The host threads of one worker's batch paths (``MATCHBENCH_HOST_THREADS``). On a
    host without GPU workers the workers share its cores evenly (one each where there are
    as many workers as cores, as ``cluster=local_cpu`` starts them). Beside GPU workers, a
    worker without a GPU (``cluster.cpu_workers``: one CPU task at a time) gets one, and
    the GPU workers share the rest.

    >>> thread_share(16, 1, 1, gpu=True), thread_share(16, 1, 1, gpu=False)
    (15, 1)
    >>> thread_share(32, 2, 0, gpu=True), thread_share(2, 0, 2, gpu=False), thread_share(16, 0, 3, gpu=False)
    (16, 1, 5)
    """
    if not gpu_workers:
        return max(1, cores // max(1, other_workers))
    if not gpu:
        return 1
    return max(1, (cores - other_workers) // gpu_workers)


def gpu_workers(client) -> int:
    """Workers offering the ``GPU`` resource (GPU tasks ask for ``{"GPU": 1}``)."""
    return sum(1 for w in _workers(client).values() if w.get("resources", {}).get("GPU", 0) >= 1)


def cpu_workers(client) -> int:
    """Workers offering the ``CPU`` resource (where CPU tasks go when there are any)."""
    return sum(1 for w in _workers(client).values() if w.get("resources", {}).get("CPU", 0) >= 1)


def task_resources(device: str, n_cpu_workers: int) -> dict[str, int] | None:
    """What a task asks Dask for: ``GPU=1``, ``CPU=1``, or nothing.

    CPU tasks ask for ``CPU=1`` only where some worker offers it: a task asking for a
    resource no worker has would wait forever.
    """
    if device == "gpu":
        return {"GPU": 1}
    return {"CPU": 1} if n_cpu_workers else None


def _takes_n_workers(client) -> bool:
    import inspect

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def dashboard_link(client) -> str | None:
    """The URL of the scheduler's dashboard, or None where it serves none.

    ``Client.dashboard_link`` is no answer to the question: a Dask scheduler always
    starts an HTTP server (health, metrics) and reports it as the ``dashboard`` service,
    on port 8787 by default, also when the dashboard itself is off
    (``dask scheduler --no-dashboard``, ``LocalCluster(dashboard_address=None)``, bokeh
    missing); the link then names a page that is not there, or another process's
    dashboard on 8787. So the scheduler is asked whether its HTTP server carries the
    (bokeh) dashboard, on which address and port, and under which ``--dashboard-prefix``.
    The host is the one that server is bound to, or, where it listens on every
    interface, the host of the scheduler's address as this client reaches it.

    A scheduler that refuses to run the question (a restricted one) gets Dask's link.
    """

    def probe(dask_scheduler=None):
        # Defined here, sent by value: the scheduler need not have matchbench installed.
        server = getattr(dask_scheduler, "http_server", None)
        apps = getattr(getattr(dask_scheduler, "http_application", None), "applications", None) or []
        boards = [a for a in apps if any(c.__module__.split(".")[0] == "bokeh" for c in type(a).__mro__)]
        if server is None or not boards:
            return None
        return {"host": getattr(server, "address", None), "port": server.port,
                "prefix": getattr(boards[0], "_prefix", "") or ""}

    try:
        info = client.run_on_scheduler(probe)
    except Exception as exc:  # noqa: BLE001 - only the dashboard line depends on it
        log.debug("could not ask the scheduler for its dashboard (%s)", exc)
        try:
            return client.dashboard_link or None
        except Exception:  # noqa: BLE001 - no 'dashboard' service at all
            return None
    if info is None:
        return None
    from distributed.comm import get_address_host
    from distributed.utils import format_dashboard_link

    host = info["host"]
    if not host or host in ("0.0.0.0", "::"):
        address = client.scheduler.address
        host = "localhost" if address.startswith("inproc://") else get_address_host(address)
    link = format_dashboard_link(host, info["port"])
    prefix = "/" + info["prefix"].strip("/") if info["prefix"].strip("/") else ""
    if prefix and link.endswith("/status"):
        link = link[: -len("/status")] + prefix + "/status"
    return link


def dashboard_line(client, cfg: dict[str, Any]) -> str:
    """``Dask dashboard: URL``, or why there is none, for the sweep's first lines."""
    link = dashboard_link(client)
    if link:
        return f"Dask dashboard: {link}"
    if cfg.get("kind") == "external":
        address = getattr(client.scheduler, "address", "?")
        return (f"Dask dashboard: none (the scheduler at {address} serves none: started with "
                "--no-dashboard, or without bokeh)")
    return "Dask dashboard: none (cluster.dashboard_address=null, or bokeh is not installed)"
