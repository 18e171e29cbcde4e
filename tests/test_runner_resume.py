"""A task file half-written when the sweep died is never read, and resume runs its task.

Rows go to ``.part-<task>.parquet.<pid>.<random>.tmp`` and are renamed to ``part-<task>.parquet`` when
complete (:class:`matchbench.results.store.RunWriter`); a crash between the two leaves
the temporary file. It must be invisible to every reader (ours, pyarrow's dataset,
DuckDB's glob) and must not count as done, so that ``run.resume=true`` runs the task
again and the final run holds each task once.
"""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from matchbench.results.store import RunWriter, read_results
from matchbench.runner.execute import execute
from matchbench.runner.plan import build_plan


def _plan(tmp_path, **run):
    cfg = {
        "algorithm": {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"},
        "dataset": {"instances": [
            {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 5, "seed": s}
            for s in (1, 2, 3)
        ]},
        "gpu": {"repetitions": 2, "warmup": 0},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "verify": True,
                "id": "half"} | run,
        "data_dir": str(tmp_path / "data"),
    }
    return build_plan(cfg)


@pytest.mark.slow
def test_half_written_task_file_is_never_read_and_resume_reruns_its_task(tmp_path):
    first = execute([_plan(tmp_path)], stream=io.StringIO())
    run_dir = Path(first["dir"])
    before = read_results(run_dir)
    assert before.task_id.nunique() == 3 and len(before) == 6

    # The sweep died while writing one task's file: only its temporary file is there.
    lost = sorted(before.task_id.unique())[0]
    part = run_dir / f"part-{lost}.parquet"
    data = part.read_bytes()
    part.unlink()
    tmp = run_dir / f".part-{lost}.parquet.12345.0badc0de.tmp"  # the store's own temporary name
    tmp.write_bytes(data[: len(data) // 2])

    assert set(read_results(tmp_path / "runs").task_id) == set(before.task_id) - {lost}
    table = ds.dataset(tmp_path / "runs", format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 4
    writer = RunWriter(tmp_path / "runs", "half", run_dir.parent.name.split("=", 1)[1])
    assert writer.done_tasks() == set(before.task_id) - {lost}
    try:
        import duckdb
    except ImportError:
        pass
    else:
        n = duckdb.sql(
            f"select count(*) from read_parquet('{tmp_path}/runs/**/*.parquet', hive_partitioning=true)"
        ).fetchall()[0][0]
        assert n == 4

    log = io.StringIO()
    again = execute([_plan(tmp_path, resume=True)], stream=log)
    assert again["tasks"] == 1 and again["rows"] == {"ok": 2}, log.getvalue()
    assert "2 task(s) already in run half, skipped" in log.getvalue()
    after = read_results(run_dir)
    assert after.task_id.nunique() == 3 and after.groupby(["task_id", "repetition"]).size().max() == 1
    assert len(after) == 6 and (after.status == "ok").all()
    assert part.exists() and not tmp.exists()  # the rerun's file replaced the torn one


# ---------------------------------------------------------------------------------------
# Nothing already written is replaced: reused ids, guessed resumes, locks, a full disk


def _exit(fn) -> tuple[int, str]:
    log = io.StringIO()
    with pytest.raises(SystemExit) as info:
        fn(log)
    return info.value.code, log.getvalue()


def test_a_reused_run_id_without_resume_is_refused_and_nothing_is_replaced(tmp_path):
    first = execute([_plan(tmp_path)], stream=io.StringIO())
    files = {p: p.stat().st_mtime_ns for p in Path(first["dir"]).glob("part-*.parquet")}
    code, log = _exit(lambda s: execute([_plan(tmp_path)], stream=s))
    assert code == 2 and log.count("\n") == 1
    assert "run.id=half already holds results" in log and "run.resume=true" in log
    assert {p: p.stat().st_mtime_ns for p in Path(first["dir"]).glob("part-*.parquet")} == files


def test_resume_without_a_run_id_is_refused_naming_the_newest_run(tmp_path):
    execute([_plan(tmp_path)], stream=io.StringIO())
    plan = _plan(tmp_path, resume=True)
    plan.run.pop("id")
    code, log = _exit(lambda s: execute([plan], stream=s))
    assert code == 2 and "run.resume=true needs run.id" in log and "is half" in log


@pytest.mark.parametrize("bad", ["../../x", "a/b", ".x"])
def test_an_unsafe_run_id_is_refused_before_anything_is_written(tmp_path, bad):
    code, log = _exit(lambda s: execute([_plan(tmp_path, id=bad)], stream=s))
    assert code == 2 and "is not a safe name" in log
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.parquet"))
    assert not (tmp_path / "x").exists()


def test_a_run_held_by_a_live_sweep_is_refused(tmp_path):
    import json
    import socket

    from matchbench.results.store import RunWriter

    w = RunWriter(tmp_path / "runs", "half", "2026-01-01")
    (w.dir / "_lock").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getppid()}))
    code, log = _exit(lambda s: execute([_plan(tmp_path, resume=True)], stream=s))
    assert code == 2 and "being written by another sweep" in log and f"pid {os.getppid()}" in log


def test_a_full_disk_ends_like_ctrl_c_with_the_resume_line(tmp_path, monkeypatch):
    import errno

    from matchbench.results.store import RunWriter

    calls = []
    real = RunWriter.write_task

    def full_after_one(self, task_id, rows):
        calls.append(task_id)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.dir / "part-x"))
        return real(self, task_id, rows)

    monkeypatch.setattr(RunWriter, "write_task", full_after_one)
    code, log = _exit(lambda s: execute([_plan(tmp_path)], stream=s))
    assert code == 74, log
    assert "no space left for the results" in log and "run.resume=true run.id=half" in log
    assert "Traceback" not in log
    monkeypatch.setattr(RunWriter, "write_task", real)
    again = execute([_plan(tmp_path, resume=True)], stream=io.StringIO())
    final = read_results(Path(again["dir"]))
    assert final.task_id.nunique() == 3 and final.groupby(["task_id", "repetition"]).size().max() == 1


def test_a_resume_with_other_settings_is_refused_not_duplicated(tmp_path):
    """``run.resume=true`` with an extra override that changes what the tasks measure (here
    the repetitions) would run every task again beside its old rows: refused, one line."""
    first = execute([_plan(tmp_path)], stream=io.StringIO())
    plan = _plan(tmp_path, resume=True)
    plan.tasks[:] = plan.tasks[:2] + [
        dataclasses.replace(t, task_id="0" * 16, repetitions=5) for t in plan.tasks[2:]
    ]
    code, log = _exit(lambda s: execute([plan], stream=s))
    assert code == 2 and "1 task(s) measure instances x solvers that run half already holds" in log
    assert len(read_results(Path(first["dir"]))) == 6
