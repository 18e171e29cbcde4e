"""Parquet I/O of result rows.

Layout (hive-partitioned, so pandas, pyarrow and DuckDB read it directly)::

    <root>/date=YYYY-MM-DD/run=<run_id>/part-<task_id>.parquet         one file per finished task
    <root>/date=YYYY-MM-DD/run=<run_id>/part-batch-<batch_id>.parquet  ... or batch (run.batch)
    <root>/date=YYYY-MM-DD/run=<run_id>/_run.json                      the run's manifest

Each task's rows go to their own file, written to a temporary name and renamed, as soon
as the task finishes: a crash loses only the tasks in flight, and a resumed run knows
what is done by listing ``part-*.parquet``, and, for a batch's file, by reading its
``task_id`` column (each instance of a batch is a task of its own). Names starting with
``_`` are skipped by pyarrow's and DuckDB's dataset readers.
"""

from __future__ import annotations

import json
import os
import re
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


class RunWriter:
    """Writes one run's task files and manifest under ``root``."""

    def __init__(self, root: str | os.PathLike, run_id: str, date: str) -> None:
        self.root = Path(root)
        self.run_id = run_id
        self.dir = self.root / f"date={date}" / f"run={run_id}"
        self.dir.mkdir(parents=True, exist_ok=True)

    def write_task(self, task_id: str, rows: list[dict[str, Any]]) -> Path:
        """Atomically write one task's rows; returns the file."""
        table = table_from_rows(rows)
        path = self.dir / f"part-{task_id}.parquet"
        tmp = self.dir / f".part-{task_id}.parquet.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        return path

    def write_batch(self, batch_id: str, rows: list[dict[str, Any]]) -> Path:
        """Atomically write one batch's rows (of all its instances); returns the file."""
        return self.write_task(f"{BATCH_PREFIX}{batch_id}", rows)

    def done_tasks(self) -> set[str]:
        """Task ids with rows in this run (for ``resume=true``): a task's own file, or its
        rows in a batch's file."""
        done: set[str] = set()
        for p in self.dir.glob("part-*.parquet"):
            name = p.name[len("part-") : -len(".parquet")]
            if not name.startswith(BATCH_PREFIX):
                done.add(name)
                continue
            try:
                ids = pq.read_table(p, columns=["task_id"]).column("task_id").to_pylist()
            except Exception as exc:
                raise ResultsError(f"{p}: not a readable Parquet file ({exc})") from None
            done.update(i for i in ids if i is not None)
        return done

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        path = self.dir / "_run.json"
        old = json.loads(path.read_text()) if path.exists() else {}
        # a resume states its jobs again: keep one copy of each (a job it adds is appended)
        jobs = list(old.get("jobs", []))
        seen = {json.dumps(j, sort_keys=True, default=str) for j in jobs}
        for j in manifest.get("jobs", []):
            key = json.dumps(j, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                jobs.append(j)
        merged = {**old, **manifest, "jobs": jobs}
        tmp = self.dir / "._run.json.tmp"
        tmp.write_text(json.dumps(merged, indent=2, sort_keys=True, default=str))
        os.replace(tmp, path)


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


def read_table(path: str | os.PathLike) -> pa.Table:
    """One result file, upgraded to the current schema."""
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:
        raise ResultsError(f"{path}: not a readable Parquet file ({exc})") from None
    table = pf.read()
    return upgrade(table, file_schema_version(pf.schema_arrow.metadata))


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
