"""Solvers that misbehave on purpose, to test that failures become rows.

Imported by the task process through ``PYTHONPATH`` (tests put ``tests/`` on it).
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
from scipy.sparse.csgraph import maximum_bipartite_matching

from matchbench.problems.bipartite import Matching
from matchbench.solvers.base import BaseSolver


class Faulty(BaseSolver):
    """Solves correctly with scipy, then fails in ``mode`` at repetition ``at``."""

    name = "faulty"
    problem = "mcm"
    device = "cpu"

    def __init__(self, mode: str = "none", at: int = 0, seconds: float = 60.0) -> None:
        super().__init__(mode=mode, at=at, seconds=seconds)
        self.mode, self.at, self.seconds = mode, at, seconds
        self.calls = -1  # the runner's warm-up is call 0

    def prepare(self, graph, init=None) -> None:
        self.graph = graph

    def run(self) -> None:
        self.calls += 1
        rep = self.calls - 1  # warm-up is repetition -1
        if rep == self.at:
            if self.mode == "sleep":
                time.sleep(self.seconds)
            elif self.mode == "raise":
                raise RuntimeError("planted failure")
            elif self.mode == "crash":
                os.kill(os.getpid(), signal.SIGKILL)
            elif self.mode == "kill_worker":  # the task process's parent: the Dask worker
                os.kill(os.getppid(), signal.SIGKILL)
                time.sleep(60)  # ended with the worker (PR_SET_PDEATHSIG)
            elif self.mode == "oom":
                raise MemoryError("planted out of memory")
        # perm_type="row": for each column, the row matched to it
        col = maximum_bipartite_matching(self.graph.to_scipy(), perm_type="row")
        self.match = Matching.from_col_match(np.asarray(col), self.graph.n_rows)

    def result(self) -> Matching:
        if self.mode == "wrong":  # drop one matched pair: not maximum
            m = self.match.copy()
            j = int(np.flatnonzero(m.col_match >= 0)[0])
            m.row_match[m.col_match[j]] = -1
            m.col_match[j] = -1
            return m
        return self.match


class Counting(Faulty):
    """Solves correctly; an instrumented run also reports a costly counter."""

    name = "counting"
    instrumentable = True

    def __init__(self) -> None:
        super().__init__()
        self.on = False

    def instrument(self, on: bool) -> None:
        self.on = bool(on)

    def counters(self) -> dict[str, int]:
        out = {"iterations": 1}
        if self.on:
            out["edges_scanned"] = int(self.graph.n_edges)
        return out
