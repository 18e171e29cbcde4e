"""Hydra's basic sweeper, except that one bad job does not stop the sweep.

The basic sweeper composes every job before launching and raises at the first that
fails (``algorithm=nosuch``). matchbench records such a job as an error row, written
by the Dask launcher, and runs the others; so here a job that does not compose is only
logged.
"""

# No `from __future__ import annotations`: see dask_launcher.py.

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore

log = logging.getLogger(__name__)


@dataclass
class MatchbenchSweeperConf:
    _target_: str = "hydra_plugins.matchbench_dask_launcher.sweeper.MatchbenchSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None


ConfigStore.instance().store(group="hydra/sweeper", name="matchbench", node=MatchbenchSweeperConf, provider="matchbench")


class MatchbenchSweeper(BasicSweeper):
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
