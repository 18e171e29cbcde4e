"""The LAP family's formats for outside programs (:mod:`matchbench.external.formats`).

Writers hand a :class:`~matchbench.families.lap.problem.CostMatrix` to a program: a
``.npy`` file (``npy``), raw little-endian numbers (``raw_f32``, ``raw_f64``,
``raw_u32``) and text (``text``); the batch writers stack many matrices of one size in
one file (``npy_stack``, ``raw_f32_stack``, also writers of a stack of one). Readers turn
what the program prints into an :class:`~matchbench.families.lap.problem.Assignment`
(no duals: the verifier derives them): the column of every row as text (``row_to_col``)
or ``.npy`` (``npy``), the row of every column (``col_to_row``), or assigned pairs
(``pairs``); per batch, one line per instance (``row_to_col_lines``,
``col_to_row_lines``) or a ``(B, n)`` ``.npy`` (``npy_stack``).

A file holds the instance exactly or is not written: a raw float format refuses costs
its float type cannot hold exactly (a ``ValueError`` naming the instance), so that the
verifier never judges an answer to a rounded problem against the exact one.

Text answers: integers in decimal, separated by any whitespace; blank lines and lines
whose first non-blank character is ``#`` or ``%`` are ignored (``\\r\\n`` line ends are
fine). A reader trusts nothing: every defect (no answer, a token that is not an integer,
a wrong count, a column out of range, a row assigned twice in a list of pairs) is an
:class:`~matchbench.core.errors.AnswerError` naming the output, the line (1-based,
comments counted) and the defect. Whether the answer is a permutation, and an optimal
one, is the verifier's to judge.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from matchbench.core.answers import TextAnswer as _Text
from matchbench.core.answers import check_range as _check_range
from matchbench.core.answers import first_repeat as _first_repeat
from matchbench.core.answers import npy_ints as _npy_ints
from matchbench.core.errors import AnswerError
from matchbench.families.lap.problem import Assignment, CostMatrix

__all__ = ["BATCH_READERS", "BATCH_WRITERS", "READERS", "WRITERS"]

#: Rows of text written at once.
_CHUNK_ROWS = 256

# ---------------------------------------------------------------------------------------
# Text answers: tokens, their lines, integers


# ---------------------------------------------------------------------------------------
# .npy answers


# ---------------------------------------------------------------------------------------
# Writers


def _exact(instance: CostMatrix, dtype: str, fmt: str) -> np.ndarray:
    """The costs as ``dtype`` (little-endian), refused where that changes a cost."""
    costs = instance.costs
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is found below
        out = costs.astype(dtype)
    if out.dtype != costs.dtype:
        with np.errstate(over="ignore", invalid="ignore"):
            back = out.astype(costs.dtype)
        diff = back != costs
        if out.dtype.kind == "u":
            diff |= costs < 0  # int32 -> uint32 -> int32 wraps back unnoticed
        if diff.any():
            i, j = (int(x) for x in np.argwhere(diff)[0])
            raise ValueError(
                f"{fmt}: instance {instance.name!r} has {costs.dtype} costs that {np.dtype(dtype).name} "
                f"does not hold exactly ({int(diff.sum())} of them, first c[{i}, {j}] = "
                f"{costs[i, j].item()!r}); use the npy or text format"
            )
    return out


def write_npy(instance: CostMatrix, path: Path) -> None:
    """A .npy file of the (n, n) cost matrix, in its own dtype (int32/int64/float32/float64).

    What ``numpy.save`` writes (format version 1.0, C order, native little-endian on the
    usual machines: the header says): ``c[i, j]`` is the cost of assigning row ``i`` to
    column ``j``. Read it with ``numpy.load`` or any ``.npy`` reader (cnpy, npy-rs).
    """
    with open(path, "wb") as f:
        np.save(f, instance.costs, allow_pickle=False)


def write_raw_f32(instance: CostMatrix, path: Path) -> None:
    """Raw float32: n * n little-endian floats, row-major (c[0, 0], c[0, 1], ...), no header.

    The file is exactly ``4 * n * n`` bytes; ``n`` is not in it (the ``{n}`` placeholder
    gives it to the command line). ``c[i, j]`` is at offset ``4 * (i * n + j)``.

    Raises
    ------
    ValueError
        Naming the instance, when float32 cannot hold every cost exactly (integers above
        2**24, float64 costs that are not float32 values): the program would solve
        another problem.
    """
    _exact(instance, "<f4", "raw_f32").tofile(path)


def write_raw_f64(instance: CostMatrix, path: Path) -> None:
    """Raw float64: n * n little-endian doubles, row-major (c[0, 0], c[0, 1], ...), no header.

    The file is exactly ``8 * n * n`` bytes; ``n`` is not in it (the ``{n}`` placeholder
    gives it to the command line). ``c[i, j]`` is at offset ``8 * (i * n + j)``.

    Raises
    ------
    ValueError
        Naming the instance, when float64 cannot hold every cost exactly (int64 costs
        beyond 2**53).
    """
    _exact(instance, "<f8", "raw_f64").tofile(path)


def write_text(instance: CostMatrix, path: Path) -> None:
    """Text: a line with n, then n lines of n costs (row i: c[i, 0] ... c[i, n-1]).

    Numbers are separated by one space, every line ends with ``\\n``. Integer costs are
    written as decimal integers; float costs as Python's ``repr`` of the value as a
    double (shortest round-trip form, e.g. ``0.5``, ``1e-05``, ``1.5e+20``), which
    ``strtod`` reads back exactly (float32 costs: the exact double of the float32 value,
    so a float32 reader gets the same value back). No comments.
    """
    costs = instance.costs
    n = costs.shape[0]
    with open(path, "wb") as f:
        f.write(f"{n}\n".encode())
        for lo in range(0, n, _CHUNK_ROWS):
            block = costs[lo : lo + _CHUNK_ROWS].tolist()  # Python ints or floats
            f.write(("\n".join(" ".join(map(repr, row)) for row in block) + "\n").encode())


def write_raw_u32(instance: CostMatrix, path: Path) -> None:
    """Raw uint32: n * n little-endian unsigned 32-bit integers, row-major, no header.

    The file is exactly ``4 * n * n`` bytes; ``n`` is not in it (the ``{n}`` placeholder
    gives it to the command line). ``c[i, j]`` is at offset ``4 * (i * n + j)``.

    Raises
    ------
    ValueError
        Naming the instance, when a cost is not an integer in ``[0, 2**32)`` (negative,
        too large, or a float with a fraction): the program would solve another problem.
    """
    _exact(instance, "<u4", "raw_u32").tofile(path)


def write_npy_stack_one(instance: CostMatrix, path: Path) -> None:
    """A .npy file of shape (1, n, n): the batch writer npy_stack for one instance.

    Exactly what the batch writer ``npy_stack`` writes for a batch of this one instance,
    so that a program that reads stacks solves single instances too.
    """
    write_npy_stack([instance], path)


def write_raw_f32_stack_one(instance: CostMatrix, path: Path) -> None:
    """Raw: int32 header '1 n', then n * n float32: the batch writer raw_f32_stack for one instance.

    Exactly what the batch writer ``raw_f32_stack`` writes for a batch of this one
    instance (``B = 1``), so that a program that reads stacks solves single instances
    too. Refused, naming the instance, where float32 cannot hold a cost exactly.
    """
    write_raw_f32_stack([instance], path)


def _same_shape(instances: list, fmt: str) -> tuple[int, np.dtype]:
    """``(n, dtype)`` shared by all ``instances``; a ValueError names the first that differs."""
    if not instances:
        raise ValueError(f"{fmt}: no instances to write")
    first = instances[0]
    n, dtype = first.costs.shape[0], first.costs.dtype
    for b, inst in enumerate(instances):
        if inst.costs.shape[0] != n or inst.costs.dtype != dtype:
            raise ValueError(
                f"{fmt}: instance {inst.name!r} (#{b} of the batch) is {inst.costs.shape[0]} x "
                f"{inst.costs.shape[0]} {inst.costs.dtype}, but {first.name!r} (#0) is {n} x {n} "
                f"{dtype}; a stack holds instances of one size and dtype"
            )
    return n, dtype


def write_npy_stack(instances: list, path: Path) -> None:
    """A .npy file of shape (B, n, n): the B cost matrices of the batch, in their dtype.

    What ``numpy.save`` writes (C order): ``c[b, i, j]`` is the cost of row ``i``,
    column ``j`` of instance ``b`` (the batch's order).

    Raises
    ------
    ValueError
        When the instances differ in size or dtype (naming the first that differs).
    """
    n, dtype = _same_shape(instances, "npy_stack")
    stack = np.empty((len(instances), n, n), dtype=dtype)
    for b, inst in enumerate(instances):
        stack[b] = inst.costs
    with open(path, "wb") as f:
        np.save(f, stack, allow_pickle=False)


def write_raw_f32_stack(instances: list, path: Path) -> None:
    """Raw: little-endian int32 header 'B n', then B * n * n float32, row-major per instance.

    The file is ``8 + 4 * B * n * n`` bytes: two int32 (``B`` instances, each ``n x n``),
    then instance 0's costs row by row, then instance 1's, and so on (``c[b, i, j]`` at
    offset ``8 + 4 * ((b * n + i) * n + j)``), all little-endian float32.

    Raises
    ------
    ValueError
        When the instances differ in size or dtype (naming the first that differs), or
        float32 cannot hold a cost exactly (as ``raw_f32``).
    """
    n, _ = _same_shape(instances, "raw_f32_stack")
    if len(instances) > np.iinfo(np.int32).max or n > np.iinfo(np.int32).max:
        raise ValueError(f"raw_f32_stack: {len(instances)} instances of n = {n} overflow the int32 header")
    with open(path, "wb") as f:
        np.array([len(instances), n], dtype="<i4").tofile(f)
        for inst in instances:
            _exact(inst, "<f4", "raw_f32_stack").tofile(f)


# ---------------------------------------------------------------------------------------
# Readers


def _assignment(cols: np.ndarray) -> Assignment:
    return Assignment(row_to_col=np.ascontiguousarray(cols, dtype=np.int64))


def _from_col_to_row(rows: np.ndarray) -> Assignment:
    """The assignment of ``rows[j]``, the row of column ``j`` (checked in range).

    A row given to two columns leaves another row without one (-1): the verifier rejects
    the answer, as it would the answer itself.
    """
    out = np.full(rows.shape[0], -1, dtype=np.int64)
    out[rows] = np.arange(rows.shape[0], dtype=np.int64)
    return _assignment(out)


#: (what one entry is, what it holds) per orientation of an answer.
_BY = {"row": ("row", "column"), "column": ("column", "row")}


def _one_per(instance: CostMatrix, data: bytes, source: str, by: str) -> np.ndarray:
    """The ``n`` integers of a text answer, one per ``by`` (row or column), in ``[0, n)``."""
    own, other = _BY[by]
    text = _Text(data, source)
    n = instance.n
    if not text.tokens:
        raise text.empty(f"{n} integers (one {other} per {own})")
    values = text.ints()
    if values.shape[0] != n:
        extra = f"; the first extra one is on line {text.line(n)}" if values.shape[0] > n else ""
        raise AnswerError(f"{source}: {values.shape[0]} integers, expected {n} (one {other} per {own}){extra}")
    _check_range(text, values, 0, n, lambda k: f"{own} {k}'s {other}")
    return values


def read_row_to_col(instance: CostMatrix, data: bytes, source: str) -> Assignment:
    """Text: n integers, the column (0-based) assigned to row i, for i = 0 .. n-1.

    Exactly ``n`` integers separated by any whitespace (one per line or all on one
    line); the ``i``-th is row ``i``'s column, in ``0..n-1``. Blank lines and lines
    starting with ``#`` or ``%`` are ignored.

    Raises
    ------
    AnswerError
        For no integers, a token that is not an integer, more or fewer than ``n``
        integers, or a column outside ``[0, n)``. A column given to two rows is read as
        it is (the verifier rejects it).
    """
    return _assignment(_one_per(instance, data, source, "row"))


def read_col_to_row(instance: CostMatrix, data: bytes, source: str) -> Assignment:
    """Text: n integers, the row (0-based) assigned to column j, for j = 0 .. n-1.

    The transpose of ``row_to_col``: exactly ``n`` integers separated by any whitespace;
    the ``j``-th is the row assigned to column ``j``, in ``0..n-1``. Blank lines and
    lines starting with ``#`` or ``%`` are ignored.

    Raises
    ------
    AnswerError
        For no integers, a token that is not an integer, more or fewer than ``n``
        integers, or a row outside ``[0, n)``. A row given to two columns is no
        permutation: it is read as an assignment that leaves another row without a
        column (the verifier rejects it).
    """
    return _from_col_to_row(_one_per(instance, data, source, "column"))


def read_pairs(instance: CostMatrix, data: bytes, source: str) -> Assignment:
    """Text: one line 'i j' (0-based row, its column) per row, in any order.

    Each line holds exactly two integers, a row and a column in ``0..n-1``; a complete
    answer has ``n`` lines, one per row. Blank lines and lines starting with ``#`` or
    ``%`` are ignored. A row without a line is read as unassigned (column -1, which the
    verifier rejects).

    Raises
    ------
    AnswerError
        For no pairs, a line that is not two integers, an index out of range, or a row
        in two lines (naming both). A column given to two rows is read as it is (the
        verifier rejects it).
    """
    text = _Text(data, source)
    n = instance.n
    if not text.tokens:
        raise text.empty(f"{n} lines 'row column'")
    pairs, lines = text.table(2, "two integers 'row column'")
    rows, cols = pairs[:, 0], pairs[:, 1]
    _check_range(text, rows, 0, n, lambda k: "row", 0, 2)
    _check_range(text, cols, 0, n, lambda k: "column", 1, 2)
    rep = _first_repeat(rows)
    if rep is not None:
        a, b = rep
        raise AnswerError(
            f"{source}, line {int(lines[b])}: row {int(rows[b])} is assigned twice "
            f"(lines {int(lines[a])} and {int(lines[b])})"
        )
    out = np.full(n, -1, dtype=np.int64)
    out[rows] = cols
    return _assignment(out)


def read_npy(instance: CostMatrix, data: bytes, source: str) -> Assignment:
    """A .npy file of n integers: the column (0-based) assigned to row i.

    A NumPy ``.npy`` file (format version 1.0 or 2.0, as ``numpy.save`` writes it) of
    one integer array of shape ``(n,)``, any integer dtype and byte order; entry ``i``
    is row ``i``'s column, in ``0..n-1``. No pickles.

    Raises
    ------
    AnswerError
        For a file that is not such a ``.npy`` (empty, no magic, truncated, another
        shape, a non-integer dtype) or a column outside ``[0, n)``.
    """
    n = instance.n
    cols = _npy_ints(data, source, (n,), f"{n} columns, one per row")
    bad = (cols < 0) | (cols >= n)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise AnswerError(f"{source}: row {k}'s column {int(cols[k])} is outside [0, {n})")
    return _assignment(cols)


def _lines_per_instance(instances: list, data: bytes, source: str, by: str) -> list[np.ndarray]:
    """The integers of a text batch answer, one line per instance, checked in range."""
    own, other = _BY[by]
    text = _Text(data, source)
    sizes = np.array([inst.n for inst in instances], dtype=np.int64)
    n_batch = sizes.shape[0]
    if not text.tokens:
        if n_batch == 0:
            return []
        raise text.empty(f"{n_batch} lines, one per instance")
    lines = text.lines
    first = np.flatnonzero(np.r_[True, lines[1:] != lines[:-1]])
    lengths = np.diff(np.r_[first, lines.shape[0]])
    if first.shape[0] != n_batch:
        extra = (
            f"; the first extra one is line {int(lines[first[n_batch]])}" if first.shape[0] > n_batch else ""
        )
        raise AnswerError(
            f"{source}: {first.shape[0]} answer lines, expected {n_batch} (one per instance "
            f"of the batch){extra}"
        )
    bad = np.flatnonzero(lengths != sizes)
    if bad.size:
        b = int(bad[0])
        raise text.fail(
            f"{int(lengths[b])} integers for instance {b} of the batch, expected its n = {int(sizes[b])}",
            int(first[b]),
        )
    values = text.ints()
    limit = np.repeat(sizes, sizes)
    out_of_range = (values < 0) | (values >= limit)
    if out_of_range.any():
        k = int(np.flatnonzero(out_of_range)[0])
        b = int(np.searchsorted(first, k, side="right") - 1)
        raise text.fail(
            f"instance {b}, {own} {k - int(first[b])}: {other} {int(values[k])} is outside "
            f"[0, {int(sizes[b])})",
            k,
        )
    return [values[s : s + n] for s, n in zip(first.tolist(), sizes.tolist(), strict=True)]


def read_row_to_col_lines(instances: list, data: bytes, source: str) -> list[Assignment]:
    """Text: one line per instance of the batch, line b the n columns of instance b's rows.

    ``B`` lines (the batch size, in the batch's order), not counting blank lines and
    lines starting with ``#`` or ``%``; line ``b`` holds exactly ``n_b`` integers (the
    size of instance ``b``) separated by spaces or tabs: the column in ``0..n_b-1`` of
    each row, as in ``row_to_col``.

    Raises
    ------
    AnswerError
        For no lines, more or fewer than ``B`` lines, a line with another count than its
        instance's ``n``, a token that is not an integer, or a column out of range.
    """
    return [_assignment(v) for v in _lines_per_instance(instances, data, source, "row")]


def read_col_to_row_lines(instances: list, data: bytes, source: str) -> list[Assignment]:
    """Text: one line per instance of the batch, line b the n rows of instance b's columns.

    As ``row_to_col_lines``, transposed: ``B`` lines (blank lines and lines starting with
    ``#`` or ``%`` not counted), line ``b`` exactly ``n_b`` integers, the row in
    ``0..n_b-1`` assigned to each column of instance ``b``, as in ``col_to_row``.

    Raises
    ------
    AnswerError
        For no lines, more or fewer than ``B`` lines, a line with another count than its
        instance's ``n``, a token that is not an integer, or a row out of range.
    """
    return [_from_col_to_row(v) for v in _lines_per_instance(instances, data, source, "column")]


def read_npy_stack(instances: list, data: bytes, source: str) -> list[Assignment]:
    """A .npy file of shape (B, n) integers: row b holds the columns of instance b's rows.

    A NumPy ``.npy`` file (format 1.0 or 2.0) of one integer array, any integer dtype:
    ``a[b, i]`` is the column in ``0..n-1`` of row ``i`` of instance ``b`` (the batch's
    order). All instances of the batch must have the same ``n``.

    Raises
    ------
    AnswerError
        For a file that is not such a ``.npy`` (another shape included), a column out
        of range, or a batch whose instances differ in size (it has no ``(B, n)`` form).
    """
    sizes = {inst.n for inst in instances}
    if len(sizes) > 1:
        raise AnswerError(
            f"{source}: npy_stack answers need a batch of one size; this one has n in {sorted(sizes)}"
        )
    n = sizes.pop() if sizes else 0
    cols = _npy_ints(data, source, (len(instances), n), f"{len(instances)} x {n} columns")
    bad = (cols < 0) | (cols >= n)
    if bad.any():
        b, i = (int(x) for x in np.argwhere(bad)[0])
        raise AnswerError(f"{source}: instance {b}, row {i}: column {int(cols[b, i])} is outside [0, {n})")
    return [_assignment(row) for row in cols]


WRITERS: dict[str, Callable[[Any, Path], None]] = {
    "npy": write_npy,
    "raw_f32": write_raw_f32,
    "raw_f64": write_raw_f64,
    "raw_u32": write_raw_u32,
    "text": write_text,
    "npy_stack": write_npy_stack_one,
    "raw_f32_stack": write_raw_f32_stack_one,
}
READERS: dict[str, Callable[[Any, bytes, str], Any]] = {
    "row_to_col": read_row_to_col,
    "col_to_row": read_col_to_row,
    "pairs": read_pairs,
    "npy": read_npy,
}
BATCH_WRITERS: dict[str, Callable[[list, Path], None]] = {
    "npy_stack": write_npy_stack,
    "raw_f32_stack": write_raw_f32_stack,
}
BATCH_READERS: dict[str, Callable[[list, bytes, str], list]] = {
    "row_to_col_lines": read_row_to_col_lines,
    "col_to_row_lines": read_col_to_row_lines,
    "npy_stack": read_npy_stack,
}
