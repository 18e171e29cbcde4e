"""What every problem family declares: its objective and how an answer is certified.

A family is one :class:`Problem` subclass. The runner, the results and the report are
written against this interface only; the report needs nothing more per family than
``objective``, ``sense`` and ``exact``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass
class Verification:
    """An independent certificate's verdict on one answer.

    Attributes
    ----------
    verified : bool
        True only when the certificate proves the answer valid and (for exact
        families) optimal.
    reason : str or None
        Why not, when ``verified`` is false.
    objective : float
        The answer's objective recomputed by the verifier (not taken from the solver).
    bound : float or None
        The certificate's bound: König cover size, dual objective, ...
    reference : float or None
        The optimum (exact families) when the verifier could establish it, for the
        ``reference_objective`` column.
    """

    verified: bool
    reason: str | None
    objective: float
    bound: float | None = None
    reference: float | None = None


class Problem:
    """A problem family.

    Subclasses set ``name`` (the ``problem`` column), ``objective`` (what the objective
    column measures), ``sense`` ("max" or "min") and ``exact`` (whether solvers must reach
    the optimum or are approximations judged by a quality ratio), and implement
    :meth:`verify`. :meth:`initialize` is the shared initializer every solver of the family
    starts from (``None`` when the family has none); its time is recorded apart.
    """

    name: ClassVar[str]
    objective: ClassVar[str]
    sense: ClassVar[str] = "max"
    exact: ClassVar[bool] = True

    def initialize(self, instance: Any) -> Any | None:
        return None

    def initial_objective(self, init: Any) -> float | None:
        return None

    def verify(self, instance: Any, solution: Any) -> Verification:
        raise NotImplementedError


_PROBLEMS: dict[str, str] = {
    # name -> "module:Class"; imported on first use so families stay independent.
    "mcm": "matchbench.problems.mcm:MCM",
    "lap": "matchbench.problems.assignment:LAP",
}


def get_problem(name: str) -> Problem:
    """The :class:`Problem` named ``name``.

    Raises
    ------
    KeyError
        Naming the known problems, for an unknown name.
    """
    try:
        target = _PROBLEMS[name]
    except KeyError:
        raise KeyError(f"unknown problem {name!r}; known: {', '.join(sorted(_PROBLEMS))}") from None
    import importlib

    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)()


def problem_table() -> dict[str, dict[str, Any]]:
    """``{name: {objective, sense, exact}}`` for every family, for reports and comparisons."""
    out = {}
    for name in _PROBLEMS:
        try:
            p = get_problem(name)
        except ImportError:
            continue
        out[name] = {"objective": p.objective, "sense": p.sense, "exact": p.exact}
    return out
