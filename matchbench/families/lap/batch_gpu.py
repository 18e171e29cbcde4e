"""Batched GPU LAP solver: many small dense LAPs in one launch, one thread block per instance.

:class:`HungarianBatchGPU` (``hungarian_batch_gpu``) solves a whole batch of
:class:`~matchbench.families.lap.problem.CostMatrix` instances (``run.batch``) with one kernel
launch per group of instances (below), no host synchronization in between, each block
running the shortest augmenting path form of the Hungarian method (Jonker & Volgenant
1987; Crouse 2016, the method of SciPy's ``linear_sum_assignment``) on its instance after
JV's column reduction. Every answer carries its duals (int64 for integer costs, exact;
float64 for float costs), so the LAP verifier certifies it directly.

The kernel (``kernels/lap/lap_batch.cu``, ``lap_batch_solve``) keeps the duals ``u``, ``v``,
the shortest-path distances, predecessors, assignment and scanned flags in shared memory
(:func:`smem_bytes`); the cost matrix stays in global memory and each Dijkstra step reads
one row, coalesced across the block's threads (``smem_cost_bytes`` > 0 copies matrices up
to that size into shared memory instead: slower on an H200, kept for other GPUs). Thread ``t`` owns the columns
``t, t + T, ...``; the argmin over the columns of each step is a warp-shuffle reduction
and one ``__syncthreads``.

Groups. Instances of one launch share the cost dtype, the block size (:func:`auto_threads`
of their n, or the ``threads_per_block`` parameter) and the cost placement (shared or global);
within a group they may differ in n: each is packed back to back into one flat array
(instance ``k`` at ``meta[k, 0]``, its answer vectors at ``meta[k, 1]``, its size
``meta[k, 2]``), so nothing is padded and no answer needs stripping. A batch of
instances of one size and dtype is one contiguous ``(B, n, n)`` array and one launch; a
mixed batch (``dataset=lap_many``: n from 32 to 512) a handful. Blocks of a group are
ordered largest instance first, so that the longest solves start first. Rectangular
instances are padded by the LAP family itself (:meth:`CostMatrix.from_array`), so every
instance is square here.

:func:`sap_reference` is the kernel's algorithm in numpy, step for step: the same column
reduction and greedy start, the same Dijkstra scan with the same tie-breaking (least
distance, then an unassigned column, then the lowest index), the same dual update, the
same floating-point operations in the same order. CPU tests run it against SciPy and the
verifier on hundreds of instances; GPU tests check that the kernel's answers equal it
bit for bit.

Stacks on the device. :func:`stack_launch` (the solver's stack path) and
:func:`solve_stack_finished` (behind :func:`matchbench.lap.solve_batch`) launch the same
kernel on a contiguous ``(B, n, n)`` CuPy array as it is: a batch of one size and dtype is
one group whose back-to-back layout is the stack's own, so nothing is packed, copied or
built as a :class:`CostMatrix`. :func:`solve_stack_finished` also makes the meta rows and
finishes the answers on the device, out of one allocation and with one host
synchronization.

Timing. ``prepare_batch`` packs and uploads (untimed, cached by instance identity across
repetitions); ``run`` queues the launches between two CUDA events (``timings()["solve"]``
is the whole batch); ``result_batch`` copies the answers back (one host sync) and raises
if a block reported an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import MISSING, block_size, integer, renamed
from matchbench.core.solver import BaseSolver
from matchbench.core.stack import InstanceStack
from matchbench.families.lap.problem import (
    Assignment,
    CostMatrix,
    device_block,
    dual_dtype,
    stacked,
)

#: Kernel name suffix per cost dtype (``lap_batch_sap[_smem]_<suffix>``).
DTYPE_SUFFIX = {
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}
#: Bytes of a dual (int64 or float64) in the kernel.
DUAL_BYTES = 8
#: Default of ``smem_cost_bytes``: 0, every matrix read from global memory. Copying the
#: matrix to shared memory lowers the blocks per SM more than it saves: on an H200 it was
#: at most 5% faster (n = 16, at block sizes slower anyway) and up to 5x slower (n = 128,
#: one warp per block).
SMEM_COST_BYTES = 0
#: Largest ``smem_cost_bytes`` accepted (the H100's and H200's opt-in limit is 227 KiB).
SMEM_COST_BYTES_MAX = 200 * 1024
#: Dynamic shared memory a block gets without opting in.
SMEM_DEFAULT_LIMIT = 48 * 1024
#: stats[k, 1] codes of the kernel (LAP_BATCH_E_*).
KERNEL_ERRORS = {
    1: "a Dijkstra step found no unscanned column",
    2: "an augmentation took more than n Dijkstra steps",
    3: "the augmentation walk did not reach its root row",
}


def auto_threads(n: int) -> int:
    """The block size for an instance of size ``n`` (``threads_per_block: 0``).

    About one thread per four columns, at least a warp and at most 256 threads:
    ``clamp(next_pow2(n) / 4, 32, 256)``. One warp up to n = 128 (its argmin needs no
    block barrier, and many instances share an SM), 64 threads up to n = 256, 128 up to
    n = 512. Measured on an H200 (int32 and float32 uniform costs, n = 16..512, while the
    kernel was written): this choice was the fastest of 32..512 threads at every n, by 1.5x
    over the next best at n = 64 and 1.1x to 1.3x at n = 512. To measure it again, sweep
    ``algorithm.threads_per_block=32,64,128,256`` in the ``batch_lap`` experiment.

    >>> [auto_threads(n) for n in (1, 64, 128, 129, 256, 257, 512, 1024, 2000)]
    [32, 32, 32, 64, 64, 128, 128, 256, 256]
    """
    p = 1 << max(0, int(n) - 1).bit_length()  # next power of two >= n
    return int(min(256, max(32, p // 4)))


def smem_bytes(n: int, cost_itemsize: int, smem_costs: bool) -> int:
    """Dynamic shared memory of one block for an instance of size ``n``.

    The carve of ``lap_batch_smem`` in ``kernels/lap/lap_batch.cu``: three dual arrays (u, v,
    the distances) and 64 duals of reduction scratch, the cost matrix when it is kept in
    shared memory, three int arrays (predecessors, row4col, col4row) and 64 ints of
    scratch, one byte per column (scanned flags).

    >>> smem_bytes(64, 4, True), smem_bytes(512, 4, False)
    (19520, 19712)
    """
    n = int(n)
    costs = cost_itemsize * n * n if smem_costs else 0
    return DUAL_BYTES * (3 * n + 64) + costs + 4 * (3 * n + 64) + n


def max_n(smem_limit: int) -> int:
    """Largest n whose state (costs in global memory) fits ``smem_limit`` bytes per block."""
    lo, hi = 0, 1
    while smem_bytes(hi, 8, False) <= smem_limit:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if smem_bytes(mid, 8, False) <= smem_limit else (lo, mid)
    return lo


@dataclass
class Group:
    """The instances of one launch: same cost dtype, block size and cost placement.

    ``members`` are indices into the batch, largest n first (ties in input order).
    """

    dtype: np.dtype
    threads_per_block: int
    smem_costs: bool
    members: list[int] = field(default_factory=list)
    ns: list[int] = field(default_factory=list)

    @property
    def kernel(self) -> str:
        mid = "smem_" if self.smem_costs else ""
        return f"lap_batch_sap_{mid}{DTYPE_SUFFIX[self.dtype]}"

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory of the launch: that of its largest instance."""
        return max(smem_bytes(n, self.dtype.itemsize, self.smem_costs) for n in set(self.ns))

    @property
    def total_n(self) -> int:
        return int(sum(self.ns))


def small_batch_threads(n: int, count: int, sms: int | None) -> int | None:
    """The block size for a launch of ``count`` instances of size ``n`` that leaves SMs
    idle (``count <= sms``) and ``n > 128``: ``min(512, next_pow2(n))``; None otherwise
    (:func:`auto_threads` then). With one block or none per SM, the block's threads are
    all the LAP gets; at n = 512 and 100 LAPs on an H100 (132 SMs) 512 threads solved the
    launch in 4.86 ms against 8.71 with :func:`auto_threads`' 128 (256: 5.73, 1024: 6.34;
    run ``20261126T151847-751``), while at n = 64 one warp stayed the fastest. Any block
    size gives the same answers, bit for bit.

    >>> small_batch_threads(512, 100, 132), small_batch_threads(512, 2000, 132)
    (512, None)
    >>> small_batch_threads(200, 10, 132), small_batch_threads(64, 10, 132), small_batch_threads(512, 10, None)
    (256, None, None)
    """
    if sms is None or count > sms or n <= 128:
        return None
    return int(min(512, 1 << max(0, int(n) - 1).bit_length()))


def plan_groups(
    shapes: list[tuple[int, Any]],
    threads_per_block: int = 0,
    smem_cost_bytes: int = SMEM_COST_BYTES,
    smem_limit: int = SMEM_DEFAULT_LIMIT,
    sms: int | None = None,
) -> list[Group]:
    """Split a batch, given as ``(n, dtype)`` per instance, into launches.

    An instance's costs go to shared memory when the matrix has at most
    ``smem_cost_bytes`` bytes and the block's whole state then fits ``smem_limit``.
    Groups come in a fixed order (dtype, block size, placement), members largest first
    (ties in input order). ``threads_per_block`` 0 picks the block size by
    :func:`auto_threads`, or, given the GPU's SM count ``sms``, by
    :func:`small_batch_threads` for the instances of a size that leave SMs idle. The work
    is per distinct shape, not per instance (a stack of 10,000 of one size: one check).

    Raises
    ------
    ValueError
        For a dtype the kernel has no entry for, or an instance whose state alone
        (costs in global memory) exceeds ``smem_limit``; naming the first such instance.
    """
    by_shape: dict[tuple[Any, Any], list[int]] = {}
    for k, shape in enumerate(shapes):
        by_shape.setdefault(tuple(shape), []).append(k)
    # the first instance of each shape, in input order: the first bad instance raises first
    groups: dict[tuple[str, int, bool], Group] = {}
    count_of_n: dict[int, int] = {}
    for (n, _), ks in by_shape.items():
        count_of_n[int(n)] = count_of_n.get(int(n), 0) + len(ks)
    for (n, given), ks in by_shape.items():  # first occurrences in input order
        k = ks[0]
        n = int(n)
        try:
            dt = np.dtype(given)
        except TypeError:
            dt = None
        if dt not in DTYPE_SUFFIX:
            raise ValueError(
                f"instance {k}: cost dtype {given if dt is None else dt} (expected one of int32, "
                "int64, float32, float64)"
            )
        if n < 1:
            raise ValueError(f"instance {k}: n = {n}")
        if smem_bytes(n, dt.itemsize, False) > smem_limit:
            raise ValueError(
                f"instance {k}: n = {n} needs {smem_bytes(n, dt.itemsize, False)} bytes of "
                f"shared memory per block, more than the {smem_limit} available (n <= "
                f"{max_n(smem_limit)})"
            )
        t = threads_per_block or small_batch_threads(n, count_of_n[n], sms) or auto_threads(n)
        in_smem = (
            n * n * dt.itemsize <= smem_cost_bytes
            and smem_bytes(n, dt.itemsize, True) <= smem_limit
        )
        key = (dt.str, t, in_smem)
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(dt, t, in_smem)
        g.members.extend(ks)
        g.ns.extend([n] * len(ks))
    out = []
    for key in sorted(groups):
        g = groups[key]
        if len(set(g.ns)) > 1 or any(a > b for a, b in zip(g.members, g.members[1:], strict=False)):
            order = sorted(range(len(g.members)), key=lambda q: (-g.ns[q], g.members[q]))
            g.members = [g.members[q] for q in order]
            g.ns = [g.ns[q] for q in order]
        out.append(g)
    return out


def group_meta(group: Group) -> np.ndarray:
    """The group's ``meta`` rows (cost offset, vector offset, n), int64, one per member in
    the group's order: matrices and answer vectors back to back, nothing padded."""
    ns = np.asarray(group.ns, dtype=np.int64)
    meta = np.zeros((len(ns), 3), dtype=np.int64)
    meta[1:, 0] = np.cumsum(ns * ns)[:-1]
    meta[1:, 1] = np.cumsum(ns)[:-1]
    meta[:, 2] = ns
    return meta


def pack_group(costs: list[np.ndarray], group: Group) -> tuple[np.ndarray, np.ndarray]:
    """The group's matrices back to back, and its ``meta`` rows (:func:`group_meta`)."""
    ns = np.asarray(group.ns, dtype=np.int64)
    meta = group_meta(group)
    for q, k in enumerate(group.members):
        a = costs[k]
        if a.shape != (group.ns[q], group.ns[q]) or a.dtype != group.dtype:
            raise ValueError(f"instance {k}: costs {a.shape} {a.dtype} do not match the plan")
    if len(set(group.ns)) == 1:  # one n: the stack itself, a view of a bulk block
        return stacked([costs[k] for k in group.members]).reshape(-1), meta
    flat = np.empty(int((ns * ns).sum()), dtype=group.dtype)
    for q, k in enumerate(group.members):
        a = costs[k]
        o = int(meta[q, 0])
        flat[o : o + a.size] = a.ravel()
    return flat, meta


def unpack_group(
    group: Group, meta: np.ndarray, r2c: np.ndarray, u: np.ndarray, v: np.ndarray
) -> list[tuple[int, Assignment]]:
    """``(batch index, answer)`` per member from the group's flat answer vectors."""
    out = []
    for q, k in enumerate(group.members):
        o, n = int(meta[q, 1]), int(meta[q, 2])
        out.append(
            (
                k,
                Assignment(
                    r2c[o : o + n].astype(np.int64), u[o : o + n].copy(), v[o : o + n].copy()
                ),
            )
        )
    return out


# ---------------------------------------------------------------------------------------
# The kernel's algorithm in numpy (the test oracle for its logic; see the module docstring)
# ---------------------------------------------------------------------------------------


def sap_reference(costs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Solve one LAP exactly as a block of ``lap_batch_solve`` does.

    Returns ``(row_to_col, u, v, steps, initial)``: the assignment (int64), the duals
    (int64 for integer costs, float64 for float costs), the number of Dijkstra steps and
    the number of rows the greedy start assigned. Each statement below has its twin in
    ``kernels/lap/lap_batch.cu``, in the same order.

    Notes
    -----
    Jonker & Volgenant, "A shortest augmenting path algorithm for dense and sparse linear
    assignment problems", Computing 38 (1987): the column reduction (without the
    reduction transfer and augmenting row reduction). Crouse, "On implementing 2D
    rectangular assignment algorithms", IEEE TAES 52 (2016), Alg. 4 (the Dijkstra search
    of one augmenting path over reduced costs, ties broken towards an unassigned column)
    and Alg. 3 (the dual update and the augmentation).
    """
    c = np.asarray(costs)
    n = c.shape[0]
    dt = dual_dtype(c)
    inf = dt.type(np.iinfo(np.int64).max) if dt.kind == "i" else dt.type(np.inf)
    cd = c.astype(dt)
    # Column reduction: v_j = min_i c_ij at its first row; u = 0.
    v = cd.min(axis=0)
    path = cd.argmin(axis=0).astype(np.int64)
    u = np.zeros(n, dtype=dt)
    row4col = np.full(n, -1, dtype=np.int64)
    col4row = np.full(n, -1, dtype=np.int64)
    for j in range(n):  # greedy, in column order
        i = path[j]
        if col4row[i] == -1:
            col4row[i] = j
            row4col[j] = i
    initial = int((col4row != -1).sum())
    steps = 0
    for cur in range(n):
        if col4row[cur] != -1:
            continue
        sp = np.full(n, inf, dtype=dt)
        sc = np.zeros(n, dtype=bool)
        minv = dt.type(0)
        i, sink, k = cur, -1, 0
        while sink < 0:
            steps += 1
            k += 1
            if k > n:
                raise RuntimeError("an augmentation took more than n Dijkstra steps")
            ui = u[i]
            live = ~sc
            r = minv + cd[i] - ui - v  # ((minv + c) - ui) - v, as the kernel
            better = live & (r < sp)
            sp[better] = r[better]
            path[better] = i
            low = sp[live].min()
            tied = live & (sp == low)
            free = tied & (row4col == -1)
            j = int(np.argmax(free)) if free.any() else int(np.argmax(tied))
            minv = low
            sc[j] = True
            if row4col[j] == -1:
                sink = j
            else:
                i = int(row4col[j])
        u[cur] += minv
        d = minv - sp[sc]
        v[sc] -= d
        rows = row4col[sc]
        held = rows != -1
        u[rows[held]] += d[held]
        j = sink
        for _ in range(n):
            r_ = int(path[j])
            row4col[j] = r_
            nxt = int(col4row[r_])
            col4row[r_] = j
            j = nxt
            if r_ == cur:
                break
        else:
            raise RuntimeError("the augmentation walk did not reach its root row")
    return col4row, u, v, steps, initial


# ---------------------------------------------------------------------------------------
# The solver
# ---------------------------------------------------------------------------------------


class _Batch:
    """Device arrays of one prepared batch (kept across repetitions of the same batch)."""

    def __init__(self, instances: list[CostMatrix], groups: list[Group]):
        self.instances = instances
        self.groups = groups
        self.dev: list[dict[str, Any]] = []
        self.meta_host: list[np.ndarray] = []


class HungarianBatchGPU(BaseSolver):
    """Many small LAPs at once on one GPU: one thread block per instance.

    Parameters
    ----------
    threads_per_block : int
        The CUDA block size, a multiple of 32 in [32, 1024]; 0 (the configured default)
        picks it per instance by :func:`auto_threads` (instances with different picks go
        to different launches).
    smem_cost_bytes : int
        Cost matrices of at most this many bytes are copied to shared memory by their
        block (16384: n = 64 float32 or int32); larger ones are read from global memory.
        0 (the configured default, :data:`SMEM_COST_BYTES`): never. At most 200 KiB.
    threads : int, optional
        Deprecated spelling of ``threads_per_block`` (one release; a ``FutureWarning``).

    Notes
    -----
    Jonker & Volgenant 1987 (column reduction) and Crouse 2016, Alg. 3 and 4 (shortest
    augmenting paths with duals), one instance per block; see :func:`sap_reference` and
    ``kernels/lap/lap_batch.cu``. Counters of a batch: ``batch_size``, ``kernel_launches``
    (one per group), ``host_syncs`` (0: none inside the solve; the answers' copy in
    :meth:`result_batch` is the transfer), ``groups``, and after :meth:`result_batch`
    ``dijkstra_steps`` and ``initial_assignments`` summed over the batch.
    """

    name: ClassVar[str] = "hungarian_batch_gpu"
    problem: ClassVar[str] = "lap"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("lap_batch",)
    batchable: ClassVar[bool] = True
    stackable: ClassVar[bool] = True

    def __init__(
        self,
        *,
        threads_per_block: int = MISSING,
        smem_cost_bytes: int,
        threads: int | None = MISSING,
    ) -> None:
        threads_per_block = renamed("threads", threads, "threads_per_block", threads_per_block)
        super().__init__(
            threads_per_block=block_size(
                f"{self.name}: threads_per_block", threads_per_block, auto=0
            ),
            smem_cost_bytes=integer(
                f"{self.name}: smem_cost_bytes", smem_cost_bytes, 0, SMEM_COST_BYTES_MAX
            ),
        )
        self._batch: _Batch | None = None
        self._timer: Any = None
        self._answers: list[Assignment] | None = None
        self._counters: dict[str, int] = {}

    # -- sizes -----------------------------------------------------------------------

    @staticmethod
    def estimate_bytes(instance: CostMatrix) -> int:
        """Device bytes of one instance in a batch: its costs, its answer (row_to_col
        int32, u and v 8 bytes each), its meta row and stats."""
        n = instance.n
        return int(instance.nbytes + 20 * n + 3 * 8 + 2 * 8)

    @classmethod
    def estimate_batch_bytes(cls, instances: list[CostMatrix]) -> int:
        return int(sum(cls.estimate_bytes(inst) for inst in instances))

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        return batch_skip(instance, self.estimate_bytes)

    # -- life cycle ------------------------------------------------------------------

    def prepare(self, instance: CostMatrix, init: Any | None = None) -> None:
        """A batch of one."""
        self.prepare_batch([instance], None if init is None else [init])

    def result(self) -> Assignment:
        return self.result_batch()[0]

    def prepare_batch(self, instances: list, inits: list | None = None) -> None:
        """Pack and upload the batch (untimed); reuses the upload for the same instances.

        ``inits`` are ignored: the solver starts from its own column reduction, as the
        other GPU LAP solvers start from theirs.
        """
        import cupy as cp

        from matchbench.gpu.common import EventTimer

        instances = list(instances)
        if not instances:
            raise ValueError(f"{self.name}: prepare_batch() got no instances")
        for k, inst in enumerate(instances):
            if not isinstance(inst, CostMatrix):
                raise TypeError(
                    f"{self.name}: instance {k} is a {type(inst).__name__}, not a CostMatrix"
                )
        held = self._batch
        if (
            held is None
            or not isinstance(held.instances, list)
            or len(held.instances) != len(instances)
            or any(a is not b for a, b in zip(held.instances, instances, strict=True))
        ):
            self._batch = None  # let the previous batch's arrays go first
            self._batch = self._build(instances)
        self._timer = EventTimer()
        self._answers = None
        self._counters = {}
        cp.cuda.get_current_stream().synchronize()

    def run(self) -> None:
        import cupy as cp

        b = self._batch
        if b is None:
            raise RuntimeError(f"{self.name}: run() before prepare_batch()")
        # Nothing queued earlier (the uploads) may fall into the timed region.
        cp.cuda.get_current_stream().synchronize()
        with self._timer:
            for g, d in zip(b.groups, b.dev, strict=True):
                launch(g, d)
        self._answers = None
        self._counters = {
            "batch_size": sum(len(g.members) for g in b.groups),
            "kernel_launches": len(b.groups),
            "host_syncs": 0,
            "groups": len(b.groups),
        }

    def result_batch(self) -> list[Assignment]:
        """The answers in input order; raises if a block reported an error."""
        if self._answers is not None:
            return self._answers
        b = self._batch
        if b is None or not self._counters or not isinstance(b.instances, list):
            raise RuntimeError(f"{self.name}: result_batch() before run() on a batch")
        answers: list[Assignment | None] = [None] * len(b.instances)
        steps = initial = 0
        for g, d, meta in zip(b.groups, b.dev, b.meta_host, strict=True):
            stats = d["stats"].get()
            check_stats(g, stats, self.name, [inst.name for inst in b.instances])
            steps += int(stats[:, 0].sum())
            initial += int(stats[:, 2].sum())
            for k, ans in unpack_group(g, meta, d["r2c"].get(), d["u"].get(), d["v"].get()):
                answers[k] = ans
        self._counters["dijkstra_steps"] = steps
        self._counters["initial_assignments"] = initial
        self._answers = answers  # type: ignore[assignment]
        return self._answers

    def timings(self) -> dict[str, float]:
        if self._timer is None or not self._counters:
            return {}
        return {"solve": self._timer.seconds}

    def counters(self) -> dict[str, int]:
        return dict(self._counters)

    # -- a batch as one stack (matchbench.core.stack) ----------------------------------

    def skip_stack(self, stack: Any) -> tuple[bool, str | None]:
        """:meth:`skip` of the stack's first instance, with the memory of all of them."""
        return batch_skip(stack.instance(0), lambda inst: self.estimate_bytes(inst) * int(stack.count))

    def prepare_stack(self, stack: Any) -> None:
        """The launch of a ``(B, n, n)`` stack (untimed): one group planned once for the
        shape, its costs used in place where they are on the GPU (uploaded once
        otherwise), the answer arrays allocated."""
        import cupy as cp

        from matchbench.gpu.common import EventTimer

        costs = stack.data
        if costs.ndim != 3 or costs.shape[1] != costs.shape[2] or costs.shape[0] < 1:
            raise ValueError(f"{self.name}: expected a (B, n, n) stack, got shape {costs.shape}")
        held = self._batch
        if held is None or held.instances is not stack:
            self._batch = None
            g, meta, dev = stack_launch(costs, self.params["threads_per_block"], self.params["smem_cost_bytes"])
            b = _Batch(stack, [g])  # type: ignore[arg-type]
            b.dev.append(dev)
            b.meta_host.append(meta)
            self._batch = b
        self._timer = EventTimer()
        self._answers = None
        self._counters = {}
        cp.cuda.get_current_stream().synchronize()

    def result_stack(self) -> StackAnswer:
        """The answers of the last :meth:`run` on a stack, on the device (``row_to_col``
        ``(B, n)`` int32, duals ``(B, n)``); raises if a block reported an error."""
        b = self._batch
        if b is None or not self._counters or not isinstance(b.instances, InstanceStack):
            raise RuntimeError(f"{self.name}: result_stack() before run() on a stack")
        (g,), (d,) = b.groups, b.dev
        import cupy as cp

        stats = d["stats"]
        # one copy: the steps, the greedy rows and the count of blocks that stopped
        steps, initial, failed = cp.stack(
            [stats[:, 0].sum(), stats[:, 2].sum(), cp.count_nonzero(stats[:, 1])]
        ).get().tolist()
        if failed:
            check_stats(g, stats.get(), self.name)
        self._counters["dijkstra_steps"] = int(steps)
        self._counters["initial_assignments"] = int(initial)
        B, n = len(g.members), g.ns[0]
        return StackAnswer(d["r2c"].reshape(B, n), d["u"].reshape(B, n), d["v"].reshape(B, n), stats)

    # -- building --------------------------------------------------------------------

    def _build(self, instances: list[CostMatrix]) -> _Batch:
        import cupy as cp

        limit = _smem_limit()
        groups = plan_groups(
            [(inst.n, inst.dtype) for inst in instances],
            threads_per_block=self.params["threads_per_block"],
            smem_cost_bytes=self.params["smem_cost_bytes"],
            smem_limit=limit,
            sms=_sm_count(),
        )
        b = _Batch(instances, groups)
        costs: list[np.ndarray] | None = None
        for g in groups:
            # blocks of one GPU stack (a GPU task's bulk-made instances): solved in place
            block = device_block([instances[k] for k in g.members])
            if block is not None and len(set(g.ns)) == 1 and block.dtype == g.dtype:
                b.dev.append(device_launch(g, block.reshape(-1), group_meta(g)))
                b.meta_host.append(group_meta(g))
                continue
            if costs is None:
                costs = [inst.costs for inst in instances]
            flat, meta = pack_group(costs, g)
            b.dev.append(device_launch(g, cp.asarray(flat), meta))
            b.meta_host.append(meta)
        return b


# ---------------------------------------------------------------------------------------
# Launches: shared by the solver (packed host instances) and by stacks already on the
# device (:func:`stack_launch`, :func:`solve_stack_finished`)
# ---------------------------------------------------------------------------------------


def device_launch(group: Group, flat: Any, meta: np.ndarray) -> dict[str, Any]:
    """The kernel, shared memory and device arrays of one group's launch.

    ``flat`` is the group's costs on the device, back to back as ``meta`` (host, int64,
    :func:`group_meta`) says; it is used in place, not copied. The answer arrays are
    allocated here; :func:`launch` queues the kernel.
    """
    import cupy as cp

    from matchbench.gpu.kernels import get_module

    kern = get_module("lap_batch").get_function(group.kernel)
    shared = group.shared_bytes
    if shared > SMEM_DEFAULT_LIMIT:
        kern.max_dynamic_shared_size_bytes = max(
            shared, int(getattr(kern, "max_dynamic_shared_size_bytes", 0) or 0)
        )
    dual = np.dtype(np.int64) if group.dtype.kind == "i" else np.dtype(np.float64)
    total = group.total_n
    return {
        "kern": kern,
        "shared": shared,
        "C": flat,
        "meta": cp.asarray(meta),
        "r2c": cp.empty(total, dtype=np.int32),
        "u": cp.empty(total, dtype=dual),
        "v": cp.empty(total, dtype=dual),
        "stats": cp.zeros((len(group.members), 3), dtype=np.int64),
    }


def launch(group: Group, dev: dict[str, Any]) -> None:
    """Queue the group's kernel on the current stream (no host synchronization)."""
    dev["kern"](
        (len(group.members),),
        (group.threads_per_block,),
        (dev["C"], dev["meta"], dev["r2c"], dev["u"], dev["v"], dev["stats"]),
        shared_mem=dev["shared"],
    )


def check_stats(group: Group, stats: np.ndarray, who: str, names: list[str] | None = None) -> None:
    """Raise ``RuntimeError`` naming the first instance whose block reported an error.

    ``stats`` is the launch's ``(members, 3)`` stats on the host; ``names`` the batch's
    instance names (by batch index), if it has any.
    """
    bad = np.flatnonzero(stats[:, 1])
    if not bad.size:
        return
    q = int(bad[0])
    k = group.members[q]
    code = int(stats[q, 1])
    label = f"{k} ({names[k]}, n = {group.ns[q]})" if names else f"{k} (n = {group.ns[q]})"
    raise RuntimeError(
        f"{who}: the block of instance {label} stopped: "
        f"{KERNEL_ERRORS.get(code, f'error code {code}')} "
        f"({bad.size} instance(s) of {len(group.members)} in its launch failed)"
    )


@dataclass(frozen=True)
class StackAnswer:
    """The answers of a stack's launch (:meth:`HungarianBatchGPU.result_stack`), on the
    device, in input order.

    ``row_to_col`` (B, n) int32, ``u`` and ``v`` (B, n) int64 for integer costs and float64
    for float costs, ``stats`` (B, 3) int64 (Dijkstra steps, error code, greedy rows).
    """

    row_to_col: Any
    u: Any
    v: Any
    stats: Any


@dataclass(frozen=True)
class FinishedAnswer:
    """The answers of :func:`solve_stack_finished`, on the device: ``assignment`` (B, r)
    int64, ``objective`` (B,), ``u`` and ``v`` (B, N) of the solved square problems
    (int64 for integer costs, float64 for float costs), ``stats`` (B, 3) int64. Views of
    one allocation: any of them keeps all alive."""

    assignment: Any
    objective: Any
    u: Any
    v: Any
    stats: Any


#: Byte alignment of the arrays carved from the one allocation of
#: :func:`solve_stack_finished` (CuPy's own allocations are 512-byte aligned).
_CARVE_ALIGN = 256


def solve_stack_finished(costs: Any, work: Any, *, threads_per_block: int = 0) -> FinishedAnswer:
    """One launch on a stack for :func:`matchbench.lap.solve_batch`, finished on the device.

    ``costs`` is the contiguous ``(B, N, N)`` stack to solve (the square, sign-adjusted
    problems); ``work`` the caller's contiguous ``(B, r, s)`` costs with ``r <= N = s``
    (the same array when nothing was padded or negated). One launch of the solver's kernel
    (its block size and cost placement rules), around it three small kernels of
    ``lap_batch.cu``: the meta rows
    made on the device (``lap_batch_stack_meta``), and the int64 assignment of the ``r``
    real rows with each problem's objective summed from ``work`` (``lap_batch_finish_*``,
    a warp per problem). Every array comes from one allocation (one ``cudaMalloc`` where
    CuPy's pool is empty), and the one host synchronization reads a single integer: the
    first problem whose block reported an error, raised as :func:`check_stats` raises it.

    Measured on an H100 (10,000 LAPs of n = 64, int32, kernel alone 0.73 ms;
    ``docs/benchmarks/batch.md``): ``solve_batch`` took 1.65 ms with CuPy's pool warm and
    2.10 ms with it empty when it made the meta rows on the host and finished with CuPy's
    gather, conversions and sum; 0.91 and 1.04 ms through this function.
    """
    import cupy as cp

    from matchbench.gpu.kernels import get_module

    if costs.ndim != 3 or costs.shape[1] != costs.shape[2] or not costs.flags.c_contiguous:
        raise ValueError(f"solve_stack_finished: expected a contiguous (B, n, n) stack, got shape {costs.shape}")
    B, N = int(costs.shape[0]), int(costs.shape[1])
    r, s = int(work.shape[1]), int(work.shape[2])
    if B < 1 or r < 1 or s != N or r > N or int(work.shape[0]) != B or not work.flags.c_contiguous:
        raise ValueError(
            f"solve_stack_finished: costs {tuple(costs.shape)} and work {tuple(work.shape)} do not fit"
        )
    dt = np.dtype(costs.dtype)
    if dt not in DTYPE_SUFFIX or np.dtype(work.dtype) not in DTYPE_SUFFIX:
        raise ValueError(f"solve_stack_finished: cost dtype {dt} (expected one of int32, int64, float32, float64)")
    try:
        group = stack_group(N, B, dt, threads_per_block, SMEM_COST_BYTES)
    except ValueError as exc:  # plan_groups names "instance 0": the stack's shape is at fault
        raise ValueError(f"solve_stack_finished: {str(exc).removeprefix('instance 0: ')}") from None
    tpb = group.threads_per_block
    shared = smem_bytes(N, dt.itemsize, group.smem_costs)
    mod = get_module("lap_batch")
    kern = mod.get_function(group.kernel)
    if shared > SMEM_DEFAULT_LIMIT:
        kern.max_dynamic_shared_size_bytes = max(shared, int(getattr(kern, "max_dynamic_shared_size_bytes", 0) or 0))
    dual = np.dtype(np.int64) if dt.kind == "i" else np.dtype(np.float64)
    wdual = np.dtype(np.int64) if np.dtype(work.dtype).kind == "i" else np.dtype(np.float64)
    parts = [  # (name, shape, dtype), carved in this order
        ("meta", (B, 3), np.dtype(np.int64)),
        ("r2c", (B, N), np.dtype(np.int32)),
        ("u", (B, N), dual),
        ("v", (B, N), dual),
        ("stats", (B, 3), np.dtype(np.int64)),
        ("assignment", (B, r), np.dtype(np.int64)),
        ("objective", (B,), wdual),
        ("first_bad", (1,), np.dtype(np.uint64)),
    ]
    offsets, total = [], 0
    for _name, shape, pdt in parts:
        offsets.append(total)
        total += -(-int(np.prod(shape)) * pdt.itemsize // _CARVE_ALIGN) * _CARVE_ALIGN
    buf = cp.empty(total, dtype=np.uint8)
    a = {
        name: cp.ndarray(shape, dtype=pdt, memptr=buf.data + off)
        for (name, shape, pdt), off in zip(parts, offsets, strict=True)
    }
    grid = min(-(-B // 256), 4096)
    mod.get_function("lap_batch_stack_meta")((grid,), (256,), (a["meta"], np.int64(B), np.int64(N), a["first_bad"]))
    kern((B,), (tpb,), (costs, a["meta"], a["r2c"], a["u"], a["v"], a["stats"]), shared_mem=shared)
    finish = mod.get_function(f"lap_batch_finish_{DTYPE_SUFFIX[np.dtype(work.dtype)]}")
    finish(
        (min(-(-B // 8), 65535),), (256,),
        (work, a["r2c"], a["stats"], np.int64(B), np.int64(r), np.int64(s), np.int64(N),
         a["assignment"], a["objective"], a["first_bad"]),
    )
    if int(a["first_bad"].get()[0]) < B:
        group.members = list(range(B))
        group.ns = [N] * B
        check_stats(group, a["stats"].get(), "solve_batch")
    return FinishedAnswer(a["assignment"], a["objective"], a["u"], a["v"], a["stats"])


def stack_group(n: int, count: int, dtype: Any, threads_per_block: int, smem_cost_bytes: int,
                smem_limit: int | None = None, sms: int | None = None) -> Group:
    """The one group of a stack of ``count`` problems of size ``n``: :func:`plan_groups`'
    rules (dtype, shared-memory limit, cost placement), the block size by
    :func:`small_batch_threads` for the stack's ``count`` where ``threads_per_block`` is 0
    (:func:`plan_groups` sees one shape). ``smem_limit`` and ``sms`` default to this GPU's.
    Its members are left to the caller (a list of ``count`` costs time on a hot path).

    >>> g = stack_group(512, 100, "int32", 0, SMEM_COST_BYTES, smem_limit=232448, sms=132)
    >>> g.threads_per_block, g.smem_costs
    (512, False)
    >>> stack_group(64, 10000, "float32", 0, 16 * 1024, smem_limit=232448, sms=132).smem_costs
    True
    """
    sms = _sm_count() if sms is None else sms
    tpb = threads_per_block or small_batch_threads(n, count, sms) or 0
    (g,) = plan_groups([(n, np.dtype(dtype))], threads_per_block=tpb, smem_cost_bytes=smem_cost_bytes,
                       smem_limit=_smem_limit() if smem_limit is None else smem_limit)
    return g


def stack_launch(costs: Any, threads_per_block: int, smem_cost_bytes: int) -> tuple[Group, np.ndarray, dict[str, Any]]:
    """The one launch of a ``(B, n, n)`` stack on the device: its group, planned once for
    the shape (nothing per problem; ``threads_per_block`` 0: :func:`small_batch_threads`,
    else :func:`auto_threads`), its meta rows and :func:`device_launch`'s arrays, the
    costs used in place (uploaded first where they are on the host)."""
    import cupy as cp

    B, n = int(costs.shape[0]), int(costs.shape[1])
    g = stack_group(n, B, costs.dtype, threads_per_block, smem_cost_bytes)
    # member q is instance q, so meta's offsets are k*n*n and k*n (group_meta's rows)
    g.members = list(range(B))
    g.ns = [n] * B
    k = np.arange(B, dtype=np.int64)
    meta = np.stack([k * (n * n), k * n, np.full(B, n, dtype=np.int64)], axis=1)
    flat = cp.ascontiguousarray(cp.asarray(costs)).reshape(-1)
    return g, meta, device_launch(g, flat, meta)


def batch_skip(instance: Any, estimate: Any) -> tuple[bool, str | None]:
    """``skip`` of a solver of the batched kernel: an instance whose block state exceeds
    the GPU's shared memory, or whose ``estimate(instance)`` bytes exceed its free memory."""
    try:
        from matchbench.gpu.common import free_device_memory

        free = free_device_memory()  # once per batch (free_memory_read_once)
        limit = _smem_limit()
    except Exception as exc:  # no CuPy, no driver or no device
        return True, f"no usable CUDA device: {exc}"
    n = instance.n
    need_smem = smem_bytes(n, instance.dtype.itemsize, False)
    if need_smem > limit:
        return True, (
            f"n = {n} needs {need_smem} bytes of shared memory per block, more than "
            f"the {limit} this GPU gives (n <= {max_n(limit)}); use cu_tree"
        )
    need = estimate(instance)
    if need > free:
        return True, f"needs about {need} bytes of GPU memory, {free} free"
    return False, None


def _sm_count() -> int:
    """The current device's SM count (:func:`small_batch_threads`)."""
    from matchbench.gpu.common import device_attributes

    return int(device_attributes().get("MultiProcessorCount", 0)) or 1


def _smem_limit() -> int:
    """The dynamic shared memory a block of the current device may opt in to."""
    from matchbench.gpu.common import device_attributes

    attrs = device_attributes()
    return int(attrs.get("MaxSharedMemoryPerBlockOptin", SMEM_DEFAULT_LIMIT))
