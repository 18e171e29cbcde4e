"""The smarriage family: see :mod:`matchbench.families.smarriage.problem`."""
