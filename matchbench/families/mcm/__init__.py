"""The mcm family: see :mod:`matchbench.families.mcm.problem`."""
