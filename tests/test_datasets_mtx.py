"""Matrix Market loading: round trips, every malformed case, the embedded smoke set."""

from __future__ import annotations

import gzip
import tempfile
import warnings
from pathlib import Path

import fast_matrix_market as fmm
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from matchbench.datasets import DatasetError, DatasetWarning
from matchbench.families.mcm.datasets import SMOKE_DIR, smoke, smoke_names
from matchbench.graphs import generators, mtx
from matchbench.graphs.bipartite import BipartiteGraph

HEADER = "%%MatrixMarket matrix coordinate real general\n"


def _pattern(g: BipartiteGraph) -> set[tuple[int, int]]:
    rows = np.repeat(np.arange(g.n_rows), np.diff(g.row_ptr))
    return set(zip(rows.tolist(), g.row_ind.tolist(), strict=True))


def _check_csr(g: BipartiteGraph) -> None:
    """Both directions canonical (sorted, no duplicates) and transposes of each other."""
    for ptr, ind in ((g.row_ptr, g.row_ind), (g.col_ptr, g.col_ind)):
        for k in range(ptr.shape[0] - 1):
            assert np.all(np.diff(ind[ptr[k] : ptr[k + 1]]) > 0)
    a = g.to_scipy()
    at = sp.csr_matrix((np.ones(g.n_edges), g.col_ind, g.col_ptr), shape=(g.n_cols, g.n_rows))
    assert (a != at.T).nnz == 0


def _write_text(path: Path, text: str) -> Path:
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------
# Round trips


@pytest.mark.parametrize("field", ["pattern", "integer", "real"])
@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz"])
def test_round_trip_general_rectangular(tmp_path, field, suffix):
    rng = np.random.default_rng(3)
    a = sp.random(17, 29, density=0.2, format="coo", random_state=rng)
    if field == "integer":
        a.data = rng.integers(1, 9, a.nnz).astype(np.int64)
    path = mtx.write(tmp_path / f"m{suffix}", a, field=field)
    if suffix == ".mtx.gz":
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    g = mtx.read(path)
    assert (g.n_rows, g.n_cols, g.n_edges) == (17, 29, a.nnz)
    assert _pattern(g) == set(zip(a.row.tolist(), a.col.tolist(), strict=True))
    assert g.name == "m" and g.family == "mtx"
    assert g.params["field"] == field and g.params["n_entries"] == a.nnz
    assert g.params["n_duplicates"] == 0
    _check_csr(g)


@pytest.mark.parametrize("field", ["pattern", "integer", "real"])
def test_round_trip_symmetric_expands_both_triangles(tmp_path, field):
    rng = np.random.default_rng(5)
    low = sp.tril(sp.random(25, 25, density=0.15, random_state=rng), k=-1)
    full = (low + low.T + sp.eye(25)).tocoo()  # with the diagonal: self-loops
    if field == "integer":
        full.data = np.ones(full.nnz, dtype=np.int64)
    path = mtx.write(tmp_path / "s.mtx", full, field=field, symmetry="symmetric")
    header = fmm.read_header(str(path))
    assert header.symmetry == "symmetric" and header.nnz == low.nnz + 25
    g = mtx.read(path)
    assert g.n_edges == full.nnz
    assert _pattern(g) == set(zip(full.row.tolist(), full.col.tolist(), strict=True))
    assert g.params["n_diagonal"] == 25 and g.params["n_entries"] == low.nnz + 25
    _check_csr(g)


def test_graph_round_trip_through_write(tmp_path):
    g = generators.erdos_renyi(6, avg_degree=4.0, seed=2, aspect=0.75)
    for name in ("g.mtx", "g.mtx.gz"):
        h = mtx.read(mtx.write(tmp_path / name, g))
        assert (h.n_rows, h.n_cols) == (g.n_rows, g.n_cols)
        np.testing.assert_array_equal(h.row_ptr, g.row_ptr)
        np.testing.assert_array_equal(h.row_ind, g.row_ind)
        np.testing.assert_array_equal(h.col_ind, g.col_ind)


@settings(max_examples=40, deadline=None)
@given(
    n_rows=st.integers(1, 12),
    n_cols=st.integers(1, 12),
    data=st.data(),
    symmetric=st.booleans(),
)
def test_round_trip_random_patterns(n_rows, n_cols, data, symmetric):
    if symmetric:
        n_cols = n_rows
    cells = st.tuples(st.integers(0, n_rows - 1), st.integers(0, n_cols - 1))
    entries = data.draw(st.sets(cells, min_size=1, max_size=n_rows * n_cols))
    if symmetric:  # the file stores the lower triangle of the symmetric pattern
        entries = {(max(i, j), min(i, j)) for i, j in entries}
    rows, cols = (np.array(x) for x in zip(*sorted(entries), strict=True))
    a = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n_rows, n_cols))
    expected = set(entries) | ({(j, i) for i, j in entries} if symmetric else set())
    with tempfile.TemporaryDirectory() as tmp:
        path = mtx.write(
            Path(tmp) / "h.mtx",
            a,
            field="pattern",
            symmetry="symmetric" if symmetric else "general",
        )
        g = mtx.read(path)
    assert _pattern(g) == expected
    assert g.params["n_diagonal"] == sum(i == j for i, j in entries)
    _check_csr(g)


# ---------------------------------------------------------------------------------------
# What the pattern means


def test_explicit_zeros_are_edges_and_counted(tmp_path):
    path = _write_text(tmp_path / "z.mtx", HEADER + "3 3 4\n1 1 0\n2 3 0.0\n3 2 1.5\n1 3 -0\n")
    g = mtx.read(path)
    assert g.n_edges == 4 and g.params["n_explicit_zeros"] == 3
    assert (1, 2) in _pattern(g)


def test_duplicates_merged_counted_and_warned(tmp_path):
    path = _write_text(tmp_path / "d.mtx", HEADER + "3 3 5\n1 1 1\n1 1 2\n2 3 1\n2 3 1\n3 1 1\n")
    with pytest.warns(DatasetWarning, match=r"d\.mtx: 2 duplicate entries merged"):
        g = mtx.read(path)
    assert g.n_edges == 3 and g.params["n_duplicates"] == 2
    _check_csr(g)


def test_symmetric_file_storing_both_triangles_counts_duplicates(tmp_path):
    text = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n1 2\n3 3\n"
    with pytest.warns(DatasetWarning):
        g = mtx.read(_write_text(tmp_path / "both.mtx", text))
    assert _pattern(g) == {(0, 1), (1, 0), (2, 2)}
    assert g.params["n_duplicates"] == 2 and g.params["n_diagonal"] == 1


def test_skew_symmetric_pattern_is_both_triangles(tmp_path):
    text = "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.0\n3 2 -4\n"
    g = mtx.read(_write_text(tmp_path / "k.mtx", text))
    assert _pattern(g) == {(1, 0), (0, 1), (2, 1), (1, 2)}


def test_no_warning_on_clean_file(tmp_path):
    path = mtx.write(tmp_path / "c.mtx", sp.eye(4, format="coo"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mtx.read(path)


# ---------------------------------------------------------------------------------------
# Malformed files: each a DatasetError naming the file and the problem

BAD = {
    "no_banner": ("3 3 1\n1 1 1\n", ["line 1", "not a Matrix Market file"]),
    "empty_file": ("", ["line 1", "not a Matrix Market file"]),
    "bad_header": (
        "%%MatrixMarket matrix coordinatez real general\n3 3 1\n1 1 1\n",
        ["line 1", "bad header", "coordinatez"],
    ),
    "bad_size_line": (HEADER + "3 x 1\n1 1 1\n", ["line 2", "bad size line", "3 x 1"]),
    "short_size_line": (HEADER + "% c\n3 3\n1 1 1\n", ["line 3", "bad size line"]),
    "negative_size": (HEADER + "-3 3 1\n1 1 1\n", ["line 2", "negative"]),
    "fewer_entries": (
        HEADER + "10 10 4\n1 1 1\n2 2 1\n3 3 1\n",
        ["fewer entries than the 4 the header says", "1 missing"],
    ),
    "more_entries": (
        HEADER + "10 10 2\n1 1 1\n2 2 1\n3 3 1\n",
        ["line 5", "more entries than the 2 the header says"],
    ),
    "non_numeric_index": (HEADER + "10 10 2\n1 1 1\n2 b 1\n", ["line 4", "non-numeric", "2 b 1"]),
    "non_numeric_value": (HEADER + "10 10 2\n1 1 1\n2 2 abc\n", ["line 4", "non-numeric"]),
    "missing_value": (HEADER + "10 10 2\n1 1 1\n2 2\n", ["line 4", "non-numeric"]),
    "float_index": (HEADER + "10 10 1\n1.5 1 1\n", ["line 3", "non-integer"]),
    "row_index_high": (
        HEADER + "% a comment\n%\n10 10 3\n1 1 1\n2 2 1\n12 3 1\n",
        ["line 7: row index 12 out of range [1, 10]"],
    ),
    "row_index_zero": (HEADER + "10 10 1\n0 3 1\n", ["line 3: row index 0 out of range [1, 10]"]),
    "column_index_high": (
        HEADER + "10 7 2\n1 1 1\n2 8 1\n",
        ["line 4: column index 8 out of range [1, 7]"],
    ),
    "negative_index": (HEADER + "10 10 1\n-1 3 1\n", ["line 3: row index -1 out of range"]),
    "index_overflow": (
        HEADER + "10 10 1\n99999999999999999999999 1 1\n",
        ["line 3", "out of range"],
    ),
    "zero_rows": (HEADER + "0 5 0\n", ["empty graph", "0 rows"]),
    "zero_entries": (HEADER + "5 5 0\n", ["empty graph", "0 entries"]),
    "complex": (
        "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 0\n",
        ["complex", "not supported"],
    ),
    "hermitian": (
        "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n2 1 1 0\n",
        ["complex"],
    ),
    "dense_array": ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", ["array"]),
    "vector": ("%%MatrixMarket vector coordinate real general\n3 1\n2 1.0\n", ["vector"]),
    "symmetric_not_square": (
        "%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n2 1 1\n",
        ["symmetric", "not square", "3 x 4"],
    ),
    "absurd_count": (
        HEADER + "5 5 1000000000000\n1 1 1\n",
        ["1000000000000", "more than the file"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz"])
def test_malformed_file_raises_dataset_error(tmp_path, case, suffix):
    text, expected = BAD[case]
    path = _write_text(tmp_path / f"{case}{suffix}", text)
    with pytest.raises(DatasetError) as info:
        mtx.read(path)
    msg = str(info.value)
    assert msg.startswith(str(path) + ": "), msg
    for part in expected:
        assert part in msg, msg
    assert isinstance(info.value, ValueError)


def test_missing_file(tmp_path):
    with pytest.raises(DatasetError, match=r"nope\.mtx: no such file"):
        mtx.read(tmp_path / "nope.mtx")


def test_error_line_numbers_hold_in_large_files(tmp_path):
    # Large enough for fast_matrix_market to parse in parallel chunks.
    n = 200_000
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(1, 1001, n), rng.integers(1, 1001, n)
    lines = [f"{r} {c}\n" for r, c in zip(rows, cols, strict=True)]
    lines[150_000] = "5 1001\n"
    text = f"%%MatrixMarket matrix coordinate pattern general\n%\n1000 1000 {n}\n" + "".join(lines)
    path = _write_text(tmp_path / "big.mtx", text)
    with pytest.raises(
        DatasetError, match=r"line 150004: column index 1001 out of range \[1, 1000\]"
    ):
        mtx.read(path)


def test_load_looks_up_relative_paths_in_data_dir(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    mtx.write(data / "r.mtx", sp.eye(3, format="coo"))
    monkeypatch.chdir(tmp_path)
    assert mtx.load("r.mtx", data_dir=data).n_edges == 3
    monkeypatch.setenv("MATCHBENCH_DATA_DIR", str(data))
    assert mtx.load("r.mtx").n_edges == 3
    with pytest.raises(DatasetError, match="no such file"):
        mtx.load("other.mtx", data_dir=data)


# ---------------------------------------------------------------------------------------
# The embedded smoke set


def test_smoke_set_is_small_and_loads_cleanly():
    names = smoke_names()
    assert 5 <= len(names) <= 8
    files = [SMOKE_DIR / f"{n}.mtx" for n in names]
    assert sum(f.stat().st_size for f in files) < 100_000
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in names:
            g = smoke(name)
            assert g.name == name and g.family == "smoke"
            assert g.n_rows > 0 and g.n_cols > 0 and g.n_edges > 0
            _check_csr(g)


def test_smoke_set_covers_what_its_readme_says():
    band = smoke("sym_band_40")
    assert band.params["symmetry"] == "symmetric" and band.params["field"] == "real"
    assert band.params["n_diagonal"] == 40 and band.params["n_explicit_zeros"] == 2
    rect = smoke("er_rect_64x96")
    assert (rect.n_rows, rect.n_cols) == (64, 96)
    assert (np.diff(rect.row_ptr) == 0).any() and (np.diff(rect.col_ptr) == 0).any()
    singular = smoke("int_singular_60")
    assert singular.params["field"] == "integer" and singular.params["n_explicit_zeros"] > 0
    match = sp.csgraph.maximum_bipartite_matching(singular.to_scipy().tocsr(), perm_type="column")
    assert (match >= 0).sum() < 60  # structurally singular, as documented
    tall = smoke("pattern_tall_30x20")
    assert tall.params["field"] == "pattern" and (tall.n_rows, tall.n_cols) == (30, 20)


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("grid2d_2", lambda: generators.grid(2, seed=1)),
        ("grid2d_6", lambda: generators.grid(6, seed=1)),
        ("delaunay_n8", lambda: generators.delaunay(8, seed=1)),
        ("kron_g500-logn7", lambda: generators.kronecker(7, seed=1)),
        ("er_rect_64x96", lambda: generators.erdos_renyi(6, avg_degree=3.0, seed=1, aspect=1.5)),
    ],
)
def test_generated_smoke_files_still_match_their_generator(name, make):
    # A mismatch means a seed no longer gives the same graph (numpy/scipy changed streams):
    # results keyed by the same spec would then describe different instances.
    stored, fresh = smoke(name), make()
    assert (stored.n_rows, stored.n_cols) == (fresh.n_rows, fresh.n_cols)
    np.testing.assert_array_equal(stored.row_ptr, fresh.row_ptr)
    np.testing.assert_array_equal(stored.row_ind, fresh.row_ind)


def test_smoke_name_errors_list_the_choices():
    with pytest.raises(DatasetError, match="a name is required; available: .*grid2d_2"):
        smoke()
    with pytest.raises(DatasetError, match="no smoke instance 'nope'"):
        smoke("nope")


# ---------------------------------------------------------------------------------------
# Hostile headers: every Matrix Market reader refuses before allocating


@pytest.mark.parametrize("reader", ["mcm", "wmatch", "community"])
def test_absurd_dimensions_are_a_bad_header_not_an_allocation(tmp_path, reader):
    from matchbench.families.community import datasets as C
    from matchbench.families.wmatch import datasets as W

    read = {"mcm": mtx.read, "wmatch": W.graph_mtx, "community": C.community_mtx}[reader]
    p = tmp_path / "huge.mtx"
    p.write_text("%%MatrixMarket matrix coordinate pattern general\n2000000000 2000000000 3\n1 1\n2 2\n3 3\n")
    assert p.stat().st_size < 100
    with pytest.raises(DatasetError, match=r"huge\.mtx.*2,000,000,000 x 2,000,000,000 for 3 entries"):
        read(p)


@pytest.mark.parametrize("reader", ["wmatch", "community"])
def test_a_file_of_diagonal_entries_only_is_named_not_an_index_error(tmp_path, reader):
    from matchbench.families.community import datasets as C
    from matchbench.families.wmatch import datasets as W

    read = {"wmatch": W.graph_mtx, "community": C.community_mtx}[reader]
    p = tmp_path / "diag.mtx"
    p.write_text("%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 1.0\n2 2 2.0\n3 3 3.0\n")
    with pytest.raises(DatasetError, match=r"diag\.mtx: no edge left after dropping the diagonal"):
        read(p)


def test_a_directory_given_as_a_path_is_named_as_such_by_every_reader(tmp_path):
    from matchbench.families.community import datasets as C
    from matchbench.families.lap import datasets as L
    from matchbench.families.mwpm import datasets as MW
    from matchbench.families.smarriage import datasets as S
    from matchbench.families.wmatch import datasets as W

    folder = tmp_path / "data.mtx"
    folder.mkdir()
    for read in (mtx.read, W.graph_mtx, C.community_mtx, L.from_file, S.prefs_file, MW.complete_file):
        with pytest.raises(DatasetError, match="is a directory, not a file") as info:
            read(folder)
        assert str(folder) in str(info.value)
