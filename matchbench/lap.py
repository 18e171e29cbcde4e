"""Linear assignment for applications: ``from matchbench.lap import solve_batch``.

A public re-export of :mod:`matchbench.families.lap.api` and
:mod:`matchbench.families.lap.bulk`: :func:`solve_batch` solves a ``(B, n, m)`` stack of
cost matrices (NumPy, CuPy or any DLPack tensor) on its own device and returns a
:class:`BatchAssignment`; :func:`certify_stack` certifies such answers from their duals.
Importing it needs no GPU.
"""

from __future__ import annotations

from matchbench.families.lap.api import BatchAssignment, solve_batch
from matchbench.families.lap.bulk import certify_stack

__all__ = ["BatchAssignment", "certify_stack", "solve_batch"]
