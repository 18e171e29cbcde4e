"""The batched MCM solver (``mcm_batch_gpu``), its array API and the bulk König certificate.

CPU tests: the kernel compiles through NVRTC, its #defines match the host's constants,
packing round-trips, the size rule, the kernel's algorithm (``apfb_reference``, with the
threads' shared-memory accesses interleaved at random) against SciPy and the König
certificate on hundreds of graphs, and mutation tests of ``certify_batch``. GPU tests
(``-m gpu``): the kernel on hundreds of random graphs of every awkward kind, checked by
the certificate and against SciPy's cardinality.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching

from matchbench.families.mcm import batch_gpu as bg
from matchbench.families.mcm.api import batch_offsets, solve_batch
from matchbench.families.mcm.bulk import certify_batch
from matchbench.families.mcm.problem import MCM
from matchbench.graphs.bipartite import BipartiteGraph, Matching

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "kernels" / "mcm" / "mcm_batch.cu"


# ---------------------------------------------------------------------------------------
# Graphs of every awkward kind
# ---------------------------------------------------------------------------------------


def _graph(rows, cols, nr, nc, name) -> BipartiteGraph:
    return BipartiteGraph.from_coo(
        np.asarray(rows, dtype=np.int64),
        np.asarray(cols, dtype=np.int64),
        int(nr),
        int(nc),
        name=name,
    )


def _random(rng, nr, nc, m, name):
    if nr == 0 or nc == 0:
        return _graph([], [], nr, nc, name)
    return _graph(rng.integers(0, nr, m), rng.integers(0, nc, m), nr, nc, name)


def _skewed(rng, nr, nc, name):
    """Power-law degrees on both sides: a few hub rows and hub columns."""
    m = 3 * max(nr, nc)
    pr = 1.0 / np.arange(1, nr + 1) ** 1.2
    pc = 1.0 / np.arange(1, nc + 1) ** 1.2
    r = rng.choice(nr, m, p=pr / pr.sum())
    c = rng.choice(nc, m, p=pc / pc.sum())
    return _graph(rng.permutation(nr)[r], rng.permutation(nc)[c], nr, nc, name)


def _staircase(n, name):
    """Edges (i, i) and (i, i + 1): with the start :func:`_staircase_start` the one
    augmenting path runs through every vertex (a BFS of n levels)."""
    i = np.arange(n)
    return _graph(np.r_[i, i[:-1]], np.r_[i, i[:-1] + 1], n, n, name)


def _staircase_start(n) -> Matching:
    rm = np.full(n, -1, dtype=np.int64)
    rm[: n - 1] = np.arange(1, n)
    return Matching.from_row_match(rm, n)


def graph_zoo(seed: int, count: int, max_side: int) -> list[BipartiteGraph]:
    """``count`` graphs cycling through the awkward kinds, sides up to ``max_side``."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(count):
        kind = t % 10
        nr, nc = (int(x) for x in rng.integers(1, max_side + 1, 2))
        name = f"z{seed}_{t}_k{kind}"
        if kind == 0:  # random, sparse to dense
            g = _random(rng, nr, nc, int(rng.integers(0, 3 * max(nr, nc) + 1)), name)
        elif kind == 1:
            g = _skewed(rng, nr, nc, name)
        elif kind == 2:  # empty rows and columns: only a third of each side has edges
            kr, kc = max(1, nr // 3), max(1, nc // 3)
            sr, sc = rng.choice(nr, kr, replace=False), rng.choice(nc, kc, replace=False)
            m = 2 * (kr + kc)
            g = _graph(sr[rng.integers(0, kr, m)], sc[rng.integers(0, kc, m)], nr, nc, name)
        elif kind == 3:  # very rectangular
            nr, nc = (nr, max(1, nr // 8)) if rng.random() < 0.5 else (max(1, nc // 8), nc)
            g = _random(rng, nr, nc, 2 * max(nr, nc), name)
        elif kind == 4:  # has a perfect matching: a hidden permutation plus noise
            n = nr
            p = rng.permutation(n)
            m = int(rng.integers(0, 2 * n + 1))
            g = _graph(
                np.r_[np.arange(n), rng.integers(0, n, m)],
                np.r_[p, rng.integers(0, n, m)],
                n,
                n,
                name,
            )
        elif kind == 5:  # isolated vertices on both sides, a dense core
            k = max(1, min(nr, nc) // 4)
            g = (
                _random(rng, nr, nc, 0, name)
                if k == 0
                else _graph(rng.integers(0, k, 4 * k), rng.integers(0, k, 4 * k), nr, nc, name)
            )
        elif kind == 6:  # tiny: 1 x 1 with or without its edge, 1 x n, n x 1
            shape = [(1, 1), (1, 1), (1, nc), (nr, 1)][t // 10 % 4]
            m = 0 if t // 10 % 4 == 1 else 3
            g = _random(rng, *shape, m, name)
        elif kind == 7:  # complete bipartite, small
            a, b = min(nr, 12), min(nc, 12)
            rr, cc = np.meshgrid(np.arange(a), np.arange(b), indexing="ij")
            g = _graph(rr.ravel(), cc.ravel(), nr, nc, name)
        elif kind == 8:  # long augmenting paths from the greedy start
            g = _staircase(nr, name)
        else:  # many duplicate entries (merged by from_coo; the API tests keep them)
            m = 6 * max(nr, nc)
            g = _graph(
                rng.integers(0, max(1, nr // 4), m),
                rng.integers(0, max(1, nc // 4), m),
                nr,
                nc,
                name,
            )
        out.append(g)
    return out


def _maximum(g: BipartiteGraph) -> int:
    if g.n_rows == 0 or g.n_cols == 0:
        return 0
    return int((maximum_bipartite_matching(g.to_scipy(), perm_type="column") >= 0).sum())


def _concat(graphs, answers):
    p = bg.pack_graphs(graphs)
    rm = np.concatenate([np.asarray(a.row_match) for a in answers] + [np.zeros(0, np.int64)])
    cm = np.concatenate([np.asarray(a.col_match) for a in answers] + [np.zeros(0, np.int64)])
    return p, rm, cm


# ---------------------------------------------------------------------------------------
# Kernel source and contract
# ---------------------------------------------------------------------------------------


def _nvrtc_missing() -> str | None:
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as exc:
        return f"CuPy's NVRTC is not usable here: {exc!r}"
    return None


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_kernel_compiles(arch):
    from matchbench.gpu import kernels

    ptx = kernels.compile_ptx("mcm_batch", arch)
    entries = [ln.split("(")[0].split()[-1] for ln in ptx.splitlines() if ".entry" in ln]
    assert entries == ["mcm_batch_apfb"]


def _defines(prefix: str) -> dict[str, int]:
    src = KERNEL.read_text()
    return {k: int(v) for k, v in re.findall(rf"#define MCM_BATCH_{prefix}(\w+) (-?\d+)", src)}


def test_meta_and_stats_slots_match_kernel_source():
    meta = _defines("M_")
    assert meta.pop("SIZE") == bg.META_SIZE
    assert meta == bg.META_SLOTS
    assert max(bg.META_SLOTS.values()) < bg.META_SIZE
    stats = _defines("S_")
    assert stats.pop("SIZE") == bg.STAT_SIZE
    assert stats == bg.STAT_SLOTS
    assert max(bg.STAT_SLOTS.values()) < bg.STAT_SIZE


def test_start_modes_errors_and_l0_match_kernel_source():
    assert _defines("START_") == {
        "GIVEN": bg.START_GIVEN,
        "GREEDY": bg.START_GREEDY,
        "EMPTY": bg.START_EMPTY,
    }
    assert set(_defines("E_").values()) == set(bg.KERNEL_ERRORS)
    assert int(re.search(r"#define MCM_BATCH_L0 (\d+)", KERNEL.read_text()).group(1)) == bg.L0
    # The state carve in the kernel is the one state_bytes counts: 3 row arrays, 2 column.
    src = KERNEL.read_text()
    carve = re.findall(r"int\* (\w+) = (\w+) \+ (nr|nc);", src)
    assert carve == [
        ("level", "rmate", "nr"),
        ("root", "level", "nr"),
        ("cmate", "root", "nr"),
        ("pred", "cmate", "nc"),
    ]
    assert bg.state_bytes(10, 7) == 4 * (3 * 10 + 2 * 7)


# ---------------------------------------------------------------------------------------
# Packing, groups, size rule
# ---------------------------------------------------------------------------------------


def test_pack_round_trip_and_offsets():
    graphs = graph_zoo(seed=3, count=40, max_side=30) + [
        _graph([], [], 0, 4, "no rows"),
        _graph([], [], 5, 0, "no cols"),
    ]
    p = bg.pack_graphs(graphs)
    assert p.size == len(graphs)
    assert bg.check_packed(p.indptr, p.indices, p.shapes, p.ptr_off, p.ind_off) is None
    for k, g in enumerate(graphs):
        ptr, ind, nr, nc = p.graph(k)
        assert (nr, nc) == (g.n_rows, g.n_cols)
        np.testing.assert_array_equal(ptr, g.row_ptr)
        np.testing.assert_array_equal(ind, g.row_ind)
        assert p.row_off[k] == sum(h.n_rows for h in graphs[:k])
        assert p.col_off[k] == sum(h.n_cols for h in graphs[:k])
    shp, ptr_off, ind_off = batch_offsets(p.indptr, p.shapes)
    np.testing.assert_array_equal(ptr_off, p.ptr_off)
    np.testing.assert_array_equal(ind_off, p.ind_off)


def test_meta_rows_point_at_each_graph():
    graphs = graph_zoo(seed=4, count=30, max_side=40)
    p = bg.pack_graphs(graphs)
    groups = bg.plan_groups(p.shapes, 0, smem_limit=bg.state_bytes(20, 20))
    start = np.full(p.size, bg.START_GREEDY)
    meta, order, scratch = bg.make_meta(p, groups, start)
    assert sorted(order.tolist()) == list(range(p.size))
    M = bg.META_SLOTS
    used = 0
    for q, k in enumerate(order):
        row = meta[q]
        assert (row[M["ROWS"]], row[M["COLS"]]) == tuple(p.shapes[k])
        assert row[M["PTR"]] == p.ptr_off[k] and row[M["IND"]] == p.ind_off[k]
        assert row[M["RMATE"]] == p.row_off[k] and row[M["CMATE"]] == p.col_off[k]
        fits = bg.state_bytes(*p.shapes[k]) <= bg.state_bytes(20, 20)
        if fits:
            assert row[M["SCRATCH"]] == -1
        else:  # global scratch, packed one after the other
            assert row[M["SCRATCH"]] == used
            used += bg.state_bytes(*p.shapes[k]) // 4
    assert scratch == used
    for g in groups:
        assert all(
            g.in_smem == (bg.state_bytes(*p.shapes[k]) <= bg.state_bytes(20, 20)) for k in g.members
        )
        sizes = [int(p.shapes[k].sum()) for k in g.members]
        assert sizes == sorted(sizes, reverse=True)
        assert all(g.threads_per_block == bg.auto_threads(p.shapes[k, 0]) for k in g.members)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda ip, ind: ind.__setitem__(0, 99), "column index 99 not in"),
        (lambda ip, ind: ind.__setitem__(0, -1), "column index -1 not in"),
        (lambda ip, ind: ip.__setitem__(0, 1), "do not start at 0"),
        (lambda ip, ind: ip.__setitem__(1, 5), "decrease"),
        (lambda ip, ind: ip.__setitem__(3, 50), "run past the end of indices"),
    ],
)
def test_check_packed_names_the_fault(mutate, message):
    graphs = [_graph([0, 0, 1, 2], [0, 1, 1, 2], 3, 3, "a"), _graph([0, 1], [1, 0], 2, 2, "b")]
    p = bg.pack_graphs(graphs)
    ip, ind = p.indptr.copy(), p.indices.copy()
    mutate(ip, ind)
    why = bg.check_packed(ip, ind, p.shapes, p.ptr_off, p.ind_off)
    assert why is not None and message in why and why.startswith("graph 0")


def test_size_rule_skips_large_graphs_with_reason():
    solver = bg.MCMBatchGPU(threads_per_block=0)
    big = _graph([], [], 40000, 30000, "big")
    skip, reason = solver.skip(big)
    assert skip and "65536" in reason and "apfb" in reason
    assert bg.size_rule(32768, 32768, 0) is None
    assert "65536" in bg.size_rule(32768, 32769, 0)
    assert "int32" in bg.size_rule(10, 10, 1 << 31)
    small = _graph([0], [0], 1, 1, "small")
    skip, reason = solver.skip(small)
    assert not skip or reason.startswith("no usable CUDA device")
    with pytest.raises(ValueError, match="graph 1: n_rows \\+ n_cols = 70000"):
        bg.plan_groups(np.array([[4, 4], [40000, 30000]]))
    # The rule is stated where users read it.
    yaml = (ROOT / "conf" / "algorithm" / "mcm_batch_gpu.yaml").read_text()
    assert "65536" in yaml and "apfb" in yaml
    assert "65536" in bg.MCMBatchGPU.__doc__.replace(",", "")


def test_auto_threads_and_block_size_validation():
    assert bg.auto_threads(256) == 64 and bg.auto_threads(4096) == 256
    with pytest.raises(ValueError, match="threads_per_block"):
        bg.MCMBatchGPU(threads_per_block=100)


def test_constructor_does_not_need_a_gpu():
    s = bg.MCMBatchGPU(threads_per_block=64)
    assert s.batchable and s.device == "gpu" and s.problem == "mcm"
    assert s.variant() == "threads_per_block=64"


def test_solve_batch_rejects_bad_input_before_any_launch():
    ip, ind = np.array([0, 2, 3]), np.array([0, 5, 0])
    with pytest.raises(ValueError, match="column index 5"):
        solve_batch(ip, ind, [(2, 2)])
    with pytest.raises(ValueError, match="indptr has 3 entries"):
        solve_batch(ip, ind, [(2, 2), (1, 1)])
    with pytest.raises(ValueError, match="65536"):
        solve_batch(np.zeros(40001, np.int64), np.zeros(0, np.int64), [(40000, 30000)])
    with pytest.raises(ValueError, match="threads_per_block"):
        solve_batch(ip, ind, [(2, 2)], threads_per_block=7)


# ---------------------------------------------------------------------------------------
# The kernel's algorithm on the CPU
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_reference_is_maximum_under_random_interleavings(seed):
    """Every awkward kind, every start, the threads' accesses interleaved at random."""
    graphs = graph_zoo(seed=seed, count=60, max_side=24)
    rng = np.random.default_rng(100 + seed)
    problem = MCM()
    for g in graphs:
        want = _maximum(g)
        for start in (bg.START_GREEDY, bg.START_EMPTY):
            rm, cm, st = bg.apfb_reference(
                g.row_ptr, g.row_ind, g.n_rows, g.n_cols, start=start, rng=rng
            )
            v = problem.verify(g, Matching(rm, cm))
            assert v.verified, (g.name, start, v.reason)
            assert st["cardinality"] == want == int((cm >= 0).sum()), g.name
            assert st["phases"] <= min(g.n_rows, g.n_cols) + 2


def test_reference_in_thread_order_and_from_a_given_start():
    problem = MCM()
    for g in graph_zoo(seed=9, count=80, max_side=60):
        init = problem.initialize(g)
        rm, cm, st = bg.apfb_reference(
            g.row_ptr,
            g.row_ind,
            g.n_rows,
            g.n_cols,
            start=bg.START_GIVEN,
            row_match=init.row_match,
            col_match=init.col_match,
        )
        assert problem.verify(g, Matching(rm, cm)).verified, g.name
        assert st["initial"] == init.cardinality
        assert st["cardinality"] == _maximum(g)


@pytest.mark.parametrize("n", [2, 7, 40])
def test_reference_long_augmenting_path(n):
    """One augmenting path through all 2n vertices: a BFS of n levels, one phase."""
    g = _staircase(n, "stairs")
    s = _staircase_start(n)
    rm, cm, st = bg.apfb_reference(
        g.row_ptr,
        g.row_ind,
        n,
        n,
        start=bg.START_GIVEN,
        row_match=s.row_match,
        col_match=s.col_match,
        rng=np.random.default_rng(n),
    )
    assert st["cardinality"] == n and st["initial"] == n - 1
    assert st["phases"] == 2 and st["levels"] == n + 1  # n levels, then the empty BFS
    np.testing.assert_array_equal(rm, np.arange(n))


def test_reference_alternate_race_of_fig1():
    """Deveci et al. Fig. 1 with the sides swapped: one free row reaches two free columns
    through a matched row, so two walks meet at it; under every interleaving exactly one
    of them completes and the matching grows by one."""
    # rows 0 (free), 1 (matched to column 0); row 0 - column 0, row 1 - columns 1, 2.
    g = _graph([0, 1, 1, 1], [0, 0, 1, 2], 2, 3, "fig1")
    for seed in range(200):
        rm, cm, st = bg.apfb_reference(
            g.row_ptr,
            g.row_ind,
            2,
            3,
            start=bg.START_GIVEN,
            row_match=np.array([-1, 0]),
            col_match=np.array([1, -1, -1]),
            rng=np.random.default_rng(seed),
        )
        assert st["cardinality"] == 2 and MCM().verify(g, Matching(rm, cm)).verified


def test_reference_error_codes_name_the_kernel_errors():
    err = bg.KernelError(3)
    assert err.code == 3 and "ALTERNATE" in str(err)
    assert "error code 9" in str(bg.KernelError(9))


# ---------------------------------------------------------------------------------------
# The bulk certificate
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def solved_batch():
    graphs = graph_zoo(seed=11, count=80, max_side=30)
    answers = []
    for g in graphs:
        rm, cm, _ = bg.apfb_reference(g.row_ptr, g.row_ind, g.n_rows, g.n_cols)
        answers.append(Matching(rm.astype(np.int64), cm.astype(np.int64)))
    return graphs, answers


def test_certificate_accepts_maximum_matchings(solved_batch):
    graphs, answers = solved_batch
    p, rm, cm = _concat(graphs, answers)
    cert = certify_batch(p.indptr, p.indices, p.shapes, rm, cm)
    assert cert.ok.all(), [r for r in cert.reasons if r]
    np.testing.assert_array_equal(cert.cardinality, [a.cardinality for a in answers])
    np.testing.assert_array_equal(cert.cardinality, [_maximum(g) for g in graphs])


def test_certificate_of_an_empty_batch_and_of_empty_graphs():
    z = np.zeros(0, np.int64)
    cert = certify_batch(z, z, np.zeros((0, 2), np.int64), z, z)
    assert cert.ok.shape == (0,) and cert.reasons == []
    graphs = [_graph([], [], 0, 3, "a"), _graph([], [], 2, 0, "b"), _graph([], [], 2, 2, "c")]
    p = bg.pack_graphs(graphs)
    cert = certify_batch(p.indptr, p.indices, p.shapes, np.full(4, -1), np.full(5, -1))
    assert cert.ok.all() and cert.cardinality.tolist() == [0, 0, 0]


def _matched_pairs(a: Matching):
    rows = np.flatnonzero(np.asarray(a.row_match) >= 0)
    return [(int(i), int(a.row_match[i])) for i in rows]


def _drop_edge(g, a, rng):
    i, j = _matched_pairs(a)[int(rng.integers(len(_matched_pairs(a))))]
    a.row_match[i] = -1
    a.col_match[j] = -1
    return "not maximum: augmenting path"


def _two_rows_one_column(g, a, rng):
    pairs = _matched_pairs(a)
    (_, j), (i2, _) = pairs[0], pairs[1]
    a.row_match[i2] = j
    return "invalid:"


def _disagree(g, a, rng):
    i, j = _matched_pairs(a)[0]
    a.col_match[j] = -1
    return "invalid:"


def _non_edge(g, a, rng):
    # Match a free row to a free column it is not adjacent to, if there is such a pair;
    # else rematch an edge's row to a non-neighbour column by swapping two pairs.
    pairs = _matched_pairs(a)
    for i, j in pairs:
        for i2, j2 in pairs:
            if i2 != i and j2 not in set(g.row_ind[g.row_ptr[i] : g.row_ptr[i + 1]].tolist()):
                a.row_match[i], a.row_match[i2] = j2, j
                a.col_match[j2], a.col_match[j] = i, i2
                return "invalid:"
    return None


def _into_next_graph(g, a, rng):
    i, _ = _matched_pairs(a)[0]
    a.row_match[i] = g.n_cols  # a column of the next graph in the union
    return f"is not a column index in [-1, {g.n_cols})"


@pytest.mark.parametrize(
    "mutation", [_drop_edge, _two_rows_one_column, _disagree, _non_edge, _into_next_graph]
)
def test_certificate_mutations_are_named_by_graph(solved_batch, mutation):
    graphs, answers = solved_batch
    rng = np.random.default_rng(5)
    answers = [a.copy() for a in answers]
    candidates = [k for k, a in enumerate(answers) if len(_matched_pairs(a)) >= 2]
    hit = {}
    for k in rng.choice(candidates, size=5, replace=False):
        why = mutation(graphs[k], answers[k], rng)
        if why is not None:
            hit[int(k)] = why
    assert hit
    p, rm, cm = _concat(graphs, answers)
    cert = certify_batch(p.indptr, p.indices, p.shapes, rm, cm)
    assert set(np.flatnonzero(~cert.ok).tolist()) == set(hit)
    for k, why in hit.items():
        assert why in cert.reasons[k], (k, cert.reasons[k])
    assert all(cert.reasons[k] is None for k in np.flatnonzero(cert.ok))


def test_certificate_rejects_float_mates_and_wrong_lengths(solved_batch):
    graphs, answers = solved_batch
    p, rm, cm = _concat(graphs, answers)
    cert = certify_batch(p.indptr, p.indices, p.shapes, rm.astype(float), cm)
    assert not cert.ok.any() and "dtype" in cert.reasons[0]
    with pytest.raises(ValueError, match="entries"):
        certify_batch(p.indptr, p.indices, p.shapes, rm[:-1], cm)


def test_certificate_with_duplicates_and_explicit_offsets():
    """Raw CSR with duplicate entries and a gap between the graphs' indices."""
    ip = np.array([0, 3, 4, 0, 2])
    ind = np.array([1, 1, 1, 1, -7, 0, 0])  # graph 0: row 0 -> 1,1,1; row 1 -> 1. gap. graph 1
    shapes = np.array([[2, 2], [1, 1]])
    offs = np.array([0, 5])
    rm, cm = np.array([1, -1, 0]), np.array([-1, 0, 0])
    cert = certify_batch(ip, ind, shapes, rm, cm, indices_offsets=offs)
    assert cert.ok.all() and cert.cardinality.tolist() == [1, 1]
    cert = certify_batch(
        ip, ind, shapes, np.array([-1, -1, 0]), np.array([-1, -1, 0]), indices_offsets=offs
    )
    assert cert.ok.tolist() == [False, True]


# ---------------------------------------------------------------------------------------
# GPU: the stress test
# ---------------------------------------------------------------------------------------


def _check_all(graphs, answers):
    p, rm, cm = _concat(graphs, answers)
    cert = certify_batch(p.indptr, p.indices, p.shapes, rm, cm)
    wrong = {graphs[k].name: cert.reasons[k] for k in np.flatnonzero(~cert.ok)}
    assert not wrong, wrong
    want = np.array([_maximum(g) for g in graphs])
    off = np.flatnonzero(cert.cardinality != want)
    assert off.size == 0, [(graphs[k].name, int(cert.cardinality[k]), int(want[k])) for k in off]


@pytest.mark.gpu
@pytest.mark.parametrize("threads_per_block", [0, 32, 1024])
def test_gpu_stress_zoo(threads_per_block):
    graphs = graph_zoo(seed=21, count=400, max_side=300)
    graphs += [
        _graph([], [], 0, 3, "no rows"),
        _graph([], [], 3, 0, "no cols"),
        _graph([0], [0], 1, 1, "1x1"),
        _graph([], [], 1, 1, "1x1 empty"),
    ]
    solver = bg.MCMBatchGPU(threads_per_block=threads_per_block)
    solver.prepare_batch(graphs, None)
    solver.run()
    answers = solver.result_batch()
    _check_all(graphs, answers)
    c = solver.counters()
    assert c["batch_size"] == len(graphs) and c["host_syncs"] == 0
    assert c["phases"] >= len(graphs) and solver.timings()["solve"] > 0


@pytest.mark.gpu
def test_gpu_from_the_cheap_matching_and_repeated_runs():
    graphs = graph_zoo(seed=22, count=300, max_side=200)
    problem = MCM()
    inits = [problem.initialize(g) for g in graphs]
    solver = bg.MCMBatchGPU(threads_per_block=0)
    for _ in range(2):  # the second repetition reuses the upload and restarts from inits
        solver.prepare_batch(graphs, inits)
        solver.run()
        answers = solver.result_batch()
        _check_all(graphs, answers)
        assert solver.counters()["initial_cardinality"] == sum(m.cardinality for m in inits)


@pytest.mark.gpu
def test_gpu_long_paths_and_rgg_sizes_of_mcm_many():
    from matchbench.families.mcm.datasets import rgg

    graphs = [rgg(scale=s, seed=k) for k, s in enumerate([8, 9, 10, 11, 12] * 4)]
    stairs = [_staircase(n, f"stairs{n}") for n in (3, 100, 1000, 2048)]
    inits = [None] * len(graphs) + [_staircase_start(g.n_rows) for g in stairs]
    solver = bg.MCMBatchGPU(threads_per_block=0)
    solver.prepare_batch(graphs + stairs, inits)
    solver.run()
    _check_all(graphs + stairs, solver.result_batch())


@pytest.mark.gpu
def test_gpu_global_scratch_placement(monkeypatch):
    """The same kernel with every graph's state in global scratch."""
    monkeypatch.setattr(bg, "smem_limit", lambda: 0)
    graphs = graph_zoo(seed=23, count=200, max_side=150)
    solver = bg.MCMBatchGPU(threads_per_block=0)
    solver.prepare_batch(graphs, None)
    assert not any(g.in_smem for g in solver._dev.groups)
    solver.run()
    _check_all(graphs, solver.result_batch())


@pytest.mark.gpu
def test_gpu_single_instance_interface():
    g = _staircase(50, "stairs")
    solver = bg.MCMBatchGPU(threads_per_block=0)
    solver.prepare(g, _staircase_start(50))
    solver.run()
    m = solver.result()
    assert MCM().verify(g, m).verified and m.cardinality == 50


def _raw_batch(seed: int, count: int):
    """Raw CSR with duplicates and unsorted indices, as scipy matrices and arrays."""
    rng = np.random.default_rng(seed)
    mats = []
    for _ in range(count):
        nr, nc = (int(x) for x in rng.integers(0, 120, 2))
        m = int(rng.integers(0, 4 * max(nr, nc, 1)))
        r = rng.integers(0, max(nr, 1), m) if nr else np.zeros(0, int)
        c = rng.integers(0, max(nc, 1), m) if nc else np.zeros(0, int)
        if not (nr and nc):
            r = c = np.zeros(0, int)
        order = np.argsort(r, kind="stable")
        indptr = np.zeros(nr + 1, dtype=np.int64)
        np.add.at(indptr, r + 1, 1)
        mats.append((np.cumsum(indptr), c[order], nr, nc))  # duplicates kept, unsorted
    indptr = np.concatenate([a[0] for a in mats])
    indices = np.concatenate([a[1] for a in mats] + [np.zeros(0, np.int64)])
    shapes = np.array([(a[2], a[3]) for a in mats])
    return mats, indptr, indices, shapes


@pytest.mark.gpu
@pytest.mark.parametrize("on_device", [False, True])
def test_gpu_solve_batch_array_api(on_device):
    import cupy as cp

    mats, indptr, indices, shapes = _raw_batch(31, 300)
    xp = cp if on_device else np
    out = solve_batch(xp.asarray(indptr), xp.asarray(indices), shapes, verify=True)
    assert isinstance(out.row_match, cp.ndarray if on_device else np.ndarray)
    assert len(out) == len(mats)
    card = out.cardinality.get() if on_device else out.cardinality
    for k, (p, c, nr, nc) in enumerate(mats):
        want = 0
        if nr and nc:
            a = sp.csr_matrix((np.ones(c.shape[0]), c, p), shape=(nr, nc))
            a.sum_duplicates()
            want = int((maximum_bipartite_matching(a, perm_type="column") >= 0).sum())
        assert card[k] == want, k
        rm, cm = out.mates(k)
        assert int((rm >= 0).sum()) == want
    # The certificate independently of verify=True, on the returned arrays.
    rm_all = out.row_match.get() if on_device else out.row_match
    cm_all = out.col_match.get() if on_device else out.col_match
    cert = certify_batch(indptr, indices, shapes, rm_all, cm_all)
    assert cert.ok.all()


@pytest.mark.gpu
def test_gpu_solve_batch_with_gaps_between_graphs():
    indptr = np.array([0, 3, 4, 0, 2])
    indices = np.array([1, 1, 0, 1, 99, 0, 0])  # index 4 belongs to no graph
    out = solve_batch(indptr, indices, [(2, 2), (1, 1)], indices_offsets=[0, 5])
    assert out.cardinality.tolist() == [2, 1]


def test_reference_and_certificate_on_raw_csr_with_duplicates():
    """Unsorted rows with repeated entries, as the array API accepts them."""
    mats, indptr, indices, shapes = _raw_batch(32, 120)
    rms, cms = [], []
    rng = np.random.default_rng(7)
    for k, (p, c, nr, nc) in enumerate(mats):
        rm, cm, st = bg.apfb_reference(p, c, nr, nc, rng=rng if k % 4 == 0 else None)
        rms.append(rm)
        cms.append(cm)
    rm_all = np.concatenate(rms + [np.zeros(0, np.int32)])
    cm_all = np.concatenate(cms + [np.zeros(0, np.int32)])
    cert = certify_batch(indptr, indices, shapes, rm_all, cm_all)
    assert cert.ok.all(), [r for r in cert.reasons if r]
    for k, (p, c, nr, nc) in enumerate(mats):
        want = 0
        if nr and nc:
            a = sp.csr_matrix((np.ones(c.shape[0]), c, p), shape=(nr, nc))
            a.sum_duplicates()
            want = int((maximum_bipartite_matching(a, perm_type="column") >= 0).sum())
        assert cert.cardinality[k] == want
