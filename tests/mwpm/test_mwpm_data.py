"""Complete graphs (mwpm): the data model, the thesis's generators, the .npy reader's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from matchbench.datasets import DatasetError, DatasetWarning, expand, load, spec_problem
from matchbench.families.mwpm.datasets import (
    EXPONENTIAL_RATE,
    complete_exponential,
    complete_file,
    complete_geometric,
    complete_uniform,
)
from matchbench.families.mwpm.problem import CompleteGraph, exact_optimum, matrix_defect

GENERATORS = [complete_uniform, complete_exponential, complete_geometric]


def _sym(n: int, seed: int = 0, dtype=np.float64) -> np.ndarray:
    a = np.random.default_rng(seed).random((n, n))
    a = np.triu(a, 1)
    return (a + a.T).astype(dtype)


# -- generators ------------------------------------------------------------------------


@pytest.mark.parametrize("gen", GENERATORS)
@pytest.mark.parametrize("n", [2, 6, 130])
def test_generated_matrix_is_a_valid_float32_symmetric_zero_diagonal_instance(gen, n):
    g = gen(n, seed=3)
    w = g.weight
    assert w.dtype == np.float32 and w.flags.c_contiguous and w.shape == (n, n)
    assert np.array_equal(w, w.T)
    assert not np.diagonal(w).any()
    assert np.isfinite(w).all() and (w >= 0).all()
    # off the diagonal, zero weights are (all but) impossible in these distributions
    assert np.count_nonzero(w) >= n * (n - 1) - 2
    assert matrix_defect(w, n) is None  # the constructor's scan, skipped by the generators
    assert g.n_vertices == n and g.dummy is None and g.params["dummy_vertex"] is None
    assert g.name == f"{gen.__name__}_n{n}_s3" and g.family == gen.__name__
    assert g.problem == "mwpm" and gen.matchbench_problem == "mwpm"


@pytest.mark.parametrize("gen", GENERATORS)
def test_generators_are_deterministic_by_seed(gen):
    a, b, c = gen(50, seed=7), gen(50, seed=7), gen(50, seed=8)
    assert np.array_equal(a.weight, b.weight)
    assert not np.array_equal(a.weight, c.weight)


@pytest.mark.parametrize("gen", GENERATORS)
def test_smaller_instance_is_the_leading_block_of_a_larger_one(gen):
    # the per-edge counter (uniform, exponential) and the point stream (geometric) do not
    # depend on n, as the module docstring says
    small, big = gen(40, seed=2), gen(97, seed=2)
    assert np.array_equal(small.weight, big.weight[:40, :40])


@pytest.mark.parametrize("gen", GENERATORS)
def test_odd_n_gets_one_zero_weight_dummy_vertex(gen):
    g = gen(7, seed=1)
    assert g.weight.shape == (8, 8) and g.n == 8 and g.n_vertices == 7
    assert g.dummy == 7 and g.params["dummy_vertex"] == 7 and g.params["n_vertices"] == 7
    assert not g.weight[7].any() and not g.weight[:, 7].any()
    # the row describes the real graph; the dummy is in instance_params
    assert g.describe() == {
        "instance": g.name,
        "family": g.family,
        "n_rows": 7,
        "n_cols": 7,
        "n_edges": 21,
    }
    # the real block is the even instance's block: the dummy adds nothing else
    assert np.array_equal(g.weight[:7, :7], gen(8, seed=1).weight[:7, :7])


def test_distributions_match_the_thesis():
    n = 600  # 179,700 edges
    iu = np.triu_indices(n, 1)
    u = complete_uniform(n, seed=0).weight[iu].astype(np.float64)
    assert u.min() >= 0.0 and u.max() <= 1.0
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    # the 2^24-point grid k / (2^24 - 1) of [0, 1]
    k = u * (2**24 - 1)
    assert np.allclose(k, np.round(k), atol=1e-3)

    e = complete_exponential(n, seed=0).weight[iu].astype(np.float64)
    assert e.min() >= 0.0
    assert abs(e.mean() - 1 / EXPONENTIAL_RATE) < 0.005
    assert abs(np.median(e) - math.log(2) / EXPONENTIAL_RATE) < 0.005
    assert abs(e.std() - 1 / EXPONENTIAL_RATE) < 0.005

    e2 = complete_exponential(n, seed=0, rate=1.0).weight[iu].astype(np.float64)
    assert abs(e2.mean() - 1.0) < 0.02

    from scipy.spatial.distance import cdist

    pts = np.random.default_rng(5).random((n, 2))
    g = complete_geometric(n, seed=5).weight
    assert np.array_equal(g, cdist(pts, pts).astype(np.float32))
    assert g.max() <= math.sqrt(2)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: complete_uniform(1), "n must be an integer >= 2"),
        (lambda: complete_uniform(-4), "n must be an integer >= 2"),
        (lambda: complete_uniform(True), "n must be an integer >= 2"),
        (lambda: complete_uniform(8.0), "n must be an integer >= 2"),
        (lambda: complete_geometric(8, seed=-1), "seed must be an integer >= 0"),
        (lambda: complete_exponential(8, rate=0.0), "rate must be a finite number > 0"),
        (lambda: complete_exponential(8, rate=float("inf")), "rate must be a finite number > 0"),
    ],
)
def test_bad_generator_arguments_are_named(call, match):
    with pytest.raises(DatasetError, match=match):
        call()


def test_rate_other_than_the_thesis_is_in_the_name():
    assert complete_exponential(4, seed=0, rate=2.0).name == "complete_exponential_n4_s0_r2"
    assert complete_exponential(4, seed=0).name == "complete_exponential_n4_s0"


# -- the data model ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weight", "kwargs", "match"),
    [
        (np.zeros((4, 4)), {}, "C-contiguous float32 array, got float64"),
        (np.zeros((4, 4), np.float32)[:, ::-1], {}, "not C-contiguous"),
        (np.zeros((3, 3), np.float32), {}, "even size"),
        (np.zeros((4, 3), np.float32), {}, "square 2-D array"),
        (np.zeros((4, 4), np.float32), {"n_vertices": 2}, "expected 4 or 3"),
        (np.zeros((2, 2), np.float32), {"n_vertices": 1}, "at least 2"),
    ],
)
def test_constructor_rejects_what_is_not_a_stored_matrix(weight, kwargs, match):
    with pytest.raises(DatasetError, match=match) as info:
        CompleteGraph(weight, name="bad", **kwargs)
    assert "mwpm instance 'bad'" in str(info.value)


def test_constructor_scan_names_the_first_defect():
    w = _sym(6, dtype=np.float32)
    for (i, j), value, match in [
        ((1, 4), np.nan, r"w\[1, 4\] = nan is not finite"),
        ((4, 1), np.inf, r"w\[4, 1\] = inf is not finite"),
        ((2, 3), -0.5, r"w\[2, 3\] = -0.5 is negative"),
        ((3, 2), 7.0, r"not symmetric: w\[2, 3\] = .* but w\[3, 2\] = 7.0"),
        ((5, 5), 1.0, r"diagonal entry w\[5, 5\] = 1.0 is not 0"),
    ]:
        bad = w.copy()
        bad[i, j] = value
        with pytest.raises(DatasetError, match=match):
            CompleteGraph(bad, name="m")
    dummy = w.copy()  # vertex 5 declared a dummy, but it has edges
    with pytest.raises(DatasetError, match=r"edge \(0, 5\) of the dummy vertex 5 weighs"):
        CompleteGraph(dummy, n_vertices=5)


def test_defects_far_apart_in_a_tiled_scan_are_found():
    # the parallel scan works on 128 x 128 tiles folded pairwise; a defect in the last tile
    # row and one in the last column must both be seen
    w = complete_uniform(300, seed=0).weight
    for i, j in [(299, 298), (0, 299), (150, 151), (297, 5)]:
        bad = w.copy()
        bad[i, j] += 1.0
        lo, hi = min(i, j), max(i, j)
        assert f"w[{lo}, {hi}]" in matrix_defect(bad)


def test_from_matrix_converts_pads_and_zeroes_the_diagonal():
    a = _sym(5)
    np.fill_diagonal(a, 3.0)
    with pytest.warns(DatasetWarning, match="5 nonzero diagonal entries ignored"):
        g = CompleteGraph.from_matrix(a, name="five")
    assert g.weight.shape == (6, 6) and g.dummy == 5
    assert np.array_equal(
        g.weight[:5, :5], np.where(np.eye(5, dtype=bool), 0, a).astype(np.float32)
    )
    assert not np.shares_memory(g.weight, a)  # a copy, never the caller's array
    ints = CompleteGraph.from_matrix(np.array([[0, 2], [2, 0]]))
    assert ints.weight.dtype == np.float32 and ints.weight[0, 1] == 2.0


def test_from_matrix_never_modifies_its_input():
    a = _sym(4, dtype=np.float32)
    a[0, 0] = 9.0
    with pytest.warns(DatasetWarning):
        CompleteGraph.from_matrix(a)
    assert a[0, 0] == 9.0


def test_permuted_keeps_the_dummy_last_and_the_optimum():
    g = complete_uniform(9, seed=4)
    p = g.permuted(11)
    assert p.dummy == 9 and not p.weight[9].any()
    assert p.params["rcp"] is True and p.name.endswith("_rcp")
    assert np.array_equal(np.sort(p.weight, axis=None), np.sort(g.weight, axis=None))
    assert not np.array_equal(p.weight, g.weight)
    assert exact_optimum(p) == pytest.approx(exact_optimum(g), rel=1e-12)


# -- the .npy reader --------------------------------------------------------------------


def test_file_round_trip_and_odd_padding(tmp_path):
    a = _sym(7)
    path = tmp_path / "seven.npy"
    np.save(path, a)
    g = complete_file(str(path))
    assert g.name == "seven" and g.family == "complete_file" and g.params["path"] == str(path)
    assert g.weight.shape == (8, 8) and g.dummy == 7
    assert np.array_equal(g.weight[:7, :7], a.astype(np.float32))
    assert complete_file(str(path), name="other").name == "other"


def test_file_through_the_dataset_loader(tmp_path):
    np.save(tmp_path / "m.npy", _sym(6))
    (spec,) = expand(
        {"_target_": "matchbench.families.mwpm.datasets.complete_file", "path": str(tmp_path / "m.npy")}
    )
    assert spec_problem(spec) == "mwpm"
    g = load(spec)
    assert isinstance(g, CompleteGraph) and g.n_vertices == 6


def test_relative_file_is_found_under_data_dir(tmp_path):
    np.save(tmp_path / "rel.npy", _sym(4))
    assert complete_file("rel.npy", data_dir=str(tmp_path)).n == 4


def _write(tmp_path, name, array=None, raw: bytes | None = None, pickle=False):
    path = tmp_path / name
    if raw is not None:
        path.write_bytes(raw)
    else:
        np.save(path, array, allow_pickle=pickle)
    return path


BAD_FILES = [
    ("missing.npy", None, "no such file"),
    ("m.txt", b"0 1\n1 0\n", "unknown file type '.txt': expected a .npy file"),
    ("garbage.npy", b"not an npy file at all", "cannot read it as a .npy array"),
    ("objects.npy", np.array([[0, "a"], ["a", 0]], dtype=object), "cannot read it as a .npy array"),
    ("flat.npy", np.arange(4.0), "must be 2-D, got shape (4,)"),
    ("rect.npy", np.zeros((3, 4)), "is 3 x 4, not square"),
    ("one.npy", np.zeros((1, 1)), "1 vertices: a matching needs at least 2"),
    ("cplx.npy", np.zeros((2, 2), dtype=complex), "dtype complex128; expected real numbers"),
    ("bool.npy", np.zeros((2, 2), dtype=bool), "dtype bool; expected real numbers"),
]


@pytest.mark.parametrize(("name", "content", "match"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_file_is_a_clear_error_naming_file_and_problem(tmp_path, name, content, match):
    path = tmp_path / name
    if name != "missing.npy":
        raw = content if isinstance(content, bytes) else None
        path = _write(
            tmp_path, name, None if raw else content, raw=raw, pickle=name == "objects.npy"
        )
    with pytest.raises(DatasetError) as info:
        complete_file(str(path))
    message = str(info.value)
    assert message.startswith(f"complete_file {path}: ")
    assert match in message


@pytest.mark.parametrize(
    ("entry", "value", "match"),
    [
        ((1, 2), np.nan, "w[1, 2] = nan is not finite"),
        ((2, 1), -np.inf, "w[2, 1] = -inf is not finite"),
        ((0, 3), -1.0, "w[0, 3] = -1.0 is negative"),
        ((3, 0), 0.25, "not symmetric: w[0, 3] ="),
    ],
)
def test_bad_weights_in_a_file_are_named(tmp_path, entry, value, match):
    a = _sym(5)
    a[entry] = value
    path = _write(tmp_path, "w.npy", a)
    with pytest.raises(DatasetError) as info:
        complete_file(str(path))
    message = str(info.value)
    assert message.startswith(f"complete_file {path}: mwpm instance 'w': ")
    assert match in message


def test_values_beyond_float32_are_reported_not_finite(tmp_path):
    a = _sym(4)
    a[0, 1] = a[1, 0] = 1e300
    path = _write(tmp_path, "big.npy", a)
    with pytest.raises(DatasetError, match="is not finite"), np.errstate(over="ignore"):
        complete_file(str(path))
