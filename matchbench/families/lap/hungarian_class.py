"""CU-CLASS: the classical (Munkres) Hungarian algorithm on the GPU (Date & Nagi 2016).

The host loop and the multi-device split are the shared driver's
(:mod:`~matchbench.families.lap.hungarian_driver`); here are CU-CLASS's matrix compression
(the zero-slack edges as a CSR adjacency list, by a prefix sum), its forward pass (one
thread per frontier row) and its two-stage dual update.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from matchbench.families.lap.hungarian_driver import (
    BLOCK,
    CTRL_ERR,
    CTRL_NF,
    CTRL_REV,
    SCAN,
    HungarianGPU,
    State,
    batch_schedule,
    grid_1d,
)
from matchbench.families.lap.problem import Assignment


class CuClass(HungarianGPU):
    """CU-CLASS: the classical (Munkres) variant of the Hungarian algorithm on the GPU.

    Notes
    -----
    Date & Nagi, "GPU-accelerated Hungarian algorithms for the Linear Assignment Problem",
    Parallel Computing 2016: Alg. 1 (initial reduction), Alg. 2 (optimality check),
    Sec. 3.3 and 4.3.1 (matrix compression of the zero-slack edges into CSR by a prefix
    sum, redone only after a dual update), Alg. 3 (forward pass expansion, one thread per
    frontier row), Alg. 5 and 6 (reverse and augmentation passes), Alg. 7 and 8 (two-stage
    dual update); Sec. 5 item 4a for several devices (the rows split among them). After a
    dual update the search resumes from every tree row (V_r = 0) with the covers kept, as
    the ``search`` label of the sequential algorithm in Sec. 2.2 does; after an
    augmentation it restarts from the optimality check. Phase times:
    ``initial_reduction``, ``optimality_check``, ``compression``, ``forward_pass``,
    ``dual_update``, ``augment``, as in the paper's Table 3.
    """

    name: ClassVar[str] = "cu_class"
    split_by: ClassVar[str] = "rows"

    def _allocate(self, st: State) -> None:
        super()._allocate(st)
        root, n = st.parts[0], st.n
        i32, i8 = np.int32, np.int8
        root.u = self._alloc(st, root, n, st.dual, 0)
        root.v = self._alloc(st, root, n, st.dual, 0)
        root.Vc = self._alloc(st, root, n, i8, 0)
        root.slack = self._alloc(st, root, n, st.dual, 0)  # unused by this variant's kernels
        root.reset_cols_args = (np.int32(n), root.Vc, root.Pc, root.rev, root.slack)
        root.P = self._alloc(st, root, n + 1, np.int64, 0)
        root.Z = self._alloc(st, root, max(4 * n, 1), i32, 0)
        for q in st.parts:
            r = q.rows
            q.cnt = self._alloc(st, q, max(r, 1), i32, 0)
            q.U = self._alloc(st, q, max(r, 1), st.dual, 0)
            if q.index == 0:
                q.u_l = root.u[q.row0 : q.row0 + r]
                q.v_l, q.Vr_l, q.Vc_l = root.v, root.Vr, root.Vc
                q.ptr = root.P[: r + 1]
                q.vpart = root.v
                q.theta_in = root.theta
            else:
                q.u_l = self._alloc(st, q, r, st.dual, 0)
                q.v_l = self._alloc(st, q, n, st.dual, 0)
                q.Vr_l = self._alloc(st, q, n, i8, 0)
                q.Vc_l = self._alloc(st, q, n, i8, 0)
                q.ptr = self._alloc(st, q, r + 1, np.int64, 0)
                q.Zl = self._alloc(st, q, max(4 * r, 1), i32, 0)
                q.vpart = self._alloc(st, q, n, st.dual, 0)
                q.vpart_stage = self._alloc(st, root, n, st.dual, 0)
                q.ptr_stage = self._alloc(st, root, r + 1, np.int64, 0)
                q.theta_in = q.theta
            q.theta_out = (
                root.theta
                if len(st.parts) == 1
                else (root.theta_parts[:1] if q.index == 0 else q.theta)
            )

    def _initial_reduction(self) -> None:
        """Alg. 1: row minima per row block, then column minima combined on the root."""
        import cupy as cp

        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        for q in parts:
            self._k(
                q,
                "hungarian_row_min",
                (q.rows,),
                (BLOCK,),
                (q.C, np.int32(q.rows), np.int32(n), q.u_l),
            )
        for q in parts:
            self._col_reduce(q, q.u_l, q.vpart)
        if len(parts) > 1:
            for q in parts[1:]:
                self._copy(q, q.vpart_stage, q.vpart)
                self._wait(root, q)
                cp.minimum(root.v, q.vpart_stage, out=root.v)
                self._counters["kernel_launches"] += 1
            for q in parts[1:]:
                self._wait(q, root)
                self._copy(q, q.v_l, root.v)

    def _compress(self) -> None:
        """Sec. 3.3 and 4.3.1: the zero-slack edges as CSR (P, Z) on the root.

        Per device: count per row, prefix sum into the row pointer, scatter; the devices'
        lists are then gathered on the root (Sec. 5 item 4a).
        """
        import cupy as cp

        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        for q in parts:
            self._k(
                q,
                "hungarian_zero_count",
                (q.rows,),
                (BLOCK,),
                (q.C, np.int32(q.rows), np.int32(n), q.u_l, q.v_l, st.eps, q.cnt),
            )
            with self._ctx(q):
                cp.copyto(q.ptr[1:], cp.cumsum(q.cnt[: q.rows], dtype=np.int64))
            self._counters["kernel_launches"] += 1
        sizes = []
        for q in parts:
            with self._ctx(q):
                sizes.append(int(q.ptr[q.rows : q.rows + 1].get()[0]))
            self._counters["host_syncs"] += 1
        total = sum(sizes)
        self._counters["zero_edges_max"] = max(self._counters.get("zero_edges_max", 0), total)
        if root.Z.shape[0] < total:
            root.Z = None
            root.Z = self._alloc(st, root, 2 * total, np.int32, 0)
        for q, m in zip(parts[1:], sizes[1:], strict=True):
            if q.Zl.shape[0] < m:
                q.Zl = None
                q.Zl = self._alloc(st, q, 2 * m, np.int32, 0)
        for q in parts:
            target = root.Z if q.index == 0 else q.Zl
            self._k(
                q,
                "hungarian_zero_scatter",
                (q.rows,),
                (BLOCK,),
                (q.C, np.int32(q.rows), np.int32(n), q.u_l, q.v_l, st.eps, q.ptr, target),
            )
        off = sizes[0]
        for q, m in zip(parts[1:], sizes[1:], strict=True):
            if m:
                self._copy(q, root.Z[off : off + m], q.Zl[:m])
            self._copy(q, q.ptr_stage, q.ptr)
            self._wait(root, q)
            cp.add(q.ptr_stage, np.int64(off), out=root.P[q.row0 : q.row0 + q.rows + 1])
            self._counters["kernel_launches"] += 1
            off += m
        self._counters["compressions"] += 1

    def _forward(self) -> bool:
        """Alg. 3 levels from the tree rows until the frontier is empty; True on "reverse"."""
        st = self._st
        root, n = st.parts[0], st.n
        self._k(
            root,
            "hungarian_class_seed",
            grid_1d(n),
            (BLOCK,),
            (np.int32(n), root.Vr, root.P, root.active, root.visited),
        )
        self._compact(root.active, root.Fin, root.nf, n)
        fuse = self.params["fuse"]
        args = (
            root.Fin,
            root.nf,
            root.P,
            root.Z,
            root.Ac,
            root.Pc,
            root.Pr,
            root.Vr,
            root.Vc,
            root.active,
            root.visited,
            root.rev,
            root.ctrl,
            np.int32(n),
            np.int32(1 if fuse else 0),
        )
        levels = 0
        for size in batch_schedule(self.params["batch"]):
            for _ in range(size):
                self._k(root, "hungarian_class_expand", grid_1d(n), (BLOCK,), args)
                if not fuse:
                    self._compact(root.active, root.Fin, root.nf, n)
            levels += size
            self._counters["bfs_levels"] += size
            ctrl = self._read_ctrl(root)
            if ctrl[CTRL_ERR]:
                raise RuntimeError(f"{self.name}: a dual update found no finite theta")
            if ctrl[CTRL_NF] == 0:
                return bool(ctrl[CTRL_REV])
            if levels > 2 * n + 2 + self.params["batch"]:
                raise RuntimeError(f"{self.name}: the forward pass did not end in {levels} levels")
        raise AssertionError("unreachable")

    def _dual_update(self) -> None:
        """Alg. 7 (theta = least uncovered slack, per device then on the root) and Alg. 8."""
        st = self._st
        root, n, parts = st.parts[0], st.n, st.parts
        one = len(parts) == 1
        for q in parts[1:]:
            self._wait(q, root)
            self._copy(q, q.Vr_l, root.Vr)
            self._copy(q, q.Vc_l, root.Vc)
        for q in parts:
            self._k(
                q,
                "hungarian_class_min_slack",
                (max(q.rows, 1),),
                (BLOCK,),
                (
                    q.C,
                    np.int32(q.rows),
                    np.int32(n),
                    np.int32(q.row0),
                    q.u_l,
                    q.v_l,
                    q.Vr_l,
                    q.Vc_l,
                    q.U,
                ),
            )
            self._k(
                q,
                "hungarian_min_reduce",
                (1,),
                (SCAN,),
                (q.U, np.int32(q.rows), q.theta_out, q.ctrl, np.int32(1 if one else 0)),
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
            for q in parts[1:]:
                self._wait(q, root)
                self._copy(q, q.theta, root.theta)
        for q in parts:
            self._k(
                q,
                "hungarian_dual_update_rows",
                grid_1d(q.rows),
                (BLOCK,),
                (np.int32(q.rows), np.int32(q.row0), q.Vr_l, q.theta_in, q.u_l),
            )
            self._k(
                q,
                "hungarian_dual_update_cols",
                grid_1d(n),
                (BLOCK,),
                (np.int32(n), q.Vc_l, q.theta_in, q.v_l, np.int32(0), q.v_l, q.cnt, q.Vc_l, st.eps),
            )

    def _solve(self) -> None:
        st = self._st
        n = st.n
        phase = 0
        stale = True  # the adjacency list must be (re)built before the next forward pass
        while True:
            with self._phase("optimality_check"):
                match = self._optimality_check(tree=0)
            self._note_match(phase, match)
            if match == n:
                break
            phase += 1
            self._counters["phases"] = phase
            self._check_phase_count(phase, match)
            while True:
                if stale:
                    with self._phase("compression"):
                        self._compress()
                    stale = False
                with self._phase("forward_pass"):
                    found = self._forward()
                if found:
                    break
                with self._phase("dual_update"):
                    self._dual_update()
                stale = True
                self._counters["dual_updates"] += 1
                if self._counters["dual_updates"] > (n + 1) * phase:
                    raise RuntimeError(f"{self.name}: too many dual updates")
            with self._phase("augment"):
                self._augment()

    def _collect(self) -> Assignment:
        import cupy as cp

        st = self._st
        root = st.parts[0]
        with cp.cuda.Device(root.device_id):
            perm = cp.asnumpy(root.Ar).astype(np.int64)
            v = cp.asnumpy(root.v)
        us = []
        for q in st.parts:
            with cp.cuda.Device(q.device_id):
                us.append(cp.asnumpy(q.u_l))
        return Assignment(perm, np.concatenate(us), v)
