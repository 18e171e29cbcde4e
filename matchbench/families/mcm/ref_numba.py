"""Sequential MCM references compiled with numba: Hopcroft-Karp, Pothen-Fan+, push-relabel.

All three start from the shared initial matching (the cheap matching, see
:mod:`matchbench.families.mcm.cheap`) and augment it to a maximum matching. They are the
CPU baselines the GPU algorithms are compared with (Deveci et al., Euro-Par 2013, Sec. 4
compare against sequential HK and PFP; Deveci et al., G-PR, compare against PR).

Conventions of the kernels: ``col_ptr``/``col_ind`` is the column -> row CSR,
``row_ptr``/``row_ind`` the row -> column CSR, ``row_match[i]`` the column matched to row
``i`` and ``col_match[j]`` the row matched to column ``j`` (-1: unmatched). Kernels update
the mate arrays in place and return their counters.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.params import finite_float
from matchbench.core.solver import BaseSolver
from matchbench.graphs.bipartite import BipartiteGraph, Matching

# ---------------------------------------------------------------------------------------
# Hopcroft-Karp
# ---------------------------------------------------------------------------------------


@njit(cache=True)
def _augment_stack(stack, top, free_row, row_match, col_match):
    # stack[l + 1] was entered through the row currently matched to it, so walking the stack
    # downwards and passing each column's old mate on to its predecessor flips the path.
    r = free_row
    for lev in range(top, -1, -1):
        c = stack[lev]
        prev = col_match[c]
        col_match[c] = r
        row_match[r] = c
        r = prev


@njit(cache=True)
def hopcroft_karp_kernel(col_ptr, col_ind, row_match, col_match):
    """Augment ``row_match``/``col_match`` in place to a maximum matching.

    Returns ``(phases, augmentations)``.
    """
    n_cols = col_ptr.shape[0] - 1
    dist = np.empty(n_cols, dtype=np.int64)
    queue = np.empty(n_cols, dtype=np.int64)
    ptr = np.empty(n_cols, dtype=np.int64)
    stack = np.empty(n_cols, dtype=np.int64)
    phases = 0
    augmentations = 0
    while True:
        # BFS layers from all free columns; the last layer is the first one adjacent to a
        # free row, so that only shortest augmenting paths are followed.
        tail = 0
        for c in range(n_cols):
            if col_match[c] == -1 and col_ptr[c] < col_ptr[c + 1]:
                dist[c] = 0
                queue[tail] = c
                tail += 1
            else:
                dist[c] = -1
        n_roots = tail
        last = -1
        head = 0
        while head < tail:
            c = queue[head]
            head += 1
            if last >= 0 and dist[c] > last:
                break
            for p in range(col_ptr[c], col_ptr[c + 1]):
                mc = row_match[col_ind[p]]
                if mc == -1:
                    last = dist[c]
                elif dist[mc] == -1:
                    dist[mc] = dist[c] + 1
                    queue[tail] = mc
                    tail += 1
        if last < 0:
            break
        phases += 1
        for c in range(n_cols):
            ptr[c] = col_ptr[c]
        # Vertex-disjoint shortest augmenting paths by DFS in the layered graph; a column
        # whose adjacency is exhausted is dead for the rest of the phase.
        for k in range(n_roots):
            root = queue[k]
            stack[0] = root
            top = 0
            while top >= 0:
                c = stack[top]
                end = col_ptr[c + 1]
                moved = False
                augmented = False
                while ptr[c] < end:
                    r = col_ind[ptr[c]]
                    ptr[c] += 1
                    mc = row_match[r]
                    if mc == -1:
                        if dist[c] == last:
                            _augment_stack(stack, top, r, row_match, col_match)
                            augmentations += 1
                            # The path's columns leave the layered graph, so that the
                            # phase's paths stay vertex-disjoint (its rows are reachable
                            # only through their mates, which are these columns).
                            for lev in range(top + 1):
                                dist[stack[lev]] = -1
                            augmented = True
                            break
                    elif dist[mc] == dist[c] + 1 and dist[mc] <= last:
                        top += 1
                        stack[top] = mc
                        moved = True
                        break
                if augmented:
                    break
                if not moved:
                    dist[c] = -1
                    top -= 1
    return phases, augmentations


# ---------------------------------------------------------------------------------------
# Pothen-Fan with lookahead and fairness (PF+)
# ---------------------------------------------------------------------------------------


@njit(cache=True)
def pothen_fan_plus_kernel(col_ptr, col_ind, row_match, col_match):
    """Augment ``row_match``/``col_match`` in place to a maximum matching.

    Returns ``(phases, augmentations, columns_visited, dead_columns)``.
    """
    n_cols = col_ptr.shape[0] - 1
    n_rows = row_match.shape[0]
    # visited[r] == phase: r is in this phase's search forest; -1: r is in a failed
    # alternating tree, which no later augmenting path can enter (the trees are closed
    # under alternation and augmentations outside them leave them unchanged).
    visited = np.zeros(n_rows, dtype=np.int64)
    stack = np.empty(n_cols, dtype=np.int64)
    ptr = np.empty(n_cols, dtype=np.int64)
    lookahead = np.empty(n_cols, dtype=np.int64)
    popped = np.empty(n_cols, dtype=np.int64)
    unmatched = np.empty(n_cols, dtype=np.int64)
    n_unmatched = 0
    for c in range(n_cols):
        lookahead[c] = col_ptr[c]
        if col_match[c] == -1 and col_ptr[c] < col_ptr[c + 1]:
            unmatched[n_unmatched] = c
            n_unmatched += 1
    phases = 0
    augmentations = 0
    columns_visited = 0
    dead_columns = 0
    forward = True
    while n_unmatched > 0:
        phases += 1
        phase = phases
        any_augmented = False
        n_next = 0
        for k in range(n_unmatched):
            root = unmatched[k]
            stack[0] = root
            top = 0
            ptr[root] = col_ptr[root] if forward else col_ptr[root + 1] - 1
            n_popped = 0
            found = False
            while top >= 0:
                c = stack[top]
                start = col_ptr[c]
                end = col_ptr[c + 1]
                # Lookahead: rows stay matched once matched, so each adjacency entry is
                # scanned for a free row at most once over the whole run.
                p = lookahead[c]
                while p < end and row_match[col_ind[p]] != -1:
                    p += 1
                lookahead[c] = p + 1 if p < end else end
                if p < end:
                    r = col_ind[p]
                    visited[r] = phase
                    _augment_stack(stack, top, r, row_match, col_match)
                    augmentations += 1
                    found = True
                    break
                # Every row adjacent to c is matched: descend through an unvisited one,
                # scanning in this phase's direction (fairness).
                nxt = -1
                if forward:
                    p = ptr[c]
                    while p < end:
                        v = visited[col_ind[p]]
                        if v != phase and v != -1:
                            break
                        p += 1
                    ptr[c] = p + 1
                    if p < end:
                        nxt = col_ind[p]
                else:
                    p = ptr[c]
                    while p >= start:
                        v = visited[col_ind[p]]
                        if v != phase and v != -1:
                            break
                        p -= 1
                    ptr[c] = p - 1
                    if p >= start:
                        nxt = col_ind[p]
                if nxt == -1:
                    popped[n_popped] = c
                    n_popped += 1
                    top -= 1
                    continue
                visited[nxt] = phase
                c2 = row_match[nxt]
                top += 1
                stack[top] = c2
                columns_visited += 1
                ptr[c2] = col_ptr[c2] if forward else col_ptr[c2 + 1] - 1
            if found:
                any_augmented = True
            elif not any_augmented:
                # No augmentation yet in this phase: every row this search skipped lies in
                # an earlier failed tree, so the search was exhaustive and root is
                # unmatchable for good; its tree is dead.
                dead_columns += 1
                for q in range(n_popped):
                    mate = col_match[popped[q]]
                    if mate != -1:
                        visited[mate] = -1
            else:
                unmatched[n_next] = root
                n_next += 1
        if not any_augmented:
            break
        n_unmatched = n_next
        forward = not forward
    return phases, augmentations, columns_visited, dead_columns


# ---------------------------------------------------------------------------------------
# Push-relabel (FIFO, single/double push, global relabeling)
# ---------------------------------------------------------------------------------------


@njit(cache=True)
def _global_relabel(row_ptr, row_ind, row_match, col_match, psi_row, psi_col, queue, bound):
    n_rows = row_match.shape[0]
    for i in range(n_rows):
        psi_row[i] = bound
    for j in range(psi_col.shape[0]):
        psi_col[j] = bound
    tail = 0
    for i in range(n_rows):
        if row_match[i] == -1:
            psi_row[i] = 0
            queue[tail] = i
            tail += 1
    head = 0
    while head < tail:
        u = queue[head]
        head += 1
        for p in range(row_ptr[u], row_ptr[u + 1]):
            v = row_ind[p]
            if psi_col[v] == bound:
                psi_col[v] = psi_row[u] + 1
                w = col_match[v]
                if w != -1:
                    psi_row[w] = psi_col[v] + 1
                    queue[tail] = w
                    tail += 1


@njit(cache=True)
def push_relabel_kernel(row_ptr, row_ind, col_ptr, col_ind, row_match, col_match, k):
    """Augment ``row_match``/``col_match`` in place to a maximum matching.

    ``k`` sets the global relabeling frequency (every ``k * (n_rows + n_cols)`` pushes;
    ``k <= 0``: only the initial one). Returns ``(pushes, double_pushes, global_relabels,
    dropped_columns)``.
    """
    n_rows = row_match.shape[0]
    n_cols = col_match.shape[0]
    bound = n_rows + n_cols
    psi_row = np.empty(n_rows, dtype=np.int64)
    psi_col = np.empty(n_cols, dtype=np.int64)
    rqueue = np.empty(n_rows, dtype=np.int64)
    # At most n_cols columns are active at once (each active column is unmatched and
    # queued once), so a ring of n_cols slots suffices.
    active = np.empty(max(n_cols, 1), dtype=np.int64)
    head = 0
    size = 0
    for j in range(n_cols):
        if col_match[j] == -1 and col_ptr[j] < col_ptr[j + 1]:
            active[size] = j
            size += 1
    _global_relabel(row_ptr, row_ind, row_match, col_match, psi_row, psi_col, rqueue, bound)
    global_relabels = 1
    threshold = k * bound
    since_relabel = 0
    pushes = 0
    double_pushes = 0
    dropped = 0
    while size > 0:
        v = active[head]
        head += 1
        if head == n_cols:
            head = 0
        size -= 1
        if psi_col[v] >= bound:
            dropped += 1
            continue
        # Minimum-label neighbour; by the neighbourhood invariant psi(u) >= psi(v) - 1,
        # so a row with psi(v) - 1 ends the scan.
        target = psi_col[v] - 1
        best = -1
        best_psi = bound
        for p in range(col_ptr[v], col_ptr[v + 1]):
            u = col_ind[p]
            if psi_row[u] < best_psi:
                best_psi = psi_row[u]
                best = u
                if best_psi <= target:
                    break
        if best_psi >= bound:
            psi_col[v] = bound
            dropped += 1
            continue
        w = row_match[best]
        if w != -1:
            # Double push: w loses its row and becomes active again.
            col_match[w] = -1
            tail = head + size
            if tail >= n_cols:
                tail -= n_cols
            active[tail] = w
            size += 1
            double_pushes += 1
        row_match[best] = v
        col_match[v] = best
        psi_col[v] = best_psi + 1
        psi_row[best] = best_psi + 2
        pushes += 1
        since_relabel += 1
        if threshold > 0 and since_relabel >= threshold:
            _global_relabel(row_ptr, row_ind, row_match, col_match, psi_row, psi_col, rqueue, bound)
            global_relabels += 1
            since_relabel = 0
    return pushes, double_pushes, global_relabels, dropped


# ---------------------------------------------------------------------------------------
# Solvers
# ---------------------------------------------------------------------------------------


def _tiny_graph(dtype: np.dtype) -> BipartiteGraph:
    """A 2x2 path graph in ``dtype``, used to compile a kernel for that dtype ahead of run."""
    dt = np.dtype(dtype)
    return BipartiteGraph(
        n_rows=2,
        n_cols=2,
        row_ptr=np.array([0, 2, 3], dtype=dt),
        row_ind=np.array([0, 1, 0], dtype=dt),
        col_ptr=np.array([0, 2, 3], dtype=dt),
        col_ind=np.array([0, 1, 0], dtype=dt),
        name="tiny",
    )


def _start_matching(graph: BipartiteGraph, init: Matching | None) -> Matching:
    """A fresh copy of ``init`` (empty when None) in the graph's index dtype."""
    dtype = graph.col_ind.dtype
    if init is None:
        return Matching(
            row_match=np.full(graph.n_rows, -1, dtype=dtype),
            col_match=np.full(graph.n_cols, -1, dtype=dtype),
        )
    row_match = np.asarray(init.row_match)
    col_match = np.asarray(init.col_match)
    if row_match.shape != (graph.n_rows,) or col_match.shape != (graph.n_cols,):
        raise ValueError(
            f"{graph.name}: initial matching has shapes {row_match.shape}, {col_match.shape}; "
            f"expected ({graph.n_rows},), ({graph.n_cols},)"
        )
    return Matching(
        row_match=row_match.astype(dtype, copy=True), col_match=col_match.astype(dtype, copy=True)
    )


@njit(cache=True)
def _hk_many(table, buf, row_match, col_match, row_at, col_at):
    """:func:`hopcroft_karp_kernel` on every graph of a chunk of a
    :class:`~matchbench.graphs.stack.GraphStack`, its mates at ``row_at[g]`` and
    ``col_at[g]`` of the stack's mate arrays; returns the phases and augmentations."""
    phases = 0
    augs = 0
    for g in range(table.shape[0]):
        nr, nc = table[g, 0], table[g, 1]
        cpa, cia, cin = table[g, 5], table[g, 6], table[g, 7]
        p, a = hopcroft_karp_kernel(
            buf[cpa : cpa + nc + 1], buf[cia : cia + cin],
            row_match[row_at[g] : row_at[g] + nr], col_match[col_at[g] : col_at[g] + nc],
        )
        phases += p
        augs += a
    return phases, augs


class _NumbaMCMSolver(BaseSolver):
    """Shared life cycle: copy the initial matching in ``prepare``, augment in ``run``."""

    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "cpu"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._graph: BipartiteGraph | None = None
        self._matching: Matching | None = None
        self._counters: dict[str, int | float] = {}
        self._compiled: set[str] = set()

    def _call(self, graph: BipartiteGraph, m: Matching) -> dict[str, int | float]:
        raise NotImplementedError

    def prepare(self, instance: BipartiteGraph, init: Matching | None = None) -> None:
        # Compile (or load from numba's cache) outside the timed region: run() on a tiny
        # graph of the same index dtype, once per dtype.
        key = str(instance.col_ind.dtype)
        if key not in self._compiled:
            tiny = _tiny_graph(instance.col_ind.dtype)
            self._call(tiny, _start_matching(tiny, None))
            self._compiled.add(key)
        self._graph = instance
        self._matching = _start_matching(instance, init)
        self._counters = {}

    def run(self) -> None:
        if self._graph is None or self._matching is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        self._counters = self._call(self._graph, self._matching)

    def result(self) -> Matching:
        if self._matching is None:
            raise RuntimeError(f"{self.name}: result() before prepare()")
        return self._matching

    def counters(self) -> dict[str, int | float]:
        return dict(self._counters)


class HopcroftKarp(_NumbaMCMSolver):
    """Hopcroft-Karp: phases of shortest vertex-disjoint augmenting paths.

    Each phase runs a BFS from all free columns that builds the layered graph up to the
    first layer adjacent to a free row, then a DFS (iterative, explicit stack) from every
    free column that follows layer edges only, augmenting along a maximal set of
    vertex-disjoint shortest augmenting paths. Phases repeat until the BFS reaches no free
    row.

    Notes
    -----
    Hopcroft & Karp, *An n^{5/2} algorithm for maximum matchings in bipartite graphs*, SIAM
    J. Comput. 2(4), 1973; the sequential HK of Duff, Kaya & Uçar, ACM TOMS 38(2), 2011,
    that Deveci et al., Euro-Par 2013, Sec. 4 and Table 2 use as baseline (their GPU
    APsB, Alg. 1, is its parallel counterpart). O(sqrt(n) m) worst case; counters:
    ``phases``, ``augmentations``.
    """

    name: ClassVar[str] = "hk"
    #: solves a whole :class:`~matchbench.graphs.stack.GraphStack` (one thread, graph
    #: after graph in one compiled loop: the batch's graphs without a Python call each)
    stackable: ClassVar[bool] = True

    def _call(self, graph: BipartiteGraph, m: Matching) -> dict[str, int | float]:
        phases, augs = hopcroft_karp_kernel(graph.col_ptr, graph.col_ind, m.row_match, m.col_match)
        return {"phases": int(phases), "augmentations": int(augs)}

    def skip_stack(self, stack: Any) -> tuple[bool, str | None]:
        from matchbench.graphs.stack import GraphStack

        if not isinstance(stack.data, GraphStack):
            return True, f"{self.name}: not a stack of graphs"
        return False, None

    def prepare_stack(self, stack: Any, init: Any | None = None) -> None:
        """The stack's graphs and their start (copies of ``init``'s mates, a
        :class:`~matchbench.graphs.stack.MatchingStack`, else all free)."""
        from matchbench.graphs.stack import MatchingStack, chunk_of

        if "stack" not in self._compiled:  # compile or load outside the timed region
            tiny = chunk_of(0, [_tiny_graph(np.dtype(np.int32))])
            one = np.array([0, 2], dtype=np.int64)
            _hk_many(tiny.table, tiny.buf, np.full(2, -1, np.int32), np.full(2, -1, np.int32), one, one)
            self._compiled.add("stack")
        graphs = stack.data
        ro, co = graphs.row_offsets(), graphs.col_offsets()
        if init is None:
            rm = np.full(int(ro[-1]), -1, dtype=np.int32)
            cm = np.full(int(co[-1]), -1, dtype=np.int32)
        else:
            rm = np.array(init.row_match, dtype=np.int32)
            cm = np.array(init.col_match, dtype=np.int32)
        self._stack = (graphs, MatchingStack(rm, cm, ro, co))
        self._counters = {}

    def run(self) -> None:
        if getattr(self, "_stack", None) is None:
            return super().run()
        graphs, m = self._stack
        phases = augs = 0
        for c in graphs.chunks:
            sl = slice(c.first, c.first + len(c))
            p, a = _hk_many(c.table, c.buf, m.row_match, m.col_match, m.row_offsets[sl], m.col_offsets[sl])
            phases += int(p)
            augs += int(a)
        self._counters = {"phases": phases, "augmentations": augs}

    def prepare(self, instance: BipartiteGraph, init: Matching | None = None) -> None:
        self._stack = None
        super().prepare(instance, init)

    def result_stack(self) -> Any:
        if getattr(self, "_stack", None) is None:
            raise RuntimeError(f"{self.name}: result_stack() before prepare_stack()")
        return self._stack[1]


class PothenFanPlus(_NumbaMCMSolver):
    """Pothen-Fan with lookahead and fairness (PF+).

    Phases of DFS from every free column; rows carry a visited mark per phase so the
    searches of one phase are vertex-disjoint. Before descending from a column, its
    adjacency is scanned for a free row (lookahead) through a per-column pointer that never
    moves back, so lookahead costs O(m) over the whole run. The DFS scans adjacency lists
    forwards in odd phases and backwards in even ones (fairness). A search that fails
    before any augmentation of its phase was exhaustive: its column is never matchable and
    its alternating tree is removed for good. Stops after a phase without augmentation.

    Notes
    -----
    Duff, Kaya & Uçar, *Design, implementation, and analysis of maximum transversal
    algorithms*, ACM TOMS 38(2), 2011: algorithm PF+ (Pothen & Fan 1990 with the
    lookahead of Duff 1981 and their fairness). The "PFP" baseline of
    Deveci et al., Euro-Par 2013, Table 2. Counters: ``phases``, ``augmentations``
    (each one ends at a free row found by lookahead: the DFS itself only descends through
    matched rows), ``columns_visited`` (DFS descents) and ``dead_columns``.
    """

    name: ClassVar[str] = "pfp"

    def _call(self, graph: BipartiteGraph, m: Matching) -> dict[str, int | float]:
        phases, augs, visited, dead = pothen_fan_plus_kernel(
            graph.col_ptr, graph.col_ind, m.row_match, m.col_match
        )
        return {
            "phases": int(phases),
            "augmentations": int(augs),
            "columns_visited": int(visited),
            "dead_columns": int(dead),
        }


class PushRelabel(_NumbaMCMSolver):
    """Push-relabel for bipartite matching, FIFO order, with global relabeling.

    Parameters
    ----------
    k : float
        Global relabeling frequency: a BFS from the free rows resets all labels to exact
        distances at the start and after every ``k * (n_rows + n_cols)`` pushes
        (``k <= 0``: at the start only).

    Notes
    -----
    Kaya, Langguth, Manne & Uçar, *Push-relabel based algorithms for the maximum
    transversal problem*, Computers & OR 40(5), 2012 (PR-FIFO with global relabeling),
    in the form of Deveci et al., G-PR, Algorithm 1 (PR: single/double push to the
    minimum-label row, relabel v to psi(u) + 1 and u to psi(u) + 2; a column whose
    minimum neighbour label reaches n_rows + n_cols cannot reach a free row and is
    dropped) and Algorithm 2 (GR). Counters: ``pushes``, ``double_pushes``,
    ``global_relabels``, ``dropped_columns``.
    """

    name: ClassVar[str] = "pr"

    def __init__(self, *, k: float) -> None:
        self.k = finite_float("k", k)
        super().__init__(k=k)

    def _call(self, graph: BipartiteGraph, m: Matching) -> dict[str, int | float]:
        pushes, doubles, grs, dropped = push_relabel_kernel(
            graph.row_ptr,
            graph.row_ind,
            graph.col_ptr,
            graph.col_ind,
            m.row_match,
            m.col_match,
            self.k,
        )
        return {
            "pushes": int(pushes),
            "double_pushes": int(doubles),
            "global_relabels": int(grs),
            "dropped_columns": int(dropped),
        }
