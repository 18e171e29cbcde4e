"""The community certificate: Q (Eq. 1) against networkx and closed forms, Eq. 2 against the
difference of Q, aggregation keeping Q (self-loops), and every defect rejected with a reason
naming the instance and the defect (mutation tests)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from matchbench.core.problem import get_problem
from matchbench.families.community.problem import (
    MODULARITY_RTOL,
    Community,
    Partition,
    aggregate,
    modularity,
    move_gain,
)
from matchbench.families.wmatch.problem import WeightedGraph

P = Community()


def _random_graph(rng: np.random.Generator, n: int, p: float, name: str) -> WeightedGraph:
    """G(n, p) with uniform weights in (0.1, 10], and at least one edge (a graph without
    edges has Q = 0/0 for networkx; its own test is below); other vertices stay isolated."""
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    keep[rng.integers(iu.size)] = True
    w = rng.uniform(0.1, 10.0, int(keep.sum()))
    return WeightedGraph.from_edges(iu[keep], ju[keep], w, n, name=name)


def _nx_modularity(g: WeightedGraph, community: np.ndarray, loop=None) -> float:
    h = nx.Graph()
    h.add_nodes_from(range(g.n))
    u, v, w = g.edges()
    h.add_weighted_edges_from(zip(u.tolist(), v.tolist(), w.tolist(), strict=True))
    if loop is not None:
        for x in np.flatnonzero(loop):
            h.add_edge(int(x), int(x), weight=float(loop[x]))
    sets = [set(np.flatnonzero(community == c).tolist()) for c in range(community.max() + 1)]
    return nx.community.modularity(h, sets, weight="weight")


def _path4() -> WeightedGraph:
    # 0-1 (2), 1-2 (1), 2-3 (3): two natural communities {0,1} and {2,3}
    return WeightedGraph.from_edges([0, 1, 2], [1, 2, 3], [2.0, 1.0, 3.0], 4, name="path4")


@pytest.mark.parametrize("seed", range(120))
def test_modularity_equals_networkx_on_random_graphs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    g = _random_graph(rng, n, float(rng.uniform(0.05, 0.6)), f"r{seed}")
    # a few isolated vertices on top: no edge, any community
    extra = int(rng.integers(0, 4))
    if extra:
        u, v, w = g.edges()
        g = WeightedGraph.from_edges(u, v, w, n + extra, name=g.name)
    k = int(rng.integers(1, g.n + 1))
    c = rng.permutation(np.concatenate([np.arange(k), rng.integers(0, k, g.n - k)]))
    assert modularity(g, c) == pytest.approx(_nx_modularity(g, c), rel=1e-12, abs=1e-12)
    v = P.verify(g, Partition(c, modularity=_nx_modularity(g, c)))
    assert v.verified, v.reason
    assert v.objective == modularity(g, c)
    assert v.reference is None and v.bound is None


def test_isolated_vertices_change_nothing():
    g = _path4()
    h = WeightedGraph.from_edges([0, 1, 2], [1, 2, 3], [2.0, 1.0, 3.0], 6, name="path4+2")
    c = np.array([0, 0, 1, 1])
    q = modularity(g, c)
    for extra in ([0, 0], [1, 0], [2, 3], [2, 2]):
        assert modularity(h, np.concatenate([c, extra])) == pytest.approx(q, abs=1e-15)


def test_hand_computed_path():
    # m = 6; k = (2, 3, 4, 3); {0,1}: a = 5, inside 2*2; {2,3}: a = 7, inside 2*3
    g = _path4()
    assert modularity(g, np.array([0, 0, 1, 1])) == pytest.approx(10 / 12 - (25 + 49) / 144)


@pytest.mark.parametrize("seed", range(10))
def test_closed_forms_singletons_and_all_in_one(seed):
    g = _random_graph(np.random.default_rng(seed), 20, 0.3, f"c{seed}")
    k = np.asarray(g.to_scipy().sum(axis=1)).ravel()
    two_m = k.sum()
    # singletons: no edge inside, Q = -sum k_i^2 / (2m)^2
    assert modularity(g, np.arange(g.n)) == pytest.approx(-(k**2).sum() / two_m**2, rel=1e-12)
    # all in one: everything inside, a = 2m, Q = 1 - 1 = 0
    assert modularity(g, np.zeros(g.n, dtype=np.int64)) == pytest.approx(0.0, abs=1e-14)


def test_edgeless_graph_has_zero_modularity():
    g = WeightedGraph.from_edges([], [], [], 3, name="empty")
    assert modularity(g, np.array([0, 1, 2])) == 0.0
    assert P.verify(g, Partition(np.array([0, 0, 1]), modularity=0.0)).verified


def test_planted_partition_has_the_known_high_modularity():
    # 4 cliques of 8 (weight 1), joined in a ring by one edge of weight 1 between neighbours:
    # per block inside 28 edges, a_c = 2*28 + 2; m = 4*28 + 4 = 116.
    # Q = 4*28/116 - 4*(58/232)^2 = 112/116 - 1/4.
    u, v = [], []
    for b in range(4):
        for i in range(8):
            for j in range(i + 1, 8):
                u.append(8 * b + i)
                v.append(8 * b + j)
        u.append(8 * b)
        v.append((8 * (b + 1) + 7) % 32)
    g = WeightedGraph.from_edges(u, v, np.ones(len(u)), 32, name="planted")
    truth = np.repeat(np.arange(4), 8)
    q = modularity(g, truth)
    assert q == pytest.approx(112 / 116 - 1 / 4, rel=1e-14)
    assert q > 0.7
    assert q == pytest.approx(_nx_modularity(g, truth), rel=1e-12)
    rng = np.random.default_rng(0)
    for _ in range(20):  # any other split does worse on this graph
        assert modularity(g, rng.permutation(truth)) < q
    assert P.verify(g, Partition(truth, modularity=q)).objective == q


@pytest.mark.parametrize("seed", range(30))
def test_move_gain_equals_the_change_of_q(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, 15, 0.35, f"m{seed}")
    c = rng.integers(0, 4, g.n)
    c = np.unique(c, return_inverse=True)[1]
    loop = np.where(rng.random(g.n) < 0.3, rng.uniform(0.5, 5.0, g.n), 0.0)
    k = int(c.max()) + 1
    for i in range(g.n):
        for target in range(k + 1):  # k: i alone in a new community
            after = c.copy()
            after[i] = target
            after = np.unique(after, return_inverse=True)[1]
            want = modularity(g, after, loop) - modularity(g, c, loop)
            assert move_gain(g, c, i, target, loop) == pytest.approx(want, abs=1e-12)


def test_self_loops_hand_computed_and_networkx():
    # path4 plus a loop of weight 1.5 at vertex 0: m = 7.5, k = (2+3, 3, 4, 3),
    # {0,1}: a = 8, inside 2*2 + 2*1.5 = 7; {2,3}: a = 7, inside 6
    g = _path4()
    loop = np.array([1.5, 0, 0, 0])
    c = np.array([0, 0, 1, 1])
    want = (7 + 6) / 15 - (64 + 49) / 225
    assert modularity(g, c, loop) == pytest.approx(want, rel=1e-14)
    assert modularity(g, c, loop) == pytest.approx(_nx_modularity(g, c, loop), rel=1e-12)


def test_weighted_graph_cannot_hold_a_self_loop():
    from matchbench.datasets import DatasetError

    with pytest.raises(DatasetError, match="self-loop"):
        WeightedGraph.from_edges([0], [0], [1.0], 2, name="loop")


@pytest.mark.parametrize("seed", range(20))
def test_aggregation_keeps_q_two_stages(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, 25, 0.25, f"a{seed}")
    c1 = np.unique(rng.integers(0, 8, g.n), return_inverse=True)[1]
    q = modularity(g, c1)
    g1, loop1 = aggregate(g, c1)
    assert modularity(g1, np.arange(g1.n), loop1) == pytest.approx(q, abs=1e-12)
    assert modularity(g1, np.arange(g1.n), loop1) == pytest.approx(
        _nx_modularity(g1, np.arange(g1.n), loop1), abs=1e-12
    )
    l2 = np.unique(rng.integers(0, 3, g1.n), return_inverse=True)[1]
    g2, loop2 = aggregate(g1, l2, loop1)
    composed = l2[c1]
    q2 = modularity(g, composed)
    assert modularity(g1, l2, loop1) == pytest.approx(q2, abs=1e-12)
    assert modularity(g2, np.arange(g2.n), loop2) == pytest.approx(q2, abs=1e-12)
    v = P.verify(g, Partition(composed, levels=[c1, l2], modularity=q2))
    assert v.verified, v.reason


def test_lookup_and_family_attributes():
    p = get_problem("community")
    assert type(p) is Community
    assert (p.objective, p.sense, p.exact) == ("modularity", "max", False)


def test_bare_array_answer_is_accepted():
    g = _path4()
    v = P.verify(g, np.array([0, 0, 1, 1]))
    assert v.verified and v.objective == modularity(g, np.array([0, 0, 1, 1]))


# ---------------------------------------------------------------------------------------
# Mutation tests: break a correct answer, the verifier must say what broke


GOOD = np.array([0, 0, 1, 1])


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (Partition(GOOD[:3]), "shape (3,), expected (4,)"),
        (Partition(np.array([0, 0, 1, 1, 1])), "shape (5,), expected (4,)"),
        (Partition(GOOD.reshape(2, 2)), "shape (2, 2)"),
        (Partition(GOOD.astype(np.float64)), "dtype float64, expected integers"),
        (Partition(GOOD.astype(bool)), "dtype bool, expected integers"),
        (Partition(np.array([0, -1, 1, 1])), "community[1] = -1 is a negative community id"),
        (Partition(np.array([0, 0, 2, 2])), "not dense: 3 ids [0, 3) but id 1 is unused"),
        (Partition(np.array([1, 1, 3, 3])), "id 0 is unused"),
        # a hostile id: named, and no array of that length is made
        (Partition(np.array([0, 10**15, 1, 1])), "community[1] = 1000000000000000, but 4 items"),
        (Partition(np.array([0, 0, 4, 1])), "community[2] = 4, but 4 items have ids below 4"),
        ([0, 0, 1, 1], "expected a Partition or an array of community ids, got list"),
        (
            Partition(GOOD, levels=[GOOD, np.array([0, 0])]),
            "levels compose to community 0 for vertex 2",
        ),
        (Partition(GOOD, levels=[GOOD, np.array([0])]), "levels[1] has shape (1,), expected (2,)"),
        (
            Partition(GOOD, levels=[np.array([0, 1, 2, 2])]),
            "levels compose to community 1 for vertex 1",
        ),
        (Partition(GOOD, levels=[]), "levels is empty"),
    ],
)
def test_invalid_partitions_are_rejected(answer, needle):
    v = P.verify(_path4(), answer)
    assert not v.verified
    assert "community answer on 'path4'" in v.reason
    assert "invalid" in v.reason
    assert needle in v.reason
    assert np.isnan(v.objective)


@pytest.mark.parametrize("delta", [1e-6, -1e-6, 5 * MODULARITY_RTOL])
def test_reported_modularity_mismatch_is_rejected(delta):
    g = _path4()
    q = modularity(g, GOOD)
    v = P.verify(g, Partition(GOOD, modularity=q + delta))
    assert not v.verified
    assert "community answer on 'path4'" in v.reason
    assert f"reported modularity {q + delta!r}" in v.reason
    assert f"recomputed Q = {q!r}" in v.reason
    assert v.objective == q


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "high"])
def test_reported_modularity_not_a_number_is_rejected(bad):
    v = P.verify(_path4(), Partition(GOOD, modularity=bad))
    assert not v.verified and "reported modularity" in v.reason


def test_reported_modularity_within_tolerance_is_accepted():
    g = _path4()
    q = modularity(g, GOOD)
    assert P.verify(g, Partition(GOOD, modularity=q + 0.5 * MODULARITY_RTOL)).verified
    # a wrong partition claiming the right partition's Q: rejected by the recomputation
    v = P.verify(g, Partition(np.array([0, 1, 0, 1]), modularity=q))
    assert not v.verified and "differs from the recomputed Q" in v.reason


def test_modularity_function_rejects_bad_labels():
    with pytest.raises(ValueError, match="path4: community ids are not dense"):
        modularity(_path4(), np.array([0, 0, 2, 2]))
    with pytest.raises(ValueError, match="loop has shape"):
        modularity(_path4(), GOOD, loop=np.zeros(3))
