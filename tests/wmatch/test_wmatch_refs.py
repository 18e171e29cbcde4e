"""CPU wmatch references: every heuristic returns GREEDY's answer, edge for edge, certified.

Hypothesis draws hundreds of small graphs built to stress the tie order: weights from a set of
two or three values (heavy ties) or continuous, isolated vertices, stars, cliques, paths, with
and without capacities. ``ld``, ``suitor``, ``bsuitor`` and the two NetworKit matchers must
equal ``greedy`` exactly; the certificate must verify every answer; ``mwm_exact`` must be
optimal (weight at least every greedy answer's, which in turn is at least half of it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matchbench.core.params import configured
from matchbench.families.wmatch import datasets as W
from matchbench.families.wmatch.problem import EXACT_MAX_VERTICES, WeightedGraph, WMatch, WMatching
from matchbench.families.wmatch.refs import (
    BSuitor,
    Greedy,
    LocallyDominant,
    MwmExact,
    NkBSuitor,
    NkSuitor,
    Suitor,
)

PROBLEM = WMatch()
HEURISTICS = (LocallyDominant, Suitor, BSuitor, NkSuitor, NkBSuitor)
CONF = Path(__file__).resolve().parents[2] / "conf" / "algorithm"
WMATCH_CONFS = ("greedy", "ld", "suitor", "bsuitor", "nk_suitor", "nk_bsuitor", "mwm_exact")


def _have_networkit() -> bool:
    try:
        import networkit  # noqa: F401
    except ImportError:
        return False
    return True


def solve(cls, g, **params):
    s = configured(cls, **params)
    skip, reason = s.skip(g)
    if skip:
        return None, reason
    s.prepare(g)
    s.run()
    return s.result(), None


def pairs(m: WMatching) -> list[tuple[int, int]]:
    return sorted((min(a, b), max(a, b)) for a, b in zip(m.u.tolist(), m.v.tolist(), strict=True))


@st.composite
def weighted_graphs(draw, max_n: int = 24):
    """Small graphs: random, stars, cliques, paths, with isolated vertices and heavy ties."""
    n = draw(st.integers(1, max_n))
    shape = draw(st.sampled_from(["random", "star", "clique", "path", "union"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    iu, iv = np.triu_indices(n, 1)
    if shape == "random":
        keep = rng.random(iu.size) < draw(st.sampled_from([0.05, 0.15, 0.4, 0.8]))
    elif shape == "star":
        keep = iu == 0
    elif shape == "clique":
        keep = np.ones(iu.size, dtype=bool)
    elif shape == "path":
        keep = iv == iu + 1
    else:  # a clique on the first third, a star on the next, the rest isolated
        k = max(1, n // 3)
        keep = (iv < k) | ((iu == k) & (iv < 2 * k))
    u, v = iu[keep], iv[keep]
    kind = draw(st.sampled_from(["one", "two", "three", "float"]))
    if kind == "float":
        w = 1.0 - rng.random(u.size)
    else:
        values = {"one": [1.0], "two": [0.5, 1.0], "three": [1.0, 2.0, 3.0]}[kind]
        w = rng.choice(values, size=u.size)
    b = draw(st.sampled_from([None, None, 1, 2, "random"]))
    cap = None if b is None else (np.full(n, b) if b != "random" else rng.integers(0, 4, size=n))
    return WeightedGraph.from_edges(u, v, w, n, b=cap, name=f"{shape}_{kind}")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=weighted_graphs())
def test_every_reference_is_greedy_edge_for_edge(g):
    ref, _ = solve(Greedy, g)
    v = PROBLEM.verify(g, ref)
    assert v.verified, v.reason
    expect = pairs(ref)
    for cls in HEURISTICS:
        if cls in (NkSuitor, NkBSuitor) and not _have_networkit():
            continue
        ans, reason = solve(cls, g)
        if ans is None:
            assert not g.is_matching and not cls.b_matching, reason
            continue
        assert pairs(ans) == expect, cls.name
        va = PROBLEM.verify(g, ans)
        assert va.verified and va.objective == v.objective, (cls.name, va.reason)
    best, reason = solve(MwmExact, g)
    if best is None:
        assert not g.is_matching, reason
        return
    vb = PROBLEM.verify(g, best)
    assert vb.verified, vb.reason
    assert vb.objective == pytest.approx(v.reference, rel=1e-12, abs=1e-12)
    assert 0.5 * vb.objective <= v.objective <= vb.objective + 1e-12


@pytest.mark.parametrize(
    "g",
    [
        W.kronecker(9, seed=2),
        W.delaunay(9, seed=3, weights="geometric"),
        W.rgg(9, seed=4, weights="geometric"),
        W.grid(8, seed=5),
        W.road(9, seed=6, capacity="random"),
        W.delaunay(9, seed=7, capacity=3),
        *[W.wmatch_smoke(name) for name in W.SMOKE],
    ],
    ids=lambda g: g.name,
)
def test_references_agree_on_generated_graphs(g):
    ref, _ = solve(Greedy, g)
    v = PROBLEM.verify(g, ref)
    assert v.verified, v.reason
    ran = 0
    for cls in HEURISTICS:
        ans, _reason = solve(cls, g)
        if ans is None:
            continue
        ran += 1
        assert pairs(ans) == pairs(ref), cls.name
    assert ran >= 2  # bsuitor, and nk_bsuitor where installed, take every instance


@pytest.mark.parametrize("cls", [LocallyDominant, Suitor, NkSuitor, MwmExact])
def test_matching_only_solvers_skip_b_matching(cls):
    g = W.wmatch_smoke("clique_b2")
    skip, reason = configured(cls).skip(g)
    assert skip and "b = 1" in reason
    expect_skip = cls is NkSuitor and not _have_networkit()
    assert configured(cls).skip(W.wmatch_smoke("star"))[0] == expect_skip


def test_mwm_exact_skips_large_graphs_with_a_reason():
    g = W.grid(10)  # 1024 vertices
    assert g.n > EXACT_MAX_VERTICES
    skip, reason = MwmExact().skip(g)
    assert skip and "1024 vertices" in reason and str(EXACT_MAX_VERTICES) in reason


@pytest.mark.parametrize("cls", [NkSuitor, NkBSuitor])
def test_networkit_solvers_skip_without_networkit(monkeypatch, cls):
    monkeypatch.setitem(sys.modules, "networkit", None)  # makes "import networkit" fail
    skip, reason = configured(cls).skip(W.wmatch_smoke("star"))
    assert skip and "networkit is not installed" in reason


@pytest.mark.skipif(not _have_networkit(), reason="networkit not installed")
@pytest.mark.parametrize("cls", [NkSuitor, NkBSuitor])
def test_networkit_threads(cls):
    import os

    g = W.wmatch_smoke("clique_ties")
    s = configured(cls, threads=None)
    s.prepare(g)
    s.run()
    assert s.counters()["threads"] == len(os.sched_getaffinity(0))
    assert PROBLEM.verify(g, s.result()).verified
    assert configured(cls, threads=2).variant() == "threads=2"
    for bad in (0, -1, 1.5, True, "all"):
        with pytest.raises(ValueError, match="threads"):
            configured(cls, threads=bad)


def test_counters_and_life_cycle():
    g = W.delaunay(8, seed=1)
    for cls, keys in (
        (Greedy, {"edges"}),
        (LocallyDominant, {"iterations", "processed"}),
        (Suitor, {"proposals", "displaced"}),
        (BSuitor, {"proposals", "displaced"}),
    ):
        s = configured(cls)
        with pytest.raises(RuntimeError, match="before"):
            s.run()
        s.prepare(g)
        with pytest.raises(RuntimeError, match="before run"):
            s.result()
        s.run()
        c = s.counters()
        assert set(c) == keys and all(x >= 0 for x in c.values())
    s = Suitor()
    s.prepare(g)
    s.run()
    assert s.counters()["proposals"] >= g.n // 2


def test_int64_indices_compile_and_agree():
    g = W.wmatch_smoke("grid_ties")
    big = WeightedGraph(g.n, g.ptr, g.ind, g.weight, name="i64")
    # the constructor picks int32 for a small graph; a huge one gets int64
    big.ptr, big.ind = g.ptr.astype(np.int64), g.ind.astype(np.int64)
    ref, _ = solve(Greedy, g)
    for cls in (LocallyDominant, Suitor, BSuitor):
        ans, _ = solve(cls, big)
        assert pairs(ans) == pairs(ref), cls.name


@pytest.mark.parametrize("name", WMATCH_CONFS)
def test_algorithm_configs_instantiate_to_their_solver(name):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    solver = instantiate(OmegaConf.load(CONF / f"{name}.yaml"))
    assert solver.name == name and solver.problem == "wmatch" and solver.device == "cpu"
    if name.startswith("nk_"):
        assert solver.params == {"threads": 1}
