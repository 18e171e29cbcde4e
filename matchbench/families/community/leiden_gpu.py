"""GPU Leiden community detection (``kernels/community/leiden.cu``): ``leiden_gpu``.

Traag, Waltman & van Eck, *From Louvain to Leiden: guaranteeing well-connected communities*,
Sci. Rep. 9, 5233 (2019), Supplementary Algorithm A.2, in the parallel form GVE-Leiden and
nu-Leiden use (Sahu 2023): per level, (1) local moving (``MoveNodesFast``, lines 13-25) by
synchronous rounds of parallel moves with vertex pruning, (2) refinement (``RefinePartition``
/ ``MergeNodesSubset``, lines 26-43) of every community into sub-communities by greedy merges
of singletons, in rounds, (3) aggregation (``AggregateGraph``, lines 44-48) of the *refined*
partition, the local-moving partition lifted to the aggregate as its initial partition (line
8). The kernels' header says where the parallel version departs from the pseudo-code and why
every refined community is connected.

Structure
---------
- :func:`drive`: the host loop (Alg. A.2 ``Leiden``, lines 1-12: levels, iterations,
  refinement rounds, the stopping rules), over a *backend* that runs the steps.
- :class:`_Levels`: the steps both backends share, written over an array module ``xp``
  (NumPy or CuPy): dense renumbering, aggregation (sort by (row, column), segmented sums;
  the device's own hashes instead), lifting the partition, composing the answer.
- :class:`_DeviceLevels`: the device backend (the kernels); :mod:`.leiden_gpu_model` the host
  model backend (numba), the same steps on the host. Where the weights are integers every
  sum is exact and both make the same decisions, so the model is the GPU tests' oracle.
- :func:`leiden_gpu` and the solver :class:`LeidenGPU`.

Answers claim connected communities (``Partition.connected``), which the verifier checks: a
vertex only joins a refined sub-community holding a neighbour of it that stays, so every
aggregate vertex is a connected set of input vertices, and the last level's communities are
split into their connected pieces before they are returned (a no-op when the loop ended at
line 4's test).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import (
    boolean,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from matchbench.families.community.gpu_solver import INT32_MAX as _INT32_MAX
from matchbench.families.community.gpu_solver import DeviceCommunitySolver, sm_count
from matchbench.families.community.problem import CommunityGraph, Partition

__all__ = ["LeidenGPU", "Params", "check_params", "drive", "leiden_gpu"]

#: ``kernels/community/leiden.cu`` LD_BLOCK: threads per block of every launch.
BLOCK = 256
#: LD_WARP_DEGREE: vertices of larger degree get a block each, the others a warp.
WARP_DEGREE = 128
#: LD_SUB_DEGREE: vertices of at most this degree get LD_SUB (8) threads each on the
#: device, four to a warp, with their 2 x 16 hash slots in shared memory; the host model
#: has no groups.
SUB_DEGREE = 16
#: LD_SUB: the threads of such a vertex's group.
SUB_GROUP = 8
#: leiden.cu LD_AGG_WARP_SLOTS: the aggregation compacts larger tables with a block, the
#: others with a warp.
AGG_WARP_SLOTS = 4096
#: leiden.cu LD_HASH_MULT: the round of vertex v is ((v * HASH_MULT) mod 2^32 >> 16) mod rounds.
HASH_MULT = 2654435761
#: Refinement rounds per level at most (each merges something while any vertex has a target).
REFINE_ROUNDS_MAX = 256


@dataclass(frozen=True)
class Params:
    """The checked parameters of :func:`leiden_gpu` (see its docstring)."""

    resolution: float = 1.0
    tolerance: float = 1e-2
    tolerance_drop: float = 10.0
    max_iterations: int = 20
    max_levels: int = 10
    rounds: int = 4
    aggregation_tolerance: float = 0.8
    prune: bool = True
    pickless: bool = True
    pickless_from: int = 0
    cycle_stop: bool = False
    polish: int = 0


def check_params(**kw: Any) -> Params:
    """The one check of :func:`leiden_gpu`'s and :class:`LeidenGPU`'s parameters;
    ``ValueError`` naming the parameter.

    >>> check_params(rounds=2).rounds
    2
    """
    unknown = set(kw) - set(Params.__dataclass_fields__)
    if unknown:
        raise ValueError(f"leiden_gpu: unknown parameters {sorted(unknown)}")
    p = Params(**kw)
    positive_float("leiden_gpu: resolution", p.resolution)
    non_negative_float("leiden_gpu: tolerance", p.tolerance)
    if positive_float("leiden_gpu: tolerance_drop", p.tolerance_drop) < 1.0:
        raise ValueError(f"leiden_gpu: tolerance_drop must be >= 1, got {p.tolerance_drop!r}")
    positive_int("leiden_gpu: max_iterations", p.max_iterations)
    positive_int("leiden_gpu: max_levels", p.max_levels)
    positive_int("leiden_gpu: rounds", p.rounds, hi=1024)
    if not 0.0 < positive_float("leiden_gpu: aggregation_tolerance", p.aggregation_tolerance) <= 1.0:
        raise ValueError(
            f"leiden_gpu: aggregation_tolerance must be in (0, 1], got {p.aggregation_tolerance!r}"
        )
    boolean("leiden_gpu: prune", p.prune)
    boolean("leiden_gpu: pickless", p.pickless)
    non_negative_int("leiden_gpu: pickless_from", p.pickless_from)
    boolean("leiden_gpu: cycle_stop", p.cycle_stop)
    non_negative_int("leiden_gpu: polish", p.polish)
    return Params(
        float(p.resolution), float(p.tolerance), float(p.tolerance_drop), int(p.max_iterations),
        int(p.max_levels), int(p.rounds), float(p.aggregation_tolerance), bool(p.prune),
        bool(p.pickless), int(p.pickless_from), bool(p.cycle_stop), int(p.polish),
    )


def round_keys(xp: Any, n: int, deg: Any, rounds: int) -> Any:
    """Each vertex's list key: ``2 * round + (deg > WARP_DEGREE)``, ``2 * rounds`` for
    vertices without edges (they never move: listed last, launched never)."""
    key = 2 * _round_of(xp, n, rounds) + (deg > WARP_DEGREE).astype(xp.int64)
    return xp.where(deg > 0, key, 2 * rounds)


def group_keys(xp: Any, n: int, deg: Any, rounds: int) -> Any:
    """The device's list keys: ``3 * round + group`` (0: ``deg <= SUB_DEGREE``, LD_SUB
    threads; 1: a warp; 2: a block), ``3 * rounds`` for vertices without edges; the same
    rounds as :func:`round_keys` (the host model's), so the same decisions."""
    group = (deg > SUB_DEGREE).astype(xp.int64) + (deg > WARP_DEGREE).astype(xp.int64)
    return xp.where(deg > 0, 3 * _round_of(xp, n, rounds) + group, 3 * rounds)


def _round_of(xp: Any, n: int, rounds: int) -> Any:
    """Each vertex's round: a hash of its id."""
    v = xp.arange(n, dtype=xp.uint64)
    rnd = (((v * xp.uint64(HASH_MULT)) & xp.uint64(0xFFFFFFFF)) >> xp.uint64(16)) % xp.uint64(rounds)
    return rnd.astype(xp.int64)


# ---------------------------------------------------------------------------------------
# The steps both backends share


class _Levels:
    """A level's graph and partition, and the steps written over ``xp`` (NumPy or CuPy).

    Subclasses provide the array module (``xp``), ``scatter_add``, and the kernels' steps:
    ``setup``, ``move_iteration``, ``refine_round``, ``refine_start``, ``pieces``,
    ``quality``, ``rows``.
    """

    xp: Any

    def __init__(self, n: int, ptr: Any, ind: Any, w: Any, loop: Any) -> None:
        self.n0 = int(n)
        self.ptr0, self.ind0, self.w0, self.loop0 = ptr, ind, w, loop
        self.n, self.ptr, self.ind, self.w, self.loop = int(n), ptr, ind, w, loop
        self.launches = 0
        self.syncs = 0

    # -- plumbing -------------------------------------------------------------------
    @property
    def nnz(self) -> int:
        return int(self.ind.shape[0])

    def _ops(self, count: int = 1) -> None:
        self.launches += count

    def scalar(self, x: Any) -> Any:
        """One value read back to the host (a sync on the device)."""
        self.syncs += 1
        return x.item()

    def scatter_add(self, out: Any, idx: Any, vals: Any) -> None:
        raise NotImplementedError

    def mark(self) -> Any:
        return time.perf_counter()

    def seconds(self, a: Any, b: Any) -> float:
        return float(b - a)

    # -- shared steps -----------------------------------------------------------------
    def dense(self, labels: Any) -> tuple[Any, int]:
        """Dense ids ``0 .. k-1`` of ``labels`` (values < n) in id order, and ``k``."""
        xp = self.xp
        used = xp.zeros(self.n, dtype=xp.int32)
        used[labels] = 1
        new = xp.cumsum(used, dtype=xp.int32) - 1
        self._ops(4)
        k = int(self.scalar(new[-1])) + 1 if self.n else 0
        return new[labels].astype(xp.int32), k

    def aggregate(self, lab: Any, n_new: int) -> None:
        """Alg. A.2 AggregateGraph (lines 44-48): one vertex per refined community ``lab``;
        parallel edges summed (sort by (row, column), segmented sums), the edges inside a
        community and its members' loops its self-loop; line 8: the partition ``C`` lifted.
        Rows come out sorted by column."""
        xp = self.xp
        src = self.rows()
        a = lab[src]
        b = lab[self.ind]
        inside = a == b
        nloop = xp.zeros(n_new, dtype=xp.float64)
        self.scatter_add(nloop, a[inside], self.w[inside])
        nloop *= 0.5  # each inside edge is stored in both directions
        self.scatter_add(nloop, lab, self.loop)
        off = ~inside
        key = a[off].astype(xp.int64) * n_new + b[off]
        ww = self.w[off]
        del a, b, inside, off, src
        order = xp.argsort(key, kind="stable") if xp is np else xp.argsort(key)
        key = key[order]
        ww = ww[order]
        del order
        self._ops(16)
        m = int(key.shape[0])
        if m:
            head = xp.empty(m, dtype=xp.bool_)
            head[0] = True
            xp.not_equal(key[1:], key[:-1], out=head[1:])
            seg = xp.cumsum(head, dtype=xp.int64) - 1
            nnz = int(self.scalar(seg[-1])) + 1
            nw = xp.zeros(nnz, dtype=xp.float64)
            self.scatter_add(nw, seg, ww)
            ukey = key[head]
            nind = (ukey % n_new).astype(xp.int32)
            rows = ukey // n_new
            nptr = xp.searchsorted(rows, xp.arange(n_new + 1, dtype=xp.int64)).astype(xp.int64)
            self._ops(10)
        else:
            nind = xp.zeros(0, dtype=xp.int32)
            nw = xp.zeros(0, dtype=xp.float64)
            nptr = xp.zeros(n_new + 1, dtype=xp.int64)
        comm = xp.empty(n_new, dtype=xp.int32)
        comm[lab] = self.C  # every member of a refined community has the same C
        self._ops(2)
        self.n, self.ptr, self.ind, self.w, self.loop = n_new, nptr, nind, nw, nloop
        self.C = comm

    def to_input(self, community: Any) -> None:
        """Back to the input graph (level 0), with ``community`` (ids < n) as ``C``."""
        self.n, self.ptr, self.ind, self.w, self.loop = (
            self.n0, self.ptr0, self.ind0, self.w0, self.loop0)
        self.C = community.astype(self.xp.int32)
        self._ops()

    def compose(self, levels: list[Any], final: Any) -> Any:
        """The answer on level 0: the levels composed, then ``final``."""
        if not levels:
            return final
        comm = levels[0]
        for lab in levels[1:]:
            comm = lab[comm]
        self._ops(len(levels))
        return final[comm]

    # -- the kernels' steps (subclasses) ----------------------------------------------
    def rows(self) -> Any:
        raise NotImplementedError


# ---------------------------------------------------------------------------------------
# The host loop


@dataclass
class Outcome:
    """What :func:`drive` leaves: the answer on level 0 (backend arrays), the levels, and
    the counters and per-phase seconds."""

    community: Any
    levels: list[Any]
    communities: int
    counters: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def drive(be: _Levels, p: Params) -> Outcome:
    """Alg. A.2 ``Leiden`` (lines 1-12), level by level, on the backend ``be``.

    Per level: ``MoveNodesFast`` iterations until an iteration's summed gain in Q is at most
    the level's tolerance (``tolerance / tolerance_drop**level``: GVE-Leiden's threshold
    scaling) or nothing moved, or (``cycle_stop``) it repeats the iteration two before it
    (:func:`_cycling`), ``max_iterations`` at most; with ``pickless``, iterations
    ``pickless_from + 1``, ``+ 3``, ... move only to lower ids; line 4 (every community a single
    vertex: stop); ``RefinePartition`` rounds until no vertex has a target; when nothing
    merged, the connected pieces of the communities instead (leiden.py's fallback); stop
    without aggregating when the refined communities are more than ``aggregation_tolerance``
    of the vertices (GVE-Leiden's rule) or at ``max_levels``; else ``AggregateGraph``. The
    last level's communities are split into connected pieces: the answer. With ``polish``
    (not in the paper), when any level was aggregated: :func:`_polish`.
    """
    c: dict[str, Any] = {
        "level_vertices": [], "level_edges": [], "level_iterations": [], "level_moves": [],
        "level_communities": [], "level_refine_rounds": [], "level_merges": [],
        "level_dq": [], "fallbacks": 0, "polish_iterations": 0, "polish_moves": 0,
        "polish_dq": [],
    }
    sec = {"move": 0.0, "refine": 0.0, "aggregate": 0.0, "final": 0.0, "polish": 0.0}
    xp = be.xp
    be.C = xp.arange(be.n, dtype=xp.int32)  # SingletonPartition
    levels: list[Any] = []
    split = True
    for level in range(p.max_levels):
        t0 = be.mark()
        c["level_vertices"].append(be.n)
        c["level_edges"].append(be.nnz)
        two_m = be.setup()
        if two_m <= 0.0:  # no edges left: nothing moves
            split = False
            c["level_iterations"].append(0)
            c["level_moves"].append(0)
            c["level_dq"].append([])
            sec["move"] += be.seconds(t0, be.mark())
            break
        r = p.resolution / two_m
        tol = p.tolerance / p.tolerance_drop**level
        moves, dqs = _move_nodes(be, p, two_m, tol, p.max_iterations)
        c["level_iterations"].append(len(dqs))
        c["level_moves"].append(moves)
        c["level_dq"].append(dqs)
        n_comm = be.renumber()
        c["level_communities"].append(n_comm)
        t1 = be.mark()
        sec["move"] += be.seconds(t0, t1)
        if n_comm == be.n:  # line 4
            split = False
            break
        be.refine_start(r)  # line 27
        rounds = merges = 0
        while rounds < REFINE_ROUNDS_MAX:  # lines 28-31, in rounds
            chose, merged = be.refine_round(r, rounds % 2)
            rounds += 1
            merges += merged
            if chose == 0:
                break
        c["level_refine_rounds"].append(rounds)
        c["level_merges"].append(merges)
        lab, n_ref = be.dense(be.R)
        if n_ref == be.n:  # nothing merged: the connected pieces (leiden.py's fallback)
            lab, n_ref = be.dense(be.pieces())
            c["fallbacks"] += 1
        t2 = be.mark()
        sec["refine"] += be.seconds(t1, t2)
        if n_ref == be.n or n_ref > p.aggregation_tolerance * be.n or level + 1 == p.max_levels:
            break
        be.aggregate(lab, n_ref)  # lines 7-8
        levels.append(lab)
        sec["aggregate"] += be.seconds(t2, be.mark())
    t3 = be.mark()
    # the answer: flat(P) of the last level, its communities split into connected pieces
    final, k = be.dense(be.pieces() if split else be.C)
    community = be.compose(levels, final)
    sec["final"] += be.seconds(t3, be.mark())
    c["levels"] = len(levels)
    if p.polish and levels:
        t4 = be.mark()
        polished = _polish(be, p, community, len(levels), c)
        sec["polish"] += be.seconds(t4, be.mark())
        if polished is not None:  # the answer no longer composes from the levels
            community, k = polished
            c["communities"] = int(k)
            return Outcome(community, [], int(k), _totals(c), sec)
    c["communities"] = int(k)
    # the last level maps to the final ids directly: the levels compose to ``community``
    if levels:
        levels[-1] = final[levels[-1]]
    return Outcome(community, levels, int(k), _totals(c), sec)


def _totals(c: dict[str, Any]) -> dict[str, Any]:
    c["iterations"] = int(sum(c["level_iterations"]))
    c["moves"] = int(sum(c["level_moves"]))
    c["merges"] = int(sum(c["level_merges"]))
    return c


def _move_nodes(be: _Levels, p: Params, two_m: float, tol: float, max_iterations: int
                ) -> tuple[int, list[float]]:
    """Alg. A.2 ``MoveNodesFast`` (lines 14-23) on the backend's level, in iterations until
    one gains at most ``tol`` in Q or moves nothing, or (``cycle_stop``) repeats the one two
    before it, ``max_iterations`` at most; with ``pickless``, iterations ``pickless_from +
    1``, ``+ 3``, ... move only to lower ids. Returns the moves and each iteration's claimed
    gain."""
    r = p.resolution / two_m
    m = two_m / 2.0
    moves = 0
    dqs: list[float] = []
    moveds: list[int] = []
    for it in range(max_iterations):
        lower_only = p.pickless and it >= p.pickless_from and (it - p.pickless_from) % 2 == 1
        moved, de, dk = be.move_iteration(r, p.prune, lower_only)
        moves += moved
        dq = (de - r * dk) / m
        dqs.append(dq)
        moveds.append(moved)
        if moved == 0 or dq <= tol:
            break
        if p.cycle_stop and _cycling(moveds, dqs):
            break
    return moves, dqs


def _polish(be: _Levels, p: Params, community: Any, levels: int, c: dict[str, Any]
            ) -> tuple[Any, int] | None:
    """``polish`` (beyond the paper): ``MoveNodesFast`` once more on the input graph,
    from the answer, at most ``p.polish`` iterations with the last level's tolerance
    (``tolerance / tolerance_drop**levels``, ``levels`` the aggregations), then the
    communities split into their connected pieces (a vertex that leaves may disconnect its
    community; splitting one into pieces without edges between them never lowers Q). The
    levels' refined communities move as wholes; single vertices at the borders they leave
    are what this moves. Returns the new answer and its count, or None when nothing moved
    (the answer stands, with its levels)."""
    be.to_input(community)
    two_m = be.setup()
    moves, dqs = _move_nodes(be, p, two_m, p.tolerance / p.tolerance_drop**levels, p.polish)
    c["polish_iterations"], c["polish_moves"], c["polish_dq"] = len(dqs), int(moves), dqs
    if not moves:
        return None
    return be.dense(be.pieces())


def _cycling(moveds: list[int], dqs: list[float]) -> bool:
    """Whether the last iteration repeats the one two iterations before it: as many moves
    and the same claimed gain (to 1e-9 relative). Local moving then alternates between two
    configurations (a 2-cycle of the parallel rounds, the pick-less iterations included)
    whose claimed gains are positive while Q does not rise: more iterations gain nothing.

    >>> _cycling([9, 5, 9], [3e-5, 2e-5, 3e-5]), _cycling([9, 5, 8], [3e-5, 2e-5, 3e-5])
    (True, False)
    """
    if len(dqs) < 3:
        return False
    return moveds[-1] == moveds[-3] and abs(dqs[-1] - dqs[-3]) <= 1e-9 * abs(dqs[-3])


def finish(out: Outcome, community: np.ndarray, levels: list[np.ndarray], q: float,
           seconds: dict[str, float], counters: dict[str, Any]) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """The answer (host arrays) and the counters and timings of a run."""
    answer = Partition(community.astype(np.int64), levels or None, float(q), connected=True)
    return answer, {**out.counters, **counters}, {**out.seconds, **seconds}


def empty_result() -> tuple[Partition, dict[str, Any], dict[str, float]]:
    c = {"levels": 0, "iterations": 0, "moves": 0, "merges": 0, "communities": 0,
         "fallbacks": 0, "kernel_launches": 0, "host_syncs": 0}
    return Partition(np.zeros(0, dtype=np.int64), None, 0.0, connected=True), c, {"solve": 0.0}


def loop_array(loop: Any, n: int) -> np.ndarray:
    if loop is None:
        return np.zeros(n, dtype=np.float64)
    arr = np.ascontiguousarray(loop, dtype=np.float64)
    if arr.shape != (n,) or not (np.isfinite(arr).all() and (arr >= 0).all()):
        raise ValueError(f"leiden_gpu: loop must be {n} finite weights >= 0")
    return arr


# ---------------------------------------------------------------------------------------
# The device backend


def _grid(items: int, sms: int, per_block: int = BLOCK) -> int:
    """Blocks of a grid-stride launch over ``items`` (``per_block`` items per block per
    round), at most 32 blocks per SM, at least 1."""
    return int(max(1, min(-(-int(items) // per_block), 32 * sms)))


class _DeviceLevels(_Levels):
    """The steps of :func:`drive` on the device (CuPy arrays, ``kernels/community/leiden.cu``)."""

    def __init__(self, kern: dict[str, Any], sms: int, n: int, ptr: Any, ind: Any, w: Any,
                 loop: Any, rounds: int) -> None:
        import cupy as cp
        import cupyx

        self.xp = cp
        self._scatter = cupyx.scatter_add
        super().__init__(n, ptr, ind, w, loop)
        self.kern = kern
        self.sms = int(sms)
        self.rounds = int(rounds)
        self.peak = 0

    def scatter_add(self, out: Any, idx: Any, vals: Any) -> None:
        self._scatter(out, idx, vals)
        self._ops()

    def mark(self) -> Any:
        ev = self.xp.cuda.Event()
        ev.record()
        return ev

    def seconds(self, a: Any, b: Any) -> float:
        b.synchronize()
        return self.xp.cuda.get_elapsed_time(a, b) / 1e3

    def _launch(self, name: str, grid: int, args: tuple[Any, ...]) -> None:
        self.kern[name]((int(grid),), (BLOCK,), args)
        self.launches += 1

    def _sample(self) -> None:
        self.peak = max(self.peak, int(self.xp.get_default_memory_pool().used_bytes()))

    def _slices(self, first: int, last: int) -> list[tuple[int, int, int]]:
        """(group, start, count) of the list keys first..last-1 (:func:`group_keys`)."""
        out = []
        for key in range(first, last):
            start, count = int(self.starts[key]), int(self.counts[key])
            if count:
                out.append((key % 3, start, count))
        return out

    def _group_launch(self, kind: str, group: int, count: int) -> tuple[str, int]:
        """The kernel of ``leiden_{kind}`` for a group's slice of ``count`` vertices, and its grid."""
        if group == 2:
            return f"leiden_{kind}_block", min(count, 65535)
        if group == 1:
            return f"leiden_{kind}_warp", _grid(count, self.sms, BLOCK // 32)
        return f"leiden_{kind}_sub", _grid(count, self.sms, BLOCK // SUB_GROUP)

    def setup(self) -> float:
        cp, n = self.xp, self.n
        self.k = cp.empty(n, dtype=cp.float64)
        self._launch("leiden_degrees", _grid(n, self.sms, BLOCK // 32),
                     (np.int64(n), self.ptr, self.w, self.loop, self.k))
        self.a = cp.zeros(n, dtype=cp.float64)
        self.size = cp.zeros(n, dtype=cp.int32)
        self._ops(2)
        self._launch("leiden_tally", _grid(n, self.sms),
                     (np.int64(n), self.C, self.k, self.a, self.size))
        deg = self.ptr[1:] - self.ptr[:-1]
        key = group_keys(cp, n, deg, self.rounds)
        self.order = cp.argsort(key).astype(cp.int32)
        counts = cp.zeros(3 * self.rounds + 1, dtype=cp.int32)
        self.scatter_add(counts, key, cp.ones(n, dtype=cp.int32))
        self._ops(8)
        self.counts = self.scalar_array(counts)
        self.starts = np.concatenate(([0], np.cumsum(self.counts)))
        two_m = float(self.scalar(self.k.sum()))
        self.active = int(self.starts[3 * self.rounds])
        self.newc = cp.empty(n, dtype=cp.int32)
        self.de = cp.zeros(n, dtype=cp.float64)
        self.dk = cp.zeros(n, dtype=cp.float64)
        self.flag = cp.ones(n, dtype=cp.uint8)
        slots = max(2 * self.nnz, 1)
        self.keys = cp.empty(slots, dtype=cp.int32)
        self.vals = cp.empty(slots, dtype=cp.float64)
        self.stats = cp.zeros(4, dtype=cp.uint64)
        self._ops(6)
        self._sample()
        return two_m

    def scalar_array(self, x: Any) -> np.ndarray:
        self.syncs += 1
        return x.get()

    def move_iteration(self, r: float, prune: bool, lower_only: bool) -> tuple[int, float, float]:
        st = self.stats
        st.fill(0)
        self._ops()
        for rnd in range(self.rounds):
            parts = self._slices(3 * rnd, 3 * rnd + 3)
            for group, start, count in parts:
                name, grid = self._group_launch("move", group, count)
                self._launch(name, grid, (
                    self.order, np.int64(start), np.int64(count), self.ptr, self.ind, self.w,
                    self.C, self.a, self.size, self.k, np.float64(r), self.keys, self.vals,
                    self.newc, self.de, self.dk, self.flag, np.int32(prune),
                    np.int32(lower_only)))
            for group, start, count in parts:
                name, grid = ("leiden_commit_sub", _grid(count, self.sms, BLOCK // SUB_GROUP)) if group == 0 else (
                    "leiden_commit", _grid(count, self.sms, BLOCK // 32))
                self._launch(name, grid, (
                    self.order, np.int64(start), np.int64(count), self.ptr, self.ind,
                    self.newc, self.k, self.de, self.dk, self.C, self.a, self.size, self.flag,
                    st))
        s = self.scalar_array(st)
        f = s.view(np.float64)
        return int(s[0]), float(f[1]), float(f[2])

    def renumber(self) -> int:
        cp = self.xp
        self.C, n_comm = self.dense(self.C)
        self.newc = self.de = self.dk = self.flag = None
        self.KS = cp.zeros(self.n, dtype=cp.float64)
        self.size.fill(0)
        self._ops(2)
        self._launch("leiden_tally", _grid(self.n, self.sms),
                     (np.int64(self.n), self.C, self.k, self.KS, self.size))
        return n_comm

    def refine_start(self, r: float) -> None:
        cp, n = self.xp, self.n
        self.R = cp.arange(n, dtype=cp.int32)
        self.KR = self.k.copy()
        self.sizeR = cp.ones(n, dtype=cp.int32)
        self.ext = cp.empty(n, dtype=cp.float64)
        self.target = cp.full(n, -1, dtype=cp.int32)
        self.wanted = cp.zeros(n, dtype=cp.uint8)
        self.done = cp.zeros(n, dtype=cp.uint8)
        self._ops(7)

    def refine_round(self, r: float, parity: int) -> tuple[int, int]:
        st = self.stats
        st.fill(0)
        self.ext.fill(0)
        self._ops(2)
        self._launch("leiden_refine_ext", _grid(self.n, self.sms, BLOCK // 32),
                     (np.int64(self.n), self.ptr, self.ind, self.w, self.C, self.R, self.ext))
        for group, start, count in self._slices(0, 3 * self.rounds):
            name, grid = self._group_launch("refine", group, count)
            self._launch(name, grid, (
                self.order, np.int64(start), np.int64(count), self.ptr, self.ind, self.w,
                self.C, self.KS, self.R, self.KR, self.sizeR, self.ext, self.k, np.float64(r),
                np.int32(parity), self.keys, self.vals, self.target, self.wanted, self.done, st))
        self._launch("leiden_refine_commit", _grid(self.active, self.sms), (
            self.order, np.int64(self.active), self.k, self.target, self.wanted, self.R,
            self.KR, self.sizeR, st))
        s = self.scalar_array(st)
        return int(s[1]), int(s[0])

    def pieces(self) -> Any:
        """The connected pieces of ``C``, each labelled by its smallest vertex: union-find
        (``leiden_pieces_link``, then ``_flatten``), two launches and no host sync."""
        n = self.n
        lab = self.xp.arange(n, dtype=self.xp.int32)
        self._ops()
        self._launch("leiden_pieces_link", _grid(n, self.sms, BLOCK // 32),
                     (np.int64(n), self.ptr, self.ind, self.C, lab))
        self._launch("leiden_pieces_flatten", _grid(n, self.sms), (np.int64(n), lab))
        return lab

    def release(self) -> None:
        """The level's work arrays (the aggregation needs only the graph, C and lab)."""
        self.keys = self.vals = self.KR = self.sizeR = self.ext = None
        self.target = self.wanted = self.done = self.a = self.size = self.order = None

    def aggregate(self, lab: Any, n_new: int) -> None:
        """Alg. A.2 AggregateGraph (lines 44-48) by hashing (``leiden_agg_*``): the new
        vertex ``c`` gets a table of twice its members' degrees in the level's hash table
        (``2 nnz`` slots in all), its members' edges are hashed into it by the move kernels'
        groups, the edges inside it summed into its loop, and the tables compacted into the
        new CSR. The same graph as :meth:`_Levels.aggregate` (the host model's), its rows in
        table order instead of sorted, which no decision depends on; line 8: ``C`` lifted."""
        cp, n, sms = self.xp, self.n, self.sms
        cdeg = cp.zeros(n_new + 1, dtype=cp.uint64)
        nloop = cp.zeros(n_new, dtype=cp.float64)
        self._ops(2)
        self._launch("leiden_agg_sizes", _grid(n, sms),
                     (np.int64(n), self.ptr, lab, self.loop, cdeg[1:], nloop))
        toff = cp.cumsum(cdeg.view(cp.int64), dtype=cp.int64)
        toff *= 2
        del cdeg
        slots = 2 * self.nnz
        keys, vals = self.keys[:slots], self.vals[:slots]
        keys.fill(-1)
        vals.fill(0.0)
        rowlen = cp.zeros(n_new, dtype=cp.int32)
        self._ops(5)
        for group, start, count in self._slices(0, 3 * self.rounds):
            name, grid = self._group_launch("agg", group, count)
            self._launch(name, grid, (
                self.order, np.int64(start), np.int64(count), self.ptr, self.ind, self.w, lab,
                toff, keys, vals, rowlen, nloop))
        comm = cp.empty(n_new, dtype=cp.int32)
        comm[lab] = self.C  # every member of a refined community has the same C
        nptr = cp.zeros(n_new + 1, dtype=cp.int64)
        cp.cumsum(rowlen, dtype=cp.int64, out=nptr[1:])
        self._ops(4)
        del rowlen
        self.release()
        self._sample()
        nnz_new = int(self.scalar(nptr[n_new]))
        nind = cp.empty(max(nnz_new, 1), dtype=cp.int32)[:nnz_new]
        nw = cp.empty(max(nnz_new, 1), dtype=cp.float64)[:nnz_new]
        most = slots // (AGG_WARP_SLOTS + 1) + 1  # tables of more slots than a warp takes
        big = cp.empty(most, dtype=cp.int32)
        nbig = cp.zeros(1, dtype=cp.int32)
        self._ops()
        self._launch("leiden_agg_emit_warp", _grid(n_new, sms, BLOCK // 32),
                     (np.int64(n_new), toff, keys, vals, nptr, nind, nw, big, nbig))
        self._launch("leiden_agg_emit_block", min(most, 4 * sms),
                     (toff, keys, vals, nptr, nind, nw, big, nbig))
        self._sample()
        del keys, vals, toff
        self.n, self.ptr, self.ind, self.w, self.loop = n_new, nptr, nind, nw, nloop
        self.C = comm

    def quality(self, community: Any, k: int) -> float:
        """Q (Eq. 1) of ``community`` on level 0."""
        cp, n = self.xp, self.n0
        k0 = cp.empty(n, dtype=cp.float64)
        self._launch("leiden_degrees", _grid(n, self.sms, BLOCK // 32),
                     (np.int64(n), self.ptr0, self.w0, self.loop0, k0))
        a = cp.zeros(n, dtype=cp.float64)
        size = cp.zeros(n, dtype=cp.int32)
        st = cp.zeros(2, dtype=cp.uint64)
        self._ops(3)
        self._launch("leiden_tally", _grid(n, self.sms), (np.int64(n), community, k0, a, size))
        self._launch("leiden_quality", _grid(n, self.sms, BLOCK // 32),
                     (np.int64(n), self.ptr0, self.ind0, self.w0, self.loop0, community, a, st))
        two_m = float(self.scalar(k0.sum()))
        f = self.scalar_array(st).view(np.float64)
        if two_m <= 0.0:
            return 0.0
        return float(f[0] / two_m - f[1] / (two_m * two_m))


def _module_kernels() -> dict[str, Any]:
    from matchbench.gpu.kernels import get_module

    module = get_module("leiden")
    names = [
        "leiden_degrees", "leiden_tally", "leiden_move_warp",
        "leiden_move_block", "leiden_commit", "leiden_refine_ext", "leiden_refine_warp",
        "leiden_refine_block", "leiden_refine_commit", "leiden_pieces_link",
        "leiden_move_sub", "leiden_commit_sub", "leiden_refine_sub",
        "leiden_pieces_flatten", "leiden_quality", "leiden_agg_sizes", "leiden_agg_sub",
        "leiden_agg_warp", "leiden_agg_block", "leiden_agg_emit_warp", "leiden_agg_emit_block",
    ]
    return {name: module.get_function(name) for name in names}


def _sm_count() -> int:
    return sm_count()


@dataclass
class _DeviceRun:
    community: Any
    levels: list[Any]
    outcome: Outcome
    q: float
    seconds: dict[str, float]
    counters: dict[str, Any]
    peak: int


def _run_device(kern: dict[str, Any], sms: int, n: int, ptr: Any, ind: Any, w: Any, loop: Any,
                p: Params) -> _DeviceRun:
    """:func:`drive` on the device for a graph already there (level 0 is not modified)."""
    be = _DeviceLevels(kern, sms, n, ptr, ind, w, loop, p.rounds)
    out = drive(be, p)
    q = be.quality(out.community, out.communities)
    counters = {"kernel_launches": be.launches, "host_syncs": be.syncs}
    return _DeviceRun(out.community, out.levels, out, q, dict(out.seconds), counters, be.peak)


def _to_host(run: _DeviceRun) -> tuple[np.ndarray, list[np.ndarray]]:
    return run.community.get().astype(np.int64), [x.get().astype(np.int64) for x in run.levels]


def leiden_gpu(graph: Any, loop: Any = None, **params: Any
               ) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """The Leiden algorithm on the current CUDA device.

    Parameters
    ----------
    graph : WeightedGraph
        A CSR graph, n < 2^31.
    loop : array_like of float, optional
        Self-loop weights per vertex (the community module's convention); none by default.
    resolution : float
        ``gamma`` (1: modularity; the claimed Q is modularity whatever its value).
    tolerance, tolerance_drop : float
        A level's local moving stops when an iteration gains at most ``tolerance /
        tolerance_drop**level`` in Q (GVE-Leiden: 1e-2 and 10).
    max_iterations, max_levels : int
        Local-moving iterations per level, and levels, at most (GVE-Leiden: 20, 10).
    rounds : int
        Rounds per iteration (vertices split by a hash of their id; each round's moves are
        committed before the next round decides).
    aggregation_tolerance : float
        Stop instead of aggregating when the refined communities are more than this share of
        the level's vertices (GVE-Leiden: 0.8).
    prune : bool
        Evaluate only vertices whose neighbourhood changed (GVE-Leiden's vertex pruning).
    pickless : bool
        In every second iteration a vertex may only move to a lower community id
        (nu-Louvain's pick-less guard against two groups swapping communities in one round).
    pickless_from : int
        The guard's first iteration: iterations ``pickless_from + 1``, ``+ 3``, ... are
        the lower-id ones, the earlier ones unrestricted (0: every second iteration).
    cycle_stop : bool
        Stop a level's moving when an iteration repeats the one two before it (as many
        moves, the same claimed gain): the parallel rounds then alternate between two
        configurations and more iterations gain nothing.
    polish : int
        Not in the paper: after the last level, when any level was aggregated, at most this
        many local-moving iterations on the input graph from the answer (the last level's
        tolerance, the same rounds and guards), then the communities split into their
        connected pieces. Vertices move one by one again, where the levels moved refined
        communities as wholes. 0 (the default): none. The answer then reports no
        ``levels`` (they no longer compose to it) unless nothing moved.

    Returns
    -------
    (Partition, counters, timings)
        The partition (``connected=True``; ``levels`` the refined partitions of the
        aggregated levels, the last mapped to the answer; ``modularity`` Q on the input
        graph, with ``loop``); counters ``levels``, ``iterations``, ``moves``, ``merges``,
        ``fallbacks``, ``communities``, per level ``level_vertices``, ``level_edges``,
        ``level_iterations``, ``level_moves``, ``level_communities``,
        ``level_refine_rounds``, ``level_merges``, ``level_dq``, ``polish_iterations``,
        ``polish_moves``, ``polish_dq``, and ``kernel_launches``, ``host_syncs``; timings
        ``move``, ``refine``, ``aggregate``, ``final``, ``polish`` (CUDA events) and
        ``solve``.

    Notes
    -----
    Traag, Waltman & van Eck, Sci. Rep. 9, 5233 (2019), Supplementary Algorithm A.2; the
    parallel scheme of GVE-Leiden (Sahu, arXiv:2312.04876). ``kernels/community/leiden.cu``
    says where it departs from the pseudo-code and why the communities are connected.
    """
    import cupy as cp

    from matchbench.gpu.common import EventTimer

    p = check_params(**params)
    n0 = int(graph.n)
    loop0 = loop_array(loop, n0)
    if n0 == 0:
        return empty_result()
    if n0 > _INT32_MAX:
        raise ValueError(f"leiden_gpu: {n0} vertices; community ids are int32 (n < 2^31)")
    ptr = cp.asarray(np.ascontiguousarray(graph.ptr, dtype=np.int64))
    ind = cp.asarray(np.ascontiguousarray(graph.ind, dtype=np.int32))
    w = cp.asarray(np.ascontiguousarray(graph.weight, dtype=np.float64))
    timer = EventTimer()
    with timer:
        run = _run_device(_module_kernels(), _sm_count(), n0, ptr, ind, w, cp.asarray(loop0), p)
    community, levels = _to_host(run)
    return finish(run.outcome, community, levels, run.q, {"solve": timer.seconds}, run.counters)


def _warm_graph() -> CommunityGraph:
    """Two cliques joined by a path and a star of 300 leaves (block kernels), plus isolated
    vertices: reaches every kernel, aggregation included."""
    us, vs = [np.arange(1, 301)], [np.zeros(300, dtype=np.int64)]
    base = 301
    for size in (6, 9):
        i, j = np.triu_indices(size, 1)
        us += [i + base, np.array([base])]
        vs += [j + base, np.array([0])]
        base += size
    u, v = np.concatenate(us), np.concatenate(vs)
    return CommunityGraph.from_edges(u, v, np.ones(u.size), base + 3, name="leiden_gpu_warm")


# ---------------------------------------------------------------------------------------
# The solver


class LeidenGPU(DeviceCommunitySolver):
    """The Leiden algorithm on the GPU; see :func:`leiden_gpu`.

    Parameters
    ----------
    resolution, tolerance, tolerance_drop, max_iterations, max_levels, rounds,
    aggregation_tolerance, prune, pickless, pickless_from, cycle_stop, polish
        As :func:`leiden_gpu` (``conf/algorithm/leiden_gpu.yaml``: GVE-Leiden's values, the
        guard from iteration 2, cycle_stop and polish).

    Notes
    -----
    Traag, Waltman & van Eck, Sci. Rep. 9, 5233 (2019), Supplementary Algorithm A.2, in
    GVE-Leiden's parallel form. ``prepare`` uploads the graph once per instance
    (``timings()["upload"]``) and, the first time, runs on a small graph that reaches every
    kernel (compilation, CuPy's sorts); ``run`` is the whole algorithm, CUDA-event timed
    (``solve``), modularity included; ``result`` copies the answer back (``transfer``). The
    answer claims connected communities, which the verifier checks.
    """

    name: ClassVar[str] = "leiden_gpu"
    problem: ClassVar[str] = "community"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("leiden",)
    #: ``polish`` came after the first recorded runs; 0 is how they ran
    variant_defaults: ClassVar[dict[str, Any]] = {"polish": 0}

    def __init__(self, *, resolution: float = 1.0, tolerance: float = 1e-2,
                 tolerance_drop: float = 10.0, max_iterations: int = 20, max_levels: int = 10,
                 rounds: int = 4, aggregation_tolerance: float = 0.8, prune: bool = True,
                 pickless: bool = True, pickless_from: int = 0,
                 cycle_stop: bool = False, polish: int = 0) -> None:
        p = check_params(resolution=resolution, tolerance=tolerance,
                         tolerance_drop=tolerance_drop, max_iterations=max_iterations,
                         max_levels=max_levels, rounds=rounds,
                         aggregation_tolerance=aggregation_tolerance, prune=prune,
                         pickless=pickless, pickless_from=pickless_from,
                         cycle_stop=cycle_stop, polish=polish)
        super().__init__(**p.__dict__)
        self._p = p

    def estimate_bytes(self, instance: Any) -> int:
        """Peak device bytes, an upper estimate: the graph (12 B per CSR entry, 8 per vertex),
        the level's hash tables (24 B per entry), 60 B per entry more for the aggregation
        (the new level beside the old one, its tables in the level's) and what CuPy's pool
        keeps, and about 120 B per vertex of per-level arrays. Measured peaks on the quick
        suite (pipeline runs 20261127T050138-139 and 20261127T052123-031, ``polish`` 0 and
        2): 42-71 B per CSR entry, under half of this."""
        n, nnz = int(instance.n), int(instance.ind.shape[0])
        return int(8 * (n + 1) + nnz * (12 + 24 + 60) + 120 * n + (1 << 20))

    # -- the hooks of DeviceCommunitySolver ---------------------------------------------

    def _kernels(self) -> dict[str, Any]:
        return _module_kernels()

    def _device_run(self, kern: dict[str, Any], sms: int, n: int, ptr: Any, ind: Any, w: Any,
                    loop: Any, warm: bool = False) -> _DeviceRun:
        return _run_device(kern, sms, n, ptr, ind, w, loop, self._p)

    @staticmethod
    def _warm_graph() -> CommunityGraph:
        return _warm_graph()

    def _finish(self, run: _DeviceRun, community: np.ndarray, levels: list[np.ndarray]
                ) -> tuple[Partition, dict[str, Any]]:
        answer, counters, _ = finish(run.outcome, community, levels, run.q, {}, run.counters)
        return answer, counters

    def _empty(self) -> tuple[Partition, dict[str, Any]]:
        answer, counters, _ = empty_result()
        return answer, counters
