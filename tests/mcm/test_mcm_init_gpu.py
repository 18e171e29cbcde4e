"""The device initializer (``init=cheap_gpu``) and the solvers started from it, on the GPU.

The MCM stress treatment: the 200-graph corpus of ``test_apfb_gpu`` (each original and
RCP-permuted) and hub graphs, both rules with and without the block-local pass and the
warp tier: the initializer's answer is a valid
maximal matching whose size is the counter it reports, and every GPU solver started from
it (APFB, APsB, G-PR persistent and host loop, mcm_gpu) is certified maximum.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_apfb_gpu import N_BASE, _hub_graph, _make_graph

from matchbench.core.params import config_defaults, configured
from matchbench.families.mcm.apfb import APFB, APsB
from matchbench.families.mcm.auto import MCMAuto
from matchbench.families.mcm.cheap import cheap_matching
from matchbench.families.mcm.gpr import GPR
from matchbench.families.mcm.init_gpu import CheapGPU
from matchbench.families.mcm.problem import MCM
from matchbench.graphs.bipartite import BipartiteGraph, Matching

pytestmark = pytest.mark.gpu

INITS = [
    configured(CheapGPU),
    configured(CheapGPU, rule="greedy", local=0, rounds=0, long_min=0),
    configured(CheapGPU, rule="greedy", local=3, rounds=2, long_min=4),
    configured(CheapGPU, rule="ks", local=0, rounds=8, long_min=4),
    configured(CheapGPU, rule="ks", local=7, rounds=0, long_min=0),
    configured(CheapGPU, rule="greedy", local=32, rounds=1, long_min=64),
]


def _id(init):
    return init.label()


@pytest.fixture(scope="module")
def graphs():
    out = []
    for k in range(N_BASE):
        g = _make_graph(k)
        out += [g, g.permuted(seed=k)]
    out += [_hub_graph(s) for s in range(6)]
    return out


def _device_matching(init: CheapGPU, g: BipartiteGraph) -> tuple[Matching, int]:
    import cupy as cp

    from matchbench.gpu.common import DeviceBipartite

    d = DeviceBipartite.upload(g)
    dt = d.col_ptr.dtype
    rm = cp.empty(g.n_rows, dtype=dt)
    cm = cp.empty(g.n_cols, dtype=dt)
    init.attach(g.n_rows, g.n_cols, dt)
    init.launch(col_ptr=d.col_ptr, col_ind=d.col_ind, row_ptr=d.row_ptr, row_ind=d.row_ind,
                row_match=rm, col_match=cm)
    return Matching(rm.get(), cm.get()), init.cardinality()


def _maximal_failure(g: BipartiteGraph, m: Matching) -> str | None:
    """Why ``m`` is not a valid maximal matching of ``g`` (independent host check)."""
    from matchbench.families.mcm.problem import _check_mates

    why = _check_mates(g, m)
    if why is not None:
        return why
    rows = np.repeat(np.arange(g.n_rows), np.diff(g.row_ptr))
    free_edge = (m.row_match[rows] < 0) & (m.col_match[g.row_ind] < 0)
    if free_edge.any():
        k = int(np.flatnonzero(free_edge)[0])
        return f"edge (row {rows[k]}, column {g.row_ind[k]}) has two free ends: not maximal"
    return None


@pytest.mark.parametrize("init", INITS, ids=_id)
def test_initializer_gives_a_maximal_matching(init, graphs):
    bad = []
    for g in graphs:
        m, card = _device_matching(init, g)
        why = _maximal_failure(g, m)
        if why is None and card != m.cardinality:
            why = f"counter says {card}, the mates hold {m.cardinality} pairs"
        if why is not None:
            bad.append((g.name, why))
    assert not bad, bad[:5]


def test_karp_sipser_round_matches_degree_one_vertices():
    # Column 0 is adjacent to rows 0..9, column 1 only to row 9. The degree-1 round gives
    # column 1 its only row before the hub column can take it; rows 0..8 (degree 1) then
    # race for column 0 and one wins.
    rows = np.array(list(range(10)) + [9])
    cols = np.array([0] * 10 + [1])
    g = BipartiteGraph.from_coo(rows, cols, 10, 2)
    m, card = _device_matching(configured(CheapGPU, rule="ks"), g)
    assert card == 2 and m.col_match[1] == 9  # the pendant column keeps its only row
    assert MCM().verify(g, m).verified


SOLVERS = [
    ("apfb", lambda: configured(APFB)),
    ("apsb", lambda: configured(APsB)),
    ("apfb-scan-level", lambda: configured(APFB, frontier="scan", sync="level")),
    ("gpr", lambda: configured(GPR)),
    ("gpr-first", lambda: configured(GPR, variant="first")),
    ("gpr-hostloop", lambda: configured(GPR, persistent=False, scan=None)),
    ("mcm_gpu", lambda: configured(MCMAuto)),
]


@pytest.mark.parametrize("name,make", SOLVERS, ids=[s[0] for s in SOLVERS])
def test_solvers_from_the_device_initializer_are_certified(name, make, graphs):
    solver = make()
    bad = []
    for k, g in enumerate(graphs):
        init = INITS[k % len(INITS)]
        solver.prepare(g, init)
        solver.run()
        m = solver.result()
        v = MCM().verify(g, m)
        t, c = solver.timings(), solver.counters()
        if not v.verified:
            bad.append((g.name, init.label(), v.reason))
        elif not (t["init"] >= 0 and t["solve"] >= 0):
            bad.append((g.name, "times", t))
        elif not 0 <= c["init_objective"] <= m.cardinality:
            bad.append((g.name, "init_objective", c["init_objective"], m.cardinality))
    assert not bad, bad[:5]


@pytest.mark.parametrize("name,make", SOLVERS, ids=[s[0] for s in SOLVERS])
def test_host_init_still_works_after_a_device_one(name, make, graphs):
    # The same solver object, switched between the two kinds of start on one instance.
    solver = make()
    for g in graphs[:60]:
        for init in (INITS[0], cheap_matching(g), None, INITS[3]):
            solver.prepare(g, init)
            solver.run()
            v = MCM().verify(g, solver.result())
            assert v.verified, (name, g.name, v.reason)
            assert ("init" in solver.timings()) == (getattr(init, "device", None) == "gpu")


def test_int64_indices(graphs):
    for g in graphs[:60]:
        g64 = BipartiteGraph(
            g.n_rows, g.n_cols,
            *(a.astype(np.int64) for a in (g.row_ptr, g.row_ind, g.col_ptr, g.col_ind)),
            name=g.name + "_i64",
        )
        m, card = _device_matching(configured(CheapGPU, long_min=4), g64)
        assert _maximal_failure(g64, m) is None and card == m.cardinality
        for make in (APFB, GPR, MCMAuto):
            solver = configured(make)
            solver.prepare(g64, configured(CheapGPU))
            solver.run()
            res = solver.result()
            assert res.col_match.dtype == np.int64
            assert MCM().verify(g64, res).verified, (make.__name__, g64.name)


def test_selector_records_its_choice_and_statistics():
    from matchbench.graphs import generators

    kron = generators.kronecker(12, edge_factor=16, seed=3)
    mesh = generators.delaunay(12, seed=3).permuted(seed=0)
    picks = {}
    for g in (kron, mesh):
        s = configured(MCMAuto)
        s.prepare(g, configured(CheapGPU))
        s.run()
        assert MCM().verify(g, s.result()).verified
        c = s.counters()
        assert c["choice"] in ("gpr", "apfb", "apsb") and c["skew"] > 0 and 0 <= c["ordered"] <= 1
        assert c["matched_before"] == c["init_objective"]
        picks[g.name] = (c["choice"], c["skew"])
    assert picks[kron.name][1] > picks[mesh.name][1]
    assert picks[kron.name][0] == "gpr" and picks[mesh.name][0] == "apfb"  # skewed; permuted


def test_pipeline_rows_carry_the_device_init(tmp_path):
    from matchbench.runner.plan import build_plan
    from matchbench.runner.task import execute_task

    cfg = {
        "algorithm": config_defaults("algorithm", "gpr") | {"_target_": "matchbench.families.mcm.gpr.GPR"},
        "dataset": {"_target_": "matchbench.families.mcm.datasets.delaunay", "scale": 10, "seed": 1, "rcp": True},
        "init": config_defaults("init", "cheap_gpu")
        | {"_target_": "matchbench.families.mcm.init_gpu.CheapGPU", "rule": "greedy"},
        "gpu": {"repetitions": 2, "warmup": 1},
        "run": {"verify": True},
    }
    (task,) = build_plan(cfg).tasks
    rows = execute_task(task)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    for r in rows:
        assert r["init"] == "cheap_gpu(rule=greedy)" and r["verified"]
        assert r["t_init_s"] > 0 and r["t_e2e_s"] == pytest.approx(r["t_init_s"] + r["t_solve_s"])
        assert r["objective_init"] > 0 and r["t_upload_s"] > 0


def test_a_matching_already_on_the_device_is_taken_as_it_is():
    import cupy as cp

    from matchbench.families.mcm.init_gpu import DeviceMatching

    g = _make_graph(3).permuted(seed=1)
    start = cheap_matching(g)
    for make in (APFB, APsB, GPR, MCMAuto):
        dm = DeviceMatching(cp.asarray(start.row_match), cp.asarray(start.col_match))
        solver = configured(make)
        solver.prepare(g, dm)
        solver.run()
        assert MCM().verify(g, solver.result()).verified
        assert solver.counters()["init_objective"] == start.cardinality
    with pytest.raises(ValueError, match="shapes"):
        configured(GPR).prepare(g, DeviceMatching(cp.zeros(1, dtype=g.col_ind.dtype), cp.zeros(1, dtype=g.col_ind.dtype)))
