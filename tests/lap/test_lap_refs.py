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

from matchbench.core.params import configured
from matchbench.families.lap import datasets as L
from matchbench.families.lap.problem import LAP, CostMatrix, certificate_atol
from matchbench.families.lap.refs import HungarianTree, LapJV, ScipyLSA

PROBLEM = LAP()
CPU_SOLVERS = (ScipyLSA, LapJV, HungarianTree)
CONF = Path(__file__).resolve().parents[2] / "conf" / "algorithm"
LAP_CONFS = ("scipy_lsa", "lapjv", "hungarian_tree", "cu_class", "cu_tree")


def brute_force(costs: np.ndarray) -> float:
    n = costs.shape[0]
    perms = np.array(list(itertools.permutations(range(n))))
    return float(costs[np.arange(n), perms].astype(np.float64).sum(axis=1).min())


def solve(cls, inst):
    s = configured(cls)
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
    s = configured(HungarianTree)
    s.prepare(inst)
    s.run()
    ans = s.result()
    assert ans.u.dtype == np.int64 and ans.v.dtype == np.int64
    c = s.counters()
    assert c["row_scans"] >= 100 and c["dual_updates"] >= 1
    with pytest.raises(RuntimeError, match="before run"):
        t = configured(HungarianTree)
        t.prepare(inst)
        t.result()


def test_lapjv_skips_with_a_reason_without_lap(monkeypatch):
    monkeypatch.setitem(sys.modules, "lap", None)  # makes "import lap" fail
    skip, reason = configured(LapJV).skip(L.uniform(5))
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
    from matchbench.families.lap.hungarian import CuClass, CuTree, split

    with pytest.raises(ValueError, match="devices"):
        configured(CuTree, devices=0)
    with pytest.raises(ValueError, match="batch"):
        configured(CuClass, batch=0)
    with pytest.raises(ValueError, match="persistent"):
        configured(CuTree, devices=2)  # the persistent kernel runs on one GPU
    with pytest.raises(ValueError, match="persistent"):
        configured(CuTree, persistent="yes")
    for bad in (-1, 65, 1.5, True):
        with pytest.raises(ValueError, match="tiles_per_block"):
            configured(CuTree, tiles_per_block=bad)
    host = configured(CuTree, devices=2, persistent=False)
    assert host.params["persistent"] is False and host.params["devices"] == 2
    assert split(10, 3) == [(0, 4), (4, 3), (7, 3)]
    assert split(4, 3) == [(0, 2), (2, 1), (3, 1)]


def test_persistent_mode_reports_its_own_phases():
    from matchbench.families.lap.hungarian import CuTree

    # Constructing a solver imports no CuPy and touches no GPU.
    assert configured(CuTree)._phase_names == ("initial_reduction", "solve_loop")
    assert "forward_pass" in configured(CuTree, persistent=False)._phase_names
    assert "persistent=True,tiles_per_block=0" in configured(CuTree).variant()


def test_hungarian_kernels_compile_for_every_cost_dtype():
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    try:
        nvrtc.getVersion()
    except Exception as exc:  # CuPy without a loadable NVRTC
        pytest.skip(f"NVRTC not usable: {exc!r}")
    from matchbench.families.lap.hungarian import KERNELS
    from matchbench.gpu import kernels

    for code in range(4):
        ptx = kernels.compile_ptx("hungarian", "sm_80", (f"-DHUNG_DTYPE={code}",))
        entries = {line.split("(")[0].split()[-1] for line in ptx.splitlines() if ".entry" in line}
        assert entries == set(KERNELS)
