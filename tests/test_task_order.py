"""The runner's submission order: instances from the largest down, each one's tasks together."""

from __future__ import annotations

import itertools

import pytest

from matchbench.datasets import disk_cache_path, instance_key
from matchbench.datasets.sizes import BYTES_PER_ENTRY, DEFAULT_DEGREE
from matchbench.runner.execute import instance_size_hint, submission_order
from matchbench.runner.plan import Task

KRON = "matchbench.families.mcm.datasets.kronecker"
RGG = "matchbench.families.mcm.datasets.rgg"
LAP = "matchbench.families.lap.datasets.uniform"
LEMMA31 = "matchbench.families.smarriage.datasets.sm_lemma31"
MTX = "matchbench.families.mcm.datasets.mtx_file"
SMOKE = "matchbench.families.mcm.datasets.smoke"


def _spec(target, **params):
    return {"_target_": target, **params, "rcp": False, "rcp_seed": 0}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (_spec(KRON, scale=10, edge_factor=16), 2**10 * 16),
        (_spec(KRON, scale=10), 2**10 * 16),  # the generator's default edge_factor
        (_spec(RGG, scale=10), 2**10 * DEFAULT_DEGREE),
        (_spec(LAP, n=300), 300 * 300),
        (_spec(LEMMA31, n_men=1000, n_women=900, avg_degree=5), 1000 * 5),
    ],
)
def test_hint_from_parameters(tmp_path, spec, expected):
    assert instance_size_hint(spec, tmp_path) == expected * BYTES_PER_ENTRY


@pytest.mark.parametrize(
    "spec",
    [
        _spec(SMOKE, name="grid2d_2"),
        _spec(KRON, scale="big"),
        _spec(LAP, n=True),
        _spec(LAP, n=-3),
        _spec("no.such.module.fn", n=10),
    ],
)
def test_hint_unknown_is_zero(tmp_path, spec):
    assert instance_size_hint(spec, tmp_path) == 0


def test_hint_file_size_relative_to_data_dir(tmp_path):
    (tmp_path / "m.mtx").write_bytes(b"x" * 1234)
    assert instance_size_hint(_spec(MTX, path="m.mtx"), tmp_path) == 1234
    assert instance_size_hint(_spec(MTX, path="missing.mtx"), tmp_path) == 0
    # A path wins over any size-like parameter: the file is what will be read.
    assert instance_size_hint(_spec(MTX, path="missing.mtx", n=10**6), tmp_path) == 0


def test_hint_prefers_the_cached_file(tmp_path):
    spec = _spec(KRON, scale=20, edge_factor=16)
    assert instance_size_hint(spec, tmp_path) == 2**20 * 16 * BYTES_PER_ENTRY
    path = disk_cache_path(spec, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x" * 77)
    assert instance_size_hint(spec, tmp_path) == 77
    # ... also when the spec asks for a permuted copy (the file holds the original).
    assert instance_size_hint({**spec, "rcp": True, "rcp_seed": 5}, tmp_path) == 77


def _tasks(tmp_path, specs_by_task):
    return {
        tid: Task(task_id=tid, algorithm="a", problem="mcm", device="cpu", variant="default",
                  algorithm_cfg={"_target_": "a"}, instance_spec=spec, data_dir=str(tmp_path))
        for tid, spec in specs_by_task
    }


SMALL = _spec(KRON, scale=8, edge_factor=16)
BIG = _spec(KRON, scale=12, edge_factor=16)
MID = _spec(LAP, n=200)  # 40000 entries, between 2**8 * 16 and 2**12 * 16
UNKNOWN_A = _spec(SMOKE, name="grid2d_2")
UNKNOWN_B = _spec(SMOKE, name="sym_band_40")
# Interleaved on purpose: the grouping must not depend on the order of the input.
INTERLEAVED = [
    ("a-small", SMALL), ("a-unk-a", UNKNOWN_A), ("a-big", BIG), ("a-mid", MID), ("a-unk-b", UNKNOWN_B),
    ("b-small", SMALL), ("b-unk-a", UNKNOWN_A), ("b-big", BIG), ("b-mid", MID), ("b-unk-b", UNKNOWN_B),
    ("c-big", BIG),
]  # fmt: skip


def _groups(tasks, order):
    """The instance keys of ``order``, one per run of equal keys."""
    return [
        k for k, _ in itertools.groupby(instance_key(tasks[tid].instance_spec) for tid in order)
    ]


def test_order_largest_first_groups_contiguous(tmp_path):
    tasks = _tasks(tmp_path, INTERLEAVED)
    order = submission_order(tasks)
    assert sorted(order) == sorted(tasks)
    groups = _groups(tasks, order)
    assert len(groups) == len(set(groups)) == 5  # each instance's tasks back to back
    # equal sizes (the two unknown ones) in the order the tasks first name them
    unknown = [instance_key(UNKNOWN_A), instance_key(UNKNOWN_B)]
    assert groups == [instance_key(BIG), instance_key(MID), instance_key(SMALL), *unknown]
    # Inside a group, the order of the given tasks.
    assert order[:3] == ["a-big", "b-big", "c-big"]
    assert order[3:7] == ["a-mid", "b-mid", "a-small", "b-small"]


def test_order_deterministic(tmp_path):
    tasks = _tasks(tmp_path, INTERLEAVED)
    assert submission_order(tasks) == submission_order(dict(tasks))
    # Another insertion order changes only the order inside a group and that of groups
    # of equal size, not the groups.
    shuffled = _tasks(tmp_path, INTERLEAVED[::-1])
    again = _groups(shuffled, submission_order(shuffled))
    groups = _groups(tasks, submission_order(tasks))
    assert again[:3] == groups[:3] and again[3:] == groups[3:][::-1]
    # Equal sizes keep the order in which the tasks first name their instances (a many
    # set's seeds), each instance's tasks back to back.
    ties = [(f"t{i}", _spec(KRON, scale=9, edge_factor=16, seed=i % 6)) for i in (5, 0, 3, 11, 6, 1, 4, 2, 9)]
    tied = _tasks(tmp_path, ties)
    order = submission_order(tied)
    assert order == ["t5", "t11", "t0", "t6", "t3", "t9", "t1", "t4", "t2"]


def test_order_cached_file_beats_parameters(tmp_path):
    # SMALL is on disk as a file larger than BIG's estimate: the file's size counts.
    path = disk_cache_path(SMALL, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x" * (int(instance_size_hint(BIG, tmp_path)) + 1))
    tasks = _tasks(tmp_path, INTERLEAVED)
    assert _groups(tasks, submission_order(tasks))[:2] == [instance_key(SMALL), instance_key(BIG)]


def test_order_empty():
    assert submission_order({}) == []


def test_size_hints_of_a_run_of_like_specs_are_each_specs_own(tmp_path, monkeypatch):
    """``size_hints`` reuses the size of the spec before where two specs of a bulk-made
    generator agree on what its hint reads (a many: set's seeds): every size equals the
    spec's own ``instance_size_hint``, where the read arguments change (n), their types
    differ (True against 1), the data dir differs, or the generator has no bulk hook."""
    from matchbench.runner.execute import size_hints

    lap_stack = "matchbench.families.lap.datasets.stack"
    np_ = pytest.importorskip("numpy")
    np_.save(tmp_path / "s.npy", np_.zeros((3, 5, 5), dtype=np_.int32))
    specs = (
        [_spec(LAP, n=64, cost_range="n", dtype="int32", seed=s) for s in range(5)]
        + [_spec(LAP, n=n, cost_range="n", dtype="int32", seed=7) for n in (32, 32, 512, 64)]
        + [_spec(LAP, n=1, seed=1), _spec(LAP, n=True, seed=2), _spec(LAP, n=1, seed=3)]
        + [_spec(LAP, n=10, cost_range=100, seed=s) for s in range(3)]
        + [_spec(KRON, scale=8 + (s % 2), edge_factor=16, seed=s) for s in range(4)]
        + [{"_target_": lap_stack, "path": "s.npy", "seed": s, "pad": False} for s in range(3)]
        + [{"_target_": lap_stack, "path": "missing.npy", "seed": s, "pad": False} for s in range(2)]
    )
    tasks = _tasks(tmp_path, [(f"t{i}", s) for i, s in enumerate(specs)])
    other = tmp_path / "other"
    other.mkdir()
    tasks["t-other"] = Task(task_id="t-other", algorithm="a", problem="lap", device="cpu", variant="default",
                            algorithm_cfg={"_target_": "a"}, instance_spec=dict(specs[-1]), data_dir=str(other))
    import matchbench.runner.execute as E

    asked = []
    monkeypatch.setattr(E, "instance_size_hint", lambda spec, d: asked.append(spec) or instance_size_hint(spec, d))
    got = size_hints(tasks)
    want = {tid: instance_size_hint(t.instance_spec, t.data_dir) for tid, t in tasks.items()}
    assert got == want
    assert len(set(got.values())) >= 6  # the runs above differ
    # asked once per run of like specs: the five seeds of n = 64 once, the two n = 32 once,
    # the three n = 10 once; every time for the Kronecker specs (no bulk hook), the stack
    # file's (its hint reads the index) and where the read values change; t-other is
    # t24's instance (one instance key), asked for once
    assert len(asked) == len(tasks) - 4 - 1 - 2 - 1


def test_one_worker_runs_the_units_in_submission_order(tmp_path):
    """Twelve batches of equal size on one worker run in the order they were submitted
    (their seeds' order). Submitted within one of Dask's fifo_timeout windows they share a
    priority unless the runner gives each its rank, and a worker holding several then ran
    them last in, first out."""
    import io

    from matchbench.results.store import read_results
    from matchbench.runner.execute import execute
    from matchbench.runner.plan import build_plan

    cfg = {
        "algorithm": {"_target_": "matchbench.families.lap.refs.ScipyLSA"},
        "dataset": {"name": "lap_order", "many": {"_target_": LAP, "n": 6}, "count": 24, "seed": 1},
        "gpu": {"repetitions": 1, "warmup": 0},
        "cluster": {"kind": "local_cpu", "n_workers": 1, "dashboard_address": ":0"},
        "run": {"results_dir": str(tmp_path / "runs"), "task_timeout_s": 60, "isolate": True,
                "verify": True, "batch": 2, "id": "order"},
        "data_dir": str(tmp_path / "data"),
    }
    out = execute([build_plan(cfg)], stream=io.StringIO())
    assert out["batches"] == 12
    rows = read_results(out["dir"])
    assert len(rows) == 24 and rows.verified.all()
    by_batch = rows.groupby("batch_id").agg(start=("timestamp", "min"), seed=("dataset_seed", "min"))
    ran = by_batch.sort_values("start").seed.tolist()
    assert ran == sorted(ran), f"batches ran in the seed order {ran}"
