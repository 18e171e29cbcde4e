"""From a resolved job config to tasks: :class:`Task` records shipped to Dask workers.

A task is one (instance x algorithm x variant) with its repetitions; with ``run.batch`` the
sweep ships many of them per Dask task (:mod:`matchbench.runner.batch`), from the same
plan. Everything a worker needs is in the record, as plain picklable data (resolved config
sections, never OmegaConf objects: Hydra's ``${now:}`` and ``${hydra:}`` resolvers do not
work in a worker process).

Pairs that cannot mean anything are left out here, before anything is loaded: a solver of
one problem family on a dataset whose function declares another family
(:func:`matchbench.datasets.spec_problem`). The plan keeps them in ``skipped_pairs`` and
the sweep reports them in one line, not as one error row per pair.

The ``init`` section (the ``init`` config group) names the initial answer of the families
that have one. It ships with the tasks of solvers
of its family and is dropped from the others (their tasks, and so their ids, do not
depend on it: a sweep over ``init`` runs them once). A GPU initializer is run by the
solver on its device copy of the instance; pairs of it with a solver that cannot
(``device_init`` false: the CPU references) are left out, in ``skipped_inits``. A task
that starts from its family's default initializer (:attr:`Problem.default_init
<matchbench.core.problem.Problem.default_init>`, the papers' protocol) keeps the id it had
before initializers could be chosen.

Run options that belong to the algorithm rather than to the solver are taken out of the
algorithm config before the solver is built: ``algorithm.time_limit_s`` (seconds one
repetition may take, warm-up included; over it the task is killed and recorded as a
``timeout`` row carrying the limit; default: only ``run.task_timeout_s`` bounds the task).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from matchbench.results.schema import to_json


@dataclass(frozen=True)
class Task:
    """One instance x algorithm x variant with its repetitions: what a worker runs.

    Made by :func:`build_plan`; pickled to a Dask worker and on to its task process
    (:mod:`matchbench.runner.child`), so every field is plain data. Frozen: a changed
    task is a new one (:func:`dataclasses.replace`). :meth:`to_dict` and
    :meth:`from_dict` give and read its JSON form.
    """

    #: stable id (:func:`task_id`): the file name of its rows, what ``run.resume`` matches
    task_id: str
    #: the solver's ``name`` (the ``algorithm`` column)
    algorithm: str
    #: the family of the solver, and so of the instance (``problem`` column)
    problem: str
    #: ``"cpu"`` or ``"gpu"``: the Dask resource the task asks for
    device: str
    #: the solver's canonical ``k=v,...`` parameters (``variant`` column)
    variant: str
    #: the solver's config section without the run options: ``_target_`` and parameters
    algorithm_cfg: dict[str, Any]
    #: the instance spec, one item of :func:`matchbench.datasets.expand`
    instance_spec: dict[str, Any]
    #: the solver's parameters as JSON (``params_json`` column)
    params_json: str = "{}"
    #: kernel families the solver and its initializer compile (``kernels/<family>``)
    kernel_families: list[str] = field(default_factory=list)
    #: the initializer's label (``init`` column); None without one
    init: str | None = None
    #: the ``init`` config section the task starts from; None: the family's own or none
    init_cfg: dict[str, Any] | None = None
    #: the job's ``gpu`` config section
    gpu: dict[str, Any] = field(default_factory=dict)
    #: timed repetitions (``gpu.repetitions``)
    repetitions: int = 3
    #: untimed repetitions before them (``gpu.warmup``)
    warmup: int = 1
    #: instrumented repetitions after them (``gpu.instrumented``)
    instrumented: int = 0
    #: the job's provenance columns: job_index, hydra_overrides, config_json, experiment
    provenance: dict[str, Any] = field(default_factory=dict)
    #: where datasets and the disk cache are (None: the default data dir)
    data_dir: str | None = None
    #: whether answers are certified (``run.verify``)
    verify: bool = True
    #: seconds the whole task may take (``run.task_timeout_s``)
    timeout_s: float = 600.0
    #: seconds one repetition may take (``algorithm.time_limit_s``); None: no such limit
    time_limit_s: float | None = None
    #: whether the task runs in the worker's task process (``run.isolate``)
    isolate: bool = True
    #: the task process's memory limit (``run.task_memory_limit``): bytes, "auto" (a
    #: share of its worker's memory limit, see :mod:`matchbench.runner.child`) or None
    memory_limit: int | str | None = "auto"
    #: :func:`~matchbench.datasets.instance_key` of ``instance_spec`` (the
    #: ``instance_key`` column), computed once at plan time; None (a task of an earlier
    #: version): computed where needed
    instance_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The task as a plain dict of JSON data (:func:`dataclasses.asdict`)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        """A task from :meth:`to_dict`'s form, or from the dict tasks of earlier versions.

        Keys that are no field are ignored; missing optional fields take their defaults.

        Raises
        ------
        TypeError
            Naming the required fields that ``data`` lacks.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})



_TASK_FIELDS = frozenset(f.name for f in dataclasses.fields(Task))


@dataclass
class Plan:
    """One Hydra job's tasks, its run settings and its provenance."""

    job_index: int
    tasks: list[Task]
    run: dict[str, Any]
    cluster: dict[str, Any]
    overrides: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    #: rows for tasks that failed before they could be shipped (bad names, bad configs)
    error_rows: list[dict[str, Any]] = field(default_factory=list)
    #: (algorithm, its problem, instance label, the instance's problem) left out at plan time
    skipped_pairs: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: the ``+experiment=`` preset the job was composed from
    config_experiment: str | None = None
    #: (algorithm, initializer label) left out at plan time: a solver that cannot run it
    skipped_inits: list[tuple[str, str]] = field(default_factory=list)
    #: the fields every one of :attr:`tasks` shares, as :func:`build_plan` made them (all
    #: but ``task_id``, ``instance_spec``, ``instance_key`` and ``provenance``); a batch of
    #: them is packed from these and the plan's columns (:class:`~matchbench.runner.batch.Packer`)
    #: without reading each task. None: not known (a plan made otherwise).
    shared: dict[str, Any] | None = None

#: Keys of the algorithm config that are run options, not solver parameters.
RUN_KEYS = ("time_limit_s",)


def split_algorithm(algorithm: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(solver config, run options) of an algorithm config section.

    Raises
    ------
    ValueError
        For a ``time_limit_s`` that is not a positive number (or null).
    """
    solver = {k: v for k, v in algorithm.items() if k not in RUN_KEYS}
    opts = {k: algorithm[k] for k in RUN_KEYS if k in algorithm}
    limit = opts.get("time_limit_s")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not limit > 0:
            raise ValueError(f"algorithm.time_limit_s must be a positive number of seconds, not {limit!r}")
        opts["time_limit_s"] = float(limit)
    return solver, opts


def task_id(algorithm: dict[str, Any], spec: dict[str, Any], timing: dict[str, Any]) -> str:
    """Stable id of a task: the same solver and parameters, instance spec and timing
    settings give the same id in every run (what ``run.resume=true`` matches on).

    Parameters
    ----------
    algorithm : dict
        The algorithm config section (``_target_``, the solver's parameters, run options
        such as ``time_limit_s``).
    spec : dict
        The instance spec (one item of :func:`matchbench.datasets.expand`).
    timing : dict
        The settings that change what is measured (repetitions, warm-up, and the
        ``init`` section where it is not the papers' cheap matching).

    Returns
    -------
    str
        16 hex digits of the SHA-1 of the three as canonical JSON.

    Notes
    -----
    Ids hash what a task *is*, not where its code lives: every ``_target_`` (the solver
    class, the dataset function, an initializer, nested ones) enters as its identity,
    :func:`matchbench.core.legacy.frozen_name`, the dotted name it had before the family
    layout (#29), or its own name for one added since. That spelling is a frozen identity
    recorded in :mod:`matchbench.core.legacy`, not the import path, so moving a module
    changes no id: runs made before the move resume (and compare) with the same ids,
    and a config that still spells a ``_target_`` the old way gives the same id as the
    new spelling. The other values (parameters, spec arguments, timing) enter as they
    are, so the canonical form is byte for byte that of the ids before the move.
    """
    from matchbench.core.legacy import frozen_targets

    return TaskIds(algorithm, timing)(frozen_targets(spec))


#: ``json.dumps(obj, sort_keys=True, default=str)``, its encoder made once (``dumps`` makes
#: one per call where it is given options)
_canonical_json = json.JSONEncoder(sort_keys=True, default=str).encode


class TaskIds:
    """:func:`task_id` of many specs with one algorithm and timing, their part of the
    canonical JSON made once.

    ``TaskIds(algorithm, timing)(frozen_targets(spec)) == task_id(algorithm, spec, timing)``:
    the canonical JSON of the list ``[algorithm, spec, timing]`` is that of its three
    items, joined as :func:`json.dumps` joins a list's items. The spec comes frozen
    (:func:`~matchbench.core.legacy.frozen_targets`), as the planner also needs it for its
    instance key. A million-task plan spent a third of its time freezing and encoding
    the two parts that every one of its tasks shares.
    """

    __slots__ = ("_head", "_tail")

    def __init__(self, algorithm: dict[str, Any], timing: dict[str, Any]) -> None:
        from matchbench.core.legacy import frozen_targets

        self._head = "[" + _canonical_json(frozen_targets(algorithm)) + ", "
        self._tail = ", " + _canonical_json(frozen_targets(timing)) + "]"

    def __call__(self, frozen_spec: Any) -> str:
        return self.of_json(_canonical_json(frozen_spec))

    def of_json(self, spec_json: str) -> str:
        """The id of the spec whose frozen form's canonical JSON is ``spec_json``."""
        blob = self._head + spec_json + self._tail
        return hashlib.sha1(blob.encode()).hexdigest()[:16]


_ABSENT = object()
#: integers no spec holds, put where the varying values go in :class:`_Filled`'s texts
_MARK = 7_355_608_731_113_000_000


class _Filled:
    """The two canonical texts of a spec (its task id's JSON, its instance key's) made by
    filling its integers into those of a first spec, where it differs from that spec
    only in the integer values of ``varying`` (a ``many:`` set: ``seed``, and drawn
    sizes) and holds the very same objects elsewhere. Encoding both texts was half of a
    million-task plan's time. The texts are byte for byte those of the spec's own
    encoding: integers are written by JSON as by ``str``, and the keys, sorted, do not
    move; :func:`build_plan`'s test compares them.

    Raises
    ------
    ValueError
        Where the first spec's texts do not hold each mark once (a value that drops out
        of the instance key, as ``rcp_seed`` without ``rcp``), or cannot be made.
    """

    def __init__(self, first: dict[str, Any], varying: tuple[str, ...]) -> None:
        from matchbench.core.legacy import frozen_targets
        from matchbench.datasets.specs import canonical_spec

        self.first, self.varying = first, varying
        self.same = tuple(k for k in first if k not in varying)
        marks = {k: _MARK + i for i, k in enumerate(varying)}
        frozen = frozen_targets({**first, **marks})
        self.id_parts, self.id_order = self._split(_canonical_json(frozen), marks)
        self.key_parts, self.key_order = self._split(canonical_spec(frozen), marks)

    @staticmethod
    def _split(text: str, marks: dict[str, int]) -> tuple[list[str], list[int]]:
        at = []
        for j, (k, m) in enumerate(marks.items()):
            if text.count(str(m)) != 1:
                raise ValueError(f"{k} is not in the text once")
            at.append((text.index(str(m)), j, len(str(m))))
        at.sort()
        parts, start = [], 0
        for pos, _j, size in at:
            parts.append(text[start:pos])
            start = pos + size
        parts.append(text[start:])
        return parts, [j for _pos, j, _size in at]

    def texts(self, spec: Any) -> tuple[str, str] | None:
        """``(task id JSON, instance key JSON)`` of ``spec``; None where it is not of the
        first spec's form (then it is encoded on its own)."""
        first = self.first
        if type(spec) is not dict or len(spec) != len(first):
            return None
        get = spec.get
        for k in self.same:
            if get(k, _ABSENT) is not first[k]:
                return None
        values = []
        for k in self.varying:
            v = get(k, _ABSENT)
            if type(v) is not int:  # not bool, not a float
                return None
            values.append(str(v))
        return self._fill(self.id_parts, self.id_order, values), self._fill(self.key_parts, self.key_order, values)

    @staticmethod
    def _fill(parts: list[str], order: list[int], values: list[str]) -> str:
        out = [parts[0]]
        for part, j in zip(parts[1:], order, strict=True):
            out.append(values[j])
            out.append(part)
        return "".join(out)


def _filled_for(specs: list[Any]) -> _Filled | None:
    """A :class:`_Filled` for ``specs`` where its first two differ only in integers, else None."""
    if len(specs) < 3 or not all(type(s) is dict for s in specs[:2]):
        return None
    a, b = specs[0], specs[1]
    if a.keys() != b.keys():
        return None
    varying = tuple(k for k in a if a[k] is not b[k])
    if not varying or any(type(a[k]) is not int or type(b[k]) is not int for k in varying):
        return None
    try:
        return _Filled(a, varying)
    except Exception:  # noqa: BLE001 - each spec is then encoded on its own
        return None


def describe_solver(algorithm: dict[str, Any]) -> dict[str, Any]:
    """Name, problem, device, variant and kernel families of an algorithm config.

    Instantiates the solver (constructors are cheap and import no GPU library).
    """
    from hydra.utils import instantiate

    solver = instantiate(algorithm, _convert_="all")
    return {
        "algorithm": solver.name,
        "problem": solver.problem,
        "device": solver.device,
        "variant": solver.variant(),
        "params_json": to_json(solver.params),
        "kernel_families": list(solver.kernel_families),
    }


def describe_init(init: dict[str, Any]) -> dict[str, Any]:
    """Label, problem, device and kernel families of an ``init`` config section."""
    from hydra.utils import instantiate

    obj = instantiate(init, _convert_="all")
    return {
        "label": obj.label(),
        "problem": obj.problem,
        "device": obj.device,
        "kernel_families": list(obj.kernel_families),
    }


def _default_init(problem: str) -> str | None:
    """The label of the family's default initializer (:attr:`Problem.default_init
    <matchbench.core.problem.Problem.default_init>`); None for none, or an unknown family."""
    from matchbench.core.problem import get_problem

    try:
        return get_problem(problem).default_init
    except KeyError:  # a solver of a family without a Problem class: it has no default
        return None


def _accepts_device_init(algorithm: dict[str, Any]) -> bool:
    from hydra.utils import get_class

    return bool(getattr(get_class(algorithm["_target_"]), "device_init", False))


def build_plan(
    cfg: dict[str, Any],
    *,
    job_index: int = 0,
    overrides: list[str] | None = None,
    experiment: str | None = None,
) -> Plan:
    """Tasks of one job from its resolved config (a plain dict).

    Errors in the algorithm or dataset sections do not raise: they become error rows of
    the plan, so a sweep records them and carries on. ``experiment`` is the preset the
    job was composed from (``+experiment=NAME``), recorded in every row.
    """
    from matchbench.core.legacy import frozen_targets, upgrade_target
    from matchbench.datasets import expand, instance_key, spec_label, spec_problem
    from matchbench.datasets.specs import key_of_canonical
    from matchbench.runner.task import error_row

    overrides = list(overrides or [])
    run = dict(cfg.get("run", {}))
    gpu = dict(cfg.get("gpu", {}))
    if gpu.get("threads_per_block") is not None:
        warnings.warn(
            "gpu.threads_per_block is deprecated and read by nothing; a block size is each "
            "GPU solver's own option, algorithm.threads_per_block",
            FutureWarning,
            stacklevel=2,
        )
    timing = {
        "repetitions": int(gpu.get("repetitions", 3)),
        "warmup": int(gpu.get("warmup", 1)),
        "instrumented": int(gpu.get("instrumented", 0) or 0),
    }
    # a pre-move _target_ spelling keeps working for one release (one FutureWarning)
    algorithm = upgrade_target(dict(cfg["algorithm"]))
    dataset = dict(cfg["dataset"])
    init_section = upgrade_target(dict(cfg["init"])) if cfg.get("init") else None
    provenance = {
        "job_index": job_index,
        "hydra_overrides": " ".join(overrides),
        "config_json": to_json(cfg),
        "experiment": experiment,
    }
    plan = Plan(job_index, [], run, dict(cfg.get("cluster", {})), overrides, cfg)
    plan.config_experiment = experiment
    base = {"algorithm": str(algorithm.get("_target_", "?")).rsplit(".", 1)[-1]}

    try:
        solver_cfg, run_opts = split_algorithm(algorithm)
        solver = describe_solver(solver_cfg)
    except Exception as exc:
        plan.error_rows.append(error_row({**provenance, **base}, exc, stage="algorithm config"))
        return plan
    init_cfg: dict[str, Any] | None = None
    if init_section:
        try:
            init = describe_init(dict(init_section))
        except Exception as exc:
            plan.error_rows.append(error_row({**provenance, **solver}, exc, stage="init config"))
            return plan
        if init["problem"] == solver["problem"]:
            if init["device"] == "gpu" and not (
                solver["device"] == "gpu" and _accepts_device_init(solver_cfg)
            ):
                plan.skipped_inits.append((solver["algorithm"], init["label"]))
                return plan
            init_cfg = dict(init_section)
            solver["kernel_families"] = sorted(
                set(solver["kernel_families"]) | set(init["kernel_families"])
            )
            solver["init"] = init["label"]
    solver.setdefault("init", None)
    try:
        specs = expand(dataset)
    except Exception as exc:
        plan.error_rows.append(error_row({**provenance, **solver}, exc, stage="dataset config"))
        return plan

    # Ids stay those of earlier versions unless instrumented runs or an initializer
    # other than the family's default are asked for.
    keyed: dict[str, Any] = {k: v for k, v in timing.items() if v or k != "instrumented"}
    if init_cfg is not None and solver["init"] != _default_init(solver["problem"]):
        keyed["init"] = init_cfg
    ids = TaskIds(algorithm, keyed)
    # the fields every task of the job shares, made once
    common = {
        "algorithm_cfg": solver_cfg,
        "init_cfg": init_cfg,
        "gpu": gpu,
        **timing,
        **solver,
        "provenance": provenance,
        "data_dir": cfg.get("data_dir"),
        "verify": bool(run.get("verify", True)),
        "timeout_s": float(run.get("task_timeout_s", 600)),
        "memory_limit": run.get("task_memory_limit", "auto"),
        "time_limit_s": run_opts.get("time_limit_s"),
        "isolate": bool(run.get("isolate", True)),
    }
    # Each task made as Task(**fields) would make it, without the frozen dataclass's
    # __init__ (a setattr per field: 3.5 us a task, against 0.4), where the fields are
    # all there: every field but the three per instance is in ``common``.
    whole = set(common) | {"task_id", "instance_spec", "instance_key"} == _TASK_FIELDS
    new = object.__new__
    filled = _filled_for(specs)
    families: dict[str, str | None] = {}  # by target: 10,000 specs of one generator resolve once
    for spec in specs:
        target = str(spec.get("_target_"))
        if target not in families:
            families[target] = spec_problem(spec)
        family = families[target]
        if family is not None and family != solver["problem"]:
            plan.skipped_pairs.append((solver["algorithm"], solver["problem"], spec_label(spec), family))
            continue
        texts = filled.texts(spec) if filled is not None else None
        if texts is not None:
            tid, ikey = ids.of_json(texts[0]), key_of_canonical(texts[1])
        else:
            frozen = frozen_targets(spec)
            tid = ids(frozen)
            try:
                ikey = instance_key(frozen, frozen=True)
            except Exception:  # a spec that is no plain data: its load gives the error row
                ikey = None
        if whole:
            task = new(Task)
            fields = task.__dict__
            fields.update(common)
            fields.update(task_id=tid, instance_spec=spec, instance_key=ikey)
        else:
            task = Task(task_id=tid, instance_spec=spec, instance_key=ikey, **common)
        plan.tasks.append(task)
    plan.shared = {k: v for k, v in common.items() if k != "provenance"}
    return plan
