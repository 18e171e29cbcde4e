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
