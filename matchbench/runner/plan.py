"""From a resolved job config to tasks: plain, picklable dicts shipped to Dask workers.

A task is one (instance x algorithm x variant) with its repetitions; with ``run.batch`` the
sweep ships many of them per Dask task (:mod:`matchbench.runner.batch`), from the same
plan. Everything a worker
needs is in the dict (resolved config sections, never OmegaConf objects: Hydra's
``${now:}`` and ``${hydra:}`` resolvers do not work in a worker process).

Pairs that cannot mean anything are left out here, before anything is loaded: a solver of
one problem family on a dataset whose function declares another family
(:func:`matchbench.datasets.spec_problem`). The plan keeps them in ``skipped_pairs`` and
the sweep reports them in one line, not as one error row per pair.

The ``init`` section (the ``init`` config group) names the initial answer of the families
that have one (MCM: ``cheap_cpu`` or ``cheap_gpu``). It ships with the tasks of solvers
of its family and is dropped from the others (their tasks, and so their ids, do not
depend on it: a sweep over ``init`` runs them once). A GPU initializer is run by the
solver on its device copy of the instance; pairs of it with a solver that cannot
(``device_init`` false: the CPU references) are left out, in ``skipped_inits``.

Run options that belong to the algorithm rather than to the solver are taken out of the
algorithm config before the solver is built: ``algorithm.time_limit_s`` (seconds one
repetition may take, warm-up included; over it the task is killed and recorded as a
``timeout`` row carrying the limit; default: only ``run.task_timeout_s`` bounds the task).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from matchbench.results.schema import to_json


@dataclass
class Plan:
    """One Hydra job's tasks, its run settings and its provenance."""

    job_index: int
    tasks: list[dict[str, Any]]
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
    """Stable id of a task: the same algorithm config, instance spec and timing settings
    give the same id in every run (what ``resume=true`` matches on)."""
    blob = json.dumps([algorithm, spec, timing], sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


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
    from matchbench.datasets import _label, expand, spec_problem
    from matchbench.runner.task import error_row

    overrides = list(overrides or [])
    run = dict(cfg.get("run", {}))
    gpu = dict(cfg.get("gpu", {}))
    timing = {
        "repetitions": int(gpu.get("repetitions", 3)),
        "warmup": int(gpu.get("warmup", 1)),
        "instrumented": int(gpu.get("instrumented", 0) or 0),
    }
    algorithm = dict(cfg["algorithm"])
    dataset = dict(cfg["dataset"])
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
    if cfg.get("init"):
        try:
            init = describe_init(dict(cfg["init"]))
        except Exception as exc:
            plan.error_rows.append(error_row({**provenance, **solver}, exc, stage="init config"))
            return plan
        if init["problem"] == solver["problem"]:
            if init["device"] == "gpu" and not (
                solver["device"] == "gpu" and _accepts_device_init(solver_cfg)
            ):
                plan.skipped_inits.append((solver["algorithm"], init["label"]))
                return plan
            init_cfg = dict(cfg["init"])
            solver["kernel_families"] = sorted(
                set(solver["kernel_families"]) | set(init["kernel_families"])
            )
            solver["init"] = init["label"]
    try:
        specs = expand(dataset)
    except Exception as exc:
        plan.error_rows.append(error_row({**provenance, **solver}, exc, stage="dataset config"))
        return plan

    families: dict[str, str | None] = {}  # by target: 10,000 specs of one generator resolve once
    for spec in specs:
        target = str(spec.get("_target_"))
        if target not in families:
            families[target] = spec_problem(spec)
        family = families[target]
        if family is not None and family != solver["problem"]:
            plan.skipped_pairs.append((solver["algorithm"], solver["problem"], _label(spec), family))
            continue
        # Ids stay those of earlier versions unless instrumented runs or an initializer
        # other than the papers' cheap matching are asked for.
        keyed = {k: v for k, v in timing.items() if v or k != "instrumented"}
        if init_cfg is not None and solver.get("init") != "cheap_cpu":
            keyed["init"] = init_cfg
        tid = task_id(algorithm, spec, keyed)
        plan.tasks.append(
            {
                "task_id": tid,
                "algorithm_cfg": solver_cfg,
                "init_cfg": init_cfg,
                "instance_spec": spec,
                "gpu": gpu,
                **timing,
                **solver,
                "provenance": provenance,
                "data_dir": cfg.get("data_dir"),
                "verify": bool(run.get("verify", True)),
                "timeout_s": float(run.get("task_timeout_s", 600)),
                "time_limit_s": run_opts.get("time_limit_s"),
                "isolate": bool(run.get("isolate", True)),
            }
        )
    return plan
