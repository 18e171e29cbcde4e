"""LAP benchmark: Date & Nagi 2016, Tables 1 and 3 (and Sec. 6.3 scaling) on this host.

::

    python -m matchbench.bench.lap --out DIR [--reps 3] [--cpu-timeout 100] [--scaling]

GPU runs (``cu_class``; ``cu_tree``, whose default is the persistent kernel; and
``cu_tree`` with ``persistent: false``, the paper's host-driven loop, labelled
``cu_tree host``) happen in this process: per instance one warm-up run (compilation) and
``--reps`` timed runs (CUDA events, ``timings()["solve"]``, median), the phase times of the
median run, the solver's counters, and the CuPy pool's bytes after the runs (the pool is
emptied before the first one) as the peak GPU memory. Every GPU answer is certified by
:meth:`matchbench.problems.assignment.LAP.verify` from its duals. The persistent kernel
has no phase split, so Table 3's CU-TREE phase columns come from the host loop.

CPU references (``scipy_lsa``, ``lapjv``, ``hungarian_tree``) run in subprocesses, one
per (solver, cost range) chain of increasing n, several chains at a time, each run
killed after ``--cpu-timeout`` seconds; a chain stops at its first timeout (larger n
would take longer) and the table says ``> T``. A CPU answer counts as optimal when it is a
permutation whose cost equals the certified GPU optimum of the same instance (the GPU
duals bound every permutation's cost from below), else, for n <= 5000, when the verifier
certifies it with derived duals.

Tables: ``Table 1``: n = 500..5000, costs in [0, n]; ``Table 3``: n = 5000..20000, costs in
[0, n/10], [0, n], [0, 10n]; the cost per BFS level of both CU-TREE modes (levels,
launches, host syncs, grid barriers); an ablation at ``--ablation-sizes`` (the host loop's
shapes down to the paper's loop; with ``--tree-tiles``, the persistent kernel with more
column tiles per block); ``n = 40000`` on one GPU; peak GPU memory against the n^2 cost
bytes; with ``--scaling`` and at least two GPUs, the weak (n = 10000 -> 14142) and strong
(n = 10000, 20000) scaling of Sec. 6.3 with ``devices = 2`` (CU-TREE's host loop: the
persistent kernel is one GPU's). The paper's numbers (NVIDIA K20X; their totals include
host/device setup, ours are the solve alone) are printed beside ours. Results:
``results.jsonl`` (one line per measurement) and ``summary.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from matchbench.bench.common import make_solver

GPU_SOLVERS = ("cu_class", "cu_tree")
#: The GPU variants of Tables 1 and 3: (label, algorithm, parameters). ``cu_tree`` runs its
#: default, the persistent kernel; ``cu_tree host`` the paper's host-driven loop.
GPU_VARIANTS = (
    ("cu_class", "cu_class", {}),
    ("cu_tree", "cu_tree", {}),
    ("cu_tree host", "cu_tree", {"persistent": False}),
)
CPU_SOLVERS = ("scipy_lsa", "lapjv", "hungarian_tree")
RANGES = ("n/10", "n", "10n")
TABLE1_N = tuple(range(500, 5001, 500))
TABLE3_N = (5000, 10000, 15000, 20000)
ABLATION_N = (5000, 20000)
BIG_N = 40000

#: Date & Nagi 2016 (K20X), Table 1: n -> (CU-CLASS, CU-TREE) seconds, costs in [0, n].
PAPER_T1 = {
    500: (0.51, 0.45),
    1000: (0.60, 0.50),
    1500: (0.68, 0.70),
    2000: (0.84, 0.82),
    2500: (0.86, 0.87),
    3000: (0.98, 1.32),
    3500: (1.11, 1.48),
    4000: (1.19, 1.56),
    4500: (1.24, 1.59),
    5000: (1.39, 1.70),
}
#: Table 3 totals: (range, n) -> (CU-CLASS, CU-TREE) seconds.
PAPER_T3 = {
    ("n/10", 5000): (0.44, 0.51),
    ("n/10", 10000): (0.63, 1.15),
    ("n/10", 15000): (0.97, 1.55),
    ("n/10", 20000): (1.41, 2.05),
    ("n", 5000): (1.43, 1.39),
    ("n", 10000): (2.44, 2.17),
    ("n", 15000): (3.85, 3.21),
    ("n", 20000): (5.69, 4.22),
    ("10n", 5000): (4.40, 3.86),
    ("10n", 10000): (9.74, 6.67),
    ("10n", 15000): (20.78, 9.81),
    ("10n", 20000): (30.05, 12.81),
}


def instance(n: int, cost_range: str, seed: int):
    from matchbench.datasets import lap

    return lap.uniform(n, cost_range, seed=seed)


# ---------------------------------------------------------------------------------------
# CPU references, one subprocess per run


def cpu_worker(name: str, n: int, cost_range: str, seed: int) -> None:
    """Subprocess body: time one CPU solve (after a small warm-up); check the answer.

    Prints one JSON line: the seconds, whether the answer is a permutation, its cost
    recomputed from the matrix and, for n <= 5000, the verifier's verdict with derived
    duals (larger answers are certified against the GPU's dual bound by the parent).
    """
    from matchbench.problems.assignment import LAP

    warm = instance(16, cost_range, seed)
    solver = make_solver(name)
    skip, reason = solver.skip(warm)
    if skip:
        print(json.dumps({"skipped": reason}))
        return
    solver.prepare(warm)
    solver.run()  # JIT compilation and imports stay out of the timing
    inst = instance(n, cost_range, seed)
    solver.prepare(inst)
    t0 = time.perf_counter()
    solver.run()
    t = time.perf_counter() - t0
    perm = np.asarray(solver.result().row_to_col, dtype=np.int64)
    is_perm = perm.shape == (n,) and np.array_equal(np.sort(perm), np.arange(n))
    row = {"seconds": t, "is_perm": bool(is_perm)}
    if is_perm:
        row["objective"] = float(inst.costs[np.arange(n), perm].astype(np.float64).sum())
        if n <= 5000:
            v = LAP().verify(inst, perm)
            row["verified_derived"], row["reason"] = v.verified, v.reason
    print(json.dumps(row))


class CpuChains:
    """Runs (solver, range) chains of increasing n in parallel subprocesses."""

    def __init__(
        self,
        jobs: dict[tuple[str, str], list[int]],
        seed: int,
        timeout: float,
        workers: int,
        deadline: float,
    ):
        self.results: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.seed, self.timeout, self.deadline = seed, timeout, deadline
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()
        self._pool = ThreadPoolExecutor(max_workers=workers)
        self._futures = [self._pool.submit(self._chain, s, r, ns) for (s, r), ns in jobs.items()]

    def _chain(self, solver: str, cost_range: str, ns: list[int]) -> None:
        for k, n in enumerate(ns):
            key = (solver, cost_range, n)
            left = self.deadline - time.monotonic()
            if left < 5:
                self.results[key] = {"status": "not run (bench deadline)"}
                continue
            cmd = [
                sys.executable,
                "-m",
                "matchbench.bench.lap",
                "--cpu-worker",
                solver,
                "--n",
                str(n),
                "--range",
                cost_range,
                "--seed",
                str(self.seed),
            ]
            limit = min(self.timeout, left)
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            with self._lock:
                self._procs.add(proc)
            try:
                out, err = proc.communicate(timeout=limit)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                self.results[key] = {"status": "timeout", "limit_s": limit}
                for m in ns[k + 1 :]:
                    self.results[(solver, cost_range, m)] = {
                        "status": f"not run (timed out at n={n})",
                        "limit_s": limit,
                    }
                return
            finally:
                with self._lock:
                    self._procs.discard(proc)
            if proc.returncode != 0:
                self.results[key] = {"status": "error", "error": err.strip()[-500:]}
                continue
            line = json.loads(out.strip().splitlines()[-1])
            if "skipped" in line:
                self.results[key] = {"status": "skipped", "reason": line["skipped"]}
                continue
            self.results[key] = {"status": "ok", **line}

    def wait(self) -> None:
        for f in self._futures:
            f.result()
        self._pool.shutdown()


# ---------------------------------------------------------------------------------------
# GPU runs


def gpu_measure(name: str, inst, reps: int, **params: Any) -> dict[str, Any]:
    """Warm-up plus ``reps`` timed runs of one GPU solver; the answer certified."""
    import cupy as cp

    from matchbench.problems.assignment import LAP

    pool = cp.get_default_memory_pool()
    solver = make_solver(name, **params)
    skip, reason = solver.skip(inst)
    if skip:
        return {"status": "skipped", "reason": reason}
    pool.free_all_blocks()
    runs = []
    for rep in range(reps + 1):
        solver.prepare(inst)
        solver.run()
        t = solver.timings()
        if rep:
            runs.append((t, solver.counters()))
    peak = solver.memory_peak_bytes() or int(pool.total_bytes())
    ans = solver.result()
    v = LAP().verify(inst, ans)
    runs.sort(key=lambda r: r[0]["solve"])
    t, counters = runs[len(runs) // 2]
    out = {
        "status": "ok" if v.verified else "not certified",
        "verified": v.verified,
        "reason": v.reason,
        "objective": v.objective,
        "solve_s": t["solve"],
        "solve_all_s": sorted(r[0]["solve"] for r in runs),
        "phases": {k: x for k, x in t.items() if k != "solve"},
        "counters": counters,
        "gpu_peak_bytes": int(peak),
        "cost_bytes": int(inst.costs.nbytes),
    }
    del solver
    pool.free_all_blocks()
    return out


# ---------------------------------------------------------------------------------------
# Tables


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:.{digits}g}" if x < 100 else f"{x:.0f}"


def _cpu_cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if r.get("status") == "ok":
        mark = "" if r.get("certified") else " (UNCERTIFIED)"
        return _fmt(r["seconds"]) + mark
    if r.get("status") == "timeout" or str(r.get("status", "")).startswith("not run (timed"):
        return f"> {r['limit_s']:.0f}"
    return str(r.get("status"))


def _gpu_cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "-"
    if r.get("status") != "ok":
        return str(r.get("status"))
    return _fmt(r["solve_s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpu-timeout", type=float, default=100.0)
    ap.add_argument("--cpu-workers", type=int, default=6)
    ap.add_argument(
        "--deadline",
        type=float,
        default=3600.0,
        help="seconds from start after which no new measurement starts",
    )
    ap.add_argument("--scaling", action="store_true")
    ap.add_argument("--skip", default="", help="comma list of: t1,t3,ablation,big,cpu")
    ap.add_argument("--t1-sizes", help="comma list of n for Table 1 (default 500..5000)")
    ap.add_argument("--t3-sizes", help="comma list of n for Table 3 (default 5000..20000)")
    ap.add_argument(
        "--ablation-sizes", help="comma list of n for the ablation (default 5000,20000)"
    )
    ap.add_argument(
        "--tree-tiles",
        default="",
        help="comma list of tiles_per_block for the persistent cu_tree, measured at the "
        "Table 3 sizes with costs in [0, n] and [0, 10n] (default: none)",
    )
    ap.add_argument("--cpu-worker")
    ap.add_argument("--n", type=int)
    ap.add_argument("--range")
    args = ap.parse_args(argv)
    if args.cpu_worker:
        cpu_worker(args.cpu_worker, args.n, args.range, args.seed)
        return 0
    return run_bench(args)


def run_bench(args) -> int:  # noqa: C901 - one linear script
    import cupy as cp

    global TABLE1_N, TABLE3_N, ABLATION_N
    if args.t1_sizes:
        TABLE1_N = tuple(int(x) for x in args.t1_sizes.split(","))
    if args.t3_sizes:
        TABLE3_N = tuple(int(x) for x in args.t3_sizes.split(","))
    if args.ablation_sizes:
        ABLATION_N = tuple(int(x) for x in args.ablation_sizes.split(","))
    tiles = [int(x) for x in args.tree_tiles.split(",") if x.strip()]

    from matchbench.solvers.gpu.common import device_info

    t_start = time.monotonic()
    deadline = t_start + args.deadline
    skip = set(filter(None, args.skip.split(",")))
    out = args.out or Path(tempfile.mkdtemp(prefix="lapbench_"))
    out.mkdir(parents=True, exist_ok=True)
    info = device_info()
    info["host_cpus"] = os.cpu_count()
    print(
        f"# LAP benchmark on {info['gpu_model']} x{info['gpu_count']}, "
        f"CUDA runtime {info['cuda_runtime_version']}, CuPy {info['cupy_version']}",
        flush=True,
    )
    results = open(out / "results.jsonl", "w")  # noqa: SIM115 - kept open for the whole run

    def record(**row: Any) -> None:
        row["t_bench_s"] = round(time.monotonic() - t_start, 1)
        results.write(json.dumps(row, default=str) + "\n")
        results.flush()

    record(kind="device", **info)

    # CPU chains start first and run beside the GPU measurements.
    jobs: dict[tuple[str, str], list[int]] = {}
    if "cpu" not in skip:
        for s in CPU_SOLVERS:
            if "t1" not in skip:
                jobs[(s, "n")] = list(TABLE1_N)
            if "t3" not in skip:
                for r in RANGES:
                    ns = jobs.setdefault((s, r), [])
                    ns += [n for n in TABLE3_N if n not in ns]
    cpu = CpuChains(jobs, args.seed, args.cpu_timeout, args.cpu_workers, deadline)

    # Keys: (label, range, n, what), ``what`` = 1 for the variant as configured, or a
    # label of an ablation ("unfused", "paper_loop", ("tiles", t), ("scaling", devices)).
    gpu: dict[tuple[Any, ...], dict[str, Any]] = {}

    def measure(label: str, name: str, n: int, r: str, what: Any = 1, inst=None, **params):
        key = (label, r, n, what)
        if key in gpu:
            return gpu[key]
        if time.monotonic() > deadline:
            res = {"status": "not run (bench deadline)"}
        else:
            inst = inst or instance(n, r, args.seed)
            try:
                res = gpu_measure(name, inst, args.reps, **params)
            except Exception as exc:  # a failed run is a row, not a lost benchmark
                res = {
                    "status": f"error: {type(exc).__name__}: {exc}"[:300],
                    "traceback": traceback.format_exc()[-2000:],
                }
        gpu[key] = res
        record(
            kind="gpu",
            label=label,
            algorithm=name,
            n=n,
            cost_range=r,
            what=what,
            params=params,
            **res,
        )
        print(
            f"  {label:13s} n={n:6d} [0,{r:4s}] {what!s:14s}: {_gpu_cell(res)} s "
            f"{res.get('status')} phases={ {k: round(v, 4) for k, v in res.get('phases', {}).items()} } "
            f"counters={res.get('counters')}",
            flush=True,
        )
        return res

    def variants(n: int, r: str, inst) -> None:
        for label, name, params in GPU_VARIANTS:
            measure(label, name, n, r, inst=inst, **params)

    if "t1" not in skip:
        print("## Table 1", flush=True)
        for n in TABLE1_N:
            variants(n, "n", instance(n, "n", args.seed))
    if "t3" not in skip:
        print("## Table 3", flush=True)
        for r in RANGES:
            for n in TABLE3_N:
                inst = instance(n, r, args.seed)
                variants(n, r, inst)
                if tiles and r in ("n", "10n"):
                    for t in tiles:
                        measure(
                            "cu_tree", "cu_tree", n, r, ("tiles", t), inst=inst, tiles_per_block=t
                        )
                del inst
    if "ablation" not in skip:
        print("## ablation: the paper's loop (separate contraction, host check per level)")
        for n in ABLATION_N:
            inst = instance(n, "10n", args.seed)
            variants(n, "10n", inst)
            for label, name, base in GPU_VARIANTS:
                if label == "cu_tree":
                    continue  # the persistent kernel has no host loop to reshape
                for what, params in (
                    ("unfused", {"fuse": False}),
                    ("paper_loop", {"fuse": False, "batch": 1}),
                ):
                    measure(label, name, n, "10n", what, inst=inst, **base, **params)
            del inst
    if "big" not in skip:
        print(f"## n = {BIG_N}", flush=True)
        inst = instance(BIG_N, "10n", args.seed) if time.monotonic() < deadline else None
        for label, name, params in GPU_VARIANTS:
            measure(label, name, BIG_N, "10n", inst=inst, **params)
        del inst
    scaling_rows = []
    if args.scaling:
        count = cp.cuda.runtime.getDeviceCount()
        if count < 2:
            print(f"## scaling: not run ({count} GPU)", flush=True)
        else:
            print("## scaling (devices = 2; cu_tree's host loop)", flush=True)
            for n, devs in SCALING:
                inst = instance(n, "10n", args.seed)
                for label, name, params in GPU_VARIANTS:
                    if label == "cu_tree":
                        continue
                    measure(
                        label, name, n, "10n", ("scaling", devs), inst=inst, devices=devs, **params
                    )
                    scaling_rows.append((label, n, devs))
                del inst

    print("## waiting for the CPU references", flush=True)
    cpu.wait()
    for (s, r, n), res in sorted(cpu.results.items()):
        if res.get("status") == "ok":
            ref = next(
                (
                    g
                    for (_lb, rr, nn, _w), g in gpu.items()
                    if rr == r and nn == n and g.get("verified")
                ),
                None,
            )
            if not res.get("is_perm"):
                res["certified"], res["certificate"] = False, "not a permutation"
            elif ref is not None:
                # Integer costs: the GPU's certified optimum equals the dual bound exactly.
                res["certified"] = res["objective"] == ref["objective"]
                res["certificate"] = "cost equals the GPU's certified dual bound"
            elif "verified_derived" in res:
                res["certified"] = res["verified_derived"]
                res["certificate"] = "derived duals" if res["certified"] else res.get("reason")
            else:
                res["certified"], res["certificate"] = False, "no certificate available"
        record(kind="cpu", algorithm=s, n=n, cost_range=r, **res)

    summary = render(gpu, cpu.results, info, args, scaling_rows, skip, tiles)
    (out / "summary.md").write_text(summary)
    print(summary, flush=True)
    results.close()
    return 0


SCALING = ((10000, 1), (10000, 2), (14142, 2), (20000, 1), (20000, 2))


def _speedup(cpu_r: dict[str, Any] | None, gpu_s: float | None) -> str:
    if not cpu_r or gpu_s is None:
        return "-"
    if cpu_r.get("status") == "ok":
        return f"{cpu_r['seconds'] / gpu_s:.0f}x"
    if "limit_s" in cpu_r:
        return f"> {cpu_r['limit_s'] / gpu_s:.0f}x"
    return "-"


def render(gpu, cpu, info, args, scaling_rows, skip, tiles=()) -> str:  # noqa: C901
    L = [
        f"GPU: {info['gpu_model']} (x{info['gpu_count']}), CUDA runtime "
        f"{info['cuda_runtime_version']}, driver {info['cuda_driver_version']}, CuPy "
        f"{info['cupy_version']}; host CPUs: {info['host_cpus']}. Seed {args.seed}, one "
        f"instance per row, median of {args.reps} runs after one warm-up; seconds. CPU "
        f"references in subprocesses, limit {args.cpu_timeout:.0f} s, up to "
        f"{args.cpu_workers} at a time. `cu_tree` is the persistent kernel (its default), "
        "`cu_tree host` the host-driven loop (`persistent: false`).",
        "",
    ]
    labels = [v[0] for v in GPU_VARIANTS]

    def g(label, r, n, what=1):
        return gpu.get((label, r, n, what))

    def gs(label, r, n, what=1):
        x = g(label, r, n, what)
        return x["solve_s"] if x and x.get("status") == "ok" else None

    def best(r, n):
        ts = [(gs(lb, r, n), lb) for lb in labels]
        return min(((t, lb) for t, lb in ts if t), default=(None, None))

    def optimum(r, n):
        return next(
            (x.get("objective") for x in (g(lb, r, n) for lb in labels) if x and x.get("verified")),
            None,
        )

    if "t1" not in skip:
        L += [
            "### Table 1: costs in [0, n]",
            "",
            "| n | optimum | cu_class | cu_tree | cu_tree host | paper CU-CLASS | paper CU-TREE "
            "| scipy_lsa | lapjv | hungarian_tree (numba) |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for n in TABLE1_N:
            pc, pt = PAPER_T1.get(n, ("-", "-"))
            L.append(
                f"| {n} | {_fmt(optimum('n', n), 8)} | "
                + " | ".join(_gpu_cell(g(lb, "n", n)) for lb in labels)
                + f" | {pc} | {pt} | "
                f"{_cpu_cell(cpu.get(('scipy_lsa', 'n', n)))} | "
                f"{_cpu_cell(cpu.get(('lapjv', 'n', n)))} | "
                f"{_cpu_cell(cpu.get(('hungarian_tree', 'n', n)))} |"
            )
        L.append("")
    if "t3" not in skip:
        for r in RANGES:
            L += [
                f"### Table 3: costs in [0, {r}]",
                "",
                "Phase columns: cu_class and the CU-TREE host loop (the persistent kernel has "
                "no phase split).",
                "",
                "| n | optimum | initial assignments | cu_class compression | forward "
                "pass | dual update | total | paper | cu_tree host forward pass | dual update "
                "| total | cu_tree (persistent) total | paper | scipy_lsa | lapjv | "
                "hungarian_tree |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for n in TABLE3_N:
                c, h, t = (g(lb, r, n) or {} for lb in ("cu_class", "cu_tree host", "cu_tree"))
                ok = [x for x in (t, h, c) if x.get("verified")]
                init = ok[0]["counters"].get("initial_assignments") if ok else None
                cp_, hp_ = c.get("phases", {}), h.get("phases", {})
                pc, pt = PAPER_T3.get((r, n), ("-", "-"))
                L.append(
                    f"| {n} | {_fmt(optimum(r, n), 10)} | {init if init is not None else '-'} | "
                    f"{_fmt(cp_.get('compression'))} | {_fmt(cp_.get('forward_pass'))} | "
                    f"{_fmt(cp_.get('dual_update'))} | {_gpu_cell(c or None)} | {pc} | "
                    f"{_fmt(hp_.get('forward_pass'))} | {_fmt(hp_.get('dual_update'))} | "
                    f"{_gpu_cell(h or None)} | {_gpu_cell(t or None)} | {pt} | "
                    f"{_cpu_cell(cpu.get(('scipy_lsa', r, n)))} | "
                    f"{_cpu_cell(cpu.get(('lapjv', r, n)))} | "
                    f"{_cpu_cell(cpu.get(('hungarian_tree', r, n)))} |"
                )
            L.append("")
        L += [
            "### Speedups (CPU seconds / best GPU seconds, same host)",
            "",
            "| range | n | best GPU | variant | vs scipy_lsa | vs lapjv | vs hungarian_tree |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in RANGES:
            for n in TABLE3_N:
                b, lb = best(r, n)
                L.append(
                    f"| [0, {r}] | {n} | {_fmt(b)} | {lb or '-'} | "
                    f"{_speedup(cpu.get(('scipy_lsa', r, n)), b)} | "
                    f"{_speedup(cpu.get(('lapjv', r, n)), b)} | "
                    f"{_speedup(cpu.get(('hungarian_tree', r, n)), b)} |"
                )
        L.append("")
        L += [
            "### CU-TREE per BFS level: persistent kernel vs host loop",
            "",
            "| range | n | mode | solve s | BFS levels | dual updates | phases | kernel "
            "launches | host syncs | grid barriers | us per level |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in RANGES:
            for n in TABLE3_N:
                for lb in ("cu_tree", "cu_tree host"):
                    x = g(lb, r, n) or {}
                    c = x.get("counters") or {}
                    lv = c.get("bfs_levels")
                    per = (
                        f"{1e6 * x['solve_s'] / lv:.2f}" if x.get("status") == "ok" and lv else "-"
                    )
                    L.append(
                        f"| [0, {r}] | {n} | {'persistent' if lb == 'cu_tree' else 'host'} | "
                        f"{_gpu_cell(x or None)} | {lv if lv is not None else '-'} | "
                        f"{c.get('dual_updates', '-')} | {c.get('phases', '-')} | "
                        f"{c.get('kernel_launches', '-')} | {c.get('host_syncs', '-')} | "
                        f"{c.get('grid_barriers', '-')} | {per} |"
                    )
        L.append("")
        if tiles:
            L += [
                "### Persistent cu_tree: column tiles per block (grid barrier size vs "
                "parallelism per level)",
                "",
                "| range | n | "
                + " | ".join(["auto"] + [f"{t} tiles" for t in tiles])
                + " | blocks (auto) |",
                "|---|---|" + "---|" * (len(tiles) + 2),
            ]
            for r in ("n", "10n"):
                for n in TABLE3_N:
                    auto = g("cu_tree", r, n) or {}
                    cells = [_gpu_cell(auto or None)] + [
                        _gpu_cell(g("cu_tree", r, n, ("tiles", t))) for t in tiles
                    ]
                    blocks = (auto.get("counters") or {}).get("persistent_blocks", "-")
                    L.append(f"| [0, {r}] | {n} | " + " | ".join(cells) + f" | {blocks} |")
            L.append("")
    if "ablation" not in skip:
        L += [
            "### Ablation, costs in [0, 10n]: persistent kernel, host loop, the paper's loop",
            "",
            "| algorithm | n | persistent kernel | host loop: fused, batch 16 | separate "
            "contraction kernel | and a host check per level | BFS levels (host loop) | "
            "host syncs (host loop) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for lb in ("cu_class", "cu_tree host"):
            for n in ABLATION_N:
                d = g(lb, "10n", n) or {}
                c = d.get("counters") or {}
                pers = _gpu_cell(g("cu_tree", "10n", n)) if lb == "cu_tree host" else "-"
                L.append(
                    f"| {lb.split()[0]} | {n} | {pers} | {_gpu_cell(d or None)} | "
                    f"{_gpu_cell(g(lb, '10n', n, 'unfused'))} | "
                    f"{_gpu_cell(g(lb, '10n', n, 'paper_loop'))} | "
                    f"{c.get('bfs_levels', '-')} | {c.get('host_syncs', '-')} |"
                )
        L.append("")
    if "big" not in skip:
        L += [
            f"### n = {BIG_N}, costs in [0, 10n], one GPU",
            "",
            "| algorithm | status | solve s | phases | GPU peak GiB | n^2 cost GiB |",
            "|---|---|---|---|---|---|",
        ]
        for lb in labels:
            x = g(lb, "10n", BIG_N) or {}
            ph = ", ".join(f"{k} {v:.3g}" for k, v in x.get("phases", {}).items())
            L.append(
                f"| {lb} | {x.get('status', '-')} | {_gpu_cell(x or None)} | {ph} | "
                f"{_fmt(x.get('gpu_peak_bytes', 0) / 2**30)} | "
                f"{_fmt(BIG_N * BIG_N * 4 / 2**30)} |"
            )
        L.append("")
    L += [
        "### Peak GPU memory (CuPy pool) against the n^2 cost bytes",
        "",
        "| algorithm | n | range | peak GiB | cost GiB | peak / cost |",
        "|---|---|---|---|---|---|",
    ]
    for (lb, r, n, what), x in sorted(gpu.items(), key=lambda kv: (kv[0][0], kv[0][2])):
        if x.get("status") == "ok" and what == 1 and n >= 5000 and r == "10n":
            L.append(
                f"| {lb} | {n} | [0, {r}] | {x['gpu_peak_bytes'] / 2**30:.3f} | "
                f"{x['cost_bytes'] / 2**30:.3f} | {x['gpu_peak_bytes'] / x['cost_bytes']:.3f} |"
            )
    L.append("")
    if scaling_rows:
        L += [
            "### Scaling with devices = 2, costs in [0, 10n] (Sec. 6.3)",
            "",
            "| algorithm | n | GPUs | solve s | efficiency |",
            "|---|---|---|---|---|",
        ]
        for lb in ("cu_class", "cu_tree host"):
            for n, d in SCALING:
                t = gs(lb, "10n", n, ("scaling", d))
                t1 = gs(lb, "10n", 10000 if n in (10000, 14142) else n, ("scaling", 1))
                eff = "-"
                if t and t1 and d == 2:
                    eff = f"weak {t1 / t:.2f}" if n == 14142 else f"strong {t1 / (2 * t):.2f}"
                L.append(f"| {lb} | {n} | {d} | {_fmt(t)} | {eff} |")
        L.append("")
    # targets
    L += ["### Targets", ""]
    best20, lb20 = best("10n", 20000)
    L.append(
        f"- n = 20000, [0, 10n] under 1.0 s: best {_fmt(best20)} s ({lb20 or '-'}) -> "
        f"{'met' if best20 is not None and best20 < 1.0 else 'NOT met'}"
    )
    for s, goal in (("scipy_lsa", 100), ("lapjv", 30)):
        ratios = []
        for r in RANGES:
            for n in TABLE3_N:
                b, lb = best(r, n)
                c = cpu.get((s, r, n))
                if b and c and c.get("status") == "ok":
                    ratios.append((c["seconds"] / b, f"[0,{r}] n={n} ({lb})", False))
                elif b and c and "limit_s" in c:
                    ratios.append((c["limit_s"] / b, f"[0,{r}] n={n} ({lb})", True))
        w = min(ratios, default=None)
        if w is None:
            L.append(f"- >= {goal}x faster than {s} at n >= 5000: no measurement")
        else:
            bound = " (lower bound, CPU timed out)" if w[2] else ""
            missed = [x for x in ratios if x[0] < goal]
            L.append(
                f"- >= {goal}x faster than {s} at n >= 5000: smallest speedup {w[0]:.0f}x "
                f"at {w[1]}{bound} -> {'met' if not missed else 'NOT met'}"
                + (f" ({len(missed)} of {len(ratios)} rows below)" if missed else "")
            )
    big = [(lb, g(lb, "10n", BIG_N) or {}) for lb in labels]
    solved = [lb for lb, x in big if x.get("verified")]
    L.append(f"- n = {BIG_N} solved on one GPU: {', '.join(solved) or 'NOT met'}")
    bad = [
        k
        for k, x in gpu.items()
        if x.get("status") not in ("ok", "skipped")
        and not str(x.get("status")).startswith("not run")
    ]
    L.append(f"- GPU answers not certified or failed: {bad or 'none'}")
    bad = [k for k, x in cpu.items() if x.get("status") == "ok" and not x.get("certified")]
    L.append(f"- CPU answers not certified: {bad or 'none'}")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
