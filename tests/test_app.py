"""The Hydra app: every config composes and instantiates; a real multirun writes Parquet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from matchbench.core.solver import BaseSolver
from matchbench.results.store import read_results

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def _names(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.fixture(scope="module")
def hydra_conf():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        yield


@pytest.mark.parametrize("name", _names("algorithm"))
def test_every_algorithm_config_instantiates(hydra_conf, name):
    cfg = compose("config", overrides=[f"algorithm={name}"])
    solver = instantiate(cfg.algorithm, _convert_="all")
    assert isinstance(solver, BaseSolver)
    # the file name, Solver.name and the results' algorithm column are one string
    assert solver.name == name
    assert solver.device in ("cpu", "gpu") and solver.problem


@pytest.mark.parametrize("name", _names("dataset"))
def test_every_dataset_config_composes_and_expands(hydra_conf, name):
    from matchbench.datasets import expand

    cfg = compose("config", overrides=[f"dataset={name}"])
    data = OmegaConf.to_container(cfg.dataset, resolve=True, throw_on_missing=False)
    if "???" in str(data):  # a path/name the user must give
        return
    specs = expand(data)
    assert specs and all("_target_" in s for s in specs)


@pytest.mark.parametrize("group", ["cluster", "gpu", "experiment"])
def test_every_other_group_composes(hydra_conf, group):
    for name in _names(group):
        cfg = compose("config", overrides=[f"+{group}={name}" if group == "experiment" else f"{group}={name}"])
        assert OmegaConf.to_container(cfg, resolve=False)


def test_default_config_is_the_smoke_main_job(hydra_conf):
    cfg = compose("config")
    assert cfg.cluster.kind == "auto" and cfg.run.results_dir == "runs"
    assert cfg.dataset.instances  # the embedded smoke set


def _matchbench(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "matchbench", *args], cwd=cwd, env=env,
        capture_output=True, text=True, timeout=600,
    )


@pytest.mark.slow
def test_multirun_runs_all_jobs_on_one_cluster(tmp_path):
    res = _matchbench(
        "-m", "algorithm=hk,pfp", "dataset=smoke", f"run.results_dir={tmp_path}",
        "cluster=local_cpu", "cluster.n_workers=2", "cluster.dashboard_address=:0",
        "gpu.repetitions=2", cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    # one cluster, one run, one dashboard line for the whole sweep
    assert res.stderr.count("Dask dashboard: http") == 1, res.stderr[-3000:]
    df = read_results(tmp_path)
    assert df.run_id.nunique() == 1
    ok = df[df.status == "ok"]
    assert set(ok.algorithm) == {"hk", "pfp"} and ok.verified.all()
    assert set(ok.repetition) == {0, 1}
    assert (df.status == "ok").all()  # (a misspelled name is refused before the sweep:
    # tests/test_runner_settings.py)
    # each job keeps its resolved config and overrides with its rows
    for algo in ("hk", "pfp"):
        sub = ok[ok.algorithm == algo]
        assert f"algorithm={algo}" in sub.hydra_overrides.iloc[0]
        assert '"results_dir"' in sub.config_json.iloc[0]

    shown = subprocess.run(
        [sys.executable, "-m", "matchbench", "results", "--root", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert shown.returncode == 0 and "pfp" in shown.stdout and "hk" in shown.stdout
