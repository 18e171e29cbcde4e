"""G-PR on the GPU: every variant, strategy and k on a few hundred random graphs.

Each answer must pass the König certificate of :class:`matchbench.families.mcm.problem.MCM` and
have the cardinality SciPy's Hopcroft-Karp finds; original and RCP-permuted instances
must agree. The (strategy, k) pairs rotate over the instances, so that every
combination with every variant runs on many graphs while the module stays near a
minute on one GPU.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching

from matchbench.core.params import configured
from matchbench.families.mcm.cheap import cheap_matching
from matchbench.families.mcm.gpr import GPR, K_VALUES, SCANS, STRATEGIES, VARIANTS
from matchbench.families.mcm.problem import MCM
from matchbench.graphs import generators
from matchbench.graphs.bipartite import BipartiteGraph

pytestmark = pytest.mark.gpu

PAIRS = list(itertools.product(STRATEGIES, K_VALUES))  # 12 (strategy, k) pairs
#: The persistent kernel's options per mode: (relabel_stop, local_max). "persistent" is
#: the class's defaults; "paper" the paper's full relabel with grid barriers only;
#: "local16" switches between local phases and the grid many times per solve.
PERSISTENT_MODES = {
    "persistent": {},
    "persistent-paper": {"relabel_stop": "full", "local_max": 0},
    "persistent-stop": {"relabel_stop": "active", "local_max": 0},
    "persistent-local16": {"relabel_stop": "full", "local_max": 16},
    "persistent-stop-local": {"relabel_stop": "active", "local_max": 512},
}
#: Every way of running G-PR: the host loop under both scans, and the persistent kernel.
MODES = [*SCANS, *PERSISTENT_MODES]


def _gpr(mode: str, **kwargs) -> GPR:
    """G-PR run by the host loop with scan ``mode``, or by the persistent kernel."""
    if mode in PERSISTENT_MODES:
        return configured(GPR, persistent=True, **PERSISTENT_MODES[mode], **kwargs)
    return configured(GPR, persistent=False, scan=mode, **kwargs)


def _er_with_isolated(rng: np.random.Generator) -> BipartiteGraph:
    """ER graph, square or rectangular, with a block of isolated rows and columns."""
    m = int(rng.integers(20, 3000))
    n = int(rng.choice([m, int(m * rng.uniform(0.5, 0.9)), int(m * rng.uniform(1.1, 2))]))
    deg = float(rng.choice([1.0, 2.0, 3.5, 8.0]))
    e = int(deg * max(m, n))
    r, c = rng.integers(0, m, e), rng.integers(0, n, e)
    keep = (r >= m // 10) & (c >= n // 10)  # the first tenth of each side is isolated
    return BipartiteGraph.from_coo(r[keep], c[keep], m, n, name=f"er_{m}x{n}", family="er")


def _corpus() -> list[BipartiteGraph]:
    """About 210 graphs of the seed families at small scales, plus ER variations."""
    rng = np.random.default_rng(20240601)
    graphs: list[BipartiteGraph] = []
    for seed in range(1, 31):
        scale = 6 + seed % 8  # 2^6 .. 2^13 vertices
        graphs.append(
            generators.kronecker(scale, edge_factor=int(rng.choice([2, 4, 16])), seed=seed)
        )
        graphs.append(generators.delaunay(scale, seed=seed))
        graphs.append(generators.rgg(scale, seed=seed))
        graphs.append(generators.grid(scale, seed=seed))
        graphs.append(generators.road(max(scale, 4), seed=seed))
        graphs.append(
            generators.erdos_renyi(
                scale,
                avg_degree=float(rng.choice([1.5, 3, 6])),
                seed=seed,
                aspect=float(rng.choice([0.6, 1.0, 1.7])),
            )
        )
        graphs.append(_er_with_isolated(rng))
    return graphs


@pytest.fixture(scope="module")
def corpus() -> list[BipartiteGraph]:
    return _corpus()


def _maximum(g: BipartiteGraph) -> int:
    """SciPy's maximum cardinality. Call it on original orderings: on RCP-permuted
    geometric graphs SciPy's Hopcroft-Karp (from the empty matching) is very slow, and
    the permutation does not change the answer."""
    if g.n_rows == 0 or g.n_cols == 0:
        return 0
    return int(np.count_nonzero(maximum_bipartite_matching(g.to_scipy(), perm_type="row") >= 0))


def _check(g: BipartiteGraph, solver: GPR, init, want: int) -> int:
    solver.prepare(g, init)
    solver.run()
    got = solver.result()
    v = MCM().verify(g, got)
    assert v.verified, f"{g.name} {solver.variant()}: {v.reason}"
    assert got.cardinality == want, f"{g.name} {solver.variant()}: {got.cardinality} != {want}"
    t = solver.timings()
    assert t["solve"] > 0 and t["transfer"] >= 0
    return got.cardinality


def test_corpus_size(corpus):
    assert len(corpus) >= 200


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("mode", MODES)
def test_larger_rcp_graphs_empty_and_cheap_init(variant, mode):
    """A few graphs large enough for real concurrency (2^16 vertices)."""
    for g0, pairs in (
        (generators.kronecker(16, seed=3), [("adaptive", 0.7), ("fix", 2.0)]),
        (generators.delaunay(16, seed=4), [("adaptive", 0.7), ("adaptive", 1.5)]),
        (generators.grid(16), [("adaptive", 0.7), ("adaptive", 0.3)]),
    ):
        want = _maximum(g0)
        g = g0.permuted(7)
        for init, (strategy, k) in zip((None, cheap_matching(g)), pairs, strict=True):
            _check(g, _gpr(mode, variant=variant, strategy=strategy, k=k), init, want)


def test_repeated_runs_give_the_same_cardinality():
    g0 = generators.kronecker(14, seed=9)
    want = _maximum(g0)
    g = g0.permuted(2)
    init = cheap_matching(g)
    for variant, mode in itertools.product(VARIANTS, MODES):
        solver = _gpr(mode, variant=variant)
        cards = set()
        for _ in range(5):
            cards.add(_check(g, solver, init, want))
        assert cards == {want}


def test_int64_index_graphs():
    """The -DMB_INDEX64 build, on graphs whose arrays are int64."""
    for g0 in (generators.delaunay(10, seed=2), generators.kronecker(10, seed=2)):
        g = g0.permuted(3)
        g64 = BipartiteGraph(
            g.n_rows,
            g.n_cols,
            g.row_ptr.astype(np.int64),
            g.row_ind.astype(np.int64),
            g.col_ptr.astype(np.int64),
            g.col_ind.astype(np.int64),
            name=g.name + "_i64",
        )
        want = _maximum(g0)
        for variant, mode in itertools.product(VARIANTS, MODES):
            solver = _gpr(mode, variant=variant)
            _check(g64, solver, cheap_matching(g64), want)
            assert solver.result().col_match.dtype == np.int64


@pytest.mark.parametrize("mode", MODES)
def test_counters_and_timings_are_reported(mode):
    g0 = generators.delaunay(12, seed=5)
    g = g0.permuted(1)
    solver = _gpr(mode)
    _check(g, solver, cheap_matching(g), _maximum(g0))
    c = solver.counters()
    for key in ("kernel_launches", "host_syncs", "push_kernels", "global_relabels", "bfs_levels"):
        assert c[key] >= 1, (key, c)
    # One host read per batch: far fewer than the paper's one per kernel.
    assert c["host_syncs"] < c["push_kernels"] + c["bfs_levels"] + c["global_relabels"]
    t = solver.timings()
    assert 0 <= t["global_relabel"] <= t["solve"]
    if mode in PERSISTENT_MODES:
        assert c["kernel_launches"] == 1 and c["host_syncs"] == 2
        # every step not run in a local phase ends at a grid barrier
        assert c["grid_barriers"] + c["local_steps"] >= c["bfs_levels"] + c["push_kernels"], c
        assert c["persistent_blocks"] >= 1
        assert (c["local_steps"] > 0) == (solver.params["local_max"] > 0), c
        assert (c["early_stops"] > 0) == (solver.params["relabel_stop"] == "active"), c


def test_trivial_instances():
    cases = [
        BipartiteGraph.from_coo(np.array([0, 1]), np.array([0, 1]), 2, 2),  # perfect at init
        BipartiteGraph.from_coo(np.array([], int), np.array([], int), 3, 4),  # no edges
        BipartiteGraph.from_coo(np.array([0, 0, 0]), np.array([0, 1, 2]), 1, 3),  # one row
        BipartiteGraph.from_scipy(sp.csr_matrix((0, 5))),  # no rows
    ]
    for g in cases:
        want = _maximum(g)
        for variant, mode in itertools.product(VARIANTS, MODES):
            for init in (None, cheap_matching(g)):
                _check(g, _gpr(mode, variant=variant), init, want)


@pytest.mark.parametrize("mode", MODES)
def test_every_variant_strategy_and_k_on_the_corpus(corpus, mode):
    """All ~210 graphs for the paper's thread mapping and the persistent kernel, every
    other one for the warp scan; each graph original and RCP, each with all three
    variants under a rotating (strategy, k) and launch mode."""
    stride = 2 if mode == "warp" else 1
    solvers: dict[tuple, GPR] = {}
    hits: Counter = Counter()
    shrinks = 0
    for i, g0 in enumerate(corpus[::stride]):
        want = _maximum(g0)
        for rcp, g in enumerate((g0, g0.permuted(1000 + i))):
            init = None if (i + rcp) % 5 == 0 else cheap_matching(g)
            strategy, k = PAIRS[(2 * i + rcp) % len(PAIRS)]
            launch = "plain" if (i + rcp) % 4 == 3 else "graph"
            for variant in VARIANTS:
                key = (variant, strategy, k, launch)
                solver = solvers.get(key)
                if solver is None:
                    solver = solvers[key] = _gpr(
                        mode, variant=variant, strategy=strategy, k=k, launch=launch
                    )
                _check(g, solver, init, want)
                hits[(variant, strategy, k)] += 1
                if variant == "shr":
                    shrinks += solver.counters()["shrinks"]
    assert set(hits) == set(itertools.product(VARIANTS, STRATEGIES, K_VALUES))
    assert min(hits.values()) >= 20 // stride, hits
    assert shrinks > 0  # the shrink path (lists of >= 512 entries) ran


@pytest.mark.parametrize("threads,blocks_per_sm", [(64, 1), (256, 8), (1024, 2)])
@pytest.mark.parametrize("local_max", [0, 300])
def test_persistent_grid_shapes(threads, blocks_per_sm, local_max):
    """Block sizes and grids other than the default (the block tier needs hub rows of
    >= 1024 entries: the Kronecker graph has them), with and without local phases (in
    block 0 alone the block tier runs too)."""
    for g0 in (generators.kronecker(15, seed=5), generators.delaunay(14, seed=6)):
        want = _maximum(g0)
        g = g0.permuted(11)
        assert g0.name.startswith("delaunay") or int(np.diff(g.row_ptr).max()) >= 1024
        for variant, stop in itertools.product(VARIANTS, ("full", "active")):
            solver = configured(
                GPR,
                variant=variant,
                threads_per_block=threads,
                blocks_per_sm=blocks_per_sm,
                relabel_stop=stop,
                local_max=local_max,
            )
            _check(g, solver, cheap_matching(g), want)


def test_early_stop_and_local_phases_on_larger_meshes():
    """Meshes of 2^18 vertices, original and RCP, where relabels stop early and local
    phases alternate with grid steps; the counters show both ran (a relabel whose last
    active column is labelled at the BFS's last level does not count as stopped early,
    so the counts are summed per mode)."""
    stops: Counter = Counter()
    local: Counter = Counter()
    for g0 in (generators.rgg(18, seed=2), generators.grid(18), generators.delaunay(17, seed=3)):
        want = _maximum(g0)
        for g in (g0, g0.permuted(13)):
            init = cheap_matching(g)
            for variant, local_max in itertools.product(VARIANTS, (0, 64, 1024)):
                solver = configured(GPR, variant=variant, relabel_stop="active", local_max=local_max)
                _check(g, solver, init, want)
                c = solver.counters()
                stops[variant] += c["early_stops"]
                local[local_max] += c["local_steps"]
    assert min(stops.values()) > 0, stops
    assert local[0] == 0 and local[64] > 0 and local[1024] > 0, local


def test_barrier_probe():
    g = generators.delaunay(10, seed=1)
    solver = configured(GPR)
    solver.prepare(g, cheap_matching(g))
    per = solver.barrier_seconds(2000)
    assert 0 < per < 1e-3


def test_persistent_time_limit_stops_the_kernel_and_the_solver_recovers():
    """(fix, 0.3) relabels before every push: on an RCP mesh that takes far longer than
    the limit, so the kernel must stop early with TimeoutError; the same solver then
    solves the instance in full."""
    g0 = generators.grid(16)
    g = g0.permuted(5)
    init = cheap_matching(g)
    solver = configured(GPR, variant="first", strategy="fix", k=0.3)
    solver.time_limit_s = 1e-4
    solver.prepare(g, init)
    with pytest.raises(TimeoutError):
        solver.run()
    assert solver.counters()["global_relabels"] >= 1
    solver.time_limit_s = None
    _check(g, solver, init, _maximum(g0))
