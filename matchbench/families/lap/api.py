"""Many small assignment problems from arrays: :func:`solve_batch` (``matchbench.lap``).

The runner feeds :class:`~matchbench.families.lap.batch_gpu.HungarianBatchGPU` a list of
:class:`~matchbench.families.lap.problem.CostMatrix` objects; an application holds its
problems as one array instead (a ``(B, n, m)`` stack of cost matrices made on the GPU by
the previous step of a training loop, or one per frame of a tracker) and wants the answers
as arrays on the same device. :func:`solve_batch` solves such a stack with the same kernel
and launch (:func:`~matchbench.families.lap.batch_gpu.solve_stack_finished`: the stack is
the launch's cost array, one thread block per problem; the assignment and objectives are
finished on the device), or, for NumPy input where no GPU is
usable, with SciPy and the LAP verifier's dual derivation. Every answer carries its duals,
so :func:`~matchbench.families.lap.bulk.certify_stack` certifies it (``verify=True``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from matchbench.core.errors import AnswerError
from matchbench.core.params import block_size
from matchbench.families.lap.bulk import certify_stack
from matchbench.families.lap.problem import COST_DTYPES, PAD_COST, derive_duals

__all__ = ["BatchAssignment", "solve_batch"]

_WHO = "solve_batch"


@dataclass(frozen=True)
class BatchAssignment:
    """The answers of :func:`solve_batch`, on the input's device (NumPy or CuPy arrays).

    For a ``(B, n, m)`` input (without the leading B for an ``(n, m)`` one):

    Attributes
    ----------
    assignment : int64, shape (B, n)
        The column of each row; -1 for the ``n - m`` unassigned rows when ``n > m``.
    objective : shape (B,)
        The total cost of each assignment (int64 for integer costs, exact; float64 else).
    u, v : shapes (B, n) and (B, m)
        Row and column duals certifying optimality (int64 for integer costs, float64
        else): ``u_i + v_j <= c_ij`` (``>=`` with ``maximize``), equality on assigned
        cells, zero on the unassigned lines of the longer side and of the sign that
        makes ``sum(u) + sum(v) == objective`` a bound (see
        :mod:`matchbench.families.lap.bulk`).
    """

    assignment: Any
    objective: Any
    u: Any
    v: Any


def solve_batch(
    costs: Any,
    *,
    maximize: bool = False,
    verify: bool = False,
    threads_per_block: int | None = None,
) -> BatchAssignment:
    """Solve a stack of linear assignment problems at once, on the stack's device.

    For many small assignment problems per step: matching predictions to targets in each
    image of a training batch (the Hungarian matching of DETR-style losses), or tracks to
    detections in each camera of a multi-object tracker. A CuPy stack is solved on its
    GPU in one kernel launch, one thread block per problem, and the answers stay there.

    Parameters
    ----------
    costs : array, shape (B, n, m) or (n, m)
        A NumPy array, a CuPy array, or any object with ``__dlpack__`` (a PyTorch or JAX
        tensor: read without a copy by ``cupy.from_dlpack`` on a GPU, ``numpy.from_dlpack``
        on the host); nested sequences are read by ``numpy.asarray``. dtype int32, int64,
        float32 or float64. Rectangular problems assign every row of the shorter side:
        ``n < m`` is padded with dummy rows of cost
        :data:`~matchbench.families.lap.problem.PAD_COST`, as
        :meth:`CostMatrix.from_array(pad=True) <matchbench.families.lap.problem.CostMatrix.from_array>`
        does, and ``n > m`` is solved transposed.
    maximize : bool
        Maximize the total instead of minimizing it.
    verify : bool
        Certify every answer with :func:`~matchbench.families.lap.bulk.certify_stack`
        (on the device; only per-problem flags come back) and raise if one fails.
    threads_per_block : int, optional
        The CUDA block size, a multiple of 32 in [32, 1024]; None (or 0) picks it from n
        (:func:`~matchbench.families.lap.batch_gpu.auto_threads`).

    Returns
    -------
    BatchAssignment
        ``assignment``, ``objective``, ``u``, ``v`` as NumPy arrays for NumPy (or host
        DLPack) input and CuPy arrays on the input's GPU for CuPy (or GPU DLPack) input;
        without the batch axis for an ``(n, m)`` input.

    Raises
    ------
    TypeError
        For a dtype other than int32, int64, float32, float64 (naming it), or an input
        that is no array.
    ValueError
        For an input that is not 2-D or 3-D, NaN or infinite costs, or magnitudes whose
        sums overflow (naming the problem's index and the cell), or a block size that is
        not a multiple of 32 in [32, 1024].
    matchbench.core.errors.AnswerError
        With ``verify``, naming the first problem whose answer is not certified and why.

    Examples
    --------
    >>> import numpy as np
    >>> from matchbench.lap import solve_batch
    >>> costs = np.array([[[4, 1, 3], [2, 0, 5], [3, 2, 2]],
    ...                   [[1, 2, 3], [3, 1, 2], [2, 3, 1]]], dtype=np.int32)
    >>> res = solve_batch(costs, verify=True)
    >>> res.assignment.tolist(), res.objective.tolist()
    ([[1, 0, 2], [0, 1, 2]], [5, 3])
    >>> solve_batch(np.array([[0.5, 2.0, 1.0]]), maximize=True).assignment.tolist()
    [1]

    With CuPy (or a GPU tensor) the same call solves on the GPU and answers with CuPy
    arrays: ``solve_batch(cupy.asarray(costs)).assignment.device``.

    Notes
    -----
    Each block runs the shortest augmenting path method (Jonker & Volgenant 1987; Crouse,
    "On implementing 2D rectangular assignment algorithms", IEEE TAES 52, 2016, Alg. 3
    and 4) after JV's column reduction; see :mod:`matchbench.families.lap.batch_gpu`. The
    duals of a padded square problem become those of the rectangular LP by one shift per
    problem (the dummy rows' common dual), the form
    :func:`~matchbench.families.lap.bulk.certify_stack` checks.
    """
    tpb = block_size(
        f"{_WHO}: threads_per_block", 0 if threads_per_block is None else threads_per_block, auto=0
    )
    xp, arr = _as_array(costs)
    if arr.dtype not in COST_DTYPES:
        raise TypeError(
            f"{_WHO}: costs have dtype {arr.dtype}; expected int32, int64, float32 or float64"
        )
    if arr.ndim not in (2, 3):
        raise ValueError(f"{_WHO}: costs must be (B, n, m) or (n, m), got shape {tuple(arr.shape)}")
    single = arr.ndim == 2
    stack = arr[None] if single else arr
    # every array made and every kernel launched on the input's GPU, not the current one
    with contextlib.nullcontext() if xp is np else arr.device:
        stack = xp.ascontiguousarray(stack)  # the kernels read (B, n, m) back to back; a copy only if strided
        _check_values(xp, stack)
        out = _solve(xp, stack, bool(maximize), tpb)
        if verify and out.assignment.shape[0]:
            ok, reasons = certify_stack(
                stack, out.assignment, out.u, out.v, maximize=bool(maximize)
            )
        else:
            ok, reasons = None, []
    if ok is not None:
        bad = np.flatnonzero(~_host(ok))
        if bad.size:
            k = int(bad[0])
            raise AnswerError(
                f"{_WHO}: the answer to problem {k} is not certified: {reasons[k]} "
                f"({bad.size} of {len(reasons)} problems failed)"
            )
    if single:
        out = BatchAssignment(out.assignment[0], out.objective[0], out.u[0], out.v[0])
    return out


# ---------------------------------------------------------------------------------------


def _host(x: Any) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else (x.get() if hasattr(x, "get") else np.asarray(x))


def _as_array(x: Any) -> tuple[Any, Any]:
    """``(array module, array)``: NumPy and CuPy arrays as they are, DLPack by device."""
    if isinstance(x, np.ndarray):
        return np, x
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy, x
    if hasattr(x, "__dlpack__"):
        device = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else 1
        if int(device) in (1, 3):  # kDLCPU, kDLCUDAHost: host memory
            return np, np.from_dlpack(x)
        import cupy

        return cupy, cupy.from_dlpack(x)
    if isinstance(x, list | tuple):
        return np, np.asarray(x)
    raise TypeError(
        f"{_WHO}: costs is a {type(x).__name__}; expected a NumPy or CuPy array, an object "
        "with __dlpack__, or a nested sequence"
    )


def _check_values(xp: Any, c: Any) -> None:
    """The LAP validator's rules (:func:`~matchbench.families.lap.problem.validate_costs`)
    over a stack, naming the first problem that breaks one."""
    B, n, m = (int(s) for s in c.shape)
    if B == 0 or n == 0 or m == 0:
        return
    size = max(n, m)  # the padded square problem's n
    if c.dtype.kind == "f":
        top = _abs_max(xp, c)
        if not np.isfinite(top).all():
            k = int(np.flatnonzero(~np.isfinite(top))[0])
            bad = ~xp.isfinite(c[k])
            e = int(_host(xp.argmax(bad.ravel())))
            i, j = divmod(e, m)
            raise ValueError(
                f"{_WHO}: problem {k}: cost c[{i}, {j}] = {float(_host(c[k, i, j]))} is not "
                f"finite ({int(_host(bad.sum()))} such entries)"
            )
        with np.errstate(over="ignore"):
            over = ~np.isfinite(top * 4.0 * size)
        if over.any():
            k = int(np.flatnonzero(over)[0])
            raise ValueError(
                f"{_WHO}: problem {k}: cost magnitudes up to {float(top[k])!r} over {size} rows "
                "overflow float64 sums (the cost and the duals); scale the costs down"
            )
    elif c.dtype == np.int64:
        lim = (2**62) // (2 * size + 2)
        hi = _host(c.reshape(B, -1).max(axis=1))
        lo = _host(c.reshape(B, -1).min(axis=1))
        over = (hi > lim) | (lo < -lim)
        if over.any():
            k = int(np.flatnonzero(over)[0])
            big = max(int(hi[k]), -int(lo[k]))
            raise ValueError(
                f"{_WHO}: problem {k}: int64 costs up to {big} are too large for exact "
                f"dual arithmetic at n = {size} (limit {lim})"
            )


def _abs_max(xp: Any, c: Any) -> np.ndarray:
    """Each problem's largest ``|cost|`` (float64, on the host), ``inf`` where one is NaN or
    infinite. On the GPU one read of the stack (``lap_batch_absmax_*``, a block per
    problem), not the whole-stack temporaries of ``isfinite`` and ``abs``."""
    B = int(c.shape[0])
    if xp is np:  # a NaN or an infinity is each maximum it enters
        top = np.abs(c.reshape(B, -1)).max(axis=1).astype(np.float64)
        return np.where(np.isfinite(top), top, np.inf)
    from matchbench.families.lap.batch_gpu import DTYPE_SUFFIX
    from matchbench.gpu.kernels import get_module

    cc = xp.ascontiguousarray(c)
    top = xp.empty(B, dtype=np.float64)
    kern = get_module("lap_batch").get_function(f"lap_batch_absmax_{DTYPE_SUFFIX[np.dtype(c.dtype)]}")
    kern((B,), (256,), (cc, np.int64(cc[0].size), top))
    return top.get()


def _gpu_usable() -> bool:
    from matchbench.gpu.common import gpu_usable

    return gpu_usable()


def _solve(xp: Any, c: Any, maximize: bool, tpb: int) -> BatchAssignment:
    """Solve the (B, n, m) stack ``c`` on its device (module docstring)."""
    B, n, m = (int(s) for s in c.shape)
    wide = n > m
    work = c.transpose(0, 2, 1) if wide else c  # (B, r, s), r <= s
    r, s = (m, n) if wide else (n, m)
    dual = np.dtype(np.int64) if c.dtype.kind == "i" else np.dtype(np.float64)
    if B == 0 or r == 0:
        a = xp.zeros((B, r), dtype=np.int64)
        u = xp.zeros((B, r), dtype=dual)
        v = xp.zeros((B, s), dtype=dual)
        objective = xp.zeros(B, dtype=dual)
    else:
        work = xp.ascontiguousarray(work)  # a copy only for a transposed or strided input
        signed = work
        if maximize:
            if signed.dtype == np.int32 and bool(_host((signed == np.iinfo(np.int32).min).any())):
                signed = signed.astype(np.int64)  # -int32 min is no int32
            signed = -signed
        if r < s:
            sq = xp.full((B, s, s), PAD_COST, dtype=signed.dtype)
            sq[:, :r, :] = signed
        else:
            sq = signed
        if xp is np:
            sq_a, sq_u, sq_v = _solve_host(sq, tpb)
            a = sq_a[:, :r]
            # the objective, from the caller's costs in the working orientation
            objective = np.take_along_axis(work, a[:, :, None], axis=2)[:, :, 0].astype(dual).sum(axis=1)
        else:
            a, objective, sq_u, sq_v = _solve_device(sq, work, tpb)
        u, v = _rectangular_duals(xp, sq_u, sq_v, r)
        if maximize:
            u, v = -u, -v
    if wide:  # back to the caller's orientation: rows at most once, columns exactly once
        row_to_col = xp.full((B, n), -1, dtype=np.int64)
        if r and B:
            offs = (xp.arange(B, dtype=np.int64) * n)[:, None]
            flat = row_to_col.reshape(-1)
            flat[(a + offs).reshape(-1)] = xp.broadcast_to(
                xp.arange(m, dtype=np.int64), (B, m)
            ).reshape(-1)
        a, u, v = row_to_col, v, u
    return BatchAssignment(a, objective, u, v)


def _solve_device(sq: Any, work: Any, tpb: int) -> tuple[Any, Any, Any, Any]:
    """Square (B, N, N) CuPy stack ``sq`` -> the assignment of ``work``'s r rows (int64),
    the objectives summed from ``work`` (the caller's (B, r, N) costs, contiguous), and
    the square problems' u, v: one launch and one host synchronization
    (:func:`~matchbench.families.lap.batch_gpu.solve_stack_finished`)."""
    from matchbench.families.lap.batch_gpu import solve_stack_finished

    ans = solve_stack_finished(sq, work, threads_per_block=tpb)
    return ans.assignment, ans.objective, ans.u, ans.v


def _solve_host(sq: np.ndarray, tpb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Square (B, N, N) NumPy stack -> assignment, u, v (NumPy).

    On a usable GPU whose shared memory holds the problem size: uploaded and solved by
    the kernel. Else one by one with SciPy, the duals derived from each assignment by the
    LAP verifier's :func:`~matchbench.families.lap.problem.derive_duals`.
    """
    B, N = int(sq.shape[0]), int(sq.shape[1])
    if _gpu_usable():
        import cupy

        from matchbench.families.lap import batch_gpu as LB

        if LB.smem_bytes(N, sq.dtype.itemsize, False) <= LB._smem_limit():
            dev = cupy.asarray(sq)
            a, _objective, u, v = _solve_device(dev, dev, tpb)
            return a.get(), u.get(), v.get()
    from scipy.optimize import linear_sum_assignment

    dual = np.int64 if sq.dtype.kind == "i" else np.float64
    a = np.empty((B, N), dtype=np.int64)
    u = np.empty((B, N), dtype=dual)
    v = np.empty((B, N), dtype=dual)
    for k in range(B):
        _rows, cols = linear_sum_assignment(sq[k])
        uk, vk = derive_duals(sq[k], cols)
        if uk is None:
            # SciPy solves in float64: int64 costs beyond 2**53 / n can round it off the
            # optimum. The kernel's algorithm in exact numpy arithmetic then.
            from matchbench.families.lap.batch_gpu import sap_reference

            cols, uk, vk, _steps, _init = sap_reference(sq[k])
        a[k], u[k], v[k] = cols, uk, vk
    return a, u, v


def _rectangular_duals(xp: Any, u: Any, v: Any, r: int) -> tuple[Any, Any]:
    """The duals of the ``r x N`` problem from those of its padded square one.

    Rows ``r..N-1`` are dummies of equal cost; in an optimal square dual solution they all
    carry the same dual ``U`` (each is tight on its own column and feasible on the
    others'), and ``v_j <= -U`` on every column with equality on the dummies' columns.
    Shifting ``u -= U``, ``v += U`` keeps every ``u_i + v_j`` and gives the rectangular
    LP's ``v <= 0``, zero on unassigned columns (exactly for integer costs; for float
    costs within rounding, clipped at 0 from above, which keeps feasibility).
    """
    N = int(u.shape[1])
    if r == N:
        return u, v
    shift = u[:, r:].max(axis=1)[:, None]
    return u[:, :r] - shift, xp.minimum(v + shift, 0)
