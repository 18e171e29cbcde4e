"""Many bipartite graphs as a few arrays: the graphs of a batch, without an object each.

A :class:`GraphStack` holds the graphs of a batch (``run.batch``) as they come out of a
bulk generator: in :class:`StackChunk`\\ s of consecutive graphs, each one ``int32``
buffer that holds every graph's four CSR arrays (``row_ptr``, ``row_ind``, ``col_ptr``,
``col_ind``, local indices) and a table of where they lie. A chunk is also the unit that
host threads work on (the initializer, the certificate), and the table is the
``graphs`` argument of the MCM certificate's compiled loop, so no array is copied
between the generator, the initializer, the solver's upload and the certificate.

:meth:`GraphStack.graph` gives graph ``k`` as the
:class:`~matchbench.graphs.bipartite.BipartiteGraph` its generator gives alone (views of
the buffer), for what needs one object: a rejected answer judged again one by one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from matchbench.graphs.bipartite import BipartiteGraph, Matching

__all__ = ["TABLE", "GraphStack", "MatchingStack", "StackChunk", "chunk_of", "even_spans", "map_chunks"]

#: Columns of a chunk's ``table`` (int64): sizes, then where each CSR array lies in the
#: chunk's buffer (``*_AT``) and the two index arrays' lengths.
TABLE = ("N_ROWS", "N_COLS", "ROW_PTR_AT", "ROW_IND_AT", "ROW_IND_LEN", "COL_PTR_AT",
         "COL_IND_AT", "COL_IND_LEN")

T = TypeVar("T")


@dataclass
class StackChunk:
    """Consecutive graphs ``first .. first + len(table) - 1`` of a :class:`GraphStack`.

    ``buf`` (int32) holds each graph's ``row_ptr``, ``row_ind``, ``col_ptr`` and
    ``col_ind``; ``table`` (``(graphs, 8)`` int64, columns :data:`TABLE`) says where.
    """

    first: int
    buf: np.ndarray
    table: np.ndarray

    def __len__(self) -> int:
        return int(self.table.shape[0])


@dataclass
class GraphStack:
    """The graphs of a batch as :class:`StackChunk`\\ s, in batch order.

    Attributes
    ----------
    chunks : list of StackChunk
        Consecutive, covering graphs ``0 .. count - 1``.
    names, families : sequence of str
        Each graph's ``name`` and ``family`` (what its generator gives it).
    params : callable
        ``params(k)``: graph ``k``'s ``params`` dict.
    shapes : ndarray of int64, shape (count, 2)
        ``(n_rows, n_cols)``.
    n_edges : ndarray of int64, shape (count,)
    """

    chunks: list[StackChunk]
    names: Sequence[str]
    families: Sequence[str]
    params: Callable[[int], dict[str, Any]]
    shapes: np.ndarray = field(init=False)
    n_edges: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        tables = [c.table for c in self.chunks]
        table = np.concatenate(tables) if tables else np.zeros((0, 8), np.int64)
        self.shapes = np.ascontiguousarray(table[:, :2])
        self.n_edges = table[:, 4].copy()
        at = 0
        for c in self.chunks:
            if c.first != at:
                raise ValueError(f"GraphStack: a chunk starts at graph {c.first}, not {at}")
            at += len(c)

    def __len__(self) -> int:
        return int(self.shapes.shape[0])

    @property
    def nbytes(self) -> np.ndarray:
        """Each graph's bytes in both CSR directions (``BipartiteGraph.nbytes``)."""
        return 4 * (self.shapes.sum(axis=1) + 2 + 2 * self.n_edges)

    def row_offsets(self) -> np.ndarray:
        """Where graph ``k``'s rows start in arrays of all graphs' rows (``count + 1``)."""
        return np.concatenate([[0], np.cumsum(self.shapes[:, 0])]).astype(np.int64)

    def col_offsets(self) -> np.ndarray:
        """Where graph ``k``'s columns start in arrays of all graphs' columns (``count + 1``)."""
        return np.concatenate([[0], np.cumsum(self.shapes[:, 1])]).astype(np.int64)

    def chunk(self, k: int) -> tuple[StackChunk, int]:
        """The chunk that holds graph ``k``, and ``k``'s row in its table."""
        lo, hi = 0, len(self.chunks)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.chunks[mid].first <= k:
                lo = mid
            else:
                hi = mid
        c = self.chunks[lo]
        if not 0 <= k - c.first < len(c):
            raise IndexError(f"graph {k} of a stack of {len(self)}")
        return c, k - c.first

    def graph(self, k: int) -> BipartiteGraph:
        """Graph ``k`` as a :class:`BipartiteGraph` whose arrays are views of the buffer."""
        c, r = self.chunk(k)
        nr, nc, rp, ri, rl, cp, ci, cl = (int(v) for v in c.table[r])
        b = c.buf
        return BipartiteGraph(
            n_rows=nr, n_cols=nc,
            row_ptr=b[rp : rp + nr + 1], row_ind=b[ri : ri + rl],
            col_ptr=b[cp : cp + nc + 1], col_ind=b[ci : ci + cl],
            name=self.names[k], family=self.families[k], params=self.params(k),
        )


def chunk_of(first: int, graphs: Sequence[BipartiteGraph], empty: Callable[..., np.ndarray] = np.empty
             ) -> StackChunk:
    """A chunk of ``graphs`` (int32 CSR, or fitting it) copied into one buffer (made by
    ``empty(size, dtype)``)."""
    table = np.zeros((len(graphs), 8), dtype=np.int64)
    parts: list[np.ndarray] = []
    at = 0
    for q, g in enumerate(graphs):
        arrays = (g.row_ptr, g.row_ind, g.col_ptr, g.col_ind)
        starts = []
        for a in arrays:
            starts.append(at)
            parts.append(np.asarray(a))
            at += int(a.shape[0])
        table[q] = (g.n_rows, g.n_cols, starts[0], starts[1], g.row_ind.shape[0], starts[2],
                    starts[3], g.col_ind.shape[0])
    buf = empty(at, dtype=np.int32)
    at = 0
    for a in parts:
        if a.dtype != np.int32 and a.size and int(a.max()) > np.iinfo(np.int32).max:
            raise ValueError("chunk_of: a graph's arrays do not fit int32")
        buf[at : at + a.shape[0]] = a
        at += a.shape[0]
    return StackChunk(first, buf, table)


def even_spans(weights: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """``(lo, hi)`` ranges of consecutive items, at most ``parts`` of them, of about equal
    total ``weights``: cut where the running sum passes ``i / parts`` of the whole.

    >>> even_spans(np.array([1, 1, 1, 1, 4]), 2)
    [(0, 4), (4, 5)]
    """
    count = int(weights.shape[0])
    if count == 0:
        return []
    ends = np.cumsum(weights)
    at = np.searchsorted(ends, np.arange(1, max(1, parts)) * (float(ends[-1]) / max(1, parts)), side="left") + 1
    cuts = sorted({0, count, *(int(c) for c in at if 0 < c < count)})
    return list(zip(cuts[:-1], cuts[1:], strict=True))


#: The host threads of :func:`map_chunks`, made once per process and kept (a pool of 16
#: threads costs about a millisecond to start, paid three times per batch otherwise).
_POOL: list[Any] = [None, 0]
_POOL_LOCK = threading.Lock()


def map_chunks(fn: Callable[[Any], T], chunks: Sequence[Any], threads: int) -> list[T]:
    """``[fn(c) for c in chunks]``, on up to ``threads`` host threads (``fn`` compiled
    code that releases the GIL), in order; the first exception is raised here."""
    if threads <= 1 or len(chunks) <= 1:
        return [fn(c) for c in chunks]
    with _POOL_LOCK:
        if _POOL[0] is None or _POOL[1] < threads:
            if _POOL[0] is not None:
                _POOL[0].shutdown(wait=False)
            _POOL[0], _POOL[1] = ThreadPoolExecutor(threads, thread_name_prefix="matchbench-stack"), threads
        pool = _POOL[0]
    if threads >= _POOL[1]:
        return list(pool.map(fn, chunks))
    # fewer threads than the pool has: ``threads`` workers, each taking chunks in turn
    it = iter(enumerate(chunks))
    lock = threading.Lock()
    out: list[Any] = [None] * len(chunks)

    def worker() -> None:
        while True:
            with lock:
                nxt = next(it, None)
            if nxt is None:
                return
            out[nxt[0]] = fn(nxt[1])

    for f in [pool.submit(worker) for _ in range(threads)]:
        f.result()
    return out


@dataclass
class MatchingStack:
    """Matchings of a :class:`GraphStack`'s graphs as two concatenated mate arrays.

    Graph ``k``'s rows' mates are ``row_match[row_offsets[k]:row_offsets[k + 1]]`` (local
    column indices, -1 unmatched), its columns' ``col_match[col_offsets[k]:col_offsets[k
    + 1]]``; host (NumPy) arrays. ``cardinality`` (int64, per graph) where known.
    """

    row_match: np.ndarray
    col_match: np.ndarray
    row_offsets: np.ndarray
    col_offsets: np.ndarray
    cardinality: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.row_offsets.shape[0]) - 1

    def matching(self, k: int) -> Matching:
        """Graph ``k``'s :class:`~matchbench.graphs.bipartite.Matching` (copies)."""
        r0, r1 = int(self.row_offsets[k]), int(self.row_offsets[k + 1])
        c0, c1 = int(self.col_offsets[k]), int(self.col_offsets[k + 1])
        return Matching(self.row_match[r0:r1].copy(), self.col_match[c0:c1].copy())
