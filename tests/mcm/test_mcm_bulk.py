"""Bulk generation of the MCM ``rgg`` graphs (``rgg.matchbench_bulk``): each graph equal,
array for array and attribute for attribute, to its one-by-one generation."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from matchbench.core.errors import DatasetError
from matchbench.families.mcm import datasets as M
from matchbench.graphs import generators as G
from matchbench.graphs import rgg_numba as R

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
    # No two graphs' arrays overlap either (they may be views of one array).
    spans = sorted(
        (a.__array_interface__["data"][0], a.nbytes)
        for g in made
        for a in (getattr(g, name) for name in ARRAYS)
        if a.nbytes
    )
    assert all(lo + size <= nxt for (lo, size), (nxt, _) in zip(spans[:-1], spans[1:], strict=True))
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


def test_small_chunks_work_space_and_large_graphs(monkeypatch):
    # Chunks of a few graphs, a work space that must grow many times, and graphs past
    # the bulk size (made by rgg itself) give the same graphs.
    monkeypatch.setattr(G, "RGG_BULK_POINTS", 1 << 7)
    monkeypatch.setattr(
        R, "work_space", lambda points: (np.empty(1, np.uint32), np.empty(1, np.int64))
    )
    kws = [{"scale": s, "seed": seed} for s in (1, 3, 6, 7, 8, 10) for seed in range(4)]
    _check(kws + [{"scale": 7, "seed": 1, "radius_factor": 20.0}])


def _tricky_points():
    """Point sets whose strip keys tie or round: equal points, points of one strip with
    ``x`` one ulp apart (equal keys once the strip is added), ``x = 0``, ``x`` a rounding
    error below 1 (a key rounded up to the next strip), ``y`` at strip edges."""
    rng = np.random.default_rng(3)
    sets = []
    for n in (2, 3, 16, 64, 100, 1000):
        xy = rng.random((n, 2))
        xy[: n // 3] = xy[0]
        some = slice(n // 3, n // 2)
        xy[some, 1] = xy[0, 1]
        xy[some, 0] = np.where(rng.random(n // 2 - n // 3) < 0.5, np.nextafter(xy[0, 0], 2), 0)
        sets.append(xy)
    x = [0.5, 0.5 + 2.0**-54, 0.5 + 2.0**-53, 1 - 2.0**-53, 0.0, 0.25, 1 - 2.0**-52, 0.5]
    y = [0.75, 0.75, 0.8, 0.5, 0.5, 0.5 - 2.0**-54, 0.2, 0.99]
    sets.append(np.column_stack([x, y]))
    return sets


def test_strip_order_is_the_stable_argsort():
    rng = np.random.default_rng(1)
    sets = [rng.random((n, 2)) for n in (1, 2, 5, 256, 4097)] + _tricky_points()
    for xy in sets:
        assert np.array_equal(R.strip_order(xy), G._strip_order(xy)), len(xy)


def test_a_key_rounded_into_the_next_strip_is_left_to_the_caller():
    # 8 points, 3 strips; in the middle one, x = 1 - 2**-53 makes the key 1 + x round
    # to 2.0, the next strip's first key: the kernel leaves that graph to rgg.
    good = np.random.default_rng(2).random((8, 2))
    bad = good.copy()
    bad[0] = (1 - 2.0**-53, 0.5)
    radii = np.array([0.5, 0.5])
    arrays, starts, ok, _ = R.rgg_csr_chunk(
        np.concatenate([bad, good]), np.array([0, 8, 16]), radii, R.work_space(16)
    )
    assert ok.tolist() == [False, True] and starts[0] == starts[1] < starts[2]


def test_graphs_the_kernel_leaves_are_made_by_rgg(monkeypatch):
    kernel = R.rgg_csr_chunk

    def leaving_every_other(xy, offsets, radii, work):
        arrays, starts, ok, work = kernel(xy, offsets, radii, work)
        return arrays, starts, ok & (np.arange(ok.shape[0]) % 2 == 1), work

    monkeypatch.setattr(R, "rgg_csr_chunk", leaving_every_other)
    calls = []
    real = G.rgg
    monkeypatch.setattr(G, "rgg", lambda *a, **k: calls.append(a) or real(*a, **k))
    kws = [{"scale": s, "seed": seed} for s in (4, 8) for seed in range(3)]
    made = G.rgg_bulk(kws)
    assert len(calls) == len(kws) // 2
    for kw, graph in zip(kws, made, strict=True):
        _assert_same(graph, real(**kw))


def test_importing_the_generators_imports_no_numba():
    code = "import sys, matchbench.graphs.generators; print('numba' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


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
