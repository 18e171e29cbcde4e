"""community datasets: the instance type and its tag, Matrix Market reading and its errors,
the planted partition model and its ground truth, the generators, the smoke set, the cache."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from matchbench.datasets import (
    DatasetError,
    DatasetWarning,
    clear_cache,
    disk_cache_path,
    expand,
    load,
    spec_problem,
)
from matchbench.families.community import datasets as C
from matchbench.families.community.problem import CommunityGraph, modularity
from matchbench.families.wmatch.problem import WeightedGraph
from matchbench.graphs import generators as G

CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"


def _mtx(tmp_path: Path, text: str, name: str = "m.mtx") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _edges(g: WeightedGraph) -> dict[tuple[int, int], float]:
    u, v, w = g.edges()
    return dict(zip(zip(u.tolist(), v.tolist(), strict=True), w.tolist(), strict=True))


def _raises(path, fragment, **kwargs):
    with pytest.raises(DatasetError) as info:
        C.community_mtx(path, **kwargs)
    msg = str(info.value)
    assert "community" in msg and str(path) in msg and fragment in msg, msg
    return msg


# ---------------------------------------------------------------------------------------
# The instance type


def test_community_graph_is_a_weighted_graph_tagged_community():
    g = CommunityGraph.from_edges([0, 1], [1, 2], [1.0, 2.0], 3, name="p3")
    assert isinstance(g, WeightedGraph) and g.problem == "community"
    assert WeightedGraph.problem == "wmatch"  # the weighted family keeps its tag
    assert type(g.permuted(3)) is CommunityGraph  # RCP keeps the family
    with pytest.raises(DatasetError, match="community instance 'x': self-loop at vertex 1"):
        CommunityGraph.from_edges([0, 1], [1, 1], [1.0, 1.0], 3, name="x")
    with pytest.raises(DatasetError, match="community instance 'x': capacities b"):
        CommunityGraph.from_edges([0], [1], [1.0], 2, name="x", b=[1, 1])
    h = CommunityGraph.from_graph(WeightedGraph.from_edges([0], [1], [2.0], 2, b=[1, 2]))
    assert h.b is None and h.problem == "community" and _edges(h) == {(0, 1): 2.0}


def test_dataset_functions_are_tagged_community():
    for fn in (
        C.community_planted,
        C.community_kron,
        C.community_delaunay,
        C.community_rgg,
        C.community_grid,
        C.community_road,
    ):
        assert fn.matchbench_problem == "community" and fn.matchbench_disk_cache is True
    for fn in (C.community_mtx, C.community_suitesparse, C.community_smoke):
        assert fn.matchbench_problem == "community" and fn.matchbench_disk_cache is False
    # the weighted family's readers stay wmatch
    assert spec_problem({"_target_": "matchbench.families.wmatch.datasets.graph_mtx"}) == "wmatch"


@pytest.mark.parametrize("file", sorted(p.name for p in CONF.glob("community_*.yaml")))
def test_dataset_configs_name_community_functions(file):
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(OmegaConf.load(CONF / file))
    specs = [s for s in [cfg, *cfg.get("instances", [])] if "_target_" in s]
    assert specs and all(spec_problem(s) == "community" for s in specs)


def test_planner_pairs_community_data_with_community_solvers_only(tmp_path):
    from matchbench.core.params import config_defaults
    from matchbench.runner.plan import build_plan

    def plan(target, name):
        return build_plan(
            {
                # the algorithm section as `algorithm=NAME` composes it
                "algorithm": {"_target_": target, **config_defaults("algorithm", name)},
                "dataset": {
                    "_target_": "matchbench.families.community.datasets.community_smoke",
                    "name": "karate",
                },
                "gpu": {"repetitions": 1, "warmup": 0},
                "cluster": {"kind": "local_cpu", "n_workers": 1},
                "run": {"results_dir": str(tmp_path), "verify": True},
            }
        )

    assert len(plan("matchbench.families.community.louvain.Louvain", "louvain").tasks) == 1
    wrong = plan("matchbench.families.wmatch.refs.Suitor", "suitor")
    assert not wrong.tasks
    ((algo, solves, label, family),) = wrong.skipped_pairs
    assert (algo, solves, family) == ("suitor", "wmatch", "community") and "karate" in label


# ---------------------------------------------------------------------------------------
# Matrix Market


def test_symmetric_file_drops_diagonal_and_zeros(tmp_path):
    p = _mtx(
        tmp_path,
        "%%MatrixMarket matrix coordinate real symmetric\n"
        "4 4 6\n1 1 9\n2 1 2.5\n3 1 0\n3 2 4\n4 4 1\n4 3 0.5\n",
    )
    g = C.community_mtx(p)
    assert isinstance(g, CommunityGraph) and g.name == "m" and g.n == 4 and g.family == "mtx"
    assert _edges(g) == {(0, 1): 2.5, (1, 2): 4.0, (2, 3): 0.5}
    assert g.params["n_diagonal"] == 2 and g.params["n_zero"] == 1
    assert g.params["symmetrized"] is False and g.params["negative"] == "error"


def test_pattern_file_weighs_one_per_edge(tmp_path):
    p = _mtx(
        tmp_path,
        "%%MatrixMarket matrix coordinate pattern symmetric\n5 5 5\n2 1\n3 2\n5 4\n5 1\n3 3\n",
    )
    g = C.community_mtx(p)
    assert _edges(g) == {(0, 1): 1.0, (1, 2): 1.0, (3, 4): 1.0, (0, 4): 1.0}
    assert g.params["n_diagonal"] == 1 and g.params["field"] == "pattern"


def test_general_file_is_symmetrized_by_the_larger_value(tmp_path):
    p = _mtx(
        tmp_path,
        "%%MatrixMarket matrix coordinate integer general\n"
        "3 3 5\n1 2 3\n2 1 7\n2 3 1\n3 2 1\n1 3 0\n",
    )
    g = C.community_mtx(p)
    assert _edges(g) == {(0, 1): 7.0, (1, 2): 1.0}
    assert g.params["symmetrized"] is True and g.params["n_asymmetric"] == 2


def test_negative_values_are_an_error_or_read_as_absolute_values(tmp_path):
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 -2\n3 2 1\n")
    msg = _raises(p, "entry (2, 1) is -2.0; modularity needs weights >= 0")
    assert "negative='abs'" in msg
    assert _edges(C.community_mtx(p, negative="abs")) == {(0, 1): 2.0, (1, 2): 1.0}


def test_skew_symmetric_file_reads_absolute_values(tmp_path):
    p = _mtx(
        tmp_path, "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 -2\n3 2 1\n"
    )
    assert _edges(C.community_mtx(p)) == {(0, 1): 2.0, (1, 2): 1.0}


def test_self_loop_policy(tmp_path):
    p = _mtx(
        tmp_path, "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 1\n2 2 5\n3 2 1\n"
    )
    assert C.community_mtx(p).params["n_diagonal"] == 1  # dropped by default
    _raises(p, "self-loop (2, 2)", self_loops="error")


def test_duplicates_merge_with_a_warning(tmp_path):
    p = _mtx(
        tmp_path, "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 1\n2 1 4\n3 2 1\n"
    )
    with pytest.warns(DatasetWarning, match="1 duplicate entries merged"):
        g = C.community_mtx(p)
    assert _edges(g) == {(0, 1): 4.0, (1, 2): 1.0}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 nan\n3 2 1\n",
            "entry (2, 1) is nan",
        ),
        (
            "%%MatrixMarket matrix coordinate real general\n3 3 2\n2 1 1\n3 2 inf\n",
            "entry (3, 2) is inf",
        ),
        ("%%MatrixMarket matrix coordinate real general\n3 4 1\n2 1 1\n", "not square (3 x 4)"),
        ("%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n2 1 0\n", "no edge left"),
        ("this is not a matrix\n1 2 3\n", "not a Matrix Market file"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 2\n2 1 x\n3 2 1\n", "line 3"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 2\n2 9 1\n3 2 1\n", "out of range"),
        ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n2 1 1 1\n", "complex"),
    ],
)
def test_bad_files_name_file_and_family(tmp_path, body, fragment):
    _raises(_mtx(tmp_path, body), fragment)


def test_missing_file_and_bad_options(tmp_path):
    _raises(tmp_path / "nope.mtx", "no such file")
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n")
    with pytest.raises(DatasetError, match="negative must be 'error' or 'abs'"):
        C.community_mtx(p, negative="clip")
    with pytest.raises(DatasetError, match="self_loops must be 'drop' or 'error'"):
        C.community_mtx(p, self_loops="keep")


def test_suitesparse_reads_the_resolved_file(tmp_path, monkeypatch):
    from matchbench.graphs import suitesparse

    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 -2\n3 2 1\n")
    monkeypatch.setattr(suitesparse, "resolve", lambda name, data_dir, offline: p)
    g = C.community_suitesparse("Grp/M")
    assert g.name == "M" and g.family == "suitesparse" and g.params["suitesparse"] == "Grp/M"
    assert _edges(g) == {(0, 1): 2.0, (1, 2): 1.0}  # negative="abs" by default here


# ---------------------------------------------------------------------------------------
# Planted partitions


def test_planted_is_deterministic_and_plants_its_groups():
    g = C.community_planted(300, 4, 0.3, 0.01, seed=5)
    h = C.community_planted(300, 4, 0.3, 0.01, seed=5)
    assert _edges(g) == _edges(h) and g.name == "planted_n300_k4_pin0.3_pout0.01_s5"
    assert _edges(C.community_planted(300, 4, 0.3, 0.01, seed=6)) != _edges(g)
    truth = C.planted_truth(g)
    assert np.bincount(truth).tolist() == [75, 75, 75, 75]
    u, v, _ = g.edges()
    inside = truth[u] == truth[v]
    # expected 4 * C(75, 2) * 0.3 = 3330 inside, C(300,2)-... * 0.01 = 337.5 across
    assert 3000 < inside.sum() < 3700 and 230 < (~inside).sum() < 450
    assert modularity(g, truth) > 0.6


def test_planted_extremes_and_uneven_groups():
    g = C.community_planted(10, 3, 1.0, 0.0)  # cliques of 4, 3, 3, no edge between
    assert np.bincount(C.planted_truth(g)).tolist() == [4, 3, 3]
    assert g.n_edges == 6 + 3 + 3
    full = C.community_planted(12, 3, 1.0, 1.0)
    assert full.n_edges == 12 * 11 // 2
    single = C.community_planted(20, 1, 0.5, 0.9, seed=2)  # one group: p_out unused
    assert (C.planted_truth(single) == 0).all()


def test_planted_uniform_weights():
    g = C.community_planted(200, 4, 0.2, 0.01, seed=1, weights="uniform")
    assert g.name.endswith("_uniform") and g.params["weight_seed"] == 1
    assert ((g.weight > 0) & (g.weight <= 1)).all() and len(np.unique(g.weight)) > 100
    assert set(_edges(g)) == set(_edges(C.community_planted(200, 4, 0.2, 0.01, seed=1)))


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"n": 0, "k": 1, "p_in": 0.5, "p_out": 0.1}, "n must be"),
        ({"n": 10, "k": 11, "p_in": 0.5, "p_out": 0.1}, "k must be [1, 10]"),
        ({"n": 10, "k": 2, "p_in": 1.5, "p_out": 0.1}, "p_in = 1.5 is not a probability"),
        ({"n": 10, "k": 2, "p_in": 0.5, "p_out": -0.1}, "p_out = -0.1 is not a probability"),
        ({"n": 10, "k": 2, "p_in": "x", "p_out": 0.1}, "p_in must be a number"),
        ({"n": 10, "k": 2, "p_in": 0.5, "p_out": 0.1, "weights": "gauss"}, "weights must be"),
        ({"n": 10, "k": 10, "p_in": 0.5, "p_out": 0.0}, "the draw has no edge"),
    ],
)
def test_planted_bad_parameters(kwargs, fragment):
    with pytest.raises(DatasetError, match="community") as info:
        C.community_planted(**kwargs)
    assert fragment in str(info.value)


def test_planted_truth_follows_rcp_and_refuses_other_graphs():
    (spec,) = expand(
        {
            "_target_": "matchbench.families.community.datasets.community_planted",
            "n": 60,
            "k": 3,
            "p_in": 0.5,
            "p_out": 0.02,
            "rcp": True,
            "rcp_seed": 4,
        }
    )
    clear_cache()
    g = load(spec)
    base = load(dict(spec, rcp=False))
    assert isinstance(g, CommunityGraph) and g.params["rcp"] is True
    # the permuted truth has the permuted graph's Q
    assert modularity(g, C.planted_truth(g)) == pytest.approx(
        modularity(base, C.planted_truth(base)), abs=1e-12
    )
    with pytest.raises(ValueError, match="not a community_planted graph"):
        C.planted_truth(C.community_smoke("karate"))
    clear_cache()


# ---------------------------------------------------------------------------------------
# The MCM generators' graphs, the smoke set, the cache


@pytest.mark.parametrize(
    ("fn", "mcm"),
    [
        (C.community_kron, G.kronecker),
        (C.community_delaunay, G.delaunay),
        (C.community_rgg, G.rgg),
        (C.community_grid, G.grid),
        (C.community_road, G.road),
    ],
)
def test_generators_keep_the_mcm_edges_with_unit_weights(fn, mcm):
    g = fn(7, seed=2)
    ref = mcm(7, seed=2)
    assert isinstance(g, CommunityGraph) and g.name == ref.name and g.n == ref.n_rows
    assert 2 * g.n_edges == ref.n_edges and (g.weight == 1.0).all()
    assert (g.ptr == ref.row_ptr).all() and (g.ind == ref.row_ind).all()
    # unit weights take the MCM graph's CSR as it is: the arrays (and dtypes) the edge list
    # gives, as every other weighting is built
    rows = np.repeat(np.arange(ref.n_rows), np.diff(ref.row_ptr))
    up = rows < ref.row_ind
    edges = CommunityGraph.from_edges(rows[up], ref.row_ind[up], np.ones(up.sum()), ref.n_rows)
    for a, b in ((g.ptr, edges.ptr), (g.ind, edges.ind), (g.weight, edges.weight)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    u = fn(7, seed=2, weights="uniform")
    assert u.name.endswith("_uniform") and ((u.weight > 0) & (u.weight <= 1)).all()
    assert np.array_equal(u.ptr, g.ptr) and np.array_equal(u.ind, g.ind)


def test_geometric_weights_only_with_points():
    g = C.community_rgg(7, seed=1, weights="geometric")
    assert g.name.endswith("_geometric") and (g.weight > 0).all() and (g.weight < 1).all()
    with pytest.raises(DatasetError, match="needs a point set"):
        C.community_grid(5, weights="geometric")
    with pytest.raises(DatasetError, match="weights must be one of"):
        C.community_kron(5, weights="heavy")


def test_smoke_set():
    for name in C.SMOKE:
        g = C.community_smoke(name)
        assert isinstance(g, CommunityGraph) and g.family == "community_smoke" and g.n_edges > 0
    tri = C.community_smoke("two_triangles")
    assert modularity(tri, np.array([0, 0, 0, 1, 1, 1])) == pytest.approx(5 / 14)
    assert C.community_smoke("karate").n_edges == 78
    with pytest.raises(DatasetError, match="available: two_triangles"):
        C.community_smoke("nope")
    with pytest.raises(DatasetError, match="a name is required"):
        C.community_smoke()


def test_disk_cache_round_trip_keeps_the_family(tmp_path, monkeypatch):
    monkeypatch.delenv("MATCHBENCH_NO_DISK_CACHE", raising=False)
    (spec,) = expand(
        {
            "_target_": "matchbench.families.community.datasets.community_planted",
            "n": 100,
            "k": 4,
            "p_in": 0.3,
            "p_out": 0.02,
        }
    )
    path = disk_cache_path(spec, tmp_path)
    assert path is not None and not path.exists()
    clear_cache()
    first = load(spec, data_dir=tmp_path)
    assert path.exists()
    clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = load(spec, data_dir=tmp_path)
    assert second is not first and type(second) is CommunityGraph
    assert _edges(second) == _edges(first) and second.params == first.params
    clear_cache()


def test_subnormal_weights_are_refused_at_load_not_a_division_by_zero():
    with pytest.raises(DatasetError, match="too small"):
        CommunityGraph.from_edges([0, 1], [1, 2], [5e-324, 5e-324], 3, name="tiny")
    assert CommunityGraph.from_edges([0], [1], [1e-100], 2, name="ok").n == 2
