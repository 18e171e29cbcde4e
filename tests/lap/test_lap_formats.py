"""The LAP family's formats for outside programs (matchbench/families/lap/formats.py).

Writers: every file read back here gives the cost matrix exactly (or the writer refuses,
naming the instance, where its number type would round a cost). Readers: an optimal
assignment from SciPy written in every answer format reads back and verifies, per
instance and per batch; hostile outputs are AnswerErrors naming the source.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from matchbench.core.errors import AnswerError
from matchbench.core.params import configured
from matchbench.core.problem import get_problem
from matchbench.external.formats import family_formats
from matchbench.families.lap import datasets as L
from matchbench.families.lap import formats as F
from matchbench.families.lap.problem import CostMatrix
from matchbench.families.lap.refs import ScipyLSA

PROBLEM = get_problem("lap")
SOURCE = "lap_prog's answer file"


def _instances() -> list[CostMatrix]:
    return [
        L.uniform(7, seed=2),
        L.uniform(6, cost_range="10n", seed=3, dtype="int64"),
        L.uniform_float(6, seed=4, dtype="float32"),
        L.uniform_float(5, seed=5, dtype="float64"),
        L.geometric(5, seed=6),
        CostMatrix(np.array([[-3, 2**20], [7, -(2**20)]], dtype=np.int32), name="neg_int"),
        CostMatrix(np.array([[1e-300, 1.5e300], [-0.1, 1 / 3]]), name="extreme_floats"),
        CostMatrix(np.array([[2**53 + 1, 0], [0, 1]], dtype=np.int64), name="big_int64"),
        CostMatrix(np.array([[5]], dtype=np.int32), name="n1"),
    ]


INSTANCES = _instances()
IDS = [i.name for i in INSTANCES]


def _optimal(inst: CostMatrix) -> np.ndarray:
    s = configured(ScipyLSA)
    s.prepare(inst)
    s.run()
    return np.asarray(s.result().row_to_col, dtype=np.int64)


def _check(inst: CostMatrix, answer) -> None:
    assert answer.u is None and answer.v is None
    v = PROBLEM.verify(inst, answer)
    assert v.verified is True, v.reason


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_the_formats_are_declared_and_documented():
    f = family_formats("lap")
    assert set(f.writers) == {"npy", "raw_f32", "raw_f64", "raw_u32", "text", "npy_stack", "raw_f32_stack"}
    assert set(f.readers) == {"row_to_col", "col_to_row", "pairs", "npy"}
    assert set(f.batch_writers) == {"npy_stack", "raw_f32_stack"}
    assert set(f.batch_readers) == {"row_to_col_lines", "col_to_row_lines", "npy_stack"}
    tables = (f.writers, f.readers, f.batch_writers, f.batch_readers)
    for fn in [fn for t in tables for fn in t.values()]:
        doc = (fn.__doc__ or "").strip().splitlines()
        assert doc and doc[0].strip() and len(doc) > 2, fn.__name__


# ------------------------------------------------------------------------------ writers


@pytest.mark.parametrize("inst", INSTANCES, ids=IDS)
def test_npy_and_text_hold_the_costs_exactly(inst, tmp_path):
    F.write_npy(inst, tmp_path / "a")
    back = np.load(tmp_path / "a", allow_pickle=False)
    assert back.dtype == inst.costs.dtype and np.array_equal(back, inst.costs)
    F.write_text(inst, tmp_path / "t")
    lines = (tmp_path / "t").read_text().splitlines()
    n = inst.n
    assert lines[0] == str(n) and len(lines) == n + 1
    if inst.costs.dtype.kind == "i":
        got = np.array([[int(x) for x in ln.split()] for ln in lines[1:]], dtype=np.int64)
    else:
        got = np.array([[float(x) for x in ln.split()] for ln in lines[1:]]).astype(inst.costs.dtype)
    assert got.shape == (n, n) and np.array_equal(got, inst.costs)


@pytest.mark.parametrize(("fmt", "dtype"), [("raw_f32", "<f4"), ("raw_f64", "<f8"), ("raw_u32", "<u4")])
@pytest.mark.parametrize("inst", INSTANCES, ids=IDS)
def test_raw_is_exact_or_refused(inst, fmt, dtype, tmp_path):
    path = tmp_path / "r"
    with np.errstate(over="ignore", invalid="ignore"):
        exact = np.array_equal(inst.costs.astype(dtype).astype(inst.costs.dtype), inst.costs)
    exact &= not (np.dtype(dtype).kind == "u" and inst.costs.min() < 0)
    if not exact:
        with pytest.raises(ValueError, match=f"{fmt}: instance '{inst.name}'"):
            F.WRITERS[fmt](inst, path)
        return
    F.WRITERS[fmt](inst, path)
    raw = np.fromfile(path, dtype=dtype)
    assert raw.shape == (inst.n * inst.n,)  # no header
    assert np.array_equal(raw.reshape(inst.n, inst.n).astype(inst.costs.dtype), inst.costs)


def test_raw_refusals_are_the_expected_ones(tmp_path):
    names = {i.name: i for i in INSTANCES}
    for name, fmt in [("geometric_n5_d2_s6", "raw_f32"), ("extreme_floats", "raw_f32"), ("big_int64", "raw_f64")]:
        with pytest.raises(ValueError, match="does not hold exactly"):
            F.WRITERS[fmt](names[name], tmp_path / "x")
    F.write_raw_f32(names["neg_int"], tmp_path / "x")  # 2**20 fits float32 exactly
    F.write_raw_f64(names["extreme_floats"], tmp_path / "x")
    with pytest.raises(ValueError, match=r"raw_u32: instance 'neg_int' .* first c\[0, 0\] = -3"):
        F.write_raw_u32(names["neg_int"], tmp_path / "x")  # no wrap-around to 2**32 - 3
    with pytest.raises(ValueError, match="raw_u32: instance 'geometric_n5_d2_s6'"):
        F.write_raw_u32(names["geometric_n5_d2_s6"], tmp_path / "x")
    F.write_raw_u32(names["uniform_n7_rn_s2"], tmp_path / "x")
    F.write_raw_u32(CostMatrix(np.array([[2**32 - 1, 0], [1, 2.0]]), name="u32_max_as_float"), tmp_path / "x")
    assert np.fromfile(tmp_path / "x", dtype="<u4").tolist() == [2**32 - 1, 0, 1, 2]


BATCH = [L.uniform(6, seed=s) for s in range(4)]


def test_npy_stack(tmp_path):
    F.write_npy_stack(BATCH, tmp_path / "s")
    stack = np.load(tmp_path / "s", allow_pickle=False)
    assert stack.shape == (4, 6, 6) and stack.dtype == np.int32
    for b, inst in enumerate(BATCH):
        assert np.array_equal(stack[b], inst.costs)


def test_raw_f32_stack(tmp_path):
    F.write_raw_f32_stack(BATCH, tmp_path / "s")
    data = (tmp_path / "s").read_bytes()
    assert np.frombuffer(data[:8], dtype="<i4").tolist() == [4, 6]
    body = np.frombuffer(data[8:], dtype="<f4")
    assert body.shape == (4 * 36,)
    assert np.array_equal(body.reshape(4, 6, 6), np.stack([i.costs for i in BATCH]).astype(np.float32))


@pytest.mark.parametrize("fmt", sorted(F.BATCH_WRITERS))
def test_a_stack_writer_of_one_instance_writes_the_batch_of_it(fmt, tmp_path):
    inst = BATCH[0]
    F.WRITERS[fmt](inst, tmp_path / "one")
    F.BATCH_WRITERS[fmt]([inst], tmp_path / "batch")
    assert (tmp_path / "one").read_bytes() == (tmp_path / "batch").read_bytes()


@pytest.mark.parametrize("writer", sorted(F.BATCH_WRITERS))
def test_a_stack_needs_one_size_and_dtype(writer, tmp_path):
    mixed_n = [*BATCH[:2], L.uniform(5, seed=9)]
    with pytest.raises(ValueError, match=r"'uniform_n5_rn_s9' \(#2 of the batch\) is 5 x 5"):
        F.BATCH_WRITERS[writer](mixed_n, tmp_path / "x")
    mixed_dtype = [*BATCH[:1], L.uniform(6, seed=1, dtype="int64")]
    with pytest.raises(ValueError, match=r"#1 of the batch\) is 6 x 6 int64"):
        F.BATCH_WRITERS[writer](mixed_dtype, tmp_path / "x")


# ------------------------------------------------------------------------------ readers


def _inverse(cols: np.ndarray) -> np.ndarray:
    rows = np.empty_like(cols)
    rows[cols] = np.arange(cols.shape[0])
    return rows


def _serialize(fmt: str, cols: np.ndarray) -> bytes:
    if fmt == "row_to_col":
        return ("# columns\n" + "\n".join(map(str, cols.tolist())) + "\n").encode()
    if fmt == "col_to_row":
        return ("# rows of the columns\n" + " ".join(map(str, _inverse(cols).tolist())) + "\n").encode()
    if fmt == "pairs":
        order = np.random.default_rng(1).permutation(cols.shape[0])
        return ("% pairs\n\n" + "\n".join(f"{i} {int(cols[i])}" for i in order.tolist())).encode()
    return _npy(cols.astype(np.int16))


@pytest.mark.parametrize("fmt", sorted(F.READERS))
@pytest.mark.parametrize("inst", INSTANCES, ids=IDS)
def test_an_optimal_assignment_reads_back_and_verifies(inst, fmt):
    cols = _optimal(inst)
    answer = F.READERS[fmt](inst, _serialize(fmt, cols), SOURCE)
    assert np.array_equal(answer.row_to_col, cols)
    _check(inst, answer)


def test_batch_answers_read_back_and_verify():
    cols = [_optimal(i) for i in BATCH]
    text = "# one line per instance\n" + "\n\n".join(" ".join(map(str, c.tolist())) for c in cols) + "\n"
    answers = F.read_row_to_col_lines(BATCH, text.encode(), SOURCE)
    assert len(answers) == len(BATCH)
    for inst, a in zip(BATCH, answers, strict=True):
        _check(inst, a)
    answers = F.read_npy_stack(BATCH, _npy(np.stack(cols)), SOURCE)
    for inst, a in zip(BATCH, answers, strict=True):
        _check(inst, a)
    text = "\n".join(" ".join(map(str, _inverse(c).tolist())) for c in cols)
    answers = F.read_col_to_row_lines(BATCH, text.encode(), SOURCE)
    for inst, a, c in zip(BATCH, answers, cols, strict=True):
        assert np.array_equal(a.row_to_col, c)
        _check(inst, a)


def test_row_to_col_lines_takes_instances_of_several_sizes():
    batch = [L.uniform(3, seed=1), L.uniform(5, seed=2), L.uniform(1, seed=3)]
    cols = [_optimal(i) for i in batch]
    text = "\n".join(" ".join(map(str, c.tolist())) for c in cols)
    for inst, a in zip(batch, F.read_row_to_col_lines(batch, text.encode(), SOURCE), strict=True):
        _check(inst, a)
    with pytest.raises(AnswerError, match="one size"):
        F.read_npy_stack(batch, _npy(np.zeros((3, 5), dtype=np.int64)), SOURCE)


def test_a_repeated_column_is_for_the_verifier():
    inst = INSTANCES[0]
    cols = _optimal(inst)
    cols[1] = cols[0]
    for fmt in ("row_to_col", "npy"):
        v = PROBLEM.verify(inst, F.READERS[fmt](inst, _serialize(fmt, cols), SOURCE))
        assert v.verified is False and "not a permutation" in v.reason
    # a row given to two columns: read, and rejected
    rows = _inverse(_optimal(inst))
    rows[1] = rows[0]
    v = PROBLEM.verify(inst, F.read_col_to_row(inst, " ".join(map(str, rows.tolist())).encode(), SOURCE))
    assert v.verified is False and "not a permutation" in v.reason
    # a row without a pair is unassigned: the verifier says so
    v = PROBLEM.verify(inst, F.read_pairs(inst, b"0 1\n", SOURCE))
    assert v.verified is False and "column -1" in v.reason


N7 = INSTANCES[0]  # n = 7

HOSTILE = {
    "row_to_col": [
        (b"", "empty"),
        (b"# nothing\n", "only comments"),
        (b"Segmentation fault\n", "line 1: 'Segmentation' is not an integer"),
        (b"0 1 2\n", "3 integers, expected 7"),
        (b"0 1 2 3 4 5 6\n0\n", "8 integers, expected 7 (one column per row); the first extra one is on line 2"),
        (b"nan " * 7, "'nan' is not an integer"),
        (b"1e400 " * 7, "'1e400' is not an integer"),
        (b"0.0 " * 7, "'0.0' is not an integer"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "is not an integer"),
        (b"99999999999999999999 " * 7, "out of the int64 range"),
        (b"0 1 2 3 4 5 7\n", "line 1: row 6's column 7 is outside [0, 7)"),
        (b"0\n1\n2\n-1\n4\n5\n6\n", "line 4: row 3's column -1 is outside [0, 7)"),
    ],
    "col_to_row": [
        (b"", "empty"),
        (b"Killed", "line 1: 'Killed' is not an integer"),
        (b"0 1 2\n", "3 integers, expected 7 (one row per column)"),
        (b"nan " * 7, "'nan' is not an integer"),
        (b"1e400 " * 7, "'1e400' is not an integer"),
        (b"\x00" * 7, "is not an integer"),
        (b"0 1 2 3 4 5\n7\n", "line 2: column 6's row 7 is outside [0, 7)"),
    ],
    "pairs": [
        (b"", "empty"),
        (b"% only\n", "only comments"),
        (b"0 1\nabc\n", "line 2: 'abc' is not two integers"),
        (b"0 1 2\n", "line 1: '0 1 2' is not two integers"),
        (b"0 nan\n", "'nan' is not an integer"),
        (b"0 1e400\n", "'1e400' is not an integer"),
        (b"7 0\n", "line 1: row 7 is outside [0, 7)"),
        (b"0 7\n", "line 1: column 7 is outside [0, 7)"),
        (b"2 1\n#\n2 3\n", "line 3: row 2 is assigned twice (lines 1 and 3)"),
    ],
    "npy": [
        (b"", "empty"),
        (b"0 1 2 3 4 5 6", "not a .npy file"),
        (_npy(np.arange(7))[:-1], "truncated"),
        (_npy(np.arange(6)), "shape (6,); expected (7,)"),
        (_npy(np.arange(7.0)), "dtype float64"),
        (_npy(np.full(7, np.nan)), "dtype float64"),
        (_npy(np.full(7, 7)), "row 0's column 7 is outside [0, 7)"),
        (_npy(np.array([0, 1, 2, 3, 4, 5, -1])), "row 6's column -1 is outside [0, 7)"),
    ],
}
HOSTILE_CASES = [(fmt, data, msg) for fmt, cases in HOSTILE.items() for data, msg in cases]


@pytest.mark.parametrize(("fmt", "data", "msg"), HOSTILE_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(HOSTILE_CASES)])
def test_hostile_output_is_an_answer_error(fmt, data, msg):
    with pytest.raises(AnswerError) as info:
        F.READERS[fmt](N7, data, SOURCE)
    text = str(info.value)
    assert text.startswith(SOURCE), text
    assert msg in text, text


B3 = BATCH[:3]  # n = 6 each
OK_LINE = b"0 1 2 3 4 5"

HOSTILE_BATCH = {
    "row_to_col_lines": [
        (b"", "empty"),
        (b"# c\n", "only comments"),
        (OK_LINE + b"\n" + OK_LINE + b"\n", "2 answer lines, expected 3"),
        ((OK_LINE + b"\n") * 4, "4 answer lines, expected 3 (one per instance of the batch); the first extra one is line 4"),
        (OK_LINE + b"\n0 1 2 3 4\n" + OK_LINE, "line 2: 5 integers for instance 1 of the batch, expected its n = 6"),
        ((OK_LINE + b"\n") * 2 + b"0 1 2 3 4 nan\n", "line 3: 'nan' is not an integer"),
        ((OK_LINE + b"\n") * 2 + b"0 1 2 3 4 6\n", "line 3: instance 2, row 5: column 6 is outside [0, 6)"),
        ((b"\x00\x01\x02 " * 6 + b"\n") * 3, r"line 1: '\x00\x01\x02' is not an integer"),
    ],
    "col_to_row_lines": [
        (b"", "empty"),
        (OK_LINE + b"\n" + OK_LINE + b"\n", "2 answer lines, expected 3"),
        ((OK_LINE + b"\n") * 2 + b"0 1 2 3 4 1e400\n", "line 3: '1e400' is not an integer"),
        (OK_LINE + b"\n0 -1 2 3 4 5\n" + OK_LINE, "line 2: instance 1, column 1: row -1 is outside [0, 6)"),
    ],
    "npy_stack": [
        (b"", "empty"),
        (b"garbage", "not a .npy file"),
        (_npy(np.zeros((2, 6), dtype=np.int64)), "shape (2, 6); expected (3, 6)"),
        (_npy(np.zeros((3, 6))), "dtype float64"),
        (_npy(np.full((3, 6), 6)), "instance 0, row 0: column 6 is outside [0, 6)"),
    ],
}
HOSTILE_BATCH_CASES = [(fmt, data, msg) for fmt, cases in HOSTILE_BATCH.items() for data, msg in cases]


@pytest.mark.parametrize(
    ("fmt", "data", "msg"), HOSTILE_BATCH_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(HOSTILE_BATCH_CASES)]
)
def test_hostile_batch_output_is_an_answer_error(fmt, data, msg):
    with pytest.raises(AnswerError) as info:
        F.BATCH_READERS[fmt](B3, data, SOURCE)
    text = str(info.value)
    assert text.startswith(SOURCE), text
    assert msg in text, text
