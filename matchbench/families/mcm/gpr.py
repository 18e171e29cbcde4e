"""G-PR: atomic- and lock-free GPU push-relabel maximum-cardinality bipartite matching.

One solver class, :class:`GPR`, runs the three algorithms of Deveci, Kaya, Uçar &
Çatalyürek's G-PR paper, chosen by ``variant``:

- ``first``: G-PR-First (Alg. 3 with the push kernel of Alg. 6, one thread per column);
- ``noshr``: G-PR with active-column lists (Alg. 7-9) without shrinking;
- ``shr``: G-PR with active-column lists compacted after every global relabel when they
  hold at least 512 entries (Alg. 7 lines 11-13).

All three relabel globally on the GPU (Alg. 4-5) before the first push and then as often
as GETITERGR (``strategy``, ``k``) says. The kernels are in ``kernels/mcm/gpr.cu``.

The host side (:class:`GPRLoop`) is written against a small launcher interface, so that the
same loop drives the CuPy kernels here and an emulation of them in the CPU tests.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from matchbench.core.solver import BaseSolver
from matchbench.gpu.common import block_size

VARIANTS = ("first", "noshr", "shr")
STRATEGIES = ("fix", "adaptive")
LAUNCH_MODES = ("graph", "plain")
#: Thread mapping of the host loop's adjacency walks: "thread" = the paper's thread per
#: vertex, "warp" = a warp's lanes share each walk (the *_warp kernels).
SCANS = ("thread", "warp")
#: The persistent kernel's mapping: each walk by a thread, a warp or the block, by degree.
PERSISTENT_SCAN = "tiered"
#: The k values of the paper's Fig. 1 sweep (any k > 0 is accepted).
K_VALUES = (0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
#: Where a global relabel's BFS ends: "full" = the paper's (no row added), "active" = after
#: the level at which every active column has its label (persistent kernel only).
RELABEL_STOPS = ("full", "active")
#: The persistent kernel's default local_max: one block's threads at the default size.
PERSISTENT_LOCAL_MAX = 512
#: Alg. 7 line 11: shrink the active lists only when they hold at least this many entries.
SHRINK_MIN = 512
#: Ring of launch stamps (a power of two); one more slot carries the lists' new length.
RING_SIZE = 1024
# Slots of the control block; kept in step with the GPR_CTL_* #defines of kernels/mcm/gpr.cu.
_CTL_SEQ, _CTL_LOOP, _CTL_GUARD, _CTL_BGUARD, _CTL_LEVEL, _CTL_LEN = range(6)
_CTL_SIZE = 8
# Slots of the persistent kernel's control block (int64); GPR_P_* in kernels/mcm/gpr.cu.
_P_ABORT = 1
_P_LEN = 8
_P_COUNTERS = {
    "push_kernels": 9,
    "global_relabels": 10,
    "bfs_levels": 11,
    "max_level": 12,
    "shrinks": 13,
    "grid_barriers": 14,
    "loops": 15,
}
_P_RELABEL_NS = 16
_P_LOCAL = 28
_P_STOPS = 29
_P_SIZE = 32
#: Largest block of the persistent kernel (GPR_P_MAX_THREADS).
_P_MAX_THREADS = 1024
#: A grid barrier that waits longer than this gives up (a grid that is not co-resident).
_P_BARRIER_TIMEOUT_NS = 2_000_000_000
#: Largest batch of push iterations, and of BFS levels, queued between two host reads.
#: Both must stay well under RING_SIZE / 3: a stamp is read back before the ring wraps
#: over it as long as at most two push batches and one BFS batch are in flight.
PUSH_BATCH = 32
BFS_BATCH = 256


def relabel_interval(strategy: str, k: float, max_level: int) -> int:
    """Push iterations until the next global relabel: GETITERGR of Alg. 3 line 7.

    Parameters
    ----------
    strategy : {"fix", "adaptive"}
        ``fix``: every ``k`` push iterations; ``adaptive``: every ``k * maxLevel``
        iterations, ``maxLevel`` being what the last global relabel returned.
    k : float
        Positive multiplier.
    max_level : int
        ``maxLevel`` of the last global relabel (Alg. 4 line 8).

    Returns
    -------
    int
        ``max(1, ceil(k * base))`` with ``base = 1`` (fix) or ``max_level`` (adaptive):
        at least one push iteration runs between two relabels, and never fewer than
        ``k * base``. (The paper gives no rounding rule; ``k = 0.3, 0.5, 0.7, 1`` thus all
        mean "before every push kernel" for ``fix``.)

    Notes
    -----
    Deveci et al. G-PR, Sec. III-A: the (fix, k) and (adaptive, k) strategies of Fig. 1.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if not k > 0:
        raise ValueError(f"k must be positive, got {k!r}")
    base = 1 if strategy == "fix" else max(int(max_level), 1)
    # The small tolerance keeps e.g. 0.7 * 10 = 7.000000000000001 from rounding up to 8.
    return max(1, math.ceil(k * base - 1e-9))


def power_of_two_parts(k: int) -> list[int]:
    """``k`` as a sum of distinct powers of two, largest first (the batches to replay)."""
    if k < 1:
        raise ValueError(f"batch size must be positive, got {k}")
    return [1 << b for b in range(k.bit_length() - 1, -1, -1) if k >> b & 1]


def batch_sizes(first: int, cap: int) -> Iterator[int]:
    """Sizes of successive batches: ``first``, then doubling up to ``cap``.

    A sequence of D launches costs O(log D) host reads and at most about D surplus
    launches, which return at once on the device.
    """
    size = max(1, min(int(first), int(cap)))
    while True:
        yield size
        size = min(2 * size, int(cap))


def list_blocks(length: int, threads: int, max_blocks: int) -> int:
    """Blocks for a kernel over the active lists: a power of two, so few CUDA graphs."""
    need = max(1, -(-int(length) // int(threads)))
    return min(1 << (need - 1).bit_length(), int(max_blocks))


class GPRLoop:
    """The host side of G-PR: Alg. 3 (``first``) and Alg. 7 (``noshr``, ``shr``).

    Parameters
    ----------
    ops : launcher
        Queues kernels and reads the device. It provides ``xp`` (the array module),
        ``launch(name, n_items, args)`` (one thread per item, grid-stride beyond the
        launcher's grid cap), ``launch_blocks(name, blocks, args)``, ``batch(key,
        enqueue)`` (run ``enqueue()``, which must queue the same launches whenever it
        is called with the same ``key``: as is, or as a replayed CUDA graph),
        ``snapshot()`` (queue a copy of the stamp ring; returns a token), ``read(token)``
        (wait for it; the ring as a NumPy array, the only host synchronization), ``mark()``
        and ``elapsed(a, b)`` (phase timing), ``count_array_ops(k)`` (launches queued
        through ``xp``), ``max_blocks`` and ``threads``.
    arrays : dict
        Device arrays: ``row_ptr``, ``row_ind``, ``col_ptr``, ``col_ind``, ``mu`` (mates,
        rows then columns), ``psi`` (labels, likewise), ``ia`` (iA, int32, one per
        column), ``lists`` (Ac/Ap buffers, two arrays), ``ring`` (int32,
        ``RING_SIZE + 1``), ``ctl`` (int32 control block).
    m, n : int
        Rows, columns.
    n_active : int
        Unmatched columns of the initial matching (the lists' initial length).
    variant, strategy, k
        See :class:`GPR`.
    idx : numpy scalar type
        The index type of the graph arrays (``np.int32`` or ``np.int64``).
    deadline : float, optional
        A ``time.perf_counter()`` value past which a host read raises ``TimeoutError``
        (benchmarks use it to bound pathological configurations).
    scan : {"thread", "warp"}
        Thread mapping of the adjacency walks, see :class:`GPR`.

    Notes
    -----
    The paper's loop reads ``actExists`` after every push kernel and ``uAdded`` after
    every BFS level. Here the kernels are queued in batches and each launch finds what
    it needs on the device (``kernels/mcm/gpr.cu``, "Control block and early exit"): a push
    batch is read back while the next one runs, so a push iteration costs no host round
    trip, and a global relabel costs one read per batch of BFS levels (the first batch
    guessed from the previous relabel's depth). Launches queued past the end exit at
    once. The iterations, relabels and levels that ran are those of the paper's loop.
    """

    def __init__(
        self,
        ops: Any,
        arrays: dict[str, Any],
        *,
        m: int,
        n: int,
        n_active: int,
        variant: str,
        strategy: str,
        k: float,
        idx: type = np.int32,
        deadline: float | None = None,
        scan: str = "thread",
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if scan not in SCANS:
            raise ValueError(f"scan must be one of {SCANS}, got {scan!r}")
        relabel_interval(strategy, k, 1)  # validates strategy and k
        suffix = "_warp" if scan == "warp" else ""
        self.k_level = "gpr_gr_level" + suffix
        self.k_first = "gpr_push_first" + suffix
        self.k_push = "gpr_push_active" + suffix
        # A warp per slot for the warp push: 32 threads per list entry.
        self.push_lanes = 32 if scan == "warp" else 1
        self.ops = ops
        self.a = arrays
        self.m, self.n = int(m), int(n)
        self.variant, self.strategy, self.k = variant, strategy, float(k)
        self.idx = idx
        self.deadline = deadline
        self.inf = idx(self.m + self.n)
        self.mask = np.int32(RING_SIZE - 1)
        mu, psi = arrays["mu"], arrays["psi"]
        self.mu_row, self.mu_col = mu[: self.m], mu[self.m :]
        self.psi_row, self.psi_col = psi[: self.m], psi[self.m :]
        # Host mirrors of the control block (the device advances its own copy).
        self.seq = 0
        self.loop = 0
        self.length = int(n_active)
        self.parity = 0  # Ac is lists[parity], Ap is lists[1 - parity]
        self.pending: list[int] = []  # stamps of iterations not yet read back
        self.bfs_hint = 4
        self._shrink_seq: int | None = None  # stamp of a shrink whose length is unread
        self._shrunk = False  # the last relabel was followed by a shrink iteration
        self.stats: dict[str, int] = {
            "push_kernels": 0,
            "global_relabels": 0,
            "bfs_levels": 0,
            "max_level": 0,
            "shrinks": 0,
            "host_syncs": 0,
        }
        self.relabel_marks: list[tuple[Any, Any]] = []

    # -- the loop ----------------------------------------------------------------------

    def solve(self) -> dict[str, int]:
        """Run to the maximum matching (FIXMATCHING included); returns the counters."""
        if self.length > 0:
            while True:
                loop_before = self.loop
                t0 = self.ops.mark()
                max_level = self._global_relabel()  # Alg. 3 lines 5-7, Alg. 7 lines 6-10
                self.relabel_marks.append((t0, self.ops.mark()))
                if max_level is None:
                    break
                interval = relabel_interval(self.strategy, self.k, max_level)
                if self._pushes(interval):
                    break
                if self.loop != loop_before + interval:
                    raise RuntimeError(
                        f"G-PR: {self.loop - loop_before} push iterations between two global "
                        f"relabels, GETITERGR asked for {interval}"
                    )
        # Alg. 3 line 11 / Alg. 7 line 20.
        self.ops.launch("gpr_fix_matching", self.n, (self.idx(self.n), self.mu_row, self.mu_col))
        return dict(self.stats, final_list_length=self.length, loops=self.loop)

    def relabel_seconds(self) -> float:
        """Device time spent in global relabels (valid once the run has completed)."""
        return float(sum(self.ops.elapsed(a, b) for a, b in self.relabel_marks))

    def _read(self, token: tuple[Any, int]) -> tuple[np.ndarray, int]:
        self.stats["host_syncs"] += 1
        handle, horizon = token
        ring = self.ops.read(handle)
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise TimeoutError("G-PR: time limit reached")
        if self._shrink_seq is not None and horizon > self._shrink_seq:
            # The lists' length after the last shrink (gpr_shrink_len), for grid sizes and
            # the next shrink's scan.
            self.length = int(ring[RING_SIZE])
            self._shrink_seq = None
        return ring, horizon

    def _snapshot(self) -> tuple[Any, int]:
        return self.ops.snapshot(), self.seq

    def _confirm(self, ring: np.ndarray, horizon: int) -> bool:
        """Account for the pending iterations up to ``horizon``; True if one found none."""
        done = 0
        for s in self.pending:
            if s >= horizon:
                break
            if ring[s & (RING_SIZE - 1)] != s:
                self.stats["push_kernels"] += done
                self.pending = []
                return True
            done += 1
        self.stats["push_kernels"] += done
        del self.pending[:done]
        return False

    def _global_relabel(self) -> int | None:
        """G-GR (Alg. 4); returns maxLevel, or None when no active column was left.

        For ``shr``, the first iteration after the relabel is the shrink iteration
        (Alg. 7 lines 11-13), queued once the BFS is known to be complete.
        """
        a, ops = self.a, self.ops
        ops.launch(
            "gpr_init_relabel",
            self.m + self.n,
            (
                self.idx(self.m),
                self.idx(self.n),
                a["mu"],
                a["psi"],
                self.inf,
                a["ring"],
                self.mask,
                a["ctl"],
            ),
        )
        first_read = True
        calls = 0
        max_level = None
        self._shrunk = False
        for size in batch_sizes(self.bfs_hint, BFS_BATCH):
            start = self.seq
            self._bfs_batch(size)
            ring, horizon = self._read(self._snapshot())
            if first_read:
                first_read = False
                # Alg. 3 line 4 / Alg. 7 line 5: did the iterations before this relabel
                # leave active columns? If not, its launches exited at once.
                if self._confirm(ring, start):
                    return None
                self.stats["global_relabels"] += 1
            for i in range(size):
                s = start + i
                if ring[s & (RING_SIZE - 1)] != s:  # Alg. 4 line 4: uAdded is false
                    calls += i + 1
                    max_level = 2 * calls  # Alg. 4 lines 7-8
                    break
            if max_level is not None:
                break
            calls += size
            if calls > self.m + 1:
                raise RuntimeError(f"G-GR: BFS deeper than m + 1 = {self.m + 1} level pairs")
        self.stats["bfs_levels"] += calls
        self.stats["max_level"] = max_level
        self.bfs_hint = calls + 1
        if self.variant == "shr" and self.length >= SHRINK_MIN:
            self._shrink_iteration()
        return max_level

    def _bfs_batch(self, size: int) -> None:
        for part in power_of_two_parts(size):
            self.ops.batch(("bfs", part), lambda p=part: self._enqueue_bfs(p))
            self.seq += part

    def _enqueue_bfs(self, part: int) -> None:
        a, ops = self.a, self.ops
        for j in range(part):
            ops.launch(
                self.k_level,
                self.m,
                (
                    self.idx(self.m),
                    a["row_ptr"],
                    a["row_ind"],
                    self.mu_row,
                    self.mu_col,
                    self.psi_row,
                    self.psi_col,
                    self.inf,
                    a["ring"],
                    self.mask,
                    a["ctl"],
                    np.int32(j),
                ),
            )
        ops.launch_blocks(
            "gpr_advance",
            1,
            (a["ctl"], np.int32(part), np.int32(0), np.int32(2 * part), np.int32(_CTL_BGUARD)),
        )

    def _pushes(self, interval: int) -> bool:
        """Push iterations up to the next relabel; True when the loop has ended."""
        remaining = interval
        if self._shrunk:
            remaining -= 1  # the shrink iteration was this interval's first
        pending_token = None
        sizes = batch_sizes(8, PUSH_BATCH)
        while remaining > 0:
            size = min(next(sizes), remaining)
            self._push_batch(size)
            remaining -= size
            token = self._snapshot()
            if pending_token is not None and self._confirm(*self._read(pending_token)):
                return True
            pending_token = token
        # The last batch is read back by the next relabel's first read.
        return False

    def _push_batch(self, size: int) -> None:
        for part in power_of_two_parts(size):
            if self.variant == "first":
                key: tuple = ("first", part)
            else:
                key = ("lists", part, self.parity, *self._list_grids())
            self.ops.batch(key, lambda p=part: self._enqueue_push(p))
            self.pending.extend(range(self.seq, self.seq + part))
            self.seq += part
            self.loop += part
            if self.variant != "first":
                self.parity ^= part & 1  # Alg. 7 line 18, once per iteration

    def _enqueue_push(self, part: int) -> None:
        a, ops = self.a, self.ops
        if self.variant == "first":
            for j in range(part):
                ops.launch(
                    self.k_first,
                    self.n,
                    (
                        self.idx(self.n),
                        a["col_ptr"],
                        a["col_ind"],
                        self.mu_row,
                        self.mu_col,
                        self.psi_row,
                        self.psi_col,
                        self.inf,
                        a["ring"],
                        self.mask,
                        a["ctl"],
                        np.int32(j),
                    ),
                )
        else:
            blocks, push_blocks = self._list_grids()
            for j in range(part):
                ac = a["lists"][(self.parity + j) & 1]
                ap = a["lists"][(self.parity + j + 1) & 1]
                self._launch_init_active(blocks, ac, ap, j)
                self._launch_push_active(push_blocks, ac, ap, j)
        ops.launch_blocks(
            "gpr_advance",
            1,
            (a["ctl"], np.int32(part), np.int32(part), np.int32(0), np.int32(_CTL_GUARD)),
        )

    def _list_grids(self) -> tuple[int, int]:
        """Blocks of the list kernels: G-PR-INITKRNL (a thread per slot) and the push."""
        t, cap = self.ops.threads, self.ops.max_blocks
        return list_blocks(self.length, t, cap), list_blocks(self.length * self.push_lanes, t, cap)

    def _launch_init_active(self, blocks: int, ac: Any, ap: Any, j: int) -> None:
        a = self.a
        self.ops.launch_blocks(
            "gpr_init_active",
            blocks,
            (
                ac,
                ap,
                self.mu_row,
                self.mu_col,
                a["ia"],
                a["ring"],
                self.mask,
                a["ctl"],
                np.int32(j),
            ),
        )

    def _launch_push_active(self, blocks: int, ac: Any, ap: Any, j: int) -> None:
        a = self.a
        self.ops.launch_blocks(
            self.k_push,
            blocks,
            (
                a["col_ptr"],
                a["col_ind"],
                self.mu_row,
                self.mu_col,
                self.psi_row,
                self.psi_col,
                self.inf,
                ac,
                ap,
                a["ia"],
                a["ring"],
                self.mask,
                a["ctl"],
                np.int32(j),
            ),
        )

    def _shrink_iteration(self) -> None:
        """One iteration of Alg. 7 with G-PR-SHRKRNL (lines 11-13) in place of INITKRNL.

        G-PR-INITKRNL fixes Ac; CuPy's scan counts the live entries; gpr_compact writes
        them, in order, to the front of the other buffer, which becomes Ac (and the old
        Ac becomes Ap); the new length goes to the control block, where the kernels read
        it, and to the ring, where the next read finds it. Then the iteration's push and
        the swap: Ac is back in the buffer it started in. Until the host has read the
        new length, it sizes grids by the old one, an upper bound.
        """
        a, ops, xp = self.a, self.ops, self.ops.xp
        blocks, push_blocks = self._list_grids()
        ac, ap = a["lists"][self.parity], a["lists"][1 - self.parity]
        self._launch_init_active(blocks, ac, ap, 0)
        live = ac[: self.length] != -1
        pos = xp.cumsum(live, dtype=self.idx)
        ops.count_array_ops(2)
        ops.launch_blocks("gpr_compact", blocks, (ac, pos, ap, a["ctl"]))
        ops.launch_blocks("gpr_shrink_len", 1, (pos, a["ring"], self.mask, a["ctl"]))
        self._launch_push_active(push_blocks, ap, ac, 0)
        ops.launch_blocks(
            "gpr_advance",
            1,
            (a["ctl"], np.int32(1), np.int32(1), np.int32(0), np.int32(_CTL_GUARD)),
        )
        self.pending.append(self.seq)
        self._shrink_seq = self.seq
        self._shrunk = True
        self.stats["shrinks"] += 1
        self.seq += 1
        self.loop += 1


@dataclass
class _DeviceState:
    """What one instance keeps on the GPU across repetitions."""

    instance: Any
    device_id: int
    stream: Any
    arrays: dict[str, Any]
    kernels: dict[str, Any]
    idx: type
    pinned: list[np.ndarray]
    events: list[Any]
    max_blocks: int
    graphs: dict[tuple, tuple[Any, int]] = field(default_factory=dict)
    p_grid: int = 0  # blocks of the persistent kernel (0: host loop)
    upload_s: float = float("nan")  # the graph's host-to-device copy (t_upload_s)

    @property
    def nbytes(self) -> int:
        total = 0
        for v in self.arrays.values():
            for arr in v if isinstance(v, list | tuple) else (v,):
                total += int(arr.nbytes)
        return total


KERNELS = (
    "gpr_init_relabel",
    "gpr_gr_level",
    "gpr_gr_level_warp",
    "gpr_push_first",
    "gpr_push_first_warp",
    "gpr_init_active",
    "gpr_push_active",
    "gpr_push_active_warp",
    "gpr_compact",
    "gpr_shrink_len",
    "gpr_advance",
    "gpr_fix_matching",
    "gpr_persistent",
    "gpr_barrier_probe",
)


class _CupyOps:
    """The launcher interface of :class:`GPRLoop` over CuPy, on the instance's stream."""

    def __init__(self, st: _DeviceState, threads: int, mode: str) -> None:
        import cupy as cp

        self.xp = cp
        self.st = st
        self.threads = int(threads)
        self.max_blocks = st.max_blocks
        self.mode = mode
        self.kernel_launches = 0
        self.graph_launches = 0
        self.graph_captures = 0
        self._captured = 0
        self._capturing = False
        self._n_snap = 0
        self._marks: list[Any] = []

    def _count(self, k: int) -> None:
        if self._capturing:
            self._captured += k
        else:
            self.kernel_launches += k

    def count_array_ops(self, k: int) -> None:
        # CuPy array operations (a comparison, a scan) queued by the loop, each counted as
        # one launch.
        self._count(k)

    def launch_blocks(self, name: str, blocks: int, args: tuple) -> None:
        block = 1 if name in _SINGLE else self.threads
        self.st.kernels[name]((int(blocks),), (block,), args)
        self._count(1)

    def launch(self, name: str, n_items: int, args: tuple) -> None:
        if n_items <= 0:
            return  # nothing to do; a stamp it would not publish reads as "no work"
        blocks = min(-(-int(n_items) // self.threads), self.max_blocks)
        self.st.kernels[name]((blocks,), (self.threads,), args)
        self._count(1)

    def batch(self, key: tuple, enqueue: Callable[[], None]) -> None:
        if self.mode == "plain":
            enqueue()
            return
        entry = self.st.graphs.get(key)
        stream = self.st.stream
        if entry is None:
            self._captured = 0
            self._capturing = True
            stream.begin_capture()
            try:
                enqueue()
            finally:
                graph = stream.end_capture()
                self._capturing = False
            graph.upload(stream)
            entry = self.st.graphs[key] = (graph, self._captured)
            self.graph_captures += 1
        entry[0].launch(stream)
        self.kernel_launches += entry[1]
        self.graph_launches += 1

    def snapshot(self) -> tuple[np.ndarray, Any]:
        import cupy as cp

        st = self.st
        # Rotating pinned buffers: a buffer is reused only after a later copy was waited
        # for, and stream order then guarantees the earlier one had completed.
        i = self._n_snap % len(st.pinned)
        self._n_snap += 1
        buf, ev = st.pinned[i], st.events[i]
        ring = st.arrays["ring"]
        cp.cuda.runtime.memcpyAsync(
            buf.ctypes.data,
            ring.data.ptr,
            ring.nbytes,
            cp.cuda.runtime.memcpyDeviceToHost,
            st.stream.ptr,
        )
        ev.record(st.stream)
        return buf, ev

    def read(self, handle: tuple[np.ndarray, Any]) -> np.ndarray:
        buf, ev = handle
        ev.synchronize()
        return buf.copy()

    def mark(self) -> Any:
        import cupy as cp

        ev = cp.cuda.Event()
        ev.record(self.st.stream)
        return ev

    def elapsed(self, a: Any, b: Any) -> float:
        import cupy as cp

        return cp.cuda.get_elapsed_time(a, b) / 1e3


# Kernels that run with a single thread (one block of one thread).
_SINGLE = frozenset({"gpr_advance", "gpr_shrink_len"})


class GPR(BaseSolver):
    """G-PR: GPU push-relabel maximum-cardinality bipartite matching.

    Parameters
    ----------
    variant : {"first", "noshr", "shr"}
        G-PR-First (Alg. 3 + 6), G-PR-NoShr (Alg. 7-9) or G-PR-Shr (Alg. 7-9 with the
        active lists compacted after each global relabel when they hold >= 512 entries).
    strategy : {"fix", "adaptive"}
        GETITERGR: a global relabel every ``k`` push iterations (``fix``) or every
        ``k * maxLevel`` iterations (``adaptive``), see :func:`relabel_interval`.
    k : float
        The strategy's multiplier; the paper sweeps 0.3, 0.5, 0.7, 1, 1.5, 2.
    threads : int, optional
        Threads per block (a multiple of 32, at most 1024). Default: 512 for the
        persistent kernel, 256 for the host loop.
    launch : {"graph", "plain"}
        How the host loop queues its batches: replayed CUDA graphs (captured once per
        instance and batch shape), or one Python call per kernel. Not used by the
        persistent kernel (one launch).
    scan : {"thread", "warp", "tiered"}, optional
        Who walks an adjacency list (the BFS levels and the pushes' minimum search).
        Host loop: ``thread``, the paper's one thread per vertex, or ``warp``, the 32
        lanes of a warp together (``kernels/mcm/gpr.cu``, "Warp-cooperative scans").
        Persistent kernel: ``tiered``, a thread, a warp or the whole block by the
        vertex's degree. The steps are the paper's either way. Default: ``tiered`` when
        ``persistent``, else ``warp``; other pairings raise ``ValueError``.
    persistent : bool
        Run the whole loop in one cooperative launch of ``gpr_persistent`` (the default;
        beyond the paper): grid-wide barriers where the host loop has kernel boundaries,
        G-GR over frontier queues, one host read per solve. ``False`` runs the paper's
        kernels from the host loop (:class:`GPRLoop`).
    blocks_per_sm : int
        Persistent kernel: blocks per multiprocessor (capped by the occupancy
        calculator, so that the grid is co-resident). More blocks hide more memory
        latency; fewer make each grid barrier cheaper.
    relabel_stop : {"full", "active"}, optional
        Where a global relabel's BFS ends: ``full``, the paper's, when a level adds no
        row; ``active`` (beyond the paper; persistent kernel only) after the level at
        which every active column has its label. Default: ``active`` when
        ``persistent``, else ``full``. Vertices farther away keep the label
        ``inf`` until the next relabel; no push selects them (``kernels/mcm/gpr.cu``,
        "Early-stopped relabel"). maxLevel, and so the adaptive interval, is then the
        depth reached.
    local_max : int, optional
        Persistent kernel: BFS levels with at most this many frontier rows, and push
        iterations of lists (``noshr``, ``shr``) with at most this many slots, run in
        block 0 alone with block barriers instead of grid barriers ("Local phases" in
        ``kernels/mcm/gpr.cu``). 0 turns local phases off. Default: 512 when
        ``persistent``, else 0.

    Notes
    -----
    Deveci, Kaya, Uçar & Çatalyürek, atomic- and lock-free GPU push-relabel for bipartite
    matching: Alg. 3 (G-PR), Alg. 4-5 (G-GR, G-GR-KRNL), Alg. 6 (G-PR-KRNL), Alg. 7-9
    (G-PR with active-column lists, G-PR-INITKRNL, G-PR-PUSHKRNL, G-PR-SHRKRNL) and
    FIXMATCHING. The default, (``shr``, ``adaptive``, 0.7), is the configuration the paper
    found best (Fig. 1) and compares with the other algorithms (Table I). Starts from the
    initial matching given to :meth:`prepare` (the shared cheap matching) and relabels
    globally before the first push (Sec. III-A). The host reads the device once per batch
    of launches instead of after every kernel (see :class:`GPRLoop`).

    The persistent kernel (``kernels/mcm/gpr.cu``, "Persistent G-PR") runs the same steps; its
    global relabel reads each BFS level's rows from a queue (a compare-and-swap claims a
    column, so that its row is queued once) instead of scanning every row, and its
    shrink compacts with a prefix sum of its own (CuPy's scan cannot run inside a
    kernel).

    Counters: ``push_kernels`` (iterations of the paper's loop that had active columns),
    ``global_relabels``, ``bfs_levels`` (G-GR-KRNL calls of the paper's loop),
    ``max_level`` (of the last relabel), ``shrinks``, ``kernel_launches`` (every kernel
    queued, in graphs too, surplus ones that exited at once included; CuPy array
    operations count one each), ``graph_launches``, ``graph_captures`` (captures
    during this run; they are cached per instance), ``host_syncs``; persistent mode also
    ``grid_barriers``, ``persistent_blocks``, ``local_steps`` (BFS levels and push
    iterations run by one block in local phases) and ``early_stops`` (relabels that
    ``relabel_stop: active`` ended before the paper's).
    """

    name: ClassVar[str] = "gpr"
    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("gpr", "mcm_init")
    device_init: ClassVar[bool] = True
    #: Seconds after which run() gives up with ``TimeoutError`` (None: never). Not a
    #: variant parameter: a guard for benchmarks; the runner has its own timeouts.
    time_limit_s: float | None = None

    def __init__(
        self,
        variant: str = "shr",
        strategy: str = "adaptive",
        k: float = 0.7,
        threads: int | None = None,
        launch: str = "graph",
        scan: str | None = None,
        persistent: bool = True,
        blocks_per_sm: int = 2,
        relabel_stop: str | None = None,
        local_max: int | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if launch not in LAUNCH_MODES:
            raise ValueError(f"launch must be one of {LAUNCH_MODES}, got {launch!r}")
        if not isinstance(persistent, bool | np.bool_):
            raise ValueError(f"persistent must be true or false, got {persistent!r}")
        if scan is None:
            scan = PERSISTENT_SCAN if persistent else "warp"
        if persistent and scan != PERSISTENT_SCAN:
            raise ValueError(
                f"scan must be {PERSISTENT_SCAN!r} with persistent: true (the persistent "
                f"kernel picks a thread, a warp or the block by degree), got {scan!r}; "
                f"set persistent: false for the host loop's {SCANS} scans"
            )
        if not persistent and scan not in SCANS:
            raise ValueError(
                f"scan must be one of {SCANS} with persistent: false, got {scan!r}"
                + (" (tiered walks need persistent: true)" if scan == PERSISTENT_SCAN else "")
            )
        relabel_interval(strategy, k, 1)  # validates strategy and k
        if threads is None:
            threads = 512 if persistent else 256
        threads = block_size("threads", threads)
        if not isinstance(blocks_per_sm, int | np.integer) or int(blocks_per_sm) < 1:
            raise ValueError(f"blocks_per_sm must be a positive integer, got {blocks_per_sm!r}")
        if relabel_stop is None:
            relabel_stop = "active" if persistent else "full"
        if local_max is None:
            local_max = PERSISTENT_LOCAL_MAX if persistent else 0
        if relabel_stop not in RELABEL_STOPS:
            raise ValueError(f"relabel_stop must be one of {RELABEL_STOPS}, got {relabel_stop!r}")
        if relabel_stop != "full" and not persistent:
            raise ValueError(
                f"relabel_stop: {relabel_stop} needs persistent: true (the host loop runs "
                "the paper's full relabel)"
            )
        if (
            isinstance(local_max, bool)
            or not isinstance(local_max, int | np.integer)
            or int(local_max) < 0
        ):
            raise ValueError(f"local_max must be a non-negative integer, got {local_max!r}")
        if local_max and not persistent:
            raise ValueError("local_max > 0 needs persistent: true (local phases are its own)")
        super().__init__(
            variant=variant,
            strategy=strategy,
            k=float(k),
            threads=int(threads),
            launch=launch,
            scan=scan,
            persistent=bool(persistent),
            blocks_per_sm=int(blocks_per_sm),
            relabel_stop=relabel_stop,
            local_max=int(local_max),
        )
        self._state: _DeviceState | None = None
        self._n_active: int | None = 0  # None: the matching is built on the device in run()
        self._dinit: Any = None
        self._t_solve = float("nan")
        self._t_init = float("nan")
        self._t_relabel = float("nan")
        self._t_transfer = float("nan")
        self._counters: dict[str, int | float] = {}

    # -- contract -------------------------------------------------------------------

    def skip(self, instance: Any) -> tuple[bool, str | None]:
        from matchbench.gpu.common import device_memory_skip

        return device_memory_skip(lambda: self.estimate_bytes(instance))

    def estimate_bytes(self, instance: Any) -> int:
        """Device bytes for ``instance``: both CSRs, mu and psi (m + n each), iA and the
        two lists (n each at most), the cumulative sum of a shrink and the persistent
        kernel's two frontier queues (m each)."""
        item = np.dtype(instance.col_ptr.dtype).itemsize
        m, n = int(instance.n_rows), int(instance.n_cols)
        return int(instance.nbytes + item * (2 * (m + n) + 3 * n + 2 * m) + 4 * n + 8 * RING_SIZE)

    def prepare(self, instance: Any, init: Any | None = None) -> None:
        import cupy as cp

        st = self._state
        if st is None or st.instance is not instance or st.device_id != cp.cuda.Device().id:
            self._state = None  # let the previous instance's arrays go first
            st = self._state = self._build_state(instance)
        a = st.arrays
        m = int(instance.n_rows)
        self._dinit = init if getattr(init, "device", None) == "gpu" else None
        if self._dinit is not None:
            self._prepare_device_init(st)
            return
        col_match = _initial_col_match(instance, init)
        row_match = np.full(m, -1, dtype=col_match.dtype)
        matched = np.flatnonzero(col_match >= 0)
        # The row side is rebuilt from the columns so the two always agree (the loop
        # relies on mu(mu(v)) == v for every matched column).
        row_match[col_match[matched]] = matched
        unmatched = np.flatnonzero(col_match < 0).astype(st.idx)
        self._n_active = int(unmatched.size)
        with st.stream:
            a["mu"].set(np.concatenate([row_match, col_match]).astype(st.idx, copy=False))
            # Alg. 7: both lists start as the unmatched columns. The buffers themselves
            # are allocated once per instance: captured CUDA graphs hold their addresses.
            if self._n_active:
                for lst in a["lists"]:
                    lst[: self._n_active].set(unmatched)
            a["ia"].fill(-1)
            a["ring"].fill(-1)
            ctl = np.zeros(_CTL_SIZE, dtype=np.int32)
            ctl[[_CTL_GUARD, _CTL_BGUARD]] = -1
            ctl[_CTL_LEN] = self._n_active
            a["ctl"].set(ctl)
        st.stream.synchronize()
        self._t_solve = self._t_init = self._t_relabel = self._t_transfer = float("nan")
        self._counters = {}

    def _prepare_device_init(self, st: _DeviceState) -> None:
        """prepare() for a GPU initializer: run() builds the matching and the lists."""
        a = st.arrays
        self._dinit.attach(st.instance.n_rows, st.instance.n_cols, a["mu"].dtype)
        self._n_active = None
        with st.stream:
            a["ia"].fill(-1)
            a["ring"].fill(-1)
            ctl = np.zeros(_CTL_SIZE, dtype=np.int32)
            ctl[[_CTL_GUARD, _CTL_BGUARD]] = -1
            a["ctl"].set(ctl)
            if "pctl" in a:
                a["pctl"].fill(0)
            if "lists_len" not in a:
                import cupy as cp

                a["lists_len"] = cp.zeros(1, dtype=np.uint64)
        st.stream.synchronize()
        self._t_solve = self._t_init = self._t_relabel = self._t_transfer = float("nan")
        self._counters = {}

    def _launch_device_init(self, st: _DeviceState) -> tuple[Any, int]:
        """Queue the GPU initializer on mu (its timer, its launches)."""
        from matchbench.gpu.common import EventTimer

        a, m = st.arrays, int(st.instance.n_rows)
        timer = EventTimer()
        with timer:
            launches = self._dinit.launch(
                col_ptr=a["col_ptr"], col_ind=a["col_ind"], row_ptr=a["row_ptr"],
                row_ind=a["row_ind"], row_match=a["mu"][:m], col_match=a["mu"][m:],
            )
        return timer, launches

    def _finish_device_init(self, timer: Any, launches: int, counters: dict[str, Any]) -> None:
        """After the solve: the initializer's seconds, launches and cardinality."""
        self._t_init = timer.seconds
        card = self._dinit.cardinality()
        counters.update(init_launches=launches, init_objective=card)
        counters.setdefault("initial_active", int(self._require_state().instance.n_cols) - card)

    def run(self) -> None:
        if self.params["persistent"]:
            self._run_persistent()
            return
        from matchbench.families.mcm.init_gpu import launch_unmatched_lists
        from matchbench.gpu.common import EventTimer

        st = self._require_state()
        a, m = st.arrays, int(st.instance.n_rows)
        ops = _CupyOps(st, self.params["threads"], self.params["launch"])

        def make_loop() -> GPRLoop:
            return GPRLoop(
                ops,
                st.arrays,
                m=st.instance.n_rows,
                n=st.instance.n_cols,
                n_active=self._n_active,
                variant=self.params["variant"],
                strategy=self.params["strategy"],
                k=self.params["k"],
                idx=st.idx,
                scan=self.params["scan"],
                deadline=None
                if self.time_limit_s is None
                else time.perf_counter() + float(self.time_limit_s),
            )

        init_timer = None
        timer = EventTimer()
        with st.stream:
            if self._dinit is None:
                loop = make_loop()
                with timer:
                    stats = loop.solve()
            else:
                init_timer, init_launches = self._launch_device_init(st)
                with timer:
                    # The host loop sizes its grids from the lists' length: one host read
                    # after the lists are built, inside the solve's timer.
                    length = a["lists_len"]
                    length.fill(0)
                    launch_unmatched_lists(a["mu"][m:], a["lists"][0], a["lists"][1], length)
                    self._n_active = int(length.get()[0])
                    a["ctl"][_CTL_LEN] = self._n_active
                    loop = make_loop()
                    stats = loop.solve()
            self._t_solve = timer.seconds
        self._t_relabel = loop.relabel_seconds()
        stats["host_syncs"] += 1  # the timer's final synchronization
        self._counters = dict(
            stats,
            kernel_launches=ops.kernel_launches,
            graph_launches=ops.graph_launches,
            graph_captures=ops.graph_captures,
        )
        if init_timer is not None:
            self._counters["host_syncs"] += 1  # the read of the lists' length
            self._counters["kernel_launches"] += 1  # the lists
            self._finish_device_init(init_timer, init_launches, self._counters)

    def _run_persistent(self) -> None:
        """The whole loop in one cooperative launch of ``gpr_persistent``; one host read."""
        from matchbench.families.mcm.init_gpu import launch_unmatched_lists
        from matchbench.gpu.common import EventTimer

        st = self._require_state()
        a, idx = st.arrays, st.idx
        m, n = int(st.instance.n_rows), int(st.instance.n_cols)
        device_init = self._dinit is not None
        ctl = np.zeros(_P_SIZE, dtype=np.int64)
        ctl[_P_LEN] = self._n_active or 0
        limit = self.time_limit_s
        args = (
            idx(m),
            idx(n),
            a["row_ptr"],
            a["row_ind"],
            a["col_ptr"],
            a["col_ind"],
            a["mu"],
            a["psi"],
            idx(m + n),
            a["lists"][0],
            a["lists"][1],
            a["ia"],
            a["queue"],
            a["blk"],
            a["pctl"],
            np.int32(VARIANTS.index(self.params["variant"])),
            np.int32(self.params["strategy"] == "adaptive"),
            np.float64(self.params["k"]),
            np.int32(self.params["relabel_stop"] == "active"),
            np.int64(self.params["local_max"]),
            np.uint64(0 if limit is None else max(1, int(float(limit) * 1e9))),
            np.uint64(_P_BARRIER_TIMEOUT_NS),
        )
        with st.stream:
            if device_init:
                # pctl was zeroed in prepare; the lists' length lands in its LEN slot on
                # the device, and the kernel is launched without a host look at it (with
                # no active column it ends after one relabel and one empty push).
                init_timer, init_launches = self._launch_device_init(st)
            else:
                a["pctl"].set(ctl)
            timer = EventTimer()
            with timer:
                if device_init:
                    launch_unmatched_lists(
                        a["mu"][m:], a["lists"][0], a["lists"][1], a["pctl"][_P_LEN : _P_LEN + 1]
                    )
                if self._n_active or device_init:
                    # RawKernel's call has no cooperative switch; its compiled Function does.
                    st.kernels["gpr_persistent"].kernel(
                        (st.p_grid,),
                        (self.params["threads"],),
                        args,
                        enable_cooperative_groups=True,
                    )
            self._t_solve = timer.seconds
            out = a["pctl"].get(stream=st.stream)
        counters: dict[str, int | float] = {k: int(out[i]) for k, i in _P_COUNTERS.items()}
        counters.update(
            final_list_length=int(out[_P_LEN]),
            local_steps=int(out[_P_LOCAL]),
            early_stops=int(out[_P_STOPS]),
            kernel_launches=2 if device_init else (1 if self._n_active else 0),
            graph_launches=0,
            graph_captures=0,
            host_syncs=2,  # the timer's synchronization and the read of the counters
            persistent_blocks=st.p_grid,
        )
        if device_init:
            self._finish_device_init(init_timer, init_launches, counters)
        self._counters = counters
        self._t_relabel = int(out[_P_RELABEL_NS]) / 1e9
        abort = int(out[_P_ABORT]) & 0xFFFFFFFF
        if abort == 2:
            raise TimeoutError("G-PR: time limit reached")
        if abort:
            raise RuntimeError(
                f"{self.name}: a grid barrier of the persistent kernel timed out "
                f"({st.p_grid} blocks of {self.params['threads']} threads; after "
                f"{counters['global_relabels']} relabels and {counters['loops']} push "
                "iterations): the grid was not co-resident"
            )

    def barrier_seconds(self, reps: int = 20000) -> float:
        """Seconds per grid barrier of the persistent kernel's grid (``gpr_barrier_probe``:
        ``reps`` barriers and nothing else, one launch), on the prepared instance's state.
        """
        from matchbench.gpu.common import EventTimer

        st = self._require_state()
        if not self.params["persistent"]:
            raise RuntimeError(f"{self.name}: barrier_seconds() needs persistent: true")
        a = st.arrays
        with st.stream:
            a["pctl"].fill(0)
            timer = EventTimer()
            with timer:
                st.kernels["gpr_barrier_probe"].kernel(
                    (st.p_grid,),
                    (self.params["threads"],),
                    (a["pctl"], np.int32(reps), np.uint64(_P_BARRIER_TIMEOUT_NS)),
                    enable_cooperative_groups=True,
                )
            abort = int(a["pctl"][_P_ABORT].get()) & 0xFFFFFFFF
        if abort:
            raise RuntimeError(f"{self.name}: the barrier probe timed out")
        return timer.seconds / max(1, int(reps))

    def result(self) -> Any:
        from matchbench.graphs.bipartite import Matching

        st = self._require_state()
        m = st.instance.n_rows
        t0 = time.perf_counter()
        st.stream.synchronize()
        mu = st.arrays["mu"].get(stream=st.stream)
        self._t_transfer = time.perf_counter() - t0
        return Matching(row_match=mu[:m].copy(), col_match=mu[m:].copy())

    def timings(self) -> dict[str, float]:
        out = {
            "solve": self._t_solve,
            "transfer": self._t_transfer,
            "global_relabel": self._t_relabel,
            "push": self._t_solve - self._t_relabel,
        }
        if self._state is not None:
            out["upload"] = self._state.upload_s
        if self._dinit is not None:
            out["init"] = self._t_init
        return out

    def counters(self) -> dict[str, int | float]:
        return dict(self._counters)

    def memory_peak_bytes(self) -> int | None:
        return None if self._state is None else self._state.nbytes

    # -- internals ------------------------------------------------------------------

    def _require_state(self) -> _DeviceState:
        if self._state is None:
            raise RuntimeError(f"{self.name}: run() or result() before prepare()")
        return self._state

    def _build_state(self, instance: Any) -> _DeviceState:
        import cupy as cp

        from matchbench.gpu.common import DeviceBipartite
        from matchbench.gpu.kernels import get_module

        dt = np.dtype(instance.col_ptr.dtype)
        if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise TypeError(f"{instance.name}: index dtype {dt} is neither int32 nor int64")
        module = get_module("gpr", ("-DMB_INDEX64",) if dt == np.int64 else ())
        kernels = {name: module.get_function(name) for name in KERNELS}
        stream = cp.cuda.Stream(non_blocking=True)
        m, n = int(instance.n_rows), int(instance.n_cols)
        with stream:
            g = DeviceBipartite.resident(instance)
            arrays = {
                "row_ptr": g.row_ptr.astype(dt, copy=False),
                "row_ind": g.row_ind.astype(dt, copy=False),
                "col_ptr": g.col_ptr.astype(dt, copy=False),
                "col_ind": g.col_ind.astype(dt, copy=False),
                "mu": cp.full(m + n, -1, dtype=dt),
                "psi": cp.zeros(m + n, dtype=dt),
                "ia": cp.full(max(n, 1), -1, dtype=np.int32),
                "ring": cp.full(RING_SIZE + 1, -1, dtype=np.int32),
                "ctl": cp.zeros(_CTL_SIZE, dtype=np.int32),
                "lists": [cp.full(max(n, 1), -1, dtype=dt) for _ in range(2)],
            }
            if self.params["persistent"]:
                arrays["queue"] = cp.empty(max(2 * m, 1), dtype=dt)
                arrays["pctl"] = cp.zeros(_P_SIZE, dtype=np.int64)
        pinned = []
        for _ in range(3):
            mem = cp.cuda.alloc_pinned_memory((RING_SIZE + 1) * 4)
            pinned.append(np.frombuffer(mem, dtype=np.int32, count=RING_SIZE + 1))
        dev = cp.cuda.Device()
        sms = int(dev.attributes["MultiProcessorCount"])
        threads = self.params["threads"]
        # Two waves of full occupancy; grid-stride loops cover larger inputs.
        max_blocks = max(1, sms * max(1, 2048 // threads) * 2)
        st = _DeviceState(
            instance=instance,
            device_id=dev.id,
            stream=stream,
            arrays=arrays,
            kernels=kernels,
            idx=np.int64 if dt == np.int64 else np.int32,
            pinned=pinned,
            events=[cp.cuda.Event() for _ in range(3)],
            max_blocks=max_blocks,
            upload_s=g.upload_s,
        )
        if self.params["persistent"]:
            st.p_grid = self._persistent_grid(kernels["gpr_persistent"], dev, sms)
            with stream:
                arrays["blk"] = cp.zeros(st.p_grid, dtype=np.int64)
        self._warm_up(st)
        stream.synchronize()
        return st

    def _persistent_grid(self, kern: Any, dev: Any, sms: int) -> int:
        """Blocks of ``gpr_persistent``: co-resident, or its grid barriers never return.

        ``blocks_per_sm`` per multiprocessor, at most what the occupancy calculator allows
        at this block size.
        """
        from cupy.cuda import driver

        if not dev.attributes.get("CooperativeLaunch", 0):
            raise RuntimeError(
                f"{self.name}: persistent: true needs cooperative launch support; "
                "set persistent: false"
            )
        threads = self.params["threads"]
        per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(kern.kernel.ptr, threads, 0)
        if per_sm < 1:
            raise RuntimeError(
                f"{self.name}: gpr_persistent cannot run {threads} threads per block here "
                "(occupancy 0); lower threads or set persistent: false"
            )
        return sms * min(int(per_sm), self.params["blocks_per_sm"])

    def _warm_up(self, st: _DeviceState) -> None:
        """Load every kernel and CuPy's scan once, so that run() times no module loading.

        Every launch here has nothing to do: zero-length loops, or guards that fail.
        """
        import cupy as cp

        a, idx = st.arrays, st.idx
        z, i0 = idx(0), np.int32(0)
        ring, ctl, mask = a["ring"], a["ctl"], np.int32(RING_SIZE - 1)
        one = (1,)
        with st.stream:
            # A guard stamp (0) that is absent from the ring: every guarded kernel returns.
            ctl.set(np.array([1, 0, 0, 0, 0, 0, 0, 0], dtype=np.int32))
            ring.fill(-1)
            k = st.kernels
            k["gpr_init_relabel"](one, one, (z, z, a["mu"], a["psi"], z, ring, mask, ctl))
            lst = a["lists"][0]
            level_args = (z, a["row_ptr"], a["row_ind"], a["mu"], a["mu"], a["psi"], a["psi"])
            first_args = (z, a["col_ptr"], a["col_ind"], a["mu"], a["mu"], a["psi"], a["psi"])
            push_args = (a["col_ptr"], a["col_ind"], a["mu"], a["mu"], a["psi"], a["psi"], z)
            for suffix in ("", "_warp"):
                k["gpr_gr_level" + suffix](one, one, (*level_args, z, ring, mask, ctl, i0))
                k["gpr_push_first" + suffix](one, one, (*first_args, z, ring, mask, ctl, i0))
                k["gpr_push_active" + suffix](
                    one, one, (*push_args, lst, lst, a["ia"], ring, mask, ctl, np.int32(1))
                )
            k["gpr_init_active"](
                one, one, (lst, lst, a["mu"], a["mu"], a["ia"], ring, mask, ctl, np.int32(1))
            )
            k["gpr_fix_matching"](one, one, (z, a["mu"], a["mu"]))
            ctl.fill(0)  # LEN = 0: the compaction does nothing
            pos = cp.cumsum(lst[:1] != -1, dtype=idx)
            k["gpr_compact"](one, one, (lst, pos, lst, ctl))
            k["gpr_shrink_len"](one, one, (pos, ring, mask, ctl))
            k["gpr_advance"](one, one, (ctl, i0, i0, i0, np.int32(_CTL_GUARD)))
            ring.fill(-1)
            if self.params["persistent"]:
                # m = n = 0 and an empty list: one relabel of no level, one push iteration
                # that finds no active column, then FIXMATCHING of no column.
                a["pctl"].fill(0)
                k["gpr_persistent"].kernel(
                    (st.p_grid,),
                    (self.params["threads"],),
                    (
                        z,
                        z,
                        *(a[x] for x in ("row_ptr", "row_ind", "col_ptr", "col_ind")),
                        a["mu"],
                        a["psi"],
                        z,
                        lst,
                        lst,
                        a["ia"],
                        a["queue"],
                        a["blk"],
                        a["pctl"],
                        np.int32(2),
                        np.int32(1),
                        np.float64(0.7),
                        np.int32(1),
                        np.int64(1),
                        np.uint64(0),
                        np.uint64(_P_BARRIER_TIMEOUT_NS),
                    ),
                    enable_cooperative_groups=True,
                )


def _initial_col_match(instance: Any, init: Any | None) -> np.ndarray:
    """Column mates of the initial matching (all -1 when ``init`` is None), as int64."""
    n = int(instance.n_cols)
    if init is None:
        return np.full(n, -1, dtype=np.int64)
    col_match = np.asarray(init.col_match).astype(np.int64)
    if col_match.shape != (n,):
        raise ValueError(
            f"{instance.name}: initial matching has {col_match.shape} column mates, expected ({n},)"
        )
    m = int(instance.n_rows)
    bad = (col_match < -1) | (col_match >= m)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{instance.name}: initial col_match[{j}] = {col_match[j]} not in [-1, {m})"
        )
    return col_match
