"""Run the tasks of one or many Hydra jobs on one Dask cluster, writing rows as they land."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from distributed.diagnostics.plugin import WorkerPlugin

from matchbench.results.schema import CompactTable
from matchbench.results.store import RunWriter, latest_run
from matchbench.runner.plan import Plan, Task
from matchbench.runner.task import error_row, task_base

log = logging.getLogger(__name__)


#: Exit status of a sweep ended by Ctrl-C (SIGINT) and by SIGTERM (``kill``, a batch
#: system's time limit), as a shell reports a process killed by the signal.
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
#: Exit status of a sweep that lost its Dask scheduler (sysexits.h's EX_TEMPFAIL: a
#: temporary failure, to be retried; here with ``run.resume=true``).
EXIT_SCHEDULER_LOST = 75
#: Exit status of a sweep whose results folder ran out of space (sysexits.h's EX_IOERR);
#: it ends as after Ctrl-C, with the resume command.
EXIT_DISK_FULL = 74
#: Exit status of a sweep refused before it starts (a setting, a reused run id, a lock).
EXIT_USAGE = 2


def _refuse(stream, message: str) -> NoReturn:
    """One line and :data:`EXIT_USAGE`: what is wrong with the sweep's settings."""
    stream.write(f"matchbench: error: {message}\n")
    stream.flush()
    raise SystemExit(EXIT_USAGE)


class Terminated(KeyboardInterrupt):
    """SIGTERM during a sweep: it ends as after Ctrl-C (see :func:`_sigterm_as_interrupt`)."""


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into :class:`Terminated` while the sweep runs.

    By default SIGTERM ends Python at once and silently: no line saying what was kept
    and how to resume, no note in the run's manifest. A KeyboardInterrupt subclass
    takes Ctrl-C's way out instead. Further SIGTERMs are ignored while that way
    closes the cluster (a batch system follows up with SIGKILL anyway). Only in the main
    thread, where Python runs signal handlers.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S-%f")[:-3]


class PrecompileKernels(WorkerPlugin):
    """Dask worker plugin: compile the kernel families the sweep needs in each worker's
    task process before any task runs, so compilation never lands in a timed region."""

    name = "matchbench-precompile"

    def __init__(self, families: list[str]) -> None:
        self.families = sorted(set(families))

    def setup(self, worker) -> None:
        # On the worker's event loop, not in a thread of its own: the task process is
        # started with PR_SET_PDEATHSIG, which kills it when the thread that started it
        # ends, so a short-lived thread here would kill it under the first task.
        from matchbench.runner.child import task_process

        if self.families:
            task_process().precompile(self.families)

    def teardown(self, worker) -> None:
        from matchbench.runner.child import task_process

        task_process().close()


class WarmTaskProcesses(WorkerPlugin):
    """Dask worker plugin: start each worker's task process and import what the sweep's
    tasks need (their solvers' and datasets' modules, their families) while the client
    still plans the sweep, instead of in each worker's first task."""

    name = "matchbench-warm"

    def __init__(self, modules: list[str], problems: list[str],
                 shares: dict[str, tuple[int, int]] | None = None) -> None:
        self.modules = sorted(set(modules))
        self.problems = sorted(set(problems))
        self.shares = dict(shares or {})

    def setup(self, worker) -> None:
        # On the worker's event loop, not in a thread of its own: the task process is
        # started with PR_SET_PDEATHSIG, which kills it when the thread that started it
        # ends, so a short-lived thread here would kill it under the first task.
        from matchbench.core.params import HOST_THREADS_ENV, host_cores
        from matchbench.runner.child import task_process
        from matchbench.runner.cluster import thread_share

        resources = getattr(getattr(worker, "state", None), "total_resources", None) or {}
        device = "gpu" if resources.get("GPU", 0) >= 1 else "cpu"
        # This worker's share of its host's cores for the batch paths' threads, in the
        # environment its task process starts with (a value the user set is kept).
        share = self.shares.get(str(getattr(worker, "ip", "") or ""))
        if share is not None and not os.environ.get(HOST_THREADS_ENV):
            os.environ[HOST_THREADS_ENV] = str(thread_share(host_cores(), *share, gpu=device == "gpu"))
        try:
            task_process().warm(self.modules, self.problems, device=device)
        except Exception:  # noqa: BLE001 - the first task starts it again and says why
            pass


def _warm_in_background(client, tasks) -> Any:
    """Register :class:`WarmTaskProcesses` for ``tasks`` from a thread; returns it (join it
    before submitting: the workers' first tasks then find their processes ready)."""
    import threading

    isolated = [t for t in tasks.values() if t.isolate]
    if not isolated:
        return None
    modules = {str(t.algorithm_cfg.get("_target_", "")).rpartition(".")[0] for t in isolated}
    modules |= {str(t.instance_spec.get("_target_", "")).rpartition(".")[0] for t in isolated}
    from matchbench.runner.cluster import _workers, host_shares

    try:
        shares = host_shares(_workers(client))
    except Exception:  # no scheduler info: no shares, every worker uses its host's cores
        shares = {}
    plugin = WarmTaskProcesses([m for m in modules if m], [t.problem for t in isolated], shares)

    def register() -> None:
        with contextlib.suppress(Exception):
            client.register_plugin(plugin)

    thread = threading.Thread(target=register, name="matchbench-warm", daemon=True)
    thread.start()
    return thread


class Progress:
    """A one-line progress bar on a terminal, one line per finished task elsewhere."""

    def __init__(self, total: int, stream=None) -> None:
        self.total, self.done = total, 0
        self.status: Counter[str] = Counter()
        self.stream = stream or sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.start = time.perf_counter()

    def update(self, task: Task, rows: list[dict[str, Any]]) -> None:
        self.update_batch([task], rows)

    def update_batch(self, tasks: list[Task], rows: list[dict[str, Any]],
                     tabled: TableOutcomes | None = None) -> None:
        """One finished task, or batch: counts its instances, each by its worst status.

        ``tabled``: the outcomes of the batch's rows that came as tables
        (:func:`_table_outcomes`), beside the dict ``rows``."""
        self.done += len(tasks)
        if tabled is not None and not rows and not tabled.bad and len(tabled.ids) >= len(tasks):
            # every instance's rows came as tables, all ok: no loop over the instances
            self.status["ok"] += len(tasks)
            self._line(tasks, tabled.first, [])
            return
        by_task: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_task.setdefault(r.get("task_id"), []).append(r)
        seen, worst_of = (tabled.ids, tabled.bad) if tabled is not None else (frozenset(), {})
        bad: list[dict[str, Any]] = []
        for t in tasks:
            mine = by_task.get(t.task_id, [])
            worse = [r for r in mine if r.get("status") != "ok"]
            if not worse and t.task_id in worst_of:
                worse = [worst_of[t.task_id]]
            self.status[worse[0]["status"] if worse else ("ok" if mine or t.task_id in seen else "error")] += 1
            bad += worse[:1]
        first = rows[0].get("instance", "?") if rows else (tabled.first if tabled is not None else "?")
        self._line(tasks, first, bad)

    def _line(self, tasks: list[Task], first: str, bad: list[dict[str, Any]]) -> None:
        """The progress line after ``tasks`` (``first``: its first instance's name;
        ``bad``: the first row that is not ``ok`` of each instance with one)."""
        worst = bad[0]["status"] if bad else "ok"
        counts = " ".join(f"{k}={v}" for k, v in sorted(self.status.items()))
        task = tasks[0]
        what = first if len(tasks) == 1 else f"{len(tasks)} instances ({first}, ...)"
        name = f"{task.algorithm}[{task.variant}] {what}"
        elapsed = time.perf_counter() - self.start
        if self.tty:
            width = 30
            fill = int(width * self.done / max(self.total, 1))
            bar = "#" * fill + "-" * (width - fill)
            self.stream.write(f"\r[{bar}] {self.done}/{self.total} {counts} {elapsed:6.1f}s  {name[:50]:<50}")
            if self.done == self.total:
                self.stream.write("\n")
        else:
            extra = f" ({bad[0].get('error', '')[:120]})" if bad else ""
            more = f" [{len(bad)} not ok]" if len(bad) > 1 else ""
            self.stream.write(f"[{self.done}/{self.total}] {worst:<7} {name}{extra}{more}\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """A line of its own (on a terminal, over the bar, which the next update redraws)."""
        self.stream.write(f"\r{' ' * 120}\r{text}\n" if self.tty else f"{text}\n")
        self.stream.flush()


def resolve_run(run: dict[str, Any]) -> tuple[str, str]:
    """(run_id, date) for a sweep: the given ``run.id`` (where it already is, or today), or
    a new one.

    Raises
    ------
    ValueError
        For ``run.resume=true`` without ``run.id`` (which run to resume is never guessed:
        the newest one may be another sweep's; the message names it), and for an unsafe id.
    """
    from matchbench.results.store import ResultsError, check_run_id, find_run

    root = Path(run.get("results_dir", "runs"))
    if run.get("id") is not None:
        try:
            run_id = check_run_id(str(run["id"]))
        except ResultsError as exc:
            raise ValueError(str(exc)) from None
        found = find_run(root, run_id)
        if found is not None:
            return run_id, found.parent.name.split("=", 1)[1]
        return run_id, datetime.now(UTC).strftime("%Y-%m-%d")
    if run.get("resume"):
        last = latest_run(root)
        hint = f" (the newest run under {root} is {last.name.split('=', 1)[1]})" if last else ""
        raise ValueError(f"run.resume=true needs run.id=<the run to resume>{hint}")
    return new_run_id(), datetime.now(UTC).strftime("%Y-%m-%d")


def execute(plans: list[Plan], *, stream=None) -> dict[str, Any]:
    """Run every plan's tasks concurrently on one cluster; returns a summary.

    Rows are written per task as soon as it finishes (a crash of this process loses
    only tasks in flight); with ``run.resume`` the tasks already in the run are skipped.
    Ctrl-C ends the sweep with one line (what was kept, the resume command) and exit
    status 130, SIGTERM likewise with 143; the finished tasks' rows are already on
    disk. So does the loss of the
    Dask scheduler (it died, or the network to it did), with exit status
    ``EXIT_SCHEDULER_LOST`` (75): the tasks it took with it are not rows (not
    ``crashed``: nothing is known of them) and run on resume. A results folder that
    runs out of space ends it likewise, with ``EXIT_DISK_FULL`` (74). A cluster that
    cannot be started or reached at all is exit status 2, and so, before anything runs,
    is a ``run.id`` that already holds results without ``run.resume=true`` (nothing is
    ever replaced), ``run.resume=true`` without ``run.id``, and a run that another live
    sweep holds (its ``_lock`` file).
    """

    stream = stream or sys.stderr
    # Hydra configures the root logger at INFO; the cluster's chatter would bury the progress.
    for name in ("distributed", "dask_cuda", "bokeh", "tornado"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if not plans:
        raise ValueError("nothing to run: no jobs")
    run = plans[0].run
    cluster_cfg = plans[0].cluster
    from matchbench.runner.batch import parse_batch

    try:
        batch = parse_batch(run.get("batch"))
    except ValueError as exc:  # a sweep setting: one line before anything runs
        stream.write(f"matchbench: error: {exc}\n")
        stream.flush()
        raise SystemExit(2) from None
    from matchbench.runner.settings import check_plans

    problems = check_plans(plans)
    if problems:  # settings that cannot work: before any cluster starts, one line each
        for message in problems[:-1]:
            stream.write(f"matchbench: error: {message}\n")
        _refuse(stream, problems[-1])
    try:
        run_id, date = resolve_run(run)
    except ValueError as exc:
        _refuse(stream, str(exc))
    writer = RunWriter(run.get("results_dir", "runs"), run_id, date)
    if not run.get("resume") and writer.has_results():
        _refuse(
            stream,
            f"run.id={run_id} already holds results in {writer.dir}; add run.resume=true to "
            "continue that run, or give another run.id (nothing was replaced)",
        )
    from matchbench.results.store import RunLockedError

    try:
        with writer.lock():
            return _execute_run(plans, run, run_id, writer, batch, cluster_cfg, stream)
    except RunLockedError as exc:
        _refuse(stream, str(exc))


def _settings_changed(run_dir: Path, tasks: Any, planned: list[Task]) -> int:
    """How many of ``tasks`` (not done in the run) measure an (algorithm, variant, init,
    instance) the run already has rows of: the same work under other settings. A sweep
    that itself plans one such identity under several settings (a grid over repetitions)
    is not counted."""
    from collections import Counter

    from matchbench.datasets import instance_key
    from matchbench.results.store import read_results

    def ident(t: Task) -> tuple[str, str, str, str]:
        return (t.algorithm, t.variant or "", t.init or "", t.instance_key or instance_key(t.instance_spec))

    several = Counter(ident(t) for t in {t.task_id: t for t in planned}.values())

    try:
        have = read_results(run_dir)
    except Exception:  # noqa: BLE001 - unreadable files are set aside by done_tasks()
        return 0
    if have.empty or "instance_key" not in have:
        return 0
    known = set(
        zip(have["algorithm"], have["variant"].fillna(""), have["init"].fillna(""),
            have["instance_key"], strict=True)
    )
    return sum(ident(t) in known and several[ident(t)] == 1 for t in tasks)


def _execute_run(plans, run, run_id, writer, batch, cluster_cfg, stream) -> dict[str, Any]:
    """:func:`execute` once the run is chosen and locked."""
    from matchbench.runner.provenance import client_provenance

    common = {"run_id": run_id, **client_provenance()}
    done = writer.done_tasks() if run.get("resume") else set()
    for aside in getattr(writer, "damaged", []):
        stream.write(f"resume: {aside.name[len('_damaged-'):]} could not be read; set aside as "
                     f"{aside.name}, its task runs again\n")

    writer.write_manifest(
        {
            "run_id": run_id,
            "started": datetime.now(UTC).isoformat(),
            **common,
            "jobs": [{"job_index": p.job_index, "overrides": p.overrides, "config": p.config} for p in plans],
        }
    )

    summary: Counter[str] = Counter()
    finished: set[str] = set()

    def write(task_id: str, rows: list[dict[str, Any]], batch_of: list[str] | None = None,
              tables: list[Any] | None = None) -> None:
        """Write one task's rows, or (``batch_of``: its task ids) one batch's, whose rows
        may also come as Arrow tables (``tables``, the columnar path of a batch)."""
        finished.update(batch_of if batch_of is not None else [task_id])
        for r in rows:
            r.update(common)
            summary[r.get("status", "error")] += 1
        if tables:
            from matchbench.results.schema import with_constants

            tables = [with_constants(t, common) for t in tables]
            for t in tables:
                for status, count in _status_counts(t).items():
                    summary[status] += count
        if batch_of is not None:
            writer.write_batch(task_id, rows, tables)
        else:
            writer.write_task(task_id, rows)

    for p in plans:
        for i, row in enumerate(p.error_rows):
            write(f"job{p.job_index}-error{i}", [row])
    pairs = [pair for p in plans for pair in p.skipped_pairs]
    if pairs:
        kinds = sorted({(a, ap, ip) for a, ap, _, ip in pairs})
        shown = ", ".join(f"{a} ({ap}) x {ip} instances" for a, ap, ip in kinds[:4])
        more = f", and {len(kinds) - 4} more" if len(kinds) > 4 else ""
        stream.write(
            f"plan: left out {len(pairs)} solver x instance pair(s) of different problems: {shown}{more}\n"
        )

    inits = sorted({pair for p in plans for pair in p.skipped_inits})
    if inits:
        shown = ", ".join(f"{a} x {i}" for a, i in inits[:4])
        more = f", and {len(inits) - 4} more" if len(inits) > 4 else ""
        stream.write(
            f"plan: left out {len(inits)} solver x initializer pair(s) where the solver cannot "
            f"run a device initializer (CPU solvers start from a host one): {shown}{more}\n"
        )

    tasks: dict[str, Task] = {}
    for p in plans:
        for t in p.tasks:
            if t.task_id not in done:
                tasks.setdefault(t.task_id, t)
    if run.get("resume") and done and tasks:
        clash = _settings_changed(writer.dir, tasks.values(), [t for p in plans for t in p.tasks])
        if clash:
            _refuse(
                stream,
                f"resume: {clash} task(s) measure instances x solvers that run {run_id} already "
                "holds, with other settings (an override the first sweep did not have: "
                "repetitions, a time limit, an option); their rows would sit beside the old "
                "ones. Resume with the first sweep's overrides, or give a new run.id",
            )
    skipped_done = sum(1 for p in plans for t in p.tasks if t.task_id in done)
    if skipped_done:
        stream.write(f"resume: {skipped_done} task(s) already in run {run_id}, skipped\n")

    to_run = set(tasks)
    from matchbench.runner.cluster import ClusterError, SchedulerLost

    try:
        with _sigterm_as_interrupt():
            n_batches = _run_tasks(tasks, plans, cluster_cfg, run_id, write, stream, batch)
    except SchedulerLost as exc:  # as Ctrl-C: what was kept, and how to go on
        writer.write_manifest({"scheduler_lost": datetime.now(UTC).isoformat(), "failed": str(exc)})
        stream.write(
            f"\nmatchbench: {exc}: {len(finished & to_run)} of {len(to_run)} task(s) finished and "
            f"written to {writer.dir}; the others will run on resume (with a scheduler running):\n"
            f"  {resume_command(run_id)}\n"
        )
        stream.flush()
        raise SystemExit(EXIT_SCHEDULER_LOST) from None
    except ClusterError as exc:  # no cluster to run on: one line, not a traceback
        writer.write_manifest({"failed": str(exc)})
        stream.write(f"matchbench: error: {exc}\n")
        stream.flush()
        raise SystemExit(2) from None
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        # as Ctrl-C: the rows written so far stand, and the resume command finishes the run
        stream.write(
            f"\nmatchbench: no space left for the results ({exc.strerror}: {exc.filename or writer.dir}): "
            f"{len(finished & to_run)} of {len(to_run)} task(s) finished and written to "
            f"{writer.dir}; free some space, then resume:\n  {resume_command(run_id)}\n"
        )
        stream.flush()
        with contextlib.suppress(OSError):
            writer.write_manifest({"failed": f"disk full: {exc}"})
        raise SystemExit(EXIT_DISK_FULL) from None
    except KeyboardInterrupt as exc:
        term = isinstance(exc, Terminated)
        writer.write_manifest(
            {"interrupted": datetime.now(UTC).isoformat(), "signal": "SIGTERM" if term else "SIGINT"}
        )
        stream.write(
            f"\n{'terminated (SIGTERM)' if term else 'interrupted'}: {len(finished & to_run)} of "
            f"{len(to_run)} task(s) finished and written to {writer.dir}; the others will run on "
            f"resume:\n  {resume_command(run_id)}\n"
        )
        stream.flush()
        raise SystemExit(EXIT_TERMINATED if term else EXIT_INTERRUPTED) from None

    writer.write_manifest({"finished": datetime.now(UTC).isoformat()})
    out = {"run_id": run_id, "dir": str(writer.dir), "rows": dict(summary), "tasks": len(tasks)}
    if batch is not None:
        out["batches"] = n_batches
    out["experiments"] = sorted({p.config_experiment for p in plans if p.config_experiment})
    if run.get("report"):
        out["report"] = write_run_report(writer.dir, run_id, stream)
    return out


def _run_tasks(tasks, plans, cluster_cfg, run_id, write, stream, batch=None) -> int:
    """Submit the tasks to the cluster and write each one's rows as it finishes.

    Returns the number of batches (``run.batch``; 0 without). Raises
    :class:`~matchbench.runner.cluster.SchedulerLost` where the scheduler goes
    away: from a cancelled future, or from any client call made after it has gone.
    """
    from matchbench.runner.cluster import SchedulerLost, make_client, scheduler_lost

    if not tasks:
        return 0
    with make_client(cluster_cfg) as client:
        try:
            with _plan_frozen():
                return _sweep(client, cluster_cfg, tasks, plans, run_id, write, stream, batch)
        except SchedulerLost:
            raise
        except Exception as exc:  # a client call that failed because the scheduler went away
            if why := scheduler_lost(client, exc):
                raise SchedulerLost(why) from None
            raise


def _sweep(client, cluster_cfg, tasks, plans, run_id, write, stream, batch=None) -> int:
    """The sweep on a connected client: submit largest-first, write rows as they land.

    With ``batch`` (a :class:`~matchbench.runner.batch.BatchLimit`) the tasks go in
    batches (:func:`~matchbench.runner.batch.make_batches`), each one Dask task and one
    file. A batch whose worker died (after ``cluster.allowed_failures`` retries) is not
    written as ``crashed`` rows at once: its instances run again one task each, with
    retries of their own, so that only the instance that kills its worker is ``crashed``.
    Returns the number of batches.
    """
    from distributed import as_completed

    from matchbench.runner.batch import batch_id, make_batches, plan_batch_keys
    from matchbench.runner.cluster import (
        cpu_workers,
        dashboard_line,
        gpu_workers,
        task_resources,
        worker_count,
    )

    warming = _warm_in_background(client, tasks)
    n_gpu = gpu_workers(client)
    n_cpu = cpu_workers(client)
    n_workers = worker_count(client)
    keys = instance_keys(tasks)
    sizes = size_hints(tasks, keys)
    order = submission_order(tasks, sizes, keys)
    # A unit is what one Dask task runs: (file name, member task ids, batched).
    if batch is None:
        units = [(tid, [tid], False) for tid in order]
    else:
        groups = make_batches(order, tasks, batch, sizes, {"gpu": n_gpu, "cpu": n_cpu or n_workers},
                              plan_batch_keys(plans, tasks))
        units = [(batch_id(ids), ids, True) for ids in groups]
    per = f" in {len(units)} batch(es) of at most {batch}" if batch is not None else ""
    stream.write(f"matchbench run {run_id}: {len(tasks)} task(s){per} from {len(plans)} job(s)\n")
    stream.write(dashboard_line(client, cluster_cfg) + "\n")
    stream.flush()
    stream.write(f"cluster: {n_workers} worker(s), {n_gpu} offering GPU=1, {n_cpu} offering CPU=1\n")
    families = sorted({f for t in tasks.values() for f in t.kernel_families})
    if families and n_gpu:
        client.register_plugin(PrecompileKernels(families))
    if not n_gpu:
        no_gpu = [u for u in units if tasks[u[1][0]].device == "gpu"]
        if no_gpu:
            names = sorted({tasks[u[1][0]].algorithm for u in no_gpu})
            count = sum(len(u[1]) for u in no_gpu)
            why = ("no worker of this cluster offers the resource GPU=1 (no GPU visible, "
                   "or use cluster=local_cuda, or start workers with --resources GPU=1)")
            stream.write(f"skipped {count} GPU task(s) ({', '.join(names)}): {why}\n")
            for name, ids, batched in no_gpu:
                rows = [error_row(task_base(tasks[tid]), f"GPU task but {why}", status="skipped") for tid in ids]
                if batched:
                    for r in rows:
                        r["batch_id"] = name
                write(name, rows, ids if batched else None)
            units = [u for u in units if tasks[u[1][0]].device != "gpu"]
    progress = Progress(sum(len(ids) for _, ids, _ in units), stream)
    # The units' order is the schedule (see submission_order): each unit's priority is
    # minus its rank. With none, Dask gives every submission of one fifo_timeout window
    # (60 ms) the same priority, and a worker holding several ran them last in, first out
    # (a 10-batch sweep ran batch 0, then 9, 8, ..., 1): smallest first where sizes differ.
    # A unit submitted again later (a dead worker's batch, one task per instance) has
    # rank 0: it runs before the units still waiting.
    from matchbench.runner.batch import Packer
    from matchbench.runner.child import run_batch, run_task

    if warming is not None:
        warming.join(timeout=20)  # an optimization: never a reason to wait long
    warm = (_warm_instances(client, [[tasks[tid] for tid in ids] for _, ids, _ in units], n_gpu, n_cpu, stream)
            if n_gpu and n_cpu else {})  # (the units' tasks, a million lookups, only where needed)
    futures: dict[Any, tuple[str, list[str], bool]] = {}
    packer = Packer(plans, tasks) if batch is not None else None

    def submit(unit: tuple[str, list[str], bool], after: list[Any], rank: int = 0) -> Any:
        name, ids, batched = unit
        t = tasks[ids[0]]
        payload: Any
        if batched:
            payload = packer.batch(name, ids).sealed()
            fn, key = run_batch, f"{t.algorithm}-batch-{name}"
        else:
            payload, fn, key = t, run_task, f"{t.algorithm}-{name}"
        fut = client.submit(fn, payload, *after, pure=False, key=key, priority=-rank,
                            resources=task_resources(t.device, n_cpu))
        futures[fut] = unit
        return fut

    for i, unit in enumerate(units):
        submit(unit, warm.get(i, []), i)
    queue = as_completed(list(futures))
    _collect(queue, futures, tasks, progress, write, client, submit)
    return len(units) if batch is not None else 0


@contextlib.contextmanager
def _plan_frozen() -> Iterator[None]:
    """The plan's objects (a Task and its dicts per instance: millions in a large sweep)
    out of the cycle collector's sight while the sweep is ordered, submitted and its
    results come in (``gc.freeze``): its full passes over them cost the client more than
    the batches' rows (with 300,000 tasks planned, packing a batch of 10,000 took 49 ms
    with the collector watching them and 22 ms without). Reference counting still frees
    everything; what the sweep makes later is collected as usual."""
    import gc

    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class _Writes:
    """``write(...)`` calls made in order on a thread of their own, so that the client
    takes in the next results while Parquet is written (pyarrow writes without the GIL;
    a batch of 10,000 rows took about 27 ms of the client's 46 on an H100's host).

    At most ``depth`` calls wait. The first exception of a write (a full disk) is raised
    in the caller's thread, at its next call or at :meth:`close`, and nothing after it is
    written; :meth:`close` waits for every earlier write, also when the caller is on its
    way out with an exception of its own (an interrupt): what was handed over is on disk
    before the sweep says what it kept.
    """

    def __init__(self, write: Any, depth: int = 2) -> None:
        import queue as queue_mod
        import threading

        self._write, self._error, self._failed = write, None, False
        self._queue: Any = queue_mod.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._run, name="matchbench-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if not self._failed:
                try:
                    self._write(*item)
                except BaseException as exc:  # raised again in the caller's thread
                    self._error, self._failed = exc, True

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def __call__(self, *args: Any) -> None:
        self._raise()
        self._queue.put(args)

    def close(self, quiet: bool = False) -> None:
        """Wait for the writes handed over; raise the first error unless ``quiet``."""
        self._queue.put(None)
        self._thread.join()
        if not quiet:
            self._raise()


def _collect(queue, futures, tasks, progress, write, client, submit) -> None:
    """:func:`_sweep`'s loop over the finished units: their rows written as they land,
    on a thread of their own (:class:`_Writes`)."""
    writes = _Writes(write)
    try:
        _collect_into(queue, futures, tasks, progress, writes, client, submit)
    except BaseException:
        writes.close(quiet=True)
        raise
    writes.close()


def _collect_into(queue, futures, tasks, progress, write, client, submit) -> None:
    from matchbench.runner.batch import opened
    from matchbench.runner.cluster import SchedulerLost, scheduler_lost

    for fut in queue:
        name, ids, batched = futures.pop(fut)
        members = [tasks[tid] for tid in ids]
        try:
            result = fut.result()
        except Exception as exc:  # the worker itself died, or the scheduler did
            if why := scheduler_lost(client, exc):
                raise SchedulerLost(why) from None
            if batched and len(ids) > 1:
                progress.note(
                    f"batch {name} ({members[0].algorithm}, {len(ids)} instances): its worker died "
                    f"({type(exc).__name__}); its instances run again, one task each"
                )
                for tid in ids:
                    queue.add(submit((tid, [tid], False), []))
                fut.release()
                continue
            result = [error_row(task_base(t), exc, status="crashed", stage="worker") for t in members]
            if batched:
                result = {"rows": [dict(r, batch_id=name) for r in result], "notes": []}
        if batched:
            rows = list(result["rows"])
            # sealed by the task process (opened here, not on the worker); a stack's come
            # compact (CompactTable)
            tables = opened(list(result.get("tables") or []))
            for text in result.get("notes", []):
                progress.note(f"batch {name} ({members[0].algorithm}): {text}")
            tabled = _table_outcomes(tables)
            have = tabled.ids | {r.get("task_id") for r in rows}
            if not have.issuperset(ids):  # (a C-level check: a batch of 10,000 has them all)
                for t in members:
                    if t.task_id not in have:
                        rows.append(dict(error_row(task_base(t), "task produced no rows", status="error"),
                                         batch_id=name))
            write(name, rows, ids, tables)
            progress.update_batch(members, rows, tabled)
        else:
            rows = result or [error_row(task_base(members[0]), "task produced no rows", status="error")]
            write(name, rows)
            progress.update_batch(members, rows)
        # Done with it: a worker that dies later must not make the scheduler recompute
        # a result that is already on disk.
        fut.release()


def _status_counts(table: Any) -> dict[str, int]:
    """Rows of ``table`` (a table, or a :class:`CompactTable`) per ``status``."""
    import pyarrow.compute as pc

    counts = pc.value_counts(table.column("status").fill_null("error")).to_pylist()
    return {c["values"]: int(c["counts"]) for c in counts}


@dataclass
class TableOutcomes:
    """What the progress line and the check for instances without rows need of a batch's
    rows that came as tables, without a dict per row: the task ids with rows, the first
    row that is not ``ok`` of each task that has one (``status``, ``error``,
    ``instance``), and the first row's instance."""

    ids: set[str]
    bad: dict[str, dict[str, Any]]
    first: str = "?"


def _table_outcomes(tables: list[Any]) -> TableOutcomes:
    """:class:`TableOutcomes` of the rows in ``tables``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = TableOutcomes(set(), {})
    for table in tables:
        if table.num_rows == 0:
            continue
        if out.first == "?":
            out.first = table.column("instance")[0].as_py() or "?"
        out.ids.update(pc.unique(table.column("task_id")).to_pylist())
        not_ok = pc.fill_null(pc.not_equal(table.column("status"), pa.scalar("ok")), True)
        if not pc.any(not_ok).as_py():
            continue
        if isinstance(table, CompactTable):
            table = table.full()
        for r in table.filter(not_ok).select(["task_id", "status", "error", "instance"]).to_pylist():
            if r["task_id"] not in out.bad:
                out.bad[r["task_id"]] = {"status": r["status"] or "error", "error": r["error"] or "",
                                         "instance": r["instance"]}
    return out


def _file_size(path: Path) -> float | None:
    try:
        return float(path.stat().st_size)
    except OSError:
        return None


def instance_size_hint(spec: Mapping[str, Any], data_dir: str | os.PathLike | None = None) -> float:
    """A guess of an instance's size in bytes, made without generating or reading it.

    Parameters
    ----------
    spec : dict
        An instance spec (one item of :func:`matchbench.datasets.expand`).
    data_dir : path, optional
        Where the disk cache and relative dataset files are (as for ``load``).

    Returns
    -------
    float
        The first that applies: the size of the instance's disk-cache file when it exists
        (not for a dataset function with a bulk hook, whose instances are made in bulk,
        never read from the cache; its declared size comes first instead, also before a
        ``path``: one matrix of a stack file);
        for a spec with a ``path``, that file's size (0 when it is missing); else the
        estimate its dataset function declares from the spec's arguments
        (:func:`matchbench.datasets.spec_size_hint`, the ``size_hint`` of its
        ``@dataset`` tag); else 0 (unknown).

    Notes
    -----
    Only the order of instances matters to the runner, not the value.
    """
    from matchbench.datasets import disk_cache_path, resolve_path, spec_size_hint

    # A generator with a bulk hook is made in bulk, never read from the cache (run.batch):
    # its estimate is what the task holds, and looking for its file costs a hash per task.
    # Its declared size, too, is what the task holds, where a path names a file of many.
    bulk = _bulk_made(spec.get("_target_"))
    cached = None if bulk else disk_cache_path(spec, data_dir)
    if cached is not None and (size := _file_size(cached)) is not None:
        return size
    if bulk and (hint := spec_size_hint(spec)) is not None:
        return hint
    if spec.get("path") is not None:
        return _file_size(resolve_path(spec["path"], data_dir)) or 0.0
    return spec_size_hint(spec) or 0.0


_BULK: dict[str, bool] = {}


def _bulk_made(target: Any) -> bool:
    """Whether the dataset function ``target`` has a bulk hook (``matchbench_bulk``, see
    :func:`~matchbench.runner.task.bulk_instances`); remembered per target."""
    if not isinstance(target, str):
        return False
    if target not in _BULK:
        from hydra.utils import get_method

        try:
            _BULK[target] = callable(getattr(get_method(target), "matchbench_bulk", None))
        except Exception:  # an unknown target: its task's row says so
            _BULK[target] = False
    return _BULK[target]


def instance_keys(tasks: Mapping[str, Task]) -> dict[str, str]:
    """Task id -> :func:`~matchbench.datasets.instance_key` of its instance."""
    from matchbench.datasets import instance_key

    return {tid: t.instance_key or instance_key(t.instance_spec) for tid, t in tasks.items()}


def size_hints(tasks: Mapping[str, Task], keys: Mapping[str, str] | None = None) -> dict[str, float]:
    """Task id -> :func:`instance_size_hint` of its instance (once per instance).
    ``keys``: :func:`instance_keys` of ``tasks``, when already computed."""
    keys = keys if keys is not None else instance_keys(tasks)
    by_key: dict[str, float] = {}
    out: dict[str, float] = {}
    # The last spec asked, where its size is its declared hint alone (a generator made in
    # bulk, never read from the disk cache): the next specs that agree with it on what
    # that hint reads (a many: set's specs differ in their seeds) have its size, without
    # the whole lookup per spec (3.8 us a task, 3.8 s of a million-task plan on 2 cores).
    last: tuple[Mapping[str, Any], tuple[str, ...], float, Any] | None = None
    for tid, t in tasks.items():
        key = keys[tid]
        size = by_key.get(key)
        if size is None:
            spec = t.instance_spec
            if last is not None and t.data_dir == last[3] and _agree(spec, last[0], last[1]):
                size = last[2]
            else:
                size = instance_size_hint(spec, t.data_dir)
                reads = _declared_only(spec)
                last = (spec, reads, size, t.data_dir) if reads is not None else None
            by_key[key] = size
        out[tid] = size
    return out


def _declared_only(spec: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The keys :func:`instance_size_hint`'s value depends on where it is the declared hint
    alone: a generator with a bulk hook (no disk-cache file is read) and a hint that names
    its arguments (``**_``); ``path`` too, for a hint that gives nothing. None otherwise."""
    from matchbench.datasets.registry import size_hint_reads

    if not _bulk_made(spec.get("_target_")):
        return None
    reads = size_hint_reads(spec)
    return None if reads is None else (*reads, "path")


def _agree(spec: Mapping[str, Any], other: Mapping[str, Any], names: tuple[str, ...]) -> bool:
    """Whether two specs hold the same value, of the same type, under each of ``names``
    (False where a comparison fails or is no truth value)."""
    try:
        for k in names:
            a, b = spec.get(k, _MISSING), other.get(k, _MISSING)
            if a is not b and (type(a) is not type(b) or bool(a != b)):
                return False
    except Exception:  # noqa: BLE001 - an array-like value: asked for on its own
        return False
    return True


_MISSING = object()


def submission_order(
    tasks: Mapping[str, Task], sizes: Mapping[str, float] | None = None, keys: Mapping[str, str] | None = None
) -> list[str]:
    """The task ids in the order to submit them: instances from the largest down.

    Tasks of one instance stay back to back, so that each worker's instance cache hits
    instead of regenerating or re-reading a large graph per algorithm; instances are
    ordered by :func:`instance_size_hint`, largest first, then in the order ``tasks``
    first names them, and a group keeps the order of ``tasks``. The long tasks then
    start first and the short ones fill the end of the sweep, instead of one big
    instance running alone at the end. Instances of unknown size (hint 0) come last.
    ``sizes`` and ``keys``: :func:`size_hints` and :func:`instance_keys` of ``tasks``,
    when already computed.

    Notes
    -----
    Equal sizes keep the plan's order (a ``many:`` set's instances, all of one size, in
    their seeds' order) rather than a hash's: the client then reads its tasks in the
    order they lie in memory while it batches and packs them. Ordered by instance key,
    a million-task sweep's client took 2-4x longer to cut and pack its batches
    (cache misses on every task).
    """
    import numpy as np

    keys = keys if keys is not None else instance_keys(tasks)
    size = sizes if sizes is not None else size_hints(tasks, keys)
    ids = list(tasks)
    first: dict[str, int] = {}
    for i, tid in enumerate(ids):
        first.setdefault(keys[tid], i)
    rank = np.fromiter((first[keys[tid]] for tid in ids), dtype=np.int64, count=len(ids))
    neg = np.fromiter((-float(size[tid]) for tid in ids), dtype=np.float64, count=len(ids))
    # lexsort is stable: the last key first (size), then the instance's first position,
    # then the given order
    return [ids[i] for i in np.lexsort((rank, neg)).tolist()]


def resume_command(run_id: str) -> str:
    """The command line of this process with ``run.resume=true run.id=<run_id>`` added."""
    import shlex

    args = [a for a in sys.argv[1:] if not a.startswith(("run.resume=", "run.id="))]
    return " ".join(["matchbench", *map(shlex.quote, args), "run.resume=true", f"run.id={run_id}"])


def _warm_instances(
    client, units: list[list[Task]], n_gpu: int, n_cpu: int, stream
) -> dict[int, list[Any]]:
    """Generate the GPU tasks' missing disk-cached instances on the CPU workers first.

    Without it the GPU worker makes every large generated graph itself, one after the
    other, between its solves. ``units``: the tasks of each Dask task to be submitted
    (one, or a batch's). Returns ``{unit index: [future, ...]}``: a GPU task submitted
    with its instances' futures waits for them (and then reads the files). The instances
    one unit lacks are made by one generation task (not one per instance: a batch of
    small instances would pay a round trip each); a batch's instances that its dataset
    function makes in bulk (``matchbench_bulk``) are left to the batch. Only where the
    cluster has both GPU and CPU workers.
    """
    from matchbench.datasets import disk_cache_path

    if not (n_gpu and n_cpu):
        return {}
    made: dict[str, Any] = {}
    out: dict[int, list[Any]] = {}
    for i, unit in enumerate(units):
        if unit[0].device != "gpu":
            continue
        need: list[Any] = []
        missing: dict[str, tuple[str, dict[str, Any], Any]] = {}
        for t in unit:
            # A batch makes these itself, in bulk, and never reads the cache: generating
            # them into it first only makes the GPU task wait for a CPU worker.
            if len(unit) > 1 and _bulk_made(t.instance_spec.get("_target_")):
                continue
            path = disk_cache_path(t.instance_spec, t.data_dir)
            if path is None or (str(path) not in made and path.exists()):
                continue
            if str(path) in made:
                need.append(made[str(path)])
            else:
                missing.setdefault(str(path), (str(path), t.instance_spec, t.data_dir))
        if missing:
            todo = list(missing.values())
            fut = client.submit(
                warm_disk_caches, [(spec, data_dir) for _, spec, data_dir in todo], pure=False,
                key=f"generate-{Path(todo[0][0]).stem}-{len(todo)}", resources={"CPU": 1}, priority=10,
            )
            for path, _, _ in todo:
                made[path] = fut
            need.append(fut)
        if need:
            out[i] = list({id(f): f for f in need}.values())
    if made:
        stream.write(f"generating {len(made)} instance(s) for the GPU tasks on the CPU workers\n")
    return out


def warm_disk_caches(specs: list[tuple[dict[str, Any], Any]]) -> list[str | None]:
    """:func:`matchbench.datasets.warm_disk_cache` of each ``(spec, data_dir)``, in turn."""
    from matchbench.datasets import warm_disk_cache

    return [warm_disk_cache(spec, data_dir) for spec, data_dir in specs]


def write_run_report(run_dir: Path, run_id: str, stream) -> str | None:
    """The comparison report of one run, as ``<run dir>/_report.html`` (``run.report=true``).

    The leading ``_`` keeps it out of Parquet dataset readers (``pandas.read_parquet(
    "runs")``, DuckDB's glob). A failure to draw it is a message, not a lost run: the rows
    are already written.
    """
    from matchbench.report.build import build_report
    from matchbench.results.compare import normalize
    from matchbench.results.store import read_results

    path = Path(run_dir) / "_report.html"
    try:
        frame = normalize(read_results(run_dir))
        path.write_text(build_report(frame, title=f"matchbench run {run_id}", source=str(run_dir)), encoding="utf-8")
    except Exception as exc:  # noqa: BLE001 - reported, the run's rows stand
        stream.write(f"report: could not be written ({type(exc).__name__}: {exc})\n")
        return None
    return str(path)
