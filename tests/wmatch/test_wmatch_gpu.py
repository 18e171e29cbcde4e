"""GPU wmatch solvers (``suitor_gpu`` in every variant, ``bsuitor_gpu``, ``ld_gpu``) equal GREEDY.

The graphs are built once per module: 240 small ones made to stress the tie order (weights
from one, two or three values, or continuous; random graphs, stars, cliques, paths, unions
with isolated vertices), each also relabelled by a random permutation, and a few larger
ones with hubs (adjacency lists longer than a warp, queues longer than 32, vertices
displaced across warps and blocks). Every answer must be GREEDY's mate array exactly and
be certified by :meth:`WMatch.verify`; ``bsuitor_gpu`` also on the same graphs with random
capacities b(v) in 0..4 against GREEDY's b-matching, pair for pair. The device edge ranks
must equal the host's :func:`edge_ranks` on every graph.
"""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.core.params import configured
from matchbench.families.wmatch.problem import WeightedGraph, WMatch
from matchbench.families.wmatch.refs import Greedy
from matchbench.families.wmatch.suitor_gpu import (
    LDGPU,
    VARIANTS,
    BSuitorGPU,
    SuitorGPU,
    device_edge_ranks,
    edge_ranks,
)

pytestmark = pytest.mark.gpu

PROBLEM = WMatch()
GRID = [(tpb, vpw) for tpb in (128, 192, 256) for vpw in (1, 4, 32, 256)]


def _graph(rng: np.random.Generator, k: int) -> WeightedGraph:
    n = int(rng.integers(1, 60))
    shape = ("random", "star", "clique", "path", "union")[k % 5]
    iu, iv = np.triu_indices(n, 1)
    if shape == "random":
        keep = rng.random(iu.size) < rng.choice([0.05, 0.15, 0.4, 0.8])
    elif shape == "star":
        keep = iu == 0
    elif shape == "clique":
        keep = np.ones(iu.size, dtype=bool)
    elif shape == "path":
        keep = iv == iu + 1
    else:  # a clique on the first third, a star on the next, the rest isolated
        c = max(1, n // 3)
        keep = (iv < c) | ((iu == c) & (iv < 2 * c))
    u, v = iu[keep], iv[keep]
    kind = (k // 5) % 4
    if kind == 3:
        w = rng.random(u.size) + 0.01
    else:
        w = rng.choice(np.array([1.0, 2.0, 3.0])[: kind + 1], size=u.size)
    return WeightedGraph.from_edges(u, v, w, n, name=f"g{k}_{shape}_{n}")


def _large(rng: np.random.Generator, k: int) -> WeightedGraph:
    n = int(rng.integers(300, 2500))
    m = int(n * rng.choice([2, 6, 12]))
    u = rng.integers(0, n, m)
    v = rng.integers(0, n, m)
    hubs = rng.integers(0, n, 4)  # adjacency lists far longer than a warp
    u = np.concatenate([u, np.repeat(hubs, n // 3)])
    v = np.concatenate([v, rng.integers(0, n, 4 * (n // 3))])
    keep = u != v
    lo, hi = np.minimum(u[keep], v[keep]), np.maximum(u[keep], v[keep])
    key = np.unique(lo.astype(np.int64) * n + hi)
    lo, hi = key // n, key % n
    w = rng.choice([1.0, 2.0, 3.0], size=lo.size) if k % 2 else rng.random(lo.size) + 0.5
    return WeightedGraph.from_edges(lo, hi, w, n, name=f"large{k}_{n}")


def _greedy_mate(g: WeightedGraph) -> np.ndarray:
    s = Greedy()
    s.prepare(g)
    s.run()
    return s.result().mate(g.n)


@pytest.fixture(scope="module")
def graphs():
    rng = np.random.default_rng(20151216)
    out = []
    for k in range(240):
        g = _graph(rng, k)
        out.append(g)
        out.append(g.permuted(int(rng.integers(2**31))))
    out += [_large(rng, k) for k in range(8)]
    out.append(WeightedGraph.from_edges([], [], [], 0, name="empty"))
    out.append(WeightedGraph.from_edges([], [], [], 5, name="isolated"))
    return [(g, _greedy_mate(g)) for g in out]


def _check(solver, graphs_) -> None:
    bad = []
    for g, want in graphs_:
        solver.prepare(g)
        solver.run()
        mate = solver.result()
        if not isinstance(mate, np.ndarray):  # bsuitor_gpu: pairs
            mate = mate.mate(g.n)
        assert mate.dtype in (g.ind.dtype, np.int64)
        if not np.array_equal(mate.astype(np.int64), want):
            bad.append((g.name, "differs from greedy"))
            continue
        v = PROBLEM.verify(g, mate)
        if not v.verified:
            bad.append((g.name, v.reason))
    assert not bad, f"{solver.name} {solver.variant()}: {len(bad)} failures, first {bad[:3]}"


def test_instance_set_is_varied(graphs):
    assert len(graphs) >= 480
    gs = [g for g, _ in graphs]
    assert any(g.n_edges == 0 and g.n > 0 for g in gs)
    assert max(int(np.diff(g.ptr).max(initial=0)) for g in gs) > 256
    assert sum(len(np.unique(g.weight)) <= 3 for g in gs if g.n_edges) > 100


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize(("tpb", "vpw"), GRID, ids=[f"tpb{t}-vpw{v}" for t, v in GRID])
def test_suitor_gpu_is_greedy(variant, tpb, vpw, graphs):
    _check(configured(SuitorGPU, variant=variant, threads_per_block=tpb, vertices_per_warp=vpw), graphs)


@pytest.mark.parametrize("variant", ["synclb", "hybrid"])
@pytest.mark.parametrize("k", [0, 1, 64])
def test_load_balancing_lengths(variant, k, graphs):
    _check(
        configured(SuitorGPU, variant=variant, threads_per_block=256, vertices_per_warp=64, lb_iterations=k),
        graphs,
    )


@pytest.mark.parametrize("tpb", [32, 256])
def test_ld_gpu_is_greedy(tpb, graphs):
    _check(configured(LDGPU, threads_per_block=tpb), graphs)


def _greedy_pairs(g: WeightedGraph) -> set[tuple[int, int]]:
    s = Greedy()
    s.prepare(g)
    s.run()
    ans = s.result()
    return {(min(a, b), max(a, b)) for a, b in zip(ans.u.tolist(), ans.v.tolist(), strict=True)}


@pytest.fixture(scope="module")
def capacitated(graphs):
    """The same graphs with capacities b(v) in 0..4 (zeros, ones and hubs of capacity 4)."""
    rng = np.random.default_rng(2016)
    out = []
    for g, _ in graphs:
        b = rng.choice([0, 1, 1, 2, 3, 4], size=g.n).astype(np.int32)
        gb = WeightedGraph(g.n, g.ptr, g.ind, g.weight, b=b, name=g.name + "_b")
        out.append((gb, _greedy_pairs(gb)))
    return out


@pytest.mark.parametrize("tpb", [32, 128, 1024])
def test_bsuitor_gpu_is_greedy_b_matching(tpb, capacitated):
    s = configured(BSuitorGPU, threads_per_block=tpb)
    bad = []
    for g, want in capacitated:
        s.prepare(g)
        s.run()
        ans = s.result()
        got = {(min(a, b), max(a, b)) for a, b in zip(ans.u.tolist(), ans.v.tolist(), strict=True)}
        if got != want:
            bad.append((g.name, "differs from greedy", len(got ^ want)))
            continue
        assert s.counters()["one_sided"] == 0
        v = PROBLEM.verify(g, ans)
        if not v.verified:
            bad.append((g.name, v.reason))
    assert not bad, f"bsuitor_gpu tpb={tpb}: {len(bad)} failures, first {bad[:3]}"


@pytest.mark.parametrize("tpb", [32, 256])
def test_bsuitor_gpu_with_b_one_is_suitor(tpb, graphs):
    _check(configured(BSuitorGPU, threads_per_block=tpb), graphs)


def test_device_ranks_equal_host_ranks(graphs):
    import cupy as cp

    from matchbench.gpu.kernels import get_module

    bad = []
    for opts, idx in (((), np.int32), (("-DMB_INDEX64",), np.int64)):
        mod = get_module("wmatch", opts)
        k = {n: mod.get_function(n) for n in ("wmatch_rank_scatter", "wmatch_rank_mirror")}
        for g, _ in graphs[::3] + graphs[-10:]:
            ptr, ind = g.ptr.astype(idx), g.ind.astype(idx)
            want_r, want_e = edge_ranks(g.n, ptr, ind, g.weight)
            r, e = device_edge_ranks(g.n, cp.asarray(ptr), cp.asarray(ind), cp.asarray(g.weight), k)
            if not (
                np.array_equal(r.get()[: ind.size], want_r)
                and np.array_equal(e.get()[: ind.size // 2], want_e)
            ):
                bad.append((g.name, idx.__name__))
    assert not bad, f"device ranks differ from host ranks on {len(bad)}: {bad[:5]}"


def _as_int64(g: WeightedGraph) -> WeightedGraph:
    # Graphs past 2^31 entries get int64 indices; the constructor picks int32 for small
    # ones, so the arrays are widened afterwards (the certificate reads either).
    g64 = WeightedGraph(g.n, g.ptr, g.ind, g.weight, name=g.name + "_i64")
    g64.ptr = g.ptr.astype(np.int64)
    g64.ind = g.ind.astype(np.int64)
    return g64


def test_int64_indices(graphs):
    wide = [(_as_int64(g), want) for g, want in graphs[::5]]
    for variant in VARIANTS:
        _check(configured(SuitorGPU, variant=variant, threads_per_block=128, vertices_per_warp=8), wide)
    _check(configured(LDGPU), wide)
    _check(configured(BSuitorGPU), wide)


def test_bsuitor_gpu_int64_with_capacities(capacitated):
    bad = []
    s = configured(BSuitorGPU)
    for g, want in capacitated[::7]:
        g64 = WeightedGraph(g.n, g.ptr, g.ind, g.weight, b=g.b, name=g.name + "_i64")
        g64.ptr, g64.ind = g.ptr.astype(np.int64), g.ind.astype(np.int64)
        s.prepare(g64)
        s.run()
        ans = s.result()
        got = {(min(a, b), max(a, b)) for a, b in zip(ans.u.tolist(), ans.v.tolist(), strict=True)}
        if got != want or not PROBLEM.verify(g64, ans).verified:
            bad.append(g64.name)
    assert not bad, bad[:5]


def test_repeated_runs_and_counters(graphs):
    g, want = graphs[-3]  # a large graph
    s = configured(SuitorGPU, variant="synclb", threads_per_block=256, vertices_per_warp=64)
    s.prepare(g)
    for _ in range(3):
        s.run()
        assert np.array_equal(s.result().astype(np.int64), want)
    c = s.counters()
    assert c["proposals"] >= int((want >= 0).sum()) and c["iterations"] >= 1
    assert c["host_syncs"] == 0 and c["kernel_launches"] == 4
    t = s.timings()
    assert t["solve"] > 0 and t["transfer"] >= 0 and t["init"] > 0  # init: the edge ranks
    ld = configured(LDGPU)
    ld.prepare(g)
    ld.run()
    c = ld.counters()
    assert c["rounds"] >= 1 and c["host_syncs"] == c["rounds"] and c["processed"] >= g.n
