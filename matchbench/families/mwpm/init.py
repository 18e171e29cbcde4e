"""Initial perfect matchings of the ``mwpm`` family (complete graphs), the ``init`` config group.

ROMA improves a perfect matching it is given (Hovland 2020, Alg. 9 line 1: "if M is
non-complete, pair two and two vertices"). The thesis compares three start matchings
(Sec. 5.5.5 and 5.5.7) and proposes a fourth for exponential weights (Sec. 5.6.2):

- ``init=mwpm_neighbour`` (:class:`NeighbourInit`, the family's default): ``2i <-> 2i + 1``,
  the thesis's "neighbor matching", its initialization throughout Ch. 5.
- ``init=mwpm_half`` (:class:`HalfInit`): ``i <-> i + n/2``, the thesis's "n/2-matching".
- ``init=mwpm_shuffled`` (:class:`ShuffledInit`): the second half of the vertices shuffled
  (seeded), then ``i <-> shuffled[i]`` for ``i < n/2``, the thesis's "shuffled matching".
- ``init=mwpm_greedy`` (:class:`GreedyInit`): GREEDY on the complete graph (Alg. 1, Sec.
  3.3.1), "to get a higher solution weight one could run another approximation algorithm to
  find a start matching before running ROMA ... for instance GPA or Greedy" (Sec. 5.6.2).

All work on the padded vertex set (``n`` even, the dummy of an odd input included). Each
returns a :class:`~matchbench.families.mwpm.problem.PerfectMatching` whose ``weight`` (float64) is the
row's ``objective_init``; the runner times the call as ``t_init_s``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numba import njit

from matchbench.core.params import config_defaults, non_negative_int
from matchbench.core.solver import BaseInitializer
from matchbench.families.mwpm.problem import CompleteGraph, PerfectMatching, matching_weight
from matchbench.graphs.weighted import precedes


def neighbour_matching(n: int) -> np.ndarray:
    """``mate[2i] = 2i + 1`` (``n`` even)."""
    mate = np.arange(n, dtype=np.int64)
    mate ^= 1
    return mate


def half_matching(n: int) -> np.ndarray:
    """``mate[i] = i + n/2`` for ``i < n/2`` (``n`` even)."""
    h = n // 2
    return np.concatenate([np.arange(h, n), np.arange(h)]).astype(np.int64)


def shuffled_matching(n: int, seed: int) -> np.ndarray:
    """Vertex ``i < n/2`` matched to the ``i``-th vertex of a shuffled second half.

    The shuffle is ``numpy.random.default_rng(seed).permutation`` of ``n/2 .. n-1``
    (Hovland 2020, Sec. 5.5.7, "shuffled matching").
    """
    h = n // 2
    second = np.random.default_rng(seed).permutation(np.arange(h, n, dtype=np.int64))
    mate = np.empty(n, dtype=np.int64)
    mate[:h] = second
    mate[second] = np.arange(h, dtype=np.int64)
    return mate


@njit(cache=True)
def greedy_kernel(w):
    """The greedy perfect matching of a complete graph (even ``n``), by the Suitor algorithm.

    GREEDY (Hovland 2020, Alg. 1) takes the heaviest remaining edge until none is left. The
    edges are ordered by :func:`~matchbench.graphs.weighted.precedes` (heavier first, ties by
    the larger, then the smaller endpoint, larger first), a strict total order, so the greedy
    matching is unique and Suitor (Manne & Halappanavar, IPDPS 2014; Naim's thesis, paper I,
    Alg. 3, sequential) computes the same one without sorting the n^2/2 edges: each vertex
    proposes to its first neighbour in the order whose current offer it beats; a displaced
    suitor proposes again. Every scan reads one contiguous row: O(n) per proposal. The empty
    offer weighs -1, below every weight (all are >= 0, the dummy's 0 included). On a complete
    graph with even ``n`` the result is perfect: two single vertices would form an edge.
    """
    n = w.shape[0]
    suitor = np.full(n, -1, dtype=np.int64)
    ws = np.full(n, -1.0)
    for u in range(n):
        cur = u
        while cur >= 0:
            best = -1
            bw = -1.0
            for v in range(n):
                if v == cur:
                    continue
                wv = np.float64(w[cur, v])
                if best >= 0 and not precedes(wv, cur, v, bw, cur, best):
                    continue
                if suitor[v] >= 0 and not precedes(wv, cur, v, ws[v], v, suitor[v]):
                    continue
                best = v
                bw = wv
            if best < 0:  # every other vertex holds a better offer
                break
            old = suitor[best]
            suitor[best] = cur
            ws[best] = bw
            cur = old  # the displaced suitor proposes again (-1: nobody was)
    return suitor


def greedy_matching(graph: CompleteGraph) -> np.ndarray:
    """GREEDY's perfect matching of ``graph`` as a mate array (see :func:`greedy_kernel`)."""
    return greedy_kernel(graph.weight)


class _MWPMInit(BaseInitializer):
    problem: ClassVar[str] = "mwpm"
    device: ClassVar[str] = "cpu"

    def _mate(self, instance: CompleteGraph) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, instance: CompleteGraph) -> PerfectMatching:
        mate = self._mate(instance)
        return PerfectMatching(mate, weight=matching_weight(instance, mate))


class NeighbourInit(_MWPMInit):
    """``init=mwpm_neighbour``: ``2i <-> 2i + 1`` (Hovland 2020, Sec. 5.5.7, "neighbor
    matching"; the thesis's start matching in every other experiment)."""

    name: ClassVar[str] = "mwpm_neighbour"

    def __init__(self) -> None:
        super().__init__()

    def _mate(self, instance: CompleteGraph) -> np.ndarray:
        return neighbour_matching(instance.n)


class HalfInit(_MWPMInit):
    """``init=mwpm_half``: ``i <-> i + n/2`` (Hovland 2020, Sec. 5.5.5, "n/2-matching")."""

    name: ClassVar[str] = "mwpm_half"

    def __init__(self) -> None:
        super().__init__()

    def _mate(self, instance: CompleteGraph) -> np.ndarray:
        return half_matching(instance.n)


class ShuffledInit(_MWPMInit):
    """``init=mwpm_shuffled``: see :func:`shuffled_matching` (Hovland 2020, Sec. 5.5.7).

    Parameters
    ----------
    seed : int
        Seed of the shuffle; part of the ``init`` label when not 0.
    """

    name: ClassVar[str] = "mwpm_shuffled"

    @property
    def defaults(self) -> dict[str, Any]:  # type: ignore[override]
        """What the ``init`` label leaves out: the values of ``conf/init/mwpm_shuffled.yaml``."""
        return config_defaults("init", self.name)

    def __init__(self, *, seed: int) -> None:
        super().__init__(seed=non_negative_int("mwpm_shuffled: seed", seed))

    def _mate(self, instance: CompleteGraph) -> np.ndarray:
        return shuffled_matching(instance.n, self.params["seed"])


class GreedyInit(_MWPMInit):
    """``init=mwpm_greedy``: GREEDY's perfect matching (:func:`greedy_kernel`), a
    1/2-approximation, proposed as ROMA's start on exponential weights (Hovland 2020, Sec.
    5.6.2). O(n^2) per pass of proposals, sequential."""

    name: ClassVar[str] = "mwpm_greedy"

    def __init__(self) -> None:
        super().__init__()

    def _mate(self, instance: CompleteGraph) -> np.ndarray:
        return greedy_matching(instance)
