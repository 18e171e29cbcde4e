"""NumPy's seeding, vectorized: the words PCG64 starts from, for many seeds at once.

``numpy.random.default_rng(seed)`` hashes ``seed`` with a SeedSequence into four 64-bit
words, from which PCG64 sets its state. Made one seed at a time that costs about 11 us
under the GIL; :func:`seed_words` makes the words of a whole batch's seeds in a few NumPy
operations, for the generators that draw a batch's instances in compiled code (LAP costs on
the GPU, random geometric graphs on host threads), value for value NumPy's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["seed_words"]

# numpy.random.bit_generator's SeedSequence constants (32-bit words).
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_XSHIFT = 16
_POOL = 4
_M32 = 0xFFFFFFFF

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
