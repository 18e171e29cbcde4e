"""Seeded LAP cost matrices drawn on the GPU, bit-identical to NumPy's (``kernels/lap/lap_draw.cu``).

:func:`~matchbench.families.lap.datasets.uniform` draws its int32 costs with
``numpy.random.default_rng(seed).integers(0, hi + 1, size=(n, n))``: a SeedSequence hashes
the seed into PCG64's state, and Lemire's bounded method turns PCG64's outputs into the
costs. Drawing a batch's matrices one seed at a time costs 40-70 us each on the host at
n = 64 (the seeding alone 11 us, under the GIL); the GPU draws a whole batch at once from
the same seeds, the same values (tested value for value against NumPy):

- :func:`seed_words` runs NumPy's SeedSequence (``numpy.random.bit_generator``: ``mix_entropy``
  and ``generate_state(4, uint64)``, pool size 4) for every seed at once, vectorized over
  the seeds in uint32 arithmetic, exactly as NumPy's loop runs it for one;
- the kernel seeds PCG64 from those words and draws every value of a matrix in parallel
  (jumping the generator ahead), flagging a matrix where a draw was rejected (the method
  then draws again, shifting every later value: about once in 70 million draws at n = 64);
- :func:`draw_uniform_int32_device` draws the flagged matrices again with NumPy on the host
  and uploads them into their places; the stack stays on the device (a GPU task's batch is
  solved and certified there: :class:`~matchbench.families.lap.problem.DeviceCostMatrix`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# numpy.random.bit_generator's SeedSequence constants (32-bit words).
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_XSHIFT = 16
_POOL = 4
_M32 = 0xFFFFFFFF

#: Threads per block of ``lap_draw_uniform_i32``.
THREADS = 256


def seed_words(seeds: Any) -> np.ndarray:
    """``numpy.random.SeedSequence(seed).generate_state(4, np.uint64)`` for every seed.

    Parameters
    ----------
    seeds : array_like of int
        Seeds in ``[0, 2**64)``.

    Returns
    -------
    ndarray of uint64, shape (B, 4)
        The words PCG64 seeds from (``initstate`` high, low, ``initseq`` high, low).

    Raises
    ------
    ValueError
        For a seed outside ``[0, 2**64)``.

    Examples
    --------
    >>> w = seed_words([0, 12345, 2**40])
    >>> all((w[k] == np.random.SeedSequence(s).generate_state(4, np.uint64)).all()
    ...     for k, s in enumerate([0, 12345, 2**40]))
    True
    """
    values = [int(s) for s in np.atleast_1d(np.asarray(seeds, dtype=object))]
    bad = [s for s in values if not 0 <= s < 2**64]
    if bad:
        raise ValueError(f"seed_words: seeds must lie in [0, 2**64), got {bad[0]!r}")
    out = np.empty((len(values), 4), dtype=np.uint64)
    seeds64 = np.array(values, dtype=np.uint64)
    two = seeds64 >= np.uint64(2**32)  # entropy of two 32-bit words, else one
    for words, members in ((1, np.flatnonzero(~two)), (2, np.flatnonzero(two))):
        if members.size:
            out[members] = _generate_state(_mix_entropy(seeds64[members], words))
    return out


def _mix_entropy(seeds: np.ndarray, words: int) -> list[np.ndarray]:
    """SeedSequence.mix_entropy of seeds of ``words`` 32-bit words (no spawn key): the pool."""
    entropy = [(seeds & np.uint64(_M32)).astype(np.uint32)]
    if words == 2:
        entropy.append((seeds >> np.uint64(32)).astype(np.uint32))
    const = [_INIT_A]  # the hash constant walks the same sequence for every seed

    def hashmix(value: np.ndarray) -> np.ndarray:
        value = value ^ np.uint32(const[0])
        const[0] = (const[0] * _MULT_A) & _M32
        value = value * np.uint32(const[0])
        return value ^ (value >> np.uint32(_XSHIFT))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = np.uint32(_MIX_MULT_L) * x - np.uint32(_MIX_MULT_R) * y
        return r ^ (r >> np.uint32(_XSHIFT))

    zero = np.zeros_like(entropy[0])
    pool = [hashmix(entropy[i] if i < len(entropy) else zero) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    return pool  # entropy of at most 2 words never exceeds the pool: no third loop


def _generate_state(pool: list[np.ndarray]) -> np.ndarray:
    """SeedSequence.generate_state(4, uint64) from the mixed pool."""
    const = _INIT_B
    halves = []
    for i in range(2 * 4):
        value = pool[i % _POOL] ^ np.uint32(const)
        const = (const * _MULT_B) & _M32
        value = value * np.uint32(const)
        halves.append(value ^ (value >> np.uint32(_XSHIFT)))
    return np.stack(
        [halves[2 * k].astype(np.uint64) | (halves[2 * k + 1].astype(np.uint64) << np.uint64(32)) for k in range(4)],
        axis=1,
    )


def _launch(seeds: list[int], n: int, hi: int, *, redraw: bool = True) -> tuple[Any, np.ndarray]:
    """The kernel's ``(B, n, n)`` device stack and the indices of its blocks with a
    rejected draw that are still to be drawn again by NumPy (with ``redraw``, those that
    :func:`_redraw` could not complete on the device; none, usually); waits for the
    device."""
    import cupy as cp

    from matchbench.gpu.kernels import get_module

    if not 1 <= int(hi) <= 2**31 - 2:
        raise ValueError(f"draw_uniform_int32_device: hi must lie in [1, 2**31 - 2], got {hi!r}")
    n, B = int(n), len(seeds)
    if n < 1:
        raise ValueError(f"draw_uniform_int32_device: n must be positive, got {n}")
    out = cp.empty((B, n, n), dtype=cp.int32)
    if B == 0:
        return out, np.zeros(0, dtype=np.int64)
    words = cp.asarray(seed_words(seeds))
    flags = cp.zeros(B, dtype=cp.int32)
    kern = get_module("lap_draw").get_function("lap_draw_uniform_i32")
    grid = min(B, 65535)
    kern((grid,), (THREADS,), (words, np.int64(B), np.int64(n * n), np.uint32(hi), out, flags))
    again = np.flatnonzero(flags.get())  # .get() waits for the draw
    if redraw and again.size:
        again = _redraw(out, words, again, n * n, int(hi))
    return out, again


#: Raw draws per instance beyond its n * n values that :func:`_redraw` makes: room for
#: that many rejections (one expected in 33 instances of n = 512 at hi = 512).
REDRAW_SLACK = 64
#: Instances :func:`_redraw` draws again at once (bounds its raw draws' memory).
REDRAW_GROUP = 64


def _redraw(out: Any, words: Any, again: np.ndarray, P: int, hi: int) -> np.ndarray:
    """Blocks ``again`` of ``out`` (each with a rejected draw) made again on the device:
    each block's first ``P + REDRAW_SLACK + P // 64`` raw draws (``lap_draw_raw_u32``),
    of which the accepted ones, in order, are its values, as NumPy's Lemire loop keeps
    them. Returns the blocks that had more rejections than that (left for NumPy)."""
    import cupy as cp

    from matchbench.gpu.kernels import get_module

    kern = get_module("lap_draw").get_function("lap_draw_raw_u32")
    r = int(hi) + 1
    threshold = (0xFFFFFFFF - int(hi)) % r
    J = P + REDRAW_SLACK + P // 64
    flat = out.reshape(out.shape[0], P)
    left: list[int] = []
    for at in range(0, again.size, REDRAW_GROUP):
        part = again[at : at + REDRAW_GROUP]
        F = int(part.size)
        idx = cp.asarray(part.astype(np.int64))
        raw = cp.empty((F, J), dtype=cp.uint32)
        kern((min(F, 65535),), (THREADS,), (words, idx, np.int64(F), np.int64(J), raw))
        m = raw.astype(cp.uint64) * np.uint64(r)
        keep = (m & np.uint64(0xFFFFFFFF)) >= np.uint64(threshold)
        pos = cp.cumsum(keep, axis=1, dtype=cp.int64) - 1
        enough = (pos[:, -1] >= P - 1).get()
        take = keep & (pos < P) & cp.asarray(enough)[:, None]
        f, j = cp.nonzero(take)
        flat[idx[f], pos[f, j]] = (m[f, j] >> np.uint64(32)).astype(cp.int32)
        left.extend(part[~enough].tolist())
    return np.asarray(left, dtype=np.int64)


def _numpy_block(seed: int, n: int, hi: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, int(hi) + 1, size=(n, n), dtype=np.int32)


def draw_uniform_int32_device(seeds: list[int], n: int, hi: int) -> Any:
    """The ``(B, n, n)`` int32 device stack whose block ``b`` is
    ``default_rng(seeds[b]).integers(0, hi + 1, (n, n), dtype=np.int32)``, value for value.

    A block with a rejected draw (Lemire's method, module docstring; about one in 33 at
    n = 512 and hi = 512) is drawn again on the device from its raw draws
    (:func:`_redraw`); one with more rejections than that leaves room for, by NumPy, and
    uploaded into its place. Returns after the device finished (the draw's time
    is the caller's, not the next kernel's).

    Raises
    ------
    ValueError
        For ``hi`` outside ``[1, 2**31 - 2]`` (the kernel's range) or ``n < 1``.
    """
    import cupy as cp

    out, again = _launch(seeds, n, hi)
    for b in again.tolist():
        out[b] = cp.asarray(_numpy_block(seeds[b], int(n), hi))
    cp.cuda.get_current_stream().synchronize()
    return out
