"""One task, executed where it lands: load, initialize, warm up, time, verify, rows.

:func:`execute_task` is what runs in the task process (see :mod:`matchbench.runner.child`);
it streams each finished repetition's row through ``emit`` so that a timeout or a crash
later in the task loses nothing already measured.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from matchbench.results.schema import to_json

Row = dict[str, Any]

#: problems whose initializer already ran (was compiled) in this process
_warm_initializers: set[str] = set()


def classify(exc: BaseException) -> str:
    """The ``status`` of a failure: ``oom`` for device or host memory, else ``error``."""
    name = type(exc).__name__
    if isinstance(exc, MemoryError) or name in ("OutOfMemoryError",) or "out of memory" in str(exc).lower():
        return "oom"
    return "error"


def _now() -> datetime:
    return datetime.now(UTC)


def error_row(base: Row, exc: BaseException | str, *, status: str | None = None, stage: str = "") -> Row:
    """A row recording a failure; ``base`` holds whatever identity columns are known."""
    if isinstance(exc, BaseException):
        message = f"{type(exc).__name__}: {exc}"
        error_type = type(exc).__name__
        status = status or classify(exc)
    else:
        message, error_type, status = exc, status or "error", status or "error"
    if stage:
        message = f"{stage}: {message}"
    keep = {k: v for k, v in base.items() if k in _ROW_KEYS}
    return {
        "repetition": -1,
        **keep,
        "status": status,
        "error_type": error_type,
        "error": message[:4000],
        "verified": None,
        "timestamp": _now(),
    }


_ROW_KEYS = {
    "job_index", "hydra_overrides", "config_json", "experiment", "task_id", "algorithm", "problem", "device",
    "variant", "params_json", "instance", "family", "n_rows", "n_cols", "n_edges", "dataset_seed",
    "rcp", "instance_params", "instance_key", "n_repetitions", "host", "gpu_model", "gpu_count",
    "cuda_driver_version", "cuda_runtime_version", "instance_bytes", "t_load_s", "t_init_s",
    "objective_init", "init",
}


def task_base(task: dict[str, Any]) -> Row:
    """Identity columns known before the instance is loaded."""
    spec = task["instance_spec"]
    return {
        **task["provenance"],
        "task_id": task["task_id"],
        "algorithm": task["algorithm"],
        "problem": task["problem"],
        "device": task["device"],
        "variant": task["variant"],
        "params_json": task["params_json"],
        "init": task.get("init"),
        "n_repetitions": task["repetitions"],
        "instance": spec.get("name") or spec.get("path") or spec.get("_target_", "?").rsplit(".", 1)[-1],
        "rcp": bool(spec.get("rcp", False)),
        "dataset_seed": spec.get("seed"),
        "instance_params": to_json(spec),
    }


def _instance_columns(instance: Any, spec: dict[str, Any]) -> Row:
    from matchbench.datasets import instance_key

    cols = dict(instance.describe())
    cols["instance_key"] = instance_key(spec)
    cols["instance_params"] = to_json(getattr(instance, "params", spec))
    cols["rcp"] = bool(getattr(instance, "params", {}).get("rcp", spec.get("rcp", False)))
    nbytes = getattr(instance, "nbytes", None)
    cols["instance_bytes"] = int(nbytes) if nbytes is not None else None
    return cols


def _gpu_pool():
    import cupy

    return cupy.get_default_memory_pool()


def execute_task(
    task: dict[str, Any],
    emit: Callable[[Row], None] | None = None,
    loaded: Callable[[Row], None] | None = None,
    started: Callable[[int], None] | None = None,
) -> list[Row]:
    """Run one task; return (and ``emit`` as they finish) its rows.

    ``loaded`` receives the identity columns once the instance is loaded, so that a
    task killed later (timeout, crash) is still recorded under its instance's name;
    ``started`` receives each repetition's number as it starts (the task process's parent
    times ``algorithm.time_limit_s`` from there).

    After the warm-up and the timed repetitions, ``task["instrumented"]`` more
    repetitions run with the solver's instrumentation on (:meth:`BaseSolver.instrument`,
    for solvers that have one): their rows carry ``instrumented=True`` and the counters
    that only instrumented runs collect (e.g. adjacency entries scanned).
    Never raises for a failure of the task itself: loading, initialization, solving or
    verification errors become rows with a status and a message.
    """
    from hydra.utils import instantiate

    from matchbench.datasets import load
    from matchbench.problems import get_problem
    from matchbench.runner.provenance import worker_provenance

    rows: list[Row] = []

    def out(row: Row) -> None:
        row.setdefault("timestamp", _now())
        rows.append(row)
        if emit is not None:
            emit(row)

    t_task = time.perf_counter()
    base = task_base(task)
    try:
        base.update(worker_provenance(task["device"]))
    except Exception as exc:
        out(error_row(base, exc, stage="device"))
        return rows

    # load (cached per process: repetitions and other algorithms reuse the instance)
    try:
        t0 = time.perf_counter()
        instance = load(task["instance_spec"], data_dir=task.get("data_dir"))
        base["t_load_s"] = time.perf_counter() - t0
        base.update(_instance_columns(instance, task["instance_spec"]))
    except Exception as exc:
        out(error_row(base, exc, stage="load"))
        return rows
    if loaded is not None:
        loaded(dict(base))

    problem = get_problem(task["problem"])
    if getattr(instance, "problem", task["problem"]) != task["problem"]:
        out(error_row(base, f"{task['algorithm']} solves {task['problem']!r} but instance "
                            f"{base['instance']} is a {instance.problem!r} instance", stage="plan"))
        return rows

    try:
        solver = instantiate(task["algorithm_cfg"], _convert_="all")
        skip, reason = solver.skip(instance)
    except Exception as exc:
        out(error_row(base, exc, stage="solver"))
        return rows
    if skip:
        out(error_row(base, reason or "skipped", status="skipped"))
        return rows

    try:
        if task.get("init_cfg"):
            initializer = instantiate(task["init_cfg"], _convert_="all")
            base["init"] = initializer.label()
            make_init, warm_key = initializer, f"{task['problem']}:{initializer.label()}"
        else:
            initializer, make_init, warm_key = None, problem.initialize, task["problem"]
        if initializer is not None and initializer.device == "gpu":
            # Run by the solver on its device copy of the instance (timings()["init"]).
            init = initializer
        else:
            if warm_key not in _warm_initializers:
                # The first call of a process compiles (numba JIT); keep that out of t_init_s.
                make_init(instance)
                _warm_initializers.add(warm_key)
            t0 = time.perf_counter()
            init = make_init(instance)
            base["t_init_s"] = time.perf_counter() - t0
            base["objective_init"] = problem.initial_objective(init)
    except Exception as exc:
        out(error_row(base, exc, stage="initialize"))
        return rows

    gpu = task["device"] == "gpu"
    if gpu:
        from matchbench.solvers.gpu import kernels

        pool = _gpu_pool()
        pool.free_all_blocks()
        families = task.get("kernel_families", [])
        try:
            kernels.precompile(families)  # a no-op where the worker plugin already compiled
        except Exception as exc:
            out(error_row(base, exc, stage="compile"))
            return rows
        # NVRTC time this process spent on the task's kernels, whether the worker plugin
        # paid it before the first task or this task did: never inside a timed region.
        base["t_compile_s"] = sum(kernels.compile_seconds.get(f, 0.0) for f in families)

    reps, warmup = int(task["repetitions"]), int(task["warmup"])
    schedule = [(rep, False) for rep in range(-warmup, reps)]
    if getattr(solver, "instrumentable", False):
        schedule += [(reps + i, True) for i in range(int(task.get("instrumented", 0) or 0))]
    instrumented = False
    for rep, instr in schedule:
        row = dict(base, repetition=rep, instrumented=instr)
        try:
            if instr != instrumented:
                solver.instrument(instr)
                instrumented = instr
            if gpu:
                pool.free_all_blocks()
            if started is not None:
                started(rep)
            t0 = time.perf_counter()
            solver.prepare(instance, init)
            if gpu:
                import cupy

                cupy.cuda.Device().synchronize()
            t1 = time.perf_counter()
            solver.run()
            if gpu:
                cupy.cuda.Device().synchronize()
            t2 = time.perf_counter()
            solution = solver.result()
            t3 = time.perf_counter()
        except Exception as exc:
            out(error_row(row, exc, stage=f"repetition {rep}") | {"repetition": rep})
            if classify(exc) == "oom":
                return rows
            continue
        if rep < 0:  # warm-up: compilation, caches, JIT
            continue
        timings = dict(solver.timings())
        counters = dict(solver.counters())
        if "init" in timings:  # a GPU initializer or preprocessing, run by the solver
            row["t_init_s"] = timings.pop("init")
            row["objective_init"] = counters.get("init_objective")
            if row.get("init") is None:  # no initializer: the solver's own preprocessing
                row["init"] = getattr(solver, "init_label", None)
        row.update(
            status="ok",
            t_prepare_s=t1 - t0,
            t_solve_s=timings.pop("solve", t2 - t1),
            t_transfer_s=timings.pop("transfer", (t3 - t2) if gpu else None),
            t_upload_s=timings.pop("upload", None),
            phases_json=to_json(timings) if timings else None,
        )
        row["t_e2e_s"] = e2e_seconds(row.get("t_init_s"), row["t_solve_s"])
        n_edges, t_solve = row.get("n_edges"), row["t_solve_s"]
        if n_edges is not None and t_solve is not None and t_solve > 0:
            row["edges_per_s"] = float(n_edges) / float(t_solve)
        proposals = counters.get("proposals")
        if isinstance(proposals, int | float) and t_solve is not None and t_solve > 0:
            row["proposals_per_s"] = float(proposals) / float(t_solve)
        row.update(
            kernel_launches=counters.get("kernel_launches"),
            host_syncs=counters.get("host_syncs"),
            iterations=counters.get("iterations", counters.get("phases")),
            counters_json=to_json(counters) if counters else None,
        )
        if gpu:
            row["gpu_mem_peak_bytes"] = solver.memory_peak_bytes() or int(pool.total_bytes())
        if task.get("verify", True):
            t0 = time.perf_counter()
            try:
                v = problem.verify(instance, solution)
                row.update(
                    objective=v.objective, bound=v.bound, reference_objective=v.reference,
                    verified=v.verified, verify_reason=v.reason,
                )
            except Exception as exc:
                row.update(verified=False, verify_reason=f"verifier failed: {type(exc).__name__}: {exc}")
            row["t_verify_s"] = time.perf_counter() - t0
        out(row)

    total = time.perf_counter() - t_task
    for r in rows:
        r["t_total_s"] = total
    return rows


def e2e_seconds(t_init_s: float | None, t_solve_s: float | None) -> float | None:
    """``t_e2e_s``: what a user with the instance in place waits for, initializer + solve.

    >>> e2e_seconds(0.25, 1.0), e2e_seconds(None, 1.0), e2e_seconds(0.25, None)
    (1.25, 1.0, None)
    """
    if t_solve_s is None:
        return None
    return float(t_solve_s) + (float(t_init_s) if t_init_s is not None else 0.0)


def format_exception(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()
