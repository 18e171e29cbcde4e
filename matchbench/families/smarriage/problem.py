"""Stable marriage: strict preference lists, the man-optimal stable matching, its certificate.

An instance has ``n_men`` men and ``n_women`` women. Each person has a strict preference
list, best first, over some people of the other side: complete lists give SM, incomplete
lists SMI. An entry that only one side lists is purged when the instance is built, as
Manne, Naim, Lerring & Halappanavar do (*On stable marriages and greedy matchings*, CSC
2016; paper IV of Naim's 2017 thesis), and ``purged`` counts the purged entries. After
that, ``m`` lists ``w`` exactly when ``w`` lists ``m``.

Storage, O(total list length), in one of two layouts:

- **lists** (easy SMI, files): men's lists as a CSR ``mptr``/``mlist``, women's as
  ``wptr``/``wlist``, and ``mrank[p]``, the rank (0 = best) that woman ``mlist[p]`` gives
  the man whose list holds entry ``p``. The ranks are built, not searched for, by
  parallel passes: a counting sort groups the men's entries by woman, and each woman's
  list, sorted by man, is merged with her group. O(total), but for those short sorts
  (O(total log L) at worst, L the longest list).
- **master** (hard SM): every man ranks the women in the one order ``mlist`` (length
  ``n``), and every woman ranks the men in the one order ``wlist``. ``mrank[m]`` is the
  rank every woman gives man ``m``. ``mptr``/``wptr`` are None: there are no n^2 lists.

An answer is a :class:`SMatching`: ``wife[m]``, -1 for an unmatched man.

Certificate (:meth:`SM.verify`, independent of the solvers, O(total)):

1. Valid: every pair is mutually listed, and no woman has two husbands.
2. Stable: no blocking pair. Man ``m`` and woman ``w`` block when ``m`` lists ``w`` above
   his wife (or has none) and ``w`` ranks ``m`` above her husband (or has none). Each man's
   list is scanned only up to his wife.
3. Man-optimal: the answer equals the man-optimal stable matching, pair for pair. It is
   unique, so every correct solver returns the same answer. For master instances it is
   known in closed form: the k-th man of the women's order marries the k-th woman of the
   men's order. For lists, the verifier runs its own Gale-Shapley once per instance (cached).
4. Proposals: where the answer carries the solver's count of women considered
   (``SMatching.proposals``), it must equal the count the answer implies. Every man's pointer
   only moves forward and stops at his man-optimal wife, so he considers the women of his
   list up to and including her, or his whole list if he ends single: whatever the order
   of proposals, sequential or parallel. On the hard instances that is n(n+1)/2.
"""

from __future__ import annotations

import json
import os
import weakref
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

import numba
import numpy as np
from numba import njit, prange

from matchbench.core.errors import DatasetError
from matchbench.core.problem import Problem, Verification, save_instance_npz

NPZ_VERSION = 1


def _err(name: str, msg: str) -> DatasetError:
    return DatasetError(f"stable marriage instance {name!r}: {msg}")


# ---------------------------------------------------------------------------------------
# Construction: validate, purge one-sided entries, rank (numba, parallel passes)
#
# Every pass below is a ``prange`` over people, entries or buckets of keys; none of their
# results depends on the thread count or on how the work is cut into chunks (chunk counts
# only set the grain of the load balance).


@njit(cache=True)
def _check_lists(n_own, n_other, ptr, lst):
    """``(code, person, position)`` of the first defect: 1 out of range, 2 listed twice.

    Sequential: the constructor runs it only once its parallel passes found a defect,
    to name the first one (in person order, then position).
    """
    seen = np.full(n_other, -1, dtype=np.int64)
    for a in range(n_own):
        for p in range(ptr[a], ptr[a + 1]):
            b = lst[p]
            if b < 0 or b >= n_other:
                return 1, a, p - ptr[a]
            if seen[b] == a:
                return 2, a, p - ptr[a]
            seen[b] = a
    return 0, -1, -1


@njit(cache=True, parallel=True)
def _count_outside(lst, n_other):
    """Entries of ``lst`` outside ``[0, n_other)``."""
    bad = 0
    for p in prange(lst.shape[0]):
        b = lst[p]
        if b < 0 or b >= n_other:
            bad += 1
    return bad


@njit(cache=True, parallel=True)
def _fill_owners(ptr, out):
    """``out[p] = a`` for every entry ``p`` of person ``a``'s list."""
    for a in prange(ptr.shape[0] - 1):
        for p in range(ptr[a], ptr[a + 1]):
            out[p] = a


def _n_chunks(work: int, grain: int = 1 << 16, per_thread: int = 16) -> int:
    """Chunks for a parallel pass over ``work`` items: about ``grain`` items each, at most
    ``per_thread`` per thread (enough to balance the load; the result never depends on it)."""
    return max(1, min(work // grain, per_thread * numba.get_num_threads()))


def _bucket_shift(n_keys: int) -> int:
    """Keys per bucket, as a shift, for the two-level counting sort (:func:`_bucket_entries`):
    at most 2^9 buckets, so that the scatter into them writes to few enough places at a
    time for the caches and the TLB (2^11 buckets ran 1.5x slower), while a bucket's key
    counts stay small (n = 25 million: 49k keys, 390 kB)."""
    return max(int(n_keys - 1).bit_length() - 9, 0)


@njit(cache=True, parallel=True)
def _scatter_to_buckets(key, shift, n_chunks, payload, labels, bptr, tidx, tkey, tpay):
    """First pass of the counting sort by key (:func:`_bucket_entries`): entry ``i`` (its
    label, ``key[i]`` and ``payload[i]``) to bucket ``key[i] >> shift``, in entry order
    inside each bucket. The label is ``labels[i]``, or ``i`` where ``labels`` is empty.

    Every chunk of entries counts its buckets, the offsets are laid out bucket by bucket
    and, in a bucket, chunk by chunk; each chunk then writes its own slots, so the result
    is the stable order whatever the chunks. Fills ``bptr`` (bucket offsets) and the
    scattered ``tidx`` (entry), ``tkey``, ``tpay``.
    """
    total = key.shape[0]
    n_buckets = bptr.shape[0] - 1
    at = np.zeros((n_chunks, n_buckets), dtype=np.int64)
    for c in prange(n_chunks):
        c64 = np.int64(c)  # the prange index may be unsigned
        for i in range(total * c64 // n_chunks, total * (c64 + 1) // n_chunks):
            at[c64, key[i] >> shift] += 1
    s = 0
    for b in range(n_buckets):
        bptr[b] = s
        for c in range(n_chunks):
            h = at[c, b]
            at[c, b] = s
            s += h
    bptr[n_buckets] = s
    for c in prange(n_chunks):
        c64 = np.int64(c)
        for i in range(total * c64 // n_chunks, total * (c64 + 1) // n_chunks):
            k = key[i]
            d = at[c64, k >> shift]
            at[c64, k >> shift] = d + 1
            tidx[d] = labels[i] if labels.shape[0] else i
            tkey[d] = k
            tpay[d] = payload[i]


@njit(cache=True)
def _place_bucket(bs, be, k0, nk, tkey, tidx, tpay, perm, pay, cnt):
    """Second pass of the counting sort by key, for the bucket of entries ``[bs, be)`` and
    keys ``[k0, k0 + nk)``: stable, into ``perm[d]`` (the label) and ``pay[d]``, ``d``
    counted from the bucket's start. Leaves each key's group end (from the bucket's start
    too) in ``cnt`` (scratch, at least ``nk`` long)."""
    cnt[:nk] = 0
    for j in range(bs, be):
        cnt[tkey[j] - k0] += 1
    s = 0
    for k in range(nk):
        h = cnt[k]
        cnt[k] = s
        s += h
    for j in range(bs, be):
        k = tkey[j] - k0
        d = cnt[k]
        cnt[k] = d + 1
        perm[d] = tidx[j]
        pay[d] = tpay[j]


@njit(cache=True)
def _bucket_range(n_buckets, n_chunks, c):
    """Buckets ``[b0, b1)`` of chunk ``c`` (the prange index may be unsigned)."""
    c64 = np.int64(c)
    return n_buckets * c64 // n_chunks, n_buckets * (c64 + 1) // n_chunks


@njit(cache=True)
def _small_sort_order(v, tmp, out, base):
    """Write ``tmp[i]`` to ``out[base + r_i]``, ``r_i`` the rank of ``(v[i], i)`` among the
    ``(v[j], j)``: a stable counting sort of a short ``v`` by pairwise comparisons. O(g^2)
    for g values, but without a branch to mispredict, and it vectorises: three times
    faster than an insertion sort on sm_easy's groups (some 25 random values)."""
    g = v.shape[0]
    for i in range(g):
        x = v[i]
        r = 0
        for j in range(g):
            r += v[j] < x
        for j in range(i):
            r += v[j] == x
        out[base + r] = tmp[i]


#: Groups up to this long are sorted by :func:`_small_sort_order`, longer ones by a
#: merge sort.
_SMALL = 64


@njit(cache=True, parallel=True)
def _place_buckets_sorted(shift, n_keys, n_chunks, bptr, tkey, tidx, tpay, kptr, perm):
    """Second pass of :func:`_group_by_key`: every bucket counting-sorted by key
    (:func:`_place_bucket`), each key's group then sorted by payload, stably (equal
    payloads in entry order). A ``prange`` over chunks of buckets, each with its scratch:
    fresh memory per bucket cost more in page faults than the sort itself."""
    n_buckets = bptr.shape[0] - 1
    for c in prange(n_chunks):
        b0, b1 = _bucket_range(n_buckets, n_chunks, c)
        longest = 0
        for b in range(b0, b1):
            longest = max(longest, bptr[b + 1] - bptr[b])
        lp = np.empty(longest, dtype=tpay.dtype)
        cnt = np.empty(np.int64(1) << shift, dtype=np.int64)
        tmp = np.empty(_SMALL, dtype=perm.dtype)
        for b in range(b0, b1):
            bs, be, k0 = bptr[b], bptr[b + 1], b << shift
            nk = min(n_keys - k0, np.int64(1) << shift)
            _place_bucket(bs, be, k0, nk, tkey, tidx, tpay, perm[bs:be], lp, cnt)
            g0 = 0
            for k in range(nk):
                kptr[k0 + k] = bs + g0
                g1 = cnt[k]
                if g1 - g0 > _SMALL:
                    o = np.argsort(lp[g0:g1], kind="mergesort")  # stable
                    perm[bs + g0 : bs + g1] = perm[bs + g0 : bs + g1][o]
                elif g1 - g0 > 1:
                    for i in range(g1 - g0):
                        tmp[i] = perm[bs + g0 + i]
                    _small_sort_order(lp[g0:g1], tmp, perm, bs + g0)
                g0 = g1


def _bucket_entries(
    key: np.ndarray, n_keys: int, payload: np.ndarray, labels: np.ndarray | None = None
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The entries in buckets of ``2**shift`` keys (:func:`_scatter_to_buckets`), for
    :func:`_group_by_key` and :func:`_join`: returns ``(shift, bptr, tkey, tidx, tpay)``."""
    total = key.shape[0]
    if labels is None:
        labels = np.empty(0, dtype=_index_dtype(total))
    shift = _bucket_shift(n_keys)
    bptr = np.zeros(((max(n_keys, 1) - 1) >> shift) + 2, dtype=np.int64)
    tidx = np.empty(total, dtype=labels.dtype)
    tkey = np.empty(total, dtype=key.dtype)
    tpay = np.empty(total, dtype=payload.dtype)
    if total:
        _scatter_to_buckets(key, shift, _n_chunks(total), payload, labels, bptr, tidx, tkey, tpay)
    return shift, bptr, tkey, tidx, tpay


def _group_by_key(
    key: np.ndarray, n_keys: int, payload: np.ndarray, labels: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The entries sorted by ``(key, payload, entry)``: a parallel counting sort by key,
    O(total + n_keys), then a sort of each key's group by payload.

    Parameters
    ----------
    key : 1-D int array
        ``key[i]`` in ``[0, n_keys)`` (not checked).
    n_keys : int
    payload : 1-D array, as long as ``key``
        The order inside a group (equal payloads: entry order). Carried along with the
        entries, read once in order: no gather by the permutation afterwards.
    labels : 1-D array, as long as ``key``, optional
        What ``perm`` lists instead of the entries (``labels[perm]``, without the gather);
        carried, never compared.

    Returns
    -------
    kptr, perm : ndarray
        ``perm`` lists the entries of key ``k`` in ``[kptr[k], kptr[k + 1])``: int32 below
        2^31 entries, else int64, or the labels. ``kptr`` is int64, ``n_keys + 1`` long.

    Notes
    -----
    Two levels, so that neither a thread's key counts nor its scatter targets outgrow the
    caches: the entries are scattered into buckets of ``2**shift`` consecutive keys
    (:func:`_bucket_entries`), then every bucket is counting-sorted on its own
    (:func:`_place_buckets_sorted`).
    """
    total = key.shape[0]
    shift, bptr, tkey, tidx, tpay = _bucket_entries(key, n_keys, payload, labels)
    kptr = np.zeros(n_keys + 1, dtype=np.int64)
    perm = np.empty(total, dtype=tidx.dtype)
    if total == 0 or n_keys == 0:
        return kptr, perm
    chunks = _n_chunks(bptr.shape[0] - 1, 1, per_thread=2)  # each allocates its scratch
    _place_buckets_sorted(shift, n_keys, chunks, bptr, tkey, tidx, tpay, kptr, perm)
    kptr[n_keys] = total
    return kptr, perm


@njit(cache=True)
def _join_buckets(b0, b1, shift, bptr, tkey, tidx, tpay, wptr, wlist, keep_w, mrank):
    """:func:`_join` for the buckets ``[b0, b1)``, in one thread (a function of its own:
    parfors rejects this loop nest inside the ``prange``). Returns ``(pairs, repeat)``."""
    n_women = wptr.shape[0] - 1
    w0, w1 = min(b0 << shift, n_women), min(b1 << shift, n_women)
    longest = 0  # the scratch, once: her list, sorted,
    for b in range(w0, w1):
        longest = max(longest, wptr[b + 1] - wptr[b])
    sv = np.empty(longest, dtype=wlist.dtype)  # her men, sorted
    sq = np.empty(longest, dtype=np.int64)  # their positions in her list
    pos = np.arange(min(longest, _SMALL))
    mq = np.empty(longest, dtype=np.int64)  # a pair found: the position in her list,
    mp = np.empty(longest, dtype=np.int64)  # and the man's entry
    rank = np.empty(longest, dtype=np.int64)  # rank of a kept position after the purge
    most = 0  # and the bucket's entries, sorted
    for b in range(b0, b1):
        most = max(most, bptr[b + 1] - bptr[b])
    tpos = np.empty(most, dtype=tidx.dtype)
    towner = np.empty(most, dtype=tpay.dtype)
    cnt = np.empty(np.int64(1) << shift, dtype=np.int64)
    pairs = 0
    repeat = False
    for bk in range(b0, b1):
        k0 = bk << shift
        nk = min(n_women - k0, np.int64(1) << shift)
        _place_bucket(bptr[bk], bptr[bk + 1], k0, nk, tkey, tidx, tpay, tpos, towner, cnt)
        t0 = 0
        for k in range(nk):
            t1 = cnt[k]  # her suitors: [t0, t1) of tpos and towner
            q0 = wptr[k0 + k]
            g = wptr[k0 + k + 1] - q0
            if g > _SMALL:
                o = np.argsort(wlist[q0 : q0 + g])
                for i in range(g):
                    sq[i] = o[i]
            else:
                _small_sort_order(wlist[q0 : q0 + g], pos, sq, 0)
            for i in range(g):
                sv[i] = wlist[q0 + sq[i]]
            for i in range(1, g):
                repeat |= sv[i] == sv[i - 1]
            i = 0
            found = 0
            for t in range(t0, t1):
                a = towner[t]
                repeat |= t > t0 and towner[t - 1] == a
                while i < g and sv[i] < a:
                    i += 1
                if i < g and sv[i] == a:
                    keep_w[q0 + sq[i]] = True
                    mq[found] = sq[i]
                    mp[found] = tpos[t]
                    found += 1
                    i += 1
                else:
                    mrank[tpos[t]] = -1
            if found == g:  # nothing of hers purged: the rank is the position
                for x in range(found):
                    mrank[mp[x]] = mq[x]
            else:
                r = 0
                for q in range(g):
                    if keep_w[q0 + q]:
                        rank[q] = r
                        r += 1
                for x in range(found):
                    mrank[mp[x]] = rank[mq[x]]
            pairs += found
            t0 = t1
    return pairs, repeat


@njit(cache=True, parallel=True)
def _join(shift, n_chunks, bptr, tkey, tidx, tpay, wptr, wlist, keep_w, mrank):
    """Match the men's entries against the women's lists, woman by woman (``prange`` over
    chunks of buckets of women, :func:`_join_buckets`).

    ``shift``, ``bptr``, ``tkey``, ``tidx``, ``tpay``: the men's entries, with their men,
    in buckets by woman (:func:`_bucket_entries`). Each bucket is counting-sorted into a
    scratch array (:func:`_place_bucket`), which gives every woman her suitors in man
    order. Her list, sorted by man in another, is merged with them: a pair found on both
    sides sets ``keep_w`` of her entry and ``mrank`` of the man's entry, his rank in her
    list once the one-sided entries are gone; ``mrank`` is -1 for a man's entry she does
    not list. Returns ``(pairs found, whether some list holds a person twice)``: two equal
    neighbours in her sorted list, or two equal suitors in a row; with a repeat nothing
    else is meaningful.
    """
    n_buckets = bptr.shape[0] - 1
    repeat = np.zeros(n_chunks, dtype=np.bool_)
    pairs = 0
    for c in prange(n_chunks):
        b0, b1 = _bucket_range(n_buckets, n_chunks, c)
        p, rep = _join_buckets(b0, b1, shift, bptr, tkey, tidx, tpay, wptr, wlist, keep_w, mrank)
        repeat[np.int64(c)] = rep
        pairs += p
    return pairs, repeat.any()


@njit(cache=True, parallel=True)
def _copy_as(src, out):
    """``out[:] = src`` (cast to ``out``'s dtype), in parallel."""
    for i in prange(src.shape[0]):
        out[i] = src[i]


def _private(
    a: np.ndarray, dtype: Any, owned: bool, spare: np.ndarray | None = None
) -> np.ndarray:
    """``a`` as ``dtype``, in an array of the instance's own: ``a`` itself where it is
    ``owned`` already, else a copy, written into ``spare`` (a scratch array no longer
    needed) where that fits: fresh memory costs page faults."""
    if owned and a.dtype == dtype:
        return a
    if spare is not None and spare.dtype == dtype and spare.shape == a.shape:
        out = spare
    else:
        out = np.empty(a.shape[0], dtype=dtype)
    _copy_as(a, out)
    return out


def _as_ids(a: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(ids, owned)``: native int32 and int64 arrays as they are (the kernels are compiled
    for both), any other integer type cast to int64 (in a new array)."""
    if a.dtype == np.int32 or a.dtype == np.int64:
        return np.ascontiguousarray(a), False
    return a.astype(np.int64), True


def _compact(ptr: np.ndarray, lst: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop the entries ``~keep`` of a CSR of lists (empty lists anywhere included)."""
    kept_before = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    return kept_before[ptr].astype(ptr.dtype), lst[keep]


def _index_dtype(*sizes: int) -> Any:
    return np.int32 if max(sizes, default=0) < 2**31 else np.int64


@dataclass(eq=False)
class Preferences:
    """A stable-marriage instance (module docstring for the layouts).

    Build it with :meth:`from_lists` (per-person lists, validated and purged) or
    :meth:`master_lists` (the hard instances). The constructor takes the arrays of one
    layout as they are stored (the disk cache) and checks them again.

    Raises
    ------
    DatasetError
        (a ``ValueError``) naming the instance and the person: an id out of range, a
        person listed twice in one list, arrays of the wrong shape.
    """

    n_men: int
    n_women: int
    mlist: np.ndarray
    wlist: np.ndarray
    mptr: np.ndarray | None = None
    wptr: np.ndarray | None = None
    name: str = "prefs"
    family: str = "custom"
    params: dict[str, Any] = field(default_factory=dict)
    purged: int = 0
    mrank: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    problem: ClassVar[str] = "smarriage"

    def __post_init__(self) -> None:
        name = self.name
        self.n_men, self.n_women = int(self.n_men), int(self.n_women)
        if self.n_men < 0 or self.n_women < 0:
            raise _err(name, f"negative size ({self.n_men} men, {self.n_women} women)")
        mlist, wlist = np.asarray(self.mlist), np.asarray(self.wlist)
        for label, a in (("men's lists", mlist), ("women's lists", wlist)):
            if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
                raise _err(name, f"{label} must be a 1-D integer array, got {a.dtype} {a.shape}")
        if self.master:
            self._init_master(mlist, wlist)
        else:
            self._init_lists(mlist, wlist)

    def _init_master(self, mlist: np.ndarray, wlist: np.ndarray) -> None:
        name, n = self.name, self.n_men
        if self.n_women != n:
            raise _err(name, f"master lists need as many women as men ({n} men, {self.n_women} women)")
        for label, a in (("men's common order of the women", mlist), ("women's common order of the men", wlist)):
            if a.shape != (n,) or not np.array_equal(np.sort(a), np.arange(n)):
                raise _err(name, f"{label} is not a permutation of 0..{n - 1}")
        idx = _index_dtype(n)
        self.mlist, self.wlist = mlist.astype(idx), wlist.astype(idx)
        rank = np.empty(n, dtype=idx)
        rank[self.wlist] = np.arange(n, dtype=idx)
        self.mrank = rank

    def _init_lists(self, mlist: np.ndarray, wlist: np.ndarray) -> None:
        name = self.name
        mptr, wptr = np.asarray(self.mptr), np.asarray(self.wptr)
        for label, ptr, lst, n in (("men", mptr, mlist, self.n_men), ("women", wptr, wlist, self.n_women)):
            if ptr.shape != (n + 1,) or (n + 1 and (int(ptr[0]) != 0 or int(ptr[-1]) != lst.shape[0])):
                raise _err(name, f"the {label}'s list offsets do not span their lists")
            if np.any(np.diff(ptr) < 0):
                raise _err(name, f"the {label}'s list offsets decrease")
        mptr, wptr = mptr.astype(np.int64), wptr.astype(np.int64)
        (mlist, own_m), (wlist, own_w) = _as_ids(mlist), _as_ids(wlist)
        n_men, n_women = self.n_men, self.n_women
        if _count_outside(mlist, n_women) or _count_outside(wlist, n_men):
            self._raise_first_defect(mptr, mlist, wptr, wlist)
        # The men's entries grouped by woman, each group in man order, then merged with
        # the women's lists: the pairs both sides list, and the ranks.
        owner = np.empty(mlist.shape[0], dtype=_index_dtype(n_men))
        _fill_owners(mptr, owner)
        shift, bptr, tkey, tpos, towner = _bucket_entries(mlist, n_women, owner)
        mrank = owner  # spent: the ranks take its place (same length and dtype)
        keep_w = np.zeros(wlist.shape[0], dtype=np.bool_)
        chunks = _n_chunks(bptr.shape[0] - 1, 1, per_thread=2)  # each allocates its scratch
        args = (shift, chunks, bptr, tkey, tpos, towner, wptr, wlist, keep_w, mrank)
        pairs, dup = _join(*args)
        if dup:
            self._raise_first_defect(mptr, mlist, wptr, wlist)
        del args, bptr, tkey
        purged_m, purged_w = mlist.shape[0] - pairs, wlist.shape[0] - pairs
        self.purged = int(self.purged) + purged_m + purged_w
        if purged_m:
            keep_m = mrank >= 0
            (mptr, mlist), own_m = _compact(mptr, mlist, keep_m), True
            mrank = mrank[keep_m]
        if purged_w:
            (wptr, wlist), own_w = _compact(wptr, wlist, keep_w), True
        idx = _index_dtype(n_men, n_women, mlist.shape[0])
        self.mptr, self.mlist = mptr.astype(idx), _private(mlist, idx, own_m, spare=towner)
        self.wptr, self.wlist = wptr.astype(idx), _private(wlist, idx, own_w, spare=tpos)
        self.mrank = mrank

    def _raise_first_defect(
        self, mptr: np.ndarray, mlist: np.ndarray, wptr: np.ndarray, wlist: np.ndarray
    ) -> None:
        """Raise the error for the first defect (men's lists first, then the women's; in
        person order, then position), found again by the sequential :func:`_check_lists`."""
        mlist, wlist = mlist.astype(np.int64), wlist.astype(np.int64)
        for side, other, n_own, n_other, ptr, lst in (
            ("man", "woman", self.n_men, self.n_women, mptr, mlist),
            ("woman", "man", self.n_women, self.n_men, wptr, wlist),
        ):
            code, a, k = _check_lists(n_own, n_other, ptr, lst)
            if code == 1:
                raise _err(self.name, f"{side} {a}'s list, position {k}: {other} {int(lst[ptr[a] + k])} is outside [0, {n_other})")
            if code == 2:
                raise _err(self.name, f"{side} {a}'s list, position {k}: {other} {int(lst[ptr[a] + k])} is listed twice")
        raise AssertionError("unreachable: the parallel checks found a defect")

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_lists(
        cls,
        men: list[list[int]] | list[np.ndarray],
        women: list[list[int]] | list[np.ndarray],
        *,
        name: str = "prefs",
        family: str = "custom",
        params: dict[str, Any] | None = None,
    ) -> Preferences:
        """From one list per man and one per woman (best first, 0-based ids)."""

        def csr(lists: list[Any]) -> tuple[np.ndarray, np.ndarray]:
            lens = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
            ptr = np.zeros(len(lists) + 1, dtype=np.int64)
            np.cumsum(lens, out=ptr[1:])
            flat = np.concatenate([np.asarray(x, dtype=np.int64) for x in lists]) if int(ptr[-1]) else np.zeros(0, np.int64)
            return ptr, flat

        mptr, mlist = csr(list(men))
        wptr, wlist = csr(list(women))
        return cls(len(men), len(women), mlist, wlist, mptr, wptr, name=name, family=family, params=dict(params or {}))

    @classmethod
    def master_lists(
        cls,
        women_order: Any,
        men_order: Any,
        *,
        name: str = "hard",
        family: str = "custom",
        params: dict[str, Any] | None = None,
    ) -> Preferences:
        """Every man ranks the women as ``women_order``; every woman the men as ``men_order``."""
        women_order, men_order = np.asarray(women_order), np.asarray(men_order)
        return cls(
            int(men_order.shape[0]), int(women_order.shape[0]), women_order, men_order, None, None,
            name=name, family=family, params=dict(params or {}),
        )

    # -- views ----------------------------------------------------------------------------

    @property
    def master(self) -> bool:
        return self.mptr is None

    @property
    def total_length(self) -> int:
        """Entries of the men's lists (after purging): n^2 for master lists."""
        return self.n_men * self.n_women if self.master else int(self.mlist.shape[0])

    def man_list(self, m: int) -> np.ndarray:
        return self.mlist if self.master else self.mlist[self.mptr[m] : self.mptr[m + 1]]

    def woman_list(self, w: int) -> np.ndarray:
        return self.wlist if self.master else self.wlist[self.wptr[w] : self.wptr[w + 1]]

    @property
    def n_rows(self) -> int:
        return self.n_men

    @property
    def n_cols(self) -> int:
        return self.n_women

    @property
    def n_edges(self) -> int:
        """Mutually listed pairs."""
        return self.total_length

    @property
    def nbytes(self) -> int:
        arrays = [self.mlist, self.wlist, self.mrank] + ([] if self.master else [self.mptr, self.wptr])
        return int(sum(a.nbytes for a in arrays))

    def describe(self) -> dict[str, Any]:
        """Instance columns: ``n_rows`` men, ``n_cols`` women, ``n_edges`` listed pairs."""
        return {
            "instance": self.name,
            "family": self.family,
            "n_rows": self.n_men,
            "n_cols": self.n_women,
            "n_edges": self.n_edges,
        }

    # -- files ----------------------------------------------------------------------------

    def save_npz(self, file: str | os.PathLike | IO[bytes]) -> None:
        """Write the instance to an uncompressed ``.npz`` (read back by :meth:`load_npz`)."""
        empty = np.zeros(0, dtype=np.int64)
        save_instance_npz(
            self,
            file,
            NPZ_VERSION,
            n_men=np.asarray(self.n_men, dtype=np.int64),
            n_women=np.asarray(self.n_women, dtype=np.int64),
            master=np.asarray(self.master),
            mlist=self.mlist,
            wlist=self.wlist,
            mptr=empty if self.master else self.mptr,
            wptr=empty if self.master else self.wptr,
            purged=np.asarray(self.purged, dtype=np.int64),
        )

    @classmethod
    def load_npz(cls, file: str | os.PathLike | IO[bytes]) -> Preferences:
        with np.load(file, allow_pickle=False) as z:
            version = int(z["version"])
            if version != NPZ_VERSION:
                raise ValueError(f"Preferences npz layout {version}, expected {NPZ_VERSION}")
            master = bool(z["master"])
            kw = {k: z[k] for k in ("mlist", "wlist")}
            if not master:
                kw.update(mptr=z["mptr"], wptr=z["wptr"])
            name, family = str(z["name"][()]), str(z["family"][()])
            params = json.loads(str(z["params"][()]))
            n_men, n_women, purged = int(z["n_men"]), int(z["n_women"]), int(z["purged"])
        return cls(n_men, n_women, name=name, family=family, params=params, purged=purged, **kw)


@dataclass
class SMatching:
    """An answer: ``wife[m]`` for every man (-1 unmatched).

    ``proposals``, where the solver counts them, is the number of women considered (the
    numerator of the papers' TEPS); :meth:`SM.verify` checks it against the answer.
    """

    wife: np.ndarray
    proposals: int | None = None

    @property
    def pairs(self) -> int:
        return int((np.asarray(self.wife) >= 0).sum())


# ---------------------------------------------------------------------------------------
# Gale-Shapley for the verifier's man-optimality check (its own copy: the solvers' code
# is not trusted here)


@njit(cache=True)
def _verifier_gs(n_men, n_women, mptr, mlist, mrank):
    wife = np.full(n_men, -1, dtype=np.int64)
    husband = np.full(n_women, -1, dtype=np.int64)
    hrank = np.full(n_women, np.iinfo(np.int64).max, dtype=np.int64)
    nxt = mptr[:-1].astype(np.int64).copy()
    stack = np.arange(n_men - 1, -1, -1).astype(np.int64)
    top = n_men
    while top > 0:
        top -= 1
        m = stack[top]
        while nxt[m] < mptr[m + 1]:
            p = nxt[m]
            nxt[m] += 1
            w = mlist[p]
            r = mrank[p]
            if r < hrank[w]:
                old = husband[w]
                husband[w] = m
                hrank[w] = r
                wife[m] = w
                if old >= 0:
                    wife[old] = -1
                    stack[top] = old
                    top += 1
                break
    return wife


# ---------------------------------------------------------------------------------------
# The certificate (numba)


@njit(cache=True)
def _check_lists_answer(n_men, n_women, mptr, mlist, mrank, wife):
    """Codes: 1 wife out of range, 2 not mutually listed, 3 a woman married twice,
    4 blocking pair (m, w). Returns ``(code, m, w, pairs)``."""
    husband = np.full(n_women, -1, dtype=np.int64)
    hrank = np.full(n_women, np.iinfo(np.int64).max, dtype=np.int64)
    wpos = np.full(n_men, -1, dtype=np.int64)  # position of the wife in the man's list
    pairs = 0
    for m in range(n_men):
        w = wife[m]
        if w == -1:
            wpos[m] = mptr[m + 1] - mptr[m]
            continue
        if w < 0 or w >= n_women:
            return 1, m, w, pairs
        found = -1
        for p in range(mptr[m], mptr[m + 1]):
            if mlist[p] == w:
                found = p
                break
        if found < 0:
            return 2, m, w, pairs
        if husband[w] >= 0:
            return 3, m, w, pairs
        husband[w] = m
        hrank[w] = mrank[found]
        wpos[m] = found - mptr[m]
        pairs += 1
    for m in range(n_men):
        for p in range(mptr[m], mptr[m] + wpos[m]):
            w = mlist[p]
            if mrank[p] < hrank[w]:
                return 4, m, w, pairs
    return 0, -1, -1, pairs


@njit(cache=True)
def _check_master_answer(n, women_order, wrank_of_man, wife):
    """Master lists: the same checks, with m's list = ``women_order`` for every man."""
    husband = np.full(n, -1, dtype=np.int64)
    pos_w = np.empty(n, dtype=np.int64)
    for k in range(n):
        pos_w[women_order[k]] = k
    pairs = 0
    for m in range(n):
        w = wife[m]
        if w == -1:
            continue
        if w < 0 or w >= n:
            return 1, m, w, pairs
        if husband[w] >= 0:
            return 3, m, w, pairs
        husband[w] = m
        pairs += 1
    # Blocking: m prefers w (pos_w[w] < pos_w[wife[m]], or m single) and w prefers m
    # (wrank[m] < wrank[husband[w]], or w single). With worst[j] the largest husband rank
    # (n for a single woman) among the women at positions < j of the men's order, m is in
    # a blocking pair exactly when worst[lim(m)] > wrank[m]: O(n), not O(n^2).
    worst = np.full(n + 1, -1, dtype=np.int64)
    for k in range(n):
        h = husband[women_order[k]]
        r = n if h == -1 else wrank_of_man[h]
        worst[k + 1] = max(worst[k], r)
    for m in range(n):
        lim = n if wife[m] == -1 else pos_w[wife[m]]
        if worst[lim] > wrank_of_man[m]:
            for k in range(lim):  # name the woman (once, for the report)
                w = women_order[k]
                h = husband[w]
                if h == -1 or wrank_of_man[m] < wrank_of_man[h]:
                    return 4, m, w, pairs
    return 0, -1, -1, pairs


_GS_CACHE: weakref.WeakKeyDictionary[Preferences, np.ndarray] = weakref.WeakKeyDictionary()


def man_optimal(instance: Preferences) -> np.ndarray:
    """The man-optimal stable matching as ``wife`` (cached per instance).

    Master lists: the k-th man of the women's order marries the k-th woman of the men's
    order (every man proposes down the same list; the best-ranked man wins the first
    woman, and so on). Lists: the verifier's own Gale-Shapley.
    """
    got = _GS_CACHE.get(instance)
    if got is None:
        if instance.master:
            got = np.empty(instance.n_men, dtype=np.int64)
            got[instance.wlist.astype(np.int64)] = instance.mlist.astype(np.int64)
        else:
            got = _verifier_gs(instance.n_men, instance.n_women, instance.mptr, instance.mlist, instance.mrank)
        _GS_CACHE[instance] = got
    return got


@njit(cache=True)
def _considered_lists(n_men, mptr, mlist, wife):
    """Women considered by the men of a lists instance whose answer is ``wife``: man m's
    list up to and including his wife, or all of it (module docstring, item 4)."""
    total = 0
    for m in range(n_men):
        start, stop = mptr[m], mptr[m + 1]
        w = wife[m]
        k = stop - start
        if w >= 0:
            for p in range(start, stop):
                if mlist[p] == w:
                    k = p - start + 1
                    break
        total += k
    return total


def women_considered(instance: Preferences, wife: np.ndarray) -> int:
    """The number of women the men consider on their way to ``wife`` (item 4 above).

    ``wife`` must be a valid answer (every pair mutually listed); O(total list length).
    """
    wife = np.asarray(wife, dtype=np.int64)
    if instance.master:
        pos = np.empty(instance.n_women, dtype=np.int64)
        pos[instance.mlist.astype(np.int64)] = np.arange(instance.n_women, dtype=np.int64)
        married = wife >= 0
        return int((pos[wife[married]] + 1).sum()) + int((~married).sum()) * int(instance.n_women)
    return int(_considered_lists(instance.n_men, instance.mptr, instance.mlist, wife))


class SM(Problem):
    """Stable marriage: the man-optimal stable matching (the module docstring's certificate).

    The objective is the number of pairs. ``reference`` is the pair count of the
    man-optimal matching, which every stable matching shares (rural hospitals theorem).
    ``bound`` is ``min(n_men, n_women)``.
    """

    name: ClassVar[str] = "smarriage"
    objective: ClassVar[str] = "pairs"
    sense: ClassVar[str] = "max"
    exact: ClassVar[bool] = True
    #: the stable-marriage papers' TEPS: proposals per second of the solve
    rate_columns: ClassVar[dict[str, str]] = {"proposals_per_s": "proposals"}

    def verify(self, instance: Preferences, solution: Any) -> Verification:
        nan = float("nan")
        where = f"smarriage answer on {instance.name!r}"
        wife = solution.wife if isinstance(solution, SMatching) else solution
        wife = np.asarray(wife)
        if wife.shape != (instance.n_men,) or (wife.size and wife.dtype.kind not in "iu"):
            return Verification(False, f"{where}: invalid: expected {instance.n_men} integer wives, got {wife.dtype} {wife.shape}", nan)
        wife = wife.astype(np.int64)
        bound = float(min(instance.n_men, instance.n_women))
        if instance.master:
            code, m, w, pairs = _check_master_answer(instance.n_men, instance.mlist, instance.mrank, wife)
        else:
            code, m, w, pairs = _check_lists_answer(
                instance.n_men, instance.n_women, instance.mptr, instance.mlist, instance.mrank, wife
            )
        if code:
            why = {
                1: f"man {m}'s wife {w} is outside [0, {instance.n_women})",
                2: f"man {m} and woman {w} do not list each other",
                3: f"woman {w} is married twice (to man {m} and another)",
                4: f"man {m} and woman {w} block: each prefers the other to their partner",
            }[int(code)]
            stage = "unstable" if code == 4 else "invalid"
            return Verification(False, f"{where}: {stage}: {why}", float(pairs) if code == 4 else nan, bound)
        best = man_optimal(instance)
        ref = float((best >= 0).sum())
        diff = np.flatnonzero(best != wife)
        if diff.size:
            m = int(diff[0])
            return Verification(
                False,
                f"{where}: stable but not man-optimal: man {m} has {int(wife[m])}, "
                f"the man-optimal matching gives him {int(best[m])} ({diff.size} men differ)",
                float(pairs),
                bound,
                ref,
            )
        claimed = getattr(solution, "proposals", None)
        if claimed is not None:
            expected = women_considered(instance, wife)
            if int(claimed) != expected:
                return Verification(
                    False,
                    f"{where}: wrong proposal count: the solver reports {int(claimed)} women "
                    f"considered, the answer implies {expected}",
                    float(pairs),
                    bound,
                    ref,
                )
        return Verification(True, None, float(pairs), bound, ref)
