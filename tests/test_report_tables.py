"""``matchbench report --experiment``: paper tables drawn from synthetic result rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pytest

from matchbench.report import cli as report_cli
from matchbench.report import tables
from matchbench.results.schema import table_from_rows
from matchbench.results.store import ResultsError, RunWriter

GPU = "NVIDIA H100 80GB HBM3"


def row(
    t: float | None,
    *,
    instance: str = "g1",
    algorithm: str = "apfb",
    status: str = "ok",
    verified: bool | None = True,
    instrumented: bool = False,
    time_limit_s: float | None = None,
    params: dict[str, Any] | None = None,
    iparams: dict[str, Any] | None = None,
    n_rows: int = 1000,
    experiment: str = "x",
    run_id: str = "run-1",
    repetition: int = 0,
) -> dict[str, Any]:
    """One result row with the columns the tables read."""
    ok = status == "ok"
    return {
        "run_id": run_id,
        "task_id": f"{algorithm}-{instance}",
        "git_commit": "c" * 40,
        "timestamp": datetime(2025, 1, 1, tzinfo=UTC),
        "gpu_model": GPU,
        "experiment": experiment,
        "problem": "mcm",
        "instance": instance,
        "n_rows": n_rows,
        "n_edges": 5 * n_rows,
        "instance_params": json.dumps(iparams or {}),
        "algorithm": algorithm,
        "variant": "",
        "params_json": json.dumps(params or {}),
        "repetition": repetition,
        "instrumented": instrumented,
        "status": status,
        "time_limit_s": time_limit_s,
        "t_solve_s": t if ok else None,
        "objective_init": 80.0,
        "verified": verified if ok else None,
    }


def reps(times: list[float], **kw: Any) -> list[dict[str, Any]]:
    return [row(t, repetition=i, **kw) for i, t in enumerate(times)]


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    return table_from_rows(rows).to_pandas()


def grid(result_rows: list[dict[str, Any]], /, **spec: Any) -> tables.Grid:
    t = {"title": "T", "rows": "{instance}", "columns": "{algorithm}", **spec}
    g, _ = tables.table_grid(frame(result_rows), t)
    return g


def spec_of(**table: Any) -> dict[str, Any]:
    t = {"title": "T", "rows": "{instance}", "columns": "{algorithm}", **table}
    return {"title": "Paper, Table 2", "description": "Our machine.", "tables": [t]}


def md_rows(text: str) -> dict[str, list[str]]:
    """Markdown table lines by first cell -> the other cells (bold marks kept)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("|:"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            out[cells[0]] = cells[1:]
    return out


# --------------------------------------------------------------------------- cells


def test_cell_is_the_median_of_verified_ok_repetitions():
    rows = reps([3.0, 1.0, 2.0, 100.0], verified=True)
    rows[3]["verified"] = False  # an unverified repetition does not count
    g = grid(rows)
    assert g.value.at["g1", "apfb"] == pytest.approx(2.0)
    assert g.mark.at["g1", "apfb"] == ""


def test_cell_over_instances_is_the_geometric_mean_of_their_medians():
    rows = reps([1.0, 1.0, 9.0], instance="a") + reps([4.0, 4.0, 4.0], instance="b")
    g = grid(rows, rows="{problem}")
    assert g.value.at["mcm", "apfb"] == pytest.approx(2.0)  # sqrt(1 * 4)


def test_instrumented_repetitions_are_left_out():
    rows = reps([1.0, 1.0, 1.0]) + [row(50.0, instrumented=True, repetition=3)]
    assert grid(rows).value.at["g1", "apfb"] == pytest.approx(1.0)


def test_words_and_empty_cells():
    rows = reps([1.0], instance="a", algorithm="hk")
    rows += [row(None, instance="a", status="oom"), row(None, instance="a", status="error")]
    rows += [row(2.0, instance="b", verified=False)]
    g = grid(rows)
    assert g.mark.at["a", "apfb"] == "error"
    assert g.mark.at["b", "apfb"] == "unverified"
    assert g.mark.at["b", "hk"] == "-"


def test_timeout_is_a_lower_bound_and_ratios_keep_it():
    rows = reps([0.5, 0.5, 0.5], instance="big")
    rows += [row(None, instance="big", algorithm="hk", status="timeout", time_limit_s=30.0)]
    rows += [row(None, instance="big", algorithm="hk", status="timeout", time_limit_s=20.0)]
    rows += reps([0.25], instance="small") + reps([1.0], instance="small", algorithm="hk")
    spec = spec_of(
        ratios=[
            {"label": "hk / apfb", "num": "hk", "den": "apfb"},
            {"label": "apfb / hk", "num": "apfb", "den": "hk"},
        ],
        geomean=True,
    )
    got = md_rows(tables.render_experiment(frame(rows), spec))
    assert got["instance"] == ["apfb", "hk", "hk / apfb", "apfb / hk"]
    assert got["big"] == ["0.5", "> 30 s", "> 60x", "< 0.0167x"]
    assert got["small"] == ["0.25", "1", "4x", "0.25x"]
    # hk's mean over both rows is a bound: sqrt(30 * 1)
    assert got["geometric mean"][1] == "> 5.48 s"
    assert got["geometric mean"][2] == "> 15.5x"


def test_a_rate_per_second_reads_a_timeout_as_a_word_not_a_bound():
    """``proposals_per_s`` ends in ``_s`` but is no time: a timed-out solver has no rate."""
    rows = reps([0.5], instance="big") + [
        row(None, instance="big", algorithm="hk", status="timeout", time_limit_s=30.0)
    ]
    for r in rows:
        r["proposals_per_s"] = 2.0e9 if r["status"] == "ok" else None
    text = tables.render_experiment(
        frame(rows), spec_of(value="proposals_per_s", scale=1e-6, unit="")
    )
    assert md_rows(text)["big"] == ["2000", "timeout"], text
    assert "killed at the time limit" not in text
    # the same rows as times keep the bound
    assert md_rows(tables.render_experiment(frame(rows), spec_of()))["big"] == ["0.5", "> 30 s"]


def test_timeout_among_several_instances_bounds_the_geometric_mean():
    rows = reps([2.0], instance="a")
    rows += [row(None, instance="b", status="timeout", time_limit_s=8.0)]
    g = grid(rows, rows="{problem}")
    assert (g.value.at["mcm", "apfb"], g.mark.at["mcm", "apfb"]) == (pytest.approx(4.0), ">")


def test_scale_unit_digits_and_best():
    rows = reps([0.0012345], algorithm="apfb") + reps([0.002], algorithm="hk")
    spec = spec_of(scale=1000, digits=2, best="min")
    text = tables.render_experiment(frame(rows), spec)
    assert md_rows(text)["g1"] == ["**1.2**", "2"]
    assert "t_solve_s x 1000 in ms" in text


def test_best_of_ratio():
    rows = reps([1.0], algorithm="apfb")
    rows += reps([4.0], algorithm="hk") + reps([6.0], algorithm="pfp")
    rows += [row(None, algorithm="pr", status="timeout", time_limit_s=30.0)]
    rows += reps([1.0], instance="g2", algorithm="apfb")
    rows += [
        row(None, instance="g2", algorithm=a, status="timeout", time_limit_s=t)
        for a, t in (("hk", 10.0), ("pr", 20.0))
    ]
    spec = spec_of(
        ratios=[
            {"label": "best CPU / apfb", "num": {"best_of": ["hk", "pfp", "pr"]}, "den": "apfb"}
        ]
    )
    got = md_rows(tables.render_experiment(frame(rows), spec))
    assert got["g1"][-1] == "4x"
    assert got["g2"][-1] == "> 10x"


def test_row_info_column_order_and_parameter_fields():
    rows = reps([1.0], algorithm="apfb", params={"bfs": "wr"}, iparams={"scale": 16}, n_rows=5000)
    rows += reps(
        [2.0], algorithm="apfb", params={"bfs": "plain"}, iparams={"scale": 16}, n_rows=5000
    )
    rows += reps(
        [3.0], algorithm="apfb", params={"bfs": "plain"}, iparams={"scale": 18}, n_rows=7000
    )
    spec = spec_of(
        rows="{scale}",
        columns="{algorithm}-{bfs}",
        row_info={"rows": "n_rows", "init": "objective_init"},
        column_order=["apfb-wr"],
        where={"params.bfs": ["wr", "plain"], "problem": "mcm"},
    )
    got = md_rows(tables.render_experiment(frame(rows), spec))
    assert got["scale"] == ["rows", "init", "apfb-wr", "apfb-plain"]
    assert got["16"] == ["5000", "80", "1", "2"]
    assert got["18"] == ["7000", "80", "-", "3"]


def test_template_lists_and_the_variant_parameter():
    rows = reps([1.0], algorithm="apfb", params={"bfs": "wr"})
    rows += reps([2.0], algorithm="hk")
    rows += reps([3.0], algorithm="gpr", params={"variant": "shr", "k": 0.7})
    for r in rows:
        r["variant"] = ",".join(f"{k}={v}" for k, v in json.loads(r["params_json"]).items())
    g = grid(rows, columns=["{algorithm} {variant} k={k}", "{algorithm}-{bfs}", "{algorithm}"])
    assert list(g.value.columns) == ["apfb-wr", "gpr shr k=0.7", "hk"]
    g = grid(rows, where={"variant": "shr"}, columns="{params.k}")
    assert list(g.value.columns) == ["0.7"]


def test_missing_template_field_names_it_and_the_table():
    spec = spec_of(title="Fig. 1", columns="k={k}")
    with pytest.raises(tables.ReportSpecError, match=r"'Fig\. 1'.*'k'"):
        tables.render_experiment(frame(reps([1.0])), spec)


def test_unknown_spec_key_is_an_error():
    with pytest.raises(tables.ReportSpecError, match="colums"):
        tables.render_experiment(frame(reps([1.0])), spec_of(colums="{algorithm}"))


# --------------------------------------------------------------------------- paper


@pytest.fixture
def papers(tmp_path):
    d = tmp_path / "papers"
    d.mkdir()
    (d / "deveci2013.csv").write_text(
        "table,row,column,value,unit,device,source\n"
        '2,g1,APFB C2050,1.5,s,Tesla C2050,"Table 2, p. 9"\n'
        '2,g9,APFB C2050,7.0,s,Tesla C2050,"Table 2, p. 9"\n'
        '3,g1,APFB C2050,9.0,s,Tesla C2050,"Table 3, p. 10"\n'
    )
    return d


def test_paper_column_joins_by_row_label(papers):
    rows = reps([1.0]) + reps([2.0], instance="g2")
    paper = {"file": "deveci2013", "table": 2, "columns": {"APFB C2050": "paper"}}
    spec = spec_of(
        scale=1000,
        paper=paper,
        ratios=[{"label": "paper / ours", "num": "paper", "den": "apfb"}],
    )
    text = tables.render_experiment(frame(rows), spec, papers_dir=papers)
    got = md_rows(text)
    assert got["g1"] == ["1000", "1500", "1.5x"]
    assert got["g2"] == ["2000", "-", "-"]
    assert "g9" not in got  # the paper's rows our run lacks are not added
    assert "Tesla C2050" in text and "Table 2, p. 9" in text


@pytest.mark.parametrize(
    ("paper", "message"),
    [
        ({"file": "nope2020", "table": "2", "columns": {"A": "a"}}, "nope2020.csv"),
        (
            {"file": "deveci2013", "table": "7", "columns": {"A": "a"}},
            "deveci2013.csv has no table '7'",
        ),
        ({"file": "deveci2013", "table": "2", "columns": {"A": "a"}}, "no column 'A'"),
    ],
)
def test_paper_errors_name_the_file(papers, paper, message):
    with pytest.raises(tables.ReportSpecError, match=message):
        tables.render_experiment(frame(reps([1.0])), spec_of(paper=paper), papers_dir=papers)


# --------------------------------------------------------------------------- output


def test_markdown_head_and_caption():
    text = tables.render_experiment(
        frame(reps([1.0])), spec_of(), command="matchbench report --experiment x"
    )
    lines = text.splitlines()
    assert lines[0] == "## Paper, Table 2"
    assert "Made by: `matchbench report --experiment x`" in lines
    assert "### T" in lines
    caption = lines[lines.index("### T") + 2]
    assert "> T s = killed at the time limit" in caption
    assert "run-1" in caption and GPU in caption and "c" * 12 in caption


def test_html_is_a_page_with_tables():
    text = tables.render_experiment(frame(reps([1.0])), spec_of(best="min"), fmt="html")
    assert text.startswith("<!DOCTYPE html>")
    assert "<table>" in text and "<b>1</b>" in text and "bokeh" not in text.lower()


# --------------------------------------------------------------------------- rows and CLI


def write(root, run_id: str, rows: list[dict[str, Any]], date: str = "2025-01-01") -> None:
    w = RunWriter(root, run_id, date)
    w.write_task("0000", [{**r, "run_id": run_id} for r in rows])


def test_select_takes_the_newest_run_of_the_experiment(tmp_path):
    root = tmp_path / "runs"
    write(root, "20250101-000000-a", reps([1.0]))
    write(root, "20250102-000000-b", reps([2.0]))
    write(root, "20250103-000000-c", reps([3.0], experiment="other"))
    got = tables.select_experiment_rows("x", [], root)
    assert set(got["run_id"]) == {"20250102-000000-b"}
    got = tables.select_experiment_rows("x", ["20250101-000000-a"], root)
    assert set(got["run_id"]) == {"20250101-000000-a"}
    with pytest.raises(ResultsError, match="no rows of experiment 'x'"):
        tables.select_experiment_rows("x", ["20250103-000000-c"], root)
    with pytest.raises(ResultsError, match=f"under {tmp_path / 'none'}"):
        tables.select_experiment_rows("x", [], tmp_path / "none")


def test_cli_renders_markdown_and_html(tmp_path, monkeypatch, capsys):
    root = tmp_path / "runs"
    write(root, "20250101-000000-a", reps([1.0, 2.0, 3.0]) + reps([4.0], algorithm="hk"))
    monkeypatch.setattr(tables, "experiment_spec", lambda name: spec_of(best="min"))
    argv = ["--experiment", "x", "--root", str(root)]
    assert report_cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"Made by: `matchbench report --experiment x --root {root}`" in out
    assert md_rows(out)["g1"] == ["**2**", "4"]
    html = tmp_path / "t.html"
    assert report_cli.main([*argv, "--format", "html", "-o", str(html)]) == 0
    assert "<table>" in html.read_text()


def test_cli_errors_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tables, "experiment_names", lambda: ["deveci2013_t2", "smoke_all"])
    assert report_cli.main(["--experiment", "nope", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("matchbench report: error: no experiment preset 'nope'")
    assert "deveci2013_t2, smoke_all" in err and len(err.splitlines()) == 1

    monkeypatch.setattr(tables, "experiment_spec", lambda name: spec_of())
    assert report_cli.main(["--experiment", "x", "--root", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "no run of experiment 'x'" in err and str(tmp_path / "runs") in err


@pytest.fixture
def conf_dir(tmp_path, monkeypatch):
    """A config dir of its own: the real presets change under other people's hands."""
    from matchbench.core import paths

    d = tmp_path / "conf"
    (d / "experiment").mkdir(parents=True)
    (d / "config.yaml").write_text("run:\n  results_dir: runs\n")
    (d / "experiment" / "with_tables.yaml").write_text(
        "# @package _global_\n"
        "report:\n"
        "  title: Paper\n"
        "  tables:\n"
        "    - {title: T, rows: '{instance}', columns: '{algorithm}', unit: '${hydra:x}'}\n"
    )
    (d / "experiment" / "no_tables.yaml").write_text("# @package _global_\nrun:\n  verify: true\n")
    # CONFIG_DIR is conf_dir() as a string, looked up when asked for
    monkeypatch.setattr(paths, "conf_dir", lambda: d)
    return d


def test_experiment_spec_from_presets(conf_dir):
    assert tables.experiment_names() == ["no_tables", "with_tables"]
    spec = tables.experiment_spec("with_tables")
    assert spec["title"] == "Paper"
    assert spec["tables"][0]["unit"] == "${hydra:x}"  # left unresolved
    with pytest.raises(tables.ReportSpecError, match="no_tables.*no report.tables section"):
        tables.experiment_spec("no_tables")
    with pytest.raises(tables.ReportSpecError, match="available: no_tables, with_tables"):
        tables.experiment_spec("nope")


# --------------------------------------------------------------------------- derived value


def _gap_rows() -> list[dict[str, Any]]:
    """Two repetitions per solver with objective and bound (a gap to optimality)."""
    rows = reps([1.0, 1.0], algorithm="roma") + reps([1.0, 1.0], algorithm="roma2_gpu")
    for r, obj in zip(rows, (95.0, 97.0, 90.0, 90.0), strict=True):
        r["objective"], r["bound"] = obj, 100.0
    return rows


def test_derived_value_is_the_median_of_per_row_quotients():
    g = grid(_gap_rows(), value={"num": "bound", "den": "objective"})
    assert g.value.at["g1", "roma"] == pytest.approx((100 / 95 + 100 / 97) / 2)
    assert g.value.at["g1", "roma2_gpu"] == pytest.approx(100 / 90)


def test_derived_value_complement_is_a_gap_to_optimality():
    g = grid(_gap_rows(), value={"num": "objective", "den": "bound", "complement": True})
    assert g.value.at["g1", "roma"] == pytest.approx(0.04)  # median of 0.05 and 0.03
    assert g.value.at["g1", "roma2_gpu"] == pytest.approx(0.10)
    text = tables.render_experiment(
        frame(_gap_rows()), spec_of(value={"num": "objective", "den": "bound", "complement": True})
    )
    assert "Cells: 1 - objective / bound, the median" in text


def test_derived_value_with_a_zero_or_missing_side_is_no_value():
    rows = _gap_rows()
    for r in rows[:2]:
        r["objective"] = 0.0
    for r in rows[2:]:
        r["bound"] = None
    g = grid(rows, value={"num": "bound", "den": "objective"})
    assert g.mark.at["g1", "roma"] == "no value"
    assert g.mark.at["g1", "roma2_gpu"] == "no value"


def test_derived_value_caption_and_spec_errors():
    text = tables.render_experiment(
        frame(_gap_rows()), spec_of(value={"num": "bound", "den": "objective"})
    )
    assert "Cells: bound / objective, the median" in text
    assert "killed at the time limit" not in text
    with pytest.raises(tables.ReportSpecError, match=r"value\.den 'weight'"):
        tables.render_experiment(
            frame(_gap_rows()), spec_of(value={"num": "bound", "den": "weight"})
        )
    for bad in ({"num": "bound"}, {"num": "bound", "den": "objective", "complement": "yes"}):
        with pytest.raises(tables.ReportSpecError, match=r"\{num: COLUMN, den: COLUMN\}"):
            tables.render_experiment(frame(_gap_rows()), spec_of(value=bad))


# --------------------------------------------------------------------------- JSON fields


def _json_rows() -> list[dict[str, Any]]:
    """louvain_gpu with per-stage seconds and a counter; nk_plm without either."""
    rows = reps([1.0, 3.0], algorithm="louvain_gpu", params={"t_bin": 0.01}) + reps(
        [5.0], algorithm="nk_plm"
    )
    for r, opt, rate in zip(rows[:2], (0.2, 0.4), (2e9, 4e9), strict=True):
        r["phases_json"] = json.dumps({"level0_optimize": opt, "optimize": opt + 0.1})
        r["counters_json"] = json.dumps({"first_phase_edges_per_s": rate, "levels": 3})
    return rows


def test_value_reads_counters_and_phases_from_the_json_columns():
    g = grid(_json_rows(), value="phases.level0_optimize", scale=1000)
    assert g.value.at["g1", "louvain_gpu"] == pytest.approx(300.0)  # median of 200 and 400
    assert g.mark.at["g1", "nk_plm"] == "no value"  # no phases_json: no number
    g = grid(_json_rows(), value="counters.first_phase_edges_per_s", scale=1e-9)
    assert g.value.at["g1", "louvain_gpu"] == pytest.approx(3.0)
    g = grid(_json_rows(), value={"num": "phases.level0_optimize", "den": "phases.optimize"})
    assert g.value.at["g1", "louvain_gpu"] == pytest.approx((0.2 / 0.3 + 0.4 / 0.5) / 2)
    g = grid(
        _json_rows(), row_info={"levels": "counters.levels"}, where={"algorithm": "louvain_gpu"}
    )
    assert g.info.at["g1", "levels"] == 3
    text = tables.render_experiment(
        frame(_json_rows()), spec_of(value="phases.optimize", scale=1000)
    )
    assert "ms" in text  # a phase is seconds: scale 1000 reads ms
    with pytest.raises(tables.ReportSpecError, match="not a result column"):
        tables.render_experiment(frame(_json_rows()), spec_of(value="counters."))


def test_where_null_takes_rows_without_the_field():
    rows = _json_rows() + reps([7.0], algorithm="louvain_gpu", instance="g2", params={"t_bin": 0.1})
    g = grid(rows, where={"t_bin": [0.01, None]})
    assert set(g.value.columns) == {"louvain_gpu", "nk_plm"}
    assert list(g.value.index) == ["g1"]  # t_bin 0.1 left out, nk_plm (no t_bin) kept
    with pytest.raises(tables.ReportSpecError, match="t_bin"):
        grid(rows, where={"t_bin": 0.01})  # without null, a field found nowhere is an error


def test_optional_template_fields_fall_through_and_labels_are_stripped():
    rows = reps([1.0], algorithm="lap_gpu") + reps([2.0], algorithm="lap_gpu", instance="g2")
    rows[0]["batch_size"], rows[0]["batch_id"] = 2000, "b1"
    rows[1]["batch_id"] = None
    cols = ["joint {batch_size?}", "batched{batch_id?:.0}", "alone"]
    g = grid(rows, columns=cols)
    assert g.value.at["g1", "joint 2000"] == 1.0 and g.value.at["g2", "alone"] == 2.0
    rows[0]["batch_size"] = None
    assert "batched" in grid(rows, columns=cols).value.columns
    assert list(grid(rows, columns="{algorithm} {batch_size}").value.columns) == ["lap_gpu"]
