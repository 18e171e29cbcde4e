"""The solver contract (after benchopt's ``BaseSolver``).

A solver is one class and one YAML file ``conf/algorithm/<name>.yaml`` whose
``_target_`` is the class; the file name, ``Solver.name`` and the results' ``algorithm``
column are the same string. Keyword arguments of ``__init__`` are the variant parameters
(swept from the command line, recorded in the ``variant`` column). A parameter added to a
solver that has recorded runs goes into its ``variant_defaults`` with the value that keeps
the old behaviour, so the old rows and the new share their ``variant`` key.

Life cycle, driven by :mod:`matchbench.runner.task` once per repetition::

    skip, reason = solver.skip(instance)      # e.g. too large, missing library
    solver.prepare(instance, init)            # copies, allocation, compilation (t_prepare_s)
    solver.run()                              # the timed region only (t_solve_s)
    solution = solver.result()                # back to host (t_transfer_s for GPU)

``prepare`` is called before every repetition so that each run starts from the same
state (e.g. the shared initial matching); expensive one-time work (compilation, the
upload of the graph) belongs in ``prepare`` guarded by a cache on ``self``.

What a solver measured in its last run reaches the runner as one record,
:class:`Measurements` (:meth:`BaseSolver.measurements`): the seconds of the standard
phases under their own names (``solve``, ``init``, ``upload``, ``transfer``), the
family's other phases in ``phases`` and every counter in ``counters``. A solver either
overrides :meth:`~BaseSolver.measurements`, or (most do) :meth:`~BaseSolver.timings` and
:meth:`~BaseSolver.counters`, two dicts that the default ``measurements()`` turns into the
record (:meth:`Measurements.from_dicts`: ``timings()["solve"]`` is ``solve``, and so on;
the other timings are ``phases``). GPU solvers time ``run`` with CUDA events and report
it as ``solve``; CPU solvers are timed by the runner with a wall clock.
A GPU initializer (the ``init`` config group, :class:`BaseInitializer`) may be handed
to ``prepare`` instead of an initial answer: solvers with ``device_init = True`` run it
in :meth:`run`, before the solve, and report its seconds as ``init`` and the initial
answer's objective as the counter ``init_objective``. A solver with a preprocessing of
its own (an edge ranking before the solve, say) reports it the same way and names it in
``init_label``, which becomes the row's ``init`` where no initializer is set.
Counters that cost time to collect (an atomic per adjacency entry) belong to
instrumented repetitions: a solver with ``instrumentable = True`` switches them on in
:meth:`instrument`, and the runner runs ``gpu.instrumented`` such repetitions after the
timed ones, in rows marked ``instrumented``.

A solver with ``batchable = True`` also solves many instances in one run (``run.batch``):
per repetition ``prepare_batch(instances, inits)`` (copies, untimed, as ``prepare``),
``run()`` (the timed region: the whole batch; ``timings()["solve"]`` is the batch's
total) and ``result_batch()`` (the answers, in input order); its ``counters()`` are the
batch's, with ``batch_size``. ``prepare``/``run``/``result`` on one instance keep working.
A solver with ``stackable = True`` solves a batch made as one stack of arrays
(:mod:`matchbench.core.stack`): ``skip_stack``, ``prepare_stack``, ``run()`` and
``result_stack()``, with no object per instance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

#: The phases :class:`Measurements` names; the runner gives each its own column.
STANDARD_PHASES = ("solve", "init", "upload", "transfer", "process")


@dataclass
class Measurements:
    """What a solver measured in its last run (the contract of :meth:`BaseSolver.measurements`).

    Seconds are the solver's own clock (CUDA events on a GPU); None: not measured, the
    runner then uses what it knows (its wall clock of ``run()`` for ``solve``, of
    ``result()`` for a GPU solver's ``transfer``) or leaves the column null.

    Attributes
    ----------
    solve : float or None
        The timed region (``t_solve_s``): replaces the runner's wall clock of ``run()``.
    init : float or None
        A GPU initializer, or the solver's own preprocessing, run inside ``run()`` before
        the solve (``t_init_s``; its objective is the counter ``init_objective``).
    upload : float or None
        The host-to-device copy of the instance (``t_upload_s``).
    transfer : float or None
        The answer's device-to-host copy (``t_transfer_s``).
    process : float or None
        An outside program's process, start to exit, by the host clock (``t_process_s``;
        :mod:`matchbench.external`): beside ``solve``, which is the time the program
        reports of itself where it reports one.
    phases : dict of str to float
        The family's other phases, in seconds (``phases_json``), e.g. one entry per
        kernel stage.
    counters : dict
        Every count of the run (``counters_json``). Names the runner gives a column of
        their own: ``kernel_launches``, ``host_syncs``, ``iterations`` (else ``phases``),
        ``init_objective`` (the objective of the initial answer ``init`` made: one
        number, or one per instance of a batch) and ``batch_size``. A family's counters
        that become rates are declared by the family
        (:attr:`matchbench.core.problem.Problem.rate_columns`).

    Examples
    --------
    >>> m = Measurements.from_dicts({"solve": 0.5, "push": 0.4}, {"kernel_launches": 7})
    >>> m.solve, m.transfer, m.process, m.phases, m.counters
    (0.5, None, None, {'push': 0.4}, {'kernel_launches': 7})
    """

    solve: float | None = None
    init: float | None = None
    upload: float | None = None
    transfer: float | None = None
    process: float | None = None
    phases: dict[str, float] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dicts(
        cls, timings: Mapping[str, Any] | None, counters: Mapping[str, Any] | None
    ) -> Measurements:
        """The record of a solver's ``timings()`` and ``counters()`` dicts.

        The :data:`STANDARD_PHASES` keys of ``timings`` become their fields, the other
        keys ``phases``; ``counters`` is copied.
        """
        rest = dict(timings or {})
        named = {k: rest.pop(k) for k in STANDARD_PHASES if k in rest}
        return cls(**named, phases=rest, counters=dict(counters or {}))

    @classmethod
    def of(cls, solver: Any) -> Measurements:
        """The measurements of ``solver``'s last run.

        Its :meth:`~BaseSolver.measurements` where it has one, else (a solver class that
        does not derive from :class:`BaseSolver`) its ``timings()`` and ``counters()``.
        """
        get = getattr(solver, "measurements", None)
        if get is not None:
            return get()
        return cls.from_dicts(solver.timings(), solver.counters())


class BaseSolver:
    """A solver of one problem family (the contract: this module's docstring).

    Class attributes: ``name`` (the YAML file name and the ``algorithm`` column),
    ``problem`` (the family), ``device`` (``"cpu"`` or ``"gpu"``) and the optional
    capabilities below. Methods: :meth:`skip`, :meth:`prepare` (untimed), :meth:`run` (the
    timed region), :meth:`result`; after a run, :meth:`measurements` (by default made of
    :meth:`timings` and :meth:`counters`, which solvers override) and
    :meth:`memory_peak_bytes`.
    """

    name: ClassVar[str]
    problem: ClassVar[str]
    device: ClassVar[str] = "cpu"
    #: kernel families (``kernels/<family>.cu``) this solver needs; precompiled by workers.
    kernel_families: ClassVar[tuple[str, ...]] = ()
    #: whether :meth:`instrument` collects extra counters
    instrumentable: ClassVar[bool] = False
    #: whether :meth:`prepare` accepts a GPU initializer (:class:`BaseInitializer` with
    #: ``device == "gpu"``), run on the solver's device copy of the instance
    device_init: ClassVar[bool] = False
    #: the name of a preprocessing the solver times as ``timings()["init"]`` on its own
    init_label: ClassVar[str | None] = None
    #: whether the solver solves many instances in one run (``run.batch``): prepare_batch / result_batch
    batchable: ClassVar[bool] = False
    #: whether the solver solves a whole :class:`~matchbench.core.stack.InstanceStack`
    #: (``run.batch``): skip_stack / prepare_stack / result_stack
    stackable: ClassVar[bool] = False
    #: parameters added after runs were recorded, each with the value that keeps the
    #: earlier behaviour: :meth:`variant` leaves them out at that value, so rows of before
    #: and after share their key and ``matchbench compare`` can gate the change
    #: (``params_json`` keeps every parameter)
    variant_defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, **params: Any) -> None:
        self.params = params

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        return False, None

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        raise NotImplementedError

    def run(self) -> None:
        raise NotImplementedError

    def result(self) -> Any:
        raise NotImplementedError

    def prepare_batch(self, instances: list, inits: list | None = None) -> None:
        """Batchable solvers: :meth:`prepare` for all ``instances`` at once (untimed)."""
        raise NotImplementedError

    def result_batch(self) -> list:
        """Batchable solvers: the answers of the last :meth:`run`, in input order."""
        raise NotImplementedError

    def skip_stack(self, stack: Any) -> tuple[bool, str | None]:
        """Stackable solvers: :meth:`skip` for all instances of ``stack`` at once (a
        skipped stack is run instance by instance, each with its own :meth:`skip`)."""
        return False, None

    def prepare_stack(self, stack: Any) -> None:
        """Stackable solvers: :meth:`prepare` for a whole
        :class:`~matchbench.core.stack.InstanceStack` (untimed)."""
        raise NotImplementedError

    def result_stack(self) -> Any:
        """Stackable solvers: the answers of the last :meth:`run` on a stack, as the
        arrays the family's :meth:`~matchbench.core.problem.Problem.verify_stack` takes."""
        raise NotImplementedError

    def measurements(self) -> Measurements:
        """What the last run measured, as the runner reads it (see :class:`Measurements`).

        The default is made of :meth:`timings` and :meth:`counters`
        (:meth:`Measurements.from_dicts`); a solver may override this instead.
        """
        return Measurements.from_dicts(self.timings(), self.counters())

    def timings(self) -> dict[str, float]:
        """Seconds measured by the solver itself, e.g. ``{"solve": ..., "transfer": ...}``.

        The keys of :data:`STANDARD_PHASES` are the fields of :class:`Measurements` of the
        same names (a ``"solve"`` entry, GPU solvers: CUDA events, replaces the runner's
        wall clock). Other keys are phase times (``phase_<name>`` columns of the report's
        breakdown).
        """
        return {}

    def counters(self) -> dict[str, int | float]:
        """Counts of the last run (:attr:`Measurements.counters`): ``kernel_launches``,
        ``host_syncs``, ``iterations``, and the family's own."""
        return {}

    def instrument(self, on: bool) -> None:
        """Switch the costly counters on or off for the following runs (not a variant)."""
        raise NotImplementedError(f"{type(self).__name__} has no instrumented mode")

    def memory_peak_bytes(self) -> int | None:
        """Peak device memory of the last repetition (GPU solvers)."""
        return None

    def variant(self) -> str:
        """Canonical ``k=v,k=v`` string of the variant parameters (sorted keys), without
        those at their :attr:`variant_defaults` value."""
        omit = self.variant_defaults
        keys = [k for k in sorted(self.params) if not (k in omit and _same(self.params[k], omit[k]))]
        return ",".join(f"{k}={self.params[k]}" for k in keys) or "default"


def _same(value: Any, default: Any) -> bool:
    """``value`` is ``default`` for :meth:`BaseSolver.variant`: equal and of the same kind
    (``True`` is not ``1``, ``0.0`` is ``0``)."""
    if isinstance(value, bool) or isinstance(default, bool):
        return type(value) is type(default) and value == default
    return value == default


class BaseInitializer:
    """A family's initial answer, chosen by the ``init`` config group (``conf/init/<name>.yaml``).

    Class attributes as for solvers: ``name`` (the file name and the ``init`` column),
    ``problem`` (the family whose solvers it starts), ``device`` and ``kernel_families``.
    A CPU initializer is called on the instance, ``init(instance) -> answer``, and the
    runner times it on the host (``t_init_s``) and hands the answer to every repetition's
    :meth:`BaseSolver.prepare`. A GPU initializer is handed to ``prepare`` itself and the
    solver runs it on its own device copy of the instance, before its solve, timed with
    CUDA events (``timings()["init"]``); only solvers with ``device_init = True`` accept
    one, and the planner leaves out the other pairs.
    """

    name: ClassVar[str]
    problem: ClassVar[str]
    device: ClassVar[str] = "cpu"
    kernel_families: ClassVar[tuple[str, ...]] = ()
    #: parameter values that the ``init`` column leaves out of its label
    defaults: ClassVar[dict[str, Any]] = {}

    def __init__(self, **params: Any) -> None:
        self.params = params

    def label(self) -> str:
        """The ``init`` column: the name, with the parameters that differ from the defaults.

        >>> class Demo(BaseInitializer):
        ...     name, problem, defaults = "demo", "mcm", {"rule": "ks"}
        >>> Demo(rule="ks").label(), Demo(rule="greedy").label()
        ('demo', 'demo(rule=greedy)')
        """
        changed = {k: v for k, v in sorted(self.params.items()) if self.defaults.get(k) != v}
        if not changed:
            return self.name
        return f"{self.name}({','.join(f'{k}={v}' for k, v in changed.items())})"

    def __call__(self, instance: Any) -> Any:
        raise NotImplementedError(f"{self.name} runs on the device, inside the solver")

    #: A CPU initializer with ``stackable = True`` also starts a whole batch at once:
    #: ``initialize_stack(data)`` takes an :class:`~matchbench.core.stack.InstanceStack`'s
    #: ``data`` and returns the initial answers of all its instances in the family's stack
    #: form (each equal to the initializer's answer alone), from which the family's
    #: :meth:`~matchbench.core.problem.Problem.initial_objectives` reads each instance's
    #: initial objective.
    stackable: ClassVar[bool] = False

    def initialize_stack(self, data: Any) -> Any:
        raise NotImplementedError(f"{self.name}: no initial answers of a whole stack")
