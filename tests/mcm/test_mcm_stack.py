"""The MCM family's bulk file (``dataset=mcm_stack``): many graphs in one ``.npz`` of the
arrays ``solve_batch`` takes.

Graphs written by ``save_csr_stack`` (or by hand with ``np.savez``) read back as they were,
array for array; the bulk hook gives each graph its one-by-one reading; hostile files are
refused by name, before anything is unpickled or allocated; and a file the reader accepts
is one that ``solve_batch`` takes.
"""

from __future__ import annotations

import inspect
import io
import pickle
import warnings
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from matchbench.core.errors import DatasetError, DatasetWarning
from matchbench.families.mcm import datasets as M
from matchbench.families.mcm import stackfile as S
from matchbench.graphs.bipartite import BipartiteGraph
from matchbench.mcm import read_csr_stack, save_csr_stack

ARRAYS = ("row_ptr", "row_ind", "col_ptr", "col_ind")
TARGET = "matchbench.families.mcm.datasets.csr_stack"


def _graphs():
    return [
        *[M.rgg(scale, seed=seed) for scale, seed in ((3, 1), (5, 2), (7, 3), (8, 4))],
        M.erdos_renyi(5, seed=3, aspect=1.5),
        M.grid(4),
        M.kronecker(5, seed=2),
    ]


def _same_arrays(a, b):
    assert (a.n_rows, a.n_cols) == (b.n_rows, b.n_cols)
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
        assert type(y) is np.ndarray, name  # off the mapping: picklable, writable


def _same(a, b):
    _same_arrays(a, b)
    assert (a.name, a.family, a.params) == (b.name, b.family, b.params)


def _save(path, **arrays):
    with open(path, "wb") as f:  # exactly there
        np.savez(f, **arrays)
    return path


def _csr(graphs):
    """The arrays of solve_batch, by the recipe of the module notes."""
    return {
        "indptr": np.concatenate([g.indptr for g in graphs]),
        "indices": np.concatenate([g.indices for g in graphs]),
        "shapes": np.array([g.shape for g in graphs]),
    }


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("compressed", [False, True])
def test_graphs_read_back_as_written(tmp_path, compressed):
    graphs = _graphs()
    path = save_csr_stack(tmp_path / "g.npz", graphs, compressed=compressed)
    with np.load(path, allow_pickle=False) as z:
        assert path == tmp_path / "g.npz" and sorted(z.files) == ["indices", "indptr", "shapes"]
    for i, g in enumerate(graphs):
        got = M.csr_stack(path, seed=i)
        _same_arrays(g, got)
        assert got.name == f"g_i{i}" and got.family == "mcm_stack"
        assert got.params == {"path": str(path), "index": i, "n_duplicates": 0}


def test_scipy_matrices_written_by_hand_or_by_the_writer(tmp_path):
    rng = np.random.default_rng(0)
    mats = [
        sp.random(r, c, density=0.3, format="csr", random_state=rng)
        for r, c in ((4, 9), (7, 3), (1, 1), (12, 12))
    ]
    mats[2] = sp.csr_matrix(np.ones((1, 1)))
    want = [BipartiteGraph.from_scipy(a) for a in mats]
    arrays = _csr(mats)
    arrays = {k: v.astype(">i8") for k, v in arrays.items()}  # another dtype and byte order
    arrays["shapes"] = np.asfortranarray(arrays["shapes"])
    for path in (_save(tmp_path / "hand.npz", **arrays), save_csr_stack(tmp_path / "w.npz", mats)):
        for i, g in enumerate(want):
            _same_arrays(g, M.csr_stack(path, seed=i))
    coo = [a.tocoo() for a in mats]  # any scipy sparse format
    path = save_csr_stack(tmp_path / "coo.npz", coo)
    assert [M.csr_stack(path, seed=i).n_edges for i in range(4)] == [g.n_edges for g in want]


def test_indices_offsets_place_each_graphs_edges(tmp_path):
    graphs = _graphs()[:3]
    gap = 5
    ind, offs = [], []
    for g in graphs:  # every graph's edges after a gap of junk
        offs.append(sum(len(x) for x in ind) + gap)
        ind += [np.full(gap, -7, dtype=np.int32), g.row_ind]
    arrays = {
        "indptr": np.concatenate([g.row_ptr for g in graphs]),
        "indices": np.concatenate(ind),
        "shapes": np.array([(g.n_rows, g.n_cols) for g in graphs]),
    }
    for extra in (offs, [*offs, len(arrays["indices"])]):  # (B,) or (B + 1,)
        path = _save(tmp_path / "o.npz", **arrays, indices_offsets=np.array(extra))
        for i, g in enumerate(graphs):
            _same_arrays(g, M.csr_stack(path, seed=i))
        assert np.array_equal(read_csr_stack(path)["indices_offsets"], offs)


def test_duplicate_edges_are_merged_and_counted(tmp_path):
    # graph 0: row 0 lists column 1 three times, row 1 lists 0 twice; unsorted columns
    path = _save(
        tmp_path / "d.npz",
        indptr=np.array([0, 4, 6, 0, 1]),
        indices=np.array([1, 2, 1, 1, 0, 0, 0]),
        shapes=np.array([[2, 3], [1, 1]]),
    )
    with pytest.warns(DatasetWarning, match=r"d\.npz: graph 0: 3 duplicate edges merged"):
        g = M.csr_stack(path, seed=0)
    assert g.row_ptr.tolist() == [0, 2, 3] and g.row_ind.tolist() == [1, 2, 0]
    assert g.col_ptr.tolist() == [0, 1, 2, 3] and g.col_ind.tolist() == [1, 0, 0]
    assert g.params["n_duplicates"] == 3
    with pytest.warns(DatasetWarning, match="3 duplicate edges merged in 1 of its graphs") as seen:
        made = S.csr_stack_bulk([{"path": str(path), "seed": i} for i in (0, 1)])
    assert len([w for w in seen if issubclass(w.category, DatasetWarning)]) == 1
    _same(made[0], g)


# --------------------------------------------------------------------------- bulk


def test_bulk_gives_each_graph_its_one_by_one_reading(tmp_path):
    graphs = _graphs()
    a = save_csr_stack(tmp_path / "a.npz", graphs)
    b = save_csr_stack(tmp_path / "b.npz", graphs[::-1], compressed=True)
    kws = [{"path": str(a), "seed": i} for i in (3, 0, 6, 6, 1)]
    kws += [{"path": str(b), "seed": 2}, {"path": str(a)}, {"path": str(b), "seed": np.int64(0)}]
    made = M.csr_stack.matchbench_bulk(kws)
    assert len(made) == len(kws)
    for kw, g in zip(kws, made, strict=True):
        _same(g, M.csr_stack(**kw))
    assert made[2] is not made[3]  # each its own graph
    assert not any(
        np.shares_memory(x, y)
        for x in (made[2].row_ind, made[2].col_ind)
        for y in (made[3].row_ind, made[3].col_ind)
    )


def test_bulk_opens_each_file_once(tmp_path, monkeypatch):
    path = save_csr_stack(tmp_path / "a.npz", _graphs())
    opened = []
    real = S._open
    monkeypatch.setattr(S, "_open", lambda p, name: opened.append(p) or real(p, name))
    S.csr_stack_bulk([{"path": str(path), "seed": i % 7} for i in range(30)])
    assert opened == [path]


def test_a_bad_graph_fails_alone(tmp_path):
    path = _save(
        tmp_path / "one_bad.npz",
        indptr=np.array([0, 1, 0, 1, 0, 1]),
        indices=np.array([0, 5, 0]),  # graph 1's column 5 of 2
        shapes=np.array([[1, 1], [1, 2], [1, 1]]),
    )
    assert [M.csr_stack(path, seed=i).n_edges for i in (0, 2)] == [1, 1]
    assert len(S.csr_stack_bulk([{"path": str(path), "seed": i} for i in (0, 2)])) == 2
    for read in (
        lambda: M.csr_stack(path, seed=1),
        lambda: S.csr_stack_bulk([{"path": str(path), "seed": 1}]),
    ):
        with pytest.raises(
            DatasetError, match=r"one_bad\.npz: graph 1: row 0 has column index 5, not in \[0, 2\)"
        ):
            read()
    with pytest.raises(
        DatasetError, match=r"one_bad\.npz: graph 1: column index 5 not in \[0, 2\)"
    ):
        read_csr_stack(path)  # solve_batch's whole-batch check


# --------------------------------------------------------------------------- hostile files


def _npy_header(shape, descr="<i8"):
    header = repr({"descr": descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


def _zip(path, members, *more):
    """An archive of ``members`` (a dict), then of ``more`` (pairs, names maybe repeated)."""
    with zipfile.ZipFile(path, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile's "Duplicate name"
        for name, data in [*members.items(), *more]:
            zf.writestr(name, data)


def _npy(a, allow_pickle=False):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=allow_pickle)
    return buf.getvalue()


GOOD = {
    "indptr": np.array([0, 1, 2, 0, 1]),
    "indices": np.array([0, 1, 2]),
    "shapes": np.array([[2, 2], [1, 3]]),
}


def _with(**changes):
    arrays = {**GOOD, **changes}
    return lambda p: _save(p, **{k: v for k, v in arrays.items() if v is not None})


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: p.write_bytes(b"not a zip at all"), "not a readable .npz file"),
        (lambda p: p.write_bytes(b""), "not a readable .npz file"),
        (lambda p: p.write_bytes(_with()(p).read_bytes()[:-40]), "not a readable .npz file"),
        (_with(shapes=None), "lacks the array(s) ['shapes']"),
        (_with(weights=np.ones(3)), "unexpected array(s) ['weights']"),
        (lambda p: _zip(p, {**{f"{k}.npy": _npy(v) for k, v in GOOD.items()}, "README.txt": b"hi"}),
         "'README.txt', which is no .npy array"),
        (lambda p: _zip(p, {f"{k}.npy": _npy(v) for k, v in GOOD.items()}, ("indptr.npy", _npy(GOOD["indptr"]))),
         "'indptr'] more than once"),
        (_with(indices=np.array([0.0, 1.0, 2.0])), "'indices' has dtype float64"),
        (_with(indices=np.array([True, False, True])), "'indices' has dtype bool"),
        (_with(shapes=np.array([[2, 2], [1, 3]], dtype=np.complex128)), "'shapes' has dtype complex128"),
        (lambda p: _zip(p, {**{f"{k}.npy": _npy(v) for k, v in GOOD.items()},
                            "indices.npy": _npy(np.array([0, 1, None], dtype=object), allow_pickle=True)}),
         "'indices' holds Python objects"),
        (_with(indptr=GOOD["indptr"][None]), "'indptr' has shape (1, 5); it must be 1-D"),
        (_with(shapes=np.array([[2, 2, 0], [1, 3, 0]])), "'shapes' has shape (2, 3); it must be (B, 2)"),
        (_with(shapes=np.array([2, 2, 1, 3])), "'shapes' has shape (4,)"),
        (lambda p: _zip(p, {**{f"{k}.npy": _npy(v) for k, v in GOOD.items()}, "indices.npy": _npy_header((10**12,)) + b"\0" * 24}),
         "truncated file or a bad header"),
        (lambda p: _zip(p, {**{f"{k}.npy": _npy(v) for k, v in GOOD.items()}, "indices.npy": b"\x93NUMPY garbage"}),
         "'indices' is not a readable .npy array"),
        (_with(shapes=np.zeros((0, 2), dtype=np.int64), indptr=np.zeros(0, np.int64), indices=np.zeros(0, np.int64)),
         "holds no graphs"),
        (_with(shapes=np.array([[2, 2], [1, -3]])), "graph 1 has a negative shape (1, -3)"),
        (_with(shapes=np.array([[2, 2], [2**62, 3]])), "indptr has 5 entries; the shapes need"),
        (_with(shapes=np.array([[3, 2], [1, 3]])), "indptr has 5 entries; the shapes need 6"),
        (_with(indptr=np.array([0, 1, 2, 0, 1, 1])), "indptr has 6 entries; the shapes need 5"),
        (_with(indptr=np.array([0, 1, 2, 0, -1])), "graph 1's last row pointer (its edge count) is -1"),
        (_with(indptr=np.array([0, 1, 2**64 - 1, 0, 1], dtype=np.uint64)), "does not fit int64"),
        (_with(indptr=np.array([0, 1, 3, 0, 1])), "indices has 3 entries; the graphs' row pointers give 4 edges"),
        (_with(indices=np.array([0, 1, 2, 2])), "indices has 4 entries; the graphs' row pointers give 3 edges"),
        (_with(indptr=np.array([0, 1, 2**62, 0, 2**62]), indices=np.array([0, 1, 2, 0])),
         "row pointers give 9,223,372,036,854,775,808 edges"),
        (_with(indptr=np.array([1, 1, 2, 0, 1])), "graph 0: its row pointers start at 1, not 0"),
        (_with(indptr=np.array([0, 2, 1, 0, 2])),
         "graph 0: its row pointers decrease (row pointer 2 is 1, row pointer 1 is 2)"),
        (_with(indices=np.array([0, 2, 2])), "graph 0: row 1 has column index 2, not in [0, 2)"),
        (_with(indices=np.array([0, 1, -1])), "graph 1: row 0 has column index -1, not in [0, 3)"),
        (_with(indptr=np.array([0, 0, 0, 0, 3])), "graph 0 is empty (2 x 2, 0 edges)"),
        (_with(shapes=np.array([[2, 0], [1, 3]]), indices=np.array([0, 0, 2])), "graph 0 is empty (2 x 0, 2 edges)"),
        (_with(indices_offsets=np.array([0])), "indices_offsets has 1 entries for 2 graphs"),
        (_with(indices_offsets=np.array([0, 3])), "graph 1's 1 edges from indices_offsets 3 do not lie inside"),
        (_with(indices_offsets=np.array([-1, 2])), "graph 0's 2 edges from indices_offsets -1 do not lie inside"),
        (_with(indices_offsets=np.array([0.0, 2.0])), "'indices_offsets' has dtype float64"),
        (_with(shapes=np.array([[2, 10**9], [1, 3]])), "graph 0 of"),
    ],
)  # fmt: skip
def test_hostile_files_are_refused_by_name(tmp_path, make, fragment):
    path = tmp_path / "bad.npz"
    make(path)
    # graph 0 for the file's defects, graph 0 or 1 for a graph's: each read of a bad graph
    bad = 1 if fragment.startswith("graph 1") else 0
    for read in (
        lambda: M.csr_stack(path, seed=bad),
        lambda: S.csr_stack_bulk([{"path": str(path), "seed": bad}]),
    ):
        with pytest.raises(DatasetError) as info:
            read()
        assert fragment in str(info.value) and "bad.npz" in str(info.value)


def test_dimensions_out_of_proportion_are_refused(tmp_path):
    path = _with(shapes=np.array([[2, 10**9], [1, 3]]))(tmp_path / "wide.npz")
    with pytest.raises(
        DatasetError, match=r"graph 0 of .*wide\.npz: the header declares 2 x 1,000,000,000"
    ):
        M.csr_stack(path)
    assert M.csr_stack(path, seed=1).n_cols == 3  # the other graph is fine


def test_the_reader_never_unpickles(tmp_path, monkeypatch):
    members = {f"{k}.npy": _npy(v) for k, v in GOOD.items()}
    members["shapes.npy"] = _npy(np.array([[object(), 2]], dtype=object), allow_pickle=True)
    _zip(tmp_path / "o.npz", members)
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("unpickled"))
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("unpickled"))
    for read in (M.csr_stack, read_csr_stack, S.graph_bytes):
        if read is S.graph_bytes:
            assert read(tmp_path / "o.npz") is None
            continue
        with pytest.raises(DatasetError, match="'shapes' holds Python objects"):
            read(tmp_path / "o.npz")


@pytest.mark.parametrize("compressed", [False, True])
def test_sizes_over_the_input_limit_are_refused(tmp_path, monkeypatch, compressed):
    path = save_csr_stack(
        tmp_path / "big.npz", [M.rgg(9, seed=1), M.rgg(3, seed=1)], compressed=compressed
    )
    small = M.rgg(3, seed=1).nbytes
    monkeypatch.setenv("MATCHBENCH_MAX_INPUT_BYTES", str(max(small, 1000)))
    if compressed:  # read whole: the whole indices array is over the limit
        with pytest.raises(
            DatasetError, match="'indptr', compressed, would take .* over the input limit"
        ):
            M.csr_stack(path, seed=1)
        return
    with pytest.raises(
        DatasetError,
        match=r"graph 0 of .*big\.npz: its two CSR directions would take .* over the input limit",
    ):
        M.csr_stack(path, seed=0)
    assert M.csr_stack(path, seed=1).n_rows == 8  # mapped: a small graph of a big file is read


def test_missing_file_wrong_suffix_and_bad_index(tmp_path):
    path = save_csr_stack(tmp_path / "s.npz", _graphs()[:2])
    for read in (M.csr_stack, lambda p, seed=0: S.csr_stack_bulk([{"path": str(p), "seed": seed}])):
        with pytest.raises(DatasetError, match=r"'missing'.*missing\.npz' no such file"):
            read(tmp_path / "missing.npz")
        with pytest.raises(DatasetError, match="is a directory"):
            read(tmp_path)
        (tmp_path / "s.npy").write_bytes(path.read_bytes())
        with pytest.raises(DatasetError, match=r"s\.npy is not a \.npz file"):
            read(tmp_path / "s.npy")
        for seed in (-1, True, 1.0, "0"):
            with pytest.raises(DatasetError, match="must be an integer >= 0"):
                read(path, seed=seed)
        with pytest.raises(DatasetError, match=r"index 2 is outside the 2 graphs of .*s\.npz"):
            read(path, seed=2)


# --------------------------------------------------------------------------- the sweep


def test_stack_dataset_config(tmp_path):
    from omegaconf import OmegaConf

    from matchbench.datasets import expand, load, spec_problem

    cfg = OmegaConf.load(M.__file__.rsplit("matchbench", 1)[0] + "conf/dataset/mcm_stack.yaml")
    assert OmegaConf.is_missing(cfg.many, "path") and OmegaConf.is_missing(cfg, "count")
    graphs = _graphs()
    cfg.many.path, cfg.count = str(save_csr_stack(tmp_path / "s.npz", graphs)), len(graphs)
    specs = expand(OmegaConf.to_container(cfg))
    assert [s["seed"] for s in specs] == list(range(len(graphs)))
    assert spec_problem(specs[0]) == "mcm"
    for spec, g in zip(specs, graphs, strict=True):
        _same_arrays(g, load(spec))
    assert load(dict(specs[1], rcp=True, rcp_seed=3)).n_edges == graphs[1].n_edges


def test_size_hint_is_one_graph(tmp_path):
    from matchbench.datasets import spec_size_hint

    graphs = _graphs()
    path = save_csr_stack(tmp_path / "s.npz", graphs)
    for i, g in enumerate(graphs):
        assert spec_size_hint({"_target_": TARGET, "path": str(path), "seed": i}) == g.nbytes
    for seed in (len(graphs), -1, "x"):
        assert spec_size_hint({"_target_": TARGET, "path": str(path), "seed": seed}) is None
    (tmp_path / "bad.npz").write_bytes(b"nope")
    assert spec_size_hint({"_target_": TARGET, "path": str(tmp_path / "bad.npz")}) is None
    assert spec_size_hint({"_target_": TARGET, "path": str(tmp_path / "none.npz")}) is None


# --------------------------------------------------------------------------- the array API


def test_the_file_holds_what_solve_batch_takes(tmp_path):
    from matchbench.families.mcm.api import batch_offsets, solve_batch
    from matchbench.families.mcm.batch_gpu import check_packed, pack_graphs

    graphs = _graphs()
    path = save_csr_stack(tmp_path / "s.npz", graphs)
    with np.load(path, allow_pickle=False) as z:
        arrays = dict(z)
    assert set(arrays) <= set(inspect.signature(solve_batch).parameters)
    shapes, ptr_off, ind_off = batch_offsets(arrays["indptr"], arrays["shapes"])
    assert check_packed(arrays["indptr"], arrays["indices"], shapes, ptr_off, ind_off) is None
    packed = pack_graphs(graphs)  # how the batched solver lays out the same graphs
    assert np.array_equal(packed.indptr, arrays["indptr"]) and np.array_equal(
        packed.indices, arrays["indices"]
    )
    assert np.array_equal(packed.ptr_off, ptr_off) and np.array_equal(packed.ind_off, ind_off)
    checked = read_csr_stack(path)
    assert all(
        np.array_equal(checked[k], arrays[k]) and checked[k].dtype == arrays[k].dtype
        for k in arrays
    )
    assert all(type(a) is np.ndarray for a in checked.values())


def test_read_csr_stack_takes_empty_graphs_as_solve_batch_does(tmp_path):
    path = _with(indptr=np.array([0, 0, 0, 0, 3]))(tmp_path / "e.npz")
    assert read_csr_stack(path)["shapes"].tolist() == [[2, 2], [1, 3]]
    with pytest.raises(DatasetError, match="graph 0 is empty"):
        M.csr_stack(path)


@pytest.mark.gpu
def test_solve_batch_solves_the_file(tmp_path):
    from scipy.sparse.csgraph import maximum_bipartite_matching

    from matchbench.mcm import solve_batch

    graphs = _graphs()
    path = save_csr_stack(tmp_path / "s.npz", graphs)
    out = solve_batch(**read_csr_stack(path), verify=True)
    want = [
        int((maximum_bipartite_matching(g.to_scipy().astype(bool), perm_type="column") >= 0).sum())
        for g in graphs
    ]
    assert out.cardinality.tolist() == want


def test_save_csr_stack_refuses_what_it_cannot_write(tmp_path):
    g = _graphs()[0]
    with pytest.raises(ValueError, match="must end in .npz"):
        save_csr_stack(tmp_path / "g.npy", [g])
    with pytest.raises(ValueError, match="no graphs"):
        save_csr_stack(tmp_path / "g.npz", [])
    with pytest.raises(TypeError, match="a list of graphs, not one graph"):
        save_csr_stack(tmp_path / "g.npz", g)
    with pytest.raises(TypeError, match="graph 1 is a ndarray"):
        save_csr_stack(tmp_path / "g.npz", [g, np.eye(2)])
