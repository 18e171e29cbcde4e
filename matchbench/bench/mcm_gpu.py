"""GPU MCM benchmark: the eight APFB/APsB variants against the CPU references.

::

    python -m matchbench.bench.mcm_gpu --suite seed --out OUT [--max-scale 21]
    python -m matchbench.bench.mcm_gpu --report OUT/results.jsonl [...] --md report.md

The seed-family suite (Kronecker logn 18-21, Delaunay n20-23, random geometric n20-23,
grids 2^20-2^22, each original and RCP-permuted) is generated in parallel by a process
pool. Each instance starts from the shared cheap matching (timed apart). On the GPU:
the eight variants {APFB, APsB} x {GPUBFS, GPUBFS-WR} x {CT, MT} (the paper's Table 1)
under one sync mode, for each frontier mode in ``--frontiers`` (``scan``: the paper's
kernels; ``queue``: frontier queues), plus the other sync modes for the scan WR-CT
variants; one warm-up and
``--reps`` timed runs each (CUDA events), every answer checked by the König
certificate, one extra instrumented run per variant for the edges scanned. Meanwhile the
CPU references (scipy HK, numba HK, PFP, PR) run one at a time per worker in
subprocesses with a timeout, so a reference that runs too long is reported as
``>T s``. Results are JSON lines (one per run), written as they come; ``--report`` turns
them into the markdown tables of ``docs/benchmarks/mcm.md``.
"""

from __future__ import annotations

import argparse
import math
import queue
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from matchbench.bench import common

#: family -> scales (log2 of the vertex count) of the seed-family suite.
SUITES: dict[str, dict[str, list[int]]] = {
    "seed": common.SEED_SUITE,
    # A few small instances, to check the pipeline end to end.
    "tiny": {"kronecker": [12], "delaunay": [12], "rgg": [12], "grid": [12]},
}

#: Deveci et al. 2013, Table 2: APFB-GPUBFS-WR-CT on a Tesla C2050, seconds after the
#: cheap matching, for the matrices of our families: (family, scale, rcp) -> seconds.
PAPER_C2050 = {
    ("kronecker", 21, False): 0.99,  # kron_g500-logn21
    ("kronecker", 21, True): 3.71,
    ("delaunay", 23, False): 0.96,  # delaunay_n23
    ("delaunay", 23, True): 0.90,
    ("delaunay", 24, False): 1.98,  # delaunay_n24
    ("delaunay", 24, True): 1.86,
    ("rgg", 24, False): 3.68,  # rgg_n_2_24_s0
    ("rgg", 24, True): 2.20,
}

REFS = ("scipy_hk", "hk", "pfp", "pr")
VARIANTS = [
    (alg, bfs, threads)
    for alg in ("apfb", "apsb")
    for bfs in ("plain", "wr")
    for threads in ("ct", "mt")
]
SYNC_STUDY = [("apfb", "wr", "ct"), ("apsb", "wr", "ct")]


def variant_label(alg: str, bfs: str, threads: str) -> str:
    return f"{alg.upper().replace('APSB', 'APsB')}-{'GPUBFS-WR' if bfs == 'wr' else 'GPUBFS'}-{threads.upper()}"


# -- GPU -------------------------------------------------------------------------------


Config = tuple[str, str, str, str, str]  # (algorithm, bfs, threads, sync, frontier)


def gpu_configs(
    which: str, table_sync: str, frontiers: tuple[str, ...] = ("scan",)
) -> list[Config]:
    """Configurations to run: the eight variants per frontier mode, then the sync study.

    The sync study (the WR-CT variants under every sync mode) uses the paper's frontier
    scan; it is skipped where ``frontiers`` leaves ``scan`` out.
    """
    out: list[Config] = []
    if which in ("all", "table1"):
        out += [(a, b, t, table_sync, f) for f in frontiers for a, b, t in VARIANTS]
    if which in ("all", "sync") and "scan" in frontiers:
        out += [
            (a, b, t, s, "scan")
            for a, b, t in SYNC_STUDY
            for s in ("level", "batched", "graph")
            if s != table_sync or which == "sync"
        ]
    return out


def parse_config(text: str) -> Config:
    """``ALG:BFS:THREADS:SYNC:FRONTIER`` (e.g. ``apfb:wr:ct:batched:scan``) as a Config."""
    parts = tuple(text.split(":"))
    if len(parts) != 5 or parts[:3] not in VARIANTS:
        raise ValueError(f"bad configuration {text!r}: want ALG:BFS:THREADS:SYNC:FRONTIER")
    return parts  # type: ignore[return-value]


def config_label(cfg: Config) -> str:
    """E.g. ``APFB-GPUBFS-WR-CT (batched, queue)``."""
    return f"{variant_label(*cfg[:3])} ({cfg[3]}, {cfg[4]})"


def bench_gpu_instance(
    inst: dict[str, Any],
    configs: list[Config],
    reps: int,
    sink,
    edges_sync: str | None = None,
    verify_workers: int = 4,
) -> None:
    """All GPU configurations on one instance; one JSON row per timed run.

    The König certificates are checked by a few threads while the GPU goes on (the
    verifier's numba kernels release the GIL): on the largest instances a certificate
    takes longer than a solve. Every run is still verified; a row is written once its
    certificate is in.
    """
    import cupy as cp

    from matchbench.problems.mcm import MCM

    verifier = ThreadPoolExecutor(max_workers=verify_workers)

    def certify(row: dict[str, Any], m: Any, **fields: Any) -> None:
        try:
            t0 = time.perf_counter()
            v = problem.verify(g, m)
            t_verify = time.perf_counter() - t0
            out = {**row, **fields, "verified": bool(v.verified), "reason": v.reason}
            out.setdefault("cardinality", v.objective)
            if row.get("kind") == "gpu":
                out["t_verify_s"] = t_verify
        except Exception as exc:  # a failure is a row
            out = {**row, **fields, "verified": False, "reason": f"verify: {exc!r}"}
        sink(out)  # the sink is thread-safe

    pool = cp.get_default_memory_pool()
    g = common.load_graph(inst["path"])
    problem = MCM()
    base = {
        k: inst[k]
        for k in ("instance", "family", "scale", "rcp", "n_rows", "n_cols", "n_edges", "csr_bytes")
    }
    init = common.initialize(problem, g, base, sink)
    for alg, bfs, threads, sync, frontier in configs:
        row = {
            "kind": "gpu",
            **base,
            "algorithm": alg,
            "bfs": bfs,
            "threads": threads,
            "sync": sync,
            "frontier": frontier,
            "variant": variant_label(alg, bfs, threads),
        }
        params = {"bfs": bfs, "threads": threads, "sync": sync, "frontier": frontier}
        pool.free_all_blocks()
        try:
            solver = common.make_solver(alg, **params)
            t0 = time.perf_counter()
            solver.prepare(g, init)
            t_first_prepare = time.perf_counter() - t0
            for rep in range(reps + 1):  # rep 0 is the warm-up
                t0 = time.perf_counter()
                solver.prepare(g, init)
                t_prepare = time.perf_counter() - t0
                solver.run()
                m = solver.result()
                verifier.submit(
                    certify,
                    row,
                    m,
                    rep=rep,
                    t_solve_s=solver.timings()["solve"],
                    t_transfer_s=solver.timings()["transfer"],
                    t_prepare_s=t_prepare,
                    t_first_prepare_s=t_first_prepare,
                    solver_bytes=solver.memory_peak_bytes(),
                    pool_bytes=pool.total_bytes(),
                    **solver.counters(),
                )
            del solver
            if sync == edges_sync:
                # Instrumented run: edges scanned by the BFS (not timed for the tables).
                pool.free_all_blocks()
                solver = common.make_solver(alg, **params)
                solver.count_edges = True
                solver.prepare(g, init)
                solver.run()
                verifier.submit(
                    certify,
                    {**row, "kind": "gpu_edges"},
                    solver.result(),
                    t_solve_instrumented_s=solver.timings()["solve"],
                    **solver.counters(),
                )
                del solver
        except Exception as exc:  # a failure is a row, not a lost benchmark
            sink({**row, "rep": -1, "verified": False, "reason": f"{type(exc).__name__}: {exc}"})
        pool.free_all_blocks()
    verifier.shutdown(wait=True)


# -- the whole suite --------------------------------------------------------------------


def run_suite(args: argparse.Namespace) -> int:
    import multiprocessing as mp

    t_start = time.time()
    deadline = t_start + args.budget_s
    graph_dir = Path(args.graph_dir)
    results, sink = common.open_results(args.out, graph_dir, t_start)

    suite = SUITES[args.suite]
    jobs = [
        (fam, s, args.seed, str(graph_dir))
        for fam, scales in suite.items()
        if fam in args.families
        for s in scales
        if args.min_scale <= s <= args.max_scale
    ]
    if args.pick:
        picked = {(f, int(x)) for f, x in (p.split(":") for p in args.pick)}
        jobs = [j for j in jobs if (j[0], j[1]) in picked]
    # Largest first, so the long generations overlap the short ones; the GPU and the CPU
    # references start on each instance as soon as it exists.
    jobs.sort(key=lambda j: -j[1])
    if args.refs:
        # Fill numba's cache once, before parallel jobs would all compile.
        common.warm_up_references("matchbench.bench.mcm_gpu")
    refs = (
        common.RefRunner(
            args.ref_workers,
            args.ref_timeout,
            deadline - args.report_margin_s,
            sink,
            "matchbench.bench.mcm_gpu",
            limit="solve",
            budget_reason="benchmark time budget spent",
        )
        if args.refs
        else None
    )
    print(f"[{time.time() - t_start:6.1f}s] generating {len(jobs)} graphs", flush=True)
    ready: queue.Queue = queue.Queue()
    ctx = mp.get_context("spawn")  # no fork: this process holds a CUDA context
    pool = ctx.Pool(min(args.gen_workers, max(1, len(jobs))))

    def generate_all() -> None:
        try:
            for rows in pool.imap_unordered(common.generate, jobs):
                for r in rows:
                    sink({"kind": "instance", **{k: v for k, v in r.items() if k != "path"}})
                    ready.put(r)
                print(
                    f"[{time.time() - t_start:6.1f}s] generated {rows[0]['instance']} "
                    f"({rows[0]['n_edges']} edges, {rows[0]['t_generate_s']:.1f}s)",
                    flush=True,
                )
        except Exception as exc:  # a failure is a row
            sink({"kind": "error", "where": "generation", "reason": repr(exc)})
        finally:
            ready.put(None)

    threading.Thread(target=generate_all, daemon=True).start()
    sink(common.device_row(copy_bandwidth=True))
    configs = gpu_configs(args.configs, args.sync, tuple(args.frontiers))
    configs += [c for c in (parse_config(x) for x in args.extra or []) if c not in configs]
    # Among the instances generated so far, the GPU takes those named by --priority first
    # (in that order), then the smallest.
    rank = {tuple(p.split(":")): k for k, p in enumerate(args.priority or [])}
    waiting: list[dict[str, Any]] = []
    generating = True
    while generating or waiting:
        try:
            block = generating and not waiting
            timeout = max(1.0, deadline - args.report_margin_s - time.time())
            while True:  # drain what is ready
                inst = ready.get(block=block, timeout=timeout if block else None)
                block = False
                if inst is None:
                    generating = False
                    break
                if refs is not None:
                    for name in args.refs:
                        refs.submit(inst, name)
                waiting.append(inst)
        except queue.Empty:
            if block:
                sink({"kind": "error", "where": "generation", "reason": "time budget spent"})
                break
        if not waiting:
            continue
        waiting.sort(
            key=lambda r: (rank.get((r["family"], str(r["scale"])), len(rank)), r["n_edges"])
        )
        inst = waiting.pop(0)
        if time.time() > deadline - args.report_margin_s:
            sink(
                {
                    "kind": "gpu",
                    "instance": inst["instance"],
                    "rep": -1,
                    "verified": False,
                    "reason": "not run: benchmark time budget spent",
                }
            )
            continue
        bench_gpu_instance(inst, configs, args.reps, sink, edges_sync=args.sync)
        print(f"[{time.time() - t_start:6.1f}s] GPU done {inst['instance']}", flush=True)
    pool.terminate()
    if refs is not None:
        refs.wait()
    rows = common.write_report(results, build_report, summary)
    wrong = [
        r
        for r in rows
        if r["kind"] in ("gpu", "gpu_edges") and r.get("rep", 0) != -1 and not r.get("verified")
    ]
    return 1 if wrong else 0


# -- report -----------------------------------------------------------------------------


def _s(t: float | None) -> str:
    return common.fmt_seconds(t, ms_below=1e-3)


class Results:
    """The JSON rows of one or more benchmark runs, indexed for the report."""

    def __init__(self, rows: list[dict[str, Any]]):
        self.device = next((r for r in rows if r["kind"] == "device"), {})
        self.instances = {r["instance"]: r for r in rows if r["kind"] == "instance"}
        self.init = {r["instance"]: r for r in rows if r["kind"] == "init"}
        self.gpu: dict[tuple, list[dict[str, Any]]] = {}
        self.wrong: list[dict[str, Any]] = []
        for r in rows:
            if r["kind"] == "gpu" and r.get("rep", 0) >= 0:
                if not r["verified"]:
                    self.wrong.append(r)
                self.gpu.setdefault(self.key(r), []).append(r)
            elif r["kind"] == "gpu" and r.get("rep") == -1 and "not run" not in r.get("reason", ""):
                self.wrong.append(r)
        self.edges = {self.key(r): r for r in rows if r["kind"] == "gpu_edges"}
        self.refs = {(r["instance"], r["solver"]): r for r in rows if r["kind"] == "ref"}
        order = sorted(self.instances.values(), key=lambda r: (r["family"], r["scale"], r["rcp"]))
        self.all_names = [r["instance"] for r in order]
        # Instances the GPU ran (a run cut short by its time budget leaves some out).
        ran = {k[0] for k in self.gpu}
        self.names = [n for n in self.all_names if n in ran]
        present = {k[5] for k in self.gpu}
        self.frontiers = [f for f in ("scan", "queue") if f in present]

    @staticmethod
    def key(r: dict[str, Any]) -> tuple:
        # Rows written before the frontier option existed ran the paper's scan.
        f = r.get("frontier", "scan")
        return (r["instance"], r["algorithm"], r["bfs"], r["threads"], r["sync"], f)

    def t(self, inst: str, cfg: Config) -> float | None:
        """Median timed solve (warm-up excluded) of a verified configuration."""
        runs = self.gpu.get((inst, *cfg), [])
        timed = [r["t_solve_s"] for r in runs if r["rep"] >= 1 and r["verified"]]
        if not timed or any(not r["verified"] for r in runs):
            return None
        return statistics.median(timed)

    def run(self, inst: str, cfg: Config) -> dict[str, Any] | None:
        runs = [r for r in self.gpu.get((inst, *cfg), []) if r["rep"] >= 1]
        return runs[-1] if runs else None

    def ref(self, inst: str, name: str) -> tuple[float | None, str]:
        return common.ref_time(self.refs, inst, name, _s)

    def sets(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {"O (all)": [], "RCP (all)": []}
        for n in self.names:
            r = self.instances[n]
            out["RCP (all)" if r["rcp"] else "O (all)"].append(n)
            out.setdefault(f"{r['family']} {'RCP' if r['rcp'] else 'O'}", []).append(n)
        return out

    def table_sync(self) -> str:
        syncs = [k[4] for k in self.gpu if k[1:4] == ("apfb", "plain", "ct")]
        return statistics.mode(syncs) if syncs else "batched"

    def best_variant(self, frontiers: tuple[str, ...] | None = None) -> Config:
        """The configuration of lowest geometric mean over the instances the GPU ran."""
        sync = self.table_sync()
        scores = {}
        for f in frontiers or tuple(self.frontiers):
            for v in VARIANTS:
                ts = [self.t(n, (*v, sync, f)) for n in self.names]
                if all(t is not None for t in ts) and ts:
                    scores[(*v, sync, f)] = common.geomean(ts)
        return min(scores, key=scores.get) if scores else (*VARIANTS[3], sync, "scan")


def build_report(rows: list[dict[str, Any]]) -> str:
    """The markdown tables of ``docs/benchmarks/mcm.md`` from benchmark rows."""
    R = Results(rows)
    d = R.device
    bw = d.get("d2d_copy_GBps", float("nan"))
    sync = R.table_sync()
    parts = [
        f"GPU: {d.get('gpu_model', '?')} (CUDA runtime {d.get('cuda_runtime_version', '?')}, "
        f"driver {d.get('cuda_driver_version', '?')}, CuPy {d.get('cupy_version', '?')}); "
        f"measured device-to-device copy {bw:.0f} GB/s (read + write). "
        f"CPU: {d.get('cpu_model', '?')}, {d.get('cpu_count', '?')} logical cores.\n",
    ]
    if R.wrong:
        parts.append(
            f"\n**{len(R.wrong)} GPU runs not certified or failed:** "
            + "; ".join(
                f"{r['instance']} {r.get('variant')} {r.get('sync')} {r.get('frontier', 'scan')}:"
                f" {r.get('reason')}"
                for r in R.wrong[:10]
            )
            + "\n"
        )

    missing = [n for n in R.all_names if n not in R.names]
    if missing:
        parts.append("\nNot run on the GPU (time budget): " + ", ".join(missing) + ".\n")

    # Instances.
    body = []
    for n in R.all_names:
        r, i = R.instances[n], R.init.get(n, {})
        maxc = next(
            (x["cardinality"] for k, xs in R.gpu.items() if k[0] == n for x in xs if x["verified"]),
            None,
        )
        body.append(
            [
                n,
                r["n_rows"],
                r["n_edges"],
                i.get("init_cardinality", "-"),
                "-" if maxc is None else int(maxc),
                _s(i.get("t_init_s")),
            ]
        )
    parts.append(
        "\n### Instances\n\n"
        + common.md_table(
            [
                "instance",
                "rows = cols",
                "edges (nnz)",
                "cheap card.",
                "max card.",
                "cheap init (s)",
            ],
            body,
        )
    )

    # Table 1: geometric means per set, one table per frontier mode.
    header = ["set", "#"] + [variant_label(*v) for v in VARIANTS]
    for f in R.frontiers:
        body = []
        for name, insts in R.sets().items():
            cells = []
            for v in VARIANTS:
                ts = [R.t(n, (*v, sync, f)) for n in insts]
                ok = all(t is not None for t in ts) and ts
                cells.append(_s(common.geomean(ts)) if ok else "-")
            body.append([name, len(insts)] + cells)
        parts.append(
            f"\n### Table 1 analogue: geometric mean solve time (s), sync={sync}, "
            f"frontier={f}\n\n" + common.md_table(header, body)
        )

    best = R.best_variant()
    # Sync modes.
    header = ["instance"]
    cfgs = [(*v, s, "scan") for v in SYNC_STUDY for s in ("level", "batched", "graph")]
    header += [f"{variant_label(*c[:3])} {c[3]}" for c in cfgs]
    body = []
    for n in R.names:
        cells = []
        for c in cfgs:
            t, r = R.t(n, c), R.run(n, c)
            cells.append("-" if t is None else f"{_s(t)} ({r['host_syncs']} syncs)")
        body.append([n] + cells)
    gm = ["geomean"] + [
        _s(common.geomean([R.t(n, c) for n in R.names]))
        if all(R.t(n, c) is not None for n in R.names)
        else "-"
        for c in cfgs
    ]
    if any(R.t(n, c) is not None for n in R.names for c in cfgs):
        parts.append(
            "\n### Sync modes (frontier=scan): solve time (s) and host round trips\n\n"
            + common.md_table(header, body + [gm])
        )

    # Table 2: best variant vs CPU references.
    header = (
        ["instance", f"GPU {config_label(best)}"]
        + list(REFS)
        + ["speedup vs scipy_hk", "speedup vs best CPU", "C2050 (paper)"]
    )
    body = []
    speedups, per_inst_ok, worst = [], [], []
    for n in R.all_names:
        tg = R.t(n, best)
        cells = [n, _s(tg)]
        ref_t = {}
        for name in REFS:
            t, txt = R.ref(n, name)
            ref_t[name] = t
            cells.append(txt)
        ts = ref_t["scipy_hk"]
        sp_ = (ts / tg) if (tg and ts) else None
        if sp_ is None:
            cells.append("-")
        elif math.isinf(sp_):
            cells.append(f">{R.refs[(n, 'scipy_hk')]['timeout_s'] / tg:.0f}x")
        else:
            cells.append(f"{sp_:.1f}x")
        finite = [t for t in ref_t.values() if t is not None]
        bc = min(finite) if finite else None
        cells.append("-" if not (tg and bc) else f"{bc / tg:.2f}x")
        r = R.instances[n]
        paper = PAPER_C2050.get((r["family"], r["scale"], r["rcp"]))
        cells.append("-" if paper is None else f"{paper} ({paper / tg:.1f}x)" if tg else str(paper))
        body.append(cells)
        if sp_ is not None:
            speedups.append(sp_)
        if tg and finite:
            slowest = max(finite)
            per_inst_ok.append(tg < slowest)
            if tg >= slowest:
                worst.append(n)
    parts.append(
        "\n### Table 2 analogue: best GPU variant vs CPU references (s)\n\n"
        "CPU references after the same cheap matching (scipy_hk starts from the empty "
        "matching: SciPy takes no initial matching); `>T s` = killed at the time limit.\n\n"
        + common.md_table(header, body)
    )

    # Memory and throughput of the best variant.
    header = [
        "instance",
        "CSR bytes (both)",
        "solver bytes",
        "pool bytes held",
        "pool / CSR",
        "BFS levels",
        "edges scanned",
        "edges/s",
        "est. bytes/s",
        "% of copy BW",
    ]
    body = []
    for n in R.names:
        r, e, tg = R.run(n, best), R.edges.get((n, *best)), R.t(n, best)
        inst = R.instances[n]
        if r is None:
            continue
        cells = [
            n,
            inst["csr_bytes"],
            r["solver_bytes"],
            r["pool_bytes"],
            f"{r['pool_bytes'] / inst['csr_bytes']:.2f}",
            r["bfs_levels"],
        ]
        if e is not None and tg:
            item = 4
            # Lower bound on the bytes the BFS moves: per scanned edge the column index
            # and the row's mate, plus, in the paper's scan mode, the read of bfs_array
            # over all columns at every level (the queue mode reads only the frontier).
            scan = e["bfs_levels"] * inst["n_cols"] * item if best[4] == "scan" else 0
            est = (scan + e["edges_scanned"] * 2 * item) / tg
            cells += [
                e["edges_scanned"],
                f"{e['edges_scanned'] / tg:.3g}",
                f"{est:.3g}",
                f"{100 * est / (bw * 1e9):.1f}%",
            ]
        else:
            cells += ["-"] * 4
        body.append(cells)
    parts.append(
        f"\n### Memory and throughput, {config_label(best)}\n\n" + common.md_table(header, body)
    )

    # Targets.
    gms = common.geomean([s for s in speedups if math.isfinite(s)])
    n_inf = sum(1 for s in speedups if math.isinf(s))

    def paper_ratios(cfg: Config) -> list[str]:
        out = []
        for n in R.names:
            r = R.instances[n]
            paper = PAPER_C2050.get((r["family"], r["scale"], r["rcp"]))
            tg = R.t(n, cfg)
            if paper is not None and tg:
                out.append(f"{n}: {paper / tg:.1f}x")
        return out

    paper_rows = paper_ratios(best)
    faithful = ""
    if best[4] != "scan" and "scan" in R.frontiers:
        fb = R.best_variant(("scan",))
        faithful = (
            f"- The best configuration with the paper's frontier scan, {config_label(fb)},"
            " against the C2050: " + (", ".join(paper_ratios(fb)) or "-") + ".\n"
        )
    parts.append(
        "\n### Targets (computed)\n\n"
        f"Best configuration: {config_label(best)}.\n\n"
        f"- Geometric-mean speedup of the best variant over scipy HK on instances where "
        f"scipy finished: {gms:.1f}x over {len(speedups) - n_inf} instances"
        + (f" ({n_inf} more where scipy hit the time limit)" if n_inf else "")
        + " (target >= 25x).\n"
        "- Versus the paper's C2050 times (same family and size): "
        + (", ".join(paper_rows) if paper_rows else "no instance of a size the paper reports")
        + " (target >= 10x).\n"
        "- Instances where the best variant is not faster than the slowest CPU reference: "
        + (", ".join(worst) if worst else "none")
        + f" (of {len(per_inst_ok)} with a reference time).\n"
        + faithful
    )
    return "".join(parts)


def summary(rows: list[dict[str, Any]]) -> str:
    """A short table for the end of the console output."""
    R = Results(rows)
    sync = R.table_sync()
    lines = []
    for f in R.frontiers:
        lines.append(
            f"{'frontier=' + f:28s} " + " ".join(f"{variant_label(*v)[:14]:>14s}" for v in VARIANTS)
        )
        for n in R.names:
            cells = " ".join(f"{_s(R.t(n, (*v, sync, f))):>14s}" for v in VARIANTS)
            lines.append(f"{n:28s} {cells}")
    lines.append(f"wrong or failed GPU runs: {len(R.wrong)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m matchbench.bench.mcm_gpu", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--suite", choices=sorted(SUITES), default="seed")
    ap.add_argument("--out", type=Path, help="folder for results.jsonl and report.md")
    ap.add_argument("--families", nargs="+", default=["kronecker", "delaunay", "rgg", "grid"])
    ap.add_argument("--min-scale", type=int, default=0)
    ap.add_argument("--max-scale", type=int, default=99)
    ap.add_argument(
        "--pick", nargs="+", metavar="FAMILY:SCALE", help="only these instances of the suite"
    )
    ap.add_argument(
        "--priority", nargs="+", metavar="FAMILY:SCALE", help="run these first on the GPU"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=2, help="timed runs after one warm-up")
    ap.add_argument("--sync", default="graph", help="sync mode of the eight-variant tables")
    ap.add_argument("--configs", choices=["all", "table1", "sync"], default="all")
    ap.add_argument(
        "--frontiers",
        nargs="+",
        choices=["scan", "queue"],
        default=["scan", "queue"],
        help="frontier modes of the eight-variant tables",
    )
    ap.add_argument(
        "--extra",
        nargs="+",
        metavar="ALG:BFS:THREADS:SYNC:FRONTIER",
        help="further configurations to run, e.g. apfb:wr:ct:batched:scan",
    )
    ap.add_argument("--refs", nargs="*", default=list(REFS))
    ap.add_argument("--ref-timeout", type=float, default=60.0)
    ap.add_argument("--ref-workers", type=int, default=4)
    ap.add_argument("--gen-workers", type=int, default=12)
    ap.add_argument("--graph-dir", default="/tmp/matchbench_graphs")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=3600.0,
        help="stop starting new work after this many seconds",
    )
    ap.add_argument("--report-margin-s", type=float, default=15.0)
    ap.add_argument("--report", type=Path, nargs="+", help="results.jsonl files to tabulate")
    ap.add_argument("--md", type=Path, help="with --report: write the markdown here")
    ap.add_argument("--ref-job", nargs=2, metavar=("GRAPH", "SOLVER"), help=argparse.SUPPRESS)
    ap.add_argument("--ref-warmup", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--marker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    # SciPy's Hopcroft-Karp takes no initial matching; the other references start from it.
    status = common.run_other_modes(
        args, REFS, build_report, extra=lambda name, _solver: {"from_init": name != "scipy_hk"}
    )
    if status is not None:
        return status
    if args.out is None:
        ap.error("--out is required")
    return run_suite(args)


if __name__ == "__main__":
    raise SystemExit(main())
