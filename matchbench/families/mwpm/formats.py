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

from matchbench.core.answers import Tokens as _Tokens
from matchbench.core.errors import AnswerError
from matchbench.families.mwpm.problem import CompleteGraph, PerfectMatching

__all__ = ["BATCH_READERS", "BATCH_WRITERS", "READERS", "WRITERS"]


# ---------------------------------------------------------------------------------------
# Reading text (the same helpers in every family's formats module: families share no code)


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
