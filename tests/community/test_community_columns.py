"""What the community verifier measures beside Q lands in the rows (schema 7): ``nmi``
against planted communities where the instance has them, ``disconnected_communities``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from matchbench.families.community.datasets import community_lfr, community_planted, ground_truth
from matchbench.families.community.problem import Community, CommunityGraph, Partition
from matchbench.runner.plan import build_plan
from matchbench.runner.task import execute_task

PROBLEM = Community()
CONF = Path(__file__).parents[2] / "conf"


def test_verify_measures_nmi_against_the_planted_truth_and_split_communities():
    g = community_planted(n=400, k=4, p_in=0.2, p_out=0.005, seed=3)
    truth = ground_truth(g)
    v = PROBLEM.verify(g, Partition(community=truth))
    assert v.verified and v.columns["nmi"] == 1.0 and v.columns["disconnected_communities"] == 0
    merged = np.unique(np.where(truth == 1, 0, truth), return_inverse=True)[1]  # two groups as one
    v2 = PROBLEM.verify(g, merged)
    assert v2.verified and 0 < v2.columns["nmi"] < 1
    lfr = community_lfr(n=2000, mu=0.2, seed=2)
    assert PROBLEM.verify(lfr, ground_truth(lfr)).columns["nmi"] == 1.0


def test_verify_has_no_nmi_without_a_truth_and_counts_split_communities():
    u, v = np.array([0, 1, 2, 3, 4, 5]), np.array([1, 2, 0, 4, 5, 3])
    g = CommunityGraph.from_edges(u, v, np.ones(6), 6, name="two_triangles")
    one = np.zeros(g.n, dtype=np.int64)  # both triangles in one community
    v = PROBLEM.verify(g, one)
    assert v.columns == {"disconnected_communities": 1, "nmi": None}
    assert v.verified  # no connectivity claimed: a note, not a failure
    refused = PROBLEM.verify(g, Partition(community=one, connected=True))
    assert not refused.verified and refused.columns["disconnected_communities"] == 1


def test_rows_carry_the_measured_columns(tmp_path):
    cfg = {
        "algorithm": yaml.safe_load((CONF / "algorithm" / "leiden.yaml").read_text()),
        "dataset": {
            "name": "planted_rows",
            "instances": [
                {"_target_": "matchbench.families.community.datasets.community_planted",
                 "n": 300, "k": 3, "p_in": 0.2, "p_out": 0.005, "seed": 1},
                {"_target_": "matchbench.families.community.datasets.community_smoke", "name": "karate"},
            ],
        },
        "gpu": {"repetitions": 1, "warmup": 0},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 120, "isolate": False, "verify": True},
        "data_dir": str(tmp_path / "data"),
    }  # fmt: skip
    plan = build_plan(cfg)
    assert not plan.error_rows and len(plan.tasks) == 2
    rows = {r["instance"]: r for t in plan.tasks for r in execute_task(t)}
    planted = next(r for name, r in rows.items() if name != "karate")
    assert planted["status"] == "ok" and planted["verified"] and planted["nmi"] > 0.9
    assert planted["disconnected_communities"] == 0
    assert rows["karate"]["nmi"] is None and rows["karate"]["disconnected_communities"] == 0
