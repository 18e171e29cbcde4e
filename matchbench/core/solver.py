"""The solver contract (after benchopt's ``BaseSolver``).

A solver is one class and one YAML file ``conf/algorithm/<name>.yaml`` whose
``_target_`` is the class; the file name, ``Solver.name`` and the results' ``algorithm``
column are the same string. Keyword arguments of ``__init__`` are the variant parameters
(swept from the command line, recorded in the ``variant`` column).

Life cycle, driven by :mod:`matchbench.runner.task` once per repetition::

    skip, reason = solver.skip(instance)      # e.g. too large, missing library
    solver.prepare(instance, init)            # copies, allocation, compilation (t_prepare_s)
    solver.run()                              # the timed region only (t_solve_s)
    solution = solver.result()                # back to host (t_transfer_s for GPU)

``prepare`` is called before every repetition so that each run starts from the same
state (e.g. the shared initial matching); expensive one-time work (compilation, the
upload of the graph) belongs in ``prepare`` guarded by a cache on ``self``.

GPU solvers time ``run`` with CUDA events and report it through :meth:`timings`; CPU
solvers are timed by the runner with a wall clock. :meth:`counters` returns counts such
as kernel launches, host syncs, BFS levels or phases; :meth:`timings` per-phase seconds.
A GPU initializer (the ``init`` config group, :class:`BaseInitializer`) may be handed
to ``prepare`` instead of an initial answer: solvers with ``device_init = True`` run it
in :meth:`run`, before the solve, and report its seconds as ``timings()["init"]`` and
the initial answer's objective as ``counters()["init_objective"]``. A solver with a
preprocessing of its own (the GPU wmatch solvers' edge ranks) reports it the same way and
names it in ``init_label``, which becomes the row's ``init`` where no initializer is set.
Counters that cost time to collect (an atomic per adjacency entry) belong to
instrumented repetitions: a solver with ``instrumentable = True`` switches them on in
:meth:`instrument`, and the runner runs ``gpu.instrumented`` such repetitions after the
timed ones, in rows marked ``instrumented``.

A solver with ``batchable = True`` also solves many instances in one run (``run.batch``):
per repetition ``prepare_batch(instances, inits)`` (copies, untimed, as ``prepare``),
``run()`` (the timed region: the whole batch; ``timings()["solve"]`` is the batch's
total) and ``result_batch()`` (the answers, in input order); its ``counters()`` are the
batch's, with ``batch_size``. ``prepare``/``run``/``result`` on one instance keep working.
"""

from __future__ import annotations

from typing import Any, ClassVar


class BaseSolver:
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

    def timings(self) -> dict[str, float]:
        """Seconds measured by the solver itself, e.g. ``{"solve": ..., "transfer": ...}``.

        A ``"solve"`` entry (GPU solvers: CUDA events) replaces the runner's wall clock.
        Other keys are phase times (``phase_<name>`` columns of the report's breakdown).
        """
        return {}

    def counters(self) -> dict[str, int | float]:
        """Counts of the last run: ``kernel_launches``, ``host_syncs``, ``iterations``..."""
        return {}

    def instrument(self, on: bool) -> None:
        """Switch the costly counters on or off for the following runs (not a variant)."""
        raise NotImplementedError(f"{type(self).__name__} has no instrumented mode")

    def memory_peak_bytes(self) -> int | None:
        """Peak device memory of the last repetition (GPU solvers)."""
        return None

    def variant(self) -> str:
        """Canonical ``k=v,k=v`` string of the variant parameters (sorted keys)."""
        return ",".join(f"{k}={self.params[k]}" for k in sorted(self.params)) or "default"


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
