"""The stable-marriage family's formats for outside programs (:mod:`matchbench.external.formats`).

The writer hands a :class:`~matchbench.families.smarriage.problem.Preferences` to a
program as the text format that
:func:`~matchbench.families.smarriage.datasets.prefs_file` reads (``prefs``). Readers turn
what the program prints into an :class:`~matchbench.families.smarriage.problem.SMatching`
(no proposal count): every man's wife (``wife``) or the married pairs (``pairs``).

Text answers: integers in decimal, separated by any whitespace; blank lines and lines
whose first non-blank character is ``#`` or ``%`` are ignored (``\\r\\n`` line ends are
fine). A reader trusts nothing: every defect (no answer, a token that is not an integer,
a wrong count, an id out of range, a man in two pairs) is an
:class:`~matchbench.core.errors.AnswerError` naming the output, the line (1-based,
comments counted) and the defect. Whether the pairs are mutually listed, stable and
man-optimal, or a woman has two husbands, is the verifier's to judge.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from matchbench.core.errors import AnswerError
from matchbench.families.smarriage.problem import Preferences, SMatching

__all__ = ["BATCH_READERS", "BATCH_WRITERS", "READERS", "WRITERS"]

#: People whose list lines are written at once.
_CHUNK_PEOPLE = 1 << 14

# ---------------------------------------------------------------------------------------
# Text answers: tokens, their lines, integers

#: What ``bytes.split()`` splits on (ASCII whitespace).
_WS = np.zeros(256, dtype=bool)
_WS[list(b" \t\n\r\x0b\x0c")] = True
#: The characters of a decimal integer token.
_INT_CHARS = b"0123456789+-"


def _shown(token: bytes, limit: int = 40) -> str:
    text = token.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + "..."


class _Text:
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
                raise self.fail(f"{_shown(t)!r} is not an integer", k)
            try:
                v = int(t)
            except ValueError:
                raise self.fail(f"{_shown(t)!r} is not an integer", k) from None
            if not -(2**63) <= v < 2**63:
                raise self.fail(f"{_shown(t)!r} is out of the int64 range", k)
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
                raise self.fail(f"{_shown(text, 60)!r} is not {what}", k)
        values = self.ints().reshape(-1, width)
        return values, lines[::width]


def _check_range(
    text: _Text, values: np.ndarray, lo: int, hi: int, label: Callable[[int], str], offset: int = 0,
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


def _first_repeat(values: np.ndarray) -> tuple[int, int] | None:
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


# ---------------------------------------------------------------------------------------
# Writers


def _list_lines(ptr: np.ndarray, lst: np.ndarray, lo: int, hi: int) -> str:
    """The list lines of people ``lo .. hi-1`` of a CSR (``\\n``-terminated)."""
    base, top = int(ptr[lo]), int(ptr[hi])
    words = list(map(str, lst[base:top].tolist()))
    cut = (ptr[lo : hi + 1].astype(np.int64) - base).tolist()
    return "".join(" ".join(words[a:b]) + "\n" for a, b in itertools.pairwise(cut))


def write_prefs(instance: Preferences, path: Path) -> None:
    """Text preference lists as prefs_file reads them: "n_men n_women", then one list per line.

    The first line is ``n_men n_women``. Then ``n_men`` lines, line ``m`` man ``m``'s
    list of women, best first, 0-based ids separated by one space (an empty list is an
    empty line); then ``n_women`` lines, the women's lists of men alike. Every line ends
    with ``\\n``; no comments. These are the lists after purging (``m`` lists ``w``
    exactly when ``w`` lists ``m``); a master-list instance (every man with the same
    list, every woman with the same list) is written as its ``n`` identical lines per
    side. :func:`~matchbench.families.smarriage.datasets.prefs_file` reads the file back
    as the same instance.
    """
    n_men, n_women = instance.n_men, instance.n_women
    with open(path, "wb") as f:
        f.write(f"{n_men} {n_women}\n".encode())
        if instance.master:
            for lst, count in ((instance.mlist, n_men), (instance.wlist, n_women)):
                line = (" ".join(map(str, lst.tolist())) + "\n").encode()
                for lo in range(0, count, _CHUNK_PEOPLE):
                    f.write(line * (min(count, lo + _CHUNK_PEOPLE) - lo))
            return
        for ptr, lst, count in (
            (instance.mptr, instance.mlist, n_men),
            (instance.wptr, instance.wlist, n_women),
        ):
            for lo in range(0, count, _CHUNK_PEOPLE):
                f.write(_list_lines(ptr, lst, lo, min(count, lo + _CHUNK_PEOPLE)).encode())


# ---------------------------------------------------------------------------------------
# Readers


def read_wife(instance: Preferences, data: bytes, source: str) -> SMatching:
    """Text: n_men integers, man m's wife (0-based woman), or -1 if he is single.

    Exactly ``n_men`` integers separated by any whitespace (one per line or several on a
    line); the ``m``-th is man ``m``'s wife, a woman in ``0..n_women-1``, or ``-1``.
    Blank lines and lines starting with ``#`` or ``%`` are ignored.

    Raises
    ------
    AnswerError
        For no integers, a token that is not an integer, more or fewer than ``n_men``
        integers, or a wife outside ``[-1, n_women)``. A woman given to two men is read
        as it is (the verifier rejects it).
    """
    text = _Text(data, source)
    n = instance.n_men
    if not text.tokens and n:
        raise text.empty(f"{n} integers (one wife per man)")
    wife = text.ints()
    if wife.shape[0] != n:
        extra = f"; the first extra one is on line {text.line(n)}" if wife.shape[0] > n else ""
        raise AnswerError(f"{source}: {wife.shape[0]} integers, expected {n} (one wife per man){extra}")
    _check_range(text, wife, -1, instance.n_women, lambda k: f"man {k}'s wife")
    return SMatching(wife=wife)


def read_pairs(instance: Preferences, data: bytes, source: str) -> SMatching:
    """Text: one line 'm w' (0-based man, woman) per married couple; unlisted men single.

    Each line holds exactly two integers: a man in ``0..n_men-1`` and a woman in
    ``0..n_women-1``; any order of lines. Men not listed are single. Blank lines and
    lines starting with ``#`` or ``%`` are ignored; an output without any character is
    an error (a program that printed nothing did not answer): for an answer without
    couples print a comment line such as ``# no pairs``.

    Raises
    ------
    AnswerError
        For an empty output, a line that is not two integers, an id out of range, or a
        man in two lines (naming both). A woman in two lines is read as it is (the
        verifier rejects it).
    """
    text = _Text(data, source)
    if not text.data.strip() and instance.n_men:
        raise text.empty("lines 'man woman' (a comment line for no couples)")
    pairs, lines = text.table(2, "two integers 'man woman'")
    men, women = pairs[:, 0], pairs[:, 1]
    _check_range(text, men, 0, instance.n_men, lambda k: "man", 0, 2)
    _check_range(text, women, 0, instance.n_women, lambda k: "woman", 1, 2)
    rep = _first_repeat(men)
    if rep is not None:
        a, b = rep
        raise AnswerError(
            f"{source}, line {int(lines[b])}: man {int(men[b])} is married twice "
            f"(lines {int(lines[a])} and {int(lines[b])})"
        )
    wife = np.full(instance.n_men, -1, dtype=np.int64)
    wife[men] = women
    return SMatching(wife=wife)


WRITERS: dict[str, Callable[[Any, Path], None]] = {"prefs": write_prefs}
READERS: dict[str, Callable[[Any, bytes, str], Any]] = {
    "wife": read_wife,
    "pairs": read_pairs,
}
BATCH_WRITERS: dict[str, Callable[[list, Path], None]] = {}
BATCH_READERS: dict[str, Callable[[list, bytes, str], list]] = {}
