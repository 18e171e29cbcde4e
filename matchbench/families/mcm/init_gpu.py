"""``init=cheap_gpu``: an initial maximal matching built on the device (``kernels/mcm/mcm_init.cu``).

The GPU solvers of the MCM family (APFB, APsB, G-PR, and ``mcm_gpu``, which picks among
them) run it on their own device copy of the graph, so a user who has a graph and wants
its maximum matching pays no host pass: the matching is built where the solver reads it,
timed with CUDA events (``t_init_s``), and ``t_e2e_s`` is that plus the solve.

Also here: the two small device reductions around an initial matching that the solvers
need (:func:`launch_stats` for the ``mcm_gpu`` selector, :func:`launch_unmatched_lists`
for G-PR's active-column lists), so that no host round trip separates initializer and
solver.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from matchbench.core.params import (
    MISSING,
    block_size,
    choice,
    config_defaults,
    non_negative_int,
    renamed,
)
from matchbench.core.solver import BaseInitializer
from matchbench.gpu.common import device_attributes

RULES = ("ks", "greedy")
#: Slots of the initializer's counter array (``kernels/mcm/mcm_init.cu``).
MATCHED, DEFERRED = 0, 1


def _module(dtype: Any) -> Any:
    from matchbench.gpu.kernels import get_module

    return get_module("mcm_init", ("-DMB_INDEX64",) if np.dtype(dtype) == np.int64 else ())


def _grid(n: int, threads: int) -> int:
    return max(1, min(-(-int(n) // threads), 1 << 20))


class CheapGPU(BaseInitializer):
    """A maximal matching built on the device, for the GPU solvers to start from.

    Parameters
    ----------
    rule : {"ks", "greedy"}
        ``greedy``: every column, in parallel, takes the first free row of its list by a
        compare-and-swap (the parallel form of the cheap matching), after the block-local
        pass (``local``). ``ks`` (the default): first one round of Karp-Sipser's degree-1
        rule on the input degrees (a column, then a row, of degree 1 takes its only
        neighbour; some maximum matching contains every such pair), then as ``greedy``.
    local : int
        Before the parallel greedy: thread t runs the sequential cheap matching on the
        columns and rows of the index range [t * local, (t + 1) * local), each column
        taking its first free row inside the range (``mcm_init_local``); 0 skips it. On
        graphs numbered along their geometry this keeps the sequential matching's
        pairing of consecutive vertices, which the parallel greedy alone breaks (it shifts
        strips by one, leaving few but very long augmenting paths); on randomly numbered
        graphs a range holds almost no edges.
    rounds : int
        Then this many proposal rounds (``mcm_init_propose``/``mcm_init_accept``): every
        unmatched column proposes to the first free row of its list and each row takes
        its lowest-numbered proposer, the choice the sequential cheap matching makes; 0
        skips them. The parallel greedy after them makes the matching maximal.
    long_min : int
        Columns with at least this many entries are matched after the others, a warp per
        column (``mcm_init_greedy_long``); 0 walks every list with one thread.
    threads_per_block : int
        The CUDA block size (a multiple of 32 in [32, 1024]).
    threads : int, optional
        Deprecated spelling of ``threads_per_block`` (one release; a ``FutureWarning``).

    Notes
    -----
    Both rules give a maximal matching: a column left unmatched found every row of its
    list taken, and rows never become free again (``kernels/mcm/mcm_init.cu``). Which
    maximal matching depends on the order in which concurrent compare-and-swaps land,
    so it can differ from run to run; every solver started from it is certified
    maximum all the same. Its cardinality is the ``objective_init`` column.

    Why it suits the solvers downstream: Karp-Sipser's pairs are never undone by an
    augmentation (they belong to a maximum matching), which matters on graphs with many
    degree-1 vertices (Kronecker graphs); processing hub columns last, by warps, keeps
    them from taking the only rows of low-degree columns (the "low degree first" order of
    Duff, Kaya & Ucar, ACM TOMS 38(2), 2011), and leaves fewer, shorter augmenting paths
    to APFB/APsB's BFS phases and fewer active columns to G-PR's pushes.
    """

    name: ClassVar[str] = "cheap_gpu"
    problem: ClassVar[str] = "mcm"
    device: ClassVar[str] = "gpu"
    kernel_families: ClassVar[tuple[str, ...]] = ("mcm_init",)

    @property
    def defaults(self) -> dict[str, Any]:  # type: ignore[override]
        """What the ``init`` label leaves out: the values of ``conf/init/cheap_gpu.yaml``."""
        return config_defaults("init", self.name)

    def __init__(
        self,
        *,
        rule: str,
        local: int,
        rounds: int,
        long_min: int,
        threads_per_block: int = MISSING,
        threads: int | None = MISSING,
    ) -> None:
        threads_per_block = renamed(
            "threads", threads, "threads_per_block", threads_per_block, group="init"
        )
        super().__init__(
            rule=choice("rule", rule, RULES),
            local=non_negative_int("local", local),
            rounds=non_negative_int("rounds", rounds),
            long_min=non_negative_int("long_min", long_min),
            threads_per_block=block_size("threads_per_block", threads_per_block),
        )
        self._key: tuple[Any, ...] | None = None
        self._cnt: Any = None
        self._deferred: Any = None
        self._kernels: dict[str, Any] = {}
        self._long_grid = 1

    def attach(self, n_rows: int, n_cols: int, dtype: Any) -> None:
        """Allocate the counters and the deferred-column queue and load the kernels, for an
        instance of this shape on the current device; outside any timed region."""
        import cupy as cp

        dev = cp.cuda.Device()
        key = (int(n_rows), int(n_cols), np.dtype(dtype).str, dev.id)
        if key == self._key:
            return
        module = _module(dtype)
        names = ("mcm_init_reset", "mcm_init_ks_cols", "mcm_init_ks_rows", "mcm_init_local",
                 "mcm_init_propose", "mcm_init_accept", "mcm_init_greedy",
                 "mcm_init_greedy_long")
        self._kernels = {k: module.get_function(k) for k in names}
        self._cnt = cp.zeros(4, dtype=np.uint64)
        self._deferred = cp.empty(max(int(n_cols), 1), dtype=dtype)
        self._want = cp.empty(max(int(n_cols), 1), dtype=dtype)
        self._prop = cp.empty(max(int(n_rows), 1), dtype=dtype)
        sms = int(device_attributes(dev.id)["MultiProcessorCount"])
        self._long_grid = sms * max(1, 2048 // self.params["threads_per_block"])
        self._key = key
        # Load every kernel once (launches with nothing to do), so no timed run loads one.
        idx = np.int64 if np.dtype(dtype) == np.int64 else np.int32
        z = idx(0)
        one = cp.zeros(2, dtype=dtype)
        k = self._kernels
        k["mcm_init_reset"]((1,), (32,), (one, one, one, z, z, self._cnt))
        k["mcm_init_ks_cols"]((1,), (32,), (one, one, one, one, z, self._cnt))
        k["mcm_init_ks_rows"]((1,), (32,), (one, one, one, one, z, self._cnt))
        k["mcm_init_local"]((1,), (32,), (one, one, one, one, z, z, np.int64(1), np.int64(0), self._cnt))
        k["mcm_init_propose"]((1,), (32,), (one, one, one, one, one, one, z, np.int64(0)))
        k["mcm_init_accept"]((1,), (32,), (one, one, one, one, z, self._cnt))
        k["mcm_init_greedy"]((1,), (32,), (one, one, one, one, z, np.int64(0), one, self._cnt))
        k["mcm_init_greedy_long"]((1,), (32,), (one, one, one, one, one, self._cnt))
        cp.cuda.get_current_stream().synchronize()

    def launch(
        self, *, col_ptr: Any, col_ind: Any, row_ptr: Any, row_ind: Any, row_match: Any,
        col_match: Any,
    ) -> int:
        """Queue the initializer on the current stream: reset both mate arrays, then build
        the matching in them. No host synchronization. Returns the number of launches."""
        if self._key is None:
            raise RuntimeError("cheap_gpu: launch() before attach()")
        nr, nc = int(row_match.shape[0]), int(col_match.shape[0])
        if (nr, nc) != self._key[:2]:
            raise ValueError(f"cheap_gpu attached for {self._key[:2]}, launched on {(nr, nc)}")
        idx = np.int64 if row_match.dtype == np.int64 else np.int32
        t = self.params["threads_per_block"]
        k, cnt = self._kernels, self._cnt
        k["mcm_init_reset"](
            (_grid(max(nr, nc), t),), (t,), (row_match, col_match, self._prop, idx(nr), idx(nc), cnt)
        )
        launches = 1
        if self.params["rule"] == "ks":
            k["mcm_init_ks_cols"]((_grid(nc, t),), (t,), (col_ptr, col_ind, row_match, col_match, idx(nc), cnt))
            k["mcm_init_ks_rows"]((_grid(nr, t),), (t,), (row_ptr, row_ind, row_match, col_match, idx(nr), cnt))
            launches += 2
        long_min, local = self.params["long_min"], self.params["local"]
        if local > 0:
            n_chunks = -(-max(nr, nc) // local)
            k["mcm_init_local"](
                (_grid(n_chunks, t),), (t,),
                (col_ptr, col_ind, row_match, col_match, idx(nr), idx(nc), np.int64(local),
                 np.int64(long_min), cnt),
            )
            launches += 1
        for _ in range(self.params["rounds"]):
            k["mcm_init_propose"](
                (_grid(nc, t),), (t,),
                (col_ptr, col_ind, row_match, col_match, self._prop, self._want, idx(nc),
                 np.int64(long_min)),
            )
            k["mcm_init_accept"](
                (_grid(nc, t),), (t,), (row_match, col_match, self._prop, self._want, idx(nc), cnt)
            )
            launches += 2
        k["mcm_init_greedy"](
            (_grid(nc, t),), (t,),
            (col_ptr, col_ind, row_match, col_match, idx(nc), np.int64(long_min), self._deferred, cnt),
        )
        launches += 1
        if long_min > 0:
            k["mcm_init_greedy_long"](
                (self._long_grid,), (t,), (col_ptr, col_ind, row_match, col_match, self._deferred, cnt)
            )
            launches += 1
        return launches

    def cardinality(self) -> int:
        """Pairs the last launch matched (reads the device: call it after the timed region)."""
        return int(self._cnt[MATCHED].get())

    def deferred(self) -> int:
        """Columns the last launch handed to the warp kernel."""
        return int(self._cnt[DEFERRED].get())


class DeviceMatching:
    """An initial matching that already lives on the device, for a GPU solver to start from.

    Pass it to ``prepare`` as the ``init`` of a solver with ``device_init = True``; its
    ``run`` copies the mate arrays into its own on the device (one device-to-device copy
    each, timed as the solver's ``init``), so no host round trip separates the producer
    of the matching (another kernel, a previous solve) from the solver. The arrays must
    have the instance's shapes and index dtype and must not change until ``run`` returns.

    ``matched`` is the pairs' count when the producer knows it; otherwise it is counted on
    the device after the run (:meth:`cardinality`).
    """

    device = "gpu"

    def __init__(self, row_match: Any, col_match: Any, matched: int | None = None) -> None:
        self.row_match, self.col_match = row_match, col_match
        self.matched = matched

    def attach(self, n_rows: int, n_cols: int, dtype: Any) -> None:
        shapes = (tuple(self.row_match.shape), tuple(self.col_match.shape))
        if shapes != ((int(n_rows),), (int(n_cols),)):
            raise ValueError(f"device matching has shapes {shapes}, the instance ({n_rows},) and ({n_cols},)")
        if self.row_match.dtype != np.dtype(dtype) or self.col_match.dtype != np.dtype(dtype):
            raise ValueError(f"device matching has dtype {self.row_match.dtype}/{self.col_match.dtype}, "
                             f"the instance's indices {np.dtype(dtype)}")

    def launch(self, *, row_match: Any, col_match: Any, **graph: Any) -> int:
        row_match[...] = self.row_match
        col_match[...] = self.col_match
        return 2

    def cardinality(self) -> int:
        if self.matched is None:
            return int((self.col_match >= 0).sum())
        return int(self.matched)


def launch_stats(col_ptr: Any, col_ind: Any, col_match: Any, out: Any, near: int = 32,
                 threads: int = 256) -> None:
    """Queue ``mcm_init_stats``: ``out`` (uint64[4], zeroed here) receives the matched
    columns, the largest column degree, the columns with an edge, and the columns with a
    row numbered within ``near`` of their own among their first ``near`` entries."""
    n = int(col_match.shape[0])
    idx = np.int64 if col_match.dtype == np.int64 else np.int32
    out.fill(0)
    _module(col_match.dtype).get_function("mcm_init_stats")(
        (_grid(n, threads),), (threads,), (col_ptr, col_ind, col_match, idx(n), np.int64(near), out)
    )


def launch_unmatched_lists(col_match: Any, list0: Any, list1: Any, length: Any, threads: int = 256) -> None:
    """Queue ``mcm_init_unmatched``: both lists get the unmatched columns, ``length`` (one
    64-bit slot, zeroed by the caller) their number."""
    n = int(col_match.shape[0])
    idx = np.int64 if col_match.dtype == np.int64 else np.int32
    _module(col_match.dtype).get_function("mcm_init_unmatched")(
        (_grid(n, threads),), (threads,), (col_match, idx(n), list0, list1, length)
    )
