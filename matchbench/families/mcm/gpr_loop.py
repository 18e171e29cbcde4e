"""G-PR's host loop: Alg. 3 (G-PR-First) and Alg. 7 (G-PR with active-column lists).

:class:`GPRLoop` queues the kernels of ``kernels/mcm/gpr.cu`` in batches through a small
launcher interface, so that the same loop drives the CuPy kernels
(:class:`matchbench.families.mcm.gpr_device.CupyOps`) and an emulation of them in the CPU
tests. Here too: GETITERGR (:func:`relabel_interval`), the batch schedules, and the slots of
the control block the loop shares with the kernels (the ``GPR_CTL_*`` ``#define``s).

Deveci, Kaya, Uçar & Çatalyürek, atomic- and lock-free GPU push-relabel for bipartite
matching: Alg. 3, 4-5, 6, 7-9 (see :class:`matchbench.families.mcm.gpr.GPR`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from matchbench.core.params import choice, positive_float

VARIANTS = ("first", "noshr", "shr")
STRATEGIES = ("fix", "adaptive")
#: Thread mapping of the host loop's adjacency walks: "thread" = the paper's thread per
#: vertex, "warp" = a warp's lanes share each walk (the *_warp kernels).
SCANS = ("thread", "warp")
#: The k values of the paper's Fig. 1 sweep (any k > 0 is accepted).
K_VALUES = (0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
#: Alg. 7 line 11: shrink the active lists only when they hold at least this many entries.
SHRINK_MIN = 512
#: Ring of launch stamps (a power of two); one more slot carries the lists' new length.
RING_SIZE = 1024
#: Slots of the control block; kept in step with the GPR_CTL_* #defines of kernels/mcm/gpr.cu.
CTL_SEQ, CTL_LOOP, CTL_GUARD, CTL_BGUARD, CTL_LEVEL, CTL_LEN = range(6)
CTL_SIZE = 8
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
    choice("strategy", strategy, STRATEGIES)
    positive_float("k", k)
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


def list_blocks(length: int, threads_per_block: int, max_blocks: int) -> int:
    """Blocks for a kernel over the active lists: a power of two, so few CUDA graphs."""
    need = max(1, -(-int(length) // int(threads_per_block)))
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
        through ``xp``), ``max_blocks`` and ``threads_per_block``.
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
        choice("variant", variant, VARIANTS)
        choice("scan", scan, SCANS)
        relabel_interval(strategy, k, 1)  # checks strategy and k
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
            (a["ctl"], np.int32(part), np.int32(0), np.int32(2 * part), np.int32(CTL_BGUARD)),
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
            (a["ctl"], np.int32(part), np.int32(part), np.int32(0), np.int32(CTL_GUARD)),
        )

    def _list_grids(self) -> tuple[int, int]:
        """Blocks of the list kernels: G-PR-INITKRNL (a thread per slot) and the push."""
        t, cap = self.ops.threads_per_block, self.ops.max_blocks
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
            (a["ctl"], np.int32(1), np.int32(1), np.int32(0), np.int32(CTL_GUARD)),
        )
        self.pending.append(self.seq)
        self._shrink_seq = self.seq
        self._shrunk = True
        self.stats["shrinks"] += 1
        self.seq += 1
        self.loop += 1
