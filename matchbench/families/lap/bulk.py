"""A LAP certificate for whole stacks of answers, on the arrays' own device.

:func:`certify_stack` checks B answers of B assignment problems at once, vectorized over the
stack with the array module of its inputs (NumPy, or CuPy without copying the stack to the
host; only per-instance flags and indices come back). It reads no solver's code or state:
an answer is certified by its duals alone (weak duality), as
:meth:`matchbench.families.lap.problem.LAP.verify` certifies one square answer. Where that
verifier derives duals for solvers that give none, this one needs them:
:func:`matchbench.families.lap.api.solve_batch` always returns them.

The LP. For an ``n x m`` cost matrix with ``n <= m`` every row is assigned, each column at
most once:

    min sum c_ij x_ij  s.t.  sum_j x_ij = 1 (rows),  sum_i x_ij <= 1 (columns),  x >= 0;
    dual: max sum u_i + sum v_j  s.t.  u_i + v_j <= c_ij,  v_j <= 0.

An assignment is optimal exactly when some ``(u, v)`` is dual feasible and complementary
slack: ``u_i + v_j = c_ij`` on assigned cells and ``v_j = 0`` on unassigned columns. For
``n == m`` the sign of ``v`` is free (every column is assigned). For ``n > m`` the roles
swap: every column is assigned, ``assignment`` holds -1 for the unassigned rows, and
``u_i <= 0`` with ``u_i = 0`` on the unassigned rows. With ``maximize`` the answer is
certified as a minimization of ``-c`` with duals ``(-u, -v)``: the caller's duals satisfy
``u_i + v_j >= c_ij`` (``v >= 0`` where rectangular), so that ``sum(u) + sum(v)`` is the
maximum, as for a minimization it is the minimum.

Exactness and tolerance: those of the per-instance verifier
(:mod:`matchbench.families.lap.problem`): integer costs are certified exactly in int64
(duals must be integers: an integer dtype, or integral floats under 2**53); float costs in
float64 with ``atol = FLOAT_RTOL * max(1, max|c|)`` per instance
(:func:`~matchbench.families.lap.problem.certificate_atol`), every condition allowed to
miss by ``atol``. Primal and dual objectives then agree (exactly, or within ``n * atol``),
which is why that check needs no separate line here.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from matchbench.families.lap.problem import FLOAT_RTOL

#: Largest |cost| or |dual| certified in int64: every sum the certificate forms
#: (``c - u - v``) then stays inside int64, so no wrapped sum can pass a check.
INT_LIMIT = 2**61
#: Largest |dual| accepted as an integer when given as floats (exact in float64).
FLOAT_INT_LIMIT = 2.0**53


def array_module(*arrays: Any) -> Any:
    """``cupy`` when any of ``arrays`` is a CuPy array, else ``numpy`` (CuPy not needed)."""
    if any(type(a).__module__.split(".")[0] == "cupy" for a in arrays):
        import cupy

        return cupy
    return np


def _host(x: Any) -> np.ndarray:
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def certify_stack(
    costs: Any, assignment: Any, u: Any, v: Any, *, maximize: bool = False
) -> tuple[Any, list[str | None]]:
    """Certify B LAP answers at once: ``(ok, reasons)``.

    Parameters
    ----------
    costs : array, shape (B, n, m)
        int32, int64 (or other integer), float32 or float64 costs; NumPy or CuPy. The
        checks run on its device.
    assignment : array of int, shape (B, n)
        The column of each row. For ``n > m``, -1 marks the ``n - m`` unassigned rows.
    u, v : arrays, shapes (B, n) and (B, m)
        Row and column duals (module docstring: their LP, signs and ``maximize``).
    maximize : bool
        Certify a maximum instead of a minimum.

    Returns
    -------
    ok : bool array, shape (B,)
        On the input's device.
    reasons : list of (str or None)
        Per instance: None where ok, else the first failed condition with its row or
        column, in this order: non-finite or non-integral (for integer costs) costs and
        duals; the assignment in range and injective (and, for ``n > m``, covering every
        column); dual feasibility ``u_i + v_j <= c_ij``; complementary slackness on
        assigned cells; for rectangular problems the sign of the shorter side's opposite
        duals and their zero on unassigned lines.

    Raises
    ------
    ValueError
        For shapes that do not fit together.
    TypeError
        For non-real costs or duals, or a non-integer assignment.

    Examples
    --------
    >>> import numpy as np
    >>> c = np.array([[[4, 1], [2, 3]]])
    >>> ok, why = certify_stack(c, np.array([[1, 0]]), np.array([[1, 2]]), np.array([[0, 0]]))
    >>> bool(ok[0]), why
    (True, [None])
    >>> ok, why = certify_stack(c, np.array([[0, 1]]), np.array([[4, 3]]), np.array([[0, 0]]))
    >>> why[0]
    'dual infeasible: u[0] + v[1] = 4 > c[0, 1] = 1 (by 3, tolerance 0)'

    Notes
    -----
    Date & Nagi 2016, Sec. 2: the dual (5)-(7) and complementary slackness (8) of the
    assignment LP; the rectangular form is the transportation LP with unit supplies
    (Burkard, Dell'Amico & Martello, *Assignment Problems*, 2009, Sec. 5.4.4).
    """
    xp = array_module(costs, assignment, u, v)
    c = xp.asarray(costs)
    a = xp.asarray(assignment)
    u = xp.asarray(u)
    v = xp.asarray(v)
    if c.ndim != 3:
        raise ValueError(f"certify_stack: costs must be (B, n, m), got shape {c.shape}")
    B, n, m = (int(s) for s in c.shape)
    for name, arr, want in (("assignment", a, (B, n)), ("u", u, (B, n)), ("v", v, (B, m))):
        if tuple(arr.shape) != want:
            raise ValueError(f"certify_stack: {name} has shape {tuple(arr.shape)}, expected {want}")
    if c.dtype.kind not in "iuf":
        raise TypeError(f"certify_stack: costs have dtype {c.dtype}; expected integers or floats")
    if a.dtype.kind not in "iu":
        raise TypeError(f"certify_stack: assignment has dtype {a.dtype}; expected integers")
    for name, arr in (("u", u), ("v", v)):
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"certify_stack: {name} has dtype {arr.dtype}; expected real numbers")
    if B == 0:
        return xp.zeros(0, dtype=bool), []
    with contextlib.nullcontext() if xp is np else c.device:  # the stack's GPU
        if n > m:  # every column assigned: certify the transposed answer
            return _certify_wide(xp, c, a, u, v, maximize)
        return _certify(xp, c, a, u, v, maximize, ("row", "column", "u", "v"))


def _certify_wide(xp, c, a, u, v, maximize):
    """``n > m``: check the assignment covers every column once, then certify the
    transpose (columns become rows) with the reasons in the caller's terms."""
    B, n, m = (int(s) for s in c.shape)
    a = a.astype(np.int64)
    fail = xp.zeros(B, dtype=bool)
    reasons: list[str | None] = [None] * B
    # range: -1 (unassigned) or a column
    bad = (a < -1) | (a >= m)
    _note(
        xp,
        bad,
        fail,
        reasons,
        lambda k, i: f"row {i} is assigned to column {int(_host(a[k, i]))}, outside [-1, {m})",
    )
    # injective over the assigned rows, and every column covered
    a_ok = xp.where(bad | (a < 0), m, a)  # slot m collects the unassigned and the broken
    offs = (xp.arange(B, dtype=np.int64) * (m + 1))[:, None]
    counts = xp.bincount((a_ok + offs).ravel(), minlength=B * (m + 1)).reshape(B, m + 1)[:, :m]
    dup = counts > 1
    _note(
        xp,
        dup,
        fail,
        reasons,
        lambda k, j: (
            f"not injective: column {j} is assigned to rows "
            f"{np.flatnonzero(_host(a[k]) == j)[:4].tolist()}"
        ),
    )
    _note(
        xp,
        counts == 0,
        fail,
        reasons,
        lambda k, j: (
            f"column {j} is unassigned (with {n} rows > {m} columns every column is assigned)"
        ),
    )
    # col_to_row of the well-formed ones (others get a dummy permutation, already failed)
    col4row = xp.broadcast_to(xp.arange(m, dtype=np.int64), (B, m)).copy()
    good = ~fail
    if bool(good.any()):
        rows = xp.broadcast_to(xp.arange(n, dtype=np.int64), (B, n))
        flat = (a_ok + offs).ravel()
        keep = (a_ok < m).ravel() & xp.repeat(good, n)
        c2r = xp.zeros(B * (m + 1), dtype=np.int64)
        c2r[flat[keep]] = rows.ravel()[keep]
        c2r = c2r.reshape(B, m + 1)[:, :m]
        col4row = xp.where(good[:, None], c2r, col4row)
    ok_t, why_t = _certify(
        xp, c.transpose(0, 2, 1), col4row, v, u, maximize, ("column", "row", "v", "u")
    )
    ok = ok_t & good
    for k in range(B):
        if reasons[k] is None:
            reasons[k] = why_t[k]
    return ok, reasons


def _note(xp, bad, fail, reasons, describe) -> None:
    """For instances not failed yet with a True in ``bad`` (B, L): fail them, and reason
    about the first such index (``describe(k, index)``)."""
    hit = bad.any(axis=1) & ~fail
    ks = np.flatnonzero(_host(hit))
    if not ks.size:
        return
    first = _host(xp.argmax(bad[xp.asarray(ks)], axis=1))
    for k, idx in zip(ks.tolist(), first.tolist(), strict=True):
        reasons[k] = describe(k, int(idx))
    fail |= hit


def _as_int64(xp, x):
    """``(x as int64, |x| > INT_LIMIT)``, the out-of-range entries set to 0 (so that no sum
    of the certificate wraps); ``x`` is an integer array or an integral float one."""
    if x.dtype.kind in "iu" and x.dtype.itemsize < 8:
        return x.astype(np.int64), xp.zeros(x.shape, dtype=bool)
    if x.dtype.kind == "u":
        big = x > INT_LIMIT
    else:
        big = (x > INT_LIMIT) | (x < -INT_LIMIT)  # not abs: abs(int64 min) wraps
    return xp.where(big, x.dtype.type(0), x).astype(np.int64), big


def _fmt(x: Any) -> str:
    x = x.item() if hasattr(x, "item") else x
    return repr(x) if isinstance(x, float) else str(x)


def _certify(xp, c, a, u, v, maximize, names):
    """The certificate for ``n <= m`` (module docstring). ``names``: the words for rows,
    columns, row duals and column duals in the caller's orientation."""
    R, C, U, V = names
    B, n, m = (int(s) for s in c.shape)
    exact = c.dtype.kind in "iu"
    fail = xp.zeros(B, dtype=bool)
    reasons: list[str | None] = [None] * B

    def cell(k: int, i: int, j: int) -> str:
        # c[row, col] in the caller's orientation
        return f"c[{i}, {j}]" if R == "row" else f"c[{j}, {i}]"

    # -- finiteness and range of costs and duals --------------------------------------
    flat_c = c.reshape(B, n * m)
    if exact:
        cc, big = _as_int64(xp, c)
        _note(
            xp,
            big.reshape(B, n * m),
            fail,
            reasons,
            lambda k, e: (
                f"cost {cell(k, e // m, e % m)} = {_fmt(_host(flat_c[k, e]))} is beyond the exact "
                f"int64 range (|c| <= 2**61)"
            ),
        )
        atol = xp.zeros(B, dtype=np.int64)
    else:
        _note(
            xp,
            ~xp.isfinite(flat_c),
            fail,
            reasons,
            lambda k, e: (
                f"cost {cell(k, e // m, e % m)} = {_fmt(_host(flat_c[k, e]))} is not finite"
            ),
        )
        cc = c.astype(np.float64)
        cc = xp.where(xp.isfinite(cc), cc, 0.0)
        # certificate_atol per instance: FLOAT_RTOL * max(1, max|c|)
        scale = xp.abs(cc).reshape(B, n * m).max(axis=1) if n * m else xp.zeros(B)
        atol = FLOAT_RTOL * xp.maximum(1.0, scale)
    duals = []
    for name, arr in ((U, u), (V, v)):
        if arr.dtype.kind == "f":
            _note(
                xp,
                ~xp.isfinite(arr),
                fail,
                reasons,
                lambda k, e, name=name, arr=arr: (
                    f"dual {name}[{e}] = {_fmt(_host(arr[k, e]))} is not finite"
                ),
            )
            arr = xp.where(xp.isfinite(arr), arr, 0.0)
        if exact:
            if arr.dtype.kind == "f":
                off = (xp.abs(arr) >= FLOAT_INT_LIMIT) | (arr != xp.round(arr))
                _note(
                    xp,
                    off,
                    fail,
                    reasons,
                    lambda k, e, name=name, arr=arr: (
                        f"dual {name}[{e}] = {_fmt(_host(arr[k, e]))} is not an integer under "
                        f"2**53 (integer costs are certified exactly, with integer duals)"
                    ),
                )
                arr = xp.where(off, 0.0, arr)
            src = arr
            arr, big = _as_int64(xp, arr)
            _note(
                xp,
                big,
                fail,
                reasons,
                lambda k, e, name=name, src=src: (
                    f"dual {name}[{e}] = {_fmt(_host(src[k, e]))} is beyond the exact int64 range "
                    f"(|{name}| <= 2**61)"
                ),
            )
        else:
            arr = arr.astype(np.float64)
        duals.append(arr)
    uu, vv = duals
    if maximize:
        cc, uu, vv = -cc, -uu, -vv

    # -- the assignment: in range and injective ---------------------------------------
    a64 = a.astype(np.int64)
    out = (a64 < 0) | (a64 >= m)
    _note(
        xp,
        out,
        fail,
        reasons,
        lambda k, i: f"{R} {i} is assigned to {C} {int(_host(a64[k, i]))}, outside [0, {m})",
    )
    a_ok = xp.where(out, m, a64)
    offs = (xp.arange(B, dtype=np.int64) * (m + 1))[:, None]
    counts = xp.bincount((a_ok + offs).ravel(), minlength=B * (m + 1)).reshape(B, m + 1)[:, :m]
    _note(
        xp,
        counts > 1,
        fail,
        reasons,
        lambda k, j: (
            f"not injective: {C} {j} is assigned to {R}s "
            f"{np.flatnonzero(_host(a64[k]) == j)[:4].tolist()}"
        ),
    )
    a_ok = xp.where(out, 0, a64)

    # -- dual feasibility: c_ij - u_i - v_j >= -atol on every cell ------------------------
    red = cc - uu[:, :, None] - vv[:, None, :]
    infeasible = (red < -atol[:, None, None]).reshape(B, n * m)

    def why_infeasible(k: int, e: int) -> str:
        i, j = divmod(e, m)
        lhs = _host(uu[k, i] + vv[k, j])
        lhs, rel = (-lhs, "<") if maximize else (lhs, ">")
        return (
            f"dual infeasible: {U}[{i}] + {V}[{j}] = {_fmt(lhs)} {rel} {cell(k, i, j)} = "
            f"{_fmt(_host(c[k, i, j]))} (by {_fmt(_host(-red[k, i, j]))}, tolerance "
            f"{_fmt(_host(atol[k]))})"
        )

    _note(xp, infeasible, fail, reasons, why_infeasible)

    # -- complementary slackness on assigned cells -----------------------------------------
    if n:
        slack = xp.take_along_axis(red, a_ok[:, :, None], axis=2)[:, :, 0]
        loose = xp.abs(slack) > atol[:, None]
        _note(
            xp,
            loose,
            fail,
            reasons,
            lambda k, i: (
                f"complementary slackness fails: assigned cell {cell(k, i, int(_host(a_ok[k, i])))} "
                f"has reduced cost {_fmt(_host(slack[k, i]))} (tolerance {_fmt(_host(atol[k]))})"
            ),
        )

    # -- rectangular: v_j <= 0 everywhere, v_j = 0 on unassigned columns ------------------
    if n < m:
        word = ">= 0" if maximize else "<= 0"
        _note(
            xp,
            vv > atol[:, None],
            fail,
            reasons,
            lambda k, j: (
                f"{V}[{j}] = {_fmt(_host(-vv[k, j] if maximize else vv[k, j]))} breaks "
                f"{V} {word} (the {C}s outnumber the {R}s)"
            ),
        )
        unassigned = counts == 0
        _note(
            xp,
            unassigned & (xp.abs(vv) > atol[:, None]),
            fail,
            reasons,
            lambda k, j: (
                f"{C} {j} is unassigned but {V}[{j}] = "
                f"{_fmt(_host(-vv[k, j] if maximize else vv[k, j]))} != 0"
            ),
        )
    return ~fail, reasons
