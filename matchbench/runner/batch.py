"""Batched tasks (``run.batch``): many small instances per Dask task.

A sweep of many small instances spends more time on each task's round trip through Dask
(about 1.6 ms) and on its own launches than on the solve. With ``run.batch`` set, the
sweep ships the tasks of one algorithm x variant (and the same timing, init and limits)
in batches: one Dask task runs all instances of a batch, in one task process, and returns
one row per instance x repetition, as the unbatched tasks would. The plan is unchanged
(one task per instance, with its own ``task_id``); batches are formed by the sweep
(:func:`make_batches`) after ``run.resume`` has dropped the finished instances, so a
resumed sweep runs each unfinished instance exactly once, whatever batches the first
attempt had.

``run.batch`` (:func:`parse_batch`):

- ``null``, ``false`` or ``0``: off, one task per instance (the default).
- a count, ``run.batch=256``: at most 256 instances per batch.
- a size, ``run.batch=64MiB`` (any size ``dask.utils.parse_bytes`` reads: ``64MiB``,
  ``500kB``, ``1e6``): at most that many bytes of instances per batch.
- both, ``run.batch={count: 256, bytes: 64MiB}``: a batch closes at whichever comes first.

Sizes are those that order the sweep largest-first
(:func:`~matchbench.runner.execute.instance_size_hint`: the disk-cache file when it
exists, else the estimate the dataset function declares on its tag), known before anything is
loaded; an instance of unknown size counts 0 bytes, so give a count as well for such
datasets. An instance larger than the byte limit is a batch of its own. A batch holds its
instances in memory together, so the byte limit bounds what a worker holds at once.

Batches follow the largest-first order: the instances of a group, sorted, are cut into
consecutive batches, and batches are submitted in the order of their first (largest)
instance. Where several workers can run a group (``local_cpu``, several GPUs) its batches
also hold at most ``ceil(instances / (BATCHES_PER_WORKER * workers))`` instances, so that
a small sweep still spreads over every worker and the last batches are short; with one
worker the limits are used as given.

What runs inside a batch (a :class:`Batch`) is :func:`matchbench.runner.task.execute_batch`.
In a sweep's task process a batch is columnar data end to end
(:func:`~matchbench.runner.task.columnar_batch`): its instances are made together where
their dataset function has a bulk hook (``matchbench_bulk``), their answers are certified
together (:meth:`Problem.verify_batch <matchbench.core.problem.Problem.verify_batch>`),
and its rows travel and are written as Arrow tables of the results schema, a few
hundred instances per table; rows, failures and resume are those of the one-by-one
path, to which a chunk of instances falls back when its task process dies or exceeds
their limits.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matchbench.runner.plan import Task

class Sealed:
    """A value pickled once where it is made and carried as those bytes, unread, until
    :meth:`open`: a batch's row tables, pickled by the task process and opened by the
    client, pass the worker (which has no use for them) without being unpickled and
    pickled again there (a 10,000-row table: 1.4 and 1.7 ms on an H100 machine's host)."""

    __slots__ = ("blob",)

    def __init__(self, value: Any) -> None:
        import pickle

        self.blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)

    def open(self) -> Any:
        import pickle

        return pickle.loads(self.blob)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_sealed_from, (self.blob,))

    def __repr__(self) -> str:
        return f"Sealed({len(self.blob)} bytes)"


def _sealed_from(blob: bytes) -> Sealed:
    out = object.__new__(Sealed)
    out.blob = blob
    return out


def opened(values: list[Any]) -> list[Any]:
    """``values`` with each :class:`Sealed` one opened (a sealed list spliced in)."""
    out: list[Any] = []
    for v in values:
        if isinstance(v, Sealed):
            v = v.open()
            out.extend(v if isinstance(v, list) else [v])
        else:
            out.append(v)
    return out


#: Batches per worker that can run a group, at least, when several workers can.
BATCHES_PER_WORKER = 4

#: Task fields that differ between the instances of one batch; everything else is equal.
_PER_INSTANCE = frozenset({"task_id", "instance_spec", "instance_key", "provenance"})


class Batch:
    """The tasks one Dask task runs together (``run.batch``), shipped as one picklable record.

    Parameters
    ----------
    batch_id : str
        :func:`batch_id` of the member task ids; the file is ``part-batch-<batch_id>.parquet``.
    tasks : list of Task
        Tasks that differ only in their instance (:func:`batch_key`), largest first.
    joint : bool
        Whether a ``batchable`` solver may solve them in one call (false: one by one).

    It pickles as columns: the fields its tasks share once, and one list per field of
    :data:`_PER_INSTANCE` (a batch of 10,000 small tasks took 9.5 us a task to pickle
    and unpickle as objects, twice on its way to the task process; see :func:`_pack`).
    An unpickled batch stays columns until something asks for its :attr:`tasks`: the
    worker, the task process's parent and a batch made as one stack
    (:mod:`matchbench.runner.stack`) read :attr:`task_ids`, :attr:`first`,
    :meth:`column` and :meth:`spec_columns` without a :class:`Task` per instance.
    """

    __slots__ = ("_blob", "_first", "_len", "_packed", "_tasks", "batch_id", "joint")

    def __init__(self, batch_id: str, tasks: list[Task] | None = None, joint: bool = True,
                 *, packed: tuple[dict[str, Any], tuple[list[Any], ...]] | None = None) -> None:
        if tasks is None and packed is None:
            tasks = []
        self.batch_id, self.joint = batch_id, bool(joint)
        self._tasks = list(tasks) if tasks is not None else None
        self._packed = packed
        self._blob: bytes | None = None
        self._first: Task | None = None
        self._len: int | None = None

    def sealed(self) -> Batch:
        """This batch with its columns pickled once, here, for its trip to a task process.

        A sealed batch pickles as those bytes, its first task and its length, and
        unpickles without reading them: the worker, which needs only the first task's
        limits and the length, hands the same bytes on to its task process, where the
        columns are read. Between the client and the task process the columns are then
        pickled once and unpickled once, not twice each (a batch of 10,000 LAPs: 1.8-2.3
        ms each way on an H100 machine's host). A batch that is not columns (tasks that
        differ in more than their instance) is returned as it is.
        """
        import pickle

        packed = self._columns()
        if packed is None or self._blob is not None:
            return self
        out = Batch(self.batch_id, joint=self.joint, packed=packed)
        out._blob = pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)
        out._first, out._len = self.first, len(self)
        return out

    def __repr__(self) -> str:
        return f"Batch({self.batch_id!r}, {len(self)} task(s), joint={self.joint})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Batch):
            return NotImplemented
        return (self.batch_id, self.joint, self.tasks) == (other.batch_id, other.joint, other.tasks)

    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        if self._tasks is not None:
            return len(self._tasks)
        if self._len is not None:
            return self._len
        return len(self._packed[1][0])  # type: ignore[index]

    @property
    def tasks(self) -> list[Task]:
        """The member tasks (made from the columns on first use, then kept)."""
        if self._tasks is None:
            self._tasks = _tasks_of(*self._columns())  # type: ignore[misc]
        return self._tasks

    def _columns(self) -> tuple[dict[str, Any], tuple[list[Any], ...]] | None:
        """``(shared fields, per-instance columns)`` (:func:`_pack`), made (or, for a
        sealed batch, read from its bytes) once; None for tasks that are not one batch's
        (pickled as objects)."""
        if self._packed is None and self._blob is not None:
            import pickle

            self._packed = pickle.loads(self._blob)
        if self._packed is None and self._tasks is not None:
            self._packed = _pack(self._tasks)
        return self._packed

    @property
    def task_ids(self) -> list[str]:
        if self._tasks is None:
            return self._columns()[1][0]  # type: ignore[index]
        return [t.task_id for t in self._tasks]

    @property
    def first(self) -> Task:
        """The first task (made alone, where the batch is still columns)."""
        if self._tasks is not None:
            return self._tasks[0]
        if self._first is not None:
            return self._first
        shared, columns = self._columns()  # type: ignore[misc]
        one = (columns[0][:1], _slice_specs(columns[1], [0]), *(c[:1] for c in columns[2:]))
        return _tasks_of(shared, one)[0]

    def column(self, name: str) -> list[Any]:
        """One per-instance field (``task_id``, ``instance_key``, ``provenance``) of
        every task, in order."""
        packed = self._columns()
        if packed is None or name == "instance_spec":
            return [getattr(t, name) for t in self.tasks]
        return packed[1][_PER_INSTANCE_ORDER.index(name)]

    def spec_columns(self) -> tuple[dict[str, Any], dict[str, list[Any]]] | None:
        """The instance specs as ``(template, {key: [value per task]})``: the template
        is the first spec, and each key whose value differs between specs is listed with
        every task's value. None where the specs do not share their keys (in one order)."""
        packed = self._columns()
        specs = packed[1][1] if packed is not None else None
        if specs is None or isinstance(specs, list):
            return None
        template, varying, values = specs
        return dict(template), {k: [v[j] for v in values] for j, k in enumerate(varying)}

    def subset(self, indices: list[int], joint: bool | None = None) -> Batch:
        """The batch of the tasks at ``indices`` (same id), still columns where this one is."""
        joint = self.joint if joint is None else joint
        if self._blob is not None and self._packed is None and indices == list(range(len(self))):
            out = Batch(self.batch_id, joint=joint)  # the same bytes, still unread
            out._tasks, out._blob, out._first, out._len = None, self._blob, self._first, self._len
            return out
        if self._tasks is not None or self._columns() is None:
            return Batch(self.batch_id, [self.tasks[i] for i in indices], joint)
        shared, columns = self._packed  # type: ignore[misc]
        if indices == list(range(len(columns[0]))):
            return Batch(self.batch_id, joint=joint, packed=self._packed)
        picked = tuple(
            _slice_specs(c, indices) if k == 1 else [c[i] for i in indices] for k, c in enumerate(columns)
        )
        return Batch(self.batch_id, joint=joint, packed=(shared, picked))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self._blob is not None:
            return (_unseal, (self.batch_id, self.joint, self._first, self._len, self._blob))
        packed = self._columns()
        if packed is None:
            return (Batch, (self.batch_id, list(self.tasks), self.joint))
        return (_unpack, (self.batch_id, self.joint, *packed))


#: the per-instance fields of :class:`Task`, in the order :func:`_pack` ships them
_PER_INSTANCE_ORDER = ("task_id", "instance_spec", "instance_key", "provenance")


def _pack(tasks: list[Task]) -> tuple[dict[str, Any], tuple[list[Any], ...]] | None:
    """``(shared fields, per-instance columns)`` of tasks that differ only in
    :data:`_PER_INSTANCE` (as a batch's do); None for others (pickled as objects)."""
    if len(tasks) < 2:
        return None
    shared = {k: v for k, v in vars(tasks[0]).items() if k not in _PER_INSTANCE}
    if set(vars(tasks[0])) != set(shared) | _PER_INSTANCE:
        return None
    get, values = operator.itemgetter(*shared), tuple(shared.values())
    try:
        # tuple equality tries identity first: the plan's tasks share most field objects
        if any(get(vars(t)) != values for t in tasks[1:]):
            return None
    except KeyError:
        return None
    columns = [list(map(operator.attrgetter(k), tasks)) for k in _PER_INSTANCE_ORDER]
    columns[1] = _pack_specs(columns[1])
    return shared, tuple(columns)


def _pack_specs(specs: list[dict[str, Any]]) -> Any:
    """Instance specs as ``(template, varying keys, their values per spec)`` where they
    hold the same keys in the same order (a ``many:`` dataset's differ only in ``seed``),
    else the list itself."""
    first = specs[0]
    order = tuple(first)
    if not all(type(s) is dict and tuple(s) == order for s in specs):
        return specs
    # per key, every spec's value (C-level map and count: about 1 us a spec in all)
    by_key = {k: list(map(operator.itemgetter(k), specs)) for k in order}
    varying = tuple(k for k in order if by_key[k].count(first[k]) != len(specs))
    if not varying:
        return (first, varying, [()] * len(specs))
    if len(varying) == 1:
        return (first, varying, [(v,) for v in by_key[varying[0]]])
    return (first, varying, list(zip(*(by_key[k] for k in varying), strict=True)))


def _unpack_specs(packed: Any) -> list[dict[str, Any]]:
    if isinstance(packed, list):
        return packed
    template, varying, values = packed
    out = []
    for vals in values:
        spec = dict(template)
        spec.update(zip(varying, vals, strict=True))
        out.append(spec)
    return out



def _slice_specs(packed: Any, indices: list[int]) -> Any:
    """:func:`_pack_specs`'s form of the specs at ``indices``."""
    if isinstance(packed, list):
        return [packed[i] for i in indices]
    template, varying, values = packed
    return (template, varying, [values[i] for i in indices])


def _narrowed(template: dict[str, Any], varying: tuple[str, ...], values: list[tuple[Any, ...]]) -> Any:
    """:func:`_pack_specs`'s form of a slice of a larger set's packed specs: the slice's
    first spec as the template, and only the keys whose values differ within the slice."""
    if not values:
        return (template, varying, values)
    first = dict(template)
    first.update(zip(varying, values[0], strict=True))
    columns = list(zip(*values, strict=True))
    keep = [j for j, col in enumerate(columns) if col.count(col[0]) != len(col)]
    if len(keep) == len(varying):
        return (first, varying, values)
    if not keep:
        return (first, (), [()] * len(values))
    get = operator.itemgetter(*keep)
    picked = list(map(get, values)) if len(keep) > 1 else [(v,) for v in map(get, values)]
    return (first, tuple(varying[j] for j in keep), picked)


class Packer:
    """Batches of planned tasks packed from their plans' columns, not task by task.

    :class:`Batch` packs its tasks by reading every field of every task (to find what
    they share) and every spec: 2 to 5 us a task, which a million-task sweep's client
    paid while the batches ran. The tasks of one :func:`~matchbench.runner.plan.build_plan`
    job share their fields by construction (:attr:`Plan.shared
    <matchbench.runner.plan.Plan.shared>`), so a batch whose tasks are all of one such
    plan is packed from the plan's columns, made once here: a slice per batch.

    Parameters
    ----------
    plans : list of Plan
    tasks : mapping
        Task id -> the task the sweep runs (where two plans have a task of one id, the
        one in ``tasks`` is the one packed).
    """

    def __init__(self, plans: list[Any], tasks: Mapping[str, Task]) -> None:
        self._tasks = tasks
        self._where: dict[str, tuple[int, int]] = {}  # task id -> (plan, position)
        self._columns: list[tuple[dict[str, Any], Any, list[Any], list[Any]]] = []
        for plan in plans:
            shared, planned = getattr(plan, "shared", None), plan.tasks
            if shared is None or len(planned) < 2:
                continue
            specs = _pack_specs([t.instance_spec for t in planned])
            if isinstance(specs, list):  # specs of different keys: the batch packs itself
                continue
            g = len(self._columns)
            self._columns.append((shared, specs, [t.instance_key for t in planned],
                                  [t.provenance for t in planned]))
            for i, t in enumerate(planned):
                if tasks.get(t.task_id) is t:
                    self._where[t.task_id] = (g, i)

    def batch(self, batch_id: str, task_ids: list[str], joint: bool = True) -> Batch:
        """The :class:`Batch` of ``task_ids``: packed from its plan's columns where all of
        them are one plan's, else from its tasks (as ``Batch(batch_id, tasks)``)."""
        where = self._where
        hits = [where.get(tid) for tid in task_ids] if len(task_ids) > 1 else [None]
        plans = {h[0] if h is not None else None for h in hits}
        if len(plans) != 1 or None in plans:
            return Batch(batch_id, [self._tasks[tid] for tid in task_ids], joint)
        shared, (template, varying, values), keys, provenance = self._columns[plans.pop()]
        idx = [h[1] for h in hits]
        specs = _narrowed(template, varying, [values[i] for i in idx])
        columns = (list(task_ids), specs, [keys[i] for i in idx], [provenance[i] for i in idx])
        return Batch(batch_id, joint=joint, packed=(shared, columns))


def _unpack(batch_id: str, joint: bool, shared: dict[str, Any], columns: tuple[list[Any], ...]) -> Batch:
    """The :class:`Batch` that :func:`_pack` shipped, still as columns (its tasks are
    made on first use, by :func:`_tasks_of`)."""
    return Batch(batch_id, joint=joint, packed=(shared, columns))


def _unseal(batch_id: str, joint: bool, first: Task, length: int, blob: bytes) -> Batch:
    """The :meth:`Batch.sealed` batch, its columns still the bytes they were pickled to."""
    out = Batch(batch_id, joint=joint)
    out._tasks, out._blob, out._first, out._len = None, blob, first, int(length)
    return out


def _tasks_of(shared: dict[str, Any], columns: tuple[list[Any], ...]) -> list[Task]:
    """The tasks of :func:`_pack`'s columns, made without ``__init__`` (the plan made
    and checked them), the shared fields' objects shared."""
    from matchbench.runner.plan import Task

    tasks = []
    new = object.__new__
    columns = (columns[0], _unpack_specs(columns[1]), *columns[2:])
    for values in zip(*columns, strict=True):
        t = new(Task)
        d = vars(t)
        d.update(shared)
        d.update(zip(_PER_INSTANCE_ORDER, values, strict=True))
        tasks.append(t)
    return tasks


@dataclass(frozen=True)
class BatchLimit:
    """The limits of one batch: ``count`` instances, ``bytes`` of instances (None: none)."""

    count: int | None = None
    bytes: int | None = None

    def __str__(self) -> str:
        parts = []
        if self.count is not None:
            parts.append(f"{self.count} instance(s)")
        if self.bytes is not None:
            parts.append(f"{self.bytes} bytes")
        return " or ".join(parts)


_SYNTAX = "a count (256), a size (64MiB) or {count: 256, bytes: 64MiB}; null, false or 0 for off"


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where} must be a positive integer, not {value!r}")
    if value < 1:
        raise ValueError(f"{where} must be a positive integer, not {value!r}")
    return int(value)


def _bytes(value: Any, where: str) -> int | None:
    from dask.utils import parse_bytes

    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"{where} must be a size such as 64MiB, not {value!r}")
    if isinstance(value, int | float):
        n = value
    elif isinstance(value, str):
        try:
            n = parse_bytes(value.strip())
        except (ValueError, TypeError, KeyError):
            raise ValueError(f"{where}: {value!r} is not a size (e.g. 64MiB, 500kB, 1e6)") from None
    else:
        raise ValueError(f"{where} must be a size such as 64MiB, not {value!r}")
    if not n >= 1 or n != int(n):
        raise ValueError(f"{where} must be a positive number of bytes, not {value!r}")
    return int(n)


def parse_batch(value: Any) -> BatchLimit | None:
    """The batch limits ``run.batch`` asks for; None for off.

    Parameters
    ----------
    value
        ``None``, ``False`` or ``0`` (off); a positive int (a count); a size string
        (``"64MiB"``, ``"500kB"``: bytes); or a mapping with ``count`` and/or ``bytes``.

    Raises
    ------
    ValueError
        For anything else, with a message that names ``run.batch`` and the accepted forms.

    Examples
    --------
    >>> parse_batch(None), parse_batch(256), parse_batch("1KiB")
    (None, BatchLimit(count=256, bytes=None), BatchLimit(count=None, bytes=1024))
    >>> parse_batch({"count": 8, "bytes": "1MB"})
    BatchLimit(count=8, bytes=1000000)
    """
    if value is None or value is False or (isinstance(value, int) and not isinstance(value, bool) and value == 0):
        return None
    if value is True:
        raise ValueError(f"run.batch=true says no limit: give {_SYNTAX}")
    if isinstance(value, int):
        return BatchLimit(count=_count(value, "run.batch"))
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("", "null", "none", "off", "false", "0"):
            return None
        if text.isdigit():  # "256" from a YAML string: a count, as 256 is
            return BatchLimit(count=_count(int(text), "run.batch"))
        try:
            return BatchLimit(bytes=_bytes(text, "run.batch"))
        except ValueError:
            raise ValueError(f"run.batch={value!r} is neither a count nor a size: give {_SYNTAX}") from None
    if isinstance(value, Mapping):
        extra = sorted(set(map(str, value)) - {"count", "bytes"})
        if extra:
            raise ValueError(f"run.batch: unknown key(s) {extra}: give {_SYNTAX}")
        limit = BatchLimit(count=_count(value.get("count"), "run.batch.count"),
                           bytes=_bytes(value.get("bytes"), "run.batch.bytes"))
        if limit.count is None and limit.bytes is None:
            raise ValueError(f"run.batch: give count, bytes or both ({_SYNTAX})")
        return limit
    raise ValueError(f"run.batch={value!r} is not understood: give {_SYNTAX}")


def batch_key(task: Task) -> str:
    """What the tasks of one batch share: everything but the instance and its provenance."""
    shared = {
        f.name: getattr(task, f.name) for f in dataclasses.fields(task) if f.name not in _PER_INSTANCE
    }
    return json.dumps(shared, sort_keys=True, default=str)


def plan_batch_keys(plans: list[Any], tasks: Mapping[str, Task]) -> dict[str, str]:
    """:func:`batch_key` of the tasks of plans that know their shared fields
    (:attr:`Plan.shared <matchbench.runner.plan.Plan.shared>`): one per plan, as its
    tasks share all but the per-instance fields by construction. Task id -> key, for the
    tasks of ``tasks`` only."""
    keys: dict[str, str] = {}
    for plan in plans:
        if getattr(plan, "shared", None) is None or not plan.tasks:
            continue
        key = batch_key(plan.tasks[0])
        for t in plan.tasks:
            if tasks.get(t.task_id) is t:
                keys[t.task_id] = key
    return keys


def _batch_keys(order: list[str], tasks: Mapping[str, Task], known: Mapping[str, str] | None = None) -> dict[str, str]:
    """:func:`batch_key` of each task, its JSON made once per group of tasks with equal
    fields (45 us a task of a million-task plan otherwise): a task is compared with the
    last few groups' fields (tuple equality, which tries identity first: the plan's
    tasks share their field objects), and only a task equal to none makes its own.
    ``known``: keys already known (:func:`plan_batch_keys`), taken as they are."""
    known = known or {}
    if len(known) == len(order) and all(map(known.__contains__, order)):
        return dict(known)
    names = [f.name for f in dataclasses.fields(tasks[order[0]])] if order else []
    get = operator.itemgetter(*[n for n in names if n not in _PER_INSTANCE])
    recent: list[tuple[Any, str]] = []  # (fields, key), the latest first
    keys: dict[str, str] = {}
    for tid in order:
        if tid in known:
            keys[tid] = known[tid]
            continue
        task = tasks[tid]
        values = get(vars(task))
        for k, (seen, found) in enumerate(recent):
            if seen == values:
                key = found
                if k:
                    recent.insert(0, recent.pop(k))
                break
        else:
            key = batch_key(task)
            recent.insert(0, (values, key))
            del recent[8:]
        keys[tid] = key
    return keys


def batch_id(task_ids: list[str]) -> str:
    """A batch's id: 16 hex digits of its member task ids (another set, another id).

    The batch's file is ``part-batch-<id>.parquet``: a resumed sweep, which batches only
    the unfinished instances, never overwrites an earlier batch's file.
    """
    return hashlib.sha1(",".join(sorted(task_ids)).encode()).hexdigest()[:16]


def make_batches(
    order: list[str],
    tasks: Mapping[str, Task],
    limit: BatchLimit,
    sizes: Mapping[str, float],
    workers: Mapping[str, int] | None = None,
    keys: Mapping[str, str] | None = None,
) -> list[list[str]]:
    """Cut the ordered task ids into batches of tasks that can share a task process.

    Parameters
    ----------
    order : list of str
        Task ids, largest instance first (:func:`~matchbench.runner.execute.submission_order`).
    tasks : mapping
        Task id -> task.
    limit : BatchLimit
        At most ``limit.count`` instances and ``limit.bytes`` bytes per batch.
    sizes : mapping
        Task id -> its instance's size hint in bytes (0: unknown).
    workers : mapping, optional
        Device (``"cpu"``, ``"gpu"``) -> how many workers can run its tasks; with more than
        one, a group's batches also hold at most ``ceil(n / (BATCHES_PER_WORKER * workers))``
        of its ``n`` instances.
    keys : mapping, optional
        Task id -> :func:`batch_key`, where already known (:func:`plan_batch_keys`).

    Returns
    -------
    list of list of str
        The batches, each in the given order, listed in the order of their first member.
    """
    keys = _batch_keys(order, tasks, keys)
    group_n: dict[str, int] = {}
    device: dict[str, str] = {}
    for tid in order:
        group_n[keys[tid]] = group_n.get(keys[tid], 0) + 1
        device.setdefault(keys[tid], str(tasks[tid].device))
    caps: dict[str, int | None] = {}
    for key, n in group_n.items():
        w = int((workers or {}).get(device[key], 1) or 1)
        share = math.ceil(n / (BATCHES_PER_WORKER * w)) if w > 1 else None
        caps[key] = min(c for c in (limit.count, share) if c is not None) if (limit.count or share) else None

    batches: list[list[str]] = []
    open_: dict[str, tuple[list[str], float]] = {}
    for tid in order:
        key = keys[tid]
        size = float(sizes.get(tid, 0.0) or 0.0)
        cur = open_.get(key)
        if cur is not None:
            members, total = cur
            full = caps[key] is not None and len(members) >= caps[key]
            if limit.bytes is not None and total + size > limit.bytes:
                full = True
            if not full:
                members.append(tid)
                open_[key] = (members, total + size)
                continue
        members = [tid]
        batches.append(members)
        open_[key] = (members, size)
    return batches
