"""Statistics for comparing solvers and runs: profiles, means, tests and verdicts.

Pure functions of arrays and small frames; no I/O, no plotting. The report
(:mod:`matchbench.report`) and the regression gate (:mod:`matchbench.results.verdicts`)
share them, so a regression marked in the report's history is the one ``compare``
would flag.

Conventions
-----------
- A *time* is a positive, finite number of seconds. NaN, ``inf`` and non-positive
  values are failures (a solver that did not finish, or whose answer was not
  verified, has no time; a non-positive number is not a measurement).
- Times tables are ``pandas.DataFrame`` objects with one row per instance and one
  column per solver.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

#: Runtime verdicts of :func:`classify_runtime`.
RUNTIME_VERDICTS = ("regression", "improvement", "unchanged", "inconclusive")
#: Quality verdicts of :func:`classify_quality`.
QUALITY_VERDICTS = ("regression", "improvement", "unchanged")


def _as_float_array(values: Iterable[float] | np.ndarray) -> np.ndarray:
    return np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)


def valid_times(times: pd.DataFrame) -> pd.DataFrame:
    """``times`` with every failure (NaN, inf, non-positive) replaced by ``inf``."""
    t = times.astype(float)
    return t.where(np.isfinite(t) & (t > 0), np.inf)


def geometric_mean(
    values: Iterable[float] | np.ndarray, *, return_count: bool = False
) -> float | tuple[float, int]:
    """Geometric mean of the positive, finite values.

    Parameters
    ----------
    values : iterable of float
        Times (or any positive quantities).
    return_count : bool
        Also return how many values entered the mean.

    Returns
    -------
    float or (float, int)
        The mean (NaN when no value is positive and finite) and, when asked, the
        number of values used.

    Notes
    -----
    Deveci et al. 2013, Table 1 reports geometric means of runtimes per instance set.
    The rule here: NaN, ``inf`` (failures) and non-positive values (not measurements)
    are left out rather than making the mean 0, ``inf`` or undefined; callers show the
    count next to the mean so the omission is visible.
    """
    x = _as_float_array(values)
    x = x[np.isfinite(x) & (x > 0)]
    gm = float(np.exp(np.mean(np.log(x)))) if x.size else math.nan
    return (gm, int(x.size)) if return_count else gm


def performance_ratios(times: pd.DataFrame) -> pd.DataFrame:
    """Dolan–Moré performance ratios ``r[p, s] = t[p, s] / min_s t[p, s]``.

    Parameters
    ----------
    times : DataFrame
        One row per instance, one column per solver, seconds; failures as NaN,
        ``inf`` or non-positive values.

    Returns
    -------
    DataFrame
        Same shape; ``inf`` for every failure, and for every solver on an instance
        that no solver finished.

    Notes
    -----
    Dolan and Moré, *Benchmarking optimization software with performance profiles*,
    Math. Programming 91 (2002), eq. (1); failures get ratio ``inf`` instead of the
    paper's ``r_M``, which gives the same profile for every finite ``tau``.
    """
    t = valid_times(times)
    best = t.min(axis=1)
    with np.errstate(invalid="ignore"):
        ratios = t.div(best, axis=0)
    # inf / inf (nobody finished) is NaN: a failure for everyone.
    return ratios.fillna(np.inf)


def performance_profile(times: pd.DataFrame, taus: Iterable[float] | None = None) -> pd.DataFrame:
    """Fraction of instances on which each solver is within a factor ``tau`` of the best.

    Parameters
    ----------
    times : DataFrame
        One row per instance, one column per solver (see :func:`performance_ratios`).
    taus : iterable of float, optional
        Factors (>= 1) to evaluate at. Default: 1 and every finite ratio that occurs,
        sorted, which are exactly the profile's break points.

    Returns
    -------
    DataFrame
        Index ``tau``, one column per solver, values ``rho_s(tau)`` in [0, 1]. The
        profile is a right-continuous step function: plot it with ``step`` in
        ``mode="after"`` against ``log2(tau)``.

    Notes
    -----
    Dolan and Moré (2002), eq. (2); as plotted in Deveci et al. 2013, Fig. 4 (log2 axis).
    Every instance counts in the denominator, including those a solver failed on and
    those no solver finished, so a solver's curve reaches 1 only if it solved all.
    """
    ratios = performance_ratios(times)
    n = len(ratios)
    if taus is None:
        finite = ratios.to_numpy()[np.isfinite(ratios.to_numpy())]
        taus = np.unique(np.concatenate([[1.0], finite]))
    taus = np.asarray(list(taus), dtype=float)
    out = {}
    for solver in ratios.columns:
        r = np.sort(ratios[solver].to_numpy())
        counts = np.searchsorted(r, taus, side="right")
        out[solver] = counts / n if n else np.full(taus.shape, np.nan)
    return pd.DataFrame(out, index=pd.Index(taus, name="tau"), columns=ratios.columns)


def speedups(times: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Speedup of every other solver over ``baseline``: ``t[p, baseline] / t[p, s]``.

    Returns
    -------
    DataFrame
        One row per instance, one column per solver other than ``baseline``. A failed
        solver gets 0; a solver that finished where the baseline failed gets ``inf``;
        both failed gives 0 (no speedup was shown).

    Raises
    ------
    KeyError
        When ``baseline`` is not a column of ``times``.
    """
    if baseline not in times.columns:
        raise KeyError(f"baseline {baseline!r} is not among the solvers {list(times.columns)}")
    t = valid_times(times)
    base = t[baseline]
    others = t.drop(columns=[baseline])
    with np.errstate(invalid="ignore", divide="ignore"):
        s = others.rdiv(base, axis=0)
    # inf/inf (both failed) is NaN; finite/inf (solver failed) is already 0.
    return s.fillna(0.0)


def speedup_profile(
    times: pd.DataFrame, baseline: str, log2_speedups: Iterable[float] | None = None
) -> pd.DataFrame:
    """Fraction of instances on which each solver is at least ``2**x`` times faster than ``baseline``.

    Parameters
    ----------
    times : DataFrame
        One row per instance, one column per solver, with ``baseline`` among them.
    baseline : str
        The reference solver (a sequential CPU code in the paper).
    log2_speedups : iterable of float, optional
        The ``x`` values. Default: ``log2`` of every finite positive speedup that
        occurs, sorted (the break points).

    Returns
    -------
    DataFrame
        Index ``log2_speedup``, one column per non-baseline solver. A non-increasing,
        left-continuous step function: plot with ``step`` in ``mode="before"``.

    Notes
    -----
    Deveci et al. 2013, Fig. 3: "a point (x, y) corresponds to the probability of
    obtaining at least 2^x speedup is y". Failure rules as in :func:`speedups`.
    """
    s = speedups(times, baseline)
    n = len(s)
    if log2_speedups is None:
        v = s.to_numpy()
        v = v[np.isfinite(v) & (v > 0)]
        log2_speedups = np.unique(np.log2(v)) if v.size else np.array([0.0])
    xs = np.asarray(list(log2_speedups), dtype=float)
    thresholds = np.exp2(xs)
    out = {}
    for solver in s.columns:
        v = np.sort(s[solver].to_numpy())
        # count of v >= threshold
        counts = v.size - np.searchsorted(v, thresholds, side="left")
        out[solver] = counts / n if n else np.full(xs.shape, np.nan)
    return pd.DataFrame(out, index=pd.Index(xs, name="log2_speedup"), columns=s.columns)


def median_ratio_ci(
    base: Iterable[float] | np.ndarray,
    new: Iterable[float] | np.ndarray,
    *,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``median(new) / median(base)`` with a bootstrap percentile confidence interval.

    Parameters
    ----------
    base, new : iterable of float
        Repetition times of the two sides (positive).
    n_resamples : int
        Bootstrap resamples (each side is resampled on its own: the samples are
        independent, not paired).
    level : float
        Confidence level of the two-sided interval.
    seed : int
        Seed of the resampling, so a report is reproducible.

    Returns
    -------
    (ratio, low, high)
        ``low`` and ``high`` are NaN when a side has fewer than two values (there is
        nothing to resample) or a side is empty.

    Notes
    -----
    Efron and Tibshirani, *An Introduction to the Bootstrap* (1993), ch. 13
    (percentile interval), computed with :func:`scipy.stats.bootstrap`. The percentile
    method is used rather than BCa because BCa's jackknife degenerates on the small,
    often tied, samples of benchmark repetitions.
    """
    from scipy import stats

    b = _as_float_array(base)
    n = _as_float_array(new)
    if b.size == 0 or n.size == 0:
        return math.nan, math.nan, math.nan
    mb = float(np.median(b))
    ratio = float(np.median(n)) / mb if mb > 0 else math.nan
    if b.size < 2 or n.size < 2 or not math.isfinite(ratio):
        return ratio, math.nan, math.nan

    def statistic(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    kwargs = dict(
        n_resamples=n_resamples,
        confidence_level=level,
        method="percentile",
        vectorized=True,
    )
    with warnings.catch_warnings():
        # Identical repetitions give a degenerate bootstrap distribution; the interval
        # (ratio, ratio) is then the right answer, not a problem to warn about.
        warnings.simplefilter("ignore")
        try:
            res = stats.bootstrap((b, n), statistic, rng=np.random.default_rng(seed), **kwargs)
        except TypeError:  # scipy < 1.15 names the generator random_state
            res = stats.bootstrap(
                (b, n), statistic, random_state=np.random.default_rng(seed), **kwargs
            )
    ci = res.confidence_interval
    return ratio, float(ci.low), float(ci.high)


@dataclass(frozen=True)
class MannWhitney:
    """One-sided Mann–Whitney U tests of NEW against BASE.

    Attributes
    ----------
    p_slower : float
        p-value for "NEW is stochastically larger (slower) than BASE".
    p_faster : float
        p-value for "NEW is stochastically smaller (faster) than BASE".
    p_min : float
        The smallest p-value these sample sizes can give at all (two completely
        separated samples, same method): when ``p_min >= alpha`` no outcome can be
        significant.
    method : str
        "exact" or "asymptotic" (scipy's rule for ``method="auto"``, made explicit so
        ``p_min`` is computed the same way).
    """

    p_slower: float
    p_faster: float
    p_min: float
    method: str


def mann_whitney(
    base: Iterable[float] | np.ndarray, new: Iterable[float] | np.ndarray
) -> MannWhitney:
    """One-sided Mann–Whitney U tests both ways, with the minimum achievable p-value.

    Parameters
    ----------
    base, new : iterable of float
        Repetition times (at least one each).

    Returns
    -------
    MannWhitney

    Notes
    -----
    Mann and Whitney, Ann. Math. Statist. 18 (1947), via
    :func:`scipy.stats.mannwhitneyu`. The exact null distribution is used when a
    sample has at most 8 values and there are no ties, the normal approximation with
    continuity and tie correction otherwise (scipy's ``"auto"`` rule). With the exact
    method ``p_min = 1 / C(n1 + n2, n1)``: 3 repetitions per side can never go below
    0.05, 5 per side reach 0.004.
    """
    from scipy import stats

    b = _as_float_array(base)
    n = _as_float_array(new)
    if b.size == 0 or n.size == 0:
        return MannWhitney(math.nan, math.nan, math.nan, "none")
    both = np.concatenate([b, n])
    ties = np.unique(both).size < both.size
    method = "exact" if min(b.size, n.size) <= 8 and not ties else "asymptotic"

    def p(x: np.ndarray, y: np.ndarray, alternative: str) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = stats.mannwhitneyu(x, y, alternative=alternative, method=method)
        v = float(r.pvalue)
        # All values equal: zero variance gives NaN; no evidence either way.
        return 1.0 if math.isnan(v) else v

    separated_b = np.arange(b.size, dtype=float)
    separated_n = np.arange(n.size, dtype=float) + b.size
    return MannWhitney(
        p_slower=p(n, b, "greater"),
        p_faster=p(n, b, "less"),
        p_min=p(separated_n, separated_b, "greater"),
        method=method,
    )


#: Fewest repetitions per side for :func:`separation_verdict`.
SEPARATION_MIN_REPETITIONS = 3


def separation_verdict(
    base: Iterable[float] | np.ndarray,
    new: Iterable[float] | np.ndarray,
    *,
    threshold: float = 1.10,
) -> str | None:
    """Runtime verdict for repetitions too few for the rank test to reach ``alpha``.

    With 3 repetitions a side the one-sided Mann–Whitney p-value cannot go below 0.05, so
    :func:`classify_runtime` alone would call a threefold slowdown "inconclusive" at the
    default ``alpha = 0.01``. The separation rule decides such keys by the ranges instead:
    "regression" when *every* NEW repetition is more than ``threshold`` times the slowest
    BASE one (``min(new) > threshold * max(base)``), "improvement" when every NEW one is
    faster than the fastest BASE one divided by ``threshold``, "unchanged" otherwise.

    Its minimum detectable effect is stated by the rule itself: a slowdown is flagged
    only when the two samples' ranges are apart by the threshold, which noise of a few
    percent never produces at ``threshold = 1.10``, and a consistent slowdown of more than
    ``threshold`` times the spread always does.

    Returns
    -------
    str or None
        None when a side has fewer than :data:`SEPARATION_MIN_REPETITIONS` repetitions:
        too few to decide (the key stays "inconclusive").

    >>> separation_verdict([1.0, 1.02, 0.99], [3.0, 3.1, 2.95])
    'regression'
    >>> separation_verdict([1.0, 1.02, 0.99], [1.01, 0.98, 1.04])
    'unchanged'
    >>> separation_verdict([1.0], [3.0]) is None
    True
    """
    b = _as_float_array(base)
    n = _as_float_array(new)
    if b.size < SEPARATION_MIN_REPETITIONS or n.size < SEPARATION_MIN_REPETITIONS:
        return None
    if n.min() > threshold * b.max():
        return "regression"
    if n.max() * threshold < b.min():
        return "improvement"
    return "unchanged"


def classify_runtime(
    ratio: float, test: MannWhitney, *, threshold: float = 1.10, alpha: float = 0.01
) -> str:
    """Runtime verdict from the median ratio NEW/BASE and the Mann–Whitney tests.

    Parameters
    ----------
    ratio : float
        ``median(new) / median(base)``.
    test : MannWhitney
        From :func:`mann_whitney` on the same repetitions.
    threshold : float
        Smallest slowdown factor that matters (> 1); ``1 / threshold`` for speedups.
    alpha : float
        Significance level of the one-sided tests.

    Returns
    -------
    str
        "regression" when ``ratio > threshold`` and ``p_slower < alpha``;
        "improvement" when ``ratio < 1 / threshold`` and ``p_faster < alpha``;
        "inconclusive" when neither holds and the sample sizes cannot reach
        ``p < alpha`` at all (``p_min >= alpha``), since "unchanged" would then be a
        claim the data cannot support; "unchanged" otherwise.

    Notes
    -----
    Both conditions are needed: the ratio says the change is large enough to matter,
    the test that it is not noise (the usual practice of benchmark trackers such as
    asv's ``asv compare`` factor plus a significance test).
    """
    if threshold <= 1:
        raise ValueError(f"threshold must be > 1, got {threshold}")
    if math.isfinite(ratio):
        if ratio > threshold and test.p_slower < alpha:
            return "regression"
        if ratio < 1.0 / threshold and test.p_faster < alpha:
            return "improvement"
    if not (test.p_min < alpha):
        return "inconclusive"
    return "unchanged"


def relative_change(base: float, new: float, sense: Literal["max", "min"]) -> float:
    """Signed relative loss of quality from ``base`` to ``new``: positive means worse.

    ``(base - new) / |base|`` for a maximized objective, ``(new - base) / |base|`` for
    a minimized one; the absolute difference when ``base`` is 0.
    """
    if sense not in ("max", "min"):
        raise ValueError(f"sense must be 'max' or 'min', got {sense!r}")
    loss = (base - new) if sense == "max" else (new - base)
    return loss / abs(base) if base != 0 else loss


def objectives_equal(a: float, b: float) -> bool:
    """Equality of objectives up to floating-point summation order (relative 1e-9)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def classify_quality(
    base: Iterable[float] | np.ndarray,
    new: Iterable[float] | np.ndarray,
    *,
    sense: Literal["max", "min"],
    exact: bool,
    base_verified: bool = True,
    new_verified: bool = True,
    tolerance: float = 0.01,
) -> str:
    """Quality verdict of NEW against BASE for one measurement key.

    Parameters
    ----------
    base, new : iterable of float
        The objectives of the successful repetitions of each side.
    sense : {"max", "min"}
        The problem's objective sense.
    exact : bool
        Whether the family's solvers must be optimal.
    base_verified, new_verified : bool
        Whether every repetition of the side was verified by its certificate.
    tolerance : float
        For approximate families, the relative loss (sense-aware) that counts.

    Returns
    -------
    str
        "regression", "improvement" or "unchanged":

        - verification lost (BASE verified, NEW not) is a regression, regained is an
          improvement;
        - exact families: any change of the objective between or within the sides
          is a regression (two optimal answers cannot differ; equality is up to
          floating-point summation order, see :func:`objectives_equal`);
        - approximate families: the medians' relative loss beyond ``tolerance`` is a
          regression, a gain beyond it an improvement.
    """
    b = _as_float_array(base)
    n = _as_float_array(new)
    if base_verified and not new_verified:
        return "regression"
    if new_verified and not base_verified:
        return "improvement"
    if b.size == 0 or n.size == 0:
        return "unchanged"
    if exact:
        ref = float(b[0])
        if all(objectives_equal(ref, float(v)) for v in np.concatenate([b, n])):
            return "unchanged"
        return "regression"
    loss = relative_change(float(np.median(b)), float(np.median(n)), sense)
    if loss > tolerance:
        return "regression"
    if loss < -tolerance:
        return "improvement"
    return "unchanged"


def quality_gap(objective: float, reference: float, sense: Literal["max", "min"]) -> float:
    """Relative gap of ``objective`` to ``reference`` (optimum or bound); 0 is optimal.

    Sense-aware, non-negative when ``reference`` is the optimum or a valid bound:
    ``(reference - objective) / |reference|`` for max, ``(objective - reference) /
    |reference|`` for min; NaN when the reference is missing or 0.
    """
    if reference is None or not math.isfinite(reference) or reference == 0:
        return math.nan
    return relative_change(reference, objective, sense)


def problem_info(
    problem: str, problems: Mapping[str, Mapping[str, object]] | None = None
) -> dict[str, object]:
    """``{objective, sense, exact, known}`` for ``problem`` from the problem table.

    A problem missing from the table is treated as exact with sense "max" and
    ``known=False``: for comparisons this is the strict choice (any objective change
    counts), and callers show a warning naming the problem.
    """
    if problems is None:
        from matchbench.core.problem import problem_table

        problems = problem_table()
    info = problems.get(problem)
    if info is None:
        return {"objective": "objective", "sense": "max", "exact": True, "known": False}
    return {
        "objective": info.get("objective", "objective"),
        "sense": info.get("sense", "max"),
        "exact": bool(info.get("exact", True)),
        "known": True,
    }
