"""CPU references for the linear assignment problem.

- :class:`ScipyLSA` (``scipy_lsa``): ``scipy.optimize.linear_sum_assignment`` (a shortest
  augmenting path method after Crouse 2016).
- :class:`LapJV` (``lapjv``): ``lap.lapjv``, Jonker & Volgenant 1987.
- :class:`HungarianTree` (``hungarian_tree``): our sequential alternating-tree Hungarian
  algorithm compiled with numba, the single-thread baseline of Date & Nagi 2016. It
  returns the duals, so its answers are certified directly; the other two return only the
  permutation and the verifier derives the duals.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.solver import BaseSolver
from matchbench.families.lap.problem import (
    Assignment,
    AssignmentStack,
    CostMatrix,
    dual_dtype,
    tight_eps,
)

#: "No slack yet" for int64 duals; far above any slack of a valid instance.
INT_INF = np.int64(2**62)


@njit(cache=True)
def hungarian_tree_kernel(costs, u, v, eps, inf):
    """Solve the LAP on ``costs``; fill the duals ``u``, ``v`` in place.

    Returns ``(row_to_col, dual_updates, row_scans)``. ``u`` and ``v`` are int64 for
    integer costs (exact) or float64 for float costs, where slacks ``<= eps`` count as
    zero; ``inf`` is the initial slack.

    Notes
    -----
    Date & Nagi 2016, Sec. 2.3, the alternating tree variant (Lawler 1976) with its
    ``update_2``, after the initial reduction of Alg. 1 (here sequential). The pseudo-code
    of Sec. 2.3 pushes every unassigned row onto the stack and, after each augmentation,
    restarts from all of them, rescanning every free row once per augmentation; we grow
    one tree at a time from one free row, as Lawler does, with the same O(n^3) bound and
    far fewer rescans. ``update_2`` pushes ``P_c[j]`` for every column whose slack drops
    to zero so that the rescan of that row finds the new zero-slack edge; a row pushed
    for several such columns is rescanned once.
    """
    n = costs.shape[0]
    # Alg. 1: row reduction, then column reduction.
    for i in range(n):
        m = costs[i, 0]
        for j in range(1, n):
            if costs[i, j] < m:
                m = costs[i, j]
        u[i] = m
    for j in range(n):
        v[j] = inf
    for i in range(n):
        ui = u[i]
        for j in range(n):
            s = costs[i, j] - ui
            if s < v[j]:
                v[j] = s

    row_to_col = np.full(n, -1, dtype=np.int64)
    col_to_row = np.full(n, -1, dtype=np.int64)
    slack = np.empty(n, dtype=u.dtype)
    pc = np.full(n, -1, dtype=np.int64)  # P_c: the tree row a column's slack comes from
    pr = np.full(n, -1, dtype=np.int64)  # P_r: the column a tree row was reached through
    covered = np.zeros(n, dtype=np.bool_)  # V_c = 1: the column is in the tree
    tree = np.empty(n, dtype=np.int64)
    mark = np.full(n, -1, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    dual_updates = 0
    row_scans = 0
    for root in range(n):
        if row_to_col[root] != -1:
            continue
        for j in range(n):
            slack[j] = inf
            covered[j] = False
        pr[root] = -1
        ntree = 1
        tree[0] = root
        top = 1
        stack[0] = root
        end = -1
        while end == -1:
            while top > 0 and end == -1:
                top -= 1
                i = stack[top]
                row_scans += 1
                ui = u[i]
                for j in range(n):
                    if covered[j]:
                        continue
                    s = costs[i, j] - ui - v[j]
                    if s < slack[j]:
                        slack[j] = s
                        pc[j] = i
                    if s <= eps:
                        k = col_to_row[j]
                        if k == -1:
                            end = j
                            break
                        covered[j] = True
                        pr[k] = j
                        tree[ntree] = k
                        ntree += 1
                        stack[top] = k
                        top += 1
            if end != -1:
                break
            # update_2: theta = the least slack of an uncovered column.
            theta = inf
            for j in range(n):
                if not covered[j] and slack[j] < theta:
                    theta = slack[j]
            if theta >= inf:
                raise RuntimeError("no uncovered column left: the instance has no assignment")
            for t in range(ntree):
                u[tree[t]] += theta
            for j in range(n):
                if covered[j]:
                    v[j] -= theta
                else:
                    slack[j] -= theta
                    if slack[j] <= eps:
                        i = pc[j]
                        if mark[i] != dual_updates:
                            mark[i] = dual_updates
                            stack[top] = i
                            top += 1
            dual_updates += 1
        # augment(j): flip the path root ... P_c[j] - j.
        c = end
        while c != -1:
            r = pc[c]
            nxt = pr[r]
            row_to_col[r] = c
            col_to_row[c] = r
            c = nxt
    return row_to_col, dual_updates, row_scans


class _LapCPU(BaseSolver):
    problem: ClassVar[str] = "lap"
    device: ClassVar[str] = "cpu"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._costs: np.ndarray | None = None
        self._answer: Assignment | None = None
        self._counters: dict[str, int] = {}

    def prepare(self, instance: CostMatrix, init: Any | None = None) -> None:
        self._costs = instance.costs
        self._answer = None
        self._counters = {}

    def result(self) -> Assignment:
        if self._answer is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        return self._answer

    def counters(self) -> dict[str, int]:
        return dict(self._counters)


class ScipyLSA(_LapCPU):
    """``scipy.optimize.linear_sum_assignment``; no duals (the verifier derives them).

    Notes
    -----
    SciPy implements the shortest augmenting path method of Crouse, "On implementing 2D
    rectangular assignment algorithms", IEEE TAES 2016 (a Jonker-Volgenant variant).
    """

    name: ClassVar[str] = "scipy_lsa"
    stackable: ClassVar[bool] = True

    def prepare(self, instance: CostMatrix, init: Any | None = None) -> None:
        super().prepare(instance, init)
        self._stack: np.ndarray | None = None

    def prepare_stack(self, stack: Any) -> None:
        """A ``(B, n, n)`` stack, solved matrix by matrix in :meth:`run` (a GPU stack is
        copied to the host here, untimed)."""
        data = stack.data
        self._stack = data if isinstance(data, np.ndarray) else data.get()
        self._costs, self._answer, self._counters = None, None, {}

    def run(self) -> None:
        from scipy.optimize import linear_sum_assignment

        if getattr(self, "_stack", None) is not None:
            stack = self._stack
            cols = np.empty(stack.shape[:2], dtype=np.int64)
            for b in range(stack.shape[0]):
                cols[b] = linear_sum_assignment(stack[b])[1]
            self._answer = AssignmentStack(cols)  # type: ignore[assignment]
            return
        _rows, cols = linear_sum_assignment(self._costs)
        self._answer = Assignment(np.asarray(cols, dtype=np.int64))

    def result_stack(self) -> AssignmentStack:
        if not isinstance(self._answer, AssignmentStack):
            raise RuntimeError(f"{self.name}: result_stack() before run() on a stack")
        return self._answer


class LapJV(_LapCPU):
    """``lap.lapjv`` (the ``lap`` package); no duals (the verifier derives them).

    Skipped, with the reason, where ``lap`` is not installed.

    Notes
    -----
    Jonker & Volgenant, "A shortest augmenting path algorithm for dense and sparse linear
    assignment problems", Computing 38 (1987), the reference [13] of Date & Nagi 2016.
    """

    name: ClassVar[str] = "lapjv"

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        try:
            import lap  # noqa: F401
        except ImportError as exc:
            return True, f"the 'lap' package is not installed ({exc})"
        return False, None

    def run(self) -> None:
        import lap

        # lapjv works in float64; integer costs under 2**53 convert exactly.
        costs = np.ascontiguousarray(self._costs, dtype=np.float64)
        _cost, x, _y = lap.lapjv(costs, extend_cost=False)
        self._answer = Assignment(np.asarray(x, dtype=np.int64))


class HungarianTree(_LapCPU):
    """Sequential alternating-tree Hungarian algorithm (numba); returns the duals.

    Notes
    -----
    Date & Nagi 2016, Sec. 2.3 (Lawler's alternating tree variant, O(n^3) with the column
    slack array) and Alg. 1 for the initial reduction; see :func:`hungarian_tree_kernel`
    for the one difference from the pseudo-code.
    """

    name: ClassVar[str] = "hungarian_tree"

    def run(self) -> None:
        costs = self._costs
        dt = dual_dtype(costs)
        u = np.empty(costs.shape[0], dtype=dt)
        v = np.empty(costs.shape[0], dtype=dt)
        if dt.kind == "i":
            eps, inf = np.int64(0), INT_INF
        else:
            eps, inf = np.float64(tight_eps(costs)), np.float64(np.inf)
        perm, updates, scans = hungarian_tree_kernel(costs, u, v, eps, inf)
        self._answer = Assignment(perm, u, v)
        self._counters = {"dual_updates": int(updates), "row_scans": int(scans)}
