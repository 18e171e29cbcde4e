"""The weighted-matching family's formats for outside programs (:mod:`matchbench.external.formats`).

Writers hand a :class:`~matchbench.graphs.weighted.WeightedGraph` to a program as a Matrix
Market file (``mtx``) or an edge list (``edges``), both for ordinary matching (``b = 1``),
or as an edge list with the capacities (``edges_b``, any ``b``). Readers turn its output
into a :class:`~matchbench.families.wmatch.problem.WMatching`, matched edges (``pairs``) or
a mate array (``mates``).

What the answer claims
----------------------
The verifier certifies what an answer claims (:class:`WMatching`'s ``claim``): the plain
readers (``pairs``, ``mates``) claim ``"greedy"``, the greedy (b-)matching of the global
edge order that every half-approximation of the family must return (Suitor, b-Suitor,
locally dominant: ties broken by that order); the ``*_optimal`` readers (``pairs_optimal``,
``mates_optimal``) claim ``"optimal"``, a maximum weight matching, certified against the
exact optimum the verifier computes (small ``b = 1`` graphs only). An exact program must use
an ``*_optimal`` reader: its answer is rarely the greedy one.

The text the readers take: ASCII, whitespace-separated tokens; blank lines and lines whose
first non-blank character is ``#`` or ``%`` are ignored. Nothing a program prints is
trusted: a token that is not an integer of int64 range, a wrong count, a vertex out of
range, an asymmetric mate array or a NUL byte (binary output) raise
:class:`~matchbench.core.errors.AnswerError` naming the source, the 1-based line and the
defect. Whether the pairs form a valid b-matching of the graph (edges, listed once, within
the capacities) is the verifier's judgement (a ``wrong`` row naming the pair), not the
reader's. Parsing is vectorized (numpy over ``bytes.split``): outputs of millions of lines.
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
from matchbench.families.wmatch.problem import WeightedGraph, WMatching
from matchbench.graphs import mtx

__all__ = ["BATCH_READERS", "BATCH_WRITERS", "READERS", "WRITERS"]

#: Edges per chunk when writing text (bounds the memory of the formatted lines).
_CHUNK = 1 << 20


# ---------------------------------------------------------------------------------------
# Reading text (the same helpers in every family's formats module: families share no code)


# ---------------------------------------------------------------------------------------
# Writers


def _matching_only(instance: WeightedGraph, fmt: str) -> None:
    """Refuse a b-matching instance in a format without capacities."""
    if not instance.is_matching:
        raise ValueError(
            f"wmatch instance {instance.name!r} has capacities b other than 1, which the "
            f"{fmt!r} format cannot carry (a program reading it would solve b = 1); "
            "use input_format 'edges_b'"
        )


def _write_edges(
    path: Path, n: int, u: np.ndarray, v: np.ndarray, w: np.ndarray, b: np.ndarray | None = None
) -> None:
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write(f"{n} {u.shape[0]}\n")
        if b is not None:
            for s in range(0, b.shape[0], _CHUNK):
                f.write("".join(map("{}\n".format, b[s : s + _CHUNK].tolist())))
        for s in range(0, u.shape[0], _CHUNK):
            e = s + _CHUNK
            f.write(
                "".join(
                    map("{} {} {!r}\n".format, u[s:e].tolist(), v[s:e].tolist(), w[s:e].tolist())
                )
            )


def write_mtx(instance: WeightedGraph, path: Path) -> None:
    """Matrix Market ``coordinate real symmetric``: each undirected edge once, lower triangle.

    Parameters
    ----------
    instance : WeightedGraph
        A matching instance (``b = 1`` everywhere).
    path : Path
        Written as given (gzip-compressed when the name ends in ``.gz``).

    Raises
    ------
    ValueError
        For an instance with capacities other than 1 (the file cannot hold them: use
        ``edges_b``).

    Notes
    -----
    The header line ``%%MatrixMarket matrix coordinate real symmetric``, a comment naming
    the instance, the size line ``n n m`` (``m`` undirected edges), then one line
    ``i j w`` per edge with ``i > j`` (the lower triangle), 1-based, ``w > 0`` the float64
    weight in its shortest round-trip decimal form (fast_matrix_market). Isolated vertices
    are there by ``n`` only; there are no diagonal entries. The family's reader
    (:func:`~matchbench.families.wmatch.datasets.graph_mtx`) reads the same graph back.
    """
    _matching_only(instance, "mtx")
    u, v, w = instance.edges()  # u < v
    lower = sp.coo_matrix(
        (w, (v.astype(np.int64), u.astype(np.int64))), shape=(instance.n, instance.n)
    )
    mtx.write(
        path,
        lower,
        field="real",
        symmetry="symmetric",
        comment=f"matchbench wmatch instance {_one_line(instance.name)}",
    )


def write_edges(instance: WeightedGraph, path: Path) -> None:
    """Edge list text: a line ``n m``, then ``u v w`` per undirected edge, 0-based, ``u < v``.

    Parameters
    ----------
    instance : WeightedGraph
        A matching instance (``b = 1`` everywhere).
    path : Path

    Raises
    ------
    ValueError
        For an instance with capacities other than 1 (use ``edges_b``).

    Notes
    -----
    ASCII, ``\\n`` line ends. Line 1: the vertex count ``n`` and the edge count ``m``.
    Then ``m`` lines ``u v w``: each undirected edge once, ``0 <= u < v < n``, in
    increasing order of ``(u, v)``, the weight ``w > 0`` as Python's ``repr`` of the
    float64 (shortest round-trip form, e.g. ``1.0``, ``0.1``, ``2.5e-07``).
    """
    _matching_only(instance, "edges")
    u, v, w = instance.edges()
    _write_edges(Path(os.fspath(path)), instance.n, u, v, w)


def write_edges_b(instance: WeightedGraph, path: Path) -> None:
    """Edge list text with capacities: ``n m``, ``n`` lines ``b(v)``, then ``u v w`` lines.

    Parameters
    ----------
    instance : WeightedGraph
        Any instance (``b = 1`` everywhere where it has no capacities).
    path : Path

    Notes
    -----
    ASCII, ``\\n`` line ends. Line 1: the vertex count ``n`` and the edge count ``m``.
    Lines 2 to ``n + 1``: the capacity ``b(v) >= 0`` of vertex ``v = 0, 1, ..., n - 1``,
    an integer. Then ``m`` lines ``u v w`` as in ``edges``: each undirected edge once,
    0-based, ``u < v``, increasing ``(u, v)``, ``w`` as Python's ``repr`` of the float64.
    """
    u, v, w = instance.edges()
    _write_edges(Path(os.fspath(path)), instance.n, u, v, w, b=instance.capacity)


# ---------------------------------------------------------------------------------------
# Readers


def _read_pairs(instance: WeightedGraph, data: bytes, source: str, claim: str) -> WMatching:
    t = _Tokens(data, source)
    n = instance.n
    if not t.tokens:
        u, v, _ = instance.edges()
        cap = instance.capacity
        if np.any((cap[u] > 0) & (cap[v] > 0)):
            raise AnswerError(f"{source}: no pair (empty output), but the graph has edges to match")
    rows = t.rows(2, "the two ends of a matched edge")
    bad = np.flatnonzero(((rows < 0) | (rows >= n)).any(axis=1))
    if bad.size:
        k = int(bad[0])
        x, y = int(rows[k, 0]), int(rows[k, 1])
        raise t.fail(2 * k, f"pair ({x}, {y}) has a vertex outside [0, {n})")
    return WMatching(u=rows[:, 0].copy(), v=rows[:, 1].copy(), claim=claim)


def _read_mates(instance: WeightedGraph, data: bytes, source: str, claim: str) -> WMatching:
    t = _Tokens(data, source)
    n = instance.n
    k = len(t.tokens)
    if k > n:
        raise t.fail(n, f"more than n = {n} mates (one per vertex): mate {n + 1} is here")
    if k < n:
        what = "no mate (empty output)" if not k else f"{k} mate{'s' if k != 1 else ''}"
        raise AnswerError(f"{source}: {what}, expected n = {n} (one per vertex, -1 unmatched)")
    mate = t.ints("mates")
    bad = np.flatnonzero((mate < -1) | (mate >= n))
    if bad.size:
        x = int(bad[0])
        raise t.fail(x, f"mate[{x}] = {int(mate[x])} is neither -1 nor a vertex in [0, {n})")
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
    return WMatching.from_mate(mate, claim=claim)


def read_pairs(instance: WeightedGraph, data: bytes, source: str) -> WMatching:
    """Matched edges, one line ``u v`` each, 0-based; claims the greedy (b-)matching.

    Parameters
    ----------
    instance : WeightedGraph
    data : bytes
        The program's output: one line per matched edge, exactly two integers ``u v``
        (``0 <= u, v < n``, either orientation, any order of the lines), each matched
        edge once. An empty output is the empty matching, accepted only where no edge
        could be matched (every edge has an endpoint of capacity 0). Blank lines and lines
        starting with ``#`` or ``%`` are ignored.
    source : str
        Where ``data`` came from, for the messages.

    Returns
    -------
    WMatching
        ``claim="greedy"``: the verifier certifies the greedy (b-)matching of the global
        edge order (exact programs: ``pairs_optimal``).

    Raises
    ------
    AnswerError
        Naming ``source`` and the line: binary data, a line without exactly two fields, a
        token that is not an int64 integer, a vertex outside ``[0, n)``, or an empty output
        where edges could be matched.
    """
    return _read_pairs(instance, data, source, "greedy")


def read_pairs_optimal(instance: WeightedGraph, data: bytes, source: str) -> WMatching:
    """Matched edges, one line ``u v`` each, 0-based; claims a maximum weight matching.

    Parameters
    ----------
    instance : WeightedGraph
    data : bytes
        The format of ``pairs``: one line ``u v`` per matched edge, 0-based, either
        orientation, each edge once; an empty output only where no edge could be matched;
        blank lines and ``#``/``%`` lines ignored.
    source : str
        Where ``data`` came from, for the messages.

    Returns
    -------
    WMatching
        ``claim="optimal"``: the verifier certifies a maximum weight matching against the
        exact optimum it computes (``b = 1`` graphs within its size limits; elsewhere the
        answer is not verified).

    Raises
    ------
    AnswerError
        As ``pairs``.
    """
    return _read_pairs(instance, data, source, "optimal")


def read_mates(instance: WeightedGraph, data: bytes, source: str) -> WMatching:
    """Mate array: ``n`` integers, the mate of vertex 0, 1, ... or -1; claims greedy.

    Parameters
    ----------
    instance : WeightedGraph
    data : bytes
        The program's output: exactly ``n`` integer tokens (any layout: one per line or
        several per line); token ``v`` is the mate of vertex ``v`` (``0 <= mate < n``), or
        ``-1`` when ``v`` is unmatched. Mates must be mutual (``mate[mate[v]] == v``) and
        no vertex its own mate. A matching only: one mate per vertex, whatever the
        capacities. Blank lines and lines starting with ``#`` or ``%`` are ignored.
    source : str
        Where ``data`` came from, for the messages.

    Returns
    -------
    WMatching
        The pairs ``(v, mate[v])`` with ``v < mate[v]``, ``claim="greedy"``: the verifier
        certifies the greedy matching of the global edge order (exact programs:
        ``mates_optimal``).

    Raises
    ------
    AnswerError
        Naming ``source`` and the line: binary data, a token that is not an int64
        integer, another number of mates than ``n``, a mate outside ``[-1, n)``, a vertex
        its own mate, or a mate that is not mutual (naming the first such vertex).
    """
    return _read_mates(instance, data, source, "greedy")


def read_mates_optimal(instance: WeightedGraph, data: bytes, source: str) -> WMatching:
    """Mate array: ``n`` integers, the mate of vertex 0, 1, ... or -1; claims optimality.

    Parameters
    ----------
    instance : WeightedGraph
    data : bytes
        The format of ``mates``: exactly ``n`` integers, the mate of each vertex or
        ``-1``, mutual, none its own mate; blank lines and ``#``/``%`` lines ignored.
    source : str
        Where ``data`` came from, for the messages.

    Returns
    -------
    WMatching
        ``claim="optimal"``: the verifier certifies a maximum weight matching against the
        exact optimum it computes (``b = 1`` graphs within its size limits; elsewhere the
        answer is not verified).

    Raises
    ------
    AnswerError
        As ``mates``.
    """
    return _read_mates(instance, data, source, "optimal")


WRITERS = {"mtx": write_mtx, "edges": write_edges, "edges_b": write_edges_b}
READERS = {
    "pairs": read_pairs,
    "pairs_optimal": read_pairs_optimal,
    "mates": read_mates,
    "mates_optimal": read_mates_optimal,
}
BATCH_WRITERS: dict[str, Any] = {}
BATCH_READERS: dict[str, Any] = {}
