"""CU-TREE: the alternating tree Hungarian algorithm on the GPU (Date & Nagi 2016), and its
persistent form (one cooperative kernel for the whole solve loop; beyond the paper).

The host loop and the multi-device split are the shared driver's
(:mod:`~matchbench.families.lap.hungarian_driver`); here are CU-TREE's forward pass (one
thread per column, a column slack array), its theta reduction and dual update, and the
persistent kernel's launch, grid and error codes.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from matchbench.core.params import boolean, integer
from matchbench.families.lap.hungarian_driver import (
    BLOCK,
    CTRL_DUALS,
    CTRL_ERR,
    CTRL_INIT,
    CTRL_LEVELS,
    CTRL_NF,
    CTRL_PHASES,
    CTRL_REV,
    CTRL_SYNCS,
    SCAN,
    HungarianGPU,
    Part,
    State,
    batch_schedule,
    grid_1d,
)
from matchbench.families.lap.problem import Assignment, CostMatrix
from matchbench.gpu.common import device_attributes

#: HUNG_E_* codes of the persistent kernel (ctrl[CTRL_ERR]).
PERSISTENT_ERRORS = {
    1: "a dual update found no finite theta",
    2: "no progress: more phases than n + 1",
    3: "more dual updates than n + 1 per phase",
    4: "a phase ran past 2n + 2 BFS levels",
    5: "a reverse or augmentation walk left the alternating tree",
    6: "a grid barrier timed out (blocks not co-resident, or blocks out of step)",
    7: "a frontier outgrew its n entries",
}
PERSIST_THREADS = 256  # HUNG_PERSIST_THREADS
#: A block waiting longer than this at a grid barrier gives up (a broken run, not a slow
#: one: the longest step between two barriers is one BFS level, milliseconds at n = 40000).
BARRIER_TIMEOUT_NS = 2_000_000_000


def persistent_smem_bytes(tiles: int) -> int:
    """Dynamic shared memory of ``hungarian_tree_persistent`` with ``tiles`` column tiles.

    Per owned column (32 per tile): slack, v and u of the assigned row (8 bytes each), the 8
    lanes' minima (8 x 8), positions and rows (8 x 4 each), P_c and A_c (4 each), cover and
    "reverse" flags (1 each): 162 bytes; plus one frontier chunk of 256 rows and duals.
    """
    return 162 * 32 * int(tiles) + 12 * PERSIST_THREADS


class CuTree(HungarianGPU):
    """CU-TREE: the alternating tree variant of the Hungarian algorithm on the GPU.

    Parameters
    ----------
    devices, allow_shared_device, batch, fuse
        As in the shared driver above; ``batch`` and ``fuse`` shape the host loop and
        are ignored when ``persistent`` is true.
    persistent : bool
        Run the solve loop in one persistent kernel (the default): one launch and one host
        read per solve instead of a few launches per BFS level and a host read per batch of
        levels. ``false`` runs the paper's host-driven loop (Sec. 3.2), with the phase
        split of ``timings()``. Needs ``devices == 1``.
    tiles_per_block : int
        Persistent kernel only: 32-column tiles each block owns. 0 (the default) takes the
        fewest that keep the grid (ceil(n / (32 tiles)) blocks) co-resident on the GPU:
        one tile up to n = 32 x (blocks the GPU holds at once). More tiles mean fewer
        blocks at each grid barrier and less parallelism per BFS level. A value whose grid
        cannot be co-resident is refused with a RuntimeError.

    Notes
    -----
    Date & Nagi, "GPU-accelerated Hungarian algorithms for the Linear Assignment Problem",
    Parallel Computing 2016: Alg. 1 (initial reduction), Alg. 2 (optimality check),
    Alg. 4 (forward pass expansion, one thread per column, with the stream-compacted
    frontier of Sec. 4.3.1), Alg. 5 and 6 (reverse and augmentation passes), Sec. 4.4 and
    Alg. 9 (theta by a reduction of the slack array, dual update); Sec. 5 item 4b for
    several devices (the columns split among them). Phase times (host loop):
    ``initial_reduction``, ``optimality_check``, ``forward_pass``, ``dual_update``,
    ``augment`` (reverse and augmentation passes); the paper's Table 3 reports forward pass
    and dual update.

    The persistent mode is ours, not the paper's: the same steps (the kernels' shared
    ``__device__`` functions) in one cooperative launch of ``hungarian_tree_persistent``,
    grid-wide barriers between them, each block owning a contiguous range of columns whose
    state stays in its shared memory, frontiers built by atomic appends (their order
    decides only ties, as the fused contraction's does). Its counters (``bfs_levels``,
    ``phases``, ``dual_updates``, ``initial_assignments``, ``grid_barriers``) are counted
    on the device; ``kernel_launches`` and ``host_syncs`` by the host. Its phase times are
    ``initial_reduction`` and ``solve_loop`` only: the split of the loop into forward
    pass, dual update and augmentation exists in the host loop alone.
    """

    name: ClassVar[str] = "cu_tree"
    split_by: ClassVar[str] = "cols"
    _phase_names: ClassVar[tuple[str, ...]] = (
        "initial_reduction",
        "optimality_check",
        "forward_pass",
        "dual_update",
        "augment",
    )

    def __init__(
        self,
        *,
        devices: int,
        allow_shared_device: bool,
        batch: int,
        fuse: bool,
        persistent: bool,
        tiles_per_block: int,
    ):
        super().__init__(
            devices=devices, allow_shared_device=allow_shared_device, batch=batch, fuse=fuse
        )
        persistent = boolean("persistent", persistent)
        if persistent and self.params["devices"] > 1:
            raise ValueError(
                "persistent: true runs on one GPU; set persistent: false for devices > 1 "
                f"(got devices={self.params['devices']})"
            )
        self.params["persistent"] = persistent
        self.params["tiles_per_block"] = integer("tiles_per_block", tiles_per_block, 0, 64)
        if persistent:
            self._phase_names = ("initial_reduction", "solve_loop")

    def estimate_bytes(self, instance: CostMatrix) -> int:
        """As the driver's, plus the persistent kernel's two frontiers and row stamps."""
        return super().estimate_bytes(instance) + 28 * instance.n

    def _allocate(self, st: State) -> None:
        super()._allocate(st)
        root, n = st.parts[0], st.n
        root.u = self._alloc(st, root, n, st.dual, 0)
        i32, i8 = np.int32, np.int8
        # Several devices contract on the root after gathering what each one reached.
        st.fused = self.params["fuse"] and len(st.parts) == 1
        for q in st.parts:
            # Column arrays of this device's block (the *_l names): for the root, views of
            # the first entries of its global column arrays.
            w = q.cols
            q.v_l = self._alloc(st, q, w, st.dual, 0)
            q.slack_l = self._alloc(st, q, w, st.dual, 0)
            q.Vc_l = self._alloc(st, q, w, i8, 0)
            if q.index == 0:
                q.Pc_l, q.rev_l, q.Ac_l = root.Pc[:w], root.rev[:w], root.Ac[:w]
                q.Fin_l, q.nf_l, q.u_l = root.Fin, root.nf, root.u
                q.Pr_l, q.Vr_l, q.act_l = root.Pr, root.Vr, root.active
                q.rowmin = self._alloc(st, q, n, st.dual, 0) if len(st.parts) > 1 else root.u
            else:
                q.Pc_l = self._alloc(st, q, w, i32, -1)
                q.rev_l = self._alloc(st, q, w, i8, 0)
                q.Ac_l = self._alloc(st, q, w, i32, -1)
                q.Fin_l = self._alloc(st, q, n, i32, 0)
                q.nf_l = q.nf
                q.u_l = self._alloc(st, q, n, st.dual, 0)
                q.Pr_l = self._alloc(st, q, n, i32, -1)
                q.Vr_l = self._alloc(st, q, n, i8, 0)
                q.act_l = self._alloc(st, q, n, i8, 0)
                q.rowmin = self._alloc(st, q, n, st.dual, 0)
                # root-side staging of what this device sends
                q.act_stage = self._alloc(st, root, n, i8, 0)
                q.pr_stage = self._alloc(st, root, n, i32, -1)
                q.rowmin_stage = self._alloc(st, root, n, st.dual, 0)
            q.reset_cols_args = (np.int32(w), q.Vc_l, q.Pc_l, q.rev_l, q.slack_l)
            nblk = -(-w // 32)
            q.blk_rows = self._alloc(st, q, nblk * 32, i32, -1)
            q.blk_cnt = self._alloc(st, q, nblk, i32, 0)
            q.expand_args = (
                q.C,
                np.int64(w),
                np.int32(w),
                np.int32(q.col0),
                q.u_l,
                q.v_l,
                q.Fin_l,
                q.nf_l,
                q.slack_l,
                q.Pc_l,
                q.Vc_l,
                q.Ac_l,
                q.Pr_l,
                q.Vr_l,
                q.act_l,
                q.rev_l,
                q.ctrl,
                st.eps,
                np.int32(1 if st.fused else 0),
                q.blk_rows,
                q.blk_cnt,
            )
            q.expand_grid = (nblk,)
            q.theta_out = (
                root.theta
                if len(st.parts) == 1
                else (root.theta_parts[:1] if q.index == 0 else q.theta)
            )
            q.theta_in = root.theta if q.index == 0 else q.theta
        if self.params["persistent"]:
            self._allocate_persistent(st)

    def _allocate_persistent(self, st: State) -> None:
        """The persistent kernel's arrays and its grid (co-resident by construction)."""
        root, n = st.parts[0], st.n
        root.stamp = self._alloc(st, root, n, np.int32, 0)
        root.F2 = self._alloc(st, root, 2 * n, np.int32, -1)
        root.Fu2 = self._alloc(st, root, 2 * n, st.dual, 0)
        root.theta2 = self._alloc(st, root, 2, st.dual, st.inf)
        st.tiles, st.grid, st.smem = self._persistent_grid(root, n)

    def _persistent_grid(self, root: Part, n: int) -> tuple[int, int, int]:
        """(tiles per block, blocks, dynamic shared bytes) for ``hungarian_tree_persistent``.

        The grid must be co-resident, or its barriers would wait for blocks that never
        start: blocks <= SMs x the occupancy calculator's blocks per SM at this block size
        and shared memory. The fewest tiles per block that fit (``tiles_per_block: 0``)
        give the most blocks, hence the most parallel columns per BFS level.
        """
        import cupy as cp
        from cupy.cuda import driver

        dev = cp.cuda.Device(root.device_id)
        attrs = device_attributes(dev.id)
        if not attrs.get("CooperativeLaunch", 0):
            raise RuntimeError(f"{self.name}: persistent: true needs cooperative launch support")
        sms = int(attrs["MultiProcessorCount"])
        optin = int(attrs.get("MaxSharedMemoryPerBlockOptin", 48 * 1024))
        kern = root.kern["hungarian_tree_persistent"]
        ntiles = -(-n // 32)
        want = self.params["tiles_per_block"]
        tried = []
        for tiles in [want] if want else range(1, min(ntiles, 64) + 1):
            smem = persistent_smem_bytes(tiles)
            if smem > optin:
                tried.append(f"{tiles} tiles: {smem} bytes of shared memory > {optin}")
                break
            if smem > 48 * 1024:
                kern.max_dynamic_shared_size_bytes = smem
            per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(
                kern.kernel.ptr, PERSIST_THREADS, smem
            )
            grid = -(-ntiles // tiles)
            if grid <= per_sm * sms:
                return tiles, grid, smem
            tried.append(f"{tiles} tiles: {grid} blocks > {per_sm} per SM x {sms} SMs")
        raise RuntimeError(
            f"{self.name}: no co-resident grid for the persistent kernel at n = {n} "
            f"({'; '.join(tried)}); set tiles_per_block to 0 or larger, or persistent: false"
        )

    # -- phases ----------------------------------------------------------------------

    def _initial_reduction(self) -> None:
        """Alg. 1: row minima (combined across the column blocks), then column minima."""
        import cupy as cp

        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        for q in parts:
            self._k(
                q,
                "hungarian_row_min",
                (n,),
                (BLOCK,),
                (q.C, np.int32(n), np.int32(q.cols), q.rowmin),
            )
        if len(parts) > 1:
            for q in parts[1:]:
                self._copy(q, q.rowmin_stage, q.rowmin)
                self._wait(root, q)
            cp.copyto(root.u, root.rowmin)
            for q in parts[1:]:
                cp.minimum(root.u, q.rowmin_stage, out=root.u)
            self._counters["kernel_launches"] += len(parts)
            self._broadcast_u()
        for q in parts:
            self._col_reduce(q, q.u_l, q.v_l)

    def _broadcast_u(self) -> None:
        root = self._st.parts[0]
        for q in self._st.parts[1:]:
            self._wait(q, root)
            self._copy(q, q.u_l, root.u)

    def _broadcast_frontier(self) -> None:
        root = self._st.parts[0]
        for q in self._st.parts[1:]:
            self._wait(q, root)
            self._copy(q, q.Fin_l, root.Fin)
            self._copy(q, q.nf, root.nf)

    def _gather_rows(self) -> None:
        """Sec. 5 item 4b: the rows each device's expansion reached, merged on the root."""
        st = self._st
        root, n = st.parts[0], st.n
        for q in st.parts[1:]:
            self._copy(q, q.act_stage, q.act_l)
            self._copy(q, q.pr_stage, q.Pr_l)
            self._k(q, "hungarian_clear_rows", grid_1d(n), (BLOCK,), (np.int32(n), q.act_l, q.Pr_l))
            self._wait(root, q)
            self._k(
                root,
                "hungarian_merge_rows",
                grid_1d(n),
                (BLOCK,),
                (np.int32(n), q.act_stage, q.pr_stage, root.active, root.Pr, root.Vr),
            )

    def _contract(self) -> None:
        """Contraction (Sec. 4.3.1): the active rows become the next frontier F_in."""
        st = self._st
        root = st.parts[0]
        if len(st.parts) > 1:
            self._gather_rows()
        self._compact(root.active, root.Fin, root.nf, st.n)
        if len(st.parts) > 1:
            self._broadcast_frontier()

    def _forward(self) -> bool:
        """BFS levels until the frontier is empty; True when a column was marked reverse."""
        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        levels = 0
        for size in batch_schedule(self.params["batch"]):
            for _ in range(size):
                for q in parts:
                    self._k(q, "hungarian_tree_expand", q.expand_grid, (32, 8), q.expand_args)
                if not st.fused:
                    self._contract()
            levels += size
            self._counters["bfs_levels"] += size
            ctrl = self._read_ctrl(root)
            if ctrl[CTRL_ERR]:
                raise RuntimeError(f"{self.name}: a dual update found no finite theta")
            if ctrl[CTRL_NF] == 0:
                rev = bool(ctrl[CTRL_REV])
                for q in parts[1:]:
                    rev = rev or bool(self._read_ctrl(q)[CTRL_REV])
                return rev
            if levels > 2 * n + 2 + self.params["batch"]:
                raise RuntimeError(f"{self.name}: the forward pass did not end in {levels} levels")
        raise AssertionError("unreachable")

    def _dual_update(self) -> None:
        """Sec. 4.4: theta by a reduction of the slack array, then Alg. 9."""
        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        one = len(parts) == 1
        for q in parts:
            self._k(
                q,
                "hungarian_tree_theta",
                (1,),
                (SCAN,),
                (
                    q.slack_l,
                    q.Vc_l,
                    np.int32(q.cols),
                    st.eps,
                    q.theta_out,
                    q.ctrl,
                    np.int32(1 if one else 0),
                ),
            )
        if not one:
            for q in parts[1:]:
                self._copy(q, root.theta_parts[q.index : q.index + 1], q.theta)
                self._wait(root, q)
            self._k(
                root,
                "hungarian_min_reduce",
                (1,),
                (SCAN,),
                (root.theta_parts, np.int32(len(parts)), root.theta, root.ctrl, np.int32(1)),
            )
        self._k(
            root,
            "hungarian_dual_update_rows",
            grid_1d(n),
            (BLOCK,),
            (np.int32(n), np.int32(0), root.Vr, root.theta, root.u),
        )
        if not one:
            for q in parts[1:]:
                self._wait(q, root)
                self._copy(q, q.theta, root.theta)
                self._copy(q, q.u_l, root.u)
        for q in parts:
            self._k(
                q,
                "hungarian_dual_update_cols",
                grid_1d(q.cols),
                (BLOCK,),
                (
                    np.int32(q.cols),
                    q.Vc_l,
                    q.theta_in,
                    q.v_l,
                    np.int32(1),
                    q.slack_l,
                    q.Pc_l,
                    q.act_l,
                    st.eps,
                ),
            )
        self._contract()

    def _gather_columns(self) -> None:
        """Sec. 5 item 4: the devices' column predecessors and reverse marks, on the root."""
        root = self._st.parts[0]
        for q in self._st.parts[1:]:
            self._copy(q, root.Pc[q.col0 : q.col0 + q.cols], q.Pc_l)
            self._copy(q, root.rev[q.col0 : q.col0 + q.cols], q.rev_l)
            self._wait(root, q)

    def _scatter_assignment(self) -> None:
        root = self._st.parts[0]
        for q in self._st.parts[1:]:
            self._wait(q, root)
            self._copy(q, q.Ac_l, root.Ac[q.col0 : q.col0 + q.cols])

    def _solve(self) -> None:
        if self.params["persistent"]:
            self._solve_persistent()
            return
        st = self._st
        root, n = st.parts[0], st.n
        phase = 0
        while True:
            with self._phase("optimality_check"):
                match = self._optimality_check(tree=1)
            self._note_match(phase, match)
            if match == n:
                break
            phase += 1
            self._counters["phases"] = phase
            self._check_phase_count(phase, match)
            with self._phase("forward_pass"):
                # The unassigned rows, marked active by the optimality check, are F_in.
                self._compact(root.active, root.Fin, root.nf, n)
                if len(st.parts) > 1:
                    self._broadcast_frontier()
                found = self._forward()
            while not found:
                with self._phase("dual_update"):
                    self._dual_update()
                self._counters["dual_updates"] += 1
                if self._counters["dual_updates"] > (n + 1) * phase:
                    raise RuntimeError(f"{self.name}: too many dual updates")
                with self._phase("forward_pass"):
                    found = self._forward()
            with self._phase("augment"):
                if len(st.parts) > 1:
                    self._gather_columns()
                self._augment()
                if len(st.parts) > 1:
                    self._scatter_assignment()

    def _solve_persistent(self) -> None:
        """Alg. 2, 4, 5, 6 and 9 until every row is assigned, in one cooperative launch."""
        st = self._st
        root, n = st.parts[0], st.n
        root.ctrl.data.memset_async(0, root.ctrl.nbytes)  # barrier word, counts, counters
        args = (
            root.C,
            np.int32(n),
            np.int32(st.tiles),
            root.u,
            root.v_l,
            root.Ar,
            root.Ac,
            root.Pr,
            root.Pc,
            root.Sr,
            root.Sc,
            root.Vr,
            root.aug,
            root.stamp,
            root.F2,
            root.Fu2,
            root.theta2,
            root.ctrl,
            st.eps,
            np.uint64(BARRIER_TIMEOUT_NS),
        )
        with self._phase("solve_loop"):
            # RawKernel's call has no cooperative switch; its compiled Function does.
            root.kern["hungarian_tree_persistent"].kernel(
                (st.grid,),
                (PERSIST_THREADS,),
                args,
                shared_mem=st.smem,
                enable_cooperative_groups=True,
            )
        self._counters["kernel_launches"] += 1
        self._counters["persistent_blocks"] = st.grid
        self._counters["tiles_per_block"] = st.tiles

    def _finish(self) -> None:
        """Persistent mode: the one host read of a solve (counters and error code)."""
        if not self.params["persistent"]:
            return
        ctrl = self._read_ctrl(self._st.parts[0])
        c = self._counters
        c["bfs_levels"] = int(ctrl[CTRL_LEVELS])
        c["phases"] = int(ctrl[CTRL_PHASES])
        c["dual_updates"] = int(ctrl[CTRL_DUALS])
        c["grid_barriers"] = int(ctrl[CTRL_SYNCS])
        c["initial_assignments"] = int(ctrl[CTRL_INIT]) if ctrl[CTRL_PHASES] >= 1 else -1
        code = int(ctrl[CTRL_ERR])
        if code:
            why = PERSISTENT_ERRORS.get(code, f"error code {code}")
            raise RuntimeError(
                f"{self.name}: the persistent kernel stopped: {why} (after {c['phases']} "
                f"phases, {c['bfs_levels']} BFS levels, {c['dual_updates']} dual updates)"
            )

    def _collect(self) -> Assignment:
        import cupy as cp

        st = self._st
        root = st.parts[0]
        with cp.cuda.Device(root.device_id):
            perm = cp.asnumpy(root.Ar).astype(np.int64)
            u = cp.asnumpy(root.u)
        vs = []
        for q in st.parts:
            with cp.cuda.Device(q.device_id):
                vs.append(cp.asnumpy(q.v_l))
        return Assignment(perm, u, np.concatenate(vs))
