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
  the man whose list holds entry ``p``. The ranks are built in O(total) with a transpose
  and one scratch array, not by searching.
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
"""

from __future__ import annotations

import json
import os
import weakref
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

import numpy as np
from numba import njit

from matchbench.datasets import DatasetError
from matchbench.problems.base import Problem, Verification, save_instance_npz

NPZ_VERSION = 1


def _err(name: str, msg: str) -> DatasetError:
    return DatasetError(f"stable marriage instance {name!r}: {msg}")


# ---------------------------------------------------------------------------------------
# Construction: validate, purge one-sided entries, rank (numba, O(total))


@njit(cache=True)
def _check_lists(n_own, n_other, ptr, lst):
    """``(code, person, position)`` of the first defect: 1 out of range, 2 listed twice."""
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


@njit(cache=True)
def _transpose(n_own, n_other, ptr, lst):
    """The entries of one side's lists grouped by the person they name (O(total)).

    Returns ``(tptr, tpos, towner)``: the entries naming ``b`` are ``t`` in
    ``[tptr[b], tptr[b + 1])``, entry ``tpos[t]`` of the list of ``towner[t]``.
    """
    tptr = np.zeros(n_other + 1, dtype=np.int64)
    for p in range(lst.shape[0]):
        tptr[lst[p] + 1] += 1
    for b in range(n_other):
        tptr[b + 1] += tptr[b]
    fill = tptr[:-1].copy()
    tpos = np.empty(lst.shape[0], dtype=np.int64)
    towner = np.empty(lst.shape[0], dtype=np.int64)
    for a in range(n_own):
        for p in range(ptr[a], ptr[a + 1]):
            b = lst[p]
            tpos[fill[b]] = p
            towner[fill[b]] = a
            fill[b] += 1
    return tptr, tpos, towner


@njit(cache=True)
def _keep_mutual(n_own, n_other, ptr, lst, optr, olst):
    """For each entry ``(a, b)`` of one side, whether ``b``'s list holds ``a`` (O(total))."""
    keep = np.zeros(lst.shape[0], dtype=np.bool_)
    mark = np.full(n_own, -1, dtype=np.int64)
    tptr, tpos, towner = _transpose(n_own, n_other, ptr, lst)
    for b in range(n_other):
        for q in range(optr[b], optr[b + 1]):
            mark[olst[q]] = b
        for t in range(tptr[b], tptr[b + 1]):
            if mark[towner[t]] == b:
                keep[tpos[t]] = True
    return keep


@njit(cache=True)
def _ranks(n_men, n_women, mptr, mlist, wptr, wlist, mrank):
    """Fill ``mrank[p]``: the rank woman ``mlist[p]`` gives the owner of entry ``p``."""
    pos = np.full(n_men, -1, dtype=np.int64)
    tptr, tpos, towner = _transpose(n_men, n_women, mptr, mlist)
    for w in range(n_women):
        for k in range(wptr[w], wptr[w + 1]):
            pos[wlist[k]] = k - wptr[w]
        for t in range(tptr[w], tptr[w + 1]):
            mrank[tpos[t]] = pos[towner[t]]
        for k in range(wptr[w], wptr[w + 1]):
            pos[wlist[k]] = -1


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
        mlist, wlist = mlist.astype(np.int64), wlist.astype(np.int64)
        for side, other, n_own, n_other, ptr, lst in (
            ("man", "woman", self.n_men, self.n_women, mptr, mlist),
            ("woman", "man", self.n_women, self.n_men, wptr, wlist),
        ):
            code, a, k = _check_lists(n_own, n_other, ptr, lst)
            if code == 1:
                raise _err(name, f"{side} {a}'s list, position {k}: {other} {int(lst[ptr[a] + k])} is outside [0, {n_other})")
            if code == 2:
                raise _err(name, f"{side} {a}'s list, position {k}: {other} {int(lst[ptr[a] + k])} is listed twice")
        keep_m = _keep_mutual(self.n_men, self.n_women, mptr, mlist, wptr, wlist)
        keep_w = _keep_mutual(self.n_women, self.n_men, wptr, wlist, mptr, mlist)
        self.purged = int(self.purged) + int((~keep_m).sum() + (~keep_w).sum())
        if not keep_m.all():
            mptr, mlist = _compact(mptr, mlist, keep_m)
        if not keep_w.all():
            wptr, wlist = _compact(wptr, wlist, keep_w)
        idx = _index_dtype(self.n_men, self.n_women, mlist.shape[0])
        self.mptr, self.mlist = mptr.astype(idx), mlist.astype(idx)
        self.wptr, self.wlist = wptr.astype(idx), wlist.astype(idx)
        self.mrank = np.empty(self.mlist.shape[0], dtype=_index_dtype(self.n_men))
        _ranks(self.n_men, self.n_women, self.mptr, self.mlist, self.wptr, self.wlist, self.mrank)

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
        n = int(women_order.shape[0])
        return cls(n, int(men_order.shape[0]), women_order, men_order, None, None, name=name, family=family, params=dict(params or {}))

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
    """An answer: ``wife[m]`` for every man (-1 unmatched)."""

    wife: np.ndarray

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
        return Verification(True, None, float(pairs), bound, ref)
