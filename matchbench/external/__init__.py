"""Outside programs as solvers, configured by YAML and certified like ours.

- :class:`ExternalSolver` (:mod:`matchbench.external.program`): a command template, the
  format the program reads, where its answer and its time come from.
- :mod:`matchbench.external.formats`: the writers and readers each family declares in
  ``matchbench.families.<family>.formats``.
- :mod:`matchbench.external.instances`: instance files written once per machine.

``python -m matchbench.external FAMILY`` lists a family's formats.
"""

from __future__ import annotations

from matchbench.external.formats import describe, family_formats
from matchbench.external.program import ExternalSolver

__all__ = ["ExternalSolver", "describe", "family_formats"]
