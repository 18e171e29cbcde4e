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

from matchbench.core.answers import TextAnswer as _Text
from matchbench.core.answers import check_range as _check_range
from matchbench.core.answers import first_repeat as _first_repeat
from matchbench.core.errors import AnswerError
from matchbench.families.smarriage.problem import Preferences, SMatching

__all__ = ["BATCH_READERS", "BATCH_WRITERS", "READERS", "WRITERS"]

#: People whose list lines are written at once.
_CHUNK_PEOPLE = 1 << 14

# ---------------------------------------------------------------------------------------
# Text answers: tokens, their lines, integers


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
