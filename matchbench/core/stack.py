"""Many instances as one stack: the columnar contract of a batch (``run.batch``).

A batch of many instances of one generator (or of one bulk file), solved by one solver,
can cross the runner without an object per instance. Three pieces, each optional, each
declared by the family that owns it; the runner (:mod:`matchbench.runner.stack`) uses
them only where all three are there, and otherwise runs the batch instance by instance
(:func:`matchbench.runner.task.columnar_batch`), with the same rows:

- the **dataset function's** ``matchbench_stack(template, varying, count, device=...)``
  makes the batch's ``count`` instances together, as one :class:`InstanceStack`:
  ``template`` holds the keyword arguments that all of them share, ``varying`` the
  others as ``{name: [value per instance]}`` (the seeds of a ``many:`` set), and
  ``device`` (``"cpu"`` or ``"gpu"``) says where the batch's solver works. It returns
  None where it does not make such a stack (other varying arguments, a small group);
  it raises :class:`~matchbench.core.errors.DatasetError` for arguments that would fail
  one by one too, and the runner then goes one by one, so that each instance gets its
  own error row.
- a **solver** with ``stackable = True`` solves a whole stack per repetition:
  ``skip_stack(stack)`` (as ``skip``, for all of them: a skipped stack goes one by
  one, where each instance gets its own verdict), ``prepare_stack(stack)`` (untimed),
  ``run()`` (the timed region) and ``result_stack()`` (the answers, as arrays in the
  family's form).
- the **family's** :meth:`Problem.verify_stack <matchbench.core.problem.Problem.verify_stack>`
  certifies all answers at once into a :class:`StackVerdicts`, the verdicts of
  :meth:`~matchbench.core.problem.Problem.verify` as arrays (an answer it rejects is
  judged by ``verify`` itself, on :meth:`InstanceStack.instance`, so that its reason is
  that of the one-by-one path).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class InstanceStack:
    """``count`` instances of one family as the family's arrays and their result columns.

    Attributes
    ----------
    problem : str
        The family (``problem`` column).
    data : Any
        The family's arrays of all instances (a ``(B, n, n)`` cost stack for LAPs), on
        the host (NumPy) or on the GPU (CuPy).
    count : int
        How many instances.
    columns : dict
        The instances' columns of a result row (what ``describe()``, ``instance_params``,
        ``rcp`` and ``instance_bytes`` give one instance): each a single value that all
        instances share, or a sequence of ``count`` values.
    instance : callable
        ``instance(k)``: instance ``k`` as the object its generator gives alone (what a
        certificate's rejected answer, or a fallback, is judged on).
    """

    problem: str
    data: Any
    count: int
    columns: dict[str, Any]
    instance: Callable[[int], Any]


@dataclass
class StackVerdicts:
    """The certificate's verdicts on the answers of a stack, as arrays of ``count``.

    ``verified`` (bool), ``objective``, ``bound`` and ``reference`` (float64, NaN: none),
    ``reasons`` (instance -> why not, for every answer not verified), ``columns`` (other
    measured result columns, each a sequence of ``count`` values).
    """

    verified: np.ndarray
    objective: np.ndarray
    bound: np.ndarray
    reference: np.ndarray
    reasons: dict[int, str] = field(default_factory=dict)
    columns: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def empty(cls, count: int) -> StackVerdicts:
        """``count`` verdicts of nothing yet: unverified, every number NaN."""
        nan = np.full(count, np.nan)
        return cls(np.zeros(count, dtype=bool), nan, nan.copy(), nan.copy())

    def set(self, k: int, verdict: Any) -> None:
        """Write one :class:`~matchbench.core.problem.Verification` at ``k``."""
        self.verified[k] = bool(verdict.verified)
        self.objective[k] = np.nan if verdict.objective is None else float(verdict.objective)
        self.bound[k] = np.nan if verdict.bound is None else float(verdict.bound)
        self.reference[k] = np.nan if verdict.reference is None else float(verdict.reference)
        if verdict.verified:
            self.reasons.pop(k, None)
        else:
            self.reasons[k] = str(verdict.reason)
