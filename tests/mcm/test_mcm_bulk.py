"""Bulk generation of the MCM ``rgg`` graphs (``rgg.matchbench_bulk``): each graph equal,
array for array and attribute for attribute, to its one-by-one generation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from matchbench.core.errors import DatasetError
from matchbench.families.mcm import datasets as M
from matchbench.graphs import generators as G

ARRAYS = ("row_ptr", "row_ind", "col_ptr", "col_ind")


def _assert_same(bulk, alone):
    """``bulk`` is ``alone``: every attribute, every array (values and dtype), and its
    four arrays its own (no memory shared with each other)."""
    assert type(bulk) is type(alone)
    for name in ARRAYS:
        a, b = getattr(bulk, name), getattr(alone, name)
        assert a.dtype == b.dtype and a.shape == b.shape, (alone.name, name)
        assert np.array_equal(a, b), (alone.name, name)
    assert vars(bulk).keys() == vars(alone).keys()
    for key, value in vars(alone).items():
        if key not in ARRAYS:
            assert getattr(bulk, key) == value or (
                key == "params" and _same_params(getattr(bulk, key), value)
            ), (alone.name, key)
    assert list(bulk.params) == list(alone.params)  # the same order, as JSON writes it
    assert bulk.describe() == alone.describe() and bulk.nbytes == alone.nbytes
    arrays = [getattr(bulk, name) for name in ARRAYS]
    assert not any(np.shares_memory(a, b) for k, a in enumerate(arrays) for b in arrays[k + 1 :])


def _same_params(a, b):  # NaN radii compare unequal to themselves
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k]))
        for k in a
    )


def _check(kws):
    made = G.rgg_bulk(kws)
    assert len(made) == len(kws)
    for kw, graph in zip(kws, made, strict=True):
        _assert_same(graph, G.rgg(**kw))
    return made


@pytest.mark.parametrize("radius_factor", [0.55, 0.25, 1.0])
def test_every_scale_equals_one_by_one(radius_factor):
    kws = [
        {"scale": scale, "seed": seed, "radius_factor": radius_factor}
        for scale in range(1, 13)
        for seed in (0, 1, 2, 17, 10**12)
    ]
    made = _check(kws)
    assert sum(g.n_edges for g in made) > 0


@pytest.mark.parametrize("radius_factor", [2.5, 6.0, 40.0, 1e200, math.inf])
def test_large_radii_equal_one_by_one(radius_factor):
    # Disks that reach across strips, or the whole square (every pair: complete graphs).
    kws = [
        {"scale": s, "seed": seed, "radius_factor": radius_factor}
        for s in range(1, 9)
        for seed in (3, 4)
    ]
    made = _check(kws)
    if radius_factor >= 40:
        assert all(g.n_edges == g.n_rows * (g.n_rows - 1) for g in made)


@pytest.mark.parametrize("radius_factor", [1e-3, 1e-300, math.nan])
def test_tiny_and_nan_radii_equal_one_by_one(radius_factor):
    _check([{"scale": s, "seed": 5, "radius_factor": radius_factor} for s in (1, 2, 5, 9)])


def test_many_seeds_of_small_scales():
    # Many graphs where the boundary, the cells and the strips matter most.
    kws = [{"scale": 1 + seed % 7, "seed": seed} for seed in range(700)]
    kws += [{"scale": 2, "seed": seed, "radius_factor": 0.9} for seed in range(100)]
    _check(kws)


def test_mixed_arguments_keep_their_order():
    rng = np.random.default_rng(7)
    kws = [
        {
            "scale": int(rng.integers(1, 13)),
            "seed": int(s),
            "radius_factor": float(rng.choice([0.3, 0.55, 1.5])),
        }
        for s in rng.permutation(200)
    ]
    kws += [{"scale": 9, "seed": 17}, {"scale": np.int64(9), "seed": np.int64(17)}, {"scale": 3}]
    made = _check(kws)
    names = [g.name for g in made]
    assert names[-3:] == ["rgg_n_2_9_s17", "rgg_n_2_9_s17", "rgg_n_2_3_s1"]
    assert type(made[-2].params["scale"]) is int and type(made[-2].params["seed"]) is int
    assert G.rgg_bulk([]) == []


def test_small_chunks_slices_and_large_graphs(monkeypatch):
    # Chunks of a few graphs, slices of a few candidates, and graphs past the bulk size
    # (made by rgg itself) give the same graphs.
    monkeypatch.setattr(G, "RGG_BULK_POINTS", 1 << 7)
    monkeypatch.setattr(G, "RGG_BULK_CANDIDATES", 16)
    kws = [{"scale": s, "seed": seed} for s in (1, 3, 6, 7, 8, 10) for seed in range(4)]
    _check(kws + [{"scale": 7, "seed": 1, "radius_factor": 20.0}])


def test_a_numbering_not_by_cell_falls_back_to_rgg(monkeypatch):
    # Should the numbering ever change (here: by x alone), the bulk path sees it and lets
    # rgg make the chunk's graphs, still equal to rgg's.
    def by_x(x, y, strips):
        return x + 0.0 * y, np.minimum((y * strips).astype(np.int64), strips - 1)

    monkeypatch.setattr(G, "_strip_key", by_x)
    calls = []
    real = G.rgg
    monkeypatch.setattr(G, "rgg", lambda *a, **k: calls.append(a) or real(*a, **k))
    kws = [{"scale": s, "seed": seed} for s in (4, 8) for seed in range(3)]
    made = G.rgg_bulk(kws)
    assert len(calls) == len(kws)
    for kw, graph in zip(kws, made, strict=True):
        _assert_same(graph, real(**kw))


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"scale": 0}, "rgg: scale must be [1, 40], not 0"),
        ({"scale": 41}, "rgg: scale must be [1, 40], not 41"),
        ({"scale": 2.0}, "rgg: scale must be an integer"),
        ({"scale": True}, "rgg: scale must be an integer"),
        ({"scale": 4, "seed": -1}, "rgg: seed must be >= 0, not -1"),
        ({"scale": 4, "seed": "1"}, "rgg: seed must be an integer"),
        ({"scale": 4, "radius_factor": 0}, "rgg: radius_factor must be > 0"),
        ({"scale": 4, "radius_factor": -0.5}, "rgg: radius_factor must be > 0"),
        ({"scale": 4, "radius": 0.1}, "rgg: unexpected argument(s) 'radius'"),
        ({"seed": 4}, "rgg: missing argument(s) 'scale'"),
    ],
)  # fmt: skip
def test_invalid_arguments_are_refused_naming_rgg(kwargs, fragment):
    good = {"scale": 3, "seed": 1}
    with pytest.raises(DatasetError) as info:
        G.rgg_bulk([good, kwargs, good])
    assert fragment in str(info.value)
    if "argument(s)" not in fragment:  # what rgg itself refuses, with the same message
        with pytest.raises(DatasetError) as alone:
            G.rgg(**kwargs)
        assert str(alone.value) == str(info.value)
    else:
        with pytest.raises(TypeError):
            G.rgg(**kwargs)


def test_the_mcm_dataset_function_carries_the_hook():
    from hydra.utils import get_method

    fn = get_method("matchbench.families.mcm.datasets.rgg")
    assert fn is M.rgg and fn.matchbench_bulk is G.rgg_bulk
    assert fn.matchbench_problem == "mcm" and fn.matchbench_disk_cache is True
    assert not hasattr(G.rgg, "matchbench_bulk")  # the shared generator stays untagged
    kws = [{"scale": 8, "seed": 4}, {"scale": 5, "seed": 9, "radius_factor": 0.7}]
    for kw, graph in zip(kws, fn.matchbench_bulk(kws), strict=True):
        _assert_same(graph, fn(**kw))
