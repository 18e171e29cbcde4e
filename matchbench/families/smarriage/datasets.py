"""Stable-marriage preference lists (the ``smarriage`` family).

Every function but :func:`lemma31_graph` returns a
:class:`~matchbench.families.smarriage.problem.Preferences`.

- :func:`prefs_file`: a text file of preference lists (format below), plain or gzip.
- :func:`sm_easy`: the "easy" SMI instances of Manne, Naim, Lerring & Halappanavar, *On
  stable marriages and greedy matchings*, CSC 2016 (paper IV of Naim's 2017 thesis): every
  man ranks about ``(1 + eps) ln n`` random women, every woman the men who ranked her.
- :func:`sm_hard`: the paper's "hard" SM instances: one master list per side.
- :func:`sm_lemma31`, :func:`lemma31_graph`: preferences read off a random weighted
  bipartite graph by the global edge order of :mod:`matchbench.graphs.weighted`, whose
  stable matching is the greedy matching (the paper's Lemma 3.1).
- :func:`prefs_smoke`: tiny instances built in code for the quickstart and the tests.

File format (:func:`prefs_file`)
--------------------------------
::

    # comment lines start with '#' and may appear anywhere; blank lines before the header
    # are skipped
    3 2            <- header: n_men n_women
    1 0            <- man 0's list of women, best first, 0-based
                   <- man 1's list: empty
    0              <- man 2's list
    2 0            <- woman 0's list of men, best first
    0              <- woman 1's list

After the header every line that is not a comment is a list line, a blank one an empty
list: ``n_men`` men's lines, then ``n_women`` women's lines. Blank lines after the last
list are ignored; any other line there is an error. Entries only one side lists are
purged by :class:`~matchbench.families.smarriage.problem.Preferences` (``params["purged"]``).

The generators are tagged ``@dataset(..., disk_cache=True)``; a change that makes one
return another instance for the same arguments must bump
:data:`~matchbench.datasets.CACHE_FORMAT`.
"""

from __future__ import annotations

import os
import re
from itertools import chain
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from numba import njit, prange

from matchbench.core import limits
from matchbench.core.errors import DatasetError
from matchbench.core.paths import missing_file, resolve_path
from matchbench.datasets import dataset, sizes
from matchbench.families.smarriage.problem import (
    Preferences,
    _check_lists,
    _fill_owners,
    _group_by_key,
)
from matchbench.graphs.weighted import WeightedGraph, edge_order

__all__ = [
    "SMOKE",
    "lemma31_graph",
    "prefs_file",
    "prefs_smoke",
    "sm_easy",
    "sm_hard",
    "sm_lemma31",
]

_INT = re.compile(r"[+-]?[0-9]+")
#: A character no integer token holds (str.split already took the whitespace out).
_NOT_INT_CHAR = re.compile(r"[^0-9+\- ]")
_INT64_MAX = np.iinfo(np.int64).max


# ---------------------------------------------------------------------------------------
# The text format


def _fail(path: Path, msg: str, line: int | None = None) -> DatasetError:
    where = f"line {line}: " if line is not None else ""
    return DatasetError(f"prefs_file {path}: {where}{msg}")


def _stem(path: Path) -> str:
    name = path.name[: -len(".gz")] if path.name.endswith(".gz") else path.name
    return Path(name).stem or name


def _read_lines(path: Path) -> list[str]:
    """The file's lines (gzip when it starts with the gzip magic), without line ends."""
    # capped: a small .gz may expand to gigabytes (limits.max_input_bytes)
    raw = limits.read_bytes_capped(path, "prefs_file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _fail(path, f"not UTF-8 text (byte {raw[exc.start]:#04x})", line) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the last line's terminator, not an empty line
    return lines


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _header(path: Path, lines: list[str]) -> tuple[int, int, int]:
    """``(n_men, n_women, index of the header line)``."""
    for i, line in enumerate(lines):
        if not line.strip() or _is_comment(line):
            continue
        tokens = line.split()
        if len(tokens) != 2 or not all(_INT.fullmatch(t) for t in tokens):
            raise _fail(
                path,
                f"the header must be two integers 'n_men n_women', got {line.strip()!r}",
                i + 1,
            )
        n_men, n_women = int(tokens[0]), int(tokens[1])
        if n_men < 0 or n_women < 0:
            raise _fail(path, f"negative size in the header ({n_men} men, {n_women} women)", i + 1)
        return n_men, n_women, i
    what = "empty file" if not lines else "only comments and blank lines"
    raise _fail(path, f"{what}: no header 'n_men n_women'", max(len(lines), 1))


def _person(k: int, n_men: int) -> tuple[str, int, str]:
    """``(side, id, other side)`` of list line ``k`` (men's lines first)."""
    return ("man", k, "woman") if k < n_men else ("woman", k - n_men, "man")


def _bad_token(
    path: Path, parts: list[list[str]], linenos: list[int], n_men: int, n_women: int
) -> NoReturn:
    """The error for the first token that is not an integer, or not an int64."""
    for k, tokens in enumerate(parts):
        side, a, other = _person(k, n_men)
        for t in tokens:
            if not _INT.fullmatch(t):
                raise _fail(path, f"{t!r} in {side} {a}'s list is not an integer", linenos[k])
            if abs(int(t)) > _INT64_MAX:
                n_other = n_women if side == "man" else n_men
                raise _fail(
                    path, f"{side} {a} lists {other} {t}, outside [0, {n_other})", linenos[k]
                )
    raise AssertionError("unreachable: every token is an int64")


@dataset("smarriage")
def prefs_file(
    path: str | os.PathLike,
    name: str | None = None,
    family: str = "prefs_file",
    data_dir: str | os.PathLike | None = None,
) -> Preferences:
    """Read a stable-marriage instance from a text file of preference lists.

    Parameters
    ----------
    path : path
        The file (module docstring for the format), plain or gzip-compressed (detected by
        its first bytes, so ``.gz`` or not). A relative path not found from the working
        directory is looked up in ``data_dir`` (default
        :func:`~matchbench.datasets.default_data_dir`).
    name : str, optional
        Instance name; default the file name without ``.gz`` and its last suffix.
    family : str
        The dataset family column.

    Returns
    -------
    Preferences
        The lists layout; ``params`` holds ``path`` and ``purged`` (entries that only one
        side lists, dropped).

    Raises
    ------
    DatasetError
        Naming the file, the line (1-based, of the file as it is: comments count) and the
        problem: no such file, unreadable or not UTF-8, no header or a bad one (not two
        integers, negative), a token that is not an integer, an id out of range (naming
        the person, the id and the range), an id listed twice in one list, fewer list lines
        than the header promises (how many expected, how many found), or a line after the
        women's lists.
    """
    p = resolve_path(path, data_dir)
    if (why := missing_file(p)) is not None:
        raise _fail(p, why)
    lines = _read_lines(p)
    n_men, n_women, h = _header(p, lines)
    need = n_men + n_women
    body = [j for j in range(h + 1, len(lines)) if not _is_comment(lines[j])]
    if len(body) < need:
        raise _fail(
            p,
            f"expected {need} list lines after the header ({n_men} men, {n_women} women), "
            f"found {len(body)}",
            max(len(lines), 1),
        )
    for j in body[need:]:
        if lines[j].strip():
            raise _fail(
                p,
                f"too many lines: {lines[j].strip()[:40]!r} after the {need} list lines "
                f"({n_men} men, {n_women} women)",
                j + 1,
            )
    linenos = [j + 1 for j in body[:need]]
    parts = [lines[j].split() for j in body[:need]]
    del lines
    lens = np.fromiter(map(len, parts), dtype=np.int64, count=need)
    flat = list(chain.from_iterable(parts))
    if _NOT_INT_CHAR.search(" ".join(flat)):
        _bad_token(p, parts, linenos, n_men, n_women)
    try:
        vals = np.fromiter(map(int, flat), dtype=np.int64, count=len(flat))
    except (ValueError, OverflowError):
        _bad_token(p, parts, linenos, n_men, n_women)
    del flat
    ptr = np.zeros(need + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr[1:])
    mptr, wptr = ptr[: n_men + 1], ptr[n_men:] - ptr[n_men]
    mlist, wlist = vals[: ptr[n_men]], vals[ptr[n_men] :]
    for first, own, n_own, n_other, lptr, lst in (
        (0, "man", n_men, n_women, mptr, mlist),
        (n_men, "woman", n_women, n_men, wptr, wlist),
    ):
        code, a, k = _check_lists(n_own, n_other, lptr, lst)
        if code:
            other = "woman" if own == "man" else "man"
            b = int(lst[lptr[a] + k])
            what = f"outside [0, {n_other})" if code == 1 else "twice"
            raise _fail(p, f"{own} {a} lists {other} {b} {what}", linenos[first + a])
    inst = Preferences(
        n_men,
        n_women,
        mlist,
        wlist,
        mptr,
        wptr,
        name=name or _stem(p),
        family=family,
        params={"path": str(p)},
    )
    inst.params["purged"] = inst.purged
    return inst


# ---------------------------------------------------------------------------------------
# Generators


def _check_int(value: Any, what: str, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise DatasetError(f"{where}: {what} must be an integer >= {low}, not {value!r}")
    return int(value)


def _ids(n: int) -> type:
    return np.int32 if n < 2**31 else np.int64


@njit(cache=True, parallel=True)
def _has_repeat(women, mptr):
    """Whether man ``m``'s entries ``women[mptr[m]:mptr[m + 1]]`` repeat a woman, every
    man (``prange``). Pairwise, O(k^2) for a list of k: fine for sm_easy's k = O(log n)
    (about 17 to 35 at n = 25 million), and branch-light enough to vectorise."""
    n = mptr.shape[0] - 1
    rep = np.zeros(n, dtype=np.bool_)
    for m in prange(n):
        s, e = mptr[m], mptr[m + 1]
        hit = False
        for p in range(s + 1, e):
            w = women[p]
            for q in range(s, p):
                hit |= women[q] == w
            if hit:
                break
        rep[m] = hit
    return rep


def _distinct_per_man(
    women: np.ndarray, mptr: np.ndarray, n: int, rng: np.random.Generator
) -> None:
    """Redraw, in place, every entry that repeats an earlier woman of the same man.

    A parallel pass (:func:`_has_repeat`) finds the men with a repeat (few: a man draws
    k = O(log n) of n women); their entries are then redrawn until distinct, later
    repeats first. The result is uniform over the ordered k-tuples of distinct women:
    the process treats every woman alike, and relabelling the women maps any such tuple
    onto any other.
    """
    men = np.flatnonzero(_has_repeat(women, mptr))
    if not men.size:
        return
    lens = (mptr[men + 1] - mptr[men]).astype(np.int64)
    local = np.repeat(np.arange(men.size, dtype=np.int64), lens)
    starts = np.repeat(
        mptr[men].astype(np.int64) - np.concatenate(([0], np.cumsum(lens)[:-1])), lens
    )
    pos = starts + np.arange(local.size, dtype=np.int64)
    sub = women[pos].astype(np.int64)
    while True:
        skey = local * n + sub
        order = np.argsort(skey, kind="stable")  # equal keys: the earlier draw first
        s = skey[order]
        again = order[1:][s[1:] == s[:-1]]
        if not again.size:
            break
        sub[again] = rng.integers(0, n, size=again.size)
    women[pos] = sub


def _random_bits(n_keys: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """The random sort keys that order each woman's suitors in :func:`sm_easy`: R =
    min(63 - bits(n_keys - 1), 40) bits per entry, so that ``key << R | bits`` fits an int64
    (the layout of the single sort this replaced, kept so that the draws, and the
    instances, stay the same)."""
    bits = 63 - max(int(n_keys - 1).bit_length(), 1)
    r = min(bits, 40)
    return rng.integers(0, 1 << r, size=size, dtype=np.int64)


@dataset("smarriage", disk_cache=True, size_hint=lambda n, **_: sizes.dense(n))
def sm_easy(n: int, seed: int = 0) -> Preferences:
    """The "easy" SMI instance: short random lists, each woman ranking her suitors.

    Parameters
    ----------
    n : int
        Men and women (``>= 1``).
    seed : int
        Seed of every random draw (``numpy.random.SeedSequence(seed)``, spawned per use).

    Returns
    -------
    Preferences
        Lists layout, family ``sm_easy``, name ``sm_easy_n{n}_s{seed}``. Man ``m`` ranks
        ``k_m = round((1 + eps_m) ln n)`` distinct women (``eps_m`` uniform in [0, 1),
        ``k_m`` clipped to [1, n]), uniformly at random and in random order; woman ``w``
        ranks exactly the men who ranked her, in a random order. Nothing is purged.

    Notes
    -----
    Manne, Naim, Lerring & Halappanavar, *On stable marriages and greedy matchings*, CSC
    2016, Sec. 5: "each man ranks (1 + eps) ln n women chosen at random, eps random in
    [0, 1]; each woman ranks the men who rank her, in random order". Parallel numba
    passes, O(T) but for the short sorts inside each woman's list, for T ~ 1.5 n ln n
    entries (n = 25 million: T ~ 6.4e8, some 20 GB of scratch arrays); only the random
    draws are sequential (they fix the instance).
    """
    where = f"sm_easy(n={n!r}, seed={seed!r})"
    n = _check_int(n, "n", where, low=1)
    rng_k, rng_w, rng_fix, rng_order = (
        np.random.default_rng(s)
        for s in np.random.SeedSequence(_check_int(seed, "seed", where)).spawn(4)
    )
    ids = _ids(n)
    k = np.rint((1.0 + rng_k.random(n)) * np.log(n)).astype(np.int64)
    np.clip(k, 1, n, out=k)
    mptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(k, out=mptr[1:])
    del k
    women = rng_w.integers(0, n, size=int(mptr[-1]), dtype=ids)
    _distinct_per_man(women, mptr, n, rng_fix)
    rand = _random_bits(n, women.size, rng_order)
    man_of = np.empty(women.size, dtype=ids)
    _fill_owners(mptr, man_of)  # np.repeat(arange(n), k), in parallel
    # Entries grouped by woman, in the order of their random bits (ties in entry order), as
    # the old single sort by (woman, bits, entry); listing the entries' men rather than the
    # entries (labels are carried, never compared), and keeping the group offsets: they are
    # the women's list offsets
    wptr, wlist = _group_by_key(women, n, rand, labels=man_of)
    del rand, man_of
    return Preferences(
        n,
        n,
        women,
        wlist,
        mptr,
        wptr,
        name=f"sm_easy_n{n}_s{seed}",
        family="sm_easy",
        params={"n": n, "seed": int(seed)},
    )


@dataset("smarriage", disk_cache=True, size_hint=lambda n, **_: sizes.dense(n))
def sm_hard(n: int, seed: int = 0) -> Preferences:
    """The "hard" SM instance: one random master list per side.

    Returns
    -------
    Preferences
        Master layout (:meth:`Preferences.master_lists`), family ``sm_hard``, name
        ``sm_hard_n{n}_s{seed}``: every man ranks the women in one random order, every
        woman the men in another (``numpy.random.default_rng(seed)``: women's order drawn
        first). Complete lists, n^2 pairs stored in O(n).

    Notes
    -----
    Manne et al., CSC 2016, Sec. 5: with identical lists Gale-Shapley makes
    n(n + 1)/2 proposals, and the parallel McVitie-Wilson rounds are serialized.
    """
    where = f"sm_hard(n={n!r}, seed={seed!r})"
    n = _check_int(n, "n", where, low=1)
    rng = np.random.default_rng(_check_int(seed, "seed", where))
    women_order = rng.permutation(n)
    men_order = rng.permutation(n)
    return Preferences.master_lists(
        women_order,
        men_order,
        name=f"sm_hard_n{n}_s{seed}",
        family="sm_hard",
        params={"n": n, "seed": int(seed)},
    )


def _lemma31_name(n_men: int, n_women: int, avg_degree: float, seed: int, ties: bool) -> str:
    return f"lemma31_m{n_men}_w{n_women}_d{avg_degree:g}_s{seed}" + ("_ties" if ties else "")


@dataset("wmatch", disk_cache=True, size_hint=lambda n_men, avg_degree, **_: sizes.lists(n_men, avg_degree))
def lemma31_graph(
    n_men: int, n_women: int, avg_degree: float, seed: int = 0, ties: bool = False
) -> WeightedGraph:
    """The random weighted bipartite graph behind :func:`sm_lemma31`.

    Returns
    -------
    WeightedGraph
        ``n_men + n_women`` vertices: man ``i`` is vertex ``i``, woman ``j`` is vertex
        ``n_men + j``. ``min(round(avg_degree * n_men), n_men * n_women)`` distinct
        man-woman edges drawn uniformly (``numpy.random.default_rng(seed)``), weights
        uniform in (0, 1] or, with ``ties``, uniform in {1, 2, 3}. Family
        ``sm_lemma31``, name ``lemma31_m{n_men}_w{n_women}_d{avg_degree}_s{seed}``
        (``_ties``). Tagged ``wmatch``: the wmatch solvers take it as it is.
    """
    where = f"lemma31_graph(n_men={n_men!r}, n_women={n_women!r}, avg_degree={avg_degree!r})"
    n_men = _check_int(n_men, "n_men", where, low=1)
    n_women = _check_int(n_women, "n_women", where, low=1)
    seed = _check_int(seed, "seed", where)
    if (
        isinstance(avg_degree, bool)
        or not isinstance(avg_degree, int | float)
        or not avg_degree > 0
    ):
        raise DatasetError(f"{where}: avg_degree must be a number > 0, not {avg_degree!r}")
    rng = np.random.default_rng(seed)
    pairs = n_men * n_women
    m = max(1, min(round(avg_degree * n_men), pairs))
    key = rng.choice(pairs, size=m, replace=False)
    man, woman = np.divmod(key, n_women)
    w = rng.integers(1, 4, size=m).astype(np.float64) if ties else 1.0 - rng.random(m)
    params = {
        "n_men": n_men,
        "n_women": n_women,
        "avg_degree": avg_degree,
        "seed": seed,
        "ties": bool(ties),
    }
    return WeightedGraph.from_edges(
        man,
        n_men + woman,
        w,
        n_men + n_women,
        name=_lemma31_name(n_men, n_women, avg_degree, seed, bool(ties)),
        family="sm_lemma31",
        params=params,
    )


@dataset("smarriage", disk_cache=True, size_hint=lambda n_men, avg_degree, **_: sizes.lists(n_men, avg_degree))
def sm_lemma31(
    n_men: int, n_women: int, avg_degree: float, seed: int = 0, ties: bool = False
) -> Preferences:
    """Preferences from the global edge order of :func:`lemma31_graph`'s graph.

    Every person ranks his or her neighbours in the order of
    :func:`matchbench.graphs.weighted.edge_order` (heavier first; equal weights by
    ``(max(u, v), min(u, v))`` descending, woman ``j`` being vertex ``n_men + j``).

    Returns
    -------
    Preferences
        Lists layout, family ``sm_lemma31``, name ``sm_`` + the graph's name; nothing to
        purge (the lists are the edges).

    Notes
    -----
    Manne et al., CSC 2016, Lemma 3.1: when the preferences follow one global order of the
    edges, the stable matching is unique and equals the GREEDY matching of that order.
    """
    g = lemma31_graph(n_men, n_women, avg_degree, seed, ties)
    eu, ev, _ = edge_order(g)  # eu < ev: eu the man, ev - n_men the woman
    eu, ev = eu.astype(np.int64), ev.astype(np.int64) - n_men
    by_man = np.argsort(eu, kind="stable")
    by_woman = np.argsort(ev, kind="stable")
    mptr = np.zeros(n_men + 1, dtype=np.int64)
    np.cumsum(np.bincount(eu, minlength=n_men), out=mptr[1:])
    wptr = np.zeros(n_women + 1, dtype=np.int64)
    np.cumsum(np.bincount(ev, minlength=n_women), out=wptr[1:])
    return Preferences(
        n_men,
        n_women,
        ev[by_man],
        eu[by_woman],
        mptr,
        wptr,
        name="sm_" + g.name,
        family="sm_lemma31",
        params=dict(g.params),
    )


# ---------------------------------------------------------------------------------------
# The smoke set

#: The smoke instances: name -> what it exercises.
SMOKE = {
    "textbook": "4 x 4 complete lists with rejections; man-optimal wives [1, 2, 3, 0]",
    "smi_purge": "3 x 3 incomplete lists, 3 one-sided entries purged, an empty list",
    "empty_lists": "4 men, 3 women; two men and one woman with empty lists",
    "n1": "one man, one woman, listing each other",
    "identical": "5 x 5, every man with the same list, women's lists random",
    "hard4": "master lists, n = 4",
}


def _smoke_lists(name: str) -> tuple[list[list[int]], list[list[int]]]:
    if name == "textbook":
        men = [[0, 1, 2, 3], [0, 2, 1, 3], [1, 0, 3, 2], [0, 1, 2, 3]]
        women = [[3, 2, 1, 0], [0, 3, 2, 1], [1, 0, 3, 2], [2, 1, 0, 3]]
        return men, women
    if name == "smi_purge":
        return [[0, 2], [2, 1], [0]], [[2, 1], [], [0, 1]]
    if name == "empty_lists":
        return [[], [0, 2], [2], []], [[1], [], [2, 1]]
    if name == "n1":
        return [[0]], [[0]]
    if name == "identical":
        rng = np.random.default_rng(7)
        return [[2, 0, 4, 1, 3]] * 5, [rng.permutation(5).tolist() for _ in range(5)]
    raise KeyError(name)


@dataset("smarriage")
def prefs_smoke(name: str | None = None) -> Preferences:
    """One of the tiny instances built in code (:data:`SMOKE` lists them), family
    ``sm_smoke``; deterministic.

    Raises
    ------
    DatasetError
        For a missing or unknown name (the message lists the choices).
    """
    if name is None or name not in SMOKE:
        what = "a name is required" if name is None else f"no smoke instance {name!r}"
        raise DatasetError(f"prefs_smoke: {what}; available: {', '.join(SMOKE)}")
    params = {"smoke": name}
    if name == "hard4":
        return Preferences.master_lists(
            [2, 0, 3, 1], [1, 3, 0, 2], name=name, family="sm_smoke", params=params
        )
    men, women = _smoke_lists(name)
    inst = Preferences.from_lists(men, women, name=name, family="sm_smoke", params=params)
    inst.params["purged"] = inst.purged
    return inst
