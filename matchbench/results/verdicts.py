"""The regression gate's verdicts: BASE rows against NEW rows, key by key.

Rows are matched by :data:`~matchbench.results.schema.KEY_COLUMNS`; every key found on
either side gets one output row with a ``status`` (presence and health of both sides) and
a ``verdict``:

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
``conf/compare/default.yaml`` (:class:`CompareConfig`). The report's history applies the
same rule between consecutive runs (:func:`compare_key`).
"""

from __future__ import annotations

import fnmatch
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from matchbench.results import stats
from matchbench.results.schema import KEY_COLUMNS
from matchbench.results.selection import normalize

__all__ = [
    "TIME_COLUMNS",
    "VERDICT_ORDER",
    "CompareConfig",
    "compare_frames",
    "compare_key",
    "summarize",
]

#: Time columns the gate can compare (``time`` setting, ``--time``).
TIME_COLUMNS = ("t_solve_s", "t_e2e_s")

#: The verdicts, in the order the output lists them (regressions first).
VERDICT_ORDER = {
    "regression": 0,
    "improvement": 1,
    "inconclusive": 2,
    "failed": 3,
    "missing": 4,
    "new": 5,
    "unchanged": 6,
}


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
        known = {
            "threshold",
            "alpha",
            "quality_tolerance",
            "missing_is_regression",
            "overrides",
            "time",
        }
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
        """From a YAML file; ``None`` reads ``conf/compare/default.yaml`` of the working
        directory if there is one, else the shipped one (:func:`~matchbench.core.paths.
        conf_dir`: the checkout's or the installed wheel's), else the built-in defaults
        (the same values)."""
        import yaml

        if path is None:
            candidates = [Path("conf/compare/default.yaml")]
            try:
                from matchbench.core.paths import conf_dir

                candidates.append(conf_dir() / "compare" / "default.yaml")
            except FileNotFoundError:
                pass
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

    def columns(self, name: str) -> dict[str, Any]:
        """This side's columns of an output row (``name``: "base" or "new")."""
        out: dict[str, Any] = {
            f"n_{name}": len(self.times),
            f"verified_{name}": self.verified,
            f"failures_{name}": ", ".join(f"{s} x{k}" for s, k in sorted(self.failures.items())),
        }
        if len(self.times):
            out[f"median_{name}_s"] = float(np.median(self.times))
        if len(self.objectives):
            out[f"objective_{name}"] = float(np.median(self.objectives))
        return out


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
    for name, side in (("base", b), ("new", n)):
        if side is not None:
            row.update(side.columns(name))
    if n is not None:
        row["error_new"] = n.error
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
            if row["runtime"] == "inconclusive":
                # too few repetitions for the rank test: decide by the ranges when there
                # are enough of them, else the key stays "inconclusive" (exit status 3)
                sep = stats.separation_verdict(b.times, n.times, threshold=threshold)
                if sep is not None:
                    row["runtime"], row["test_method"] = sep, "separation"
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
    rows["_order"] = rows["verdict"].map(VERDICT_ORDER)
    return (
        rows.sort_values(["_order", *keys], kind="stable")
        .drop(columns="_order")
        .reset_index(drop=True)
    )


def summarize(rows: pd.DataFrame) -> dict[str, int]:
    """Count of rows per verdict, plus ``keys`` and ``overlapping`` (keys on both sides)."""
    counts = {v: int((rows["verdict"] == v).sum()) for v in VERDICT_ORDER} if len(rows) else {}
    counts["keys"] = len(rows)
    counts["overlapping"] = (
        int((~rows["status"].isin(["new_only", "missing_in_new"])).sum()) if len(rows) else 0
    )
    return counts
