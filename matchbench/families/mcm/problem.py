"""Maximum-cardinality bipartite matching (MCM): the family and its König certificate.

The verifier trusts nothing a solver says: it checks the mate arrays against the graph,
then proves maximality with a vertex cover of the same size (König's theorem), built from
an alternating BFS and checked edge by edge over the other CSR direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.problem import Problem, Verification
from matchbench.graphs.bipartite import BipartiteGraph, Matching


@njit(cache=True, nogil=True)
def _first_non_edge(col_ptr, col_ind, col_match):
    """First column j whose mate is not among its neighbours, or -1.

    A linear scan of the matched columns' adjacency (O(m) in total) that does not rely on
    the CSR being sorted.
    """
    for j in range(col_match.shape[0]):
        i = col_match[j]
        if i < 0:
            continue
        found = False
        for p in range(col_ptr[j], col_ptr[j + 1]):
            if col_ind[p] == i:
                found = True
                break
        if not found:
            return j
    return -1


@njit(cache=True, nogil=True)
def _alternating_bfs(col_ptr, col_ind, row_match, col_match):
    """Alternating BFS from all free columns (column -> any row, row -> its mate).

    Returns ``(root, free_row, col_seen, row_seen)``: ``free_row >= 0`` is an unmatched row
    reached from the free column ``root`` (an augmenting path); otherwise ``-1, -1`` and the
    reached sets.
    """
    n_cols = col_match.shape[0]
    n_rows = row_match.shape[0]
    col_seen = np.zeros(n_cols, dtype=np.bool_)
    row_seen = np.zeros(n_rows, dtype=np.bool_)
    root = np.empty(n_cols, dtype=np.int64)
    queue = np.empty(n_cols, dtype=np.int64)
    tail = 0
    for j in range(n_cols):
        if col_match[j] == -1:
            col_seen[j] = True
            root[j] = j
            queue[tail] = j
            tail += 1
    head = 0
    while head < tail:
        j = queue[head]
        head += 1
        for p in range(col_ptr[j], col_ptr[j + 1]):
            i = col_ind[p]
            if row_seen[i]:
                continue
            row_seen[i] = True
            mj = row_match[i]
            if mj == -1:
                return root[j], i, col_seen, row_seen
            if not col_seen[mj]:
                col_seen[mj] = True
                root[mj] = root[j]
                queue[tail] = mj
                tail += 1
    return -1, -1, col_seen, row_seen


@njit(cache=True, nogil=True)
def _first_uncovered_edge(row_ptr, row_ind, row_in_cover, col_in_cover):
    """First edge (i, j) with neither endpoint in the cover, as ``(i, j)``, or ``(-1, -1)``."""
    for i in range(row_ptr.shape[0] - 1):
        if row_in_cover[i]:
            continue
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = row_ind[p]
            if not col_in_cover[j]:
                return i, j
    return -1, -1


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _invalid(reason: str) -> Verification:
    # An invalid answer has no meaningful cardinality.
    return Verification(verified=False, reason=f"invalid: {reason}", objective=float("nan"))


def _check_mates(graph: BipartiteGraph, m: Any) -> str | None:
    """Why ``m`` is not a matching of ``graph``, or None. Names the first offender."""
    if not isinstance(m, Matching):
        return f"expected a Matching, got {type(m).__name__}"
    for label, arr, n, other, n_other in (
        ("row_match", m.row_match, graph.n_rows, "column", graph.n_cols),
        ("col_match", m.col_match, graph.n_cols, "row", graph.n_rows),
    ):
        if not isinstance(arr, np.ndarray):
            return f"{label} is a {type(arr).__name__}, not a numpy array"
        if arr.ndim != 1 or arr.shape[0] != n:
            return f"{label} has shape {arr.shape}, expected ({n},)"
        if not np.issubdtype(arr.dtype, np.integer):
            return f"{label} has dtype {arr.dtype}, expected an integer dtype"
        bad = (arr < -1) | (arr >= n_other)
        if bad.any():
            k = _first(bad)
            return f"{label}[{k}] = {int(arr[k])} is not a {other} index in [-1, {n_other})"
    rm = m.row_match.astype(np.int64, copy=False)
    cm = m.col_match.astype(np.int64, copy=False)
    cols = np.flatnonzero(cm >= 0)
    bad = rm[cm[cols]] != cols
    if bad.any():
        j = int(cols[_first(bad)])
        i = int(cm[j])
        return f"col_match[{j}] = {i} but row_match[{i}] = {int(rm[i])}"
    rows = np.flatnonzero(rm >= 0)
    bad = cm[rm[rows]] != rows
    if bad.any():
        i = int(rows[_first(bad)])
        j = int(rm[i])
        return f"row_match[{i}] = {j} but col_match[{j}] = {int(cm[j])}"
    # Implied by the two consistency checks; kept as its own check so that a bug there
    # cannot let a vertex matched twice through.
    counts = np.bincount(cm[cols], minlength=graph.n_rows)
    if (counts > 1).any():
        i = _first(counts > 1)
        js = cols[cm[cols] == i][:2]
        return f"row {i} is matched to columns {int(js[0])} and {int(js[1])}"
    j = _first_non_edge(graph.col_ptr, graph.col_ind, cm)
    if j >= 0:
        return f"matched pair (row {int(cm[j])}, column {j}) is not an edge"
    return None


def konig_certificate(
    graph: BipartiteGraph, row_match: np.ndarray, col_match: np.ndarray
) -> tuple[int, tuple[int, int] | None, str | None]:
    """König certificate of a *valid* matching.

    Returns ``(cover_size, augmenting, failure)``: ``augmenting = (column, row)`` names the
    ends of an augmenting path when one exists (then ``cover_size`` is -1); ``failure``
    explains a cover that does not check out (a corrupt graph: the two CSR directions
    disagree). When both are None, the cover has ``cover_size`` vertices and covers every
    edge, which proves that no matching has more than ``cover_size`` edges.

    Notes
    -----
    König's theorem (1931): in a bipartite graph the maximum matching size equals the
    minimum vertex cover size. With Z the vertices reached by alternating paths from free
    columns and no free row in Z, C = (columns not in Z) + (rows in Z) is a vertex cover of
    size |M| (e.g. Schrijver, *Combinatorial Optimization*, Thm. 16.2). The cover is built
    from the column CSR and checked over the row CSR.
    """
    root, free_row, col_seen, row_seen = _alternating_bfs(
        graph.col_ptr, graph.col_ind, row_match, col_match
    )
    if free_row >= 0:
        return -1, (int(root), int(free_row)), None
    col_in_cover = ~col_seen
    size = int(np.count_nonzero(col_in_cover)) + int(np.count_nonzero(row_seen))
    i, j = _first_uncovered_edge(graph.row_ptr, graph.row_ind, row_seen, col_in_cover)
    if i >= 0:
        return size, None, f"edge (row {int(i)}, column {int(j)}) is not covered"
    card = int(np.count_nonzero(col_match >= 0))
    if size != card:
        return size, None, f"cover has {size} vertices but the matching {card} edges"
    return size, None, None


#: Entries (vertices and edges of the graphs, vertices of the answers) that
#: :meth:`MCM.verify_batch` concatenates for one compiled call: a few MiB, which stay in
#: cache from the copy to the certificate (larger chunks were slower, not faster).
VERIFY_CHUNK_ENTRIES = 1 << 20


@njit(cache=True, nogil=True)
def _in_range(a, lo, hi):
    """Whether every entry of ``a`` is in ``[lo, hi)``: a min/max reduction, no branch."""
    least, most = lo, hi - 1
    for k in range(a.shape[0]):
        least = min(least, a[k])
        most = max(most, a[k])
    return least >= lo and most < hi


@njit(cache=True, nogil=True)
def _is_matching(row_match, col_match):
    """Whether the mate arrays are in range and consistent, as :func:`_check_mates` asks.

    No vertex is then matched twice: ``col_match[j1] = col_match[j2] = i`` would need
    ``row_match[i]`` to be both ``j1`` and ``j2``.
    """
    n_rows = row_match.shape[0]
    n_cols = col_match.shape[0]
    if not (_in_range(row_match, -1, n_cols) and _in_range(col_match, -1, n_rows)):
        return False
    for j in range(n_cols):
        i = col_match[j]
        if i >= 0 and row_match[i] != j:
            return False
    for i in range(n_rows):
        j = row_match[i]
        if j >= 0 and col_match[j] != i:
            return False
    return True


@njit(cache=True, nogil=True)
def _canonical_csr(ptr, ind, n_other):
    """Whether ``ptr`` starts at 0, never decreases and ends at ``len(ind)``, and every
    entry of ``ind`` is in ``[0, n_other)``: then no loop over it leaves its own graph."""
    n = ptr.shape[0] - 1
    if ptr[0] != 0 or ptr[n] != ind.shape[0]:
        return False
    decreases = False
    for k in range(n):
        decreases |= ptr[k + 1] < ptr[k]
    return not decreases and _in_range(ind, 0, n_other)


@njit(cache=True, nogil=True)
def _no_uncovered_edge(row_ptr, row_ind, row_seen, col_seen):
    """Whether :func:`_first_uncovered_edge` finds no edge outside the cover of the rows
    in ``row_seen`` and the columns not in ``col_seen``, by counting: the row CSR's edges
    to seen columns, less those from seen rows, are those from unseen rows (uncovered).

    The first count is one pass over ``row_ind`` with no branch; the second, only where
    the first is not 0, reads the seen rows alone (a few, for a near-perfect matching).
    """
    to_seen = 0
    for p in range(row_ind.shape[0]):
        to_seen += col_seen[row_ind[p]]
    if to_seen == 0:
        return True
    for i in range(row_ptr.shape[0] - 1):
        if row_seen[i]:
            for p in range(row_ptr[i], row_ptr[i + 1]):
                to_seen -= col_seen[row_ind[p]]
    return to_seen == 0


@njit(cache=True, nogil=True)
def _certify_many(graphs, row_ptr, row_ind, col_ptr, col_ind, answers, row_match, col_match):
    """The certificate of :meth:`MCM.verify` for many answers, all arrays concatenated.

    ``graphs[g]`` is ``(n_rows, n_cols, row_ptr at, row_ind at, row_ind length, col_ptr
    at, col_ind at, col_ind length)`` (offsets into the concatenated arrays), and
    ``answers[k]`` is ``(graph, row_match at, col_match at)``. Returns ``(K, 3)``:
    ``(certified, cardinality, cover size)`` per answer; 0 where the graph is not in
    canonical CSR or the answer is not certified.
    """
    n_graphs = graphs.shape[0]
    canonical = np.zeros(n_graphs, dtype=np.bool_)
    for g in range(n_graphs):
        nr, nc, rpa, ria, rin, cpa, cia, cin = graphs[g]
        canonical[g] = _canonical_csr(
            row_ptr[rpa : rpa + nr + 1], row_ind[ria : ria + rin], nc
        ) and _canonical_csr(col_ptr[cpa : cpa + nc + 1], col_ind[cia : cia + cin], nr)
    out = np.zeros((answers.shape[0], 3), dtype=np.int64)
    for k in range(answers.shape[0]):
        g, rma, cma = answers[k]
        if not canonical[g]:
            continue
        nr, nc, rpa, ria, rin, cpa, cia, cin = graphs[g]
        rp, ri = row_ptr[rpa : rpa + nr + 1], row_ind[ria : ria + rin]
        cp, ci = col_ptr[cpa : cpa + nc + 1], col_ind[cia : cia + cin]
        rm, cm = row_match[rma : rma + nr], col_match[cma : cma + nc]
        # _check_mates, then konig_certificate, step for step
        if not _is_matching(rm, cm) or _first_non_edge(cp, ci, cm) >= 0:
            continue
        _, free_row, col_seen, row_seen = _alternating_bfs(cp, ci, rm, cm)
        if free_row >= 0:
            continue
        # konig_certificate's cover: the columns not seen and the rows seen
        size = (nc - np.count_nonzero(col_seen)) + np.count_nonzero(row_seen)
        card = np.count_nonzero(cm >= 0)
        if not _no_uncovered_edge(rp, ri, row_seen, col_seen) or size != card:
            continue
        out[k, 0] = 1
        out[k, 1] = card
        out[k, 2] = size
    return out


def _bulk_index(a: Any, n: int | None = None) -> bool:
    """Whether :meth:`MCM.verify_batch` takes ``a`` as one of its index arrays: a plain
    1-D ndarray (of length ``n``) of native integers that int64 holds exactly."""
    return (
        type(a) is np.ndarray
        and a.ndim == 1
        and (n is None or a.shape[0] == n)
        and a.dtype.isnative
        and (a.dtype.kind == "i" or (a.dtype.kind == "u" and a.dtype.itemsize < 8))
    )


def _bulk_graph(g: Any) -> tuple[int, int, tuple[np.ndarray, ...]] | None:
    """``(n_rows, n_cols, (row_ptr, row_ind, col_ptr, col_ind))`` of a graph that
    :meth:`MCM.verify_batch` certifies in bulk, or None (then :meth:`MCM.verify`)."""
    if not isinstance(g, BipartiteGraph):
        return None
    nr, nc = g.n_rows, g.n_cols
    for n in (nr, nc):
        if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 0:
            return None
    nr, nc = int(nr), int(nc)
    arrays = (g.row_ptr, g.row_ind, g.col_ptr, g.col_ind)
    if not (
        _bulk_index(arrays[0], nr + 1)
        and _bulk_index(arrays[1])
        and _bulk_index(arrays[2], nc + 1)
        and _bulk_index(arrays[3])
    ):
        return None
    return nr, nc, arrays


class _Chunk:
    """Answers gathered for one call of :func:`_certify_many`: each graph once (an
    instance may come once per repetition), the arrays concatenated at the end into
    buffers kept from chunk to chunk (fresh ones would cost a page fault a page)."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[int, type], np.ndarray] = {}
        self.clear()

    def clear(self) -> None:
        self.slots: dict[int, int] = {}
        self.graphs: list[tuple[int, ...]] = []
        self.csr: tuple[list[np.ndarray], ...] = ([], [], [], [])
        self.at = [0, 0, 0, 0]  # lengths so far of the four concatenated CSR arrays
        self.answers: list[tuple[int, int, int]] = []
        self.mates: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
        self.mates_at = [0, 0]
        self.index: list[int] = []  # the answers' positions in the batch
        self.entries = 0

    def add(
        self, k: int, inst: Any, graph: tuple[int, int, tuple[np.ndarray, ...]], m: Matching
    ) -> None:
        nr, nc, arrays = graph
        slot = self.slots.get(id(inst))
        if slot is None:
            slot = self.slots[id(inst)] = len(self.graphs)
            at = self.at
            self.graphs.append(
                (nr, nc, at[0], at[1], arrays[1].shape[0], at[2], at[3], arrays[3].shape[0])
            )
            for t, a in enumerate(arrays):
                self.csr[t].append(a)
                at[t] += a.shape[0]
            self.entries += sum(a.shape[0] for a in arrays)
        self.answers.append((slot, self.mates_at[0], self.mates_at[1]))
        self.mates[0].append(m.row_match)
        self.mates[1].append(m.col_match)
        self.mates_at[0] += nr
        self.mates_at[1] += nc
        self.index.append(k)
        self.entries += nr + nc

    def _concatenated(
        self, which: int, arrays: list[np.ndarray], n: int, dtype: type
    ) -> np.ndarray:
        buf = self.buffers.get((which, dtype))
        if buf is None or buf.shape[0] < n:
            grown = n if buf is None else max(n, 2 * buf.shape[0])
            buf = self.buffers[(which, dtype)] = np.empty(grown, dtype)
        return np.concatenate(arrays, out=buf[:n], casting="safe")

    def certify(self, out: list[Verification | None]) -> None:
        """Put the verdicts of the answers certified here in ``out``, leave the rest, and
        empty the chunk."""
        if not self.answers:
            return
        # The graphs' CSR in int32 where all of it is (BipartiteGraph's index dtype below
        # 2**31 entries: half the bytes to copy), else int64; the mates in int64.
        small = all(a.dtype == np.int32 for arrays in self.csr for a in arrays)
        csr_dtype = np.int32 if small else np.int64
        res = _certify_many(
            np.array(self.graphs, dtype=np.int64).reshape(-1, 8),
            *(self._concatenated(t, self.csr[t], self.at[t], csr_dtype) for t in range(4)),
            np.array(self.answers, dtype=np.int64).reshape(-1, 3),
            self._concatenated(4, self.mates[0], self.mates_at[0], np.int64),
            self._concatenated(5, self.mates[1], self.mates_at[1], np.int64),
        )
        for k, (ok, card, size) in zip(self.index, res.tolist(), strict=True):
            if ok:
                out[k] = Verification(
                    True, None, float(card), bound=float(size), reference=float(card)
                )
        self.clear()


class MCM(Problem):
    """Maximum-cardinality matching in a bipartite graph (rows x columns).

    An instance is a :class:`~matchbench.graphs.bipartite.BipartiteGraph`, an answer a
    :class:`~matchbench.graphs.bipartite.Matching`; the objective is its cardinality.
    Every solver starts from the cheap matching (:meth:`initialize`).
    """

    name: ClassVar[str] = "mcm"
    objective: ClassVar[str] = "cardinality"
    sense: ClassVar[str] = "max"
    exact: ClassVar[bool] = True
    #: the papers' protocol: the cheap matching on the host (``init=cheap_cpu``)
    default_init: ClassVar[str | None] = "cheap_cpu"

    def initialize(self, instance: BipartiteGraph) -> Matching:
        """The greedy cheap matching, see :func:`matchbench.families.mcm.cheap.cheap_matching`."""
        from matchbench.families.mcm.cheap import cheap_matching

        return cheap_matching(instance)

    def initial_objective(self, init: Matching | None) -> float | None:
        return None if init is None else float(init.cardinality)

    def initial_objectives(self, init: Any) -> Any | None:
        """The cardinality of each initial matching of a stack (a
        :class:`~matchbench.graphs.stack.MatchingStack` that carries them)."""
        card = getattr(init, "cardinality", None)
        return None if card is None else np.asarray(card, dtype=np.float64)

    def warm_up(self) -> None:
        """Load the certificate's numba code (from its cache): that of
        :meth:`verify_batch`, and that of :meth:`verify` for int32 and int64 graphs; and
        that of a batch as one stack (a tiny ``rgg`` stack made, started by the cheap
        matching and certified by :meth:`verify_stack`), which a worker's first batch
        would otherwise load (about half a second)."""
        from matchbench.core.stack import InstanceStack
        from matchbench.families.mcm.cheap import cheap_stack
        from matchbench.graphs.generators import rgg_stack

        graphs = rgg_stack([3, 4], [1, 2], [0.55, 0.55], threads=1)
        init = cheap_stack(graphs, threads=1)
        self.verify_stack(InstanceStack("mcm", graphs, 2, {}, graphs.graph), init)
        g = BipartiteGraph.from_coo(np.array([0, 1, 1]), np.array([0, 0, 1]), 2, 2, name="warm_up")
        for dtype in (np.int32, np.int64):
            graph = BipartiteGraph(
                2, 2, *(a.astype(dtype) for a in (g.row_ptr, g.row_ind, g.col_ptr, g.col_ind))
            )
            self.verify_batch(
                [graph, graph],
                [
                    Matching(np.array([0, 1], dtype=dtype), np.array([0, 1], dtype=dtype)),
                    Matching(np.array([-1, 0], dtype=dtype), np.array([1, -1], dtype=dtype)),
                ],
            )

    def verify_batch(
        self, instances: Sequence[Any], solutions: Sequence[Any]
    ) -> list[Verification]:
        """Certify many answers at once: the verdicts of :meth:`verify`, in a few compiled calls.

        The graphs' CSR arrays (each graph once; int32 where all are, else int64) and the
        answers' mate arrays (int64) are concatenated, chunk by chunk
        (:data:`VERIFY_CHUNK_ENTRIES`), and one compiled function certifies every answer
        of a chunk as :meth:`verify` does: the checks of its mate arrays (in range,
        consistent, every pair an edge of the column CSR), then the König cover of
        :func:`konig_certificate` (the same alternating BFS, the same cover, checked over
        the row CSR, of the size of the matching). An answer it certifies gets the verdict
        :meth:`verify` gives it; every other answer (rejected, or in a form it does not
        take: a graph not a :class:`~matchbench.graphs.bipartite.BipartiteGraph` or not in
        canonical CSR, an answer not a :class:`~matchbench.graphs.bipartite.Matching` of
        plain 1-D integer arrays of the graph's sizes) is certified again by
        :meth:`verify` alone, so that its verdict and reason are exactly those of the
        one-by-one path.

        Parameters
        ----------
        instances : sequence of BipartiteGraph
            An instance may appear several times (one per repetition).
        solutions : sequence of Matching
            ``solutions[k]`` is the answer for ``instances[k]``.

        Returns
        -------
        list of Verification
            In the order of ``solutions``.

        Raises
        ------
        ValueError
            If the two sequences differ in length.

        Notes
        -----
        König's theorem (1931), as in :meth:`verify`: a vertex cover of the matching's
        size proves it maximum (Schrijver, *Combinatorial Optimization*, Thm. 16.2); the
        cover comes from the alternating BFS from all free columns of Hopcroft & Karp
        (1973) and Deveci et al., Euro-Par 2013, Alg. 2. O(n + m) per answer.
        """
        k_all = len(instances)
        if len(solutions) != k_all:
            raise ValueError(f"verify_batch: {k_all} instances but {len(solutions)} answers")
        out: list[Verification | None] = [None] * k_all
        graphs: dict[int, tuple[int, int, tuple[np.ndarray, ...]] | None] = {}
        chunk = _Chunk()
        for k, (inst, sol) in enumerate(zip(instances, solutions, strict=True)):
            if not isinstance(sol, Matching):
                continue
            key = id(inst)
            if key not in graphs:
                graphs[key] = _bulk_graph(inst)
            graph = graphs[key]
            if graph is None:
                continue
            nr, nc, _ = graph
            if not (_bulk_index(sol.row_match, nr) and _bulk_index(sol.col_match, nc)):
                continue
            if chunk.entries >= VERIFY_CHUNK_ENTRIES:
                chunk.certify(out)
            chunk.add(k, inst, graph, sol)
        chunk.certify(out)
        for k in range(k_all):
            if out[k] is None:
                out[k] = self.verify(instances[k], solutions[k])
        return out  # type: ignore[return-value]

    #: :meth:`verify_stack` certifies a whole :class:`~matchbench.graphs.stack.GraphStack`
    stack_certificate: ClassVar[bool] = True

    def verify_stack(self, stack: Any, answers: Any) -> Any:
        """Certify the answers of a whole stack of graphs, on host threads: a
        :class:`~matchbench.core.stack.StackVerdicts` with the verdicts of :meth:`verify`.

        ``stack.data`` is a :class:`~matchbench.graphs.stack.GraphStack`, ``answers`` a
        :class:`~matchbench.graphs.stack.MatchingStack` of its graphs. Each chunk of the
        stack is certified by one call of the compiled loop of :meth:`verify_batch`
        (the mate checks, then the König cover, as :meth:`verify`), on its own thread;
        an answer it does not certify is judged by :meth:`verify` on
        ``stack.instance(k)``, so that its reason is that of the one-by-one path.

        Raises
        ------
        ValueError
            For answers that are not one matching per graph of the stack (offsets other
            than the graphs' sizes, mates not integers): the runner then certifies
            instance by instance.
        """
        from matchbench.core.params import batch_threads
        from matchbench.core.stack import StackVerdicts
        from matchbench.graphs.stack import map_chunks

        graphs = stack.data
        count = len(graphs)
        ro, co = graphs.row_offsets(), graphs.col_offsets()
        rm, cm = answers.row_match, answers.col_match
        if not (np.array_equal(answers.row_offsets, ro) and np.array_equal(answers.col_offsets, co)):
            raise ValueError("verify_stack: the answers' offsets are not the graphs' sizes")
        if not (_bulk_index(rm, int(ro[-1])) and _bulk_index(cm, int(co[-1]))):
            raise ValueError("verify_stack: the answers' mates are not native integer arrays "
                             "of the stack's rows and columns")
        res = np.zeros((count, 3), dtype=np.int64)

        def one(c: Any) -> None:
            sl = slice(c.first, c.first + len(c))
            answers_table = np.empty((len(c), 3), dtype=np.int64)
            answers_table[:, 0] = np.arange(len(c))
            answers_table[:, 1] = ro[sl]
            answers_table[:, 2] = co[sl]
            res[sl] = _certify_many(c.table, c.buf, c.buf, c.buf, c.buf, answers_table, rm, cm)

        map_chunks(one, graphs.chunks, batch_threads())
        out = StackVerdicts.empty(count)
        ok = res[:, 0] == 1
        out.verified[:] = ok
        out.objective[ok] = res[ok, 1]
        out.bound[ok] = res[ok, 2]
        out.reference[ok] = res[ok, 1]
        for k in np.flatnonzero(~ok).tolist():
            out.set(k, self.verify(stack.instance(k), answers.matching(k)))
        return out

    def verify(self, instance: BipartiteGraph, solution: Any) -> Verification:
        """Certify that ``solution`` is a maximum matching of ``instance``.

        Parameters
        ----------
        instance : BipartiteGraph
        solution : Matching
            Mate arrays, -1 for unmatched vertices; any integer dtype.

        Returns
        -------
        Verification
            ``verified`` only if the mate arrays are a matching of the graph (sane shapes
            and dtypes, indices in range, both arrays consistent, no vertex matched twice,
            every pair an edge) and a vertex cover of the same size exists (König).
            ``objective`` is the recomputed cardinality (NaN for an invalid answer),
            ``bound`` the cover size, ``reference`` the maximum cardinality. For a valid
            but not maximum answer, ``reference`` is the maximum reached by augmenting the
            answer with Hopcroft-Karp (itself certified) and ``reason`` names the ends of
            an augmenting path.

        Notes
        -----
        König's theorem; the certificate is that of :func:`konig_certificate`. The
        alternating BFS is the one of Hopcroft & Karp (1973) and of Deveci et al.,
        Euro-Par 2013, Alg. 2 (from all free columns), run to completion. O(n + m).
        """
        why = _check_mates(instance, solution)
        if why is not None:
            return _invalid(why)
        rm = solution.row_match.astype(np.int64, copy=False)
        cm = solution.col_match.astype(np.int64, copy=False)
        card = int(np.count_nonzero(cm >= 0))
        size, augmenting, failure = konig_certificate(instance, rm, cm)
        if failure is not None:
            return Verification(False, f"no certificate: {failure}", float(card))
        if augmenting is None:
            return Verification(True, None, float(card), bound=float(size), reference=float(card))
        col, row = augmenting
        best, best_size, best_failure = self._maximum_from(instance, rm, cm)
        if best_failure is not None:
            return Verification(
                False,
                f"not maximum: augmenting path from column {col} to row {row} "
                f"(maximum unknown: {best_failure})",
                float(card),
            )
        return Verification(
            False,
            f"not maximum: augmenting path from column {col} to row {row} "
            f"(maximum is {best}, got {card})",
            float(card),
            bound=float(best_size),
            reference=float(best),
        )

    @staticmethod
    def _maximum_from(
        graph: BipartiteGraph, row_match: np.ndarray, col_match: np.ndarray
    ) -> tuple[int, int, str | None]:
        """Augment a valid matching to maximum with Hopcroft-Karp and certify the result."""
        from matchbench.families.mcm.ref_numba import hopcroft_karp_kernel

        # In the graph's index dtype, as the solvers call it: one compiled signature.
        dtype = graph.col_ind.dtype
        rm = row_match.astype(dtype, copy=True)
        cm = col_match.astype(dtype, copy=True)
        hopcroft_karp_kernel(graph.col_ptr, graph.col_ind, rm, cm)
        why = _check_mates(graph, Matching(rm, cm))
        if why is not None:
            return -1, -1, f"Hopcroft-Karp returned an invalid matching: {why}"
        size, augmenting, failure = konig_certificate(graph, rm, cm)
        if augmenting is not None:
            return -1, -1, "Hopcroft-Karp stopped with an augmenting path left"
        if failure is not None:
            return -1, -1, failure
        return int(np.count_nonzero(cm >= 0)), size, None
