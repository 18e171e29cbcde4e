"""A batch as one stack (``run.batch``): arrays from the draw to the rows' table.

:func:`stack_batch` runs a batch (:class:`~matchbench.runner.batch.Batch`) without an
object per instance, where its three pieces exist (:mod:`matchbench.core.stack`): the
dataset function's ``matchbench_stack`` hook makes all instances as one
:class:`~matchbench.core.stack.InstanceStack`, a ``stackable`` solver solves the whole
stack once per repetition, the family's ``verify_stack`` certifies all answers at once,
and the rows of every instance x repetition are made as Arrow columns, one record batch
per repetition. The batch's task ids, instance keys and seeds are read from its columns
(:meth:`~matchbench.runner.batch.Batch.column`), never as :class:`Task` objects.

The rows are those of :func:`~matchbench.runner.task.columnar_batch` for the same batch
(tested column for column): identity columns, the call's times and counters shared
``1/B`` per instance, ``batch_size = B``, the certificate's verdict per instance
(``status`` ``wrong`` with the certificate's reason where it rejects an answer),
``t_load_s`` and ``t_verify_s`` as shares of the bulk calls and ``t_total_s`` as the
instance's share of the whole. An ``init`` runs once for the whole stack where the
initializer is ``stackable`` (its ``initialize_stack``, each answer equal to its own
call's; ``t_init_s`` its share, ``objective_init`` per instance); with another
initializer, or none where the family's own initializer would run per instance, the
batch runs instance by instance. A solver that starts from no initializer leaves
``t_init_s`` null.

``MATCHBENCH_NO_STACK=1`` in the workers' environment switches the path off.
Where anything is missing or fails before a row is made (no hook, a solver that is not
stackable, a hook that declines or raises, ``skip_stack``, a solve or a certificate that
raises), :func:`stack_batch` returns None and the batch runs instance by instance, where
each instance gets its own verdict, error or skip row; a note says why when that was
not a plain absence of the pieces.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matchbench.results.schema import CompactTable
    from matchbench.runner.batch import Batch

#: Set (to anything but ``0``) in a worker's environment, this switches the stack path
#: off: every batch runs instance by instance (to compare the two, or to rule one out).
NO_STACK_ENV = "MATCHBENCH_NO_STACK"

#: spec keys that are the runner's, not the dataset function's arguments
_RUNNER_KEYS = ("_target_", "rcp", "rcp_seed")


def stack_hook(template: dict[str, Any]) -> Any | None:
    """The dataset function's ``matchbench_stack`` hook for specs like ``template``; None
    where it has none (or the spec is not a generator call)."""
    from hydra.utils import get_method

    target = template.get("_target_")
    if not isinstance(target, str) or template.get("rcp"):
        return None
    try:
        hook = getattr(get_method(target), "matchbench_stack", None)
    except Exception:  # an unknown target: its instances' rows say so
        return None
    return hook if callable(hook) else None


def stack_batch(
    batch: Batch, tell: Callable[[str, Any], None], notes: list[str] | None = None
) -> list[CompactTable] | None:
    """The rows of ``batch``, made as one stack: a
    :class:`~matchbench.results.schema.CompactTable` per repetition (the columns that
    differ between its rows, and the values they share); None where the batch must run
    instance by instance (see the module docstring).

    ``tell`` as for :func:`~matchbench.runner.task.execute_batch`: ``("joint", [0..B))``
    before the stack is made (the task process's parent then gives the batch the limits
    of B instances and, should the process die or exceed them, runs every instance
    again one by one), ``("start", rep)`` per repetition and ``("chunk", (tables,
    range(B)))`` with the rows.
    """
    from matchbench.core.problem import Problem
    from matchbench.runner.task import new_solver, problem_of

    count = len(batch)
    if count < 2 or not batch.joint or os.environ.get(NO_STACK_ENV, "") not in ("", "0"):
        return None
    specs = batch.spec_columns()
    if specs is None:
        return None
    template, varying = specs
    if any(k in varying for k in _RUNNER_KEYS):
        return None
    first = batch.first
    if first.instrumented:
        return None
    hook = stack_hook(template)
    if hook is None:
        return None
    provenance = batch.column("provenance")
    p0 = provenance[0]
    if any(p is not p0 and p != p0 for p in provenance):
        return None
    try:
        solver = new_solver(first.algorithm_cfg)
        problem = problem_of(first.problem)
    except Exception:  # each instance's own run records the error
        return None
    if not getattr(solver, "stackable", False) or not getattr(problem, "stack_certificate", False):
        return None
    initializer = None
    if first.init_cfg:
        try:
            initializer = new_solver(first.init_cfg)
        except Exception:  # each instance's own run records the error
            return None
        if initializer.device == "gpu" or not getattr(initializer, "stackable", False):
            return None
    elif type(problem).initialize is not Problem.initialize:  # a family initializer runs per instance
        return None

    tell("joint", list(range(count)))
    try:
        parts = _stack_table(batch, first, template, varying, hook, solver, problem, initializer, tell)
    except Exception as exc:  # _Declined, or an error of this path itself (the rows' making)
        why = str(exc) if isinstance(exc, _Declined) else f"{type(exc).__name__}: {str(exc)[:300]}"
        if notes is not None and why:
            notes.append(f"the batch did not run as one stack ({why}); its instances ran one by one")
            tell("note", notes[-1])
        return None
    tell("chunk", (parts, range(count)))
    return parts


class _Declined(Exception):
    """The stack path cannot take this batch; the message (if any) says why."""


def _stack_table(batch: Batch, first: Any, template: dict[str, Any], varying: dict[str, list[Any]],
                 hook: Any, solver: Any, problem: Any, initializer: Any,
                 tell: Callable[[str, Any], None]) -> list[CompactTable]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from matchbench.core.problem import VERIFY_DEVICE
    from matchbench.core.solver import Measurements
    from matchbench.results.schema import SCHEMA, CompactTable
    from matchbench.runner.provenance import worker_provenance
    from matchbench.runner.task import (
        _call_columns,
        _now,
        _Ready,
        _schedule,
        _warm_initializers,
        e2e_seconds,
        format_exception,
        task_base,
        timed_steps,
    )

    count = len(batch)
    t_start = time.perf_counter()
    gpu = first.device == "gpu"
    base = task_base(first, params=False)
    for key in ("task_id", "instance", "dataset_seed"):
        base.pop(key, None)
    try:
        base.update(worker_provenance(first.device))
    except Exception as exc:
        raise _Declined(f"device: {format_exception(exc)}") from None
    pool = None
    if gpu:
        from matchbench.gpu import kernels
        from matchbench.runner.task import _gpu_pool

        pool = _gpu_pool()
        pool.free_all_blocks()
        families = tuple(first.kernel_families)
        try:
            kernels.precompile(families)
        except Exception as exc:
            raise _Declined(f"compile: {format_exception(exc)}") from None
        base["t_compile_s"] = sum(kernels.compile_seconds.get(f, 0.0) for f in families)

    kwargs = {k: v for k, v in template.items() if k not in _RUNNER_KEYS}
    for k in varying:
        kwargs.pop(k, None)
    t0 = time.perf_counter()
    try:
        stack = hook(kwargs, varying, count, device=first.device)
    except Exception as exc:  # an argument error: one by one, each instance says it
        raise _Declined(f"making the instances: {format_exception(exc)}") from None
    if stack is None:
        raise _Declined("")
    if int(stack.count) != count or stack.problem != first.problem:
        raise _Declined(f"the stack hook gave {stack.count} {stack.problem!r} instances for "
                        f"{count} {first.problem!r} tasks")
    base["t_load_s"] = (time.perf_counter() - t0) / count
    try:
        skip, _reason = solver.skip_stack(stack)
    except Exception as exc:
        raise _Declined(f"solver: {format_exception(exc)}") from None
    if skip:  # each instance's own skip() gives its row
        raise _Declined("")

    init, init_objectives = None, None
    if initializer is not None:
        try:
            warm_key = f"stack:{first.problem}:{initializer.label()}"
            if warm_key not in _warm_initializers:
                # The first call of a process compiles (numba JIT); keep that out of t_init_s.
                initializer.initialize_stack(stack.data)
                _warm_initializers.add(warm_key)
            t0 = time.perf_counter()
            init = initializer.initialize_stack(stack.data)
            base["t_init_s"] = (time.perf_counter() - t0) / count
            base["init"] = initializer.label()
            init_objectives = problem.initial_objectives(init)
        except Exception as exc:  # one by one, each instance's initializer says it
            raise _Declined(f"initializer: {format_exception(exc)}") from None

    def prepare() -> None:
        if init is None:
            solver.prepare_stack(stack)
        else:
            solver.prepare_stack(stack, init)

    ready = _Ready(first, base, None, problem, solver, None, gpu, pool)
    calls: list[tuple[int, bool, Any, dict[str, Any], Any, float]] = []
    try:
        for rep, instr in _schedule(first, solver):
            if gpu:
                pool.free_all_blocks()
            tell("start", rep)
            answers, (t0, t1, t2, t3) = timed_steps(prepare, solver.run, solver.result_stack, gpu)
            if rep < 0:
                continue
            now = _now()
            measured = Measurements.of(solver)
            cols = _call_columns(ready, measured, (t1 - t0, t2 - t1, t3 - t2), count)
            if measured.init is not None:
                raise _Declined("the solver ran an initializer of its own")
            verdicts, t_verify = None, None
            if first.verify:
                tv = time.perf_counter()
                token = VERIFY_DEVICE.set("gpu" if gpu else "cpu")
                try:
                    verdicts = problem.verify_stack(stack, answers)
                finally:
                    VERIFY_DEVICE.reset(token)
                t_verify = (time.perf_counter() - tv) / count
            calls.append((rep, instr, now, cols, verdicts, t_verify))
    except _Declined:
        raise
    except Exception as exc:
        raise _Declined(f"{type(exc).__name__}: {str(exc)[:300]}") from None

    # -- the rows: the batch's constants, the instances' columns, each call's verdicts --
    per_instance: dict[str, Any] = {
        "task_id": pa.array(batch.column("task_id"), type=pa.string()),
        "instance_key": pa.array(batch.column("instance_key"), type=pa.string()),
    }
    seeds = varying.get("seed")
    per_instance["dataset_seed"] = (
        pa.array(seeds, type=SCHEMA.field("dataset_seed").type) if seeds is not None else template.get("seed")
    )
    if init_objectives is not None:
        per_instance["objective_init"] = pa.array(np.asarray(init_objectives, dtype=np.float64))
    shared: dict[str, Any] = dict(base)
    for key, value in stack.columns.items():
        if isinstance(value, list | tuple | np.ndarray | pa.Array):
            per_instance[key] = value if isinstance(value, pa.Array) else pa.array(
                value, type=SCHEMA.field(key).type)
        else:
            shared[key] = value
    for key in per_instance:
        shared.pop(key, None)
    n_edges = per_instance.get("n_edges", shared.get("n_edges"))
    parts = []
    for rep, instr, now, cols, verdicts, t_verify in calls:
        const = dict(shared)
        const.update(cols)
        const.update(repetition=rep, instrumented=instr, batch_size=count, timestamp=now,
                     batch_id=batch.batch_id)
        t_solve = const.get("t_solve_s")
        const["t_e2e_s"] = e2e_seconds(const.get("t_init_s"), t_solve)
        columns: dict[str, Any] = dict(per_instance)
        if n_edges is not None and t_solve is not None and t_solve > 0:
            if isinstance(n_edges, pa.Array):
                columns["edges_per_s"] = pc.divide(n_edges.cast(pa.float64()), float(t_solve))
            else:
                const["edges_per_s"] = float(n_edges) / float(t_solve)
        if verdicts is not None:
            const["t_verify_s"] = t_verify
            columns.update(_verdict_columns(verdicts, count))
        varying_cols = {k: (v if isinstance(v, pa.Array) else pa.array(v, type=SCHEMA.field(k).type))
                        for k, v in columns.items() if not _is_scalar(v)}
        shared_values = {k: v for k, v in columns.items() if _is_scalar(v)}
        shared_values.update((k, v) for k, v in const.items() if k not in columns)
        parts.append(CompactTable(pa.table(varying_cols), shared_values))
    total = (time.perf_counter() - t_start) / count  # the rows' making included
    for part in parts:
        part.constants["t_total_s"] = total
    return parts


def _verdict_columns(v: Any, count: int) -> dict[str, Any]:
    """The certificate's columns of ``count`` rows (:func:`~matchbench.runner.task._verify`'s)."""
    import numpy as np
    import pyarrow as pa

    from matchbench.results.schema import COLUMNS

    def numbers(x: Any) -> pa.Array:
        x = np.asarray(x, dtype=np.float64)
        return pa.array(x, mask=np.isnan(x), type=pa.float64())

    verified = np.asarray(v.verified, dtype=bool)
    cols: dict[str, Any] = {
        "objective": numbers(v.objective),
        "bound": numbers(v.bound),
        "reference_objective": numbers(v.reference),
        "verified": pa.array(verified, type=pa.bool_()),
    }
    if verified.all():
        cols["status"] = "ok"
        cols["verify_reason"] = None
    else:
        reasons = [v.reasons.get(k) if not ok else None for k, ok in enumerate(verified.tolist())]
        cols["verify_reason"] = reasons
        cols["status"] = ["ok" if ok else "wrong" for ok in verified.tolist()]
        cols["error_type"] = [None if ok else "wrong" for ok in verified.tolist()]
        cols["error"] = [None if r is None else f"certificate: {r}"[:4000] for r in reasons]
    for key, values in (v.columns or {}).items():
        if key in COLUMNS:
            cols[key] = values
    return cols


def _is_scalar(value: Any) -> bool:
    """A column value shared by all rows (not an array or a list of values)."""
    import numpy as np
    import pyarrow as pa

    return not isinstance(value, pa.Array | list | tuple | np.ndarray)
