"""``BaseSolver.variant``: the ``variant`` key of result rows (what ``matchbench compare``
matches runs by)."""

from __future__ import annotations

from typing import Any, ClassVar

from matchbench.core.solver import BaseSolver


class _Solver(BaseSolver):
    name = "toy"
    problem = "lap"
    variant_defaults: ClassVar[dict[str, Any]] = {"late": 0, "flag": False, "scale": 1.0}


def test_a_variant_is_every_parameter_sorted():
    assert BaseSolver(b=2, a="x").variant() == "a=x,b=2"
    assert BaseSolver().variant() == "default"


def test_parameters_added_later_are_left_out_at_their_earlier_behaviour():
    assert _Solver(a=1, late=0, flag=False, scale=1.0).variant() == "a=1"
    assert _Solver(a=1, scale=1).variant() == "a=1"  # 1 and 1.0 name the same value
    assert _Solver(a=1, late=2).variant() == "a=1,late=2"
    # a bool is not a number of the same value, nor the other way round
    assert _Solver(a=1, flag=0).variant() == "a=1,flag=0"
    assert _Solver(late=False).variant() == "late=False"
    assert _Solver(late=0).variant() == "default"
