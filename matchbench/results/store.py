"""Parquet I/O of result rows.

Layout (hive-partitioned, so pandas, pyarrow and DuckDB read it directly)::

    <root>/date=YYYY-MM-DD/run=<run_id>/part-<task_id>.parquet         one file per finished task
    <root>/date=YYYY-MM-DD/run=<run_id>/part-batch-<batch_id>.parquet  ... or batch (run.batch)
    <root>/date=YYYY-MM-DD/run=<run_id>/_run.json                      the run's manifest

Each task's rows go to their own file, written to a temporary name of this process's
own, flushed to disk (``fsync``) and renamed, as soon as the task finishes: a crash loses
only the tasks in flight, and a resumed run knows what is done by listing
``part-*.parquet`` (a file that cannot be read is set aside as ``_damaged-*`` and its
task runs again), and, for a batch's file, by reading its ``task_id`` column (each
instance of a batch is a task of its own). Names starting with ``_`` or ``.`` are skipped
by pyarrow's and DuckDB's dataset readers.

One sweep writes a run at a time: :meth:`RunWriter.lock` holds ``_lock`` (the owner's
host, pid and start time) for the sweep's life; a lock whose process is gone (same host)
is stale and taken over. The manifest ``_run.json`` is updated under a file lock of its
own, so that concurrent writers merge instead of overwriting each other, and a damaged
manifest is set aside (``_run.json.damaged-<time>``) instead of making the run
impossible to resume.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from matchbench.results.schema import SCHEMA, file_schema_version, table_from_rows, upgrade

_RUN_DIR = re.compile(r"^run=(?P<run>.+)$")
_DATE_DIR = re.compile(r"^date=(?P<date>\d{4}-\d{2}-\d{2})$")


#: File name of a batch's rows: ``part-batch-<batch_id>.parquet``.
BATCH_PREFIX = "batch-"


class ResultsError(ValueError):
    """Results that cannot be found or read; the message names the path."""


class RunLockedError(ResultsError):
    """Another live sweep is writing this run; the message names its host and pid."""


#: What a run id may be made of: it becomes a folder name under the results root.
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_run_id(run_id: Any) -> str:
    """``run_id`` if it is a safe folder name, else :class:`ResultsError` saying why.

    >>> check_run_id("20261125T101500-123")
    '20261125T101500-123'
    >>> check_run_id("../../x")
    Traceback (most recent call last):
    ...
    matchbench.results.store.ResultsError: run.id '../../x' is not a safe name: use letters, digits, '.', '_' and '-' (at most 128, not starting with '.', '_' or '-')
    """
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id) or ".." in run_id:
        raise ResultsError(
            f"run.id {run_id!r} is not a safe name: use letters, digits, '.', '_' and '-' "
            "(at most 128, not starting with '.', '_' or '-')"
        )
    return run_id


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a folder be fsynced
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _tmp_name(path: Path) -> Path:
    """A temporary name beside ``path`` that no other process or thread uses."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def atomic_write_bytes(path: Path, write: Any) -> None:
    """Write ``path`` through ``write(tmp_path)``, fsync it, then rename it into place."""
    tmp = _tmp_name(path)
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


class RunWriter:
    """Writes one run's task files and manifest under ``root``."""

    def __init__(self, root: str | os.PathLike, run_id: str, date: str) -> None:
        self.root = Path(root)
        self.run_id = check_run_id(run_id)
        self.dir = self.root / f"date={date}" / f"run={run_id}"
        self.dir.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run for one sweep: ``_lock`` names the owner; released on exit.

        Raises
        ------
        RunLockedError
            When a live process (this host), or any process of another host, holds it.
            A lock of this host whose process is gone is stale and is taken over.
        """
        path = self.dir / "_lock"
        me = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}
        for _ in range(3):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                try:
                    owner = json.loads(path.read_text() or "{}")
                except (OSError, ValueError):
                    owner = {}
                host, pid = owner.get("host"), owner.get("pid")
                stale = host == me["host"] and isinstance(pid, int) and not _pid_alive(pid)
                if not owner or stale:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                    continue
                raise RunLockedError(
                    f"run {self.run_id} is being written by another sweep (host {host}, pid "
                    f"{pid}; lock file {path}); wait for it, or delete the lock file if that "
                    "sweep is gone"
                ) from None
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
            self._drop_stale_temporaries(me["host"])
            break
        else:
            raise RunLockedError(f"run {self.run_id}: could not take the lock file {path}")
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                if json.loads(path.read_text()).get("pid") == me["pid"]:
                    path.unlink()

    def _drop_stale_temporaries(self, host: str) -> None:
        """Remove temporaries of writers that are gone (cut short by a crash): with the
        run's lock held, a ``.<name>.<pid>.<random>.tmp`` of a dead pid (or of the older
        ``.<name>.tmp`` form) belongs to nobody. Names alone cannot say which host wrote
        a file, so a live pid of this host is left alone."""
        for tmp in self.dir.glob(".*.tmp"):
            parts = tmp.name.split(".")
            pid = int(parts[-3]) if len(parts) >= 4 and parts[-3].isdigit() else None
            if pid is None or not _pid_alive(pid):
                with contextlib.suppress(OSError):
                    tmp.unlink()

    def has_results(self) -> bool:
        """Whether the run already holds result files (a reused ``run.id``)."""
        return any(self.dir.glob("part-*.parquet"))

    def write_task(self, task_id: str, rows: list[dict[str, Any]]) -> Path:
        """Atomically and durably write one task's rows; returns the file."""
        table = table_from_rows(rows)
        path = self.dir / f"part-{task_id}.parquet"
        atomic_write_bytes(path, lambda tmp: pq.write_table(table, tmp))
        return path

    def write_batch(
        self, batch_id: str, rows: list[dict[str, Any]], tables: list[pa.Table] | None = None
    ) -> Path:
        """Atomically write one batch's rows (of all its instances); returns the file.

        ``tables``: more of its rows, as tables of :data:`SCHEMA` (the columnar path of
        ``run.batch``), written in the same file after ``rows``.
        """
        if not tables:
            return self.write_task(f"{BATCH_PREFIX}{batch_id}", rows)
        parts = [table_from_rows(rows)] if rows else []
        batches = [b for t in (*parts, *tables) for b in t.cast(SCHEMA).to_batches()]
        table = pa.Table.from_batches(batches, schema=SCHEMA)
        path = self.dir / f"part-{BATCH_PREFIX}{batch_id}.parquet"
        atomic_write_bytes(path, lambda tmp: pq.write_table(table, tmp))
        return path

    def done_tasks(self) -> set[str]:
        """Task ids with rows in this run (for ``resume=true``): a task's own file, or its
        rows in a batch's file."""
        done: set[str] = set()
        self.damaged: list[Path] = []
        for p in sorted(self.dir.glob("part-*.parquet")):
            name = p.name[len("part-") : -len(".parquet")]
            try:
                ids = pq.read_table(p, columns=["task_id"]).column("task_id").to_pylist()
            except Exception:
                # Unreadable (cut short, overwritten): its task is not done. Keep the
                # bytes, out of the readers' sight, and run the task again.
                aside = p.with_name(f"_damaged-{p.name}")
                with contextlib.suppress(OSError):
                    os.replace(p, aside)
                    self.damaged.append(aside)
                continue
            if not name.startswith(BATCH_PREFIX):
                done.add(name)
            else:
                done.update(i for i in ids if i is not None)
        return done

    @contextlib.contextmanager
    def _manifest_lock(self) -> Iterator[None]:
        import fcntl

        with open(self.dir / "_run.json.lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def read_manifest(self) -> dict[str, Any]:
        """The manifest, or ``{}``; a damaged one is set aside (and ``{}`` returned)."""
        path = self.dir / "_run.json"
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            os.replace(path, path.with_name(f"_run.json.damaged-{time.strftime('%Y%m%dT%H%M%S')}"))
            return {}
        return data if isinstance(data, dict) else {}

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Merge ``manifest`` into ``_run.json`` (under a file lock; atomic, durable).

        A job is kept once, by its identity (its config without the ``run`` settings a
        resume changes); ``started`` keeps the first start and later ones are appended to
        ``resumed``.
        """
        path = self.dir / "_run.json"
        with self._manifest_lock():
            old = self.read_manifest()
            jobs = list(old.get("jobs", []))
            seen = {_job_key(j) for j in jobs}
            for j in manifest.get("jobs", []):
                key = _job_key(j)
                if key not in seen:
                    seen.add(key)
                    jobs.append(j)
            merged = {**old, **manifest, "jobs": jobs}
            if "started" in old and "started" in manifest and old["started"] != manifest["started"]:
                merged["started"] = old["started"]
                merged["resumed"] = [*old.get("resumed", []), manifest["started"]]
            text = json.dumps(merged, indent=2, sort_keys=True, default=str)
            atomic_write_bytes(path, lambda tmp: Path(tmp).write_text(text))


def _job_key(job: Any) -> str:
    """A job's identity in the manifest: its config without ``run`` (resume, id), or its
    overrides without ``run.*`` ones when it has no config."""
    if isinstance(job, dict):
        cfg = job.get("config")
        if isinstance(cfg, dict):
            return json.dumps({k: v for k, v in cfg.items() if k != "run"}, sort_keys=True, default=str)
        over = [o for o in job.get("overrides") or [] if not str(o).lstrip("+~").startswith("run.")]
        return json.dumps({"job_index": job.get("job_index"), "overrides": over}, sort_keys=True, default=str)
    return json.dumps(job, sort_keys=True, default=str)


def run_dirs(root: str | os.PathLike) -> list[Path]:
    """Every ``run=`` folder under ``root``, oldest first (by run id, which starts with time)."""
    root = Path(root)
    if not root.exists():
        return []
    out = [
        d
        for date_dir in root.iterdir()
        if date_dir.is_dir() and _DATE_DIR.match(date_dir.name)
        for d in date_dir.iterdir()
        if d.is_dir() and _RUN_DIR.match(d.name)
    ]
    return sorted(out, key=lambda d: (d.parent.name, d.name))


def find_run(root: str | os.PathLike, run_id: str) -> Path | None:
    for d in run_dirs(root):
        if d.name == f"run={run_id}":
            return d
    return None


def latest_run(root: str | os.PathLike) -> Path | None:
    """The newest run folder holding at least one result file."""
    for d in reversed(run_dirs(root)):
        if any(d.glob("part-*.parquet")):
            return d
    return None


#: Columns every results file has had, since the first schema; a Parquet file without
#: them is not one of ours.
REQUIRED_COLUMNS = ("instance", "status")


def read_table(path: str | os.PathLike) -> pa.Table:
    """One result file, upgraded to the current schema.

    Raises
    ------
    ResultsError
        Naming the file, for one that is not Parquet, is damaged (a column twice, as a
        rewrite through pandas can leave), is not a results file (no ``instance``
        and ``status`` columns), or cannot be upgraded.
    """
    try:
        pf = pq.ParquetFile(path)
        table = pf.read()
    except Exception as exc:
        raise ResultsError(f"{path}: not a readable Parquet file ({exc})") from None
    names = table.schema.names
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ResultsError(
            f"{path}: a damaged results file: column {', '.join(twice)} appears more than once "
            "(rewritten by another tool?)"
        )
    missing = [c for c in REQUIRED_COLUMNS if c not in names]
    if missing:
        raise ResultsError(
            f"{path}: not a matchbench results file (no {', '.join(missing)} column"
            f"{'s' if len(missing) > 1 else ''})"
        )
    try:
        return upgrade(table, file_schema_version(pf.schema_arrow.metadata))
    except ResultsError:
        raise
    except Exception as exc:
        raise ResultsError(f"{path}: cannot be read as a results file ({type(exc).__name__}: {exc})") from None


def result_files(path: str | os.PathLike) -> list[Path]:
    """Result files under ``path``: a file, a run folder, or a whole results root."""
    p = Path(path)
    if p.is_file():
        return [p]
    if not p.exists():
        raise ResultsError(f"{p}: no such results file or folder")
    return sorted(f for f in p.rglob("*.parquet") if not f.name.startswith((".", "_")))


def read_results(*paths: str | os.PathLike) -> pd.DataFrame:
    """Rows from files, run folders or results roots, as one DataFrame of :data:`SCHEMA`.

    Older files are upgraded on read. An empty selection gives an empty frame with the
    schema's columns.
    """
    tables = [read_table(f) for p in paths for f in result_files(p)]
    if not tables:
        return SCHEMA.empty_table().to_pandas()
    return pa.concat_tables(tables).to_pandas()
