"""The wmatch family's formats for outside programs: writers read back by our own reader (and
fast_matrix_market), the greedy and the exact answers through every answer format certified
under the claim its reader makes, a non-greedy matching read but not verified, and hostile
outputs refused with an AnswerError naming the source."""

from __future__ import annotations

import fast_matrix_market as fmm
import numpy as np
import pytest

from matchbench.core.errors import AnswerError
from matchbench.core.params import configured
from matchbench.core.problem import get_problem
from matchbench.external.formats import describe, family_formats
from matchbench.families.wmatch import datasets as W
from matchbench.families.wmatch import formats as F
from matchbench.families.wmatch.problem import WeightedGraph, WMatching
from matchbench.families.wmatch.refs import Greedy, MwmExact

P = get_problem("wmatch")
SOURCE = "prog's answer file"
MATCHING = ("path_ties", "star", "clique_ties", "isolated", "grid_ties")
B_MATCHING = ("clique_b2", "random_brand")


def _random(seed: int = 3, n: int = 40, p: float = 0.15) -> WeightedGraph:
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    w = rng.random(int(keep.sum())) * 10.0 ** rng.integers(-9, 9, int(keep.sum())) + 1e-300
    return WeightedGraph.from_edges(iu[keep], ju[keep], w, n + 3, name="random")


def _graph(name: str) -> WeightedGraph:
    return _random() if name == "random" else W.wmatch_smoke(name)


def _solve(cls, g) -> WMatching:
    s = configured(cls)
    s.prepare(g)
    s.run()
    return s.result()


def _pairs_text(m: WMatching, seed: int = 0) -> bytes:
    """The pairs shuffled, each in a random orientation, with a comment and blank lines."""
    rng = np.random.default_rng(seed)
    u, v = np.asarray(m.u), np.asarray(m.v)
    flip = rng.random(u.shape[0]) < 0.5
    a, b = np.where(flip, v, u), np.where(flip, u, v)
    order = rng.permutation(u.shape[0])
    body = "".join(f"{x} {y}\n" for x, y in zip(a[order].tolist(), b[order].tolist(), strict=True))
    return ("# matched edges\n\n" + body + "\n").encode()


def _mates_text(m: WMatching, n: int) -> bytes:
    mate = m.mate(n)
    return ("% mates\n" + "\n".join(map(str, mate.tolist())) + "\n").encode()


def _edge_set(m: WMatching) -> set[tuple[int, int]]:
    return {
        (min(x, y), max(x, y))
        for x, y in zip(np.asarray(m.u).tolist(), np.asarray(m.v).tolist(), strict=True)
    }


# -- the table ------------------------------------------------------------------------------


def test_formats_found_and_documented():
    f = family_formats("wmatch")
    assert set(f.writers) == {"mtx", "edges", "edges_b"}
    assert set(f.readers) == {"pairs", "pairs_optimal", "mates", "mates_optimal"}
    assert f.batch_writers == {} and f.batch_readers == {}
    for fn in [*f.writers.values(), *f.readers.values()]:
        assert fn.__doc__.strip().splitlines()[0]
    assert "claims" in describe("wmatch")


# -- writers --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*MATCHING, "random"])
def test_mtx_round_trip(name, tmp_path):
    g = _graph(name)
    path = tmp_path / "g.mtx"
    F.write_mtx(g, path)
    header = fmm.read_header(str(path))
    assert (header.field, header.symmetry) == ("real", "symmetric")
    assert (header.nrows, header.nnz) == (g.n, g.n_edges)
    (_, (rows, cols)), _ = fmm.read_coo(str(path), generalize_symmetry=False)
    assert (rows > cols).all()
    h = W.graph_mtx(path)
    assert h.n == g.n and h.b is None
    np.testing.assert_array_equal(h.ptr, g.ptr)
    np.testing.assert_array_equal(h.ind, g.ind)
    np.testing.assert_array_equal(h.weight, g.weight)


def _read_edges(path, with_b: bool, n: int):
    lines = path.read_text(encoding="ascii").splitlines()
    n_, m = map(int, lines[0].split())
    b = np.array([int(x) for x in lines[1 : 1 + n_]]) if with_b else None
    rest = lines[1 + (n_ if with_b else 0) :]
    assert len(rest) == m
    f = [ln.split() for ln in rest]
    u = np.array([int(x[0]) for x in f], dtype=np.int64)
    v = np.array([int(x[1]) for x in f], dtype=np.int64)
    w = np.array([float(x[2]) for x in f])
    return n_, u, v, w, b


@pytest.mark.parametrize("name", [*MATCHING, *B_MATCHING, "random"])
@pytest.mark.parametrize("fmt", ["edges", "edges_b"])
def test_edge_lists(name, fmt, tmp_path):
    g = _graph(name)
    path = tmp_path / "g.txt"
    if fmt == "edges" and not g.is_matching:
        with pytest.raises(ValueError, match="edges_b"):
            F.write_edges(g, path)
        return
    F.WRITERS[fmt](g, path)
    n, u, v, w, b = _read_edges(path, fmt == "edges_b", g.n)
    assert n == g.n and (u < v).all()
    eu, ev, ew = g.edges()
    np.testing.assert_array_equal(u, eu)
    np.testing.assert_array_equal(v, ev)
    np.testing.assert_array_equal(w, ew)
    if b is not None:
        np.testing.assert_array_equal(b, g.capacity)
    h = WeightedGraph.from_edges(u, v, w, n, b=b if (b is not None and not g.is_matching) else None)
    np.testing.assert_array_equal(h.weight, g.weight)


@pytest.mark.parametrize("name", B_MATCHING)
def test_mtx_refuses_capacities(name, tmp_path):
    with pytest.raises(ValueError, match="capacities"):
        F.write_mtx(_graph(name), tmp_path / "g.mtx")


# -- readers: reference answers ----------------------------------------------------------------


@pytest.mark.parametrize("name", [*MATCHING, *B_MATCHING, "random"])
def test_greedy_answer_through_pairs_verified(name):
    g = _graph(name)
    ref = _solve(Greedy, g)
    got = F.read_pairs(g, _pairs_text(ref), SOURCE)
    assert got.claim == "greedy" and got.u.dtype == np.int64
    assert _edge_set(got) == _edge_set(ref)
    v = P.verify(g, got)
    assert v.verified, v.reason
    assert v.objective == P.verify(g, ref).objective


@pytest.mark.parametrize("name", [*MATCHING, "random"])
def test_greedy_answer_through_mates_verified(name):
    g = _graph(name)
    ref = _solve(Greedy, g)
    got = F.read_mates(g, _mates_text(ref, g.n), SOURCE)
    assert got.claim == "greedy"
    assert _edge_set(got) == _edge_set(ref)
    assert P.verify(g, got).verified


@pytest.mark.parametrize("name", [*MATCHING, "random"])
@pytest.mark.parametrize("fmt", ["pairs_optimal", "mates_optimal"])
def test_exact_answer_through_optimal_readers_verified(name, fmt):
    g = _graph(name)
    ref = _solve(MwmExact, g)
    data = _pairs_text(ref) if fmt.startswith("pairs") else _mates_text(ref, g.n)
    got = F.READERS[fmt](g, data, SOURCE)
    assert got.claim == "optimal"
    v = P.verify(g, got)
    assert v.verified, v.reason


def _greedy_not_optimal() -> WeightedGraph:
    """A path of weights 2, 3, 2: greedy takes the middle (3), the optimum the ends (4)."""
    return WeightedGraph.from_edges([0, 1, 2], [1, 2, 3], [2.0, 3.0, 2.0], 4, name="p4")


@pytest.mark.parametrize("fmt", ["pairs", "mates"])
def test_the_claim_is_the_readers(fmt):
    g = _greedy_not_optimal()
    greedy, exact = _solve(Greedy, g), _solve(MwmExact, g)
    text = (lambda m: _pairs_text(m)) if fmt == "pairs" else (lambda m: _mates_text(m, g.n))
    # each answer certified under its own claim ...
    assert P.verify(g, F.READERS[fmt](g, text(greedy), SOURCE)).verified
    assert P.verify(g, F.READERS[fmt + "_optimal"](g, text(exact), SOURCE)).verified
    # ... read fine but not verified under the other
    v = P.verify(g, F.READERS[fmt](g, text(exact), SOURCE))
    assert not v.verified and "not the greedy matching" in v.reason
    v = P.verify(g, F.READERS[fmt + "_optimal"](g, text(greedy), SOURCE))
    assert not v.verified and "claimed optimal" in v.reason


@pytest.mark.parametrize("name", ["clique_ties", "grid_ties", "random", "clique_b2"])
def test_non_greedy_matching_read_but_not_verified(name):
    g = _graph(name)
    ref = _solve(Greedy, g)
    assert ref.size > 1
    wrong = WMatching(u=ref.u[1:], v=ref.v[1:])  # the heaviest pair dropped: it now blocks
    got = F.read_pairs(g, _pairs_text(wrong), SOURCE)
    assert got.size == ref.size - 1
    v = P.verify(g, got)
    assert not v.verified and "blocks" in v.reason
    if g.is_matching:
        got = F.read_mates(g, _mates_text(wrong, g.n), SOURCE)
        assert not P.verify(g, got).verified


def test_not_an_edge_is_the_verifiers_judgement():
    g = W.wmatch_smoke("path_ties")
    got = F.read_pairs(g, b"0 5\n", SOURCE)  # both in range, not an edge
    v = P.verify(g, got)
    assert not v.verified and "not an edge" in v.reason


def test_empty_output():
    g = W.wmatch_smoke("star")
    with pytest.raises(AnswerError, match="prog's answer file: no pair .*edges to match"):
        F.read_pairs(g, b"# nothing\n", SOURCE)
    # nothing can be matched: the empty answer is the greedy one
    blocked = WeightedGraph.from_edges([0, 1], [1, 2], [1.0, 2.0], 4, b=[1, 0, 1, 1])
    got = F.read_pairs(blocked, b"", SOURCE)
    assert got.size == 0 and P.verify(blocked, got).verified
    edgeless = WeightedGraph.from_edges([], [], [], 3)
    assert P.verify(edgeless, F.read_pairs_optimal(edgeless, b"\n", SOURCE)).verified
    assert P.verify(edgeless, F.read_mates(edgeless, b"-1 -1 -1", SOURCE)).verified


def test_large_outputs():
    n = 200_000
    g = WeightedGraph.from_edges(np.arange(n - 1), np.arange(1, n), np.ones(n - 1), n)
    u = np.arange(0, n, 2)
    got = F.read_pairs(g, "".join(f"{x + 1} {x}\n" for x in u.tolist()).encode(), SOURCE)
    assert got.size == n // 2 and P.verify(g, got).verified
    mate = np.arange(n) ^ 1
    got = F.read_mates(g, " ".join(map(str, mate.tolist())).encode(), SOURCE)
    assert _edge_set(got) == {(x, x + 1) for x in u.tolist()}


# -- hostile outputs --------------------------------------------------------------------------

# path_ties: 12 vertices, the path 0 - 1 - ... - 11
HOSTILE = [
    ("pairs", b"", "empty output"),
    ("pairs", b"0 1\n2\n", "line 2: 1 field, expected 2"),
    ("pairs", b"0 1 2 3\n", "line 1: 4 fields, expected 2"),
    ("pairs", b"0 1\n2 x\n", "line 2: 'x' is not an integer"),
    ("pairs", b"0 1\n2 nan\n", "'nan' is not an integer"),
    ("pairs", b"0 1\n2 1e400\n", "'1e400' is not an integer"),
    ("pairs", b"0 1\n2 3.0\n", "'3.0' is not an integer"),
    ("pairs", b"0 1\n2 99999999999999999999\n", "out of the int64 range"),
    ("pairs", b"0 1\n\n11 12\n", "line 3: pair (11, 12) has a vertex outside [0, 12)"),
    ("pairs", b"# x\n-1 0\n", "line 2: pair (-1, 0) has a vertex outside"),
    ("pairs", b"0 1\n\x00\x00\x00\x01", "line 2: a NUL byte"),
    ("pairs", b"\xde\xad\xbe\xef \xff", "is not an integer"),
    ("mates", b"", "no mate (empty output), expected n = 12"),
    ("mates", b"1 0 3 2", "4 mates, expected n = 12"),
    ("mates", b"1 0 3 2 5 4 7 6 9 8 11 10\n-1\n", "line 2: more than n = 12 mates"),
    ("mates", b"1 0 3 2 5 4 7 6 9 8 11 12", "line 1: mate[11] = 12 is neither -1 nor a vertex"),
    ("mates", b"1 0 3 2 5 4 7 6 9 8 -2 -1", "mate[10] = -2 is neither -1 nor a vertex"),
    ("mates", b"1 0 3 2 5 4 7 6 9 8 -1 11", "vertex 11 is its own mate"),
    ("mates", b"1\n2\n3 2 5 4 7 6 9 8 11 10", "line 1: mate[0] = 1 but mate[1] = 2"),
    ("mates", b"1 0 3 2 5 4 7 6 9 8 11\n-1\n", "line 1: mate[10] = 11 but mate[11] = -1"),
    ("mates", b"1 0 3 2 5 4 7 6 9 8 11 NaN", "'NaN' is not an integer"),
    ("mates", b"1 0 3 2 5 4 7 6 9 8 11 1e400", "'1e400' is not an integer"),
    ("mates", b"1 0 3 2 5 4 7 6 9 8 11 \x00", "a NUL byte"),
]


@pytest.mark.parametrize("optimal", [False, True])
@pytest.mark.parametrize(("fmt", "data", "fragment"), HOSTILE)
def test_hostile_output_is_an_answer_error(fmt, data, fragment, optimal):
    g = W.wmatch_smoke("path_ties")
    with pytest.raises(AnswerError) as info:
        F.READERS[fmt + ("_optimal" if optimal else "")](g, data, SOURCE)
    msg = str(info.value)
    assert SOURCE in msg
    assert fragment in msg, msg
