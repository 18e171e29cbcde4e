"""The wmatch certificate: greedy answers verify, every broken answer is rejected with its reason.

Mutation tests start from the greedy answer (certified) and break it: drop a matched edge,
add a pair that is not an edge, exceed a capacity, swap a matched edge for a lower one, list an
edge twice, corrupt the mate array. Each must be rejected, the reason naming the problem
("wmatch") and the offending edge or vertex.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from matchbench.core.problem import get_problem
from matchbench.datasets import DatasetError
from matchbench.families.wmatch.problem import (
    WeightedGraph,
    WMatch,
    WMatching,
    edge_order,
    edge_order_key,
    exact_matching,
    precedes,
)
from matchbench.families.wmatch.refs import Greedy
from matchbench.graphs import weighted as W

PROBLEM = WMatch()


def _random(n: int, p: float, seed: int, ties: bool = True, b=None) -> WeightedGraph:
    rng = np.random.default_rng(seed)
    iu, iv = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    u, v = iu[keep], iv[keep]
    w = rng.choice([1.0, 2.0, 3.0], size=u.size) if ties else 1.0 - rng.random(u.size)
    return WeightedGraph.from_edges(u, v, w, n, b=b, name=f"rand{n}_{seed}")


def _greedy(g: WeightedGraph) -> WMatching:
    s = Greedy()
    s.prepare(g)
    s.run()
    return s.result()


def _pairs(m: WMatching) -> set[tuple[int, int]]:
    return {(min(a, b), max(a, b)) for a, b in zip(m.u.tolist(), m.v.tolist(), strict=True)}


def _of(pairs) -> WMatching:
    pairs = list(pairs)
    return WMatching(
        np.array([a for a, _ in pairs], dtype=np.int64),
        np.array([b for _, b in pairs], dtype=np.int64),
    )


def _rejected(g, answer, *fragments):
    v = PROBLEM.verify(g, answer)
    assert not v.verified
    assert v.reason.startswith(f"wmatch answer on {g.name!r}"), v.reason
    for f in fragments:
        assert f in v.reason, v.reason
    return v


def test_registry_returns_wmatch():
    p = get_problem("wmatch")
    assert isinstance(p, WMatch)
    assert (p.name, p.objective, p.sense, p.exact) == ("wmatch", "weight", "max", False)


def test_global_order_is_weight_then_larger_endpoints():
    assert edge_order_key(2.0, 5, 1) == (2.0, 5, 1)
    # heavier first, then the larger max endpoint, then the larger min endpoint
    assert precedes(2.0, 0, 1, 1.0, 8, 9)
    assert precedes(1.0, 9, 0, 1.0, 8, 7)
    assert precedes(1.0, 3, 9, 1.0, 9, 2)
    assert not precedes(1.0, 3, 9, 1.0, 9, 3)  # the same edge does not precede itself
    assert precedes(0.5, 0, 1, 0.0, -1, -1)  # every edge precedes "no edge"
    g = _random(14, 0.5, seed=3)
    u, v, w = edge_order(g)
    keys = [edge_order_key(*e) for e in zip(w.tolist(), u.tolist(), v.tolist(), strict=True)]
    assert keys == sorted(keys, reverse=True) and len(set(keys)) == len(keys) == g.n_edges


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("b", [None, 2, "random"])
def test_greedy_answer_verifies_with_bounds(seed, b):
    g0 = _random(16, 0.35, seed)
    cap = (
        None
        if b is None
        else (np.full(16, 2) if b == 2 else np.random.default_rng(seed).integers(0, 4, 16))
    )
    g = WeightedGraph.from_edges(*g0.edges(), 16, b=cap, name="g")
    ans = _greedy(g)
    v = PROBLEM.verify(g, ans)
    assert v.verified, v.reason
    assert v.objective == pytest.approx(
        sum(
            g.weight[g.ptr[a] + np.searchsorted(g.ind[g.ptr[a] : g.ptr[a + 1]], c)]
            for a, c in _pairs(ans)
        )
    )
    assert v.objective <= v.bound <= 2 * v.objective
    if b is None:
        assert v.reference is not None and v.objective <= v.reference + 1e-12 <= v.bound + 1e-12
        assert v.objective >= 0.5 * v.reference
        # the mate array form of the same answer gets the same verdict and weight
        w = PROBLEM.verify(g, ans.mate(g.n))
        assert w.verified and w.objective == v.objective
    else:
        assert v.reference is None  # no exact reference for b-matching


@pytest.mark.parametrize("seed", range(6))
def test_dropping_a_matched_edge_makes_it_block(seed):
    g = _random(15, 0.4, seed)
    pairs = sorted(_pairs(_greedy(g)))
    dropped = pairs[seed % len(pairs)]
    v = _rejected(g, _of(p for p in pairs if p != dropped), "not the greedy matching", "blocks")
    # the edge named is one that only the two freed vertices can make blocking
    a, c = (int(x) for x in re.search(r"unmatched edge \((\d+), (\d+)\)", v.reason).groups())
    assert {a, c} & set(dropped)


def test_adding_a_non_edge_is_rejected():
    g = WeightedGraph.from_edges([0, 1], [1, 2], [1.0, 1.0], 5, name="path")
    _rejected(g, _of([(1, 2), (3, 4)]), "invalid", "pair 1 (3, 4) is not an edge")
    _rejected(g, _of([(1, 2), (0, 7)]), "outside [0, 5)")
    _rejected(g, _of([(1, 1)]), "matches vertex 1 with itself")


@pytest.mark.parametrize("b", [None, 2])
def test_exceeding_a_capacity_is_rejected(b):
    g0 = _random(12, 0.6, seed=5)
    g = WeightedGraph.from_edges(*g0.edges(), 12, b=b, name="cap")
    pairs = _pairs(_greedy(g))
    cap = 1 if b is None else b
    deg = {}
    for a, c in pairs:
        deg[a] = deg.get(a, 0) + 1
        deg[c] = deg.get(c, 0) + 1
    x = next(x for x in range(12) if deg.get(x) == cap)
    u, v, _ = g.edges()
    extra = next(
        (a, c)
        for a, c in zip(u.tolist(), v.tolist(), strict=True)
        if x in (a, c) and (a, c) not in pairs
    )
    v_ = _rejected(g, _of(pairs | {extra}), "invalid", "above its capacity b =")
    assert re.search(r"vertex (\d+) is in (\d+) matched edges", v_.reason)


def test_swapping_for_a_lower_edge_creates_a_blocking_edge():
    # 0 -3- 1, 1 -2- 2, 1 -1- 3: greedy takes (0, 1). Swap it for the lower (1, 3): (0, 1)
    # then blocks (0 is free, 1 holds a later edge), and (1, 2) blocks as well.
    g = WeightedGraph.from_edges([0, 1, 1], [1, 2, 3], [3.0, 2.0, 1.0], 4, name="swap")
    assert _pairs(_greedy(g)) == {(0, 1)}
    assert PROBLEM.verify(g, _of([(0, 1)])).verified
    _rejected(g, _of([(1, 3)]), "not the greedy matching", "edge (0, 1) of weight 3.0 blocks")
    # a tie decided by the order: (1, 2) and (1, 3) both weigh 2; greedy takes (1, 3)
    h = WeightedGraph.from_edges([1, 1], [2, 3], [2.0, 2.0], 4, name="tie")
    assert _pairs(_greedy(h)) == {(1, 3)}
    _rejected(h, _of([(1, 2)]), "edge (1, 3) of weight 2.0 blocks")


@pytest.mark.parametrize("seed", range(5))
def test_random_swaps_for_lower_edges_are_rejected(seed):
    g = _random(18, 0.3, seed, ties=False)
    pairs = _pairs(_greedy(g))
    u, v, w = edge_order(g)
    order = {(a, c): r for r, (a, c) in enumerate(zip(u.tolist(), v.tolist(), strict=True))}
    mate = {}
    for a, c in pairs:
        mate[a], mate[c] = c, a
    rejected = 0
    for a, c in sorted(pairs):
        for x in range(18):
            e = (min(a, x), max(a, x))
            if x in mate or e not in order or order[e] < order[(a, c)]:
                continue
            swapped = (pairs - {(a, c)}) | {e}
            _rejected(g, _of(swapped), "not the greedy matching", "blocks")
            rejected += 1
    assert rejected > 0


def test_listing_an_edge_twice_is_rejected():
    g = _random(10, 0.5, seed=1)
    pairs = sorted(_pairs(_greedy(g)))
    a, c = pairs[0]
    _rejected(g, _of([*pairs, (c, a)]), "invalid", f"edge ({c}, {a}) is listed twice")


@pytest.mark.parametrize(
    ("mate", "message"),
    [
        ([1, 0, 3, 2, 2], "mate[4] = 2 but mate[2] = 3"),
        ([1, 0, 2, -1, -1], "vertex 2 is its own mate"),
        ([1, 0, -1, 9, -1], "mate[3] = 9 is not a vertex index"),
        ([1, 0, -2, -1, -1], "mate[2] = -2 is not a vertex index"),
        ([1, 0, -1, -1], "mate array has shape (4,), expected (5,)"),
        ([1.0, 0.0, -1.0, -1.0, -1.0], "mate array has dtype float64"),
    ],
)
def test_broken_mate_arrays_are_rejected(mate, message):
    g = WeightedGraph.from_edges([0, 2, 3], [1, 3, 4], [1.0, 2.0, 3.0], 5, name="m")
    v = _rejected(g, np.array(mate), "invalid", message)
    assert np.isnan(v.objective)


def test_malformed_answers_are_rejected():
    g = WeightedGraph.from_edges([0], [1], [1.0], 2, name="one")
    _rejected(g, [0, 1], "expected a WMatching or a mate array, got list")
    _rejected(g, WMatching(np.array([0]), np.array([1, 0])), "differ in length")
    _rejected(
        g, WMatching(np.array([0.0]), np.array([1.0])), "pair array u must be a 1-D integer array"
    )
    _rejected(g, WMatching(np.array([0]), np.array([1]), claim="best"), "claim 'best'")
    assert PROBLEM.verify(g, WMatching(np.array([1]), np.array([0]))).verified  # either orientation


def test_optimal_claims_are_checked_against_the_exact_optimum():
    # a path a -2- b -3- c -2- d: greedy takes (b, c) = 3, the optimum (a, b) + (c, d) = 4
    g = WeightedGraph.from_edges([0, 1, 2], [1, 2, 3], [2.0, 3.0, 2.0], 4, name="p4")
    greedy = _greedy(g)
    v = PROBLEM.verify(g, greedy)
    assert v.verified and v.objective == 3.0 and v.reference == 4.0 and v.bound == 5.0
    best = WMatching.from_mate(exact_matching(g), claim="optimal")
    v = PROBLEM.verify(g, best)
    assert v.verified and v.objective == v.reference == 4.0
    # the optimum is not the greedy matching; greedy is not optimal
    _rejected(
        g, WMatching(best.u, best.v), "not the greedy matching", "edge (1, 2) of weight 3.0 blocks"
    )
    _rejected(
        g,
        WMatching(greedy.u, greedy.v, claim="optimal"),
        "claimed optimal but weighs 3.0, the optimum is 4.0",
    )
    # no optimality certificate for b-matching
    h = WeightedGraph.from_edges([0, 1, 2], [1, 2, 3], [2.0, 3.0, 2.0], 4, b=2, name="p4b")
    _rejected(h, WMatching(best.u, best.v, claim="optimal"), "only certified for b = 1")


def test_zero_capacity_vertices_take_no_edge():
    g = WeightedGraph.from_edges([0, 1], [1, 2], [5.0, 1.0], 3, b=[1, 0, 1], name="zero")
    assert _pairs(_greedy(g)) == set()
    assert PROBLEM.verify(g, _of([])).verified
    _rejected(g, _of([(0, 1)]), "vertex 1 is in 1 matched edges, above its capacity b = 0")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"u": [0, 1], "v": [1, 1], "w": [1.0, 1.0]}, "self-loop at vertex 1"),
        ({"u": [0, 1], "v": [1, 0], "w": [1.0, 2.0]}, "edge (0, 1) is given more than once"),
        ({"u": [0], "v": [3], "w": [1.0]}, "out of range [0, 3)"),
        ({"u": [0], "v": [1], "w": [0.0]}, "weights must be finite and > 0"),
        ({"u": [0], "v": [1], "w": [np.nan]}, "weights must be finite and > 0"),
        ({"u": [0], "v": [1], "w": [1.0], "b": [1, -1, 1]}, "capacity b[1] = -1 is negative"),
        ({"u": [0], "v": [1], "w": [1.0], "b": [1, 1]}, "capacity b has shape (2,)"),
    ],
)
def test_bad_instances_are_refused_naming_the_problem(kwargs, message):
    kwargs = dict(kwargs)
    with pytest.raises(DatasetError) as info:
        WeightedGraph.from_edges(
            kwargs.pop("u"), kwargs.pop("v"), kwargs.pop("w"), 3, name="bad", **kwargs
        )
    assert "wmatch instance 'bad'" in str(info.value) and message in str(info.value)


def _mutants(rng, n):
    """A random symmetric CSR on ``n`` vertices, and copies of it with one defect of each
    kind the constructor names (or none)."""
    u = rng.integers(0, n, 4 * n)
    v = rng.integers(0, n, 4 * n)
    keep = u != v
    key = np.unique(np.minimum(u, v)[keep] * n + np.maximum(u, v)[keep])
    w = rng.integers(1, 4, key.size).astype(np.float64)
    g = WeightedGraph.from_edges(key // n, key % n, w, n)
    base = (g.ptr.astype(np.int64), g.ind.astype(np.int64), g.weight.copy())
    yield base
    for _ in range(12):
        ptr, ind, w = (a.copy() for a in base)
        kind = rng.integers(0, 8)
        p = int(rng.integers(0, ind.size))
        if kind == 0:  # a weight changed on one side only
            w[p] += 1.0
        elif kind == 1:  # a neighbour moved to another (unsorted, duplicate or one-sided)
            ind[p] = rng.integers(0, n)
        elif kind == 2:  # out of range
            ind[p] = n + int(rng.integers(0, 3))
        elif kind == 3:  # a bad weight
            w[p] = (0.0, -1.0, np.inf, np.nan)[int(rng.integers(0, 4))]
        elif kind == 4:  # ptr decreasing inside
            x = int(rng.integers(1, n))
            ptr[x] = ptr[x + 1] + 1 if ptr[x + 1] + 1 <= ind.size else ptr[x - 1] - 1
        elif kind == 5:  # one direction of an edge dropped
            ind, w = np.delete(ind, p), np.delete(w, p)
            ptr = ptr - (np.arange(n + 1) > np.searchsorted(ptr, p, side="right") - 1)
        elif kind == 6:  # two neighbours swapped
            ind[[p, max(p - 1, 0)]] = ind[[max(p - 1, 0), p]]
        else:  # the same arrays
            pass
        yield ptr, ind, w


def test_fast_csr_check_finds_the_same_first_defect():
    """``first_csr_defect`` (the parallel filter, then the ordered search) against the ordered
    search alone, on random symmetric graphs and their one-defect mutants."""
    rng = np.random.default_rng(7)
    seen = set()
    for t in range(150):
        n = int(rng.integers(2, 40))
        for ptr, ind, w in _mutants(rng, n):
            if ptr[0] != 0 or ptr[-1] != ind.size:
                continue  # the constructor refuses these before the check
            want = W._check_csr(n, ptr, ind, w)
            assert W.first_csr_defect(n, ptr, ind, w) == want, (t, n, want)
            seen.add(int(want[0]))
    assert seen == {0, 1, 2, 3, 4, 5, 6, 7}  # every kind of defect, and none, was met


def test_csr_that_is_not_symmetric_is_refused():
    g = WeightedGraph.from_edges([0, 1], [1, 2], [1.0, 2.0], 3)
    with pytest.raises(DatasetError, match=r"edge \(1, 2\) has two weights"):
        WeightedGraph(3, g.ptr, g.ind, np.array([1.0, 1.0, 2.0, 3.0]), name="w")
    ptr = np.array([0, 1, 1, 1])
    with pytest.raises(DatasetError, match=r"edge \(0, 1\) is stored but \(1, 0\) is not"):
        WeightedGraph(3, ptr, np.array([1]), np.array([1.0]), name="w")


def test_parallel_csr_filter_says_clean_exactly_when_the_ordered_search_does():
    """``_csr_clean`` (rows in parallel, upper entries looked up below the diagonal) is
    True on exactly the arrays where ``_check_csr`` finds no defect: never a false
    "clean", and no clean graph sent to the slow search."""
    rng = np.random.default_rng(11)
    verdicts = set()
    for t in range(150):
        n = int(rng.integers(2, 40))
        for ptr, ind, w in _mutants(rng, n):
            if ptr[0] != 0 or ptr[-1] != ind.size or (ptr[1:] < ptr[:-1]).any():
                continue  # first_csr_defect sends these to the ordered search
            clean = W._check_csr(n, ptr, ind, w)[0] == 0
            assert W._csr_clean(n, ptr, ind, w) == clean, (t, n)
            verdicts.add(clean)
    assert verdicts == {True, False}
