"""Synthetic result rows with known answers, written through the real ``RunWriter``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from matchbench.results.store import RunWriter

GPU = "NVIDIA H100 80GB HBM3"

#: Problem declarations for tests: the two registered families plus an approximate one,
#: so no test depends on which problem modules exist yet.
PROBLEMS = {
    "mcm": {"objective": "cardinality", "sense": "max", "exact": True},
    "lap": {"objective": "cost", "sense": "min", "exact": True},
    "wmatch": {"objective": "weight", "sense": "max", "exact": False},
}


def rows_for(
    times: Iterable[float],
    *,
    problem: str = "mcm",
    algorithm: str = "apfb",
    variant: str = "",
    instance: str = "inst-0",
    family: str = "fam",
    run_id: str = "run-a",
    git_commit: str = "a" * 40,
    timestamp: datetime | None = None,
    gpu_model: str | None = GPU,
    device: str = "gpu",
    objective: float | Sequence[float] = 100.0,
    objective_init: float | None = 80.0,
    reference_objective: float | None = None,
    bound: float | None = None,
    verified: bool | Sequence[bool] = True,
    status: str | Sequence[str] = "ok",
    n_rows: int = 1000,
    n_edges: int = 5000,
    phases: dict[str, float] | None = None,
    error: str | None = None,
) -> list[dict[str, Any]]:
    """One row per repetition time; per-repetition sequences for objective, verified, status."""
    times = list(times)
    k = len(times)

    def each(v: Any) -> list[Any]:
        return list(v) if isinstance(v, list | tuple | np.ndarray) else [v] * k

    ts = timestamp or datetime(2025, 1, 1, tzinfo=UTC)
    rows = []
    for rep, (t, obj, ver, st) in enumerate(
        zip(times, each(objective), each(verified), each(status), strict=True)
    ):
        ok = st == "ok"
        rows.append(
            {
                "run_id": run_id,
                "task_id": f"{problem}-{algorithm}-{variant}-{instance}",
                "git_commit": git_commit,
                "timestamp": ts,
                "host": "synthetic",
                "gpu_model": gpu_model,
                "problem": problem,
                "instance": instance,
                "family": family,
                "n_rows": n_rows,
                "n_cols": n_rows,
                "n_edges": n_edges,
                "algorithm": algorithm,
                "variant": variant,
                "params_json": json.dumps({}),
                "device": device,
                "repetition": rep,
                "n_repetitions": k,
                "status": st,
                "error_type": None if ok else "RuntimeError",
                "error": None if ok else (error or f"synthetic {st}"),
                "t_init_s": 0.001,
                "t_transfer_s": 0.002 if device == "gpu" else None,
                "t_prepare_s": 0.003,
                "t_solve_s": float(t) if ok else None,
                "phases_json": json.dumps(phases) if phases else None,
                "objective": float(obj) if ok else None,
                "objective_init": objective_init,
                "reference_objective": reference_objective,
                "bound": bound,
                "verified": bool(ver) if ok else None,
                "verify_reason": None if (ver or not ok) else "synthetic: not optimal",
            }
        )
    return rows


def write_run(
    root: Path, rows: list[dict[str, Any]], *, run_id: str | None = None, date: str = "2025-01-01"
) -> Path:
    """Write rows as one run (one task file per algorithm x variant x instance)."""
    run_id = run_id or rows[0]["run_id"]
    writer = RunWriter(root, run_id, date)
    tasks: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        tasks.setdefault(r["task_id"], []).append({**r, "run_id": run_id})
    for i, (_, task_rows) in enumerate(sorted(tasks.items())):
        writer.write_task(f"{i:04d}", task_rows)
    writer.write_manifest({"run_id": run_id, "jobs": []})
    return writer.dir


def noisy_times(rng: np.random.Generator, median: float, k: int, sigma: float = 0.05) -> np.ndarray:
    """``k`` log-normal repetition times around ``median`` (relative spread ``sigma``)."""
    return median * np.exp(rng.normal(0.0, sigma, k))


def benchmark_rows(
    *,
    seed: int = 0,
    run_id: str = "run-a",
    git_commit: str = "a" * 40,
    timestamp: datetime | None = None,
    repetitions: int = 5,
    slowdown: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """A small but complete benchmark: two exact problems and one approximate, two dataset
    families, GPU and CPU solvers, an algorithm with variants, a failure and an unverified answer.
    """
    rng = np.random.default_rng(seed)
    slowdown = slowdown or {}
    sigma = 0.02  # spread small enough that only planted changes pass the 10% rule
    ts = timestamp or datetime(2025, 1, 1, tzinfo=UTC)
    rows: list[dict[str, Any]] = []
    instances = [
        ("road-1", "road", 1_000, 3_000),
        ("road-2", "road", 10_000, 40_000),
        ("road-3", "road", 100_000, 500_000),
        ("kron-1", "kron", 2_000, 20_000),
        ("kron-2", "kron", 20_000, 300_000),
    ]
    # mcm: two GPU variants (Deveci et al. 2013 Table 1 style) and two CPU references
    speed = {
        ("apfb", "kernel=bfs_wr,threads=ct"): (1.0, "gpu"),
        ("apfb", "kernel=bfs,threads=mt"): (2.0, "gpu"),
        ("hk_cpu", ""): (6.0, "cpu"),
        ("pfp_cpu", ""): (4.0, "cpu"),
    }
    for name, fam, n, m in instances:
        base = m * 1e-6
        opt = n * 0.9
        for (alg, var), (factor, dev) in speed.items():
            status: str | list[str] = "ok"
            if alg == "pfp_cpu" and name == "kron-2":
                status = "timeout"
            t = noisy_times(rng, base * factor * slowdown.get(alg, 1.0), repetitions, sigma)
            rows += rows_for(
                t,
                problem="mcm",
                algorithm=alg,
                variant=var,
                instance=name,
                family=fam,
                run_id=run_id,
                git_commit=git_commit,
                timestamp=ts,
                gpu_model=GPU,
                device=dev,
                objective=opt,
                objective_init=opt * 0.8,
                reference_objective=opt,
                bound=opt,
                status=status,
                n_rows=n,
                n_edges=m,
                phases={"bfs": t[0] * 0.6, "alternate": t[0] * 0.3} if dev == "gpu" else None,
            )
    # lap: one GPU solver and one CPU reference on two instances, one unverified answer
    for name, n in (("dense-64", 64), ("dense-128", 128)):
        for alg, factor, dev in (("cu_tree", 1.0, "gpu"), ("lapjv_cpu", 3.0, "cpu")):
            verified: bool | list[bool] = True
            if alg == "cu_tree" and name == "dense-128":
                verified = [True] * (repetitions - 1) + [False]
            rows += rows_for(
                noisy_times(rng, n * 1e-4 * factor * slowdown.get(alg, 1.0), repetitions, sigma),
                problem="lap",
                algorithm=alg,
                instance=name,
                family="dense",
                run_id=run_id,
                git_commit=git_commit,
                timestamp=ts,
                device=dev,
                objective=float(n * 7),
                objective_init=None,
                reference_objective=float(n * 7),
                verified=verified,
                n_rows=n,
                n_edges=n * n,
            )
    # wmatch: approximate; quality below the reference
    for name, m in (("rmat-1", 10_000), ("rmat-2", 80_000)):
        for alg, factor, quality, dev in (
            ("suitor", 1.0, 0.97, "gpu"),
            ("greedy_cpu", 5.0, 0.92, "cpu"),
        ):
            ref = m * 0.5
            rows += rows_for(
                noisy_times(rng, m * 1e-6 * factor * slowdown.get(alg, 1.0), repetitions, sigma),
                problem="wmatch",
                algorithm=alg,
                instance=name,
                family="rmat",
                run_id=run_id,
                git_commit=git_commit,
                timestamp=ts,
                device=dev,
                objective=ref * quality,
                objective_init=None,
                reference_objective=None,
                bound=ref,
                n_rows=m // 8,
                n_edges=m,
            )
    return rows


def write_history(root: Path, n_runs: int = 3, repetitions: int = 5) -> list[str]:
    """``n_runs`` runs a day apart; the last one has ``apfb`` 40% slower. Returns run ids."""
    ids = []
    t0 = datetime(2025, 1, 1, 12, tzinfo=UTC)
    for i in range(n_runs):
        rid = f"2025010{i + 1}T120000-run{i}"
        slow = {"apfb": 1.4} if i == n_runs - 1 else {}
        rows = benchmark_rows(
            seed=100 + i,
            run_id=rid,
            git_commit=f"{i + 1:x}" * 40,
            timestamp=t0 + timedelta(days=i),
            repetitions=repetitions,
            slowdown=slow,
        )
        write_run(root, rows, run_id=rid, date=f"2025-01-0{i + 1}")
        ids.append(rid)
    return ids
