"""What every problem family declares: its objective and how an answer is certified.

A family named ``NAME`` is the package ``matchbench.families.NAME`` whose ``problem``
module holds one :class:`Problem` subclass whose ``name`` is ``NAME``: adding a family is
adding the folder ``matchbench/families/<name>/``, with no registry to update. The runner, the results
and the report are written against this interface only; the report needs nothing more
per family than ``objective``, ``sense`` and ``exact``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO, Any, ClassVar

import numpy as np


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
    columns : dict or None
        Other result columns the verifier measured on the answer, by name (columns of
        :data:`~matchbench.results.schema.SCHEMA`, e.g. ``nmi`` against a known truth,
        ``disconnected_communities``).
    """

    verified: bool
    reason: str | None
    objective: float
    bound: float | None = None
    reference: float | None = None
    columns: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        # A certificate proves a finite answer; an infinite or NaN objective (an overflowed
        # sum) is never verified, whatever the family's checks said.
        if self.verified and (self.objective is None or not math.isfinite(float(self.objective))):
            self.verified = False
            self.reason = f"objective {self.objective!r} is not finite (an overflowed sum)"


#: The device a certificate may use: ``"gpu"`` while the runner certifies the answers of a
#: GPU task (whose process holds the device already), else ``"cpu"``; a verifier with a
#: GPU path for large inputs takes it only then, so that CPU workers never open a GPU.
VERIFY_DEVICE: ContextVar[str] = ContextVar("matchbench_verify_device", default="cpu")


@dataclass(frozen=True)
class ReportedObjective:
    """An answer that is only a number: the objective a program printed, with nothing to check.

    What an outside program that reports no answer gives (:mod:`matchbench.external`);
    the runner records ``objective`` and leaves ``verified`` null with the reason
    "objective only, not certified": it is never counted as verified.
    """

    objective: float
    source: str = "the program's output"


class Problem:
    """A problem family.

    Subclasses set ``name`` (the ``problem`` column, and the name of the module
    ``matchbench.families.<name>`` that holds the subclass), ``objective`` (what the objective
    column measures), ``sense`` ("max" or "min") and ``exact`` (whether solvers must reach
    the optimum or are approximations judged by a quality ratio), and implement
    :meth:`verify`. :meth:`initialize` is the shared initializer every solver of the family
    starts from (``None`` when the family has none); its time is recorded apart.

    What the shared layers need to know of a family beyond that, the family declares
    here, so that the runner, the schema and the report never name it:
    ``default_init`` and ``rate_columns`` (below). Its datasets declare their own facts
    on their :func:`~matchbench.datasets.dataset` tags (problem, disk cache, size hint).
    """

    name: ClassVar[str]
    objective: ClassVar[str]
    sense: ClassVar[str] = "max"
    exact: ClassVar[bool] = True
    #: The label of the initializer (``init`` config group) that the family's papers start
    #: from: a task that starts from it keeps the task id it had before initializers were
    #: configurable (:func:`matchbench.runner.plan.build_plan`). None: the family has none.
    default_init: ClassVar[str | None] = None
    #: Rate columns of the family's rows: ``{column: counter}`` gives the row's ``column``
    #: the solver's ``counter`` per second of ``t_solve_s`` (of the whole call, in a batch).
    #: Each ``column`` must be a column of :data:`matchbench.results.schema.SCHEMA`.
    rate_columns: ClassVar[dict[str, str]] = {}

    def initialize(self, instance: Any) -> Any | None:
        return None

    def initial_objective(self, init: Any) -> float | None:
        return None

    def initial_objectives(self, init: Any) -> Any | None:
        """The initial objective of each instance of a stack, from its initializer's
        ``initialize_stack`` answers (an array of one value per instance; None: not
        known, the ``objective_init`` column stays null)."""
        return None

    def verify(self, instance: Any, solution: Any) -> Verification:
        raise NotImplementedError

    def warm_up(self) -> None:
        """Load what the certificate compiles (numba caches, kernels), once per task
        process, before its first task (the sweep's worker plugin calls it while the
        client plans). The default does nothing."""

    def verify_batch(
        self, instances: Sequence[Any], solutions: Sequence[Any]
    ) -> list[Verification]:
        """Certify many answers at once: ``solutions[k]`` of ``instances[k]``, in order.

        What the runner calls for the answers of a batch (``run.batch``); the default
        certifies each with :meth:`verify`. A family overrides it with a vectorized
        certificate, which must give the verdicts :meth:`verify` gives (the same
        ``verified``, ``objective``, ``bound`` and ``reference``; a rejected answer's
        ``reason`` as :meth:`verify` words it). An instance may appear several times
        (one per repetition).

        Raises
        ------
        Exception
            Whatever a verifier raises; the runner then certifies each answer with
            :meth:`verify` alone, so that only the answer whose verifier fails is an
            ``error`` row.
        """
        return [self.verify(inst, sol) for inst, sol in zip(instances, solutions, strict=True)]

    #: whether :meth:`verify_stack` is implemented (a batch then may go as one stack,
    #: :mod:`matchbench.core.stack`)
    stack_certificate: ClassVar[bool] = False

    def verify_stack(self, stack: Any, answers: Any) -> Any:
        """Certify the answers of a whole :class:`~matchbench.core.stack.InstanceStack`:
        a :class:`~matchbench.core.stack.StackVerdicts` with the verdicts :meth:`verify`
        gives each answer (the same checks; a rejected answer's reason as :meth:`verify`
        words it). ``answers`` is what the stack's solver's ``result_stack()`` gave.
        Families with ``stack_certificate = True`` implement it.

        Raises
        ------
        Exception
            Whatever the certificate raises; the runner then runs the batch instance by
            instance (:meth:`verify_batch`), where only the answer whose verifier fails
            is an ``error`` row.
        """
        raise NotImplementedError(f"{self.name}: no certificate of a whole stack")


#: Where the families live: one package each.
FAMILIES_PACKAGE = "matchbench.families"


def _family_class(module: Any, name: str) -> type[Problem] | None:
    """The :class:`Problem` subclass of ``module`` whose ``name`` is ``name``, if any."""
    for obj in vars(module).values():
        if (
            isinstance(obj, type)
            and issubclass(obj, Problem)
            and obj is not Problem
            and getattr(obj, "name", None) == name
        ):
            return obj
    return None


def problem_table() -> dict[str, dict[str, Any]]:
    """``{name: {objective, sense, exact}}`` for every family, for reports and comparisons.

    A family is a package ``matchbench.families.<name>`` whose ``problem`` module defines a :class:`Problem`
    subclass whose ``name`` is ``<name>``. Modules that fail to import (an optional
    dependency missing) or define no such class are left out.
    """
    import importlib
    import pkgutil

    package = importlib.import_module(FAMILIES_PACKAGE)
    out: dict[str, dict[str, Any]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.ispkg or info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"{FAMILIES_PACKAGE}.{info.name}.problem")
        except Exception:  # a broken family must not hide the others
            continue
        cls = _family_class(module, info.name)
        if cls is not None:
            out[info.name] = {"objective": cls.objective, "sense": cls.sense, "exact": cls.exact}
    return out


def get_problem(name: str) -> Problem:
    """The :class:`Problem` named ``name``, from ``matchbench.families.<name>.problem``.

    Adding a family is adding the folder ``matchbench/families/<name>/``; there is no
    registry to update.

    Raises
    ------
    KeyError
        Naming the known problems, for an unknown or malformed name.
    """
    import importlib

    cls = None
    if isinstance(name, str) and name.isidentifier():
        module_name = f"{FAMILIES_PACKAGE}.{name}.problem"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # Only the family package itself being absent means "unknown"; a missing
            # dependency inside an existing family is a real error and propagates.
            if exc.name not in (module_name, f"{FAMILIES_PACKAGE}.{name}"):
                raise
        else:
            cls = _family_class(module, name)
    if cls is None:
        known = ", ".join(sorted(problem_table()))
        raise KeyError(f"unknown problem {name!r}; known: {known}")
    return cls()


def _json_scalar(obj: Any) -> Any:
    """numpy scalars in ``params`` as the Python numbers JSON knows."""
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"{type(obj).__name__} in params is not JSON data")


def save_instance_npz(instance: Any, file: str | os.PathLike | IO[bytes], version: int, **arrays: Any) -> None:
    """Write an instance's ``arrays`` with the header every family's file carries.

    The header: ``kind`` (``module:Class``, the class whose ``load_npz`` reads it back),
    the family's layout ``version``, ``name``, ``family`` and ``params`` as JSON. A path
    is written exactly there (numpy's habit of appending ``.npz`` is avoided).
    """
    cls = type(instance)
    header = {
        "kind": np.asarray(f"{cls.__module__}:{cls.__qualname__}"),
        "version": np.asarray(version),
        "name": np.asarray(instance.name),
        "family": np.asarray(instance.family),
        "params": np.asarray(json.dumps(instance.params, default=_json_scalar)),
    }
    if isinstance(file, str | os.PathLike):
        with open(file, "wb") as f:
            np.savez(f, **header, **arrays)
    else:
        np.savez(file, **header, **arrays)
