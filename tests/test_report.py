"""``matchbench report``: the numbers behind each section, and a self-contained HTML file."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from _synthetic_results import GPU, PROBLEMS, benchmark_rows, rows_for, write_history

import matchbench.core.problem as problems_base
from matchbench import report
from matchbench.report import build
from matchbench.report import data as rd
from matchbench.results.compare import CompareConfig, normalize, select_many
from matchbench.results.schema import table_from_rows

REPS = 5


def _frame(rows) -> pd.DataFrame:
    return normalize(table_from_rows(rows).to_pandas())


@pytest.fixture(scope="module")
def history_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    ids = write_history(root, n_runs=3, repetitions=REPS)
    return root, ids


@pytest.fixture(scope="module")
def document(history_root):
    """The report of three runs, as a Bokeh document (built once for the module's tests)."""
    from bokeh.document import Document

    root, _ = history_root
    sel = select_many([], root, all_runs=True)
    doc = Document()
    for r in build.build_document(sel.frame, problems=PROBLEMS, config=CompareConfig()):
        doc.add_root(r)
    return doc, sel.frame


def _named(doc, name):
    m = doc.select_one({"name": name})
    assert m is not None, name
    return m


def _table(doc, name) -> tuple[pd.DataFrame, dict[str, str]]:
    """A DataTable's data, and its field -> column title."""
    t = _named(doc, name)
    return pd.DataFrame(dict(t.source.data)), {c.field: c.title for c in t.columns}


# --------------------------------------------------------------------------- data layer


def test_current_view_keeps_the_newest_run_per_key():
    old = rows_for(
        [1.0, 1.0], run_id="old", instance="i1", timestamp=pd.Timestamp("2025-01-01", tz="UTC")
    )
    old += rows_for(
        [1.0], run_id="old", instance="i2", timestamp=pd.Timestamp("2025-01-01", tz="UTC")
    )
    new = rows_for(
        [2.0, 2.0], run_id="new", instance="i1", timestamp=pd.Timestamp("2025-02-01", tz="UTC")
    )
    view = rd.current_view(_frame(old + new))
    assert sorted(zip(view["instance"], view["run_id"], strict=True)) == [
        ("i1", "new"),
        ("i1", "new"),
        ("i2", "old"),
    ]


def test_pairs_one_unverified_or_failed_repetition_fails_the_pair():
    rows = rows_for([1.0, 2.0, 3.0], instance="good")
    rows += rows_for([1.0, 2.0, 3.0], instance="wrong", verified=[True, False, True])
    rows += rows_for([1.0, 2.0, 3.0], instance="slow", status=["ok", "timeout", "ok"])
    p = rd.pairs(_frame(rows)).set_index("instance")
    assert p.loc["good", "solved"] and p.loc["good", "time"] == pytest.approx(2.0)
    assert not p.loc["wrong", "solved"] and p.loc["wrong", "time"] == math.inf
    assert p.loc["wrong", "failure"] == "unverified x1"
    assert not p.loc["slow", "solved"] and p.loc["slow", "failure"] == "timeout x1"
    assert p.loc["slow", "t_solve_s"] == pytest.approx(2.0)  # median of the ok ones, shown


def test_labels_and_baseline_choice():
    rows = []
    for alg, var, dev, t in (
        ("apfb", "k=a", "gpu", 1.0),
        ("apfb", "k=b", "gpu", 2.0),
        ("hk", "", "cpu", 8.0),
        ("pfp", "", "cpu", 4.0),
    ):
        rows += rows_for([t], algorithm=alg, variant=var, device=dev)
    p = rd.label_solvers(rd.pairs(_frame(rows)))
    assert sorted(p["label"]) == ["apfb[k=a]", "apfb[k=b]", "hk", "pfp"]
    assert rd.choose_baseline(p).label == "hk"  # the slowest CPU reference
    assert rd.choose_baseline(p, "pfp").label == "pfp"
    assert rd.choose_baseline(p, "apfb").label == "apfb[k=b]"  # slowest variant
    assert rd.choose_baseline(p, "nope").label is None
    gpu_only = p[p["device"] == "gpu"]
    assert rd.choose_baseline(gpu_only).label == "apfb[k=b]"


def test_family_geomeans_known_values():
    rows = []
    for inst, fam, t in (("a", "f1", 1.0), ("b", "f1", 4.0), ("c", "f2", 9.0)):
        rows += rows_for([t], instance=inst, family=fam, algorithm="x")
    rows += rows_for([1.0], instance="c", family="f2", algorithm="y", status="error")
    p = rd.label_solvers(rd.pairs(_frame(rows)))
    gm = rd.family_geomeans(p).set_index(["family", "label"])
    assert gm.loc[("f1", "x"), "geomean_s"] == pytest.approx(2.0)
    assert gm.loc[("all", "x"), "geomean_s"] == pytest.approx((1 * 4 * 9) ** (1 / 3))
    assert gm.loc[("all", "x"), "n_solved"] == 3 and gm.loc[("all", "x"), "n_instances"] == 3
    assert math.isnan(gm.loc[("f2", "y"), "geomean_s"]) and gm.loc[("f2", "y"), "n_solved"] == 0


def test_breakdown_splits_solve_into_phases():
    rows = rows_for([1.0, 1.0], algorithm="g", phases={"bfs": 0.6, "alt": 0.3})
    rows += rows_for([2.0], algorithm="c", device="cpu")
    p = rd.label_solvers(rd.pairs(_frame(rows)))
    bd, comps, note = rd.breakdown(p)
    bd = bd.set_index("label")
    assert comps == ["init", "transfer", "prepare", "phase: alt", "phase: bfs", "solve (other)"]
    assert bd.loc["g", "phase: bfs"] == pytest.approx(0.6)
    assert bd.loc["g", "solve (other)"] == pytest.approx(0.1)
    assert bd.loc["c", "solve (other)"] == pytest.approx(2.0)
    assert bd.loc["c", "transfer"] == 0.0
    assert "1 instance" in note


# --------------------------------------------------------------------------- document


def test_every_section_is_a_named_root(document):
    doc, _ = document
    assert [r.name for r in doc.roots] == [f"section-{s}" for s, _ in build.SECTIONS]


def test_instance_table_is_table_2(document):
    doc, frame = document
    t, titles = _table(doc, "instance-table-mcm")
    assert sorted(t["instance"]) == ["kron-1", "kron-2", "road-1", "road-2", "road-3"]
    field = {title: f for f, title in titles.items()}
    fast = field["apfb[kernel=bfs_wr,threads=ct]"]
    pfp = field["pfp_cpu"]
    html_of = {f: "h_" + f.split("_")[1] for f in (fast, pfp)}
    # the fastest solver (GPU, bfs_wr + ct) is bold on every instance, nobody else is
    assert all(h.startswith("<b>") for h in t[html_of[fast]])
    bold = t[[c for c in t.columns if c.startswith("h_")]].apply(lambda c: c.str.startswith("<b>"))
    assert bold.sum(axis=1).tolist() == [1] * 5
    kron2 = t[t["instance"] == "kron-2"].iloc[0]
    assert kron2[html_of[pfp]] == f"timeout x{REPS}"
    assert np.isnan(kron2[pfp])
    # the cell is the median over the newest run's repetitions
    last = frame[
        (frame["run_id"] == frame["run_id"].max())
        & (frame["instance"] == "road-3")
        & (frame["algorithm"] == "pfp_cpu")
    ]
    assert t.loc[t["instance"] == "road-3", pfp].iloc[0] == pytest.approx(
        last["t_solve_s"].median()
    )
    assert t["objective"].tolist() == pytest.approx(
        [n * 0.9 for n in t["n_rows"]]
    )  # the reference optimum


def test_geomean_and_variant_tables(document):
    doc, frame = document
    t, titles = _table(doc, "geomean-mcm")
    field = {title: f for f, title in titles.items()}
    f = field["hk_cpu"]
    last = frame[(frame["run_id"] == frame["run_id"].max()) & (frame["algorithm"] == "hk_cpu")]
    med = last[last["family"] == "road"].groupby("instance")["t_solve_s"].median()
    expect = float(np.exp(np.log(med).mean()))
    assert t.loc[t["family"] == "road", f].iloc[0] == pytest.approx(expect)
    assert t["family"].tolist() == ["kron", "road", "all"]
    k = "h_" + field["pfp_cpu"].split("_")[1]
    assert t.loc[t["family"] == "kron", k].iloc[0].endswith("(1/2)")
    v, vtitles = _table(doc, "variants-mcm-apfb")
    assert sorted(vtitles.values()) == [
        "instance set",
        "kernel=bfs,threads=mt",
        "kernel=bfs_wr,threads=ct",
    ]


def _step_data(fig):
    """solver -> (x, y) of the all-instances step curves of a profile figure."""
    from bokeh.models import Step

    out = {}
    for r in fig.renderers:
        if isinstance(r.glyph, Step) and r.visible:
            d = r.data_source.data
            out[d["solver"][0]] = (np.asarray(d["x"]), np.asarray(d["y"]))
    return out


def test_profiles(document):
    doc, _ = document
    perf = _step_data(_named(doc, "perf-profile-mcm"))
    x, y = perf["apfb[kernel=bfs_wr,threads=ct]"]
    assert x[0] == 0.0 and y[0] == pytest.approx(1.0)  # fastest on all five
    _, y = perf["pfp_cpu"]
    assert y[-1] == pytest.approx(4 / 5)  # timed out on one of five
    sp = _named(doc, "speedup-profile-mcm")
    assert sp.title.text.endswith("vs. hk_cpu")  # the slowest CPU reference
    speed = _step_data(sp)
    assert "hk_cpu" not in speed
    # pfp_cpu is ~1.5x faster than hk on the 4 instances it solved
    x, y = speed["pfp_cpu"]
    assert y.max() == pytest.approx(4 / 5)
    assert np.all(np.exp2(x[y == y.max()]) <= 1.6)


def test_quality_section(document):
    doc, _ = document
    text = _named(doc, "quality-exact-mcm").text
    n_ok = 5 * 4 * REPS - REPS  # pfp_cpu timed out on kron-2
    assert f"All exact results optimal: {n_ok}/{n_ok} verified." in text
    text = _named(doc, "quality-exact-lap").text
    assert f"{2 * 2 * REPS - 1}/{2 * 2 * REPS} verified" in text and "NOT" in text
    fig = _named(doc, "quality-wmatch")
    d = fig.renderers[0].data_source.data
    gaps = dict(zip(zip(d["solver"], d["instance"], strict=True), d["gap_pct"], strict=True))
    assert gaps[("suitor", "rmat-1")] == pytest.approx(3.0)
    assert gaps[("greedy_cpu", "rmat-2")] == pytest.approx(8.0)


def test_history_marks_the_planted_regression(document):
    doc, frame = document
    t, _ = _table(doc, "history-table")
    last = sorted(frame["run_id"].unique())[-1]
    reg = t[t["verdict"] == "regression"]
    assert set(reg["algorithm"]) == {"apfb"} and set(reg["run_id"]) == {last}
    assert len(reg) == 5 * 2  # every instance, both variants
    assert (reg["ratio"] > 1.2).all()
    assert set(t["verdict"]) <= {"regression", "failed"}
    failed = t[t["verdict"] == "failed"]
    assert set(zip(failed["algorithm"], failed["instance"], strict=True)) == {("pfp_cpu", "kron-2")}


def test_failures_table_lists_every_bad_row(document):
    doc, _ = document
    t, _ = _table(doc, "failures-table")
    n_runs = 3
    assert (t["status"] == "timeout").sum() == REPS * n_runs
    assert (t["status"] == "ok (unverified)").sum() == n_runs
    assert len(t) == REPS * n_runs + n_runs
    assert set(t.loc[t["status"] == "timeout", "message"]) == {"synthetic timeout"}


def test_every_figure_and_table_states_its_data(document):
    from bokeh.models import DataTable, Div, Plot

    doc, _ = document
    for root in doc.roots:
        if root.name == "section-overview":
            continue
        items = list(root.children)
        flat = []
        while items:
            it = items.pop(0)
            if hasattr(it, "children"):
                items[:0] = list(it.children)
            else:
                flat.append(it)
        for i, it in enumerate(flat):
            if isinstance(it, Plot | DataTable):
                following = [x for x in flat[i + 1 :] if isinstance(x, Div)]
                assert following and "Data: run(s)" in following[0].text, (root.name, it.name)


# --------------------------------------------------------------------------- HTML and CLI


class _Resources(HTMLParser):
    def __init__(self):
        super().__init__()
        self.external: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
            if a.get("src"):
                self.external.append(a["src"])
        if tag in ("link", "img", "iframe") and (a.get("href") or a.get("src")):
            self.external.append(a.get("href") or a.get("src"))


def test_cli_writes_self_contained_html(history_root, tmp_path, monkeypatch, capsys):
    root, ids = history_root
    monkeypatch.setattr(problems_base, "problem_table", lambda: PROBLEMS)
    out = tmp_path / "r" / "report.html"
    assert report.main(["--root", str(root), "--all", "-o", str(out), "--title", "Nightly"]) == 0
    assert "3 run(s)" in capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    for _, heading in build.SECTIONS:
        assert heading in text
    for rid in ids:
        assert rid in text
    assert "Nightly" in text and GPU in text
    parser = _Resources()
    parser.feed(text)
    assert parser.scripts >= 2 and parser.external == []
    assert not re.search(r"<script[^>]+src=", text)
    assert "cdn.bokeh.org" not in text


def test_cli_single_run_and_baseline(history_root, tmp_path, monkeypatch, capsys):
    root, ids = history_root
    monkeypatch.setattr(problems_base, "problem_table", lambda: PROBLEMS)
    out = tmp_path / "latest.html"
    assert report.main(["--root", str(root), "-o", str(out), "--baseline", "pfp_cpu"]) == 0
    text = out.read_text(encoding="utf-8")
    assert ids[-1] in text and ids[0] not in text
    assert "History needs at least two runs; 1 selected" in text
    assert "speedup profile vs. pfp_cpu" in text


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["no-such-run"], "no-such-run"),
        (["--all", "x"], "not both"),
    ],
)
def test_cli_unusable_input(history_root, tmp_path, capsys, argv, needle):
    root, _ = history_root
    assert report.main([*argv, "--root", str(root), "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.html").exists()


def test_cli_missing_root(tmp_path, capsys):
    assert report.main(["--root", str(tmp_path / "none"), "-o", str(tmp_path / "x.html")]) == 2
    assert "no such results root" in capsys.readouterr().err


def test_report_of_one_small_run(tmp_path):
    """A run with a single repetition per pair and one problem still gives every section."""
    rows = benchmark_rows(repetitions=1)
    rows = [r for r in rows if r["problem"] == "mcm"]
    html = build.build_report(_frame(rows), problems=PROBLEMS, config=CompareConfig())
    for _, heading in build.SECTIONS:
        assert heading in html


def test_unknown_problem_is_reported_as_exact_with_a_warning():
    rows = rows_for([1.0, 1.1], problem="future", algorithm="x")
    with pytest.warns(UserWarning, match="'future' is not in the problem table"):
        html = build.build_report(_frame(rows), problems={}, config=CompareConfig())
    assert "not in the problem table: treated as exact, sense max" in html
    assert "All exact results optimal: 2/2 verified." in html


def test_skipped_rows_join_their_instance_and_the_all_instances_profile_stays():
    """A GPU solver skipped where no GPU worker is: its rows carry the spec's label and no
    family (the instance was never loaded). They must count as the same instance as the
    rows that loaded it (no phantom row), and must not replace the all-instances profile."""
    from bokeh.document import Document

    rows = []
    for fam, inst, key in (("lap_uniform", "uniform_n8_s1", "k1"), ("lap_geometric", "geometric_n8_s1", "k2")):
        for alg, scale in (("scipy_lsa", 1.0), ("lapjv", 2.0)):
            for r in rows_for([scale * 1e-4] * 3, problem="mcm", algorithm=alg, instance=inst,
                              family=fam, gpu_model=None, device="cpu"):
                rows.append(r | {"instance_key": key})
        for r in rows_for([math.nan], problem="mcm", algorithm="cu_tree", instance=fam.split("_")[1],
                          family="", status="skipped", gpu_model=None, device="gpu", error="no GPU"):
            rows.append(r | {"instance_key": key, "family": None, "repetition": -1})
    frame = _frame(rows)
    skipped = frame[frame.status == "skipped"]
    assert set(skipped.instance) == {"uniform_n8_s1", "geometric_n8_s1"}
    assert set(skipped.family) == {"lap_uniform", "lap_geometric"}
    assert frame.instance.nunique() == 2
    doc = Document()
    for r in build.build_document(frame, problems=PROBLEMS, config=CompareConfig()):
        doc.add_root(r)
    perf = _step_data(_named(doc, "perf-profile-mcm"))
    assert {"scipy_lsa", "lapjv"} <= set(perf)  # the all-instances curves, shown
    x, y = perf["scipy_lsa"]
    assert y[-1] == pytest.approx(1.0)
