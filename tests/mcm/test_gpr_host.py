"""G-PR's host side on the CPU: the GETITERGR schedule, batching helpers, the config, and
the host loop driving a Python emulation of the kernels under random interleavings.

The emulation (:class:`EmulatedDevice`) re-states each kernel of ``kernels/mcm/gpr.cu`` as
per-item Python generators that yield between shared-memory accesses, and steps all
items of a launch in a random order, so that reads go stale and writes race the way
the paper's race arguments must tolerate (a harsher schedule than a GPU's warps). It
checks the algorithm and the host loop (batching, guards, stamps, shrink, graph
replay), not the CUDA code itself: that runs in ``tests/gpu/test_gpr_gpu.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf
from scipy.sparse.csgraph import maximum_bipartite_matching

from matchbench.core.params import configured
from matchbench.families.mcm import gpr_device, gpr_loop
from matchbench.families.mcm.cheap import cheap_matching
from matchbench.families.mcm.gpr import GPR
from matchbench.families.mcm.gpr_loop import (
    K_VALUES,
    SHRINK_MIN,
    STRATEGIES,
    VARIANTS,
    GPRLoop,
    batch_sizes,
    list_blocks,
    power_of_two_parts,
    relabel_interval,
)
from matchbench.families.mcm.problem import MCM
from matchbench.graphs.bipartite import BipartiteGraph, Matching

ROOT = Path(__file__).resolve().parents[2]

# -- GETITERGR and helpers -------------------------------------------------------------


@pytest.mark.parametrize("k", K_VALUES)
def test_fix_interval_ignores_max_level(k):
    want = max(1, int(np.ceil(k - 1e-9)))
    assert [relabel_interval("fix", k, ml) for ml in (2, 10, 1000)] == [want] * 3


@pytest.mark.parametrize("k", K_VALUES)
@pytest.mark.parametrize("max_level", [2, 4, 10, 37, 1000])
def test_adaptive_interval_is_ceil_of_k_max_level(k, max_level):
    got = relabel_interval("adaptive", k, max_level)
    assert got >= 1
    assert got >= k * max_level - 1e-9
    assert got - 1 < max(k * max_level, 1)


def test_interval_values():
    assert relabel_interval("fix", 0.3, 50) == 1
    assert relabel_interval("fix", 1.5, 50) == 2
    assert relabel_interval("adaptive", 0.7, 10) == 7  # not 8: 0.7 * 10 rounds up to 7.0...01
    assert relabel_interval("adaptive", 0.3, 2) == 1
    assert relabel_interval("adaptive", 1.5, 3) == 5
    assert relabel_interval("adaptive", 2, 0) == 2  # maxLevel is at least 1


@pytest.mark.parametrize(("strategy", "k"), [("sometimes", 1.0), ("fix", 0.0), ("adaptive", -1)])
def test_interval_rejects_bad_parameters(strategy, k):
    with pytest.raises(ValueError):
        relabel_interval(strategy, k, 4)


def test_power_of_two_parts():
    for k in range(1, 300):
        parts = power_of_two_parts(k)
        assert sum(parts) == k
        assert parts == sorted(set(parts), reverse=True)
        assert all(p & (p - 1) == 0 for p in parts)
    with pytest.raises(ValueError):
        power_of_two_parts(0)


def test_batch_sizes_double_to_cap():
    it = batch_sizes(3, 20)
    assert [next(it) for _ in range(5)] == [3, 6, 12, 20, 20]
    it = batch_sizes(500, 64)
    assert next(it) == 64


def test_list_blocks_power_of_two_and_capped():
    assert list_blocks(0, 256, 64) == 1
    assert list_blocks(256, 256, 64) == 1
    assert list_blocks(257, 256, 64) == 2
    assert list_blocks(5 * 256, 256, 64) == 8
    assert list_blocks(10**9, 256, 64) == 64


def test_ctl_slots_match_kernel_source():
    src = (ROOT / "kernels" / "mcm" / "gpr.cu").read_text()
    defines = dict(re.findall(r"#define GPR_CTL_(\w+) (\d+)", src))
    assert int(defines["SEQ"]) == gpr_loop.CTL_SEQ
    assert int(defines["LOOP"]) == gpr_loop.CTL_LOOP
    assert int(defines["GUARD"]) == gpr_loop.CTL_GUARD
    assert int(defines["BGUARD"]) == gpr_loop.CTL_BGUARD
    assert int(defines["LEVEL"]) == gpr_loop.CTL_LEVEL
    assert int(defines["LEN"]) == gpr_loop.CTL_LEN
    assert int(defines["SIZE"]) == gpr_loop.CTL_SIZE
    names = set(re.findall(r"__global__ void (?:__launch_bounds__\(\w+\)\s+)?(gpr_\w+)\(", src))
    assert names == set(gpr_device.KERNELS)


def test_persistent_slots_match_kernel_source():
    src = (ROOT / "kernels" / "mcm" / "gpr.cu").read_text()
    defines = {k: int(v) for k, v in re.findall(r"#define GPR_P_(\w+) (\d+)", src)}
    assert defines["ABORT"] == gpr_device.P_ABORT
    assert defines["LEN"] == gpr_device.P_LEN
    assert defines["RELABEL_NS"] == gpr_device.P_RELABEL_NS
    assert defines["SIZE"] == gpr_device.P_SIZE
    assert defines["MAX_THREADS"] == gpr_device.P_MAX_THREADS
    names = {
        "push_kernels": "PUSHES",
        "global_relabels": "RELABELS",
        "bfs_levels": "LEVELS",
        "max_level": "MAXLEVEL",
        "shrinks": "SHRINKS",
        "grid_barriers": "SYNCS",
        "loops": "LOOPS",
    }
    assert {k: defines[v] for k, v in names.items()} == gpr_device.P_COUNTERS
    assert (defines["LOCAL"], defines["STOPS"]) == (gpr_device.P_LOCAL, gpr_device.P_STOPS)
    # every slot the kernel names lies inside the block the driver allocates
    slots = {
        k: v
        for k, v in defines.items()
        if k not in ("SIZE", "MAX_THREADS", "WARP_MIN", "BLOCK_MIN")
    }
    assert max(slots.values()) < defines["SIZE"], slots
    assert int(re.search(r"#define GPR_SHRINK_MIN (\d+)", src).group(1)) == gpr_loop.SHRINK_MIN
    # Both index widths must fit the slots: the largest slot is below the block's size.
    assert max(defines[v] for v in names.values()) < defines["SIZE"]


def test_ring_and_batches_fit():
    assert gpr_loop.RING_SIZE & (gpr_loop.RING_SIZE - 1) == 0
    assert 2 * gpr_loop.PUSH_BATCH + gpr_loop.BFS_BATCH + 2 < gpr_loop.RING_SIZE


# -- config and constructor -------------------------------------------------------------


def test_config_defaults_are_the_papers_best_in_the_persistent_kernel():
    cfg = OmegaConf.load(ROOT / "conf" / "algorithm" / "gpr.yaml")
    solver = instantiate(cfg)
    assert isinstance(solver, GPR)
    assert solver.name == "gpr" == Path(cfg_path := ROOT / "conf/algorithm/gpr.yaml").stem
    assert cfg_path.is_file()
    # mcm_init: the lists of unmatched columns when the matching starts on the device
    assert (solver.problem, solver.device, solver.kernel_families) == ("mcm", "gpu", ("gpr", "mcm_init"))
    assert solver.params == {
        "variant": "shr",
        "strategy": "adaptive",
        "k": 0.7,
        "threads_per_block": 512,
        "launch": "graph",
        "scan": "tiered",
        "persistent": True,
        "blocks_per_sm": 2,
        "relabel_stop": "active",
        "local_max": 512,
    }
    # the YAML file is the one place of the defaults: the class has none of its own
    assert configured(GPR).params == solver.params
    with pytest.raises(TypeError, match="variant"):
        GPR()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_config_sweep_overrides(variant, strategy):
    cfg = OmegaConf.load(ROOT / "conf" / "algorithm" / "gpr.yaml")
    solver = instantiate(cfg, variant=variant, strategy=strategy, k=1.5)
    assert (
        solver.variant() == f"blocks_per_sm=2,k=1.5,launch=graph,local_max=512,persistent=True,"
        f"relabel_stop=active,scan=tiered,strategy={strategy},threads_per_block=512,variant={variant}"
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"variant": "fast"},
        {"strategy": "often"},
        {"k": 0},
        {"threads_per_block": 100},
        {"threads_per_block": 2048},
        {"threads": 100},  # the deprecated spelling, checked as the new one
        {"launch": "async"},
        {"scan": "block"},
        {"scan": "warp"},  # the persistent kernel (the default) has only tiered walks
        {"persistent": False, "scan": "tiered"},
        {"persistent": "yes"},
        {"blocks_per_sm": 0},
        {"relabel_stop": "early"},
        {"relabel_stop": "active", "persistent": False},  # the host loop's relabel is full
        {"local_max": -1},
        {"local_max": True},
        {"local_max": 64, "persistent": False},
    ],
)
@pytest.mark.filterwarnings("ignore:algorithm.threads is deprecated:FutureWarning")
def test_constructor_rejects_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        configured(GPR, **kwargs)


def test_threads_is_the_deprecated_spelling_of_threads_per_block():
    with pytest.warns(FutureWarning, match=r"^algorithm\.threads is deprecated; use algorithm\.threads_per_block$"):
        solver = configured(GPR, threads=256)
    assert solver.params["threads_per_block"] == 256 and "threads" not in solver.params


def test_host_loop_defaults():
    """persistent: false keeps the host loop's defaults (the paper's kernels, warp scan,
    256 threads), which earlier benchmark runs measured."""
    params = configured(GPR, persistent=False, scan=None).params
    assert (params["scan"], params["threads_per_block"], params["persistent"]) == ("warp", 256, False)
    assert (params["relabel_stop"], params["local_max"]) == ("full", 0)
    assert configured(GPR, persistent=False, scan="thread").params["scan"] == "thread"


def test_constructor_does_not_import_cupy():
    import subprocess
    import sys

    code = (
        "import sys; from matchbench.core.params import configured; "
        "from matchbench.families.mcm.gpr import GPR; configured(GPR); "
        "assert 'cupy' not in sys.modules, 'cupy imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# -- kernel emulation ----------------------------------------------------------------------

SEQ, LOOP, GUARD, BGUARD, LEVEL, LEN = (
    gpr_loop.CTL_SEQ,
    gpr_loop.CTL_LOOP,
    gpr_loop.CTL_GUARD,
    gpr_loop.CTL_BGUARD,
    gpr_loop.CTL_LEVEL,
    gpr_loop.CTL_LEN,
)


def _failed(ring, mask, guard):
    return guard >= 0 and ring[guard & mask] != guard


def _chain_guard(ctl, slot, j):
    return int(ctl[slot]) if j == 0 else int(ctl[SEQ]) + j - 1


def _scan(nbr, begin, end, psi_row, psi_v, inf, out, group=1):
    """gpr_min_row (group 1) or gpr_warp_min_row (group 32), yielding before every read.

    Neighbours are read ``group`` at a time; the lowest label of a group wins (ties to
    the earliest) and the early exit is tested after each group.
    """
    psi_min, best = inf, -1
    for base in range(begin, end, group):
        labels = []
        for e in range(base, min(base + group, end)):
            u = int(nbr[e])
            yield
            labels.append((int(psi_row[u]), u))
        p, u = min(labels, key=lambda x: x[0])  # min keeps the first of equal labels
        if p < psi_min:
            psi_min, best = p, u
        if psi_min == psi_v - 1:
            break
    out[:] = [psi_min, best]


def _is_active(mu_row, mu_col, v):
    mv = int(mu_col[v])
    return mv == -1 or (mv >= 0 and int(mu_row[mv]) != v)


def k_init_relabel(dev, m, n, mu, psi, inf, ring, mask, ctl):
    guard = int(ctl[GUARD])
    ok = not _failed(ring, mask, guard)
    ctl[LEVEL] = 0
    ctl[BGUARD] = -1 if ok else guard
    if ok:
        ctl[GUARD] = -1
    if not ok:
        return []

    def item(i):
        psi[i] = 0 if (i < m and mu[i] == -1) else inf
        yield

    return [item(i) for i in range(int(m) + int(n))]


def k_gr_level(dev, m, row_ptr, row_ind, mu_row, mu_col, psi_row, psi_col, inf, ring, mask, ctl, j):
    if _failed(ring, mask, _chain_guard(ctl, BGUARD, j)):
        return []
    stamp = int(ctl[SEQ]) + j
    level = int(ctl[LEVEL]) + 2 * j

    def item(u):
        if psi_row[u] != level:
            return
        for e in range(row_ptr[u], row_ptr[u + 1]):
            v = int(row_ind[e])
            yield
            if psi_col[v] != inf:
                continue
            psi_col[v] = level + 1
            yield
            w = int(mu_col[v])
            if w > -1 and mu_row[w] == v:
                yield
                psi_row[w] = level + 2
                dev.found = True

    dev.publish = stamp
    return [item(u) for u in range(int(m))]


def k_push_first(
    dev, n, col_ptr, col_ind, mu_row, mu_col, psi_row, psi_col, inf, ring, mask, ctl, j, group=1
):
    if _failed(ring, mask, _chain_guard(ctl, GUARD, j)):
        return []
    stamp = int(ctl[SEQ]) + j

    def item(v):
        if not _is_active(mu_row, mu_col, v):
            return
        dev.found = True
        out = [0, 0]
        yield from _scan(
            col_ind, col_ptr[v], col_ptr[v + 1], psi_row, int(psi_col[v]), inf, out, group
        )
        psi_min, u = out
        yield
        if psi_min < inf:
            mu_row[u] = v
            yield
            mu_col[v] = u
            yield
            psi_col[v] = psi_min + 1
            yield
            psi_row[u] = psi_min + 2
        else:
            mu_col[v] = -2

    dev.publish = stamp
    return [item(v) for v in range(int(n))]


def k_init_active(dev, ac, ap, mu_row, mu_col, ia, ring, mask, ctl, j):
    if _failed(ring, mask, _chain_guard(ctl, GUARD, j)):
        return []
    stamp = int(ctl[SEQ]) + j
    loop = int(ctl[LOOP]) + j

    def item(i):
        v = int(ap[i])
        yield
        if v != -1 and _is_active(mu_row, mu_col, v):
            ac[i] = v
        c = int(ac[i])
        yield
        if c != -1:
            ia[c] = loop
            dev.found = True

    dev.publish = stamp
    return [item(i) for i in range(int(ctl[LEN]))]


def k_push_active(
    dev,
    col_ptr,
    col_ind,
    mu_row,
    mu_col,
    psi_row,
    psi_col,
    inf,
    ac,
    ap,
    ia,
    ring,
    mask,
    ctl,
    j,
    group=1,
):
    if _failed(ring, mask, int(ctl[SEQ]) + j):
        return []
    loop = int(ctl[LOOP]) + j

    def item(i):
        v = int(ac[i])
        if v == -1:
            ap[i] = -1
            return
        out = [0, 0]
        yield from _scan(
            col_ind, col_ptr[v], col_ptr[v + 1], psi_row, int(psi_col[v]), inf, out, group
        )
        psi_min, u = out
        yield
        if psi_min < inf:
            w = int(mu_row[u])
            yield
            if w == -1 or ia[w] != loop:
                mu_row[u] = v
                yield
                mu_col[v] = u
                yield
                psi_col[v] = psi_min + 1
                yield
                psi_row[u] = psi_min + 2
                ap[i] = w
            else:
                ap[i] = -1
        else:
            mu_col[v] = -2
            ac[i] = -1
            ap[i] = -1

    return [item(i) for i in range(int(ctl[LEN]))]


def k_compact(dev, ac, pos, out, ctl):
    for i in range(int(ctl[LEN])):
        if ac[i] != -1:
            out[pos[i] - 1] = ac[i]
    return []


def k_shrink_len(dev, pos, ring, mask, ctl):
    length = int(ctl[LEN])
    new = int(pos[length - 1]) if length > 0 else 0
    ctl[LEN] = new
    ring[mask + 1] = new
    return []


def k_advance(dev, ctl, count, loops, levels, slot):
    seq = int(ctl[SEQ])
    ctl[SEQ] = seq + count
    ctl[LOOP] += loops
    ctl[LEVEL] += levels
    ctl[slot] = seq + count - 1
    return []


def k_fix_matching(dev, n, mu_row, mu_col):
    for v in range(int(n)):
        mv = int(mu_col[v])
        if mv < 0 or mu_row[mv] != v:
            mu_col[v] = -1
    return []


EMULATED = {
    "gpr_init_relabel": k_init_relabel,
    "gpr_gr_level": k_gr_level,
    # The warp kernels do the same per-edge steps; the BFS level's order of edges does not
    # matter to its outcome, the pushes' minimum search reads 32 neighbours at a time.
    "gpr_gr_level_warp": k_gr_level,
    "gpr_push_first": k_push_first,
    "gpr_push_first_warp": lambda dev, *a: k_push_first(dev, *a, group=32),
    "gpr_init_active": k_init_active,
    "gpr_push_active": k_push_active,
    "gpr_push_active_warp": lambda dev, *a: k_push_active(dev, *a, group=32),
    "gpr_compact": k_compact,
    "gpr_shrink_len": k_shrink_len,
    "gpr_advance": k_advance,
    "gpr_fix_matching": k_fix_matching,
}


class EmulatedDevice:
    """The launcher interface of :class:`GPRLoop` over NumPy and the emulated kernels.

    Launches run at once (the stream order is program order). ``graph`` mode records a
    batch's launches on first use of its key and replays the recording afterwards,
    which fails loudly in the checks below if a batch depended on host state missing
    from its key.
    """

    xp = np

    def __init__(self, ring, rng, mode="plain", threads_per_block=32, max_blocks=4):
        self.ring = ring
        self.rng = rng
        self.mode = mode
        self.threads_per_block = threads_per_block
        self.max_blocks = max_blocks
        self.graphs = {}
        self._recording = None
        self.launches = 0
        self.replays = 0

    def count_array_ops(self, k):
        pass

    def launch(self, name, n_items, args):
        if n_items > 0:
            self._submit(name, args)

    def launch_blocks(self, name, blocks, args):
        self._submit(name, args)

    def _submit(self, name, args):
        if self._recording is not None:
            self._recording.append((name, args))
        else:
            self._execute(name, args)

    def _execute(self, name, args):
        self.launches += 1
        self.found = False
        self.publish = None
        items = EMULATED[name](self, *args)
        live = list(items)
        # Random interleaving at every yield point.
        while live:
            i = int(self.rng.integers(len(live)))
            try:
                next(live[i])
            except StopIteration:
                live[i] = live[-1]
                live.pop()
        if self.publish is not None and self.found:
            self.ring[self.publish & (gpr_loop.RING_SIZE - 1)] = self.publish

    def batch(self, key, enqueue):
        if self.mode == "plain":
            enqueue()
            return
        if key not in self.graphs:
            self._recording = []
            try:
                enqueue()
            finally:
                self.graphs[key], self._recording = self._recording, None
        self.replays += 1
        for name, args in self.graphs[key]:
            self._execute(name, args)

    def snapshot(self):
        return self.ring.copy()

    def read(self, handle):
        return handle

    def mark(self):
        return 0.0

    def elapsed(self, a, b):
        return b - a


def emulate(graph, init, variant, strategy, k, seed, mode="plain", scan="thread"):
    """Run GPRLoop on the emulated device; returns (Matching, stats, device)."""
    m, n = graph.n_rows, graph.n_cols
    idx = np.int64
    col_match = np.full(n, -1, dtype=np.int64) if init is None else init.col_match.astype(np.int64)
    row_match = np.full(m, -1, dtype=np.int64)
    matched = np.flatnonzero(col_match >= 0)
    row_match[col_match[matched]] = matched
    unmatched = np.flatnonzero(col_match < 0)
    lists = [np.full(max(n, 1), -1, dtype=idx) for _ in range(2)]
    for lst in lists:
        lst[: unmatched.size] = unmatched
    ctl = np.zeros(gpr_loop.CTL_SIZE, dtype=np.int32)
    ctl[[GUARD, BGUARD]] = -1
    ctl[LEN] = unmatched.size
    arrays = {
        "row_ptr": graph.row_ptr.astype(idx),
        "row_ind": graph.row_ind.astype(idx),
        "col_ptr": graph.col_ptr.astype(idx),
        "col_ind": graph.col_ind.astype(idx),
        "mu": np.concatenate([row_match, col_match]).astype(idx),
        "psi": np.zeros(m + n, dtype=idx),
        "ia": np.full(max(n, 1), -1, dtype=np.int32),
        "lists": lists,
        "ring": np.full(gpr_loop.RING_SIZE + 1, -1, dtype=np.int32),
        "ctl": ctl,
    }
    dev = EmulatedDevice(arrays["ring"], np.random.default_rng(seed), mode=mode)
    loop = GPRLoop(
        dev,
        arrays,
        m=m,
        n=n,
        n_active=int(unmatched.size),
        variant=variant,
        strategy=strategy,
        k=k,
        idx=idx,
        scan=scan,
    )
    stats = loop.solve()
    mu = arrays["mu"]
    return Matching(row_match=mu[:m].copy(), col_match=mu[m:].copy()), stats, dev


def random_graph(rng, kind):
    """Small graphs of the test families: ER (square/rectangular, isolated vertices),
    a grid, a long path (deep BFS), and a star-heavy power-law-ish graph."""
    if kind == "er":
        m, n = int(rng.integers(1, 40)), int(rng.integers(1, 40))
        p = float(rng.choice([0.03, 0.08, 0.15, 0.4]))
        mask = rng.random((m, n)) < p
        r, c = np.nonzero(mask)
        return BipartiteGraph.from_coo(r, c, m, n)
    if kind == "grid":
        a, b = int(rng.integers(2, 8)), int(rng.integers(2, 8))
        idx = np.arange(a * b).reshape(a, b)
        r = [idx[:, :-1].ravel(), idx[:-1, :].ravel()]
        c = [idx[:, 1:].ravel(), idx[1:, :].ravel()]
        r, c = np.concatenate(r + c), np.concatenate(c + r)
        return BipartiteGraph.from_coo(r, c, a * b, a * b)
    if kind == "path":
        L = int(rng.integers(5, 40))
        r = np.concatenate([np.arange(L), np.arange(L - 1)])
        c = np.concatenate([np.arange(L), np.arange(1, L)])
        return BipartiteGraph.from_coo(r, c, L, L)
    if kind == "hubs":
        m = n = int(rng.integers(10, 40))
        deg = np.minimum(rng.zipf(1.6, size=n), m)
        r = np.concatenate([rng.choice(m, size=d, replace=False) for d in deg])
        c = np.repeat(np.arange(n), deg)
        return BipartiteGraph.from_coo(r, c, m, n)
    raise ValueError(kind)


def check(graph, matching):
    v = MCM().verify(graph, matching)
    assert v.verified, v.reason
    want = int(np.count_nonzero(maximum_bipartite_matching(graph.to_scipy(), perm_type="row") >= 0))
    assert matching.cardinality == want


CONFIGS = [(v, s, k) for v in VARIANTS for s in STRATEGIES for k in K_VALUES]


@pytest.mark.parametrize("case", range(len(CONFIGS)))
def test_emulated_gpr_every_configuration(case):
    """Each (variant, strategy, k) on 5 random graphs (orig + RCP), in both launch modes."""
    variant, strategy, k = CONFIGS[case]
    rng = np.random.default_rng(1000 + case)
    kinds = ["er", "grid", "path", "hubs", "er"]
    for t, kind in enumerate(kinds):
        g = random_graph(rng, kind)
        if t % 2:
            g = g.permuted(int(rng.integers(1 << 30)))
        init = cheap_matching(g) if t % 3 else None
        mode = "graph" if (case + t) % 2 else "plain"
        scan = "warp" if (case + t // 2) % 2 else "thread"
        got, stats, _ = emulate(g, init, variant, strategy, k, case * 10 + t, mode, scan)
        check(g, got)
        assert stats["global_relabels"] >= (
            1 if (init is None or init.cardinality < g.n_cols) else 0
        )


def test_emulated_shrink_path_and_ring_wrap(monkeypatch):
    """Lists of >= 512 columns (so the shrink runs), a small ring so stamps wrap, small
    batches so BFS and push batches chain, and graph replay."""
    monkeypatch.setattr(gpr_loop, "RING_SIZE", 64)
    monkeypatch.setattr(gpr_loop, "PUSH_BATCH", 8)
    monkeypatch.setattr(gpr_loop, "BFS_BATCH", 16)
    rng = np.random.default_rng(7)
    n = 700
    # A union of long paths with an empty initial matching: >= 512 active columns,
    # deep BFS.
    r, c = [], []
    for start in range(0, n, 70):
        L = 70
        r += list(range(start, start + L)) + list(range(start, start + L - 1))
        c += list(range(start, start + L)) + list(range(start + 1, start + L))
    g = BipartiteGraph.from_coo(np.array(r), np.array(c), n, n).permuted(3)
    for variant, strategy, k, scan in [
        ("shr", "adaptive", 0.7, "warp"),
        ("shr", "fix", 2, "thread"),
        ("noshr", "adaptive", 1.5, "warp"),
    ]:
        got, stats, dev = emulate(
            g, None, variant, strategy, k, int(rng.integers(99)), mode="graph", scan=scan
        )
        check(g, got)
        assert stats["global_relabels"] >= 1
        if variant == "shr":
            assert stats["shrinks"] >= 1
            assert stats["final_list_length"] < n
        assert dev.replays > 0


@pytest.mark.parametrize("k", [0.3, 1.0, 1.5])
def test_emulated_shrink_with_frequent_relabels(k):
    """(fix, k <= 1): a relabel before every iteration, the shrink iteration being the
    only one of its interval; lists of >= 512 columns that shrink below 512."""
    from matchbench.graphs import generators

    g = generators.delaunay(10, seed=1)
    got, stats, _ = emulate(g, None, "shr", "fix", k, seed=3, mode="graph")
    check(g, got)
    assert stats["shrinks"] >= 1
    assert stats["final_list_length"] < SHRINK_MIN
    # A relabel before each iteration: the loop's iterations and relabels interleave.
    assert stats["global_relabels"] >= stats["loops"] // 2


def test_emulated_repeated_runs_same_cardinality():
    rng = np.random.default_rng(11)
    g = random_graph(rng, "hubs").permuted(5)
    init = cheap_matching(g)
    cards = set()
    for seed in range(6):
        got, _, _ = emulate(g, init, "shr", "adaptive", 0.7, seed=seed)
        check(g, got)
        cards.add(got.cardinality)
    assert len(cards) == 1


def test_emulated_trivial_instances():
    # No unmatched column: only FIXMATCHING runs.
    g = BipartiteGraph.from_coo(np.array([0, 1]), np.array([0, 1]), 2, 2)
    init = cheap_matching(g)
    got, stats, _ = emulate(g, init, "shr", "adaptive", 0.7, seed=0)
    check(g, got)
    assert stats["global_relabels"] == 0
    # Columns without edges; rows without edges; no rows at all.
    for m, n, r, c in [(3, 4, [0, 2], [1, 1]), (5, 2, [4], [0]), (0, 3, [], [])]:
        g = BipartiteGraph.from_coo(np.array(r, dtype=int), np.array(c, dtype=int), m, n)
        for variant in VARIANTS:
            got, _, _ = emulate(g, None, variant, "fix", 1, seed=1)
            check(g, got)


def test_verifier_rejects_a_broken_emulated_answer():
    """Mutation check on this test's own pipeline: drop one matched pair."""
    rng = np.random.default_rng(5)
    g = random_graph(rng, "grid")
    got, _, _ = emulate(g, None, "first", "adaptive", 0.7, seed=2)
    check(g, got)
    j = int(np.flatnonzero(got.col_match >= 0)[0])
    broken = got.copy()
    broken.row_match[broken.col_match[j]] = -1
    broken.col_match[j] = -1
    assert not MCM().verify(g, broken).verified
