"""The regression gate's output: an aligned table, Markdown for a pull request, or JSON.

Each format takes the verdict rows of :func:`~matchbench.results.verdicts.compare_frames`,
the two :class:`~matchbench.results.selection.Selection` objects and the
:class:`~matchbench.results.verdicts.CompareConfig` used, and returns text.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from matchbench.results.selection import Selection
from matchbench.results.verdicts import VERDICT_ORDER, CompareConfig, summarize

__all__ = ["FORMATS", "format_json", "format_markdown", "format_table", "md_escape"]


def _fmt(v: Any, spec: str = ".4g") -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if isinstance(v, float | np.floating):
        return format(float(v), spec)
    return str(v)


def _display_rows(rows: pd.DataFrame) -> list[dict[str, str]]:
    out = []
    for r in rows.to_dict("records"):
        ci = (
            f" [{_fmt(r['ratio_ci_low'], '.3f')}, {_fmt(r['ratio_ci_high'], '.3f')}]"
            if not math.isnan(r["ratio_ci_low"])
            else ""
        )
        obj = (
            f"{_fmt(r['objective_base'], '.10g')} -> {_fmt(r['objective_new'], '.10g')}"
            if not (math.isnan(r["objective_base"]) and math.isnan(r["objective_new"]))
            else "-"
        )
        fails = "; ".join(
            f"{side}: {r[f'failures_{side}']}" for side in ("base", "new") if r[f"failures_{side}"]
        )
        out.append(
            {
                "verdict": r["verdict"],
                "status": r["status"],
                "problem": r["problem"],
                "algorithm": r["algorithm"],
                "variant": r["variant"] or "-",
                "instance": r["instance"],
                "gpu": r["gpu_model"],
                "reps": f"{r['n_base']}/{r['n_new']}",
                "base_s": _fmt(r["median_base_s"]),
                "new_s": _fmt(r["median_new_s"]),
                "ratio [CI]": _fmt(r["ratio"], ".3f") + ci,
                "p": _fmt(
                    min(r["p_slower"], r["p_faster"])
                    if not math.isnan(r["p_slower"])
                    else math.nan,
                    ".2g",
                ),
                "runtime": _fmt(r["runtime"]),
                "quality": _fmt(r["quality"]),
                "objective": obj,
                "verified": f"{_fmt(r['verified_base'])} -> {_fmt(r['verified_new'])}",
                "failures": fails or "-",
            }
        )
    return out


def _summary_line(summary: dict[str, int]) -> str:
    parts = [f"{summary.get(v, 0)} {v}" for v in VERDICT_ORDER if summary.get(v, 0)]
    return f"{summary['keys']} keys ({summary['overlapping']} on both sides): " + ", ".join(parts)


def _side_line(name: str, sel: Selection) -> str:
    d = sel.describe()
    return (
        f"{name}: {d['spec']} ({d['kind']}; runs {', '.join(d['run_ids']) or '-'}; "
        f"commits {', '.join(c[:12] for c in d['commits']) or '-'}; "
        f"GPU {', '.join(d['gpu_models'])}; {d['rows']} rows)"
    )


def format_table(
    rows: pd.DataFrame,
    base: Selection,
    new: Selection,
    config: CompareConfig,
    summary: dict[str, int] | None = None,
) -> str:
    """Plain aligned text for a terminal; ``summary`` defaults to that of ``rows``."""
    disp = pd.DataFrame(_display_rows(rows))
    lines = [
        _side_line("BASE", base),
        _side_line("NEW ", new),
        f"rule: regression when median {config.time} ratio > threshold (default "
        f"{config.threshold}) and one-sided Mann-Whitney p < {config.alpha}; CI "
        f"{config.level:.0%} bootstrap",
        "",
        disp.to_string(index=False) if len(disp) else "(no keys)",
        "",
        _summary_line(summary or summarize(rows)),
    ]
    return "\n".join(lines) + "\n"


def md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _md_table(disp: list[dict[str, str]]) -> str:
    if not disp:
        return "_none_\n"
    cols = list(disp[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in disp:
        out.append("| " + " | ".join(md_escape(str(r[c])) for c in cols) + " |")
    return "\n".join(out) + "\n"


def format_markdown(
    rows: pd.DataFrame,
    base: Selection,
    new: Selection,
    config: CompareConfig,
    summary: dict[str, int] | None = None,
) -> str:
    """Markdown for a pull-request comment: changes first, everything in a fold."""
    summary = summary or summarize(rows)
    disp = _display_rows(rows)
    changed = [d for d in disp if d["verdict"] != "unchanged"]
    head = "regressions found" if summary.get("regression") else "no regression"
    return (
        f"### matchbench compare: {head}\n\n"
        f"- {md_escape(_side_line('BASE', base))}\n"
        f"- {md_escape(_side_line('NEW', new))}\n"
        f"- rule: regression when median {config.time} ratio NEW/BASE > threshold (default "
        f"{config.threshold}) and one-sided Mann-Whitney p < {config.alpha}; exact "
        f"families: any objective change; approximate: loss > tolerance (default "
        f"{config.quality_tolerance})\n\n"
        f"**{md_escape(_summary_line(summary))}**\n\n"
        f"#### Changed, failed, missing or inconclusive\n\n{_md_table(changed)}\n"
        f"<details><summary>All {len(disp)} keys shown</summary>\n\n{_md_table(disp)}\n</details>\n"
    )


def _jsonable(v: Any) -> Any:
    if isinstance(v, float | np.floating):
        return None if math.isnan(v) else (float(v) if math.isfinite(v) else str(v))
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if v is pd.NA or v is pd.NaT:
        return None
    return v


def format_json(
    rows: pd.DataFrame,
    base: Selection,
    new: Selection,
    config: CompareConfig,
    summary: dict[str, int] | None = None,
) -> str:
    """Every row with every number; NaN as null."""
    records = [{k: _jsonable(v) for k, v in r.items()} for r in rows.to_dict("records")]
    summary = summary or summarize(rows)
    doc = {
        "base": base.describe(),
        "new": new.describe(),
        "config": config.as_dict(),
        "summary": summary,
        "regression": bool(summary.get("regression", 0)),
        "rows": records,
    }
    return json.dumps(doc, indent=2, default=str) + "\n"


#: ``--format`` choice -> formatter.
FORMATS = {"table": format_table, "markdown": format_markdown, "json": format_json}
