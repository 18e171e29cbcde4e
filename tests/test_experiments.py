"""Every experiment preset runs through the real pipeline and its tables render from Parquet.

Each preset is run reduced (its smallest instances, CPU references; GPU solvers are
skipped with their reason on a machine without a GPU) as ``matchbench -m
+experiment=NAME`` in a subprocess, then ``matchbench report --experiment NAME`` renders
its tables from the rows that run wrote. A new preset must add its reduction here.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from matchbench.report import cli as report_cli
from matchbench.results.store import read_results

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
PRESETS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))

#: preset -> overrides that shrink it to seconds on two CPU cores.
REDUCED: dict[str, list[str]] = {
    "quickstart": [],
    "deveci2013_table1": ["dataset=smoke"],
    "deveci2013_table2": ["dataset=smoke", "gpu.repetitions=2"],
    "gpr_table1": ["dataset=smoke", "gpu.repetitions=2"],
    "gpr_fig1": ["dataset=smoke", "algorithm.k=0.7,1"],
    "datenagi2016_table1": ["dataset.n=24,40", "gpu.repetitions=2"],
    "datenagi2016_table3": ["dataset.n=24,40", "gpu.repetitions=2"],
    "mcm_refs": ["dataset.scale=6,7", "gpu.repetitions=2"],
    "mcm_e2e": ["dataset=smoke", "gpu.repetitions=2"],
    "mcm_auto_train": ["dataset=smoke", "gpu.repetitions=2"],
    "naim2015_suitor": ["dataset=wmatch_smoke", "gpu.repetitions=2"],
    "naim2015_fig5": ["dataset=wmatch_smoke", "algorithm.vertices_per_warp=1,8", "gpu.repetitions=2"],
    "manne2016_sm": ["dataset=sm_smoke", "gpu.repetitions=2"],
    "hovland2020_roma": ["dataset=complete_smoke", "gpu.repetitions=2"],
    "naim2017_louvain": ["dataset=community_smoke", "gpu.repetitions=2"],
    "batch_lap": ["dataset.count=6", "run.batch=4", "gpu.repetitions=2"],
    "batch_many": ["dataset.count=6", "run.batch=4"],
    "scaling_mixed": ["gpu.repetitions=2"],
    "peers_mcm": ["dataset.scale=6", "gpu.repetitions=2"],
    "peers_lap": ["dataset.n=24,40", "gpu.repetitions=2"],
    "peers_lap_batch": ["dataset.count=6", "run.batch=4", "gpu.repetitions=2"],
    "peers_community": ["dataset.scale=8", "gpu.repetitions=2"],
    "louvain_sota": ["dataset=community_smoke", "gpu.repetitions=2"],
    "leiden_sota": ["dataset=community_smoke", "gpu.repetitions=2"],
}


def test_every_preset_has_a_reduced_run():
    assert sorted(REDUCED) == PRESETS


@pytest.mark.parametrize("name", PRESETS)
def test_preset_composes_with_a_report_section(name):
    from matchbench.report.tables import experiment_spec

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"+experiment={name}"], return_hydra_config=True)
    sweep = OmegaConf.to_container(cfg.hydra.sweeper, resolve=False)
    assert sweep.get("params") or sweep.get("grids"), "a preset is a sweep"
    spec = experiment_spec(name)
    assert spec["title"] and spec["tables"]


def _matchbench(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "matchbench", *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=900,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", PRESETS)
def test_reduced_preset_runs_and_its_tables_render(tmp_path, name):
    from matchbench.report.tables import experiment_spec

    res = _matchbench(
        "-m", f"+experiment={name}", *REDUCED[name], f"run.results_dir={tmp_path / 'runs'}",
        "cluster=local_cpu", "cluster.n_workers=2", "cluster.dashboard_address=:0",
        f"data_dir={tmp_path / 'data'}", cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    df = read_results(tmp_path / "runs")
    assert (df.experiment == name).all()
    # Every row is accounted for: CPU answers verified, GPU tasks skipped with a reason,
    # outside programs not built here (the peers) skipped saying which variable to set.
    unbuilt = df.error.fillna("").str.contains("no program: set algorithm.bin=PATH or the environment variable")
    assert (df[unbuilt].status == "skipped").all()
    df = df[~unbuilt]
    cpu, gpu = df[df.device == "cpu"], df[df.device == "gpu"]
    assert len(df) and (cpu.status == "ok").all() and cpu.verified.all(), cpu[["algorithm", "error"]]
    assert (gpu.status == "skipped").all() and gpu.error.str.contains("GPU=1").all()
    if len(gpu):
        assert res.stderr.count("GPU task(s)") == 1  # one line, not one per task

    md = _matchbench("report", "--experiment", name, "--root", str(tmp_path / "runs"), cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    for table in experiment_spec(name)["tables"]:
        assert f"### {table['title']}" in md.stdout
    for algo in set(cpu.algorithm):
        assert algo in md.stdout
    assert f"matchbench report --experiment {name}" in md.stdout

    html = _matchbench("report", "--experiment", name, "--root", str(tmp_path / "runs"),
                       "--format", "html", "-o", str(tmp_path / "t.html"), cwd=tmp_path)
    assert html.returncode == 0, html.stderr
    assert "<table" in (tmp_path / "t.html").read_text()


@pytest.mark.slow
def test_quickstart_crosses_families_and_writes_the_report(tmp_path):
    """The main job: both families' references verified, cross-family pairs left out in one
    line, the HTML report written and its path printed."""
    res = _matchbench(
        "-m", "+experiment=quickstart", f"run.results_dir={tmp_path / 'runs'}",
        "cluster=local_cpu", "cluster.n_workers=2", "cluster.dashboard_address=:0", cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    err = res.stderr
    assert err.count("of different problems") == 1 and "Dask dashboard: http" in err
    report = next(line.split(": ", 1)[1] for line in err.splitlines() if line.startswith("report: "))
    assert Path(report).is_file() and Path(report).stat().st_size > 10_000
    df = read_results(tmp_path / "runs")
    ok = df[df.status == "ok"]
    assert set(ok.problem) == {"mcm", "lap", "wmatch", "smarriage", "mwpm", "community"}
    assert ok.verified.all()
    assert {"hk", "pfp", "pr", "scipy_hk", "scipy_lsa", "lapjv", "hungarian_tree", "greedy", "ld",
            "suitor", "bsuitor", "mwm_exact", "roma", "louvain", "nx_louvain"} <= set(ok.algorithm)
    # every solver that exists is in the main job: run, or (GPU ones here) skipped in a row
    # (outside programs, matchbench.external, need a program built by the user: their
    # presets are peers_*, not the main job)
    shipped = {
        p.stem for p in (CONF / "algorithm").glob("*.yaml")
        if "matchbench.external" not in p.read_text()
    }
    assert set(df.algorithm) == shipped, shipped ^ set(df.algorithm)


DOCS = ROOT / "docs" / "benchmarks"


@pytest.mark.parametrize("page", sorted(p.stem for p in DOCS.glob("*.md") if "\nMade by: `matchbench report --experiment" in p.read_text()))
def test_regenerated_pages_are_views_of_the_kept_runs(page):
    """A page made by ``report --experiment`` is exactly what the kept Parquet rows give."""
    from matchbench.report.tables import experiment_spec, render_experiment, select_experiment_rows

    text = (DOCS / f"{page}.md").read_text()
    command = next(line for line in text.splitlines() if line.startswith("Made by: "))
    command = command.removeprefix("Made by: ").strip("`")
    # the runs the page names (several for a page comparing sweeps), else the newest
    args = report_cli._parser().parse_args(shlex.split(command)[2:])
    frame = select_experiment_rows(page, tuple(args.results), DOCS / "runs")
    assert render_experiment(frame, experiment_spec(page), command=command).strip() == text.strip()
