"""A small outside community program for the tests: reads the ``edges`` format and
prints only a modularity (no partition): its rows must say "objective only, not
certified"."""

import sys

print("reading", sys.argv[1])
print("modularity: 0.4125")
