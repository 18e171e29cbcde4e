"""Solvers: CPU references in ``cpu/``, GPU drivers in ``gpu/``."""

from matchbench.solvers.base import BaseSolver

__all__ = ["BaseSolver"]
