"""GPU Louvain community detection (``kernels/community/louvain.cu``): ``louvain_gpu``.

Naim, Manne, Halappanavar & Tumeo, *Community Detection on the GPU*, IPDPS 2017 (paper III of
Naim's 2017 thesis): the stages of the Louvain method, each a modularity optimization (Alg. 1,
with Alg. 2 per vertex) and an aggregation (Alg. 3), every step on the device. The answer is
the sequential reference's (:func:`matchbench.families.community.louvain.louvain`): a
:class:`~matchbench.families.community.problem.Partition` with the level hierarchy and the Q of the
last kept stage, and the same per-stage counters and ``level{r}_optimize`` /
``level{r}_aggregate`` seconds; the stage rules and thresholds are the reference's too.

Structure (one module each)
---------------------------
- :mod:`~matchbench.families.community.louvain_buckets`: the pure host pieces the driver
  hands the kernels (degree buckets, hash table sizes, sort keys, global table blocks).
- :mod:`~matchbench.families.community.louvain_stages`: the host loop
  (:func:`~matchbench.families.community.louvain_stages.drive`: Alg. 1 lines 3-12 per stage,
  the stages, the thresholds) over a *backend* that runs the steps, and the parameter check.
- :mod:`~matchbench.families.community.louvain_model`: the host model backend (numba), the
  same bucket-synchronous moves on the host. Where the weights are integers every sum is
  exact and the two backends make identical moves, so the model is the GPU tests' oracle
  (:func:`~matchbench.families.community.louvain_model.louvain_gpu_model`) and the host tests
  run the whole method through it.
- This module: the device backend (:class:`_DeviceLevels`, CuPy and the kernels),
  :func:`louvain_gpu` and the solver :class:`LouvainGPU`.

Per iteration (Alg. 1 lines 4-12) the device runs, for each non-empty degree bucket, one move
kernel and (``commit="bucket"``) one commit kernel, then one quality kernel (Eq. 1's sums),
and the host reads one small stats array (moves, inside weight, sum of a_c^2): one sync per
iteration. A stage adds one sync at its setup (bucket counts, 2m) and two in its aggregation
(community count, new edge count).

Choices where the text leaves room (same results unless said)
-------------------------------------------------------------
- The vertices are sorted into the degree buckets once per stage (degrees do not change
  within a stage), not partitioned again every iteration (Alg. 1 line 5).
- Alg. 2 line 14's argmax runs over the table positions after the hashing, on the final
  sums; e_{i->C(i)\\{i}} is summed in registers instead of hashed. After each bucket a_c and
  the community sizes are updated by the moved vertices' atomics (line 11's values, without
  an O(n) pass per bucket); the relaxed commit recounts them from zero.
- Q (Eq. 1) for the stopping test is recomputed after every iteration by one kernel over the
  CSR entries (``src``, the row of each entry: 4 bytes per entry).
- With bucket commits the moves of one bucket are simultaneous, so an iteration can lower Q:
  it is undone and ends the stage (as the reference undoes a relaxed iteration below the
  threshold), so Q never drops within a stage. Not in the text.
- mergeCommunity takes a community's members G at a time and deals their edges to the G
  threads as one range (all threads on every member's edges, as in the paper, without idling
  G - 1 threads on members of degree 1); its global tables are sized from min(comDegree,
  k - 1), k the new vertex count (a bound on the distinct neighbours); the edge lists are
  compacted once after the three buckets.
- Floating-point atomics make the last bits of sums depend on scheduling with real weights;
  with integer weights runs repeat exactly.

Options beyond the paper (issue #33; :class:`~matchbench.families.community.louvain_stages.Options`)
------------------------------------------------------------------------------------------
Each is off by default and each keeps the moves deterministic, so the host model stays the
oracle. An iteration is a list of *steps* (a bucket of an id range, or a chunk of a range's
bucket 7: :func:`~matchbench.families.community.louvain_buckets.move_steps`), each a move
kernel and a commit; ``rounds``, ``hashed_rounds`` and ``hub_chunks`` make more steps (one
more sync per stage reads the largest degree when ranges may apply), ``prune`` skips unflagged vertices in the
move kernels and flags the movers' neighbours in the commits, ``pickless`` passes
``lower_only`` to the move kernels, ``t_drop`` and ``aggregation_tolerance`` change only the
host loop, and ``aggregate="flat"`` replaces the block-per-community merge of aggregation
bucket 3 by a grid-wide hashing into one table per community (one more sync for their total
size) and a compaction kernel. ``conf/algorithm/louvain_gpu_fast.yaml`` is the recommended
combination (:class:`LouvainGPUFast`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from matchbench.families.community import louvain_buckets as LB
from matchbench.families.community.gpu_solver import INT32_MAX as _INT32_MAX
from matchbench.families.community.gpu_solver import DeviceCommunitySolver, sm_count
from matchbench.families.community.louvain import BIN_LIMIT, stage_totals
from matchbench.families.community.louvain_buckets import (
    BLOCK,
    GLOBAL_TABLE_BYTES,
    MOVE_THREADS,
    SLOT_BYTES,
    global_blocks,
    table_size,
)
from matchbench.families.community.louvain_stages import (
    Options,
    Outcome,
    check_params,
    drive,
    empty_result,
    finish,
    loop_array,
)
from matchbench.families.community.problem import Partition

#: ``kernels/community/louvain.cu``: LV_COUNTS, the first per-(range, bucket) count slot of
#: the setup's stats.
_COUNTS = 16


# ---------------------------------------------------------------------------------------
# The device backend


def _grid(items: int, sms: int, per_block: int = BLOCK) -> int:
    """Blocks of a grid-stride launch over ``items`` (``per_block`` items per block per
    round): enough to fill the device (16 blocks of 128 threads per SM), at least 1."""
    return int(max(1, min(-(-int(items) // per_block), 16 * sms)))


class _DeviceLevels:
    """The steps of :func:`drive` on the device (CuPy arrays, ``kernels/community/louvain.cu``)."""

    def __init__(self, kern: dict[str, Any], sms: int, n: int, ptr: Any, ind: Any, w: Any,
                 loop: Any, relaxed: bool, opts: Options | None = None) -> None:
        import cupy as cp

        self.cp = cp
        self.kern = kern
        self.sms = int(sms)
        self.relaxed = bool(relaxed)
        self.opts = Options() if opts is None else opts
        self.n = int(n)
        self.ptr, self.ind, self.w, self.loop = ptr, ind, w, loop
        self.level0 = True  # ptr, ind, w are the instance's device copy: never freed here
        self.launches = 0
        self.syncs = 0
        self.peak = 0
        self.graph_launches = 0  # option iteration_graphs: the stage's graph, per key
        self.graphs: dict[tuple[bool, int], Any] = {}
        self.capture: Any = None
        self.src = cp.empty(max(self.nnz, 1), dtype=cp.int32)
        self._launch("louvain_rows", _grid(self.n, sms),
                     (np.int64(self.n), ptr, self.src))

    @property
    def nnz(self) -> int:
        return int(self.ind.shape[0])

    # -- plumbing ---------------------------------------------------------------------

    def _launch(self, name: str, grid: int, args: tuple[Any, ...]) -> None:
        self.kern[name]((int(grid),), (BLOCK,), args)
        self.launches += 1

    def _ops(self, count: int = 1) -> None:
        self.launches += count  # CuPy calls (fills, sorts, prefix sums, copies)

    def _get(self, arr: Any) -> np.ndarray:
        self.syncs += 1
        return arr.get()

    def _sample(self) -> None:
        self.peak = max(self.peak, int(self.cp.get_default_memory_pool().used_bytes()))

    def _copy(self, dst: Any, src: Any) -> None:
        dst.data.copy_from_device_async(src.data, src.nbytes)
        self._ops()

    def mark(self) -> Any:
        ev = self.cp.cuda.Event()
        ev.record()
        return ev

    # -- Alg. 1 -------------------------------------------------------------------------

    def setup(self) -> tuple[float, float]:
        cp, n, nnz = self.cp, self.n, self.nnz
        self.k = cp.empty(n, dtype=cp.float64)
        self.C = cp.empty(n, dtype=cp.int32)
        self.newc = cp.empty(n, dtype=cp.int32)
        self.a = cp.empty(n, dtype=cp.float64)
        self.size = cp.empty(n, dtype=cp.int32)
        self.prev = self.a2 = self.size2 = None
        self.flag = cp.empty(n, dtype=cp.uint8)
        top = 0
        if LB.needs_max_degree(n, nnz, self.opts.rounds, self.opts.hashed_rounds):
            # contiguous ranges only for graphs with hubs, hashed ones only without: the
            # largest degree decides (one more sync)
            top = int(self._get(cp.max(self.ptr[1:] - self.ptr[:-1]).reshape(1))[0])
            self._ops(2)
        rounds, hashed = LB.stage_ranges(n, nnz, top, self.opts.rounds,
                                         self.opts.hashed_rounds)
        key = cp.empty(n, dtype=cp.uint64)
        st = cp.zeros(_COUNTS + 8 * rounds, dtype=cp.uint64)
        self._ops()
        self._launch(
            "louvain_setup",
            _grid(n, self.sms),
            (np.int64(n), self.ptr, self.w, self.loop, self.k, self.C, self.newc, self.a,
             self.size, key, st, np.int32(rounds), self.flag, np.int32(hashed)),
        )
        self.order = cp.argsort(key).astype(cp.int32)
        self._ops(2)
        del key
        s = self._get(st)
        f = s.view(np.float64)
        counts = s[_COUNTS:].astype(np.int64).reshape(rounds, 8)
        # (bucket, start, count, position among bucket 7's vertices) of every step
        self.steps = []
        hubs = 0
        for b, start, count in LB.move_steps(counts, self.opts.hub_chunks):
            self.steps.append((b, start, count, hubs))
            hubs += count if b == 7 else 0
        self.bucket_counts = [int(x) for x in counts.sum(axis=0)[1:]]
        self.g7 = self.v7 = None
        if hubs:
            tsize = cp.empty(hubs, dtype=cp.int64)
            for b, start, count, at in self.steps:
                if b == 7:
                    self._launch(
                        "louvain_table_sizes",
                        _grid(count, self.sms),
                        (self.order, np.int64(start), np.int64(count), self.ptr, self.ptr,
                         np.int32(0), np.int64(0), tsize[at:]),
                    )
            if self.opts.vertex_tables:  # a table per vertex, launches within the budget
                slices, toff, slots = LB.vertex_slices(
                    self.steps, self._get(tsize), self.opts.smem_hubs,
                    LB.table_budget(nnz) // LB.SLOT_BYTES,
                )
                self.v7 = (
                    cp.empty(slots, dtype=cp.int32),
                    cp.empty(slots, dtype=cp.float64),
                    cp.asarray(toff),
                    tsize,
                    slices,
                )
                self._ops(3)
            else:
                cap = table_size(int(s[8]))
                blocks = global_blocks(hubs, cap, nnz, self.sms)
                self.g7 = (
                    cp.empty(blocks * cap, dtype=cp.int32),
                    cp.empty(blocks * cap, dtype=cp.float64),
                    np.int64(cap),
                    tsize,
                    blocks,
                )
        self.stats = cp.zeros(4, dtype=cp.uint64)
        self._ops()
        two_m, k2, loop2 = float(f[9]), float(f[10]), float(f[11])
        self.two_m, self.loop2, self.m = two_m, loop2, two_m / 2.0
        self._sample()
        q0 = loop2 / two_m - k2 / (two_m * two_m) if two_m > 0 else 0.0
        return two_m, float(q0)

    def iterate(self, lower_only: bool = False) -> tuple[int, float, float]:
        if self.opts.iteration_graphs:
            self._replay(lower_only)
        else:
            self._enqueue(lower_only)
        s = self._get(self.stats)
        f = s.view(np.float64)
        return int(s[0]), float(f[1]) + self.loop2, float(f[2])

    def _buffers(self) -> None:
        """The iteration's scratch arrays, made once a stage, before any capture (no pool
        allocation may happen while a stream is captured)."""
        cp = self.cp
        if not self.relaxed and self.prev is None:
            self.prev = cp.empty_like(self.C)
        if self.relaxed and self.a2 is None:
            self.a2 = cp.empty_like(self.a)
            self.size2 = cp.empty_like(self.size)

    def _replay(self, lower_only: bool) -> None:
        """Option ``iteration_graphs``: the iteration's launches (:meth:`_enqueue`) captured
        once a stage as a CUDA graph, on a stream of their own, then launched on the current
        stream, for this and every later iteration of the stage: one launch call instead of
        one per kernel. The graph holds the stage's arrays by address, so it is keyed by
        ``lower_only`` and the arrays the relaxed commit swaps; :meth:`renumber` drops it."""
        cp = self.cp
        self._buffers()
        key = (bool(lower_only), int(self.C.data.ptr))
        graph = self.graphs.get(key)
        if graph is None:
            if self.capture is None:
                self.capture = cp.cuda.Stream(non_blocking=True)
            with self.capture:
                self.capture.begin_capture()
                try:
                    self._enqueue(lower_only)
                finally:
                    graph = self.capture.end_capture()
            self.graphs[key] = graph
        graph.launch()
        self.graph_launches += 1

    def _enqueue(self, lower_only: bool) -> None:
        """One iteration's launches (Alg. 1 lines 4-11 and the quality sum), no sync."""
        st = self.stats
        self._buffers()
        st.fill(0)
        self._ops()
        if not self.relaxed:
            self._copy(self.prev, self.C)
        prune = np.int32(self.opts.prune)
        marks = (self.ptr, self.ind, self.flag, prune)
        smem7 = np.int32(self.opts.smem_hubs)
        for i, (b, start, count, at) in enumerate(self.steps):
            args: tuple[Any, ...] = (
                self.order, np.int64(start), np.int64(count), self.ptr, self.ind, self.w,
                self.C, self.a, self.size, self.k, np.float64(self.m), self.newc, self.flag,
                prune, np.int32(lower_only),
            )
            # Alg. 1 lines 5-7
            if b == 7 and self.v7 is not None:  # one launch per slice, then one commit
                gkeys, gvals, toff, tsize, slices = self.v7
                for off, cnt in slices[i]:
                    self._launch(
                        "louvain_move_b7v", min(cnt, _INT32_MAX),
                        args[:1] + (np.int64(start + off), np.int64(cnt)) + args[3:]
                        + (gkeys, gvals, toff[at + off:], tsize[at + off:], smem7),
                    )
            else:
                if b <= 5:
                    grid = -(-count // (BLOCK // MOVE_THREADS[b - 1]))
                elif b == 6:
                    grid = min(count, _INT32_MAX)
                else:
                    gkeys, gvals, cap, tsize, blocks = self.g7
                    grid = min(blocks, count)
                    args += (gkeys, gvals, cap, tsize[at:], smem7)
                self._launch(f"louvain_move_b{b}", grid, args)
            if not self.relaxed:  # lines 8-11
                self._launch(
                    "louvain_commit",
                    _grid(count, self.sms),
                    (self.order, np.int64(start), np.int64(count), self.newc, self.k, self.C,
                     self.a, self.size, st, *marks),
                )
        comm, a = self.C, self.a
        if self.relaxed:
            self.a2.fill(0)
            self.size2.fill(0)
            self._ops(2)
            self._launch(
                "louvain_tally",
                _grid(self.n, self.sms),
                (np.int64(self.n), self.C, self.newc, self.k, self.a2, self.size2, st, *marks),
            )
            comm, a = self.newc, self.a2
        self._launch(
            "louvain_quality",
            _grid(max(self.nnz, self.n), self.sms),
            (np.int64(self.nnz), self.src, self.ind, self.w, comm, np.int64(self.n), a, st),
        )

    def accept(self) -> None:
        if self.relaxed:
            self.C, self.newc = self.newc, self.C
            self.a, self.a2 = self.a2, self.a
            self.size, self.size2 = self.size2, self.size

    def reject(self) -> None:
        if not self.relaxed:
            self._copy(self.C, self.prev)

    # -- Alg. 3 -------------------------------------------------------------------------

    def renumber(self) -> int:
        cp, n = self.cp, self.n
        # the optimization's arrays go before the aggregation's (only C is read from here on)
        self.graphs = {}
        self.k = self.newc = self.a = self.size = self.order = self.flag = None
        self.prev = self.a2 = self.size2 = self.g7 = self.v7 = None
        self.com_size = cp.zeros(n, dtype=cp.int32)
        self.com_degree = cp.zeros(n, dtype=cp.int64)
        self._ops(2)
        self._launch(
            "louvain_com_sizes",
            _grid(n, self.sms),
            (np.int64(n), self.C, self.ptr, self.com_size, self.com_degree),
        )
        self.new_id = cp.cumsum(self.com_size > 0, dtype=cp.int32)  # lines 7-12
        self._ops(2)
        self.ckey = cp.empty(n, dtype=cp.uint64)
        cst = cp.zeros(8, dtype=cp.uint64)
        self._ops()
        self._launch(
            "louvain_com_keys",
            _grid(n, self.sms),
            (np.int64(n), self.com_size, self.com_degree, self.ckey, cst),
        )
        s = self._get(cst)
        self.ccounts = s[:4].astype(np.int64)
        self.merge_counts = [int(x) for x in self.ccounts[1:]]
        self.max_com_degree = int(s[4])
        self.k_new = n - int(self.ccounts[0])
        return self.k_new

    def labels(self) -> Any:
        """The stage's labels, dense ids in community id order, without contracting
        (``aggregation_tolerance``): ``newID[C] - 1``."""
        lab = self.new_id[self.C] - 1
        self._ops(2)
        self.com_size = self.com_degree = self.new_id = self.ckey = None
        return lab

    def contract(self) -> Any:
        cp, n, k, sms = self.cp, self.n, self.k_new, self.sms
        corder = cp.argsort(self.ckey).astype(cp.int32)
        self.ckey = None
        vstart = cp.cumsum(self.com_size, dtype=cp.int32) - self.com_size  # line 16
        cursor = vstart.copy()
        lab = cp.empty(n, dtype=cp.int32)
        members = cp.empty(n, dtype=cp.int32)
        self._ops(5)
        self._launch(
            "louvain_relabel",
            _grid(n, sms),
            (np.int64(n), self.C, self.new_id, cursor, lab, members),
        )
        del cursor
        edge_pos = cp.cumsum(self.com_degree) - self.com_degree  # line 14
        tind = cp.empty(max(self.nnz, 1), dtype=cp.int32)
        tw = cp.empty(max(self.nnz, 1), dtype=cp.float64)
        rowlen = cp.empty(k, dtype=cp.int64)
        tpos = cp.empty(k, dtype=cp.int64)
        nloop = cp.empty(k, dtype=cp.float64)
        self._ops(2)
        c = self.ccounts
        starts = np.concatenate(([0], np.cumsum(c)))
        head = (
            self.com_size, self.com_degree, members, self.ptr, self.ind, self.w, self.loop,
            lab, self.new_id, edge_pos, tind, tw, rowlen, tpos, nloop,
        )
        common = (corder, np.int64(starts[1]), np.int64(c[1]), vstart)
        if c[1]:
            per_warp = LB.MERGE_QUAD if self.opts.small_merge else 1
            self._launch("louvain_merge_warp", -(-int(c[1]) // (BLOCK // 32 * per_warp)),
                         common + head + (np.int32(per_warp),))
        if c[2]:
            common = (corder, np.int64(starts[2]), np.int64(c[2]), vstart)
            self._launch("louvain_merge_block", min(int(c[2]), _INT32_MAX), common + head)
        tables = None
        if c[3]:
            bound = max(k - 1, 1)  # distinct neighbours of a new vertex: at most k - 1
            tsize = cp.empty(int(c[3]), dtype=cp.int64)
            self._launch(
                "louvain_table_sizes",
                _grid(int(c[3]), sms),
                (corder, np.int64(starts[3]), np.int64(c[3]), self.ptr, self.com_degree,
                 np.int32(1), np.int64(bound), tsize),
            )
            if self.opts.aggregate == "flat":
                tables = self._merge_flat(corder, int(starts[3]), int(c[3]), tsize, vstart,
                                          members, lab, edge_pos, tind, tw, rowlen, tpos, nloop)
            else:
                cap = table_size(min(self.max_com_degree, bound))
                blocks = global_blocks(int(c[3]), cap, self.nnz, sms)
                tables = (cp.empty(blocks * cap, dtype=cp.int32),
                          cp.empty(blocks * cap, dtype=cp.float64))
                common = (corder, np.int64(starts[3]), np.int64(c[3]), vstart)
                self._launch(
                    "louvain_merge_global", blocks,
                    common + head + (*tables, np.int64(cap), tsize),
                )
        self._sample()
        # what the compaction does not read goes first: the old level (level 0's arrays are
        # the instance's device copy: only its src), the members, the tables
        del members, vstart, corder, edge_pos, tables, common, head
        self.com_size = self.com_degree = self.new_id = self.C = None
        if self.level0:
            self.src = None
        else:
            self.ptr = self.ind = self.w = self.loop = self.src = None
        self.level0 = False
        nptr = cp.zeros(k + 1, dtype=cp.int64)
        cp.cumsum(rowlen, out=nptr[1:])
        self._ops(2)
        nnz_new = int(self._get(nptr[k:])[0])
        nind = cp.empty(max(nnz_new, 1), dtype=cp.int32)[:nnz_new]
        nw = cp.empty(max(nnz_new, 1), dtype=cp.float64)[:nnz_new]
        nsrc = cp.empty(max(nnz_new, 1), dtype=cp.int32)
        self._launch(
            "louvain_compact",
            _grid(k, sms, BLOCK // 32),
            (np.int64(k), tpos, rowlen, nptr, tind, tw, nind, nw, nsrc),
        )
        self._sample()
        del tind, tw
        self.ptr, self.ind, self.w, self.loop, self.src = nptr, nind, nw, nloop, nsrc
        self.n, self.k_new = k, None
        return lab

    def _merge_flat(self, corder: Any, start: int, count: int, tsize: Any, vstart: Any,
                    members: Any, lab: Any, edge_pos: Any, tind: Any, tw: Any, rowlen: Any,
                    tpos: Any, nloop: Any) -> tuple[Any, ...]:
        """``aggregate="flat"``: the ``count`` communities of aggregation bucket 3 (``corder``
        from ``start``), each with its own global table of ``tsize`` slots, hashed by one
        grid over all CSR entries, then compacted a block each. Returns the tables."""
        cp, sms = self.cp, self.sms
        toff = cp.cumsum(tsize) - tsize
        total = int(self._get(toff[count - 1 :] + tsize[count - 1 :])[0])
        tab = cp.full(self.n, -1, dtype=cp.int32)
        tab[corder[start : start + count]] = cp.arange(count, dtype=cp.int32)
        keys = cp.full(total, -1, dtype=cp.int32)
        vals = cp.zeros(total, dtype=cp.float64)
        inside = cp.zeros(count, dtype=cp.float64)
        self._ops(8)
        self._sample()
        self._launch(
            "louvain_merge_flat",
            _grid(-(-self.nnz // 8), sms),
            (np.int64(self.nnz), self.src, self.ind, self.w, self.C, lab, tab, toff, tsize,
             keys, vals, inside),
        )
        self._launch(
            "louvain_merge_emit",
            min(count, 16 * sms),
            (corder, np.int64(start), np.int64(count), vstart, self.com_size, members,
             self.loop, self.new_id, edge_pos, toff, tsize, keys, vals, inside, tind, tw,
             rowlen, tpos, nloop),
        )
        return keys, vals, inside, tab, toff

    def host_graph(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The level's graph on the host (option ``host_tail``): ``n``, int64 ``ptr`` and
        ``ind``, float64 weights and self-loops."""
        ptr = self._get(self.ptr).astype(np.int64, copy=False)
        ind = self._get(self.ind).astype(np.int64)
        return self.n, ptr, ind, self._get(self.w), self._get(self.loop)

    def push_level(self, lab: np.ndarray) -> Any:
        """Host labels of the level's vertices as a device level (option ``host_tail``)."""
        self._ops()
        return self.cp.asarray(lab.astype(np.int32))

    def compose(self, levels: list[Any], n0: int) -> Any:
        cp = self.cp
        if not levels:
            self._ops()
            return cp.arange(n0, dtype=cp.int32)
        comm = levels[0]
        for lab in levels[1:]:
            comm = lab[comm]
            self._ops()
        return comm


def _module_kernels() -> dict[str, Any]:
    from matchbench.gpu.kernels import get_module

    module = get_module("louvain")
    names = [
        "louvain_setup", "louvain_rows", "louvain_table_sizes", "louvain_commit",
        "louvain_tally", "louvain_quality", "louvain_com_sizes", "louvain_com_keys",
        "louvain_relabel", "louvain_merge_warp", "louvain_merge_block",
        "louvain_merge_global", "louvain_merge_flat", "louvain_merge_emit", "louvain_compact",
    ] + [f"louvain_move_b{b}" for b in range(1, 8)] + ["louvain_move_b7v"]
    return {name: module.get_function(name) for name in names}


def _sm_count() -> int:
    return sm_count()


@dataclass
class _DeviceRun:
    """What :func:`_run_device` leaves on the device and reports."""

    community: Any
    levels: list[Any]
    outcome: Outcome
    seconds: dict[str, float]
    counters: dict[str, Any]
    peak: int


def _run_device(
    kern: dict[str, Any], sms: int, n: int, ptr: Any, ind: Any, w: Any, loop: Any,
    t_bin: float, t_final: float, bin_limit: int, commit: str, max_iterations: int,
    opts: Options | None = None,
) -> _DeviceRun:
    """:func:`drive` on the device for a graph already there (level 0 is not modified)."""
    import cupy as cp

    relaxed = commit == "iteration"
    be = _DeviceLevels(kern, sms, n, ptr, ind, w, loop, relaxed, opts)
    out = drive(be, t_bin, t_final, bin_limit, relaxed, max_iterations, opts)
    community = be.compose(out.levels, n)
    end = be.mark()
    end.synchronize()
    seconds = stage_totals({
        f"level{r}_{what}": cp.cuda.get_elapsed_time(a, b) / 1e3 for r, what, a, b in out.marks
    })
    counters = {"kernel_launches": be.launches, "host_syncs": be.syncs, "commit": commit,
                "graph_launches": be.graph_launches}
    return _DeviceRun(community, out.levels, out, seconds, counters, be.peak)


def _to_host(run: _DeviceRun) -> tuple[np.ndarray, list[np.ndarray]]:
    community = run.community.get().astype(np.int64)
    levels = [lab.get().astype(np.int64) for lab in run.levels]
    return community, levels


def louvain_gpu(
    graph: Any,
    t_bin: float = 1e-2,
    t_final: float = 1e-6,
    bin_limit: int = BIN_LIMIT,
    commit: str = "bucket",
    max_iterations: int = 1000,
    loop: Any = None,
    **options: Any,
) -> tuple[Partition, dict[str, Any], dict[str, float]]:
    """The Louvain method of paper III on the current CUDA device.

    Parameters
    ----------
    graph : WeightedGraph
        A CSR graph (a :class:`~matchbench.families.community.problem.CommunityGraph`), n < 2^31.
    t_bin, t_final : float
        The least gain in Q per iteration (and stage) to go on: ``t_bin`` while the stage's
        graph has more than ``bin_limit`` vertices, then ``t_final``.
    bin_limit : int
        The vertex count above which ``t_bin`` applies (paper: 100,000).
    commit : {"bucket", "iteration"}
        Commit the moves after each degree bucket (Alg. 1) or at the end of each iteration
        (the "relaxed" variant of Sec. 5).
    max_iterations : int
        Iterations per stage at most.
    loop : array_like of float, optional
        Self-loop weights per vertex (the community module's convention); none by default.
    **options
        The options beyond the paper
        (:class:`~matchbench.families.community.louvain_stages.Options`: ``rounds``,
        ``hub_chunks``, ``prune``, ``pickless``, ``t_drop``, ``aggregation_tolerance``,
        ``aggregate``, ``hashed_rounds``, ``smem_hubs``, ``vertex_tables``, ``host_tail``,
        ``t_level``, ``iteration_graphs``, ``small_merge``); none by default,
        the paper's method.

    Returns
    -------
    (Partition, counters, timings)
        As :func:`matchbench.families.community.louvain.louvain` (``modularity`` the Q of the last
        kept stage, on its contracted graph; counters per stage run ``r``:
        ``level_vertices``, ``level_edges`` (CSR entries), ``level_threshold``,
        ``level_iterations``, ``level_moves``, ``level_q``, ``level_q_start`` (the stage's
        singleton Q), ``level_two_m``, ``level_buckets`` (vertices in move buckets 1-7),
        ``level_merge_buckets`` (communities in aggregation buckets 1-3, None where the stage
        was not aggregated)), plus ``first_phase_edges_per_s`` (CSR entries hashed per second
        in the first stage: its iterations times 2|E| over its seconds, the paper's TEPS),
        ``kernel_launches`` (our kernels and CuPy calls), ``host_syncs``; timings
        ``level{r}_optimize`` / ``level{r}_aggregate`` (CUDA events) and ``solve``.

    Notes
    -----
    Naim, Manne, Halappanavar, Tumeo, *Community Detection on the GPU*, IPDPS 2017, Sec. 4
    (Alg. 1-3, Sec. 4.1's buckets and hash tables) and Sec. 5 (thresholds, the relaxed
    variant); the kernels' header (``kernels/community/louvain.cu``) has the details and race
    arguments.
    """
    import cupy as cp

    from matchbench.gpu.common import EventTimer

    opts = check_params(t_bin, t_final, bin_limit, commit, max_iterations, **options)
    n0 = int(graph.n)
    loop0 = loop_array(loop, n0)
    if n0 == 0:
        return empty_result()
    if n0 > _INT32_MAX:
        raise ValueError(f"louvain_gpu: {n0} vertices; community ids are int32 (n < 2^31)")
    ptr = cp.asarray(np.ascontiguousarray(graph.ptr, dtype=np.int64))
    ind = cp.asarray(np.ascontiguousarray(graph.ind, dtype=np.int32))
    w = cp.asarray(np.ascontiguousarray(graph.weight, dtype=np.float64))
    d_loop = cp.asarray(loop0)
    timer = EventTimer()
    with timer:
        run = _run_device(_module_kernels(), _sm_count(), n0, ptr, ind, w, d_loop, t_bin,
                          t_final, bin_limit, commit, max_iterations, opts)
    seconds = dict(run.seconds, solve=timer.seconds)
    community, levels = _to_host(run)
    return finish(run.outcome, community, levels, seconds, run.counters)


def _warm_graph() -> Any:
    """A graph whose run reaches every kernel: degrees in all seven buckets (cliques of 3, 6,
    10, 20, 40, 100 vertices and a star of 400 leaves), communities in all three aggregation
    buckets, and isolated vertices."""
    from matchbench.families.community.problem import CommunityGraph

    us, vs = [np.arange(1, 401)], [np.zeros(400, dtype=np.int64)]
    base = 401
    for size in (3, 6, 10, 20, 40, 100):
        i, j = np.triu_indices(size, 1)
        us.append(i + base)
        vs.append(j + base)
        us.append(np.array([base]))
        vs.append(np.array([0]))
        base += size
    u, v = np.concatenate(us), np.concatenate(vs)
    return CommunityGraph.from_edges(u, v, np.ones(u.size), base + 3, name="louvain_gpu_warm")


# ---------------------------------------------------------------------------------------
# The solver


class LouvainGPU(DeviceCommunitySolver):
    """The Louvain method of paper III on the GPU; see :func:`louvain_gpu`.

    Parameters
    ----------
    t_bin, t_final : float
        Thresholds on the gain in Q per iteration: ``t_bin`` (default 1e-2) while the graph
        has more than ``bin_limit`` (default 100,000) vertices, ``t_final`` (1e-6) after;
        paper III sweeps ``(10^k, 10^l)``, ``k = -1..-4``, ``l = -3..-7``
        (:data:`THRESHOLD_SWEEP`).
    bin_limit : int
    commit : {"bucket", "iteration"}
        ``bucket``: the paper's algorithm (commit after each degree bucket); ``iteration``:
        its relaxed variant (Sec. 5).
    max_iterations : int
        Iterations per stage at most.
    rounds, hub_chunks, prune, pickless, t_drop, aggregation_tolerance, aggregate, hashed_rounds, smem_hubs, vertex_tables, host_tail, t_level, iteration_graphs, small_merge
        The options beyond the paper
        (:class:`~matchbench.families.community.louvain_stages.Options`); their defaults
        (1, 1, false, 0, 1.0, 1.0, "hash", 0, false, false, 0, 0.0, false, false) are the
        paper's method, which ``conf/algorithm/louvain_gpu.yaml`` runs;
        :class:`LouvainGPUFast` is the recommended combination. Only the options that differ
        from the paper's are variant parameters (``params``, the ``variant`` column), so the
        paper's variant string is unchanged.

    Notes
    -----
    ``prepare`` uploads the graph once per instance (``timings()["upload"]``) and, the first
    time, runs the method on a small graph that reaches every kernel (compilation, CuPy's
    sort and scan kernels); ``run`` is the whole method, CUDA-event timed (``solve``), with
    per-stage ``level{r}_optimize`` / ``level{r}_aggregate`` seconds; ``result`` copies the
    partition and the hierarchy back (``transfer``). Counters as :func:`louvain_gpu`
    (``iterations`` fills the row's column, ``first_phase_edges_per_s`` is the paper's TEPS).
    """

    name: ClassVar[str] = "louvain_gpu"
    problem: ClassVar[str] = "community"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("louvain",)

    def __init__(
        self,
        *,
        t_bin: float,
        t_final: float,
        bin_limit: int,
        commit: str,
        max_iterations: int,
        rounds: int = 1,
        hub_chunks: int = 1,
        prune: bool = False,
        pickless: int = 0,
        t_drop: float = 1.0,
        aggregation_tolerance: float = 1.0,
        aggregate: str = "hash",
        hashed_rounds: int = 0,
        smem_hubs: bool = False,
        vertex_tables: bool = False,
        host_tail: int = 0,
        t_level: float = 0.0,
        iteration_graphs: bool = False,
        small_merge: bool = False,
    ) -> None:
        opts = check_params(
            t_bin, t_final, bin_limit, commit, max_iterations, rounds=rounds,
            hub_chunks=hub_chunks, prune=prune, pickless=pickless, t_drop=t_drop,
            aggregation_tolerance=aggregation_tolerance, aggregate=aggregate,
            hashed_rounds=hashed_rounds, smem_hubs=smem_hubs, vertex_tables=vertex_tables,
            host_tail=host_tail, t_level=t_level, iteration_graphs=iteration_graphs,
            small_merge=small_merge,
        )
        super().__init__(
            t_bin=float(t_bin),
            t_final=float(t_final),
            bin_limit=int(bin_limit),
            commit=commit,
            max_iterations=int(max_iterations),
            **opts.changed(),  # the paper's method keeps its variant string
        )
        self._opts = opts

    # -- contract -------------------------------------------------------------------

    def estimate_bytes(self, instance: Any) -> int:
        """Peak device bytes, an upper estimate: the graph (12 B per CSR entry, 8 per vertex),
        src (4 per entry), the next level's temporary and final edge lists (12 + 16 per
        entry), 192 bytes per vertex of per-level arrays, sorts and aggregation tables, and
        one set of global hash tables (:func:`global_blocks`'s budget, or one table of the
        largest degree; ``vertex_tables`` keeps to the same bound,
        :func:`~matchbench.families.community.louvain_buckets.vertex_slices`); the
        optimization's arrays are freed before the aggregation's. With
        ``aggregate="flat"`` every large community has its table at once: at most about 1.6
        slots per CSR entry (20 bytes), plus 8 bytes per vertex."""
        n, nnz = int(instance.n), int(instance.ind.shape[0])
        deg = np.diff(np.asarray(instance.ptr, dtype=np.int64)) if n else np.zeros(1)
        biggest = int(deg.max()) if deg.size else 0
        tables = max(GLOBAL_TABLE_BYTES, 4 * nnz, SLOT_BYTES * table_size(max(biggest, n)))
        if self._opts.aggregate == "flat":
            tables = max(tables, 20 * nnz + 8 * n)
        return int(8 * (n + 1) + nnz * (12 + 4 + 12 + 16) + 192 * n + tables)

    # -- the hooks of DeviceCommunitySolver ---------------------------------------------

    def _kernels(self) -> dict[str, Any]:
        return _module_kernels()

    def _device_run(self, kern: dict[str, Any], sms: int, n: int, ptr: Any, ind: Any, w: Any,
                    loop: Any, warm: bool = False) -> _DeviceRun:
        p = self.params
        if warm:  # t_bin 0 and bin_limit 0: every stage under t_final, every kernel reached
            return _run_device(kern, sms, n, ptr, ind, w, loop, 0.0, p["t_final"], 0, p["commit"],
                               p["max_iterations"], self._opts)
        return _run_device(kern, sms, n, ptr, ind, w, loop, p["t_bin"], p["t_final"],
                           p["bin_limit"], p["commit"], p["max_iterations"], self._opts)

    @staticmethod
    def _warm_graph() -> Any:
        return _warm_graph()

    def _finish(self, run: _DeviceRun, community: np.ndarray, levels: list[np.ndarray]
                ) -> tuple[Partition, dict[str, Any]]:
        answer, counters, _ = finish(run.outcome, community, levels, self._timings, run.counters)
        return answer, counters

    def _empty(self) -> tuple[Partition, dict[str, Any]]:
        answer, counters, _ = empty_result()
        return answer, counters


class LouvainGPUFast(LouvainGPU):
    """``louvain_gpu`` with the recommended options beyond the paper
    (``conf/algorithm/louvain_gpu_fast.yaml`` says which and why); the same class, its own
    name so that its rows are told apart in the ``algorithm`` column."""

    name: ClassVar[str] = "louvain_gpu_fast"
