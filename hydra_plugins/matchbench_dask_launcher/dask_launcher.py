"""A Hydra launcher that runs all jobs of a sweep concurrently on one Dask cluster.

Hydra's basic launcher runs jobs one after another; matchbench jobs are lists of
independent tasks, so this launcher first asks every job for its plan (the app's
collect mode, inside Hydra's ``run_job`` so each job keeps its own output folder and
saved config), then submits the tasks of all jobs together.
"""

# No `from __future__ import annotations` here: Hydra imports plugin modules outside
# sys.modules while scanning, and dataclasses then cannot resolve string annotations.

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.utils import (
    JobReturn,
    JobStatus,
    configure_log,
    filter_overrides,
    run_job,
    setup_globals,
)
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger(__name__)


@dataclass
class DaskLauncherConf:
    _target_: str = "hydra_plugins.matchbench_dask_launcher.dask_launcher.DaskLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="dask", node=DaskLauncherConf, provider="matchbench")


class DaskLauncher(Launcher):
    def __init__(self) -> None:
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from matchbench.app import collecting, report_summary
        from matchbench.runner.execute import execute
        from matchbench.runner.plan import Plan
        from matchbench.runner.task import error_row

        setup_globals()
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)

        returns: list[JobReturn] = []
        plans: list[Plan] = []
        for i, overrides in enumerate(job_overrides):
            idx = initial_job_idx + i
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
            try:
                sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            except Exception as exc:
                # A bad name in one job (algorithm=nosuch) is that job's error row.
                plan = _failed_plan(self.config, idx, list(overrides), exc, error_row)
                plans.append(plan)
                # Completed as far as Hydra is concerned: the failure is a result row, and
                # Hydra would otherwise re-raise it after the whole sweep has run.
                ret = JobReturn(overrides=list(overrides), status=JobStatus.COMPLETED)
                ret.return_value = {"error": plan.error_rows[0]["error"]}
                returns.append(ret)
                continue
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = f"job{idx}"
                sweep_config.hydra.job.num = idx
            with collecting():
                ret = run_job(
                    hydra_context=self.hydra_context,
                    task_function=self.task_function,
                    config=sweep_config,
                    job_dir_key="hydra.sweep.dir",
                    job_subdir_key="hydra.sweep.subdir",
                )
            returns.append(ret)
            if ret.status == JobStatus.COMPLETED:
                plans.append(ret.return_value)
            else:
                plans.append(_failed_plan(sweep_config, idx, list(overrides), ret._return_value, error_row))

        summary = execute(plans)
        report_summary(summary)
        return returns


def _failed_plan(config: DictConfig, idx: int, overrides: list[str], exc: Any, error_row) -> Any:
    from matchbench.runner.plan import Plan

    base = OmegaConf.to_container(config, resolve=False)
    run = {k: v for k, v in dict(base.get("run", {})).items()}
    cluster = dict(base.get("cluster", {}))
    algo = next((o.split("=", 1)[1] for o in overrides if o.startswith("algorithm=")), None)
    row = error_row(
        {"job_index": idx, "hydra_overrides": " ".join(overrides), "algorithm": algo},
        exc if isinstance(exc, BaseException) else str(exc),
        stage="config",
    )
    return Plan(idx, [], run, cluster, overrides, {}, [row])
