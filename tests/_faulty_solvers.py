"""Solvers that misbehave on purpose, to test that failures become rows.

Imported by the task process through ``PYTHONPATH`` (tests put ``tests/`` on it).
"""

from __future__ import annotations

import os
import signal
import time

import numpy as np
from scipy.sparse.csgraph import maximum_bipartite_matching

from matchbench.core.solver import BaseSolver
from matchbench.graphs.bipartite import Matching


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
            elif self.mode == "hog":  # touches 1 GiB, page by page, as a bad input would
                hog = np.ones(1 << 27)  # noqa: F841 - held until the process is killed
                time.sleep(self.seconds)
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


def _maximum(graph) -> Matching:
    col = maximum_bipartite_matching(graph.to_scipy(), perm_type="row")
    return Matching.from_col_match(np.asarray(col), graph.n_rows)


def _drop_one(m: Matching) -> Matching:
    m = m.copy()
    j = int(np.flatnonzero(m.col_match >= 0)[0])
    m.row_match[m.col_match[j]] = -1
    m.col_match[j] = -1
    return m


class Picky(Faulty):
    """Faulty's failure ``mode`` at repetition ``at``, only on instances whose name
    contains ``on``; solves the others (one failing instance among many in a batch)."""

    name = "picky"

    def __init__(self, mode: str = "none", on: str = "", at: int = 0, seconds: float = 60.0) -> None:
        BaseSolver.__init__(self, mode=mode, on=on, at=at, seconds=seconds)
        self.mode, self.on, self.at, self.seconds = mode, on, at, seconds
        self.calls = -1

    def _active(self) -> bool:
        return bool(self.on) and self.on in self.graph.name

    def run(self) -> None:
        if self._active():
            return super().run()
        self.match = _maximum(self.graph)

    def result(self) -> Matching:
        if self._active():
            return super().result()
        return self.match


class Batched(BaseSolver):
    """A batchable solver: scipy on each instance; ``mode`` breaks the joint solve only.

    ``log`` (class attribute) records the calls in this process. The joint solve reports
    ``timings()["solve"] = 0.8`` s, so that the runner's split can be checked; ``wrong``
    names the instances (by substring) whose answer drops a pair.
    """

    name = "batched"
    problem = "mcm"
    device = "cpu"
    batchable = True
    log: list = []

    def __init__(self, mode: str = "none", wrong: str = "") -> None:
        super().__init__(mode=mode, wrong=wrong)
        self.mode, self.wrong = mode, wrong
        self.joint = False

    def prepare(self, graph, init=None) -> None:
        Batched.log.append(("prepare", graph.name))
        self.graphs, self.joint = [graph], False

    def prepare_batch(self, instances, inits=None) -> None:
        Batched.log.append(("prepare_batch", [g.name for g in instances], list(inits or [])))
        self.graphs, self.joint = list(instances), True

    def run(self) -> None:
        if self.joint and self.mode == "raise":
            raise RuntimeError("planted batch failure")
        if self.joint and self.mode == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.joint and self.mode == "sleep":
            time.sleep(60)
        self.answers = [
            _drop_one(_maximum(g)) if self.wrong and self.wrong in g.name else _maximum(g) for g in self.graphs
        ]

    def result(self) -> Matching:
        Batched.log.append(("result", self.graphs[0].name))
        return self.answers[0]

    def result_batch(self) -> list[Matching]:
        Batched.log.append(("result_batch", len(self.answers)))
        if self.mode == "short":
            return self.answers[:-1]
        return list(self.answers)

    def timings(self) -> dict[str, float]:
        return {"solve": 0.8} if self.joint else {}

    def counters(self) -> dict[str, int]:
        return {"kernel_launches": 1 if self.joint else len(self.graphs)}
