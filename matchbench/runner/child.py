"""Task isolation: each worker runs its tasks in one long-lived child process.

The child keeps its caches (loaded instances, compiled kernels, the CUDA context) from
task to task, and can be killed: a task over its ``timeout_s`` or a crashed child
(segfault, host OOM kill) becomes a row, the worker starts a fresh child, and the sweep
goes on. The child is a plain ``subprocess`` (not ``multiprocessing``), so it also works
inside daemonic Dask worker processes; it inherits ``CUDA_VISIBLE_DEVICES`` from its
worker, hence the worker's GPU.

Protocol over a socket pair (pickled messages): the parent sends ``("task", task)`` (a
:class:`~matchbench.runner.plan.Task`), ``("batch", batch)`` (a
:class:`~matchbench.runner.batch.Batch`) or ``("precompile", families)``; the child answers with
``("loaded", base)`` once the instance is in memory, ``("start", repetition)`` as each
repetition starts and ``("row", row)`` as it ends, then ``("done", None)``, or
``("fail", message)``. A batch (``run.batch``) adds ``("item", i)``, ``("joint", [i,
...])``, ``("finished", (i, seconds))`` and ``("note", text)``: see
:func:`matchbench.runner.task.execute_batch`. Sent as ``("batch", batch, True)``, a
batch may answer with its rows as Arrow tables instead, ``("chunk", (tables, [i,
...]))`` for a group of instances at once (the columnar path,
:func:`matchbench.runner.task.columnar_batch`); the child sends the tables
:class:`~matchbench.runner.batch.Sealed` (pickled there, once), and the worker hands them
on as they are to the client, which opens them. A
:meth:`sealed <matchbench.runner.batch.Batch.sealed>` batch likewise reaches the child as
the bytes the client made: the worker reads only its first task and its length.
``("warm", {"modules": [...], "problems": [...]})`` imports and warms up what the
sweep's tasks need before the first one (:func:`warm_up`, sent by the sweep's worker
plugin while the client plans).

The child never outlives its worker: on Linux the kernel kills it when the worker dies
(``PR_SET_PDEATHSIG``, set as the child starts, then a check that the worker is still its
parent, for a worker that died in between); elsewhere a watchdog thread exits once the
child has been re-parented. A worker that exits normally kills its child (``atexit``).
Without this a child busy in a long numba loop kept computing after its worker was
killed or the sweep was interrupted.

Two limits, both enforced here by killing the child: ``timeout_s`` (``run.task_timeout_s``)
bounds the whole task, and ``time_limit_s`` (``algorithm.time_limit_s``, optional) each
repetition, from its ``start``. A killed task's row says which limit it hit and carries
it in ``time_limit_s`` (a report prints such a cell as "> T s"). Without isolation
(``run.isolate=false``) neither limit can be enforced.

In a batch both limits apply per instance, from its ``item`` message: a killed instance
gets its ``timeout`` (or ``crashed``) row, and a fresh child goes on with the instances
that have no rows yet. A joint solve of ``n`` instances (a ``batchable`` solver) gets
``n`` times each limit; a joint solve that is killed or crashes is not a row: a fresh child
solves its instances one by one, each under its own limits.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matchbench.runner.batch import Sealed
from matchbench.runner.task import Row, error_row, execute_batch, execute_task, task_base

if TYPE_CHECKING:
    from matchbench.runner.batch import Batch
    from matchbench.runner.plan import Task


class TaskTimeout(Exception):
    pass


def _signal_name(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (killed: likely out of host memory)" if -code == signal.SIGKILL else ""
        return f"{name}{hint}"
    return f"exit code {code}"


#: The ``matchbench`` package folder the sweep runs, for the child to check its own.
PACKAGE_ENV = "MATCHBENCH_PACKAGE_DIR"


def _package_dir() -> str:
    import matchbench

    return str(Path(matchbench.__file__).resolve().parent)


def check_package() -> None:
    """Exit with a message when this process imported another matchbench than its parent."""
    expected = os.environ.get(PACKAGE_ENV)
    if expected and expected != _package_dir():
        sys.stderr.write(
            f"matchbench task process: imported {_package_dir()}, not the sweep's {expected}\n"
        )
        raise SystemExit(3)


#: Share of its Dask worker's memory limit a task process may use (``task_memory_limit:
#: auto``): the worker itself, its Python objects and the rows it holds need the rest.
MEMORY_SHARE = 0.8
#: How often the task process's resident memory is read while a task runs (seconds).
MEMORY_POLL_S = 0.05


class TaskMemoryExceeded(Exception):
    """The task process went over its memory limit and was killed."""

    def __init__(self, used: int, limit: int) -> None:
        super().__init__(used, limit)
        self.used, self.limit = used, limit

    def message(self) -> str:
        from matchbench.core.limits import human

        return (
            f"out of memory: the task process used {human(self.used)}, over its limit of "
            f"{human(self.limit)} (run.task_memory_limit), and was killed"
        )


def memory_limit_bytes(setting: Any) -> int | None:
    """The task process's limit for ``run.task_memory_limit``: bytes or a size as given;
    ``auto``: :data:`MEMORY_SHARE` of this Dask worker's memory limit (none outside a
    worker, or for a worker without one); None or 0: no limit."""
    if setting in (None, 0, "0"):
        return None
    if setting != "auto":
        from matchbench.core.limits import parse_bytes

        return parse_bytes(setting, "run.task_memory_limit")
    try:
        from distributed import get_worker

        limit = get_worker().memory_manager.memory_limit
    except Exception:  # not in a worker
        return None
    return int(limit * MEMORY_SHARE) if limit else None


def _rss(pid: int) -> int:
    """Resident bytes of process ``pid`` (Linux ``/proc``; 0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class TaskProcess:
    """The child process of one worker (created on first use, replaced after a failure)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()
        self._base: Row | None = None  # identity columns of the task in flight
        self.memory_limit: int | None = None  # bytes, for the task in flight

    def _start(self) -> None:
        parent, child = socket.socketpair()
        env = dict(os.environ)
        # The child imports exactly the matchbench this process runs: ``-P`` keeps the
        # working directory (which may hold a ``matchbench/`` folder of its own) off its
        # path, which is this process's path, and the child checks the package it got
        # against PACKAGE_ENV (the rows' provenance is computed from it).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env[PACKAGE_ENV] = _package_dir()
        self._proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "matchbench.runner.child", str(child.fileno()), str(os.getpid())],
            pass_fds=(child.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
        )
        child.close()
        self._conn = Connection(parent.detach())

    def _wait(self, seconds: float) -> bool:
        """``conn.poll(seconds)``, watching the child's memory meanwhile.

        Raises
        ------
        TaskMemoryExceeded
            When the child's resident memory passes :attr:`memory_limit` (it is killed).
        """
        if not self.memory_limit or self._proc is None:
            return self._conn.poll(seconds)
        end = time.perf_counter() + seconds
        while True:
            used = _rss(self._proc.pid)
            if used > self.memory_limit:
                self._kill()
                raise TaskMemoryExceeded(used, self.memory_limit)
            left = end - time.perf_counter()
            if self._conn.poll(max(0.0, min(left, MEMORY_POLL_S))):
                return True
            if left <= 0:
                return False

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def close(self) -> None:
        with self._lock:
            self._kill()

    def precompile(self, families: list[str], timeout: float = 600) -> None:
        with self._lock:
            if self._proc is None:
                self._start()
            self._conn.send(("precompile", list(families)))
            if self._conn.poll(timeout):
                self._conn.recv()

    def warm(self, modules: list[str], problems: list[str], timeout: float = 120, device: str = "cpu") -> None:
        """Start the child, if it is not running, and have it import ``modules`` and the
        families ``problems`` (:func:`warm_up`) before its first task: what a sweep's
        first task would otherwise spend on imports, done while the client plans.
        ``device``: the worker's (``"gpu"`` also warms the certificates' GPU code)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._kill()
                self._start()
            self._conn.send(("warm", {"modules": list(modules), "problems": list(problems), "device": device}))
            if self._conn.poll(timeout):
                self._conn.recv()

    def run(self, task: Task) -> list[Row]:
        """Run ``task`` in the child; rows of a timeout or crash are included."""
        with self._lock:
            return self._run(task)

    def run_batch(
        self, batch: Batch, tables: list[Any] | None = None, sealed: bool = False
    ) -> tuple[list[Row], list[str]]:
        """Run a batch in the child: rows of every instance (timeouts and crashes included)
        and notes for the sweep's log. ``tables``: a list to receive the rows the child
        sends as Arrow tables (the columnar path of
        :func:`~matchbench.runner.task.execute_batch`), as the child sealed them
        (:class:`~matchbench.runner.batch.Sealed`) with ``sealed``, else opened; without
        it, every row is a dict."""
        with self._lock:
            return self._run_batch(batch, tables, sealed)

    def _run_batch(
        self, batch: Batch, tables: list[Any] | None = None, sealed: bool = False
    ) -> tuple[list[Row], list[str]]:
        # the tasks stay columns (batch.tasks, a Task per instance, only for a failure's
        # row), and a sealed batch stays bytes until its ids are needed (rows as dicts, a
        # failure): the first try hands the bytes to the child as they came
        first = batch.first if len(batch) else None
        known: list[Any] = []

        def ids() -> list[str]:
            if not known:
                known.append(batch.task_ids)
            return known[0]
        timeout = float(first.timeout_s) if first is not None else 600.0
        limit = first.time_limit_s if first is not None else None
        rows: list[Row] = []
        notes: list[str] = []
        # instances without rows yet, in order; a dict, as each is removed by its number
        # (a list's remove() shifted the rest: 0.1-0.2 s for a chunk of 10,000)
        pending = dict.fromkeys(range(len(batch)))
        joint = bool(batch.joint)
        bases: dict[int, Row] = {}
        # rows by task id: "finished" must not scan every row (quadratic in the batch)
        by_tid: dict[Any, list[Row]] = {}
        while pending:
            index = list(pending)  # the child's numbering -> ours
            current: int | None = None
            together: list[int] | None = None  # in a joint solve of these
            mark = len(rows)  # rows before the joint solve's
            started = time.perf_counter()
            deadline, rep_deadline = started + timeout, float("inf")
            rep: int | None = None
            if self._proc is None or self._proc.poll() is not None:
                self._kill()
                self._start()
            self.memory_limit = memory_limit_bytes(first.memory_limit) if first is not None else None
            oom: TaskMemoryExceeded | None = None
            try:
                part = batch.subset(index, joint)
                self._conn.send(("batch", part, tables is not None))
                while True:
                    left = min(deadline, rep_deadline) - time.perf_counter()
                    try:
                        ready = self._wait(left) if left > 0 else False
                    except TaskMemoryExceeded as exc:
                        oom = exc
                        raise EOFError from None
                    if not ready:
                        raise TaskTimeout
                    kind, payload = self._conn.recv()
                    now = time.perf_counter()
                    if kind == "row":
                        rows.append(payload)
                        by_tid.setdefault(payload.get("task_id"), []).append(payload)
                        rep_deadline = float("inf")
                    elif kind == "chunk":  # the rows of these instances, as tables
                        table, done_items = payload  # Sealed tables (the child's _serve)
                        if tables is not None:
                            if isinstance(table, Sealed) and sealed:
                                tables.append(table)  # the client opens it (batch.opened)
                            else:
                                if isinstance(table, Sealed):
                                    table = table.open()
                                tables.extend(table if isinstance(table, list) else [table])
                        for j in done_items:
                            del pending[index[j]]
                        rep_deadline = float("inf")
                    elif kind == "start":
                        rep = int(payload)
                        if limit is not None:
                            rep_deadline = now + float(limit) * (len(together) if together else 1)
                    elif kind == "item":
                        current, together, rep = index[payload], None, None
                        started, deadline, rep_deadline = now, now + timeout, float("inf")
                    elif kind == "joint":
                        current, together, rep = None, [index[j] for j in payload], None
                        mark = len(rows)
                        deadline, rep_deadline = now + timeout * len(together), float("inf")
                    elif kind == "loaded":
                        if current is not None:
                            bases[current] = payload
                    elif kind == "finished":
                        i, seconds = index[payload[0]], float(payload[1])
                        for r in by_tid.get(ids()[i], ()):
                            r["t_total_s"] = seconds
                        del pending[i]
                    elif kind == "note":
                        notes.append(str(payload))
                    elif kind == "done":
                        break
                    else:  # "fail": an error outside execute_batch's own handling
                        for i in pending:
                            rows.append(dict(error_row(task_base(batch.tasks[i]), payload, status="error"),
                                             batch_id=batch.batch_id))
                        pending.clear()
                        break
                for i in list(pending):  # cannot happen: a child that forgot an instance
                    rows.append(dict(error_row(task_base(batch.tasks[i]), "batch produced no rows for it"),
                                     batch_id=batch.batch_id))
                    del pending[i]
            except (TaskTimeout, EOFError, OSError, ConnectionError) as exc:
                timed_out = isinstance(exc, TaskTimeout)
                code = None
                if not timed_out and self._proc is not None:
                    code = self._proc.wait(timeout=30)
                self._kill()
                if together is not None:  # the joint solve: solve its instances one by one
                    joint = False
                    again = {ids()[i] for i in pending}
                    rows[mark:] = [r for r in rows[mark:] if r.get("task_id") not in again]
                    for tid in again:
                        by_tid.pop(tid, None)
                    what = (f"exceeded its limits ({timeout:g} s per instance)" if timed_out
                            else oom.message() if oom is not None
                            else f"lost its task process ({_signal_name(code)})")
                    notes.append(f"the joint solve of {len(together)} instance(s) {what}; "
                                 "they were solved one by one")
                    continue
                i = current if current is not None else next(iter(pending))
                tid = ids()[i]
                done = list(by_tid.get(tid, ()))
                if timed_out and rep_deadline <= deadline:
                    what = "warm-up" if rep is not None and rep < 0 else f"repetition {rep}"
                    msg, hit = f"{what} exceeded time_limit_s={float(limit):g} s and was killed", float(limit)
                    status = "timeout"
                elif timed_out:
                    msg, hit = f"task exceeded timeout_s={timeout:g} s and was killed", timeout
                    status = "timeout"
                elif oom is not None:
                    msg, hit, status = oom.message(), None, "oom"
                else:
                    msg, hit, status = f"task process died: {_signal_name(code)}", None, "crashed"
                row = _after(done, batch.tasks[i], msg, status, bases.get(i))
                if hit is not None:
                    row["time_limit_s"] = hit
                    if rep is not None:
                        row["repetition"] = rep
                row["batch_id"] = batch.batch_id
                rows.append(row)
                seconds = time.perf_counter() - started
                by_tid.setdefault(tid, []).append(row)
                for r in by_tid[tid]:
                    r["t_total_s"] = seconds
                del pending[i]
        return rows, notes

    def _run(self, task: Task) -> list[Row]:
        timeout = float(task.timeout_s)
        limit = task.time_limit_s
        rows: list[Row] = []
        self._base = None
        start = time.perf_counter()
        task_deadline = start + timeout
        rep_deadline = float("inf")  # set while a repetition runs under time_limit_s
        rep: int | None = None
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            self._start()
        self.memory_limit = memory_limit_bytes(task.memory_limit)
        try:
            self._conn.send(("task", task))
            while True:
                left = min(task_deadline, rep_deadline) - time.perf_counter()
                if left <= 0 or not self._wait(left):
                    raise TaskTimeout
                kind, payload = self._conn.recv()
                if kind == "row":
                    rows.append(payload)
                    rep_deadline = float("inf")
                elif kind == "start":
                    rep = int(payload)
                    if limit is not None:
                        rep_deadline = time.perf_counter() + float(limit)
                elif kind == "loaded":
                    self._base = payload
                elif kind == "done":
                    break
                else:  # "fail": an error outside execute_task's own handling
                    rows.append(error_row(task_base(task), payload, status="error"))
                    break
        except TaskTimeout:
            self._kill()
            if rep_deadline <= task_deadline:
                what = "warm-up" if rep is not None and rep < 0 else f"repetition {rep}"
                msg, hit = f"{what} exceeded time_limit_s={float(limit):g} s and was killed", float(limit)
            else:
                msg, hit = f"task exceeded timeout_s={timeout:g} s and was killed", timeout
            row = _after(rows, task, msg, "timeout", self._base)
            row["time_limit_s"] = hit
            if rep is not None:
                row["repetition"] = rep
            rows.append(row)
        except TaskMemoryExceeded as exc:
            row = _after(rows, task, exc.message(), "oom", self._base)
            if rep is not None:
                row["repetition"] = rep
            rows.append(row)
        except (EOFError, OSError, ConnectionError):
            code = self._proc.wait(timeout=30) if self._proc is not None else None
            self._kill()
            rows.append(_after(rows, task, f"task process died: {_signal_name(code)}", "crashed", self._base))
        total = time.perf_counter() - start
        for r in rows:
            r["t_total_s"] = total
        return rows


def _after(rows: list[Row], task: Task, message: str, status: str, loaded: Row | None) -> Row:
    """A failure row carrying the identity columns of the rows already received."""
    base = dict(rows[-1]) if rows else dict(loaded or task_base(task))
    row = error_row(base, message, status=status)
    row["repetition"] = (max((r.get("repetition", -1) for r in rows), default=-1) + 1) if rows else -1
    return row


_process: TaskProcess | None = None


def task_process() -> TaskProcess:
    """This worker's task process (one per worker process; killed when the worker exits)."""
    global _process
    if _process is None:
        _process = TaskProcess()
        atexit.register(_process.close)
    return _process


def run_task(task: Task, *after: Any) -> list[Row]:
    """The Dask task function: isolated in the child unless ``isolate`` is false.

    ``after`` are results of tasks this one waited for (the generation of its instance
    on a CPU worker, :func:`matchbench.datasets.warm_disk_cache`); unused.
    """
    if not task.isolate:
        start = time.perf_counter()
        rows = execute_task(task)
        for r in rows:
            r["t_total_s"] = time.perf_counter() - start
        return rows
    return task_process().run(task)


def run_batch(batch: Batch, *after: Any) -> dict[str, Any]:
    """The Dask task function of a batch (``run.batch``): ``{"rows": [...], "notes": [...],
    "tables": [...]}``.

    Isolated in the child unless ``isolate`` is false; ``after`` as for :func:`run_task`.
    In the child a batch runs columnar (:func:`~matchbench.runner.task.execute_batch`
    with ``tables``): its rows come back as Arrow ``tables`` of the results schema,
    sealed by the child (:class:`~matchbench.runner.batch.Sealed`: the client opens them), and
    ``rows`` holds only the rows made as dicts (failures before a joint solve, and
    instances solved again one by one after a crash or a timeout).
    """
    tables: list[Any] = []
    if not batch.first.isolate:  # a debugging mode: every row a dict, as before
        rows, notes = execute_batch(batch)
    else:
        rows, notes = task_process().run_batch(batch, tables, sealed=True)
    return {"rows": rows, "notes": notes, "tables": tables}


def warm_up(modules: list[str], problems: list[str], device: str = "cpu") -> None:
    """Import ``modules``, warm the families ``problems`` up
    (:meth:`~matchbench.core.problem.Problem.warm_up`: their certificates' compiled code,
    with :data:`~matchbench.core.problem.VERIFY_DEVICE` set to ``device``, so that a GPU
    worker's also compiles what its certificate runs on the GPU) and what every batch's
    rows need (pyarrow, which imports pandas for its first timestamp column) in this
    process; failures are left to the tasks, which report them as rows."""
    import importlib

    from matchbench.core.problem import VERIFY_DEVICE, get_problem

    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the task that needs it says why
            pass
    token = VERIFY_DEVICE.set(device)
    try:
        for name in problems:
            try:
                get_problem(name).warm_up()
            except Exception:  # noqa: BLE001
                pass
    finally:
        VERIFY_DEVICE.reset(token)
    try:
        from matchbench.results.schema import record_batch
        from matchbench.runner.task import _now

        record_batch({"timestamp": [_now()]}, 1)
    except Exception:  # noqa: BLE001
        pass


PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """End this process when ``parent_pid`` (the worker that started it) ends.

    Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so the kernel kills the child even while
    it runs compiled code that holds the GIL; then, should the worker already be gone
    (re-parented before the call), exit now. Elsewhere: a daemon thread that polls the
    parent pid every half second (it needs the GIL, so it acts between bytecodes).
    The kernel's signal follows the *thread* that started the child: workers start it
    from their long-lived task or plugin threads; a child lost otherwise is replaced
    at the next task (``TaskProcess._run`` checks it first).
    """
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="matchbench-parent-watch", daemon=True).start()


def _sealed_chunk(payload: tuple[Any, Any]) -> tuple[Any, Any]:
    """A ``chunk`` message's tables pickled here, once (:class:`~matchbench.runner.batch.Sealed`):
    the worker passes them on to the client without reading them."""
    from matchbench.runner.batch import Sealed

    tables, done = payload
    return Sealed(tables), done


def _serve(fd: int) -> None:
    conn = Connection(fd)
    while True:
        try:
            kind, payload, *more = conn.recv()
        except EOFError:
            return
        columnar = bool(more and more[0])  # ("batch", batch, columnar): tables allowed
        try:
            if kind == "precompile":
                from matchbench.gpu.kernels import precompile

                try:
                    precompile(payload)
                    conn.send(("done", None))
                except Exception as exc:  # recorded again, per task, when it matters
                    conn.send(("fail", f"precompile: {type(exc).__name__}: {exc}"))
            elif kind == "warm":
                warm_up(payload.get("modules", []), payload.get("problems", []), payload.get("device", "cpu"))
                conn.send(("done", None))
            elif kind == "task":
                execute_task(
                    payload,
                    emit=lambda row: conn.send(("row", row)),
                    loaded=lambda base: conn.send(("loaded", base)),
                    started=lambda rep: conn.send(("start", rep)),
                )
                conn.send(("done", None))
            elif kind == "batch":
                execute_batch(payload, send=lambda k, p: conn.send((k, _sealed_chunk(p) if k == "chunk" else p)),
                              tables=[] if columnar else None)
                conn.send(("done", None))
        except Exception as exc:
            conn.send(("fail", f"{type(exc).__name__}: {exc}"))


if __name__ == "__main__":
    # Ctrl-C reaches the whole process group: the sweep's client handles it; the child
    # ends with its worker (no traceback of its own).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    check_package()
    if len(sys.argv) > 2:
        die_with_parent(int(sys.argv[2]))
    _serve(int(sys.argv[1]))
