"""G-PR benchmark: the paper's Fig. 1 sweep and Table I comparison on the seed families.

::

    python -m matchbench.bench.mcm_gpr --out OUT [--max-scale 20] [--budget-s 300]
    python -m matchbench.bench.mcm_gpr --out OUT --phases fig1 --scans warp --refs \
        --only grid:20 kronecker:20 --order given
    python -m matchbench.bench.mcm_gpr --report OUT/results.jsonl [--md report.md]

The seed-family suite (Kronecker logn 18-21, Delaunay n20-23, random geometric n20-23,
grids 2^20-2^22, each original and RCP-permuted; ``--max-scale`` cuts it) is generated
by a process pool. Every instance starts from the shared cheap matching (timed apart).
On the GPU, in this order, while the time budget lasts (``--phases`` picks either
phase alone; instances go smallest first, or in the order of ``--only`` with
``--order given``):

1. Table I: G-PR with the paper's best configuration (G-PR-Shr, adaptive, 0.7) under
   each of ``--scans`` (``tiered``: the persistent kernel; ``thread``, ``warp``: the
   host loop) and the eight APFB/APsB variants with their default frontier queue
   (:mod:`matchbench.solvers.gpu.apfb`, when present), one warm-up and ``--reps`` timed
   runs each;
2. Fig. 1: G-PR-First, G-PR-NoShr and G-PR-Shr under every (fix, k) and (adaptive, k),
   k in 0.3, 0.5, 0.7, 1, 1.5, 2, with the first of ``--scans``: one warm-up and
   ``--fig1-reps`` timed runs each, a run bounded by ``--run-limit-s``. The paper's
   default configuration is measured here only when the Table I phase does not run.

Meanwhile the CPU references (scipy HK, numba PR with k = 0.5, numba PFP; ``--refs``
with no names: none) run in subprocesses with a time limit, so that one that runs too
long is reported as ``>T s``.
Every answer is checked by the König certificate (:meth:`MCM.verify`). Results are JSON
lines, written as they come; ``--report`` turns them into the markdown tables of
``docs/benchmarks/mcm_gpr.md``.
"""

from __future__ import annotations

import argparse
import ast
import collections
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
#: (algorithm, bfs, threads, frontier): the eight APFB/APsB variants with the frontier queue
#: (their default since it was added; runs before it scanned, which rows record as "scan").
APFB_VARIANTS = [
    (alg, bfs, thr, "queue")
    for alg in ("apfb", "apsb")
    for bfs in ("plain", "wr")
    for thr in ("ct", "mt")
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


PHASES = ("table", "fig1")
ORDERS = ("size", "given")


# -- plan ------------------------------------------------------------------------------


def fig1_configs(with_default: bool) -> list[tuple[str, str, float]]:
    """The Fig. 1 sweep's (variant, strategy, k), in the order they run.

    Parameters
    ----------
    with_default : bool
        Include the paper's default (G-PR-Shr, adaptive, 0.7). The Table I phase
        measures it, so a run with both phases leaves it out of the sweep.

    Returns
    -------
    list of tuple
        Every variant under every (fix, k) and (adaptive, k) pair, 36 or 35 of them.

    Notes
    -----
    Deveci et al., G-PR paper, Fig. 1: G-PR-First (Alg. 3 + 6), G-PR-NoShr and G-PR-Shr
    (Alg. 7-9) under the GETITERGR strategies (Alg. 3 line 7), k in 0.3, 0.5, 0.7, 1,
    1.5, 2.
    """
    return [
        (v, s, k)
        for v, (s, k) in itertools.product(GPR_VARIANTS, PAIRS)
        if with_default or (v, s, k) != DEFAULT
    ]


def order_instances(
    instances: list[dict[str, Any]], order: str, only: list[str]
) -> list[dict[str, Any]]:
    """The order in which the GPU phases visit the instances.

    Parameters
    ----------
    instances : list of dict
        Instance rows (``instance``, ``family``, ``scale``, ``rcp``, ``n_edges``).
    order : {"size", "given"}
        ``size``: fewest edges first, so that a budget cut loses the largest instances.
        ``given``: the order of ``only`` (``FAMILY:SCALE`` entries), each original before
        its RCP permutation, so that a run can put the instances it needs most first.
    only : list of str
        The ``--only`` entries; ``given`` requires them.

    Returns
    -------
    list of dict
        The same rows, reordered.
    """
    if order == "size":
        return sorted(instances, key=lambda r: (r["n_edges"], r["instance"]))
    if order != "given":
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if not only:
        raise ValueError("--order given needs --only FAMILY:SCALE ...")
    rank = {key: i for i, key in reversed(list(enumerate(only)))}  # first mention wins
    return sorted(instances, key=lambda r: (rank[f"{r['family']}:{r['scale']}"], r["rcp"]))


# -- GPU -------------------------------------------------------------------------------


def _apfb_available() -> bool:
    try:
        import matchbench.solvers.gpu.apfb  # noqa: F401
    except ImportError:
        return False
    return (common.CONF_DIR / "apfb.yaml").is_file() and (common.CONF_DIR / "apsb.yaml").is_file()


def persistent_options(scan: str) -> dict[str, Any] | None:
    """The persistent kernel's options named by a bench scan, None for the host loop.

    ``tiered`` is the persistent kernel with the solver's defaults; ``tiered-`` followed
    by ``-``-separated tokens sets them: ``full`` / ``stop`` (``relabel_stop`` full /
    active), ``grid`` (``local_max`` 0) or ``local<N>`` (``local_max`` N). Example:
    ``tiered-stop-local512``.
    """
    if scan == "tiered":
        return {}
    if not scan.startswith("tiered-"):
        return None
    opts: dict[str, Any] = {}
    for tok in scan.removeprefix("tiered-").split("-"):
        if tok in ("full", "stop"):
            opts["relabel_stop"] = "full" if tok == "full" else "active"
        elif tok == "grid":
            opts["local_max"] = 0
        elif tok.startswith("local") and tok[5:].isdigit():
            opts["local_max"] = int(tok[5:])
        else:
            raise ValueError(f"scan {scan!r}: unknown token {tok!r} (full, stop, grid, local<N>)")
    return opts


def scan_arg(scan: str) -> str:
    """argparse type of ``--scans``: a host-loop scan or a persistent-kernel name."""
    if scan in ("thread", "warp") or persistent_options(scan) is not None:
        return scan
    raise argparse.ArgumentTypeError(
        f"{scan!r}: not thread, warp, tiered or tiered-<full|stop>-<grid|local<N>>"
    )


def make_gpr(variant: str, strategy: str, k: float, scan: str) -> Any:
    """G-PR with ``scan``: ``tiered*`` is the persistent kernel (with the options the name
    gives, :func:`persistent_options`), the others the host loop."""
    from matchbench.solvers.gpu.gpr import GPR

    opts = persistent_options(scan)
    if opts is None:
        return GPR(variant=variant, strategy=strategy, k=k, scan=scan, persistent=False)
    return GPR(variant=variant, strategy=strategy, k=k, persistent=True, **opts)


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
    """Phase ``phase`` (``table`` or ``fig1``) of the GPU benchmark on one instance.

    ``args.phases`` lists the phases of the run in their order: the first records the
    cheap matching's ``init`` row, and the Fig. 1 phase measures the paper's default
    configuration only when there is no Table I phase. Configurations that the
    ``deadline`` leaves no time for get ``not_run`` rows.
    """
    from matchbench.problems.mcm import MCM

    g = common.load_graph(inst["path"])
    problem = MCM()
    base = {k: inst[k] for k in ("instance", "family", "scale", "rcp")}
    # Every phase computes the cheap matching; the run's first phase records it.
    init = common.initialize(problem, g, base, sink if phase == args.phases[0] else None)
    if phase == "table":
        v, s, k = DEFAULT
        for scan in args.scans:
            bench_config(
                g,
                init,
                base,
                {"algorithm": "gpr", "variant": v, "strategy": s, "k": k, "scan": scan},
                lambda sc=scan: make_gpr(v, s, k, sc),
                args.reps,
                sink,
            )
        if args.apfb and _apfb_available():
            for alg, bfs, thr, frontier in APFB_VARIANTS:
                if time.time() > deadline:
                    return
                bench_config(
                    g,
                    init,
                    base,
                    {"algorithm": alg, "bfs": bfs, "threads": thr, "frontier": frontier},
                    lambda a=alg, b=bfs, t=thr, f=frontier: common.make_solver(
                        a, bfs=b, threads=t, frontier=f
                    ),
                    args.reps,
                    sink,
                )
    else:
        for variant, strategy, k in fig1_configs(with_default="table" not in args.phases):
            if time.time() > deadline:
                sink(
                    {
                        "kind": "gpu",
                        **base,
                        "algorithm": "gpr",
                        "variant": variant,
                        "strategy": strategy,
                        "k": k,
                        "scan": args.scans[0],
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
                lambda v=variant, s=strategy, kk=k: make_gpr(v, s, kk, args.scans[0]),
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
    instances = order_instances(instances, args.order, args.only)
    say("GPU order: " + " ".join(r["instance"] for r in instances))

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
    # With both phases, Table I must end by its share of the budget; a phase run alone
    # has the whole budget.
    ends = {"table": deadline, "fig1": deadline}
    if len(args.phases) == 2:
        ends["table"] = t_start + args.budget_s * args.table_share
    tally: collections.Counter = collections.Counter()

    def counting_sink(row: dict[str, Any]) -> None:
        if row.get("kind") == "gpu":
            tally[row.get("status")] += 1
        sink(row)

    for phase in args.phases:
        for inst in instances:
            if time.time() > ends[phase]:
                say(f"{phase}: budget spent before {inst['instance']}")
                continue
            tally.clear()
            t0 = time.time()
            bench_instance(inst, phase, args, counting_sink, ends[phase])
            runs = ", ".join(f"{k} {v}" for k, v in sorted(tally.items(), key=str))
            say(f"{phase} done {inst['instance']} in {time.time() - t0:.1f} s (runs: {runs})")
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


def _phases(args_row: dict[str, Any]) -> tuple[str, ...]:
    """The GPU phases a run made, from its ``args`` row (written with ``str`` values).

    Rows of runs made before ``--phases`` existed ran both.
    """
    text = args_row.get("phases")
    if text is None:
        return PHASES
    return tuple(x for x in PHASES if f"'{x}'" in text)


class Results:
    """Benchmark rows indexed for the report."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.device = next((r for r in rows if r["kind"] == "device"), {})
        self.args = next((r for r in rows if r["kind"] == "args"), {})
        self.phases = _phases(self.args)
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
        # The Fig. 1 sweep's scan: that of a run whose (variant, strategy, k) is not the
        # default's (the Table I phase runs the default under every scan).
        self.fig1_scan = next(
            (k[1][4] for k in self.runs if k[1][0] == "gpr" and k[1][1:4] != DEFAULT), "thread"
        )
        self.fig1_cfgs = [("gpr", v, s, float(k), self.fig1_scan) for v, s, k in fig1_configs(True)]
        # The Table I phase's scans, first the one its ratios use (older runs: thread).
        ran = {k[1][4] for k in self.runs if k[1][0] == "gpr" and k[1][1:4] == DEFAULT}
        # The args row holds str(list): "['tiered', 'warp']"; older runs had no --scans.
        asked = ast.literal_eval(self.args.get("scans") or "['thread', 'warp']")
        self.table_scans = [s for s in asked if s in ran] or ["thread"]
        self.primary = ("gpr", *DEFAULT, self.table_scans[0])
        # Instances the Fig. 1 phase reached: some sweep configuration other than the
        # default ran there (rather than being cut by the budget).
        self.fig1_names = [
            n
            for n in self.names
            if any(
                r.get("status") != "not_run"
                for c in self.fig1_cfgs
                if c[1:4] != DEFAULT
                for r in self.runs.get((n, c), [])
            )
        ]
        # Of those, the ones with the full sweep: every configuration certified or
        # stopped at the limit. The aggregates use these alone, so that a budget cut
        # in the middle of an instance leaves no cell over fewer instances than another.
        self.fig1_full = [
            n
            for n in self.fig1_names
            if all(self.t_bound(n, c)[0] is not None for c in self.fig1_cfgs)
        ]

    @staticmethod
    def config(r: dict[str, Any]) -> tuple:
        if r["algorithm"] == "gpr":
            # Rows written before the scan parameter existed ran the thread mapping.
            return ("gpr", r["variant"], r["strategy"], float(r["k"]), r.get("scan", "thread"))
        return (r["algorithm"], r.get("bfs"), r.get("threads"), r.get("frontier", "scan"))

    def t(self, inst: str, cfg: tuple) -> float | None:
        """Median timed solve (warm-up excluded); None unless every run was certified."""
        runs = self.runs.get((inst, cfg), [])
        if not runs or any(r.get("status") != "ok" for r in runs):
            return None
        timed = [r["t_solve_s"] for r in runs if r["rep"] >= 1]
        return statistics.median(timed) if timed else None

    def t_bound(self, inst: str, cfg: tuple) -> tuple[float | None, bool]:
        """``(t, bound)``: the median solve, or, for a run stopped at the per-run limit,
        that limit as a lower bound (``bound`` true); ``(None, False)`` otherwise."""
        t = self.t(inst, cfg)
        if t is not None:
            return t, False
        runs = self.runs.get((inst, cfg), [])
        stops = [r.get("limit_s") for r in runs if r.get("status") == "timeout"]
        others = [r for r in runs if r.get("status") not in ("ok", "timeout")]
        if stops and not others and all(s is not None for s in stops):
            return float(max(stops)), True
        return None, False

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

    def sets(self, names: list[str] | None = None) -> dict[str, list[str]]:
        """``all`` and one set per family and ordering (``O`` or ``RCP``) of ``names``."""
        names = self.names if names is None else names
        out: dict[str, list[str]] = {"all": list(names)}
        for n in names:
            r = self.instances[n]
            out.setdefault(f"{r['family']} {'RCP' if r['rcp'] else 'O'}", []).append(n)
        return out

    def geo(self, insts: list[str], cfg: tuple) -> float | None:
        ts = [self.t(n, cfg) for n in insts]
        return common.geomean(ts) if ts and all(t is not None for t in ts) else None

    def geo_bound(self, insts: list[str], cfg: tuple) -> tuple[float | None, int]:
        """Geometric mean with each run stopped at the limit counted as the limit (a lower
        bound when the count of such instances, also returned, is not 0); None when some
        instance has no time and no limit (not run, failed)."""
        tb = [self.t_bound(n, cfg) for n in insts]
        if not tb or any(t is None for t, _ in tb):
            return None, 0
        return common.geomean(t for t, _ in tb), sum(b for _, b in tb)

    def best_apfb(self) -> tuple | None:
        scores = {}
        apfb = {k[1] for k in self.runs if k[1][0] in ("apfb", "apsb")}
        for v in sorted(apfb, key=str):
            g = self.geo(self.names, v)
            if g is not None:
                scores[v] = g
        return min(scores, key=scores.get) if scores else None


def _label(cfg: tuple) -> str:
    if cfg[0] == "gpr":
        scan = "" if cfg[4] == "thread" else f", {_scan_name(cfg[4])}"
        return f"{GPR_LABEL[cfg[1]]} ({cfg[2]}, {cfg[3]:g}{scan})"
    alg, bfs, thr, frontier = cfg
    kind = "GPUBFS-WR" if bfs == "wr" else "GPUBFS"
    queue = " (queue)" if frontier == "queue" else ""
    return f"{alg.upper().replace('APSB', 'APsB')}-{kind}-{thr.upper()}{queue}"


def _scan_name(scan: str) -> str:
    if scan.startswith("tiered-"):
        return "persistent " + scan.removeprefix("tiered-")
    return {"tiered": "persistent", "thread": "thread scan"}.get(scan, f"{scan} scan")


def _short(cfg: tuple) -> str:
    """``Shr adaptive 0.7``: a G-PR configuration without its scan."""
    return f"{GPR_LABEL[cfg[1]].removeprefix('G-PR-')} {cfg[2]} {cfg[3]:g}"


def _cell(R: Results, n: str, cfg: tuple | None) -> str:
    if cfg is None:
        return "-"
    t = R.t(n, cfg)
    return _ms(t) if t is not None else R.status(n, cfg)


def _geo_cell(R: Results, insts: list[str], cfg: tuple) -> str:
    """Geometric mean over ``insts``; ``>=x (j t/o)`` when j runs stopped at the limit
    (counted as the limit); ``x (i/N)`` over the i certified ones when others did not run."""
    g, stopped = R.geo_bound(insts, cfg)
    if g is not None:
        return _ms(g) if not stopped else f">={_ms(g)} ({stopped} t/o)"
    done = [n for n in insts if R.t(n, cfg) is not None]
    return f"{_ms(R.geo(done, cfg))} ({len(done)}/{len(insts)})" if done else "-"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if (a and b and math.isfinite(a)) else "-"


def _table1(R: Results) -> str:
    default = R.primary
    others = [("gpr", *DEFAULT, s) for s in R.table_scans[1:]]
    best = R.best_apfb()
    header = ["instance", "rows", "edges", "IM", "MM", f"G-PR {_scan_name(default[4])} (ms)"]
    header += [f"G-PR {_scan_name(o[4])} (ms)" for o in others]
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
        row += [_cell(R, n, o) for o in others]
        row += [_cell(R, n, best)]
        row += [_ms(refs[x][0]) if refs[x][0] not in (None, math.inf) else refs[x][1] for x in REFS]
        row += [_ratio(ta, tg), pr_cell]
        body.append(row)
    gm_g = R.geo(R.names, default)
    gm_a = R.geo(R.names, best) if best else None
    foot = ["geomean", "", "", "", "", _ms(gm_g)] + [_ms(R.geo(R.names, o)) for o in others]
    foot += [_ms(gm_a), "", "", "", _ratio(gm_a, gm_g), ""]
    body.append(foot)
    return (
        "\n### Table I analogue: solve times after the cheap matching\n\n"
        f"G-PR = G-PR-Shr (adaptive, 0.7), the paper's choice; the ratio columns use its "
        f"{_scan_name(default[4])} runs. The APFB/APsB column is the variant with the lowest "
        "geometric mean over these instances. GPU: median of the timed runs (CUDA events), "
        "after one warm-up. CPU references: one run each, in a subprocess with a time limit "
        "(`>T s`), on a CPU shared with the other reference jobs; scipy HK starts from the "
        "empty matching (SciPy takes no initial matching). IM / MM: initial (cheap) and "
        "maximum cardinality.\n\n" + common.md_table(header, body)
    )


def _fig1(R: Results) -> str:
    names = R.fig1_names
    missed = [n for n in R.names if n not in names]
    partial = [n for n in names if n not in R.fig1_full]
    parts = [
        f"\n### Fig. 1 analogue ({_scan_name(R.fig1_scan)})\n\n"
        f"Instances the sweep reached: {len(names)} of {len(R.names)}"
        + (f" (not reached: {', '.join(missed)})" if missed else "")
        + f"; with the full sweep (every configuration certified or stopped at the "
        f"per-run limit): {len(R.fig1_full)}"
        + (f" (partial: {', '.join(partial)})" if partial else "")
        + ". The aggregate tables are over the instances with the full sweep. Cells: "
        "geometric mean of the solve times (ms); `>=x (j t/o)`: j runs were stopped at "
        "the per-run limit and count as the limit, so x is a lower bound; `x (i/N)`: over "
        "the i certified instances only (the others failed), not comparable with full "
        "cells.\n"
    ]
    default = ("gpr", *DEFAULT, R.fig1_scan)
    header = ["instance", "rows", "edges", "IM", "MM", "Shr adaptive 0.7 (ms)", "fastest (ms)"]
    header += ["certified", "t/o", "not run", "wrong or failed"]
    body = []
    for n in names:
        inst = R.instances[n]
        times = {c: t for c in R.fig1_cfgs if (t := R.t(n, c)) is not None}
        cards = {
            int(r["cardinality"])
            for c in R.fig1_cfgs
            for r in R.runs.get((n, c), [])
            if r.get("status") == "ok"
        }
        st = [R.status(n, c) for c in R.fig1_cfgs]
        fast = min(times, key=times.get) if times else None
        body.append(
            [
                n,
                inst["n_rows"],
                inst["n_edges"],
                R.init.get(n, {}).get("init_cardinality", "-"),
                "/".join(map(str, sorted(cards))) or "-",
                _cell(R, n, default),
                f"{_short(fast)}: {_ms(times[fast])}" if fast else "-",
                st.count("ok"),
                st.count("timeout"),
                st.count("not run") + st.count("not_run"),
                sum(s in ("wrong", "error") for s in st),
            ]
        )
    parts.append(
        "\n#### Instances\n\n"
        "Per instance, over the sweep's configurations: IM / MM, the initial (cheap) and the "
        "certified maximum cardinality; the fastest configuration; how many configurations "
        "were certified, stopped at the limit, not run, wrong or failed.\n\n"
        + common.md_table(header, body)
    )

    header = ["strategy", "k"] + [GPR_LABEL[v] for v in GPR_VARIANTS]
    body = []
    for strategy, k in PAIRS:
        cells = [
            _geo_cell(R, R.fig1_full, ("gpr", v, strategy, float(k), R.fig1_scan))
            for v in GPR_VARIANTS
        ]
        body.append([strategy, f"{k:g}"] + cells)
    parts.append(
        "\n#### Over all instances with the full sweep\n\n" + common.md_table(header, body)
    )

    sets = R.sets(R.fig1_full)
    header = ["configuration"] + [f"{s} ({len(v)})" for s, v in sets.items()]
    body = [[_short(c)] + [_geo_cell(R, v, c) for v in sets.values()] for c in R.fig1_cfgs]
    parts.append("\n#### Per set\n\n" + common.md_table(header, body))

    # Best configurations per set, and where the paper's default ranks among the
    # configurations with a full (certified everywhere) result on the set.
    header = ["set", "#", "best", *(f"best {GPR_LABEL[v]}" for v in GPR_VARIANTS)]
    header += ["Shr adaptive 0.7", "its rank", "configs with t/o"]
    body = []
    for name, insts in sets.items():
        full = {c: g for c in R.fig1_cfgs if (g := R.geo(insts, c)) is not None}
        stopped = sum(1 for c in R.fig1_cfgs if R.geo_bound(insts, c)[1])

        def best(cfgs, full=full) -> str:
            cs = [c for c in cfgs if c in full]
            if not cs:
                return "-"
            c = min(cs, key=full.get)
            return f"{_short(c)}: {_ms(full[c])}"

        row = [name, len(insts), best(R.fig1_cfgs)]
        row += [best([c for c in R.fig1_cfgs if c[1] == v]) for v in GPR_VARIANTS]
        if default in full:
            rank = 1 + sum(1 for g in full.values() if g < full[default])
            row += [_ms(full[default]), f"{rank}/{len(full)}"]
        else:
            row += [_geo_cell(R, insts, default), "-"]
        body.append(row + [stopped])
    parts.append(
        "\n#### Best configuration per set\n\n"
        "Among the configurations certified on every instance of the set; the rank of "
        "the paper's default counts those with a lower geometric mean (1 = best), out of "
        "the configurations with a full result.\n\n" + common.md_table(header, body)
    )
    return "".join(parts)


def _counters(R: Results, cfg: tuple) -> str:
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
    persistent = cfg[4].startswith("tiered")
    if persistent:
        header += ["grid barriers", "local steps", "early stops"]
    body = []
    for n in R.names:
        r = R.last(n, cfg)
        if r is None or r.get("status") != "ok":
            continue
        c = r["counters"]
        share = r["t_relabel_s"] / r["t_solve_s"] if r.get("t_relabel_s") else float("nan")
        body.append(
            [n]
            + [c[k] for k in ("push_kernels", "global_relabels", "bfs_levels", "shrinks")]
            + [c[k] for k in ("kernel_launches", "graph_launches", "host_syncs")]
            + [f"{share:.0%}"]
            + (
                [c.get(k, "") for k in ("grid_barriers", "local_steps", "early_stops")]
                if persistent
                else []
            )
        )
    if cfg[4].startswith("tiered"):
        share_text = (
            "Relabel share: the device clock from the start of each global relabel to its "
            "last grid barrier, over the solve time. The whole solve is one kernel launch."
        )
    else:
        share_text = (
            "Relabel share: device time from the start of each global relabel to the host's "
            "read of its end (the shrink iteration and waits for the host included), over "
            "the solve time."
        )
    return (
        f"\n### {_label(cfg)}: counters of the last timed run\n\n"
        + share_text
        + "\n\n"
        + common.md_table(header, body)
    )


def _targets(R: Results) -> str:
    default = R.primary
    best = R.best_apfb()
    gm_g = R.geo(R.names, default)
    gm_a = R.geo(R.names, best) if best else None
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
    return "".join(lines)


def build_report(rows: list[dict[str, Any]]) -> str:
    """The tables of ``docs/benchmarks/mcm_gpr.md`` from benchmark rows.

    The Table I analogue, its counters and the targets appear when the run had the
    Table I phase; the Fig. 1 tables when it had the Fig. 1 phase; a Fig. 1-only run
    gives the counters of the default configuration under the sweep's scan instead.
    """
    R = Results(rows)
    d = R.device
    parts = [
        f"GPU: {d.get('gpu_model', '?')} (CUDA runtime {d.get('cuda_runtime_version', '?')}, "
        f"driver {d.get('cuda_driver_version', '?')}, CuPy {d.get('cupy_version', '?')}). "
        f"CPU: {d.get('cpu_model', '?')}, {d.get('cpu_count', '?')} logical cores. "
        f"Phases: {', '.join(R.phases)}.\n"
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
    if "table" in R.phases:
        parts.append(_table1(R))
    if "fig1" in R.phases:
        parts.append(_fig1(R))
    if "table" in R.phases:
        parts.append(_counters(R, R.primary))
        parts.append(_targets(R))
    else:
        parts.append(_counters(R, ("gpr", *DEFAULT, R.fig1_scan)))
    return "".join(parts)


def summary(rows: list[dict[str, Any]]) -> str:
    """A short table for the end of the console output."""
    R = Results(rows)
    best = R.best_apfb()
    cfgs = [("gpr", *DEFAULT, scan) for scan in R.table_scans]
    cfgs = [c for c in cfgs if any(k[1] == c for k in R.runs)]
    if "fig1" in R.phases:
        cfgs += [("gpr", v, "adaptive", 0.7, R.fig1_scan) for v in ("first", "noshr")]
    cfgs += [best] if best else []
    head = f"{'instance':24s} " + " ".join(f"{_label(c)[:22]:>22s}" for c in cfgs)
    lines = [head + f" {'PR':>9s} {'scipy':>9s} {'fig1 ok/t.o./not run':>21s}"]
    for n in R.names:
        cells = " ".join(f"{_cell(R, n, c):>22s}" for c in cfgs)
        refs = f" {R.ref(n, 'pr')[1]:>9s} {R.ref(n, 'scipy_hk')[1]:>9s}"
        st = [R.status(n, c) for c in R.fig1_cfgs]
        fig1 = f"{st.count('ok')}/{st.count('timeout')}/{len(st) - st.count('ok') - st.count('timeout')}"
        lines.append(f"{n:24s} {cells}{refs} {fig1:>21s}")
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
    p.add_argument(
        "--phases",
        nargs="+",
        choices=PHASES,
        default=list(PHASES),
        help="GPU phases to run (always in the order table, fig1)",
    )
    p.add_argument(
        "--order",
        choices=ORDERS,
        default="size",
        help="instance order of the GPU phases: fewest edges first, or that of --only",
    )
    p.add_argument("--no-apfb", dest="apfb", action="store_false")
    p.add_argument(
        "--scans",
        nargs="+",
        default=["tiered", "warp"],
        type=scan_arg,
        help="G-PR modes of the Table I phase (tiered: the persistent kernel, "
        "tiered-<full|stop>-<grid|local<N>> with those options, see persistent_options; "
        "thread, warp: the host loop with that scan); the first one is the Table I "
        "ratios' and Fig. 1's",
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
    args.phases = [x for x in PHASES if x in args.phases]
    if args.order == "given" and not args.only and not args.report:
        p.error("--order given needs --only FAMILY:SCALE ...")
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
