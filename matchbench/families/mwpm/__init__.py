"""The mwpm family: see :mod:`matchbench.families.mwpm.problem`."""
