"""CU-CLASS and CU-TREE on a GPU: hundreds of random LAPs, every answer certified.

The instance set: 236 generated matrices, n from 2 to 3000 (most of them small), integer
costs in the paper's three ranges [0, n/10], [0, n], [0, 10n], int64 costs with negative
values, 0/1 and rank-one matrices (massive ties), float32 costs on a coarse grid (ties),
float64 uniform and Euclidean costs. CU-CLASS, CU-TREE's persistent kernel (the default)
and CU-TREE's host loop each solve every instance on one device; the persistent kernel
with several column tiles per block, the host loop's other shapes and the multi-device
code path (devices = 2 and 3 with ``allow_shared_device``) solve subsets. Every answer
must be certified optimal by the LAP verifier from the solver's own duals and cost what
scipy's answer costs.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from matchbench.core.params import configured
from matchbench.families.lap import datasets as L
from matchbench.families.lap.hungarian import CuClass, CuTree
from matchbench.families.lap.problem import LAP, CostMatrix, certificate_atol

pytestmark = pytest.mark.gpu

PROBLEM = LAP()
KINDS = (
    "n/10",
    "n",
    "10n",
    "int64_neg",
    "binary",
    "rank_one",
    "float32_grid",
    "float64",
    "geometric",
)


def _make(kind: str, n: int, seed: int) -> CostMatrix:
    rng = np.random.default_rng(seed)
    if kind in ("n/10", "n", "10n"):
        return L.uniform(n, kind, seed=seed)
    if kind == "int64_neg":
        c = rng.integers(-5 * n, 5 * n + 1, (n, n)).astype(np.int64)
    elif kind == "binary":
        c = rng.integers(0, 2, (n, n)).astype(np.int32)
    elif kind == "rank_one":  # c_ij = a_i + b_j: every permutation is optimal
        c = (rng.integers(0, 9, n)[:, None] + rng.integers(0, 9, n)[None, :]).astype(np.int32)
    elif kind == "float32_grid":
        c = (rng.integers(0, 8, (n, n)) * 0.125).astype(np.float32)
    elif kind == "float64":
        return L.uniform_float(n, seed=seed)
    else:
        return L.geometric(n, seed=seed)
    return CostMatrix(c, name=f"{kind}_n{n}_s{seed}", family="test")


def _instance_specs() -> list[tuple[str, int, int]]:
    rng = np.random.default_rng(2016)
    specs = []
    for k in range(150):  # small: the corner cases live here
        specs.append((KINDS[k % len(KINDS)], int(rng.integers(2, 65)), k))
    for k in range(70):
        specs.append((KINDS[k % len(KINDS)], int(rng.integers(65, 700)), 1000 + k))
    for k, n in enumerate((1000, 1200, 1500, 1800, 2000, 2500)):
        specs.append((("n/10", "n", "10n", "float64", "geometric", "int64_neg")[k], n, 2000 + k))
    for k, kind in enumerate(
        ("n/10", "n", "10n", "10n", "float64", "n", "10n", "geometric", "int64_neg", "n")
    ):
        specs.append((kind, 3000 if k < 4 else int(rng.integers(2000, 3000)), 3000 + k))
    return specs


@pytest.fixture(scope="module")
def instances():
    """(instance, scipy's optimal cost) for every spec."""
    out = []
    for kind, n, seed in _instance_specs():
        inst = _make(kind, n, seed)
        rows, cols = linear_sum_assignment(inst.costs)
        out.append((inst, float(inst.costs[rows, cols].astype(np.float64).sum())))
    return out


def _check(solver, inst: CostMatrix, ref: float) -> str | None:
    """None when the solver's answer is certified and costs ``ref``; else what went wrong."""
    skip, reason = solver.skip(inst)
    if skip:
        return f"skipped: {reason}"
    try:
        solver.prepare(inst)
        solver.run()
        ans = solver.result()
    except Exception as exc:  # report, and go on with the other instances
        where = traceback.extract_tb(exc.__traceback__)[-3:]
        frames = "; ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in where)
        return f"raised {type(exc).__name__}: {exc} (at {frames})"
    v = PROBLEM.verify(inst, ans)
    if not v.verified:
        return f"not certified: {v.reason}"
    tol = 2 * inst.n * certificate_atol(inst.costs) + 1e-9
    if abs(v.objective - ref) > tol:
        return f"cost {v.objective} != scipy's {ref}"
    if ans.u is None or ans.v is None:
        return "no duals returned"
    return None


def _run_all(make_solver, cases, max_failures: int = 10) -> None:
    failures = []
    for inst, ref in cases:
        why = _check(make_solver(), inst, ref)
        if why:
            failures.append(f"{inst.name} ({inst.costs.dtype}): {why}")
            if len(failures) >= max_failures:  # a broken variant fails fast
                break
    assert not failures, f"{len(failures)} of {len(cases)} failed:\n" + "\n".join(failures[:20])


#: The variants every instance goes through: CU-CLASS, CU-TREE's persistent kernel (its
#: default) and CU-TREE's host-driven loop.
MAIN = {
    "cu_class": lambda **kw: configured(CuClass, **kw),
    "cu_tree": lambda **kw: configured(CuTree, **kw),
    "cu_tree_host": lambda **kw: configured(CuTree, persistent=False, **kw),
}
#: The host-driven loops (the shapes of the paper's loop and the multi-device path).
HOST = {"cu_class": MAIN["cu_class"], "cu_tree_host": MAIN["cu_tree_host"]}


@pytest.mark.parametrize("make", MAIN.values(), ids=MAIN.keys())
def test_one_device_every_instance_certified(make, instances):
    assert len(instances) >= 200
    _run_all(lambda: make(), instances)


@pytest.mark.parametrize("tiles", [2, 3])
def test_persistent_with_several_tiles_per_block(tiles, instances):
    # Several 32-column tiles per block: the lanes loop over tiles, each block owns
    # 32 x tiles columns (several blocks once n > 32 x tiles), and the grid-stride row loops
    # cover more rows per thread. Every third instance and all the larger ones.
    cases = [c for k, c in enumerate(instances) if k % 3 == 0 or c[0].n >= 300]
    _run_all(lambda: configured(CuTree, tiles_per_block=tiles), cases)


def test_persistent_counts_on_the_device_and_syncs_once():
    inst = L.uniform(900, "10n", seed=11)
    rows, cols = linear_sum_assignment(inst.costs)
    ref = float(inst.costs[rows, cols].sum())
    host, pers = configured(CuTree, persistent=False), configured(CuTree)
    assert _check(host, inst, ref) is None and _check(pers, inst, ref) is None
    ch, cp_ = host.counters(), pers.counters()
    assert cp_["host_syncs"] == 1 and ch["host_syncs"] > 1
    assert cp_["kernel_launches"] < ch["kernel_launches"]
    assert cp_["phases"] >= 1 and cp_["bfs_levels"] >= cp_["phases"]
    assert cp_["dual_updates"] >= 1  # [0, 10n] at n = 900 needs some
    # reset + one barrier per BFS level + two per dual update + two per augmentation
    assert cp_["grid_barriers"] == (
        cp_["phases"] + 1 + cp_["bfs_levels"] + 2 * cp_["dual_updates"] + 2 * cp_["phases"]
    )
    # Both modes run the same algorithm; frontier order (ties) may differ, so the counts
    # agree only roughly.
    assert 0.5 <= cp_["bfs_levels"] / ch["bfs_levels"] <= 2.0
    assert set(pers.timings()) == {"solve", "initial_reduction", "solve_loop"}


def test_persistent_refuses_a_grid_that_cannot_be_co_resident():
    s = configured(CuTree, tiles_per_block=64)  # 64 tiles need more shared memory than a block gets
    with pytest.raises(RuntimeError, match="co-resident"):
        s.prepare(L.uniform(4096, "n", seed=1))


@pytest.mark.parametrize("make", HOST.values(), ids=HOST.keys())
@pytest.mark.parametrize("devices", [2, 3])
def test_several_blocks_on_shared_devices(make, devices, instances):
    cases = [c for k, c in enumerate(instances) if k % 5 == 0 and c[0].n >= devices]
    cases += [c for c in instances if c[0].n >= 2000][:3]
    _run_all(lambda: make(devices=devices, allow_shared_device=True), cases)


@pytest.mark.parametrize("make", HOST.values(), ids=HOST.keys())
def test_separate_contraction_kernel(make, instances):
    cases = [c for k, c in enumerate(instances) if k % 4 == 0]
    _run_all(lambda: make(fuse=False), cases)


@pytest.mark.parametrize("make", HOST.values(), ids=HOST.keys())
def test_paper_loop_one_host_check_per_level(make, instances):
    cases = [c for k, c in enumerate(instances) if k % 9 == 0]
    _run_all(lambda: make(batch=1, fuse=False), cases)


@pytest.mark.parametrize("make", MAIN.values(), ids=MAIN.keys())
def test_repetitions_reuse_the_upload_and_report_phases(make):
    inst = L.uniform(700, "10n", seed=5)
    rows, cols = linear_sum_assignment(inst.costs)
    ref = float(inst.costs[rows, cols].sum())
    s = make()
    for _ in range(3):
        assert _check(s, inst, ref) is None
    state = s._st
    assert _check(s, inst, ref) is None and s._st is state  # cached by instance identity
    t = s.timings()
    assert t["solve"] > 0
    persistent = s.params.get("persistent", False)
    if persistent:  # one kernel: no phase split inside it
        assert set(t) == {"solve", "initial_reduction", "solve_loop"}
    else:
        assert {"initial_reduction", "forward_pass", "augment", "optimality_check"} <= set(t)
    assert sum(v for k, v in t.items() if k != "solve") <= t["solve"] * 1.01 + 1e-4
    c = s.counters()
    assert c["phases"] >= 1 and c["kernel_launches"] > 0 and c["host_syncs"] > 0
    assert 0 < c["initial_assignments"] < inst.n
    if isinstance(s, CuClass):
        assert "compression" in t and c["compressions"] >= 1


@pytest.mark.parametrize("make", HOST.values(), ids=HOST.keys())
def test_too_few_gpus_is_a_skip_with_the_reason(make):
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    skip, reason = make(devices=count + 1).skip(L.uniform(50))
    assert skip and "allow_shared_device" in reason
    assert make(devices=count + 1, allow_shared_device=True).skip(L.uniform(50)) == (False, None)


def test_padded_rectangular_instance():
    rng = np.random.default_rng(3)
    costs = rng.integers(0, 100, (40, 65)).astype(np.int32)
    inst = CostMatrix.from_array(costs, name="rect", pad=True)
    r, c = linear_sum_assignment(costs)
    for cls in (CuClass, CuTree):
        s = configured(cls)
        s.prepare(inst)
        s.run()
        ans = s.result()
        assert PROBLEM.verify(inst, ans).verified
        rows, cols = inst.real_pairs(ans)
        assert costs[rows, cols].sum() == costs[r, c].sum()
