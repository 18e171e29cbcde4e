"""The mwpm family's formats for outside programs (:mod:`matchbench.external.formats`).

Writers hand a :class:`~matchbench.families.mwpm.problem.CompleteGraph` to a program as
its dense weight matrix, binary (``npy``) or text (``text``); the reader (``mates``) turns
its output into a :class:`~matchbench.families.mwpm.problem.PerfectMatching`.

The matrix written is the one stored: ``n x n`` with ``n`` even, float32, symmetric, zero
diagonal. An instance with an odd number of real vertices has been padded with a dummy
vertex, the last one, joined to every vertex by weight 0: the program sees it as an
ordinary vertex, and its answer is a perfect matching of all ``n`` vertices (the dummy's
mate is the vertex left single in the real graph).

The text the reader takes: ASCII, whitespace-separated tokens; blank lines and lines whose
first non-blank character is ``#`` or ``%`` are ignored. Nothing a program prints is
trusted: a token that is not an integer of int64 range, a wrong count, a mate out of range,
a vertex its own mate, mates that are not mutual or a NUL byte (binary output) raise
:class:`~matchbench.core.errors.AnswerError` naming the source, the 1-based line and the
defect. Parsing is vectorized (numpy over ``bytes.split``): outputs of millions of lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from matchbench.core.errors import AnswerError
from matchbench.families.mwpm.problem import CompleteGraph, PerfectMatching

__all__ = ["BATCH_READERS", "BATCH_WRITERS", "READERS", "WRITERS"]

#: Characters of an offending token quoted in a message.
_SHOW = 40
_SPACE = np.zeros(256, dtype=np.bool_)
_SPACE[list(b" \t\n\r\x0b\x0c")] = True  # what bytes.split() splits on
_INT64 = (-(1 << 63), (1 << 63) - 1)


# ---------------------------------------------------------------------------------------
# Reading text (the same helpers in every family's formats module: families share no code)


def _show(token: bytes) -> str:
    text = token[:_SHOW].decode("utf-8", "replace")
    return repr(text + ("..." if len(token) > _SHOW else ""))


class _Tokens:
    """The tokens of a program's text output, comment lines left out, and their lines.

    ``tokens`` is the list of ``bytes`` tokens; :meth:`line` the 1-based line of one,
    :attr:`lines` of all (computed on first use: the free-layout readers need it only to
    name a defect).
    """

    def __init__(self, data: Any, source: str) -> None:
        if isinstance(data, bytearray | memoryview):
            data = bytes(data)
        if not isinstance(data, bytes):
            raise AnswerError(f"{source}: expected bytes, got {type(data).__name__}")
        self.data, self.source = data, source
        nul = data.find(b"\0")
        if nul >= 0:
            line = data.count(b"\n", 0, nul) + 1
            raise AnswerError(f"{source}: line {line}: a NUL byte: binary data, not a text answer")
        self.tokens: list[bytes] = data.split()
        self._lines: np.ndarray | None = None
        if b"#" in data or b"%" in data:
            self._drop_comments()

    def _token_lines(self) -> tuple[np.ndarray, np.ndarray]:
        """Start offset and 1-based line of every token of ``data.split()``."""
        buf = np.frombuffer(self.data, dtype=np.uint8)
        space = _SPACE[buf]
        start = ~space
        start[1:] &= space[:-1]
        starts = np.flatnonzero(start)
        del space, start
        newlines = np.flatnonzero(buf == 10)
        return starts, np.searchsorted(newlines, starts) + 1

    def _drop_comments(self) -> None:
        starts, lines = self._token_lines()
        buf = np.frombuffer(self.data, dtype=np.uint8)
        first = np.ones(lines.shape[0], dtype=np.bool_)
        first[1:] = lines[1:] != lines[:-1]
        lead = buf[starts]
        marked = first & ((lead == ord("#")) | (lead == ord("%")))
        if marked.any():
            comment = np.zeros(int(lines[-1]) + 1, dtype=np.bool_)
            comment[lines[marked]] = True
            keep = ~comment[lines]
            self.tokens = [t for t, k in zip(self.tokens, keep.tolist(), strict=True) if k]
            lines = lines[keep]
        self._lines = lines

    @property
    def lines(self) -> np.ndarray:
        if self._lines is None:
            self._lines = self._token_lines()[1]
        return self._lines

    def line(self, k: int) -> int:
        return int(self.lines[k])

    def fail(self, k: int, msg: str) -> AnswerError:
        """An error about token ``k`` (its line named)."""
        return AnswerError(f"{self.source}: line {self.line(k)}: {msg}")

    def ints(self, what: str) -> np.ndarray:
        """Every token as int64; an AnswerError names the first that is not one."""
        tokens = self.tokens
        try:
            return np.fromiter(map(int, tokens), dtype=np.int64, count=len(tokens))
        except (ValueError, OverflowError):
            pass
        for k, t in enumerate(tokens):
            try:
                x = int(t)
            except ValueError:
                raise self.fail(k, f"{_show(t)} is not an integer ({what})") from None
            if not _INT64[0] <= x <= _INT64[1]:
                raise self.fail(k, f"{_show(t)} is out of the int64 range ({what})")
        raise AnswerError(f"{self.source}: cannot read the {what} as integers")

    def rows(self, width: int, what: str) -> np.ndarray:
        """The tokens as an int64 array of ``width`` columns, one row per line.

        An AnswerError names the first line that holds another number of fields.
        """
        lines = self.lines
        if lines.shape[0]:
            begin = np.flatnonzero(np.diff(lines, prepend=-1))
            counts = np.diff(begin, append=lines.shape[0])
            bad = np.flatnonzero(counts != width)
            if bad.size:
                k = int(begin[bad[0]])
                c = int(counts[bad[0]])
                raise self.fail(k, f"{c} field{'s' if c != 1 else ''}, expected {width} ({what})")
        return self.ints(what).reshape(-1, width)


# ---------------------------------------------------------------------------------------
# Writers


def write_npy(instance: CompleteGraph, path: Path) -> None:
    """NumPy ``.npy`` file: the ``n x n`` float32 weight matrix as stored (padded, even ``n``).

    Parameters
    ----------
    instance : CompleteGraph
    path : Path
        Written as given (no ``.npy`` suffix is added).

    Notes
    -----
    ``numpy.save`` format (version 1.0 or 2.0 header), dtype ``<f4``, shape ``(n, n)``,
    C order, no pickled objects: row ``i`` holds the weights of the edges at vertex ``i``;
    symmetric, ``>= 0``, zero diagonal; ``n`` even (an odd input's dummy vertex is the last
    row and column, all zero). The family's reader
    (:func:`~matchbench.families.mwpm.datasets.complete_file`) reads the same matrix back
    from a file named ``*.npy``.
    """
    with open(path, "wb") as f:
        np.save(f, np.ascontiguousarray(instance.weight, dtype=np.float32), allow_pickle=False)


def write_text(instance: CompleteGraph, path: Path) -> None:
    """Dense matrix text: a line ``n``, then ``n`` lines of ``n`` weights (row ``i``: vertex ``i``).

    Parameters
    ----------
    instance : CompleteGraph
    path : Path

    Notes
    -----
    ASCII, ``\\n`` line ends. Line 1: the vertex count ``n`` (even; the padded count,
    the dummy vertex included). Then line ``i + 2`` (``i = 0 .. n - 1``) holds the ``n``
    weights ``w[i, 0] .. w[i, n - 1]`` separated by single spaces, each the stored float32
    written as Python's ``repr`` of its float64 value (exact: reads back as the same
    float32, and as the same float64 the verifier sums); ``w[i, i] = 0.0``.
    """
    w = instance.weight
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write(f"{instance.n}\n")
        for i in range(w.shape[0]):
            f.write(" ".join(map(repr, w[i].astype(np.float64).tolist())))
            f.write("\n")


# ---------------------------------------------------------------------------------------
# Readers


def read_mates(instance: CompleteGraph, data: bytes, source: str) -> PerfectMatching:
    """Mate array: ``n`` integers, the mate of vertex 0, 1, ... of the padded graph.

    Parameters
    ----------
    instance : CompleteGraph
    data : bytes
        The program's output: exactly ``n`` integer tokens (``n`` the padded, even vertex
        count; any layout: one per line or several per line); token ``v`` is the mate of
        vertex ``v``, in ``[0, n)``. Mates must be mutual (``mate[mate[v]] == v``) and no
        vertex its own mate. ``-1`` (unmatched) is read, and the verifier then rejects the
        answer as not perfect. Blank lines and lines starting with ``#`` or ``%`` are
        ignored.
    source : str
        Where ``data`` came from, for the messages.

    Returns
    -------
    PerfectMatching
        ``mate`` int64; it claims nothing more (``converged=False``): the verifier checks
        that it is a perfect matching and computes its weight.

    Raises
    ------
    AnswerError
        Naming ``source`` and the line: binary data, a token that is not an int64
        integer, another number of mates than ``n``, a mate outside ``[-1, n)``, a vertex
        its own mate, or a mate that is not mutual (naming the first such vertex).
    """
    t = _Tokens(data, source)
    n = instance.n
    k = len(t.tokens)
    if k > n:
        raise t.fail(n, f"more than n = {n} mates (one per vertex): mate {n + 1} is here")
    if k < n:
        what = "no mate (empty output)" if not k else f"{k} mate{'s' if k != 1 else ''}"
        raise AnswerError(
            f"{source}: {what}, expected n = {n} (one per vertex of the padded graph)"
        )
    mate = t.ints("mates")
    bad = np.flatnonzero((mate < -1) | (mate >= n))
    if bad.size:
        x = int(bad[0])
        raise t.fail(x, f"mate[{x}] = {int(mate[x])} is neither a vertex in [0, {n}) nor -1")
    matched = np.flatnonzero(mate >= 0)
    own = matched[mate[matched] == matched]
    if own.size:
        x = int(own[0])
        raise t.fail(x, f"vertex {x} is its own mate")
    back = matched[mate[mate[matched]] != matched]
    if back.size:
        x = int(back[0])
        y = int(mate[x])
        raise t.fail(x, f"mate[{x}] = {y} but mate[{y}] = {int(mate[y])} (mates must be mutual)")
    return PerfectMatching(mate=mate)


WRITERS = {"npy": write_npy, "text": write_text}
READERS = {"mates": read_mates}
BATCH_WRITERS: dict[str, Any] = {}
BATCH_READERS: dict[str, Any] = {}
