"""The APFB/APsB benchmark's configuration list and report builder, on synthetic rows."""

from __future__ import annotations

import pytest

from matchbench.bench import mcm_gpu


def test_configs_cover_both_frontiers_and_the_scan_sync_study():
    cfgs = mcm_gpu.gpu_configs("all", "batched", ("scan", "queue"))
    table = [c for c in cfgs if c[3] == "batched"]
    assert len(table) == 16
    assert {c[4] for c in table} == {"scan", "queue"}
    study = [c for c in cfgs if c[3] != "batched"]
    assert study and all(c[4] == "scan" for c in study)
    assert mcm_gpu.gpu_configs("all", "batched", ("queue",)) == [
        (*v, "batched", "queue") for v in mcm_gpu.VARIANTS
    ]


def test_parse_config():
    assert mcm_gpu.parse_config("apfb:wr:ct:batched:scan") == (
        "apfb",
        "wr",
        "ct",
        "batched",
        "scan",
    )
    for bad in ("apfb:wr:ct:batched", "apfb:dfs:ct:batched:scan"):
        with pytest.raises(ValueError, match=bad):
            mcm_gpu.parse_config(bad)


def _rows(speed: dict[str, float]) -> list[dict]:
    """Two instances, every variant under both frontiers; ``speed`` scales each frontier."""
    rows = [{"kind": "device", "gpu_model": "test GPU", "d2d_copy_GBps": 1000.0}]
    for k, (fam, rcp) in enumerate([("delaunay", False), ("delaunay", True)]):
        name = f"d{k}"
        rows.append(
            {
                "kind": "instance",
                "instance": name,
                "family": fam,
                "scale": 23,
                "rcp": rcp,
                "n_rows": 10,
                "n_cols": 10,
                "n_edges": 30,
                "csr_bytes": 400,
            }
        )
        rows.append({"kind": "init", "instance": name, "init_cardinality": 8, "t_init_s": 0.01})
        for j, v in enumerate(mcm_gpu.VARIANTS):
            for f, scale in speed.items():
                for rep in range(3):
                    row = {
                        "kind": "gpu",
                        "instance": name,
                        "algorithm": v[0],
                        "bfs": v[1],
                        "threads": v[2],
                        "sync": "batched",
                        "frontier": f,
                        "variant": mcm_gpu.variant_label(*v),
                        "rep": rep,
                        "t_solve_s": scale * (1 + j) * 0.01,
                        "verified": True,
                        "cardinality": 10,
                        "host_syncs": 3,
                        "bfs_levels": 5,
                        "solver_bytes": 500,
                        "pool_bytes": 512,
                    }
                    if f == "scan":
                        del row["frontier"]  # rows from before the option: scan
                    rows.append(row)
    return rows


def test_report_picks_the_faster_frontier_and_keeps_the_faithful_one():
    text = mcm_gpu.build_report(_rows({"scan": 1.0, "queue": 0.25}))
    assert "frontier=scan" in text and "frontier=queue" in text
    assert "Best configuration: APFB-GPUBFS-CT (batched, queue)." in text
    # delaunay n23 RCP: paper 0.90 s; queue best 0.0025 s -> 360x; scan best 0.01 s -> 90x.
    assert "d1: 360.0x" in text
    assert "paper's frontier scan, APFB-GPUBFS-CT (batched, scan)" in text
    assert "d1: 90.0x" in text


def test_report_of_scan_only_rows():
    text = mcm_gpu.build_report(_rows({"scan": 1.0}))
    assert "frontier=queue" not in text
    assert "Best configuration: APFB-GPUBFS-CT (batched, scan)." in text
    assert "paper's frontier scan" not in text


class _FakePool:
    def free_all_blocks(self) -> None:
        pass

    def total_bytes(self) -> int:
        return 0


class _FakeSolver:
    """Stands in for a GPU solver: a maximum matching from SciPy, or the initial one."""

    def __init__(self, wrong: bool) -> None:
        self.wrong = wrong
        self.count_edges = False

    def prepare(self, g, init) -> None:
        self.g, self.init = g, init

    def run(self) -> None:
        pass

    def result(self):
        from scipy.sparse.csgraph import maximum_bipartite_matching

        from matchbench.problems.bipartite import Matching

        if self.wrong:
            return self.init
        col_match = maximum_bipartite_matching(self.g.to_scipy().tocsc().T.tocsr(), "column")
        return Matching.from_col_match(col_match, self.g.n_rows)

    def timings(self) -> dict[str, float]:
        return {"solve": 1e-3, "transfer": 0.0}

    def counters(self) -> dict[str, int]:
        return (
            {"bfs_levels": 3, "host_syncs": 2, "edges_scanned": 7}
            if self.count_edges
            else {
                "bfs_levels": 3,
                "host_syncs": 2,
            }
        )

    def memory_peak_bytes(self) -> int:
        return 100


def test_bench_instance_verifies_every_run_off_the_gpu_thread(tmp_path, monkeypatch):
    import sys
    import types

    from matchbench.bench import common

    monkeypatch.setitem(
        sys.modules, "cupy", types.SimpleNamespace(get_default_memory_pool=_FakePool)
    )
    monkeypatch.setattr(
        common, "make_solver", lambda alg, **p: _FakeSolver(wrong=p["frontier"] == "queue")
    )
    inst = common.generate(("grid", 6, 1, str(tmp_path)))[1]  # the RCP copy: work left
    rows: list[dict] = []
    cfgs = [("apfb", "wr", "ct", "batched", "scan"), ("apsb", "wr", "ct", "batched", "queue")]
    mcm_gpu.bench_gpu_instance(inst, cfgs, 2, rows.append, edges_sync="batched")
    gpu = [r for r in rows if r["kind"] == "gpu"]
    edges = [r for r in rows if r["kind"] == "gpu_edges"]
    assert len(gpu) == 2 * 3 and len(edges) == 2  # warm-up + 2 timed, per configuration
    for r in gpu + edges:
        assert r["verified"] is (r["frontier"] == "scan"), r
    assert all(r["t_verify_s"] >= 0 and r["t_solve_s"] == 1e-3 for r in gpu)
    assert {r["cardinality"] for r in gpu if r["verified"]} == {inst["n_cols"]}
