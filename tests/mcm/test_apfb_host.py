"""APFB/APsB checks that need no GPU.

The host loop (:func:`matchbench.families.mcm.apfb.solve_loop`) is driven against an
emulation of ``kernels/mcm/apfb.cu``: every kernel is a set of Python threads (generators)
that yield after each access to shared arrays, and a seeded scheduler interleaves them at
random, so races such as two ALTERNATE walks that read a column before either writes it
do occur. The emulation mirrors the CUDA source statement by statement; it checks the
algorithm's logic (the paper's Alg. 1-4, FIXMATCHING, the -(row) refinement and the
device-side flag ring of the batched modes, the frontier queues) under arbitrary
interleavings, and every answer goes through the König certificate. In the queue mode a
column's adjacency is split among several emulated threads from degree ``QUEUE_SPLIT_MIN``
on (the CUDA kernels split from 32 and 1024 on; the small graphs here need a small
threshold for the split to occur). The CUDA itself is tested on a GPU in
``tests/gpu/test_apfb_gpu.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matchbench.core.params import configured
from matchbench.families.mcm import apfb
from matchbench.families.mcm.apfb import L0, power_of_two_parts, solve_loop
from matchbench.families.mcm.cheap import cheap_matching
from matchbench.families.mcm.problem import MCM
from matchbench.graphs.bipartite import BipartiteGraph, Matching

ROOT = Path(__file__).resolve().parents[2]
FOUND, BASE, LEVELS, ERR = 3, 4, 5, 6
QUEUE_SPLIT_MIN = 3
QUEUE_LANES = 2


class EmulatedLaunches:
    """The launches of ``_CupyLaunches``, run by interleaved Python threads."""

    def __init__(self, graph, init, *, bfs, early_stop, sync, n_threads, seed, frontier="scan"):
        self.nr, self.nc = graph.n_rows, graph.n_cols
        self.col_ptr = graph.col_ptr.tolist()
        self.col_ind = graph.col_ind.tolist()
        self.rmatch = init.row_match.tolist()
        self.cmatch = init.col_match.tolist()
        self.pred = [-1] * self.nr
        self.bfs_array = [0] * self.nc
        self.root = [0] * self.nc
        self.flags = [0] * 8
        self.wr = bfs == "wr"
        self.early_stop = early_stop
        self.negrow = self.wr and early_stop
        self.graph_mode = sync == "graph"
        self.n_threads = n_threads  # None: one thread per vertex (MT)
        self.rng = np.random.default_rng(seed)
        self.queue_mode = frontier == "queue"
        self.queue = [[-1] * self.nc, [-1] * self.nc]

    # -- scheduling -------------------------------------------------------------

    def _launch(self, body, n):
        t = max(1, n if self.n_threads is None else self.n_threads)
        threads = [body(tid, t, n) for tid in range(t)]
        while threads:
            i = int(self.rng.integers(len(threads)))
            try:
                next(threads[i])
            except StopIteration:
                threads.pop(i)

    def _run_pool(self, pool):
        """Interleave generators; one that yields a list spawns those generators."""
        while pool:
            i = int(self.rng.integers(len(pool)))
            try:
                spawned = next(pool[i])
            except StopIteration:
                pool.pop(i)
                continue
            if spawned:
                pool.extend(spawned)

    # -- kernels (mirror kernels/mcm/apfb.cu) ---------------------------------------

    def _init_body(self, tid, t, n, base_init):
        if tid == 0:
            self.flags[L0 % 3] = 0
            self.flags[FOUND] = 0
            self.flags[BASE] = base_init
        for c in range(tid, n, t):
            unmatched = self.cmatch[c] == -1
            yield
            self.bfs_array[c] = L0 if unmatched else L0 - 1
            if self.wr:
                self.root[c] = c if unmatched else 0
            yield

    def _bfs_body(self, tid, t, n, offset):
        f = self.flags
        level = f[BASE] + offset
        if tid == 0:
            f[(level + 1) % 3] = 0
        yield
        if level > L0 and f[(level - 1) % 3] == 0:
            return
        if self.early_stop and f[FOUND] != 0 and f[FOUND] < level:
            return
        if tid == 0:
            f[LEVELS] += 1
        inserted = found = False
        for c in range(tid, n, t):
            if self.bfs_array[c] != level:
                continue
            my_root = 0
            if self.wr:
                my_root = self.root[c]
                yield
                if self.bfs_array[my_root] < L0 - 1:
                    continue
            for j in range(self.col_ptr[c], self.col_ptr[c + 1]):
                row = self.col_ind[j]
                col_match = self.rmatch[row]
                yield
                if col_match > -1:
                    if self.bfs_array[col_match] == L0 - 1:
                        yield
                        inserted = True
                        self.bfs_array[col_match] = level + 1
                        yield
                        if self.wr:
                            self.root[col_match] = my_root
                            yield
                        self.pred[row] = c
                        yield
                elif col_match == -1:
                    if self.wr:
                        self.bfs_array[my_root] = -row if self.negrow else L0 - 2
                        yield
                    self.rmatch[row] = -2
                    yield
                    self.pred[row] = c
                    yield
                    found = True
        if inserted:
            f[level % 3] = 1
        if found:
            f[FOUND] = level

    # queue mode (apfb_init_queue*, apfb_bfs_queue*, apfb_fix_matching_q)

    def _init_queue_body(self, tid, t, n, base_init):
        if tid == 0:
            self.flags[L0 % 3] = 0
            self.flags[FOUND] = 0
            self.flags[BASE] = base_init
        for c in range(tid, n, t):
            unmatched = self.cmatch[c] == -1
            yield
            self.bfs_array[c] = L0 if unmatched else L0 - 1
            if self.wr:
                self.root[c] = c if unmatched else 0
            if unmatched:
                at = self.flags[(L0 - 1) % 3]  # atomicAdd: read and increment at once
                self.flags[(L0 - 1) % 3] += 1
                yield
                self.queue[L0 & 1][at] = c
            yield

    def _visit_edge(self, c, my_root, j, level, nxt, state):
        row = self.col_ind[j]
        col_match = self.rmatch[row]
        yield
        if col_match > -1:
            if self.bfs_array[col_match] == L0 - 1:
                yield
                # atomicCAS: the check and the claim are one step
                if self.bfs_array[col_match] == L0 - 1:
                    self.bfs_array[col_match] = level + 1
                    yield
                    if self.wr:
                        self.root[col_match] = my_root
                        yield
                    self.pred[row] = c
                    yield
                    at = self.flags[level % 3]
                    self.flags[level % 3] += 1
                    yield
                    nxt[at] = col_match
                    yield
        elif col_match == -1:
            if self.wr:
                self.bfs_array[my_root] = -row if self.negrow else L0 - 2
                yield
            self.rmatch[row] = -2
            yield
            self.pred[row] = c
            yield
            state["found"] = True

    def _edges(self, c, my_root, js, level, nxt, state):
        for j in js:
            yield from self._visit_edge(c, my_root, j, level, nxt, state)

    def _queue_entry(self, i, cur, level, nxt, state):
        c = cur[i]
        yield
        my_root = 0
        if self.wr:
            my_root = self.root[c]
            yield
            if self.bfs_array[my_root] < L0 - 1:
                return
        start, end = self.col_ptr[c], self.col_ptr[c + 1]
        if end - start < QUEUE_SPLIT_MIN:
            yield from self._edges(c, my_root, range(start, end), level, nxt, state)
            return
        # warp / block tier: the adjacency is shared among lanes
        yield [
            self._edges(c, my_root, range(start + k, end, QUEUE_LANES), level, nxt, state)
            for k in range(QUEUE_LANES)
        ]

    def _bfs_queue_level(self, offset):
        f = self.flags
        level = f[BASE] + offset
        f[(level + 1) % 3] = 0
        count = f[(level - 1) % 3]
        if count == 0:
            return
        if self.early_stop and f[FOUND] != 0 and f[FOUND] < level:
            return
        f[LEVELS] += 1
        cur, nxt = self.queue[level & 1], self.queue[(level + 1) & 1]
        state = {"found": False}
        self._run_pool([self._queue_entry(i, cur, level, nxt, state) for i in range(count)])
        if state["found"]:
            f[FOUND] = level

    def _fix_queue_body(self, tid, t, n):
        if tid == 0:
            self.flags[(L0 - 1) % 3] = 0
        yield from self._fix_body(tid, t, n)

    def _walk(self, row):
        steps = 0
        while row != -1:
            matched_col = self.pred[row]
            yield
            matched_row = self.cmatch[matched_col]
            yield
            if matched_row != -1 and self.pred[matched_row] == matched_col:
                break
            self.cmatch[matched_col] = row
            yield
            self.rmatch[row] = matched_col
            yield
            row = matched_row
            steps += 1
            if steps > self.nc + 1:
                self.flags[ERR] = 1
                break

    def _alternate_body(self, tid, t, n):
        for r in range(tid, n, t):
            if self.rmatch[r] == -2:
                yield from self._walk(r)
            yield

    def _alternate_roots_body(self, tid, t, n):
        for c in range(tid, n, t):
            b = self.bfs_array[c]
            yield
            if b <= L0 - 2:
                yield from self._walk(-b)

    def _fix_body(self, tid, t, n):
        for r in range(tid, n, t):
            c = self.rmatch[r]
            yield
            if c == -2 or (c >= 0 and self.cmatch[c] != r):
                self.rmatch[r] = -1
            yield

    # -- the interface solve_loop drives ----------------------------------------

    def init(self):
        base = L0 if self.graph_mode else 0
        body = self._init_queue_body if self.queue_mode else self._init_body
        self._launch(lambda tid, t, n: body(tid, t, n, base), self.nc)
        return 1

    def _level(self, offset):
        if self.queue_mode:
            self._bfs_queue_level(offset)
        else:
            self._launch(lambda tid, t, n: self._bfs_body(tid, t, n, offset), self.nc)

    def bfs(self, level, size):
        if self.graph_mode:
            parts = power_of_two_parts(size)
            for part in parts:  # each captured graph: part levels, then the advance
                for i in range(part):
                    self._level(i)
                self.flags[BASE] += part
            return size + len(parts), len(parts)
        for i in range(size):
            self._level(level + i)
        return size, 0

    def read_flags(self):
        return np.array(self.flags, dtype=np.int64)

    def alternate_fix(self):
        if self.negrow:
            self._launch(self._alternate_roots_body, self.nc)
        else:
            self._launch(self._alternate_body, self.nr)
        self._launch(self._fix_queue_body if self.queue_mode else self._fix_body, self.nr)
        return 2

    def matching(self):
        return Matching(
            np.array(self.rmatch, dtype=np.int64), np.array(self.cmatch, dtype=np.int64)
        )


VARIANTS = [
    (cls, bfs, threads)
    for cls in (apfb.APFB, apfb.APsB)
    for bfs in ("plain", "wr")
    for threads in ("ct", "mt")
]


def _variant_id(v):
    cls, bfs, threads = v
    return f"{cls.name}-{bfs}-{threads}"


@st.composite
def small_graphs(draw):
    nr = draw(st.integers(0, 14))
    nc = draw(st.integers(0, 14))
    density = draw(st.sampled_from([0.1, 0.2, 0.35, 0.6]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    a = sp.random(nr, nc, density=density, format="coo", random_state=rng)
    return BipartiteGraph.from_coo(a.row, a.col, nr, nc, name=f"er_{nr}x{nc}_{seed}")


def _emulate(cls, bfs, threads, sync, graph, init, seed, batch=4, frontier="scan"):
    em = EmulatedLaunches(
        graph,
        init,
        bfs=bfs,
        early_stop=cls.early_stop,
        sync=sync,
        n_threads=3 if threads == "ct" else None,
        seed=seed,
        frontier=frontier,
    )
    counters = solve_loop(
        em, n_cols=graph.n_cols, early_stop=cls.early_stop, sync=sync, batch=batch, name=cls.name
    )
    return em.matching(), counters


@pytest.mark.parametrize("frontier", apfb.FRONTIERS)
@pytest.mark.parametrize("sync", apfb.SYNC_MODES)
@pytest.mark.parametrize("variant", VARIANTS, ids=_variant_id)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=small_graphs(), schedule=st.integers(0, 2**31 - 1), empty=st.booleans())
def test_emulated_kernels_reach_maximum(variant, sync, frontier, graph, schedule, empty):
    cls, bfs, threads = variant
    init = (
        Matching(np.full(graph.n_rows, -1, np.int64), np.full(graph.n_cols, -1, np.int64))
        if empty
        else cheap_matching(graph)
    )
    m, counters = _emulate(cls, bfs, threads, sync, graph, init, schedule, frontier=frontier)
    v = MCM().verify(graph, m)
    assert v.verified, v.reason
    # Each augmenting phase matches at least one more column.
    assert counters["phases"] <= v.objective - init.cardinality
    assert counters["host_syncs"] >= counters["phases"] + 1
    if sync == "level":
        assert counters["host_syncs"] == counters["bfs_launches"]


def _fig1_graph():
    # Deveci et al. 2013, Fig. 1: r1-c2 matched; c1 reaches r2 and r3 through r1 and c2.
    # Rows r1, r2, r3 = 0, 1, 2; columns c1, c2 = 0, 1.
    g = BipartiteGraph.from_coo([0, 0, 1, 2], [0, 1, 1, 1], 3, 2, name="fig1")
    init = Matching.from_col_match(np.array([-1, 0], dtype=np.int64), 3)
    return g, init


@pytest.mark.parametrize("frontier", apfb.FRONTIERS)
@pytest.mark.parametrize("variant", VARIANTS, ids=_variant_id)
def test_fig1_two_paths_to_one_column_under_many_schedules(variant, frontier):
    # Both paths end at rows adjacent to c2; whichever walk loses must not corrupt the
    # matching (ALTERNATE line 8 and FIXMATCHING).
    cls, bfs, threads = variant
    g, init = _fig1_graph()
    for seed in range(60):
        m, _ = _emulate(cls, bfs, threads, "level", g, init, seed, frontier=frontier)
        v = MCM().verify(g, m)
        assert v.verified, (seed, v.reason)
        assert v.objective == 2


def test_negrow_refinement_starts_one_walk_per_root():
    # APsB-GPUBFS-WR: c1's BFS marks r2 and r3; bfs_array[c1] records one of them and only
    # that row is flipped, the other is reset by FIXMATCHING.
    g, init = _fig1_graph()
    for seed in range(30):
        em = EmulatedLaunches(
            g, init, bfs="wr", early_stop=True, sync="level", n_threads=None, seed=seed
        )
        em.init()
        levels = 0
        while True:
            em.bfs(L0 + levels, 1)
            levels += 1
            if em.flags[FOUND]:
                break
        end_row = -em.bfs_array[0]
        assert end_row in (1, 2)
        assert sorted(r for r in range(3) if em.rmatch[r] == -2) == [1, 2]
        em.alternate_fix()
        assert em.cmatch == [0, end_row]
        assert em.rmatch[end_row] == 1 and em.rmatch[0] == 0
        assert em.rmatch[3 - end_row] == -1


def test_flag_ring_stops_a_batch_after_an_empty_level():
    # A path graph of 6 columns with one free column at the far end: the BFS needs all
    # levels; with a batch of 64 the surplus launches must not run (bfs_levels counts only
    # the levels that did work) and the answer is still maximum.
    n = 6
    rows = list(range(n)) + list(range(n - 1))  # row i meets columns i and i + 1
    cols = list(range(n)) + list(range(1, n))
    g = BipartiteGraph.from_coo(rows, cols, n, n, name="path")
    init = Matching.from_col_match(np.array([-1] + list(range(n - 1)), dtype=np.int64), n)
    for cls in (apfb.APFB, apfb.APsB):
        m, counters = _emulate(cls, "wr", "ct", "graph", g, init, 0, batch=64)
        v = MCM().verify(g, m)
        assert v.verified, v.reason
        assert counters["bfs_launches"] > counters["bfs_levels"]
        m2, c2 = _emulate(cls, "wr", "ct", "level", g, init, 0)
        assert MCM().verify(g, m2).objective == v.objective
        assert c2["bfs_levels"] == counters["bfs_levels"]


def test_power_of_two_parts():
    for k in range(1, 200):
        parts = power_of_two_parts(k)
        assert sum(parts) == k
        assert len(set(parts)) == len(parts)
        assert all(p & (p - 1) == 0 for p in parts)
    with pytest.raises(ValueError):
        power_of_two_parts(0)


def test_chunk_schedule_doubles_up_to_cap():
    gen = apfb.chunk_schedule(3, 20)
    assert [next(gen) for _ in range(5)] == [3, 6, 12, 20, 20]
    gen = apfb.chunk_schedule(100, 16)
    assert next(gen) == 16
    gen = apfb.chunk_schedule(0, 8)
    assert next(gen) == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"bfs": "dfs"},
        {"threads": "warp"},
        {"sync": "never"},
        {"threads_per_block": 2048},
        {"threads_per_block": 0},
        {"batch": 0},
        {"ct_blocks": 1.5},
        {"frontier": "stack"},
        {"frontier": "queue", "threads_per_block": 100},
        {"frontier": "scan", "threads_per_block": 48},  # whole warps with either frontier
        {"ct_threads": 2048},  # the deprecated spellings, checked as threads_per_block
        {"threads": "mt", "mt_threads": 0},
    ],
)
@pytest.mark.filterwarnings("ignore:algorithm.(ct|mt)_threads is deprecated:FutureWarning")
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(ValueError):
        configured(apfb.APFB, **kwargs)


@pytest.mark.parametrize(
    ("threads", "old", "want"),
    [("ct", "ct_threads", 64), ("ct", "mt_threads", 256), ("mt", "mt_threads", 64), ("mt", "ct_threads", 256)],
)
def test_old_block_size_names_set_threads_per_block_for_their_assignment(threads, old, want):
    """ct_threads and mt_threads, the block sizes of the CT and the MT assignment before
    they became one threads_per_block, still work for one release, with a warning."""
    with pytest.warns(FutureWarning, match=rf"^algorithm\.{old} is deprecated; use algorithm\.threads_per_block$"):
        s = configured(apfb.APFB, threads=threads, **{old: 64})
    assert s.params["threads_per_block"] == want
    assert s._grid(10_000, 1 << 20)[1] == want
    assert not {"ct_threads", "mt_threads"} & set(s.params)


def test_constructors_do_not_import_cupy():
    code = (
        "import sys\n"
        "from matchbench.core.params import configured\n"
        "from matchbench.families.mcm.apfb import APFB, APsB\n"
        "s = [configured(APFB), configured(APsB, bfs='plain', threads='mt', sync='level')]\n"
        "assert [x.name for x in s] == ['apfb', 'apsb'], s\n"
        "assert 'cupy' not in sys.modules, 'cupy imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("name", ["apfb", "apsb"])
def test_config_instantiates_the_named_solver(name):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(ROOT / "conf" / "algorithm" / f"{name}.yaml")
    solver = instantiate(cfg)
    assert solver.name == name
    assert solver.problem == "mcm" and solver.device == "gpu"
    assert solver.kernel_families == ("apfb",)
    # The YAML is where the defaults live (the constructor has none); its deprecated
    # spellings of threads_per_block are null and left out of the parameters.
    deprecated = {"ct_threads", "mt_threads"}
    assert {k: v for k, v in cfg.items() if k != "_target_" and k not in deprecated} == solver.params
    assert all(cfg[k] is None for k in deprecated)
    with pytest.raises(TypeError):
        type(solver)()
    for bfs in ("plain", "wr"):
        for threads in ("ct", "mt"):
            over = OmegaConf.merge(cfg, {"bfs": bfs, "threads": threads, "sync": "level"})
            s = instantiate(over)
            assert s.params["bfs"] == bfs and s.params["threads"] == threads
            assert s.variant().startswith("batch=")


def test_memory_estimate_is_within_target():
    g = BipartiteGraph.from_scipy(sp.random(500, 400, density=0.02, random_state=1))
    for cls in (apfb.APFB, apfb.APsB):
        for bfs in ("plain", "wr"):
            need = configured(cls, bfs=bfs).estimate_bytes(g)
            n = g.n_rows + g.n_cols
            assert g.nbytes < need <= 2 * g.nbytes + 8 * 4 * n
