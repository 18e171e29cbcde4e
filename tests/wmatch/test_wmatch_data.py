"""wmatch datasets: Matrix Market reading as the paper does, generators, smoke set, disk cache."""

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
from matchbench.families.mcm.datasets import SMOKE_DIR
from matchbench.families.wmatch import datasets as W
from matchbench.families.wmatch.problem import WeightedGraph
from matchbench.graphs import generators as G


def _mtx(tmp_path: Path, text: str, name: str = "m.mtx") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _edges(g: WeightedGraph) -> dict[tuple[int, int], float]:
    u, v, w = g.edges()
    return dict(zip(zip(u.tolist(), v.tolist(), strict=True), w.tolist(), strict=True))


def _raises(path, fragment, **kwargs):
    with pytest.raises(DatasetError) as info:
        W.graph_mtx(path, **kwargs)
    msg = str(info.value)
    assert "wmatch" in msg and str(path) in msg and fragment in msg, msg
    return msg


def test_symmetric_file_drops_diagonal_and_zeros_and_takes_absolute_values(tmp_path):
    p = _mtx(
        tmp_path,
        "%%MatrixMarket matrix coordinate real symmetric\n"
        "4 4 6\n1 1 9\n2 1 -2.5\n3 1 0\n3 2 4\n4 4 1\n4 3 -0.5\n",
    )
    g = W.graph_mtx(p)
    assert g.name == "m" and g.n == 4 and g.family == "mtx"
    assert _edges(g) == {(0, 1): 2.5, (1, 2): 4.0, (2, 3): 0.5}
    assert g.params["n_diagonal"] == 2 and g.params["n_zero"] == 1
    assert g.params["symmetrized"] is False and g.b is None


def test_general_file_is_symmetrized_by_the_larger_absolute_value(tmp_path):
    p = _mtx(
        tmp_path,
        "%%MatrixMarket matrix coordinate integer general\n"
        "3 3 5\n1 2 3\n2 1 -7\n2 3 1\n3 2 1\n1 3 0\n",
    )
    g = W.graph_mtx(p)
    assert _edges(g) == {(0, 1): 7.0, (1, 2): 1.0}
    assert g.params["symmetrized"] is True
    assert g.params["n_asymmetric"] == 2  # (1, 2) differs, (1, 3) is stored once
    assert g.params["n_zero"] == 1


def test_pattern_weights_are_uniform_seeded_and_order_independent(tmp_path):
    head = "%%MatrixMarket matrix coordinate pattern symmetric\n5 5 4\n"
    a = _mtx(tmp_path, head + "2 1\n3 2\n5 4\n5 1\n", "a.mtx")
    b = _mtx(tmp_path, head + "5 1\n5 4\n2 1\n3 2\n", "b.mtx")
    ga, gb = W.graph_mtx(a, weight_seed=3), W.graph_mtx(b, weight_seed=3)
    assert _edges(ga) == _edges(gb)
    w = np.array(list(_edges(ga).values()))
    assert ((w > 0) & (w <= 1)).all()
    assert _edges(W.graph_mtx(a, weight_seed=4)) != _edges(ga)
    assert ga.params["weight_seed"] == 3


def test_smoke_matrices_read_as_graphs():
    g = W.graph_mtx(SMOKE_DIR / "sym_band_40.mtx")
    assert g.n == 40 and g.params["n_diagonal"] == 40
    k = W.graph_mtx(SMOKE_DIR / "kron_g500-logn7.mtx")
    mcm = G.kronecker(7, seed=1)
    assert k.n_edges == mcm.n_edges // 2  # the same undirected edges, now weighted


def test_duplicates_merge_by_the_largest_value_with_a_warning(tmp_path):
    p = _mtx(
        tmp_path,
        "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 1\n2 1 -5\n3 2 1\n",
    )
    with pytest.warns(DatasetWarning, match="1 duplicate entries merged"):
        g = W.graph_mtx(p)
    assert _edges(g)[(0, 1)] == 5.0 and g.params["n_duplicates"] == 1


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
def test_bad_files_name_file_and_problem(tmp_path, body, fragment):
    _raises(_mtx(tmp_path, body), fragment)


def test_missing_file_and_bad_capacity(tmp_path):
    _raises(tmp_path / "nope.mtx", "no such file")
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n")
    _raises(p, "capacity b = -1 must be in", capacity=-1)
    _raises(p, "capacity must be null", capacity="lots")
    _raises(p, "capacity_max must be an integer >= 1", capacity="random", capacity_max=0)
    g = W.graph_mtx(p, capacity="random", capacity_max=4, capacity_seed=2)
    assert g.name == "m_brand4" and ((g.b >= 1) & (g.b <= 4)).all()


@pytest.mark.parametrize(
    ("fn", "kwargs", "mcm"),
    [
        (W.kronecker, {"scale": 7, "seed": 2}, G.kronecker),
        (W.delaunay, {"scale": 7, "seed": 2}, G.delaunay),
        (W.rgg, {"scale": 7, "seed": 2}, G.rgg),
        (W.grid, {"scale": 6, "seed": 2}, G.grid),
        (W.road, {"scale": 7, "seed": 2}, G.road),
    ],
)
def test_generators_weight_the_mcm_graphs_deterministically(fn, kwargs, mcm):
    g = fn(**kwargs)
    h = mcm(**kwargs)
    assert (g.ptr == h.row_ptr).all() and (g.ind == h.row_ind).all()  # the same edges
    assert g.name == f"{h.name}_uniform" and g.family == h.family
    assert ((g.weight > 0) & (g.weight <= 1)).all()
    again = fn(**kwargs)
    assert (again.weight == g.weight).all()
    other = fn(**{**kwargs, "weight_seed": 99})
    assert (other.ind == g.ind).all() and not (other.weight == g.weight).all()
    b2 = fn(**kwargs, capacity=2)
    assert b2.name.endswith("_b2") and (b2.b == 2).all() and b2.params["capacity"] == 2


@pytest.mark.parametrize("fn", [W.delaunay, W.rgg])
def test_geometric_weights_are_edge_lengths(fn):
    g = fn(7, seed=3, weights="geometric")
    pts = G.unit_square_points(g.n, 3)
    u, v, w = g.edges()
    assert np.allclose(w, np.linalg.norm(pts[u] - pts[v], axis=1), rtol=0, atol=1e-15)
    assert g.name.endswith("_geometric")


@pytest.mark.parametrize("fn", [W.kronecker, W.grid, W.road])
def test_geometric_weights_need_points(fn):
    with pytest.raises(DatasetError, match="wmatch dataset .*needs a point set"):
        fn(6, weights="geometric")
    with pytest.raises(DatasetError, match="weights must be one of"):
        fn(6, weights="gaussian")


def test_smoke_set():
    for name in W.SMOKE:
        g = W.wmatch_smoke(name)
        assert g.name == name and g.n_edges > 0 and g.problem == "wmatch"
    assert (
        W.wmatch_smoke("isolated").n
        - len(np.unique(np.concatenate(W.wmatch_smoke("isolated").edges()[:2])))
        == 19
    )
    with pytest.raises(DatasetError, match="available: path_ties, star"):
        W.wmatch_smoke("nope")
    with pytest.raises(DatasetError, match="a name is required"):
        W.wmatch_smoke()


def test_dataset_functions_are_tagged():
    for fn in (W.kronecker, W.delaunay, W.rgg, W.grid, W.road):
        assert fn.matchbench_problem == "wmatch" and fn.matchbench_disk_cache is True
    for fn in (W.graph_mtx, W.graph_suitesparse, W.wmatch_smoke):
        assert fn.matchbench_problem == "wmatch" and fn.matchbench_disk_cache is False
    assert spec_problem({"_target_": "matchbench.families.wmatch.datasets.graph_mtx"}) == "wmatch"


def test_npz_round_trip_keeps_everything(tmp_path):
    g = W.road(6, seed=4, capacity="random")
    g.save_npz(tmp_path / "g.npz")
    h = WeightedGraph.load_npz(tmp_path / "g.npz")
    assert (h.n, h.name, h.family, h.params) == (g.n, g.name, g.family, g.params)
    for a in ("ptr", "ind", "weight", "b"):
        assert (getattr(h, a) == getattr(g, a)).all() and getattr(h, a).dtype == getattr(g, a).dtype
    plain = W.wmatch_smoke("star")
    plain.save_npz(tmp_path / "s.npz")
    assert WeightedGraph.load_npz(tmp_path / "s.npz").b is None


def test_disk_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.delenv("MATCHBENCH_NO_DISK_CACHE", raising=False)
    (spec,) = expand(
        {"_target_": "matchbench.families.wmatch.datasets.delaunay", "scale": 6, "weights": "geometric"}
    )
    path = disk_cache_path(spec, tmp_path)
    assert path is not None and not path.exists()
    clear_cache()
    first = load(spec, data_dir=tmp_path)
    assert path.exists()
    clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a good cache file reads back without a warning
        second = load(spec, data_dir=tmp_path)
    assert second is not first and isinstance(second, WeightedGraph)
    assert (second.weight == first.weight).all() and second.params == first.params
    rcp = load(dict(spec, rcp=True, rcp_seed=1), data_dir=tmp_path)
    assert rcp.name.endswith("_rcp") and rcp.n_edges == first.n_edges
    assert sorted(rcp.weight) == sorted(first.weight)
    clear_cache()


def test_damaged_npz_is_refused(tmp_path):
    g = W.wmatch_smoke("path_ties")
    g.save_npz(tmp_path / "g.npz")
    with np.load(tmp_path / "g.npz") as z:
        arrays = dict(z)
    arrays["weight"] = arrays["weight"][::-1].copy()
    arrays["weight"][0] = 2.0  # one direction of an edge now weighs differently
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match="wmatch instance 'path_ties'"):
        WeightedGraph.load_npz(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    "name",
    [
        "graph_mtx",
        "wmatch_smoke",
        "wmatch_smoke_b",
        "wmatch_kron",
        "wmatch_delaunay",
        "wmatch_rgg",
        "wmatch_grid",
        "wmatch_road",
        "wmatch_suitesparse",
    ],
)
def test_dataset_configs_name_wmatch_functions(name):
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(
        OmegaConf.load(Path(__file__).resolve().parents[2] / "conf" / "dataset" / f"{name}.yaml")
    )
    for spec in [cfg, *cfg.get("instances", [])]:
        if "_target_" in spec:
            assert spec_problem(spec) == "wmatch"


def test_weights_whose_sum_overflows_are_refused_at_load():
    from matchbench.graphs.weighted import WeightedGraph

    with pytest.raises(DatasetError, match="beyond float64"):
        WeightedGraph.from_edges([0, 1], [1, 2], [1e308, 1e308], 3, name="big")
