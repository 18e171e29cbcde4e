"""LAP solvers that misbehave on one instance, for the columnar batch tests.

Imported by the task process through ``PYTHONPATH`` (tests put ``tests/`` on it).
"""

from __future__ import annotations

import os
import signal

import numpy as np

from matchbench.families.lap.problem import Assignment
from matchbench.families.lap.refs import ScipyLSA


class LapPicky(ScipyLSA):
    """scipy's answer, except on instances whose name ends with ``on``: at repetition
    ``at`` (the warm-up is -1) it raises (``mode=raise``), kills its process
    (``crash``), or returns a worse permutation from then on (``wrong``)."""

    name = "lap_picky"
    stackable = False  # it misbehaves per instance: the per-instance paths' tests

    def __init__(self, mode: str = "none", on: str = "", at: int = 0) -> None:
        super().__init__(mode=mode, on=on, at=at)
        self.mode, self.on, self.at = mode, on, at
        self.calls: dict[str, int] = {}

    def prepare(self, instance, init=None) -> None:
        super().prepare(instance, init)
        self.instance = instance

    def _active(self) -> bool:
        return bool(self.on) and self.instance.name.endswith(self.on)

    def run(self) -> None:
        name = self.instance.name
        rep = self.calls.get(name, -2) + 1
        self.calls[name] = rep
        if self._active() and rep == self.at:
            if self.mode == "raise":
                raise RuntimeError("planted failure")
            if self.mode == "crash":
                os.kill(os.getpid(), signal.SIGKILL)
        super().run()
        if self._active() and self.mode == "wrong" and rep >= self.at:
            perm = self._answer.row_to_col.copy()
            costs = self._costs
            # swap two rows' columns where that costs more: a permutation, not optimal
            for i in range(len(perm)):
                for j in range(i + 1, len(perm)):
                    if (
                        costs[i, perm[j]] + costs[j, perm[i]]
                        > costs[i, perm[i]] + costs[j, perm[j]]
                    ):
                        perm[[i, j]] = perm[[j, i]]
                        self._answer = Assignment(np.asarray(perm, dtype=np.int64))
                        return


class LapStackBroken(ScipyLSA):
    """scipy's answers to a whole stack (``matchbench.core.stack``), but answer ``at``
    of every stack is not a permutation (``mode=wrong``), or ``run`` raises on a stack
    (``mode=raise``) while it solves one instance at a time as scipy does."""

    name = "lap_stack_broken"

    def __init__(self, mode: str = "wrong", at: int = 0) -> None:
        super().__init__(mode=mode, at=at)
        self.mode, self.at = mode, at

    def run(self) -> None:
        if getattr(self, "_stack", None) is not None and self.mode == "raise":
            raise RuntimeError("planted failure of a stack")
        super().run()
        if getattr(self, "_stack", None) is not None and self.mode == "wrong":
            self._answer.row_to_col[self.at, 0] = self._answer.row_to_col[self.at, 1]
