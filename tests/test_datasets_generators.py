"""Generators (determinism, sizes, structure) and the dataset spec API (expand/load/keys)."""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

import matchbench.datasets as ds
from matchbench.datasets import DatasetError, expand, instance_key, load
from matchbench.families.mcm import datasets as M
from matchbench.graphs import generators
from matchbench.graphs.bipartite import BipartiteGraph

CONF = Path(__file__).resolve().parents[1] / "conf" / "dataset"
SYMMETRIC = ["kronecker", "delaunay", "rgg", "grid", "road"]
ALL = [*SYMMETRIC, "erdos_renyi"]


def _gen(name: str, scale: int, seed: int = 1, **kw) -> BipartiteGraph:
    return getattr(generators, name)(scale, seed=seed, **kw)


def _arrays(g: BipartiteGraph) -> list[np.ndarray]:
    return [g.row_ptr, g.row_ind, g.col_ptr, g.col_ind]


def _check_structure(g: BipartiteGraph, *, symmetric: bool) -> None:
    """Canonical CSR both ways, transposes of each other; symmetric: no self-loops."""
    for ptr, ind, n in ((g.row_ptr, g.row_ind, g.n_rows), (g.col_ptr, g.col_ind, g.n_cols)):
        assert ptr.shape == (n + 1,) and ptr[0] == 0 and ptr[-1] == g.n_edges
        starts = np.zeros(ind.shape[0], dtype=bool)
        starts[ptr[:-1][np.diff(ptr) > 0]] = True
        assert np.all((np.diff(ind) > 0) | starts[1:]), "unsorted or duplicate entries"
    a = g.to_scipy()
    at = sp.csr_matrix((np.ones(g.n_edges), g.col_ind, g.col_ptr), shape=(g.n_cols, g.n_rows))
    assert (a != at.T).nnz == 0
    if symmetric:
        assert g.n_rows == g.n_cols
        assert (a != a.T).nnz == 0
        assert a.diagonal().sum() == 0


# ---------------------------------------------------------------------------------------
# Every generator


@pytest.mark.parametrize("name", ALL)
def test_deterministic_by_seed(name):
    a, b, c = _gen(name, 9, seed=4), _gen(name, 9, seed=4), _gen(name, 9, seed=5)
    for x, y in zip(_arrays(a), _arrays(b), strict=True):
        np.testing.assert_array_equal(x, y)
    same = all(np.array_equal(x, y) for x, y in zip(_arrays(a), _arrays(c), strict=True))
    # the grid is the one family with nothing random in it
    assert same == (name == "grid")
    assert a.params["seed"] == 4 and a.params["scale"] == 9 and a.name == b.name


@pytest.mark.parametrize("name", ALL)
def test_sizes_structure_and_metadata(name):
    g = _gen(name, 10)
    assert g.n_rows == 1024 and g.n_cols == 1024
    assert g.n_edges > 0 and g.row_ind.dtype == np.int32
    _check_structure(g, symmetric=name in SYMMETRIC)
    family = {"kronecker": "kron", "erdos_renyi": "er"}.get(name, name)
    assert g.family == family
    assert isinstance(g.params, dict) and {"scale", "seed"} <= set(g.params)
    expected = {
        "kronecker": "kron_g500-logn10",
        "delaunay": "delaunay_n10",
        "rgg": "rgg_n_2_10_s1",
        "grid": "grid2d_10",
        "road": "road_10",
        "erdos_renyi": "er_10_d8",
    }[name]
    assert g.name == expected


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("kronecker", {"scale": -1}),
        ("kronecker", {"scale": 2.5}),
        ("kronecker", {"scale": 8, "a": 0.6, "b": 0.3, "c": 0.2}),
        ("delaunay", {"scale": 1}),
        ("rgg", {"scale": 8, "radius_factor": 0}),
        ("grid", {"scale": 8, "seed": -2}),
        ("road", {"scale": 8, "remove_fraction": 1.0}),
        ("erdos_renyi", {"scale": 3, "avg_degree": 9.0}),
        ("erdos_renyi", {"scale": 3, "aspect": 0.01}),
    ],
)
def test_bad_parameters_raise_dataset_error(name, kwargs):
    with pytest.raises(DatasetError, match=name):
        getattr(generators, name)(**kwargs)


# ---------------------------------------------------------------------------------------
# Family by family


def test_kronecker_is_skewed_and_thread_count_independent(monkeypatch):
    g = generators.kronecker(12, seed=3)
    deg = np.diff(g.row_ptr)
    # R-MAT: heavy-tailed degrees and many isolated vertices, at most 2 * edge_factor * n.
    assert deg.max() > 10 * deg.mean()
    assert (deg == 0).sum() > 0.05 * g.n_rows
    assert g.n_edges <= 2 * 16 * g.n_rows
    monkeypatch.setattr(generators, "_KRON_CHUNK", 1 << 12)  # many chunks
    many = generators.kronecker(12, seed=3)
    monkeypatch.setattr(generators, "host_cores", lambda: 1)
    one = generators.kronecker(12, seed=3)
    for x, y in zip(_arrays(many), _arrays(one), strict=True):
        np.testing.assert_array_equal(x, y)


def test_kronecker_initiator_shapes_the_degrees():
    # a = b = c = 1/4 - eps is near-uniform (Erdos-Renyi like): no heavy tail.
    flat = generators.kronecker(12, seed=1, a=0.25, b=0.25, c=0.25)
    deg = np.diff(flat.row_ptr)
    assert deg.max() < 3 * deg.mean()


def test_delaunay_average_degree_and_planarity():
    g = generators.delaunay(12, seed=1)
    n = g.n_rows
    avg = g.n_edges / n
    assert 5.5 <= avg <= 6.1
    assert g.n_edges // 2 <= 3 * n - 6  # a planar graph has at most 3n - 6 edges
    assert np.diff(g.row_ptr).min() >= 2  # every point is in some triangle


def test_delaunay_matches_a_brute_force_empty_circle_check():
    g = generators.delaunay(5, seed=2)  # 32 points
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(2)
    pts = rng.random((32, 2))
    pts = pts[generators._strip_order(pts)]
    # The triangles are Delaunay (no point inside a circumcircle) and the graph holds
    # exactly their edges.
    tri = Delaunay(pts)
    for simplex in tri.simplices:
        p = pts[simplex]
        ax, ay = p[0]
        bx, by = p[1]
        cx, cy = p[2]
        d = 2 * (ax * (by - cy) + bx * (cy - ay) + cx * (ay - by))
        ux = (
            (ax**2 + ay**2) * (by - cy) + (bx**2 + by**2) * (cy - ay) + (cx**2 + cy**2) * (ay - by)
        ) / d
        uy = (
            (ax**2 + ay**2) * (cx - bx) + (bx**2 + by**2) * (ax - cx) + (cx**2 + cy**2) * (bx - ax)
        ) / d
        r2 = (ax - ux) ** 2 + (ay - uy) ** 2
        inside = ((pts[:, 0] - ux) ** 2 + (pts[:, 1] - uy) ** 2) < r2 * (1 - 1e-9)
        assert not inside.any()
    edges = {(min(a, b), max(a, b)) for s in tri.simplices for a in s for b in s if a != b}
    rows = np.repeat(np.arange(32), np.diff(g.row_ptr))
    got = {(int(a), int(b)) for a, b in zip(rows, g.row_ind, strict=True) if a < b}
    assert got == edges


def test_rgg_equals_brute_force_distances():
    g = generators.rgg(8, seed=7)
    rng = np.random.default_rng(7)
    pts = rng.random((256, 2))
    pts = pts[generators._strip_order(pts)]
    d = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1))
    expected = (d <= g.params["radius"]) & ~np.eye(256, dtype=bool)
    assert np.array_equal(g.to_scipy().toarray().astype(bool), expected)


def test_rgg_degree_near_expected():
    scale = 13
    n = 1 << scale
    degs = [generators.rgg(scale, seed=s).n_edges / n for s in (1, 2)]
    r = 0.55 * math.sqrt(math.log(n) / n)
    # P(two uniform points of the unit square are closer than r), boundary included.
    p = math.pi * r**2 - 8 / 3 * r**3 + r**4 / 2
    expected = (n - 1) * p
    assert abs(np.mean(degs) - expected) < 0.03 * expected


def test_grid_equals_networkx_grid():
    g = generators.grid(7, seed=1)  # 8 x 16
    assert (g.params["rows"], g.params["cols"]) == (8, 16)
    ref = nx.to_scipy_sparse_array(
        nx.grid_2d_graph(8, 16), nodelist=[(i, j) for i in range(8) for j in range(16)]
    )
    assert (g.to_scipy() != (ref != 0)).nnz == 0


def test_road_is_a_thinned_grid_with_diagonals():
    g = generators.road(12, seed=2)
    h, w = g.params["rows"], g.params["cols"]
    deg = np.diff(g.row_ptr)
    assert 2.3 <= g.n_edges / g.n_rows <= 2.9
    assert deg.min() >= 1  # no isolated junctions
    assert (deg == 2).mean() > 0.2  # chains of degree-2 vertices
    rows = np.repeat(np.arange(g.n_rows), deg)
    cols = g.row_ind.astype(np.int64)
    (ri, rj), (ci, cj) = np.divmod(rows, w), np.divmod(cols, w)
    di, dj = np.abs(ri - ci), np.abs(rj - cj)
    assert np.all((di <= 1) & (dj <= 1))  # grid neighbours or diagonals only
    diagonal = (di == 1) & (dj == 1) & (rows < cols)
    cells = np.minimum(ri, ci)[diagonal] * w + np.minimum(rj, cj)[diagonal]
    assert np.unique(cells).size == cells.size  # one diagonal per cell: planar
    assert cells.size == round(0.02 * h * w)


def test_erdos_renyi_rectangular_and_degree():
    g = generators.erdos_renyi(12, avg_degree=6.0, seed=3, aspect=1.5)
    assert (g.n_rows, g.n_cols) == (4096, 6144)
    assert g.name == "er_12_d6_a1.5"
    assert abs(g.n_edges / g.n_rows - 6.0) < 0.05 * 6.0
    _check_structure(g, symmetric=False)
    tall = generators.erdos_renyi(6, avg_degree=2.0, seed=3, aspect=0.5)
    assert (tall.n_rows, tall.n_cols) == (64, 32)


@settings(max_examples=25, deadline=None)
@given(scale=st.integers(2, 10), seed=st.integers(0, 2**32))
def test_mesh_families_invariants(scale, seed):
    g = generators.grid(scale, seed=seed)
    h, w = g.params["rows"], g.params["cols"]
    assert h * w == 1 << scale and g.n_edges == 2 * (h * (w - 1) + (h - 1) * w)
    _check_structure(g, symmetric=True)
    r = generators.road(scale, seed=seed)
    assert r.n_rows == 1 << scale and np.diff(r.row_ptr).min() >= 1
    _check_structure(r, symmetric=True)


@settings(max_examples=25, deadline=None)
@given(scale=st.integers(1, 8), seed=st.integers(0, 2**32), deg=st.floats(0.5, 4.0))
def test_erdos_renyi_invariants(scale, seed, deg):
    n = 1 << scale
    if deg > n:
        return
    g = generators.erdos_renyi(scale, avg_degree=deg, seed=seed)
    assert g.n_edges <= n * n
    _check_structure(g, symmetric=False)


# ---------------------------------------------------------------------------------------
# Specs: expand, instance_key, load

ER = {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 7, "avg_degree": 3.0}
GRID = {"_target_": "matchbench.families.mcm.datasets.grid", "scale": 6, "seed": 1}


@pytest.fixture(autouse=True)
def _fresh_cache():
    ds.clear_cache()
    yield
    ds.clear_cache()


def test_expand_one_instance():
    specs = expand({**ER, "rcp": False, "rcp_seed": 3})
    assert specs == [{**ER, "rcp": False}]
    assert expand({**ER, "rcp": True, "rcp_seed": 3}) == [{**ER, "rcp": True, "rcp_seed": 3}]
    assert expand(ER) == [{**ER, "rcp": False}]


def test_expand_set_rcp_both_and_overrides():
    cfg = {"instances": [ER, {**GRID, "rcp": False}], "rcp": "both", "rcp_seed": 9}
    specs = expand(cfg)
    assert specs == [
        {**ER, "rcp": False},
        {**ER, "rcp": True, "rcp_seed": 9},
        {**GRID, "rcp": False},
    ]
    assert expand(OmegaConf.create(cfg)) == specs  # an unresolved config works too


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"scale": 3}, "needs _target_ or instances"),
        ({**ER, "instances": [ER]}, "either _target_ or instances"),
        ({"instances": []}, "non-empty list"),
        ({"instances": [{"scale": 3}]}, r"instances\[0\]"),
        ({"instances": [ER], "seed": 3}, "unknown keys"),
        ({**ER, "rcp": "maybe"}, "rcp must be"),
        ({**ER, "rcp": True, "rcp_seed": "x"}, "rcp_seed must be an integer"),
        ({**ER, "weights": object()}, "plain JSON data"),
    ],
)
def test_expand_rejects_bad_configs(cfg, match):
    with pytest.raises(DatasetError, match=match):
        expand(cfg)


def test_instance_key_is_short_and_canonical():
    key = instance_key({**ER, "rcp": False})
    assert len(key) == 16 and int(key, 16) >= 0
    assert instance_key(dict(reversed(list({**ER, "rcp": False}.items())))) == key
    assert instance_key({**ER, "rcp": False, "rcp_seed": 5}) == key
    assert instance_key(ER) == key
    assert instance_key({**ER, "rcp": True, "rcp_seed": 0}) != key
    assert instance_key({**ER, "rcp": True, "rcp_seed": 1}) != instance_key(
        {**ER, "rcp": True, "rcp_seed": 0}
    )
    assert instance_key({**ER, "scale": 8}) != key


def test_load_caches_and_permutes():
    original, permuted = (load(s) for s in expand({**ER, "rcp": "both", "rcp_seed": 2}))
    assert isinstance(original, BipartiteGraph) and original.name == "er_7_d3"
    assert load({**ER, "rcp": False}) is original  # repetitions do not reload
    assert load({**ER, "rcp": True, "rcp_seed": 2}) is permuted
    assert permuted.name == "er_7_d3_rcp" and permuted.params["rcp"] is True
    assert permuted.params["rcp_seed"] == 2 and permuted.n_edges == original.n_edges
    assert sorted(np.diff(permuted.row_ptr)) == sorted(np.diff(original.row_ptr))
    assert not np.array_equal(permuted.row_ind, original.row_ind)
    other_seed = load({**ER, "rcp": True, "rcp_seed": 3})
    assert not np.array_equal(other_seed.row_ind, permuted.row_ind)


def test_load_cache_is_a_bounded_lru(monkeypatch):
    monkeypatch.setattr(ds, "CACHE_SIZE", 2)
    first = load(GRID)
    load({**GRID, "scale": 4})
    assert load(GRID) is first  # still there, and now the most recent
    load({**GRID, "scale": 5})
    load({**GRID, "scale": 3})
    assert load(GRID) is not first  # evicted, loaded again


def test_load_passes_data_dir_only_to_targets_that_take_it(tmp_path):
    assert load(GRID, data_dir=tmp_path).n_rows == 64


def test_load_unknown_target():
    with pytest.raises(
        DatasetError, match=r"unknown dataset .*no function matchbench\.families\.mcm\.datasets\.nope"
    ):
        load({"_target_": "matchbench.families.mcm.datasets.nope", "scale": 3})
    with pytest.raises(DatasetError, match="unknown dataset .*no function nosuchpackage.f"):
        load({"_target_": "nosuchpackage.f"})


def test_load_bad_parameters_and_errors_of_the_target():
    with pytest.raises(DatasetError, match="bad parameters .*scal"):
        load({**GRID, "scal": 3})
    with pytest.raises(DatasetError, match="grid: scale must be"):
        load({**GRID, "scale": -3})  # the generator's own error, not Hydra's wrapper


def test_load_empty_instance_names_it():
    spec = {**ER, "scale": 1, "avg_degree": 0.01, "seed": 1}
    assert generators.erdos_renyi(1, avg_degree=0.01, seed=1).n_edges == 0
    with pytest.raises(DatasetError, match=r"er_1_d0\.01 .*empty instance \(n_edges = 0\)"):
        load(spec)
    with pytest.raises(DatasetError, match="empty instance"):
        load({"_target_": "numpy.zeros", "shape": 0})


def test_load_rcp_needs_a_permuted_method():
    assert load({"_target_": "numpy.eye", "N": 3}).shape == (3, 3)  # generic targets
    with pytest.raises(DatasetError, match="cannot be permuted"):
        load({"_target_": "numpy.eye", "N": 3, "rcp": True, "rcp_seed": 0})
    with pytest.raises(DatasetError, match="expand"):
        load({**GRID, "rcp": "both"})


# ---------------------------------------------------------------------------------------
# conf/dataset files of these families

OWN = [
    "smoke",
    "kron",
    "delaunay",
    "rgg",
    "grid",
    "road",
    "er",
    "mtx",
    "suitesparse",
    "mcm_seed_suite",
]


def _bind(spec: dict) -> None:
    from hydra.utils import get_method

    target = get_method(spec["_target_"])
    args = {k: v for k, v in spec.items() if not k.startswith("_") and k not in ("rcp", "rcp_seed")}
    inspect.signature(target).bind(**args)


@pytest.mark.parametrize("name", OWN)
def test_dataset_configs_expand_and_bind(name):
    cfg = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    if "_target_" in cfg:
        assert cfg["rcp"] is False and cfg["rcp_seed"] == 0
    if "???" in str(cfg):  # the user must give a path or name
        cfg = {k: ("x" if v == "???" else v) for k, v in cfg.items()}
    specs = expand(cfg)
    for spec in specs:
        _bind(spec)
    if "scale" in cfg:
        assert cfg["scale"] == 16 and cfg["seed"] == 1
        small = load({**specs[0], "scale": 8})
        assert small.params["scale"] == 8
        for key, value in cfg.items():
            if key not in ("_target_", "rcp", "rcp_seed"):
                assert small.params[key] == value or key == "scale"


def test_smoke_config_lists_every_smoke_file():
    cfg = OmegaConf.to_container(OmegaConf.load(CONF / "smoke.yaml"))
    assert [s["name"] for s in cfg["instances"]] == M.smoke_names()
    graphs = [load(s) for s in expand(cfg)]
    assert [g.name for g in graphs] == M.smoke_names()


def test_seed_suite_is_the_papers_synthetic_set():
    specs = expand(OmegaConf.to_container(OmegaConf.load(CONF / "mcm_seed_suite.yaml")))
    assert len(specs) == 2 * 15 and sum(s["rcp"] for s in specs) == 15
    scales = {}
    for s in specs:
        scales.setdefault(s["_target_"].rsplit(".", 1)[-1], set()).add(s["scale"])
    assert scales == {
        "kronecker": {18, 19, 20, 21},
        "delaunay": {20, 21, 22, 23},
        "rgg": {20, 21, 22, 23},
        "grid": {20, 21, 22},
    }
    assert len({instance_key(s) for s in specs}) == 30
