"""The pipeline's run options on a GPU: instrumented APFB repetitions through the runner."""

from __future__ import annotations

import json

import pytest

from matchbench.core.params import config_defaults
from matchbench.runner.plan import build_plan
from matchbench.runner.task import execute_task

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("frontier", ["scan", "queue"])
def test_instrumented_apfb_repetitions_count_edges_and_stay_certified(tmp_path, frontier):
    cfg = {
        "algorithm": {"_target_": "matchbench.families.mcm.apfb.APFB", **config_defaults("algorithm", "apfb"), "frontier": frontier},
        "dataset": {"_target_": "matchbench.families.mcm.datasets.delaunay", "scale": 12, "seed": 1,
                    "rcp": True},
        "gpu": {"repetitions": 2, "warmup": 1, "instrumented": 2},
        "run": {"results_dir": str(tmp_path), "isolate": False, "verify": True},
        "data_dir": str(tmp_path / "data"),
    }
    (task,) = build_plan(cfg).tasks
    rows = execute_task(task)
    assert [r["repetition"] for r in rows] == [0, 1, 2, 3]
    assert [r["instrumented"] for r in rows] == [False, False, True, True]
    assert all(r["status"] == "ok" and r["verified"] is True for r in rows), rows
    counters = [json.loads(r["counters_json"]) for r in rows]
    assert all("edges_scanned" not in c for c in counters[:2])
    scanned = [c["edges_scanned"] for c in counters[2:]]
    assert all(s > 0 for s in scanned)
    assert len({r["objective"] for r in rows}) == 1
