"""LAP datasets: generators (determinism, ranges), loaders (round trips), configs, errors."""

from __future__ import annotations

from pathlib import Path

import fast_matrix_market as fmm
import numpy as np
import pytest
import scipy.sparse as sp
from omegaconf import OmegaConf
from scipy.spatial.distance import cdist

from matchbench.datasets import DatasetError, load
from matchbench.families.lap import datasets as L
from matchbench.families.lap.problem import CostMatrix

CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"


@pytest.mark.parametrize(
    "cost_range, hi", [("n/10", 15), ("n", 150), ("10n", 1500), (7, 7), ("33", 33)]
)
def test_uniform_ranges_match_the_paper(cost_range, hi):
    inst = L.uniform(150, cost_range=cost_range, seed=2)
    c = inst.costs
    assert c.shape == (150, 150) and c.dtype == np.int32
    assert c.min() == 0 and c.max() == hi  # 22500 draws reach both ends
    assert inst.params["high"] == hi
    assert inst.family == "lap_uniform" and inst.problem == "lap"
    # roughly uniform: every value of the range occurs for the small ranges
    if hi <= 150:
        assert np.unique(c).size == hi + 1


def test_generators_are_deterministic_by_seed():
    for make in (
        lambda s: L.uniform(60, "10n", seed=s),
        lambda s: L.uniform(60, "n", seed=s, dtype="int64"),
        lambda s: L.uniform_float(60, seed=s),
        lambda s: L.geometric(60, seed=s, dim=3),
    ):
        a, b, c = make(5), make(5), make(6)
        assert a.name == b.name != c.name
        assert np.array_equal(a.costs, b.costs)
        assert not np.array_equal(a.costs, c.costs)


def test_uniform_float_and_geometric():
    f = L.uniform_float(80, seed=1, high=3.5, dtype="float32")
    assert f.costs.dtype == np.float32 and 0 <= f.costs.min() and f.costs.max() < 3.5
    g = L.geometric(50, seed=4, dim=2)
    rng = np.random.default_rng(4)
    a, b = rng.random((50, 2)), rng.random((50, 2))
    assert np.allclose(g.costs, cdist(a, b))
    assert g.costs.dtype == np.float64 and g.costs.max() <= np.sqrt(2)


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: L.uniform(0), "positive integer"),
        (lambda: L.uniform(5, cost_range="huge"), "cost_range"),
        (lambda: L.uniform(5, cost_range=-3), "non-negative"),
        (lambda: L.uniform(5, dtype="float32"), "int32 or int64"),
        (lambda: L.uniform(5, cost_range=2**40), "does not fit"),
        (lambda: L.uniform_float(5, high=0), "positive"),
        (lambda: L.geometric(5, dim=0), "dim"),
    ],
)
def test_bad_generator_parameters(call, fragment):
    with pytest.raises(DatasetError, match=fragment):
        call()


def test_npy_round_trip(tmp_path):
    costs = np.random.default_rng(0).integers(0, 9, (6, 6)).astype(np.int64)
    np.save(tmp_path / "m.npy", costs)
    inst = L.from_file(tmp_path / "m.npy")
    assert inst.name == "m" and inst.family == "lap_file"
    assert inst.costs.dtype == np.int64 and np.array_equal(inst.costs, costs)


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_dense_matrix_market_round_trip(tmp_path, dtype):
    costs = (np.random.default_rng(1).random((5, 5)) * 100).astype(dtype)
    fmm.mmwrite(str(tmp_path / "d.mtx"), costs)
    inst = L.from_file(tmp_path / "d.mtx")
    assert np.array_equal(inst.costs, costs)
    assert inst.costs.dtype.kind == np.dtype(dtype).kind


def test_sparse_matrix_market_with_missing_cost(tmp_path):
    a = sp.coo_matrix(([5, 7, 1], ([0, 1, 2], [1, 2, 0])), shape=(3, 3))
    fmm.mmwrite(str(tmp_path / "s.mtx"), a)
    inst = L.from_file(tmp_path / "s.mtx", missing_cost=1000)
    expect = np.full((3, 3), 1000)
    expect[[0, 1, 2], [1, 2, 0]] = [5, 7, 1]
    assert np.array_equal(inst.costs, expect) and inst.costs.dtype == np.int32
    assert inst.params["missing_cost"] == 1000
    inst = L.from_file(tmp_path / "s.mtx", missing_cost=0.5)
    assert inst.costs.dtype == np.float64 and inst.costs[0, 0] == 0.5
    with pytest.raises(DatasetError, match="missing_cost"):
        L.from_file(tmp_path / "s.mtx")


def test_symmetric_sparse_file_is_mirrored(tmp_path):
    p = tmp_path / "sym.mtx"
    p.write_text("%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 4\n3 3 6\n")
    inst = L.from_file(p, missing_cost=9)
    assert inst.costs.tolist() == [[9, 4, 9], [4, 9, 9], [9, 9, 6]]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1\n", "pattern"),
        (
            "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 3\n1 1 4\n",
            "more than once",
        ),
        ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 3 4\n", "complex"),
        ("%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n6\n", "not square"),
    ],
)
def test_bad_files_are_named(tmp_path, text, fragment):
    p = tmp_path / "bad_file.mtx"
    p.write_text(text)
    with pytest.raises(DatasetError) as info:
        L.from_file(p, missing_cost=0)
    assert fragment in str(info.value) and "bad_file" in str(info.value)


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        L.from_file(tmp_path / "nothere.npy")
    (tmp_path / "x.csv").write_text("1,2\n3,4\n")
    with pytest.raises(DatasetError, match="unknown file type"):
        L.from_file(tmp_path / "x.csv")


def test_rectangular_file_needs_pad(tmp_path):
    np.save(tmp_path / "r.npy", np.arange(6, dtype=np.int32).reshape(2, 3))
    with pytest.raises(DatasetError, match="pad=True"):
        L.from_file(tmp_path / "r.npy")
    inst = L.from_file(tmp_path / "r.npy", pad=True)
    assert inst.costs.shape == (3, 3) and inst.costs[2].tolist() == [0, 0, 0]
    assert inst.params["padded_from"] == [2, 3]


def test_dataset_configs_load_through_the_dataset_loader(tmp_path):
    spec = OmegaConf.to_container(OmegaConf.load(CONF / "lap_uniform.yaml"))
    assert spec == {
        "_target_": "matchbench.families.lap.datasets.uniform",
        "n": 1000,
        "cost_range": "n",
        "seed": 1,
        "dtype": "int32",
    }
    inst = load(dict(spec, n=40, cost_range="10n", rcp=False))
    assert isinstance(inst, CostMatrix) and inst.n == 40 and inst.costs.max() <= 400
    rcp = load(dict(spec, n=40, cost_range="10n", rcp=True, rcp_seed=2))
    assert rcp.params["rcp"] and sorted(rcp.costs.ravel()) == sorted(inst.costs.ravel())

    geo = OmegaConf.to_container(OmegaConf.load(CONF / "lap_geometric.yaml"))
    assert load(dict(geo, n=30, rcp=False)).costs.shape == (30, 30)

    f = OmegaConf.load(CONF / "lap_file.yaml")
    assert OmegaConf.is_missing(f, "path") and f.missing_cost is None and f.pad is False
    np.save(tmp_path / "c.npy", np.eye(4))
    spec = dict(OmegaConf.to_container(f), path=str(tmp_path / "c.npy"), rcp=False)
    assert load(spec).costs.tolist() == np.eye(4).tolist()


def test_describe_is_a_result_row():
    inst = L.uniform(12, "n", seed=3)
    assert inst.describe() == {
        "instance": inst.name,
        "family": "lap_uniform",
        "n_rows": 12,
        "n_cols": 12,
        "n_edges": 144,
    }
    assert inst.nbytes == 12 * 12 * 4


# ---------------------------------------------------------------------------------------
# Hostile files: declared sizes are checked before allocating, errors name the file


def test_a_tiny_sparse_file_declaring_a_huge_matrix_is_refused(tmp_path):
    p = tmp_path / "huge.mtx"
    p.write_text("%%MatrixMarket matrix coordinate real general\n20000 20000 1\n1 1 5\n")
    assert p.stat().st_size < 80
    with pytest.raises(DatasetError, match=r"huge.*400,000,000 cells from 1 stored entries"):
        L.from_file(p, missing_cost=100)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty.npy", b""),
        (
            "cut.npy",
            b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (100, 100), }"
            + b" " * 40 + b"\n" + b"\0" * 16,
        ),
        ("cut.mtx", b"%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2\n"),
        ("many.mtx", b"%%MatrixMarket matrix coordinate real general\n3 3 900\n1 1 1\n"),
    ],
)
def test_damaged_files_name_the_file(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(DatasetError) as info:
        L.from_file(p, missing_cost=9)
    assert str(p) in str(info.value)


def test_costs_whose_sums_overflow_are_refused_at_load():
    from matchbench.families.lap.problem import CostMatrix

    with pytest.raises(DatasetError, match="overflow float64"):
        CostMatrix.from_array(np.array([[1e308, -1e308], [0.0, 1.0]]), name="c")
