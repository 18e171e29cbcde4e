"""CPU LAP references against brute force, and every answer certified.

Hypothesis draws small matrices (n = 1..8) with many ties, integer and float; every CPU
solver's answer must be certified by the LAP verifier and cost what the best of all n!
permutations costs (n <= 7; for n = 8 the certified scipy answer is the reference).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from matchbench.datasets import lap as L
from matchbench.problems.assignment import LAP, CostMatrix, certificate_atol
from matchbench.solvers.cpu.lap_ref import HungarianTree, LapJV, ScipyLSA

PROBLEM = LAP()
CPU_SOLVERS = (ScipyLSA, LapJV, HungarianTree)
CONF = Path(__file__).resolve().parents[1] / "conf" / "algorithm"
LAP_CONFS = ("scipy_lsa", "lapjv", "hungarian_tree", "cu_class", "cu_tree")


def brute_force(costs: np.ndarray) -> float:
    n = costs.shape[0]
    perms = np.array(list(itertools.permutations(range(n))))
    return float(costs[np.arange(n), perms].astype(np.float64).sum(axis=1).min())


def solve(cls, inst):
    s = cls()
    skip, reason = s.skip(inst)
    if skip:
        pytest.skip(reason)
    s.prepare(inst)
    s.run()
    return s.result()


@st.composite
def cost_matrices(draw):
    n = draw(st.integers(1, 8))
    kind = draw(st.sampled_from(["int32", "int64", "float32", "float64"]))
    if kind.startswith("int"):
        lo = draw(st.sampled_from([0, -3, -1000]))
        hi = draw(st.sampled_from([1, 3, 10, 1000]))
        elems = st.integers(lo, lo + hi)
    else:
        # few distinct values (ties) or arbitrary finite floats
        ties = draw(st.booleans())
        width = 32 if kind == "float32" else 64
        elems = (
            st.sampled_from([0.0, 0.25, 1.5, 3.0, -2.0])
            if ties
            else st.floats(-100, 100, allow_nan=False, width=width)
        )
    return draw(arrays(np.dtype(kind), (n, n), elements=elems))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(costs=cost_matrices())
def test_cpu_solvers_match_brute_force_and_are_certified(costs):
    inst = CostMatrix(costs, name="hyp")
    n = costs.shape[0]
    atol = certificate_atol(costs)
    ref = None
    for cls in CPU_SOLVERS:
        if cls is LapJV and "lap" not in sys.modules:
            try:
                import lap  # noqa: F401
            except ImportError:
                continue
        ans = solve(cls, inst)
        v = PROBLEM.verify(inst, ans)
        assert v.verified, f"{cls.name}: {v.reason}"
        if n <= 7:
            ref = brute_force(costs) if ref is None else ref
        elif ref is None:
            ref = v.objective  # certified optimal: the reference for the others
        assert abs(v.objective - ref) <= 2 * n * atol + 1e-9, (cls.name, v.objective, ref)


@pytest.mark.parametrize(
    "inst",
    [
        L.uniform(150, "n/10", 1),
        L.uniform(200, "n", 2),
        L.uniform(250, "10n", 3),
        L.uniform(120, 5, 4, dtype="int64"),
        L.uniform_float(180, 5),
        L.geometric(160, 6),
        L.uniform_float(90, 7, dtype="float32"),
    ],
    ids=lambda i: i.name,
)
def test_cpu_solvers_agree_on_generated_instances(inst):
    objectives = {}
    for cls in CPU_SOLVERS:
        ans = solve(cls, inst)
        v = PROBLEM.verify(inst, ans)
        assert v.verified, f"{cls.name}: {v.reason}"
        objectives[cls.name] = v.objective
    vals = list(objectives.values())
    assert max(vals) - min(vals) <= 2 * inst.n * certificate_atol(inst.costs) + 1e-9, objectives


def test_hungarian_tree_returns_duals_and_counters():
    inst = L.uniform(100, "10n", seed=9)
    s = HungarianTree()
    s.prepare(inst)
    s.run()
    ans = s.result()
    assert ans.u.dtype == np.int64 and ans.v.dtype == np.int64
    c = s.counters()
    assert c["row_scans"] >= 100 and c["dual_updates"] >= 1
    with pytest.raises(RuntimeError, match="before run"):
        t = HungarianTree()
        t.prepare(inst)
        t.result()


def test_lapjv_skips_with_a_reason_without_lap(monkeypatch):
    monkeypatch.setitem(sys.modules, "lap", None)  # makes "import lap" fail
    skip, reason = LapJV().skip(L.uniform(5))
    assert skip and "lap" in reason


@pytest.mark.parametrize("name", LAP_CONFS)
def test_algorithm_configs_instantiate_to_their_solver(name):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(CONF / f"{name}.yaml")
    solver = instantiate(cfg)
    assert solver.name == name and solver.problem == "lap"
    assert solver.device == ("gpu" if name.startswith("cu_") else "cpu")
    if name.startswith("cu_"):
        expect = {"devices": 1, "allow_shared_device": False, "batch": 16, "fuse": True}
        if name == "cu_tree":  # the persistent kernel is CU-TREE's default
            expect.update(persistent=True, tiles_per_block=0)
        assert solver.params == expect
        assert solver.kernel_families == ("hungarian",)


def test_gpu_solver_parameters_are_checked():
    from matchbench.solvers.gpu.hungarian import CuClass, CuTree, split

    with pytest.raises(ValueError, match="devices"):
        CuTree(devices=0)
    with pytest.raises(ValueError, match="batch"):
        CuClass(batch=0)
    with pytest.raises(ValueError, match="persistent"):
        CuTree(devices=2)  # the persistent kernel runs on one GPU
    with pytest.raises(ValueError, match="persistent"):
        CuTree(persistent="yes")
    for bad in (-1, 65, 1.5, True):
        with pytest.raises(ValueError, match="tiles_per_block"):
            CuTree(tiles_per_block=bad)
    host = CuTree(devices=2, persistent=False)
    assert host.params["persistent"] is False and host.params["devices"] == 2
    assert split(10, 3) == [(0, 4), (4, 3), (7, 3)]
    assert split(4, 3) == [(0, 2), (2, 1), (3, 1)]


def test_persistent_mode_reports_its_own_phases():
    from matchbench.solvers.gpu.hungarian import CuTree

    # Constructing a solver imports no CuPy and touches no GPU.
    assert CuTree()._phase_names == ("initial_reduction", "solve_loop")
    assert "forward_pass" in CuTree(persistent=False)._phase_names
    assert "persistent=True,tiles_per_block=0" in CuTree().variant()


def test_hungarian_kernels_compile_for_every_cost_dtype():
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    try:
        nvrtc.getVersion()
    except Exception as exc:  # CuPy without a loadable NVRTC
        pytest.skip(f"NVRTC not usable: {exc!r}")
    from matchbench.solvers.gpu import kernels
    from matchbench.solvers.gpu.hungarian import _KERNELS

    for code in range(4):
        ptx = kernels.compile_ptx("hungarian", "sm_80", (f"-DHUNG_DTYPE={code}",))
        entries = {line.split("(")[0].split()[-1] for line in ptx.splitlines() if ".entry" in line}
        assert entries == set(_KERNELS)


def test_lap_bench_tables_render_every_variant():
    """The bench's tables from measurement rows (no GPU): each variant lands in its column,
    the speed-ups use the best GPU variant, and a missed target is called so."""
    import argparse

    from matchbench.bench import lap as bench

    def row(t, levels=100, **counters):
        return {
            "status": "ok",
            "verified": True,
            "objective": 7.0,
            "solve_s": t,
            "phases": {"forward_pass": t / 2, "dual_update": t / 10},
            "counters": {"bfs_levels": levels, "initial_assignments": 3, **counters},
            "gpu_peak_bytes": 2**20,
            "cost_bytes": 2**20,
        }

    gpu, cpu = {}, {}
    for r in bench.RANGES:
        for n in bench.TABLE3_N:
            gpu[("cu_class", r, n, 1)] = row(0.5)
            gpu[("cu_tree", r, n, 1)] = row(0.01, grid_barriers=120, host_syncs=1)
            gpu[("cu_tree host", r, n, 1)] = row(0.08, host_syncs=20)
            gpu[("cu_tree", r, n, ("tiles", 2))] = row(0.02)
            cpu[("scipy_lsa", r, n)] = {"status": "ok", "seconds": 2.0, "certified": True}
            cpu[("lapjv", r, n)] = {"status": "timeout", "limit_s": 30.0}
    info = {
        "gpu_model": "test GPU",
        "gpu_count": 1,
        "cuda_runtime_version": 0,
        "cuda_driver_version": 0,
        "cupy_version": "0",
        "host_cpus": 2,
    }
    args = argparse.Namespace(seed=1, reps=3, cpu_timeout=30.0, cpu_workers=2)
    md = bench.render(gpu, cpu, info, args, [], {"t1", "ablation", "big"}, [2])
    n0 = bench.TABLE3_N[0]
    assert f"| [0, n/10] | {n0} | 0.01 | cu_tree | 200x | > 3000x | - |" in md
    assert f"| [0, 10n] | {n0} | persistent | 0.01 | 100 |" in md and "| 100.00 |" in md
    assert f"| [0, 10n] | {n0} | 0.01 | 0.02 | - |" in md  # tiles table: auto, 2 tiles
    assert "faster than scipy_lsa at n >= 5000: smallest speedup 200x" in md
    assert "-> met" in md and "GPU answers not certified or failed: none" in md
    gpu[("cu_tree", "n", n0, 1)] = row(0.05)
    gpu[("cu_tree host", "n", n0, 1)] = {"status": "error: RuntimeError: x"}
    md = bench.render(gpu, cpu, info, args, [], {"t1", "ablation", "big"}, [])
    assert f"smallest speedup 40x at [0,n] n={n0} (cu_tree)" in md and "NOT met" in md
    assert f"('cu_tree host', 'n', {n0}, 1)" in md
