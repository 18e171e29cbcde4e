"""``lap_solve_batch``: the array API (``matchbench.lap.solve_batch``) as a sweep's solver.

Host: its parameters, its yaml, and the batches it refuses before touching a device. GPU:
a sweep's batch of bulk-drawn instances (blocks of one device stack, handed over as a view)
and host-made instances (one upload), every answer certified by the sweep from the returned
duals and costing what ``hungarian_batch_gpu``'s costs. Its speed beside the kernel alone is
a sweep (``conf/algorithm/lap_solve_batch.yaml``, ``docs/benchmarks/batch.md``), not a test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml
from scipy.optimize import linear_sum_assignment

from matchbench.families.lap.api_solver import SolveBatchAPI
from matchbench.families.lap.problem import LAP, CostMatrix
from matchbench.results.schema import with_constants
from matchbench.runner.batch import Batch
from matchbench.runner.plan import build_plan
from matchbench.runner.task import execute_batch, new_solver

CONF = Path(__file__).resolve().parents[2] / "conf" / "algorithm" / "lap_solve_batch.yaml"
LAPS = {"name": "api_laps", "many": {"_target_": "matchbench.families.lap.datasets.uniform", "n": 16,
                                     "cost_range": "n", "dtype": "int32"}, "count": 40, "seed": 3}


def _matrix(n: int, seed: int, dtype=np.int32) -> CostMatrix:
    rng = np.random.default_rng(seed)
    return CostMatrix(rng.integers(0, 50, (n, n)).astype(dtype), name=f"m{n}_{seed}")


@pytest.mark.parametrize(("kw", "word"), [
    ({"threads_per_block": 33}, "threads_per_block"), ({"threads_per_block": -32}, "threads_per_block"),
    ({"verify": "yes"}, "verify"),
])  # fmt: skip
def test_bad_parameters_name_themselves(kw, word):
    with pytest.raises(ValueError, match=word):
        SolveBatchAPI(**kw)


def test_the_yaml_builds_the_solver():
    cfg = yaml.safe_load(CONF.read_text())
    solver = new_solver(cfg)
    assert isinstance(solver, SolveBatchAPI) and solver.batchable and solver.device == "gpu"
    assert solver.params == {"threads_per_block": 0, "verify": False}


def test_batches_it_cannot_take_are_refused_before_the_device():
    s = SolveBatchAPI()
    with pytest.raises(ValueError, match="one n and one dtype"):
        s.prepare_batch([_matrix(4, 1), _matrix(5, 2)])
    with pytest.raises(ValueError, match="one n and one dtype"):
        s.prepare_batch([_matrix(4, 1), _matrix(4, 2, np.float32)])
    with pytest.raises(ValueError, match="no instances"):
        s.prepare_batch([])
    with pytest.raises(TypeError, match="not a CostMatrix"):
        s.prepare_batch([_matrix(4, 1), np.zeros((4, 4))])
    with pytest.raises(RuntimeError, match="before prepare_batch"):
        s.run()


def _rows(tmp_path, algorithm):
    cfg = {"algorithm": algorithm, "dataset": LAPS, "gpu": {"repetitions": 2, "warmup": 1},
           "cluster": {"kind": "local_cuda"}, "data_dir": str(tmp_path / "data"),
           "run": {"results_dir": str(tmp_path / "runs"), "isolate": False, "verify": True}}
    plan = build_plan(cfg)
    assert not plan.error_rows, plan.error_rows
    tables: list = []
    rows, _ = execute_batch(Batch("b", plan.tasks), tables=tables)
    # a batch made as one stack sends its rows compact (CompactTable): made whole here
    whole = [with_constants(t, {}) for t in tables]
    return rows + (pa.concat_tables(whole).to_pylist() if whole else [])


@pytest.mark.gpu
def test_a_sweeps_batch_is_solved_in_one_call_and_certified(tmp_path):
    api = _rows(tmp_path, yaml.safe_load(CONF.read_text()))
    kernel = _rows(tmp_path, {"_target_": "matchbench.families.lap.batch_gpu.HungarianBatchGPU",
                              "threads_per_block": 0, "smem_cost_bytes": 0})
    assert len(api) == 2 * LAPS["count"]
    assert all(r["status"] == "ok" and r["verified"] is True and r["batch_size"] == LAPS["count"] for r in api), api[:2]
    by = {(r["instance"], r["repetition"]): r["objective"] for r in kernel}
    assert {(r["instance"], r["repetition"]): r["objective"] for r in api} == by


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
def test_host_made_instances_are_uploaded_once_and_solved(dtype):
    insts = [_matrix(24, seed, dtype) for seed in range(30)]
    s = SolveBatchAPI(verify=True)
    s.prepare_batch(insts)
    s.run()
    answers = s.result_batch()
    assert s.timings()["solve"] > 0 and s.counters() == {"batch_size": 30}
    problem = LAP()
    for inst, ans in zip(insts, answers, strict=True):
        v = problem.verify(inst, ans)
        r, c = linear_sum_assignment(inst.costs)
        assert v.verified, v.reason
        assert v.objective == pytest.approx(float(inst.costs[r, c].sum()))
