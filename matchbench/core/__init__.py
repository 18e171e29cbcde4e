"""Shared contracts every layer builds on: problems, solvers, parameters, errors, paths."""
