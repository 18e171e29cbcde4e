"""Settings that cannot work end the sweep before any cluster starts: one line, exit 2."""

from __future__ import annotations

import io

import pytest

from matchbench.core.params import config_defaults
from matchbench.runner.execute import execute
from matchbench.runner.plan import build_plan

MTX = "matchbench.families.mcm.datasets.mtx_file"


def _cfg(tmp_path, **changes):
    cfg = {
        "algorithm": {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"},
        "dataset": {"_target_": "matchbench.families.mcm.datasets.erdos_renyi", "scale": 5, "seed": 1},
        "gpu": {"repetitions": 1, "warmup": 0},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": None},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60},
        "data_dir": str(tmp_path / "data"),
    }
    for name, value in changes.items():
        section, _, key = name.partition("__")
        cfg[section] = {**cfg[section], key: value} if key else value
    return cfg


LOUVAIN = {"_target_": "matchbench.families.community.louvain.Louvain", **config_defaults("algorithm", "louvain")}

CASES = {
    "no repetitions": ({"gpu__repetitions": 0}, "gpu.repetitions must be an integer >= 1"),
    "negative warm-up": ({"gpu__warmup": -1}, "gpu.warmup must be an integer >= 0"),
    "zero task timeout": ({"run__task_timeout_s": 0}, "run.task_timeout_s must be a finite number > 0"),
    "a memory limit that is no size": ({"run__task_memory_limit": "lots"}, "run.task_memory_limit must be a number of bytes"),
    "zero time limit": ({"algorithm__time_limit_s": 0}, "algorithm.time_limit_s must be a positive number"),
    "an option of the wrong type": ({"algorithm": {**LOUVAIN, "t_bin": "x"}}, "algorithm config"),
    "an option of a solver without any": ({"algorithm__nosuch": 1}, "algorithm.nosuch is not an option of HopcroftKarp (its options: none)"),
    "a misspelled option": ({"algorithm": {**LOUVAIN, "t_bn": 1}}, "did you mean algorithm.t_bin?"),
    "mtx without a path": ({"dataset": {"_target_": MTX, "path": "???"}}, "dataset.path is mandatory"),
    "a folder as the path": ({"dataset": {"_target_": MTX, "path": "."}}, "dataset.path=.: is a directory"),
    "a file that is not there": ({"dataset": {"_target_": MTX, "path": "nope.mtx"}}, "dataset.path=nope.mtx: no such file"),
    "every pair left out": ({"algorithm": LOUVAIN}, "nothing to run: every solver x instance pair"),
}


@pytest.mark.parametrize(("changes", "message"), CASES.values(), ids=CASES)
def test_bad_settings_end_the_sweep_before_it_starts(tmp_path, changes, message):
    log = io.StringIO()
    with pytest.raises(SystemExit) as info:
        execute([build_plan(_cfg(tmp_path, **changes))], stream=log)
    text = log.getvalue()
    assert info.value.code == 2 and message in text, text
    assert text.count("\n") == 1 and text.startswith("matchbench: error: ")
    assert "Dask dashboard" not in text and not (tmp_path / "runs").exists()


def test_good_settings_still_run(tmp_path):
    summary = execute([build_plan(_cfg(tmp_path))], stream=io.StringIO())
    assert summary["rows"] == {"ok": 1}


def test_a_misspelled_config_option_is_one_line_with_the_closest_name(capsys):
    from matchbench import cli

    with pytest.raises(SystemExit) as info:
        cli.main(["-m", "algorithm=hk,pfpp", "dataset=smoke"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err == (
        "matchbench: error: algorithm=pfpp: no such option of the config group 'algorithm'; "
        "did you mean algorithm=pfp?\n"
    )
