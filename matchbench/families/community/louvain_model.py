"""The host model of GPU Louvain: the kernels' steps in numba, one degree bucket at a time.

:func:`louvain_gpu_model` runs :func:`matchbench.families.community.louvain_stages.drive` over
:class:`HostModel`, which computes the same bucket-synchronous moves as the kernels of
``kernels/community/louvain.cu`` on the host: the moves of a bucket on the configuration at
its start, the same commit points, the sequential reference's gain and tie rules. Where the
weights are integers every sum is exact and the model makes the device's moves, so it is
the GPU tests' oracle, and the host tests run the whole method through it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import njit

from matchbench.families.community import louvain_buckets as LB
from matchbench.families.community.louvain import (
    BIN_LIMIT,
    _best_move,
    _contract,
    _renumber,
    stage_totals,
)
from matchbench.families.community.louvain_buckets import merge_bucket
from matchbench.families.community.louvain_stages import (
    Options,
    check_params,
    drive,
    empty_result,
    finish,
    loop_array,
)
from matchbench.families.community.problem import Partition


@njit(cache=True, nogil=True)
def _hm_degrees(n, ptr, w, loop):
    k = np.empty(n, dtype=np.float64)
    two_m = 0.0
    k2 = 0.0
    loop2 = 0.0
    for i in range(n):
        s = 0.0
        for p in range(ptr[i], ptr[i + 1]):
            s += w[p]
        lp = 2.0 * loop[i]
        k[i] = s + lp
        two_m += k[i]
        k2 += k[i] * k[i]
        loop2 += lp
    return k, two_m, k2, loop2


@njit(cache=True, nogil=True)
def _hm_moves(verts, ptr, ind, w, comm, a, size, k, m, acc, touched, newc, flag, prune,
              lower_only):
    """Alg. 2 for every vertex of ``verts`` on the same (unchanging) configuration; with
    ``prune`` only the flagged ones (each unflagged), with ``lower_only`` a move to a higher
    community id is dropped (the pick-less rule)."""
    for t in range(verts.shape[0]):
        v = verts[t]
        if prune:
            if flag[v] == 0:
                newc[v] = comm[v]
                continue
            flag[v] = 0
        best = _best_move(v, ptr, ind, w, comm, a, size, k, m, acc, touched)
        if best == -1 or (lower_only and best > comm[v]):
            newc[v] = comm[v]
        else:
            newc[v] = best


@njit(cache=True, nogil=True)
def _hm_mark(v, ptr, ind, flag):
    for p in range(ptr[v], ptr[v + 1]):
        flag[ind[p]] = 1


@njit(cache=True, nogil=True)
def _hm_commit(verts, newc, k, comm, a, size, ptr, ind, flag, prune):
    """``louvain_commit``: a step's moves and their a_c and size updates; with ``prune``
    the moved vertices' neighbours are flagged."""
    moved = 0
    for t in range(verts.shape[0]):
        v = verts[t]
        nc = newc[v]
        oc = comm[v]
        if nc != oc:
            comm[v] = nc
            a[oc] -= k[v]
            a[nc] += k[v]
            size[oc] -= 1
            size[nc] += 1
            moved += 1
            if prune:
                _hm_mark(v, ptr, ind, flag)
    return moved


@njit(cache=True, nogil=True)
def _hm_tally(n, comm, newc, k, a2, size2, ptr, ind, flag, prune):
    """``louvain_tally``: a_c and sizes of ``newc`` from zero, and the moves (with
    ``prune``, the moved vertices' neighbours flagged)."""
    a2[:] = 0.0
    size2[:] = 0
    moved = 0
    for v in range(n):
        c = newc[v]
        a2[c] += k[v]
        size2[c] += 1
        if c != comm[v]:
            moved += 1
            if prune:
                _hm_mark(v, ptr, ind, flag)
    return moved


@njit(cache=True, nogil=True)
def _hm_quality(n, ptr, ind, w, comm, a):
    """``louvain_quality``: the weight of the entries inside communities, and sum a_c^2."""
    inside = 0.0
    for i in range(n):
        ci = comm[i]
        for p in range(ptr[i], ptr[i + 1]):
            if comm[ind[p]] == ci:
                inside += w[p]
    spread = 0.0
    for c in range(n):
        spread += a[c] * a[c]
    return inside, spread


class HostModel:
    """The device steps on the host: same steps, same commit points, same rules.

    The moves of a step (a degree bucket, or with ``opts`` a bucket of an id range or a
    chunk of bucket 7: :func:`~matchbench.families.community.louvain_buckets.move_steps`) are
    computed on the configuration at its start (as the kernels do: C, a and size are
    read-only during a move kernel), with the sequential reference's ``_best_move`` (Eq. 2,
    ties to the lower id, the singleton rule); the aggregation is the reference's
    ``_renumber`` and ``_contract`` (its labels are the device's: dense ids in community id
    order; ``opts.aggregate`` changes only how the device builds the same graph).
    """

    def __init__(self, n: int, ptr, ind, w, loop, relaxed: bool,
                 opts: Options | None = None) -> None:
        self.n = int(n)
        self.ptr = np.ascontiguousarray(ptr, dtype=np.int64)
        self.ind = np.ascontiguousarray(ind, dtype=np.int64)
        self.w = np.ascontiguousarray(w, dtype=np.float64)
        self.loop = np.ascontiguousarray(loop, dtype=np.float64)
        self.relaxed = bool(relaxed)
        self.opts = Options() if opts is None else opts

    @property
    def nnz(self) -> int:
        return int(self.ind.shape[0])

    def mark(self) -> float:
        return time.perf_counter()

    def setup(self) -> tuple[float, float]:
        n = self.n
        self.k, two_m, k2, loop2 = _hm_degrees(n, self.ptr, self.w, self.loop)
        self.comm = np.arange(n, dtype=np.int64)
        self.newc = self.comm.copy()
        self.a = self.k.copy()
        self.size = np.ones(n, dtype=np.int64)
        self.acc = np.zeros(n, dtype=np.float64)
        self.touched = np.empty(n, dtype=np.int64)
        self.flag = np.ones(n, dtype=np.uint8)
        deg = np.diff(self.ptr)
        top = int(deg.max()) if n else 0
        rounds, hashed = LB.stage_ranges(n, self.nnz, top, self.opts.rounds,
                                         self.opts.hashed_rounds)
        order = np.argsort(LB.move_keys(deg, rounds, hashed), kind="stable")
        counts = LB.move_counts(deg, rounds, hashed)
        self.steps = [order[s : s + c] for _, s, c in LB.move_steps(counts, self.opts.hub_chunks)]
        self.bucket_counts = [int(x) for x in counts.sum(axis=0)[1:]]
        self.two_m, self.loop2 = float(two_m), float(loop2)
        self.m = self.two_m / 2.0
        q0 = loop2 / two_m - k2 / (two_m * two_m) if two_m > 0 else 0.0
        return self.two_m, float(q0)

    def iterate(self, lower_only: bool = False) -> tuple[int, float, float]:
        args = (self.ptr, self.ind, self.w)
        prune = self.opts.prune
        moved = 0
        if self.relaxed:
            for verts in self.steps:
                _hm_moves(verts, *args, self.comm, self.a, self.size, self.k, self.m,
                          self.acc, self.touched, self.newc, self.flag, prune, lower_only)
            self.a2 = np.empty_like(self.a)
            self.size2 = np.empty_like(self.size)
            moved = _hm_tally(self.n, self.comm, self.newc, self.k, self.a2, self.size2,
                              self.ptr, self.ind, self.flag, prune)
            inside, spread = _hm_quality(self.n, *args, self.newc, self.a2)
        else:
            self.prev = self.comm.copy()
            for verts in self.steps:
                _hm_moves(verts, *args, self.comm, self.a, self.size, self.k, self.m,
                          self.acc, self.touched, self.newc, self.flag, prune, lower_only)
                moved += _hm_commit(verts, self.newc, self.k, self.comm, self.a, self.size,
                                    self.ptr, self.ind, self.flag, prune)
            inside, spread = _hm_quality(self.n, *args, self.comm, self.a)
        return int(moved), float(inside) + self.loop2, float(spread)

    def accept(self) -> None:
        if self.relaxed:
            self.comm, self.newc = self.newc, self.comm
            self.a, self.size = self.a2, self.size2

    def reject(self) -> None:
        if not self.relaxed:
            self.comm = self.prev

    def renumber(self) -> int:
        self.lab, k = _renumber(self.n, self.comm)
        self.k_new = int(k)
        size = np.bincount(self.comm, minlength=self.n)
        degree = np.bincount(self.comm, weights=np.diff(self.ptr), minlength=self.n)
        b = merge_bucket(degree.astype(np.int64), size)
        self.merge_counts = [int((b == x).sum()) for x in (1, 2, 3)]
        return self.k_new

    def labels(self) -> np.ndarray:
        """The stage's labels without contracting (``aggregation_tolerance``)."""
        return self.lab

    def host_graph(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The level's graph (option ``host_tail``), as the device hands it over."""
        return self.n, self.ptr, self.ind, self.w, self.loop

    def push_level(self, lab: np.ndarray) -> np.ndarray:
        return np.asarray(lab, dtype=np.int64)

    def contract(self) -> np.ndarray:
        self.ptr, self.ind, self.w, self.loop = _contract(
            self.n, self.ptr, self.ind, self.w, self.loop, self.lab, self.k_new
        )
        self.n = self.k_new
        return self.lab


def louvain_gpu_model(
    graph: Any,
    t_bin: float = 1e-2,
    t_final: float = 1e-6,
    bin_limit: int = BIN_LIMIT,
    commit: str = "bucket",
    max_iterations: int = 1000,
    loop: Any = None,
    **options: Any,
) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """:func:`louvain_gpu` computed on the host (numba), one step at a time.

    Same parameters (the :class:`~matchbench.families.community.louvain_stages.Options` as
    keywords) and return value as :func:`louvain_gpu` (without the device counters). On
    graphs with integer weights (and loops) every sum is exact, so this is the GPU's answer
    partition for partition, level for level, with every option (the GPU tests check it);
    otherwise the two may differ where gains tie up to rounding.
    """
    opts = check_params(t_bin, t_final, bin_limit, commit, max_iterations, **options)
    n0 = int(graph.n)
    loop0 = loop_array(loop, n0)
    if n0 == 0:
        return empty_result()
    relaxed = commit == "iteration"
    be = HostModel(n0, graph.ptr, graph.ind, graph.weight, loop0, relaxed, opts)
    out = drive(be, t_bin, t_final, bin_limit, relaxed, max_iterations, opts)
    levels = [np.asarray(lab, dtype=np.int64) for lab in out.levels]
    community = np.arange(n0, dtype=np.int64)
    for lab in levels:
        community = lab[community]
    seconds = stage_totals({f"level{r}_{what}": b - a for r, what, a, b in out.marks})
    return finish(out, community, levels, seconds, {"commit": commit})
