"""G-PR benchmark: the paper's Fig. 1 sweep and Table I comparison on the seed families.

::

    python -m matchbench.bench.mcm_gpr --out OUT [--max-scale 20] [--budget-s 300]
    python -m matchbench.bench.mcm_gpr --report OUT/results.jsonl [--md report.md]

The seed-family suite (Kronecker logn 18-21, Delaunay n20-23, random geometric n20-23,
grids 2^20-2^22, each original and RCP-permuted; ``--max-scale`` cuts it) is generated
by a process pool. Every instance starts from the shared cheap matching (timed apart).
On the GPU, in this order, while the time budget lasts:

1. Table I: G-PR with the paper's best configuration (G-PR-Shr, adaptive, 0.7) and
   the eight APFB/APsB variants (:mod:`matchbench.solvers.gpu.apfb`, when present), one
   warm-up and ``--reps`` timed runs each;
2. Fig. 1: G-PR-First, G-PR-NoShr and G-PR-Shr under every (fix, k) and (adaptive, k),
   k in 0.3, 0.5, 0.7, 1, 1.5, 2: one warm-up and ``--fig1-reps`` timed runs each, a
   run bounded by ``--run-limit-s``.

Meanwhile the CPU references (scipy HK, numba PR with k = 0.5, numba PFP) run in
subprocesses with a time limit, so that one that runs too long is reported as ``>T s``.
Every answer is checked by the König certificate (:meth:`MCM.verify`). Results are JSON
lines, written as they come; ``--report`` turns them into the markdown tables of
``docs/benchmarks/mcm_gpr.md``.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from matchbench.bench import common

SUITES: dict[str, dict[str, list[int]]] = {
    "seed": common.SEED_SUITE,
    # Small instances, to check the pipeline end to end.
    "tiny": {"kronecker": [10], "delaunay": [10], "rgg": [10], "grid": [10]},
}

GPR_VARIANTS = ("first", "noshr", "shr")
GPR_LABEL = {"first": "G-PR-First", "noshr": "G-PR-NoShr", "shr": "G-PR-Shr"}
K_VALUES = (0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
PAIRS = [(s, k) for s in ("fix", "adaptive") for k in K_VALUES]
DEFAULT = ("shr", "adaptive", 0.7)
APFB_VARIANTS = [
    (alg, bfs, thr) for alg in ("apfb", "apsb") for bfs in ("plain", "wr") for thr in ("ct", "mt")
]
REFS = ("scipy_hk", "pr", "pfp")

#: Deveci et al., G-PR paper, Table I: G-PR on a Tesla C2050, seconds after the cheap
#: matching, for the matrices of our families and sizes (original ordering only).
PAPER_C2050 = {
    ("kronecker", 20): ("kron_g500-logn20", 0.38),
    ("kronecker", 21): ("kron_g500-logn21", 0.68),
    ("delaunay", 20): ("delaunay_n20", 0.06),
    ("delaunay", 21): ("delaunay_n21", 0.18),
    ("delaunay", 23): ("delaunay_n23", 0.81),
    ("delaunay", 24): ("delaunay_n24", 1.83),
}


# -- GPU -------------------------------------------------------------------------------


def _apfb_available() -> bool:
    try:
        import matchbench.solvers.gpu.apfb  # noqa: F401
    except ImportError:
        return False
    return (common.CONF_DIR / "apfb.yaml").is_file() and (common.CONF_DIR / "apsb.yaml").is_file()


def bench_config(
    g: Any,
    init: Any,
    base: dict[str, Any],
    label: dict[str, Any],
    factory,
    reps: int,
    sink,
    run_limit_s: float | None = None,
) -> None:
    """One warm-up and ``reps`` timed runs of one solver configuration; a row per run."""
    import cupy as cp

    from matchbench.problems.mcm import MCM

    problem = MCM()
    row = {"kind": "gpu", **base, **label}
    try:
        solver = factory()
        if run_limit_s is not None:
            solver.time_limit_s = run_limit_s
        for rep in range(reps + 1):  # rep 0: warm-up (compilation, graph capture)
            solver.prepare(g, init)
            try:
                solver.run()
            except TimeoutError:
                sink({**row, "rep": rep, "status": "timeout", "limit_s": run_limit_s})
                return
            m = solver.result()
            v = problem.verify(g, m)
            t = solver.timings()
            sink(
                {
                    **row,
                    "rep": rep,
                    "status": "ok" if v.verified else "wrong",
                    "verified": bool(v.verified),
                    "reason": v.reason,
                    "cardinality": v.objective,
                    "t_solve_s": t["solve"],
                    "t_transfer_s": t.get("transfer"),
                    "t_relabel_s": t.get("global_relabel"),
                    "counters": solver.counters(),
                }
            )
    except Exception as exc:  # a failure is a row, not a lost benchmark
        sink({**row, "rep": -1, "status": "error", "reason": f"{type(exc).__name__}: {exc}"})
    finally:
        solver = None
        if cp.is_available():
            cp.get_default_memory_pool().free_all_blocks()


def bench_instance(
    inst: dict[str, Any], phase: str, args: argparse.Namespace, sink, deadline: float
) -> None:
    from matchbench.problems.mcm import MCM
    from matchbench.solvers.gpu.gpr import GPR

    g = common.load_graph(inst["path"])
    problem = MCM()
    base = {k: inst[k] for k in ("instance", "family", "scale", "rcp")}
    # Both phases compute the cheap matching; the Table I phase records it.
    init = common.initialize(problem, g, base, sink if phase == "table" else None)
    if phase == "table":
        v, s, k = DEFAULT
        for scan in args.scans:
            bench_config(
                g,
                init,
                base,
                {"algorithm": "gpr", "variant": v, "strategy": s, "k": k, "scan": scan},
                lambda sc=scan: GPR(variant=v, strategy=s, k=k, scan=sc),
                args.reps,
                sink,
            )
        if args.apfb and _apfb_available():
            for alg, bfs, thr in APFB_VARIANTS:
                if time.time() > deadline:
                    return
                bench_config(
                    g,
                    init,
                    base,
                    {"algorithm": alg, "bfs": bfs, "threads": thr},
                    lambda a=alg, b=bfs, t=thr: common.make_solver(a, bfs=b, threads=t),
                    args.reps,
                    sink,
                )
    else:
        for variant, (strategy, k) in itertools.product(GPR_VARIANTS, PAIRS):
            if (variant, strategy, k) == DEFAULT:
                continue  # measured in the Table I phase
            if time.time() > deadline:
                sink(
                    {
                        "kind": "gpu",
                        **base,
                        "algorithm": "gpr",
                        "variant": variant,
                        "strategy": strategy,
                        "k": k,
                        "rep": -1,
                        "status": "not_run",
                    }
                )
                continue
            bench_config(
                g,
                init,
                base,
                {
                    "algorithm": "gpr",
                    "variant": variant,
                    "strategy": strategy,
                    "k": k,
                    "scan": args.scans[0],
                },
                lambda v=variant, s=strategy, kk=k: GPR(
                    variant=v, strategy=s, k=kk, scan=args.scans[0]
                ),
                args.fig1_reps,
                sink,
                run_limit_s=args.run_limit_s,
            )


def run_suite(args: argparse.Namespace) -> int:
    import multiprocessing as mp

    t_start = time.time()
    deadline = t_start + args.budget_s
    graph_dir = Path(args.graph_dir)
    results, sink = common.open_results(args.out, graph_dir, t_start)

    def say(msg: str) -> None:
        print(f"[{time.time() - t_start:6.1f}s] {msg}", flush=True)

    sink({"kind": "args", **{k: str(v) for k, v in vars(args).items()}})
    jobs = [
        (fam, s, args.seed, str(graph_dir))
        for fam, scales in SUITES[args.suite].items()
        if fam in args.families
        for s in scales
        if args.min_scale <= s <= args.max_scale and (not args.only or f"{fam}:{s}" in args.only)
    ]
    jobs.sort(key=lambda j: -j[1])  # largest first: long generations overlap short ones
    say(f"generating {len(jobs)} graphs (+ RCP)")
    instances: list[dict[str, Any]] = []
    ctx = mp.get_context("spawn")  # no fork: the parent may hold a CUDA context later
    with ctx.Pool(max(1, min(args.gen_workers, len(jobs)))) as pool:
        for rows in pool.imap_unordered(functools.partial(common.generate, csr_bytes=False), jobs):
            for r in rows:
                sink({"kind": "instance", **{k: v for k, v in r.items() if k != "path"}})
                instances.append(r)
            say(f"generated {rows[0]['instance']} ({rows[0]['n_edges']} edges)")
    instances.sort(key=lambda r: (r["n_edges"], r["instance"]))

    refs = None
    if args.refs:
        common.warm_up_references("matchbench.bench.mcm_gpr")
        refs = common.RefRunner(
            args.ref_workers, args.ref_timeout, deadline, sink, "matchbench.bench.mcm_gpr"
        )
        for inst in instances:
            for name in args.refs:
                refs.submit(inst, name)

    try:
        sink(common.device_row())
    except Exception as exc:  # no GPU: the GPU rows will say why
        say(f"no device information: {exc}")
    table_deadline = t_start + args.budget_s * args.table_share
    for phase, end in (("table", table_deadline), ("fig1", deadline)):
        for inst in instances:
            if time.time() > end:
                say(f"{phase}: budget spent before {inst['instance']}")
                continue
            bench_instance(inst, phase, args, sink, end)
            say(f"{phase} done {inst['instance']}")
    if refs is not None:
        refs.wait()
    rows = common.write_report(results, build_report, summary)
    wrong = [r for r in rows if r["kind"] == "gpu" and r.get("status") in ("wrong", "error")]
    return 1 if wrong else 0


# -- report ----------------------------------------------------------------------------


def _s(t: float | None) -> str:
    return common.fmt_seconds(t, ms_below=0.1)


def _ms(t: float | None) -> str:
    return "-" if t is None or not math.isfinite(t) else f"{t * 1e3:.3g}"


class Results:
    """Benchmark rows indexed for the report."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.device = next((r for r in rows if r["kind"] == "device"), {})
        self.args = next((r for r in rows if r["kind"] == "args"), {})
        self.instances = {r["instance"]: r for r in rows if r["kind"] == "instance"}
        self.init = {r["instance"]: r for r in rows if r["kind"] == "init"}
        self.runs: dict[tuple, list[dict[str, Any]]] = {}
        self.bad: list[dict[str, Any]] = []
        for r in rows:
            if r["kind"] != "gpu":
                continue
            key = (r["instance"], self.config(r))
            self.runs.setdefault(key, []).append(r)
            if r.get("status") in ("wrong", "error"):
                self.bad.append(r)
        self.refs = {(r["instance"], r["solver"]): r for r in rows if r["kind"] == "ref"}
        order = sorted(self.instances.values(), key=lambda r: (r["family"], r["scale"], r["rcp"]))
        self.names = [r["instance"] for r in order]

    @staticmethod
    def config(r: dict[str, Any]) -> tuple:
        if r["algorithm"] == "gpr":
            # Rows written before the scan parameter existed ran the thread mapping.
            return ("gpr", r["variant"], r["strategy"], float(r["k"]), r.get("scan", "thread"))
        return (r["algorithm"], r.get("bfs"), r.get("threads"))

    def t(self, inst: str, cfg: tuple) -> float | None:
        """Median timed solve (warm-up excluded); None unless every run was certified."""
        runs = self.runs.get((inst, cfg), [])
        if not runs or any(r.get("status") != "ok" for r in runs):
            return None
        timed = [r["t_solve_s"] for r in runs if r["rep"] >= 1]
        return statistics.median(timed) if timed else None

    def status(self, inst: str, cfg: tuple) -> str:
        runs = self.runs.get((inst, cfg), [])
        if not runs:
            return "not run"
        bad = [r["status"] for r in runs if r.get("status") != "ok"]
        return bad[0] if bad else "ok"

    def last(self, inst: str, cfg: tuple) -> dict[str, Any] | None:
        runs = [r for r in self.runs.get((inst, cfg), []) if r["rep"] >= 1]
        return runs[-1] if runs else None

    def ref(self, inst: str, name: str) -> tuple[float | None, str]:
        return common.ref_time(self.refs, inst, name, _s)

    def sets(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {"all": list(self.names)}
        for n in self.names:
            r = self.instances[n]
            out.setdefault(f"{r['family']} {'RCP' if r['rcp'] else 'O'}", []).append(n)
        return out

    def geo(self, insts: list[str], cfg: tuple) -> float | None:
        ts = [self.t(n, cfg) for n in insts]
        return common.geomean(ts) if ts and all(t is not None for t in ts) else None

    def best_apfb(self) -> tuple | None:
        scores = {}
        for v in APFB_VARIANTS:
            g = self.geo(self.names, v)
            if g is not None:
                scores[v] = g
        return min(scores, key=scores.get) if scores else None


def _label(cfg: tuple) -> str:
    if cfg[0] == "gpr":
        scan = "" if cfg[4] == "thread" else f", {cfg[4]} scan"
        return f"{GPR_LABEL[cfg[1]]} ({cfg[2]}, {cfg[3]:g}{scan})"
    alg, bfs, thr = cfg
    kind = "GPUBFS-WR" if bfs == "wr" else "GPUBFS"
    return f"{alg.upper().replace('APSB', 'APsB')}-{kind}-{thr.upper()}"


def _cell(R: Results, n: str, cfg: tuple | None) -> str:
    if cfg is None:
        return "-"
    t = R.t(n, cfg)
    return _ms(t) if t is not None else R.status(n, cfg)


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if (a and b and math.isfinite(a)) else "-"


def build_report(rows: list[dict[str, Any]]) -> str:
    """The tables of ``docs/benchmarks/mcm_gpr.md`` from benchmark rows."""
    R = Results(rows)
    d = R.device
    default = ("gpr", *DEFAULT, "thread")
    default_warp = ("gpr", *DEFAULT, "warp")
    have_warp = any(k[1] == default_warp for k in R.runs)
    # The Fig. 1 sweep's scan: that of a run whose (variant, strategy, k) is not the
    # default's (the Table I phase runs the default under every scan).
    fig1_scan = next(
        (k[1][4] for k in R.runs if k[1][0] == "gpr" and k[1][1:4] != default[1:4]), "thread"
    )
    parts = [
        f"GPU: {d.get('gpu_model', '?')} (CUDA runtime {d.get('cuda_runtime_version', '?')}, "
        f"driver {d.get('cuda_driver_version', '?')}, CuPy {d.get('cupy_version', '?')}). "
        f"CPU: {d.get('cpu_model', '?')}, {d.get('cpu_count', '?')} logical cores.\n"
    ]
    n_runs = sum(len(v) for v in R.runs.values())
    count = {k: 0 for k in ("ok", "timeout", "not_run")}
    for v in R.runs.values():
        for r in v:
            if r.get("status") in count:
                count[r["status"]] += 1
    bad = "; ".join(f"{r['instance']} {_label(R.config(r))}: {r.get('reason')}" for r in R.bad[:10])
    parts.append(
        f"\nGPU runs: {n_runs}; certified by the König certificate: {count['ok']}; wrong or "
        f"failed: {len(R.bad)}{': ' + bad if bad else ''}; stopped at the per-run time "
        f"limit: {count['timeout']}; not run (budget): {count['not_run']}.\n"
    )

    # Table I analogue.
    best = R.best_apfb()
    header = ["instance", "rows", "edges", "IM", "MM", "G-PR (ms)"]
    header += ["G-PR warp scan (ms)"] if have_warp else []
    header += [
        f"{_label(best) if best else 'best APFB/APsB'} (ms)",
        "scipy HK (ms)",
        "PR k=0.5 (ms)",
        "PFP (ms)",
        "APFB / G-PR",
        "PR / G-PR",
    ]
    body = []
    for n in R.names:
        inst, init = R.instances[n], R.init.get(n, {})
        tg = R.t(n, default)
        last = R.last(n, default)
        ta = R.t(n, best) if best else None
        refs = {name: R.ref(n, name) for name in REFS}
        tpr = refs["pr"][0]
        if tpr == math.inf and tg:
            pr_cell = f">{R.refs[(n, 'pr')]['timeout_s'] / tg:.0f}x"
        else:
            pr_cell = _ratio(tpr, tg)
        row = [
            n,
            inst["n_rows"],
            inst["n_edges"],
            init.get("init_cardinality", "-"),
            int(last["cardinality"]) if last else "-",
            _cell(R, n, default),
        ]
        row += [_cell(R, n, default_warp)] if have_warp else []
        row += [_cell(R, n, best)]
        row += [_ms(refs[x][0]) if refs[x][0] not in (None, math.inf) else refs[x][1] for x in REFS]
        row += [_ratio(ta, tg), pr_cell]
        body.append(row)
    gm_g = R.geo(R.names, default)
    gm_a = R.geo(R.names, best) if best else None
    gm_w = R.geo(R.names, default_warp) if have_warp else None
    foot = ["geomean", "", "", "", "", _ms(gm_g)] + ([_ms(gm_w)] if have_warp else [])
    foot += [_ms(gm_a), "", "", "", _ratio(gm_a, gm_g), ""]
    body.append(foot)
    parts.append(
        "\n### Table I analogue: solve times after the cheap matching\n\n"
        "G-PR = G-PR-Shr (adaptive, 0.7), the paper's choice, with its thread-per-vertex "
        "mapping; the APFB/APsB column is the variant with the lowest geometric mean over "
        "these instances. GPU: median of the timed runs (CUDA events), after one warm-up. "
        "CPU references: one run each, in a subprocess with a time limit (`>T s`), on a "
        "CPU shared with the other reference jobs; scipy HK starts from the empty matching "
        "(SciPy takes no initial matching). IM / MM: initial (cheap) and maximum "
        "cardinality.\n\n" + common.md_table(header, body)
    )

    # Fig. 1 analogue.
    header = ["strategy", "k"] + [GPR_LABEL[v] for v in GPR_VARIANTS]
    body = []
    for strategy, k in PAIRS:
        cells = []
        for v in GPR_VARIANTS:
            cfg = ("gpr", v, strategy, float(k), fig1_scan)
            done = [n for n in R.names if R.t(n, cfg) is not None]
            g = R.geo(done, cfg)
            if g is None:
                cells.append("-")
            elif len(done) == len(R.names):
                cells.append(_ms(g))
            else:
                cells.append(f"{_ms(g)} ({len(done)}/{len(R.names)})")
        body.append([strategy, f"{k:g}"] + cells)
    parts.append(
        "\n### Fig. 1 analogue: geometric mean solve time (ms)\n\n"
        "Over all instances; `(i/N)`: over the i instances where the configuration ran and "
        "was certified (the others: not run for lack of time, or stopped at the per-run "
        "limit), so such cells are not comparable with full ones.\n\n"
        + common.md_table(header, body)
    )
    header = ["set", "#"] + [
        f"{GPR_LABEL[v]} {s} {k:g}"
        for v in GPR_VARIANTS
        for s, k in (("adaptive", 0.7), ("adaptive", 0.3))
    ]
    body = []
    for name, insts in R.sets().items():
        cells = []
        for v in GPR_VARIANTS:
            for s_, k in (("adaptive", 0.7), ("adaptive", 0.3)):
                g = R.geo(insts, ("gpr", v, s_, k, fig1_scan))
                cells.append(_ms(g) if g is not None else "-")
        body.append([name, len(insts)] + cells)
    parts.append(
        "\n### Per set: geometric mean solve time (ms)\n\n" + common.md_table(header, body)
    )

    # Counters of the default configuration.
    header = [
        "instance",
        "push kernels",
        "global relabels",
        "BFS levels",
        "shrinks",
        "kernel launches",
        "graph launches",
        "host syncs",
        "relabel share",
    ]
    body = []
    for n in R.names:
        r = R.last(n, default)
        if r is None or r.get("status") != "ok":
            continue
        c = r["counters"]
        share = r["t_relabel_s"] / r["t_solve_s"] if r.get("t_relabel_s") else float("nan")
        body.append(
            [n]
            + [c[k] for k in ("push_kernels", "global_relabels", "bfs_levels", "shrinks")]
            + [c[k] for k in ("kernel_launches", "graph_launches", "host_syncs")]
            + [f"{share:.0%}"]
        )
    parts.append(
        "\n### G-PR-Shr (adaptive, 0.7): counters of the last timed run\n\n"
        "Relabel share: device time from the start of each global relabel to the host's "
        "read of its end (the shrink iteration and waits for the host included), over the "
        "solve time.\n\n" + common.md_table(header, body)
    )

    # Targets.
    pr_ratios = []
    for n in R.names:
        tg, tpr = R.t(n, default), R.ref(n, "pr")[0]
        if tg and tpr:
            pr_ratios.append(tpr / tg)
    finite = [x for x in pr_ratios if math.isfinite(x)]
    paper = []
    for n in R.names:
        inst = R.instances[n]
        hit = PAPER_C2050.get((inst["family"], inst["scale"]))
        tg = R.t(n, default)
        if hit and tg and not inst["rcp"]:
            paper.append(f"{n} {_ms(tg)} ms vs {hit[0]} {hit[1]} s: {hit[1] / tg:.1f}x")
    lines = ["\n### Targets (computed from the rows above)\n\n"]
    if gm_a and gm_g and best:
        lines.append(
            f"- G-PR vs best APFB/APsB ({_label(best)}), ratio of geometric means: "
            f"{gm_a / gm_g:.2f}x (target >= 1.3x).\n"
        )
    else:
        lines.append("- G-PR vs APFB/APsB: not measured.\n")
    if pr_ratios:
        more = len(pr_ratios) - len(finite)
        lines.append(
            f"- G-PR vs sequential PR (k = 0.5): geometric mean of per-instance speedups "
            f"{common.geomean(finite):.1f}x over {len(finite)} instances"
            + (f", plus {more} where PR hit its time limit" if more else "")
            + " (target >= 20x).\n"
        )
    else:
        lines.append("- G-PR vs sequential PR: not measured.\n")
    lines.append(
        "- G-PR vs the paper's C2050 G-PR time on a graph of the same family and size: "
        + ("; ".join(paper) if paper else "no instance of a size the paper reports")
        + " (target >= 10x).\n"
    )
    parts += lines
    return "".join(parts)


def summary(rows: list[dict[str, Any]]) -> str:
    """A short table for the end of the console output."""
    R = Results(rows)
    best = R.best_apfb()
    cfgs = [("gpr", *DEFAULT, "thread"), ("gpr", *DEFAULT, "warp")]
    cfgs += [("gpr", v, "adaptive", 0.7, "thread") for v in ("first", "noshr")]
    cfgs += [best] if best else []
    head = f"{'instance':24s} " + " ".join(f"{_label(c)[:22]:>22s}" for c in cfgs)
    lines = [head + f" {'PR':>9s} {'scipy':>9s}"]
    for n in R.names:
        cells = " ".join(f"{_cell(R, n, c):>22s}" for c in cfgs)
        refs = f" {R.ref(n, 'pr')[1]:>9s} {R.ref(n, 'scipy_hk')[1]:>9s}"
        lines.append(f"{n:24s} {cells}{refs}")
    lines.append(f"GPU runs not certified or failed: {len(R.bad)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--out", type=Path, default=Path("runs/bench_mcm_gpr"))
    p.add_argument("--graph-dir", default="/tmp/matchbench_gpr_graphs")
    p.add_argument("--suite", choices=list(SUITES), default="seed")
    p.add_argument("--families", nargs="+", default=list(SUITES["seed"]))
    p.add_argument("--min-scale", type=int, default=0)
    p.add_argument("--max-scale", type=int, default=99)
    p.add_argument(
        "--only",
        nargs="*",
        default=[],
        metavar="FAMILY:SCALE",
        help="run only these instances of the suite, e.g. kronecker:19",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--reps", type=int, default=3, help="timed runs, Table I phase")
    p.add_argument("--fig1-reps", type=int, default=1, help="timed runs, Fig. 1 phase")
    p.add_argument("--run-limit-s", type=float, default=20.0, help="per run, Fig. 1 phase")
    p.add_argument("--budget-s", type=float, default=300.0)
    p.add_argument(
        "--table-share",
        type=float,
        default=0.5,
        help="share of the budget by which the Table I phase must end",
    )
    p.add_argument("--no-apfb", dest="apfb", action="store_false")
    p.add_argument(
        "--scans",
        nargs="+",
        default=["thread", "warp"],
        help="thread mappings for the Table I phase; the first one for Fig. 1",
    )
    p.add_argument("--refs", nargs="*", default=list(REFS))
    p.add_argument("--ref-workers", type=int, default=6)
    p.add_argument("--ref-timeout", type=float, default=60.0)
    p.add_argument("--gen-workers", type=int, default=8)
    p.add_argument("--report", type=Path, nargs="+")
    p.add_argument("--md", type=Path)
    p.add_argument("--ref-job", nargs=2, metavar=("PATH", "SOLVER"))
    p.add_argument("--ref-warmup", action="store_true")
    args = p.parse_args(argv)
    # The reference children run every solver (no skip check) and report its counters.
    status = common.run_other_modes(
        args,
        REFS,
        build_report,
        honour_skip=False,
        extra=lambda _name, solver: {"counters": solver.counters()},
    )
    return run_suite(args) if status is None else status


if __name__ == "__main__":
    sys.exit(main())
