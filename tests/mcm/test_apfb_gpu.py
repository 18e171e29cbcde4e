"""APFB/APsB on a GPU: every variant on hundreds of random graphs, every answer certified.

The instance set: 200 generated graphs (Erdos-Renyi square and rectangular with isolated
vertices, Kronecker, Delaunay, random geometric, road-like, 2D and 3D grids, band
matrices, a few degenerate shapes), each also RCP-permuted, so 400 instances; every one of the eight variants
{APFB, APsB} x {GPUBFS, GPUBFS-WR} x {CT, MT} runs every one of them under every sync
mode and both frontier modes (the paper's scan, our queue), from the cheap matching, and
the König certificate checks each answer. Graphs with hub columns (degrees past the
queue kernels' warp and block thresholds) get a stress test of their own.
"""

from __future__ import annotations

import numpy as np
import pytest

from matchbench.core.params import configured
from matchbench.families.mcm.apfb import APFB, FRONTIERS, SYNC_MODES, APsB
from matchbench.families.mcm.cheap import cheap_matching
from matchbench.families.mcm.problem import MCM
from matchbench.graphs import generators
from matchbench.graphs.bipartite import BipartiteGraph, Matching

pytestmark = pytest.mark.gpu

VARIANTS = [
    (cls, bfs, threads)
    for cls in (APFB, APsB)
    for bfs in ("plain", "wr")
    for threads in ("ct", "mt")
]
N_BASE = 200


def _variant_id(v):
    cls, bfs, threads = v
    return f"{cls.name}-{bfs}-{threads}"


def _grid3d(nx, ny, nz):
    idx = np.arange(nx * ny * nz).reshape(nz, ny, nx)
    pairs = [
        (idx[:, :, :-1].ravel(), idx[:, :, 1:].ravel()),
        (idx[:, :-1, :].ravel(), idx[:, 1:, :].ravel()),
        (idx[:-1, :, :].ravel(), idx[1:, :, :].ravel()),
    ]
    rows = np.concatenate([p for a, b in pairs for p in (a, b)])
    cols = np.concatenate([p for a, b in pairs for p in (b, a)])
    return rows, cols


def _make_graph(k: int) -> BipartiteGraph:
    """The k-th test graph: small members of the benchmark families plus odd shapes."""
    rng = np.random.default_rng(1000 + k)
    kind = k % 8
    scale = int(rng.integers(3, 11))
    if kind == 0:
        return generators.erdos_renyi(scale, float(rng.choice([0.5, 1.0, 2.0, 4.0])), seed=k)
    if kind == 1:
        # Rectangular, sparse enough to leave isolated vertices on both sides.
        aspect = float(rng.choice([0.3, 0.6, 1.7, 3.0]))
        degree = min(float(rng.choice([0.7, 1.5, 3.0])), round(aspect * 2**scale))
        return generators.erdos_renyi(scale, degree, seed=k, aspect=aspect)
    if kind == 2:
        return generators.kronecker(scale, edge_factor=int(rng.choice([2, 4, 8, 16])), seed=k)
    if kind == 3:
        return generators.delaunay(scale, seed=k)
    if kind == 4:
        return generators.grid(int(rng.integers(1, 12)), seed=k)
    if kind == 5:
        return (generators.rgg if k % 16 == 5 else generators.road)(scale, seed=k)
    if kind == 6:
        if k % 16 == 6:
            nx_, ny, nz = (int(x) for x in rng.integers(1, 12, 3))
            rows, cols = _grid3d(nx_, ny, nz)
            n = nx_ * ny * nz
            return BipartiteGraph.from_coo(rows, cols, n, n, name=f"grid3d_{k}", family="grid3d")
        # A band matrix: long augmenting paths once RCP-permuted.
        n = int(rng.integers(2, 1200))
        i = np.arange(n)
        rows = np.concatenate([i, i[:-1]])
        cols = np.concatenate([i, i[1:]])
        return BipartiteGraph.from_coo(rows, cols, n, n, name=f"band_{k}", family="band")
    # Degenerate shapes: no edges, a single row or column, empty sides, a full block.
    shapes = [
        (1, 1, 0.0),
        (5, 1, 1.0),
        (1, 7, 1.0),
        (0, 4, 0.0),
        (6, 0, 0.0),
        (30, 30, 1.0),
        (40, 3, 0.5),
        (3, 40, 0.5),
        (64, 64, 0.0),
        (2, 2, 1.0),
    ]
    nr, nc, p = shapes[(k // 8) % len(shapes)]
    mask = rng.random((nr, nc)) < p
    rows, cols = np.nonzero(mask)
    return BipartiteGraph.from_coo(rows, cols, nr, nc, name=f"small_{k}", family="small")


@pytest.fixture(scope="module")
def instances():
    out = []
    for k in range(N_BASE):
        g = _make_graph(k)
        for h in (g, g.permuted(seed=k)):
            out.append((h, cheap_matching(h)))
    return out


def _solve(solver, graph, init):
    solver.prepare(graph, init)
    solver.run()
    m = solver.result()
    return m, MCM().verify(graph, m)


def _empty(graph):
    return Matching(
        np.full(graph.n_rows, -1, dtype=graph.col_ind.dtype),
        np.full(graph.n_cols, -1, dtype=graph.col_ind.dtype),
    )


def test_instance_set_is_varied(instances):
    assert len(instances) >= 400
    families = {g.family for g, _ in instances}
    assert {"er", "kron", "delaunay", "grid", "rgg", "road", "band", "small"} <= families
    assert any(g.n_rows != g.n_cols for g, _ in instances)
    # The cheap matching must leave work to do on most instances.
    unfinished = sum(int(MCM().verify(g, init).verified is False) for g, init in instances[:100])
    assert unfinished > 30


def _memory_bound(graph: BipartiteGraph, frontier: str) -> int:
    n = graph.n_rows + graph.n_cols
    # O(n) work arrays: 5 (scan) or 7 (queue: two queue halves) index arrays.
    return 2 * graph.nbytes + (16 if frontier == "scan" else 24) * n + 64


@pytest.mark.parametrize("frontier", FRONTIERS)
@pytest.mark.parametrize("sync", SYNC_MODES)
@pytest.mark.parametrize("variant", VARIANTS, ids=_variant_id)
def test_every_answer_certified(variant, sync, frontier, instances):
    cls, bfs, threads = variant
    # Small grids so that CT strides over several vertices per thread on these graphs.
    solver = configured(
        cls,
        bfs=bfs,
        threads=threads,
        sync=sync,
        ct_blocks=4,
        threads_per_block=64,
        batch=16,
        frontier=frontier,
    )
    failures = []
    for graph, init in instances:
        m, v = _solve(solver, graph, init)
        if not v.verified:
            failures.append(f"{graph.name}: {v.reason}")
            continue
        c = solver.counters()
        t = solver.timings()
        assert c["phases"] <= v.objective - init.cardinality, (graph.name, c)
        assert c["bfs_levels"] <= c["bfs_launches"], (graph.name, c)
        assert c["host_syncs"] >= c["phases"] + 1, (graph.name, c)
        if sync == "level":
            assert c["host_syncs"] == c["bfs_launches"], (graph.name, c)
        else:
            assert c["host_syncs"] <= c["bfs_launches"], (graph.name, c)
        assert t["solve"] > 0 and t["transfer"] >= 0, (graph.name, t)
        assert solver.memory_peak_bytes() <= _memory_bound(graph, frontier), graph.name
    assert not failures, f"{len(failures)} wrong answers, first: {failures[:5]}"


@pytest.mark.parametrize("frontier", FRONTIERS)
@pytest.mark.parametrize("variant", VARIANTS, ids=_variant_id)
def test_paper_grid_and_empty_init(variant, frontier, instances):
    # The paper's 256 x 256 CT grid; MT with one thread per vertex; start from nothing.
    cls, bfs, threads = variant
    solver = configured(cls, bfs=bfs, threads=threads, frontier=frontier)
    failures = []
    for graph, _ in instances[::3]:
        m, v = _solve(solver, graph, _empty(graph))
        if not v.verified:
            failures.append(f"{graph.name}: {v.reason}")
    assert not failures, f"{len(failures)} wrong answers, first: {failures[:5]}"


@pytest.mark.parametrize("frontier", FRONTIERS)
@pytest.mark.parametrize("variant", VARIANTS, ids=_variant_id)
def test_repeated_runs_agree(variant, frontier, instances):
    cls, bfs, threads = variant
    solver = configured(cls, bfs=bfs, threads=threads, sync="batched", frontier=frontier)
    for graph, init in instances[::10]:
        cards = []
        for _ in range(3):  # the cached upload is reused; the init must be restored each time
            m, v = _solve(solver, graph, init)
            assert v.verified, (graph.name, v.reason)
            cards.append(m.cardinality)
        assert len(set(cards)) == 1, (graph.name, cards)
        assert init.cardinality == cheap_matching(graph).cardinality  # input untouched


@pytest.mark.parametrize("cls", [APFB, APsB])
def test_int64_indices(cls, instances):
    # Graphs past 2^31 entries use int64 indices; the same kernels compiled with
    # -DMB_INDEX64 must give certified answers (checked here on small graphs).
    for graph, init in instances[:40]:
        g64 = BipartiteGraph(
            graph.n_rows,
            graph.n_cols,
            *(
                a.astype(np.int64)
                for a in (graph.row_ptr, graph.row_ind, graph.col_ptr, graph.col_ind)
            ),
            name=graph.name + "_i64",
        )
        init64 = Matching(init.row_match.astype(np.int64), init.col_match.astype(np.int64))
        for bfs in ("plain", "wr"):
            for frontier in FRONTIERS:
                m, v = _solve(configured(cls, bfs=bfs, frontier=frontier), g64, init64)
                assert v.verified, (g64.name, bfs, frontier, v.reason)
            assert m.col_match.dtype == np.int64


def test_long_path_graph_uses_few_host_syncs():
    # One augmenting path through 3000 columns: the per-level mode syncs per level; the
    # batched modes must need far fewer host round trips for the same answer.
    n = 3000
    i = np.arange(n)
    g = BipartiteGraph.from_coo(np.concatenate([i, i[:-1]]), np.concatenate([i, i[1:]]), n, n)
    init = Matching.from_col_match(np.concatenate([[-1], np.arange(n - 1)]), n)
    for frontier in FRONTIERS:
        results = {}
        for sync in SYNC_MODES:
            s = configured(APFB, sync=sync, batch=64, frontier=frontier)
            m, v = _solve(s, g, init)
            assert v.verified and v.objective == n, (sync, frontier, v.reason)
            results[sync] = s.counters()
        assert results["level"]["host_syncs"] >= n
        for sync in ("batched", "graph"):
            assert results[sync]["host_syncs"] * 20 < results["level"]["host_syncs"], results
            assert results[sync]["bfs_levels"] == results["level"]["bfs_levels"], results


def _hub_graph(seed: int) -> BipartiteGraph:
    """Random sparse bipartite graph plus a few hub columns of degree 40 to 6000.

    Hubs of degree >= 1024 go to the queue kernels' block tier, 32..1023 to the warp
    tier; the sparse rest to single threads. Hub rows too, so that hubs are reached late.
    """
    rng = np.random.default_rng(seed)
    nr = int(rng.integers(3000, 9000))
    nc = int(rng.integers(3000, 9000))
    m = int(rng.integers(2, 4) * min(nr, nc))
    rows = [rng.integers(0, nr, m)]
    cols = [rng.integers(0, nc, m)]
    hubs = [1500, 6000, *rng.choice([40, 300, 1500], size=int(rng.integers(1, 6)))]
    for deg in hubs:
        deg = min(int(deg), nr)
        rows.append(rng.choice(nr, deg, replace=False))
        cols.append(np.full(deg, rng.integers(0, nc)))
    for deg in rng.choice([40, 2000], size=3):
        deg = min(int(deg), nc)
        rows.append(np.full(deg, rng.integers(0, nr)))
        cols.append(rng.choice(nc, deg, replace=False))
    g = BipartiteGraph.from_coo(np.concatenate(rows), np.concatenate(cols), nr, nc)
    return g.permuted(seed=seed) if seed % 2 else g


@pytest.mark.parametrize("variant", VARIANTS, ids=_variant_id)
def test_queue_tiers_on_hub_graphs(variant):
    cls, bfs, threads = variant
    failures = []
    for seed in range(60):
        graph = _hub_graph(seed)
        assert np.diff(graph.col_ptr).max() >= 1024, graph.name
        for init in (cheap_matching(graph), _empty(graph)):
            for sync in ("batched", "graph"):
                s = configured(cls, bfs=bfs, threads=threads, sync=sync, frontier="queue", ct_blocks=32)
                m, v = _solve(s, graph, init)
                if not v.verified:
                    failures.append(f"seed {seed} {sync}: {v.reason}")
    assert not failures, f"{len(failures)} wrong answers, first: {failures[:5]}"


@pytest.mark.parametrize("frontier", FRONTIERS)
@pytest.mark.parametrize("cls", [APFB, APsB])
def test_edge_counter_bounds(cls, frontier, instances):
    # The instrumented build counts adjacency entries scanned by the BFS: at least the
    # whole adjacency of the unmatched columns (level L0 of the first phase scans it all
    # with GPUBFS), at most every edge once per BFS phase (a column enters a BFS once).
    for graph, init in instances[:80]:
        s = configured(cls, bfs="plain", sync="batched", count_edges=True, frontier=frontier)
        m, v = _solve(s, graph, init)
        assert v.verified, (graph.name, v.reason)
        c = s.counters()
        free = np.flatnonzero(init.col_match < 0)
        assert c["edges_scanned"] >= int(np.diff(graph.col_ptr)[free].sum()), (graph.name, c)
        assert c["edges_scanned"] <= (c["phases"] + 1) * graph.n_edges, (graph.name, c)
        assert "count_edges" not in s.variant()
