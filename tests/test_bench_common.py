"""The shared pieces of the benchmark scripts (:mod:`matchbench.bench.common`), on the CPU."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from matchbench.bench import common
from matchbench.datasets import generators
from matchbench.problems.mcm import MCM


class Rows:
    """A thread-safe sink that keeps the rows."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, row: dict[str, Any]) -> None:
        with self._lock:
            self.rows.append(row)


def test_save_load_round_trip(tmp_path):
    g = generators.kronecker(8, seed=3)
    path = tmp_path / "g.npz"
    common.save_graph(g, path)
    h = common.load_graph(path)
    assert (h.n_rows, h.n_cols) == (g.n_rows, g.n_cols)
    for k in ("row_ptr", "row_ind", "col_ptr", "col_ind"):
        assert np.array_equal(getattr(h, k), getattr(g, k)), k
    assert (h.name, h.family, h.params) == (g.name, g.family, g.params)


@pytest.mark.parametrize("csr_bytes", [True, False])
def test_generate_writes_original_and_rcp(tmp_path, csr_bytes):
    rows = common.generate(("grid", 6, 1, str(tmp_path)), csr_bytes=csr_bytes)
    assert [r["rcp"] for r in rows] == [False, True]
    assert rows[1]["instance"] == rows[0]["instance"] + "_rcp"
    for r in rows:
        assert Path(r["path"]).is_file() and Path(r["path"]).parent == tmp_path
        assert ("csr_bytes" in r) == csr_bytes
        g = common.load_graph(r["path"])
        assert (g.name, g.n_rows, g.n_edges) == (r["instance"], r["n_rows"], r["n_edges"])
    # The RCP instance is a permutation of the original: same sizes, other adjacency.
    a, b = (common.load_graph(r["path"]) for r in rows)
    assert a.n_edges == b.n_edges and not np.array_equal(a.row_ind, b.row_ind)


def test_make_solver_builds_hk_from_its_yaml():
    from matchbench.solvers.cpu.mcm_numba import HopcroftKarp

    s = common.make_solver("hk")
    assert isinstance(s, HopcroftKarp) and s.name == "hk"


def test_make_solver_overrides():
    s = common.make_solver("cu_class", devices=2, fuse=False)
    assert (s.params["devices"], s.params["fuse"], s.params["batch"]) == (2, False, 16)


def test_initialize_row():
    g = generators.grid(6, seed=1)
    sink = Rows()
    init = common.initialize(MCM(), g, {"instance": g.name}, sink)
    (row,) = sink.rows
    assert row["kind"] == "init" and row["instance"] == g.name
    assert row["init_cardinality"] == init.cardinality and row["t_init_s"] >= 0
    assert common.initialize(MCM(), g, {}, None).cardinality == init.cardinality


def test_report_helpers():
    assert common.geomean([1.0, 4.0, None, 0.0, float("inf")]) == pytest.approx(2.0)
    assert np.isnan(common.geomean([]))
    assert common.fmt_seconds(0.05, ms_below=1e-3) == "0.05"
    assert common.fmt_seconds(0.05, ms_below=0.1) == "50 ms"
    assert common.fmt_seconds(None, ms_below=0.1) == "-"
    assert common.md_table(["a", "b"], [[1, 2]]) == "| a | b |\n| --- | --- |\n| 1 | 2 |\n"
    refs = {
        ("x", "ok"): {"status": "ok", "t_solve_s": 2.0},
        ("x", "t"): {"status": "timeout", "timeout_s": 60.2},
        ("x", "b"): {"status": "timeout", "timeout_s": 9.0, "cut_by_budget": True},
    }
    fmt = str
    assert common.ref_time(refs, "x", "ok", fmt) == (2.0, "2.0")
    assert common.ref_time(refs, "x", "t", fmt) == (float("inf"), ">60 s")
    assert common.ref_time(refs, "x", "b", fmt) == (float("inf"), ">9 s (budget)")
    assert common.ref_time(refs, "x", "none", fmt) == (None, "not run")


def test_jsonl_sink_round_trip(tmp_path):
    results, sink = common.open_results(tmp_path / "out", tmp_path / "graphs", time.time())
    assert (tmp_path / "graphs").is_dir()
    sink({"kind": "x", "n": np.int64(3), "t": np.float32(0.5)})
    sink({"kind": "y"})
    rows = common.read_rows([results])
    assert [r["kind"] for r in rows] == ["x", "y"]
    assert rows[0]["n"] == 3 and rows[0]["t"] == 0.5 and "t_elapsed_s" in rows[0]


# -- the CPU references in subprocesses -------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("tiny")
    return common.generate(("grid", 6, 1, str(d)))[1]


@pytest.fixture(scope="module")
def slow(tmp_path_factory) -> dict[str, Any]:
    """An instance on which SciPy's Hopcroft-Karp runs for about half a minute.

    The RCP permutation of ``grid(13)`` (64 x 128): about 0.05 s for the grids of scale
    12 and 14, but some 35 s here (scipy 1.x, from the empty matching).
    """
    d = tmp_path_factory.mktemp("slow")
    return common.generate(("grid", 13, 1, str(d)))[1]


@pytest.mark.parametrize(
    ("module", "limit", "extra_key"),
    [
        ("matchbench.bench.mcm_gpr", "wall", "counters"),
        ("matchbench.bench.mcm_gpu", "solve", "from_init"),
    ],
)
def test_ref_runner_gives_a_verified_row(tiny, module, limit, extra_key):
    sink = Rows()
    runner = common.RefRunner(2, 60.0, time.time() + 120, sink, module, limit=limit)
    for name in ("scipy_hk", "pr"):
        runner.submit(tiny, name)
    runner.wait()
    rows = {r["solver"]: r for r in sink.rows}
    assert set(rows) == {"scipy_hk", "pr"}
    for r in rows.values():
        assert r["status"] == "ok" and r["verified"] and r["instance"] == tiny["instance"]
        assert r["cardinality"] == tiny["n_rows"] and r["t_solve_s"] >= 0
        assert extra_key in r
    if limit == "solve":
        assert (rows["scipy_hk"]["from_init"], rows["pr"]["from_init"]) == (False, True)


def test_ref_runner_wall_limit_reports_a_timeout(slow):
    sink = Rows()
    runner = common.RefRunner(1, 0.5, time.time() + 120, sink, "matchbench.bench.mcm_gpr")
    t0 = time.time()
    runner.submit(slow, "scipy_hk")
    runner.wait()
    (row,) = sink.rows
    assert row["status"] == "timeout" and row["timeout_s"] == 0.5 and row["t_wall_s"] >= 0.5
    assert "t_solve_s" not in row and "verified" not in row
    assert time.time() - t0 < 10


def test_ref_runner_solve_limit_reports_a_timeout(slow):
    sink = Rows()
    runner = common.RefRunner(
        1, 1.0, time.time() + 120, sink, "matchbench.bench.mcm_gpu", limit="solve"
    )
    t0 = time.time()
    runner.submit(slow, "scipy_hk")
    runner.wait()
    (row,) = sink.rows
    # Killed by its limit (not by the deadline), after the solve had run at least 1 s.
    assert row["status"] == "timeout", row
    assert 1.0 <= row["timeout_s"] < 5 and row["cut_by_budget"] is False
    assert "t_solve_s" not in row and "verified" not in row
    assert time.time() - t0 < 15


def test_ref_runner_past_deadline_runs_nothing(tiny):
    sink = Rows()
    runner = common.RefRunner(1, 60.0, time.time() + 1, sink, "matchbench.bench.mcm_gpr")
    runner.submit(tiny, "pr")
    runner.wait()
    assert sink.rows == [
        {
            "kind": "ref",
            "instance": tiny["instance"],
            "solver": "pr",
            "status": "not_run",
            "reason": "time budget spent",
        }
    ]
