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

A hook may hand back a stack that is still arriving (a large file read into device
memory by a thread of its own): its :attr:`InstanceStack.parts` are sub-stacks of
consecutive instances in the order they arrive, each with a ``ready`` that blocks until
its data is there. The runner then solves and certifies each part as soon as it has
arrived, while the next ones load, in the batch's first call; :meth:`InstanceStack.wait`
blocks until all of it is there, and :meth:`InstanceStack.close` stops the loading (after
an error). A stack without parts is there when the hook returns.
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
    parts : list of InstanceStack, optional
        A stack still arriving: its instances as consecutive sub-stacks (:meth:`part`),
        in the order their data arrives (see the module docstring).
    ready : callable, optional
        Blocks until the data is there (:meth:`wait`); None: it is.
    close_loading : callable, optional
        Stops a loading still under way (:meth:`close`).
    """

    problem: str
    data: Any
    count: int
    columns: dict[str, Any]
    instance: Callable[[int], Any]
    parts: list[InstanceStack] | None = None
    ready: Callable[[], None] | None = None
    close_loading: Callable[[], None] | None = None

    def wait(self) -> None:
        """Block until the stack's data is all there; raises the loading's error."""
        if self.ready is not None:
            self.ready()

    def close(self) -> None:
        """Stop loading what has not arrived yet and wait for the loader (idempotent)."""
        if self.close_loading is not None:
            self.close_loading()

    def part(self, lo: int, hi: int, data: Any, ready: Callable[[], None] | None = None) -> InstanceStack:
        """Instances ``lo`` to ``hi`` (exclusive) as a stack of their own: ``data`` their
        arrays, the columns that differ per instance cut to them, ``instance(k)`` this
        stack's ``instance(lo + k)``, ``ready`` what blocks until their data is there.

        >>> s = InstanceStack("lap", None, 4, {"n_rows": 3, "instance": ["a", "b", "c", "d"]}, str)
        >>> p = s.part(1, 3, None)
        >>> p.count, p.columns, p.instance(0)
        (2, {'n_rows': 3, 'instance': ['b', 'c']}, '1')
        """
        if not 0 <= lo < hi <= self.count:
            raise ValueError(f"a part [{lo}, {hi}) of a stack of {self.count} instances")
        columns = {k: v[lo:hi] if _per_instance(v) else v for k, v in self.columns.items()}
        whole = self.instance
        return InstanceStack(self.problem, data, hi - lo, columns, lambda k: whole(lo + k), ready=ready)


def _per_instance(value: Any) -> bool:
    """Whether a column value holds one value per instance (a list, an array, an Arrow
    array), not one that all instances share."""
    if isinstance(value, list | tuple):
        return True
    if isinstance(value, np.ndarray):
        return value.ndim > 0
    return type(value).__module__.split(".")[0] == "pyarrow" and hasattr(value, "__len__")


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

    @classmethod
    def concat(cls, parts: list[StackVerdicts]) -> StackVerdicts:
        """The verdicts of consecutive parts of a stack as one, in order.

        >>> a, b = StackVerdicts.empty(2), StackVerdicts.empty(1)
        >>> b.reasons[0] = "not a matching"
        >>> c = StackVerdicts.concat([a, b])
        >>> c.verified.shape, c.reasons
        ((3,), {2: 'not a matching'})
        """
        out = cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("verified", "objective", "bound", "reference")))
        at = 0
        for p in parts:
            out.reasons.update((at + k, why) for k, why in p.reasons.items())
            at += len(p.verified)
        keys = {k for p in parts for k in p.columns}
        for key in keys:
            if any(key not in p.columns for p in parts):
                raise ValueError(f"the column {key!r} is missing from some parts' verdicts")
            out.columns[key] = np.concatenate([np.asarray(p.columns[key]) for p in parts])
        return out

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
