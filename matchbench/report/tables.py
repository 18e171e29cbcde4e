"""Paper tables as views of result rows: ``matchbench report --experiment NAME``.

An experiment preset ``conf/experiment/NAME.yaml`` runs a paper's table
(``matchbench -m +experiment=NAME``; its rows carry ``experiment == NAME``) and declares,
in a ``report`` section, how the table is drawn from those rows. This module reads the
section, never times anything, and renders Markdown or a small plain HTML page. The
paper's own numbers are kept once as data in ``matchbench/data/papers/<file>.csv``
(format: that folder's README).

The work is split by job:

- here: which presets there are, an experiment's ``report`` section
  (:func:`experiment_spec`) and its result rows (:func:`select_experiment_rows`);
- :mod:`matchbench.report.table_spec`: the contract of the ``report`` section and its
  check;
- :mod:`matchbench.report.table_fields`: the template fields of a result row;
- :mod:`matchbench.report.table_cells`: a table's cells (:class:`Grid`,
  :func:`table_grid`), ratios;
- :mod:`matchbench.report.table_papers`: a paper's numbers as columns;
- :mod:`matchbench.report.table_render`: text, Markdown and HTML
  (:func:`render_experiment`).

Their public names used by the command line and the tests are importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from matchbench.report.table_cells import Grid, table_grid
from matchbench.report.table_papers import PAPERS_DIR
from matchbench.report.table_render import render_experiment
from matchbench.report.table_spec import ReportSpecError, check_spec
from matchbench.results.selection import normalize, select_many
from matchbench.results.store import ResultsError, read_results, result_files, run_dirs

__all__ = [
    "PAPERS_DIR",
    "Grid",
    "ReportSpecError",
    "experiment_names",
    "experiment_spec",
    "render_experiment",
    "select_experiment_rows",
    "table_grid",
]


# --------------------------------------------------------------------------- presets


def experiment_names() -> list[str]:
    """Names of the experiment presets, ``conf/experiment/*.yaml``, sorted."""
    from matchbench.core.paths import CONFIG_DIR

    return sorted(p.stem for p in (Path(CONFIG_DIR) / "experiment").glob("*.yaml"))


def experiment_spec(name: str) -> dict[str, Any]:
    """The ``report`` section of the experiment preset ``name``, unresolved, as plain data.

    The preset is composed as the app composes it (``+experiment=NAME`` on ``config``),
    so defaults and overrides apply; ``${...}`` interpolations are left as written.

    Raises
    ------
    ReportSpecError
        For an unknown preset (the message lists the known ones), a preset that does not
        compose, or one without a ``report.tables`` section.
    """
    import hydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from matchbench.core.paths import CONFIG_DIR

    names = experiment_names()
    if name not in names:
        raise ReportSpecError(
            f"no experiment preset {name!r} in {Path(CONFIG_DIR) / 'experiment'} "
            f"(available: {', '.join(names) or 'none'})"
        )
    try:
        with hydra.initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
            cfg = hydra.compose("config", overrides=[f"+experiment={name}"])
        report = cfg.get("report")
        spec = None if report is None else OmegaConf.to_container(report, resolve=False)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ReportSpecError(f"experiment {name!r}: {' '.join(str(exc).split())}") from None
    if not isinstance(spec, dict) or not spec.get("tables"):
        raise ReportSpecError(
            f"experiment {name!r} (conf/experiment/{name}.yaml) has no report.tables section"
        )
    check_spec(spec)
    return spec


# --------------------------------------------------------------------------- rows


def _has_experiment(run: Path, name: str) -> bool:
    import pyarrow.parquet as pq

    for f in result_files(run):
        try:
            if "experiment" not in pq.read_schema(f).names:
                continue
            col = pq.read_table(f, columns=["experiment"]).column("experiment")
        except (OSError, pa.ArrowException):
            continue  # an unreadable file is reported when the run is read, not here
        if name in col.to_pylist():
            return True
    return False


def select_experiment_rows(
    name: str, results: Sequence[str] = (), root: str | Path = "runs"
) -> pd.DataFrame:
    """The rows of one run of experiment ``name`` (``experiment == name``), normalized.

    Parameters
    ----------
    name : str
        The experiment preset.
    results : sequence of str
        Run ids, commits or result paths, as for ``matchbench report``
        (:func:`~matchbench.results.selection.select_many`); their rows of ``name``.
        Empty: the newest run under ``root`` that has rows of ``name``.
    root : path
        The results root.

    Raises
    ------
    ResultsError
        When the selection has no rows of ``name``.
    """
    if results:
        sel = select_many(list(results), root)
        frame = sel.frame[sel.frame["experiment"] == name]
        if frame.empty:
            seen = sorted(sel.frame["experiment"].dropna().unique().tolist())
            raise ResultsError(
                f"{' '.join(results)}: no rows of experiment {name!r} "
                f"(experiments there: {', '.join(seen) or 'none recorded'})"
            )
        return frame.reset_index(drop=True)
    for run in reversed(run_dirs(root)):
        if _has_experiment(run, name):
            frame = read_results(run)
            frame = frame[frame["experiment"] == name]
            return normalize(frame.reset_index(drop=True))
    raise ResultsError(
        f"no run of experiment {name!r} under {root} (run it: matchbench -m +experiment={name})"
    )
