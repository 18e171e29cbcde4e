"""``matchbench compare``: verdicts and exit codes on synthetic runs written with RunWriter."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from _synthetic_results import PROBLEMS, noisy_times, rows_for, write_run

from matchbench.results import compare
from matchbench.results.schema import table_from_rows

INSTANCES = ("road-1", "road-2", "kron-1")


def _run(
    root: Path,
    run_id: str,
    *,
    seed: int,
    factor: float = 1.0,
    reps: int = 10,
    objective: float = 100.0,
    commit: str | None = None,
    problem: str = "mcm",
    algorithms: tuple[str, ...] = ("apfb", "hk_cpu"),
    instances: tuple[str, ...] = INSTANCES,
    status: str = "ok",
) -> Path:
    """One run: every algorithm on every instance, ``reps`` log-normal times (5% spread)."""
    rng = np.random.default_rng(seed)
    rows = []
    for alg in algorithms:
        for i, inst in enumerate(instances):
            rows += rows_for(
                noisy_times(rng, 0.01 * (i + 1) * (factor if alg == "apfb" else 1.0), reps),
                problem=problem,
                algorithm=alg,
                instance=inst,
                run_id=run_id,
                git_commit=commit or f"{seed:040x}",
                timestamp=datetime(2025, 1, 1, tzinfo=UTC),
                objective=objective,
                status=status if alg == "apfb" else "ok",
            )
    return write_run(root, rows, run_id=run_id)


def _main(capsys, *argv: str) -> tuple[int, str, str]:
    code = compare.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys, *argv: str) -> tuple[int, dict]:
    code, out, _ = _main(capsys, *argv, "--format", "json")
    return code, json.loads(out)


def _rows(doc: dict, **match: str) -> list[dict]:
    return [r for r in doc["rows"] if all(r[k] == v for k, v in match.items())]


def test_planted_slowdown_is_a_regression(tmp_path, capsys):
    _run(tmp_path, "base", seed=1)
    _run(tmp_path, "new", seed=2, factor=1.3)
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path))
    assert code == 1
    assert doc["regression"] is True
    slow = _rows(doc, algorithm="apfb")
    assert len(slow) == len(INSTANCES)
    for r in slow:
        assert r["verdict"] == "regression" and r["runtime"] == "regression"
        assert r["status"] == "compared" and r["quality"] == "unchanged"
        assert 1.15 < r["ratio"] < 1.45
        assert r["ratio_ci_low"] <= r["ratio"] <= r["ratio_ci_high"]
        assert r["p_slower"] < 0.01 and r["n_base"] == r["n_new"] == 10
    for r in _rows(doc, algorithm="hk_cpu"):
        assert r["verdict"] == "unchanged"
    assert doc["summary"]["regression"] == len(INSTANCES)


def test_pure_noise_is_not_a_regression(tmp_path, capsys):
    _run(tmp_path, "base", seed=11)
    _run(tmp_path, "new", seed=12)
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path))
    assert code == 0
    assert {r["verdict"] for r in doc["rows"]} == {"unchanged"}
    assert all(0.9 < r["ratio"] < 1.1 for r in doc["rows"])


def test_speedup_is_an_improvement(tmp_path, capsys):
    _run(tmp_path, "base", seed=1)
    _run(tmp_path, "new", seed=2, factor=0.7)
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path))
    assert code == 0
    assert {r["verdict"] for r in _rows(doc, algorithm="apfb")} == {"improvement"}


def test_changed_objective_of_exact_family_is_a_regression(tmp_path, capsys):
    _run(tmp_path, "base", seed=1, objective=100.0)
    _run(tmp_path, "new", seed=2, objective=99.0)
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path))
    assert code == 1
    assert {r["quality"] for r in doc["rows"]} == {"regression"}
    assert {r["runtime"] for r in doc["rows"]} == {"unchanged"}


def test_three_repetitions_flag_a_threefold_slowdown(tmp_path, capsys):
    """At the default 3 repetitions the rank test cannot reach p < 0.01 (p_min = 1/C(6, 3)
    = 0.05); the separation rule still flags a large consistent slowdown."""
    _run(tmp_path, "base", seed=1, reps=3)
    _run(tmp_path, "new", seed=2, reps=3, factor=3.0)
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path))
    assert code == 1
    slow = _rows(doc, algorithm="apfb")
    assert {r["verdict"] for r in slow} == {"regression"}
    assert {r["test_method"] for r in slow} == {"separation"}
    assert all(r["p_min"] == pytest.approx(0.05) for r in slow)
    assert {r["verdict"] for r in _rows(doc, algorithm="hk_cpu")} == {"unchanged"}


def test_three_repetitions_within_noise_are_not_a_regression(tmp_path, capsys):
    _run(tmp_path, "base", seed=1, reps=3)
    _run(tmp_path, "new", seed=2, reps=3, factor=1.02)
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path))
    assert code == 0
    assert {r["verdict"] for r in doc["rows"]} == {"unchanged"}


def test_too_few_repetitions_are_reported_with_their_own_exit_status(tmp_path, capsys):
    _run(tmp_path, "base", seed=1, reps=1)
    _run(tmp_path, "new", seed=2, reps=1, factor=3.0)
    code, out, err = _main(capsys, "base", "new", "--root", str(tmp_path), "--format", "json")
    assert code == compare.EXIT_INCONCLUSIVE == 3
    assert {r["verdict"] for r in json.loads(out)["rows"]} == {"inconclusive"}
    assert "too few repetitions to decide" in err
    code, _, _ = _main(capsys, "base", "new", "--root", str(tmp_path), "--allow-inconclusive")
    assert code == 0


def test_failed_in_new_is_a_regression_and_fixed_is_not(tmp_path, capsys):
    _run(tmp_path, "ok", seed=1)
    _run(tmp_path, "broken", seed=2, status="timeout")
    code, doc = _json(capsys, "ok", "broken", "--root", str(tmp_path))
    assert code == 1
    rows = _rows(doc, algorithm="apfb")
    assert {r["status"] for r in rows} == {"failed_in_new"}
    assert all(r["failures_new"] == "timeout x10" and r["n_new"] == 0 for r in rows)
    code, doc = _json(capsys, "broken", "ok", "--root", str(tmp_path))
    assert code == 0
    assert {(r["status"], r["verdict"]) for r in _rows(doc, algorithm="apfb")} == {
        ("fixed", "improvement")
    }


def test_missing_and_new_keys_are_listed(tmp_path, capsys):
    _run(tmp_path, "base", seed=1, instances=("road-1", "road-2"))
    _run(tmp_path, "new", seed=2, instances=("road-2", "kron-1"))
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path))
    assert code == 0
    by_inst = {(r["algorithm"], r["instance"]): r for r in doc["rows"]}
    assert by_inst[("apfb", "road-1")]["status"] == "missing_in_new"
    assert by_inst[("apfb", "kron-1")]["status"] == "new_only"
    assert by_inst[("apfb", "road-2")]["status"] == "compared"
    assert doc["summary"]["missing"] == 2 and doc["summary"]["new"] == 2

    strict = tmp_path / "strict.yaml"
    strict.write_text("missing_is_regression: true\n")
    code, _ = _json(capsys, "base", "new", "--root", str(tmp_path), "--config", str(strict))
    assert code == 1


def test_approximate_family_tolerance():
    def side(obj: float, seed: int):
        rows = rows_for(
            noisy_times(np.random.default_rng(seed), 0.01, 5),
            problem="wmatch",
            algorithm="suitor",
            objective=obj,
        )
        return table_from_rows(rows).to_pandas()

    cfg = compare.CompareConfig()
    small = compare.compare_frames(side(100.0, 1), side(99.5, 2), cfg, PROBLEMS)
    assert small.loc[0, "quality"] == "unchanged"
    big = compare.compare_frames(side(100.0, 1), side(97.0, 2), cfg, PROBLEMS)
    assert big.loc[0, "quality"] == "regression" and big.loc[0, "verdict"] == "regression"
    assert big.loc[0, "quality_loss"] == pytest.approx(0.03)
    loose = compare.CompareConfig.from_mapping(
        {"overrides": [{"algorithm": "sui*", "quality_tolerance": 0.05}]}
    )
    assert (
        compare.compare_frames(side(100.0, 1), side(97.0, 2), loose, PROBLEMS).loc[0, "quality"]
        == "unchanged"
    )


def test_per_pattern_threshold_and_cli_threshold(tmp_path, capsys):
    _run(tmp_path, "base", seed=1)
    _run(tmp_path, "new", seed=2, factor=1.3)
    cfg = tmp_path / "cmp.yaml"
    cfg.write_text("overrides:\n  - algorithm: 'ap*'\n    threshold: 1.5\n")
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path), "--config", str(cfg))
    assert code == 0
    assert {r["threshold"] for r in _rows(doc, algorithm="apfb")} == {1.5}
    assert {r["threshold"] for r in _rows(doc, algorithm="hk_cpu")} == {1.1}
    code, _ = _json(capsys, "base", "new", "--root", str(tmp_path), "--threshold", "1.6")
    assert code == 0


def test_selection_by_commit_and_by_path(tmp_path, capsys):
    base = _run(tmp_path, "base", seed=1, commit="abcdef1234" + "0" * 30)
    _run(tmp_path, "new", seed=2, factor=1.3, commit="fedcba9876" + "0" * 30)
    code, doc = _json(capsys, "abcdef1", "fedcba98", "--root", str(tmp_path))
    assert code == 1
    assert doc["base"]["kind"] == "commit" and doc["new"]["kind"] == "commit"
    code, doc = _json(capsys, str(base), "new", "--root", str(tmp_path))
    assert code == 1
    assert doc["base"]["kind"] == "path" and doc["base"]["run_ids"] == ["base"]


def test_output_formats_contain_every_row(tmp_path, capsys):
    _run(tmp_path, "base", seed=1)
    _run(tmp_path, "new", seed=2, factor=1.3)
    root = ["--root", str(tmp_path)]
    code, table, _ = _main(capsys, "base", "new", *root)
    assert code == 1
    lines = table.splitlines()
    for alg in ("apfb", "hk_cpu"):
        for inst in INSTANCES:
            assert any(alg in ln and inst in ln for ln in lines)
    assert "3 regression" in table and "3 unchanged" in table

    code, md, _ = _main(capsys, "base", "new", *root, "--format", "markdown")
    assert code == 1
    assert md.startswith("### matchbench compare: regressions found")
    header = next(ln for ln in md.splitlines() if ln.startswith("| verdict |"))
    n_cols = header.count("|")
    table_rows = [ln for ln in md.splitlines() if ln.startswith("| regression |")]
    assert len(table_rows) == 2 * len(INSTANCES)  # changed table + folded full table
    assert all(ln.count("|") == n_cols for ln in table_rows)

    out = tmp_path / "cmp.json"
    code, _, _ = _main(capsys, "base", "new", *root, "--format", "json", "-o", str(out))
    assert code == 1
    doc = json.loads(out.read_text())
    assert len(doc["rows"]) == 2 * len(INSTANCES)
    for r in doc["rows"]:
        for k in ("problem", "algorithm", "variant", "instance", "gpu_model", "ratio", "p_slower"):
            assert k in r
        assert isinstance(r["median_base_s"], float) and isinstance(r["median_new_s"], float)

    code, doc = _json(capsys, "base", "new", *root, "--changes-only")
    assert code == 1 and len(doc["rows"]) == len(INSTANCES)
    assert doc["summary"]["keys"] == 2 * len(INSTANCES)


def _exit2(capsys, *argv: str) -> str:
    code, out, err = _main(capsys, *argv)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "error" in err
    return err


def test_unusable_input_exits_2(tmp_path, capsys):
    runs = tmp_path / "runs"
    _run(runs, "base", seed=1)
    root = ["--root", str(runs)]
    assert "no-such-run" in _exit2(capsys, "base", "no-such-run", *root)
    assert "does-not-exist" in _exit2(capsys, str(tmp_path / "does-not-exist"), "base", *root)
    # no overlapping keys: another problem entirely
    _run(runs, "other", seed=2, problem="lap")
    assert "overlapping" in _exit2(capsys, "base", "other", *root)
    # unreadable file
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    assert "Parquet" in _exit2(capsys, "base", str(bad), *root)
    # a folder without results
    (tmp_path / "empty").mkdir()
    assert "no result rows" in _exit2(capsys, "base", str(tmp_path / "empty"), *root)
    # an unknown commit prefix, under an existing and a missing root
    assert "0123456" in _exit2(capsys, "base", "0123456", *root)
    assert "root" in _exit2(capsys, "0123456", "base", "--root", str(tmp_path / "nowhere"))
    # a broken config, an impossible threshold
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("thresold: 1.2\n")
    assert "thresold" in _exit2(capsys, "base", "base", *root, "--config", str(cfg))
    assert "threshold" in _exit2(capsys, "base", "base", *root, "--threshold", "0.9")
    assert "config" in _exit2(capsys, "base", "base", *root, "--config", str(tmp_path / "no.yaml"))


def test_ambiguous_commit_prefix_exits_2(tmp_path, capsys):
    _run(tmp_path, "a", seed=1, commit="1234567a" + "0" * 32)
    _run(tmp_path, "b", seed=2, commit="1234567b" + "0" * 32)
    assert "ambiguous" in _exit2(capsys, "1234567", "a", "--root", str(tmp_path))


def test_default_config_file_matches_builtin_defaults():
    repo = Path(__file__).resolve().parents[1]
    loaded = compare.CompareConfig.load(repo / "conf" / "compare" / "default.yaml")
    assert loaded == compare.CompareConfig()


def test_cpu_only_runs_match_on_the_cpu_label(tmp_path, capsys):
    for run_id, seed in (("base", 1), ("new", 2)):
        rows = rows_for(
            noisy_times(np.random.default_rng(seed), 0.05, 10),
            algorithm="hk_cpu",
            device="cpu",
            gpu_model=None,
            run_id=run_id,
        )
        write_run(tmp_path, rows, run_id=run_id)
    code, doc = _json(capsys, "base", "new", "--root", str(tmp_path))
    assert code == 0
    assert [(r["gpu_model"], r["status"]) for r in doc["rows"]] == [("cpu", "compared")]
    assert doc["base"]["gpu_models"] == ["cpu"]
