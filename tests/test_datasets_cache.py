"""Dataset tags (problem family, disk cache) and generated instances kept on disk."""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

import matchbench.datasets as ds
from matchbench.datasets import (
    CACHE_FORMAT,
    DatasetWarning,
    dataset,
    disk_cache_path,
    instance_key,
    load,
    spec_problem,
)
from matchbench.families.lap import datasets as L
from matchbench.families.lap.problem import CostMatrix
from matchbench.families.mcm import datasets as M
from matchbench.graphs import generators as G
from matchbench.graphs.bipartite import BipartiteGraph

CONF = Path(__file__).resolve().parents[1] / "conf" / "dataset"

KRON = {"_target_": "matchbench.families.mcm.datasets.kronecker", "scale": 6, "seed": 3}
LAP = {"_target_": "matchbench.families.lap.datasets.uniform", "n": 12, "cost_range": "n", "seed": 2}
SMOKE = {"_target_": "matchbench.families.mcm.datasets.smoke", "name": "grid2d_2"}


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    """Every test gets its own empty data dir, the disk cache on, and no loaded instance."""
    monkeypatch.setenv("MATCHBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MATCHBENCH_NO_DISK_CACHE", raising=False)
    ds.clear_cache()
    yield tmp_path / "data"
    ds.clear_cache()


def _forbid(monkeypatch, module, name):
    """Make ``module.name`` raise when called. load() resolves ``_target_`` by name, so the
    patched attribute is what it would call; ``functools.wraps`` copies the dataset tags,
    so the target still counts as disk-cached."""
    original = getattr(module, name)

    @functools.wraps(original)
    def forbidden(*args, **kwargs):
        raise AssertionError(f"{name} was called: the instance should come from the disk")

    monkeypatch.setattr(module, name, forbidden)


def _same(a, b):
    assert type(a) is type(b)
    assert (a.name, a.family, a.params) == (b.name, b.family, b.params)
    if isinstance(a, BipartiteGraph):
        assert (a.n_rows, a.n_cols) == (b.n_rows, b.n_cols)
        for attr in ("row_ptr", "row_ind", "col_ptr", "col_ind"):
            x, y = getattr(a, attr), getattr(b, attr)
            assert x.dtype == y.dtype and np.array_equal(x, y), attr
    else:
        assert a.costs.dtype == b.costs.dtype and np.array_equal(a.costs, b.costs)


# ---------------------------------------------------------------------------------------
# Tags


def test_dataset_tags_and_returns_the_function_itself():
    def gen(scale: int, seed: int = 1) -> int:
        return scale

    tagged = dataset("mcm", disk_cache=True)(gen)
    assert tagged is gen
    assert gen.matchbench_problem == "mcm" and gen.matchbench_disk_cache is True
    assert list(inspect.signature(gen).parameters) == ["scale", "seed"]
    inspect.signature(gen).bind(scale=3)  # what load() checks a spec with
    assert dataset("lap")(lambda n: n).matchbench_disk_cache is False
    with pytest.raises(TypeError, match="problem"):
        dataset("")


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (KRON, "mcm"),
        (LAP, "lap"),
        (SMOKE, "mcm"),
        ({"_target_": "matchbench.families.mcm.datasets.nope"}, None),
        ({"_target_": "nosuchpackage.f"}, None),
        ({"_target_": "matchbench.datasets.expand"}, None),  # a function, but untagged
        ({"scale": 3}, None),
        ({"_target_": 3}, None),
    ],
)
def test_spec_problem(spec, problem):
    assert spec_problem(spec) == problem


def _conf_targets() -> list[tuple[str, str]]:
    out = []
    for path in sorted(CONF.glob("*.yaml")):
        cfg = OmegaConf.to_container(OmegaConf.load(path))
        for spec in [cfg, *cfg.get("instances", []), *([cfg["many"]] if "many" in cfg else [])]:
            if "_target_" in spec:
                out.append((path.name, spec["_target_"]))
    return out


@pytest.mark.parametrize(("file", "target"), _conf_targets())
def test_every_configured_dataset_is_tagged(file, target):
    from matchbench.core.problem import problem_table

    assert spec_problem({"_target_": target}) in problem_table(), f"{file}: {target}"


def test_conf_targets_cover_every_file():
    files = {f for f, _ in _conf_targets()}
    assert files == {p.name for p in CONF.glob("*.yaml")}


@pytest.mark.parametrize(
    ("fn", "cached"),
    [
        *[(getattr(M, n), True) for n in ("delaunay", "erdos_renyi", "grid", "kronecker", "rgg", "road")],
        (L.uniform, True),
        (L.uniform_float, True),
        (L.geometric, True),
        (L.from_file, False),
        (M.smoke, False),
    ],
)
def test_generators_and_only_they_are_disk_cached(fn, cached):
    assert fn.matchbench_disk_cache is cached


# ---------------------------------------------------------------------------------------
# The disk cache


@pytest.mark.parametrize(
    ("spec", "module", "name", "cls"),
    [(KRON, G, "kronecker", BipartiteGraph), (LAP, L, "uniform", CostMatrix)],
)
def test_generated_instance_is_written_then_read_back(
    _data_dir, monkeypatch, spec, module, name, cls
):
    path = disk_cache_path(spec)
    assert path == _data_dir / "generated" / f"{instance_key(spec)}-v{CACHE_FORMAT}.npz"
    assert not path.exists()
    first = load(spec)
    assert isinstance(first, cls) and path.is_file()
    assert os.listdir(path.parent) == [path.name]  # no temporary file left behind

    ds.clear_cache()
    _forbid(monkeypatch, module, name)
    second = load(spec)
    assert second is not first
    _same(first, second)


def test_rcp_is_permuted_from_the_cached_original(monkeypatch):
    base = load(KRON)
    rcp = load({**KRON, "rcp": True, "rcp_seed": 4})
    assert disk_cache_path({**KRON, "rcp": True, "rcp_seed": 4}) == disk_cache_path(KRON)
    ds.clear_cache()
    _forbid(monkeypatch, M, "kronecker")
    again = load({**KRON, "rcp": True, "rcp_seed": 4})
    _same(rcp, again)
    assert again.name == base.name + "_rcp"


def test_data_dir_argument_wins_over_the_environment(tmp_path, _data_dir):
    elsewhere = tmp_path / "elsewhere"
    load(LAP, data_dir=elsewhere)
    assert disk_cache_path(LAP, elsewhere).is_file()
    assert not disk_cache_path(LAP).exists()


def test_readers_are_not_cached():
    assert disk_cache_path(SMOKE) is None
    assert disk_cache_path({"_target_": "nosuchpackage.f"}) is None
    load(SMOKE)
    assert not (ds.default_data_dir() / "generated").exists()


@pytest.mark.parametrize(
    "damage",
    [
        b"not a zip file",
        b"",
        "truncate",
    ],
)
def test_a_corrupt_file_is_replaced_with_a_warning(damage):
    fresh = load(KRON)
    path = disk_cache_path(KRON)
    if damage == "truncate":
        damage = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(damage)
    ds.clear_cache()
    with pytest.warns(DatasetWarning, match="unreadable"):
        again = load(KRON)
    _same(fresh, again)
    assert path.stat().st_size > len(damage)  # written anew, whole
    ds.clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(fresh, load(KRON))


def test_a_file_of_an_unknown_kind_is_replaced(monkeypatch):
    fresh = load(LAP)
    path = disk_cache_path(LAP)
    with np.load(path) as z:
        arrays = dict(z)
    arrays["kind"] = np.asarray("matchbench.problems.nowhere:CostMatrix")
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    ds.clear_cache()
    with pytest.warns(DatasetWarning, match="unreadable"):
        _same(fresh, load(LAP))


def test_the_environment_variable_turns_the_disk_cache_off(monkeypatch):
    monkeypatch.setenv("MATCHBENCH_NO_DISK_CACHE", "1")
    load(KRON)
    assert not disk_cache_path(KRON).exists()
    # Nor is an existing file read.
    monkeypatch.delenv("MATCHBENCH_NO_DISK_CACHE")
    ds.clear_cache()
    load(KRON)
    assert disk_cache_path(KRON).is_file()
    monkeypatch.setenv("MATCHBENCH_NO_DISK_CACHE", "1")
    ds.clear_cache()
    _forbid(monkeypatch, M, "kronecker")
    with pytest.raises(AssertionError, match="should come from the disk"):
        load(KRON)


def test_an_unwritable_cache_warns_and_loads(monkeypatch, tmp_path):
    # A plain file where the data dir should be: mkdir fails as on a read-only disk,
    # also when the tests run as root.
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("MATCHBENCH_DATA_DIR", str(blocker))
    with pytest.warns(DatasetWarning, match="cannot cache"):
        inst = load(LAP)
    assert inst.costs.shape == (12, 12)


def test_save_and_load_npz_round_trip(tmp_path):
    g = G.road(5, seed=2)
    g.params["np_scalar"] = np.int64(7)  # numpy scalars are written as JSON numbers
    g.save_npz(tmp_path / "g")  # exactly this name: no ".npz" appended
    back = BipartiteGraph.load_npz(tmp_path / "g")
    g.params["np_scalar"] = 7
    _same(g, back)
    c = CostMatrix.from_array(np.arange(6).reshape(2, 3), name="rect", pad=True)
    with open(tmp_path / "c.npz", "wb") as f:
        c.save_npz(f)
    back = CostMatrix.load_npz(tmp_path / "c.npz")
    _same(c, back)
    assert back.original_shape == (2, 3)


def test_load_npz_rejects_inconsistent_arrays(tmp_path):
    g = G.grid(4)
    g.row_ptr = g.row_ptr[:-1]
    g.save_npz(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="row_ptr"):
        BipartiteGraph.load_npz(tmp_path / "bad.npz")
