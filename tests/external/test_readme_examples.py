"""The README's two examples of a solver of one's own work as printed: the Python class
with its YAML, and the outside program's YAML (run here with a small program written for
the tests), both from a ``--config-dir`` outside the package, through ``matchbench -m``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from matchbench.results.store import read_results

ROOT = Path(__file__).parents[2]
PROGRAMS = Path(__file__).parent / "programs"


def _blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Your own solver beside ours") :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(rf"```{lang}\n(.*?)```", section, flags=re.S)


@pytest.mark.slow
def test_the_readme_examples_run_beside_ours_and_are_certified(tmp_path):
    (python_block,) = _blocks("python")
    class_yaml, program_yaml = _blocks("yaml")
    assert python_block.startswith('"""my_solvers.py')
    (tmp_path / "my_solvers.py").write_text(python_block)
    algo = tmp_path / "my_conf" / "algorithm"
    algo.mkdir(parents=True)
    (algo / "my_hk.yaml").write_text(class_yaml)
    (algo / "my_prog.yaml").write_text(program_yaml)
    prog = tmp_path / "my_prog"
    prog.write_text(f"#!{sys.executable}\n" + (PROGRAMS / "fake_mcm.py").read_text())
    prog.chmod(0o755)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]),
        MY_PROG_BIN=str(prog),
        MATCHBENCH_EXTERNAL_DIR=str(tmp_path / "instances"),
    )
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "matchbench",
            "--config-dir",
            str(tmp_path / "my_conf"),
            "-m",
            "algorithm=my_hk,my_prog,hk",
            "dataset=smoke",
            f"run.results_dir={tmp_path / 'runs'}",
            "cluster=local_cpu",
            "cluster.n_workers=1",
            "cluster.dashboard_address=:0",
            "gpu.repetitions=1",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    df = read_results(tmp_path / "runs")
    assert set(df.algorithm) == {"my_hk", "my_prog", "hk"}
    assert (df.status == "ok").all() and df.verified.all(), df[["algorithm", "status", "error"]]
    mine = df[df.algorithm == "my_prog"]
    assert (mine.t_process_s > 0).all() and mine.counters_json.str.contains(
        '"time_source": "reported"'
    ).all()
    # the same instances, the same certified maxima
    by = df.pivot_table(index="instance", columns="algorithm", values="objective", aggfunc="first")
    assert (by["my_hk"] == by["hk"]).all() and (by["my_prog"] == by["hk"]).all()
