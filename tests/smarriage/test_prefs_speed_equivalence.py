"""The parallel construction of stable-marriage instances against plain references.

:func:`matchbench.families.smarriage.datasets.sm_easy` and :class:`Preferences` were rewritten as
parallel numba passes (counting sorts instead of ``argsort``, a merge per woman instead of
a mark array); the instances must stay bit-identical. These tests compare the new kernels
with the straightforward code they replaced, or with pure Python, on small random inputs
that reach every branch (long groups, tied sort keys, purges, defects).
"""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.datasets import DatasetError
from matchbench.families.smarriage import datasets as P
from matchbench.families.smarriage import problem as S
from matchbench.families.smarriage.problem import Preferences, _group_by_key


def _random_order_by(key_of, n_keys, rng):
    """What sm_easy computes per woman: the entries by (key, random bits, entry), the bits
    drawn by ``P._random_bits``, grouped by ``_group_by_key``."""
    return _group_by_key(key_of, n_keys, P._random_bits(n_keys, key_of.size, rng))[1].astype(np.int64)


def _old_random_order_by(key_of, n_keys, rng):
    """The implementation that :func:`_random_order_by` (sm_easy's grouping) replaced: one argsort of
    ``key << R | random bits``, ties put back in entry order."""
    bits = 63 - max(int(n_keys - 1).bit_length(), 1)
    r = min(bits, 40)
    key = key_of.astype(np.int64)
    key <<= r
    key |= rng.integers(0, 1 << r, size=key.size, dtype=np.int64)
    order = np.argsort(key)
    sk = key[order]
    eq = sk[1:] == sk[:-1]
    if eq.any():
        tied = np.zeros(sk.size, dtype=bool)
        tied[1:] |= eq
        tied[:-1] |= eq
        idx = np.flatnonzero(tied)
        sub = order[idx]
        order[idx] = sub[np.lexsort((sub, sk[idx]))]
    return order


@pytest.mark.parametrize(
    ("n_keys", "size", "dtype"),
    [
        (1, 0, np.int32),
        (1, 1, np.int32),
        (1, 500, np.int64),
        (3, 2000, np.int32),
        (7, 90, np.int64),
        (1000, 20000, np.int32),
        (5000, 700, np.int32),
        (2**20 + 3, 4000, np.int64),
    ],
)
def test_random_order_by_equals_the_old_sort(n_keys, size, dtype):
    # few keys: groups far beyond the short-group sort; many keys: mostly empty groups
    for seed in range(3):
        key = np.random.default_rng(seed).integers(0, n_keys, size=size).astype(dtype)
        got = _random_order_by(key, n_keys, np.random.default_rng(100 + seed))
        want = _old_random_order_by(key, n_keys, np.random.default_rng(100 + seed))
        assert got.dtype == np.int64 and np.array_equal(got, want)


@pytest.mark.parametrize(
    ("n_keys", "size", "span"),
    [(1, 300, 3), (4, 1000, 2), (50, 3000, 5), (900, 2500, 1 << 40), (70000, 3000, 1)],
)
def test_group_by_key_sorts_by_key_payload_entry(n_keys, size, span):
    # a small span gives many equal payloads; span 1, a plain stable counting sort
    rng = np.random.default_rng(n_keys)
    key = rng.integers(0, n_keys, size=size).astype(np.int32)
    pay = rng.integers(0, span, size=size, dtype=np.int64)
    kptr, perm = _group_by_key(key, n_keys, pay)
    want = np.lexsort((np.arange(size), pay, key))
    assert np.array_equal(perm, want) and perm.dtype == np.int32
    assert np.array_equal(
        kptr, np.concatenate(([0], np.cumsum(np.bincount(key, minlength=n_keys))))
    )
    labels = rng.integers(0, 7, size=size).astype(np.int64)  # carried, never compared
    assert np.array_equal(_group_by_key(key, n_keys, pay, labels=labels)[1], labels[want])


def test_group_by_key_with_int64_entries(monkeypatch):
    # past 2^31 entries the entries are int64: the same kernels, another dtype
    monkeypatch.setattr(S, "_index_dtype", lambda *sizes: np.int64)
    key = np.random.default_rng(3).integers(0, 40, size=3000).astype(np.int32)
    got = _random_order_by(key, 40, np.random.default_rng(4))
    assert np.array_equal(got, _old_random_order_by(key, 40, np.random.default_rng(4)))
    kptr, perm = _group_by_key(key, 40, np.zeros(3000, dtype=np.int8))
    assert perm.dtype == np.int64 and np.array_equal(perm, np.argsort(key, kind="stable"))


def test_has_repeat_finds_exactly_the_men_with_a_repeated_woman():
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 12, size=400)
    mptr = np.concatenate(([0], np.cumsum(lens)))
    women = rng.integers(0, 30, size=int(mptr[-1])).astype(np.int32)
    want = [len(set(women[a:b].tolist())) < b - a for a, b in zip(mptr[:-1], mptr[1:], strict=True)]
    assert P._has_repeat(women, mptr).tolist() == want


# ---------------------------------------------------------------------------------------
# Preferences against pure Python


def _reference(men, women):
    """``(men's lists, women's lists, purged, mrank)`` after the purge, or the message of
    the first defect (men's lists first, in person order, then position)."""
    n_men, n_women = len(men), len(women)
    for side, other, lists, n_other in (
        ("man", "woman", men, n_women),
        ("woman", "man", women, n_men),
    ):
        for a, lst in enumerate(lists):
            seen = set()
            for k, b in enumerate(lst):
                if not 0 <= b < n_other:
                    return f"{side} {a}'s list, position {k}: {other} {b} is outside [0, {n_other})"
                if b in seen:
                    return f"{side} {a}'s list, position {k}: {other} {b} is listed twice"
                seen.add(b)
    by_men = {(m, w) for m, lst in enumerate(men) for w in lst}
    by_women = {(m, w) for w, lst in enumerate(women) for m in lst}
    men2 = [[w for w in lst if (m, w) in by_women] for m, lst in enumerate(men)]
    women2 = [[m for m in lst if (m, w) in by_men] for w, lst in enumerate(women)]
    purged = len(by_men) + len(by_women) - 2 * len(by_men & by_women)
    rank = {(m, w): r for w, lst in enumerate(women2) for r, m in enumerate(lst)}
    mrank = [rank[m, w] for m, lst in enumerate(men2) for w in lst]
    return men2, women2, purged, mrank


def _random_lists(rng, n_men, n_women, density, long_list):
    men, women = [[] for _ in range(n_men)], [[] for _ in range(n_women)]
    for m in range(n_men):
        for w in range(n_women):
            if rng.random() < density:
                r = rng.random()  # about 1 in 5 pairs listed by one side only
                if r < 0.9:
                    men[m].append(w)
                if r > 0.1:
                    women[w].append(m)
    if long_list and n_women:  # beyond the short-list sort: a woman listing almost everyone
        women[0] = rng.permutation(n_men)[: max(n_men - 2, 0)].tolist()
    for lst in men + women:
        rng.shuffle(lst)
    return men, women


def test_preferences_match_pure_python_on_random_instances():
    rng = np.random.default_rng(11)
    for it in range(120):
        long_list = it % 4 == 0
        n_men = int(rng.integers(70, 120)) if long_list else int(rng.integers(0, 15))
        n_women = int(rng.integers(0, 15))
        men, women = _random_lists(rng, n_men, n_women, float(rng.random()), long_list)
        inst = Preferences.from_lists(men, women)
        men2, women2, purged, mrank = _reference(men, women)
        assert [inst.man_list(m).tolist() for m in range(n_men)] == men2
        assert [inst.woman_list(w).tolist() for w in range(n_women)] == women2
        assert inst.purged == purged and inst.mrank.tolist() == mrank
        assert inst.mlist.dtype == inst.mptr.dtype == inst.mrank.dtype == np.int32


def test_preferences_report_the_first_defect():
    rng = np.random.default_rng(12)
    for _ in range(150):
        n_men, n_women = int(rng.integers(1, 12)), int(rng.integers(1, 12))
        men, women = _random_lists(rng, n_men, n_women, float(rng.random()), False)
        for _ in range(int(rng.integers(1, 4))):
            side, n_other = (men, n_women) if rng.random() < 0.5 else (women, n_men)
            lst = side[int(rng.integers(0, len(side)))]
            bad = int(rng.choice([-1, n_other, int(rng.integers(0, n_other))]))
            for _ in range(2 if 0 <= bad < n_other else 1):  # in range: listed twice
                lst.insert(int(rng.integers(0, len(lst) + 1)), bad)
        want = _reference(men, women)
        assert isinstance(want, str)
        for dtype in (np.int32, np.int64, np.int16):
            mptr = np.concatenate(([0], np.cumsum([len(x) for x in men])))
            wptr = np.concatenate(([0], np.cumsum([len(x) for x in women])))
            mlist = np.array([b for x in men for b in x], dtype=dtype)
            wlist = np.array([b for x in women for b in x], dtype=dtype)
            with pytest.raises(DatasetError) as info:
                Preferences(n_men, n_women, mlist, wlist, mptr, wptr, name="bad")
            assert str(info.value) == f"stable marriage instance 'bad': {want}"


def test_preferences_do_not_share_the_callers_arrays():
    mlist, wlist = np.array([0, 1], dtype=np.int32), np.array([0, 1], dtype=np.int32)
    ptr = np.array([0, 1, 2])
    inst = Preferences(2, 2, mlist, wlist, ptr, ptr)
    assert not np.shares_memory(inst.mlist, mlist) and not np.shares_memory(inst.wlist, wlist)
    mlist[:] = 1
    assert inst.mlist.tolist() == [0, 1]
