"""The MCM family's formats for outside programs (:mod:`matchbench.external.formats`).

Writers hand a :class:`~matchbench.graphs.bipartite.BipartiteGraph` to a program: Matrix
Market (``mtx``), ECL-MM's binary bipartite CSR (``ecl``) and a plain edge list
(``edges``). Readers turn what the program prints into a
:class:`~matchbench.graphs.bipartite.Matching` for the verifier: the row mates as text
(``row_mates``) or ``.npy`` (``npy``), matched pairs (``pairs``) and ECL-MM's pairs of
vertex ids (``ecl_pairs``).

Text answers: integers in decimal, separated by any whitespace; blank lines and lines
whose first non-blank character is ``#`` or ``%`` are ignored (``\\r\\n`` line ends are
fine). A reader trusts nothing: every defect (no answer, a token that is not an integer,
a wrong count, an index out of range, a vertex matched twice in a list of pairs) is an
:class:`~matchbench.core.errors.AnswerError` naming the output, the line (1-based,
comments counted) and the defect. Whether the answer is a maximum matching, or a matching
at all (two rows given one column in ``row_mates``, a pair that is not an edge), is the
verifier's to judge.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from matchbench.core.answers import TextAnswer as _Text
from matchbench.core.answers import check_range as _check_range
from matchbench.core.answers import first_repeat as _first_repeat
from matchbench.core.answers import npy_ints as _npy_ints
from matchbench.core.errors import AnswerError
from matchbench.graphs import mtx
from matchbench.graphs.bipartite import BipartiteGraph, Matching

__all__ = ["BATCH_READERS", "BATCH_WRITERS", "READERS", "WRITERS"]

_INT32_MAX = int(np.iinfo(np.int32).max)
#: Edges or numbers per chunk of text written at once.
_CHUNK = 1 << 20

# ---------------------------------------------------------------------------------------
# Text answers: tokens, their lines, integers


def _mates_from_pairs(
    text: _Text, graph: BipartiteGraph, rows: np.ndarray, cols: np.ndarray, lines: np.ndarray,
    side: tuple[str, str] = ("row", "column"),
) -> Matching:
    """The matching of checked (row, column) pairs; a vertex in two pairs is an error."""
    for label, ids in zip(side, (rows, cols), strict=True):
        rep = _first_repeat(ids)
        if rep is not None:
            a, b = rep
            raise AnswerError(
                f"{text.source}, line {int(lines[b])}: {label} {int(ids[b])} is matched twice "
                f"(lines {int(lines[a])} and {int(lines[b])})"
            )
    row_match = np.full(graph.n_rows, -1, dtype=graph.col_ind.dtype)
    row_match[rows] = cols
    return Matching.from_row_match(row_match, graph.n_cols)


# ---------------------------------------------------------------------------------------
# .npy answers


# ---------------------------------------------------------------------------------------
# Writers


def _write_lines(f: BinaryIO, *columns: np.ndarray) -> None:
    """One line per index, its ``columns`` values separated by a space, in chunks."""
    n = columns[0].shape[0] if columns else 0
    for lo in range(0, n, _CHUNK):
        parts = [map(str, c[lo : lo + _CHUNK].tolist()) for c in columns]
        rows = parts[0] if len(parts) == 1 else map(" ".join, zip(*parts, strict=True))
        f.write(("\n".join(rows) + "\n").encode())


def _edge_rows(graph: BipartiteGraph) -> np.ndarray:
    return np.repeat(np.arange(graph.n_rows, dtype=np.int64), np.diff(graph.row_ptr))


def write_mtx(instance: BipartiteGraph, path: Path) -> None:
    """Matrix Market coordinate pattern general: n_rows x n_cols, one 1-based entry per edge.

    The header ``%%MatrixMarket matrix coordinate pattern general``, then the size line
    ``n_rows n_cols n_edges``, then one line ``i j`` per edge (row ``i`` in
    ``1..n_rows``, column ``j`` in ``1..n_cols``), rows ascending and, within a row,
    columns ascending. Every edge appears once; no values.
    """
    mtx.write(Path(path), instance, field="pattern", symmetry="general")


def write_ecl(instance: BipartiteGraph, path: Path) -> None:
    """ECL-MM's binary bipartite CSR (ECLgraph.h, as mm2eclbp makes it): rows then columns.

    Layout, all little-endian int32: ``nodes``, ``edges``, ``nindex[nodes + 1]``,
    ``nlist[edges]``; no weights. With ``N = max(n_rows, n_cols)``, ``nodes = 2N``:
    vertex ``i`` in ``[0, N)`` is row ``i`` and vertex ``N + j`` is column ``j`` (the
    smaller side is padded with isolated vertices, as ECL-MM assumes ``|A| = |B| =
    nodes / 2``). Every edge (i, j) is stored in both directions, ``i -> N + j`` and
    ``N + j -> i``, so ``edges = 2 * n_edges``; vertex ``v``'s neighbours are
    ``nlist[nindex[v]:nindex[v + 1]]``, ascending.

    Raises
    ------
    ValueError
        Naming the instance, when ``2N`` or ``2 * n_edges`` exceed the int32 range, or
        the graph has no vertex (ECLgraph files need ``nodes >= 1``).
    """
    n_side = max(instance.n_rows, instance.n_cols)
    nodes, edges = 2 * n_side, 2 * instance.n_edges
    if nodes == 0:
        raise ValueError(f"ecl: instance {instance.name!r} has no vertex; an ECLgraph needs nodes >= 1")
    if nodes > _INT32_MAX or edges > _INT32_MAX:
        raise ValueError(
            f"ecl: instance {instance.name!r} needs {nodes} vertices and {edges} directed "
            f"edges; the ECLgraph format holds at most {_INT32_MAX} of each (int32)"
        )
    degree = np.zeros(nodes, dtype=np.int64)
    degree[: instance.n_rows] = np.diff(instance.row_ptr)
    degree[n_side : n_side + instance.n_cols] = np.diff(instance.col_ptr)
    nindex = np.zeros(nodes + 1, dtype="<i4")
    nindex[1:] = np.cumsum(degree)  # at most edges: fits int32
    with open(path, "wb") as f:
        np.array([nodes, edges], dtype="<i4").tofile(f)
        nindex.tofile(f)
        (instance.row_ind.astype(np.int64) + n_side).astype("<i4").tofile(f)
        instance.col_ind.astype("<i4").tofile(f)


def write_edges(instance: BipartiteGraph, path: Path) -> None:
    """Text edge list: a line 'n_rows n_cols n_edges', then one 0-based line 'i j' per edge.

    Row ``i`` in ``0..n_rows-1``, column ``j`` in ``0..n_cols-1``, separated by one space,
    one edge per line (``n_edges`` lines, each edge once), rows ascending and, within a
    row, columns ascending; every line ends with ``\\n``. No comments.
    """
    with open(path, "wb") as f:
        f.write(f"{instance.n_rows} {instance.n_cols} {instance.n_edges}\n".encode())
        _write_lines(f, _edge_rows(instance), instance.row_ind)


# ---------------------------------------------------------------------------------------
# Readers


def read_row_mates(instance: BipartiteGraph, data: bytes, source: str) -> Matching:
    """Text: n_rows integers, the column matched to row i (0-based), or -1 if unmatched.

    Exactly ``n_rows`` integers separated by any whitespace (one per line or several on
    a line); the ``i``-th is row ``i``'s mate, a column in ``0..n_cols-1``, or ``-1``.
    Blank lines and lines starting with ``#`` or ``%`` are ignored.

    Raises
    ------
    AnswerError
        For no integers, a token that is not an integer, more or fewer than ``n_rows``
        integers, or a mate outside ``[-1, n_cols)``. A column given to two rows is read
        as it is (the verifier rejects it).
    """
    text = _Text(data, source)
    n = instance.n_rows
    if not text.tokens and n:
        raise text.empty(f"{n} integers (one mate per row)")
    mates = text.ints()
    if mates.shape[0] != n:
        extra = f"; the first extra one is on line {text.line(n)}" if mates.shape[0] > n else ""
        raise AnswerError(f"{source}: {mates.shape[0]} integers, expected {n} (one mate per row){extra}")
    _check_range(text, mates, -1, instance.n_cols, lambda k: f"row {k}'s mate")
    return Matching.from_row_match(mates.astype(instance.col_ind.dtype), instance.n_cols)


def read_pairs(instance: BipartiteGraph, data: bytes, source: str) -> Matching:
    """Text: one line 'i j' (0-based row, column) per matched edge; unlisted rows unmatched.

    Each line holds exactly two integers: a row in ``0..n_rows-1`` and a column in
    ``0..n_cols-1``; any order of lines. Rows and columns not listed are unmatched.
    Blank lines and lines starting with ``#`` or ``%`` are ignored; an output without
    any character is an error (a program that printed nothing did not answer): for the
    empty matching print a comment line such as ``# no pairs``.

    Raises
    ------
    AnswerError
        For an empty output, a line that is not two integers, an index out of range, or
        a row or column in two pairs (naming both lines). Whether each pair is an edge
        is the verifier's to judge.
    """
    text = _Text(data, source)
    if not text.data.strip():
        raise text.empty("lines 'row column' (a comment line for no pairs)")
    pairs, lines = text.table(2, "two integers 'row column'")
    rows, cols = pairs[:, 0], pairs[:, 1]
    _check_range(text, rows, 0, instance.n_rows, lambda k: "row", 0, 2)
    _check_range(text, cols, 0, instance.n_cols, lambda k: "column", 1, 2)
    return _mates_from_pairs(text, instance, rows, cols, lines)


def read_ecl_pairs(instance: BipartiteGraph, data: bytes, source: str) -> Matching:
    """Text: ECL-MM's matched pairs, lines 'a b' of vertex ids: a = row, b = N + column (as ecl).

    One line per matched edge with two integers in the vertex numbering of the ``ecl``
    writer, ``N = max(n_rows, n_cols)``: ``a`` is the row (``0 <= a < n_rows``) and
    ``b = N + j`` the column ``j`` (``N <= b < N + n_cols``). Ids of the padding
    vertices (``n_rows <= a < N`` or ``b >= N + n_cols``) are errors. Rows and columns
    not listed are unmatched. Blank lines and lines starting with ``#`` or ``%`` are
    ignored; an output without any character is an error: for the empty matching print
    a comment line such as ``# no pairs``.

    This is what ``printEdgesInMatching()`` of ECL-MM (``source/ECL-MM_10.cu``, commented
    out there) prints, ``printf("%d %d\\n", a, mate[a])`` for every matched ``a < N``,
    after the line ``Edges in the maximum matching:``: enable the call and set
    ``answer: stdout`` with ``answer_after: "Edges in the maximum matching:"`` (and
    ``time_pattern: 'totalRunTime: ([0-9.eE+-]+) s'`` for ECL-MM's own time).

    Raises
    ------
    AnswerError
        For an empty output, a line that is not two integers, an id out of range or of a
        padding vertex, or a row or column in two pairs (naming both lines).
    """
    text = _Text(data, source)
    if not text.data.strip():
        raise text.empty("lines 'a b' (a comment line for no pairs)")
    pairs, lines = text.table(2, "two integers 'a b' (row vertex, column vertex)")
    n_rows, n_cols = instance.n_rows, instance.n_cols
    n_side = max(n_rows, n_cols)
    rows, cols = pairs[:, 0], pairs[:, 1]
    for at, ids, lo, hi, what in (
        (0, rows, 0, n_rows, "a row vertex"),
        (1, cols, n_side, n_side + n_cols, "a column vertex N + j"),
    ):
        bad = (ids < lo) | (ids >= hi)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            v = int(ids[k])
            pad = (n_rows <= v < n_side) if at == 0 else (n_side + n_cols <= v < 2 * n_side)
            why = "a padding vertex" if pad else "out of range"
            raise text.fail(
                f"{'ab'[at]} = {v} is {why}; expected {what} in [{lo}, {hi}) "
                f"(N = {n_side}, {n_rows} rows, {n_cols} columns)",
                2 * k + at,
            )
    return _mates_from_pairs(text, instance, rows, cols - n_side, lines)


def read_npy(instance: BipartiteGraph, data: bytes, source: str) -> Matching:
    """A .npy file of n_rows integers: the column matched to row i, or -1 if unmatched.

    A NumPy ``.npy`` file (format version 1.0 or 2.0, as ``numpy.save`` writes it) of
    one integer array of shape ``(n_rows,)``, any integer dtype and byte order; entry
    ``i`` is row ``i``'s mate, a column in ``0..n_cols-1``, or ``-1``. No pickles.

    Raises
    ------
    AnswerError
        For a file that is not such a ``.npy`` (empty, no magic, truncated, another
        shape, a non-integer dtype) or a mate outside ``[-1, n_cols)``.
    """
    mates = _npy_ints(data, source, (instance.n_rows,), f"{instance.n_rows} row mates")
    bad = (mates < -1) | (mates >= instance.n_cols)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise AnswerError(
            f"{source}: row {k}'s mate {int(mates[k])} is outside [-1, {instance.n_cols})"
        )
    return Matching.from_row_match(mates.astype(instance.col_ind.dtype), instance.n_cols)


WRITERS: dict[str, Callable[[Any, Path], None]] = {
    "mtx": write_mtx,
    "ecl": write_ecl,
    "edges": write_edges,
}
READERS: dict[str, Callable[[Any, bytes, str], Any]] = {
    "row_mates": read_row_mates,
    "pairs": read_pairs,
    "ecl_pairs": read_ecl_pairs,
    "npy": read_npy,
}
BATCH_WRITERS: dict[str, Callable[[list, Path], None]] = {}
BATCH_READERS: dict[str, Callable[[list, bytes, str], list]] = {}
