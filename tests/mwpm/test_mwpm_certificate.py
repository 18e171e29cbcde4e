"""The mwpm certificate: valid perfect matchings, the recomputed weight, the exhaustive
4-cycle check of converged answers, the reference and the bounds; every defect rejected with
a reason naming the instance and the defect (mutation tests)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import matchbench.families.mwpm.problem as mw
from matchbench.core.params import configured
from matchbench.core.problem import get_problem
from matchbench.families.mwpm.datasets import (
    complete_exponential,
    complete_geometric,
    complete_uniform,
)
from matchbench.families.mwpm.init import neighbour_matching
from matchbench.families.mwpm.problem import (
    CONVERGENCE_RTOL,
    MWPM,
    CompleteGraph,
    PerfectMatching,
    assignment_bound,
    best_flip,
    dual_bound,
    exact_optimum,
    gap_to_optimality,
    matching_weight,
    row_max_bound,
    upper_bound,
)
from matchbench.families.mwpm.roma import Roma

P = MWPM()


def _perfect_matchings(vertices: list[int]):
    if not vertices:
        yield []
        return
    a, rest = vertices[0], vertices[1:]
    for k, b in enumerate(rest):
        for m in _perfect_matchings(rest[:k] + rest[k + 1 :]):
            yield [(a, b), *m]


def _brute_optimum(g: CompleteGraph) -> float:
    w = g.weight.astype(np.float64)
    return max(sum(w[a, b] for a, b in m) for m in _perfect_matchings(list(range(g.n))))


def _graph(draw_weights: list[float], n: int) -> CompleteGraph:
    a = np.zeros((n, n))
    a[np.triu_indices(n, 1)] = draw_weights
    return CompleteGraph.from_matrix(a + a.T, name=f"h{n}")


@st.composite
def small_graphs(draw):
    n = draw(st.integers(2, 9))  # odd n: a dummy vertex
    m = n * (n - 1) // 2
    # few distinct values: ties between flips and between matchings are common
    ws = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.25]), min_size=m, max_size=m))
    return _graph(ws, n)


def _converged(g: CompleteGraph, threshold: float = 0.0) -> PerfectMatching:
    s = configured(Roma, max_phases=1000, threshold=threshold, seed=1)
    s.prepare(g, None)
    s.run()
    ans = s.result()
    assert ans.converged
    return ans


# -- valid answers ----------------------------------------------------------------------


def test_family_is_found_by_name():
    p = get_problem("mwpm")
    assert isinstance(p, MWPM) and p.sense == "max" and not p.exact and p.objective == "weight"


def test_valid_answer_is_verified_with_its_recomputed_weight_reference_and_bound():
    g = complete_uniform(12, seed=2)
    mate = neighbour_matching(12)
    v = P.verify(g, PerfectMatching(mate, weight=-1.0))  # the claimed weight is never read
    w = g.weight.astype(np.float64)
    assert v.verified and v.reason is None
    assert v.objective == sum(w[2 * i, 2 * i + 1] for i in range(6))
    assert v.reference == pytest.approx(_brute_optimum(g), rel=1e-12)
    assert v.bound == v.reference  # the optimum is the tightest bound
    assert P.verify(g, mate.astype(np.int32)).verified  # a bare mate array, any int dtype


def test_initial_objective_is_the_initializers_weight():
    g = complete_uniform(8, seed=0)
    init = P.initialize(g)
    assert np.array_equal(init.mate, neighbour_matching(8))
    assert P.initial_objective(init) == matching_weight(g, init.mate)
    assert P.initial_objective(None) is None


# -- mutation tests: each defect is rejected, naming the instance and the defect ------------


def _mutants(n: int):
    base = neighbour_matching(n)  # [1, 0, 3, 2, 5, 4, ...]

    def m(**changes):
        out = base.copy()
        for k, v in changes.items():
            out[int(k[1:])] = v
        return out

    return [
        ("matched twice", m(v0=3), "invalid: vertex 3 is matched twice (the mate of both 0 and 2)"),
        ("self-match", m(v4=4), "invalid: vertex 4 is matched to itself"),
        ("unmatched", m(v5=-1), "invalid: vertex 5 is unmatched (mate -1): not a perfect matching"),
        ("not a vertex", m(v1=n), f"invalid: mate[1] = {n} is not a vertex in [0, {n})"),
        ("negative", m(v1=-7), f"invalid: mate[1] = -7 is not a vertex in [0, {n})"),
        (
            "3-cycle",
            m(v0=1, v1=2, v2=0),
            "invalid: vertex 2 is matched twice (the mate of both 1 and 3)",
        ),
        ("rotation", m(v0=1, v1=2, v2=3, v3=0), "invalid: mate[0] = 1 but mate[1] = 2"),
        (
            "float mate",
            base.astype(np.float64),
            "invalid: mate array has dtype float64, expected integers",
        ),
        (
            "short",
            base[:-2],
            f"invalid: mate array has shape ({n - 2},), expected ({n},) (the padded vertex count)",
        ),
    ]


@pytest.mark.parametrize("case", range(9))
def test_broken_matching_is_rejected_with_its_defect(case):
    g = complete_geometric(10, seed=1)
    label, mate, reason = _mutants(10)[case]
    v = P.verify(g, PerfectMatching(mate))
    assert not v.verified, label
    assert v.reason == f"mwpm answer on {g.name!r}: {reason}"
    assert np.isnan(v.objective)


def test_answer_of_another_type_is_rejected():
    g = complete_uniform(4, seed=0)
    v = P.verify(g, [1, 0, 3, 2])
    assert not v.verified and "expected a PerfectMatching or a mate array, got list" in v.reason


def _four(w02: float, w13: float, w03: float = 0.0, w12: float = 0.0) -> CompleteGraph:
    """Four vertices, the neighbour matching (0, 1), (2, 3) of weight 0."""
    a = np.zeros((4, 4))
    for (i, j), x in {(0, 2): w02, (1, 3): w13, (0, 3): w03, (1, 2): w12}.items():
        a[i, j] = a[j, i] = x
    return CompleteGraph.from_matrix(a, name="four")


def test_claimed_convergence_with_an_improving_4_cycle_is_rejected():
    g = _four(1.0, 1.0)
    v = P.verify(g, PerfectMatching(neighbour_matching(4), converged=True, threshold=1e-5))
    assert not v.verified
    assert v.reason == (
        "mwpm answer on 'four': claims convergence at gain threshold 1e-05 but is not locally "
        "optimal: flipping (0, 1) and (2, 3) to (0, 2) and (1, 3) gains 2.0 "
        "(1 improving pairs of matched edges)"
    )
    assert v.objective == 0.0  # the weight is still recomputed for the row
    # the same matching without the claim is a valid (poor) answer
    assert P.verify(g, PerfectMatching(neighbour_matching(4))).verified
    # and with a threshold above the gain the claim holds
    assert P.verify(
        g, PerfectMatching(neighbour_matching(4), converged=True, threshold=2.0)
    ).verified


def test_the_diagonal_flip_is_named_when_it_is_the_better_one():
    g = _four(0.0, 0.0, w03=1.5, w12=1.0)
    v = P.verify(g, PerfectMatching(neighbour_matching(4), converged=True, threshold=0.0))
    assert "to (0, 3) and (1, 2) gains 2.5" in v.reason


def test_convergence_tolerance_is_relative_to_the_largest_weight():
    # gain exactly 0.5 (float32 sums are exact here); tolerance 2^-20 * 0.25 = 2.4e-7
    g = _four(0.25, 0.25)
    mate = neighbour_matching(4)
    assert CONVERGENCE_RTOL * 0.25 == pytest.approx(2.384e-7, rel=1e-3)
    for threshold, ok in [(0.5, True), (0.5 - 1e-7, True), (0.5 - 1e-6, False), (0.0, False)]:
        v = P.verify(g, PerfectMatching(mate, converged=True, threshold=threshold))
        assert v.verified is ok, threshold


@pytest.mark.parametrize("threshold", [None, -1.0, float("nan")])
def test_convergence_claim_needs_a_threshold(threshold):
    g = _four(0.0, 0.0)
    v = P.verify(g, PerfectMatching(neighbour_matching(4), converged=True, threshold=threshold))
    assert not v.verified and "claims convergence with gain threshold" in v.reason


@pytest.mark.parametrize("gen", [complete_uniform, complete_exponential, complete_geometric])
def test_roma_answer_with_one_flip_undone_is_caught(gen):
    g = gen(40, seed=6)
    ans = _converged(g, threshold=1e-5)
    assert P.verify(g, ans).verified
    # undo: flip two matched edges to their worse pairing; the flip back gains the loss
    mate = ans.mate.copy()
    u = 0
    mu = int(mate[u])
    x = next(v for v in range(40) if v not in (u, mu))
    mx = int(mate[x])
    w = g.weight.astype(np.float64)
    cur = w[u, mu] + w[x, mx]
    options = [((u, x), (mu, mx)), ((u, mx), (mu, x))]
    (a, b), (c, d) = min(options, key=lambda o: w[o[0]] + w[o[1]])
    loss = cur - (w[a, b] + w[c, d])
    assert loss > 1e-3  # the worse pairing is clearly worse on these weights
    for p, q in ((a, b), (c, d)):
        mate[p], mate[q] = q, p
    v = P.verify(g, PerfectMatching(mate, converged=True, threshold=1e-5))
    assert not v.verified and "is not locally optimal" in v.reason
    assert v.objective == pytest.approx(matching_weight(g, ans.mate) - loss, rel=1e-9)
    gain = float(v.reason.split(" gains ")[1].split(" ")[0])
    assert gain >= loss - 1e-12  # at least the flip back is found


def test_weight_above_the_bound_means_a_wrong_bound(monkeypatch):
    g = complete_uniform(6, seed=0)
    monkeypatch.setattr(mw, "upper_bound", lambda graph: (0.5, "fake"))
    v = P.verify(g, PerfectMatching(neighbour_matching(6)))
    assert not v.verified and "above the verifier's fake upper bound 0.5" in v.reason


# -- the exhaustive 4-cycle scan -----------------------------------------------------------


def _brute_best_flip(g: CompleteGraph, mate: np.ndarray) -> tuple[float, int]:
    w = g.weight.astype(np.float64)
    edges = [(v, int(mate[v])) for v in range(g.n) if v < mate[v]]
    best, count = -np.inf, 0
    for (u, mu), (x, mx) in itertools.combinations(edges, 2):
        cur = w[u, mu] + w[x, mx]
        gain = max(w[u, x] + w[mu, mx], w[u, mx] + w[mu, x]) - cur
        best = max(best, gain)
        count += gain > 0
    return best, count


@settings(max_examples=60, deadline=None)
@given(small_graphs(), st.randoms(use_true_random=False))
def test_best_flip_is_the_brute_force_best(g, rnd):
    perm = list(range(g.n))
    rnd.shuffle(perm)
    mate = np.empty(g.n, dtype=np.int64)
    for i in range(0, g.n, 2):
        mate[perm[i]], mate[perm[i + 1]] = perm[i + 1], perm[i]
    got = best_flip(g, mate, 0.0)
    gain, count = _brute_best_flip(g, mate)
    assert got["gain"] == gain and got["improving"] == count
    if g.n >= 4:
        (a, b), (c, d) = got["new"]
        w = g.weight.astype(np.float64)
        u, x = got["u"], got["x"]
        assert {a, b, c, d} == {u, x, int(mate[u]), int(mate[x])}
        assert w[a, b] + w[c, d] - w[u, mate[u]] - w[x, mate[x]] == gain


def test_flip_scan_is_balanced_and_exhaustive_on_a_larger_instance():
    # the parallel scan folds rows t and m - 1 - t: every pair must still be seen
    g = complete_exponential(81, seed=2)
    mate = neighbour_matching(g.n)
    gain, count = _brute_best_flip(g, mate)
    got = best_flip(g, mate, 0.0)
    assert got["gain"] == gain and got["improving"] == count


# -- the reference and the bounds -----------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(small_graphs())
def test_exact_optimum_and_bounds_against_brute_force(g):
    opt = _brute_optimum(g)
    assert exact_optimum(g) == pytest.approx(opt, rel=1e-12, abs=1e-12)
    lsa, dual, rm = assignment_bound(g), dual_bound(g), row_max_bound(g)
    # opt <= LP optimum (= assignment / 2) <= any feasible dual <= the row-maximum dual
    eps = 1e-9 * max(1.0, rm)
    assert opt <= lsa + eps and lsa <= dual + eps and dual <= rm + eps
    assert upper_bound(g) == (exact_optimum(g), "exact")


@pytest.mark.parametrize("gen", [complete_uniform, complete_exponential, complete_geometric])
def test_bounds_chain_and_tightness_on_generated_instances(gen):
    g = gen(120, seed=3)
    opt, lsa, dual, rm = exact_optimum(g), assignment_bound(g), dual_bound(g), row_max_bound(g)
    assert opt <= lsa * (1 + 1e-12) <= dual * (1 + 1e-12) <= rm * (1 + 1e-12)
    assert dual <= 1.05 * opt  # the Jacobi steps make the dual bound useful


def test_which_bound_by_size(monkeypatch):
    g = complete_uniform(20, seed=0)
    assert upper_bound(g)[1] == "exact"
    monkeypatch.setattr(mw, "EXACT_MAX_N", 10)
    assert exact_optimum(complete_uniform(20, seed=1)) is None
    assert upper_bound(complete_uniform(20, seed=1))[1] == "assignment"
    monkeypatch.setattr(mw, "LSA_MAX_N", 10)
    h = complete_uniform(20, seed=2)
    assert assignment_bound(h) is None and upper_bound(h) == (dual_bound(h), "dual")
    v = P.verify(h, PerfectMatching(neighbour_matching(20)))
    assert v.verified and v.reference is None and v.bound == dual_bound(h)


def test_gap_to_optimality():
    assert gap_to_optimality(99.0, 100.0) == pytest.approx(0.01)
    assert gap_to_optimality(1.0, 1.0) == 0.0
    assert np.isnan(gap_to_optimality(1.0, None)) and np.isnan(gap_to_optimality(1.0, 0.0))


def test_odd_instance_answer_covers_the_dummy():
    g = complete_uniform(7, seed=3)
    v = P.verify(g, PerfectMatching(neighbour_matching(8)))  # 6 <-> 7 (the dummy)
    assert v.verified
    w = g.weight.astype(np.float64)
    assert v.objective == w[0, 1] + w[2, 3] + w[4, 5]  # the dummy's edge weighs 0
    v7 = P.verify(g, PerfectMatching(neighbour_matching(8)[:7]))
    assert not v7.verified and "the padded vertex count" in v7.reason
