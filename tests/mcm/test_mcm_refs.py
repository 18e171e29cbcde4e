"""The CPU MCM references against networkx on random small graphs, through their configs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from _graphs import bipartite_graphs, nx_maximum
from hydra.utils import instantiate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from matchbench.core.params import configured
from matchbench.families.mcm.cheap import cheap_matching
from matchbench.families.mcm.problem import MCM
from matchbench.families.mcm.ref_numba import PushRelabel
from matchbench.graphs.bipartite import BipartiteGraph, Matching

CONF = Path(__file__).resolve().parents[2] / "conf" / "algorithm"
NAMES = ["hk", "pfp", "pr", "scipy_hk", "igraph_pr"]
# Solvers that start from the initial matching they are given.
FROM_INIT = {"hk", "pfp", "pr"}

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make(name: str, **overrides):
    cfg = OmegaConf.load(CONF / f"{name}.yaml")
    return instantiate(cfg, **overrides)


@pytest.fixture(scope="module")
def solvers():
    return {name: make(name) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_config_instantiates(name):
    s = make(name)
    assert s.name == name
    assert (s.problem, s.device) == ("mcm", "cpu")
    skip, reason = s.skip(None)
    assert not skip, reason


def test_pr_variant_parameter():
    assert make("pr").k == 0.5
    s = make("pr", k=2.0)
    assert s.k == 2.0 and s.variant() == "k=2.0"


def random_matching(g: BipartiteGraph, rng: np.random.Generator) -> Matching:
    """A random valid (usually non-maximal) matching: a random subset of edges, greedily."""
    rows = np.repeat(np.arange(g.n_rows), np.diff(g.row_ptr))
    cols = g.row_ind
    row_match = np.full(g.n_rows, -1, dtype=g.col_ind.dtype)
    col_match = np.full(g.n_cols, -1, dtype=g.col_ind.dtype)
    for e in rng.permutation(g.n_edges)[: rng.integers(0, g.n_edges + 1)]:
        i, j = rows[e], cols[e]
        if row_match[i] == -1 and col_match[j] == -1:
            row_match[i], col_match[j] = j, i
    return Matching(row_match, col_match)


@st.composite
def graphs_with_init(draw):
    g = draw(bipartite_graphs(max_side=draw(st.sampled_from([8, 30]))))
    kind = draw(st.sampled_from(["none", "cheap", "random"]))
    if kind == "none":
        init = None
    elif kind == "cheap":
        init = cheap_matching(g)
    else:
        init = random_matching(g, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    return g, init


@SETTINGS
@given(graphs_with_init())
def test_solvers_reach_maximum(solvers, g_init):
    g, init = g_init
    expected = nx_maximum(g).cardinality
    before = None if init is None else init.copy()
    for name, s in solvers.items():
        s.prepare(g, init)
        s.run()
        m = s.result()
        v = MCM().verify(g, m)
        assert v.verified, (name, v.reason)
        assert m.cardinality == expected, name
        if init is not None:
            # The shared initial matching must not be modified by any solver.
            np.testing.assert_array_equal(init.row_match, before.row_match)
            np.testing.assert_array_equal(init.col_match, before.col_match)


@SETTINGS
@given(graphs_with_init(), st.sampled_from([0.0, 0.01, 0.5, 3.0]))
def test_push_relabel_relabel_frequency(g_init, k):
    g, init = g_init
    s = configured(PushRelabel, k=k)
    s.prepare(g, init)
    s.run()
    v = MCM().verify(g, s.result())
    assert v.verified, v.reason
    assert s.counters()["global_relabels"] >= 1


def test_repetitions_restart_from_init(solvers):
    g = BipartiteGraph.from_scipy(sp.random(60, 50, density=0.06, random_state=3, format="csr"))
    init = cheap_matching(g)
    expected = nx_maximum(g).cardinality
    assert init.cardinality < expected  # so that the solvers have work to do
    for name in FROM_INIT:
        s = solvers[name]
        results = []
        for _ in range(2):
            s.prepare(g, init)
            s.run()
            results.append(s.result().copy())
        np.testing.assert_array_equal(results[0].col_match, results[1].col_match, name)
        assert results[0].cardinality == expected
        # Augmentations and pushes start from the initial matching, so they are counted.
        counters = s.counters()
        work = counters.get("augmentations", counters.get("pushes"))
        assert work >= expected - init.cardinality, (name, counters)


def test_counters():
    g = BipartiteGraph.from_coo(
        np.array([0, 0, 1, 1, 2]), np.array([0, 1, 1, 2, 2]), 3, 3, name="path"
    )
    # Row 0 - column 1 matched: column 2 has a path of length 1 (phase 1), column 0 then
    # one of length 5 (phase 2).
    init = Matching(np.array([1, -1, -1]), np.array([-1, 0, -1]))
    hk = make("hk")
    hk.prepare(g, init)
    hk.run()
    assert MCM().verify(g, hk.result()).verified
    c = hk.counters()
    assert c["augmentations"] == 2 and c["phases"] >= 1
    scipy_hk = make("scipy_hk")
    scipy_hk.prepare(g, init)
    scipy_hk.run()
    assert scipy_hk.counters() == {"starts_from_init": 0}


def test_int64_graph(solvers):
    a = sp.random(40, 45, density=0.08, random_state=7, format="csr")
    g32 = BipartiteGraph.from_scipy(a)
    g = BipartiteGraph(
        g32.n_rows,
        g32.n_cols,
        *(x.astype(np.int64) for x in (g32.row_ptr, g32.row_ind, g32.col_ptr, g32.col_ind)),
    )
    init = cheap_matching(g)
    assert init.col_match.dtype == np.int64
    expected = nx_maximum(g).cardinality
    for name, s in solvers.items():
        s.prepare(g, init)
        s.run()
        m = s.result()
        assert MCM().verify(g, m).verified, name
        assert m.cardinality == expected, name


def test_igraph_skip_without_igraph(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_igraph(name, *args, **kwargs):
        if name == "igraph" or name.startswith("igraph."):
            raise ImportError("no igraph")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_igraph)
    skip, reason = make("igraph_pr").skip(None)
    assert skip and "python-igraph not installed" in reason
