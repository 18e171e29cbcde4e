"""Outside programs as solvers (issue #32), with small programs written for the tests
(``tests/external/programs/``): one that solves correctly, one that answers wrongly, one
that crashes, one that hangs, one whose output is garbage, one that floods its output,
one that only prints an objective, and a batched one. Every path ends in the row the
issue asks for, and the sweep goes on.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from matchbench.core.errors import AnswerError, ExternalProgramError, ExternalTimeout
from matchbench.external import ExternalSolver
from matchbench.results.store import read_results
from matchbench.runner.execute import execute
from matchbench.runner.plan import build_plan

PROGRAMS = Path(__file__).parent / "programs"
ER = {
    "_target_": "matchbench.families.mcm.datasets.erdos_renyi",
    "scale": 6,
    "avg_degree": 3.0,
    "seed": 3,
}


def fake_mcm(mode: str = "correct", **changes) -> dict:
    """The algorithm config of ``programs/fake_mcm.py`` in ``mode``."""
    return {
        "_target_": "matchbench.external.ExternalSolver",
        "name": "fake_mcm",
        "problem": "mcm",
        "command": "{python} {bin} {input} {output} {args}",
        "bin": str(PROGRAMS / "fake_mcm.py"),
        "input_format": "edges",
        "answer": "file",
        "answer_format": "row_mates",
        "time_pattern": r"solve time: ([0-9.eE+-]+) s",
        "time_unit": "s",
        "objective_pattern": r"matched: (\d+)",
        "args": f"--mode={mode}",
        "timeout_s": 30,
    } | changes


def _cfg(tmp_path, algorithm, dataset=ER, **run) -> dict:
    return {
        "algorithm": algorithm,
        "dataset": dataset,
        "gpu": {"repetitions": 2, "warmup": 1},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
        "run": {
            "results_dir": str(tmp_path / "runs"),
            "task_timeout_s": 120,
            "isolate": True,
            "verify": True,
            "id": "external",
        }
        | run,
        "data_dir": str(tmp_path / "data"),
    }


def _solver(**changes) -> ExternalSolver:
    cfg = fake_mcm(**changes)
    cfg.pop("_target_")
    return ExternalSolver(**cfg)


@pytest.fixture
def instance():
    from matchbench.datasets import load

    return load(ER)


@pytest.fixture(autouse=True)
def instance_dir(tmp_path, monkeypatch):
    path = tmp_path / "instances"
    monkeypatch.setenv("MATCHBENCH_EXTERNAL_DIR", str(path))
    return path


# -- the configuration is checked where it is read ------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"command": "{bin} {inptu} {output}"}, "unknown placeholder(s) ['inptu']"),
        ({"command": "{bin} {output}"}, "never names the instance file {input}"),
        ({"command": "{bin} {input}"}, "neither command nor env names {output}"),
        ({"command": "{bin} '{input}"}, "cannot be split into words"),
        (
            {"input_format": "metis"},
            "input_format='metis': the mcm family has no such writer format; it has: ecl, edges, mtx",
        ),
        (
            {"answer_format": "mates"},
            "answer_format='mates': the mcm family has no such reader format",
        ),
        ({"answer": "stdin"}, "answer must be one of 'file', 'stdout', 'none'"),
        ({"answer": "none", "objective_pattern": None}, "needs objective_pattern"),
        ({"time_pattern": "solve (time"}, "is not a regular expression"),
        ({"time_pattern": "time: [0-9.]+"}, "must have exactly one group"),
        ({"time_unit": "min"}, "time_unit must be one of"),
        ({"timeout_s": 0}, "timeout_s must be a finite number > 0"),
        ({"bin": None}, "set bin (the program's path) or bin_env"),
        ({"problem": "tsp"}, "unknown problem 'tsp'"),
        ({"name": "a b"}, "a name of letters"),
        (
            {"batch_input_format": "npy_stack"},
            "set both batch_input_format and batch_answer_format",
        ),
    ],
)
def test_bad_configuration_is_refused_naming_the_setting(changes, message):
    with pytest.raises((ValueError, KeyError)) as err:
        _solver(**changes)
    assert message in str(err.value)


def test_a_missing_program_names_the_setting_to_make(monkeypatch, instance):
    monkeypatch.delenv("FAKE_MCM_BIN", raising=False)
    s = _solver(bin=None, bin_env="FAKE_MCM_BIN", command="{bin} {input} {output}")
    skip, reason = s.skip(instance)  # not built here: skipped, saying what to set
    assert skip and "set algorithm.bin=PATH or the environment variable FAKE_MCM_BIN" in reason
    with pytest.raises(
        ExternalProgramError,
        match=r"set algorithm.bin=PATH or the environment variable FAKE_MCM_BIN",
    ):
        s.prepare(instance)
    monkeypatch.setenv("FAKE_MCM_BIN", str(PROGRAMS / "no-such-program"))
    with pytest.raises(
        ExternalProgramError, match=r"\$FAKE_MCM_BIN='.*no-such-program' is not an executable file"
    ):
        s.skip(instance)


def test_the_variant_is_the_args_and_the_name_the_config(instance):
    s = _solver(mode="wrong")
    assert (s.name, s.problem, s.device, s.variant()) == (
        "fake_mcm",
        "mcm",
        "cpu",
        "args=--mode=wrong",
    )
    assert not s.batchable


# -- one repetition, in this process ------------------------------------------------------------


def test_a_correct_program_is_certified_and_timed_by_its_own_clock(instance, instance_dir):
    from matchbench.core.problem import get_problem

    s = _solver()
    s.skip(instance)
    s.prepare(instance)
    argv = s.command_line()
    assert argv[0] == sys.executable and argv[-1] == "--mode=correct"
    (written,) = list(instance_dir.iterdir())
    assert argv[2] == str(written)
    s.run()
    answer = s.result()
    m = s.measurements()
    assert m.counters["time_source"] == "reported" and m.process > m.solve > 0
    v = get_problem("mcm").verify(instance, answer)
    assert v.verified and m.counters["reported_objective"] == v.objective
    # the instance file is reused: another repetition writes nothing new
    s.prepare(instance)
    assert list(instance_dir.iterdir()) == [written]
    s.run()
    assert get_problem("mcm").verify(instance, s.result()).verified


def test_a_hanging_program_is_killed_with_its_process_group(instance):
    s = _solver(mode="hang", timeout_s=1.0)
    s.prepare(instance)
    with pytest.raises(ExternalTimeout) as err:
        s.run()
    assert err.value.limit_s == 1.0 and "timeout_s=1 s" in str(err.value)


@pytest.mark.parametrize(
    ("mode", "error", "message"),
    [
        (
            "crash",
            ExternalProgramError,
            "failed (exit status 3); stderr tail: fake_mcm: segmentation fault (pretend)",
        ),
        ("garbage", AnswerError, "fake_mcm's answer file"),
        ("noanswer", AnswerError, "exited 0 but wrote no answer file"),
        (
            "silent",
            ExternalProgramError,
            "time_pattern 'solve time: ([0-9.eE+-]+) s' found nothing",
        ),
        (
            "flood",
            ExternalProgramError,
            "wrote more than max_output_bytes=1048576 bytes and was killed",
        ),
    ],
)
def test_a_failing_program_raises_what_names_the_failure(instance, mode, error, message):
    s = _solver(mode=mode, max_output_bytes=1 << 20)
    s.prepare(instance)
    with pytest.raises(error) as err:
        s.run()
    assert message in str(err.value)


@pytest.mark.parametrize("color", [False, True], ids=["plain", "coloured-log"])
def test_an_answer_on_standard_output_after_a_marker(tmp_path, color):
    from matchbench.core.problem import get_problem
    from matchbench.families.lap.datasets import uniform

    instances = [uniform(n=8, seed=s) for s in range(4)]
    s = ExternalSolver(
        name="fake_lap_batch",
        problem="lap",
        command="{python} {bin} {input} {args}",
        args="--color" if color else "",
        bin=str(PROGRAMS / "fake_lap_batch.py"),
        input_format="npy",
        answer="stdout",
        answer_format="row_to_col",
        batch_input_format="npy_stack",
        batch_answer_format="row_to_col_lines",
        answer_after="assignments:",
        time_pattern=r"elapsed ([0-9.]+) us",
        time_unit="us",
    )
    assert s.batchable
    s.prepare_batch(instances)
    s.run()
    answers = s.result_batch()
    assert s.measurements().counters["batch_size"] == 4
    lap = get_problem("lap")
    assert all(lap.verify(i, a).verified for i, a in zip(instances, answers, strict=True))


# -- the whole pipeline: rows for every path, the sweep goes on ---------------------------------


@pytest.mark.slow
def test_every_path_of_an_outside_program_is_a_row_and_the_sweep_goes_on(tmp_path, instance_dir):
    modes = ["correct", "wrong", "crash", "hang", "garbage", "flood"]
    plans = []
    for i, mode in enumerate(modes):
        algorithm = fake_mcm(mode, timeout_s=3.0, max_output_bytes=1 << 20)
        plans.append(build_plan(_cfg(tmp_path, algorithm), job_index=i))
    plans.append(
        build_plan(
            _cfg(
                tmp_path,
                {
                    "_target_": "matchbench.external.ExternalSolver",
                    "name": "fake_community",
                    "problem": "community",
                    "command": "{python} {bin} {input}",
                    "bin": str(PROGRAMS / "fake_community.py"),
                    "input_format": "edges",
                    "answer": "none",
                    "objective_pattern": r"modularity: ([0-9.]+)",
                },
                dataset={
                    "_target_": "matchbench.families.community.datasets.community_smoke",
                    "name": "karate",
                },
            ),
            job_index=len(modes),
        )
    )
    for p in plans:
        assert not p.error_rows, p.error_rows
    summary = execute(plans, stream=io.StringIO())
    df = read_results(summary["dir"])
    by = {mode: df[df.variant == f"args=--mode={mode}"] for mode in modes}

    ok = by["correct"]
    assert len(ok) == 2 and (ok.status == "ok").all() and ok.verified.all()
    assert (ok.t_process_s > ok.t_solve_s).all() and (ok.t_solve_s > 0).all()
    assert ok.counters_json.str.contains('"time_source": "reported"').all()

    wrong = by["wrong"]
    assert (wrong.status == "wrong").all() and not wrong.verified.any()
    assert wrong.verify_reason.str.contains("not maximum|augmenting", regex=True).all(), (
        wrong.verify_reason.tolist()
    )
    assert wrong.error.str.startswith("certificate: ").all()

    crash = by["crash"]
    assert (crash.status == "error").all()
    assert crash.error.str.contains(
        "failed (exit status 3); stderr tail: fake_mcm: segmentation fault", regex=False
    ).all()

    hang = by["hang"]
    assert (hang.status == "timeout").all() and (hang.time_limit_s == 3.0).all()

    garbage = by["garbage"]
    assert (garbage.status == "error").all()
    assert garbage.error.str.contains("fake_mcm's answer file, line 3").all(), (
        garbage.error.tolist()
    )

    assert (by["flood"].status == "error").all()

    comm = df[df.algorithm == "fake_community"]
    assert len(comm) and (comm.status == "ok").all() and comm.verified.isna().all()
    assert (comm.objective == 0.4125).all()
    assert comm.verify_reason.str.startswith("objective only, not certified").all()

    # one file per instance (the MCM graph, the community graph), shared by the six
    # programs and their three repetitions each
    assert len([p for p in instance_dir.iterdir() if p.name.endswith(".edges")]) == 2


@pytest.mark.slow
def test_a_batch_of_instances_goes_to_one_run_of_a_batched_program(tmp_path):
    dataset = {
        "name": "lap_tiny",
        "many": {"_target_": "matchbench.families.lap.datasets.uniform", "n": 6},
        "count": 12,
        "seed": 1,
    }
    algorithm = {
        "_target_": "matchbench.external.ExternalSolver",
        "name": "fake_lap_batch",
        "problem": "lap",
        "command": "{python} {bin} {input}",
        "bin": str(PROGRAMS / "fake_lap_batch.py"),
        "input_format": "npy",
        "answer": "stdout",
        "answer_format": "row_to_col",
        "answer_after": "assignments:",
        "batch_input_format": "npy_stack",
        "batch_answer_format": "row_to_col_lines",
        "time_pattern": r"elapsed ([0-9.]+) us",
        "time_unit": "us",
    }
    plan = build_plan(_cfg(tmp_path, algorithm, dataset=dataset, batch=12))
    assert not plan.error_rows, plan.error_rows
    summary = execute([plan], stream=io.StringIO())
    df = read_results(summary["dir"])
    assert len(df) == 24 and (df.status == "ok").all() and df.verified.all()
    assert (df.batch_size == 12).all()
    # each instance's share of the one run of the program
    assert np.allclose(df.t_process_s * 12, df.groupby("repetition").t_process_s.transform("sum"))


def test_the_family_formats_are_listed():
    import subprocess

    root = Path(__file__).parents[2]
    res = subprocess.run(
        [sys.executable, "-m", "matchbench.external", "mcm", "lap"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(root)),
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "writer" in res.stdout and "ecl" in res.stdout and "npy_stack" in res.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "matchbench.external", "tsp"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(root)),
        timeout=120,
    )
    assert bad.returncode == 2 and "unknown problem 'tsp'" in bad.stderr
