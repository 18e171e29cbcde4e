"""Maximum bipartite matching for applications: ``from matchbench.mcm import solve_batch``.

A public re-export of :mod:`matchbench.families.mcm.api` and
:mod:`matchbench.families.mcm.bulk`: :func:`solve_batch` solves many small bipartite graphs,
given as concatenated CSR arrays (NumPy or CuPy), one thread block per graph in one launch,
and returns a :class:`MatchingBatch` on the input's device; :func:`certify_batch` certifies
such answers by one König cover of the graphs' disjoint union. Importing it needs no GPU.
"""

from __future__ import annotations

from matchbench.families.mcm.api import MatchingBatch, solve_batch
from matchbench.families.mcm.bulk import certify_batch

__all__ = ["MatchingBatch", "certify_batch", "solve_batch"]
