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

from matchbench.core.seeds import seed_words

#: Threads per block of ``lap_draw_uniform_i32``.
THREADS = 256


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
