"""The community family's formats for outside programs: writers read back by our own reader
(and fast_matrix_market), a reference partition through every answer format verified, and
hostile outputs refused with an AnswerError naming the source."""

from __future__ import annotations

import fast_matrix_market as fmm
import numpy as np
import pytest

from matchbench.core.errors import AnswerError
from matchbench.core.params import configured
from matchbench.core.problem import get_problem
from matchbench.external.formats import describe, family_formats
from matchbench.families.community import datasets as D
from matchbench.families.community import formats as F
from matchbench.families.community.louvain import Louvain
from matchbench.families.community.problem import CommunityGraph, Partition

P = get_problem("community")
SOURCE = "prog's standard output"


def _random_graph(seed: int = 5, n: int = 50, p: float = 0.1) -> CommunityGraph:
    """Random float weights (17 significant digits, tiny and large) and isolated vertices."""
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    w = rng.random(int(keep.sum())) * 10.0 ** rng.integers(-12, 12, int(keep.sum())) + 1e-300
    return CommunityGraph.from_edges(iu[keep], ju[keep], w, n + 4, name=f"random\nname {seed}")


GRAPHS = {
    "karate": lambda: D.community_smoke("karate"),
    "weighted_isolated": lambda: D.community_smoke("weighted_isolated"),
    "planted": lambda: D.community_planted(200, 4, 0.3, 0.02, seed=1, weights="uniform"),
    "random": _random_graph,
}


@pytest.fixture(params=sorted(GRAPHS), scope="module")
def graph(request) -> CommunityGraph:
    return GRAPHS[request.param]()


def _same(a: CommunityGraph, b: CommunityGraph) -> None:
    assert a.n == b.n
    np.testing.assert_array_equal(a.ptr, b.ptr)
    np.testing.assert_array_equal(a.ind, b.ind)
    np.testing.assert_array_equal(a.weight, b.weight)  # bit for bit


def _louvain(g: CommunityGraph) -> Partition:
    s = configured(Louvain)
    s.prepare(g)
    s.run()
    return s.result()


# -- the table ------------------------------------------------------------------------------


def test_formats_found_and_documented():
    f = family_formats("community")
    assert set(f.writers) == {"mtx", "mtx_general", "edges"}
    assert set(f.readers) == {"membership", "membership_1based", "pairs"}
    assert f.batch_writers == {} and f.batch_readers == {}
    for fn in [*f.writers.values(), *f.readers.values()]:
        first = fn.__doc__.strip().splitlines()[0]
        assert first and not first.startswith(" ")
    text = describe("community")
    for name in ("mtx", "mtx_general", "edges", "membership", "membership_1based", "pairs"):
        assert f" {name} " in text


# -- writers --------------------------------------------------------------------------------


def test_mtx_round_trip(graph, tmp_path):
    path = tmp_path / "g.mtx"
    F.write_mtx(graph, path)
    header = fmm.read_header(str(path))
    assert (header.field, header.symmetry) == ("real", "symmetric")
    assert (header.nrows, header.ncols, header.nnz) == (graph.n, graph.n, graph.n_edges)
    (data, (rows, cols)), _ = fmm.read_coo(str(path), generalize_symmetry=False)
    assert (rows > cols).all()  # the lower triangle, each edge once
    _same(D.community_mtx(path), graph)


def test_mtx_general_round_trip(graph, tmp_path):
    path = tmp_path / "g.mtx"
    F.write_mtx_general(graph, path)
    header = fmm.read_header(str(path))
    assert (header.field, header.symmetry) == ("real", "general")
    assert header.nnz == 2 * graph.n_edges
    a = fmm.mmread(str(path)).tocsr()
    assert (a != a.T).nnz == 0
    np.testing.assert_array_equal(a.toarray(), graph.to_scipy().toarray())
    g = D.community_mtx(path)
    _same(g, graph)
    assert g.params["n_asymmetric"] == 0


def test_edges_text(graph, tmp_path):
    path = tmp_path / "g.txt"
    F.write_edges(graph, path)
    lines = path.read_text(encoding="ascii").splitlines()
    assert lines[0] == f"{graph.n} {graph.n_edges}"
    assert len(lines) == 1 + graph.n_edges
    fields = [ln.split() for ln in lines[1:]]
    u = np.array([int(f[0]) for f in fields])
    v = np.array([int(f[1]) for f in fields])
    w = np.array([float(f[2]) for f in fields])
    assert (u < v).all()
    eu, ev, ew = graph.edges()
    np.testing.assert_array_equal(u, eu)
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(w, ew)  # repr: exact
    _same(CommunityGraph.from_edges(u, v, w, graph.n), graph)


# -- readers: a reference answer through each format -----------------------------------------


def _membership(labels: np.ndarray) -> bytes:
    return ("# membership\n" + "\n".join(map(str, labels.tolist())) + "\n").encode()


def _pairs(labels: np.ndarray, seed: int = 0) -> bytes:
    order = np.random.default_rng(seed).permutation(labels.shape[0])
    body = "".join(f"{v}\t{labels[v]}\n" for v in order.tolist())
    return ("% vertex label\n\n" + body).encode()


def _encode(fmt: str, labels: np.ndarray) -> bytes:
    if fmt == "membership":
        return _membership(labels)
    if fmt == "membership_1based":  # slot 0 unused, any value
        return _membership(np.concatenate([[123456], labels]))
    return _pairs(labels)


@pytest.mark.parametrize("fmt", ["membership", "membership_1based", "pairs"])
def test_reference_partition_read_back_verified(graph, fmt):
    ref = _louvain(graph)
    expected = P.verify(graph, ref)
    assert expected.verified
    # any labels: sparse, negative, in another order than the ids
    labels = (-5 * ref.community.astype(np.int64) + 1000) * 3
    data = _encode(fmt, labels)
    got = F.READERS[fmt](graph, data, SOURCE)
    assert isinstance(got, Partition)
    assert got.community.dtype == np.int64
    assert got.community.min() == 0 and got.n_communities == ref.n_communities
    # the same partition: equal labels stay equal, different stay different
    pairs = set(zip(got.community.tolist(), ref.community.tolist(), strict=True))
    assert len(pairs) == ref.n_communities
    v = P.verify(graph, got)
    assert v.verified, v.reason
    assert v.objective == pytest.approx(expected.objective, abs=1e-12)


@pytest.mark.parametrize("fmt", ["membership", "membership_1based", "pairs"])
def test_a_poor_partition_is_read_and_verified_with_its_low_q(fmt):
    """Louvain claims no optimum: any readable partition is a verified answer (its Q low)."""
    g = D.community_smoke("ring_of_cliques")
    labels = np.arange(g.n) % 3  # cuts every clique
    data = _encode(fmt, labels)
    got = F.READERS[fmt](g, data, SOURCE)
    v = P.verify(g, got)
    assert v.verified
    assert v.objective < P.verify(g, _louvain(g)).objective - 0.3


def test_large_membership_and_pairs_are_vectorized():
    n = 300_000
    g = CommunityGraph.from_edges(np.arange(n - 1), np.arange(1, n), np.ones(n - 1), n)
    labels = np.arange(n) // 10
    got = F.read_membership(g, " ".join(map(str, labels.tolist())).encode(), SOURCE)
    np.testing.assert_array_equal(got.community, labels)
    data = "".join(
        f"{v} {c}\n" for v, c in zip(range(n - 1, -1, -1), labels[::-1].tolist(), strict=True)
    )
    got = F.read_pairs(g, ("# head\n" + data).encode(), SOURCE)
    np.testing.assert_array_equal(got.community, labels)


def test_empty_graph_reads_empty_output():
    g = CommunityGraph.from_edges([], [], [], 0)
    assert F.read_membership(g, b"", SOURCE).community.shape == (0,)
    assert F.read_pairs(g, b"# nothing\n", SOURCE).community.shape == (0,)


# -- hostile outputs --------------------------------------------------------------------------

N6 = "0 0 0 1 1 1"

HOSTILE = [
    ("membership", b"", "empty output"),
    ("membership", b"   \n\n# only a comment\n", "empty output"),
    ("membership", b"0 0 0 1 1", "5 labels, expected 6 (one per vertex)"),
    ("membership", b"0 0 0\n1 1 1\n2\n", "line 3: more than 6 labels"),
    ("membership_1based", b"0 0 0 1 1 1", "6 labels, expected 7 (a placeholder first"),
    ("membership_1based", b"", "empty output"),
    ("membership_1based", b"9\n0 0 0\n1 1 1\n2\n", "line 4: more than 7 labels"),
    ("membership_1based", b"9\n0 0 0\n1 1 x\n", "line 3: 'x' is not an integer"),
    ("membership_1based", b"0 0 0 1 1 1 \x00", "a NUL byte"),
    ("membership", b"0 0 zero 1 1 1", "line 1: 'zero' is not an integer"),
    ("membership", b"0 0 0\n1 1 nan\n", "line 2: 'nan' is not an integer"),
    ("membership", b"0 0 0 1 1 1e400", "'1e400' is not an integer"),
    ("membership", b"0 0 0 1 1 1.5", "'1.5' is not an integer"),
    ("membership", b"0 0 0 1 1 123456789012345678901234567890", "out of the int64 range"),
    ("membership", b"0 0 0 1 1 1\x00\x01", "NUL byte"),
    ("membership", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "line 3: a NUL byte"),
    ("membership", b"\xff\xfe\xfd \xc3\x28 0 1 2 3", "is not an integer"),
    ("membership", ("0 " * 5 + "9" * 5000).encode(), "is not an integer"),
    ("pairs", b"", "empty output"),
    ("pairs", b"0 0\n1 0\n2 0\n3 1\n4 1\n", "5 vertices, expected n = 6: vertex 5 is missing"),
    ("pairs", b"0 0\n1 0\n2 0\n3 1\n4 1\n5\n", "line 6: 1 field, expected 2"),
    ("pairs", b"0 0\n1 0 7\n", "line 2: 3 fields, expected 2"),
    ("pairs", b"0 0\n1 0\n2 0\n3 1\n4 1\n6 1\n", "line 6: vertex 6 is outside [0, 6)"),
    ("pairs", b"0 0\n-1 0\n", "line 2: vertex -1 is outside"),
    ("pairs", b"# c\n0 0\n1 0\n2 0\n3 1\n2 1\n5 1\n", "line 6: vertex 2 is given twice"),
    ("pairs", b"0 0\n1 0\n2 0\n3 1\n4 1\n5 1\n5 1\n", "line 7: vertex 5 is given twice"),
    ("pairs", b"0 0\n1 0\n2 x\n", "line 3: 'x' is not an integer"),
    ("pairs", b"0 0\n1 NaN\n", "'NaN' is not an integer"),
    ("pairs", b"0 0\n1 1e400\n", "'1e400' is not an integer"),
    ("pairs", b"0 0\n\x00\x01\n", "line 2: a NUL byte"),
]


@pytest.mark.parametrize(("fmt", "data", "fragment"), HOSTILE)
def test_hostile_output_is_an_answer_error(fmt, data, fragment):
    g = D.community_smoke("two_triangles")
    assert F.read_membership(g, N6.encode(), SOURCE).n_communities == 2
    with pytest.raises(AnswerError) as info:
        F.READERS[fmt](g, data, SOURCE)
    msg = str(info.value)
    assert SOURCE in msg
    assert fragment in msg, msg


def test_answer_error_is_a_value_error():
    with pytest.raises(ValueError):
        F.read_membership(D.community_smoke("two_triangles"), b"", SOURCE)


def test_bytes_like_accepted_and_other_types_refused():
    g = D.community_smoke("two_triangles")
    got = F.read_membership(g, bytearray(N6.encode()), SOURCE)
    np.testing.assert_array_equal(got.community, [0, 0, 0, 1, 1, 1])
    with pytest.raises(AnswerError, match="prog's standard output"):
        F.read_membership(g, N6, SOURCE)  # type: ignore[arg-type]


def test_comment_lines_only_at_line_start():
    g = D.community_smoke("two_triangles")
    got = F.read_membership(g, b"  # indented comment 9 9\n0 0 0\r\n%x\r\n1 1 1\r\n", SOURCE)
    np.testing.assert_array_equal(got.community, [0, 0, 0, 1, 1, 1])
    with pytest.raises(AnswerError, match="line 1: '#' is not an integer"):
        F.read_membership(g, b"0 0 0 #\n1 1\n", SOURCE)
