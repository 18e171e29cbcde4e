"""Maximum bipartite matching for applications: ``from matchbench.mcm import solve_batch``.

A public re-export of :mod:`matchbench.families.mcm.api`, :mod:`matchbench.families.mcm.bulk`
and :mod:`matchbench.families.mcm.stackfile`: :func:`solve_batch` solves many small bipartite
graphs, given as concatenated CSR arrays (NumPy or CuPy), one thread block per graph in one
launch, and returns a :class:`MatchingBatch` on the input's device; :func:`certify_batch`
certifies such answers by one König cover of the graphs' disjoint union;
:func:`save_csr_stack` writes graphs as one ``.npz`` of those arrays, which
:func:`read_csr_stack` reads back checked (``solve_batch(**read_csr_stack(path))``) and a
sweep reads graph by graph (``dataset=mcm_stack``). Importing it needs no GPU.
"""

from __future__ import annotations

from matchbench.families.mcm.api import MatchingBatch, solve_batch
from matchbench.families.mcm.bulk import certify_batch
from matchbench.families.mcm.stackfile import read_csr_stack, save_csr_stack

__all__ = ["MatchingBatch", "certify_batch", "read_csr_stack", "save_csr_stack", "solve_batch"]
