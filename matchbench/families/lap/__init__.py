"""The lap family: see :mod:`matchbench.families.lap.problem`."""
