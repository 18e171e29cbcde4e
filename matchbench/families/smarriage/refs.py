"""CPU references for stable marriage: all compute the man-optimal stable matching.

- :class:`GaleShapley` (``gs``): Gale-Shapley with a queue of free men, Manne, Naim,
  Lerring & Halappanavar, *On stable marriages and greedy matchings*, CSC 2016 (paper IV of
  Naim's 2017 thesis), Sec. 2, Alg. 1, sequential.
- :class:`McVitieWilson` (``mw``): McVitie & Wilson's recursive proposals (paper IV, Sec.
  2, after Alg. 1), the recursion a loop.
- :class:`ParallelGaleShapley` (``gs_par``) and :class:`ParallelMcVitieWilson` (``mw_par``):
  the multicore versions of paper IV, Sec. 4, with ``numba.prange`` for OpenMP and a
  compare-and-swap per proposal.

All four run on both layouts of :class:`~matchbench.families.smarriage.problem.Preferences`. On
"lists" man ``m``'s candidates are the entries ``p`` in ``[mptr[m], mptr[m+1])``, the woman
``mlist[p]``, who ranks him ``mrank[p]``; on "master" they are the positions ``p`` in
``[0, n)`` of the common order, the woman ``mlist[p]``, who ranks him ``mrank[m]`` (as every
woman does). The kernels take a ``master`` flag and scan the one or the other (see
:func:`_next_acceptable`).

Conventions shared by the four:

- **Skipping hopeless proposals.** A man never proposes to a woman who holds a man she
  ranks above him (Alg. 1 lines 4-6: ``nextCandidate`` is called again while
  ``ranking(partner, u) > ranking(partner, suitor(partner))``); paper IV, Sec. 2: "no l_i
  should propose to an r_j who already has a proposal from someone whom r_j ranks higher".
- **The ``proposals`` counter** counts the women considered, i.e. the calls of
  ``nextCandidate`` (Alg. 1 lines 4 and 6), skipped ones included; a CAS retried on the same
  woman (parallel versions) is not a new one. Each man's pointer only moves forward and
  stops at his man-optimal wife, so the count is the sum over men of the (1-based) position
  of his final wife in his list, or his list's length if he ends single: the same number
  for all four solvers and every interleaving, and ``n(n+1)/2`` on the hard (master)
  instances of paper IV, Sec. 4 ("the total number of considered women will always be
  n(n+1)/2"). It is the numerator of the paper's TEPS (its Figures 7-8).
- **Exhausted lists** (SMI): Alg. 1 assumes a candidate is always found; here a man whose
  list runs out stays single and leaves the queue.
- The answer is read off the women's suitors at the end (Alg. 1 keeps only ``suitor``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numba
import numpy as np
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.extending import intrinsic

from matchbench.core.params import host_cores, parse_threads
from matchbench.core.solver import BaseSolver
from matchbench.families.smarriage.problem import Preferences, SMatching

#: a woman without a suitor: ranking(r_j, NULL) = n + 1 in Alg. 1, here above every word
EMPTY = np.iinfo(np.int64).max
#: the low 32 bits of a packed suitor word hold the man
_MAN_MASK = (1 << 32) - 1
#: packed words need men and ranks below 2^31
MAX_PACKED = 2**31 - 1

# ---------------------------------------------------------------------------------------
# Atomics (numba has none for array elements): LLVM cmpxchg and an atomic load.
#
# Memory ordering. A man is owned by exactly one thread at a time: the one processing him,
# or, while he is some woman's suitor, nobody; the thread whose CAS takes him out of the
# woman's word becomes his owner. The CAS is acq_rel, so the owner's writes before the CAS
# that made him a suitor (his list pointer ``nxt[m]``) happen before the new owner's reads
# after the CAS that displaces him (every later CAS on that word continues the release
# sequence). The scans read the words with a monotonic (relaxed) load: a woman's word only
# ever decreases, so a stale value is at least her current one, and a man who reads "she
# holds someone better" is right; one who reads "I beat her suitor" finds out by the CAS.


def _slot(context, builder, sig, args):
    arr_t, idx_t = sig.args[0], sig.args[1]
    ary = context.make_array(arr_t)(context, builder, args[0])
    idx = context.cast(builder, args[1], idx_t, types.intp)
    return cgutils.get_item_pointer(context, builder, arr_t, ary, [idx], wraparound=False)


def _int64_slot(arr: Any, idx: Any) -> bool:
    return (
        isinstance(arr, types.Array)
        and arr.ndim == 1
        and arr.dtype == types.int64
        and isinstance(idx, types.Integer)
    )


@intrinsic
def atomic_cas(typingctx, arr, idx, expected, desired):
    """``arr[idx]``: if it equals ``expected``, set it to ``desired``; returns the old value.

    One ``cmpxchg`` (acq_rel on success, acquire on failure) on an int64 array element; the
    swap happened exactly when the returned value equals ``expected``.
    """
    if not (
        _int64_slot(arr, idx)
        and isinstance(expected, types.Integer)
        and isinstance(desired, types.Integer)
    ):
        return None
    sig = types.int64(arr, idx, expected, desired)

    def codegen(context, builder, sig, args):
        ptr = _slot(context, builder, sig, args)
        exp = context.cast(builder, args[2], sig.args[2], types.int64)
        des = context.cast(builder, args[3], sig.args[3], types.int64)
        pair = builder.cmpxchg(ptr, exp, des, "acq_rel", "acquire")
        return builder.extract_value(pair, 0)

    return sig, codegen


@intrinsic
def atomic_load(typingctx, arr, idx):
    """``arr[idx]`` read with one atomic (monotonic) load, for words other threads CAS."""
    if not _int64_slot(arr, idx):
        return None
    sig = types.int64(arr, idx)

    def codegen(context, builder, sig, args):
        ptr = _slot(context, builder, sig, args)
        return builder.load_atomic(ptr, "monotonic", 8)

    return sig, codegen


# ---------------------------------------------------------------------------------------
# Kernels


@njit(cache=True)
def _start(n_men, master, mptr):
    """``nxt[m]``: the position of man m's next candidate, initially his first."""
    if master:
        return np.zeros(n_men, dtype=np.int64)
    return mptr[:-1].astype(np.int64)


@njit(cache=True)
def _wives(n_men, husband):
    wife = np.full(n_men, -1, dtype=np.int64)
    for w in range(husband.shape[0]):
        if husband[w] >= 0:
            wife[husband[w]] = w
    return wife


@njit(cache=True, inline="always")
def _next_acceptable(u, nxt, master, n_women, mptr, mlist, mrank, hrank):
    """Alg. 1 lines 4-6: man u's next woman who ranks him above her suitor (sequential).

    Returns ``(woman or -1 when u's list is exhausted, her rank of u, women considered)``
    and moves ``nxt[u]`` past the woman found. One scan loop per layout: with the layout
    test inside the loop LLVM compiles it about 5x slower.
    """
    p = nxt[u]
    considered = 0
    if master:  # candidates mlist[0:n], each ranks u as mrank[u]
        r = mrank[u]
        while p < n_women:
            w = mlist[p]
            p += 1
            considered += 1
            if r < hrank[w]:
                nxt[u] = p
                return w, r, considered
    else:  # candidates mlist[mptr[u]:mptr[u+1]], ranking u as mrank[p]
        stop = mptr[u + 1]
        while p < stop:
            w = mlist[p]
            r = mrank[p]
            p += 1
            considered += 1
            if r < hrank[w]:
                nxt[u] = p
                return w, r, considered
    nxt[u] = p
    return -1, mrank[0], considered


@njit(cache=True)
def gs_kernel(n_men, n_women, master, mptr, mlist, mrank):
    """Gale-Shapley with a FIFO queue of free men, Alg. 1 of paper IV.

    ``suitor`` (the paper's ``suitor(r_j)``) and ``hrank`` (``ranking(r_j, suitor(r_j))``,
    int64 max for NULL) are per woman; the queue is a ring of ``n_men`` slots (a man is in
    it at most once). Returns ``(wife, proposals, displaced)``.
    """
    suitor = np.full(n_women, -1, dtype=np.int64)
    hrank = np.full(n_women, EMPTY, dtype=np.int64)
    nxt = _start(n_men, master, mptr)
    queue = np.arange(n_men).astype(np.int64)  # line 1: Q = L
    head = 0
    size = n_men
    proposals = 0
    displaced = 0
    while size > 0:  # line 2
        u = queue[head]  # line 3
        head += 1
        if head == n_men:
            head = 0
        size -= 1
        w, r, considered = _next_acceptable(u, nxt, master, n_women, mptr, mlist, mrank, hrank)
        proposals += considered
        if w < 0:  # u's list is exhausted: he stays single (not in Alg. 1)
            continue
        old = suitor[w]
        if old >= 0:  # lines 7-8: the displaced suitor joins the end of the queue
            tail = head + size
            if tail >= n_men:
                tail -= n_men
            queue[tail] = old
            size += 1
            displaced += 1
        suitor[w] = u  # line 9
        hrank[w] = r
    return _wives(n_men, suitor), proposals, displaced


@njit(cache=True)
def mw_kernel(n_men, n_women, master, mptr, mlist, mrank):
    """McVitie-Wilson: men enter one at a time; a displaced man proposes again at once.

    Paper IV, Sec. 2: Alg. 1 with the queue replaced by a stack. The stack holds the men not
    yet introduced (the outer loop) plus at most one displaced man on top, since a proposal
    displaces at most one man, so it is the loop variable ``u`` (the recursion of McVitie &
    Wilson 1971 is a tail call). Returns ``(wife, proposals, displaced)``.
    """
    suitor = np.full(n_women, -1, dtype=np.int64)
    hrank = np.full(n_women, EMPTY, dtype=np.int64)
    nxt = _start(n_men, master, mptr)
    proposals = 0
    displaced = 0
    for s in range(n_men):  # the outer loop: introduce man s
        u = s
        while u >= 0:  # the recursion: u = the man just displaced
            w, r, considered = _next_acceptable(u, nxt, master, n_women, mptr, mlist, mrank, hrank)
            proposals += considered
            if w < 0:  # exhausted: u stays single, the recursion ends
                break
            old = suitor[w]
            suitor[w] = u
            hrank[w] = r
            u = old  # -1 (she was free): the recursion ends
            if old >= 0:
                displaced += 1
    return _wives(n_men, suitor), proposals, displaced


@njit(cache=True, inline="always")
def _claim(u, r, w, word):
    """Make u the suitor of w by CAS if w ranks u (as r) above her suitor.

    ``word[w]`` packs ``(rank w gives her suitor) << 32 | suitor`` (EMPTY: none), so "w
    ranks u above her suitor" is ``mine < word[w]``. If the CAS fails because another
    thread changed the word, retry while u still beats the new suitor (paper IV, Sec. 4).
    Returns -2 when w keeps a better suitor, else the man displaced (-1: none).
    """
    mine = (np.int64(r) << 32) | np.int64(u)
    cur = atomic_load(word, w)
    while mine < cur:
        seen = atomic_cas(word, w, cur, mine)
        if seen == cur:
            return -1 if cur == EMPTY else cur & _MAN_MASK
        cur = seen  # lost the race: retry only while u still beats the new suitor
    return -2


@njit(cache=True, inline="always")
def _propose_cas(u, nxt, master, n_women, mptr, mlist, mrank, word):
    """Paper IV, Sec. 4 (OpenMP): man u proposes down his list, winning a woman by CAS.

    Search for the first woman who prefers u to her current suitor and CAS u in
    (:func:`_claim`); a woman found to hold a better suitor is passed over for good, as her
    word only decreases. ``nxt[u]`` is written before the CAS that publishes u (memory
    ordering above). Returns ``(displaced man or -1, women considered)``; -1 also when u's
    list runs out. One loop per layout, as in :func:`_next_acceptable`.
    """
    p = nxt[u]
    considered = 0
    if master:
        r = mrank[u]
        while p < n_women:
            w = mlist[p]
            p += 1
            considered += 1
            nxt[u] = p
            got = _claim(u, r, w, word)
            if got != -2:
                return got, considered
    else:
        stop = mptr[u + 1]
        while p < stop:
            w = mlist[p]
            r = mrank[p]
            p += 1
            considered += 1
            nxt[u] = p
            got = _claim(u, r, w, word)
            if got != -2:
                return got, considered
    nxt[u] = p
    return np.int64(-1), considered


@njit(cache=True)  # not inlined: parfors rejects a reassigned copy of the prange index
def _chain_cas(s, nxt, master, n_women, mptr, mlist, mrank, word):
    """McVitie-Wilson's recursion from man s, by CAS: go on with each man displaced until a
    proposal displaces nobody (or a list runs out). Returns ``(women considered, men
    displaced)``."""
    u = np.int64(s)  # the prange index may be unsigned; -1 ends the chain
    considered = 0
    displaced = 0
    while u >= 0:
        u, c = _propose_cas(u, nxt, master, n_women, mptr, mlist, mrank, word)
        considered += c
        if u >= 0:
            displaced += 1
    return considered, displaced


@njit(cache=True)
def _wives_from_words(n_men, word):
    wife = np.full(n_men, -1, dtype=np.int64)
    for w in range(word.shape[0]):
        if word[w] != EMPTY:
            wife[word[w] & _MAN_MASK] = w
    return wife


@njit(cache=True, parallel=True)
def gs_par_kernel(n_men, n_women, master, mptr, mlist, mrank):
    """Parallel Gale-Shapley in rounds (paper IV, Sec. 4).

    Each round, every free man proposes in parallel (``prange``; :func:`_propose_cas`);
    the men displaced in the round, at most one per proposer, are the next round's free men.
    This is the variant paper IV describes for load balance ("synchronize the threads after
    each round of proposals and then redistribute the unmarried men"); its own OpenMP code
    kept a local queue per thread instead. Returns ``(wife, proposals, displaced, rounds)``.
    """
    word = np.full(n_women, EMPTY, dtype=np.int64)
    nxt = _start(n_men, master, mptr)
    free = np.arange(n_men).astype(np.int64)
    out = np.empty(n_men, dtype=np.int64)
    n_free = n_men
    proposals = 0
    displaced = 0
    rounds = 0
    while n_free > 0:
        rounds += 1
        for i in prange(n_free):
            out[i], considered = _propose_cas(
                free[i], nxt, master, n_women, mptr, mlist, mrank, word
            )
            proposals += considered
        k = 0  # after the implicit barrier of prange
        for i in range(n_free):
            if out[i] >= 0:
                free[k] = out[i]
                k += 1
        n_free = k
        displaced += k
    return _wives_from_words(n_men, word), proposals, displaced, rounds


@njit(cache=True, parallel=True)
def mw_par_kernel(n_men, n_women, master, mptr, mlist, mrank):
    """Parallel McVitie-Wilson (paper IV, Sec. 4, after the OpenMP Suitor of paper I Alg. 3).

    The men are partitioned among the threads (``prange``); a thread introduces its man and
    goes on with every man it displaces until a proposal displaces nobody. Returns
    ``(wife, proposals, displaced)``.
    """
    word = np.full(n_women, EMPTY, dtype=np.int64)
    nxt = _start(n_men, master, mptr)
    proposals = 0
    displaced = 0
    for s in prange(n_men):
        c, d = _chain_cas(s, nxt, master, n_women, mptr, mlist, mrank, word)
        proposals += c
        displaced += d
    return _wives_from_words(n_men, word), proposals, displaced


# ---------------------------------------------------------------------------------------
# Solvers


def _kernel_args(instance: Preferences) -> tuple[Any, ...]:
    """The kernels' arguments; a master instance passes a one-entry dummy ``mptr``."""
    mptr = np.zeros(1, dtype=instance.mlist.dtype) if instance.master else instance.mptr
    return (instance.n_men, instance.n_women, instance.master, mptr, instance.mlist, instance.mrank)


class _SMCPU(BaseSolver):
    """Shared life cycle: compile in ``prepare`` (once per array dtypes), solve in ``run``."""

    problem: ClassVar[str] = "smarriage"
    device: ClassVar[str] = "cpu"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._instance: Preferences | None = None
        self._wife: np.ndarray | None = None
        self._counters: dict[str, int | float] = {}
        self._compiled: set[tuple[str, ...]] = set()

    def _solve(self, args: tuple[Any, ...]) -> tuple[np.ndarray, dict[str, int | float]]:
        raise NotImplementedError

    def prepare(self, instance: Preferences, init: Any | None = None) -> None:
        args = _kernel_args(instance)
        key = tuple(str(a.dtype) for a in args[3:])
        if key not in self._compiled:  # compile on an empty instance of the same dtypes
            mptr, mlist, mrank = args[3:]
            self._solve((0, 0, instance.master, mptr[:1], mlist[:0], mrank[:0]))
            self._compiled.add(key)
        self._instance = instance
        self._wife = None
        self._counters = {}

    def run(self) -> None:
        if self._instance is None:
            raise RuntimeError(f"{self.name}: run() before prepare()")
        self._wife, self._counters = self._solve(_kernel_args(self._instance))

    def result(self) -> SMatching:
        if self._wife is None:
            raise RuntimeError(f"{self.name}: result() before run()")
        return SMatching(self._wife, proposals=int(self._counters["proposals"]))

    def counters(self) -> dict[str, int | float]:
        return dict(self._counters)


def _counters(wife: np.ndarray, proposals: Any, displaced: Any) -> dict[str, int | float]:
    return {
        "proposals": int(proposals),
        "displaced": int(displaced),
        "pairs": int((wife >= 0).sum()),
    }


class GaleShapley(_SMCPU):
    """Gale-Shapley with a queue of free men (sequential).

    Counters: ``proposals`` (women considered, module docstring), ``displaced`` (suitors
    displaced, i.e. rejections of engaged men), ``pairs``.

    Notes
    -----
    Manne, Naim, Lerring & Halappanavar, CSC 2016 (paper IV), Alg. 1, with the hopeless
    proposals skipped (lines 4-6) and exhausted lists handled (:func:`gs_kernel`). Time
    proportional to the women considered. On the hard instances both Gale-Shapley and
    McVitie-Wilson displace about n^2/4 men, but here each one goes through the queue and
    resumes his scan later, cold, where McVitie-Wilson goes on with him at once: paper IV,
    Sec. 4 measures sequential Gale-Shapley 109% slower there and gives this reason.
    """

    name: ClassVar[str] = "gs"

    def _solve(self, args: tuple[Any, ...]) -> tuple[np.ndarray, dict[str, int | float]]:
        wife, proposals, displaced = gs_kernel(*args)
        return wife, _counters(wife, proposals, displaced)


class McVitieWilson(_SMCPU):
    """McVitie-Wilson: each man is introduced once; displaced men propose again at once.

    Counters: ``proposals`` (women considered, module docstring), ``displaced``, ``pairs``.

    Notes
    -----
    McVitie & Wilson, *The stable marriage problem*, CACM 14(7), 1971, as paper IV Sec. 2
    describes it (Alg. 1 with a stack instead of the queue); see :func:`mw_kernel`.
    """

    name: ClassVar[str] = "mw"

    def _solve(self, args: tuple[Any, ...]) -> tuple[np.ndarray, dict[str, int | float]]:
        wife, proposals, displaced = mw_kernel(*args)
        return wife, _counters(wife, proposals, displaced)


class _SMParallel(_SMCPU):
    """Multicore (numba ``prange``) solvers in ``threads`` threads.

    Parameters
    ----------
    threads : int or None
        Threads of numba's pool (``numba.set_num_threads`` around the solve, restored
        after); None: every core of the host (at most ``NUMBA_NUM_THREADS``). Skipped when
        more threads are asked for than numba's pool holds. The counter ``threads`` records
        the number used.

    Raises
    ------
    ValueError
        Naming ``threads``, for a value that is not a positive integer or None.
    """

    def __init__(self, *, threads: int | None) -> None:
        self.threads = parse_threads(threads)
        super().__init__(threads=threads)

    def _n_threads(self) -> int:
        return self.threads or min(host_cores(), numba.config.NUMBA_NUM_THREADS)

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        if self.threads is not None and self.threads > numba.config.NUMBA_NUM_THREADS:
            return True, (
                f"{self.name}: threads={self.threads} exceeds numba's pool of "
                f"{numba.config.NUMBA_NUM_THREADS} (set NUMBA_NUM_THREADS before starting)"
            )
        if max(instance.n_men, instance.n_women) > MAX_PACKED:
            return True, (
                f"{self.name}: {instance.name} has more than 2^31 - 1 men or women "
                "(packed 64-bit suitor words)"
            )
        return False, None

    def _kernel(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        raise NotImplementedError

    def _solve(self, args: tuple[Any, ...]) -> tuple[np.ndarray, dict[str, int | float]]:
        threads = self._n_threads()
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            got = self._kernel(args)
        finally:
            numba.set_num_threads(before)
        wife = got[0]
        counters = _counters(wife, got[1], got[2])
        counters["threads"] = threads
        if len(got) > 3:
            counters["rounds"] = int(got[3])
        return wife, counters


class ParallelGaleShapley(_SMParallel):
    """Parallel Gale-Shapley in rounds of parallel proposals, CAS per proposal.

    Counters: ``proposals`` (women considered, module docstring), ``displaced``, ``pairs``,
    ``rounds`` (rounds of parallel proposals), ``threads``.

    Notes
    -----
    Paper IV, Sec. 4 (OpenMP Gale-Shapley), with the per-round redistribution of the free
    men that the paper discusses; see :func:`gs_par_kernel` and :func:`_propose_cas`.
    """

    name: ClassVar[str] = "gs_par"

    def _kernel(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return gs_par_kernel(*args)


class ParallelMcVitieWilson(_SMParallel):
    """Parallel McVitie-Wilson: each thread follows the chain of men it displaces.

    Counters: ``proposals`` (women considered, module docstring), ``displaced``, ``pairs``,
    ``threads``.

    Notes
    -----
    Paper IV, Sec. 4 (OpenMP McVitie-Wilson, after the Suitor algorithm of Manne &
    Halappanavar, IPDPS 2014; paper I, Alg. 3); see :func:`mw_par_kernel` and
    :func:`_propose_cas`. The men are split statically among the threads (numba's
    ``prange`` schedule); the paper suggests OpenMP's dynamic schedule against imbalance.
    """

    name: ClassVar[str] = "mw_par"

    def _kernel(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return mw_par_kernel(*args)
