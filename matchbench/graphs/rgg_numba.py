"""Compiled kernel of :func:`~matchbench.graphs.generators.rgg_bulk`: the CSRs of many
random geometric graphs from their drawn points, each equal to
:func:`~matchbench.graphs.generators.rgg`'s.

A module of its own, imported by ``rgg_bulk`` when called, so that importing the
generators does not import numba. The first call of a process loads the compiled code
from numba's cache (``cache=True``), or compiles it (seconds) where there is none.

Bins: the points of a graph are numbered by strip, then ``x``
(``generators._strip_order``); the unit width of each strip is cut into ``cells`` bins,
and the bin of a point of strip ``s`` is ``floor((s + x) * cells)``, computed from its
sort key ``s + x`` as rounded. The sort is by bin first (:func:`_sort_points`), so the
points of a run of bins are one range of numbers: ``start[b]`` is the first point of
bin ``b`` or later.

The hot loops index with unsigned integers (``_U``): numba adds a test for a negative
index to every signed one, which made a block of tests 1.7 times as slow.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["draw_points", "rgg_csr_chunk", "strip_order", "work_space"]

_U = np.uint64

#: Bins of a strip's width per strip of the graph (``cells = _CELLS * strips``): a strip
#: holds about ``strips`` points, so a bin about half a point.
_CELLS = 2

#: Candidates of a range that :func:`_upper_pairs` tests at once, kept or not by a mask
#: (:func:`_block`): most ranges are shorter, and a test costs less than the branch
#: mispredicted at the end of a loop of a few.
_BLOCK = 4


@njit(cache=True, nogil=True)
def _strips(n):
    """``math.isqrt(n - 1) + 1`` (1 for ``n <= 1``): ``generators._strips``."""
    if n <= 1:
        return 1
    s = np.int64(math.sqrt(n - 1))
    while s * s > n - 1:
        s -= 1
    while (s + 1) * (s + 1) <= n - 1:
        s += 1
    return s + 1


@njit(cache=True, nogil=True)
def _sort_points(xy, strips, key, x, y, order, start, bucket):
    """The ``n`` points ``xy`` (n x 2) numbered as ``generators._strip_order`` numbers
    them, the stable argsort of their strip keys ``strip + x``: ``order[:n]`` that
    argsort, ``key[:n]``, ``x[:n]`` and ``y[:n]`` the keys and points in that order,
    ``start[:strips * cells + 1]`` the bins' first points (see the module docstring).
    Returns whether each point's bin is in its strip: False where a key rounded up to
    the next strip (``x`` within ``s * 2**-53`` of 1 in strip ``s``).

    A counting sort by bin (the points of a bin placed by index), then an insertion
    sort that moves a point only past greater keys. The bin is a non-decreasing
    function of the key, so the order is by key, ties by index: the stable argsort's,
    whatever the rounding of the keys. With two bins a point, few are out of order
    after the first sort.
    """
    n = xy.shape[0]
    cells = _CELLS * strips
    nb = strips * cells
    start[: nb + 2] = 0
    inside = True
    for i in range(_U(n)):
        # generators._strip_key: an int64 strip, then int64 + float64 in float64.
        s = min(np.int64(xy[i, 1] * strips), strips - 1)
        k = s + xy[i, 0]
        key[_U(n) + i] = k  # the upper half: the keys in the points' order
        b = min(np.int64(k * cells), nb - 1)
        inside &= b < (s + 1) * cells
        bucket[i] = b
        start[_U(b) + _U(2)] += 1
    for b in range(_U(nb)):
        start[b + _U(2)] += start[b + _U(1)]
    for i in range(_U(n)):  # start[b + 1]: where bin b's next point goes
        b = _U(bucket[i]) + _U(1)
        p = _U(start[b])
        start[b] = p + _U(1)
        order[p] = i
        key[p] = key[_U(n) + i]
        x[p] = xy[i, 0]
        y[p] = xy[i, 1]
    for p in range(1, n):
        k = key[p]
        if key[p - 1] > k:
            o = order[p]
            xp = x[p]
            yp = y[p]
            q = p
            while q > 0 and key[q - 1] > k:
                key[q] = key[q - 1]
                order[q] = order[q - 1]
                x[q] = x[q - 1]
                y[q] = y[q - 1]
                q -= 1
            key[q] = k
            order[q] = o
            x[q] = xp
            y[q] = yp
    return inside


@njit(cache=True, nogil=True)
def _sort_space(n):
    """Work space of :func:`_sort_points` for up to ``n`` points: ``key`` (twice ``n``),
    ``x`` and ``y`` (``_BLOCK`` more, zeros), ``order``, ``start``, ``bucket``."""
    strips = _strips(n)
    return (
        np.empty(2 * n),
        np.zeros(n + _BLOCK),
        np.zeros(n + _BLOCK),
        np.empty(n, np.int64),
        np.empty(_CELLS * strips * strips + 2, np.int64),
        np.empty(n, np.int64),
    )


@njit(cache=True, nogil=True)
def strip_order(xy):
    """The numbering of ``generators.unit_square_points`` of the points ``xy`` (n x 2),
    by :func:`_sort_points`: equal to ``generators._strip_order(xy)``.

    >>> from matchbench.graphs.generators import _strip_order
    >>> xy = np.random.default_rng(0).random((1000, 2))
    >>> bool((strip_order(xy) == _strip_order(xy)).all())
    True
    """
    n = xy.shape[0]
    key, x, y, order, start, bucket = _sort_space(n)
    _sort_points(xy, _strips(n), key, x, y, order, start, bucket)
    return order


@njit(cache=True, nogil=True)
def _grow(a, need):
    """``a``, or a copy of it at least twice as long when shorter than ``need``."""
    if a.shape[0] >= need:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True, nogil=True)
def _block(x, y, a, end, xi, yi, r2, upper, pos):
    """Candidates ``a`` to ``a + 3`` (``_BLOCK``) of the point ``(xi, yi)``, those
    before ``end``, tested: the kept ones written to ``upper`` from ``pos`` on; returns
    the new end.

    cKDTree.query_pairs' test, ``dx * dx + dy * dy <= r * r``, rounded alike (numba
    leaves fp contraction off: no fused multiply-add). Each candidate is written and
    kept by moving past it: no branch.
    """
    one = _U(1)
    a1 = a + one
    a2 = a1 + one
    a3 = a2 + one
    dx0 = x[a] - xi
    dx1 = x[a1] - xi
    dx2 = x[a2] - xi
    dx3 = x[a3] - xi
    dy0 = y[a] - yi
    dy1 = y[a1] - yi
    dy2 = y[a2] - yi
    dy3 = y[a3] - yi
    k0 = (a < end) & (dx0 * dx0 + dy0 * dy0 <= r2)
    k1 = (a1 < end) & (dx1 * dx1 + dy1 * dy1 <= r2)
    k2 = (a2 < end) & (dx2 * dx2 + dy2 * dy2 <= r2)
    k3 = (a3 < end) & (dx3 * dx3 + dy3 * dy3 <= r2)
    upper[pos] = a
    pos += _U(k0)
    upper[pos] = a1
    pos += _U(k1)
    upper[pos] = a2
    pos += _U(k2)
    upper[pos] = a3
    pos += _U(k3)
    return pos


@njit(cache=True, nogil=True)
def _bin(strip, x, cells):
    """The bin of position ``x`` (clipped to [0, 1]) in ``strip``, as the points' bins
    are computed, at most the strip's last: rounding is monotone, so a point at ``x``
    or beyond (before) has this bin or a later (earlier) one."""
    return min(np.int64((strip + min(max(x, 0.0), 1.0)) * cells), (strip + 1) * cells - 1)


@njit(cache=True, nogil=True)
def _upper_pairs(x, y, strips, radius, start, half, upper, uptr, first_i):
    """The pairs ``(i, j)``, ``i < j``, of the points ``x``, ``y`` within ``radius``,
    from point ``first_i`` on; the points are numbered by strip, then ``x``, their
    bins' first points are ``start`` (module docstring). Row ``i``'s ``j`` are
    ``upper[uptr[i]:uptr[i + 1]]``, increasing. ``x`` and ``y`` are readable ``_BLOCK``
    entries past the points. Returns the first point not done: all (``n``), or where
    ``upper`` is full (the caller gives more room and calls again from there).

    A point's candidates are the later points of its strip in the bins up to
    ``x + half[0]``, then those of each strip ``d`` above it in the bins from
    ``x - half[d]`` to ``x + half[d]``: a range of numbers each. The first ``_BLOCK`` of
    a range are tested whatever their ``x`` (:func:`_block`): a pair that passes is an
    edge, and no pair is tested twice. The arrays are never replaced here: that would
    cost reference counting in the loops.
    """
    cells = _CELLS * strips
    n = start[strips * cells]
    r2 = radius * radius  # cKDTree's upper bound for p = 2
    if not r2 >= 0.0:  # NaN: no pair passes the test
        uptr[first_i + 1 : n + 1] = uptr[first_i]
        return n
    # half[d]: the reach of a disk into the strip d above (d = 0: its own), up to the
    # last strip in reach: sqrt(r**2 - dy**2) for the least distance dy to that strip,
    # less a rounding error of the strips' edges, plus a margin far above the rounding
    # errors of the test and of these bounds (1e-16 relative, which a square root near
    # 0 turns into 1e-8).
    margin = 1e-6 * radius + 1e-9
    reach = 0
    for d in range(strips):
        dy = max((d - 1) / strips - 1e-9, 0.0)
        if not dy <= radius + margin:
            break
        half[d] = math.sqrt(max(r2 - dy * dy, 0.0)) + margin
        reach = d
    cap = _U(upper.shape[0])
    one = _U(1)
    block = _U(_BLOCK)
    pos = _U(uptr[first_i])
    s = 0
    while start[(s + 1) * cells] <= first_i:
        s += 1
    while s < strips:
        last = _U(start[(s + 1) * cells])
        top = min(reach, strips - 1 - s)
        for i in range(_U(max(start[s * cells], first_i)), last):
            if pos + _U(top + 1) * block > cap:
                return np.int64(i)
            xi = x[i]
            yi = y[i]
            pos = _block(x, y, i + one, last, xi, yi, r2, upper, pos)
            end = _U(start[_bin(s, xi + half[0], cells) + 1])
            for j in range(i + one + block, end):
                if pos == cap:
                    return np.int64(i)
                dx = x[j] - xi
                dy = y[j] - yi
                upper[pos] = j
                pos += _U(dx * dx + dy * dy <= r2)
            for d in range(1, top + 1):
                a = _U(start[_bin(s + d, xi - half[d], cells)])
                end = _U(start[_bin(s + d, xi + half[d], cells) + 1])
                if pos + block > cap:
                    return np.int64(i)
                pos = _block(x, y, a, end, xi, yi, r2, upper, pos)
                for j in range(a + block, end):
                    if pos == cap:
                        return np.int64(i)
                    dx = x[j] - xi
                    dy = y[j] - yi
                    upper[pos] = j
                    pos += _U(dx * dx + dy * dy <= r2)
            uptr[i + one] = pos
        s += 1
    return n


@njit(cache=True, nogil=True)
def rgg_pairs(xy, offsets, radii, upper, uptr, copies):
    """Pass 1 of :func:`rgg_csr_chunk`: each graph's points numbered, its pairs found.

    Returns
    -------
    upper : ndarray of uint32
        ``upper`` or a longer copy: graph ``g``'s pairs ``(i, j)`` of row ``i`` (its
        point ``offsets[g] + i``) have their ``j`` at ``uptr[offsets[g] + i]`` to
        ``uptr[offsets[g] + i + 1]`` (``uptr``: int64, longer than the points, filled
        here).
    at : ndarray of int64
        Where graph ``g``'s arrays go in the output (:func:`rgg_fill`): ``at[g]`` to
        ``at[g + 1]``, empty where ``ok[g]`` is False.
    ok : ndarray of bool
    """
    n_graphs = offsets.shape[0] - 1
    n_max = 1
    for g in range(n_graphs):
        n_max = max(n_max, offsets[g + 1] - offsets[g])
    at = np.zeros(n_graphs + 1, np.int64)
    ok = np.zeros(n_graphs, np.bool_)
    key, x, y, order, start, bucket = _sort_space(n_max)
    half = np.empty(_strips(n_max))
    pos = 0
    for g in range(n_graphs):
        p0 = offsets[g]
        n = offsets[g + 1] - p0
        strips = _strips(n)
        rows = uptr[p0 : p0 + n + 1]
        rows[0] = pos
        made = _sort_points(xy[p0 : p0 + n], strips, key, x, y, order, start, bucket)
        if made:
            i = _upper_pairs(x, y, strips, radii[g], start, half, upper, rows, 0)
            while i < n:  # upper is full: more room, and on from point i
                upper = _grow(upper, upper.shape[0] + 1 + (strips + 1) * _BLOCK)
                i = _upper_pairs(x, y, strips, radii[g], start, half, upper, rows, i)
        m = 2 * (rows[n] - pos) if made else 0
        if made and m <= 2147483647:  # int32 indices, as index_dtype gives rgg
            ok[g] = True
            at[g + 1] = at[g] + copies * (n + 1 + m)
            pos = rows[n]
        else:
            rows[:] = pos
            at[g + 1] = at[g]
    return upper, at, ok


@njit(cache=True, nogil=True)
def rgg_fill(offsets, upper, uptr, at, out, copies):
    """Pass 2 of :func:`rgg_csr_chunk`: graph ``g``'s ``row_ptr``, ``row_ind``,
    ``col_ptr``, ``col_ind`` one after the other in ``out[at[g]:at[g + 1]]``.

    Row ``i`` gets its columns ``j < i`` (the rows whose pairs hold ``i``, placed in
    increasing order), then its pairs ``(i, j)``, increasing: the canonical CSR. One
    loop over the pairs places both; a pair's row is counted by marks at the rows'
    first pairs.
    """
    n_graphs = offsets.shape[0] - 1
    n_max = 1
    k_max = 0
    for g in range(n_graphs):
        n_max = max(n_max, offsets[g + 1] - offsets[g])
        k_max = max(k_max, uptr[offsets[g + 1]] - uptr[offsets[g]])
    below = np.empty(n_max, np.uint64)
    shift = np.empty(n_max, np.uint64)
    mark = np.empty(k_max + 1, np.uint64)
    for g in range(n_graphs):
        if at[g + 1] == at[g]:
            continue
        p0 = offsets[g]
        n = offsets[g + 1] - p0
        rows = uptr[p0 : p0 + n + 1]
        e0 = _U(rows[0])
        k = _U(rows[n]) - e0
        size = _U(n + 1) + _U(2) * k
        base = _U(at[g])
        row_ptr = out[base : base + _U(n + 1)]
        row_ind = out[base + _U(n + 1) : base + size]
        below[:n] = 0
        mark[: k + _U(1)] = 0
        for e in range(e0, e0 + k):
            below[upper[e]] += _U(1)
        row_ptr[0] = 0
        for i in range(_U(n)):
            begin = _U(row_ptr[i])
            first = _U(rows[i]) - e0
            row_ptr[i + _U(1)] = begin + below[i] + (_U(rows[i + _U(1)]) - e0 - first)
            # Pair first + t of row i goes to shift[i] + first + t (>= 0: the rows
            # before i hold at least their pairs).
            shift[i] = begin + below[i] - first
            below[i] = begin  # where row i's next column below i goes
            mark[first] += _U(1)
        i = _U(0)  # pair e is of row i - 1: i rows start at e or before
        for e in range(_U(0), k):
            i += mark[e]
            j = _U(upper[e0 + e])
            row_ind[shift[i - _U(1)] + e] = j
            row_ind[below[j]] = i - _U(1)
            below[j] += _U(1)
        if copies == 2:
            out[base + size : base + _U(2) * size] = out[base : base + size]


def rgg_csr_chunk(
    xy: np.ndarray,
    offsets: np.ndarray,
    radii: np.ndarray,
    work: tuple[np.ndarray, np.ndarray],
    copies: int = 2,
    empty: Any = np.empty,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The CSRs of the random geometric graphs of points ``xy[offsets[g]:offsets[g + 1]]``
    (as drawn, not yet numbered) and radius ``radii[g]``.

    Parameters
    ----------
    xy : ndarray of float64, shape (points, 2)
    offsets : ndarray of int64, shape (graphs + 1,)
    radii : ndarray of float64, shape (graphs,)
    work : tuple of two ndarrays
        Work space (:func:`work_space`); pass the one returned on to the next call.
    copies : int
        2: the column CSR too, a copy of the row CSR (the graph is symmetric); 1: the
        row CSR alone (it is also the column CSR).
    empty : callable
        Allocates ``out`` as ``empty(size, dtype)`` (``numpy.empty``; pinned host
        memory for a GPU's upload).

    Returns
    -------
    out : ndarray of int32
        Graph ``g``'s ``row_ptr``, ``row_ind``, then (``copies=2``) ``col_ptr``,
        ``col_ind`` (``n + 1``, ``m``, ``n + 1`` and ``m`` entries) one after the other
        in ``out[at[g]:at[g + 1]]``.
    at : ndarray of int64, shape (graphs + 1,)
    ok : ndarray of bool, shape (graphs,)
        False where graph ``g`` is not made (its part of ``out`` is empty): a point's
        key rounded up to the next strip (:func:`_sort_points`), or more than
        ``2**31 - 1`` entries.
    work : tuple of two ndarrays
        The work space, grown where it had to be.

    Notes
    -----
    Two passes, :func:`rgg_pairs` and :func:`rgg_fill`, so that ``out`` is allocated
    once, at its size, by NumPy (which asks the kernel for huge pages for large arrays).
    """
    upper, uptr = work
    if uptr.shape[0] <= xy.shape[0]:
        uptr = np.empty(xy.shape[0] + 1, dtype=np.int64)
    upper, at, ok = rgg_pairs(xy, offsets, radii, upper, uptr, copies)
    out = empty(int(at[-1]), dtype=np.int32)
    rgg_fill(offsets, upper, uptr, at, out, copies)
    return out, at, ok, (upper, uptr)


def work_space(points: int) -> tuple[np.ndarray, np.ndarray]:
    """A work space for :func:`rgg_csr_chunk`, for chunks of up to ``points`` points
    (it grows as needed)."""
    return np.empty(4 * points + 1024, dtype=np.uint32), np.empty(points + 1, dtype=np.int64)


# ---------------------------------------------------------------------------------------
# NumPy's draw of the points, in compiled code (rgg_stack: no Generator per graph)
# ---------------------------------------------------------------------------------------

_M32 = np.uint64(0xFFFFFFFF)
#: PCG_DEFAULT_MULTIPLIER_128 of NumPy's ``pcg64.h``, high and low words.
_MULT_HI = np.uint64(2549297995355413924)
_MULT_LO = np.uint64(4865540595714422341)


@intrinsic
def _mulhi64(typingctx, a, b):
    """The high 64 bits of the 128-bit product of two uint64 (one multiply on x86-64 and
    arm64; numba has no 128-bit integer)."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))

    return sig, codegen


@njit(cache=True, nogil=True, inline="always")
def _step(s_hi, s_lo, inc_hi, inc_lo):
    """One step of PCG64's 128-bit LCG: ``s * MULT + inc`` (mod 2**128)."""
    hi = _mulhi64(s_lo, _MULT_LO) + s_lo * _MULT_HI + s_hi * _MULT_LO
    lo = s_lo * _MULT_LO
    lo2 = lo + inc_lo
    hi = hi + inc_hi + (np.uint64(1) if lo2 < lo else np.uint64(0))
    return hi, lo2


@njit(cache=True, nogil=True)
def draw_points(words, offsets, xy):
    """``xy[offsets[g]:offsets[g + 1]]`` = ``numpy.random.default_rng(seed).random((n,
    2))`` of graph ``g``, from its seed's four SeedSequence words ``words[g]``
    (:func:`matchbench.core.seeds.seed_words`), value for value.

    PCG64 as NumPy seeds and steps it (``pcg64.h``, O'Neill 2014): ``inc = (initseq <<
    1) | 1``, ``s = inc``, ``s += initstate``, ``s = s * MULT + inc``; each draw steps
    ``s`` and outputs XSL-RR of the new state (the xor of its halves rotated right by its
    top six bits); a double is ``(output >> 11) * 2**-53`` (``next_double``). The kernel
    ``kernels/lap/lap_draw.cu`` seeds and steps the same generator on the GPU.
    """
    one = np.uint64(1)
    scale = 1.0 / 9007199254740992.0
    for g in range(offsets.shape[0] - 1):
        inc_hi = (words[g, 2] << one) | (words[g, 3] >> np.uint64(63))
        inc_lo = (words[g, 3] << one) | one
        s_lo = inc_lo + words[g, 1]
        s_hi = inc_hi + words[g, 0] + (one if s_lo < inc_lo else np.uint64(0))
        s_hi, s_lo = _step(s_hi, s_lo, inc_hi, inc_lo)
        flat = xy[offsets[g] : offsets[g + 1]].reshape(-1)
        for t in range(flat.shape[0]):
            s_hi, s_lo = _step(s_hi, s_lo, inc_hi, inc_lo)
            x = s_hi ^ s_lo
            rot = s_hi >> np.uint64(58)
            out = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
            flat[t] = np.float64(out >> np.uint64(11)) * scale
