"""The one schema of matchbench result rows (after benchopt's results and asv's ``api_version``).

Tidy rows: one per instance x algorithm x variant x repetition. Every Parquet file
carries ``schema_version`` in its key-value metadata; :func:`upgrade` brings a table
written by an older version to the current schema on read, so old runs stay comparable.

Column groups
-------------
provenance
    run_id, task_id, job_index, git_commit, git_dirty, matchbench_version,
    package_versions (JSON), host, gpu_model, gpu_count, cuda_driver_version,
    cuda_runtime_version, hydra_overrides, config_json (the job's resolved config),
    experiment (the ``+experiment=`` preset the job ran, if any), timestamp
instance
    problem, instance, family, n_rows, n_cols, n_edges, dataset_seed, rcp,
    instance_params (JSON), instance_key
algorithm
    algorithm, variant (canonical ``k=v,...``), params_json, device, init (the initial
    answer the solver started from: the label of the ``init`` config group's initializer,
    with the parameters that differ from its defaults in parentheses, or the solver's own
    preprocessing; null for families without one)
repetition and status
    repetition, n_repetitions, instrumented (an extra repetition with the solver's
    counters switched on: its times are not comparable and timing views skip it),
    status (see :data:`STATUSES`), error_type, error, time_limit_s (the limit a
    ``timeout`` row was killed at: ``algorithm.time_limit_s`` per repetition, else the
    task's ``run.task_timeout_s``)
batch (``run.batch``, :mod:`matchbench.runner.batch`; both null in unbatched runs)
    batch_id (the batched task the row came from; its file is
    ``part-batch-<batch_id>.parquet``), batch_size (how many instances shared the row's
    timed call, a ``batchable`` solver's ``prepare_batch``/``run``/``result_batch``: its
    times are ``1/batch_size`` of the call's, ``counters_json["batch_solve_s"]`` is the
    call's whole solve time and its counters are the call's totals; null where the
    instance was solved alone, also inside a batch)
times (seconds)
    t_total_s (the task's wall clock, per row the same; in a batch the instance's
    share: its own wall clock when solved alone), t_load_s, t_init_s (the
    initializer: host clock for a CPU one, CUDA events for a GPU one), t_compile_s,
    t_upload_s (host-to-device copy of the instance, once per task: the time a graph that
    starts on the host adds), t_prepare_s, t_solve_s, t_e2e_s (t_init_s + t_solve_s: from
    the instance in place to the answer), t_transfer_s, t_verify_s, t_process_s (an
    outside program's process, start to exit, by the host clock: :mod:`matchbench.external`;
    its ``t_solve_s`` is the time the program reports of itself where it reports one),
    phases_json (solver phase seconds), edges_per_s (n_edges / t_solve_s: the instance's edges as the family
    counts them, e.g. undirected edges of a general graph, stored entries of a bipartite
    one), and the families' rate columns (a solver counter / t_solve_s, where the solver
    has that counter; each family declares its own in
    :attr:`~matchbench.core.problem.Problem.rate_columns`): proposals_per_s
counters
    kernel_launches, host_syncs, iterations, counters_json (all solver counters)
memory
    gpu_mem_peak_bytes (CuPy pool peak of the repetition), instance_bytes
objective
    objective (the verifier's recomputation), objective_init (the shared initializer's),
    reference_objective (the optimum when known), bound (the certificate's bound),
    verified, verify_reason; what a verifier measured beside the objective (schema 7): nmi
    (normalized mutual information of the answer against the instance's known ground truth,
    where it has one), disconnected_communities (how many of the answer's groups are not
    connected)
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

from matchbench.core.canonical import to_json  # noqa: F401 - re-exported: the results' JSON form

SCHEMA_VERSION = 7

#: ``status`` values: ok, wrong (an answer its certificate rejects: ``verified`` false,
#: the reason in ``verify_reason`` and ``error``), error (an exception, bad input, a
#: program that failed or whose answer cannot be read), timeout, oom (device or host
#: memory), skipped (the solver declined the instance), crashed (the task's process died).
#: An ``ok`` row is verified, or has ``verified`` null: certification was off
#: (``run.verify=false``), or the answer was only an objective a program reported
#: (``verify_reason`` says so).
STATUSES = ("ok", "wrong", "error", "timeout", "oom", "skipped", "crashed")

SCHEMA = pa.schema(
    [
        # provenance
        ("run_id", pa.string()),
        ("task_id", pa.string()),
        ("job_index", pa.int32()),
        ("git_commit", pa.string()),
        ("git_dirty", pa.bool_()),
        ("matchbench_version", pa.string()),
        ("package_versions", pa.string()),
        ("host", pa.string()),
        ("gpu_model", pa.string()),
        ("gpu_count", pa.int32()),
        ("cuda_driver_version", pa.int32()),
        ("cuda_runtime_version", pa.int32()),
        ("hydra_overrides", pa.string()),
        ("config_json", pa.string()),
        ("experiment", pa.string()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        # instance
        ("problem", pa.string()),
        ("instance", pa.string()),
        ("family", pa.string()),
        ("n_rows", pa.int64()),
        ("n_cols", pa.int64()),
        ("n_edges", pa.int64()),
        ("dataset_seed", pa.int64()),
        ("rcp", pa.bool_()),
        ("instance_params", pa.string()),
        ("instance_key", pa.string()),
        # algorithm
        ("algorithm", pa.string()),
        ("variant", pa.string()),
        ("params_json", pa.string()),
        ("device", pa.string()),
        ("init", pa.string()),
        # repetition and status
        ("repetition", pa.int32()),
        ("n_repetitions", pa.int32()),
        ("instrumented", pa.bool_()),
        ("status", pa.string()),
        ("error_type", pa.string()),
        ("error", pa.string()),
        ("time_limit_s", pa.float64()),
        # batch
        ("batch_id", pa.string()),
        ("batch_size", pa.int32()),
        # times
        ("t_total_s", pa.float64()),
        ("t_load_s", pa.float64()),
        ("t_init_s", pa.float64()),
        ("t_compile_s", pa.float64()),
        ("t_upload_s", pa.float64()),
        ("t_prepare_s", pa.float64()),
        ("t_solve_s", pa.float64()),
        ("t_e2e_s", pa.float64()),
        ("edges_per_s", pa.float64()),
        ("proposals_per_s", pa.float64()),
        ("t_transfer_s", pa.float64()),
        ("t_verify_s", pa.float64()),
        ("t_process_s", pa.float64()),
        ("phases_json", pa.string()),
        # counters
        ("kernel_launches", pa.int64()),
        ("host_syncs", pa.int64()),
        ("iterations", pa.int64()),
        ("counters_json", pa.string()),
        # memory
        ("gpu_mem_peak_bytes", pa.int64()),
        ("instance_bytes", pa.int64()),
        # objective
        ("objective", pa.float64()),
        ("objective_init", pa.float64()),
        ("reference_objective", pa.float64()),
        ("bound", pa.float64()),
        ("verified", pa.bool_()),
        ("verify_reason", pa.string()),
        # what a verifier measured beside the objective (Verification.columns)
        ("nmi", pa.float64()),
        ("disconnected_communities", pa.int64()),
    ],
    metadata={b"schema_version": str(SCHEMA_VERSION).encode()},
)

COLUMNS = tuple(SCHEMA.names)

#: Columns that identify "the same measurement" across runs (compare, history).
KEY_COLUMNS = ("problem", "algorithm", "variant", "init", "instance", "gpu_model")


def table_from_rows(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts) to a table of exactly :data:`SCHEMA`; missing keys become nulls.

    Raises
    ------
    KeyError
        For a key that is not a schema column (a typo must not vanish silently).
    """
    unknown = {k for r in rows for k in r} - set(COLUMNS)
    if unknown:
        raise KeyError(f"result rows carry columns outside the schema: {sorted(unknown)}")
    return pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in rows], schema=SCHEMA)


def record_batch(columns: dict[str, Any], num_rows: int) -> pa.RecordBatch:
    """Columns to a record batch of exactly :data:`SCHEMA`; missing columns become nulls.

    ``columns`` maps a column name to its ``num_rows`` values: a ``pyarrow`` array (cast
    to the column's type) or a sequence of Python values. What a batch of many small
    instances writes instead of one dict per row (:func:`table_from_rows` gives the same
    table from such dicts).

    Raises
    ------
    KeyError
        For a name that is not a schema column.
    ValueError
        For a column of another length.
    """
    unknown = set(columns) - set(COLUMNS)
    if unknown:
        raise KeyError(f"result columns outside the schema: {sorted(unknown)}")
    arrays = []
    for field in SCHEMA:
        values = columns.get(field.name)
        if values is None:
            arrays.append(pa.nulls(num_rows, field.type))
            continue
        if isinstance(values, pa.Array):
            array = values.cast(field.type)
        elif pa.types.is_timestamp(field.type):
            array = _timestamps(values, field.type)
        else:
            array = pa.array(values, type=field.type)
        if len(array) != num_rows:
            raise ValueError(f"column {field.name} has {len(array)} values for {num_rows} rows")
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TICK = {"s": timedelta(seconds=1), "ms": timedelta(milliseconds=1), "us": timedelta(microseconds=1)}


def _timestamps(values: Any, typ: pa.DataType) -> pa.Array:
    """Aware datetimes to a timestamp array, by their integer ticks since the epoch
    (``pa.array`` of aware datetimes imports pandas: a second of a task process's start)."""
    tick = _TICK.get(typ.unit)
    if tick is None:
        return pa.array(values, type=typ)
    ticks = [None if v is None else (v - _EPOCH) // tick for v in values]
    return pa.array(ticks, type=pa.int64()).cast(typ)


def constant_array(name: str, value: Any, count: int) -> pa.Array:
    """``count`` copies of ``value`` as the column ``name`` of :data:`SCHEMA`."""
    typ = SCHEMA.field(name).type
    if value is None:
        return pa.nulls(count, typ)
    if pa.types.is_timestamp(typ):  # by its ticks (an aware datetime to Arrow imports pandas)
        return pa.repeat(_timestamps([value], typ)[0], count)
    return pa.repeat(pa.scalar(value, type=typ), count)


class CompactTable:
    """Rows of :data:`SCHEMA` as the columns that differ between them (``table``) and
    the values that all of them share (``constants``: column name -> value).

    What a batch made as one stack sends from its task process to the client: the rows
    of 10,000 small LAPs weighed 11 MB as a whole table (the job's ``config_json``,
    about a kilobyte, in every row) and took about 100 ms to pickle and unpickle, twice
    on their way. :meth:`full` is the table of the schema, made where it is written.
    """

    __slots__ = ("constants", "table")

    def __init__(self, table: pa.Table, constants: dict[str, Any]) -> None:
        unknown = (set(table.column_names) | set(constants)) - set(COLUMNS)
        if unknown:
            raise KeyError(f"result columns outside the schema: {sorted(unknown)}")
        both = set(table.column_names) & set(constants)
        if both:
            raise ValueError(f"columns both varying and constant: {sorted(both)}")
        self.table, self.constants = table, dict(constants)

    @property
    def num_rows(self) -> int:
        return self.table.num_rows

    def column(self, name: str) -> pa.Array | pa.ChunkedArray:
        """One column of the rows (a shared value repeated)."""
        if name in self.table.column_names:
            return self.table.column(name)
        return constant_array(name, self.constants.get(name), self.num_rows)

    def full(self) -> pa.Table:
        """The rows as a table of exactly :data:`SCHEMA`; columns in neither part are null."""
        n = self.table.num_rows
        have = set(self.table.column_names)
        arrays = [
            self.table.column(f.name).cast(f.type) if f.name in have
            else constant_array(f.name, self.constants.get(f.name), n)
            for f in SCHEMA
        ]
        return pa.Table.from_arrays(arrays, schema=SCHEMA)


def with_constants(table: pa.Table | CompactTable, values: dict[str, Any]) -> pa.Table:
    """``table`` with each column named in ``values`` set to that value in every row (as
    ``row.update(values)`` does to dict rows); a :class:`CompactTable` made whole."""
    if isinstance(table, CompactTable):
        shared = {**table.constants, **values}
        return CompactTable(table.table.drop_columns([k for k in values if k in table.table.column_names]),
                            shared).full()
    for name, value in values.items():
        field = SCHEMA.field(name)
        column = constant_array(name, value, table.num_rows)
        table = table.set_column(table.schema.get_field_index(name), field, column)
    return table


def file_schema_version(metadata: dict[bytes, bytes] | None) -> int:
    """The ``schema_version`` a file was written with (files before versioning: 0)."""
    if not metadata or b"schema_version" not in metadata:
        return 0
    return int(metadata[b"schema_version"])


# What the rows of files written by earlier versions meant: facts about those files,
# kept as data for their upgrade. New rows ask the family instead
# (Problem.default_init, Problem.rate_columns).

#: The initializer of every row with an ``objective_init`` before version 3: then only one
#: family had an initializer, and its solvers all started from this one, on the host.
HISTORIC_V2_INIT = "cheap_cpu"

#: The rate columns version 4 added: ``{column: counter of counters_json}``, per second
#: of ``t_solve_s``, computed for older rows as for new ones.
HISTORIC_V4_RATE_COLUMNS = {"proposals_per_s": "proposals"}


def _v2_to_v3(table: pa.Table) -> pa.Table:
    """2 -> 3 adds ``init``, ``t_upload_s``, ``t_e2e_s`` and ``edges_per_s``.

    Before version 3 the only family with an initializer started every solver from its
    host initializer, and only those rows carry ``objective_init``: they get
    ``init =`` :data:`HISTORIC_V2_INIT`, so that they compare with the same runs made today.
    ``t_e2e_s`` is ``t_init_s + t_solve_s`` and ``edges_per_s`` ``n_edges / t_solve_s``,
    as for new rows; ``t_upload_s`` was not measured (null).
    """
    import pyarrow.compute as pc

    n = table.num_rows

    def col(name: str, typ: pa.DataType) -> pa.ChunkedArray:
        if name in table.column_names:
            return table.column(name).cast(typ)
        return pa.chunked_array([pa.nulls(n, typ)])

    has_init = pc.is_valid(col("objective_init", pa.float64()))
    init = pc.if_else(has_init, pa.scalar(HISTORIC_V2_INIT), pa.scalar(None, pa.string()))
    t_init = pc.fill_null(col("t_init_s", pa.float64()), 0.0)
    e2e = pc.add(col("t_solve_s", pa.float64()), t_init)
    solve = col("t_solve_s", pa.float64())
    positive = pc.fill_null(pc.greater(solve, 0.0), False)
    rate = pc.if_else(
        positive, pc.divide(col("n_edges", pa.float64()), solve), pa.scalar(None, pa.float64())
    )
    for name, values in (("init", init), ("t_e2e_s", e2e), ("edges_per_s", rate)):
        if name in table.column_names:
            table = table.drop_columns([name])
        table = table.append_column(name, values)
    return table


def _v3_to_v4(table: pa.Table) -> pa.Table:
    """3 -> 4 adds the :data:`HISTORIC_V4_RATE_COLUMNS`: a counter of ``counters_json`` /
    ``t_solve_s``, where the row has that counter."""
    if "counters_json" not in table.column_names or "t_solve_s" not in table.column_names:
        return table
    counters = [json.loads(cj) if cj else {} for cj in table.column("counters_json").to_pylist()]
    solve = table.column("t_solve_s").to_pylist()
    for column, counter in HISTORIC_V4_RATE_COLUMNS.items():
        rates = []
        for c, t in zip(counters, solve, strict=True):
            count = c.get(counter)
            ok = isinstance(count, int | float) and t is not None and t > 0
            rates.append(float(count) / float(t) if ok else None)
        table = table.append_column(column, pa.array(rates, type=pa.float64()))
    return table


def _v5_to_v6(table: pa.Table) -> pa.Table:
    """5 -> 6 adds the ``wrong`` status and ``t_process_s`` (null: no outside program).

    Before version 6 an answer its certificate rejected kept ``status = "ok"`` with
    ``verified`` false; such rows become ``wrong`` (their ``error`` the verifier's reason),
    as new rows are written, so that a comparison of an old run with a new one counts them
    alike. A verifier that raised (``verify_reason`` "verifier failed: ...") becomes
    ``error``, as it is now.
    """
    import pyarrow.compute as pc

    names = table.column_names
    if not {"status", "verified"} <= set(names):
        return table
    status = table.column("status").cast(pa.string())
    rejected = pc.and_(pc.equal(status, "ok"), pc.equal(table.column("verified").cast(pa.bool_()), False))
    rejected = pc.fill_null(rejected, False)
    if not pc.any(rejected).as_py():
        return table
    reason = (
        table.column("verify_reason").cast(pa.string())
        if "verify_reason" in names
        else pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    )
    crashed = pc.fill_null(pc.starts_with(reason, "verifier failed"), False)
    new_status = pc.if_else(rejected, pc.if_else(crashed, pa.scalar("error"), pa.scalar("wrong")), status)
    error = (
        table.column("error").cast(pa.string())
        if "error" in names
        else pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    )
    new_error = pc.if_else(rejected, reason, error)
    error_type = (
        table.column("error_type").cast(pa.string())
        if "error_type" in names
        else pa.chunked_array([pa.nulls(table.num_rows, pa.string())])
    )
    new_type = pc.if_else(rejected, new_status, error_type)
    for name, values in (("status", new_status), ("error", new_error), ("error_type", new_type)):
        if name in names:
            table = table.set_column(table.column_names.index(name), name, values)
        else:
            table = table.append_column(name, values)
    return table


# Upgrades from version v to v + 1; each takes and returns a pyarrow Table. Columns that
# a version only adds (1 -> 2: experiment, instrumented, time_limit_s; 4 -> 5: batch_id,
# batch_size, null = a task of one instance, as every older row was) need no step:
# :func:`upgrade` fills them with nulls.
_UPGRADES: dict[int, Any] = {2: _v2_to_v3, 3: _v3_to_v4, 5: _v5_to_v6}


def upgrade(table: pa.Table, version: int) -> pa.Table:
    """Bring a table written at ``version`` to :data:`SCHEMA` (adds missing columns as nulls).

    Raises
    ------
    ValueError
        For a file written by a newer matchbench than this one.
    """
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"results written with schema_version {version}, newer than this matchbench "
            f"({SCHEMA_VERSION}); upgrade matchbench to read them"
        )
    for v in range(version, SCHEMA_VERSION):
        step = _UPGRADES.get(v)
        if step is not None:
            table = step(table)
    cols = []
    for field in SCHEMA:
        if field.name in table.column_names:
            cols.append(table.column(field.name).cast(field.type))
        else:
            cols.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(cols, schema=SCHEMA)
