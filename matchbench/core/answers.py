"""Reading a program's text answers: the tokenizers and checks every family's formats
module uses (:mod:`matchbench.external`), so that a defect in an outside program's output is
named by its line the same way in every family.

Two tokenizers, kept from the families' modules they came from: :class:`TextAnswer`
(lap, mcm, smarriage: ``fail(msg, k)``, ``table``) and :class:`Tokens` (community,
wmatch, mwpm: ``fail(k, msg)``, ``rows``, NUL bytes refused).
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from matchbench.core.errors import AnswerError
from matchbench.core.npy import read_header

__all__ = ["TextAnswer", "Tokens", "check_range", "first_repeat", "npy_ints", "one_line", "show", "shown"]


#: What ``bytes.split()`` splits on (ASCII whitespace).
_WS = np.zeros(256, dtype=bool)
_WS[list(b" \t\n\r\x0b\x0c")] = True


#: The characters of a decimal integer token.
_INT_CHARS = b"0123456789+-"


def shown(token: bytes, limit: int = 40) -> str:
    text = token.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "..."


class TextAnswer:
    """The whitespace-separated tokens of a text answer, blank and comment lines dropped.

    ``tokens[k]`` is on line ``line(k)`` (1-based, of the output as it is).
    """

    def __init__(self, data: bytes, source: str) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise AnswerError(f"{source}: expected bytes, got {type(data).__name__}")
        self.data = bytes(data)
        self.source = source
        self.tokens = self.data.split()
        self._lines: np.ndarray | None = None
        if b"#" in self.data or b"%" in self.data:
            lines, starts = self._token_lines()
            if lines.size:
                first = np.ones(lines.shape[0], dtype=bool)
                first[1:] = lines[1:] != lines[:-1]
                lead = np.frombuffer(self.data, dtype=np.uint8)[starts]
                comment = first & ((lead == ord("#")) | (lead == ord("%")))
                keep = ~comment[first][np.cumsum(first) - 1]
                if not keep.all():
                    self.tokens = list(itertools.compress(self.tokens, keep.tolist()))
                    lines = lines[keep]
            self._lines = lines

    def _token_lines(self) -> tuple[np.ndarray, np.ndarray]:
        """(1-based line, byte offset) of every token of ``data.split()``."""
        b = np.frombuffer(self.data, dtype=np.uint8)
        ws = _WS[b]
        start = ~ws
        start[1:] &= ws[:-1]
        starts = np.flatnonzero(start)
        newlines = np.flatnonzero(b == ord("\n"))
        return np.searchsorted(newlines, starts) + 1, starts

    @property
    def lines(self) -> np.ndarray:
        """The 1-based line of every kept token."""
        if self._lines is None:
            self._lines = self._token_lines()[0]
        return self._lines

    def line(self, k: int) -> int:
        return int(self.lines[k])

    def fail(self, msg: str, k: int | None = None) -> AnswerError:
        """An error naming the source and, for token ``k``, its line."""
        where = self.source if k is None else f"{self.source}, line {self.line(k)}"
        return AnswerError(f"{where}: {msg}")

    def empty(self, expected: str) -> AnswerError:
        what = "empty" if not self.data.strip() else "only comments and blank lines"
        return AnswerError(f"{self.source}: {what}; expected {expected}")

    def ints(self) -> np.ndarray:
        """Every token as int64; a token that is not a decimal int64 is an error."""
        tokens = self.tokens
        if not tokens:
            return np.zeros(0, dtype=np.int64)
        if not b"".join(tokens).translate(None, _INT_CHARS):
            try:
                return np.array(tokens, dtype=np.int64)
            except (ValueError, OverflowError):
                pass
        for k, t in enumerate(tokens):  # the error path: find the first bad token
            if t.translate(None, _INT_CHARS):
                raise self.fail(f"{shown(t)!r} is not an integer", k)
            try:
                v = int(t)
            except ValueError:
                raise self.fail(f"{shown(t)!r} is not an integer", k) from None
            if not -(2**63) <= v < 2**63:
                raise self.fail(f"{shown(t)!r} is out of the int64 range", k)
        raise AssertionError("unreachable: every token converts")

    def table(self, width: int, what: str) -> tuple[np.ndarray, np.ndarray]:
        """``(values, lines)``: every kept line as ``width`` integers, ``(m, width)``.

        A line of another length is an error saying it is not ``what``.
        """
        lines = self.lines
        if lines.size:
            first = np.flatnonzero(np.r_[True, lines[1:] != lines[:-1]])
            lengths = np.diff(np.r_[first, lines.shape[0]])
            bad = np.flatnonzero(lengths != width)
            if bad.size:
                k = int(first[bad[0]])
                text = b" ".join(self.tokens[k : k + int(lengths[bad[0]])])
                raise self.fail(f"{shown(text, 60)!r} is not {what}", k)
        values = self.ints().reshape(-1, width)
        return values, lines[::width]


def check_range(
    text: TextAnswer, values: np.ndarray, lo: int, hi: int, label: Callable[[int], str], offset: int = 0,
    stride: int = 1,
) -> None:
    """Raise for the first ``values[k]`` outside ``[lo, hi)``; ``label(k)`` names it.

    ``values[k]`` is token ``offset + stride * k`` of ``text`` (for its line).
    """
    bad = (values < lo) | (values >= hi)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise text.fail(
            f"{label(k)} {int(values[k])} is outside [{lo}, {hi})", offset + stride * k
        )


def first_repeat(values: np.ndarray) -> tuple[int, int] | None:
    """``(first, second)`` positions of the earliest repeated value (by its second
    occurrence), or None."""
    if values.shape[0] < 2:
        return None
    order = np.argsort(values, kind="stable")
    dup = values[order[1:]] == values[order[:-1]]
    if not dup.any():
        return None
    second = order[1:][dup]
    k = int(np.argmin(second))
    return int(order[:-1][dup][k]), int(second[k])


def npy_ints(data: bytes, source: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    """The integer array of a ``.npy`` file of ``shape``, as int64, checked before it is
    read (a header claiming a huge array allocates nothing)."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise AnswerError(f"{source}: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise AnswerError(f"{source}: empty; expected a .npy file of {what}")
    f = io.BytesIO(data)
    try:
        got, fortran, dtype, offset = read_header(f)
    except Exception as exc:  # noqa: BLE001 - any defect of an untrusted file
        raise AnswerError(f"{source}: not a .npy file of {what} ({exc or type(exc).__name__})") from None
    if dtype.kind not in "iu" or dtype.fields is not None or dtype.subdtype is not None:
        raise AnswerError(f"{source}: a .npy file of dtype {dtype}; expected integers ({what})")
    if tuple(got) != tuple(shape):
        raise AnswerError(f"{source}: a .npy array of shape {tuple(got)}; expected {tuple(shape)} ({what})")
    count = int(np.prod(shape, dtype=np.int64))
    if len(data) - offset < count * dtype.itemsize:
        raise AnswerError(
            f"{source}: truncated .npy file: {len(data) - offset} data bytes for "
            f"{count} values of {dtype.itemsize} bytes"
        )
    a = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    a = a.reshape(shape, order="F" if fortran else "C")
    if dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise AnswerError(f"{source}: value {int(a.max())} is out of the int64 range")
    return np.ascontiguousarray(a, dtype=np.int64)



#: Characters of an offending token quoted in a message.
_SHOW = 40


_SPACE = np.zeros(256, dtype=np.bool_)
_SPACE[list(b" \t\n\r\x0b\x0c")] = True  # what bytes.split() splits on


_INT64 = (-(1 << 63), (1 << 63) - 1)


def show(token: bytes) -> str:
    text = token[:_SHOW].decode("utf-8", "replace")
    return repr(text + ("..." if len(token) > _SHOW else ""))


class Tokens:
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
                raise self.fail(k, f"{show(t)} is not an integer ({what})") from None
            if not _INT64[0] <= x <= _INT64[1]:
                raise self.fail(k, f"{show(t)} is out of the int64 range ({what})")
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


def one_line(text: str) -> str:
    """``text`` on one line (an instance name in a file's comment)."""
    return " ".join(str(text).split())

