"""``louvain_gpu`` on the device: hundreds of runs, every answer certified.

The graphs (built once per module): random graphs of every density with unit, integer and
real weights and isolated vertices, planted partitions, the MCM generators' graphs (rgg,
delaunay, road, grid, kron), the smoke graphs, stars with more than 319 and 479 leaves (the
global hash tables of move bucket 7 and aggregation bucket 3), a graph with degrees in all
seven buckets, and a dense graph with more bucket-7 vertices than blocks. For each graph and
both commit modes:

- the partition is certified by :meth:`Community.verify` and the reported Q equals the
  recomputed one within 1e-9 (relative to max(1, |Q|));
- on integer weights every sum is exact, so the run equals the host model
  (:func:`louvain_gpu_model`) partition for partition, level for level, in Q, iterations,
  moves and bucket counts, and ``commit="iteration"`` equals the sequential reference's
  relaxed variant; runs repeat exactly;
- each stage keeps 2m, and a contracted stage's Q is the next stage's singleton Q;
- Q against the sequential ``louvain``: at least 0.98 of it on average over the graphs with
  community structure (paper III, Sec. 5: within 2%), at least 0.95 on each.
Self-loops (which aggregation makes) are given as ``loop`` on random graphs and must give
the model's answer and the community module's Q with loops.

The options beyond the paper (``louvain_stages.Options``), each alone and in the recommended
combination (``conf/algorithm/louvain_gpu_fast.yaml``), keep every one of those properties:
on integer weights the device makes the host model's moves with each of them, in both commit
modes (the id ranges shrunk to 64 CSR entries, hubs to degree 8 and hashed ranges to stages
of 16 vertices, so that ``rounds`` and ``hashed_rounds`` act on these small graphs; and once
at their real sizes on a Kronecker graph of 2^16 vertices and a planted partition of 2^17);
``aggregate="flat"`` builds the same contracted graphs as Alg. 3 (same later moves, same
edge counts); every partition is certified, real weights included, and runs repeat.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from matchbench.core.params import configured
from matchbench.families.community import datasets as D
from matchbench.families.community import louvain_buckets as LB
from matchbench.families.community import louvain_gpu as LG
from matchbench.families.community.louvain import louvain
from matchbench.families.community.louvain_gpu import LouvainGPU, LouvainGPUFast, louvain_gpu
from matchbench.families.community.louvain_model import louvain_gpu_model
from matchbench.families.community.louvain_stages import Options
from matchbench.families.community.problem import Community, CommunityGraph, modularity

pytestmark = pytest.mark.gpu

P = Community()
MODES = ("bucket", "iteration")


def _random(seed: int, n: int, p: float, weights: str, isolated: int = 3) -> CommunityGraph:
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    keep[rng.integers(iu.size)] = True
    m = int(keep.sum())
    if weights == "unit":
        w = np.ones(m)
    elif weights == "int":
        w = rng.integers(1, 5, m).astype(np.float64)
    else:
        w = rng.uniform(0.05, 3.0, m)
    return CommunityGraph.from_edges(
        iu[keep], ju[keep], w, n + isolated, name=f"random_s{seed}_n{n}_p{p}_{weights}"
    )


def _star(leaves: int, extra_cliques: int = 0) -> CommunityGraph:
    u = [np.arange(1, leaves + 1)]
    v = [np.zeros(leaves, dtype=np.int64)]
    base = leaves + 1
    for _ in range(extra_cliques):
        i, j = np.triu_indices(8, 1)
        u += [i + base, np.array([base])]
        v += [j + base, np.array([1])]
        base += 8
    uu, vv = np.concatenate(u), np.concatenate(v)
    return CommunityGraph.from_edges(uu, vv, np.ones(uu.size), base, name=f"star{leaves}")


def _every_bucket() -> CommunityGraph:
    return CommunityGraph.from_graph(LG._warm_graph(), name="every_bucket")


def _dense(n: int = 1400, p: float = 0.3, seed: int = 5) -> CommunityGraph:
    """About n vertices of degree > 319: more bucket-7 vertices than blocks, so blocks reuse
    their global table for several vertices."""
    return CommunityGraph.from_graph(_random(seed, n, p, "unit", isolated=0), name="dense")


def _build() -> list[tuple[str, CommunityGraph, bool]]:
    """``(kind, graph, structured)``: structured graphs are held to the quality bounds."""
    out: list[tuple[str, CommunityGraph, bool]] = []
    weights = ("unit", "int", "real")
    for s in range(45):
        n = 4 + (s * 37) % 400
        p = (0.01, 0.03, 0.08, 0.2, 0.5)[s % 5]
        out.append(("random", _random(s, n, p, weights[s % 3]), False))
    for s in range(24):
        n, k = 120 + 40 * s, 2 + s % 8
        p_in, p_out = (0.3, 0.4, 0.5)[s % 3], (0.002, 0.005)[s % 2]
        w = ("unit", "uniform")[(s // 2) % 2]
        out.append(("planted", D.community_planted(n, k, p_in, p_out, seed=s, weights=w), True))
    for s in range(3):
        out.append(("rgg", D.community_rgg(9 + s, seed=s), True))
        out.append(("delaunay", D.community_delaunay(9 + s, seed=s), True))
        out.append(("road", D.community_road(9 + s, seed=s), True))
        out.append(("rgg_geometric", D.community_rgg(9 + s, seed=s, weights="geometric"), True))
        out.append(("grid", D.community_grid(8 + s), False))
        out.append(("kron", D.community_kron(8 + s, seed=s), False))
        out.append(("kron_uniform", D.community_kron(8 + s, seed=s, weights="uniform"), False))
    for name in D.SMOKE:
        out.append(("smoke", D.community_smoke(name), False))
    out += [
        ("star", _star(400), False),
        ("star", _star(700, extra_cliques=5), False),
        ("every_bucket", _every_bucket(), False),
        ("dense", _dense(), False),
        ("pair", CommunityGraph.from_edges([0], [1], [2.0], 2, name="pair"), False),
        ("path", CommunityGraph.from_edges([0, 1, 2], [1, 2, 3], np.ones(3), 4, name="path"),
         False),
    ]
    return out


@pytest.fixture(scope="module")
def graphs():
    return _build()


def _integer(g: CommunityGraph) -> bool:
    return bool(np.all(g.weight == np.round(g.weight)))


def _check_answer(g, part, counters, loop=None):
    v = P.verify(g, part) if loop is None else None
    if loop is None:
        assert v.verified, v.reason
        q = v.objective
    else:
        q = modularity(g, part.community, loop)
    assert abs(part.modularity - q) <= 1e-9 * max(1.0, abs(q)), (part.modularity, q)
    assert counters["communities"] == part.n_communities
    assert counters["levels"] == (0 if part.levels is None else len(part.levels))
    assert counters["iterations"] == sum(counters["level_iterations"])
    return q


def _check_stages(c):
    """2m kept by every contraction; a contracted stage's Q is the next stage's start."""
    two_m = c["level_two_m"]
    for r in range(len(two_m) - 1):
        assert abs(two_m[r + 1] - two_m[r]) <= 1e-12 * max(1.0, two_m[r])
        contracted = c["level_vertices"][r + 1] < c["level_vertices"][r]
        prev = c["level_q"][r] if contracted else c["level_q_start"][r]
        assert abs(c["level_q_start"][r + 1] - prev) <= 1e-9, (r, c["level_q_start"], c["level_q"])
        assert c["level_edges"][r + 1] <= c["level_edges"][r]
    kept = c["level_q"][: c["levels"]]
    assert all(b >= a - 1e-12 for a, b in zip(kept, kept[1:], strict=False))
    for r, buckets in enumerate(c["level_buckets"]):
        assert sum(buckets) <= c["level_vertices"][r]


_SAME = (
    "levels", "iterations", "moves", "communities", "level_vertices", "level_edges",
    "level_iterations", "level_moves", "level_q", "level_q_start", "level_two_m",
    "level_buckets", "level_merge_buckets",
)


def _same_as_model(part, c, ref, rc):
    assert np.array_equal(part.community, ref.community)
    assert (part.levels is None) == (ref.levels is None)
    for a, b in zip(part.levels or [], ref.levels or [], strict=True):
        assert np.array_equal(a, b)
    assert part.modularity == ref.modularity
    for key in _SAME:
        assert c[key] == rc[key], (key, c[key], rc[key])


@pytest.mark.parametrize("commit", MODES)
def test_every_graph_gives_a_certified_partition(graphs, commit):
    failures = []
    for kind, g, _ in graphs:
        part, c, t = louvain_gpu(g, commit=commit)
        try:
            _check_answer(g, part, c)
            _check_stages(c)
            assert t["solve"] > 0 and "level0_optimize" in t
            assert c["host_syncs"] >= 1 + c["iterations"] and c["kernel_launches"] > 0
        except AssertionError as exc:
            failures.append(f"{kind} {g.name}: {exc}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("commit", MODES)
def test_integer_weights_give_the_host_models_answer(graphs, commit):
    n = 0
    for _kind, g, _ in graphs:
        if not _integer(g):
            continue
        part, c, _ = louvain_gpu(g, commit=commit)
        ref, rc, _ = louvain_gpu_model(g, commit=commit)
        _same_as_model(part, c, ref, rc)
        n += 1
    assert n >= 60


def test_relaxed_equals_the_sequential_relaxed_reference(graphs):
    for _kind, g, _ in graphs:
        if _integer(g):
            part = louvain_gpu(g, commit="iteration")[0]
            assert np.array_equal(part.community, louvain(g, relaxed=True)[0].community), g.name


@pytest.mark.parametrize("commit", MODES)
def test_q_against_the_sequential_louvain(graphs, commit):
    ratios = []
    for _kind, g, structured in graphs:
        if not structured:
            continue
        q = P.verify(g, louvain_gpu(g, commit=commit)[0]).objective
        q_ref = P.verify(g, louvain(g)[0]).objective
        ratios.append(q / q_ref)
        assert q >= 0.95 * q_ref, (g.name, q, q_ref)
    assert len(ratios) >= 30 and np.mean(ratios) >= 0.98, np.mean(ratios)


def test_buckets_and_global_tables_are_reached(graphs):
    by_name = {g.name: g for _, g, _ in graphs}
    _, c, _ = louvain_gpu(by_name["every_bucket"])
    assert all(x > 0 for x in c["level_buckets"][0]), c["level_buckets"][0]
    assert c["level_merge_buckets"][0][2] > 0  # the star's community: comDegree > 479
    assert any(m and m[1] > 0 for m in c["level_merge_buckets"])
    _, c, _ = louvain_gpu(by_name["dense"])
    assert c["level_buckets"][0][6] > 4 * LG._sm_count()  # more bucket-7 vertices than blocks


@pytest.mark.parametrize("blocks", [1, 3])
def test_few_global_blocks_give_the_same_answer(graphs, monkeypatch, blocks):
    monkeypatch.setattr(LG, "global_blocks", lambda *a: blocks)
    for name in ("every_bucket", "dense", "star700"):
        g = next(g for _, g, _ in graphs if g.name == name)
        for commit in MODES:
            part, c, _ = louvain_gpu(g, commit=commit)
            _same_as_model(part, c, *louvain_gpu_model(g, commit=commit)[:2])


@pytest.mark.parametrize("seed", range(12))
def test_self_loops(seed):
    g = _random(100 + seed, 30 + 20 * seed, (0.05, 0.1, 0.3)[seed % 3], ("unit", "int")[seed % 2])
    rng = np.random.default_rng(seed)
    loop = np.where(rng.random(g.n) < 0.3, rng.integers(1, 6, g.n), 0).astype(np.float64)
    for commit in MODES:
        part, c, _ = louvain_gpu(g, commit=commit, loop=loop)
        _check_answer(g, part, c, loop=loop)
        _check_stages(c)
        ref, rc, _ = louvain_gpu_model(g, commit=commit, loop=loop)
        _same_as_model(part, c, ref, rc)
    # real-valued loops: certified, Q with loops
    loop = loop * rng.uniform(0.5, 1.5, g.n)
    part, c, _ = louvain_gpu(g, loop=loop)
    _check_answer(g, part, c, loop=loop)


def test_runs_repeat_exactly_on_integer_weights(graphs):
    for _kind, g, _ in graphs[:60]:
        if _integer(g):
            a, ca, _ = louvain_gpu(g)
            b, cb, _ = louvain_gpu(g)
            _same_as_model(a, ca, b, cb)


def test_thresholds_and_stages_follow_the_reference():
    g = D.community_planted(300, 5, 0.1, 0.01, seed=1)
    _, c, _ = louvain_gpu(g, t_bin=1.0, bin_limit=100)
    assert c["level_threshold"][0] == 1.0 and c["level_iterations"][0] == 1
    assert set(c["level_threshold"][1:]) == {1e-6}
    _, one, _ = louvain_gpu(g, t_final=1.0)
    assert one["level_iterations"] == [1] and one["levels"] == 1
    _, c, _ = louvain_gpu(g, max_iterations=1)
    assert set(c["level_iterations"]) == {1}


def test_edgeless_and_empty_graphs():
    g = CommunityGraph.from_edges([], [], [], 5, name="edgeless")
    part, c, _ = louvain_gpu(g)
    assert part.community.tolist() == [0, 1, 2, 3, 4] and part.modularity == 0.0
    assert P.verify(g, part).verified and c["levels"] == 0


def test_solver_life_cycle(graphs):
    g = next(g for _, g, _ in graphs if g.name.startswith("planted"))
    s = configured(LouvainGPU, commit="bucket")
    assert s.skip(g) == (False, None)
    answers = []
    for _ in range(3):
        s.prepare(g)
        s.run()
        part = s.result()
        assert P.verify(g, part).verified
        answers.append(part.community)
        t, c = s.timings(), s.counters()
        assert {"solve", "transfer", "upload", "level0_optimize"} <= set(t)
        assert t["solve"] >= t["level0_optimize"] > 0
        assert c["first_phase_edges_per_s"] > 0 and c["kernel_launches"] > 0
        assert 0 < s.memory_peak_bytes() <= s.estimate_bytes(g) + g.nbytes
    if _integer(g):
        assert all(np.array_equal(answers[0], a) for a in answers)
    ref = louvain_gpu(g)[0]
    assert np.array_equal(ref.community, answers[0]) or not _integer(g)


# ---------------------------------------------------------------------------------------
# Options beyond the paper

ROOT = Path(__file__).resolve().parents[2]
_FAST_CFG = OmegaConf.to_container(
    OmegaConf.load(ROOT / "conf" / "algorithm" / "louvain_gpu_fast.yaml")
)
#: The recommended options (the preset's, without its paper parameters).
FAST = {k: v for k, v in _FAST_CFG.items() if k in Options.__dataclass_fields__}
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
    "hashed_prune": {"hashed_rounds": 5, "prune": True},
    "smem_hubs": {"smem_hubs": True, "hub_chunks": 3},
    "vertex_tables": {"vertex_tables": True, "hub_chunks": 3},
    "vertex_tables_smem": {"vertex_tables": True, "smem_hubs": True},
    "host_tail": {"host_tail": 1 << 40},
    "t_level": {"t_level": 2e-3},
    "iteration_graphs": {"iteration_graphs": True},
    "small_merge": {"small_merge": True},
    "fast": FAST,
    "fast_tail": {**FAST, "host_tail": 300},
    "fast_graphs": {**FAST, "iteration_graphs": True, "pickless": 2},
}
#: The variants whose relaxed-commit path differs from the paper's (the rest only reorder
#: launches when every move of an iteration is computed on its starting configuration),
#: and the graphs' (relaxed commits swap the arrays a captured iteration holds).
RELAXED = ("prune", "pickless", "rounds_chunks", "hashed_prune", "host_tail", "fast",
           "iteration_graphs", "fast_graphs")
CASES = [(v, "bucket") for v in sorted(VARIANTS)] + [(v, "iteration") for v in RELAXED]


@pytest.fixture
def small_ranges(monkeypatch):
    """Id ranges of 64 CSR entries, hubs of degree 8 and hashed ranges from 16 vertices
    (read by both backends at each stage), so that ``rounds`` and ``hashed_rounds`` act on
    the small graphs."""
    monkeypatch.setattr(LB, "ROUND_MIN_ENTRIES", 64)
    monkeypatch.setattr(LB, "ROUND_HUB_DEGREE", 8)
    monkeypatch.setattr(LB, "HASH_MIN_VERTICES", 16)


@pytest.mark.parametrize(("variant", "commit"), CASES)
def test_every_option_gives_the_host_models_answer(graphs, small_ranges, variant, commit):
    kw = VARIANTS[variant]
    n = 0
    failures = []
    for _kind, g, _ in graphs:
        if not _integer(g):
            continue
        part, c, _ = louvain_gpu(g, commit=commit, **kw)
        ref, rc, _ = louvain_gpu_model(g, commit=commit, **kw)
        try:
            _same_as_model(part, c, ref, rc)
        except AssertionError as exc:
            failures.append(f"{g.name}: {exc}")
        n += 1
    assert n >= 60
    assert not failures, "\n".join(failures[:10])


@pytest.mark.parametrize("variant", ["rounds_chunks", "prune", "flat", "rounds_hashed", "fast"])
def test_every_option_gives_certified_partitions(graphs, small_ranges, variant):
    failures = []
    for kind, g, _ in graphs:
        part, c, _ = louvain_gpu(g, **VARIANTS[variant])
        try:
            _check_answer(g, part, c)
            _check_stages(c)
        except AssertionError as exc:
            failures.append(f"{kind} {g.name}: {exc}")
    assert not failures, "\n".join(failures)


def test_options_reach_their_paths(graphs, small_ranges):
    by_name = {g.name: g for _, g, _ in graphs}
    g = by_name["dense"]
    _, c, _ = louvain_gpu(g, **FAST)
    _, paper, _ = louvain_gpu(g)
    assert c["kernel_launches"] > paper["kernel_launches"]  # ranges and hub chunks
    # the flat aggregation on communities of bucket 3
    _, c, _ = louvain_gpu(by_name["star700"], aggregate="flat")
    assert c["level_merge_buckets"][0][2] > 0


@pytest.mark.parametrize("commit", ["bucket", "iteration"])
def test_iteration_graphs_replay_the_eager_launches(graphs, small_ranges, commit):
    """iteration_graphs: every iteration is one graph launch, captured once a stage and key
    (the relaxed commit swaps the arrays a graph holds: two keys); the same answer, stages
    and Q as launching each kernel from Python on every integer-weighted graph (on real
    weights the float atomics' order differs between any two runs), with pick-less
    iterations and both commits; fewer launch calls wherever a stage outlives its
    captures (pick-less and plain iterations, times the relaxed commit's two array sets)."""
    failures, fewer = [], 0
    captures = 2 if commit == "bucket" else 4
    for kind, g, _ in graphs:
        kw = {**FAST, "pickless": 2, "commit": commit}
        eager, ce, _ = louvain_gpu(g, **{**kw, "iteration_graphs": False})
        part, c, _ = louvain_gpu(g, **{**kw, "iteration_graphs": True})
        try:
            _check_answer(g, part, c)
            assert ce["graph_launches"] == 0
            # host_tail is off: every iteration of every stage is a graph launch
            assert c["graph_launches"] == c["iterations"]
            if _integer(g):
                assert np.array_equal(part.community, eager.community)
                assert part.modularity == eager.modularity
                assert c["level_iterations"] == ce["level_iterations"]
                assert c["level_q"] == ce["level_q"]
                assert c["host_syncs"] == ce["host_syncs"]
                assert c["kernel_launches"] <= ce["kernel_launches"]
                if max(c["level_iterations"], default=0) > captures:
                    assert c["kernel_launches"] < ce["kernel_launches"]
                    fewer += 1
        except AssertionError as exc:
            failures.append(f"{kind} {g.name}: {exc}")
    assert not failures, "\n".join(failures[:10])
    assert fewer >= 5


def test_iteration_graphs_at_the_real_range_sizes():
    """Kronecker 2^16 (ranges, hub chunks, per-vertex tables: many launches an iteration)
    with the preset and graphs: the model's answer."""
    g = D.community_kron(16, seed=2)
    kw = {**FAST, "iteration_graphs": True}
    part, c, _ = louvain_gpu(g, **kw)
    ref, rc, _ = louvain_gpu_model(g, **kw)
    _same_as_model(part, c, ref, rc)
    _check_answer(g, part, c)
    assert c["graph_launches"] == c["iterations"]


@pytest.mark.parametrize("make", [lambda: D.community_road(15, seed=3),
                                  lambda: D.community_delaunay(15, seed=3),
                                  lambda: D.community_kron(14, seed=3)])
def test_small_merge_contracts_the_same_graph(make):
    """small_merge on graphs whose first levels have many communities of comDegree <= 31
    (groups of 8 lanes) beside larger ones of bucket 1 (their warps merge four in turn):
    the same levels as a warp per community, and the model's."""
    g = make()
    off, co, _ = louvain_gpu(g, **{**FAST, "small_merge": False})
    on, c, _ = louvain_gpu(g, **{**FAST, "small_merge": True})
    _same_as_model(on, c, off, co)
    assert c["level_merge_buckets"][0][0] > 1000  # bucket 1 at the first level
    ref, rc, _ = louvain_gpu_model(g, **{**FAST, "small_merge": True})
    _same_as_model(on, c, ref, rc)
    _check_answer(g, on, c)


def test_fast_matches_the_model_at_the_real_range_sizes():
    """2^16 vertices, 1.8M CSR entries: 6 ranges, hubs in chunks, the flat aggregation."""
    g = D.community_kron(16, seed=2)
    assert g.ind.shape[0] >= 6 * LB.ROUND_MIN_ENTRIES
    part, c, _ = louvain_gpu(g, **FAST)
    ref, rc, _ = louvain_gpu_model(g, **FAST)
    _same_as_model(part, c, ref, rc)
    _check_answer(g, part, c)


def test_hubs_hash_in_shared_or_global_memory_alike():
    """smem_hubs: bucket-7 tables of up to LV_TS7S slots in shared memory, larger ones in
    global memory, in one launch; the same moves as all in global memory, and the model's
    (a star of 3,000 leaves: a table of 4,507 slots, global; Kronecker 2^16: hubs of both)."""
    stars = _star(3000, extra_cliques=5)
    kron = D.community_kron(16, seed=2)
    degrees = np.diff(kron.ptr)
    assert ((degrees > 319) & (degrees < 2000)).any() and (degrees > 2400).any()
    for g in (stars, kron):
        for kw in ({}, {**FAST}):
            part, c, _ = louvain_gpu(g, **{**kw, "smem_hubs": True})
            glob, gc, _ = louvain_gpu(g, **{**kw, "smem_hubs": False})
            ref, rc, _ = louvain_gpu_model(g, **{**kw, "smem_hubs": True})
            _same_as_model(part, c, glob, gc)
            _same_as_model(part, c, ref, rc)
            _check_answer(g, part, c)


def test_vertex_tables_give_the_block_tables_moves():
    """vertex_tables: a global table per bucket-7 vertex, a block each; the same moves as the
    blocks' shared regions and the model's, at the real budget (one launch per step), with
    and without smem_hubs (a star of 3,000 leaves, Kronecker 2^16)."""
    stars = _star(3000, extra_cliques=5)
    kron = D.community_kron(16, seed=2)
    for g in (stars, kron):
        for kw in ({}, {**FAST}):
            for smem in (False, True):
                base = {**kw, "smem_hubs": smem}
                part, c, _ = louvain_gpu(g, **{**base, "vertex_tables": True})
                blocks, bc, _ = louvain_gpu(g, **{**base, "vertex_tables": False})
                ref, rc, _ = louvain_gpu_model(g, **{**base, "vertex_tables": True})
                _same_as_model(part, c, blocks, bc)
                _same_as_model(part, c, ref, rc)
                _check_answer(g, part, c)


def test_vertex_tables_in_one_slot_launches(graphs, monkeypatch):
    """A budget of one slot: each vertex with a global table is a launch of its own, and
    the step's launches still make the model's moves."""
    kron = D.community_kron(14, seed=3)
    _, real, _ = louvain_gpu(kron, vertex_tables=True, hub_chunks=2)  # the real budget
    monkeypatch.setattr(LB, "table_budget", lambda nnz: LB.SLOT_BYTES)
    many = []
    for g in [kron] + [g for _, g, _ in graphs if g.name in ("every_bucket", "dense", "star700")]:
        for commit in MODES:
            part, c, _ = louvain_gpu(g, commit=commit, vertex_tables=True, hub_chunks=2)
            ref, rc, _ = louvain_gpu_model(g, commit=commit, vertex_tables=True, hub_chunks=2)
            _same_as_model(part, c, ref, rc)
            _check_answer(g, part, c)
            many.append(c["kernel_launches"])
    # more launches than with the real budget (a launch per hub)
    assert many[0] > real["kernel_launches"]


def test_hashed_ranges_match_the_model_at_their_real_size():
    """A planted partition of 2^17 vertices (128 groups of 1,024, degree about 20, no hub):
    hashed ranges from the first stage on, at the paper's t_bin, with the preset's options
    and alone."""
    g = D.community_planted(1 << 17, 128, 0.02, 1e-6, seed=1)
    assert g.n >= LB.HASH_MIN_VERTICES and np.diff(g.ptr).max() < LB.ROUND_HUB_DEGREE
    for kw in ({**FAST, "hashed_rounds": 8}, {"hashed_rounds": 8}):
        part, c, _ = louvain_gpu(g, t_bin=1e-2, **kw)
        ref, rc, _ = louvain_gpu_model(g, t_bin=1e-2, **kw)
        _same_as_model(part, c, ref, rc)
        _check_answer(g, part, c)
        _, paper, _ = louvain_gpu(g, t_bin=1e-2)
        assert c["kernel_launches"] > paper["kernel_launches"]  # the ranges' steps


def test_options_runs_repeat_exactly(graphs, small_ranges):
    for _kind, g, _ in graphs[:60]:
        if _integer(g):
            a, ca, _ = louvain_gpu(g, **FAST)
            b, cb, _ = louvain_gpu(g, **FAST)
            _same_as_model(a, ca, b, cb)


def test_fast_solver_life_cycle(graphs):
    g = next(g for _, g, _ in graphs if g.name.startswith("planted"))
    s = configured(LouvainGPUFast)
    assert s.name == "louvain_gpu_fast" and s.skip(g) == (False, None)
    answers = []
    for _ in range(2):
        s.prepare(g)
        s.run()
        part = s.result()
        assert P.verify(g, part).verified
        answers.append(part.community)
        assert 0 < s.memory_peak_bytes() <= s.estimate_bytes(g) + g.nbytes
    if _integer(g):
        assert np.array_equal(answers[0], answers[1])
        assert np.array_equal(louvain_gpu(g, **FAST)[0].community, answers[0])
