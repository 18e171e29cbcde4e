"""The host model of GPU Leiden: the kernels' steps in numba, round by round.

:func:`leiden_gpu_model` runs :func:`matchbench.families.community.leiden_gpu.drive` over
:class:`HostLevels`, which computes what the kernels of ``kernels/community/leiden.cu``
compute, on the host: the decisions of a round on the configuration at its start, the same
commit points, the same gain expressions (in the kernels' order of operations) and tie rules;
the aggregation and renumbering are the very code the device runs (:class:`._Levels`, with
NumPy). Where the weights are integers every sum is exact, and the model makes the device's
decisions, level for level: the GPU tests' oracle, and the host tests run the whole
algorithm through it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from matchbench.families.community.leiden_gpu import (
    Outcome,
    Params,
    _Levels,
    check_params,
    drive,
    empty_result,
    finish,
    loop_array,
    round_keys,
)
from matchbench.families.community.problem import Partition, _modularity

__all__ = ["HostLevels", "leiden_gpu_model"]

#: leiden.cu LD_MOVE_RTOL
MOVE_RTOL = 1e-12


@njit(cache=True, nogil=True)
def _hm_degrees(n, ptr, w, loop):
    k = np.empty(n, dtype=np.float64)
    for v in range(n):
        s = 0.0
        for p in range(ptr[v], ptr[v + 1]):
            s += w[p]
        k[v] = s + 2.0 * loop[v]
    return k


@njit(cache=True, nogil=True)
def _hm_tally(n, comm, k, a, size):
    for v in range(n):
        a[comm[v]] += k[v]
        size[comm[v]] += 1


@njit(cache=True, nogil=True)
def _hm_move(verts, ptr, ind, w, comm, a, size, k, r, newc, de, dk, flag, prune, lower_only,
             acc, seen, touched):
    """leiden_move_*: MoveNodesFast lines 15-18 for ``verts`` on one configuration
    (``lower_only``: a move to a higher community id is dropped)."""
    for v in verts:
        cv = comm[v]
        if prune:
            if not flag[v]:
                newc[v] = cv
                de[v] = 0.0
                dk[v] = 0.0
                continue
            flag[v] = 0
        nt = 0
        for p in range(ptr[v], ptr[v + 1]):
            c = comm[ind[p]]
            if not seen[c]:
                seen[c] = True
                touched[nt] = c
                nt += 1
            acc[c] += w[p]
        kv = k[v]
        rk = r * kv
        own = 0.0
        g = 0.0
        best = -1
        for t in range(nt):
            c = touched[t]
            if c == cv:
                own = acc[c]
            else:
                gain = acc[c] - rk * a[c]
                if best < 0 or gain > g or (gain == g and c < best):
                    g = gain
                    best = c
        a_own = a[cv] - kv
        stay = own - rk * a_own
        to = cv
        if best >= 0 and g - stay > MOVE_RTOL * kv and not (
            size[cv] == 1 and size[best] == 1 and best > cv
        ) and (not lower_only or best < cv):
            to = best
        newc[v] = to
        if to != cv:
            de[v] = acc[to] - own
            dk[v] = kv * (a[to] - a_own)
        else:
            de[v] = 0.0
            dk[v] = 0.0
        for t in range(nt):
            acc[touched[t]] = 0.0
            seen[touched[t]] = False


@njit(cache=True, nogil=True)
def _hm_commit(verts, ptr, ind, newc, k, de, dk, comm, a, size, flag):
    """leiden_commit: line 19 and the neighbours' flags; returns (moved, sum de, sum dk)."""
    moved = 0
    sde = 0.0
    sdk = 0.0
    for v in verts:
        to = newc[v]
        cv = comm[v]
        if to == cv:
            continue
        comm[v] = to
        a[to] += k[v]
        a[cv] -= k[v]
        size[to] += 1
        size[cv] -= 1
        moved += 1
        sde += de[v]
        sdk += dk[v]
        for p in range(ptr[v], ptr[v + 1]):
            flag[ind[p]] = 1
    return moved, sde, sdk


@njit(cache=True, nogil=True)
def _hm_refine_ext(n, ptr, ind, w, comm, R, ext):
    for v in range(n):
        s = comm[v]
        rv = R[v]
        x = 0.0
        for p in range(ptr[v], ptr[v + 1]):
            u = ind[p]
            if comm[u] == s and R[u] != rv:
                x += w[p]
        ext[rv] += x


@njit(cache=True, nogil=True)
def _hm_refine(verts, ptr, ind, w, comm, KS, R, KR, sizeR, ext, k, r, parity, target, wanted,
               done, acc, seen, touched):
    """leiden_refine_*: MergeNodesSubset lines 34-38 for ``verts``; returns the choosers."""
    chose = 0
    for v in verts:
        if done[v] or R[v] != v or sizeR[v] != 1:
            continue
        s = comm[v]
        kv = k[v]
        ks = KS[s]
        rk = r * kv
        if ext[v] < rk * (ks - kv):
            done[v] = 1
            continue
        nt = 0
        for p in range(ptr[v], ptr[v + 1]):
            u = ind[p]
            if comm[u] != s:
                continue
            c = R[u]
            if not seen[c]:
                seen[c] = True
                touched[nt] = c
                nt += 1
            acc[c] += w[p]
        g = 0.0
        best = -1
        for t in range(nt):
            c = touched[t]
            kc = KR[c]
            if not ext[c] < (r * kc) * (ks - kc):
                gain = acc[c] - rk * kc
                if gain > 0.0 and (best < 0 or gain > g or (gain == g and c < best)):
                    g = gain
                    best = c
            acc[c] = 0.0
            seen[c] = False
        if best < 0:
            done[v] = 1
        else:
            chose += 1
            if (parity == 0) == (best < v):
                target[v] = best
                wanted[best] = 1
    return chose


@njit(cache=True, nogil=True)
def _hm_refine_commit(verts, k, target, wanted, R, KR, sizeR):
    moved = 0
    for v in verts:
        to = target[v]
        busy = wanted[v]
        target[v] = -1
        wanted[v] = 0
        if to >= 0 and not busy:
            R[v] = to
            KR[to] += k[v]
            sizeR[to] += 1
            KR[v] = 0.0
            sizeR[v] = 0
            moved += 1
    return moved


@njit(cache=True, nogil=True)
def _hm_pieces(n, ptr, ind, comm):
    """The connected pieces of ``comm``, each labelled by its smallest vertex (the root of
    its tree in leiden_pieces_link / _flatten)."""
    lab = np.full(n, -1, dtype=np.int32)
    stack = np.empty(max(n, 1), dtype=np.int64)
    for s in range(n):
        if lab[s] >= 0:
            continue
        lab[s] = s
        stack[0] = s
        top = 1
        while top > 0:
            top -= 1
            x = stack[top]
            for p in range(ptr[x], ptr[x + 1]):
                y = ind[p]
                if lab[y] < 0 and comm[y] == comm[x]:
                    lab[y] = s
                    stack[top] = y
                    top += 1
    return lab


class HostLevels(_Levels):
    """The steps of :func:`drive` on the host: the kernels' decisions, round by round."""

    xp = np

    def __init__(self, n: int, ptr: Any, ind: Any, w: Any, loop: Any, rounds: int) -> None:
        super().__init__(n, ptr, ind, w, loop)
        self.rounds = int(rounds)

    def scalar(self, x: Any) -> Any:
        self.syncs += 1
        return np.asarray(x).item()

    def scatter_add(self, out: Any, idx: Any, vals: Any) -> None:
        np.add.at(out, idx, vals)

    def rows(self) -> Any:
        return np.repeat(np.arange(self.n, dtype=np.int32), np.diff(self.ptr))

    def _scratch(self) -> None:
        n = self.n
        self.acc = np.zeros(n, dtype=np.float64)
        self.seen = np.zeros(n, dtype=np.bool_)
        self.touched = np.empty(n, dtype=np.int64)

    def setup(self) -> float:
        n = self.n
        self.k = _hm_degrees(n, self.ptr, self.w, self.loop)
        self.a = np.zeros(n, dtype=np.float64)
        self.size = np.zeros(n, dtype=np.int32)
        _hm_tally(n, self.C, self.k, self.a, self.size)
        key = round_keys(np, n, np.diff(self.ptr), self.rounds)
        self.order = np.argsort(key, kind="stable").astype(np.int32)
        counts = np.bincount(key, minlength=2 * self.rounds + 1)
        self.starts = np.concatenate(([0], np.cumsum(counts)))
        self.active = int(self.starts[2 * self.rounds])
        self.newc = np.empty(n, dtype=np.int32)
        self.de = np.zeros(n, dtype=np.float64)
        self.dk = np.zeros(n, dtype=np.float64)
        self.flag = np.ones(n, dtype=np.uint8)
        self._scratch()
        return float(self.k.sum())

    def move_iteration(self, r: float, prune: bool, lower_only: bool) -> tuple[int, float, float]:
        moved, sde, sdk = 0, 0.0, 0.0
        for rnd in range(self.rounds):
            verts = self.order[self.starts[2 * rnd] : self.starts[2 * rnd + 2]]
            _hm_move(verts, self.ptr, self.ind, self.w, self.C, self.a, self.size, self.k, r,
                     self.newc, self.de, self.dk, self.flag, bool(prune), bool(lower_only), self.acc, self.seen,
                     self.touched)
            m, x, y = _hm_commit(verts, self.ptr, self.ind, self.newc, self.k, self.de,
                                 self.dk, self.C, self.a, self.size, self.flag)
            moved, sde, sdk = moved + m, sde + x, sdk + y
        return int(moved), float(sde), float(sdk)

    def renumber(self) -> int:
        self.C, n_comm = self.dense(self.C)
        self.KS = np.zeros(self.n, dtype=np.float64)
        self.size.fill(0)
        _hm_tally(self.n, self.C, self.k, self.KS, self.size)
        return n_comm

    def refine_start(self, r: float) -> None:
        n = self.n
        self.R = np.arange(n, dtype=np.int32)
        self.KR = self.k.copy()
        self.sizeR = np.ones(n, dtype=np.int32)
        self.ext = np.zeros(n, dtype=np.float64)
        self.target = np.full(n, -1, dtype=np.int32)
        self.wanted = np.zeros(n, dtype=np.uint8)
        self.done = np.zeros(n, dtype=np.uint8)

    def refine_round(self, r: float, parity: int) -> tuple[int, int]:
        self.ext.fill(0.0)
        _hm_refine_ext(self.n, self.ptr, self.ind, self.w, self.C, self.R, self.ext)
        verts = self.order[: self.active]
        chose = _hm_refine(verts, self.ptr, self.ind, self.w, self.C, self.KS, self.R, self.KR,
                           self.sizeR, self.ext, self.k, r, int(parity), self.target,
                           self.wanted, self.done, self.acc, self.seen, self.touched)
        moved = _hm_refine_commit(verts, self.k, self.target, self.wanted, self.R, self.KR,
                                  self.sizeR)
        return int(chose), int(moved)

    def pieces(self) -> Any:
        return _hm_pieces(self.n, self.ptr, self.ind, self.C)

    def quality(self, community: Any, k: int) -> float:
        return float(_modularity(self.n0, self.ptr0, self.ind0, self.w0, self.loop0,
                                 community.astype(np.int64), int(k)))


def run_model(n: int, ptr: Any, ind: Any, w: Any, loop: Any, p: Params
              ) -> tuple[Outcome, float, HostLevels]:
    """:func:`drive` over :class:`HostLevels` (level-0 arrays: int64 ptr, int32 ind)."""
    be = HostLevels(n, ptr, ind, w, loop, p.rounds)
    out = drive(be, p)
    return out, be.quality(out.community, out.communities), be


def leiden_gpu_model(graph: Any, loop: Any = None, **params: Any
                     ) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """:func:`~matchbench.families.community.leiden_gpu.leiden_gpu` computed on the host.

    Same parameters and results (counters ``kernel_launches`` and ``host_syncs`` count the
    model's shared steps, not the device's); on integer weights the same partition, levels
    and counters as the device.
    """
    p = check_params(**params)
    n0 = int(graph.n)
    loop0 = loop_array(loop, n0)
    if n0 == 0:
        return empty_result()
    ptr = np.ascontiguousarray(graph.ptr, dtype=np.int64)
    ind = np.ascontiguousarray(graph.ind, dtype=np.int32)
    w = np.ascontiguousarray(graph.weight, dtype=np.float64)
    out, q, be = run_model(n0, ptr, ind, w, loop0, p)
    levels = [np.asarray(x, dtype=np.int64) for x in out.levels]
    counters = {"kernel_launches": be.launches, "host_syncs": be.syncs}
    return finish(out, np.asarray(out.community), levels, q, {}, counters)
