"""Profiles, means, tests and verdicts of matchbench.results.stats on tables with known answers."""

from __future__ import annotations

import math
from math import comb

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matchbench.results import stats

INF = math.inf

# Instances x solvers with failures (NaN, inf, 0, negative), a tie at the best (e), a tie
# off the best (b) and an instance nobody finished (d).
TIMES = pd.DataFrame(
    {
        "A": [1.0, 3.0, INF, np.nan, 1.0],
        "B": [2.0, 3.0, 4.0, 0.0, 1.0],
        "C": [np.nan, 1.5, 8.0, -1.0, 2.0],
    },
    index=["a", "b", "c", "d", "e"],
)


def test_geometric_mean_known_values():
    assert stats.geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert stats.geometric_mean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    assert stats.geometric_mean([5.0]) == pytest.approx(5.0)


def test_geometric_mean_leaves_out_failures_and_non_positive():
    gm, k = stats.geometric_mean([1.0, 4.0, 0.0, -3.0, np.nan, INF], return_count=True)
    assert gm == pytest.approx(2.0)
    assert k == 2
    gm, k = stats.geometric_mean([0.0, np.nan, INF], return_count=True)
    assert math.isnan(gm) and k == 0
    assert math.isnan(stats.geometric_mean([]))


def test_performance_ratios_known():
    r = stats.performance_ratios(TIMES)
    expected = pd.DataFrame(
        {
            "A": [1.0, 2.0, INF, INF, 1.0],
            "B": [2.0, 2.0, 1.0, INF, 1.0],
            "C": [INF, 1.0, 2.0, INF, 2.0],
        },
        index=TIMES.index,
    )
    pd.testing.assert_frame_equal(r, expected)


def test_performance_profile_known_fractions_with_ties_and_failures():
    prof = stats.performance_profile(TIMES, taus=[1.0, 1.5, 2.0, 100.0])
    # five instances in every denominator, including d that nobody finished
    assert prof.loc[1.0].tolist() == pytest.approx([2 / 5, 2 / 5, 1 / 5])
    assert prof.loc[1.5].tolist() == pytest.approx([2 / 5, 2 / 5, 1 / 5])
    assert prof.loc[2.0].tolist() == pytest.approx([3 / 5, 4 / 5, 3 / 5])
    assert prof.loc[100.0].tolist() == pytest.approx([3 / 5, 4 / 5, 3 / 5])


def test_performance_profile_default_taus_are_the_break_points():
    prof = stats.performance_profile(TIMES)
    assert prof.index.tolist() == [1.0, 2.0]


def test_speedup_profile_known_fractions():
    # speedups over B: A = [2, 1, 0 (A failed), 0 (both failed), 1]
    #                  C = [0 (C failed), 2, 0.5, 0, 0.5]
    s = stats.speedups(TIMES, "B")
    assert s["A"].tolist() == pytest.approx([2.0, 1.0, 0.0, 0.0, 1.0])
    assert s["C"].tolist() == pytest.approx([0.0, 2.0, 0.5, 0.0, 0.5])
    prof = stats.speedup_profile(TIMES, "B", log2_speedups=[-1.0, 0.0, 1.0, 2.0])
    assert list(prof.columns) == ["A", "C"]
    assert prof["A"].tolist() == pytest.approx([3 / 5, 3 / 5, 1 / 5, 0.0])
    assert prof["C"].tolist() == pytest.approx([3 / 5, 1 / 5, 1 / 5, 0.0])


def test_speedup_when_baseline_failed_is_infinite():
    t = pd.DataFrame({"base": [np.nan, 2.0], "gpu": [1.0, 1.0]})
    s = stats.speedups(t, "base")
    assert s["gpu"].tolist() == [INF, 2.0]
    prof = stats.speedup_profile(t, "base", log2_speedups=[0.0, 1.0, 10.0])
    assert prof["gpu"].tolist() == pytest.approx([1.0, 1.0, 0.5])


def test_speedup_unknown_baseline():
    with pytest.raises(KeyError, match="baseline"):
        stats.speedups(TIMES, "nope")


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(st.floats(0.001, 1000.0), st.just(np.nan)), min_size=3, max_size=3),
        min_size=1,
        max_size=12,
    )
)
def test_performance_profile_properties(rows):
    t = pd.DataFrame(rows, columns=["x", "y", "z"])
    prof = stats.performance_profile(t)
    v = prof.to_numpy()
    assert ((v >= 0) & (v <= 1)).all()
    assert (np.diff(v, axis=0) >= 0).all()  # non-decreasing in tau
    # on every instance someone finished, some solver is the best (ratio 1)
    solved = t.notna().any(axis=1).sum() / len(t)
    assert prof.loc[1.0].sum() >= solved - 1e-12
    # nobody exceeds the share of instances it finished
    assert (v[-1] <= t.notna().mean().to_numpy() + 1e-12).all()


def test_median_ratio_ci_exact_when_no_spread():
    r, lo, hi = stats.median_ratio_ci([1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
    assert (r, lo, hi) == pytest.approx((2.0, 2.0, 2.0))


def test_median_ratio_ci_contains_ratio_and_is_seeded():
    rng = np.random.default_rng(1)
    b = rng.lognormal(0.0, 0.1, 10)
    n = 1.3 * rng.lognormal(0.0, 0.1, 10)
    r, lo, hi = stats.median_ratio_ci(b, n, n_resamples=2000, seed=7)
    assert r == pytest.approx(np.median(n) / np.median(b))
    assert lo <= r <= hi
    assert (r, lo, hi) == stats.median_ratio_ci(b, n, n_resamples=2000, seed=7)
    _, lo99, hi99 = stats.median_ratio_ci(b, n, n_resamples=2000, seed=7, level=0.99)
    assert lo99 <= lo and hi <= hi99


def test_median_ratio_ci_single_repetition_has_no_interval():
    r, lo, hi = stats.median_ratio_ci([2.0], [3.0])
    assert r == pytest.approx(1.5)
    assert math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(v) for v in stats.median_ratio_ci([], [1.0]))


@pytest.mark.parametrize("n1,n2", [(1, 1), (3, 3), (5, 5), (4, 6), (8, 8)])
def test_mann_whitney_min_p_exact(n1, n2):
    rng = np.random.default_rng(n1 * 10 + n2)
    test = stats.mann_whitney(rng.random(n1), rng.random(n2))
    assert test.method == "exact"
    assert test.p_min == pytest.approx(1 / comb(n1 + n2, n1))


def test_mann_whitney_separated_samples_reach_p_min():
    base = np.arange(5, dtype=float) + 1.0
    new = base + 10.0
    test = stats.mann_whitney(base, new)
    assert test.p_slower == pytest.approx(test.p_min)
    assert test.p_faster == pytest.approx(1.0)
    assert stats.mann_whitney(new, base).p_faster == pytest.approx(test.p_min)


def test_mann_whitney_large_samples_use_normal_approximation():
    rng = np.random.default_rng(0)
    test = stats.mann_whitney(rng.random(10), rng.random(10))
    assert test.method == "asymptotic"
    assert test.p_min < 1e-3


def test_mann_whitney_all_equal_is_no_evidence():
    test = stats.mann_whitney([1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0])
    assert test.p_slower >= 0.5 and test.p_faster >= 0.5


def _mw(p_slower=1.0, p_faster=1.0, p_min=1e-4):
    return stats.MannWhitney(p_slower, p_faster, p_min, "exact")


@pytest.mark.parametrize(
    "ratio,test,expected",
    [
        (1.30, _mw(p_slower=1e-4), "regression"),
        (1.30, _mw(p_slower=0.2), "unchanged"),  # large but not significant
        (1.05, _mw(p_slower=1e-4), "unchanged"),  # significant but small
        (0.70, _mw(p_faster=1e-4), "improvement"),
        (0.95, _mw(p_faster=1e-4), "unchanged"),
        (1.30, _mw(p_slower=0.05, p_min=0.05), "inconclusive"),  # 3 vs 3 repetitions
        (1.00, _mw(p_min=0.5), "inconclusive"),  # single repetitions
    ],
)
def test_classify_runtime(ratio, test, expected):
    assert stats.classify_runtime(ratio, test, threshold=1.10, alpha=0.01) == expected


def test_classify_runtime_on_real_samples():
    rng = np.random.default_rng(3)
    base = rng.lognormal(0.0, 0.05, 10)
    slow = 1.3 * rng.lognormal(0.0, 0.05, 10)
    same = rng.lognormal(0.0, 0.05, 10)
    for new, expected in ((slow, "regression"), (same, "unchanged"), (base / 1.3, "improvement")):
        r = np.median(new) / np.median(base)
        assert stats.classify_runtime(r, stats.mann_whitney(base, new)) == expected
    assert stats.classify_runtime(1.3, stats.mann_whitney(base[:3], slow[:3])) == "inconclusive"
    # ... which the separation rule then decides: 1.3x with 5% noise is well separated
    assert stats.separation_verdict(base[:3], slow[:3], threshold=1.10) == "regression"
    assert stats.separation_verdict(base[:3], same[:3], threshold=1.10) == "unchanged"
    assert stats.separation_verdict(base[:2], slow[:2], threshold=1.10) is None


def test_stats_doctests():
    import doctest

    assert doctest.testmod(stats).failed == 0
    with pytest.raises(ValueError):
        stats.classify_runtime(1.0, _mw(), threshold=1.0)


@pytest.mark.parametrize(
    "base,new,kw,expected",
    [
        ([10.0, 10.0], [10.0, 10.0], dict(sense="max", exact=True), "unchanged"),
        ([10.0], [10.0 + 1e-12], dict(sense="max", exact=True), "unchanged"),  # summation order
        ([10.0], [11.0], dict(sense="max", exact=True), "regression"),  # even "better"
        ([10.0], [10.0, 9.0], dict(sense="max", exact=True), "regression"),  # within NEW
        ([10.0], [10.0], dict(sense="max", exact=True, new_verified=False), "regression"),
        ([10.0], [10.0], dict(sense="max", exact=True, base_verified=False), "improvement"),
        ([100.0], [99.5], dict(sense="max", exact=False), "unchanged"),
        ([100.0], [98.0], dict(sense="max", exact=False), "regression"),
        ([100.0], [102.0], dict(sense="max", exact=False), "improvement"),
        ([100.0], [102.0], dict(sense="min", exact=False), "regression"),
        ([100.0], [98.0], dict(sense="min", exact=False), "improvement"),
        ([100.0], [98.0], dict(sense="max", exact=False, tolerance=0.05), "unchanged"),
    ],
)
def test_classify_quality(base, new, kw, expected):
    assert stats.classify_quality(base, new, **kw) == expected


def test_relative_change_and_gap():
    assert stats.relative_change(100.0, 90.0, "max") == pytest.approx(0.1)
    assert stats.relative_change(100.0, 90.0, "min") == pytest.approx(-0.1)
    assert stats.relative_change(0.0, -2.0, "max") == pytest.approx(2.0)
    assert stats.quality_gap(95.0, 100.0, "max") == pytest.approx(0.05)
    assert stats.quality_gap(105.0, 100.0, "min") == pytest.approx(0.05)
    assert math.isnan(stats.quality_gap(1.0, math.nan, "max"))
    with pytest.raises(ValueError):
        stats.relative_change(1.0, 1.0, "up")


def test_problem_info_known_and_unknown():
    table = {"lap": {"objective": "cost", "sense": "min", "exact": True}}
    assert stats.problem_info("lap", table) == {
        "objective": "cost",
        "sense": "min",
        "exact": True,
        "known": True,
    }
    unknown = stats.problem_info("future", table)
    assert unknown["exact"] is True and unknown["sense"] == "max" and unknown["known"] is False
