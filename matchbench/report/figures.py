"""Bokeh pieces of the report: figures, sortable tables, and the offline filter wiring.

Everything here runs in the browser without a server: filters are Bokeh widgets whose
``CustomJS`` callback rewrites ``BooleanFilter`` masks of ``CDSView`` objects (tables,
scatter points, bars) and toggles the visibility of line renderers and table columns
that stand for one solver.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: Columns a filterable source may carry; the widgets filter on these names.
FILTER_FIELDS = ("problem", "algorithm", "family", "gpu")


def palette(labels: Sequence[str]) -> dict[str, str]:
    """A stable color per label (Category10, then Category20 beyond ten)."""
    from bokeh.palettes import Category10_10, Category20_20

    colors = Category10_10 if len(labels) <= 10 else Category20_20
    return {lab: colors[i % len(colors)] for i, lab in enumerate(sorted(labels))}


def fmt_seconds(v: float) -> str:
    if v is None or not np.isfinite(v):
        return "-"
    return f"{v:.3g}"


@dataclass
class FilterRegistry:
    """What the filter widgets act on; :meth:`widgets` builds them once everything is added."""

    sources: list[tuple[Any, Any]] = field(default_factory=list)  # (source, BooleanFilter)
    renderers: list[tuple[Any, list[Any]]] = field(default_factory=list)
    columns: list[tuple[Any, list[Any]]] = field(default_factory=list)
    values: dict[str, set[str]] = field(default_factory=lambda: {f: set() for f in FILTER_FIELDS})

    def view(self, source: Any) -> Any:
        """A ``CDSView`` for ``source`` that the filters drive."""
        from bokeh.models import BooleanFilter, CDSView

        n = len(next(iter(source.data.values()), []))
        flt = BooleanFilter(booleans=[True] * n)
        self.sources.append((source, flt))
        for f in FILTER_FIELDS:
            if f in source.data:
                self.values[f].update(str(v) for v in source.data[f] if v is not None)
        return CDSView(filter=flt)

    @staticmethod
    def _meta(
        problem: str | None,
        algorithm: str | None,
        gpu: str | None,
        family: str | None,
        profile_family: str | None,
    ) -> list[Any]:
        return [problem, algorithm, gpu, family, profile_family]

    def renderer(self, r: Any, *, profile_family: str | None = None, **meta: str | None) -> None:
        """Show ``r`` only while its problem/algorithm/GPU/family pass the filters.

        ``profile_family`` marks a profile curve computed on one dataset family ("" =
        all instances): it is shown only when exactly that family is selected (or, for
        "", when not exactly one family is).
        """
        self.renderers.append(
            (
                r,
                self._meta(
                    meta.get("problem"),
                    meta.get("algorithm"),
                    meta.get("gpu"),
                    meta.get("family"),
                    profile_family,
                ),
            )
        )

    def column(self, col: Any, **meta: str | None) -> None:
        """Show a table column (one solver) only while it passes the filters."""
        self.columns.append(
            (
                col,
                self._meta(meta.get("problem"), meta.get("algorithm"), meta.get("gpu"), None, None),
            )
        )

    def widgets(self) -> list[Any]:
        """One ``MultiChoice`` per filter field (empty = all) wired to one ``CustomJS``."""
        from bokeh.models import CustomJS, MultiChoice

        titles = {
            "problem": "Problem",
            "algorithm": "Algorithm",
            "family": "Dataset family",
            "gpu": "GPU model",
        }
        ws = {
            f: MultiChoice(
                title=titles[f],
                options=sorted(self.values[f]),
                value=[],
                placeholder="all",
                width=260,
                name=f"filter-{f}",
            )
            for f in FILTER_FIELDS
        }
        cb = CustomJS(
            args=dict(
                w_problem=ws["problem"],
                w_algorithm=ws["algorithm"],
                w_family=ws["family"],
                w_gpu=ws["gpu"],
                sources=[s for s, _ in self.sources],
                filters=[f for _, f in self.sources],
                renderers=[r for r, _ in self.renderers],
                rmeta=[m for _, m in self.renderers],
                columns=[c for c, _ in self.columns],
                cmeta=[m for _, m in self.columns],
            ),
            code=_FILTER_JS,
        )
        for w in ws.values():
            w.js_on_change("value", cb)
        return list(ws.values())


_FILTER_JS = """
const sel = {problem: w_problem.value, algorithm: w_algorithm.value,
             family: w_family.value, gpu: w_gpu.value};
const fields = ["problem", "algorithm", "family", "gpu"];
function pass(f, v) {
  const s = sel[f];
  return s.length == 0 || v == null || s.includes(String(v));
}
for (let k = 0; k < sources.length; k++) {
  const src = sources[k];
  const data = src.data;
  const n = src.get_length() ?? 0;
  const mask = new Array(n).fill(true);
  for (const f of fields) {
    const col = data[f];
    if (col == null) continue;
    for (let i = 0; i < n; i++) if (mask[i] && !pass(f, col[i])) mask[i] = false;
  }
  filters[k].booleans = mask;
  src.change.emit();
}
function visible(m) {
  // m = [problem, algorithm, gpu, family, profile_family]
  let v = pass("problem", m[0]) && pass("algorithm", m[1]) && pass("gpu", m[2]);
  if (m[4] != null) {
    const fam = sel.family;
    v = v && (m[4] === "" ? fam.length != 1 : (fam.length == 1 && fam[0] === m[4]));
  } else if (m[3] != null) {
    v = v && pass("family", m[3]);
  }
  return v;
}
for (let k = 0; k < renderers.length; k++) renderers[k].visible = visible(rmeta[k]);
for (let k = 0; k < columns.length; k++) columns[k].visible = visible(cmeta[k]);
"""


def caption(text: str, *, name: str | None = None) -> Any:
    """A small-print statement under a figure or table (its data, its rules)."""
    from bokeh.models import Div

    return Div(
        text=f"<p style='font-size:90%;color:#444;margin:2px 0 14px 0'>{html.escape(text)}</p>",
        width=1100,
        name=name,
    )


def heading(text: str, level: int = 2, *, name: str | None = None) -> Any:
    from bokeh.models import Div

    return Div(text=f"<h{level}>{html.escape(text)}</h{level}>", width=1100, name=name)


def _legend_outside(p: Any) -> None:
    from bokeh.models import Legend

    if p.legend:
        items = p.legend[0].items
        p.legend[0].visible = False
        leg = Legend(items=items, click_policy="hide", label_text_font_size="8pt")
        p.add_layout(leg, "right")


def _hover(p: Any, renderers: list[Any], tooltips: list[tuple[str, str]]) -> None:
    """A hover tool on ``renderers`` of figure ``p``."""
    from bokeh.models import HoverTool

    p.add_tools(HoverTool(renderers=renderers, tooltips=tooltips))


def profile_figure(
    curves: dict[str, pd.DataFrame],
    colors: dict[str, str],
    meta: dict[str, dict[str, str]],
    registry: FilterRegistry,
    *,
    title: str,
    x_label: str,
    mode: str,
    problem: str,
    name: str,
) -> Any:
    """Step curves of a performance or speedup profile, one set per dataset family.

    ``curves`` maps "" (all instances) and each family to a frame: index = x values,
    columns = solver labels, values = fractions.
    """
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    p = figure(
        title=title,
        width=620,
        height=360,
        x_axis_label=x_label,
        y_axis_label="fraction of instances",
        y_range=(-0.02, 1.05),
        tools="pan,box_zoom,wheel_zoom,reset,save",
        name=name,
    )
    marks = []
    for fam, frame in curves.items():
        if frame.empty:
            continue
        xs = frame.index.to_numpy(dtype=float)
        span = (xs.max() - xs.min()) if len(xs) > 1 else 1.0
        x_end = xs.max() + 0.1 * span + 0.1
        for lab in frame.columns:
            ys = frame[lab].to_numpy(dtype=float)
            if mode == "after":
                x_plot, y_plot = np.append(xs, x_end), np.append(ys, ys[-1])
            else:
                x_plot, y_plot = (
                    np.insert(xs, 0, xs.min() - 0.1 * span - 0.1),
                    np.insert(ys, 0, ys[0]),
                )
            src = ColumnDataSource(
                {
                    "x": x_plot,
                    "y": y_plot,
                    "factor": np.exp2(x_plot),
                    "solver": [lab] * len(x_plot),
                    "family": [fam or "all"] * len(x_plot),
                }
            )
            visible = fam == ""
            kw = {"legend_label": lab} if fam == "" else {}
            line = p.step(
                "x",
                "y",
                source=src,
                mode=mode,
                color=colors[lab],
                line_width=2,
                visible=visible,
                **kw,
            )
            pts = p.scatter("x", "y", source=src, color=colors[lab], size=4, visible=visible)
            marks.append(pts)
            for r in (line, pts):
                registry.renderer(
                    r,
                    problem=problem,
                    algorithm=meta[lab]["algorithm"],
                    gpu=meta[lab]["gpu"],
                    profile_family=fam,
                )
    _hover(
        p,
        marks,
        [
            ("solver", "@solver"),
            ("instances", "@family"),
            (x_label, "@x{0.000}"),
            ("factor", "@factor{0.000}"),
            ("fraction", "@y{0.000}"),
        ],
    )
    _legend_outside(p)
    return p


def scaling_figure(
    p_df: pd.DataFrame, colors: dict[str, str], registry: FilterRegistry, *, problem: str, name: str
) -> Any:
    """Median solve time against edges, log-log, one line per solver (solved pairs only)."""
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    p = figure(
        title=f"{problem}: median solve time vs. edges",
        width=760,
        height=380,
        x_axis_type="log",
        y_axis_type="log",
        x_axis_label="edges",
        y_axis_label="median t_solve (s)",
        tools="pan,box_zoom,wheel_zoom,reset,save",
        name=name,
    )
    marks = []
    solved = p_df[p_df["solved"] & (p_df["n_edges"] > 0)]
    for lab, g in solved.groupby("label", sort=True):
        g = g.sort_values("n_edges")
        data = {
            "x": g["n_edges"].to_numpy(dtype=float),
            "y": g["t_solve_s"].to_numpy(dtype=float),
            "instance": g["instance"].tolist(),
            "family": g["family"].tolist(),
            "n_rows": g["n_rows"].tolist(),
            "solver": [lab] * len(g),
            "problem": [problem] * len(g),
            "algorithm": g["algorithm"].tolist(),
            "gpu": g["gpu_model"].tolist(),
        }
        line_src = ColumnDataSource({k: data[k] for k in ("x", "y")})
        line = p.line(
            "x", "y", source=line_src, color=colors[lab], line_alpha=0.6, legend_label=lab
        )
        registry.renderer(line, problem=problem, algorithm=data["algorithm"][0], gpu=data["gpu"][0])
        src = ColumnDataSource(data)
        pts = p.scatter(
            "x",
            "y",
            source=src,
            view=registry.view(src),
            color=colors[lab],
            size=7,
            legend_label=lab,
        )
        marks.append(pts)
    _hover(
        p,
        marks,
        [
            ("solver", "@solver"),
            ("instance", "@instance (@family)"),
            ("rows", "@n_rows"),
            ("edges", "@x{0,0}"),
            ("median t_solve", "@y{0.000000} s"),
        ],
    )
    _legend_outside(p)
    return p


def breakdown_figure(
    bd: pd.DataFrame, comps: list[str], registry: FilterRegistry, *, problem: str, name: str
) -> Any:
    """Stacked horizontal bars: seconds per time component per solver."""
    from bokeh.models import ColumnDataSource
    from bokeh.palettes import Category20_20
    from bokeh.plotting import figure

    labels = bd["label"].tolist()
    data: dict[str, Any] = {"label": labels}
    keys = [f"c{i}" for i in range(len(comps))]
    for k, c in zip(keys, comps, strict=True):
        data[k] = bd[c].to_numpy(dtype=float)
    data["total"] = sum(data[k] for k in keys) if keys else np.zeros(len(labels))
    data["problem"] = [problem] * len(labels)
    data["algorithm"] = bd["algorithm"].tolist()
    data["gpu"] = bd["gpu"].tolist()
    src = ColumnDataSource(data)
    p = figure(
        title=f"{problem}: where the time goes",
        y_range=labels,
        width=900,
        height=max(220, 40 * len(labels) + 120),
        x_axis_label="seconds",
        tools="pan,box_zoom,reset,save",
        name=name,
    )
    colors = [Category20_20[i % 20] for i in range(len(keys))]
    rs = p.hbar_stack(
        keys,
        y="label",
        height=0.7,
        source=src,
        view=registry.view(src),
        color=colors,
        legend_label=comps,
    )
    for r, c, k in zip(rs, comps, keys, strict=True):
        _hover(
            p,
            [r],
            [
                ("solver", "@label"),
                ("component", c),
                ("seconds", f"@{k}{{0.000000}}"),
                ("total", "@total{0.000000}"),
            ],
        )
    _legend_outside(p)
    return p


def quality_figure(
    q: pd.DataFrame, colors: dict[str, str], registry: FilterRegistry, *, problem: str, name: str
) -> Any:
    """Relative gap (%) to the reference optimum or certificate bound per solved pair."""
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure
    from bokeh.transform import jitter

    labels = sorted(q["label"].unique())
    src = ColumnDataSource(
        {
            "solver": q["label"].tolist(),
            "gap_pct": (q["gap"] * 100).to_numpy(dtype=float),
            "instance": q["instance"].tolist(),
            "objective": q["objective"].to_numpy(dtype=float),
            "against": q["against"].tolist(),
            "color": [colors[lab] for lab in q["label"]],
            "problem": [problem] * len(q),
            "algorithm": q["algorithm"].tolist(),
            "family": q["family"].tolist(),
            "gpu": q["gpu_model"].tolist(),
        }
    )
    p = figure(
        title=f"{problem}: gap to reference/bound (%)",
        x_range=labels,
        width=760,
        height=360,
        y_axis_label="gap (%)",
        tools="pan,box_zoom,reset,save",
        name=name,
    )
    r = p.scatter(
        jitter("solver", width=0.3, range=p.x_range),
        "gap_pct",
        source=src,
        view=registry.view(src),
        color="color",
        size=8,
        alpha=0.8,
    )
    _hover(
        p,
        [r],
        [
            ("solver", "@solver"),
            ("instance", "@instance (@family)"),
            ("objective", "@objective"),
            ("gap", "@gap_pct{0.000} % (vs. @against)"),
        ],
    )
    return p


def history_figure(h: pd.DataFrame, registry: FilterRegistry, *, problem: str, name: str) -> Any:
    """Median time relative to each key's first run, over run timestamps; verdicts marked."""
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    p = figure(
        title=f"{problem}: median time relative to the first run, per measurement",
        x_axis_type="datetime",
        y_axis_type="log",
        width=900,
        height=380,
        x_axis_label="run timestamp",
        y_axis_label="median time / first run's",
        tools="pan,box_zoom,wheel_zoom,reset,save",
        name=name,
    )
    h = h[np.isfinite(h["relative"]) & (h["relative"] > 0)]
    lines: dict[str, list[Any]] = {
        k: [] for k in ("xs", "ys", "key", "problem", "algorithm", "family", "gpu")
    }
    for _, g in h.groupby(["algorithm", "variant", "instance", "gpu_model"], sort=True):
        lines["xs"].append(g["timestamp"].tolist())
        lines["ys"].append(g["relative"].tolist())
        first = g.iloc[0]
        lines["key"].append(
            f"{first['algorithm']}[{first['variant']}] {first['instance']} @ {first['gpu_model']}"
        )
        lines["problem"].append(problem)
        lines["algorithm"].append(first["algorithm"])
        lines["family"].append(first["family"])
        lines["gpu"].append(first["gpu_model"])
    lsrc = ColumnDataSource(lines)
    p.multi_line("xs", "ys", source=lsrc, view=registry.view(lsrc), color="#999999", alpha=0.5)
    colors = {"regression": "#d62728", "improvement": "#2ca02c"}
    marks = []
    for verdict, g in [("other", h[~h["verdict"].isin(list(colors))])] + [
        (v, h[h["verdict"] == v]) for v in colors
    ]:
        src = ColumnDataSource(
            {
                "x": g["timestamp"].tolist(),
                "y": g["relative"].to_numpy(dtype=float),
                "key": (
                    g["algorithm"]
                    + "["
                    + g["variant"]
                    + "] "
                    + g["instance"]
                    + " @ "
                    + g["gpu_model"]
                ).tolist(),
                "run_id": g["run_id"].tolist(),
                "commit": g["git_commit"].str[:12].tolist(),
                "median_s": g["median_s"].to_numpy(dtype=float),
                "objective": g["objective"].to_numpy(dtype=float),
                "verdict": g["verdict"].tolist(),
                "problem": [problem] * len(g),
                "algorithm": g["algorithm"].tolist(),
                "family": g["family"].tolist(),
                "gpu": g["gpu_model"].tolist(),
            }
        )
        if len(g) == 0:
            continue
        if verdict == "other":
            r = p.scatter("x", "y", source=src, view=registry.view(src), size=5, color="#555555")
        else:
            r = p.scatter(
                "x",
                "y",
                source=src,
                view=registry.view(src),
                size=12,
                marker="triangle" if verdict == "regression" else "inverted_triangle",
                color=colors[verdict],
                legend_label=verdict,
            )
        marks.append(r)
    _hover(
        p,
        marks,
        [
            ("measurement", "@key"),
            ("run", "@run_id (@commit)"),
            ("median", "@median_s{0.000000} s"),
            ("relative", "@y{0.000}"),
            ("objective", "@objective"),
            ("verdict", "@verdict"),
        ],
    )
    if p.legend:
        p.legend[0].location = "top_left"
    return p


def data_table(
    frame: pd.DataFrame,
    registry: FilterRegistry,
    *,
    columns: Sequence[tuple[str, str]] | None = None,
    html_columns: dict[str, str] | None = None,
    column_meta: dict[str, dict[str, str | None]] | None = None,
    name: str,
    height: int | None = None,
    width: int = 1100,
) -> Any:
    """A sortable ``DataTable`` of ``frame`` with a filterable view.

    Parameters
    ----------
    columns : sequence of (field, title)
        Default: every column of ``frame``.
    html_columns : dict
        ``field -> html_field``: show the (pre-escaped) HTML of ``html_field`` while
        sorting by the value of ``field`` (numbers sort as numbers, best shown in bold).
    column_meta : dict
        ``field -> {problem, algorithm, gpu}`` for columns that stand for one solver
        and follow the filters.
    """
    from bokeh.models import (
        ColumnDataSource,
        DataTable,
        HTMLTemplateFormatter,
        NumberFormatter,
        StringFormatter,
        TableColumn,
    )

    columns = list(columns or [(c, c) for c in frame.columns])
    html_columns = html_columns or {}
    column_meta = column_meta or {}
    data = {}
    for c in frame.columns:
        s = frame[c]
        if pd.api.types.is_float_dtype(s):
            data[c] = s.to_numpy(dtype=float)
        elif pd.api.types.is_integer_dtype(s) or pd.api.types.is_bool_dtype(s):
            data[c] = s.tolist()
        else:
            data[c] = [
                "" if (v is None or (isinstance(v, float) and math.isnan(v))) else str(v) for v in s
            ]
    src = ColumnDataSource(data)
    cols = []
    for f, title in columns:
        if f in html_columns:
            fmt = HTMLTemplateFormatter(template=f"<%= {html_columns[f]} %>")
        elif f in frame.columns and pd.api.types.is_float_dtype(frame[f]):
            fmt = NumberFormatter(format="0.[000000]")
        else:
            fmt = StringFormatter()
        col = TableColumn(field=f, title=title, formatter=fmt)
        if f in column_meta:
            registry.column(col, **column_meta[f])
        cols.append(col)
    n = len(frame)
    return DataTable(
        source=src,
        view=registry.view(src),
        columns=cols,
        sortable=True,
        reorderable=False,  # column drag needs jquery-ui, which BokehJS does not bundle
        index_position=None,
        width=width,
        height=height or min(600, 28 * max(n, 1) + 40),
        name=name,
    )


def bold_best_html(
    values: Sequence[float], texts: Sequence[str], best: Sequence[float]
) -> list[str]:
    """Escaped cell texts, bold where the value equals the row's ``best`` (ties: all bold)."""
    out = []
    for v, t, b in zip(values, texts, best, strict=True):
        t = html.escape(t)
        out.append(
            f"<b>{t}</b>" if (np.isfinite(v) and np.isfinite(b) and math.isclose(v, b)) else t
        )
    return out
