"""LFR benchmark graphs (community_lfr) and ground truths: determinism, realised mixing,
degree and community-size distributions, the truth recomputed (also after RCP), argument
errors; NMI against a brute-force formula and at its edge cases; the dataset configs."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matchbench.datasets import (
    DatasetError,
    clear_cache,
    disk_cache_path,
    expand,
    load,
    spec_problem,
    spec_size_hint,
)
from matchbench.families.community import datasets as C
from matchbench.families.community.problem import CommunityGraph, modularity
from matchbench.families.community.truth import nmi, truth_nmi

CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"
LFR = "matchbench.families.community.datasets.community_lfr"


def _edges(g: CommunityGraph) -> set[tuple[int, int]]:
    u, v, _ = g.edges()
    return set(zip(u.tolist(), v.tolist(), strict=True))


def _ks(sample: np.ndarray, values: np.ndarray, probs: np.ndarray) -> float:
    """Largest distance between the empirical distribution function of ``sample`` and the
    one of ``probs`` on ``values`` (Kolmogorov-Smirnov)."""
    empirical = np.searchsorted(np.sort(sample), values, side="right") / sample.size
    return float(np.abs(empirical - np.cumsum(probs)).max())


@pytest.fixture(scope="module")
def lfr():
    """n = 20000 LFR graphs (defaults: <k> = 20, k_max = 50, communities of 20 to 100)."""
    return {mu: C.community_lfr(20_000, mu, seed=3) for mu in (0.1, 0.3, 0.5)}


# ---------------------------------------------------------------------------------------
# The generator


def test_lfr_is_tagged_and_sized():
    assert C.community_lfr.matchbench_problem == "community"
    assert C.community_lfr.matchbench_disk_cache is True
    assert spec_problem({"_target_": LFR, "n": 10, "mu": 0.1}) == "community"
    small = spec_size_hint({"_target_": LFR, "n": 1000, "mu": 0.1})
    large = spec_size_hint({"_target_": LFR, "n": 1000, "mu": 0.1, "avg_degree": 40})
    assert 0 < small < large


def test_lfr_is_deterministic(lfr):
    g = lfr[0.3]
    h = C.community_lfr(20_000, 0.3, seed=3)
    assert _edges(g) == _edges(h) and g.params == h.params
    assert g.name == "lfr_n20000_mu0.3_k20_kmax50_c20-100_t2-1_s3" and g.family == "lfr"
    assert _edges(C.community_lfr(20_000, 0.3, seed=4)) != _edges(g)
    # the communities depend on (n, tau2, sizes, seed) only, not on the mixing or degrees
    assert np.array_equal(C.lfr_truth(lfr[0.1]), C.lfr_truth(g))


@pytest.mark.parametrize("mu", [0.1, 0.3, 0.5])
def test_lfr_realises_the_mixing_parameter(lfr, mu):
    g = lfr[mu]
    truth = C.ground_truth(g)
    u, v, _ = g.edges()
    across = truth[u] != truth[v]
    # the params report what the edges show
    assert g.params["mu_realised_edges"] == pytest.approx(across.mean(), abs=1e-12)
    deg = np.bincount(np.concatenate([u, v]), minlength=g.n)
    ext = np.bincount(np.concatenate([u[across], v[across]]), minlength=g.n)
    has = deg > 0
    assert g.params["mu_realised"] == pytest.approx(np.mean(ext[has] / deg[has]), abs=1e-12)
    # dropped stubs are mostly internal: mixing a little above mu, never far
    assert mu - 0.005 < g.params["mu_realised"] < mu + 0.01
    assert mu - 0.005 < g.params["mu_realised_edges"] < mu + 0.01
    assert g.params["stubs_dropped"] < 0.02 * deg.sum()
    assert g.params["n_communities"] == truth.max() + 1
    # the planted communities are good ones
    assert modularity(g, truth) > 0.9 * (1 - mu) - 0.05


def test_lfr_degrees_follow_the_power_law(lfr):
    g = lfr[0.3]
    deg = np.diff(g.ptr)
    assert 1 <= deg.max() <= 50 and abs(deg.mean() - 20) < 0.4
    xmin = C._degree_xmin("test", 20.0, 50, 2.0)
    values, probs = C._power_law_pmf(2.0, xmin, 51)
    assert float(np.dot(values, probs)) == pytest.approx(20.0, abs=1e-6)
    assert _ks(deg, values, probs) < 0.03
    # a steeper law with hubs: mean kept, tail heavy
    h = C.community_lfr(20_000, 0.3, avg_degree=10, max_degree=300, tau1=2.5, max_community=400)
    dh = np.diff(h.ptr)
    assert abs(dh.mean() - 10) < 0.3 and dh.max() > 150
    values, probs = C._power_law_pmf(2.5, C._degree_xmin("test", 10.0, 300, 2.5), 301)
    assert _ks(dh, values, probs) < 0.03


def test_lfr_community_sizes_follow_the_power_law(lfr):
    sizes = np.bincount(C.lfr_truth(lfr[0.3]))
    assert sizes.min() >= 20 and sizes.max() <= 100 and sizes.sum() == 20_000
    # many communities (the layout alone is O(n)): the size law itself
    for tau2, lo, hi in ((1.0, 20, 100), (2.0, 10, 1000)):
        sizes, perm = C._lfr_layout("test", 2_000_000, tau2, lo, hi, seed=7)
        assert sizes.min() >= lo and sizes.max() <= hi and sizes.sum() == 2_000_000
        assert np.array_equal(np.sort(perm), np.arange(2_000_000))
        values, probs = C._power_law_pmf(tau2, float(lo), hi + 1)
        assert _ks(sizes, values, probs) < 0.01


def test_lfr_internal_degrees_fit_their_communities():
    # mu = 0: communities are disconnected; hubs of 45 need communities of >= 46
    kw = {"max_degree": 45, "min_community": 10, "max_community": 60, "seed": 2}
    g = C.community_lfr(5000, 0.0, avg_degree=8, **kw)
    truth = C.lfr_truth(g)
    u, v, _ = g.edges()
    assert (truth[u] == truth[v]).all() and g.params["mu_realised"] == 0.0
    deg = np.bincount(np.concatenate([u, v]), minlength=g.n)
    assert (deg < np.bincount(truth)[truth]).all() and deg.max() >= 35
    # at <k> = 20 hardly any vertex has degree <= 9: communities of 10 cannot be filled
    with pytest.raises(DatasetError, match=r"vertices have \d+ or more internal edges"):
        C.community_lfr(5000, 0.0, avg_degree=20, **kw)


def test_lfr_uniform_weights():
    g = C.community_lfr(3000, 0.2, seed=5, weights="uniform")
    assert g.name.endswith("_uniform") and g.params["weight_seed"] == 5
    assert ((g.weight > 0) & (g.weight <= 1)).all() and len(np.unique(g.weight)) > 1000
    assert _edges(g) == _edges(C.community_lfr(3000, 0.2, seed=5))


def test_lfr_communities_are_found_by_louvain():
    import networkx as nx

    g = C.community_lfr(3000, 0.1, seed=1)
    u, v, _ = g.edges()
    h = nx.Graph()
    h.add_nodes_from(range(g.n))
    h.add_edges_from(zip(u.tolist(), v.tolist(), strict=True))
    found = np.empty(g.n, dtype=np.int64)
    for c, members in enumerate(nx.community.louvain_communities(h, seed=1)):
        found[list(members)] = c
    assert truth_nmi(g, found) > 0.9


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"n": 1, "mu": 0.1}, "n must be [2, "),
        ({"n": 1000.5, "mu": 0.1}, "n must be an integer, not 1000.5"),
        ({"n": 1000, "mu": 1.0}, "mu must be a number in [0, 1), not 1.0"),
        ({"n": 1000, "mu": -0.1}, "mu must be a number in [0, 1), not -0.1"),
        ({"n": 1000, "mu": "0.3"}, "mu must be a number in [0, 1), not '0.3'"),
        ({"n": 1000, "mu": float("nan")}, "mu must be a number in [0, 1), not nan"),
        ({"n": 1000, "mu": 0.1, "avg_degree": 60}, "avg_degree must be a number in [1, 50)"),
        ({"n": 1000, "mu": 0.1, "avg_degree": 3}, "avg_degree = 3 is below"),
        ({"n": 1000, "mu": 0.1, "max_degree": 1000}, "max_degree must be [1, 999], not 1000"),
        ({"n": 1000, "mu": 0.1, "max_degree": True}, "max_degree must be an integer, not True"),
        ({"n": 1000, "mu": 0.1, "tau1": -1}, "tau1 must be a number in [0, 10], not -1"),
        ({"n": 1000, "mu": 0.1, "tau2": None}, "tau2 must be a number in [0, 10], not None"),
        ({"n": 1000, "mu": 0.1, "min_community": 0}, "min_community must be [1, 1000], not 0"),
        (
            {"n": 1000, "mu": 0.1, "min_community": 50, "max_community": 40},
            "max_community must be [50, 1000], not 40",
        ),
        ({"n": 1000, "mu": 0.1, "max_community": 40}, "max_community = 40 cannot hold a hub"),
        (
            {"n": 1010, "mu": 0.5, "min_community": 30, "max_community": 30},
            "n = 1010 vertices cannot be split into communities of 30 to 30",
        ),
        ({"n": 1000, "mu": 0.1, "seed": -1}, "seed must be >= 0, not -1"),
        ({"n": 1000, "mu": 0.1, "weights": "gauss"}, "weights must be 'unit' or 'uniform'"),
    ],
)
def test_lfr_bad_arguments(kwargs, fragment):
    with pytest.raises(DatasetError, match="community_lfr") as info:
        C.community_lfr(**kwargs)
    assert fragment in str(info.value), str(info.value)


# ---------------------------------------------------------------------------------------
# Ground truths


def test_ground_truth_dispatches_and_follows_rcp():
    planted = C.community_planted(60, 3, 0.5, 0.02)
    assert np.array_equal(C.ground_truth(planted), C.planted_truth(planted))
    assert C.ground_truth(C.community_smoke("karate")) is None
    assert C.ground_truth(C.community_kron(6)) is None
    with pytest.raises(ValueError, match="not a community_lfr graph"):
        C.lfr_truth(planted)
    (spec,) = expand({"_target_": LFR, "n": 2000, "mu": 0.2, "rcp": True, "rcp_seed": 9})
    clear_cache()
    g = load(spec)
    base = load(dict(spec, rcp=False))
    clear_cache()
    assert g.params["rcp"] is True and g.name.endswith("_rcp")
    truth, base_truth = C.ground_truth(g), C.ground_truth(base)
    assert not np.array_equal(truth, base_truth)
    assert modularity(g, truth) == pytest.approx(modularity(base, base_truth), abs=1e-12)
    u, v, _ = g.edges()
    assert np.mean(truth[u] != truth[v]) == pytest.approx(base.params["mu_realised_edges"])


def test_lfr_disk_cache_keeps_the_truth(tmp_path, monkeypatch):
    monkeypatch.delenv("MATCHBENCH_NO_DISK_CACHE", raising=False)
    (spec,) = expand({"_target_": LFR, "n": 1500, "mu": 0.3, "seed": 2})
    path = disk_cache_path(spec, tmp_path)
    clear_cache()
    first = load(spec, data_dir=tmp_path)
    assert path is not None and path.exists()
    clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = load(spec, data_dir=tmp_path)
    clear_cache()
    assert second is not first and type(second) is CommunityGraph
    assert second.params == first.params
    assert np.array_equal(C.ground_truth(second), C.ground_truth(first))


# ---------------------------------------------------------------------------------------
# NMI


def _brute_nmi(a: list[int], b: list[int]) -> float:
    """The textbook formula, pair by pair, with scikit-learn's conventions."""
    n = len(a)
    ca, cb = sorted(set(a)), sorted(set(b))
    if n == 0 or (len(ca) == 1 and len(cb) == 1):
        return 1.0
    mi = 0.0
    for i in ca:
        for j in cb:
            nij = sum(1 for x, y in zip(a, b, strict=True) if x == i and y == j)
            if nij:
                ai, bj = a.count(i), b.count(j)
                mi += nij / n * math.log(n * nij / (ai * bj))
    h = [-sum(c.count(i) / n * math.log(c.count(i) / n) for i in set(c)) for c in (a, b)]
    return 0.0 if mi == 0 else mi / ((h[0] + h[1]) / 2)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(-3, 6), min_size=n, max_size=n),
            st.lists(st.integers(0, 2**40), min_size=n, max_size=n),
        )
    )
)
def test_nmi_matches_the_formula(pair):
    a, b = pair
    assert nmi(a, b) == pytest.approx(_brute_nmi(a, b), abs=1e-12)
    assert nmi(b, a) == pytest.approx(nmi(a, b), abs=1e-12)


def test_nmi_edge_cases():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, 1000)
    renamed = (rng.choice(2**40, 50, replace=False) - 2**39)[x]  # another name per community
    assert nmi(x, renamed) == 1.0 and nmi(x, x) == 1.0
    assert nmi(np.zeros(10, int), np.zeros(10, int)) == 1.0  # one community each
    assert nmi(np.arange(10), np.arange(10)[::-1]) == 1.0  # all singletons each
    assert nmi(np.zeros(10, int), np.arange(10)) == 0.0  # one community vs singletons
    assert nmi([], []) == 1.0
    assert nmi([0, 0, 1, 1], [0, 1, 0, 1]) == 0.0  # independent
    assert 0.0 < nmi(x, rng.integers(0, 50, 1000)) < 0.4
    assert nmi([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2]) == pytest.approx(
        _brute_nmi([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2])
    )


@pytest.mark.parametrize(
    ("truth", "labels", "fragment"),
    [
        ([0, 1], [0, 1, 2], "lengths 2 and 3"),
        ([[0, 1]], [0, 1], "truth must be a 1-d array"),
        ([0, 1], [0.0, 1.0], "labels must hold integer community ids, not dtype float64"),
        ([True, False], [0, 1], "truth must hold integer community ids, not dtype bool"),
    ],
)
def test_nmi_bad_input(truth, labels, fragment):
    with pytest.raises(ValueError) as info:
        nmi(truth, labels)
    assert fragment in str(info.value)


def test_truth_nmi(lfr):
    g = lfr[0.1]
    truth = C.ground_truth(g)
    assert truth_nmi(g, truth) == 1.0
    assert truth_nmi(g, np.random.default_rng(1).permutation(truth)) < 0.5
    assert truth_nmi(C.community_smoke("karate"), np.zeros(34, int)) is None
    planted = C.community_planted(60, 3, 0.5, 0.02)
    assert truth_nmi(planted, np.repeat([4, 8, 1], 20)) == 1.0
    with pytest.raises(ValueError, match="one id per vertex"):
        truth_nmi(g, truth[:-1])


# ---------------------------------------------------------------------------------------
# The dataset configs


def _bind(spec: dict) -> None:
    import inspect

    from hydra.utils import get_method

    args = {k: v for k, v in spec.items() if not k.startswith("_") and k not in ("rcp", "rcp_seed")}
    inspect.signature(get_method(spec["_target_"])).bind(**args)


@pytest.mark.parametrize("name", ["community_lfr", "community_sota"])
def test_configs_expand_and_bind(name):
    from omegaconf import OmegaConf

    specs = expand(OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml")))
    assert specs
    for spec in specs:
        _bind(spec)
        assert spec_problem(spec) == "community" and spec_size_hint(spec) > 0
    keys = [tuple(sorted((k, str(v)) for k, v in s.items())) for s in specs]
    assert len(set(keys)) == len(keys)


def test_lfr_config_loads_small():
    from omegaconf import OmegaConf

    specs = expand(OmegaConf.to_container(OmegaConf.load(CONF / "community_lfr.yaml")))
    assert sorted({s["mu"] for s in specs}) == [0.1, 0.3, 0.5]
    g = C.community_lfr(
        **{**{k: v for k, v in specs[0].items() if k[0] != "_" and "rcp" not in k}, "n": 2000}
    )
    assert g.params["generator"] == "lfr"


def test_sota_suite_holds_the_issue_set():
    from omegaconf import OmegaConf

    specs = expand(OmegaConf.to_container(OmegaConf.load(CONF / "community_sota.yaml")))
    by = {}
    for s in specs:
        by.setdefault(s["_target_"].rsplit(".", 1)[-1], []).append(s)
    assert {(s["scale"], s.get("edge_factor", 16)) for s in by["community_kron"]} == {
        (sc, ef) for sc in (20, 21, 22, 23) for ef in (16, 48)
    }
    assert sorted(s["mu"] for s in by["community_lfr"]) == [0.1, 0.2, 0.3, 0.4, 0.5]
    assert len(by["community_planted"]) >= 1
    for fn in ("community_delaunay", "community_rgg", "community_road"):
        assert {s["scale"] for s in by[fn]} == {22, 23, 24}
