"""Leiden (Traag, Waltman & van Eck 2019) and the connectivity certificate: verified,
connected partitions; Q against our Louvain; planted communities recovered; node optimality
at the fixed point; seeded determinism; the certificate against networkx, on hand-made
disconnected communities, and on hostile answers (mutation tests)."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from matchbench.core.params import configured
from matchbench.families.community import datasets as D
from matchbench.families.community import leiden as LD
from matchbench.families.community.connectivity import disconnected_communities
from matchbench.families.community.leiden import Leiden, leiden
from matchbench.families.community.louvain import Louvain, louvain
from matchbench.families.community.problem import (
    DISCONNECTED_NOTE,
    Community,
    CommunityGraph,
    Partition,
    modularity,
    move_gain,
)

ROOT = Path(__file__).resolve().parents[2]
P = Community()


def _random_graph(seed: int, n: int = 60, p: float = 0.08, isolated: int = 3) -> CommunityGraph:
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    keep[0] = True
    return CommunityGraph.from_edges(
        iu[keep], ju[keep], rng.uniform(0.1, 3.0, int(keep.sum())), n + isolated, name=f"r{seed}"
    )


def _two_triangles_apart() -> CommunityGraph:
    """Two triangles, no edge between them: {0, 1, 2} and {3, 4, 5}."""
    return CommunityGraph.from_edges(
        [0, 0, 1, 3, 3, 4], [1, 2, 2, 4, 5, 5], np.ones(6), 6, name="triangles_apart"
    )


GRAPHS = {
    "karate": lambda: D.community_smoke("karate"),
    "ring_of_cliques": lambda: D.community_smoke("ring_of_cliques"),
    "weighted_isolated": lambda: D.community_smoke("weighted_isolated"),
    "two_triangles": lambda: D.community_smoke("two_triangles"),
    "planted": lambda: D.community_planted(400, 5, 0.2, 0.01, seed=3),
    "planted_weighted": lambda: D.community_planted(300, 6, 0.3, 0.02, seed=1, weights="uniform"),
    "random": lambda: _random_graph(7),
    "rgg": lambda: D.community_rgg(9, seed=2),
    "delaunay": lambda: D.community_delaunay(9, seed=2),
}


def _solve(g, **params):
    s = configured(Leiden, **params)
    assert s.skip(g) == (False, None)
    s.prepare(g)
    s.run()
    return s, s.result()


# ---------------------------------------------------------------------------------------
# Leiden's answers


@pytest.mark.parametrize("theta", [0.01, 0.0])
@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_answers_verify_and_are_connected(graph, theta):
    g = GRAPHS[graph]()
    s, part = _solve(g, theta=theta)
    v = P.verify(g, part)
    assert v.verified and v.reason is None, v.reason
    assert part.connected is True
    assert disconnected_communities(g, part.community).count == 0
    assert v.objective == modularity(g, part.community)
    c = s.counters()
    assert c["communities"] == part.n_communities
    assert 1 <= c["iterations"] <= 1000 and len(c["iteration_q"]) == c["iterations"]
    assert {"move", "refine", "aggregate"} == set(s.timings())


@pytest.mark.parametrize("seed", range(6))
def test_q_at_least_louvains_on_planted_graphs(seed):
    g = D.community_planted(240, 4 + seed % 3, 0.15, 0.02, seed=seed)
    q_louvain = P.verify(g, louvain(g)[0]).objective
    for leiden_seed in (1, 2):
        q = P.verify(g, leiden(g, seed=leiden_seed)[0]).objective
        assert q >= q_louvain - 2e-3, (q, q_louvain)


@pytest.mark.parametrize("graph", ["rgg", "delaunay", "random", "karate"])
def test_q_at_least_louvains_on_sparse_graphs(graph):
    g = GRAPHS[graph]()
    assert leiden(g)[0].modularity >= louvain(g)[0].modularity - 2e-3


@pytest.mark.parametrize(
    "args",
    [(300, 5, 0.3, 0.005, 2), (400, 5, 0.2, 0.01, 3), (500, 10, 0.3, 0.003, 4)],
    ids=str,
)
@pytest.mark.parametrize("theta", [0.01, 0.0])
def test_planted_communities_are_recovered(args, theta):
    n, k, p_in, p_out, seed = args
    g = D.community_planted(n, k, p_in, p_out, seed=seed)
    part = leiden(g, theta=theta, seed=seed)[0]
    # the same partition up to the names of the communities
    pairs = np.unique(np.stack([D.planted_truth(g), part.community]), axis=1)
    assert pairs.shape[1] == k and part.n_communities == k


def test_karate_reaches_the_best_known_q():
    # 0.4197896 is the optimum of Zachary's karate club (Brandes et al. 2008)
    part = leiden(D.community_smoke("karate"))[0]
    assert part.modularity == pytest.approx(0.4197896, abs=1e-6)


@pytest.mark.parametrize("graph", ["karate", "planted", "random", "weighted_isolated"])
def test_fixed_point_is_node_optimal(graph):
    """An iteration that changes nothing moved no node (every move gains): at the end, no
    vertex gains by joining a neighbouring community or a new one (Eq. 2)."""
    g = GRAPHS[graph]()
    part, counters, _ = leiden(g)
    assert counters["iterations"] < 1000
    c = part.community
    fresh = part.n_communities
    for i in range(g.n):
        targets = set(c[g.ind[g.ptr[i] : g.ptr[i + 1]]].tolist()) - {c[i]}
        for t in [*targets, fresh]:
            assert move_gain(g, c, i, t) <= 1e-12, (i, t)


def test_levels_compose_to_the_answer_and_ids_are_canonical():
    g = GRAPHS["planted"]()
    part = leiden(g)[0]
    assert part.levels
    composed = np.arange(g.n)
    for level in part.levels:
        composed = level[composed]
    assert np.array_equal(composed, part.community)
    first = np.unique(part.community, return_index=True)[1]
    assert (np.diff(first) > 0).all()  # ids numbered by their smallest vertex


def test_first_iteration_only():
    g = GRAPHS["rgg"]()
    part, counters, _ = leiden(g, max_iterations=1)
    assert counters["iterations"] == 1 and P.verify(g, part).verified
    assert part.modularity <= leiden(g)[0].modularity + 1e-12


def test_seeded_and_deterministic():
    g = GRAPHS["rgg"]()
    a = leiden(g, seed=5)[0]
    b = leiden(g, seed=5)[0]
    assert np.array_equal(a.community, b.community) and a.modularity == b.modularity
    # the seed reaches the node orders: some other seed gives another answer
    others = [leiden(g, seed=s)[0].community for s in range(6, 10)]
    assert any(not np.array_equal(a.community, o) for o in others)


def test_resolution_controls_the_community_count():
    g = GRAPHS["planted"]()
    low = leiden(g, resolution=0.2)[0]
    high = leiden(g, resolution=5.0)[0]
    assert low.n_communities < 5 < high.n_communities
    for part in (low, high):  # the claimed Q is modularity (gamma = 1) whatever gamma
        assert P.verify(g, part).verified


def test_edgeless_and_empty_graphs():
    g = CommunityGraph.from_edges([], [], [], 4, name="edgeless")
    part, counters, _ = leiden(g)
    assert np.array_equal(part.community, np.arange(4)) and part.modularity == 0.0
    assert part.levels is None and counters["iterations"] == 1
    assert P.verify(g, part).verified
    e = CommunityGraph.from_edges([], [], [], 0, name="empty")
    assert leiden(e)[0].community.shape == (0,)


def test_refinement_that_merges_nothing_falls_back_to_connected_pieces(monkeypatch):
    """A refinement that leaves every node alone would rebuild the same level forever; the
    connected pieces of the communities are aggregated instead, and the answer stays
    connected."""
    def merges_nothing(n, ptr, ind, w, k, comm, n_comm, r, theta):
        return np.arange(n), 0

    monkeypatch.setattr(LD, "_refine", merges_nothing)
    for name in ("karate", "planted", "weighted_isolated"):
        g = GRAPHS[name]()
        part, counters, _ = leiden(g)
        assert counters["fallbacks"] > 0 and counters["merges"] == 0
        v = P.verify(g, part)
        assert v.verified and v.reason is None, v.reason


def test_bad_parameters():
    g = GRAPHS["karate"]()
    for kwargs, name in [
        ({"resolution": 0}, "leiden: resolution"),
        ({"resolution": float("nan")}, "leiden: resolution"),
        ({"theta": -0.1}, "leiden: theta"),
        ({"max_iterations": 0}, "leiden: max_iterations"),
        ({"max_iterations": 2.5}, "leiden: max_iterations"),
        ({"seed": -1}, "leiden: seed"),
        ({"seed": True}, "leiden: seed"),
    ]:
        with pytest.raises(ValueError, match=name):
            leiden(g, **kwargs)
        with pytest.raises(ValueError, match=name):
            configured(Leiden, **kwargs)


def test_life_cycle_and_config():
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "algorithm" / "leiden.yaml"))
    s = instantiate(cfg, _convert_="all")
    assert isinstance(s, Leiden) and s.name == "leiden" and s.problem == "community"
    assert s.device == "cpu"
    with pytest.raises(RuntimeError, match="before"):
        s.run()
    with pytest.raises(RuntimeError, match="before"):
        s.result()
    g = D.community_smoke("ring_of_cliques")
    answers = []
    for _ in range(2):  # prepare resets: the second repetition answers alike
        s.prepare(g)
        s.run()
        answers.append(s.result())
        assert P.verify(g, answers[-1]).verified
    assert np.array_equal(answers[0].community, answers[1].community)
    assert s.measurements().counters["iterations"] >= 1


# ---------------------------------------------------------------------------------------
# The connectivity certificate


def _nx_disconnected(g: CommunityGraph, community: np.ndarray) -> list[int]:
    h = nx.Graph()
    h.add_nodes_from(range(g.n))
    u, v, _ = g.edges()
    h.add_edges_from(zip(u.tolist(), v.tolist(), strict=True))
    return [
        c
        for c in np.unique(community).tolist()
        if not nx.is_connected(h.subgraph(np.flatnonzero(community == c).tolist()))
    ]


@pytest.mark.parametrize("seed", range(40))
def test_certificate_equals_networkx_on_random_partitions(seed):
    rng = np.random.default_rng(seed)
    g = _random_graph(seed, n=int(rng.integers(2, 40)), p=float(rng.uniform(0.02, 0.3)))
    k = int(rng.integers(1, g.n + 1))
    c = rng.permutation(np.concatenate([np.arange(k), rng.integers(0, k, g.n - k)]))
    bad = _nx_disconnected(g, c)
    d = disconnected_communities(g, c)
    assert d.count == len(bad) and d.communities == k
    if bad:
        assert d.example == bad[0]
        x, y = d.witness
        assert c[x] == c[y] == d.example and x < y
        h = nx.Graph()
        h.add_nodes_from(np.flatnonzero(c == d.example).tolist())
        u, v, _ = g.edges()
        h.add_edges_from((a, b) for a, b in zip(u.tolist(), v.tolist(), strict=True)
                         if c[a] == c[b] == d.example)
        assert not nx.has_path(h, x, y)
        assert d.pieces == nx.number_connected_components(h)
    else:
        assert d.example is None and d.witness is None and d.describe() is None


def test_two_disjoint_triangles_as_one_community():
    g = _two_triangles_apart()
    one = np.zeros(6, dtype=np.int64)
    d = disconnected_communities(g, one)
    assert (d.count, d.communities, d.example, d.pieces, d.witness) == (1, 1, 0, 2, (0, 3))
    # claimed connected: rejected, naming the community and two vertices
    v = P.verify(g, Partition(one, None, modularity(g, one), connected=True))
    assert not v.verified
    assert "triangles_apart" in v.reason and "claims connected communities" in v.reason
    assert "community 0" in v.reason and "vertex 0 to vertex 3" in v.reason
    assert v.objective == modularity(g, one)
    # no claim (a Louvain answer): verified, the count noted in the reason
    v = P.verify(g, Partition(one, None, modularity(g, one)))
    assert v.verified and v.reason.startswith(DISCONNECTED_NOTE)
    assert "1 of 1 communities are disconnected" in v.reason and "community 0" in v.reason
    assert P.verify(g, one).verified  # a bare array claims nothing
    # the two triangles apart: connected, no note either way
    two = np.array([0, 0, 0, 1, 1, 1])
    for claim in (True, False):
        v = P.verify(g, Partition(two, connected=claim))
        assert v.verified and v.reason is None


def test_the_example_is_the_smallest_disconnected_community():
    g = CommunityGraph.from_edges(
        [0, 1, 3, 4, 6, 7], [1, 2, 4, 5, 7, 8], np.ones(6), 10, name="three_paths"
    )
    # community 1: {0, 1, 2} connected; 0: {3, 4, 5} + isolated 9; 2: {6, 7, 8} connected
    c = np.array([1, 1, 1, 0, 0, 0, 2, 2, 2, 0])
    d = disconnected_communities(g, c)
    assert (d.count, d.example, d.pieces, d.witness) == (1, 0, 2, (3, 9))
    c2 = np.array([1, 2, 1, 0, 0, 0, 2, 2, 2, 0])  # now 1 and 2 split as well
    d2 = disconnected_communities(g, c2)
    assert d2.count == 3 and d2.example == 0
    # sparse huge ids (not dense: allowed here) give the same verdict, named by those ids
    big = np.array([7, 10**15, 10**12])[c2]
    d3 = disconnected_communities(g, big)
    assert (d3.count, d3.communities, d3.example, d3.pieces, d3.witness) == (
        3, 3, 7, d2.pieces, d2.witness)
    d4 = disconnected_communities(g, np.array([7, 10**15, 10**12])[c])
    assert (d4.count, d4.example, d4.pieces, d4.witness) == (1, 7, 2, (3, 9))


@pytest.mark.parametrize("graph", ["ring_of_cliques", "rgg", "karate", "weighted_isolated"])
def test_a_leiden_answer_broken_apart_is_rejected(graph):
    """Mutation: join two communities that share no edge into one (Q recomputed for the
    claim, so that only the connectivity claim is false)."""
    g = GRAPHS[graph]()
    part = leiden(g)[0]
    c = part.community.copy()
    u, v, _ = g.edges()
    k = part.n_communities
    adjacent = np.zeros((k, k), dtype=bool)
    adjacent[c[u], c[v]] = adjacent[c[v], c[u]] = True
    a, b = next((a, b) for a in range(k) for b in range(a + 1, k) if not adjacent[a, b])
    c[c == b] = a
    c = np.unique(c, return_inverse=True)[1]
    bad = Partition(c, None, modularity(g, c), connected=True)
    ver = P.verify(g, bad)
    assert not ver.verified and "claims connected communities" in ver.reason
    assert f"community {int(c[np.flatnonzero(part.community == a)[0]])}" in ver.reason
    bad.connected = False  # the same answer without the claim passes, with the note
    ver = P.verify(g, bad)
    assert ver.verified and ver.reason.startswith(DISCONNECTED_NOTE)


def test_louvain_answers_pass_with_disconnected_communities_noted():
    g = _two_triangles_apart()
    # whatever Louvain returns, it makes no claim; a disconnected community is only noted
    part = louvain(g)[0]
    assert part.connected is False
    assert P.verify(g, part).verified
    s = configured(Louvain)
    s.prepare(g)
    s.run()
    assert s.result().connected is False


@pytest.mark.parametrize(
    "claim, why",
    [
        ("yes", "connected is 'yes', expected true or false"),
        (1, "connected is 1, expected true or false"),
        (None, "connected is None, expected true or false"),
        (np.array([True]), "expected true or false"),
    ],
)
def test_hostile_connected_claims_are_invalid(claim, why):
    g = _two_triangles_apart()
    c = np.array([0, 0, 0, 1, 1, 1])
    v = P.verify(g, Partition(c, connected=claim))
    assert not v.verified and why in v.reason and "invalid" in v.reason
    assert np.isnan(v.objective)
    assert P.verify(g, Partition(c, connected=np.True_)).verified


@pytest.mark.parametrize(
    "community, why",
    [
        (np.zeros(5, dtype=np.int64), "shape"),
        (np.zeros((6, 1), dtype=np.int64), "shape"),
        (np.zeros(6), "dtype"),
        (np.array([0, 0, 0, -1, 1, 1]), "negative"),
        (np.array([0, 0, 0, 2, 2, 2]), "not dense"),
    ],
)
def test_hostile_partitions_claiming_connectivity_still_rejected(community, why):
    g = _two_triangles_apart()
    v = P.verify(g, Partition(community, connected=True))
    assert not v.verified and why in v.reason


@pytest.mark.parametrize(
    "community, why",
    [
        (np.zeros(5, dtype=np.int64), "shape"),
        (np.zeros(6), "dtype"),
        (np.array([0, 0, 0, -1, 1, 1]), "negative"),
    ],
)
def test_certificate_input_errors_name_the_graph(community, why):
    with pytest.raises(ValueError, match=f"triangles_apart: .*{why}"):
        disconnected_communities(_two_triangles_apart(), community)


def test_certificate_on_graphs_without_vertices_or_edges():
    e = CommunityGraph.from_edges([], [], [], 0, name="empty")
    assert disconnected_communities(e, np.zeros(0, dtype=np.int64)).count == 0
    g = CommunityGraph.from_edges([], [], [], 3, name="edgeless")
    d = disconnected_communities(g, np.array([0, 0, 1]))
    assert (d.count, d.example, d.witness) == (1, 0, (0, 1))


# ---------------------------------------------------------------------------------------
# The real pipeline


def test_sweep_through_the_cli_writes_verified_parquet_rows(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from matchbench.results.store import read_results

    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "matchbench",
            "-m",
            "algorithm=leiden,louvain",
            "dataset=community_smoke",
            f"run.results_dir={tmp_path}",
            "cluster=local_cpu",
            "cluster.n_workers=2",
            "cluster.dashboard_address=:0",
            "gpu.repetitions=1",
        ],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    df = read_results(tmp_path)
    assert len(df) == 2 * len(D.SMOKE)
    assert (df.status == "ok").all() and df.verified.all() and (df.problem == "community").all()
    ld = df[df.algorithm == "leiden"]
    assert ld.verify_reason.isna().all() and (ld.iterations >= 1).all()
    assert ld.phases_json.map(lambda s: set(json.loads(s)) == {"move", "refine", "aggregate"}).all()
    assert ld.counters_json.map(lambda s: json.loads(s)["fallbacks"] == 0).all()
    q = df.pivot_table(index="instance", columns="algorithm", values="objective")
    assert (q["leiden"] >= q["louvain"] - 1e-3).all(), q
