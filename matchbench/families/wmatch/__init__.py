"""The wmatch family: see :mod:`matchbench.families.wmatch.problem`."""
