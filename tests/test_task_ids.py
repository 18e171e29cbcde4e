"""Task ids and instance keys survive the family layout (#29): runs and caches made before it.

Ids hash each ``_target_`` as its identity, the dotted name it had before the move
(:func:`matchbench.core.legacy.frozen_name`), so the ids and keys below, taken from runs
made before the move (``docs/benchmarks/runs/date=2026-11-25``, commit b684437, whose
``task_id`` and ``instance_key`` are those of c2c072b), come out the same from today's
spellings and from the old ones. Old spellings in configs still resolve, with a
FutureWarning; cache files whose header names the old module of their class still load.
"""

from __future__ import annotations

import doctest
import functools
import importlib
import importlib.util
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import matchbench.datasets as ds
from matchbench.core import legacy
from matchbench.core.legacy import (
    MOVED_MODULES,
    MOVED_NAMES,
    current_kind,
    current_name,
    frozen_name,
    upgrade_target,
)
from matchbench.datasets import disk_cache_path, expand, instance_key, load, spec_problem
from matchbench.runner.plan import build_plan, task_id

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "docs" / "benchmarks" / "runs"
CONF = REPO / "conf"

#: (algorithm, instance spec, keyed timing, task id, instance key) of tasks of runs made
#: before the move, in the spellings of then. The MWPM task's ``init`` is part of its id
#: (an initializer other than cheap_cpu); the Louvain one carries a run option.
PRE_MOVE = [
    (
        {
            "_target_": "matchbench.solvers.gpu.apfb.APFB",
            "batch": 64,
            "bfs": "wr",
            "ct_blocks": 256,
            "ct_threads": 256,
            "frontier": "queue",
            "mt_threads": 256,
            "sync": "graph",
            "threads": "ct",
        },
        {
            "_target_": "matchbench.datasets.generators.kronecker",
            "a": 0.57,
            "b": 0.19,
            "c": 0.19,
            "edge_factor": 16,
            "scale": 14,
            "seed": 1,
            "rcp": False,
        },
        {"repetitions": 3, "warmup": 1},
        "fe82e367a7449be5",
        "a262185e3e4d4929",
    ),
    (
        {
            "_target_": "matchbench.solvers.cpu.roma.Roma",
            "max_phases": 8,
            "seed": 0,
            "threshold": 1e-05,
        },
        {
            "_target_": "matchbench.datasets.complete.complete_uniform",
            "n": 4096,
            "seed": 0,
            "rcp": False,
        },
        {
            "repetitions": 3,
            "warmup": 1,
            "init": {"_target_": "matchbench.solvers.cpu.mwpm_init.NeighbourInit"},
        },
        "48a6a81a62c361e4",
        "41e4c23756a136cf",
    ),
    (
        {
            "_target_": "matchbench.solvers.gpu.louvain.LouvainGPU",
            "bin_limit": 100000,
            "commit": "bucket",
            "max_iterations": 1000,
            "t_bin": 0.01,
            "t_final": 1e-06,
            "time_limit_s": 300,
        },
        {
            "_target_": "matchbench.datasets.community.community_kron",
            "scale": 20,
            "seed": 1,
            "rcp": False,
        },
        {"repetitions": 3, "warmup": 1},
        "64eea9f1dba4521a",
        "5f2c247f6be691d1",
    ),
    (
        {
            "_target_": "matchbench.solvers.gpu.lap_batch.HungarianBatchGPU",
            "smem_cost_bytes": 0,
            "threads": 0,
        },
        {
            "_target_": "matchbench.datasets.lap.uniform",
            "cost_range": "n",
            "dtype": "int32",
            "n": 64,
            "seed": 1,
            "rcp": False,
        },
        {"repetitions": 3, "warmup": 1},
        "98420ae39ef8a63e",
        "4684d3ad0b3db92a",
    ),
]


def _now(cfg):
    """``cfg`` in today's spellings, without the deprecation warnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return upgrade_target(cfg)


# ---------------------------------------------------------------------------------------
# The table


def test_legacy_doctests():
    assert doctest.testmod(legacy).failed == 0


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package that is gone
        return False


@pytest.mark.parametrize("old, new", sorted(MOVED_MODULES.items()))
def test_every_moved_module_is_gone_and_its_new_home_imports(old, new):
    assert not _importable(old)  # else its old spelling would mean two things
    importlib.import_module(new)
    assert frozen_name(f"{new}.Anything") == f"{old}.Anything"


@pytest.mark.parametrize("old, new", sorted(MOVED_NAMES.items()))
def test_every_moved_name_resolves_and_leads_back(old, new):
    module, _, name = new.rpartition(".")
    assert hasattr(importlib.import_module(module), name)
    assert current_name(old) == new and frozen_name(new) == old == frozen_name(old)


def _conf_targets():
    for path in sorted(CONF.rglob("*.yaml")):
        for line in path.read_text().splitlines():
            if "_target_:" in line:
                value = line.split("_target_:", 1)[1].strip().split(",")[0].strip(" {}")
                yield path.relative_to(CONF).as_posix(), value


@pytest.mark.parametrize("file, target", list(_conf_targets()))
def test_conf_targets_are_current_and_their_identity_leads_back(file, target):
    assert current_name(target) is None, f"{file} spells {target} the old way"
    assert (current_name(frozen_name(target)) or frozen_name(target)) == target


def test_kinds_of_pre_move_cache_files():
    assert (
        current_kind("matchbench.problems.lap:CostMatrix")
        == "matchbench.families.lap.problem:CostMatrix"
    )
    assert current_kind("matchbench.problems.community:CommunityGraph") == (
        "matchbench.families.community.problem:CommunityGraph"
    )
    assert current_kind("my.module:Thing") == "my.module:Thing"


# ---------------------------------------------------------------------------------------
# Task ids and instance keys


@pytest.mark.parametrize("algorithm, spec, timing, tid, key", PRE_MOVE)
def test_task_id_and_instance_key_are_those_from_before_the_move(algorithm, spec, timing, tid, key):
    assert task_id(algorithm, spec, timing) == tid
    assert task_id(_now(algorithm), _now(spec), _now(timing)) == tid
    assert _now(spec)["_target_"] != spec["_target_"]
    assert instance_key(spec) == instance_key(_now(spec)) == key


def test_task_id_still_depends_on_parameters_solver_and_dataset():
    algorithm, spec, timing, tid, _ = PRE_MOVE[0]
    assert task_id({**algorithm, "batch": 32}, spec, timing) != tid
    assert (
        task_id({**algorithm, "_target_": "matchbench.families.mcm.apfb.APsB"}, spec, timing) != tid
    )
    assert (
        task_id(algorithm, {**spec, "_target_": "matchbench.families.mcm.datasets.rgg"}, timing)
        != tid
    )
    assert task_id(algorithm, spec, {**timing, "repetitions": 5}) != tid


def test_disk_cache_file_name_is_the_pre_move_one(tmp_path):
    _, spec, _, _, key = PRE_MOVE[0]
    assert disk_cache_path(_now(spec), tmp_path) == tmp_path / "generated" / f"{key}-v1.npz"


PRE_MOVE_RUNS = ["run=20261125T082757-764", "run=20261125T075045-397", "run=20261125T080543-546"]


def _done_of_pre_move_run(tmp_path, run):
    """(manifest, task ids ``run.resume`` finds done, instance keys) of a copy of a run
    made before the move, laid out as a sweep leaves it (the docs keep one file a run)."""
    src = RUNS / "date=2026-11-25" / run
    if not (src / "_run.json").is_file():
        pytest.skip(f"{src} is not in this checkout")
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from matchbench.results.store import RunWriter

    writer = RunWriter(tmp_path / "runs", run.split("=", 1)[1], "2026-11-25")
    rows = pq.read_table(next(src.glob("part-*.parquet")))
    for tid in set(rows.column("task_id").to_pylist()):
        pq.write_table(
            rows.filter(pc.equal(rows["task_id"], tid)), writer.dir / f"part-{tid}.parquet"
        )
    manifest = json.loads((src / "_run.json").read_text())
    return manifest, writer.done_tasks(), set(rows.column("instance_key").to_pylist())


def _check_resumes(plans, done, keys, *, every_job=True):
    planned = set()
    for plan in plans:
        assert not plan.error_rows, plan.error_rows[0].get("error")
        planned |= {t.task_id for t in plan.tasks}
        assert {instance_key(t.instance_spec) for t in plan.tasks} <= keys
    assert planned and planned <= done
    assert planned == done or not every_job


@pytest.mark.parametrize("run", PRE_MOVE_RUNS)
def test_a_pre_move_run_resumes_from_its_own_configs(tmp_path, run):
    """The jobs of the run's manifest (old spellings, upgraded as the planner does)
    planned again: every task is one ``run.resume`` finds done."""
    manifest, done, keys = _done_of_pre_move_run(tmp_path, run)
    plans = []
    for job in manifest["jobs"]:
        cfg = dict(job["config"])
        assert "matchbench.solvers." in json.dumps(cfg["algorithm"])  # spelled before the move
        for section in ("algorithm", "init", "dataset"):
            if cfg.get(section):
                cfg[section] = _now(cfg[section])
        with warnings.catch_warnings():  # parameters renamed since: not this test's business
            warnings.simplefilter("ignore", FutureWarning)
            plans.append(build_plan(cfg, job_index=job["job_index"], overrides=job["overrides"]))
    _check_resumes(plans, done, keys)


@pytest.mark.parametrize("run", PRE_MOVE_RUNS)
def test_a_pre_move_run_resumes_from_todays_configs(tmp_path, run):
    """What ``matchbench <the run's overrides> run.resume=true run.id=<id>`` plans: the
    run's overrides composed with today's ``conf/`` (new spellings, and whatever else
    changed in the config files since). A few jobs of each run: composing is slow."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    manifest, done, keys = _done_of_pre_move_run(tmp_path, run)
    plans = []
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        for job in manifest["jobs"][:: max(1, len(manifest["jobs"]) // 8)]:
            cfg = compose("config", overrides=job["overrides"])
            plain = OmegaConf.to_container(cfg, resolve=True)
            plans.append(build_plan(plain, job_index=job["job_index"], overrides=job["overrides"]))
    _check_resumes(plans, done, keys, every_job=False)


# ---------------------------------------------------------------------------------------
# Old spellings in configs


def test_an_old_dataset_target_expands_loads_and_warns_once_per_name():
    old = {"_target_": "matchbench.datasets.generators.erdos_renyi", "scale": 4, "seed": 1}
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")  # Python's own filter: once per name and place
        specs = expand({"instances": [old, {**old, "seed": 2}]})
    assert [str(w.message) for w in record] == [
        "_target_ matchbench.datasets.generators.erdos_renyi is the name from before the "
        "family layout (#29); use matchbench.families.mcm.datasets.erdos_renyi (the old "
        "name will stop working in the next release)"
    ]
    assert record[0].category is FutureWarning
    assert {s["_target_"] for s in specs} == {"matchbench.families.mcm.datasets.erdos_renyi"}
    with pytest.warns(FutureWarning):
        assert spec_problem(old) == "mcm"
    with pytest.warns(FutureWarning):
        graph = load({**old, "rcp": False})
    assert graph.n_rows == 16


def test_an_old_many_target_warns_once(monkeypatch):
    cfg = {"many": {"_target_": "matchbench.datasets.lap.uniform", "n": 4}, "count": 50}
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        specs = expand(cfg)
    assert len(specs) == 50 and specs[0]["_target_"] == "matchbench.families.lap.datasets.uniform"
    assert [w.category for w in record] == [FutureWarning]


def test_upgrade_target_rewrites_nested_targets_and_leaves_new_ones_alone():
    cfg = {
        "_target_": "matchbench.solvers.gpu.apfb.APFB",
        "bfs": "wr",
        "init": {"_target_": "matchbench.solvers.gpu.mcm_init.CheapGPU"},
        "x": [1, 2],
    }
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        new = upgrade_target(cfg)
    assert sorted(str(w.message).split(" is ")[0] for w in record) == [
        "_target_ matchbench.solvers.gpu.apfb.APFB",
        "_target_ matchbench.solvers.gpu.mcm_init.CheapGPU",
    ]
    assert {w.category for w in record} == {FutureWarning}
    assert new == {
        "_target_": "matchbench.families.mcm.apfb.APFB",
        "bfs": "wr",
        "init": {"_target_": "matchbench.families.mcm.init_gpu.CheapGPU"},
        "x": [1, 2],
    }
    assert cfg["_target_"] == "matchbench.solvers.gpu.apfb.APFB"  # a copy
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert upgrade_target(new) == new


# ---------------------------------------------------------------------------------------
# Disk-cache files written before the move


def _npz_arrays(inst):
    buf = io.BytesIO()
    inst.save_npz(buf)
    buf.seek(0)
    with np.load(buf) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize(
    "target, args, old_kind",
    [
        (
            "matchbench.families.mcm.datasets.kronecker",
            {"scale": 6, "seed": 3},
            "matchbench.problems.bipartite:BipartiteGraph",
        ),
        (
            "matchbench.families.lap.datasets.uniform",
            {"n": 12, "cost_range": "n", "seed": 2},
            "matchbench.problems.lap:CostMatrix",
        ),
        (
            "matchbench.families.wmatch.datasets.kronecker",
            {"scale": 5, "seed": 1},
            "matchbench.problems.wmatch:WeightedGraph",
        ),
        (
            "matchbench.families.community.datasets.community_kron",
            {"scale": 5, "seed": 1},
            "matchbench.problems.community:CommunityGraph",
        ),
        (
            "matchbench.families.smarriage.datasets.sm_easy",
            {"n": 8, "seed": 1},
            "matchbench.problems.smarriage:Preferences",
        ),
    ],
)
def test_a_cache_file_of_a_pre_move_kind_loads_quietly(
    tmp_path, monkeypatch, target, args, old_kind
):
    monkeypatch.setenv("MATCHBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MATCHBENCH_NO_DISK_CACHE", raising=False)
    spec = {"_target_": target, **args, "rcp": False}
    ds.clear_cache()
    fresh = load(spec)
    path = disk_cache_path(spec)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    assert str(arrays["kind"][()]) == current_kind(old_kind) != old_kind
    arrays["kind"] = np.asarray(old_kind)
    with open(path, "wb") as f:
        np.savez(f, **arrays)

    module, _, name = target.rpartition(".")
    module = importlib.import_module(module)
    original = getattr(module, name)

    @functools.wraps(original)
    def forbidden(*a, **k):
        raise AssertionError("the instance should come from the pre-move file")

    monkeypatch.setattr(module, name, forbidden)
    ds.clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load(spec)
    ds.clear_cache()
    assert type(again) is type(fresh)
    a, b = _npz_arrays(fresh), _npz_arrays(again)
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    assert path.is_file()


def test_task_ids_of_a_plan_equal_the_canonical_json_of_the_whole_task():
    """TaskIds joins the shared parts' JSON with the spec's: byte for byte json.dumps
    of the three as one list (the form every id so far hashed)."""
    import hashlib
    import json

    from matchbench.core.legacy import frozen_targets
    from matchbench.runner.plan import TaskIds, task_id

    algorithms = [
        {"_target_": "matchbench.families.mcm.gpr.GPR", "threads_per_block": None, "threads": 64, "k": 0.7},
        {"_target_": "matchbench.solvers.cpu.mcm_numba.HopcroftKarp", "nested": {"_target_": "x.y", "z": [1, {"a": None}]}},
        {"_target_": "my_lab.Mine", "weird": float("inf"), "tuple": (1, 2), "ü": "ö"},
    ]
    specs = [
        {"_target_": "matchbench.families.mcm.datasets.kronecker", "scale": 9, "seed": 3, "rcp": False},
        {"_target_": "matchbench.datasets.generators.rgg", "scale": 5, "path": None, "extra": [1.5, "s"]},
    ]
    timings = [{"repetitions": 3, "warmup": 1}, {"repetitions": 1, "warmup": 0, "instrumented": 2,
                                                 "init": {"_target_": "matchbench.families.mcm.init.CheapCPU"}}]
    for a in algorithms:
        for t in timings:
            ids = TaskIds(a, t)
            for s in specs:
                blob = json.dumps(frozen_targets([a, s, t]), sort_keys=True, default=str)
                want = hashlib.sha1(blob.encode()).hexdigest()[:16]
                assert ids(frozen_targets(s)) == task_id(a, s, t) == want


MANY_RGG = {"_target_": "matchbench.families.mcm.datasets.rgg"}


@pytest.mark.filterwarnings("ignore:_target_ matchbench.datasets.generators.rgg:FutureWarning")
@pytest.mark.parametrize(
    "dataset",
    [
        {"name": "m", "many": MANY_RGG | {"scale": 6}, "count": 9, "seed": 3},
        {"name": "m", "many": MANY_RGG, "count": 9, "draw": {"scale": [5, 9]}},
        {"name": "m", "many": MANY_RGG, "count": 9, "draw": {"scale": {"low": 4, "high": 9, "log": True}}, "rcp": "both"},
        {"name": "m", "many": MANY_RGG | {"radius_factor": 1.5}, "count": 5, "rcp": True, "rcp_seed": 7},
        {"name": "m", "many": {"_target_": "matchbench.datasets.generators.rgg", "scale": 5}, "count": 4},  # old spelling
        {"instances": [MANY_RGG | {"scale": 5, "seed": 1}, MANY_RGG | {"scale": 5, "seed": 2},
                       MANY_RGG | {"scale": 5, "seed": True}, MANY_RGG | {"scale": 5, "seed": 4.0},
                       MANY_RGG | {"scale": 6, "seed": 5, "extra": [1, {"a": None}]},
                       {"seed": 6, "scale": 5} | MANY_RGG, MANY_RGG | {"scale": 5, "seed": -3}]},
        {"instances": [MANY_RGG | {"scale": 5, "seed": 1, "rcp_seed": 1}, MANY_RGG | {"scale": 5, "seed": 1, "rcp_seed": 2},
                       MANY_RGG | {"scale": 5, "seed": 1, "rcp_seed": 3}]},
    ],
)
def test_a_plans_ids_and_keys_are_those_of_each_spec_alone(tmp_path, dataset):
    """The planner fills a many set's integers into its first spec's texts (_Filled):
    every task's id and instance key must be what its own spec gives."""
    from matchbench.runner.plan import build_plan

    algorithm = {"_target_": "matchbench.families.mcm.ref_numba.HopcroftKarp"}
    plan = build_plan({"algorithm": algorithm, "dataset": dataset, "gpu": {"repetitions": 2, "warmup": 1},
                       "run": {"results_dir": str(tmp_path)}, "data_dir": str(tmp_path)})
    assert plan.tasks and not plan.error_rows
    for t in plan.tasks:
        assert t.task_id == task_id(algorithm, t.instance_spec, {"repetitions": 2, "warmup": 1})
        assert t.instance_key == instance_key(t.instance_spec)


def test_filled_texts_refuse_what_is_not_the_first_specs_form():
    import json

    from matchbench.core.legacy import frozen_targets
    from matchbench.datasets.specs import canonical_spec
    from matchbench.runner.plan import _canonical_json, _filled_for

    base = MANY_RGG | {"scale": 5, "rcp": False}
    specs = [dict(base, seed=i) for i in range(3)]
    filled = _filled_for(specs)
    assert filled is not None and filled.varying == ("seed",)
    for spec in [dict(base, seed=10**30), dict(base, seed=-5), specs[2]]:
        frozen = frozen_targets(spec)
        assert filled.texts(spec) == (_canonical_json(frozen), canonical_spec(frozen))
    for odd in [dict(base, seed=True), dict(base, seed=2.0), dict(base, seed=None), dict(base, seed="3"),
                {k: v for k, v in base.items()}, dict(base, seed=1, more=1), dict(base, seed=1, scale=5.0),
                dict(base, seed=1, _target_="x.y"), json.loads(json.dumps(dict(base, seed=1))), [1]]:
        assert filled.texts(odd) is None, odd
    # a value that leaves the instance key (rcp_seed without rcp) or that is not an int: no filling
    assert _filled_for([dict(base, rcp_seed=i) for i in range(3)]) is None
    assert _filled_for([dict(base, seed=float(i)) for i in range(3)]) is None
    assert _filled_for(specs[:2]) is None
