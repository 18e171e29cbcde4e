"""The ``init`` config group and the end-to-end columns, host side (no GPU needed).

What runs on the device (the initializer's kernels, the solvers started from it) is in
``tests/gpu/test_mcm_init_gpu.py``; its kernels compile through NVRTC in
``test_kernels_compile.py``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hydra.utils import instantiate

from matchbench.core.params import config_defaults, configured
from matchbench.families.mcm.auto import MCMAuto, choose
from matchbench.families.mcm.cheap import CheapCPU, cheap_matching
from matchbench.families.mcm.init_gpu import CheapGPU
from matchbench.families.mcm.problem import MCM
from matchbench.results.schema import SCHEMA, upgrade
from matchbench.runner.plan import build_plan, task_id
from matchbench.runner.task import e2e_seconds

CHEAP_CPU = {"_target_": "matchbench.families.mcm.cheap.CheapCPU"}
CHEAP_GPU = {"_target_": "matchbench.families.mcm.init_gpu.CheapGPU", "rule": "ks", "local": 32, "rounds": 8, "long_min": 64,
             "threads_per_block": 256}
SMOKE = {"_target_": "matchbench.families.mcm.datasets.smoke", "name": "grid2d_6", "rcp": False}
LAP = {"_target_": "matchbench.families.lap.datasets.uniform", "n": 8, "seed": 1, "rcp": False}


def _cfg(algorithm: str, dataset=SMOKE, init=CHEAP_CPU, **extra):
    targets = {
        "hk": "matchbench.families.mcm.ref_numba.HopcroftKarp",
        "apfb": "matchbench.families.mcm.apfb.APFB",
        "gpr": "matchbench.families.mcm.gpr.GPR",
        "mcm_gpu": "matchbench.families.mcm.auto.MCMAuto",
        "scipy_lsa": "matchbench.families.lap.refs.ScipyLSA",
    }
    # the algorithm section as `algorithm=NAME` composes it: the YAML's options and values
    cfg = {"algorithm": config_defaults("algorithm", algorithm) | {"_target_": targets[algorithm]}, "dataset": dataset,
           "gpu": {"repetitions": 2, "warmup": 1}, "run": {}, **extra}
    if init is not None:
        cfg["init"] = init
    return cfg


def test_targets_of_this_file_exist():
    import yaml

    from matchbench.runner.plan import describe_solver

    for name in ("hk", "apfb", "gpr", "mcm_gpu", "scipy_lsa"):
        target = yaml.safe_load(open(f"conf/algorithm/{name}.yaml"))["_target_"]
        assert _cfg(name)["algorithm"]["_target_"] == target
        assert describe_solver(_cfg(name)["algorithm"])["algorithm"] == name


@pytest.mark.parametrize("name", ["cheap_cpu", "cheap_gpu"])
def test_init_yaml_instantiates(name):
    import yaml

    obj = instantiate(yaml.safe_load(open(f"conf/init/{name}.yaml")))
    assert obj.name == name and obj.problem == "mcm" and obj.label() == name


def test_labels_name_the_changed_parameters():
    assert configured(CheapGPU).label() == "cheap_gpu"
    assert configured(CheapGPU, rule="greedy").label() == "cheap_gpu(rule=greedy)"
    label = configured(CheapGPU, long_min=0, threads_per_block=128).label()
    assert label == "cheap_gpu(long_min=0,threads_per_block=128)"


def test_threads_is_the_deprecated_spelling_of_the_init_block_size():
    with pytest.warns(FutureWarning, match=r"^init\.threads is deprecated; use init\.threads_per_block$"):
        init = configured(CheapGPU, threads=128)
    assert init.params["threads_per_block"] == 128 and "threads" not in init.params


@pytest.mark.parametrize(
    "kwargs, match",
    [({"rule": "mindegree"}, "rule"), ({"long_min": -1}, "long_min"),
     ({"threads_per_block": 100}, "threads_per_block"), ({"threads_per_block": True}, "threads_per_block"),
     ({"threads": 100}, "threads_per_block")],
)
@pytest.mark.filterwarnings("ignore:init.threads is deprecated:FutureWarning")
def test_cheap_gpu_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        configured(CheapGPU, **kwargs)


def test_cheap_cpu_is_the_cheap_matching():
    from matchbench.families.mcm.datasets import smoke, smoke_names

    for name in smoke_names():
        g = smoke(name)
        a, b = CheapCPU()(g), cheap_matching(g)
        assert np.array_equal(a.col_match, b.col_match) and np.array_equal(a.row_match, b.row_match)


def test_cheap_gpu_is_not_called_on_the_host():
    with pytest.raises(NotImplementedError, match="inside the solver"):
        configured(CheapGPU)(object())


# -- plan -------------------------------------------------------------------------------


def test_cheap_cpu_keeps_the_task_ids_of_earlier_versions():
    plan = build_plan(_cfg("hk"))
    (task,) = plan.tasks
    timing = {"repetitions": 2, "warmup": 1}
    assert task.task_id == task_id({"_target_": _cfg("hk")["algorithm"]["_target_"]}, SMOKE, timing)
    assert task.init == "cheap_cpu" and task.init_cfg == CHEAP_CPU


def test_device_init_ships_with_gpu_solvers_and_changes_the_id():
    cpu = build_plan(_cfg("apfb")).tasks[0]
    gpu = build_plan(_cfg("apfb", init=CHEAP_GPU)).tasks[0]
    greedy = build_plan(_cfg("apfb", init=dict(CHEAP_GPU, rule="greedy"))).tasks[0]
    assert gpu.init == "cheap_gpu" and gpu.init_cfg == CHEAP_GPU
    assert greedy.init == "cheap_gpu(rule=greedy)"
    assert len({cpu.task_id, gpu.task_id, greedy.task_id}) == 3
    assert "mcm_init" in gpu.kernel_families and "apfb" in gpu.kernel_families


def test_cpu_solver_with_device_init_is_left_out():
    plan = build_plan(_cfg("hk", init=CHEAP_GPU))
    assert plan.tasks == [] and plan.error_rows == []
    assert plan.skipped_inits == [("hk", "cheap_gpu")]


def test_other_families_ignore_the_init_section():
    a = build_plan(_cfg("scipy_lsa", dataset=LAP, init=CHEAP_CPU)).tasks[0]
    b = build_plan(_cfg("scipy_lsa", dataset=LAP, init=CHEAP_GPU)).tasks[0]
    c = build_plan(_cfg("scipy_lsa", dataset=LAP, init=None)).tasks[0]
    assert a.task_id == b.task_id == c.task_id  # a sweep over init runs them once
    assert a.init_cfg is None and a.init is None


def test_bad_init_config_is_an_error_row():
    plan = build_plan(_cfg("apfb", init=dict(CHEAP_GPU, rule="x")))
    (row,) = plan.error_rows
    assert row["status"] == "error" and "init config" in row["error"] and "rule" in row["error"]


def test_host_init_rows_carry_init_and_e2e():
    from matchbench.runner.task import execute_task

    rows = execute_task(build_plan(_cfg("hk")).tasks[0])
    assert [r["status"] for r in rows] == ["ok", "ok"]
    for r in rows:
        assert r["init"] == "cheap_cpu" and r["verified"]
        assert r["t_e2e_s"] == pytest.approx(r["t_init_s"] + r["t_solve_s"])
        assert r["edges_per_s"] == pytest.approx(r["n_edges"] / r["t_solve_s"])
        assert r["objective_init"] == MCM().initial_objective(cheap_matching(
            __import__("matchbench.families.mcm.datasets", fromlist=["smoke"]).smoke("grid2d_6")))


def test_e2e_seconds():
    assert e2e_seconds(0.25, 1.0) == 1.25
    assert e2e_seconds(None, 1.0) == 1.0
    assert e2e_seconds(0.25, None) is None


# -- schema 3 -------------------------------------------------------------------------


def test_version_2_rows_upgrade_with_their_initializer():
    old = pa.table({
        "problem": ["mcm", "lap", "mcm"],
        "n_edges": [10, 40, 10],
        "objective_init": [5.0, None, None],
        "t_init_s": [0.5, None, 0.25],
        "t_solve_s": [1.0, 2.0, None],
    })
    new = upgrade(old, 2)
    assert new.schema == SCHEMA
    assert new.column("init").to_pylist() == ["cheap_cpu", None, None]
    assert new.column("t_e2e_s").to_pylist() == [1.5, 2.0, None]
    assert new.column("edges_per_s").to_pylist() == [10.0, 20.0, None]
    assert new.column("t_upload_s").null_count == 3
    assert new.column("proposals_per_s").null_count == 3  # no counters: no rate


def test_version_3_rows_get_proposals_per_second():
    old = pa.table({
        "problem": ["wmatch", "wmatch", "mcm"],
        "t_solve_s": [0.5, None, 1.0],
        "counters_json": ['{"proposals": 10}', '{"proposals": 4}', '{"phases": 3}'],
    })
    new = upgrade(old, 3)
    assert new.schema == SCHEMA
    assert new.column("proposals_per_s").to_pylist() == [20.0, None, None]


def test_compare_keys_on_init():
    import pandas as pd

    from matchbench.results.compare import CompareConfig, compare_frames, normalize

    def rows(init, t):
        from datetime import UTC, datetime

        from matchbench.results.schema import table_from_rows

        return table_from_rows([
            {"problem": "mcm", "algorithm": "gpr", "variant": "v", "init": init, "instance": "g",
             "gpu_model": "H", "status": "ok", "verified": True, "objective": 3.0,
             "t_solve_s": x, "t_e2e_s": 2 * x, "repetition": k, "run_id": "r", "task_id": "t",
             "timestamp": datetime.now(UTC)}
            for k, x in enumerate(t)
        ]).to_pandas()

    base = normalize(pd.concat([rows("cheap_cpu", [1.0] * 5), rows(None, [1.0] * 5)]))
    assert set(base["init"]) == {"cheap_cpu", ""}
    new = normalize(rows("cheap_cpu", [1.0, 1.0, 1.0, 1.0, 1.0]))
    out = compare_frames(base, new, CompareConfig())
    assert len(out) == 2  # the two initializers are two keys
    with pytest.raises(ValueError, match="time must be one of"):
        CompareConfig(time="t_total_s").validate()
    cfg = CompareConfig.from_mapping({"time": "t_e2e_s"})
    assert cfg.time == "t_e2e_s"


# -- mcm_gpu --------------------------------------------------------------------------


def test_rule_reads_skew_then_order_then_deficiency():
    kw = dict(skew_min=20, ordered_min=0.5, deficiency_max=0.075, skewed="gpr", low="apsb", high="apfb")
    # Kronecker-like: a hub 100x the mean degree
    assert choose(max_degree=5000, n_edges=50 * 10**5, nonempty=10**5, matched=10, near=0, **kw)[0] == "gpr"
    # mesh in natural order, 6% unmatched
    name, stats = choose(max_degree=15, n_edges=6 * 10**6, nonempty=10**6, matched=940_000, near=990_000, **kw)
    assert name == "apsb" and stats["deficiency"] == pytest.approx(0.06) and stats["ordered"] == pytest.approx(0.99)
    # road-like, ordered but 9% unmatched
    assert choose(max_degree=6, n_edges=3 * 10**6, nonempty=10**6, matched=910_000, near=880_000, **kw)[0] == "apfb"
    # permuted mesh
    assert choose(max_degree=15, n_edges=6 * 10**6, nonempty=10**6, matched=990_000, near=100, **kw)[0] == "apfb"
    # no edges at all
    assert choose(max_degree=0, n_edges=0, nonempty=0, matched=0, near=0, **kw)[0] == "apfb"


@pytest.mark.parametrize(
    "kwargs, match",
    [({"skewed": "hk"}, "skewed"), ({"high": "gpr2"}, "high"), ({"skew_min": -1}, "skew_min"),
     ({"deficiency_max": float("nan")}, "deficiency_max"), ({"ordered_min": -0.1}, "ordered_min")],
)
def test_selector_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        configured(MCMAuto, **kwargs)


def test_selector_yaml_and_variant():
    import yaml

    obj = instantiate(yaml.safe_load(open("conf/algorithm/mcm_gpu.yaml")))
    assert obj.name == "mcm_gpu" and obj.device_init and obj._names() == ["apfb", "apsb", "gpr"]
    assert "skew_min=" in obj.variant()
