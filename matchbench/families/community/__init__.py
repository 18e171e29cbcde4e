"""The community family: see :mod:`matchbench.families.community.problem`."""
