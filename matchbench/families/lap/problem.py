"""The linear assignment problem (LAP): cost matrices, assignments and the dual certificate.

An instance is a dense n x n cost matrix; an answer is a permutation ``row_to_col`` (row
``i`` is assigned to column ``row_to_col[i]``), optionally with the dual potentials
``u`` (rows) and ``v`` (columns) of the LP

    max sum(u) + sum(v)  s.t.  u_i + v_j <= c_ij  for all i, j,

the dual of the assignment LP (Date & Nagi 2016, Eqs. (1)-(7)). The verifier proves
optimality from duals alone, never by a second solve: a permutation whose cost equals the
objective of a feasible dual solution is optimal (weak duality). When a solver returns no
duals (scipy, lapjv), the verifier derives them from the permutation: the potentials of
the shortest paths in the residual graph of the assignment, which exist exactly when the
assignment is optimal (no negative-cost alternating cycle).

Exactness. Integer costs (int32, int64) are certified in exact int64 arithmetic. Float
costs (float32, float64) are certified in float64 with the absolute tolerance
``atol = FLOAT_RTOL * max(1, max|c|)``: every dual constraint may be violated by at most
``atol``, every assigned pair's slack may be at most ``atol``, and primal and dual
objectives may differ by at most ``n * atol``; a certified float answer is then optimal
to within ``2 * n * atol``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.errors import DatasetError
from matchbench.core.problem import VERIFY_DEVICE, Problem, Verification, save_instance_npz
from matchbench.core.stack import StackVerdicts

#: Cost dtypes solved as given; other real dtypes are converted when that is lossless.
COST_DTYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32), np.dtype(np.float64))
#: Relative tolerance of the float certificate (see the module docstring).
FLOAT_RTOL = 1e-9
#: Relative tolerance under which solvers treat a float slack as zero. Two orders of
#: magnitude under the certificate's, and far above the float64 rounding of the duals.
SOLVER_RTOL = 1e-11
#: The cost of the dummy rows or columns that pad a rectangular matrix to a square one.
PAD_COST = 0
#: Layout version of :meth:`CostMatrix.save_npz` files.
NPZ_VERSION = 1


def _err(name: str, msg: str) -> DatasetError:
    return DatasetError(f"lap instance {name!r}: {msg}")


def is_exact(costs: np.ndarray) -> bool:
    """True for integer costs (certified exactly), False for float costs (tolerance)."""
    return np.dtype(costs.dtype).kind in "iu"


def dual_dtype(costs: np.ndarray) -> np.dtype:
    """int64 duals for integer costs (exact), float64 duals for float costs."""
    return np.dtype(np.int64) if is_exact(costs) else np.dtype(np.float64)


def cost_scale(costs: np.ndarray) -> float:
    """``max(1, max|c|)``: the scale the float tolerances are relative to."""
    if costs.size == 0:
        return 1.0
    return max(1.0, float(np.max(np.abs(costs))))


def certificate_atol(costs: np.ndarray) -> float:
    """The verifier's absolute tolerance: 0 for integer costs, ``FLOAT_RTOL * scale`` else."""
    return 0.0 if is_exact(costs) else FLOAT_RTOL * cost_scale(costs)


def tight_eps(costs: np.ndarray) -> float:
    """The solvers' zero-slack threshold: 0 for integer costs, ``SOLVER_RTOL * scale`` else.

    Float duals drift by rounding, so a slack recomputed as ``c - u - v`` after a dual
    update can come out as a tiny nonzero number where exact arithmetic gives 0; solvers
    treat slacks ``<= tight_eps`` as zero.
    """
    return 0.0 if is_exact(costs) else SOLVER_RTOL * cost_scale(costs)


def validate_costs(
    costs: Any, name: str = "lap", *, pad: bool = False
) -> tuple[np.ndarray, tuple[int, int]]:
    """Check a cost matrix and bring it to one of :data:`COST_DTYPES`, square.

    Returns ``(costs, original_shape)``; ``costs`` is C-contiguous. Rectangular matrices
    are padded with :data:`PAD_COST` dummy rows or columns when ``pad`` is true: an
    optimal assignment of the padded square matrix, restricted to the real rows and
    columns, is an optimal assignment of the rectangular problem (every real row of the
    shorter side is assigned; the dummies absorb the unused columns or rows at one
    constant cost).

    Raises
    ------
    DatasetError
        (a ``ValueError``) naming the instance and the problem, for an empty matrix, a
        matrix that is not 2-D, a non-real dtype (bool, complex, object, strings, dates),
        NaN or infinite costs, a rectangular matrix without ``pad``, or int64 costs too
        large for exact int64 dual arithmetic.
    """
    a = np.asarray(costs)
    if a.ndim != 2:
        raise _err(name, f"cost matrix must be 2-D, got shape {a.shape}")
    if a.size == 0:
        raise _err(name, f"cost matrix is empty (shape {a.shape})")
    kind = a.dtype.kind
    if kind == "b":
        raise _err(name, "cost matrix has dtype bool; costs must be integers or floats")
    if kind not in "iuf":
        raise _err(name, f"cost matrix has dtype {a.dtype}; costs must be real integers or floats")
    if kind == "f":
        if a.dtype.itemsize > 8:
            raise _err(name, f"cost dtype {a.dtype} is wider than float64")
        if a.dtype.itemsize < 4:
            a = a.astype(np.float32)
        bad = ~np.isfinite(a)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise _err(
                name,
                f"cost matrix has non-finite entries ({int(bad.sum())}, first "
                f"c[{i}, {j}] = {a[i, j]})",
            )
        top = float(np.abs(a).max(initial=0.0))
        if not np.isfinite(top * 4.0 * max(a.shape)):
            # an assignment's cost and its duals are sums of up to n of these entries
            raise _err(
                name,
                f"cost magnitudes up to {top!r} over {max(a.shape)} rows overflow float64 "
                "sums (the cost and the duals); scale the costs down",
            )
    elif a.dtype not in COST_DTYPES:
        lo, hi = int(a.min()), int(a.max())
        i32 = np.iinfo(np.int32)
        i64 = np.iinfo(np.int64)
        if i32.min <= lo and hi <= i32.max:
            a = a.astype(np.int32)
        elif i64.min <= lo and hi <= i64.max:
            a = a.astype(np.int64)
        else:
            raise _err(name, f"integer costs in [{lo}, {hi}] do not fit int64")
    shape = (int(a.shape[0]), int(a.shape[1]))
    if shape[0] != shape[1]:
        if not pad:
            raise _err(
                name,
                f"cost matrix is {shape[0]} x {shape[1]}, not square; pass "
                "pad=True to pad it with zero-cost dummy rows or columns",
            )
        n = max(shape)
        sq = np.full((n, n), PAD_COST, dtype=a.dtype)
        sq[: shape[0], : shape[1]] = a
        a = sq
    n = a.shape[0]
    if a.dtype == np.int64:
        # Duals stay within n times the cost range in the Hungarian method; keep every
        # intermediate sum of the certificate inside int64.
        big = int(np.max(np.abs(a)))
        if big > (2**62) // (2 * n + 2):
            raise _err(
                name,
                f"int64 costs up to {big} are too large for exact dual "
                f"arithmetic at n = {n} (limit {(2**62) // (2 * n + 2)})",
            )
    return np.ascontiguousarray(a), shape



@dataclass(eq=False)
class CostMatrix:
    """A dense square LAP instance.

    Attributes
    ----------
    costs : ndarray, shape (n, n)
        int32, int64, float32 or float64, C-contiguous, finite.
    name, family : str
        Instance name (``uniform_n1000_rn_s1``) and dataset family (``lap_uniform``).
    params : dict
        Generator or loader parameters, plain data. A padded instance records its
        original shape as ``params["padded_from"] = [rows, cols]``.

    Construct with :meth:`from_array` to pad rectangular matrices; the constructor checks
    the matrix (see :func:`validate_costs`) and rejects rectangular ones.
    """

    costs: np.ndarray
    name: str = "lap"
    family: str = "custom"
    params: dict[str, Any] = field(default_factory=dict)

    problem: ClassVar[str] = "lap"

    def __post_init__(self) -> None:
        self.costs, _ = validate_costs(self.costs, self.name, pad=False)

    @classmethod
    def from_array(
        cls,
        costs: Any,
        *,
        name: str = "lap",
        family: str = "custom",
        params: dict[str, Any] | None = None,
        pad: bool = False,
    ) -> CostMatrix:
        """Build from any real 2-D array; ``pad=True`` pads a rectangular one (see
        :func:`validate_costs`)."""
        a, shape = validate_costs(costs, name, pad=pad)
        params = dict(params or {})
        if a.shape != shape:
            params["padded_from"] = list(shape)
        return cls(a, name=name, family=family, params=params)

    @property
    def n(self) -> int:
        return int(self.costs.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.costs.nbytes)

    @property
    def dtype(self) -> np.dtype:
        """The costs' dtype."""
        return self.costs.dtype

    @property
    def original_shape(self) -> tuple[int, int]:
        """(rows, cols) before padding."""
        r, c = self.params.get("padded_from", (self.n, self.n))
        return int(r), int(c)

    def real_pairs(self, assignment: Assignment) -> tuple[np.ndarray, np.ndarray]:
        """The assigned (row, col) pairs between real rows and columns (padding dropped)."""
        r, c = self.original_shape
        rows = np.arange(self.n)
        cols = np.asarray(assignment.row_to_col)
        keep = (rows < r) & (cols < c)
        return rows[keep], cols[keep]

    def save_npz(self, file: str | os.PathLike | IO[bytes]) -> None:
        """Write the instance to an uncompressed ``.npz`` file (see :meth:`load_npz`).

        Holds ``costs``, ``name``, ``family``, ``params`` as JSON, and ``kind``
        (``"module:Class"``), which tells a reader that does not know the family which
        class's ``load_npz`` to call. A path is written exactly there (numpy's habit of
        appending ``.npz`` is avoided).
        """
        save_instance_npz(
            self,
            file,
            NPZ_VERSION,
            costs=self.costs,
        )

    @classmethod
    def load_npz(cls, file: str | os.PathLike | IO[bytes]) -> CostMatrix:
        """Read an instance written by :meth:`save_npz`.

        Raises
        ------
        ValueError
            For another layout version or a bad matrix (:class:`DatasetError`, see
            :func:`validate_costs`); reading errors of numpy and zipfile pass through.
        """
        with np.load(file, allow_pickle=False) as z:
            version = int(z["version"])
            if version != NPZ_VERSION:
                raise ValueError(f"CostMatrix npz layout {version}, expected {NPZ_VERSION}")
            costs = z["costs"]
            name, family = str(z["name"][()]), str(z["family"][()])
            params = json.loads(str(z["params"][()]))
        if not isinstance(params, dict):
            raise ValueError(f"{name}: params is not a JSON object")
        return cls(costs, name=name, family=family, params=params)

    def permuted(self, seed: int) -> CostMatrix:
        """The RCP transform: a random row and a random column permutation (same optimum)."""
        rng = np.random.default_rng(seed)
        pr = rng.permutation(self.n)
        pc = rng.permutation(self.n)
        params = dict(self.params, rcp=True, rcp_seed=int(seed))
        return CostMatrix(
            self.costs[pr][:, pc], name=f"{self.name}_rcp", family=self.family, params=params
        )

    def describe(self) -> dict[str, Any]:
        """Instance columns of a result row (of the square, padded problem)."""
        return {
            "instance": self.name,
            "family": self.family,
            "n_rows": self.n,
            "n_cols": self.n,
            "n_edges": self.n * self.n,
        }


class DeviceCostMatrix(CostMatrix):
    """A :class:`CostMatrix` that is block ``index`` of a ``(B, n, n)`` stack on a GPU.

    A GPU task's bulk-made instances are these (:func:`~matchbench.families.lap.datasets.uniform_bulk`
    with ``device="gpu"``): drawn on the device, solved there in place by
    :class:`~matchbench.families.lap.batch_gpu.HungarianBatchGPU` and certified there by
    :meth:`LAP.verify_batch`, so that a batch's matrices never cross the bus. Everything
    else sees a plain :class:`CostMatrix`: ``costs`` is the host copy, made on first use
    (one block's copy), and a pickled instance is a plain :class:`CostMatrix` of it.

    The stack is trusted as :func:`~matchbench.families.lap.datasets._trusted` trusts
    a bulk block: square, C-contiguous, of a cost dtype, valid by construction.
    """

    def __init__(self, stack: Any, index: int, name: str, family: str, params: dict[str, Any]):
        self.stack, self.index = stack, int(index)
        self._host: np.ndarray | None = None
        self.name, self.family, self.params = name, family, params
        # read per instance by the runner and the solver: plain numbers, not device views
        self._n, self._dtype = int(stack.shape[1]), np.dtype(stack.dtype)

    @property  # type: ignore[override]
    def costs(self) -> np.ndarray:
        if self._host is None:
            self._host = self.stack[self.index].get()
        return self._host

    @costs.setter
    def costs(self, value: np.ndarray) -> None:
        self._host = value

    @property
    def n(self) -> int:
        return self._n

    @property
    def nbytes(self) -> int:
        return self._n * self._n * self._dtype.itemsize

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    def __reduce__(self) -> tuple[Any, ...]:
        return (_plain_cost_matrix, (self.costs, self.name, self.family, self.params))


def _plain_cost_matrix(costs: np.ndarray, name: str, family: str, params: dict[str, Any]) -> CostMatrix:
    inst = CostMatrix.__new__(CostMatrix)
    inst.costs, inst.name, inst.family, inst.params = costs, name, family, params
    return inst


def device_block(instances: Sequence[Any]) -> Any | None:
    """The ``(len(instances), n, n)`` device array of ``instances`` where all are
    :class:`DeviceCostMatrix` blocks of one stack: a view where their blocks are
    consecutive, else a gathered copy; None otherwise."""
    if not instances or not all(isinstance(inst, DeviceCostMatrix) for inst in instances):
        return None
    stack = instances[0].stack
    if any(inst.stack is not stack for inst in instances):
        return None
    idx = np.fromiter((inst.index for inst in instances), dtype=np.int64, count=len(instances))
    lo = int(idx[0])
    if np.array_equal(idx, np.arange(lo, lo + idx.size)):
        return stack[lo : lo + idx.size]
    import cupy as cp

    return stack[cp.asarray(idx)]


@dataclass
class AssignmentStack:
    """The answers to a ``(B, n, n)`` stack (a stackable solver's ``result_stack()``):
    ``row_to_col`` ``(B, n)``, and the duals ``u``, ``v`` ``(B, n)`` or None (derived by
    the certificate), NumPy or CuPy."""

    row_to_col: Any
    u: Any = None
    v: Any = None


@dataclass
class Assignment:
    """An answer: ``row_to_col[i]`` is the column of row ``i``; duals when the solver has them.

    ``u`` and ``v`` are int64 for integer costs and float64 for float costs.
    """

    row_to_col: np.ndarray
    u: np.ndarray | None = None
    v: np.ndarray | None = None

    @property
    def col_to_row(self) -> np.ndarray:
        perm = np.asarray(self.row_to_col)
        inv = np.full(perm.shape[0], -1, dtype=np.int64)
        inv[perm] = np.arange(perm.shape[0])
        return inv


# ---------------------------------------------------------------------------------------
# Certificate kernels (numba). Integer instances run in int64, float ones in float64; the
# dtype of the potentials passed in selects the arithmetic.
# ---------------------------------------------------------------------------------------


@njit(cache=True)
def _min_reduced_cost(costs, u, v):
    """``(min_ij c_ij - u_i - v_j, i, j)``: the worst dual constraint, in u's dtype."""
    n = costs.shape[0]
    best = costs[0, 0] - u[0] - v[0]
    bi = 0
    bj = 0
    for i in range(n):
        ui = u[i]
        for j in range(n):
            s = costs[i, j] - ui - v[j]
            if s < best:
                best = s
                bi = i
                bj = j
    return best, bi, bj


@njit(cache=True)
def _residual_potentials(costs, perm, pot, pred, tol):
    """Bellman-Ford on the residual graph of the assignment ``perm``; see :func:`derive_duals`.

    Node ``j`` stands for column ``j`` and the row assigned to it. Row ``i`` (node
    ``perm[i]``) reaches node ``j`` at cost ``c[i, j] - c[inv[j], j]``: row ``i`` takes
    column ``j`` and the row that held ``j`` gives it up. ``pot`` starts at 0 (a virtual
    source joined to every node by a 0-cost arc) and is lowered in rounds; a round only
    relaxes the arcs out of nodes lowered in the previous round (O(n^2) per round).
    Returns -1 when the potentials converge within n rounds, else a node lowered in round
    n + 1, which lies on or leads to a negative cycle of the predecessor graph.
    """
    n = costs.shape[0]
    held = np.empty(n, dtype=pot.dtype)  # c[inv[j], j]: the cost column j carries now
    for i in range(n):
        held[perm[i]] = costs[i, perm[i]]
    changed = np.ones(n, dtype=np.bool_)
    nxt = np.zeros(n, dtype=np.bool_)
    for _round in range(n + 1):
        any_change = False
        for i in range(n):
            src = perm[i]
            if not changed[src]:
                continue
            base = pot[src]
            for j in range(n):
                cand = base + costs[i, j] - held[j]
                if cand < pot[j] - tol:
                    pot[j] = cand
                    pred[j] = i
                    nxt[j] = True
                    any_change = True
        if not any_change:
            return -1
        for j in range(n):
            changed[j] = nxt[j]
            nxt[j] = False
    for j in range(n):
        if changed[j]:
            return j
    return -1


def _negative_cycle(costs: np.ndarray, perm: np.ndarray, pred: np.ndarray, start: int):
    """Rows of a cycle of the predecessor graph reached from node ``start``, and the cost
    change of moving each of its rows to the column it points to (negative: improvement)."""
    n = perm.shape[0]
    node = start
    for _ in range(n):  # n steps from any node land on the cycle
        node = int(perm[pred[node]])
    cycle_cols = [node]
    cur = int(perm[pred[node]])
    while cur != node and len(cycle_cols) <= n:
        cycle_cols.append(cur)
        cur = int(perm[pred[cur]])
    if cur != node:
        return None, None
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)
    delta = 0
    rows = []
    for j in cycle_cols:
        i = int(pred[j])
        rows.append(i)
        delta += costs[i, j].item() - costs[inv[j], j].item()
    return rows[::-1], delta


def derive_duals(
    costs: np.ndarray, perm: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | tuple[None, str]:
    """Duals certifying ``perm``, derived from it alone, or ``(None, reason)``.

    The potentials ``pot`` of shortest paths in the residual graph (see
    :func:`_residual_potentials`) give ``u_i = -pot[perm[i]]`` and
    ``v_j = c[inv[j], j] + pot[j]``: tight on every assigned pair by construction, and
    feasible exactly when no arc can still be relaxed. A negative cycle instead proves
    ``perm`` non-optimal; the reason names its rows and the cost it saves.

    Notes
    -----
    The optimality condition is the classical one for min-cost flow (Ahuja, Magnanti &
    Orlin 1993, Thm. 9.1: a feasible flow is optimal iff its residual network has no
    negative cycle) applied to the assignment as a flow; Date & Nagi 2016, Sec. 2 states
    the complementary-slackness form (8) that the derived duals satisfy.
    """
    n = costs.shape[0]
    dt = dual_dtype(costs)
    pot = np.zeros(n, dtype=dt)
    pred = np.full(n, -1, dtype=np.int64)
    tol = dt.type(certificate_atol(costs) / 2)
    start = _residual_potentials(costs, perm.astype(np.int64), pot, pred, tol)
    if start >= 0:
        rows, delta = _negative_cycle(costs, perm, pred, int(start))
        if rows is None:
            return None, "derived duals did not converge in n rounds of Bellman-Ford"
        shown = rows if len(rows) <= 12 else rows[:12] + ["..."]
        return None, (
            f"not optimal: the residual graph has a negative-cost alternating "
            f"cycle through rows {shown} (length {len(rows)}); moving each of "
            f"them to the next column on it changes the cost by {delta}"
        )
    held = np.empty(n, dtype=dt)
    held[perm] = costs[np.arange(n), perm]
    u = -pot[perm]
    v = held + pot
    return u, v


@njit(cache=True)
def _residual_potentials_many(costs, perms, pots, preds, tols, starts):
    """:func:`_residual_potentials` of each ``costs[b]``, ``perms[b]``: one call for a stack."""
    for b in range(costs.shape[0]):
        starts[b] = _residual_potentials(costs[b], perms[b], pots[b], preds[b], tols[b])


#: Bytes of cost matrices certified together by :meth:`LAP.verify_batch` (one stacked copy).
VERIFY_CHUNK_BYTES = 32 << 20
#: The same for blocks of a device stack (:class:`DeviceCostMatrix`), certified on the
#: GPU: its temporaries take about four times this; each chunk costs some 50 launches and
#: 8 host synchronizations, which chunks of 32 MiB paid per 32 LAPs of n = 512.
DEVICE_VERIFY_CHUNK_BYTES = 512 << 20


def stacked(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """``np.stack(arrays)``, without a copy where the arrays are consecutive blocks of one
    C-contiguous array (the instances of a bulk generator or a ``.npy`` stack are).

    Examples
    --------
    >>> block = np.arange(12).reshape(3, 2, 2)
    >>> stacked([block[1], block[2]]).base is not None
    True
    >>> stacked([block[2], block[1]])[0].tolist()
    [[8, 9], [10, 11]]
    """
    first = arrays[0]
    base = first.base
    while isinstance(base, np.ndarray) and base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    if isinstance(base, np.ndarray) and base.flags.c_contiguous and first.flags.c_contiguous:
        step = first.nbytes
        at = first.__array_interface__["data"][0]
        origin = base.__array_interface__["data"][0]
        end = at + step * len(arrays)
        if origin <= at and end <= origin + base.nbytes and all(
            a.shape == first.shape
            and a.dtype == first.dtype
            and a.flags.c_contiguous
            and a.__array_interface__["data"][0] == at + k * step
            for k, a in enumerate(arrays)
        ):
            return np.ndarray(
                (len(arrays), *first.shape), dtype=first.dtype, buffer=base, offset=at - origin
            )
    return np.stack(arrays)


#: Bytes of a stack from which :meth:`LAP.verify_batch` checks feasibility and slackness
#: on a GPU, where one is usable (its own copy of the costs, uploaded for the check).
GPU_CERTIFY_BYTES = 8 << 20


def _feasible_and_slack(
    costs: np.ndarray, perms: np.ndarray, u: np.ndarray, v: np.ndarray
) -> np.ndarray:
    """Per instance of a stack: are ``u``, ``v`` dual feasible and complementary slack on
    ``perms``? By the family's stack certificate
    (:func:`matchbench.families.lap.bulk.certify_stack`, the one the array API's answers
    are checked with; imported here, as it imports this module). A stack of at least
    :data:`GPU_CERTIFY_BYTES`, certified for a GPU task
    (:data:`~matchbench.core.problem.VERIFY_DEVICE`), is checked on the GPU (the same code
    through CuPy, on a copy of the host arrays: 500 LAPs of n = 512 took 2.5 ms each on
    the host of an H200), and on the host if that fails."""
    from matchbench.families.lap.bulk import certify_stack
    from matchbench.gpu import common

    if costs.nbytes >= GPU_CERTIFY_BYTES and VERIFY_DEVICE.get() == "gpu" and common.gpu_usable():
        try:
            import cupy as cp

            ok, _reasons = certify_stack(cp.asarray(costs), cp.asarray(perms), cp.asarray(u), cp.asarray(v))
            return cp.asnumpy(ok).astype(bool)
        except Exception:  # out of memory, a driver error: the host has the same check
            pass
    ok, _reasons = certify_stack(costs, perms, u, v)
    return np.asarray(ok, dtype=bool)


def _as_perm_and_duals(solution: Any) -> tuple[Any, Any, Any]:
    if isinstance(solution, Assignment):
        return solution.row_to_col, solution.u, solution.v
    return solution, None, None


class LAP(Problem):
    """Linear assignment: minimize the total cost of a perfect assignment.

    Notes
    -----
    Date & Nagi, "GPU-accelerated Hungarian algorithms for the Linear Assignment Problem",
    Parallel Computing 2016, Sec. 2: the primal (1)-(4), the dual (5)-(7) and the
    complementary slackness condition (8) that :meth:`verify` checks.
    """

    name: ClassVar[str] = "lap"
    objective: ClassVar[str] = "cost"
    sense: ClassVar[str] = "min"
    exact: ClassVar[bool] = True

    def verify(self, instance: CostMatrix, solution: Any) -> Verification:
        """Certify ``solution`` (an :class:`Assignment`, or a bare ``row_to_col`` array).

        Checks, in order: ``row_to_col`` is a permutation of ``0..n-1``; the duals (the
        solution's, else derived by :func:`derive_duals`) have the right shape and, for
        integer costs, integer values; ``u_i + v_j <= c_ij`` for every pair; equality on
        every assigned pair; primal cost == ``sum(u) + sum(v)``. Tolerances for float
        costs are in the module docstring. ``objective`` is the cost recomputed from the
        matrix; ``bound`` the dual objective; ``reference`` the bound when verified.
        """
        costs = instance.costs
        n = costs.shape[0]
        if isinstance(solution, Assignment):
            perm, u, v = solution.row_to_col, solution.u, solution.v
        else:
            perm, u, v = solution, None, None
        perm = np.asarray(perm)
        nan = float("nan")
        if perm.shape != (n,):
            return Verification(False, f"row_to_col has shape {perm.shape}, expected ({n},)", nan)
        if perm.dtype.kind not in "iu":
            return Verification(False, f"row_to_col has dtype {perm.dtype}, expected integers", nan)
        perm = perm.astype(np.int64)
        if n and (perm.min() < 0 or perm.max() >= n):
            bad = int(np.flatnonzero((perm < 0) | (perm >= n))[0])
            return Verification(
                False,
                f"not a permutation: row {bad} is assigned to column "
                f"{int(perm[bad])}, outside [0, {n})",
                nan,
            )
        counts = np.bincount(perm, minlength=n)
        if (counts != 1).any():
            j = int(np.flatnonzero(counts > 1)[0])
            rows = np.flatnonzero(perm == j)[:4].tolist()
            return Verification(
                False, f"not a permutation: column {j} is assigned to rows {rows}", nan
            )

        exact = is_exact(costs)
        dt = dual_dtype(costs)
        assigned = costs[np.arange(n), perm]
        primal = (
            int(assigned.sum(dtype=np.int64)) if exact else float(assigned.sum(dtype=np.float64))
        )
        objective = float(primal)
        atol = certificate_atol(costs)

        derived = u is None and v is None
        if derived:
            u, v = derive_duals(costs, perm)
            if u is None:
                return Verification(False, v, objective)
        elif u is None or v is None:
            return Verification(False, "only one of the dual arrays u, v was given", objective)
        u = np.asarray(u)
        v = np.asarray(v)
        if u.shape != (n,) or v.shape != (n,):
            return Verification(
                False, f"duals have shapes {u.shape} and {v.shape}, expected ({n},)", objective
            )
        if exact:
            u, v = _integral(u), _integral(v)
            if u is None or v is None:
                return Verification(
                    False,
                    "integer costs need integer duals (int dtype, or "
                    "integral floats under 2**53) for an exact "
                    "certificate",
                    objective,
                )
        else:
            if u.dtype.kind not in "iuf" or v.dtype.kind not in "iuf":
                return Verification(False, f"duals have dtypes {u.dtype}, {v.dtype}", objective)
            u = u.astype(np.float64)
            v = v.astype(np.float64)
            if not (np.isfinite(u).all() and np.isfinite(v).all()):
                return Verification(False, "duals have non-finite entries", objective)
        source = "derived " if derived else ""

        worst, wi, wj = _min_reduced_cost(costs, u.astype(dt), v.astype(dt))
        if worst < -atol:
            return Verification(
                False,
                f"{source}duals infeasible: u[{wi}] + v[{wj}] = {u[wi] + v[wj]} exceeds "
                f"c[{wi}, {wj}] = {costs[wi, wj]} (by {-worst}; tolerance {atol})",
                objective,
            )
        slack = assigned.astype(dt) - u.astype(dt) - v[perm].astype(dt)
        off = np.abs(slack) > atol
        if off.any():
            i = int(np.flatnonzero(off)[0])
            return Verification(
                False,
                f"complementary slackness fails: assigned pair ({i}, {int(perm[i])}) has "
                f"reduced cost {slack[i]} (tolerance {atol}); the assignment or the duals "
                f"are not optimal",
                objective,
            )
        if exact:
            bound_exact = int(u.sum(dtype=np.int64)) + int(v.sum(dtype=np.int64))
            bound = float(bound_exact)
            if bound_exact != primal:
                return Verification(
                    False, f"primal cost {primal} != dual objective {bound_exact}", objective, bound
                )
        else:
            bound = float(u.sum() + v.sum())
            if abs(bound - primal) > n * atol + 1e-12 * cost_scale(costs) * n:
                return Verification(
                    False,
                    f"primal cost {primal} and dual objective {bound} "
                    f"differ by more than n * atol = {n * atol}",
                    objective,
                    bound,
                )
        return Verification(True, None, objective, bound=bound, reference=bound)

    def warm_up(self) -> None:
        """Load the certificate's numba code (from its cache) for integer and float costs;
        for a GPU worker (:data:`~matchbench.core.problem.VERIFY_DEVICE`) also the CuPy
        kernels of the device certificate (:meth:`_certify_on_device`), which CuPy
        compiles on their first call (about 2 s for a batch's first 2,000 LAPs)."""
        for dtype in (np.int32, np.int64, np.float32, np.float64):
            inst = CostMatrix(np.array([[1, 2], [2, 1]], dtype=dtype), name="warm_up")
            self.verify_batch([inst], [np.array([0, 1])])
        from matchbench.gpu import common

        if VERIFY_DEVICE.get() != "gpu" or not common.gpu_usable():
            return
        import cupy as cp

        for dtype in (np.int32, np.int64, np.float32, np.float64):
            stack = cp.asarray(np.array([[[1, 2], [2, 1]]] * 2, dtype=dtype))
            insts = [DeviceCostMatrix(stack, b, "warm_up", "warm_up", {}) for b in range(2)]
            dual = np.int64 if np.dtype(dtype).kind == "i" else np.float64
            answer = Assignment(np.array([0, 1]), np.array([1, 1], dtype=dual), np.array([0, 0], dtype=dual))
            self.verify_batch(insts, [answer, answer])

    def verify_batch(
        self, instances: Sequence[Any], solutions: Sequence[Any]
    ) -> list[Verification]:
        """Certify many answers at once: the verdicts of :meth:`verify`, vectorized.

        Answers of instances of one shape and dtype are certified together: the
        permutation check, the duals (the answer's, else derived for the whole stack in
        one compiled call of the same Bellman-Ford as :func:`derive_duals`), dual
        feasibility, complementary slackness and the duality gap, in the arithmetic of
        :meth:`verify` (exact int64 for integer costs, float64 with its tolerances for
        float costs). Every answer this rejects, and every answer in a form it does not
        vectorize (integral float duals of integer costs, other types), is certified again
        by :meth:`verify` alone, so that its verdict and reason are exactly those of the
        one-by-one path.

        Notes
        -----
        Date & Nagi 2016, Sec. 2: the dual (5)-(7) and complementary slackness (8), as in
        :meth:`verify`; the derived duals follow Ahuja, Magnanti & Orlin 1993, Thm. 9.1.
        """
        k_all = len(instances)
        if len(solutions) != k_all:
            raise ValueError(f"verify_batch: {k_all} instances but {len(solutions)} answers")
        out: list[Verification | None] = [None] * k_all
        groups: dict[tuple[int, np.dtype, bool, int], list[int]] = {}
        for k, (inst, sol) in enumerate(zip(instances, solutions, strict=True)):
            perm, u, v = _as_perm_and_duals(sol)
            derived = u is None and v is None
            # a GPU block with duals is certified where it lies; one without, on the host
            on_device = isinstance(inst, DeviceCostMatrix) and not derived
            if on_device:
                n, dtype = inst.n, inst.dtype
            else:
                costs = getattr(inst, "costs", None)
                if not isinstance(costs, np.ndarray) or costs.ndim != 2:
                    continue
                if costs.shape[0] != costs.shape[1]:
                    continue
                n, dtype = costs.shape[0], costs.dtype
            if not isinstance(perm, np.ndarray) or perm.shape != (n,):
                continue
            if perm.dtype.kind not in "iu":
                continue
            if not derived:
                if not (isinstance(u, np.ndarray) and isinstance(v, np.ndarray)):
                    continue
                if u.shape != (n,) or v.shape != (n,):
                    continue
                allowed = "i" if dtype.kind in "iu" else "iuf"
                if u.dtype.kind not in allowed or v.dtype.kind not in allowed:
                    continue
            groups.setdefault((n, dtype, derived, id(inst.stack) if on_device else 0), []).append(k)
        for (n, dtype, derived, stack), members in groups.items():
            chunk = DEVICE_VERIFY_CHUNK_BYTES if stack else VERIFY_CHUNK_BYTES
            step = max(1, chunk // max(1, n * n * dtype.itemsize))
            for at in range(0, len(members), step):
                part = members[at : at + step]
                if stack:
                    self._certify_on_device(instances, solutions, part, n, out)
                else:
                    self._certify_stack(instances, solutions, part, n, derived, out)
        for k in range(k_all):
            if out[k] is None:
                out[k] = self.verify(instances[k], solutions[k])
        return out  # type: ignore[return-value]

    def _certify_on_device(
        self, instances: Sequence[Any], solutions: Sequence[Any], part: list[int], n: int,
        out: list[Verification | None],
    ) -> None:
        """:func:`_device_verdicts` of answers with duals to :class:`DeviceCostMatrix`
        blocks of one stack, on its GPU: the costs stay there, the answers go up, only a
        flag and the two objectives per instance come back. Answers it does not certify
        are left to :meth:`verify`."""
        import cupy as cp

        answers = [_as_perm_and_duals(solutions[k]) for k in part]
        costs = device_block([instances[k] for k in part])
        with costs.device:
            perms = cp.asarray(np.stack([a[0] for a in answers]).astype(np.int64))
            u = cp.asarray(np.stack([a[1] for a in answers]))
            v = cp.asarray(np.stack([a[2] for a in answers]))
            good, objective, bound = _device_verdicts(costs, perms, u, v)
        for b in np.flatnonzero(good):
            out[part[b]] = Verification(True, None, float(objective[b]), bound=float(bound[b]),
                                        reference=float(bound[b]))

    def _certify_stack(
        self, instances: Sequence[Any], solutions: Sequence[Any], part: list[int], n: int,
        derived: bool, out: list[Verification | None],
    ) -> None:
        """Certify ``part`` (answers of ``n`` x ``n`` instances of one dtype) together by
        :func:`_host_verdicts`; fill ``out`` for those certified, leaving the others to
        :meth:`verify`."""
        costs = stacked([instances[k].costs for k in part])
        perms = np.stack([np.asarray(_as_perm_and_duals(solutions[k])[0]) for k in part])
        u = v = None
        if not derived:
            duals = [_as_perm_and_duals(solutions[k]) for k in part]
            u = np.stack([np.asarray(d[1]) for d in duals])
            v = np.stack([np.asarray(d[2]) for d in duals])
        good, objective, bound = _host_verdicts(costs, perms, u, v)
        for b in np.flatnonzero(good):
            out[part[b]] = Verification(True, None, float(objective[b]), bound=float(bound[b]),
                                        reference=float(bound[b]))

    stack_certificate: ClassVar[bool] = True

    def verify_stack(self, stack: Any, answers: Any) -> StackVerdicts:
        """Certify the answers to a ``(B, n, n)`` cost stack (:mod:`matchbench.core.stack`).

        ``answers`` has ``row_to_col`` ``(B, n)`` and ``u``, ``v`` (``(B, n)`` duals, or
        None: derived on the host as :meth:`verify` derives them), NumPy or CuPy. A stack
        on the GPU with duals is certified there (:func:`_device_verdicts`), in chunks of
        :data:`DEVICE_VERIFY_CHUNK_BYTES`; otherwise on the host (:func:`_host_verdicts`)
        in chunks of :data:`VERIFY_CHUNK_BYTES`. The same checks in the same arithmetic
        as :meth:`verify_batch`; an answer they reject is judged again by :meth:`verify`
        on ``stack.instance(k)``, for its reason.
        """
        costs, count = stack.data, int(stack.count)
        if costs.ndim != 3 or costs.shape[0] != count or costs.shape[1] != costs.shape[2]:
            raise ValueError(f"verify_stack: expected a ({count}, n, n) stack, got shape {costs.shape}")
        n = int(costs.shape[1])
        perms, u, v = answers.row_to_col, answers.u, answers.v
        out = StackVerdicts.empty(count)
        on_device = not isinstance(costs, np.ndarray)
        if (u is None) != (v is None):
            raise ValueError("verify_stack: give both duals or neither")
        if on_device and u is None:  # derived duals are a host computation
            costs, perms = costs.get(), _host(perms)
            on_device = False
        if not on_device:
            perms = _host(perms)
            u, v = (None, None) if u is None else (_host(u), _host(v))
        allowed = "i" if np.dtype(costs.dtype).kind in "iu" else "iuf"
        duals_ok = u is None or (np.dtype(u.dtype).kind in allowed and np.dtype(v.dtype).kind in allowed)
        if tuple(perms.shape) != (count, n) or np.dtype(perms.dtype).kind not in "iu" or not duals_ok:
            good = np.zeros(count, dtype=bool)  # every verdict from verify, alone
        else:
            itemsize = np.dtype(costs.dtype).itemsize
            step = max(1, (DEVICE_VERIFY_CHUNK_BYTES if on_device else VERIFY_CHUNK_BYTES) // (n * n * itemsize))
            good = np.zeros(count, dtype=bool)
            for at in range(0, count, step):
                sl = slice(at, min(count, at + step))
                if on_device:
                    with costs.device:
                        g, obj, bnd = _device_verdicts(costs[sl], perms[sl].astype(np.int64), u[sl], v[sl])
                else:
                    g, obj, bnd = _host_verdicts(
                        costs[sl], perms[sl], None if u is None else u[sl], None if v is None else v[sl]
                    )
                good[sl] = g
                out.objective[sl], out.bound[sl] = obj, bnd
        out.verified[:] = good
        out.reference[:] = np.where(good, out.bound, np.nan)
        bad = np.flatnonzero(~good)
        if bad.size:
            hp = _host(perms)
            hu, hv = (None, None) if u is None else (_host(u), _host(v))
            for k in bad.tolist():
                answer = Assignment(hp[k]) if hu is None else Assignment(hp[k], hu[k], hv[k])
                out.set(k, self.verify(stack.instance(k), answer))
        return out


def _host(x: Any) -> np.ndarray:
    """``x`` on the host (a CuPy array's copy)."""
    return x if isinstance(x, np.ndarray) else x.get()


#: Largest |dual| the fused certificate of int32 costs takes (no int64 difference overflows).
FUSED_DUAL_LIMIT = 2**61


def _device_verdicts(
    costs: Any, perms: Any, u: Any, v: Any, fused: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(good, objective, bound)`` on the host for answers to a ``(B, n, n)`` CuPy stack,
    certified on its GPU (call inside ``with costs.device``): the checks of
    :func:`~matchbench.families.lap.bulk.certify_stack` (a permutation, dual feasibility,
    complementary slackness), then primal == dual objective (exact int64 for integer
    costs, float64 within ``n * atol`` for float costs). ``perms`` int64, ``u`` and ``v``
    the duals, all ``(B, n)`` CuPy arrays. Only ``good`` rows' numbers count.

    ``fused``: int32 costs with signed integer duals of at most :data:`FUSED_DUAL_LIMIT`
    are checked by :func:`_fused_verdicts` (one pass over the costs, the same checks in
    the same exact arithmetic); everything else by ``certify_stack``."""
    import cupy as cp

    from matchbench.families.lap.bulk import certify_stack

    if fused and costs.dtype == np.int32 and u.dtype.kind == "i" and v.dtype.kind == "i":
        got = _fused_verdicts(costs, perms, u, v)
        if got is not None:
            return got

    b_count, n = int(costs.shape[0]), int(costs.shape[1])
    good, _reasons = certify_stack(costs, perms, u, v)
    rows = cp.arange(n)
    safe = cp.where((perms >= 0) & (perms < n), perms, rows[None, :])
    assigned = cp.take_along_axis(costs, safe[:, :, None], axis=2)[:, :, 0]
    if costs.dtype.kind in "iu":
        primal = assigned.sum(axis=1, dtype=np.int64)
        bound = u.astype(np.int64).sum(axis=1) + v.astype(np.int64).sum(axis=1)
        good &= primal == bound
    else:
        primal = assigned.astype(np.float64).sum(axis=1)
        bound = u.astype(np.float64).sum(axis=1) + v.astype(np.float64).sum(axis=1)
        scale = cp.maximum(1.0, cp.abs(costs).reshape(b_count, -1).max(axis=1).astype(np.float64))
        good &= cp.abs(bound - primal) <= n * FLOAT_RTOL * scale + 1e-12 * scale * n
    return good.get(), primal.get().astype(np.float64), bound.get().astype(np.float64)


def _fused_verdicts(costs: Any, perms: Any, u: Any, v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_device_verdicts` of int32 costs: dual feasibility of every cell in one pass
    (``kernels/lap/lap_certify.cu``), the permutation, slack on the assigned cells and the
    objectives on ``(B, n)`` arrays, all exact in int64. None where a dual exceeds
    :data:`FUSED_DUAL_LIMIT` (``certify_stack`` then judges, and words the reason)."""
    import cupy as cp

    from matchbench.gpu.kernels import get_module

    B, n = int(costs.shape[0]), int(costs.shape[1])
    u64, v64 = u.astype(cp.int64), v.astype(cp.int64)
    if bool((cp.abs(u64).max() > FUSED_DUAL_LIMIT) | (cp.abs(v64).max() > FUSED_DUAL_LIMIT)):
        return None
    a = perms.astype(cp.int64)
    rows = cp.arange(n, dtype=cp.int64)
    inside = ((a >= 0) & (a < n)).all(axis=1)
    safe = cp.where(inside[:, None], a, rows[None, :])
    good = inside & (cp.sort(safe, axis=1) == rows[None, :]).all(axis=1)
    assigned = cp.take_along_axis(costs, safe[:, :, None], axis=2)[:, :, 0].astype(cp.int64)
    good &= (assigned - u64 - cp.take_along_axis(v64, safe, axis=1) == 0).all(axis=1)  # slackness (8)
    bad = cp.zeros(B, dtype=cp.int32)
    threads = min(256, max(32, -(-n // 32) * 32))
    kern = get_module("lap_certify").get_function("lap_certify_dual_feasible_i32")
    C = cp.ascontiguousarray(costs)
    kern((B, -(-n // LAP_CERTIFY_ROWS)), (threads,),
         (C, cp.ascontiguousarray(u64), cp.ascontiguousarray(v64), np.int64(B), np.int64(n), bad))
    good &= bad == 0
    primal = assigned.sum(axis=1)
    bound = u64.sum(axis=1) + v64.sum(axis=1)
    good &= primal == bound
    return good.get(), primal.get().astype(np.float64), bound.get().astype(np.float64)


#: Rows per block of ``lap_certify_dual_feasible_i32`` (``LAP_CERTIFY_ROWS`` of the kernel).
LAP_CERTIFY_ROWS = 8


def _host_verdicts(
    costs: np.ndarray, perms: np.ndarray, u: np.ndarray | None, v: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(good, objective, bound)`` for answers to a ``(B, n, n)`` host stack: the checks
    of :meth:`LAP.verify` vectorized (a permutation; the duals given, or with ``u`` and
    ``v`` None derived for the whole stack by one compiled Bellman-Ford, as
    :func:`derive_duals`; dual feasibility, complementary slackness, the duality gap) in
    its arithmetic (exact int64 for integer costs, float64 with its tolerances for float
    costs). Only ``good`` rows' numbers count."""
    b_count, n = int(costs.shape[0]), int(costs.shape[1])
    perms = np.asarray(perms).astype(np.int64)
    exact = is_exact(costs)
    dt = dual_dtype(costs)
    rows = np.arange(n)
    inside = ((perms >= 0) & (perms < n)).all(axis=1)
    perms_safe = np.where(inside[:, None], perms, rows[None, :])
    good = inside & (np.sort(perms_safe, axis=1) == rows[None, :]).all(axis=1)
    assigned = np.take_along_axis(costs, perms_safe[:, :, None], axis=2)[:, :, 0]
    if exact:
        scale = np.zeros(b_count)
        atol = np.zeros(b_count)
    else:
        top = np.abs(costs).reshape(b_count, -1).max(axis=1).astype(np.float64)
        scale = np.maximum(1.0, top)
        atol = FLOAT_RTOL * scale
    if u is None or v is None:
        pots = np.zeros((b_count, n), dtype=dt)
        preds = np.full((b_count, n), -1, dtype=np.int64)
        starts = np.full(b_count, -1, dtype=np.int64)
        tols = (atol / 2).astype(dt)
        _residual_potentials_many(costs, perms_safe, pots, preds, tols, starts)
        good &= starts < 0
        held = np.zeros((b_count, n), dtype=dt)
        np.put_along_axis(held, perms_safe, assigned.astype(dt), axis=1)
        u = -np.take_along_axis(pots, perms_safe, axis=1)
        v = held + pots
    else:
        u = np.asarray(u).astype(dt)
        v = np.asarray(v).astype(dt)
        if not exact:
            good &= np.isfinite(u).all(axis=1) & np.isfinite(v).all(axis=1)
            u = np.where(good[:, None], u, 0.0)
            v = np.where(good[:, None], v, 0.0)
    good &= _feasible_and_slack(costs, perms_safe, u, v)
    if exact:
        primal = assigned.sum(axis=1, dtype=np.int64)
        bound = u.sum(axis=1, dtype=np.int64) + v.sum(axis=1, dtype=np.int64)
        good &= primal == bound
        return good, primal.astype(np.float64), bound.astype(np.float64)
    objective = assigned.sum(axis=1, dtype=np.float64)
    gap = u.sum(axis=1) + v.sum(axis=1)
    good &= np.abs(gap - objective) <= n * atol + 1e-12 * scale * n
    return good, objective, gap.astype(np.float64)


def _integral(a: np.ndarray) -> np.ndarray | None:
    """``a`` as int64 when it holds integers exactly, else None."""
    if a.dtype.kind in "iu":
        if a.dtype == np.uint64 and a.size and a.max() > np.iinfo(np.int64).max:
            return None
        return a.astype(np.int64)
    if a.dtype.kind == "f":
        if not np.isfinite(a).all() or (np.abs(a) >= 2.0**53).any() or (a != np.round(a)).any():
            return None
        return a.astype(np.int64)
    return None
