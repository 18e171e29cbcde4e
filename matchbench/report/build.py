"""Assemble the report: one self-contained HTML file of Bokeh sections.

Each section is its own root of one Bokeh document, named ``section-<slug>`` (the
browser test looks them up by name); the whole file embeds BokehJS inline
(``bokeh.resources.INLINE``), so it opens offline.
"""

from __future__ import annotations

import html
import math
import warnings
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from matchbench.report import data as rd
from matchbench.report import figures as fg
from matchbench.results import stats
from matchbench.results.verdicts import CompareConfig

#: (slug, heading) of every section, in page order.
SECTIONS = (
    ("overview", "Overview"),
    ("profiles", "Performance and speedup profiles"),
    ("instances", "Per-instance runtimes and geometric means"),
    ("scaling", "Scaling"),
    ("breakdown", "Time breakdown"),
    ("quality", "Solution quality"),
    ("history", "History"),
    ("failures", "Failures"),
)


def _epoch_ms(ts: pd.Series) -> pd.Series:
    return (pd.to_datetime(ts, utc=True) - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(milliseconds=1)


def _failure_text(fail: pd.DataFrame, label: str, instance: str) -> str:
    """A failed pair's status text; "not run" where the pivot has none (NaN, or no column)."""
    text = fail[label].get(instance) if label in fail else None
    return text if isinstance(text, str) and text else "not run"


def _problem_sections(
    problem: str,
    view: pd.DataFrame,
    info: Mapping[str, Any],
    registry: fg.FilterRegistry,
    baseline: str | None,
    out: dict[str, list[Any]],
) -> None:
    """Add one problem's figures and tables to the section lists in ``out``."""
    from bokeh.layouts import row

    rows = view[view["problem"] == problem]
    p = rd.label_solvers(rd.pairs(rows))
    statement = rd.data_statement(rows)
    labels = sorted(p["label"].unique())
    colors = fg.palette(labels)
    meta = {
        lab: {"algorithm": g["algorithm"].iloc[0], "gpu": g["gpu_model"].iloc[0]}
        for lab, g in p.groupby("label")
    }
    sense = str(info["sense"])
    exact = bool(info["exact"])
    pid = problem.replace(" ", "_")
    kind = "exact" if exact else "approximate"
    head = f"{problem} ({info['objective']}, {sense}imize, {kind})"
    # "" is the key of the all-instances curves: a row without a family (never loaded)
    # must not take its place
    families = sorted(f for f in p["family"].unique() if f)
    times = rd.times_matrix(p)

    # ---- profiles (Dolan–Moré; Deveci et al. 2013 Figs. 3-4)
    perf: dict[str, pd.DataFrame] = {}
    speed: dict[str, pd.DataFrame] = {}
    base = rd.choose_baseline(p, baseline)
    subsets = {"": times}
    if len(families) > 1:
        for fam in families:
            insts = sorted(set(p.loc[p["family"] == fam, "instance"]))
            subsets[fam] = times.loc[insts]
    for fam, t in subsets.items():
        prof = stats.performance_profile(t)
        prof.index = np.log2(prof.index.to_numpy(dtype=float))
        perf[fam] = prof
        if base.label is not None and t.shape[1] > 1:
            speed[fam] = stats.speedup_profile(t, base.label)
    n_inst = len(times)
    figs = [
        fg.profile_figure(
            perf,
            colors,
            meta,
            registry,
            title=f"{problem}: performance profile ({n_inst} instances)",
            x_label="log2(time / best time)",
            mode="after",
            problem=problem,
            name=f"perf-profile-{pid}",
        )
    ]
    if speed:
        figs.append(
            fg.profile_figure(
                speed,
                colors,
                meta,
                registry,
                title=f"{problem}: speedup profile vs. {base.label}",
                x_label="log2(speedup)",
                mode="before",
                problem=problem,
                name=f"speedup-profile-{pid}",
            )
        )
    n_fail = int((~p["solved"]).sum())
    missing = len(times) * len(labels) - len(p)
    out["profiles"] += [
        fg.heading(head, 3),
        row(*figs),
        fg.caption(
            f"{statement} Performance profile: a point (x, y) means the solver is within a "
            f"factor 2^x of the best time on a fraction y of the instances. Speedup "
            f"profile: fraction of instances with speedup at least 2^x over the baseline "
            f"({base.reason}). {n_fail} failed or unverified pair(s) and {missing} pair(s) "
            f"never run count as infinite time. With one dataset family selected in the "
            f"filters, the curves are recomputed on that family's instances."
        ),
    ]

    # ---- Table 2: per-instance runtimes
    final = rd.final_objective(p, sense)
    inst = (
        p.groupby("instance")
        .agg(
            family=("family", "first"),
            n_rows=("n_rows", "first"),
            n_edges=("n_edges", "first"),
            objective_init=("objective_init", "first"),
        )
        .reset_index()
    )
    inst["objective"] = inst["instance"].map(final)
    inst["problem"] = problem
    cols = [
        ("instance", "instance"),
        ("family", "family"),
        ("n_rows", "rows"),
        ("n_edges", "edges"),
        ("objective_init", "initial objective"),
        ("objective", f"final {info['objective']}"),
    ]
    html_cols, col_meta = {}, {}
    tm = p.pivot_table(index="instance", columns="label", values="time", aggfunc="first")
    fail = p.pivot_table(index="instance", columns="label", values="failure", aggfunc="first")
    best = tm.replace(np.inf, np.nan).min(axis=1)
    for i, lab in enumerate(labels):
        vals = inst["instance"].map(tm[lab]).astype(float).fillna(np.inf)
        texts = [
            fg.fmt_seconds(v) if np.isfinite(v) else _failure_text(fail, lab, ins)
            for v, ins in zip(vals, inst["instance"], strict=True)
        ]
        inst[f"t_{i}"] = vals.replace(np.inf, np.nan)
        inst[f"h_{i}"] = fg.bold_best_html(
            vals.to_numpy(), texts, best.reindex(inst["instance"]).to_numpy()
        )
        cols.append((f"t_{i}", lab))
        html_cols[f"t_{i}"] = f"h_{i}"
        col_meta[f"t_{i}"] = {"problem": problem, **meta[lab]}
    inst = inst.sort_values(["family", "n_edges", "instance"]).reset_index(drop=True)
    out["instances"] += [
        fg.heading(f"{head}: median solve time (s) per instance", 3),
        fg.data_table(
            inst,
            registry,
            columns=cols,
            html_columns=html_cols,
            column_meta=col_meta,
            name=f"instance-table-{pid}",
        ),
        fg.caption(
            f"{statement} Best time per instance in bold; a failed pair shows its statuses. "
            f"Final objective: the reference optimum when known, else the best verified one. "
            f"Click a header to sort."
        ),
    ]
    gm = rd.family_geomeans(p)
    out["instances"].append(_geomean_table(gm, "label", meta, problem, registry, f"geomean-{pid}"))
    out["instances"].append(
        fg.caption(
            f"{statement} Geometric mean of the median times per instance set (Deveci et al. 2013, "
            "Table 1 style) over the instances each solver solved, with solved/instances "
            "in parentheses; best among the solvers that solved the most in bold."
        )
    )
    # ---- Table 1: variants of one algorithm
    for (alg, gpu), g in p.groupby(["algorithm", "gpu_model"]):
        if g["variant"].nunique() < 2:
            continue
        gmv = rd.family_geomeans(g, by="variant")
        vmeta = {v: {"algorithm": alg, "gpu": gpu} for v in gmv["variant"].unique()}
        out["instances"] += [
            fg.heading(f"{problem}: variants of {alg} on {gpu}, geometric mean time (s)", 4),
            _geomean_table(gmv, "variant", vmeta, problem, registry, f"variants-{pid}-{alg}"),
            fg.caption(
                rd.data_statement(rows[(rows["algorithm"] == alg) & (rows["gpu_model"] == gpu)])
            ),
        ]

    # ---- scaling
    out["scaling"] += [
        fg.scaling_figure(p, colors, registry, problem=problem, name=f"scaling-{pid}"),
        fg.caption(
            f"{statement} One point per solved instance; {n_fail} failed or unverified "
            f"pair(s) are not drawn (see Failures)."
        ),
    ]

    # ---- breakdown
    bd, comps, note = rd.breakdown(p)
    out["breakdown"] += [
        fg.breakdown_figure(bd, comps, registry, problem=problem, name=f"breakdown-{pid}"),
        fg.caption(
            f"{statement} Medians per instance of the initializer (init), host-device "
            f"transfer, prepare and solve times, the solve split into the solver's reported "
            f"phases; {note}."
        ),
    ]

    # ---- quality
    ok_rows = rows[rows["status"] == "ok"]
    n_ok = len(ok_rows)
    n_ver = int(ok_rows["verified"].fillna(False).astype(bool).sum())
    if exact:
        verdict = (
            f"All exact results optimal: {n_ver}/{n_ok} verified."
            if n_ver == n_ok
            else f"NOT all exact results verified optimal: {n_ver}/{n_ok} verified "
            f"(the others are listed under Failures)."
        )
        out["quality"] += [
            fg.heading(head, 3),
            _statement_div(verdict, ok=n_ver == n_ok, name=f"quality-exact-{pid}"),
            fg.caption(f"{statement} Counted over repetitions with status ok."),
        ]
    else:
        q = rd.quality(p, sense)
        summary = (
            q.groupby("label")
            .agg(
                algorithm=("algorithm", "first"),
                gpu=("gpu_model", "first"),
                instances=("instance", "nunique"),
                mean_gap_pct=(
                    "gap",
                    lambda s: float(np.nanmean(s) * 100) if s.notna().any() else math.nan,
                ),
                max_gap_pct=(
                    "gap",
                    lambda s: float(np.nanmax(s) * 100) if s.notna().any() else math.nan,
                ),
            )
            .reset_index()
        )
        summary["problem"] = problem
        out["quality"] += [
            fg.heading(head, 3),
            _statement_div(
                f"Approximate family: {n_ver}/{n_ok} answers verified valid.",
                ok=n_ver == n_ok,
                name=f"quality-approx-{pid}",
            ),
            fg.quality_figure(q, colors, registry, problem=problem, name=f"quality-{pid}"),
            fg.data_table(
                summary,
                registry,
                columns=[
                    ("label", "solver"),
                    ("instances", "instances"),
                    ("mean_gap_pct", "mean gap (%)"),
                    ("max_gap_pct", "max gap (%)"),
                ],
                name=f"quality-table-{pid}",
            ),
            fg.caption(
                f"{statement} Gap = relative distance to reference_objective when known, "
                f"else to the certificate's bound (sense-aware; 0 is optimal)."
            ),
        ]


def _statement_div(text: str, *, ok: bool, name: str) -> Any:
    from bokeh.models import Div

    color = "#1a7f37" if ok else "#b42318"
    return Div(
        text=f"<p style='font-weight:bold;color:{color}'>{html.escape(text)}</p>",
        width=1100,
        name=name,
    )


def _geomean_table(
    gm: pd.DataFrame,
    by: str,
    meta: Mapping[str, Mapping[str, str]],
    problem: str,
    registry: fg.FilterRegistry,
    name: str,
) -> Any:
    """Families x solvers (or variants) table of geometric means, best in bold."""
    fams = list(dict.fromkeys(gm["family"]))
    names = sorted(gm[by].unique())
    t = pd.DataFrame({"family": fams})
    cols, html_cols, col_meta = [("family", "instance set")], {}, {}
    for i, lab in enumerate(names):
        g = gm[gm[by] == lab].set_index("family")
        t[f"g_{i}"] = t["family"].map(g["geomean_s"]).astype(float)
        t[f"k_{i}"] = t["family"].map(g["n_solved"]).fillna(0).astype(int)
        t[f"n_{i}"] = t["family"].map(g["n_instances"]).fillna(0).astype(int)
        cols.append((f"g_{i}", str(lab)))
        html_cols[f"g_{i}"] = f"h_{i}"
        col_meta[f"g_{i}"] = {"problem": problem, **meta[lab]}
    for i in range(len(names)):
        t[f"h_{i}"] = ""
    for r in range(len(t)):
        solved = [t.at[r, f"k_{i}"] for i in range(len(names))]
        top = max(solved) if solved else 0
        cands = [t.at[r, f"g_{i}"] for i in range(len(names)) if solved[i] == top and top > 0]
        best = min(cands) if cands else math.nan
        for i in range(len(names)):
            v = t.at[r, f"g_{i}"]
            text = f"{fg.fmt_seconds(v)} ({t.at[r, f'k_{i}']}/{t.at[r, f'n_{i}']})"
            bold = solved[i] == top and top > 0 and np.isfinite(v) and math.isclose(v, best)
            t.at[r, f"h_{i}"] = f"<b>{html.escape(text)}</b>" if bold else html.escape(text)
    t["problem"] = problem
    return fg.data_table(
        t, registry, columns=cols, html_columns=html_cols, column_meta=col_meta, name=name
    )


def build_document(
    df: pd.DataFrame,
    *,
    title: str = "matchbench report",
    baseline: str | None = None,
    problems: Mapping[str, Mapping[str, Any]] | None = None,
    config: CompareConfig | None = None,
    source: str = "",
) -> list[Any]:
    """The report's section roots (Bokeh layouts), in page order.

    Parameters
    ----------
    df : DataFrame
        Normalized result rows (:func:`matchbench.results.selection.normalize`) of one or
        more runs.
    title : str
        Page heading.
    baseline : str, optional
        Speedup-profile baseline (label or algorithm); default per problem in
        :func:`matchbench.report.data.choose_baseline`.
    problems : mapping, optional
        ``{problem: {objective, sense, exact}}``; default
        :func:`matchbench.core.problem.problem_table`.
    config : CompareConfig, optional
        The regression rule for the history marks (that of ``matchbench compare``).
    source : str
        What was selected (shown in the overview).
    """
    from bokeh.layouts import column, row
    from bokeh.models import Div

    if problems is None:
        from matchbench.core.problem import problem_table

        problems = problem_table()
    config = config or CompareConfig.load()
    registry = fg.FilterRegistry()
    out: dict[str, list[Any]] = {slug: [] for slug, _ in SECTIONS}
    view = rd.current_view(df)
    runs = rd.run_order(df)
    present = sorted(df["problem"].unique())
    unknown = [p for p in present if p not in problems]
    for name in unknown:
        warnings.warn(
            f"problem {name!r} is not in the problem table; treated as exact, sense 'max'",
            stacklevel=2,
        )

    for problem in present:
        info = stats.problem_info(problem, problems)
        _problem_sections(problem, view, info, registry, baseline, out)

    # ---- history
    if len(runs) >= 2:
        h = rd.history(df, config, problems)
        h["timestamp"] = _epoch_ms(h["timestamp"])
        for problem in present:
            hp = h[h["problem"] == problem]
            out["history"] += [
                fg.history_figure(hp, registry, problem=problem, name=f"history-{problem}"),
                fg.caption(
                    f"{rd.data_statement(df[df['problem'] == problem])} One grey line per "
                    f"measurement; triangles mark regressions (red) and improvements (green) "
                    f"against the measurement's previous run, by the rule stated below."
                ),
            ]
        marked = h[h["verdict"].isin(["regression", "improvement", "failed"])].copy()
        marked["ts"] = pd.to_datetime(marked["timestamp"], unit="ms", utc=True).dt.strftime(
            "%Y-%m-%d %H:%M"
        )
        marked["gpu"] = marked["gpu_model"]
        marked["commit"] = marked["git_commit"].str[:12]
        out["history"] += [
            fg.heading("Changes between consecutive runs", 3),
            fg.data_table(
                marked,
                registry,
                columns=[
                    ("verdict", "verdict"),
                    ("runtime", "runtime"),
                    ("quality", "quality"),
                    ("problem", "problem"),
                    ("algorithm", "algorithm"),
                    ("variant", "variant"),
                    ("instance", "instance"),
                    ("gpu", "GPU"),
                    ("run_id", "run"),
                    ("commit", "commit"),
                    ("ts", "timestamp"),
                    ("median_s", "median (s)"),
                    ("ratio", "ratio to previous"),
                    ("p", "p"),
                    ("objective", "objective"),
                ],
                name="history-table",
                height=min(400, 28 * max(len(marked), 1) + 40),
            ),
            fg.caption(
                f"{rd.data_statement(df)} Each measurement's runs are ordered by timestamp; a "
                f"run is marked against the previous run of the same measurement with the "
                f"rule of matchbench compare: median ratio beyond {config.threshold} (or "
                f"the configured per-pattern threshold) and one-sided Mann-Whitney "
                f"p < {config.alpha}; for exact families any objective change, for "
                f"approximate ones a loss beyond {config.quality_tolerance}. "
                f"{len(marked)} change(s) marked."
            ),
        ]
    else:
        out["history"].append(
            Div(
                text=(
                    f"<p>History needs at least two runs; {len(runs)} selected. Use "
                    f"<code>--all</code> or name several runs.</p>"
                ),
                width=1100,
                name="history-none",
            )
        )

    # ---- failures
    fails = rd.failures(df)
    fails["gpu"] = fails["gpu_model"]
    out["failures"] += [
        Div(
            text=f"<p>{len(fails)} of {len(df)} row(s) failed or were not verified.</p>",
            width=1100,
            name="failures-count",
        ),
        fg.data_table(
            fails,
            registry,
            columns=[
                ("run_id", "run"),
                ("problem", "problem"),
                ("algorithm", "algorithm"),
                ("variant", "variant"),
                ("instance", "instance"),
                ("family", "family"),
                ("gpu", "GPU"),
                ("repetition", "rep"),
                ("status", "status"),
                ("error_type", "error type"),
                ("message", "error / verifier's reason"),
            ],
            name="failures-table",
            height=min(400, 28 * max(len(fails), 1) + 40),
        ),
        fg.caption(rd.data_statement(df) + " All runs selected, every row not ok or not verified."),
    ]

    # ---- overview (last: the filter widgets need every registered view)
    runs_t = runs.copy()
    runs_t["timestamp"] = runs_t["timestamp"].dt.strftime("%Y-%m-%d %H:%M:%S %Z")
    runs_t["git_commit"] = runs_t["git_commit"].str[:12]
    runs_t["gpu"] = runs_t["gpu_models"]
    decl = "; ".join(
        f"{p}: {stats.problem_info(p, problems)['objective']}, "
        f"{stats.problem_info(p, problems)['sense']}, "
        f"{'exact' if stats.problem_info(p, problems)['exact'] else 'approximate'}"
        for p in present
    )
    warn = (
        f"<p style='color:#b42318'>Problem(s) {html.escape(', '.join(unknown))} are not in the "
        f"problem table: treated as exact, sense max.</p>"
        if unknown
        else ""
    )
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    overview = [
        Div(
            text=(
                f"<p>Generated {generated} from {html.escape(source or 'results')}: "
                f"{len(runs)} run(s), {len(df)} row(s), problems: {html.escape(decl)}.</p>"
                f"{warn}"
                f"<p>Sections other than History and Failures show, for each measurement "
                f"(problem, algorithm, variant, instance, GPU model), the newest run that "
                f"measured it. Filters below apply to every table and plot; empty = all.</p>"
            ),
            width=1100,
            name="overview-text",
        ),
        row(*registry.widgets()),
        fg.data_table(
            runs_t,
            fg.FilterRegistry(),  # runs are not filtered
            columns=[
                ("run_id", "run"),
                ("git_commit", "commit"),
                ("timestamp", "first timestamp"),
                ("gpu", "GPU model(s)"),
                ("rows", "rows"),
                ("ok_rows", "ok rows"),
            ],
            name="runs-table",
            height=min(300, 28 * len(runs_t) + 40),
        ),
    ]
    out["overview"] = overview
    page_title = Div(text=f"<h1>{html.escape(title)}</h1>", width=1100, name="title")

    roots = []
    for slug, name in SECTIONS:
        items = [fg.heading(name, 2), *(out[slug] or [Div(text="<p>Nothing to show.</p>")])]
        if slug == "overview":
            items.insert(0, page_title)
        roots.append(column(*items, name=f"section-{slug}"))
    return roots


def render_html(roots: list[Any], title: str) -> str:
    """One HTML page with BokehJS inline (opens without network)."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    return file_html(roots, resources=INLINE, title=title)


def build_report(
    df: pd.DataFrame,
    *,
    title: str = "matchbench report",
    baseline: str | None = None,
    problems: Mapping[str, Mapping[str, Any]] | None = None,
    config: CompareConfig | None = None,
    source: str = "",
) -> str:
    """The report of normalized result rows ``df`` as one self-contained HTML string."""
    roots = build_document(
        df, title=title, baseline=baseline, problems=problems, config=config, source=source
    )
    return render_html(roots, title)
