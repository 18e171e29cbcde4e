"""CU-CLASS and CU-TREE: the GPU Hungarian algorithms of Date & Nagi 2016, one GPU or several.

The classes the configs name (``conf/algorithm/cu_class.yaml``, ``cu_tree.yaml``), from their
modules: the shared host driver :mod:`~matchbench.families.lap.hungarian_driver`, CU-CLASS
:mod:`~matchbench.families.lap.hungarian_class`, CU-TREE
:mod:`~matchbench.families.lap.hungarian_tree`.

:class:`CuClass` (``cu_class``) is the classical (Munkres) variant: the zero-slack edges
are compressed into a CSR adjacency list by a prefix sum, rebuilt only after a dual
update, and the dual update takes two stages (theta = least uncovered slack over the
matrix, then the duals). :class:`CuTree` (``cu_tree``) is Lawler's alternating tree
variant: one thread per column in the forward pass, a column slack array, theta by an O(n)
reduction of that array. Both run the augmenting path search of Sec. 4.3 in three passes:
a forward BFS from all unassigned rows (frontiers built by stream compaction), a reverse
pass from the columns marked "reverse", and an augmentation pass from the roots marked
"augment"; the races among threads leave several vertex-disjoint augmenting paths per
iteration (Props. 1 and 2; the race arguments are at the kernels in
``kernels/lap/hungarian.cu``). Both return the duals (u, v), int64 for integer costs (exact
arithmetic) and float64 for float costs, so the LAP verifier checks them directly.

Several GPUs (``devices`` > 1, Sec. 5): the cost matrix is split into ``devices`` blocks,
by rows for CU-CLASS and by columns for CU-TREE (Sec. 5 item 1), one block per GPU of
the host (``cupy.cuda.Device(i)``); device 0 is the root. What the paper does with MPI
between nodes is done here with device-to-device copies ordered by CUDA events. Per
device: the initial reduction (partial minima combined on the root), the matrix
compression (CU-CLASS; the partial CSR lists gathered on the root), the forward pass
expansion (CU-TREE; the rows reached gathered on the root, which contracts the frontier
and sends it back), theta (local minima reduced on the root) and the dual update. On the
root: the optimality check, the forward pass of CU-CLASS, and the reverse and augmentation
passes. ``allow_shared_device: true`` places several blocks on one GPU when the host has
fewer GPUs than ``devices`` (device ``q % count``), so that the multi-device code path
runs, and is tested, on one GPU; by default such a run is skipped with the reason.

Host synchronization. The host reads the device's flags after the optimality check (the
match count), after every batch of BFS levels (frontier size and "reverse" flag) and,
for CU-CLASS, after the per-row counts of a matrix compression (to size the adjacency
list). A batch queues ``b`` levels; levels queued past the end of the BFS find an empty
frontier and change nothing. Batches grow 2, 4, ... up to ``batch``. With ``fuse`` (the
default) the last block of each expansion launch builds the next frontier, one launch per
level; ``fuse: false, batch: 1`` is the paper's loop (a contraction kernel and a host check
after every level). Phase times (``timings()``) come from CUDA
events recorded at phase boundaries on the root's stream and read once after the solve:
they add no host synchronization.

Persistent CU-TREE (``persistent: true``, the default of ``cu_tree``; beyond the paper).
The whole solve loop after the initial reduction (optimality checks, BFS levels with
expansion and contraction, theta and the dual update, reverse and augmentation passes,
phase after phase until every row is assigned) runs in one cooperative launch of
``hungarian_tree_persistent``, with grid-wide barriers where the host loop has kernel
boundaries and flag reads; the host reads the device's counters and error code once, after
the solve. The grid is sized to be co-resident (occupancy calculator; the cooperative
launch refuses a grid that is not). Phase times cannot be split inside one kernel: this
mode reports ``initial_reduction`` and ``solve_loop`` (all the rest); ``persistent: false``
runs the host loop above, with the paper's phase split. One device only.
"""

from __future__ import annotations

from matchbench.families.lap.hungarian_class import CuClass
from matchbench.families.lap.hungarian_driver import KERNELS, PHASES, batch_schedule, split
from matchbench.families.lap.hungarian_tree import CuTree, persistent_smem_bytes

__all__ = [
    "KERNELS",
    "PHASES",
    "CuClass",
    "CuTree",
    "batch_schedule",
    "persistent_smem_bytes",
    "split",
]
