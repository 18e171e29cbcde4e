"""The community family's formats for outside programs (:mod:`matchbench.external.formats`).

Writers hand a :class:`~matchbench.families.community.problem.CommunityGraph` to a program
as a Matrix Market file (``mtx``, ``mtx_general``) or an edge list (``edges``); readers turn
its output into a :class:`~matchbench.families.community.problem.Partition` (``membership``,
``membership_1based``, ``pairs``). A program may print any integer labels: the readers renumber them densely
(``0 .. k-1`` in increasing order of the labels printed), as the verifier wants them.

The text the readers take: ASCII, whitespace-separated tokens; blank lines and lines whose
first non-blank character is ``#`` or ``%`` are ignored. Nothing a program prints is
trusted: a token that is not an integer of int64 range, a wrong count, a vertex out of
range or given twice, a NUL byte (binary output) raise
:class:`~matchbench.core.errors.AnswerError` naming the source, the 1-based line and the
defect. Parsing is vectorized (numpy over ``bytes.split``): outputs of millions of lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from matchbench.core.answers import Tokens as _Tokens
from matchbench.core.answers import one_line as _one_line
from matchbench.core.errors import AnswerError
from matchbench.families.community.problem import CommunityGraph, Partition
from matchbench.graphs import mtx

__all__ = ["BATCH_READERS", "BATCH_WRITERS", "READERS", "WRITERS"]

#: Edges per chunk when writing text (bounds the memory of the formatted lines).
_CHUNK = 1 << 20


# ---------------------------------------------------------------------------------------
# Reading text (the same helpers in every family's formats module: families share no code)


def _dense(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered ``0 .. k-1`` in increasing order of the labels."""
    return np.unique(labels, return_inverse=True)[1].astype(np.int64).reshape(-1)


# ---------------------------------------------------------------------------------------
# Writers


def _lower(graph: CommunityGraph) -> sp.coo_matrix:
    u, v, w = graph.edges()  # u < v
    return sp.coo_matrix((w, (v.astype(np.int64), u.astype(np.int64))), shape=(graph.n, graph.n))


def write_mtx(instance: CommunityGraph, path: Path) -> None:
    """Matrix Market ``coordinate real symmetric``: each undirected edge once, lower triangle.

    Parameters
    ----------
    instance : CommunityGraph
    path : Path
        Written as given (gzip-compressed when the name ends in ``.gz``).

    Notes
    -----
    The header line ``%%MatrixMarket matrix coordinate real symmetric``, a comment naming
    the instance, the size line ``n n m`` (``m`` undirected edges), then one line
    ``i j w`` per edge with ``i > j`` (the lower triangle), 1-based, ``w`` the float64
    weight in its shortest round-trip decimal form (fast_matrix_market). Isolated
    vertices are there by ``n`` only; there are no diagonal entries. The family's reader
    (:func:`~matchbench.families.community.datasets.community_mtx`) reads the same graph
    back.
    """
    mtx.write(
        path,
        _lower(instance),
        field="real",
        symmetry="symmetric",
        comment=f"matchbench community instance {_one_line(instance.name)}",
    )


def write_mtx_general(instance: CommunityGraph, path: Path) -> None:
    """Matrix Market ``coordinate real general``: both directions of every edge, 1-based.

    Parameters
    ----------
    instance : CommunityGraph
    path : Path

    Notes
    -----
    As ``mtx`` but with a ``general`` header and ``2 m`` entries: ``i j w`` and ``j i w``
    for every undirected edge ``{i, j}`` (row-major order), for programs that symmetrize
    the matrix themselves or ignore a ``symmetric`` header.
    """
    mtx.write(
        path,
        instance.to_scipy().tocoo(),
        field="real",
        symmetry="general",
        comment=f"matchbench community instance {_one_line(instance.name)}",
    )


def _write_edges(path: Path, n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> None:
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write(f"{n} {u.shape[0]}\n")
        for s in range(0, u.shape[0], _CHUNK):
            e = s + _CHUNK
            f.write(
                "".join(
                    map("{} {} {!r}\n".format, u[s:e].tolist(), v[s:e].tolist(), w[s:e].tolist())
                )
            )


def write_edges(instance: CommunityGraph, path: Path) -> None:
    """Edge list text: a line ``n m``, then ``u v w`` per undirected edge, 0-based, ``u < v``.

    Parameters
    ----------
    instance : CommunityGraph
    path : Path

    Notes
    -----
    ASCII, ``\\n`` line ends. Line 1: the vertex count ``n`` and the edge count ``m``.
    Then ``m`` lines ``u v w``: each undirected edge once, ``0 <= u < v < n``, in
    increasing order of ``(u, v)``, the weight ``w > 0`` as Python's ``repr`` of the
    float64 (shortest round-trip form, e.g. ``1.0``, ``0.1``, ``2.5e-07``).
    """
    u, v, w = instance.edges()
    _write_edges(Path(os.fspath(path)), instance.n, u, v, w)


# ---------------------------------------------------------------------------------------
# Readers


def read_membership(instance: CommunityGraph, data: bytes, source: str) -> Partition:
    """Membership list: ``n`` whitespace-separated integers, the label of vertex 0, 1, ...

    Parameters
    ----------
    instance : CommunityGraph
    data : bytes
        The program's output: exactly ``n`` integer tokens (any layout: one per line or
        several per line); token ``i`` is the community label of vertex ``i``. Labels are
        any int64 integers (negative, sparse, 1-based: all fine), renumbered densely
        ``0 .. k-1`` in increasing order. Blank lines and lines starting with ``#`` or
        ``%`` are ignored.
    source : str
        Where ``data`` came from, for the messages.

    Returns
    -------
    Partition
        ``community`` dense, no hierarchy, no claimed modularity.

    Raises
    ------
    AnswerError
        Naming ``source`` and the line: binary data, a token that is not an int64
        integer, or another number of labels than ``n``.
    """
    return _read_membership(instance, data, source, 0)


def read_membership_1based(instance: CommunityGraph, data: bytes, source: str) -> Partition:
    """Membership list of a 1-based program: ``n + 1`` integers, the first one ignored.

    Parameters
    ----------
    instance : CommunityGraph
    data : bytes
        The program's output: exactly ``n + 1`` integer tokens (any layout); token 0 is a
        placeholder, ignored (the unused slot 0 of a program that numbers the vertices
        ``1 .. n`` as the Matrix Market file does, and prints its whole array), token
        ``i + 1`` the community label of vertex ``i`` (``i + 1`` in the file). Labels are
        any int64 integers, renumbered densely ``0 .. k-1`` in increasing order. Blank
        lines and lines starting with ``#`` or ``%`` are ignored.
    source : str
        Where ``data`` came from, for the messages.

    Returns
    -------
    Partition
        ``community`` dense, no hierarchy, no claimed modularity.

    Raises
    ------
    AnswerError
        As ``membership``, with ``n + 1`` tokens expected.
    """
    return _read_membership(instance, data, source, 1)


def _read_membership(instance: CommunityGraph, data: bytes, source: str, skip: int) -> Partition:
    t = _Tokens(data, source)
    n = instance.n + skip
    slot = " (a placeholder first, then one per vertex)" if skip else " (one per vertex)"
    if len(t.tokens) > n:
        raise t.fail(n, f"more than {n} labels{slot}: label {n + 1} is here")
    if len(t.tokens) < n:
        k = len(t.tokens)
        what = "no label (empty output)" if not k else f"{k} label{'s' if k != 1 else ''}"
        raise AnswerError(f"{source}: {what}, expected {n}{slot}")
    labels = t.ints("community labels")
    return Partition(community=_dense(labels[skip:]))


def read_pairs(instance: CommunityGraph, data: bytes, source: str) -> Partition:
    """Vertex-label pairs: a line ``vertex label`` per vertex, 0-based, each vertex once.

    Parameters
    ----------
    instance : CommunityGraph
    data : bytes
        The program's output: one line per vertex, exactly two integers ``v c``: vertex
        ``0 <= v < n`` is in the community labelled ``c`` (any int64 integer; renumbered
        densely ``0 .. k-1`` in increasing order). Any order of the lines; every vertex
        exactly once. Blank lines and lines starting with ``#`` or ``%`` are ignored.
    source : str
        Where ``data`` came from, for the messages.

    Returns
    -------
    Partition
        ``community`` dense, no hierarchy, no claimed modularity.

    Raises
    ------
    AnswerError
        Naming ``source`` and the line: binary data, a line without exactly two fields, a
        token that is not an int64 integer, a vertex outside ``[0, n)`` or given twice, or
        a vertex missing.
    """
    t = _Tokens(data, source)
    n = instance.n
    if not t.tokens and n:
        raise AnswerError(f"{source}: no line (empty output), expected n = {n} (one per vertex)")
    rows = t.rows(2, "vertex and label")
    vertex, label = rows[:, 0], rows[:, 1]
    bad = np.flatnonzero((vertex < 0) | (vertex >= n))
    if bad.size:
        k = int(bad[0])
        raise t.fail(2 * k, f"vertex {int(vertex[k])} is outside [0, {n})")
    _, first = np.unique(vertex, return_index=True)
    if first.shape[0] < vertex.shape[0]:
        again = np.ones(vertex.shape[0], dtype=np.bool_)
        again[first] = False
        k = int(np.flatnonzero(again)[0])
        raise t.fail(2 * k, f"vertex {int(vertex[k])} is given twice")
    if vertex.shape[0] < n:
        seen = np.zeros(n, dtype=np.bool_)
        seen[vertex] = True
        x = int(np.flatnonzero(~seen)[0])
        raise AnswerError(
            f"{source}: {vertex.shape[0]} vertices, expected n = {n}: vertex {x} is missing"
        )
    community = np.empty(n, dtype=np.int64)
    community[vertex] = _dense(label)
    return Partition(community=community)


WRITERS = {"mtx": write_mtx, "mtx_general": write_mtx_general, "edges": write_edges}
READERS = {
    "membership": read_membership,
    "membership_1based": read_membership_1based,
    "pairs": read_pairs,
}
BATCH_WRITERS: dict[str, Any] = {}
BATCH_READERS: dict[str, Any] = {}
