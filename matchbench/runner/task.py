"""One task, executed where it lands: load, initialize, warm up, time, verify, rows.

:func:`execute_task` runs a :class:`~matchbench.runner.plan.Task` in the task process
(see :mod:`matchbench.runner.child`);
it streams each finished repetition's row through ``emit`` so that a timeout or a crash
later in the task loses nothing already measured. :func:`execute_batch` runs a batched
task (``run.batch``, :mod:`matchbench.runner.batch`): many instances of one algorithm x
variant, each with the rows :func:`execute_task` would give it, solved together where
the solver is ``batchable``.
"""

from __future__ import annotations

import gc
import inspect
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from matchbench.core.problem import ReportedObjective, get_problem
from matchbench.core.solver import Measurements
from matchbench.results.schema import to_json

if TYPE_CHECKING:
    from matchbench.runner.batch import Batch
    from matchbench.runner.plan import Task

Row = dict[str, Any]

#: problems whose initializer already ran (was compiled) in this process
_warm_initializers: set[str] = set()
#: the families' Problem objects this process asked for, by name
_problems: dict[str, Any] = {}


def classify(exc: BaseException) -> str:
    """The ``status`` of a failure: ``oom`` for device or host memory, ``timeout`` for an
    outside program killed at its limit, else ``error``."""
    name = type(exc).__name__
    if isinstance(exc, TimeoutError):
        return "timeout"
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
    row = {
        "repetition": -1,
        **keep,
        "status": status,
        "error_type": error_type,
        "error": message[:4000],
        "verified": None,
        "timestamp": _now(),
    }
    limit = getattr(exc, "limit_s", None)  # an outside program killed at its own limit
    if status == "timeout" and isinstance(limit, int | float):
        row["time_limit_s"] = float(limit)
    return row


_ROW_KEYS = {
    "job_index", "hydra_overrides", "config_json", "experiment", "task_id", "algorithm", "problem", "device",
    "variant", "params_json", "instance", "family", "n_rows", "n_cols", "n_edges", "dataset_seed",
    "rcp", "instance_params", "instance_key", "n_repetitions", "host", "gpu_model", "gpu_count",
    "cuda_driver_version", "cuda_runtime_version", "instance_bytes", "t_load_s", "t_init_s",
    "objective_init", "init", "batch_id",
}


def task_base(task: Task, params: bool = True) -> Row:
    """Identity columns known before the instance is loaded (``params``: with
    ``instance_params``, which a loaded instance's own columns replace)."""
    spec = task.instance_spec
    base = {
        **task.provenance,
        "task_id": task.task_id,
        "algorithm": task.algorithm,
        "problem": task.problem,
        "device": task.device,
        "variant": task.variant,
        "params_json": task.params_json,
        "init": task.init,
        "n_repetitions": task.repetitions,
        "instance": spec.get("name") or spec.get("path") or spec.get("_target_", "?").rsplit(".", 1)[-1],
        "rcp": bool(spec.get("rcp", False)),
        "dataset_seed": spec.get("seed"),
    }
    if params:
        base["instance_params"] = to_json(spec)
    return base


def _instance_columns(instance: Any, spec: dict[str, Any], key: str | None = None) -> Row:
    """The instance's columns; ``key``: its ``instance_key`` where the plan computed it."""
    from matchbench.datasets import instance_key

    cols = dict(instance.describe())
    cols["instance_key"] = key or instance_key(spec)
    cols["instance_params"] = to_json(getattr(instance, "params", spec))
    cols["rcp"] = bool(getattr(instance, "params", {}).get("rcp", spec.get("rcp", False)))
    nbytes = getattr(instance, "nbytes", None)
    cols["instance_bytes"] = int(nbytes) if nbytes is not None else None
    return cols


def problem_of(name: str) -> Any:
    """The family ``name``'s :class:`~matchbench.core.problem.Problem`, made once per
    process (a batch of small instances asks per instance)."""
    problem = _problems.get(name)
    if problem is None:
        problem = _problems[name] = get_problem(name)
    return problem


def _gpu_pool():
    import cupy

    return cupy.get_default_memory_pool()


def _plain_value(value: Any) -> bool:
    if isinstance(value, dict):
        return "_target_" not in value and all(_plain_value(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_plain_value(v) for v in value)
    return True


def new_solver(cfg: dict[str, Any]) -> Any:
    """A fresh solver from its algorithm config, as ``hydra.utils.instantiate`` makes it.

    A flat config (``_target_`` and plain keyword arguments, as every
    ``conf/algorithm/*.yaml``) calls the class directly: the same object, without
    OmegaConf's 1-2 ms per call, which a batch of small instances pays once per instance.
    Anything else (``_args_``, ``_partial_``, nested targets) goes through Hydra.
    """
    from hydra.utils import get_class, instantiate

    keys = [k for k in cfg if k != "_target_"]
    if any(str(k).startswith("_") for k in keys) or not _plain_value({k: cfg[k] for k in keys}):
        return instantiate(cfg, _convert_="all")
    return get_class(cfg["_target_"])(**{k: cfg[k] for k in keys})


@dataclass
class _Shared:
    """What the instances of one batch share, found once for all of them by
    :func:`_prepare`: the worker's columns, and whether the pool was freed and the
    kernels compiled."""

    worker: dict[str, Row] = field(default_factory=dict)
    freed: bool = False
    compiled: dict[tuple[str, ...], float] = field(default_factory=dict)
    #: the batch's host initializer (``init``), made once: through Hydra it took ~0.8 ms
    #: an instance (a GPU initializer, which holds device state, is made per instance)
    initializer: Any = None


@dataclass
class _Ready:
    """One loaded instance of a task, with its solver and initial answer, ready to solve."""

    task: Task
    base: Row
    instance: Any
    problem: Any
    solver: Any
    init: Any
    gpu: bool
    pool: Any = None


def _prepare(
    task: Task,
    out: Callable[[Row], None],
    loaded: Callable[[Row], None] | None = None,
    solver: Any | None = None,
    preloaded: tuple[Any, float] | None = None,
    shared: _Shared | None = None,
) -> _Ready | None:
    """Load, check, skip, initialize and compile for one task; None after an error row.

    ``solver``: one to use instead of a fresh one from ``task.algorithm_cfg`` (a batch
    shares one). ``preloaded``: the instance and its ``t_load_s``, made in bulk with the
    other instances of a batch (:func:`bulk_instances`), instead of loading it here.
    ``shared``: kept across the instances of a batch, which then read the worker's
    columns, free the GPU pool and check the compiled kernels once, not per instance.
    Every failure is written through ``out`` as the task's row.
    """
    base = task_base(task, params=False)

    def fail(row: Row) -> None:
        row.setdefault("instance_params", to_json(task.instance_spec))
        out(row)

    try:
        worker = shared.worker.get(task.device) if shared is not None else None
        if worker is None:
            from matchbench.runner.provenance import worker_provenance

            worker = worker_provenance(task.device)
            if shared is not None:
                shared.worker[task.device] = worker
        base.update(worker)
    except Exception as exc:
        fail(error_row(base, exc, stage="device"))
        return None

    # load (cached per process: repetitions and other algorithms reuse the instance)
    try:
        t0 = time.perf_counter()
        if preloaded is not None:
            instance, base["t_load_s"] = preloaded
        else:
            from matchbench.datasets import load

            instance = load(task.instance_spec, data_dir=task.data_dir)
            base["t_load_s"] = time.perf_counter() - t0
        base.update(_instance_columns(instance, task.instance_spec, task.instance_key))
    except Exception as exc:
        fail(error_row(base, exc, stage="load"))
        return None
    if loaded is not None:
        loaded(dict(base))

    problem = problem_of(task.problem)
    if getattr(instance, "problem", task.problem) != task.problem:
        fail(error_row(base, f"{task.algorithm} solves {task.problem!r} but instance "
                            f"{base['instance']} is a {instance.problem!r} instance", stage="plan"))
        return None

    try:
        if solver is None:
            solver = new_solver(task.algorithm_cfg)
        if task.device == "gpu" and not (shared is not None and shared.freed):
            # The blocks an earlier task (an OOM's included) left in CuPy's pool count as
            # used in the free memory that skip() weighs the solver's estimate against.
            _gpu_pool().free_all_blocks()
        skip, reason = solver.skip(instance)
    except Exception as exc:
        fail(error_row(base, exc, stage="solver"))
        return None
    if skip:
        fail(error_row(base, reason or "skipped", status="skipped"))
        return None

    try:
        if task.init_cfg:
            initializer = shared.initializer if shared is not None else None
            if initializer is None:
                initializer = new_solver(task.init_cfg)  # Hydra's instantiate, faster for flat configs
                if shared is not None and initializer.device != "gpu":  # a GPU one keeps device state
                    shared.initializer = initializer
            base["init"] = initializer.label()
            make_init, warm_key = initializer, f"{task.problem}:{initializer.label()}"
        else:
            initializer, make_init, warm_key = None, problem.initialize, task.problem
        if initializer is not None and initializer.device == "gpu":
            # Run by the solver on its device copy of the instance (Measurements.init).
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
        fail(error_row(base, exc, stage="initialize"))
        return None

    gpu = task.device == "gpu"
    pool = None
    if gpu:
        from matchbench.gpu import kernels

        pool = _gpu_pool()
        families = tuple(task.kernel_families)
        compiled = shared.compiled.get(families) if shared is not None else None
        if compiled is None:
            pool.free_all_blocks()
            try:
                kernels.precompile(families)  # a no-op where the worker plugin already compiled
            except Exception as exc:
                fail(error_row(base, exc, stage="compile"))
                return None
            # NVRTC time this process spent on the task's kernels, whether the worker plugin
            # paid it before the first task or this task did: never inside a timed region.
            compiled = sum(kernels.compile_seconds.get(f, 0.0) for f in families)
            if shared is not None:
                shared.compiled[families] = compiled
                shared.freed = True
        base["t_compile_s"] = compiled
    return _Ready(task, base, instance, problem, solver, init, gpu, pool)


def _schedule(task: Task, solver: Any) -> list[tuple[int, bool]]:
    """(repetition, instrumented) in order: warm-ups (negative), timed, instrumented."""
    reps, warmup = int(task.repetitions), int(task.warmup)
    schedule = [(rep, False) for rep in range(-warmup, reps)]
    if getattr(solver, "instrumentable", False):
        schedule += [(reps + i, True) for i in range(int(task.instrumented or 0))]
    return schedule


def _timed_call(solver: Any, ready: _Ready, gpu: bool) -> tuple[Any, tuple[float, float, float, float]]:
    """One repetition: ``prepare``, ``run``, ``result``; the answer and the host clock
    before, between and after them (the device synchronized before each reading)."""
    return timed_steps(lambda: solver.prepare(ready.instance, ready.init), solver.run, solver.result, gpu)


def timed_steps(
    prepare: Callable[[], Any], run: Callable[[], Any], result: Callable[[], Any], gpu: bool
) -> tuple[Any, tuple[float, float, float, float]]:
    """``prepare()``, ``run()``, ``result()`` in turn: ``result()``'s value and the host
    clock before, between and after them (the device synchronized before each reading)."""
    t0 = time.perf_counter()
    prepare()
    _sync(gpu)
    t1 = time.perf_counter()
    run()
    _sync(gpu)
    t2 = time.perf_counter()
    answer = result()
    return answer, (t0, t1, t2, time.perf_counter())


def _sync(gpu: bool) -> None:
    if gpu:
        import cupy

        cupy.cuda.Device().synchronize()


def _timed_row(
    row: Row,
    ready: _Ready,
    measured: Measurements,
    seconds: tuple[float, float, float],
    n: int = 1,
    index: int = 0,
    encoded: dict[str, str | None] | None = None,
) -> None:
    """Fill an ``ok`` row's times, rates and counters from one timed call.

    ``measured``: what the solver measured (:class:`~matchbench.core.solver.Measurements`);
    ``seconds``: the host clock's (prepare, run, result), for what it did not measure. A
    call that solved ``n`` instances together (a batch) gives each of them ``1/n`` of
    every time it measured (``t_prepare_s``, ``t_solve_s``, ``t_transfer_s``,
    ``t_upload_s``, a solver-run ``t_init_s``, the phases); its counters stay the call's
    totals, and ``counters_json`` also carries ``batch_solve_s``, the call's whole solve
    time. The rate columns are those the family declares
    (:attr:`~matchbench.core.problem.Problem.rate_columns`), per second of the call.
    ``encoded``: a dict kept across the rows of one call, which then make the columns
    that all its rows share (:func:`_call_columns`: times, counters, their JSON) once.
    """
    row.update(_once(encoded, "call", lambda: _call_columns(ready, measured, seconds, n)))
    if measured.init is not None:  # a GPU initializer or preprocessing, run by the solver
        row["t_init_s"] = measured.init / n
        value = measured.counters.get("init_objective")
        if n > 1:  # one objective per instance, or none that this row can own
            value = value[index] if isinstance(value, list | tuple) and len(value) == n else None
        row["objective_init"] = value
        if row.get("init", ready.base.get("init")) is None:  # no initializer: the solver's own preprocessing
            row["init"] = getattr(ready.solver, "init_label", None)
    t_solve = row["t_solve_s"]
    row["t_e2e_s"] = e2e_seconds(row.get("t_init_s", ready.base.get("t_init_s")), t_solve)
    n_edges = row.get("n_edges", ready.base.get("n_edges"))
    if n_edges is not None and t_solve is not None and t_solve > 0:
        row["edges_per_s"] = float(n_edges) / float(t_solve)


def _call_columns(ready: _Ready, measured: Measurements, seconds: tuple[float, float, float], n: int) -> Row:
    """The columns that every row of one timed call shares (:func:`_timed_row`)."""
    prepare_s, run_s, result_s = seconds
    gpu, solver = ready.gpu, ready.solver
    counters = measured.counters

    def share(x: Any) -> Any:
        return x / n if isinstance(x, int | float) and not isinstance(x, bool) else x

    solve = measured.solve if measured.solve is not None else run_s
    transfer = measured.transfer if measured.transfer is not None else (result_s if gpu else None)
    phases = measured.phases
    cols: Row = {
        "status": "ok",
        "t_prepare_s": share(prepare_s),
        "t_solve_s": share(solve),
        "t_transfer_s": share(transfer),
        "t_upload_s": share(measured.upload),
        "t_process_s": share(measured.process),
        "phases_json": to_json({k: share(v) for k, v in phases.items()}) if phases else None,
    }
    for column, counter in ready.problem.rate_columns.items():
        count = counters.get(counter)
        if isinstance(count, int | float) and solve is not None and solve > 0:
            cols[column] = float(count) / float(solve)  # a count of the whole call
    if n > 1:
        counters = {**counters, "batch_solve_s": solve}
    cols.update(
        kernel_launches=counters.get("kernel_launches"),
        host_syncs=counters.get("host_syncs"),
        iterations=counters.get("iterations", counters.get("phases")),
        counters_json=to_json(counters) if counters else None,
    )
    if gpu:
        cols["gpu_mem_peak_bytes"] = solver.memory_peak_bytes() or int(ready.pool.total_bytes())
    return cols


def _once(encoded: dict[str, Any] | None, key: str, make: Callable[[], Any]) -> Any:
    """``make()``, made once per ``encoded`` (a dict kept across the rows of one call)."""
    if encoded is None:
        return make()
    if key not in encoded:
        encoded[key] = make()
    return encoded[key]


#: ``verify_reason`` of an answer that is only a reported objective
OBJECTIVE_ONLY = "objective only, not certified"


def _verify(row: Row, ready: _Ready, solution: Any) -> None:
    """Certify ``solution`` into ``row``: ``ok`` and verified, or ``wrong`` with the reason.

    An answer that is only a number a program printed
    (:class:`~matchbench.core.problem.ReportedObjective`) has nothing to certify: its row
    stays ``ok`` with that objective, ``verified`` null and :data:`OBJECTIVE_ONLY` as the
    reason. A verifier that raises makes the row an ``error`` (the answer was not judged).
    """
    from matchbench.core.problem import ReportedObjective

    if isinstance(solution, ReportedObjective):
        row.update(
            objective=float(solution.objective), verified=None,
            verify_reason=f"{OBJECTIVE_ONLY} ({solution.source})",
        )
        return
    if not ready.task.verify:
        return
    t0 = time.perf_counter()
    try:
        v = ready.problem.verify(ready.instance, solution)
        row.update(
            objective=v.objective, bound=v.bound, reference_objective=v.reference,
            verified=v.verified, verify_reason=v.reason,
        )
        row.update(_measured_columns(v))
        if not v.verified:
            row.update(status="wrong", error_type="wrong", error=f"certificate: {v.reason}"[:4000])
    except Exception as exc:
        reason = f"verifier failed: {type(exc).__name__}: {exc}"
        row.update(verified=False, verify_reason=reason, status="error",
                   error_type=type(exc).__name__, error=reason[:4000])
    row["t_verify_s"] = time.perf_counter() - t0


def _repetitions(ready: _Ready, out: Callable[[Row], None], started: Callable[[int], None] | None) -> None:
    """The warm-up, timed and instrumented repetitions of one instance, a row each."""
    solver, gpu, pool = ready.solver, ready.gpu, ready.pool
    instrumented = False
    for rep, instr in _schedule(ready.task, solver):
        row = dict(ready.base, repetition=rep, instrumented=instr)
        try:
            if instr != instrumented:
                solver.instrument(instr)
                instrumented = instr
            if gpu:
                pool.free_all_blocks()
            if started is not None:
                started(rep)
            solution, (t0, t1, t2, t3) = _timed_call(solver, ready, gpu)
        except Exception as exc:
            out(error_row(row, exc, stage=f"repetition {rep}") | {"repetition": rep})
            if classify(exc) == "oom":
                return
            continue
        if rep < 0:  # warm-up: compilation, caches, JIT
            continue
        _timed_row(row, ready, Measurements.of(solver), (t1 - t0, t2 - t1, t3 - t2))
        _verify(row, ready, solution)
        out(row)


def execute_task(
    task: Task,
    emit: Callable[[Row], None] | None = None,
    loaded: Callable[[Row], None] | None = None,
    started: Callable[[int], None] | None = None,
) -> list[Row]:
    """Run one task; return (and ``emit`` as they finish) its rows.

    ``loaded`` receives the identity columns once the instance is loaded, so that a
    task killed later (timeout, crash) is still recorded under its instance's name;
    ``started`` receives each repetition's number as it starts (the task process's parent
    times ``algorithm.time_limit_s`` from there).

    After the warm-up and the timed repetitions, ``task.instrumented`` more
    repetitions run with the solver's instrumentation on (:meth:`BaseSolver.instrument`,
    for solvers that have one): their rows carry ``instrumented=True`` and the counters
    that only instrumented runs collect (e.g. adjacency entries scanned).
    Never raises for a failure of the task itself: loading, initialization, solving or
    verification errors become rows with a status and a message.
    """
    rows: list[Row] = []

    def out(row: Row) -> None:
        row.setdefault("timestamp", _now())
        rows.append(row)
        if emit is not None:
            emit(row)

    t_task = time.perf_counter()
    ready = _prepare(task, out, loaded)
    if ready is not None:
        _repetitions(ready, out, started)
    total = time.perf_counter() - t_task
    for r in rows:
        r["t_total_s"] = total
    return rows


def _joint_repetitions(
    readies: list[_Ready], solver: Any, started: Callable[[int], None] | None, columnar: bool = False
) -> list[Any]:
    """The repetitions of a batchable solver on all ``readies`` at once; rows, not emitted.

    Raises whatever the solver raises (the caller then solves the instances one by one);
    a wrong answer is only that instance's unverified row. ``columnar``: instead of
    certified whole rows, ``(k, row, answer)`` per instance ``readies[k]`` and
    repetition, the row holding only its own columns, the answer not yet certified
    (:func:`_verify_pending`).
    """
    n = len(readies)
    first = readies[0]
    gpu, pool = first.gpu, first.pool
    instances = [r.instance for r in readies]
    inits = [r.init for r in readies]
    held: list[Row] = []
    instrumented = False
    for rep, instr in _schedule(first.task, solver):
        if instr != instrumented:
            solver.instrument(instr)
            instrumented = instr
        if gpu:
            pool.free_all_blocks()
        if started is not None:
            started(rep)
        t0 = time.perf_counter()
        solver.prepare_batch(instances, inits)
        _sync(gpu)
        t1 = time.perf_counter()
        solver.run()
        _sync(gpu)
        t2 = time.perf_counter()
        solutions = list(solver.result_batch())
        t3 = time.perf_counter()
        if len(solutions) != n:
            raise RuntimeError(f"result_batch() gave {len(solutions)} answers for {n} instances")
        if rep < 0:
            continue
        measured = Measurements.of(solver)
        now = _now()
        encoded: dict[str, str | None] = {}  # one call: its counters' JSON once
        for i, (ready, solution) in enumerate(zip(readies, solutions, strict=True)):
            if columnar:
                row = {"repetition": rep, "instrumented": instr, "batch_size": n, "timestamp": now}
                _timed_row(row, ready, measured, (t1 - t0, t2 - t1, t3 - t2), n=n, index=i, encoded=encoded)
                held.append((i, row, solution))
                continue
            row = dict(ready.base, repetition=rep, instrumented=instr, batch_size=n)
            _timed_row(row, ready, measured, (t1 - t0, t2 - t1, t3 - t2), n=n, index=i, encoded=encoded)
            _verify(row, ready, solution)
            held.append(row)
    return held


def execute_batch(
    batch: Batch,
    send: Callable[[str, Any], None] | None = None,
    tables: list[Any] | None = None,
) -> tuple[list[Row], list[str]]:
    """Run a batched task (``run.batch``): rows of every instance, and notes for the log.

    ``batch``: a :class:`~matchbench.runner.batch.Batch`, tasks that differ only in their
    instance (:func:`matchbench.runner.batch.make_batches`). Each instance
    is loaded, initialized and verified as :func:`execute_task` does, and a failure of one
    (bad input, solver error, wrong answer) is its own row while the others go on.

    A solver with ``batchable = True`` (and ``joint`` not false) solves the instances that
    loaded together: per repetition ``prepare_batch(instances, inits)`` (untimed, as
    ``prepare``), ``run()`` (timed: its measured ``solve`` is the batch's total) and
    ``result_batch()`` (the answers, in input order); each instance's row gets ``1/n`` of
    the times and ``batch_size = n`` (:func:`_timed_row`). If any of that raises, the
    instances are solved one by one instead, each with :func:`execute_task`, and a note
    says so. Other solvers solve the instances one by one in this process.

    ``send(kind, payload)`` reports progress to the task process's parent
    (:mod:`matchbench.runner.child`): ``("item", i)`` as the work on ``tasks[i]`` starts,
    ``("loaded", base)``, ``("start", rep)``, ``("row", row)`` as in a single task,
    ``("joint", [i, ...])`` as the joint solve of those instances starts,
    ``("finished", (i, seconds))`` when ``tasks[i]`` has all its rows (``seconds``: its
    ``t_total_s``), and ``("note", text)``.

    Every row carries ``batch_id``; ``t_total_s`` is the instance's own wall clock when
    solved alone, its load and initialization plus ``1/n`` of the joint solve otherwise.

    ``tables``: a list to receive the rows as Arrow tables (the columnar path,
    :func:`columnar_batch`), taken where the solver is not ``batchable`` and
    ``batch.joint`` allows instances to be handled together; the returned rows are
    then only those that the columnar path left to the one-by-one path (none, usually).
    Each table is also sent as ``("chunk", (table, [i, ...]))``: the rows of those
    instances, all at once (their ``t_total_s`` are in the table).
    """
    with _cyclic_gc_paused():
        return _execute_batch(batch, send, tables)


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Python's cycle collector paused (reference counting still frees everything else).

    A batch holds a few dicts and objects per instance, all alive until its table is
    made; the collector's passes over them, triggered by the allocations themselves, cost
    a batch of 4,000 small LAPs about a quarter of its time on the host (measured with a
    stand-in solver, 366 against 278 us an instance). Nothing of a batch forms cycles
    that must be freed before it ends.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _execute_batch(batch: Batch, send: Callable[[str, Any], None] | None, tables: list[Any] | None
                   ) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []

    def tell(kind: str, payload: Any) -> None:
        if send is not None:
            send(kind, payload)

    if tables is not None:  # the whole batch as one stack of arrays, where it can be
        from matchbench.runner.stack import stack_batch

        made = stack_batch(batch, tell, notes)
        if made is not None:
            tables.extend(made)
            return rows, notes
    tasks = list(batch.tasks)
    bid = batch.batch_id

    # rows still without t_total_s, by task id: finished() must not scan every row (a
    # batch of 2,000 instances x 3 repetitions spent 0.8 ms per instance doing so)
    open_rows: dict[Any, list[Row]] = {}

    def out(row: Row) -> None:
        row.setdefault("timestamp", _now())
        row["batch_id"] = bid
        rows.append(row)
        if "t_total_s" not in row:
            open_rows.setdefault(row.get("task_id"), []).append(row)
        tell("row", row)

    def finished(i: int, seconds: float) -> None:
        for r in open_rows.pop(tasks[i].task_id, ()):
            if "t_total_s" not in r:
                r["t_total_s"] = seconds
        tell("finished", (i, seconds))

    pending = list(range(len(tasks)))
    solver = None
    if batch.joint and len(tasks) > 1:
        try:
            solver = new_solver(tasks[0].algorithm_cfg)
        except Exception:  # each instance's own run records the error
            solver = None
    def alone(i: int) -> None:
        tell("item", i)
        t0 = time.perf_counter()
        execute_task(
            tasks[i], emit=out, loaded=lambda base: tell("loaded", base),
            started=lambda rep: tell("start", rep),
        )
        finished(i, time.perf_counter() - t0)

    if tables is not None and solver is not None and not getattr(solver, "batchable", False):
        tables.extend(columnar_batch(batch, solver, tell, alone, notes))
        return rows, notes
    if solver is not None and getattr(solver, "batchable", False):
        made: dict[int, tuple[Any, float]] = {}
        if tables is not None:  # instances made in bulk, under the limits of them all
            tell("joint", list(range(len(tasks))))
            made = bulk_instances(tasks)
        readies: list[tuple[int, _Ready, float]] = []
        # Columnar: the whole batch is already one joint item for the parent (a death
        # while preparing solves each again alone, which says item and loaded itself), so
        # no message per instance: two of them cost ~1 ms an instance (the parent reads
        # the child's memory at each one).
        per_item = tables is None
        shared = _Shared()
        from matchbench.gpu.common import free_memory_read_once

        with free_memory_read_once():  # every skip() check comes before the joint solve allocates
            for i, task in enumerate(tasks):
                if per_item:
                    tell("item", i)
                t0 = time.perf_counter()
                ready = _prepare(task, out, (lambda base: tell("loaded", base)) if per_item else None,
                                 solver=solver, preloaded=made.get(i), shared=shared)
                if i in made:
                    t0 -= made[i][1]  # its share of the bulk call
                if ready is None:
                    finished(i, time.perf_counter() - t0)
                else:
                    readies.append((i, ready, time.perf_counter() - t0))
        pending = [i for i, _, _ in readies]
        if len(readies) > 1:
            tell("joint", pending)
            t0 = time.perf_counter()
            try:
                held = _joint_repetitions(
                    [r for _, r, _ in readies], solver, lambda rep: tell("start", rep), columnar=tables is not None
                )
            except Exception as exc:
                held = None
                notes.append(
                    f"the joint solve of {len(readies)} instance(s) failed ({type(exc).__name__}: "
                    f"{str(exc)[:300]}); they were solved one by one"
                )
                tell("note", notes[-1])
            if held is not None and tables is not None:
                share = (time.perf_counter() - t0) / len(readies)
                spent = {i: seconds + share for i, _, seconds in readies}
                pending_rows = []
                for k, row, solution in held:
                    i, ready, _ = readies[k]
                    if ready.task.verify and not _reported(solution):
                        pending_rows.append((row, ready, solution, i))
                    else:
                        _verify(row, ready, solution)
                _verify_pending(pending_rows, spent)
                table = _rows_table(
                    [r.base for _, r, _ in readies], [k for k, _, _ in held], [row for _, row, _ in held],
                    [spent[i] for i, _, _ in readies], [], bid,
                )
                tables.append(table)
                tell("chunk", (table, [i for i, _, _ in readies]))
                return rows, notes
            if held is not None:
                share = (time.perf_counter() - t0) / len(readies)
                own = {tasks[i].task_id: seconds for i, _, seconds in readies}
                for row in held:
                    row["t_total_s"] = own[row["task_id"]] + share
                    out(row)
                for i, _, seconds in readies:
                    finished(i, seconds + share)
                return rows, notes
    for i in pending:
        alone(i)
    return rows, notes


#: Instances per chunk of :func:`columnar_batch`: one table, one message, one bulk
#: certificate each; what a crash or a timeout sends back to the one-by-one path.
CHUNK_INSTANCES = 256


def bulk_instances(tasks: list[Task]) -> dict[int, tuple[Any, float]]:
    """Instances of ``tasks`` made together by their dataset function's bulk hook.

    A dataset function may carry ``matchbench_bulk(kwargs_list) -> instances``: its
    instances for many argument sets at once, each the instance the function itself
    gives for those arguments (its family tests that); a hook with a ``device`` keyword
    is told the task's device (``"gpu"``: it may make them on the worker's GPU). Returns ``{index: (instance,
    t_load_s)}`` (``t_load_s``: the bulk call's share) for the tasks it made; the others
    (no hook, ``rcp``, a hook that raised) are loaded one by one by :func:`_prepare`, each
    with its own error row. Bulk-made instances bypass the disk cache: the hook is for
    instances faster to make than to read back.
    """
    from hydra.utils import get_method

    groups: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        spec = task.instance_spec
        if spec.get("rcp") or not isinstance(spec.get("_target_"), str):
            continue
        groups.setdefault(spec["_target_"], []).append(i)
    out: dict[int, tuple[Any, float]] = {}
    for target, members in groups.items():
        try:
            bulk = getattr(get_method(target), "matchbench_bulk", None)
        except Exception:  # an unknown target: load() gives its error row
            continue
        if not callable(bulk):
            continue
        kwargs = [
            {k: v for k, v in tasks[i].instance_spec.items() if k not in ("_target_", "rcp", "rcp_seed")}
            for i in members
        ]
        t0 = time.perf_counter()
        try:
            if "device" in inspect.signature(bulk).parameters:  # a hook that can use the worker's GPU
                made = list(bulk(kwargs, device=tasks[members[0]].device))
            else:
                made = list(bulk(kwargs))
        except Exception:  # one bad spec: every instance loads alone, with its own row
            continue
        if len(made) != len(members):
            continue
        share = (time.perf_counter() - t0) / len(members)
        out.update((i, (inst, share)) for i, inst in zip(members, made, strict=True))
    return out


def columnar_batch(
    batch: Batch,
    solver: Any,
    tell: Callable[[str, Any], None],
    alone: Callable[[int], None] | None = None,
    notes: list[str] | None = None,
) -> list[Any]:
    """A batch as columns: instances made in bulk, answers certified in bulk, rows as
    Arrow tables of :data:`~matchbench.results.schema.SCHEMA` (one per chunk).

    The rows are those :func:`execute_task` gives each instance (one per instance x
    repetition, a failure as that instance's row), made without a dict per row on
    their way: the instances of the batch come from :func:`bulk_instances` where their
    dataset function has a bulk hook; each chunk of :data:`CHUNK_INSTANCES` instances is
    solved one by one with the batch's solver, its answers are certified together by the
    family's :meth:`~matchbench.core.problem.Problem.verify_batch` (each answer alone by
    ``verify`` if that raises), and its rows become one table. ``t_load_s`` and
    ``t_verify_s`` are shares of the bulk calls; ``t_total_s`` is the instance's share
    of the whole.

    Messages (``tell``): ``("joint", [i, ...])`` before the bulk load and before each
    chunk, so that the task process's parent gives them the limits of that many
    instances and, should they be exceeded or the process die, solves them again one by
    one (:mod:`matchbench.runner.child`); ``("chunk", (table, [i, ...]))``
    with each chunk's rows.

    A chunk whose rows cannot be made as columns (an error of this path itself, not of
    an instance: those are rows) is run again by ``alone(i)`` for each of its instances,
    the one-by-one path, with a line in ``notes``.
    """
    tasks = list(batch.tasks)
    tell("joint", list(range(len(tasks))))
    made = bulk_instances(tasks)
    out: list[Any] = []
    for start in range(0, len(tasks), CHUNK_INSTANCES):
        chunk = list(range(start, min(len(tasks), start + CHUNK_INSTANCES)))
        tell("joint", chunk)
        try:
            table, done = _columnar_chunk(tasks, chunk, made, solver, batch.batch_id)
        except Exception as exc:
            if alone is None:
                raise
            if notes is not None:
                notes.append(
                    f"the rows of {len(chunk)} instance(s) could not be made as columns "
                    f"({type(exc).__name__}: {str(exc)[:300]}); they were solved one by one"
                )
                tell("note", notes[-1])
            for i in chunk:
                alone(i)
            continue
        tell("chunk", (table, done))
        out.append(table)
    return out


def _columnar_chunk(
    tasks: list[Task], chunk: list[int], made: dict[int, tuple[Any, float]], solver: Any, bid: str
) -> tuple[Any, list[int]]:
    """The rows of ``tasks[i]`` for ``i`` in ``chunk`` as one table; (table, [(i, t_total_s)])."""
    failed: list[Row] = []  # rows made as dicts: failures, and answers certified alone
    bases: list[Row] = []  # per instance with rows in columns: its identity columns
    slots: list[int] = []  # per columnar row: its instance's place in bases
    cells: list[Row] = []  # per columnar row: its own columns
    seconds: dict[int, float] = {}
    pending: list[tuple[Row, _Ready, Any, int]] = []
    slot_of: dict[int, int] = {}
    shared = _Shared()
    for i in chunk:
        t0 = time.perf_counter()
        mine: list[Row] = []

        def out(row: Row, mine: list[Row] = mine) -> None:
            row.setdefault("timestamp", _now())
            row["batch_id"] = bid
            mine.append(row)

        ready = _prepare(tasks[i], out, solver=solver, preloaded=made.get(i), shared=shared)
        if ready is not None:
            slot = len(bases)
            slot_of[i] = slot
            bases.append(ready.base)
            for row, solution in _solve_alone(ready, out):
                row["timestamp"] = _now()
                if ready.task.verify and not _reported(solution):
                    pending.append((row, ready, solution, i))
                else:
                    _verify(row, ready, solution)
                slots.append(slot)
                cells.append(row)
        failed.extend(mine)
        seconds[i] = time.perf_counter() - t0 + (made[i][1] if i in made else 0.0)
    _verify_pending(pending, seconds)
    index = {tasks[i].task_id: i for i in chunk}
    for row in failed:
        row["t_total_s"] = seconds.get(index.get(row.get("task_id")), 0.0)
    totals = [0.0] * len(bases)
    for i, slot in slot_of.items():
        totals[slot] = seconds[i]
    return _rows_table(bases, slots, cells, totals, failed, bid), list(chunk)


def _verify_pending(pending: list[tuple[Row, _Ready, Any, int]], seconds: dict[int, float]) -> None:
    """Certify the answers of ``pending`` (row, ready, answer, instance index) together by
    the family's :meth:`~matchbench.core.problem.Problem.verify_batch` (each alone by
    :func:`_verify` if that raises) into their rows; each instance's ``seconds`` gets
    its answers' shares of the call."""
    if not pending:
        return
    from matchbench.core.problem import VERIFY_DEVICE

    t0 = time.perf_counter()
    problem = pending[0][1].problem
    device = VERIFY_DEVICE.set("gpu" if pending[0][1].gpu else "cpu")
    try:
        verdicts = problem.verify_batch([p[1].instance for p in pending], [p[2] for p in pending])
        if len(verdicts) != len(pending):
            raise ValueError(f"verify_batch gave {len(verdicts)} verdicts for {len(pending)} answers")
    except Exception:
        verdicts = None
    finally:
        VERIFY_DEVICE.reset(device)
    share = (time.perf_counter() - t0) / len(pending)
    for k, (row, ready, solution, i) in enumerate(pending):
        if verdicts is None:
            _verify(row, ready, solution)
        else:
            _apply_verdict(row, verdicts[k], share)
        seconds[i] = seconds.get(i, 0.0) + share


def _rows_table(
    bases: list[Row], slots: list[int], cells: list[Row], totals: list[float], failed: list[Row], bid: str
) -> Any:
    """One table of :data:`~matchbench.results.schema.SCHEMA`: a row per ``cells[k]`` (its
    own columns) over the identity columns ``bases[slots[k]]`` of its instance, whose
    ``t_total_s`` is ``totals[slots[k]]``, then the ``failed`` rows (whole dicts)."""
    import pyarrow as pa

    from matchbench.results.schema import SCHEMA, record_batch, table_from_rows

    n = len(cells)
    columns: dict[str, Any] = {}
    if n:
        base_keys = set().union(*bases)
        row_keys = set().union(*cells)
        take = pa.array(slots, type=pa.int32())
        for key in base_keys - row_keys:
            typ = SCHEMA.field(key).type
            columns[key] = pa.array([b.get(key) for b in bases], type=typ).take(take)
        for key in row_keys:
            columns[key] = [r[key] if key in r else bases[s].get(key) for s, r in zip(slots, cells, strict=True)]
        columns["t_total_s"] = pa.array(totals, type=pa.float64()).take(take)
        columns["batch_id"] = [bid] * n
    parts = [record_batch(columns, n)] if n else []
    if failed:
        parts.extend(table_from_rows(failed).to_batches())
    return pa.Table.from_batches(parts, schema=SCHEMA)


def _measured_columns(v: Any) -> Row:
    """A verdict's :attr:`~matchbench.core.problem.Verification.columns`, those of the
    results schema only (a name it lacks would not survive the writer)."""
    from matchbench.results.schema import COLUMNS

    extra = getattr(v, "columns", None)
    return {k: val for k, val in extra.items() if k in COLUMNS} if extra else {}


def _reported(solution: Any) -> bool:
    return isinstance(solution, ReportedObjective)


def _apply_verdict(row: Row, v: Any, seconds: float) -> None:
    """:func:`_verify`'s columns of one verdict of a bulk certificate."""
    row.update(
        objective=v.objective, bound=v.bound, reference_objective=v.reference,
        verified=v.verified, verify_reason=v.reason,
    )
    row.update(_measured_columns(v))
    if not v.verified:
        row.update(status="wrong", error_type="wrong", error=f"certificate: {v.reason}"[:4000])
    row["t_verify_s"] = seconds


def _solve_alone(ready: _Ready, out: Callable[[Row], None]) -> list[tuple[Row, Any]]:
    """:func:`_repetitions` of one instance, returning its timed rows' own columns (not
    the identity columns of ``ready.base``) and answers, uncertified; failures go to
    ``out`` as whole rows."""
    solver, gpu, pool = ready.solver, ready.gpu, ready.pool
    instrumented = False
    done: list[tuple[Row, Any]] = []
    for rep, instr in _schedule(ready.task, solver):
        row: Row = {"repetition": rep, "instrumented": instr}
        try:
            if instr != instrumented:
                solver.instrument(instr)
                instrumented = instr
            if gpu:
                pool.free_all_blocks()
            solution, (t0, t1, t2, t3) = _timed_call(solver, ready, gpu)
        except Exception as exc:
            out(error_row({**ready.base, **row}, exc, stage=f"repetition {rep}") | {"repetition": rep})
            if classify(exc) == "oom":
                break
            continue
        if rep < 0:
            continue
        _timed_row(row, ready, Measurements.of(solver), (t1 - t0, t2 - t1, t3 - t2))
        done.append((row, solution))
    return done


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
