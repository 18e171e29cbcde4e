"""``suitor_gpu``, ``bsuitor_gpu`` and ``ld_gpu`` checks that need no GPU.

Parameter validation, the YAML files, the skip rules, the host-side edge ranks (the global
order as integers, the one thing the kernels compare), and a Python emulation of the
GPU-Suitor's proposal rule (one ``atomicMax`` on a per-vertex word, stale reads during the
scan, warps interleaved at random) and of b-Suitor's lock-free slots and claims, against
GREEDY. The CUDA itself is tested on a GPU in
``tests/gpu/test_wmatch_gpu.py``; the kernels' compilation in ``test_kernels_compile.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from matchbench.core.params import configured
from matchbench.families.wmatch.problem import WeightedGraph, edge_order
from matchbench.families.wmatch.refs import Greedy
from matchbench.families.wmatch.suitor_gpu import (
    LDGPU,
    THREADS_PER_BLOCK,
    VARIANTS,
    VERTICES_PER_WARP,
    BSuitorGPU,
    SuitorGPU,
    edge_ranks,
)

CONF = Path(__file__).resolve().parents[2] / "conf" / "algorithm"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"variant": "locks"},
        {"variant": "NoSync"},
        {"threads_per_block": 64},
        {"threads_per_block": 512},
        {"threads_per_block": 128.0},
        {"vertices_per_warp": 3},
        {"vertices_per_warp": 512},
        {"vertices_per_warp": 0},
        {"vertices_per_warp": True},
        {"lb_iterations": -1},
        {"lb_iterations": "4"},
    ],
)
def test_suitor_gpu_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError) as err:
        configured(SuitorGPU, **kwargs)
    assert next(iter(kwargs)) in str(err.value)


def test_unknown_variant_lists_the_supported_ones():
    with pytest.raises(ValueError, match="nosync.*syncnolb.*synclb.*hybrid"):
        configured(SuitorGPU, variant="persistent")


@pytest.mark.parametrize("cls", [LDGPU, BSuitorGPU])
@pytest.mark.parametrize("tpb", [0, 31, 48, 2048, None])
def test_ld_and_bsuitor_gpu_reject_bad_parameters(cls, tpb):
    with pytest.raises(ValueError, match="threads_per_block"):
        configured(cls, threads_per_block=tpb)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("tpb", THREADS_PER_BLOCK)
@pytest.mark.parametrize("vpw", VERTICES_PER_WARP)
def test_whole_grid_is_accepted_and_fits_shared_memory(variant, tpb, vpw):
    s = configured(SuitorGPU, variant=variant, threads_per_block=tpb, vertices_per_warp=vpw)
    assert (
        s.variant()
        == f"lb_iterations=4,threads_per_block={tpb},variant={variant},vertices_per_warp={vpw}"
    )
    for idx in (np.int32, np.int64):
        assert s._shared_bytes(idx) <= 48 * 1024  # the static limit, no opt-in needed


@pytest.mark.parametrize(
    ("name", "cls"), [("suitor_gpu", SuitorGPU), ("ld_gpu", LDGPU), ("bsuitor_gpu", BSuitorGPU)]
)
def test_algorithm_configs_instantiate_to_their_solver(name, cls):
    solver = instantiate(OmegaConf.load(CONF / f"{name}.yaml"))
    assert type(solver) is cls
    assert solver.name == name and solver.problem == "wmatch" and solver.device == "gpu"
    assert solver.kernel_families == ("wmatch",)
    assert solver.init_label == "edge_ranks"  # t_init_s is the device ranking


def test_yaml_overrides_reach_the_solver():
    cfg = OmegaConf.load(CONF / "suitor_gpu.yaml")
    s = instantiate(cfg, variant="hybrid", vertices_per_warp=64, threads_per_block=192)
    assert s.params == {
        "variant": "hybrid",
        "threads_per_block": 192,
        "vertices_per_warp": 64,
        "lb_iterations": 4,
    }


@pytest.mark.parametrize("cls", [SuitorGPU, LDGPU])
def test_skips_b_matching_and_missing_gpu(cls):
    g = WeightedGraph.from_edges([0, 1], [1, 2], [1.0, 1.0], 3, b=[2, 1, 1], name="cap")
    skip, reason = configured(cls).skip(g)
    assert skip and "b = 1" in reason
    g1 = WeightedGraph.from_edges([0, 1], [1, 2], [1.0, 1.0], 3, name="plain")
    skip, reason = configured(cls).skip(g1)
    assert not skip or "GPU" in reason or "CUDA" in reason


def test_bsuitor_gpu_takes_capacities():
    g = WeightedGraph.from_edges([0, 1], [1, 2], [1.0, 1.0], 3, b=[2, 1, 1], name="cap")
    skip, reason = configured(BSuitorGPU).skip(g)
    if skip:  # only for want of a device, never for the capacities
        assert "CUDA device" in reason, reason


@pytest.mark.parametrize("cls", [SuitorGPU, LDGPU, BSuitorGPU])
def test_life_cycle_errors_before_prepare(cls):
    s = configured(cls)
    with pytest.raises(RuntimeError, match="before prepare"):
        s.run()
    assert s.counters() == {}


@st.composite
def weighted_graphs(draw, max_n: int = 30):
    """Small graphs with heavy ties (one to three weight values) or continuous weights."""
    n = draw(st.integers(1, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    iu, iv = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < draw(st.sampled_from([0.05, 0.2, 0.5, 1.0]))
    k = draw(st.integers(1, 4))
    u, v = iu[keep], iv[keep]
    w = rng.random(u.size) + 0.1 if k == 4 else rng.choice(np.arange(1.0, k + 1.0), size=u.size)
    return WeightedGraph.from_edges(u, v, w, n, name="h")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=weighted_graphs())
def test_edge_ranks_follow_the_global_order(g):
    for idx in (np.int32, np.int64):
        rank, ends = edge_ranks(g.n, g.ptr.astype(idx), g.ind.astype(idx), g.weight)
        assert rank.dtype == (np.uint32 if idx is np.int32 else np.uint64)
        m = g.n_edges
        eu, ev, _ = edge_order(g)
        rows = np.repeat(np.arange(g.n), np.diff(g.ptr))
        # the edge first in the order has rank m, both directions alike
        for r, (a, b) in enumerate(zip(eu.tolist(), ev.tolist(), strict=True)):
            p = np.flatnonzero((rows == a) & (g.ind == b))
            q = np.flatnonzero((rows == b) & (g.ind == a))
            assert rank[p[0]] == rank[q[0]] == m - r
            assert int(ends[m - r - 1]) == a ^ b


def _emulated_suitor(g: WeightedGraph, vpw: int, seed: int) -> np.ndarray:
    """The kernel's NoSync rule in Python: warps own chunks of vpw vertices and run their
    queue one vertex at a time in a random interleaving; a scan reads offers that may be
    stale (a snapshot taken at a random earlier step); a proposal is one atomicMax."""
    rng = np.random.default_rng(seed)
    rank, _ = edge_ranks(g.n, g.ptr, g.ind, g.weight)
    rank = rank.astype(np.int64)
    S = np.zeros(g.n, dtype=np.int64)  # rank of the held offer
    who = np.full(g.n, -1, dtype=np.int64)
    snapshots = [S.copy()]
    queues = [list(range(s, min(g.n, s + vpw))) for s in range(0, g.n, vpw)]
    while any(queues):
        w = int(rng.choice([i for i, q in enumerate(queues) if q]))
        x = queues[w].pop(0)
        seen = snapshots[int(rng.integers(max(0, len(snapshots) - 4), len(snapshots)))]
        best, c = 0, -1
        for p in range(g.ptr[x], g.ptr[x + 1]):
            v = int(g.ind[p])
            if rank[p] > best and rank[p] > min(seen[v], S[v]):  # stale: never above now
                best, c = int(rank[p]), v
        if c < 0:
            continue
        if best > S[c]:  # atomicMax succeeded
            old = int(who[c])
            S[c], who[c] = best, x
            if old >= 0:
                queues[w].append(old)
        else:
            queues[w].append(x)
        snapshots.append(S.copy())
    mate = np.full(g.n, -1, dtype=np.int64)
    for v in range(g.n):
        u = who[v]
        if u >= 0 and who[u] == v:
            mate[v] = u
    return mate


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=weighted_graphs(), vpw=st.sampled_from([1, 2, 4, 32]), seed=st.integers(0, 1000))
def test_emulated_proposal_rule_gives_greedy(g, vpw, seed):
    s = Greedy()
    s.prepare(g)
    s.run()
    want = s.result().mate(g.n)
    assert np.array_equal(_emulated_suitor(g, vpw, seed), want)


def _emulated_bsuitor(g: WeightedGraph, n_warps: int, seed: int) -> set[tuple[int, int]]:
    """``wmatch_bsuitor``'s protocol in Python, step by step, warps interleaved at random.

    Each warp is a generator that yields after every read or atomic on shared state
    (``last``, ``thr``, one slot), so scans see slots and thresholds change under them,
    claims on ``last[x]`` and slot compare-and-swaps can fail, and two warps can search
    for the same vertex at once, as on the GPU.
    """
    rng = np.random.default_rng(seed)
    rank, _ = edge_ranks(g.n, g.ptr, g.ind, g.weight)
    rank = rank.astype(np.int64)
    b = g.capacity.astype(np.int64)
    cap = np.minimum(b, np.diff(g.ptr))
    hoff = np.concatenate([[0], np.cumsum(cap)])
    big = 1 << 62
    S = [(0, -1)] * int(hoff[-1])  # (rank, suitor); (0, -1) empty
    thr = [big if c == 0 else 0 for c in cap]  # rank of the lower bound
    last = [big] * g.n

    def search(x):
        while True:
            bound = last[x]
            yield
            best, bv = 0, -1
            for p in range(g.ptr[x], g.ptr[x + 1]):
                r, v = int(rank[p]), int(g.ind[p])
                if r < bound and r > best:
                    t = thr[v]
                    yield
                    if r > t:
                        best, bv = r, v
            if best == 0:
                return 0, -1
            if last[x] == bound:  # the CAS claim
                last[x] = best
                return best, bv
            yield

    def offer(v, r, x):
        while True:
            lo, lo_s = None, -1
            for s in range(hoff[v], hoff[v + 1]):
                w = S[s]
                yield
                if lo is None or w[0] < lo[0]:
                    lo, lo_s = w, s
            if lo_s < 0 or r <= lo[0]:
                return False, -1
            if S[lo_s] != lo:  # the CAS fails
                yield
                continue
            S[lo_s] = (r, x)
            yield
            m = min(S[s][0] for s in range(hoff[v], hoff[v + 1]))
            if m:
                thr[v] = max(thr[v], m)
            return True, lo[1]

    def warp(us):
        for u in us:
            for _ in range(int(b[u])):
                x, u_done = u, False
                while x >= 0:
                    r, v = yield from search(x)
                    if r == 0:
                        u_done = x == u
                        break
                    ok, y = yield from offer(v, r, x)
                    if ok:
                        x = y
                if u_done:
                    break

    gens = [warp(range(w, g.n, n_warps)) for w in range(n_warps)]
    while gens:
        k = int(rng.integers(len(gens)))
        try:
            next(gens[k])
        except StopIteration:
            gens.pop(k)
    held = {}
    for v in range(g.n):
        for s in range(hoff[v], hoff[v + 1]):
            if S[s][1] >= 0:
                held[(v, S[s][1])] = True
    assert all((u, v) in held for (v, u) in held), "an offer held on one side only"
    return {(min(a, c), max(a, c)) for a, c in held}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    g=weighted_graphs(max_n=20),
    caps=st.lists(st.integers(0, 3), min_size=20, max_size=20),
    n_warps=st.sampled_from([1, 2, 5]),
    seed=st.integers(0, 1000),
)
def test_emulated_bsuitor_protocol_gives_greedy_b_matching(g, caps, n_warps, seed):
    gb = WeightedGraph(g.n, g.ptr, g.ind, g.weight, b=np.array(caps[: g.n], dtype=np.int32))
    s = Greedy()
    s.prepare(gb)
    s.run()
    ans = s.result()
    want = {(min(a, c), max(a, c)) for a, c in zip(ans.u.tolist(), ans.v.tolist(), strict=True)}
    assert _emulated_bsuitor(gb, n_warps, seed) == want


class _TimedPreprocessGreedy(Greedy):
    """GREEDY reporting a preprocessing of its own, as the GPU wmatch solvers do."""

    init_label = "edge_ranks"

    def timings(self):
        return {"init": 0.25, "solve": 1.0}


def test_solver_preprocessing_fills_init_and_e2e():
    from matchbench.runner.plan import build_plan
    from matchbench.runner.task import execute_task

    cfg = {
        "algorithm": {"_target_": f"{__name__}._TimedPreprocessGreedy"},
        "dataset": {"_target_": "matchbench.families.wmatch.datasets.wmatch_smoke", "name": "clique_ties"},
        "gpu": {"repetitions": 1, "warmup": 0},
        "run": {},
    }
    rows = execute_task(build_plan(cfg).tasks[0])
    assert rows and all(r["status"] == "ok" for r in rows)
    for r in rows:
        assert r["init"] == "edge_ranks" and r["t_init_s"] == 0.25
        assert r["t_e2e_s"] == pytest.approx(1.25) and r["verified"]
