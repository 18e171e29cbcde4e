"""From a resolved job config to tasks: plain, picklable dicts shipped to Dask workers.

A task is one (instance x algorithm x variant) with its repetitions. Everything a worker
needs is in the dict (resolved config sections, never OmegaConf objects: Hydra's
``${now:}`` and ``${hydra:}`` resolvers do not work in a worker process).
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


def build_plan(cfg: dict[str, Any], *, job_index: int = 0, overrides: list[str] | None = None) -> Plan:
    """Tasks of one job from its resolved config (a plain dict).

    Errors in the algorithm or dataset sections do not raise: they become error rows of
    the plan, so a sweep records them and carries on.
    """
    from matchbench.datasets import expand
    from matchbench.runner.task import error_row

    overrides = list(overrides or [])
    run = dict(cfg.get("run", {}))
    gpu = dict(cfg.get("gpu", {}))
    timing = {"repetitions": int(gpu.get("repetitions", 3)), "warmup": int(gpu.get("warmup", 1))}
    algorithm = dict(cfg["algorithm"])
    dataset = dict(cfg["dataset"])
    provenance = {
        "job_index": job_index,
        "hydra_overrides": " ".join(overrides),
        "config_json": to_json(cfg),
    }
    plan = Plan(job_index, [], run, dict(cfg.get("cluster", {})), overrides, cfg)
    base = {"algorithm": str(algorithm.get("_target_", "?")).rsplit(".", 1)[-1]}

    try:
        solver = describe_solver(algorithm)
    except Exception as exc:
        plan.error_rows.append(error_row({**provenance, **base}, exc, stage="algorithm config"))
        return plan
    try:
        specs = expand(dataset)
    except Exception as exc:
        plan.error_rows.append(error_row({**provenance, **solver}, exc, stage="dataset config"))
        return plan

    for spec in specs:
        tid = task_id(algorithm, spec, timing)
        plan.tasks.append(
            {
                "task_id": tid,
                "algorithm_cfg": algorithm,
                "instance_spec": spec,
                "gpu": gpu,
                **timing,
                **solver,
                "provenance": provenance,
                "data_dir": cfg.get("data_dir"),
                "verify": bool(run.get("verify", True)),
                "timeout_s": float(run.get("task_timeout_s", 600)),
                "isolate": bool(run.get("isolate", True)),
            }
        )
    return plan
