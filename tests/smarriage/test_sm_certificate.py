"""The stable-marriage certificate rejects broken answers, each with its reason.

Mutation tests start from ``gs``'s answer (certified) and break it: swap two wives, marry a
man to a woman not on his list (or who purged him), give two men the same wife, put a wife
out of range, leave a man single, or hand in a stable matching that is not man-optimal
(the woman-optimal one). Both layouts; every mutation must be rejected.
"""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.core.params import configured
from matchbench.families.smarriage.problem import SM, Preferences, SMatching
from matchbench.families.smarriage.refs import GaleShapley

PROBLEM = SM()


def _gs(inst: Preferences) -> np.ndarray:
    s = GaleShapley()
    s.prepare(inst)
    s.run()
    wife = s.result().wife.copy()
    assert PROBLEM.verify(inst, wife).verified
    return wife


def _rejected(inst: Preferences, wife, *fragments: str) -> str:
    v = PROBLEM.verify(inst, np.asarray(wife))
    assert not v.verified and v.reason
    assert "smarriage" in v.reason
    assert any(f in v.reason for f in fragments), v.reason
    return v.reason


def _complete(n: int, seed: int) -> Preferences:
    rng = np.random.default_rng(seed)
    return Preferences.from_lists(
        [rng.permutation(n) for _ in range(n)], [rng.permutation(n) for _ in range(n)]
    )


def _incomplete(n: int, seed: int) -> Preferences:
    rng = np.random.default_rng(seed)
    return Preferences.from_lists(
        [rng.permutation(n)[: rng.integers(1, n + 1)] for _ in range(n)],
        [rng.permutation(n)[: rng.integers(1, n + 1)] for _ in range(n)],
    )


def _master(n: int, seed: int) -> Preferences:
    rng = np.random.default_rng(seed)
    return Preferences.master_lists(rng.permutation(n), rng.permutation(n))


@pytest.mark.parametrize("make", [_complete, _master])
@pytest.mark.parametrize("seed", range(5))
def test_swapping_two_wives_is_rejected(make, seed):
    inst = make(12, seed)
    wife = _gs(inst)
    rng = np.random.default_rng(seed)
    for _ in range(10):
        a, b = rng.choice(inst.n_men, size=2, replace=False)
        bad = wife.copy()
        bad[a], bad[b] = bad[b], bad[a]
        _rejected(inst, bad, "block", "not man-optimal")


def test_swapping_wives_on_incomplete_lists_is_rejected():
    for seed in range(10):
        inst = _incomplete(10, seed)
        wife = _gs(inst)
        married = np.flatnonzero(wife >= 0)
        if married.size < 2:
            continue
        a, b = married[:2]
        bad = wife.copy()
        bad[a], bad[b] = bad[b], bad[a]
        _rejected(inst, bad, "block", "not man-optimal", "do not list each other")


def test_a_stable_but_not_man_optimal_matching_is_rejected():
    # two stable matchings: man-optimal {0-0, 1-1}, woman-optimal {0-1, 1-0}
    inst = Preferences.from_lists([[0, 1], [1, 0]], [[1, 0], [0, 1]])
    assert _gs(inst).tolist() == [0, 1]
    reason = _rejected(inst, [1, 0], "not man-optimal")
    assert "stable but not man-optimal" in reason


def test_a_woman_not_on_his_list_is_rejected():
    inst = Preferences.from_lists([[0], [1], []], [[0], [1], [2]])
    wife = _gs(inst)
    assert wife.tolist() == [0, 1, -1]  # woman 2's entry for man 2 was purged
    _rejected(inst, [0, 1, 2], "do not list each other")
    _rejected(inst, [1, 0, -1], "do not list each other")


def test_a_purged_entry_is_not_a_valid_pair():
    inst = Preferences.from_lists([[0, 1]], [[], [0]])  # woman 0 does not list man 0
    assert _gs(inst).tolist() == [1]
    _rejected(inst, [0], "do not list each other")


@pytest.mark.parametrize("make", [_complete, _incomplete, _master])
def test_two_men_with_the_same_wife_are_rejected(make):
    inst = make(10, 1)
    wife = _gs(inst)
    married = np.flatnonzero(wife >= 0)
    assert married.size >= 2
    for a, b in ((married[0], married[1]), (married[-1], married[0])):
        bad = wife.copy()
        bad[b] = bad[a]
        # either the duplicate is caught, or (incomplete lists) the pair is not mutual first
        _rejected(inst, bad, "married twice", "do not list each other")
    if make is not _incomplete:
        bad = wife.copy()
        bad[married[1]] = bad[married[0]]
        _rejected(inst, bad, "married twice")


@pytest.mark.parametrize("make", [_complete, _master])
def test_out_of_range_and_malformed_answers_are_rejected(make):
    inst = make(6, 2)
    wife = _gs(inst)
    for value in (inst.n_women, -2, 10**6):
        bad = wife.copy()
        bad[3] = value
        _rejected(inst, bad, "outside", "invalid")
    _rejected(inst, wife[:-1], "invalid")
    _rejected(inst, wife.astype(np.float64), "invalid")


@pytest.mark.parametrize("make", [_complete, _master])
def test_a_man_left_single_blocks(make):
    inst = make(8, 3)
    wife = _gs(inst)
    bad = wife.copy()
    bad[5] = -1  # he and his wife, now both single, list each other
    _rejected(inst, bad, "block")


def test_correct_answers_verify_with_their_objective():
    for inst in (_complete(9, 0), _incomplete(9, 0), _master(9, 0)):
        wife = _gs(inst)
        v = PROBLEM.verify(inst, SMatching(wife))
        assert v.verified and v.objective == SMatching(wife).pairs == v.reference


@pytest.mark.parametrize("make", [_complete, _incomplete, _master])
@pytest.mark.parametrize("seed", range(4))
def test_the_proposal_count_is_what_the_answer_implies(make, seed):
    """Every solver's count of women considered passes; one more or one fewer is rejected."""
    from matchbench.families.smarriage.refs import (
        McVitieWilson,
        ParallelGaleShapley,
        ParallelMcVitieWilson,
    )

    inst = make(40, seed)
    counts = set()
    for cls in (GaleShapley, McVitieWilson, ParallelGaleShapley, ParallelMcVitieWilson):
        s = configured(cls)
        s.prepare(inst)
        s.run()
        got = s.result()
        assert got.proposals == s.counters()["proposals"]
        v = PROBLEM.verify(inst, got)
        assert v.verified, (cls.name, v.reason)
        counts.add(got.proposals)
    assert len(counts) == 1
    if make is _master:  # paper IV, Sec. 4
        assert counts == {40 * 41 // 2}
    (n,) = counts
    for wrong in (n - 1, n + 1, 0):
        v = PROBLEM.verify(inst, SMatching(got.wife, proposals=wrong))
        assert not v.verified
        assert f"reports {wrong} women considered, the answer implies {n}" in v.reason


def test_the_proposal_count_of_single_men_is_their_whole_list():
    # man 0 lists women 0 and 1, both prefer man 1; man 1 lists woman 0 only
    inst = Preferences.from_lists([[0, 1], [0]], [[1, 0], [1, 0]])
    s = GaleShapley()
    s.prepare(inst)
    s.run()
    got = s.result()
    assert got.wife.tolist() == [1, 0]
    assert got.proposals == 3  # man 0: women 0 (lost) and 1; man 1: woman 0
    # woman 1 lists nobody who lists her: man 0's list is purged to [0], and he ends single
    single = Preferences.from_lists([[0, 1], [0]], [[1, 0], [1]])
    assert single.purged == 2
    s.prepare(single)
    s.run()
    got = s.result()
    assert got.wife.tolist() == [-1, 0] and got.proposals == 2  # man 0: his whole list
    assert PROBLEM.verify(single, got).verified
