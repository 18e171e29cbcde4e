"""``matchbench compare BASE NEW``: the regression gate between two sets of results.

BASE and NEW are each a run id (under ``--root``), a commit (hex prefix of at least 7
characters: every row under the root whose ``git_commit`` starts with it) or a result
path (file, run folder or results root). Rows are matched by
:data:`~matchbench.results.schema.KEY_COLUMNS`; every key found on either side gets one
output row with a ``status`` (presence and health of both sides) and a ``verdict``:

========================  ==================================================  ============
status                    meaning                                             verdict
========================  ==================================================  ============
``compared``              every row ok on both sides                          runtime and quality decide
``failed_in_new``         BASE all ok, NEW has a failed row                   regression
``fixed``                 BASE has a failed row, NEW all ok                   improvement
``failed_in_both``        failed rows on both sides                           failed
``missing_in_new``        key only in BASE                                    missing
``new_only``              key only in NEW                                     new
========================  ==================================================  ============

A failed row is one whose ``status`` is not "ok" (error, timeout, oom, skipped,
crashed). Runtime and quality are judged on the ok rows by
:func:`~matchbench.results.stats.classify_runtime` and
:func:`~matchbench.results.stats.classify_quality` with the settings of
``conf/compare/default.yaml``. Exit status: 1 when some verdict is "regression", 0
otherwise, 2 on unusable input.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import re
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from matchbench.results import stats
from matchbench.results.schema import KEY_COLUMNS
from matchbench.results.store import ResultsError, find_run, latest_run, read_results

#: Time columns the gate can compare (``time`` setting, ``--time``).
TIME_COLUMNS = ("t_solve_s", "t_e2e_s")

#: Label of ``gpu_model`` for rows of CPU-only runs (null in the results).
CPU_LABEL = "cpu"

_HEX = re.compile(r"^[0-9a-fA-F]{7,40}$")

_VERDICT_ORDER = {
    "regression": 0,
    "improvement": 1,
    "inconclusive": 2,
    "failed": 3,
    "missing": 4,
    "new": 5,
    "unchanged": 6,
}


# --------------------------------------------------------------------------- input


@dataclass
class Selection:
    """Result rows chosen by one command-line argument, with where they came from."""

    spec: str
    kind: str  # "path", "run", "commit", "latest" or "all"
    frame: pd.DataFrame

    @property
    def run_ids(self) -> list[str]:
        return sorted(self.frame["run_id"].dropna().unique().tolist())

    @property
    def commits(self) -> list[str]:
        return sorted(self.frame["git_commit"].dropna().unique().tolist())

    @property
    def gpu_models(self) -> list[str]:
        return sorted(self.frame["gpu_model"].fillna(CPU_LABEL).unique().tolist())

    def describe(self) -> dict[str, Any]:
        """JSON-able provenance: what was selected and how."""
        ts = pd.to_datetime(self.frame["timestamp"], utc=True).dropna()
        return {
            "spec": self.spec,
            "kind": self.kind,
            "run_ids": self.run_ids,
            "commits": self.commits,
            "gpu_models": self.gpu_models,
            "rows": len(self.frame),
            "first_timestamp": ts.min().isoformat() if len(ts) else None,
            "last_timestamp": ts.max().isoformat() if len(ts) else None,
        }


def normalize(frame: pd.DataFrame) -> pd.DataFrame:
    """Result rows with key columns filled: null ``gpu_model`` -> "cpu", null ``variant``
    and ``init`` -> "".

    Instrumented repetitions (``instrumented`` true) are left out: their times include
    the instrumentation, so neither the gate nor the report may compare them.
    """
    if "instrumented" in frame:
        frame = frame[frame["instrumented"].fillna(False) != True]  # noqa: E712
    df = frame.copy()
    df["gpu_model"] = df["gpu_model"].fillna(CPU_LABEL).astype(str)
    df["variant"] = df["variant"].fillna("").astype(str)
    df["init"] = df["init"].fillna("").astype(str) if "init" in df else ""
    for col in ("problem", "algorithm", "instance"):
        df[col] = df[col].fillna("").astype(str)
    df["timestamp"] = pd.to_datetime(df["timestamp"], utc=True)
    return df


def select(spec: str, root: str | Path = "runs") -> Selection:
    """The result rows named by ``spec``: a result path, a run id under ``root``, or a commit.

    Parameters
    ----------
    spec : str
        An existing path (file, run folder or results root) is read as such; otherwise
        a run id is looked up under ``root``; otherwise a hex string of at least 7
        characters selects every row under ``root`` whose ``git_commit`` starts with
        it (one commit only).
    root : path
        The results root.

    Raises
    ------
    ResultsError
        When ``spec`` names nothing, nothing readable, an ambiguous commit prefix, or no rows.
    """
    path = Path(spec)
    if path.exists():
        frame, kind = read_results(path), "path"
    elif (run := find_run(root, spec)) is not None:
        frame, kind = read_results(run), "run"
    elif _HEX.match(spec):
        if not Path(root).exists():
            raise ResultsError(
                f"{spec}: looks like a commit, but results root {root} does not exist"
            )
        everything = read_results(root)
        commits = everything["git_commit"].dropna()
        hit = commits[commits.str.lower().str.startswith(spec.lower())].unique()
        if len(hit) > 1:
            raise ResultsError(
                f"{spec}: ambiguous commit prefix under {root} ({', '.join(sorted(hit))})"
            )
        frame = everything[everything["git_commit"].isin(hit)]
        kind = "commit"
    else:
        raise ResultsError(
            f"{spec}: not a results path, a run id under {root}, or a commit prefix (7+ hex)"
        )
    if frame.empty:
        raise ResultsError(f"{spec}: no result rows")
    return Selection(spec, kind, normalize(frame.reset_index(drop=True)))


def select_many(
    specs: Sequence[str], root: str | Path = "runs", *, all_runs: bool = False
) -> Selection:
    """Rows of several specs together; none means the latest run under ``root`` (or all)."""
    if specs:
        parts = [select(s, root) for s in specs]
        frame = pd.concat([p.frame for p in parts], ignore_index=True)
        frame = frame.drop_duplicates(subset=["run_id", "task_id", "repetition", *KEY_COLUMNS])
        kind = parts[0].kind if len(parts) == 1 else "several"
        return Selection(" ".join(specs), kind, frame.reset_index(drop=True))
    if not Path(root).exists():
        raise ResultsError(f"{root}: no such results root")
    if all_runs:
        frame = read_results(root)
        if frame.empty:
            raise ResultsError(f"{root}: no result rows")
        return Selection(str(root), "all", normalize(frame))
    run = latest_run(root)
    if run is None:
        raise ResultsError(f"{root}: no run with results")
    return Selection(str(run), "latest", normalize(read_results(run)))


# --------------------------------------------------------------------------- config


@dataclass
class CompareConfig:
    """Settings of the gate (see ``conf/compare/default.yaml``)."""

    threshold: float = 1.10
    alpha: float = 0.01
    quality_tolerance: float = 0.01
    resamples: int = 2000
    level: float = 0.95
    seed: int = 0
    missing_is_regression: bool = False
    overrides: list[dict[str, Any]] = field(default_factory=list)
    #: the time column compared: ``t_solve_s`` (the papers' protocol) or ``t_e2e_s``
    #: (initializer + solve: what a user waits for)
    time: str = "t_solve_s"

    _PATTERN_KEYS = frozenset(KEY_COLUMNS)
    _SETTING_KEYS = frozenset({"threshold", "quality_tolerance"})

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> CompareConfig:
        """From the YAML's structure; unknown keys are errors (a typo must not pass)."""
        data = dict(data or {})
        boot = dict(data.pop("bootstrap", None) or {})
        known = {"threshold", "alpha", "quality_tolerance", "missing_is_regression", "overrides", "time"}
        unknown = set(data) - known
        bad_boot = set(boot) - {"resamples", "level", "seed"}
        if unknown or bad_boot:
            raise ValueError(f"unknown compare settings: {sorted(unknown | bad_boot)}")
        cfg = cls(
            threshold=float(data.get("threshold", cls.threshold)),
            alpha=float(data.get("alpha", cls.alpha)),
            quality_tolerance=float(data.get("quality_tolerance", cls.quality_tolerance)),
            resamples=int(boot.get("resamples", cls.resamples)),
            level=float(boot.get("level", cls.level)),
            seed=int(boot.get("seed", cls.seed)),
            missing_is_regression=bool(data.get("missing_is_regression", False)),
            overrides=[dict(o) for o in (data.get("overrides") or [])],
            time=str(data.get("time", cls.time)),
        )
        for rule in cfg.overrides:
            extra = set(rule) - cls._PATTERN_KEYS - cls._SETTING_KEYS
            if extra or not (set(rule) & cls._SETTING_KEYS):
                raise ValueError(
                    f"override {rule}: pattern keys are {sorted(cls._PATTERN_KEYS)}, "
                    f"settings {sorted(cls._SETTING_KEYS)} (at least one)"
                )
        cfg.validate()
        return cfg

    @classmethod
    def load(cls, path: str | Path | None = None) -> CompareConfig:
        """From a YAML file; ``None`` looks for ``conf/compare/default.yaml`` here, then in
        the source tree, and falls back to the built-in defaults (the same values)."""
        import yaml

        if path is None:
            candidates = [
                Path("conf/compare/default.yaml"),
                Path(__file__).resolve().parents[2] / "conf" / "compare" / "default.yaml",
            ]
            path = next((p for p in candidates if p.is_file()), None)
            if path is None:
                return cls()
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such compare config")
        return cls.from_mapping(yaml.safe_load(p.read_text()) or {})

    def validate(self) -> None:
        if self.time not in TIME_COLUMNS:
            raise ValueError(f"time must be one of {TIME_COLUMNS}, got {self.time!r}")
        if not self.threshold > 1:
            raise ValueError(f"threshold must be > 1, got {self.threshold}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if not 0 < self.level < 1:
            raise ValueError(f"bootstrap level must be in (0, 1), got {self.level}")
        for rule in self.overrides:
            if "threshold" in rule and not float(rule["threshold"]) > 1:
                raise ValueError(f"override {rule}: threshold must be > 1")

    def settings_for(self, key: Mapping[str, str]) -> tuple[float, float]:
        """``(threshold, quality_tolerance)`` for one key; later matching overrides win."""
        threshold, tolerance = self.threshold, self.quality_tolerance
        for rule in self.overrides:
            if all(
                fnmatch.fnmatchcase(str(key.get(k, "")), str(pat))
                for k, pat in rule.items()
                if k in self._PATTERN_KEYS
            ):
                threshold = float(rule.get("threshold", threshold))
                tolerance = float(rule.get("quality_tolerance", tolerance))
        return threshold, tolerance

    def as_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "alpha": self.alpha,
            "quality_tolerance": self.quality_tolerance,
            "bootstrap": {"resamples": self.resamples, "level": self.level, "seed": self.seed},
            "missing_is_regression": self.missing_is_regression,
            "overrides": self.overrides,
        }


# --------------------------------------------------------------------------- comparison


@dataclass
class _Side:
    """One side's rows of one key, reduced to what the verdicts need."""

    n_rows: int
    times: np.ndarray
    objectives: np.ndarray
    verified: bool
    failures: dict[str, int]
    error: str | None

    @classmethod
    def of(cls, rows: pd.DataFrame, time: str = "t_solve_s") -> _Side:
        ok = rows[rows["status"] == "ok"]
        t = ok[time].to_numpy(dtype=float)
        obj = ok["objective"].to_numpy(dtype=float)
        failed = rows[rows["status"] != "ok"]
        err = None
        if len(failed):
            first = failed.iloc[0]
            err = str(first["error"]) if pd.notna(first["error"]) else None
        return cls(
            n_rows=len(rows),
            times=t[np.isfinite(t) & (t > 0)],
            objectives=obj[np.isfinite(obj)],
            # a null verdict is not a verification
            verified=bool(len(ok)) and bool(ok["verified"].fillna(False).astype(bool).all()),
            failures=failed["status"].fillna("unknown").value_counts().to_dict(),
            error=err,
        )

    @property
    def failed(self) -> bool:
        return bool(self.failures)


def _failures_text(f: dict[str, int]) -> str:
    return ", ".join(f"{s} x{n}" for s, n in sorted(f.items()))


def compare_key(
    base: pd.DataFrame | None,
    new: pd.DataFrame | None,
    config: CompareConfig,
    info: Mapping[str, Any],
    threshold: float,
    tolerance: float,
    *,
    with_ci: bool = True,
) -> dict[str, Any]:
    """Status, verdicts and numbers of one key from its BASE and NEW rows (``None``: absent).

    ``info`` is the problem's ``{sense, exact}`` (:func:`~matchbench.results.stats.problem_info`);
    ``threshold`` and ``tolerance`` the key's settings (:meth:`CompareConfig.settings_for`).
    The report's history uses this between consecutive runs, so both apply one rule;
    ``with_ci=False`` skips the bootstrap interval, which no verdict depends on.
    """
    row: dict[str, Any] = {
        "status": None,
        "verdict": None,
        "runtime": None,
        "quality": None,
        "n_base": 0,
        "n_new": 0,
        "median_base_s": math.nan,
        "median_new_s": math.nan,
        "ratio": math.nan,
        "ratio_ci_low": math.nan,
        "ratio_ci_high": math.nan,
        "p_slower": math.nan,
        "p_faster": math.nan,
        "p_min": math.nan,
        "test_method": None,
        "objective_base": math.nan,
        "objective_new": math.nan,
        "quality_loss": math.nan,
        "verified_base": None,
        "verified_new": None,
        "failures_base": "",
        "failures_new": "",
        "error_new": None,
        "exact": info["exact"],
        "sense": info["sense"],
        "threshold": threshold,
        "quality_tolerance": tolerance,
    }
    b = _Side.of(base, config.time) if base is not None and len(base) else None
    n = _Side.of(new, config.time) if new is not None and len(new) else None
    if b is None:
        row["status"], row["verdict"] = "new_only", "new"
    elif n is None:
        row["status"] = "missing_in_new"
        row["verdict"] = "regression" if config.missing_is_regression else "missing"
    if b is not None:
        row.update(n_base=len(b.times), verified_base=b.verified)
        row["failures_base"] = _failures_text(b.failures)
        if len(b.times):
            row["median_base_s"] = float(np.median(b.times))
        if len(b.objectives):
            row["objective_base"] = float(np.median(b.objectives))
    if n is not None:
        row.update(n_new=len(n.times), verified_new=n.verified, error_new=n.error)
        row["failures_new"] = _failures_text(n.failures)
        if len(n.times):
            row["median_new_s"] = float(np.median(n.times))
        if len(n.objectives):
            row["objective_new"] = float(np.median(n.objectives))
    if b is not None and n is not None:
        if len(b.times) and len(n.times):
            if with_ci:
                ratio, lo, hi = stats.median_ratio_ci(
                    b.times,
                    n.times,
                    n_resamples=config.resamples,
                    level=config.level,
                    seed=config.seed,
                )
            else:
                ratio = float(np.median(n.times) / np.median(b.times))
                lo = hi = math.nan
            test = stats.mann_whitney(b.times, n.times)
            row.update(
                ratio=ratio,
                ratio_ci_low=lo,
                ratio_ci_high=hi,
                p_slower=test.p_slower,
                p_faster=test.p_faster,
                p_min=test.p_min,
                test_method=test.method,
            )
            row["runtime"] = stats.classify_runtime(
                ratio, test, threshold=threshold, alpha=config.alpha
            )
        if (len(b.objectives) and len(n.objectives)) or (b.verified != n.verified):
            row["quality"] = stats.classify_quality(
                b.objectives,
                n.objectives,
                sense=info["sense"],
                exact=info["exact"],
                base_verified=b.verified,
                new_verified=n.verified,
                tolerance=tolerance,
            )
            if len(b.objectives) and len(n.objectives):
                row["quality_loss"] = stats.relative_change(
                    row["objective_base"], row["objective_new"], info["sense"]
                )
        if n.failed and not b.failed:
            row["status"], row["verdict"] = "failed_in_new", "regression"
        elif b.failed and not n.failed:
            row["status"] = "fixed"
        elif b.failed and n.failed:
            row["status"] = "failed_in_both"
        else:
            row["status"] = "compared"
        if row["verdict"] is None:
            verdicts = {row["runtime"], row["quality"]}
            if "regression" in verdicts:
                row["verdict"] = "regression"
            elif row["status"] == "fixed" or "improvement" in verdicts:
                row["verdict"] = "improvement"
            elif row["status"] == "failed_in_both":
                row["verdict"] = "failed"
            elif row["runtime"] == "inconclusive":
                row["verdict"] = "inconclusive"
            else:
                row["verdict"] = "unchanged"
    return row


def compare_frames(
    base: pd.DataFrame,
    new: pd.DataFrame,
    config: CompareConfig | None = None,
    problems: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """One row per key of either side, with numbers and verdicts (see the module docstring).

    Parameters
    ----------
    base, new : DataFrame
        Result rows (as read by :func:`~matchbench.results.store.read_results`).
    config : CompareConfig, optional
        Thresholds and tolerances; defaults as in ``conf/compare/default.yaml``.
    problems : mapping, optional
        ``{problem: {objective, sense, exact}}``; default
        :func:`matchbench.core.problem.problem_table`. A problem missing from it is
        judged as exact with sense "max" (the strict choice; a warning names it).

    Returns
    -------
    DataFrame
        Columns: the key columns, ``status``, ``verdict``, ``runtime``, ``quality``,
        repetition counts, medians, ``ratio`` with its CI, the test's p-values,
        objectives and the settings used; sorted with regressions first.
    """
    config = config or CompareConfig()
    if problems is None:
        from matchbench.core.problem import problem_table

        problems = problem_table()
    base, new = normalize(base), normalize(new)
    keys = list(KEY_COLUMNS)
    gb = dict(iter(base.groupby(keys, sort=True, dropna=False)))
    gn = dict(iter(new.groupby(keys, sort=True, dropna=False)))
    unknown = sorted({k[0] for k in (*gb, *gn)} - set(problems))
    for name in unknown:
        warnings.warn(
            f"problem {name!r} is not in the problem table; judged as exact, sense 'max'",
            stacklevel=2,
        )
    out = []
    for key in sorted(set(gb) | set(gn)):
        kd = dict(zip(keys, key, strict=True))
        info = stats.problem_info(kd["problem"], problems)
        threshold, tolerance = config.settings_for(kd)
        row = compare_key(gb.get(key), gn.get(key), config, info, threshold, tolerance)
        out.append({**kd, **row})
    rows = pd.DataFrame(out)
    if rows.empty:
        return rows
    rows["_order"] = rows["verdict"].map(_VERDICT_ORDER)
    return (
        rows.sort_values(["_order", *keys], kind="stable")
        .drop(columns="_order")
        .reset_index(drop=True)
    )


def summarize(rows: pd.DataFrame) -> dict[str, int]:
    """Count of rows per verdict, plus ``keys`` and ``overlapping`` (keys on both sides)."""
    counts = {v: int((rows["verdict"] == v).sum()) for v in _VERDICT_ORDER} if len(rows) else {}
    counts["keys"] = len(rows)
    counts["overlapping"] = (
        int((~rows["status"].isin(["new_only", "missing_in_new"])).sum()) if len(rows) else 0
    )
    return counts


# --------------------------------------------------------------------------- output


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
    parts = [f"{summary.get(v, 0)} {v}" for v in _VERDICT_ORDER if summary.get(v, 0)]
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


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _md_table(disp: list[dict[str, str]]) -> str:
    if not disp:
        return "_none_\n"
    cols = list(disp[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in disp:
        out.append("| " + " | ".join(_md_escape(str(r[c])) for c in cols) + " |")
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
        f"- {_md_escape(_side_line('BASE', base))}\n"
        f"- {_md_escape(_side_line('NEW', new))}\n"
        f"- rule: regression when median {config.time} ratio NEW/BASE > threshold (default "
        f"{config.threshold}) and one-sided Mann-Whitney p < {config.alpha}; exact "
        f"families: any objective change; approximate: loss > tolerance (default "
        f"{config.quality_tolerance})\n\n"
        f"**{_md_escape(_summary_line(summary))}**\n\n"
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


_FORMATS = {"table": format_table, "markdown": format_markdown, "json": format_json}


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="matchbench compare",
        description="Compare two sets of results; exit 1 on a regression, 2 on unusable input.",
    )
    p.add_argument("base", metavar="BASE", help="run id, commit (7+ hex) or results path")
    p.add_argument("new", metavar="NEW", help="run id, commit (7+ hex) or results path")
    p.add_argument("--root", default="runs", help="results root (default: runs)")
    p.add_argument("--threshold", type=float, default=None, help="runtime ratio (default 1.10)")
    p.add_argument("--alpha", type=float, default=None, help="significance level (default 0.01)")
    p.add_argument(
        "--time", choices=TIME_COLUMNS, default=None,
        help="time compared: t_solve_s (the papers' protocol, default) or t_e2e_s "
        "(initializer + solve)",
    )
    p.add_argument("--config", default=None, help="rules YAML (default: conf/compare/default.yaml)")
    p.add_argument("--format", choices=sorted(_FORMATS), default="table")
    p.add_argument("-o", "--output", default=None, help="write here instead of stdout")
    p.add_argument(
        "--changes-only",
        action="store_true",
        help="leave out unchanged keys in the table and JSON output",
    )
    return p


def _fail(msg: str) -> int:
    print(f"matchbench compare: error: {msg}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Command line of ``matchbench compare``; returns the exit status."""
    import yaml

    args = _parser().parse_args(argv)
    try:
        config = CompareConfig.load(args.config)
        if args.threshold is not None:
            config.threshold = args.threshold
        if args.alpha is not None:
            config.alpha = args.alpha
        if args.time is not None:
            config.time = args.time
        config.validate()
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return _fail(f"config: {' '.join(str(exc).split())}")
    try:
        base = select(args.base, args.root)
        new = select(args.new, args.root)
    except (ResultsError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else repr(exc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = compare_frames(base.frame, new.frame, config)
    summary = summarize(rows)
    if summary["overlapping"] == 0:
        return _fail(f"no overlapping keys ({', '.join(KEY_COLUMNS)}) between BASE and NEW")
    for w in caught:
        print(f"matchbench compare: warning: {w.message}", file=sys.stderr)
    shown = rows[rows["verdict"] != "unchanged"] if args.changes_only else rows
    # the summary (and the verdict) must not depend on what is shown
    text = _FORMATS[args.format](shown, base, new, config, summary)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 1 if summary.get("regression", 0) else 0


if __name__ == "__main__":
    sys.exit(main())
