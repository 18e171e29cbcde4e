"""The result schema and Parquet store: round trips, versions, the hive layout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from matchbench.results.schema import COLUMNS, SCHEMA, SCHEMA_VERSION, table_from_rows, upgrade
from matchbench.results.store import (
    ResultsError,
    RunWriter,
    latest_run,
    read_results,
    run_dirs,
)


def _row(**kw):
    base = {
        "run_id": "r1", "task_id": "t1", "problem": "mcm", "instance": "g", "algorithm": "hk",
        "variant": "default", "repetition": 0, "status": "ok", "t_solve_s": 0.5,
        "objective": 10.0, "verified": True, "timestamp": datetime.now(UTC),
    }
    return base | kw


def test_round_trip_keeps_schema_and_version(tmp_path):
    w = RunWriter(tmp_path, "20260101T000000-000", "2026-01-01")
    path = w.write_task("t1", [_row(), _row(repetition=1, t_solve_s=0.7)])
    pf = pq.ParquetFile(path)
    assert pf.schema_arrow.metadata[b"schema_version"] == str(SCHEMA_VERSION).encode()
    df = read_results(tmp_path)
    assert list(df.columns) == list(COLUMNS)
    assert sorted(df["t_solve_s"]) == [0.5, 0.7]
    assert w.done_tasks() == {"t1"}
    assert path.parent == tmp_path / "date=2026-01-01" / "run=20260101T000000-000"


def test_unknown_column_is_an_error_not_silently_dropped():
    with pytest.raises(KeyError, match="t_solve"):
        table_from_rows([_row(t_solve=1.0)])


def test_old_file_is_upgraded_on_read(tmp_path):
    # A file from before schema versioning: a few columns, no metadata.
    old = pa.table({"run_id": ["r0"], "instance": ["g"], "t_solve_s": [1.5], "status": ["ok"]})
    d = tmp_path / "date=2025-01-01" / "run=r0"
    d.mkdir(parents=True)
    pq.write_table(old, d / "part-x.parquet")
    df = read_results(tmp_path)
    assert list(df.columns) == list(COLUMNS)
    assert df["t_solve_s"].iloc[0] == 1.5 and df["verified"].isna().all()


def test_newer_schema_version_is_refused():
    with pytest.raises(ValueError, match="newer"):
        upgrade(SCHEMA.empty_table(), SCHEMA_VERSION + 1)


def test_latest_run_and_missing_path(tmp_path):
    RunWriter(tmp_path, "20260101T000000-000", "2026-01-01").write_task("a", [_row()])
    RunWriter(tmp_path, "20260102T000000-000", "2026-01-02").write_task("b", [_row()])
    RunWriter(tmp_path, "20260103T000000-000", "2026-01-03")  # started, nothing finished
    assert len(run_dirs(tmp_path)) == 3
    assert latest_run(tmp_path).name == "run=20260102T000000-000"
    with pytest.raises(ResultsError, match="no such"):
        read_results(tmp_path / "nope")


def test_manifest_is_invisible_to_dataset_readers(tmp_path):
    w = RunWriter(tmp_path, "r1", "2026-01-01")
    w.write_task("t1", [_row()])
    w.write_manifest({"run_id": "r1", "jobs": [{"job_index": 0}]})
    import pyarrow.dataset as ds

    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 1 and "run" in table.column_names


def test_manifest_keeps_one_copy_of_each_job_across_resumes(tmp_path):
    w = RunWriter(tmp_path, "r1", "2026-01-01")
    jobs = [{"job_index": 0, "overrides": ["a=1"]}, {"job_index": 1, "overrides": ["a=2"]}]
    w.write_manifest({"run_id": "r1", "started": "t0", "jobs": jobs})
    w.write_manifest({"run_id": "r1", "started": "t1", "jobs": jobs})  # a resume
    w.write_manifest({"jobs": [*jobs, {"job_index": 2, "overrides": ["a=3"]}]})
    m = json.loads((w.dir / "_run.json").read_text())
    assert [j["job_index"] for j in m["jobs"]] == [0, 1, 2]
    assert m["started"] == "t0" and m["resumed"] == ["t1"]  # the first start is kept


def test_duckdb_reads_the_layout(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    RunWriter(tmp_path, "r1", "2026-01-01").write_task("t1", [_row(), _row(repetition=1)])
    n, run = duckdb.sql(
        f"select count(*), any_value(run) from read_parquet('{tmp_path}/**/*.parquet', hive_partitioning=true)"
    ).fetchall()[0]
    assert (n, run) == (2, "r1")


# ---------------------------------------------------------------------------------------
# Nothing lost: run ids, the run lock, durable writes, damaged files


@pytest.mark.parametrize("bad", ["../../x", "..", "a/b", "", ".hidden", "-x", "a b", "x" * 129, 7])
def test_unsafe_run_ids_are_refused(tmp_path, bad):
    with pytest.raises(ResultsError, match="is not a safe name"):
        RunWriter(tmp_path, bad, "2026-01-01")
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_store_doctests():
    import doctest

    import matchbench.results.store as store

    assert doctest.testmod(store).failed == 0


def test_a_live_lock_refuses_a_second_sweep_and_a_stale_one_is_taken(tmp_path):
    import socket

    from matchbench.results.store import RunLockedError

    w = RunWriter(tmp_path, "r1", "2026-01-01")
    with w.lock():
        owner = json.loads((w.dir / "_lock").read_text())
        assert owner["pid"] == os.getpid()
        with pytest.raises(RunLockedError, match=f"pid {os.getpid()}"), w.lock():
            pass
    assert not (w.dir / "_lock").exists()
    # A lock left by a process of this host that is gone is stale.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (w.dir / "_lock").write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout)}))
    with w.lock():
        assert json.loads((w.dir / "_lock").read_text())["pid"] == os.getpid()
    # Another host's lock cannot be judged from here: refused, naming the host.
    (w.dir / "_lock").write_text(json.dumps({"host": "elsewhere", "pid": 1}))
    with pytest.raises(RunLockedError, match="host elsewhere"), w.lock():
        pass


def test_writes_leave_no_temporary_file_and_concurrent_manifests_merge(tmp_path):
    import threading

    w = RunWriter(tmp_path, "r1", "2026-01-01")
    w2 = RunWriter(tmp_path, "r1", "2026-01-01")

    def job(writer, k):
        writer.write_task(f"t{k}", [_row()])
        writer.write_manifest({"jobs": [{"job_index": k, "config": {"k": k}}]})

    threads = [threading.Thread(target=job, args=(w if k % 2 else w2, k)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    m = json.loads((w.dir / "_run.json").read_text())
    assert sorted(j["job_index"] for j in m["jobs"]) == list(range(16))
    assert w.done_tasks() == {f"t{k}" for k in range(16)}
    assert not [p.name for p in w.dir.iterdir() if p.name.endswith(".tmp")]


def test_a_resume_keeps_each_job_once_although_run_overrides_differ(tmp_path):
    w = RunWriter(tmp_path, "r1", "2026-01-01")
    job = {"job_index": 0, "overrides": ["algorithm=hk"], "config": {"algorithm": {"name": "hk"}, "run": {"resume": False}}}
    w.write_manifest({"started": "t0", "jobs": [job]})
    again = {**job, "overrides": ["algorithm=hk", "run.resume=true", "run.id=r1"],
             "config": {**job["config"], "run": {"resume": True, "id": "r1"}}}
    w.write_manifest({"started": "t1", "jobs": [again]})
    m = json.loads((w.dir / "_run.json").read_text())
    assert len(m["jobs"]) == 1 and m["started"] == "t0" and m["resumed"] == ["t1"]


def test_a_damaged_manifest_is_set_aside_not_fatal(tmp_path):
    w = RunWriter(tmp_path, "r1", "2026-01-01")
    (w.dir / "_run.json").write_text('{"jobs": [')
    w.write_manifest({"run_id": "r1", "jobs": [{"job_index": 0}]})
    assert json.loads((w.dir / "_run.json").read_text())["run_id"] == "r1"
    assert len(list(w.dir.glob("_run.json.damaged-*"))) == 1


def test_an_unreadable_part_file_is_not_done_and_is_kept_aside(tmp_path):
    w = RunWriter(tmp_path, "r1", "2026-01-01")
    w.write_task("good", [_row()])
    (w.dir / "part-cut.parquet").write_bytes(b"PAR1 not really")
    assert w.done_tasks() == {"good"}
    assert (w.dir / "_damaged-part-cut.parquet").is_file() and not (w.dir / "part-cut.parquet").exists()
    assert len(read_results(tmp_path)) == 1  # the set-aside file is hidden from the readers


def test_damaged_and_foreign_files_are_one_line_naming_the_file(tmp_path, capsys):
    from matchbench.cli import results_main
    from matchbench.results import compare

    w = RunWriter(tmp_path, "r1", "2026-01-01")
    w.write_task("t1", [_row(), _row(repetition=1), _row(repetition=2)])
    RunWriter(tmp_path, "r2", "2026-01-02").write_task("t1", [_row(), _row(repetition=1)])
    damaged = tmp_path / "date=2026-01-02" / "run=r2" / "part-t1.parquet"
    t = pq.read_table(damaged)
    pq.write_table(t.append_column("proposals_per_s", pa.array([1.0] * t.num_rows)), damaged)
    foreign = tmp_path / "date=2026-01-03" / "run=r3" / "part-x.parquet"
    foreign.parent.mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2]}), foreign)
    with pytest.raises(ResultsError, match="column proposals_per_s appears more than once"):
        read_results(damaged)
    with pytest.raises(ResultsError, match="not a matchbench results file"):
        read_results(foreign)
    for argv, run in ((["r1", "r2"], compare.main), (["r1", "r3"], compare.main), (["r2"], results_main)):
        code = run([*argv, "--root", str(tmp_path)])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
