"""CPU stable-marriage references: every solver returns the man-optimal matching, certified.

``gs`` (Alg. 1 of Manne, Naim, Lerring & Halappanavar, CSC 2016), ``mw``, ``gs_par`` and
``mw_par`` run on random small instances in both layouts (complete and incomplete lists,
empty lists, one-sided entries that get purged, identical lists, unequal sides, n = 0 and 1)
and on the hard master instances. Each answer must pass the certificate and equal ``gs``
pair for pair; on tiny instances ``gs`` must equal a brute-force man-optimal matching; the
``proposals`` counter (women considered) must agree across solvers and be n(n+1)/2 on the
hard instances.
"""

from __future__ import annotations

import itertools
import zlib
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matchbench.core.params import configured
from matchbench.families.smarriage.problem import SM, Preferences
from matchbench.families.smarriage.refs import (
    GaleShapley,
    McVitieWilson,
    ParallelGaleShapley,
    ParallelMcVitieWilson,
)

PROBLEM = SM()
SOLVERS = (GaleShapley, McVitieWilson, ParallelGaleShapley, ParallelMcVitieWilson)
PARALLEL = (ParallelGaleShapley, ParallelMcVitieWilson)
CONF = Path(__file__).resolve().parents[2] / "conf" / "algorithm"
SM_CONFS = {
    "gs": GaleShapley,
    "mw": McVitieWilson,
    "gs_par": ParallelGaleShapley,
    "mw_par": ParallelMcVitieWilson,
}
POOL = numba.config.NUMBA_NUM_THREADS


def solve(cls, inst: Preferences, **params):
    s = configured(cls, **params)
    skip, reason = s.skip(inst)
    assert not skip, reason
    s.prepare(inst)
    s.run()
    return s.result().wife, s.counters()


def check_all(inst: Preferences, thread_counts=(None,)) -> tuple[np.ndarray, dict]:
    """Every solver verifies and equals gs; the proposals counter agrees. Returns gs's."""
    ref, ref_c = solve(GaleShapley, inst)
    v = PROBLEM.verify(inst, ref)
    assert v.verified, v.reason
    assert ref_c["pairs"] == int((ref >= 0).sum()) == v.objective
    for cls in SOLVERS[1:]:
        for threads in thread_counts if cls in PARALLEL else (None,):
            params = {"threads": threads} if cls in PARALLEL else {}
            wife, c = solve(cls, inst, **params)
            v = PROBLEM.verify(inst, wife)
            assert v.verified, (cls.name, threads, v.reason)
            assert np.array_equal(wife, ref), (cls.name, threads)
            assert c["proposals"] == ref_c["proposals"], (cls.name, threads)
            assert c["pairs"] == ref_c["pairs"]
    return ref, ref_c


def random_lists(rng: np.random.Generator, n_men: int, n_women: int, kind: str) -> Preferences:
    """Random per-person lists of one of several shapes (see the module docstring)."""
    if kind == "complete":
        men = [rng.permutation(n_women) for _ in range(n_men)]
        women = [rng.permutation(n_men) for _ in range(n_women)]
    elif kind == "identical":  # every man the same complete list: long chains of rejections
        order = rng.permutation(n_women)
        men = [order.copy() for _ in range(n_men)]
        women = [rng.permutation(n_men) for _ in range(n_women)]
    elif kind == "mutual":  # women rank exactly the men who list them: nothing is purged
        men = [rng.permutation(n_women)[: rng.integers(0, n_women + 1)] for _ in range(n_men)]
        listed: list[list[int]] = [[] for _ in range(n_women)]
        for m, lst in enumerate(men):
            for w in lst:
                listed[int(w)].append(m)
        women = [rng.permutation(np.asarray(x, dtype=np.int64)) for x in listed]
    else:  # "independent": both sides pick at random; one-sided entries are purged
        men = [rng.permutation(n_women)[: rng.integers(0, n_women + 1)] for _ in range(n_men)]
        women = [rng.permutation(n_men)[: rng.integers(0, n_men + 1)] for _ in range(n_women)]
        if n_men:  # some empty lists on purpose
            men[int(rng.integers(n_men))] = np.zeros(0, dtype=np.int64)
        if n_women:
            women[int(rng.integers(n_women))] = np.zeros(0, dtype=np.int64)
    return Preferences.from_lists(men, women, name=f"{kind}_{n_men}x{n_women}")


def brute_man_optimal(inst: Preferences) -> np.ndarray:
    """Every stable matching by enumeration; each man's best stable partner (tiny n)."""
    n_men, n_women = inst.n_men, inst.n_women
    mlists = [list(map(int, inst.man_list(m))) for m in range(n_men)]
    wlists = [list(map(int, inst.woman_list(w))) for w in range(n_women)]
    mpos = [{w: k for k, w in enumerate(x)} for x in mlists]
    wpos = [{m: k for k, m in enumerate(x)} for x in wlists]
    stable = []
    for choice in itertools.product(*[[-1, *x] for x in mlists]):
        taken = [w for w in choice if w >= 0]
        if len(taken) != len(set(taken)):
            continue
        husband = {w: m for m, w in enumerate(choice) if w >= 0}
        blocking = any(
            (choice[m] == -1 or mpos[m][w] < mpos[m][choice[m]])
            and (w not in husband or wpos[w][m] < wpos[w][husband[w]])
            for m in range(n_men)
            for w in mlists[m]
        )
        if not blocking:
            stable.append(choice)
    assert stable, "an SMI instance always has a stable matching"
    best = np.full(n_men, -1, dtype=np.int64)
    for m in range(n_men):
        partners = [s[m] for s in stable if s[m] >= 0]
        if partners:
            best[m] = min(partners, key=lambda w: mpos[m][w])
    return best


# ---------------------------------------------------------------------------------------
# Lists


@pytest.mark.parametrize("kind", ["complete", "identical", "mutual", "independent"])
@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (7, 7), (12, 5), (5, 12), (40, 40)])
def test_random_lists_agree_with_gs_and_verify(kind, shape):
    rng = np.random.default_rng(zlib.crc32(f"{kind}{shape}".encode()))
    for _ in range(5):
        inst = random_lists(rng, *shape, kind=kind)
        check_all(inst, thread_counts=(None, 1, min(2, POOL)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_men=st.integers(0, 4),
    n_women=st.integers(0, 4),
    kind=st.sampled_from(["complete", "identical", "mutual", "independent"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_tiny_instances_match_brute_force(n_men, n_women, kind, seed):
    inst = random_lists(np.random.default_rng(seed), n_men, n_women, kind)
    ref, _ = check_all(inst)
    assert np.array_equal(ref, brute_man_optimal(inst))


@pytest.mark.parametrize(
    "men, women, wife",
    [
        ([[0]], [[0]], [0]),
        ([[0]], [[]], [-1]),  # one-sided: purged, he stays single
        ([[]], [[0]], [-1]),
        ([[]], [[]], [-1]),
        ([], [[], []], []),  # no men
        ([[0], [0]], [], None),  # no women: invalid lists (checked below)
        ([[1, 0], [0, 1]], [[0, 1], [1, 0]], [1, 0]),  # both first choices differ
        ([[0, 1], [0, 1]], [[1, 0], [0, 1]], [1, 0]),  # man 0 rejected by woman 0
        ([[0], [0]], [[1, 0]], [-1, 0]),  # man 0 rejected, his list exhausted
        ([[0, 1], [0]], [[1, 0], []], [-1, 0]),  # the same after woman 1's entry is purged
    ],
)
def test_small_cases(men, women, wife):
    if wife is None:
        with pytest.raises(ValueError):
            Preferences.from_lists(men, women)
        return
    inst = Preferences.from_lists(men, women)
    ref, _ = check_all(inst, thread_counts=(None, 1))
    assert ref.tolist() == wife


def test_purged_entries_are_never_proposed_to():
    # woman 0 does not list man 0, who lists her first: the entry is purged, so he proposes
    # to woman 1 at once, and considers one woman, not two
    inst = Preferences.from_lists([[0, 1]], [[], [0]])
    assert inst.purged == 1
    ref, c = check_all(inst)
    assert ref.tolist() == [1] and c["proposals"] == 1


def test_proposals_count_the_women_considered():
    """Sum over men of the 1-based position of their wife, or their list's length."""
    rng = np.random.default_rng(7)
    for kind in ("complete", "mutual", "independent"):
        inst = random_lists(rng, 30, 25, kind)
        ref, c = check_all(inst)
        expected = 0
        for m in range(inst.n_men):
            lst = inst.man_list(m).tolist()
            expected += lst.index(ref[m]) + 1 if ref[m] >= 0 else len(lst)
        assert c["proposals"] == expected


def test_larger_instances_under_contention():
    """Races happen on bigger instances: many men, few women, long lists; repeated."""
    rng = np.random.default_rng(11)
    for n_men, n_women, kind in (
        (3000, 300, "independent"),
        (2000, 2000, "mutual"),
        (400, 400, "identical"),
    ):
        inst = random_lists(rng, n_men, n_women, kind)
        for _ in range(3):
            check_all(inst, thread_counts=(None, min(2, POOL)))


def test_int64_arrays_compile_and_agree():
    inst = random_lists(np.random.default_rng(3), 30, 30, "independent")
    ref, _ = solve(GaleShapley, inst)
    big = Preferences.from_lists(
        [inst.man_list(m) for m in range(inst.n_men)],
        [inst.woman_list(w) for w in range(inst.n_women)],
    )
    big.mptr, big.mlist, big.mrank = (a.astype(np.int64) for a in (big.mptr, big.mlist, big.mrank))
    for cls in SOLVERS:
        wife, _ = solve(cls, big)
        assert np.array_equal(wife, ref), cls.name


# ---------------------------------------------------------------------------------------
# Master lists (the hard instances)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 64, 500])
def test_hard_master_instances(n):
    rng = np.random.default_rng(n)
    women_order, men_order = rng.permutation(n), rng.permutation(n)
    inst = Preferences.master_lists(women_order, men_order)
    assert inst.master
    ref, c = check_all(inst, thread_counts=(None, 1, min(2, POOL)))
    # paper IV, Sec. 4: "the total number of considered women will always be n(n+1)/2"
    assert c["proposals"] == n * (n + 1) // 2
    assert c["pairs"] == n
    # the k-th man of the women's order marries the k-th woman of the men's order
    for k in range(n):
        assert ref[inst.wlist[k]] == inst.mlist[k]


@pytest.mark.parametrize("n", [1, 5, 40])
def test_master_equals_the_same_lists_written_out(n):
    rng = np.random.default_rng(100 + n)
    women_order, men_order = rng.permutation(n), rng.permutation(n)
    master = Preferences.master_lists(women_order, men_order)
    lists = Preferences.from_lists([women_order] * n, [men_order] * n)
    assert not lists.master
    ref_master, c_master = check_all(master)
    ref_lists, c_lists = check_all(lists)
    assert np.array_equal(ref_master, ref_lists)
    assert c_master["proposals"] == c_lists["proposals"] == n * (n + 1) // 2


# ---------------------------------------------------------------------------------------
# Parameters, counters, life cycle, configs


@pytest.mark.parametrize("cls", PARALLEL)
def test_threads_validation(cls):
    for bad in (0, -1, -4, 1.5, True, "2", "all"):
        with pytest.raises(ValueError, match="threads"):
            configured(cls, threads=bad)
    assert configured(cls, threads=np.int64(2)).threads == 2
    assert configured(cls).threads is None and configured(cls).variant() == "threads=None"
    assert configured(cls, threads=3).variant() == "threads=3"


@pytest.mark.parametrize("cls", PARALLEL)
def test_threads_counter_and_pool_limit(cls):
    inst = random_lists(np.random.default_rng(5), 20, 20, "complete")
    before = numba.get_num_threads()
    _, c = solve(cls, inst, threads=1)
    assert c["threads"] == 1
    assert numba.get_num_threads() == before  # restored after the solve
    _, c = solve(cls, inst)
    assert 1 <= c["threads"] <= POOL
    skip, reason = configured(cls, threads=POOL + 1).skip(inst)
    assert skip and "threads" in reason


def test_counters_and_life_cycle():
    inst = random_lists(np.random.default_rng(9), 15, 15, "mutual")
    keys = {"proposals", "displaced", "pairs"}
    for cls, extra in (
        (GaleShapley, set()),
        (McVitieWilson, set()),
        (ParallelGaleShapley, {"threads", "rounds"}),
        (ParallelMcVitieWilson, {"threads"}),
    ):
        s = configured(cls)
        assert s.name in SM_CONFS and s.problem == "smarriage" and s.device == "cpu"
        assert not s.skip(inst)[0]
        with pytest.raises(RuntimeError, match="before"):
            s.run()
        s.prepare(inst)
        with pytest.raises(RuntimeError, match="before run"):
            s.result()
        s.run()
        c = s.counters()
        assert set(c) == keys | extra and all(x >= 0 for x in c.values())
        assert c["pairs"] == s.result().pairs
        s.prepare(inst)  # a second repetition starts afresh
        s.run()
        again = s.counters()
        if cls in PARALLEL:  # displaced and rounds depend on the interleaving
            assert again["proposals"] == c["proposals"] and again["pairs"] == c["pairs"]
        else:
            assert again == c


@pytest.mark.parametrize("name", sorted(SM_CONFS))
def test_algorithm_configs_instantiate_to_their_solver(name):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    solver = instantiate(OmegaConf.load(CONF / f"{name}.yaml"))
    assert type(solver) is SM_CONFS[name]
    assert solver.name == name and solver.problem == "smarriage" and solver.device == "cpu"
    if name.endswith("_par"):
        assert solver.params == {"threads": None}
    else:
        assert solver.params == {}
