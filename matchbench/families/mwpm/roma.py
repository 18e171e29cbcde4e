"""Sequential ROMA on complete graphs (CPU, numba): the reference of the ``mwpm`` family.

ROMA (Maue & Sanders, WEA 2007) runs phases; a phase visits every vertex once, in random
order, and applies the best 2-augmentation centred at it (Hovland 2020, Alg. 3). On a complete
graph with a perfect matching the 2-augmentations are 4-cycle flips: matched edges ``(u, v)``
and ``(x, y)`` become ``{(u, x), (v, y)}`` or ``{(u, y), (v, x)}`` (Sec. 3.5; Alg. 4 flip,
Alg. 5 aug). The phases stop at one without flips (convergence) or after ``max_phases``, as
the host loop of Parallel ROMA does (Alg. 9, lines 5-10).

Details taken from the thesis, with the slips listed in ``/work/shared/papers/README.md``
corrected:

- Alg. 5 scans the matched edges ``(x, M[x])`` with ``x != u``, ``x != M[u]`` and
  ``x < M[x]`` (line 4), so each of the ``n/2 - 1`` other matched edges once, each with its
  two flips: ``n - 2`` 4-cycles per vertex (the text says ``n - 1``).
- Per edge, only the heavier flip is considered, ``w1 > w2`` choosing the first (lines 8-10),
  else the second (lines 11-13), whose gain is ``w2 - currentWeight`` (the text's line 12
  reads ``gain = w2``).
- A flip is applied only when its gain exceeds ``threshold`` (Sec. 5.5.4: "gain > 10^-5";
  the threshold is the best gain to beat, Alg. 5 line 1 with ``gain = threshold``;
  ``threshold = 0`` is Alg. 5 as printed). Since every flip gains more than the threshold, a
  phase without flips leaves a matching in which no 4-cycle flip gains more: ROMA's answer
  then claims ``converged`` at that threshold, which the verifier checks exhaustively.

Arithmetic: weights are float32, gains float64 (``currentWeight = w[u, M[u]] + w[x, M[x]]``,
``w1``, ``w2`` summed in float64, then subtracted). The weight of the matched edge at each
vertex is kept in ``mw`` (updated by every flip), so that ``w[x, M[x]]`` is read from one
contiguous array instead of one cache line per row of the matrix; the values are the same.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.params import non_negative_float, non_negative_int
from matchbench.core.solver import BaseSolver
from matchbench.families.mwpm.init import neighbour_matching
from matchbench.families.mwpm.problem import CompleteGraph, PerfectMatching

# ---------------------------------------------------------------------------------------
# Kernels


@njit(cache=True, nogil=True)
def _roma_aug(w, mate, mw, u, threshold, gains):
    """Alg. 5, aug(G, M, u): the best 4-cycle flip of ``(u, M[u])``, applied if it gains more
    than ``threshold`` (>= 0). Returns the gain, 0.0 when nothing was flipped.

    ``(a, b)`` are the new mates of ``u`` and ``M[u]`` (Alg. 5's tuple, Alg. 4's argument).
    ``gains`` is scratch space of ``n`` float64.

    The scan is Alg. 5's loop split in two passes with the same answer. The first computes
    every candidate's gain, ``max(w1, w2) - currentWeight`` (lines 5-13: the heavier flip's
    gain, ``w2 - currentWeight`` when ``w1 <= w2``), and masks the edges line 4 skips
    (``x == u``, ``x == M[u]``, ``x > M[x]``) with -inf, without a branch. The second takes
    the first ``x`` whose gain beats the threshold and every earlier one (Alg. 5's strict
    ``gain > maxGain`` in ascending ``x``), and the flip's orientation from ``w1 > w2`` at
    that ``x`` (lines 8-13). Once flips have shuffled the matching, line 4's ``x > M[x]``
    and line 8's ``w1 > w2`` are coin flips for the branch predictor: the two passes are
    1.6-1.8x faster than the branching loop (n = 4096, bit-identical phases; the branching
    loop cost 15.7 ns per candidate edge on the second phase).
    """
    n = mate.shape[0]
    mu = mate[u]
    ru = w[u]
    rm = w[mu]
    wu = np.float64(mw[u])
    for x in range(n):  # line 3
        mx = mate[x]
        w1 = np.float64(ru[x]) + np.float64(rm[mx])  # line 6
        w2 = np.float64(ru[mx]) + np.float64(rm[x])  # line 7
        g = max(w1, w2) - (wu + np.float64(mw[x]))  # lines 5, 8-13
        keep = (x != u) & (x != mu) & (x < mx)  # line 4
        gains[x] = g if keep else -np.inf
    best = threshold  # Alg. 5 line 1 (gain = 0), raised to the threshold
    x = -1
    for y in range(n):
        if gains[y] > best:
            best = gains[y]
            x = y
    if x < 0:
        return 0.0
    mx = mate[x]
    if np.float64(ru[x]) + np.float64(rm[mx]) > np.float64(ru[mx]) + np.float64(rm[x]):
        a, b = x, mx  # lines 8-10
    else:
        a, b = mx, x  # lines 11-13
    # line 14: flip(M, (a, b), u), Alg. 4 lines 1-5
    mate[u] = a
    mate[a] = u
    mate[mu] = b
    mate[b] = mu
    wa = w[u, a]
    wb = w[mu, b]
    mw[u] = wa
    mw[a] = wa
    mw[mu] = wb
    mw[b] = wb
    return best


@njit(cache=True, nogil=True)
def roma_aug(w, mate, mw, u, threshold):
    """:func:`_roma_aug` with its own scratch space (one vertex; the tests' entry point)."""
    return _roma_aug(w, mate, mw, u, threshold, np.empty(mate.shape[0]))


@njit(cache=True, nogil=True)
def roma_phase(w, mate, mw, order, threshold):
    """One phase of sequential ROMA (Alg. 3 lines 3-4): aug at every vertex of ``order``.

    Returns ``(flips, gain)``: flips applied and the sum of their gains (float64).
    """
    flips = 0
    gain = 0.0
    gains = np.empty(mate.shape[0])
    for k in range(order.shape[0]):
        g = _roma_aug(w, mate, mw, order[k], threshold, gains)
        if g > 0.0:  # a flip gains more than threshold >= 0
            flips += 1
            gain += g
    return flips, gain


@njit(cache=True, nogil=True)
def _matched_weights(w, mate):
    n = mate.shape[0]
    mw = np.empty(n, dtype=w.dtype)
    for v in range(n):
        mw[v] = w[v, mate[v]]
    return mw


@njit(cache=True, nogil=True)
def _sum_matched(w, mate):
    """Float64 weight of the matching, ``v < M[v]`` in vertex order (as the verifier sums)."""
    total = 0.0
    for v in range(mate.shape[0]):
        x = mate[v]
        if v < x:
            total += np.float64(w[v, x])
    return total


# ---------------------------------------------------------------------------------------
# Solver


class Roma(BaseSolver):
    """Sequential ROMA (``roma``): phases of 4-cycle flips from a perfect matching.

    Parameters
    ----------
    max_phases : int
        At most this many phases (Alg. 9's ``k``, default 8 as in Sec. 5.5.3); 0 returns the
        initial matching.
    threshold : float
        A flip is applied only when it gains more than this (default 1e-5, Sec. 5.5.4); 0 is
        Alg. 5 as printed.
    seed : int
        Seed of the phases' vertex orders: phase ``i`` visits the vertices in the order of
        the ``i``-th ``permutation(n)`` of ``numpy.random.default_rng(seed)``. Every
        repetition replays the same orders.

    Notes
    -----
    Hovland, *Maximum weighted matching on a GPU*, MSc thesis, Bergen 2020: Alg. 3 (ROMA),
    Alg. 4 (flip), Alg. 5 (4-cycle augmentation, ``gain = w2 - currentWeight``), the host loop
    of Alg. 9 (stop at a phase without flips or after ``k`` phases), the gain threshold of Sec.
    5.5.4. After Maue & Sanders, *Engineering algorithms for approximate weighted matching*,
    WEA 2007. O(n) per vertex, O(n^2) per phase.

    The solver starts from the initial matching the runner hands to :meth:`prepare` (the
    ``init`` config group, ``mwpm_*``; default the family's neighbour matching).

    Counters: ``phases`` (run; the ``iterations`` column), ``flips`` (total), ``converged``
    (a phase without flips was reached), ``weight_init`` and ``weight`` (float64, before the
    first and after the last phase), ``threshold``, and ``per_phase``: one record per phase,
    ``{"phase", "flips", "gain", "weight", "t_s"}`` (the weight after the phase, its seconds).
    Timings: ``phase_<i>`` seconds per phase (the report's breakdown).
    """

    name: ClassVar[str] = "roma"
    problem: ClassVar[str] = "mwpm"
    device: ClassVar[str] = "cpu"

    def __init__(self, *, max_phases: int, threshold: float, seed: int) -> None:
        self.max_phases = non_negative_int("roma: max_phases", max_phases)
        self.threshold = non_negative_float("roma: threshold", threshold)
        self.seed = non_negative_int("roma: seed", seed)
        super().__init__(max_phases=max_phases, threshold=threshold, seed=seed)
        self._graph: CompleteGraph | None = None
        self._mate: np.ndarray | None = None
        self._answer: PerfectMatching | None = None
        self._counters: dict[str, Any] = {}
        self._timings: dict[str, float] = {}
        self._compiled = False

    def prepare(self, instance: CompleteGraph, init: Any | None = None) -> None:
        if not self._compiled:  # compile on a 4-vertex graph, outside the timed run
            tiny = np.ones((4, 4), dtype=np.float32)
            np.fill_diagonal(tiny, 0.0)
            m = neighbour_matching(4)
            roma_phase(tiny, m, _matched_weights(tiny, m), np.arange(4, dtype=np.int64), 0.0)
            _sum_matched(tiny, m)
            self._compiled = True
        if init is None:
            mate = neighbour_matching(instance.n)
        else:
            mate = np.asarray(init.mate if isinstance(init, PerfectMatching) else init)
            if mate.shape != (instance.n,):
                raise ValueError(
                    f"roma: the initial matching has shape {mate.shape}, expected ({instance.n},)"
                )
        self._graph = instance
        self._mate = mate.astype(np.int64, copy=True)
        self._answer = None
        self._counters = {}
        self._timings = {}

    def run(self) -> None:
        if self._graph is None or self._mate is None:
            raise RuntimeError("roma: run() before prepare()")
        w, mate = self._graph.weight, self._mate
        n = mate.shape[0]
        rng = np.random.default_rng(self.seed)
        mw = _matched_weights(w, mate)
        weight = float(_sum_matched(w, mate))
        weight_init = weight
        per_phase: list[dict[str, Any]] = []
        converged = False
        total = 0
        for phase in range(self.max_phases):  # Alg. 9 lines 6-10
            t0 = time.perf_counter()
            order = rng.permutation(n)
            flips, gain = roma_phase(w, mate, mw, order, self.threshold)
            t = time.perf_counter() - t0
            weight = float(_sum_matched(w, mate))
            per_phase.append(
                {
                    "phase": phase,
                    "flips": int(flips),
                    "gain": float(gain),
                    "weight": weight,
                    "t_s": t,
                }
            )
            self._timings[f"phase_{phase}"] = t
            total += int(flips)
            if flips == 0:
                converged = True
                break
        self._counters = {
            "phases": len(per_phase),
            "flips": total,
            "converged": converged,
            "weight_init": weight_init,
            "weight": weight,
            "threshold": self.threshold,
            "per_phase": per_phase,
        }
        self._answer = PerfectMatching(mate.copy(), converged=converged, threshold=self.threshold)

    def result(self) -> PerfectMatching:
        if self._answer is None:
            raise RuntimeError("roma: result() before run()")
        return self._answer

    def counters(self) -> dict[str, Any]:
        return dict(self._counters)

    def timings(self) -> dict[str, float]:
        return dict(self._timings)
