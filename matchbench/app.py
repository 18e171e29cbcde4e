"""The Hydra application: ``matchbench [overrides]`` and ``matchbench -m ...`` sweeps.

A single run builds its plan and executes it on a cluster of its own. In a multirun the
Dask launcher (``hydra_plugins/matchbench_dask_launcher``) calls :func:`job` once per
job in *collect* mode: each call only returns its :class:`~matchbench.runner.plan.Plan`,
and the launcher runs the tasks of all jobs together on one cluster.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterator
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from matchbench.core.paths import conf_dir

_collecting: contextvars.ContextVar[bool] = contextvars.ContextVar("matchbench_collect", default=False)


@contextlib.contextmanager
def collecting() -> Iterator[None]:
    """Within this context :func:`job` returns plans instead of executing them."""
    token = _collecting.set(True)
    try:
        yield
    finally:
        _collecting.reset(token)


def job_plan(cfg: DictConfig):
    """The plan of the current Hydra job, from its config resolved to plain data."""
    from hydra.core.hydra_config import HydraConfig

    from matchbench.runner.plan import build_plan

    hc = HydraConfig.get()
    overrides = list(hc.overrides.task)
    job_index = hc.job.num if hc.job.get("num") is not None else 0
    # Resolve here, in the process that has Hydra's resolvers; workers get plain dicts.
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    experiment = hc.runtime.choices.get("experiment")
    return build_plan(plain, job_index=int(job_index), overrides=overrides, experiment=experiment)


def report_summary(summary: dict[str, Any], stream=None) -> None:
    stream = stream or sys.stderr
    rows = ", ".join(f"{k}={v}" for k, v in sorted(summary["rows"].items())) or "no rows"
    stream.write(f"results: {summary['dir']} ({rows})\n")
    if summary.get("report"):
        stream.write(f"report: {summary['report']}\n")
    stream.write("show them: matchbench results   (or pandas.read_parquet / DuckDB, see README)\n")
    for name in summary.get("experiments", []):
        stream.write(f"paper tables: matchbench report --experiment {name}\n")


def job(cfg: DictConfig):
    """One Hydra job: build its plan and run it (in collect mode, only return the plan)."""
    plan = job_plan(cfg)
    if _collecting.get():
        return plan
    from matchbench.runner.execute import execute

    summary = execute([plan])
    report_summary(summary)
    return summary


def main() -> None:
    """Hydra's command line on the configs shipped with matchbench (:func:`conf_dir`).

    The config folder is looked up when the command starts, from an installed wheel or
    the checkout, whatever the working directory; ``--config-dir DIR`` (Hydra's flag)
    adds a folder of one's own beside it (``DIR/algorithm/my_solver.yaml`` is then
    ``algorithm=my_solver``).
    """
    hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")(job)()
