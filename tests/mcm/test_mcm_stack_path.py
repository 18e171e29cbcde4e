"""Many small MCM graphs as one stack (issue #31): ``rgg.matchbench_stack`` makes a batch's
graphs as a :class:`~matchbench.graphs.stack.GraphStack` on host threads (each graph array
for array ``rgg``'s, its points drawn by NumPy's PCG64 in compiled code), ``init=cheap_cpu``
starts all of them at once, ``hk`` (CPU) and ``mcm_batch_gpu`` solve the whole stack, and
``MCM.verify_stack`` certifies every answer with the König cover of ``verify``; the rows
are those of the one-by-one path.
"""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest

from matchbench.core.errors import DatasetError
from matchbench.core.seeds import seed_words
from matchbench.core.stack import InstanceStack
from matchbench.families.mcm import datasets as D
from matchbench.families.mcm.cheap import CheapCPU, cheap_matching, cheap_stack
from matchbench.families.mcm.problem import MCM
from matchbench.graphs import generators as G
from matchbench.graphs.rgg_numba import draw_points
from matchbench.graphs.stack import MatchingStack
from matchbench.runner.batch import Batch
from matchbench.runner.plan import build_plan
from matchbench.runner.task import execute_batch

RGG = "matchbench.families.mcm.datasets.rgg"
HK = {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}
CHEAP = {"_target_": "matchbench.families.mcm.cheap.CheapCPU"}
GPU = {"_target_": "matchbench.families.mcm.batch_gpu.MCMBatchGPU", "threads_per_block": 0}
ARRAYS = ("row_ptr", "row_ind", "col_ptr", "col_ind")
TIMES_AND_JOINT = {"batch_size", "counters_json", "iterations", "t_init_s", "gpu_mem_peak_bytes"}


def _graphs(count, lo=4, hi=9, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(lo, hi + 1, size=count).tolist(), rng.integers(0, 2**40, size=count).tolist()


def _same_graph(a, b):
    for f in ARRAYS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f
    assert (a.n_rows, a.n_cols, a.name, a.family, a.params) == (b.n_rows, b.n_cols, b.name, b.family, b.params)


def test_draw_points_is_numpys_default_rng():
    seeds = [0, 1, 12345, 2**32 - 1, 2**32, 2**40 + 7, 2**63 + 5, 2**64 - 1]
    sizes = [256, 1, 3, 8, 100, 4096, 17, 2]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    xy = np.empty((int(offsets[-1]), 2))
    draw_points(seed_words(seeds), offsets, xy)
    for k, (s, n) in enumerate(zip(seeds, sizes, strict=True)):
        assert np.array_equal(xy[offsets[k] : offsets[k + 1]], np.random.default_rng(s).random((n, 2)))


@pytest.mark.parametrize("chunk_points", [1 << 16, 300])
def test_rgg_stack_is_rgg_graph_for_graph(monkeypatch, chunk_points):
    monkeypatch.setattr(G, "RGG_STACK_POINTS", chunk_points)
    scales, seeds = _graphs(120)
    stack = G.rgg_stack(scales, seeds, [0.55] * 60 + [0.8] * 60, threads=3)
    assert len(stack) == 120 and stack.chunks[0].first == 0
    for k in range(120):
        g = G.rgg(scales[k], seeds[k], 0.55 if k < 60 else 0.8)
        _same_graph(stack.graph(k), g)
        # one copy of each symmetric graph: its column CSR is its row CSR
        assert np.shares_memory(stack.graph(k).col_ind, stack.graph(k).row_ind) or g.n_edges == 0
        assert stack.nbytes[k] == g.nbytes and stack.n_edges[k] == g.n_edges


def test_rgg_stack_makes_large_and_unmade_graphs_with_rgg(monkeypatch):
    """A graph over RGG_BULK_POINTS goes alone, and a graph the compiled chunk does not
    make (a key rounded into the next strip) is made by rgg() itself: the same graphs."""
    from matchbench.graphs import rgg_numba

    real = rgg_numba.rgg_csr_chunk

    def unmade(xy, offsets, radii, work, **kw):  # the chunk's second graph "not made"
        out, at, ok, work = real(xy, offsets, radii, work, **kw)
        if ok.shape[0] > 1:
            ok[1] = False
        return out, at, ok, work

    monkeypatch.setattr(rgg_numba, "rgg_csr_chunk", unmade)
    monkeypatch.setattr(G, "RGG_BULK_POINTS", 1 << 7)
    scales = [5, 6, 8, 6, 5, 9, 4]
    seeds = list(range(10, 17))
    stack = G.rgg_stack(scales, seeds, [0.55] * 7, threads=2)
    for k in range(7):
        _same_graph(stack.graph(k), G.rgg(scales[k], seeds[k]))


def test_rgg_stack_puts_its_graphs_where_empty_allocates():
    made = []

    def empty(size, dtype):
        made.append(np.empty(size, dtype))
        return made[-1]

    stack = G.rgg_stack([5, 6, 7], [1, 2, 3], [0.55] * 3, empty=empty)
    assert [c.buf for c in stack.chunks] == made[: len(stack.chunks)] and len(made) == len(stack.chunks)


@pytest.mark.parametrize(("scale", "seed", "rf", "message"), [
    (0, 1, 0.55, "rgg: scale"), (5, -1, 0.55, "rgg: seed"), (5, 1, 0.0, "radius_factor"), ("x", 1, 0.55, "rgg"),
])
def test_rgg_stack_refuses_what_rgg_refuses(scale, seed, rf, message):
    with pytest.raises(DatasetError, match=message):
        G.rgg_stack([5, scale], [1, seed], [0.55, rf])


def test_the_hook_gives_the_one_by_one_instances_and_columns():
    scales, seeds = _graphs(30)
    stack = D.rgg.matchbench_stack({"radius_factor": 0.6}, {"scale": scales, "seed": seeds}, 30)
    assert isinstance(stack, InstanceStack) and stack.problem == "mcm" and stack.count == 30
    from matchbench.core.canonical import to_json

    for k in range(30):
        g = D.rgg(scale=scales[k], seed=seeds[k], radius_factor=0.6)
        _same_graph(stack.instance(k), g)
        cols = {key: (v[k] if isinstance(v, list | np.ndarray) else v) for key, v in stack.columns.items()}
        assert cols["instance_params"] == to_json(g.params)
        assert {key: cols[key] for key in g.describe()} == g.describe()
        assert cols["instance_bytes"] == g.nbytes and cols["rcp"] is False
    # what it does not take: another argument that varies, or no scale
    assert D.rgg.matchbench_stack({}, {"scale": scales, "seed": seeds, "name": ["x"] * 30}, 30) is None
    assert D.rgg.matchbench_stack({}, {"seed": seeds}, 30) is None


def test_cheap_stack_is_cheap_matching_graph_for_graph():
    scales, seeds = _graphs(80, 3, 10)
    stack = G.rgg_stack(scales, seeds, [0.55] * 80)
    init = cheap_stack(stack, threads=3)
    assert CheapCPU().stackable and isinstance(CheapCPU().initialize_stack(stack), MatchingStack)
    for k in range(80):
        a, b = init.matching(k), cheap_matching(stack.graph(k))
        assert np.array_equal(a.row_match, b.row_match) and np.array_equal(a.col_match, b.col_match)
        assert init.cardinality[k] == b.cardinality
    assert np.array_equal(MCM().initial_objectives(init), init.cardinality.astype(float))


def _solved(count=60, seed=3):
    """A stack of rgg graphs and their maximum matchings (HK from the cheap matching)."""
    from matchbench.families.mcm.ref_numba import HopcroftKarp

    scales, seeds = _graphs(count, 3, 9, seed)
    stack = D.rgg.matchbench_stack({}, {"scale": scales, "seed": seeds}, count)
    solver = HopcroftKarp()
    solver.prepare_stack(stack, cheap_stack(stack.data))
    solver.run()
    return stack, solver.result_stack()


def _mutate(answers, k, how, graph):
    rm, cm = answers.row_match, answers.col_match
    r0, c0 = int(answers.row_offsets[k]), int(answers.col_offsets[k])
    rows = np.flatnonzero(rm[r0 : r0 + graph.n_rows] >= 0)
    i = int(rows[0])
    j = int(rm[r0 + i])
    if how == "drop":  # a valid matching, one pair short: not maximum
        rm[r0 + i] = -1
        cm[c0 + j] = -1
    elif how == "range":
        rm[r0 + i] = graph.n_cols
    elif how == "inconsistent":
        cm[c0 + j] = -1
    elif how == "non_edge":  # a pair that is no edge: row i with a column it does not touch
        free = np.setdiff1d(np.arange(graph.n_cols), graph.row_ind[graph.row_ptr[i] : graph.row_ptr[i + 1]])
        free = free[cm[c0 + free] < 0]
        if free.size == 0:
            return False
        cm[c0 + j] = -1
        rm[r0 + i] = int(free[0])
        cm[c0 + int(free[0])] = i
    return True


@pytest.mark.parametrize("how", ["drop", "range", "inconsistent", "non_edge"])
def test_verify_stack_gives_verifys_verdicts_with_planted_faults(how):
    stack, answers = _solved()
    problem = MCM()
    rng = np.random.default_rng(7)
    planted = []
    for k in rng.choice(len(stack.data), size=8, replace=False).tolist():
        g = stack.instance(k)
        if g.n_edges and _mutate(answers, k, how, g):
            planted.append(k)
    assert planted
    verdicts = problem.verify_stack(stack, answers)
    assert sorted(np.flatnonzero(~verdicts.verified).tolist()) == sorted(planted)
    for k in range(len(stack.data)):
        v = problem.verify(stack.instance(k), answers.matching(k))
        assert bool(verdicts.verified[k]) == v.verified
        assert verdicts.reasons.get(k) == (None if v.verified else str(v.reason))
        for got, want in ((verdicts.objective[k], v.objective), (verdicts.bound[k], v.bound),
                          (verdicts.reference[k], v.reference)):
            assert (np.isnan(got) and want is None) or got == want or (np.isnan(got) and np.isnan(want))


def test_verify_stack_refuses_answers_that_are_not_the_stacks():
    stack, answers = _solved(10)
    bad = MatchingStack(answers.row_match[:-1], answers.col_match, answers.row_offsets, answers.col_offsets)
    with pytest.raises(ValueError, match="offsets|mates"):
        MCM().verify_stack(stack, bad)
    floats = MatchingStack(answers.row_match.astype(float), answers.col_match, answers.row_offsets,
                           answers.col_offsets)
    with pytest.raises(ValueError, match="mates"):
        MCM().verify_stack(stack, floats)


# -- through the runner ------------------------------------------------------------------


def _batch(tmp_path, algorithm=HK, count=9, scale=(4, 7), init=CHEAP, reps=2):
    cfg = {
        "algorithm": algorithm,
        "dataset": {"name": "g", "many": {"_target_": RGG}, "count": count, "seed": 1,
                    "draw": {"scale": list(scale)}},
        "gpu": {"repetitions": reps, "warmup": 1},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "isolate": True, "verify": True},
        "data_dir": str(tmp_path / "data"),
    }
    if init is not None:
        cfg["init"] = init
    plan = build_plan(cfg)
    assert not plan.error_rows, plan.error_rows
    return Batch(batch_id="b0", tasks=plan.tasks)


def _stack_rows(batch):
    from matchbench.runner.stack import stack_batch

    sent: list = []
    tables = stack_batch(pickle.loads(pickle.dumps(batch)), lambda k, p: sent.append((k, p)), notes := [])
    rows = None if tables is None else pa.concat_tables([t.full() for t in tables]).to_pylist()
    return rows, sent, notes


def _content(rows, skip):
    from matchbench.results.schema import COLUMNS

    times = {"timestamp"} | {c for c in COLUMNS if c.startswith("t_") or c.endswith("_per_s")}
    out = []
    for r in rows:
        full = {c: r.get(c) for c in COLUMNS if c not in skip}
        out.append(tuple((c, (v is None) if c in times else v) for c, v in full.items()))
    return sorted(out, key=lambda t: (dict(t)["task_id"], dict(t)["repetition"]))


def test_stack_rows_are_the_one_by_one_rows(tmp_path):
    batch = _batch(tmp_path)
    new, sent, notes = _stack_rows(batch)
    assert new is not None and not notes
    old, _ = execute_batch(batch)
    assert len(new) == len(old) == 2 * 9
    assert _content(new, TIMES_AND_JOINT) == _content(old, TIMES_AND_JOINT)
    for r in new:
        assert r["status"] == "ok" and r["verified"] and r["batch_size"] == 9 and r["init"] == "cheap_cpu"
        assert r["t_init_s"] > 0 and r["t_e2e_s"] >= r["t_solve_s"] > 0 and r["t_verify_s"] > 0
    by_task = {r["task_id"]: r["objective_init"] for r in old}
    assert all(r["objective_init"] == by_task[r["task_id"]] for r in new)
    assert sent[0] == ("joint", list(range(9)))


def test_a_family_initializer_without_init_config_goes_one_by_one(tmp_path):
    """With no ``init`` the family's own initializer runs per instance: not a stack."""
    new, _, _ = _stack_rows(_batch(tmp_path, init=None))
    assert new is None


def test_a_wrong_answer_in_a_stack_is_that_instances_wrong_row(tmp_path, monkeypatch):
    from matchbench.families.mcm.ref_numba import HopcroftKarp

    real = HopcroftKarp.result_stack

    def short(self):
        answers = real(self)
        g = self._stack[0].graph(2)
        _mutate(answers, 2, "drop", g)
        return answers

    monkeypatch.setattr(HopcroftKarp, "result_stack", short)
    batch = _batch(tmp_path, count=6, scale=(5, 6), reps=1)
    new, _, notes = _stack_rows(batch)
    assert new is not None and not notes
    wrong = [r for r in new if r["status"] != "ok"]
    assert [r["task_id"] for r in wrong] == [batch.column("task_id")[2]]
    assert wrong[0]["status"] == "wrong" and "not maximum" in wrong[0]["verify_reason"]


def test_an_initializer_that_raises_runs_the_batch_one_by_one(tmp_path, monkeypatch):
    def boom(self, data):
        raise RuntimeError("no stack today")

    monkeypatch.setattr(CheapCPU, "initialize_stack", boom)
    new, sent, notes = _stack_rows(_batch(tmp_path, count=4, reps=1))
    assert new is None and "no stack today" in notes[0]


# -- on the GPU ----------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_stack_rows_equal_the_joint_solves_rows(tmp_path, monkeypatch):
    import json

    batch = _batch(tmp_path, GPU, count=200, scale=(8, 12), reps=1)
    new, _, notes = _stack_rows(batch)
    assert new is not None and not notes
    monkeypatch.setenv("MATCHBENCH_NO_STACK", "1")
    out: list = []
    execute_batch(batch, tables=out)
    old = pa.concat_tables([t.full() if hasattr(t, "full") else t for t in out]).to_pylist()
    assert len(new) == len(old) == 200
    assert _content(new, TIMES_AND_JOINT) == _content(old, TIMES_AND_JOINT)

    def drop(r):
        return {k: v for k, v in json.loads(r["counters_json"]).items() if k != "batch_solve_s"}

    # which shortest paths the blocks find first is a race: the phases and BFS levels of
    # two solves of the same graphs may differ; the start and the launches may not
    raced = {"phases", "bfs_levels"}
    a, b = drop(new[0]), drop(old[0])
    assert {k: v for k, v in a.items() if k not in raced} == {k: v for k, v in b.items() if k not in raced}
    assert all(a[k] > 0 and b[k] > 0 for k in raced)
    assert all(drop(r) == a for r in new) and all(r["status"] == "ok" and r["verified"] and r["batch_size"] == 200
                                                    for r in new)


@pytest.mark.gpu
def test_gpu_stack_stress_hundreds_of_random_stacks_zero_wrong():
    """300 stacks of random sizes and radii through mcm_batch_gpu's stack path, from the
    cheap matching or from the block's own greedy start: every answer certified, and its
    cardinality scipy's maximum."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_bipartite_matching

    from matchbench.families.mcm.batch_gpu import MCMBatchGPU

    rng = np.random.default_rng(33)
    wrong = 0
    for trial in range(300):
        count = int(rng.integers(2, 60))
        scales = rng.integers(1, 13, size=count).tolist()
        seeds = rng.integers(0, 2**40, size=count).tolist()
        rf = float(rng.choice([0.3, 0.55, 1.0, 2.0]))
        stack = D.rgg.matchbench_stack({"radius_factor": rf}, {"scale": scales, "seed": seeds}, count)
        solver = MCMBatchGPU(threads_per_block=int(rng.choice([0, 32, 128])))
        solver.prepare_stack(stack, cheap_stack(stack.data) if trial % 2 else None)
        solver.run()
        answers = solver.result_stack()
        verdicts = MCM().verify_stack(stack, answers)
        wrong += int((~verdicts.verified).sum())
        for k in rng.choice(count, size=min(2, count), replace=False).tolist():
            g = stack.instance(k)
            a = sp.csr_matrix((np.ones(g.n_edges), g.row_ind, g.row_ptr), shape=(g.n_rows, g.n_cols))
            best = int((maximum_bipartite_matching(a, perm_type="column") >= 0).sum())
            assert verdicts.objective[k] == best
    assert wrong == 0


@pytest.mark.gpu
def test_gpu_stack_repetitions_reuse_the_upload(tmp_path):
    from matchbench.families.mcm.batch_gpu import MCMBatchGPU

    stack = D.rgg.matchbench_stack({}, {"scale": [6, 7, 8], "seed": [1, 2, 3]}, 3)
    init = cheap_stack(stack.data)
    solver = MCMBatchGPU()
    solver.prepare_stack(stack, init)
    dev = solver._dev
    solver.run()
    first = solver.result_stack()
    solver.prepare_stack(stack, init)
    assert solver._dev is dev
    solver.run()
    again = solver.result_stack()
    assert np.array_equal(first.row_match, again.row_match)
    assert all(first.matching(k).cardinality == again.cardinality[k] for k in range(3))



# -- many graphs from one .npz (dataset=mcm_stack) ----------------------------------------


def _random_graphs(count, seed=5):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        nr, nc = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        a = sp.random(nr, nc, density=float(rng.uniform(0.02, 0.3)), format="csr", random_state=rng)
        a.data[:] = 1
        if a.nnz == 0:
            a = sp.csr_matrix(([1], ([0], [0])), shape=(nr, nc))
        out.append(a)
    return out


def test_the_file_hook_gives_csr_stacks_graphs_and_columns(tmp_path):
    from matchbench.core.canonical import to_json
    from matchbench.families.mcm.stackfile import save_csr_stack

    path = save_csr_stack(tmp_path / "g.npz", _random_graphs(70))
    index = [3, 0, 69, 12, 12, 40] + list(range(20, 50))
    stack = D.csr_stack.matchbench_stack({"path": str(path)}, {"seed": index}, len(index))
    assert stack is not None and stack.problem == "mcm"
    for k, i in enumerate(index):
        g = D.csr_stack(path=str(path), seed=i)
        _same_graph(stack.instance(k), g)
        cols = {key: (v[k] if isinstance(v, list | np.ndarray) else v) for key, v in stack.columns.items()}
        assert cols["instance_params"] == to_json(g.params) and cols["instance_bytes"] == g.nbytes
        assert {key: cols[key] for key in g.describe()} == g.describe()


@pytest.mark.parametrize("defect", ["duplicate", "unsorted", "column", "decreasing", "empty", "big_endian"])
def test_the_file_hook_leaves_graphs_the_checked_read_would_treat_otherwise(tmp_path, defect):
    """A graph the one-by-one read refuses, warns about or stores otherwise: None, and the
    batch goes one by one (each graph its own row)."""
    from matchbench.families.mcm.stackfile import save_csr_stack

    ok = save_csr_stack(tmp_path / "ok.npz", _random_graphs(4))
    arrays = dict(np.load(ok))
    ptr, ind = arrays["indptr"].copy(), arrays["indices"].copy()
    shapes = arrays["shapes"].copy()
    second = int(shapes[0, 0]) + 1  # graph 1's pointers start here
    if defect == "duplicate":  # graph 0's first row lists its first column twice
        if ptr[1] == 0:
            pytest.skip("row 0 empty")
        ind = np.insert(ind, 0, ind[0])
        ptr[1 : second] += 1
    elif defect == "unsorted":
        row = int(np.flatnonzero(np.diff(ptr[:second]) >= 2)[0])
        ind[ptr[row]], ind[ptr[row] + 1] = ind[ptr[row] + 1], ind[ptr[row]]
    elif defect == "column":
        ind[0] = shapes[0, 1]
    elif defect == "decreasing":
        ptr[1] = ptr[second - 1] + 1
    elif defect == "empty":
        shapes[0] = (0, 3)
        ptr = ptr[second - 1 :].copy()
        ptr[0] = 0
        ind = ind[int(arrays["indptr"][second - 1]) :]
    elif defect == "big_endian":
        ptr, ind = ptr.astype(">i8"), ind.astype(">i8")
    path = tmp_path / "bad.npz"
    np.savez(path, indptr=ptr, indices=ind, shapes=shapes)
    assert D.csr_stack.matchbench_stack({"path": str(path)}, {"seed": [0, 1, 2, 3]}, 4) is None
    # the defect is real: the checked read of graph 0 refuses it, warns, or sorts its row
    from matchbench.core.errors import DatasetWarning

    if defect in ("column", "decreasing", "empty"):
        with pytest.raises(DatasetError):
            D.csr_stack(path=str(path), seed=0)
    elif defect == "duplicate":
        with pytest.warns(DatasetWarning, match="duplicate"):
            D.csr_stack(path=str(path), seed=0)
    else:
        g = D.csr_stack(path=str(path), seed=0)
        assert g.n_edges == int(arrays["indptr"][second - 1])


def test_a_file_stack_sweep_gives_the_one_by_one_rows(tmp_path):
    from matchbench.families.mcm.stackfile import save_csr_stack

    path = save_csr_stack(tmp_path / "g.npz", _random_graphs(12))
    cfg = {
        "algorithm": HK, "init": CHEAP,
        "dataset": {"name": "f", "many": {"_target_": "matchbench.families.mcm.datasets.csr_stack",
                                          "path": str(path)}, "count": 12, "seed": 0},
        "gpu": {"repetitions": 1, "warmup": 0},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "isolate": True, "verify": True},
        "data_dir": str(tmp_path / "data"),
    }
    plan = build_plan(cfg)
    batch = Batch(batch_id="b0", tasks=plan.tasks)
    new, _, notes = _stack_rows(batch)
    assert new is not None and not notes
    old, _ = execute_batch(batch)
    assert _content(new, TIMES_AND_JOINT) == _content(old, TIMES_AND_JOINT)
    assert all(r["status"] == "ok" and r["family"] == "mcm_stack" for r in new)


# -- the batch paths' host threads ---------------------------------------------------------


def test_batch_threads_honour_the_workers_share(monkeypatch):
    from matchbench.core.params import HOST_THREADS_ENV, batch_threads, host_cores

    monkeypatch.delenv(HOST_THREADS_ENV, raising=False)
    assert batch_threads() == host_cores()
    monkeypatch.setenv(HOST_THREADS_ENV, "1")
    assert batch_threads() == 1
    monkeypatch.setenv(HOST_THREADS_ENV, "")
    assert batch_threads() == host_cores()
    for junk in ("0", "-3", "many"):
        monkeypatch.setenv(HOST_THREADS_ENV, junk)
        with pytest.raises(ValueError, match=f"MATCHBENCH_HOST_THREADS must be a positive integer.*{junk}"):
            batch_threads()


def test_a_bad_thread_setting_is_one_note_and_the_batch_runs_one_by_one(tmp_path, monkeypatch):
    from matchbench.core.params import HOST_THREADS_ENV

    batch = _batch(tmp_path, count=4, reps=1)
    monkeypatch.setenv(HOST_THREADS_ENV, "0")
    new, _, notes = _stack_rows(batch)
    assert new is None and len(notes) == 1 and "MATCHBENCH_HOST_THREADS must be a positive integer" in notes[0]
    old, _ = execute_batch(batch)  # the one-by-one path, with the setting still there
    assert len(old) == 4 and all(r["status"] == "ok" for r in old)


def test_workers_of_a_host_share_its_cores():
    from matchbench.runner.cluster import host_shares, thread_share

    workers = {
        "tcp://10.0.0.1:1": {"host": "10.0.0.1", "resources": {"GPU": 1}},
        "tcp://10.0.0.1:2": {"host": "10.0.0.1", "resources": {"GPU": 1}},
        "tcp://10.0.0.1:3": {"host": "10.0.0.1", "resources": {"CPU": 1}},
        "tcp://10.0.0.2:1": {"host": "10.0.0.2", "resources": {"CPU": 1}},
        "tcp://10.0.0.2:2": {"host": "10.0.0.2", "resources": {}},
    }
    shares = host_shares(workers)
    assert shares == {"10.0.0.1": (2, 1), "10.0.0.2": (0, 2)}
    assert thread_share(33, *shares["10.0.0.1"], gpu=True) == 16
    assert thread_share(33, *shares["10.0.0.1"], gpu=False) == 1
    assert thread_share(16, *shares["10.0.0.2"], gpu=False) == 8
    assert thread_share(2, 0, 2, gpu=False) == 1 and thread_share(1, 4, 0, gpu=True) == 1


def test_a_sweeps_workers_start_their_task_processes_with_their_share(tmp_path):
    """Two CPU workers on this host: each task process gets half the cores (at least one)."""
    from distributed import Client, LocalCluster

    from matchbench.core.params import HOST_THREADS_ENV, host_cores
    from matchbench.runner.cluster import _workers, host_shares
    from matchbench.runner.execute import WarmTaskProcesses

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      resources={"CPU": 1}) as cluster, Client(cluster) as client:
        client.register_plugin(WarmTaskProcesses([], [], host_shares(_workers(client))))
        seen = client.run(_child_env, HOST_THREADS_ENV)
    assert sorted(seen.values()) == [str(max(1, host_cores() // 2))] * 2


def _child_env(name):
    """``name`` in the environment this worker's task process started with (Linux)."""
    from matchbench.runner.child import task_process

    proc = task_process()._proc
    if proc is None:
        return None
    with open(f"/proc/{proc.pid}/environ", "rb") as f:
        entries = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
    value = entries.get(name.encode())
    return None if value is None else value.decode()


def test_even_spans_cover_the_items_in_parts_of_about_equal_weight():
    from matchbench.graphs.stack import even_spans

    assert even_spans(np.array([1, 1, 1, 1, 4]), 2) == [(0, 4), (4, 5)]
    assert even_spans(np.zeros(0, np.int64), 4) == [] and even_spans(np.array([5]), 8) == [(0, 1)]
    w = np.random.default_rng(3).integers(1, 100, size=500)
    spans = even_spans(w, 16)
    assert spans[0][0] == 0 and spans[-1][1] == 500 and all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    sums = [int(w[lo:hi].sum()) for lo, hi in spans]
    assert len(spans) == 16 and max(sums) - min(sums) <= 2 * int(w.max())
