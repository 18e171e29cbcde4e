"""``mw_gpu`` equals Gale-Shapley pair for pair on 200+ random, hard and adversarial instances.

Random SMI instances (list lengths from empty to complete, one-sided entries purged),
master-list (hard) instances, all men with identical lists, empty lists, n = 1, and
lists longer than a warp; each also with int64 indices. Every answer must be ``gs``'s,
pair for pair, and certified by :meth:`SM.verify`, which also checks the count of women
considered that the answer carries.
"""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.core.params import configured
from matchbench.families.smarriage.mw_gpu import MWGPU
from matchbench.families.smarriage.problem import SM, Preferences
from matchbench.families.smarriage.refs import GaleShapley

pytestmark = pytest.mark.gpu

PROBLEM = SM()


def _random(rng: np.random.Generator, k: int) -> Preferences:
    n_m, n_w = int(rng.integers(1, 80)), int(rng.integers(1, 80))
    kind = k % 4
    if kind == 0:  # complete lists
        men = [rng.permutation(n_w) for _ in range(n_m)]
        women = [rng.permutation(n_m) for _ in range(n_w)]
    elif kind == 1:  # identical lists for every man, random women
        order = rng.permutation(n_w)
        men = [order for _ in range(n_m)]
        women = [rng.permutation(n_m) for _ in range(n_w)]
    else:  # incomplete, some empty, one-sided entries
        p = rng.choice([0.05, 0.3, 0.7])
        men = [rng.permutation(n_w)[: int(rng.binomial(n_w, p))] for _ in range(n_m)]
        women = [rng.permutation(n_m)[: int(rng.binomial(n_m, p if kind == 2 else 1.0))] for _ in range(n_w)]
    return Preferences.from_lists(men, women, name=f"r{k}_{n_m}x{n_w}")


@pytest.fixture(scope="module")
def instances():
    rng = np.random.default_rng(2016)
    out = [_random(rng, k) for k in range(220)]
    for n in (1, 2, 31, 33, 200, 1000):  # hard: master lists, longer than a warp
        out.append(Preferences.master_lists(rng.permutation(n), rng.permutation(n), name=f"hard{n}"))
    big_m, big_w = 3000, 2500  # long lists, many warps
    out.append(
        Preferences.from_lists(
            [rng.permutation(big_w)[: int(rng.integers(0, 400))] for _ in range(big_m)],
            [rng.permutation(big_m)[:1500] for _ in range(big_w)],
            name="big",
        )
    )
    out.append(Preferences.from_lists([[]], [[]], name="n1_empty"))
    out.append(Preferences.from_lists([[0]], [[0]], name="n1"))
    want = []
    for p in out:
        gs = GaleShapley()
        gs.prepare(p)
        gs.run()
        want.append(np.asarray(gs.result().wife, dtype=np.int64))
    return list(zip(out, want, strict=True))


def _as_int64(p: Preferences) -> Preferences:
    q = Preferences(
        p.n_men, p.n_women, p.mlist.astype(np.int64), p.wlist.astype(np.int64),
        None if p.master else p.mptr.astype(np.int64), None if p.master else p.wptr.astype(np.int64),
        name=p.name + "_i64",
    )
    q.mlist, q.wlist = q.mlist.astype(np.int64), q.wlist.astype(np.int64)
    if not p.master:
        q.mptr, q.wptr = q.mptr.astype(np.int64), q.wptr.astype(np.int64)
    return q


@pytest.mark.parametrize("tpb", [32, 256, 1024])
def test_mw_gpu_is_gale_shapley(tpb, instances):
    s = configured(MWGPU, threads_per_block=tpb)
    bad = []
    for p, want in instances:
        s.prepare(p)
        s.run()
        got = s.result()
        if not np.array_equal(got.wife, want):
            bad.append((p.name, int((got.wife != want).sum())))
            continue
        v = PROBLEM.verify(p, got)
        if not v.verified:
            bad.append((p.name, v.reason))
    assert not bad, f"mw_gpu tpb={tpb}: {len(bad)} failures, first {bad[:3]}"


def test_master_lists_through_the_lists_protocol(instances):
    """master_kernel="lists": the hard instances through smarriage_mw's nxt hand-over."""
    bad = []
    for tpb in (32, 1024):
        s = configured(MWGPU, threads_per_block=tpb, master_kernel="lists")
        for p, want in instances:
            if not p.master:
                continue
            s.prepare(p)
            s.run()
            got = s.result()
            v = PROBLEM.verify(p, got)
            if not np.array_equal(got.wife, want) or not v.verified:
                bad.append((tpb, p.name, v.reason))
    assert not bad, bad[:3]


def test_many_master_instances():
    """The master fast path on 100 more hard instances, n from 1 to 3000 (warps that go on
    with displaced men across chunk boundaries, many warps per woman)."""
    rng = np.random.default_rng(17)
    s = configured(MWGPU, threads_per_block=int(rng.choice([32, 128, 1024])))
    bad = []
    for k in range(100):
        n = int(rng.integers(1, 3000)) if k % 10 else int(rng.integers(1, 70))
        p = Preferences.master_lists(rng.permutation(n), rng.permutation(n), name=f"m{k}_{n}")
        s.prepare(p)
        s.run()
        got = s.result()
        v = PROBLEM.verify(p, got)  # closed form; and n(n+1)/2 women considered
        if not v.verified:
            bad.append((p.name, v.reason))
        elif s.counters()["proposals"] != n * (n + 1) // 2:
            bad.append((p.name, s.counters()))
    assert not bad, bad[:3]


def test_int64_indices(instances):
    s = configured(MWGPU)
    bad = []
    for p, want in instances[::6]:
        q = _as_int64(p)
        s.prepare(q)
        s.run()
        if not np.array_equal(s.result().wife, want):
            bad.append(q.name)
    assert not bad, bad[:5]


def test_repeated_runs_and_counters(instances):
    p, want = next((p, w) for p, w in instances if p.name == "hard1000")
    s = configured(MWGPU)
    s.prepare(p)
    for _ in range(3):
        s.run()
        assert np.array_equal(s.result().wife, want)
    c = s.counters()
    assert c["pairs"] == 1000 and c["host_syncs"] == 0
    # paper IV, Sec. 4: n(n+1)/2 women considered on the hard instance, whatever the order
    assert c["proposals"] == 1000 * 1001 // 2
    assert 1000 <= c["atomics"] <= c["proposals"]
    assert s.timings()["solve"] > 0
