"""The mwpm family's formats for outside programs: the matrix written as ``.npy`` (read back by
the family's reader) and as text (exact), ROMA's and the exact answers through ``mates``
verified, a non-perfect matching read but not verified, and hostile outputs refused with an
AnswerError naming the source."""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.core.errors import AnswerError
from matchbench.core.params import configured
from matchbench.core.problem import get_problem
from matchbench.external.formats import describe, family_formats
from matchbench.families.mwpm import formats as F
from matchbench.families.mwpm.datasets import (
    complete_exponential,
    complete_file,
    complete_geometric,
    complete_uniform,
)
from matchbench.families.mwpm.problem import CompleteGraph, PerfectMatching, exact_matching
from matchbench.families.mwpm.roma import Roma

P = get_problem("mwpm")
SOURCE = "prog's standard output"


def _odd() -> CompleteGraph:
    """7 real vertices and the dummy; weights of 7 significant digits and tiny ones."""
    rng = np.random.default_rng(4)
    a = rng.random((7, 7)) * 10.0 ** rng.integers(-6, 6, (7, 7))
    return CompleteGraph.from_matrix(np.triu(a, 1) + np.triu(a, 1).T, name="odd7")


GRAPHS = {
    "uniform": lambda: complete_uniform(16, seed=1),
    "exponential": lambda: complete_exponential(10, seed=2),
    "geometric": lambda: complete_geometric(12, seed=3),
    "odd": _odd,
}


@pytest.fixture(params=sorted(GRAPHS), scope="module")
def graph(request) -> CompleteGraph:
    return GRAPHS[request.param]()


def _mates_text(mate: np.ndarray, per_line: int = 1) -> bytes:
    values = list(map(str, np.asarray(mate).tolist()))
    rows = [" ".join(values[i : i + per_line]) for i in range(0, len(values), per_line)]
    return ("# mates\n\n" + "\n".join(rows) + "\n").encode()


def test_formats_found_and_documented():
    f = family_formats("mwpm")
    assert set(f.writers) == {"npy", "text"}
    assert set(f.readers) == {"mates"}
    assert f.batch_writers == {} and f.batch_readers == {}
    for fn in [*f.writers.values(), *f.readers.values()]:
        assert fn.__doc__.strip().splitlines()[0]
    assert " mates " in describe("mwpm")


# -- writers --------------------------------------------------------------------------------


def test_npy_round_trip(graph, tmp_path):
    path = tmp_path / "g.npy"
    F.write_npy(graph, path)
    a = np.load(path, allow_pickle=False)
    assert a.dtype == np.float32 and a.shape == (graph.n, graph.n)
    np.testing.assert_array_equal(a, graph.weight)
    h = complete_file(path)
    np.testing.assert_array_equal(h.weight, graph.weight)
    assert h.n == graph.n  # an odd instance's dummy is an ordinary vertex in the file


def test_npy_takes_the_path_as_given(tmp_path):
    path = tmp_path / ".tmpname"  # instance files are written to such names, then renamed
    F.write_npy(_odd(), path)
    assert path.is_file() and not (tmp_path / ".tmpname.npy").exists()


def test_text_exact(graph, tmp_path):
    path = tmp_path / "g.txt"
    F.write_text(graph, path)
    lines = path.read_text(encoding="ascii").splitlines()
    assert lines[0] == str(graph.n)
    assert len(lines) == graph.n + 1
    rows = [ln.split(" ") for ln in lines[1:]]
    assert all(len(r) == graph.n for r in rows)
    a = np.array([[float(x) for x in r] for r in rows])
    np.testing.assert_array_equal(a, graph.weight.astype(np.float64))  # exact in float64
    np.testing.assert_array_equal(a.astype(np.float32), graph.weight)
    np.testing.assert_array_equal(np.diag(a), 0.0)


# -- the reader -------------------------------------------------------------------------------


@pytest.mark.parametrize("per_line", [1, 5])
def test_roma_answer_verified(graph, per_line):
    s = configured(Roma)
    s.prepare(graph, None)
    s.run()
    ref = s.result()
    got = F.read_mates(graph, _mates_text(ref.mate, per_line), SOURCE)
    assert isinstance(got, PerfectMatching) and not got.converged
    assert got.mate.dtype == np.int64
    np.testing.assert_array_equal(got.mate, ref.mate)
    v = P.verify(graph, got)
    assert v.verified, v.reason
    assert v.objective == P.verify(graph, ref).objective


def test_exact_answer_verified(graph):
    mate = exact_matching(graph)
    v = P.verify(graph, F.read_mates(graph, _mates_text(mate), SOURCE))
    assert v.verified and v.objective == pytest.approx(v.reference, rel=1e-12)


def test_non_perfect_matching_read_but_not_verified():
    g = complete_uniform(8, seed=0)
    got = F.read_mates(g, b"1 0 3 2 5 4 -1 -1", SOURCE)
    v = P.verify(g, got)
    assert not v.verified and "unmatched" in v.reason


def test_large_output():
    n = 2048
    g = complete_uniform(n, seed=0)
    mate = np.arange(n) ^ 1
    got = F.read_mates(g, "\n".join(map(str, mate.tolist())).encode(), SOURCE)
    np.testing.assert_array_equal(got.mate, mate)


# 8 vertices (the odd instance: 7 real and the dummy)
HOSTILE = [
    (b"", "no mate (empty output), expected n = 8"),
    (b"# only\n% comments\n\n", "empty output"),
    (b"1 0 3 2 5 4", "6 mates, expected n = 8"),
    (b"1 0 3 2\n5 4 7 6\n1\n", "line 3: more than n = 8 mates"),
    (b"1 0 3 2 5 4 7 8", "line 1: mate[7] = 8 is neither a vertex in [0, 8) nor -1"),
    (b"1 0 3 2 5 4 -7 6", "mate[6] = -7 is neither"),
    (b"1 0 3 2 5 4 6 7", "vertex 6 is its own mate"),
    (b"1\n2\n3\n0\n5 4 7 6", "line 1: mate[0] = 1 but mate[1] = 2"),
    (b"1 0 3 2 5 4 7 5", "mate[6] = 7 but mate[7] = 5"),
    (b"1 0 3 2 5 4 7 x", "'x' is not an integer"),
    (b"1 0 3 2 5 4 7 nan", "'nan' is not an integer"),
    (b"1 0 3 2 5 4 7 1e400", "'1e400' is not an integer"),
    (b"1 0 3 2 5 4 7 6.0", "'6.0' is not an integer"),
    (b"1 0 3 2 5 4 7 18446744073709551616", "out of the int64 range"),
    (b"1 0 3 2\n5 4 7 6\x00", "line 2: a NUL byte"),
    (bytes(range(256)), "a NUL byte"),
    (b"\xca\xfe\xba\xbe 1 0 3 2 5 4 7", "is not an integer"),
]


@pytest.mark.parametrize(("data", "fragment"), HOSTILE)
def test_hostile_output_is_an_answer_error(data, fragment):
    g = _odd()
    assert g.n == 8
    with pytest.raises(AnswerError) as info:
        F.read_mates(g, data, SOURCE)
    msg = str(info.value)
    assert SOURCE in msg
    assert fragment in msg, msg
