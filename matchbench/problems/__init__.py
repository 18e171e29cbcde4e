"""Problem families: data models and independent verifiers."""

from matchbench.problems.base import Problem, Verification, get_problem, problem_table

__all__ = ["Problem", "Verification", "get_problem", "problem_table"]
