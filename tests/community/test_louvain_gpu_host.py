"""``louvain_gpu`` checks that need no GPU.

The host pieces the driver hands the kernels (buckets, hash table primes, sort keys, global
table blocks) against brute force and against the constants of ``kernels/community/louvain.cu``; the
parameters, the config and the life cycle; the host loop (:func:`_drive`) on a scripted
backend; and the whole method through the host model (:func:`louvain_gpu_model`, the same
bucket-synchronous moves as the kernels, which the GPU tests compare the device with):
certified partitions, Q with self-loops, the per-stage invariants, the relaxed variant equal
to the sequential reference's, the bucket commit order, quality against the sequential
``louvain``, the thresholds. Then the options beyond the paper (``Options``: id ranges, hub
chunks, pruning, pick-less iterations, threshold drop, aggregation tolerance, flat
aggregation): their steps and keys against brute force, their checks, the loop's handling
of them, and every option through the model on planted, Kronecker, mesh and random graphs
(certified, deterministic, Q at least the paper's or 0.98 of the sequential ``louvain``).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from matchbench.core.params import configured
from matchbench.families.community import datasets as D
from matchbench.families.community import louvain_buckets as LB
from matchbench.families.community import louvain_gpu as LG
from matchbench.families.community import louvain_model as LM
from matchbench.families.community import louvain_stages as LS
from matchbench.families.community.louvain import BIN_LIMIT, _louvain, louvain
from matchbench.families.community.louvain_buckets import (
    MERGE_BOUNDS,
    MERGE_SLOTS,
    MOVE_BOUNDS,
    MOVE_SLOTS,
    MOVE_THREADS,
    global_blocks,
    is_prime,
    merge_bucket,
    merge_keys,
    move_bucket,
    move_keys,
    table_size,
    vertex_slices,
)
from matchbench.families.community.louvain_gpu import LouvainGPU, LouvainGPUFast
from matchbench.families.community.louvain_model import louvain_gpu_model
from matchbench.families.community.louvain_stages import THRESHOLD_SWEEP, Options
from matchbench.families.community.problem import (
    Community,
    CommunityGraph,
    aggregate,
    modularity,
)
from matchbench.families.community.truth import truth_nmi

ROOT = Path(__file__).resolve().parents[2]
SOURCE = (ROOT / "kernels" / "community" / "louvain.cu").read_text()
P = Community()


def _define(name: str) -> int:
    return int(re.search(rf"#define {name} \(?(\d+)", SOURCE).group(1))


# ---------------------------------------------------------------------------------------
# Primes, buckets, keys


def _sieve(limit: int) -> np.ndarray:
    ok = np.ones(limit, dtype=bool)
    ok[:2] = False
    for p in range(2, int(limit**0.5) + 1):
        if ok[p]:
            ok[p * p :: p] = False
    return ok


def test_is_prime_against_a_sieve_and_large_numbers():
    ok = _sieve(20000)
    assert [is_prime(x) for x in range(20000)] == ok.tolist()
    assert is_prime(2**61 - 1) and is_prime(1_000_000_007)
    assert not is_prime(561) and not is_prime(3_215_031_751) and not is_prime(2**61 + 1)


def test_table_size_is_the_smallest_prime_above_one_and_a_half_degrees():
    ok = _sieve(4000)
    for d in range(2500):
        p = table_size(d)
        assert ok[p] and p > 1.5 * d
        assert not any(ok[x] for x in range(int(1.5 * d) + 1, p) if x > 1.5 * d)
    assert table_size(10**9) > 1.5e9 and is_prime(table_size(10**9))


def test_the_kernels_prime_table_is_the_hosts():
    body = SOURCE.split("lv_prime_of_deg[480] = {", 1)[1].split("};", 1)[0]
    table = [int(x) for x in re.findall(r"\d+", body)]
    assert table == [table_size(d) for d in range(480)]


def test_the_kernels_constants_are_the_hosts():
    assert [_define(f"LV_B{i}") for i in range(1, 7)] == list(MOVE_BOUNDS)
    assert [_define(f"LV_TS{i}") for i in range(1, 7)] == list(MOVE_SLOTS)
    assert [_define(f"LV_M{i}") for i in (1, 2)] == list(MERGE_BOUNDS)
    assert [_define(f"LV_MTS{i}") for i in (1, 2)] == list(MERGE_SLOTS)
    assert _define("LV_MERGE_QUAD") == LB.MERGE_QUAD and _define("LV_M0") == LB.MERGE_SMALL
    # the small communities' tables share a warp's: a quarter each holds the largest
    assert LB.MERGE_QUAD * table_size(LB.MERGE_SMALL) <= MERGE_SLOTS[0]
    assert 32 % LB.MERGE_QUAD == 0 and LB.MERGE_SMALL < MERGE_BOUNDS[0]
    assert _define("LV_BLOCK") == LB.BLOCK == 128
    assert _define("LV_KEY_SHIFT") == LB.KEY_SHIFT
    assert _define("LV_ROUNDS_MAX") == LB.ROUNDS_MAX
    assert _define("LV_COUNTS") == LG._COUNTS
    assert _define("LV_HASH_MULT") == LB.HASH_MULT
    # the per-range counts sit above the setup's other slots
    assert max(_define(x) for x in ("LV_MAXDEG", "LV_TWO_M", "LV_K2", "LV_LOOP2")) < LG._COUNTS


def test_bucket_tables_and_threads_cover_their_degrees():
    # a bucket's shared table holds its largest degree's table (sizes grow with the degree)
    assert list(MOVE_SLOTS) == [table_size(b) for b in MOVE_BOUNDS]
    assert list(MERGE_SLOTS) == [table_size(b) for b in MERGE_BOUNDS]
    assert all(table_size(d) <= table_size(d + 1) for d in range(1000))
    # paper III, Sec. 4.1: 2^(k+1) threads for buckets 1-4 (one edge each), a warp for
    # [33, 84] (one to three edges each), a block above
    assert MOVE_THREADS == (4, 8, 16, 32, 32, 128, 128)
    assert all(t >= b for t, b in zip(MOVE_THREADS[:4], MOVE_BOUNDS[:4], strict=True))
    assert -(-MOVE_BOUNDS[4] // 32) == 3 and MOVE_BOUNDS[3] + 1 > 32
    assert 3 * 128 >= MOVE_BOUNDS[5]  # b6: up to three edges per thread of the block


def test_move_buckets_at_their_boundaries():
    d = [0, 1, 4, 5, 8, 9, 16, 17, 32, 33, 84, 85, 319, 320, 10**7]
    assert move_bucket(d).tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]


def test_merge_buckets_at_their_boundaries():
    d = [0, 0, 1, 127, 128, 479, 480]
    size = [0, 3, 1, 2, 5, 9, 1]
    assert merge_bucket(d, size).tolist() == [0, 1, 1, 1, 2, 2, 3]


def test_sort_keys_list_buckets_in_turn_by_id_the_last_by_decreasing_degree():
    rng = np.random.default_rng(3)
    deg = rng.choice([0, 1, 3, 7, 20, 50, 100, 400, 400, 900], size=300)
    order = np.argsort(move_keys(deg), kind="stable")
    b = move_bucket(deg)[order]
    assert (np.diff(b) >= 0).all()
    for x in range(7):
        assert (np.diff(order[b == x]) > 0).all()  # by vertex id
    big = order[b == 7]
    assert (np.diff(deg[big]) <= 0).all()
    ties = big[deg[big] == 400]
    assert (np.diff(ties) > 0).all()  # equal degrees stay in id order (stable sort)
    size = rng.integers(0, 3, 300)
    corder = np.argsort(merge_keys(deg * 2, size), kind="stable")
    mb = merge_bucket(deg * 2, size)[corder]
    assert (np.diff(mb) >= 0).all() and (np.diff((deg * 2)[corder][mb == 3]) <= 0).all()


def test_global_blocks():
    assert global_blocks(1, 10**6, 10, 132) == 1
    assert global_blocks(10**6, 100, 10**6, 132) == 4 * 132
    # tables that do not fit the budget together: fewer blocks, never none
    assert global_blocks(10**6, 10**8, 10**6, 132) == 1
    assert global_blocks(1000, 10**6, 10**6, 132) == (64 << 20) // (12 * 10**6)


def test_vertex_slices_cover_each_step_within_the_budget():
    rng = np.random.default_rng(3)
    ts = np.array([table_size(int(d)) for d in rng.integers(320, 40000, 60)])
    steps = [(1, 0, 9, 0), (7, 9, 25, 0), (6, 34, 3, 25), (7, 37, 35, 25)]
    assert LB.SMEM_HUB_SLOTS == _define("LV_TS7S")
    for smem in (False, True):
        need = np.where(ts > LB.SMEM_HUB_SLOTS, ts, 0) if smem else ts
        for budget in (1, 50_000, 300_000, 10**9):
            slices, toff, slots = vertex_slices(steps, ts, smem, budget)
            assert [s == [] for s in slices] == [True, False, True, False]
            for (b, _start, count, at), own in zip(steps, slices, strict=True):
                if b != 7:
                    continue
                # consecutive launches covering the step
                assert [o for o, _ in own] == list(np.cumsum([0] + [c for _, c in own[:-1]]))
                assert sum(c for _, c in own) == count
                for off, cnt in own:
                    nd = need[at + off:at + off + cnt]
                    # each vertex's own slots, packed from the launch's first
                    assert (toff[at + off:at + off + cnt] == np.cumsum(nd) - nd).all()
                    assert nd.sum() <= max(budget, nd.max()) and nd.sum() <= slots
                    assert cnt == 1 or nd.sum() <= budget  # only a lone table passes it
            launches = [need[at + o:at + o + c].sum() for (b, _s, _c, at), own in
                        zip(steps, slices, strict=True) for o, c in own]
            assert slots == max(1, *launches)
            if budget >= need.sum():
                assert len(launches) == 2  # one launch per bucket-7 step
    # tables in shared memory need no global slots: one launch, whatever the budget
    slices, toff, slots = vertex_slices([(7, 0, 2, 0)], [100, 200], True, 1)
    assert slices == [[(0, 2)]] and toff.tolist() == [0, 0] and slots == 1


def test_threshold_sweep_is_the_papers_grid():
    assert THRESHOLD_SWEEP["t_bin"] == pytest.approx((1e-1, 1e-2, 1e-3, 1e-4))
    assert THRESHOLD_SWEEP["t_final"] == pytest.approx((1e-3, 1e-4, 1e-5, 1e-6, 1e-7))


# ---------------------------------------------------------------------------------------
# Parameters, config, life cycle


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"rounds": 0}, "rounds"),
        ({"rounds": LB.ROUNDS_MAX + 1}, "rounds"),
        ({"hub_chunks": 0}, "hub_chunks"),
        ({"hub_chunks": 2.0}, "hub_chunks"),
        ({"prune": 1}, "prune"),
        ({"pickless": -1}, "pickless"),
        ({"t_drop": 0.5}, "t_drop"),
        ({"t_drop": float("inf")}, "t_drop"),
        ({"aggregation_tolerance": 0.0}, "aggregation_tolerance"),
        ({"aggregation_tolerance": 1.5}, "aggregation_tolerance"),
        ({"aggregate": "sort"}, "aggregate must be one of 'hash', 'flat'"),
        ({"hashed_rounds": -1}, "hashed_rounds"),
        ({"hashed_rounds": LB.ROUNDS_MAX + 1}, "hashed_rounds"),
        ({"hashed_rounds": True}, "hashed_rounds"),
        ({"t_bin": -1e-3}, "t_bin"),
        ({"t_bin": float("nan")}, "t_bin"),
        ({"t_final": "1e-6"}, "t_final"),
        ({"t_final": True}, "t_final"),
        ({"bin_limit": -1}, "bin_limit"),
        ({"bin_limit": 1.5}, "bin_limit"),
        ({"commit": "relaxed"}, "commit must be one of 'bucket', 'iteration'"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"max_iterations": 2.0}, "max_iterations"),
    ],
)
def test_rejects_bad_parameters_naming_the_solver(kw, match):
    with pytest.raises(ValueError, match=match) as err:
        configured(LouvainGPU, **kw)
    assert "louvain_gpu" in str(err.value)
    with pytest.raises(ValueError, match=match):
        louvain_gpu_model(D.community_smoke("karate"), **kw)


def test_config_instantiates_with_the_papers_settings():
    s = instantiate(OmegaConf.load(ROOT / "conf" / "algorithm" / "louvain_gpu.yaml"))
    assert type(s) is LouvainGPU and s.name == "louvain_gpu"
    assert s.problem == "community" and s.device == "gpu" and s.kernel_families == ("louvain",)
    assert s.params == {
        "t_bin": 0.01,
        "t_final": 1e-6,
        "bin_limit": 100000,
        "commit": "bucket",
        "max_iterations": 1000,
    }
    assert s.variant() == (
        "bin_limit=100000,commit=bucket,max_iterations=1000,t_bin=0.01,t_final=1e-06"
    )
    assert configured(LouvainGPU, commit="iteration", t_bin=1e-3).variant().startswith(
        "bin_limit=100000,commit=iteration,"
    )


def test_life_cycle_errors_before_prepare():
    s = configured(LouvainGPU)
    with pytest.raises(RuntimeError, match="before prepare"):
        s.run()
    with pytest.raises(RuntimeError, match="before run"):
        s.result()
    assert s.counters() == {} and s.timings() == {} and s.memory_peak_bytes() is None


def test_estimate_and_skip():
    small, big = D.community_smoke("karate"), D.community_planted(2000, 10, 0.05, 0.001, seed=1)
    s = configured(LouvainGPU)
    assert 0 < s.estimate_bytes(small) < s.estimate_bytes(big)
    nnz = big.ind.shape[0]
    assert s.estimate_bytes(big) >= 44 * nnz + 192 * big.n
    skip, reason = s.skip(small)
    if skip:  # only for want of a device here
        assert "CUDA device" in reason, reason
    else:
        assert reason is None


# ---------------------------------------------------------------------------------------
# The host loop on a scripted backend


class _Scripted:
    """A backend whose iterations return scripted (moved, Q); one stage, then no moves."""

    def __init__(self, qs, n=10):
        self.qs, self.n, self.nnz = list(qs), n, 40
        self.log: list[str] = []
        self.bucket_counts = [n, 0, 0, 0, 0, 0, 0]
        self.merge_counts = [1, 0, 0]
        self.stage = 0

    def mark(self):
        return 0.0

    def setup(self):
        self.log.append("setup")
        return 1.0, 0.0  # 2m = 1 so Q = inside - spread

    def iterate(self, lower_only=False):
        self.log.append("iterate-lower" if lower_only else "iterate")
        if self.stage > 0 or not self.qs:
            return 0, 0.0, 0.0
        return 1, self.qs.pop(0), 0.0

    def accept(self):
        self.log.append("accept")

    def reject(self):
        self.log.append("reject")

    def renumber(self):
        self.log.append("renumber")
        return self.n - 1

    def labels(self):
        self.log.append("labels")
        return np.arange(self.n)

    def contract(self):
        self.log.append("contract")
        self.stage += 1
        self.n -= 1
        return np.zeros(self.n + 1, dtype=np.int64)


def test_bucket_commits_undo_an_iteration_that_lowers_q():
    be = _Scripted([0.3, 0.5, 0.4, 0.9])
    out = LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=50)
    assert be.log[:8] == ["setup", "iterate", "accept", "iterate", "accept", "iterate",
                          "reject", "renumber"]
    assert out.stage["level_q"][0] == 0.5 and out.stage["level_iterations"][0] == 3
    assert out.stage["level_moves"][0] == 2 and out.q_kept == 0.5


def test_relaxed_undoes_the_iteration_below_the_threshold():
    be = _Scripted([0.3, 0.3 + 1e-7, 0.9])
    out = LS.drive(be, 1e-2, 1e-6, 100, relaxed=True, max_iterations=50)
    assert be.log[:6] == ["setup", "iterate", "accept", "iterate", "reject", "renumber"]
    assert out.stage["level_q"][0] == 0.3
    # with bucket commits the same small gain is kept and ends the stage
    be = _Scripted([0.3, 0.3 + 1e-7, 0.9])
    out = LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=50)
    assert out.stage["level_q"][0] == 0.3 + 1e-7 and "reject" not in be.log


def test_max_iterations_and_thresholds_per_stage():
    be = _Scripted([0.1 * i for i in range(1, 9)], n=200)
    out = LS.drive(be, 1.0, 1e-6, 100, relaxed=False, max_iterations=3)
    st = out.stage
    assert st["level_iterations"][0] == 1  # t_bin = 1: the first gain is below it
    assert st["level_threshold"][:2] == [1.0, 1e-6]  # the method goes on under t_final
    assert st["level_vertices"][:2] == [200, 199]


# ---------------------------------------------------------------------------------------
# The method through the host model


def _random(seed: int, n: int, p: float, weights: str) -> CommunityGraph:
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    keep[rng.integers(iu.size)] = True
    m = int(keep.sum())
    w = {"unit": np.ones(m), "int": rng.integers(1, 5, m).astype(float)}.get(
        weights, rng.uniform(0.05, 3.0, m)
    )
    return CommunityGraph.from_edges(iu[keep], ju[keep], w, n + 2, name=f"r{seed}_{weights}")


GRAPHS = {
    **{f"random{s}": (lambda s=s: _random(s, 20 + 23 * s, (0.03, 0.1, 0.3)[s % 3],
                                          ("unit", "int", "real")[s % 3])) for s in range(9)},
    "planted": lambda: D.community_planted(400, 5, 0.3, 0.005, seed=3),
    "planted_uniform": lambda: D.community_planted(300, 6, 0.4, 0.002, seed=1, weights="uniform"),
    "rgg": lambda: D.community_rgg(9, seed=2),
    "road": lambda: D.community_road(9, seed=1),
    "kron": lambda: D.community_kron(8, seed=1),
    "every_bucket": LG._warm_graph,
    **{f"smoke_{k}": (lambda k=k: D.community_smoke(k)) for k in D.SMOKE},
}


def _stages_consistent(c):
    for r in range(len(c["level_q"]) - 1):
        assert c["level_two_m"][r + 1] == pytest.approx(c["level_two_m"][r], rel=1e-12)
        contracted = c["level_vertices"][r + 1] < c["level_vertices"][r]
        prev = c["level_q"][r] if contracted else c["level_q_start"][r]
        assert c["level_q_start"][r + 1] == pytest.approx(prev, abs=1e-9)
    kept = c["level_q"][: c["levels"]]
    assert kept == sorted(kept)


@pytest.mark.parametrize("commit", ["bucket", "iteration"])
@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_model_gives_certified_partitions(graph, commit):
    g = GRAPHS[graph]()
    part, c, t = louvain_gpu_model(g, commit=commit)
    v = P.verify(g, part)
    assert v.verified, v.reason
    assert abs(part.modularity - v.objective) <= 1e-9 * max(1.0, abs(v.objective))
    assert c["communities"] == part.n_communities and c["commit"] == commit
    assert c["iterations"] == sum(c["level_iterations"])
    assert {f"level{r}_optimize" for r in range(len(c["level_q"]))} <= set(t)
    _stages_consistent(c)


def test_every_bucket_is_reached_by_the_warm_graph():
    _, c, _ = louvain_gpu_model(LG._warm_graph())
    assert all(x > 0 for x in c["level_buckets"][0])
    assert all(x > 0 for x in c["level_merge_buckets"][0])


@pytest.mark.parametrize("seed", range(6))
def test_self_loops_count_in_q(seed):
    g = _random(50 + seed, 40 + 10 * seed, 0.1, ("unit", "real")[seed % 2])
    rng = np.random.default_rng(seed)
    loop = np.where(rng.random(g.n) < 0.4, rng.uniform(0.5, 4.0, g.n), 0.0)
    for commit in ("bucket", "iteration"):
        part, c, _ = louvain_gpu_model(g, commit=commit, loop=loop)
        q = modularity(g, part.community, loop)
        assert abs(part.modularity - q) <= 1e-9
        assert c["level_q_start"][0] == pytest.approx(modularity(g, np.arange(g.n), loop))
        _stages_consistent(c)
    with pytest.raises(ValueError, match="loop"):
        louvain_gpu_model(g, loop=-loop - 1)


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_relaxed_equals_the_sequential_relaxed_reference_on_integer_weights(graph):
    g = GRAPHS[graph]()
    if not np.all(g.weight == np.round(g.weight)):
        pytest.skip("real weights: sums in another order")
    ref = louvain(g, relaxed=True)
    part, c, _ = louvain_gpu_model(g, commit="iteration")
    assert np.array_equal(part.community, ref[0].community)
    assert c["level_q"] == ref[1]["level_q"]


def test_bucket_commits_let_later_buckets_see_earlier_moves():
    # a star: centre 5 (degree 5, bucket 2), leaves 0-4 (degree 1, bucket 1). Bucket 1 first:
    # a leaf may not join the singleton centre (higher id); then bucket 2: the centre joins
    # the lowest leaf, 0. One iteration, one move.
    g = CommunityGraph.from_edges([0, 1, 2, 3, 4], [5] * 5, np.ones(5), 6)
    _, c, _ = louvain_gpu_model(g, max_iterations=1, t_final=0.0)
    assert c["level_moves"][0] == 1 and c["level_buckets"][0][:2] == [5, 1]
    # the next iteration: every leaf joins community 0, no longer a singleton
    part, c, _ = louvain_gpu_model(g)
    assert part.community.tolist() == [0] * 6
    # relaxed: the same first iteration (the centre moves; the leaves are blocked)
    _, c, _ = louvain_gpu_model(g, commit="iteration", max_iterations=1, t_final=0.0)
    assert c["level_moves"][0] == 1


def test_a_bucket_moves_at_once_on_one_configuration():
    # path 0-1-2, all in bucket 1: 1 joins 0 and 2 joins 1's old community at the same time
    g = CommunityGraph.from_edges([0, 1], [1, 2], [1.0, 1.0], 3)
    part, c, _ = louvain_gpu_model(g, max_iterations=1)
    assert part.levels[0].tolist() == [0, 0, 1] and c["level_moves"][0] == 2


STRUCTURED = {
    "planted": [(400, 5, 0.3, 0.005, 3), (600, 8, 0.4, 0.002, 1), (300, 3, 0.5, 0.005, 2)],
}


@pytest.mark.parametrize("commit", ["bucket", "iteration"])
def test_q_close_to_the_sequential_louvain_on_structured_graphs(commit):
    graphs = [D.community_planted(*a[:4], seed=a[4]) for a in STRUCTURED["planted"]]
    graphs += [D.community_planted(500, 6, 0.3, 0.004, seed=4, weights="uniform")]
    graphs += [D.community_rgg(10, seed=1), D.community_delaunay(10, seed=2)]
    graphs += [D.community_road(10, seed=3), D.community_rgg(9, seed=5, weights="geometric")]
    ratios = []
    for g in graphs:
        q = P.verify(g, louvain_gpu_model(g, commit=commit)[0]).objective
        ratios.append(q / P.verify(g, louvain(g)[0]).objective)
    assert min(ratios) >= 0.95 and np.mean(ratios) >= 0.98, ratios


def test_thresholds_and_stages():
    g = D.community_planted(300, 5, 0.1, 0.01, seed=1)
    _, c, _ = louvain_gpu_model(g)
    assert set(c["level_threshold"]) == {1e-6}
    _, c, _ = louvain_gpu_model(g, t_bin=1.0, bin_limit=100)
    assert c["level_threshold"][0] == 1.0 and c["level_iterations"][0] == 1
    assert set(c["level_threshold"][1:]) == {1e-6}
    _, one, _ = louvain_gpu_model(g, t_final=1.0)
    assert one["level_iterations"] == [1] and one["levels"] == 1
    _, c, _ = louvain_gpu_model(g, max_iterations=2)
    assert max(c["level_iterations"]) <= 2


def test_edgeless_and_empty_graphs():
    g = CommunityGraph.from_edges([], [], [], 4, name="edgeless")
    part, c, _ = louvain_gpu_model(g)
    assert part.community.tolist() == [0, 1, 2, 3] and part.levels is None
    assert part.modularity == 0.0 and c["level_iterations"] == [0] and P.verify(g, part).verified
    part, c, _ = louvain_gpu_model(CommunityGraph.from_edges([], [], [], 0))
    assert part.community.size == 0 and c["levels"] == 0


# ---------------------------------------------------------------------------------------
# Options beyond the paper: steps, keys, checks, the loop


def test_effective_rounds():
    m, hub = LB.ROUND_MIN_ENTRIES, LB.ROUND_HUB_DEGREE
    assert hub == MOVE_BOUNDS[-1] + 1  # bucket 7's least degree
    assert LB.effective_rounds(0, hub, 8) == LB.effective_rounds(2 * m - 1, hub, 8) == 1
    assert LB.effective_rounds(3 * m, hub, 8) == 3 and LB.effective_rounds(100 * m, hub, 8) == 8
    assert LB.effective_rounds(100 * m, hub, 1) == 1
    assert LB.effective_rounds(100 * m, hub - 1, 8) == 1  # no hub: one range


def test_stage_ranges_hash_only_hub_free_large_stages():
    m, hub, big = LB.ROUND_MIN_ENTRIES, LB.ROUND_HUB_DEGREE, LB.HASH_MIN_VERTICES
    # a hub and enough entries: contiguous ranges, whatever hashed_rounds says
    assert LB.stage_ranges(big, 100 * m, hub, 8, 8) == (8, False)
    assert LB.stage_ranges(big, 3 * m, hub, 8, 8) == (3, False)
    # a hub, too few entries: one range (never hashed where there are hubs)
    assert LB.stage_ranges(big, m, hub, 8, 8) == (1, False)
    assert LB.stage_ranges(big, 100 * m, hub, 1, 8) == (1, False)
    # no hub: hashed ranges on stages of HASH_MIN_VERTICES or more
    assert LB.stage_ranges(big, 100 * m, hub - 1, 8, 8) == (8, True)
    assert LB.stage_ranges(big, 10, hub - 1, 1, 5) == (5, True)
    assert LB.stage_ranges(big - 1, 100 * m, hub - 1, 8, 8) == (1, False)
    # 0 and 1: off, the contiguous rule alone (bit for bit the behaviour before the option)
    for h in (0, 1):
        for args in [(big, 100 * m, hub - 1, 8), (big, 100 * m, hub, 8), (big, 3 * m, hub, 8)]:
            assert LB.stage_ranges(*args, h) == (LB.effective_rounds(*args[1:]), False)
    # the device reads the largest degree whenever a split is possible
    for n, nnz, r, h in [(big, 100 * m, 8, 8), (big, m, 1, 8), (10, 100 * m, 8, 0),
                         (big - 1, m, 8, 8), (big, 100 * m, 1, 1)]:
        split = any(LB.stage_ranges(n, nnz, d, r, h)[0] > 1 for d in (0, hub - 1, hub, 10**6))
        assert LB.needs_max_degree(n, nnz, r, h) or not split


def test_hashed_range_is_the_kernels_32_bit_arithmetic():
    v = np.array([0, 1, 2, 3, 1000, 2**20 - 1, 2**30, 2**31 - 2, 2**31 - 1], dtype=np.int64)
    for rounds in (2, 7, 8, LB.ROUNDS_MAX):
        want = [((int(x) * 2654435761) % 2**32) * rounds >> 32 for x in v]
        assert LB.hashed_range(v, rounds).tolist() == want
        assert (LB.round_of(1000, rounds, hashed=True) == LB.hashed_range(np.arange(1000),
                                                                          rounds)).all()


@pytest.mark.parametrize("rounds", [2, 8, 13])
def test_hashed_ranges_are_even_and_spread_over_ids(rounds):
    n = 1 << 16
    r = LB.round_of(n, rounds, hashed=True)
    assert r.min() == 0 and r.max() == rounds - 1
    per = np.bincount(r, minlength=rounds)
    assert np.abs(per - n / rounds).max() <= 0.01 * n / rounds  # Fibonacci hashing: even
    # every contiguous block of 64 ids (a planted group's slice, a mesh's neighbourhood)
    # meets every range: the ranges are not the contiguous ones
    blocks = r[: n - n % 64].reshape(-1, 64)
    assert all(len(set(row)) == rounds for row in blocks)
    counts = LB.move_counts(np.full(n, 5), rounds, hashed=True)
    assert counts[:, 2].tolist() == per.tolist() and counts.sum() == n


def test_hashed_off_keeps_the_contiguous_keys():
    deg = np.random.default_rng(3).choice([0, 1, 3, 20, 400], size=300)
    for rounds in (1, 3):
        assert (LB.move_keys(deg, rounds, False) == LB.move_keys(deg, rounds)).all()
        assert (LB.move_counts(deg, rounds, False) == LB.move_counts(deg, rounds)).all()
        assert (LB.round_of(300, rounds, False) == np.arange(300) * rounds // 300).all()
    # one hashed range is the paper's keys
    assert (LB.move_keys(deg, 1, True) == LB.move_keys(deg)).all()


@pytest.mark.parametrize(("rounds", "hashed"), [(1, False), (2, False), (3, False), (7, False),
                                                (3, True), (8, True)])
def test_keys_list_ranges_then_buckets_and_steps_cover_them(rounds, hashed):
    rng = np.random.default_rng(rounds)
    n = 500
    deg = rng.choice([0, 1, 3, 7, 20, 50, 100, 400, 900], size=n)
    order = np.argsort(LB.move_keys(deg, rounds, hashed), kind="stable")
    r = LB.round_of(n, rounds, hashed)
    assert r.min() == 0 and r.max() == rounds - 1
    if hashed:
        assert (np.diff(r) < 0).any()
    else:
        assert (np.diff(r) >= 0).all() and (r == np.arange(n) * rounds // n).all()
    b = LB.move_bucket(deg)
    pairs = (r * 8 + b)[order]
    assert (np.diff(pairs) >= 0).all()  # ranges in turn, buckets in turn within each
    # within a (range, bucket) below 7 the vertices by id
    for x in range(rounds):
        ids = order[(r[order] == x) & (b[order] < 7)]
        same = b[ids][1:] == b[ids][:-1]
        assert (np.diff(ids)[same] > 0).all()
    counts = LB.move_counts(deg, rounds, hashed)
    assert counts.shape == (rounds, 8) and counts.sum() == n
    for x in range(rounds):
        for y in range(8):
            assert counts[x, y] == ((r == x) & (b == y)).sum()
        hubs = order[(r[order] == x) & (b[order] == 7)]
        assert (np.diff(deg[hubs]) <= 0).all()  # bucket 7 by decreasing degree
    for chunks in (1, 3, 1000):
        steps = LB.move_steps(counts, chunks)
        covered = np.concatenate([order[s : s + c] for _, s, c in steps])
        assert sorted(covered) == sorted(np.flatnonzero(deg > 0))  # each non-isolated once
        for bucket, s0, c in steps:
            assert c > 0 and (b[order[s0 : s0 + c]] == bucket).all()
            assert len(set(r[order[s0 : s0 + c]])) == 1  # a step stays in its range
        sevens = [c for bucket, _, c in steps if bucket == 7]
        per_range = [counts[x, 7] for x in range(rounds) if counts[x, 7]]
        assert len(sevens) == sum(min(chunks, c) for c in per_range)
        assert max(sevens) - min(sevens) <= max(per_range) // max(1, min(chunks, max(per_range)))
    # one range, one chunk: the paper's seven buckets
    if rounds == 1 and not hashed:
        present = [x for x in range(1, 8) if counts[0, x]]
        assert [x for x, _, _ in LB.move_steps(counts, 1)] == present
        assert (LB.move_keys(deg, 1) == LB.move_keys(deg)).all()


def test_options_defaults_are_the_papers():
    o = Options()
    assert o.changed() == {} and not any(o.lower_only(i) for i in range(10))
    assert Options.checked(pickless=4).changed() == {"pickless": 4}
    assert Options.checked(hashed_rounds=8).changed() == {"hashed_rounds": 8}
    assert [i for i in range(12) if Options(pickless=4).lower_only(i)] == [2, 6, 10]
    assert [i for i in range(5) if Options(pickless=1).lower_only(i)] == [0, 1, 2, 3, 4]
    with pytest.raises(TypeError, match="unknown"):
        Options.checked(rounds=2, colour=True)


def test_fast_config_instantiates_with_its_options():
    cfg = OmegaConf.load(ROOT / "conf" / "algorithm" / "louvain_gpu_fast.yaml")
    s = instantiate(cfg)
    assert type(s) is LouvainGPUFast and s.name == "louvain_gpu_fast"
    assert isinstance(s, LouvainGPU) and s.kernel_families == ("louvain",)
    opts = {k: v for k, v in cfg.items() if k in Options.__dataclass_fields__}
    assert Options(**opts).changed() and set(Options(**opts).changed()) <= set(s.params)
    assert s.variant() != configured(LouvainGPU).variant()
    # every option is a parameter of the solver (the presets set them by name)
    assert set(Options.__dataclass_fields__) <= set(inspect.signature(LouvainGPU).parameters)
    # the faithful config leaves every option to the solver's default, the paper's value:
    # its variant and task ids are those of the runs made before the options
    base = OmegaConf.load(ROOT / "conf" / "algorithm" / "louvain_gpu.yaml")
    assert not set(Options.__dataclass_fields__) & set(base)
    paper = instantiate(base)
    assert paper.variant() == configured(LouvainGPU).variant()
    assert all(paper.params.get(k, v) == v for k, v in vars(Options()).items())


def test_pickless_iterations_ask_for_lower_ids_only():
    be = _Scripted([0.1 * i for i in range(1, 9)])
    LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=50, opts=Options(pickless=4))
    its = [x for x in be.log if x.startswith("iterate")]
    assert [i for i, x in enumerate(its[:8]) if x == "iterate-lower"] == [2, 6]


def test_threshold_drop_per_stage():
    class Shrinking(_Scripted):
        """Each stage: one iteration gaining 0.05 / 10^stage, then none."""

        def iterate(self, lower_only=False):
            self.log.append("iterate")
            self.qs_stage = getattr(self, "qs_stage", 0) + 1
            if self.qs_stage > 1:
                return 0, 0.0, 0.0
            return 1, 0.05 / 10.0**self.stage, 0.0

        def setup(self):
            self.qs_stage = 0
            return super().setup()

    be = Shrinking([], n=400)
    out = LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=5,
                   opts=Options(t_drop=10.0))
    th = out.stage["level_threshold"]
    # each stage's gain (5e-2, 5e-3, ...) passes its dropped threshold until the floor t_final
    assert th[:5] == pytest.approx([1e-2, 1e-3, 1e-4, 1e-5, 1e-6])
    assert min(th) == 1e-6 and len(th) == 7
    be = Shrinking([], n=400)
    out = LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=5)
    # the paper's: the second stage gains 5e-3 < t_bin, so t_final from then on
    assert out.stage["level_threshold"][:3] == [1e-2, 1e-2, 1e-6]


def test_aggregation_tolerance_keeps_the_stage_uncontracted_and_ends():
    be = _Scripted([0.3, 0.5], n=10)  # renumber: 9 communities of 10 vertices
    out = LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=50,
                   opts=Options(aggregation_tolerance=0.8))
    assert "labels" in be.log and "contract" not in be.log
    assert len(out.levels) == 1 and out.q_kept == 0.5
    be = _Scripted([0.3, 0.5], n=10)
    LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=50,
             opts=Options(aggregation_tolerance=0.95))
    assert "contract" in be.log and "labels" not in be.log


# ---------------------------------------------------------------------------------------
# Options beyond the paper through the model

#: Each option alone, and the recommended combination (conf/algorithm/louvain_gpu_fast.yaml).
FAST = {
    k: v for k, v in OmegaConf.to_container(
        OmegaConf.load(ROOT / "conf" / "algorithm" / "louvain_gpu_fast.yaml")
    ).items() if k != "_target_"
}
VARIANTS = {
    "rounds": {"rounds": 4},
    "hub_chunks": {"hub_chunks": 3},
    "rounds_chunks": {"rounds": 4, "hub_chunks": 3},
    "prune": {"prune": True},
    "pickless": {"pickless": 2},
    "t_drop": {"t_drop": 10.0, "bin_limit": 50},
    "aggregation_tolerance": {"aggregation_tolerance": 0.8},
    "flat": {"aggregate": "flat"},
    "hashed": {"hashed_rounds": 4},
    "rounds_hashed": {"rounds": 4, "hashed_rounds": 8, "hub_chunks": 3},
    "host_tail": {"host_tail": 1 << 40},
    "t_level": {"t_level": 2e-3},
    "iteration_graphs": {"iteration_graphs": True},
    "small_merge": {"small_merge": True},
    "fast": FAST,
    "fast_tail": {**FAST, "host_tail": 300},
}


@pytest.fixture
def small_ranges(monkeypatch):
    """Id ranges of 64 CSR entries, hubs of degree 8 and hashed ranges from 16 vertices, so
    that ``rounds`` and ``hashed_rounds`` act on the tests' small graphs."""
    monkeypatch.setattr(LB, "ROUND_MIN_ENTRIES", 64)
    monkeypatch.setattr(LB, "ROUND_HUB_DEGREE", 8)
    monkeypatch.setattr(LB, "HASH_MIN_VERTICES", 16)


def _q(g, part):
    v = P.verify(g, part)
    assert v.verified, v.reason
    assert abs(part.modularity - v.objective) <= 1e-9 * max(1.0, abs(v.objective))
    return v.objective


@pytest.mark.parametrize("commit", ["bucket", "iteration"])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_option_gives_certified_repeatable_partitions(small_ranges, variant, commit):
    for name in sorted(GRAPHS):
        g = GRAPHS[name]()
        kw = {**VARIANTS[variant], "commit": commit}
        part, c, _ = louvain_gpu_model(g, **kw)
        _q(g, part)
        _stages_consistent(c)
        again, c2, _ = louvain_gpu_model(g, **kw)
        assert np.array_equal(part.community, again.community), name
        assert c["level_iterations"] == c2["level_iterations"]


def test_flat_aggregation_is_the_same_graph_for_the_model():
    g = GRAPHS["every_bucket"]()
    a = louvain_gpu_model(g)
    b = louvain_gpu_model(g, aggregate="flat")
    assert np.array_equal(a[0].community, b[0].community) and a[1]["level_q"] == b[1]["level_q"]


def _structured():
    out = [D.community_planted(*a[:4], seed=a[4]) for a in STRUCTURED["planted"]]
    out += [D.community_planted(500, 6, 0.3, 0.004, seed=4, weights="uniform")]
    out += [D.community_rgg(10, seed=1), D.community_delaunay(10, seed=2)]
    out += [D.community_road(10, seed=3), D.community_kron(10, seed=2)]
    out += [D.community_kron(11, seed=3), D.community_grid(9)]
    return out


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_option_keeps_q_near_the_papers_or_the_sequential(small_ranges, variant):
    """Q at least 0.98 of the paper's method's or of the sequential ``louvain``'s on each
    structured graph (on graphs of 1,000 vertices the variants' Q differ from the paper's
    by up to 2% either way; the Kronecker test below and the benchmark hold the options to
    more where they matter). ``aggregation_tolerance`` is held to less on
    the grid, where it is known to fail: see the next test."""
    low = []
    for g in _structured():
        q = _q(g, louvain_gpu_model(g, **VARIANTS[variant])[0])
        q_paper = _q(g, louvain_gpu_model(g)[0])
        q_seq = _q(g, louvain(g)[0])
        if variant == "aggregation_tolerance" and g.name.startswith("grid"):
            continue
        if not (q >= 0.98 * q_paper or q >= 0.98 * q_seq):
            low.append((g.name, q, q_paper, q_seq))
    assert not low, low


@pytest.mark.parametrize("commit", ["bucket", "iteration"])
def test_host_tail_is_the_sequential_reference_on_the_contracted_graph(commit):
    """host_tail: after the first stage, a level of at most host_tail CSR entries is handed
    to the sequential reference; its labels are one more level, equal to the reference's
    on the level's graph rebuilt here from the first level's labels (``aggregate``, scipy),
    and the kept Q is the reference's, the verifier's within rounding."""
    tails = 0
    for name in sorted(GRAPHS):
        g = GRAPHS[name]()
        part, c, t = louvain_gpu_model(g, commit=commit, host_tail=1 << 40)
        _q(g, part)
        _stages_consistent(c)
        if not part.levels:
            continue
        first = part.levels[0]
        coarse, loops = aggregate(g, first)
        if coarse.ind.shape[0] == 0:
            continue
        ref, rc, _ = _louvain(coarse.n, coarse.ptr.astype(np.int64), coarse.ind.astype(np.int64),
                              coarse.weight, 1e-2, 1e-6, BIN_LIMIT, False, 1000, loop=loops)
        assert "host_tail" in t and "level1_host_tail" in t, name
        assert c["level_edges"][1] == coarse.ind.shape[0], name
        assert c["level_iterations"][1:] == rc["level_iterations"], name
        if ref.levels:
            assert len(part.levels) == 2, name
            if np.array_equal(g.weight, np.round(g.weight)):  # sums exact: the same labels
                assert np.array_equal(part.levels[1], ref.community), name
            assert part.modularity == pytest.approx(ref.modularity, abs=1e-12)
            tails += 1
        else:
            assert len(part.levels) == 1, name
    assert tails >= 5


def test_host_tail_above_every_level_changes_nothing():
    for name in ("planted", "every_bucket"):
        g = GRAPHS[name]()
        base, bc, _ = louvain_gpu_model(g)
        least = min(e for e in bc["level_edges"][1:] if e is not None) if len(bc["level_edges"]) > 1 else 0
        part, c, t = louvain_gpu_model(g, host_tail=max(1, least - 1))
        assert "host_tail" not in t
        assert np.array_equal(part.community, base.community) and c["level_q"] == bc["level_q"]


def test_t_level_ends_after_a_stage_that_gains_too_little():
    """t_level: an unbinned stage gaining less keeps its moves uncontracted and ends the
    method; one gaining more is contracted as the paper's; a binned stage is never cut."""
    for t_level, cut in ((0.6, True), (0.4, False)):
        be = _Scripted([0.3, 0.5], n=10)  # a stage gaining 0.5
        out = LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=50,
                       opts=Options(t_level=t_level))
        assert ("labels" in be.log) == cut and ("contract" in be.log) == (not cut)
        assert out.q_kept == 0.5 and len(out.levels) == 1
    be = _Scripted([0.3, 0.5], n=400)  # binned (400 > bin_limit 100): contracted
    LS.drive(be, 1e-2, 1e-6, 100, relaxed=False, max_iterations=50, opts=Options(t_level=0.6))
    assert "contract" in be.log and "labels" not in be.log


@pytest.mark.parametrize(("name", "t_level", "cuts"),
                         [("road", 1.5e-2, True), ("every_bucket", 2e-3, True),
                          ("planted", 2e-3, False)])
def test_t_level_keeps_the_papers_levels_up_to_the_cut(name, t_level, cuts):
    g = GRAPHS[name]()
    base, bc, _ = louvain_gpu_model(g)
    gains = [q - q0 for q, q0 in zip(bc["level_q"], bc["level_q_start"], strict=True)]
    part, c, _ = louvain_gpu_model(g, t_level=t_level)
    _q(g, part)
    r = len(c["level_q"])
    assert c["level_q"] == bc["level_q"][:r]  # the same stages, then the cut
    cut = [i for i, x in enumerate(gains) if x < t_level and bc["level_vertices"][i] <= 100_000
           and bc["level_moves"][i] > 0]
    assert bool(cut and cut[0] < len(bc["level_q"]) - 1) == cuts
    if cuts:  # ends there: its moves kept, uncontracted
        assert r == cut[0] + 1 and len(part.levels) == r
        assert part.modularity == pytest.approx(bc["level_q"][cut[0]], abs=1e-12)
        assert part.modularity >= base.modularity - sum(gains[r:])
    else:
        assert np.array_equal(part.community, base.community)


def test_host_tail_is_checked():
    assert Options.checked(host_tail=5).changed() == {"host_tail": 5}
    for bad in (-1, 1.5, "many", True):
        with pytest.raises((ValueError, TypeError), match="host_tail"):
            Options.checked(host_tail=bad)
    assert Options.checked(t_level=1e-3).changed() == {"t_level": 1e-3}
    for bad in (-1e-3, float("nan"), "small"):
        with pytest.raises((ValueError, TypeError), match="t_level"):
            Options.checked(t_level=bad)
    for name in ("iteration_graphs", "small_merge"):
        assert Options.checked(**{name: True}).changed() == {name: True}
        for bad in (1, "yes", None):
            with pytest.raises((ValueError, TypeError), match=name):
                Options.checked(**{name: bad})


def test_aggregation_tolerance_stops_too_early_on_a_grid():
    """Why the recommended options leave it off: on a regular grid the bucket-synchronous
    first stage merges under 20% of the vertices (the singleton rule holds most of them
    back), so a tolerance of 0.8 ends the method at Q near 0, where later stages would have
    reached the paper's Q."""
    g = D.community_grid(9)
    q_paper = _q(g, louvain_gpu_model(g)[0])
    part, c, _ = louvain_gpu_model(g, aggregation_tolerance=0.8)
    assert c["level_vertices"] == c["level_vertices"][:1] and _q(g, part) < 0.1 * q_paper


def test_hub_options_lift_q_on_a_kronecker_graph():
    """The issue's case at a size the model runs in seconds: 2^17 vertices, edge factor 16
    (the paper's method leaves the hubs' followers behind; the sequential method does not)."""
    g = D.community_kron(17)
    q_paper = _q(g, louvain_gpu_model(g)[0])
    q_fast = _q(g, louvain_gpu_model(g, **FAST)[0])
    q_seq = _q(g, louvain(g)[0])
    assert q_fast >= 0.98 * q_seq and q_fast >= q_paper + 0.004, (q_fast, q_paper, q_seq)


def test_hashed_ranges_lift_a_planted_partition_at_the_papers_t_bin():
    """The plateau of issue #33 at 2^17 vertices (128 groups of 1,024, degree about 20, no
    hub): at t_bin 1e-2 the bucket-synchronous first stage stops after 2 iterations in tens
    of thousands of fragments; in 8 hashed ranges it runs on to the planted groups."""
    g = D.community_planted(1 << 17, 128, 0.02, 1e-6, seed=1)
    base = {k: v for k, v in FAST.items() if k != "hashed_rounds"}
    part, c, _ = louvain_gpu_model(g, **{**base, "t_bin": 1e-2, "hashed_rounds": 0})
    hashed, ch, _ = louvain_gpu_model(g, **{**base, "t_bin": 1e-2, "hashed_rounds": 8})
    assert c["level_iterations"][0] == 2 and c["level_vertices"][1] > 10_000
    assert ch["level_iterations"][0] > 2 and ch["level_vertices"][1] < 1_000
    assert _q(g, hashed) > _q(g, part) + 1e-3
    assert truth_nmi(g, hashed.community) == pytest.approx(1.0)


def test_prune_evaluates_flagged_vertices_and_flags_the_movers_neighbours():
    # path 0-1-2-3-4, all singletons; only 1 and 3 flagged
    g = CommunityGraph.from_edges([0, 1, 2, 3], [1, 2, 3, 4], np.ones(4), 5)
    ptr, ind = g.ptr.astype(np.int64), g.ind.astype(np.int64)
    k = np.diff(ptr).astype(float)
    comm = np.arange(5)
    a, size = k.copy(), np.ones(5, dtype=np.int64)
    acc, touched, newc = np.zeros(5), np.empty(5, dtype=np.int64), comm.copy()
    flag = np.array([0, 1, 0, 1, 0], dtype=np.uint8)
    verts = np.arange(5)
    LM._hm_moves(verts, ptr, ind, g.weight, comm, a, size, k, 4.0, acc, touched, newc, flag,
                 True, False)
    assert flag.tolist() == [0] * 5  # the evaluated ones unflagged, the others untouched
    # 1 joins 0 (the lower singleton, its best); 3's best is 4, a higher singleton: it stays
    # (the singleton rule); 0, 2, 4 were not evaluated and stay
    assert newc.tolist() == [0, 0, 2, 3, 4]
    moved = LM._hm_commit(verts, newc, k, comm, a, size, ptr, ind, flag, True)
    assert moved == 1 and flag.tolist() == [1, 0, 1, 0, 0]  # 1's neighbours
    # pick-less: a move to a higher id is dropped
    comm2, newc2 = np.arange(5), np.arange(5)
    comm2[0] = 4  # vertex 0 in community 4: its best (community 1) is lower, it may move
    a2 = np.bincount(comm2, weights=k, minlength=5)
    size2 = np.bincount(comm2, minlength=5)
    LM._hm_moves(np.array([0]), ptr, ind, g.weight, comm2, a2, size2, k, 4.0, acc, touched,
                 newc2, flag, False, True)
    assert newc2[0] == 1
