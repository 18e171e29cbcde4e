"""The MCM family's formats for outside programs (matchbench/families/mcm/formats.py).

Writers: each file read back (Matrix Market by our reader, ECL-MM's binary CSR and the edge
list parsed here) gives the graph. Readers: a maximum matching from SciPy's Hopcroft-Karp
written in every answer format reads back and verifies; hostile outputs are AnswerErrors
naming the source (and the line where there is one), never an IndexError or a crash.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from matchbench.core.errors import AnswerError
from matchbench.core.params import configured
from matchbench.core.problem import get_problem
from matchbench.external.formats import describe, family_formats
from matchbench.families.mcm import formats as F
from matchbench.families.mcm.datasets import smoke
from matchbench.families.mcm.ref_scipy import ScipyHopcroftKarp
from matchbench.graphs import mtx
from matchbench.graphs.bipartite import BipartiteGraph

PROBLEM = get_problem("mcm")
SOURCE = "prog's standard output"
SMOKE = ["grid2d_2", "er_rect_64x96", "int_singular_60", "pattern_tall_30x20", "sym_band_40"]


def _random(n_rows: int, n_cols: int, p: float, seed: int) -> BipartiteGraph:
    mask = np.random.default_rng(seed).random((n_rows, n_cols)) < p
    rows, cols = np.nonzero(mask)
    return BipartiteGraph.from_coo(rows, cols, n_rows, n_cols, name=f"rand_{n_rows}x{n_cols}")


def _graphs() -> list[BipartiteGraph]:
    return [smoke(name=n) for n in SMOKE] + [
        _random(7, 13, 0.3, 1),  # wide: the rows are padded in ecl
        _random(13, 7, 0.3, 2),  # tall: the columns are padded
        _random(5, 5, 0.0, 3),  # no edge
    ]


GRAPHS = _graphs()
IDS = [g.name for g in GRAPHS]


def _edges(g: BipartiteGraph) -> set[tuple[int, int]]:
    rows = np.repeat(np.arange(g.n_rows), np.diff(g.row_ptr))
    return set(zip(rows.tolist(), g.row_ind.tolist(), strict=True))


def _maximum(g: BipartiteGraph) -> np.ndarray:
    s = configured(ScipyHopcroftKarp)
    s.prepare(g)
    s.run()
    return np.asarray(s.result().row_match, dtype=np.int64)


def _check(g: BipartiteGraph, answer) -> None:
    v = PROBLEM.verify(g, answer)
    assert v.verified is True, v.reason


# ------------------------------------------------------------------------------ listing


def test_the_formats_are_declared_and_documented():
    f = family_formats("mcm")
    assert set(f.writers) == {"mtx", "ecl", "edges"}
    assert set(f.readers) == {"row_mates", "pairs", "ecl_pairs", "npy"}
    assert f.batch_writers == {} and f.batch_readers == {}
    for fn in [*f.writers.values(), *f.readers.values()]:
        doc = (fn.__doc__ or "").strip().splitlines()
        assert doc and doc[0].strip() and len(doc) > 2, fn.__name__
    text = describe("mcm")
    assert "ecl_pairs" in text and "Matrix Market" in text


# ------------------------------------------------------------------------------ writers


@pytest.mark.parametrize("g", [g for g in GRAPHS if g.n_edges], ids=[g.name for g in GRAPHS if g.n_edges])
def test_mtx_round_trip(g, tmp_path):
    path = tmp_path / "instance"  # no suffix: the instance cache's names have none
    F.write_mtx(g, path)
    assert path.read_text().startswith("%%MatrixMarket matrix coordinate pattern general")
    back = mtx.read(path)
    assert (back.n_rows, back.n_cols) == (g.n_rows, g.n_cols)
    assert np.array_equal(back.row_ptr, g.row_ptr) and np.array_equal(back.row_ind, g.row_ind)


@pytest.mark.parametrize("g", GRAPHS, ids=IDS)
def test_ecl_layout(g, tmp_path):
    path = tmp_path / "instance"
    F.write_ecl(g, path)
    raw = np.fromfile(path, dtype="<i4")
    nodes, edges = int(raw[0]), int(raw[1])
    n = max(g.n_rows, g.n_cols)
    assert (nodes, edges) == (2 * n, 2 * g.n_edges)
    assert raw.shape[0] == 2 + nodes + 1 + edges  # no weights
    nindex, nlist = raw[2 : 2 + nodes + 1], raw[2 + nodes + 1 :]
    assert nindex[0] == 0 and nindex[-1] == edges and np.all(np.diff(nindex) >= 0)
    adj = [nlist[nindex[v] : nindex[v + 1]] for v in range(nodes)]
    for v, a in enumerate(adj):
        assert np.all(np.diff(a) > 0), f"vertex {v}'s list is not sorted ascending"
        if v < n:
            assert np.all(a >= n) and np.all(a < n + g.n_cols)
        else:
            assert np.all(a < g.n_rows)
    # padding vertices are isolated
    assert all(adj[v].size == 0 for v in range(g.n_rows, n))
    assert all(adj[v].size == 0 for v in range(n + g.n_cols, 2 * n))
    forward = {(v, int(u) - n) for v in range(n) for u in adj[v]}
    backward = {(int(u), v - n) for v in range(n, 2 * n) for u in adj[v]}
    assert forward == backward == _edges(g)


def test_ecl_refuses_what_int32_cannot_hold():
    big = 2**30 + 1  # 2N > int32
    zero = np.zeros(1, dtype=np.int64)
    g = BipartiteGraph(big, 1, zero, zero[:0], zero, zero[:0], name="huge_side")
    with pytest.raises(ValueError, match="huge_side.*int32"):
        F.write_ecl(g, None)  # refused before any file is opened
    many = np.broadcast_to(np.int32(0), (2**30,))  # 2 * n_edges > int32, no memory
    g = BipartiteGraph(1, 1, zero, many, zero, many, name="many_edges")
    with pytest.raises(ValueError, match="many_edges.*int32"):
        F.write_ecl(g, None)
    empty = BipartiteGraph.from_coo([], [], 0, 0, name="nothing")
    with pytest.raises(ValueError, match="nothing"):
        F.write_ecl(empty, None)


@pytest.mark.parametrize("g", GRAPHS, ids=IDS)
def test_edges_round_trip(g, tmp_path):
    path = tmp_path / "instance"
    F.write_edges(g, path)
    lines = path.read_text().splitlines()
    assert lines[0] == f"{g.n_rows} {g.n_cols} {g.n_edges}"
    assert len(lines) == 1 + g.n_edges
    got = [tuple(map(int, ln.split())) for ln in lines[1:]]
    assert all(len(e) == 2 for e in got)
    assert got == sorted(_edges(g))


# ------------------------------------------------------------------------------ readers


def _row_mates_text(rm: np.ndarray) -> bytes:
    return ("# row mates\n" + "\n".join(map(str, rm.tolist())) + "\n").encode()


def _pairs_text(rm: np.ndarray, offset: int = 0) -> bytes:
    rows = np.flatnonzero(rm >= 0)
    order = np.random.default_rng(0).permutation(rows.shape[0])  # any order of lines
    body = "\n".join(f"{i} {int(rm[i]) + offset}" for i in rows[order].tolist())
    return ("% matched pairs\n\n" + body + "\n# end\n").encode()


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def _serialize(fmt: str, g: BipartiteGraph, rm: np.ndarray) -> bytes:
    n = max(g.n_rows, g.n_cols)
    return {
        "row_mates": lambda: _row_mates_text(rm),
        "pairs": lambda: _pairs_text(rm),
        "ecl_pairs": lambda: _pairs_text(rm, offset=n),
        "npy": lambda: _npy(rm.astype(np.int32)),
    }[fmt]()


@pytest.mark.parametrize("fmt", sorted(F.READERS))
@pytest.mark.parametrize("g", GRAPHS, ids=IDS)
def test_a_maximum_matching_reads_back_and_verifies(g, fmt):
    rm = _maximum(g)
    answer = F.READERS[fmt](g, _serialize(fmt, g, rm), SOURCE)
    assert np.array_equal(np.asarray(answer.row_match, dtype=np.int64), rm)
    _check(g, answer)


def test_text_layout_is_free():
    g = GRAPHS[0]
    rm = _maximum(g)
    one_line = (" ".join(map(str, rm.tolist())) + "\r\n").encode()
    _check(g, F.read_row_mates(g, one_line, SOURCE))
    crlf = _pairs_text(rm).replace(b"\n", b"\r\n").replace(b" ", b"\t")
    _check(g, F.read_pairs(g, crlf, SOURCE))
    indented = b"  # comment after blanks\n" + _pairs_text(rm)
    _check(g, F.read_pairs(g, indented, SOURCE))


def test_empty_matching_needs_a_comment():
    g = GRAPHS[-1]  # no edge: the empty matching is maximum
    _check(g, F.read_pairs(g, b"# no pairs\n", SOURCE))
    _check(g, F.read_ecl_pairs(g, b"% none\n", SOURCE))
    for reader in (F.read_pairs, F.read_ecl_pairs):
        with pytest.raises(AnswerError, match=f"^{SOURCE}: empty"):
            reader(g, b"", SOURCE)


def test_a_column_given_twice_in_row_mates_is_for_the_verifier():
    g = smoke(name="grid2d_2")
    rm = _maximum(g)
    rm[1] = rm[0]  # two rows, one column: read as it is, rejected by the verifier
    answer = F.read_row_mates(g, _row_mates_text(rm), SOURCE)
    v = PROBLEM.verify(g, answer)
    assert v.verified is False and "invalid" in v.reason


G = smoke(name="pattern_tall_30x20")  # 30 x 20, N = 30
RM = _maximum(G)

HOSTILE = {
    "row_mates": [
        (b"", "empty"),
        (b"\n\n# only a comment\n", "only comments"),
        (b"segfault at 0xdeadbeef\n", "line 1: 'segfault' is not an integer"),
        (b"0\n1\nabc\n", "line 3: 'abc' is not an integer"),
        (b"0 1 2\n", "3 integers, expected 30"),
        (_row_mates_text(np.r_[RM, 0]), "31 integers, expected 30 (one mate per row); the first extra one is on line 32"),
        (b"nan " * 30, "line 1: 'nan' is not an integer"),
        (b"1e400 " * 30, "'1e400' is not an integer"),
        (b"1.0 " * 30, "'1.0' is not an integer"),
        (b"1_0 " * 30, "'1_0' is not an integer"),
        (b"99999999999999999999 " * 30, "out of the int64 range"),
        (b"9" * 5000, "is not an integer"),
        (b"\x00\xff\xfe\x01" * 8, "is not an integer"),
        (b"20 " * 30, "line 1: row 0's mate 20 is outside [-1, 20)"),
        (b"-1\n" * 29 + b"-2\n", "line 30: row 29's mate -2 is outside [-1, 20)"),
    ],
    "pairs": [
        (b"", "empty"),
        (b"garbage\n", "line 1: 'garbage' is not two integers"),
        (b"0 1\n2\n", "line 2: '2' is not two integers"),
        (b"0 1 2\n", "line 1: '0 1 2' is not two integers"),
        (b"0 x\n", "line 1: 'x' is not an integer"),
        (b"nan nan\n", "'nan' is not an integer"),
        (b"0 1e400\n", "'1e400' is not an integer"),
        (b"\x00\xff \x01\n", "is not an integer"),
        (b"30 0\n", "line 1: row 30 is outside [0, 30)"),
        (b"0 0\n-1 0\n", "line 2: row -1 is outside [0, 30)"),
        (b"# x\n0 20\n", "line 2: column 20 is outside [0, 20)"),
        (b"0 99999999999999999999\n", "out of the int64 range"),
        (b"3 1\n# c\n\n3 2\n", "line 4: row 3 is matched twice (lines 1 and 4)"),
        (b"3 1\n4 2\n5 1\n", "line 3: column 1 is matched twice (lines 1 and 3)"),
    ],
    "ecl_pairs": [
        (b"", "empty"),
        (b"x y\n", "'x' is not an integer"),
        (b"0 30 1\n", "line 1: '0 30 1' is not two integers"),
        (b"0 30\n30 31\n", "line 2: a = 30 is out of range"),
        (b"-1 30\n", "a = -1 is out of range"),
        (b"0 29\n", "b = 29 is out of range"),
        (b"0 50\n", "b = 50 is a padding vertex"),
        (b"0 60\n", "b = 60 is out of range"),
        (b"1 31\n2 31\n", "line 2: column 1 is matched twice (lines 1 and 2)"),
        (b"1 31\n1 32\n", "line 2: row 1 is matched twice (lines 1 and 2)"),
    ],
    "npy": [
        (b"", "empty"),
        (b"0 1 2\n", "not a .npy file"),
        (b"\x93NUMPY\x01\x00garbage", "not a .npy file"),
        (_npy(RM)[:-3], "truncated .npy file"),
        (_npy(RM[:-1]), "shape (29,); expected (30,)"),
        (_npy(RM.reshape(5, 6)), "shape (5, 6)"),
        (_npy(RM.astype(np.float64)), "dtype float64; expected integers"),
        (_npy(np.full(30, np.nan)), "dtype float64"),
        (_npy(np.array([None] * 30, dtype=object)), "dtype object; expected integers"),
        (_npy(np.full(30, 20)), "row 0's mate 20 is outside [-1, 20)"),
        (_npy(np.full(30, 2**64 - 1, dtype=np.uint64)), "out of the int64 range"),
    ],
}
HOSTILE_CASES = [(fmt, data, msg) for fmt, cases in HOSTILE.items() for data, msg in cases]


@pytest.mark.parametrize(("fmt", "data", "msg"), HOSTILE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(HOSTILE_CASES)])
def test_hostile_output_is_an_answer_error(fmt, data, msg):
    with pytest.raises(AnswerError) as info:
        F.READERS[fmt](G, data, SOURCE)
    text = str(info.value)
    assert text.startswith(SOURCE), text
    assert msg in text, text


def test_line_numbers_count_comments_and_blanks():
    g = smoke(name="delaunay_n8")
    rm = _maximum(g)
    lines = []
    for i in np.flatnonzero(rm >= 0).tolist():
        if i % 7 == 0:
            lines += ["# a comment", ""]
        lines.append(f"{i} {int(rm[i])}")
    _check(g, F.read_pairs(g, "\n".join(lines).encode(), SOURCE))
    k = len(lines) - 3
    while lines[k].startswith("#") or not lines[k]:
        k -= 1
    lines[k] = lines[k].split()[0] + " 99999"
    with pytest.raises(AnswerError, match=rf"^{SOURCE}, line {k + 1}: column 99999 is outside"):
        F.read_pairs(g, "\n".join(lines).encode(), SOURCE)
