"""Hydra's basic sweeper, except that one bad job does not stop the sweep, and grids.

The basic sweeper composes every job before launching and raises at the first that
fails (``algorithm=nosuch``). matchbench records such a job as an error row, written
by the Dask launcher, and runs the others; so here a job that does not compose is only
logged.

``hydra.sweeper.grids`` (a list of ``params``-like mappings) sweeps a union of grids,
as scikit-learn's ``ParameterGrid`` does with a list of dicts: each grid's product,
crossed with ``hydra.sweeper.params`` and the command line's sweeps (which win over a
grid's value for the same key). A paper's table that puts GPU variants
(``algorithm.bfs: plain,wr``) beside CPU references that have no such key is two grids.
"""

# No `from __future__ import annotations`: see dask_launcher.py.

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

log = logging.getLogger(__name__)


@dataclass
class MatchbenchSweeperConf:
    _target_: str = "hydra_plugins.matchbench_dask_launcher.sweeper.MatchbenchSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None
    grids: Any = None


ConfigStore.instance().store(group="hydra/sweeper", name="matchbench", node=MatchbenchSweeperConf, provider="matchbench")


class MatchbenchSweeper(BasicSweeper):
    def __init__(self, max_batch_size=None, params=None, grids=None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)
        self.grids = [dict(g) for g in (grids or [])]

    def grid_jobs(self, arguments: Sequence[str]) -> list[list[str]]:
        """Every job's overrides: the union over grids, in order, without repeats."""
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        jobs: list[list[str]] = []
        seen: set[tuple[str, ...]] = set()
        for grid in self.grids:
            conf = [f"{k}={v}" for k, v in {**self.params, **grid}.items()] + list(arguments)
            (batch,) = self.split_arguments(parser.parse_overrides(conf), None)
            for job in batch:
                if tuple(job) not in seen:
                    seen.add(tuple(job))
                    jobs.append(job)
        return jobs

    def sweep(self, arguments: list[str]) -> Any:
        if not self.grids:
            return super().sweep(arguments)
        jobs = self.grid_jobs(arguments)
        self.overrides = list(self.split_overrides_to_chunks(jobs, self.max_batch_size))
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        returns = []
        initial_job_idx = 0
        while not self.is_done():
            batch = self.get_job_batch()
            self.validate_batch_is_legal(batch)
            results = self.launcher.launch(batch, initial_job_idx=initial_job_idx)
            initial_job_idx += len(batch)
            returns.append(results)
        return returns
    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        for overrides in batch:
            try:
                self.hydra_context.config_loader.load_sweep_config(
                    master_config=self.config, sweep_overrides=list(overrides)
                )
            except Exception as exc:
                log.warning(
                    "job %s does not compose (recorded as an error row): %s",
                    " ".join(overrides), str(exc).splitlines()[0],
                )
