"""Pieces shared by the benchmark scripts (:mod:`~matchbench.bench.mcm_gpu`,
:mod:`~matchbench.bench.mcm_gpr`, :mod:`~matchbench.bench.lap`).

Instances travel between processes as ``.npz`` files (:func:`save_graph`,
:func:`load_graph`), written by a process pool (:func:`generate`); solvers are built from
``conf/algorithm/<name>.yaml`` as the runner builds them (:func:`make_solver`); the CPU
references run in subprocesses under a time limit (:class:`RefRunner`, whose children
call :func:`ref_job`); results are JSON lines (:func:`open_results`, :func:`read_rows`)
tabulated in markdown (:func:`md_table`, :func:`geomean`, :func:`fmt_seconds`);
:func:`run_other_modes` serves the command-line modes besides the benchmark itself
(``--ref-job``, ``--ref-warmup``, ``--report``). Nothing here imports cupy at module
level.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np

CONF_DIR = Path(__file__).resolve().parents[2] / "conf" / "algorithm"
#: Seconds a reference child may take to reach its timed solve (interpreter start, graph
#: load, cheap matching) when :class:`RefRunner` limits the solve alone.
LOAD_ALLOWANCE_S = 60.0

#: The paper's seed families, family -> scales (log2 of the vertex count): Kronecker
#: logn 18-21, Delaunay n20-23, random geometric n20-23, grids 2^20-2^22.
SEED_SUITE: dict[str, list[int]] = {
    "kronecker": [18, 19, 20, 21],
    "delaunay": [20, 21, 22, 23],
    "rgg": [20, 21, 22, 23],
    "grid": [20, 21, 22],
}

Sink = Callable[[dict[str, Any]], None]


# -- instances -------------------------------------------------------------------------


def save_graph(g: Any, path: str | Path) -> None:
    """Write a :class:`~matchbench.problems.bipartite.BipartiteGraph` to ``path`` (npz).

    Parameters
    ----------
    g : BipartiteGraph
        The graph: both CSR orientations and its name, family and generator parameters.
    path : str or Path
        Target file; :func:`numpy.savez` appends ``.npz`` when the name lacks it.
    """
    np.savez(
        path,
        n_rows=g.n_rows,
        n_cols=g.n_cols,
        row_ptr=g.row_ptr,
        row_ind=g.row_ind,
        col_ptr=g.col_ptr,
        col_ind=g.col_ind,
        meta=json.dumps({"name": g.name, "family": g.family, "params": g.params}),
    )


def load_graph(path: str | Path) -> Any:
    """Read a graph written by :func:`save_graph`.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` file.

    Returns
    -------
    BipartiteGraph
        The same arrays, name, family and parameters as the saved graph.
    """
    from matchbench.problems.bipartite import BipartiteGraph

    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
        return BipartiteGraph(
            int(z["n_rows"]),
            int(z["n_cols"]),
            z["row_ptr"],
            z["row_ind"],
            z["col_ptr"],
            z["col_ind"],
            name=meta["name"],
            family=meta["family"],
            params=meta["params"],
        )


def generate(job: tuple[str, int, int, str], csr_bytes: bool = True) -> list[dict[str, Any]]:
    """Pool worker: one generated instance and its RCP permutation, both saved.

    Parameters
    ----------
    job : (family, scale, seed, graph_dir)
        ``family`` names a function of :mod:`matchbench.datasets.generators`; the files
        go to ``graph_dir/<instance name>.npz``.
    csr_bytes : bool
        Whether the rows carry ``csr_bytes`` (the graph's ``nbytes``).

    Returns
    -------
    list of dict
        Two instance rows, the original first, then the RCP one (``rcp`` true); each
        with ``path``, the sizes and the generation seconds (shared by both).
    """
    family, scale, seed, graph_dir = job
    from matchbench.datasets import generators

    t0 = time.perf_counter()
    g = getattr(generators, family)(scale, seed=seed)
    t_gen = time.perf_counter() - t0
    rows = []
    for h, rcp in ((g, False), (g.permuted(seed), True)):
        path = Path(graph_dir) / f"{h.name}.npz"
        save_graph(h, path)
        row = {
            "instance": h.name,
            "family": family,
            "scale": scale,
            "rcp": rcp,
            "path": str(path),
            "n_rows": h.n_rows,
            "n_cols": h.n_cols,
            "n_edges": h.n_edges,
        }
        if csr_bytes:
            row["csr_bytes"] = h.nbytes
        rows.append({**row, "t_generate_s": t_gen})
    return rows


def make_solver(name: str, **overrides: Any) -> Any:
    """Instantiate ``conf/algorithm/<name>.yaml`` (with overrides) as the runner does.

    Parameters
    ----------
    name : str
        The YAML file's stem, which is also the solver's ``name``.
    **overrides
        Values merged over the YAML's (e.g. ``bfs="wr"``, ``devices=2``).
    """
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(CONF_DIR / f"{name}.yaml")
    if overrides:
        cfg = OmegaConf.merge(cfg, overrides)
    return instantiate(cfg)


def initialize(
    problem: Any, g: Any, base: dict[str, Any], sink: Sink | None = None, times: int = 3
) -> Any:
    """The shared cheap matching of ``g``, timed over ``times`` computations.

    Parameters
    ----------
    problem : MCM
        Its ``initialize(g)`` gives the initial matching.
    g : BipartiteGraph
        The instance.
    base : dict
        Fields that start the ``init`` row (instance name, family, ...).
    sink : callable, optional
        Receives the ``init`` row: median seconds and the initial cardinality.

    Returns
    -------
    Matching
        The initial matching of the last computation.
    """
    t = []
    for _ in range(times):
        t0 = time.perf_counter()
        init = problem.initialize(g)
        t.append(time.perf_counter() - t0)
    if sink is not None:
        sink(
            {
                "kind": "init",
                **base,
                "t_init_s": statistics.median(t),
                "init_cardinality": init.cardinality,
            }
        )
    return init


# -- CPU references, each in a subprocess ----------------------------------------------


def ref_job(
    path: str,
    name: str,
    marker: str | None = None,
    *,
    honour_skip: bool = True,
    extra: Callable[[str, Any], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Child process: one CPU reference on one instance after the cheap matching.

    Parameters
    ----------
    path : str
        A graph written by :func:`save_graph`.
    name : str
        The solver's YAML name.
    marker : str, optional
        File to which the wall-clock time at which the timed ``run()`` starts is written,
        so that a parent that kills this process knows how long the solve itself ran.
    honour_skip : bool
        Ask ``solver.skip(g)`` first and return a ``skip`` row when it declines.
    extra : callable, optional
        ``extra(name, solver)`` gives fields appended to the row of a solved instance.

    Returns
    -------
    dict
        A ``ref`` row: status (``ok``, ``fail`` or ``skip``), solve seconds, the
        verifier's verdict and the cardinality.
    """
    from matchbench.problems.mcm import MCM

    g = load_graph(path)
    problem = MCM()
    init = problem.initialize(g)
    solver = make_solver(name)
    row: dict[str, Any] = {"kind": "ref", "instance": g.name, "solver": name}
    if honour_skip:
        skip, reason = solver.skip(g)
        if skip:
            return {**row, "status": "skip", "reason": reason}
    solver.prepare(g, init)  # untimed (the numba solvers compile here)
    if marker:
        Path(marker).write_text(repr(time.time()))
    t0 = time.perf_counter()
    solver.run()
    t_run = time.perf_counter() - t0
    v = problem.verify(g, solver.result())
    row = {
        **row,
        "status": "ok" if v.verified else "fail",
        "t_solve_s": t_run,
        "verified": bool(v.verified),
        "reason": v.reason,
        "cardinality": v.objective,
    }
    return {**row, **extra(name, solver)} if extra else row


def warm_up_references(module: str) -> None:
    """Run ``python -m MODULE --ref-warmup`` (:func:`ref_warmup`) and wait for it.

    Once, before parallel reference children would all compile the same numba kernels.
    """
    subprocess.run([sys.executable, "-m", module, "--ref-warmup"], check=True, timeout=300)


def ref_warmup(names: Iterable[str]) -> None:
    """Fill numba's cache once (a tiny solve per reference), before parallel children load it."""
    from matchbench.problems.bipartite import BipartiteGraph
    from matchbench.problems.mcm import MCM

    g = BipartiteGraph.from_coo([0, 1, 1, 2], [0, 0, 1, 2], 3, 3, name="warmup")
    problem = MCM()
    for name in names:
        s = make_solver(name)
        s.prepare(g, problem.initialize(g))
        s.run()
        problem.verify(g, s.result())


def _read_marker(path: Path) -> float | None:
    try:
        return float(path.read_text())
    except (OSError, ValueError):  # not written yet, or caught mid-write
        return None


class RefRunner:
    """Runs reference jobs (``python -m MODULE --ref-job GRAPH SOLVER``) in subprocesses.

    ``workers`` at a time, until a deadline; every job ends as one row passed to ``sink``
    (the child's own row, or one that says ``timeout``, ``not_run`` or ``error``).

    Parameters
    ----------
    workers : int
        Subprocesses at a time.
    timeout_s : float
        The time limit of one job.
    deadline : float
        Wall-clock time (:func:`time.time`) after which no job starts or keeps running.
    sink : callable
        Receives the rows; called from the worker threads.
    module : str
        The benchmark module whose ``--ref-job`` (and, with ``limit="solve"``,
        ``--marker``) flags run :func:`ref_job`.
    limit : {"wall", "solve"}
        ``wall``: the limit covers the whole child (start, graph load and cheap matching
        too, so ``>T s`` overstates by those seconds what the solve alone was given), cut
        to the time left before the deadline; a job cut by the deadline rather than its
        limit is ``not_run``. ``solve``: the limit starts when the child writes its
        marker at the start of the timed run; reaching the marker may take at most
        ``load_allowance_s``; a ``timeout`` row records how long the solve had run and
        whether the deadline (``cut_by_budget``) rather than the limit stopped it.
    budget_reason : str
        The reason of the ``not_run`` row of a job that the deadline leaves no time for.
    load_allowance_s : float
        See ``limit``.
    """

    def __init__(
        self,
        workers: int,
        timeout_s: float,
        deadline: float,
        sink: Sink,
        module: str,
        *,
        limit: Literal["wall", "solve"] = "wall",
        budget_reason: str = "time budget spent",
        load_allowance_s: float = LOAD_ALLOWANCE_S,
    ) -> None:
        if limit not in ("wall", "solve"):
            raise ValueError(f"limit must be 'wall' or 'solve', not {limit!r}")
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.timeout_s = timeout_s
        self.deadline = deadline
        self.sink = sink
        self.module = module
        self.limit = limit
        self.budget_reason = budget_reason
        self.load_allowance_s = load_allowance_s
        self.futures: list[Future] = []

    def submit(self, inst: dict[str, Any], name: str) -> None:
        """Queue solver ``name`` on instance row ``inst`` (which has ``instance``, ``path``)."""
        self.futures.append(self.pool.submit(self._run, inst, name))

    def wait(self) -> None:
        """Block until every queued job has sent its row; re-raise a worker's exception."""
        for f in self.futures:
            f.result()
        self.pool.shutdown()

    def _run(self, inst: dict[str, Any], name: str) -> None:
        row = {"kind": "ref", "instance": inst["instance"], "solver": name}
        left = self.deadline - time.time()
        if left < 5:
            self.sink({**row, "status": "not_run", "reason": self.budget_reason})
            return
        cmd = [sys.executable, "-m", self.module, "--ref-job", inst["path"], name]
        if self.limit == "wall":
            p = self._run_wall(cmd, row, min(self.timeout_s, left))
        else:
            p = self._run_solve(cmd, row, Path(inst["path"]).with_suffix(f".{name}.started"))
        if p is None:
            return
        lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
        if p.returncode != 0 or not lines:
            self.sink({**row, "status": "error", "reason": (p.stderr or p.stdout)[-2000:]})
            return
        self.sink(json.loads(lines[-1]))

    def _run_wall(
        self, cmd: list[str], row: dict[str, Any], limit: float
    ) -> subprocess.CompletedProcess | None:
        t0 = time.time()
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            status = "timeout" if limit >= self.timeout_s else "not_run"
            self.sink({**row, "status": status, "timeout_s": limit, "t_wall_s": time.time() - t0})
            return None

    def _run_solve(
        self, cmd: list[str], row: dict[str, Any], marker: Path
    ) -> subprocess.CompletedProcess | None:
        marker.unlink(missing_ok=True)
        cmd = [*cmd, "--marker", str(marker)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t_launch = time.time()
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=0.5)
                return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
            except subprocess.TimeoutExpired:
                pass
            now = time.time()
            started = _read_marker(marker)
            over = started is not None and now - started > self.timeout_s
            late = started is None and now - t_launch > self.load_allowance_s
            if over or late or now > self.deadline:
                proc.kill()
                proc.communicate()
                if started is None:
                    why = "time budget spent" if now > self.deadline else "loading took too long"
                    self.sink(
                        {**row, "status": "not_run", "reason": f"killed before its solve: {why}"}
                    )
                else:
                    self.sink(
                        {
                            **row,
                            "status": "timeout",
                            "timeout_s": now - started,
                            "cut_by_budget": not over,
                        }
                    )
                return None


# -- host and device -------------------------------------------------------------------


def cpu_model() -> str:
    """The host CPU's model name (``/proc/cpuinfo``, else :func:`platform.processor`)."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(x.split(":", 1)[1].strip() for x in f if x.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return cpu


def copy_bandwidth_GBps(nbytes: int = 1 << 30, reps: int = 20) -> float:
    """Measured device-to-device copy bandwidth of the current GPU, in GB/s.

    Bytes read plus bytes written, the convention of STREAM's copy; one warm-up copy,
    then ``reps`` copies of ``nbytes`` timed by CUDA events. Frees the pool afterwards.
    """
    import cupy as cp

    a = cp.empty(nbytes, dtype=cp.uint8)
    a.fill(1)
    b = cp.empty_like(a)
    b[...] = a  # warm-up
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(reps):
        b[...] = a
    stop.record()
    stop.synchronize()
    secs = cp.cuda.get_elapsed_time(start, stop) / 1e3
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return 2 * nbytes * reps / secs / 1e9


def device_row(copy_bandwidth: bool = False) -> dict[str, Any]:
    """The ``device`` row: GPU provenance, host CPU, optionally the copy bandwidth.

    Parameters
    ----------
    copy_bandwidth : bool
        Measure :func:`copy_bandwidth_GBps` (about a second of GPU time and 2 GiB) into
        ``d2d_copy_GBps``.
    """
    from matchbench.solvers.gpu.common import device_info

    bw = {"d2d_copy_GBps": copy_bandwidth_GBps()} if copy_bandwidth else {}
    return {
        "kind": "device",
        **device_info(),
        **bw,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
    }


# -- JSON lines and markdown -----------------------------------------------------------


def json_default(o: Any) -> Any:
    """``json.dumps`` fallback: numpy scalars as Python numbers, anything else as str."""
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    return str(o)


def open_results(out: Path, graph_dir: str | Path, t_start: float) -> tuple[Path, Sink]:
    """Create ``out`` and ``graph_dir``; the path of ``out/results.jsonl`` and its sink.

    The sink is :func:`jsonl_sink` of that file (appended to, never truncated).
    """
    out.mkdir(parents=True, exist_ok=True)
    Path(graph_dir).mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    return results, jsonl_sink(results, t_start)


def jsonl_sink(path: str | Path, t_start: float) -> Sink:
    """A thread-safe sink that appends each row to ``path`` as one JSON line.

    Each row gains ``t_elapsed_s``, the seconds since ``t_start`` (a :func:`time.time`).
    """
    lock = threading.Lock()

    def sink(row: dict[str, Any]) -> None:
        row = {**row, "t_elapsed_s": round(time.time() - t_start, 2)}
        with lock, open(path, "a") as f:
            f.write(json.dumps(row, default=json_default) + "\n")

    return sink


def read_rows(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The rows of one or more JSON-lines files, in order (blank lines skipped)."""
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [json.loads(x) for x in f if x.strip()]
    return rows


def geomean(xs: Iterable[float | None]) -> float:
    """Geometric mean of the positive finite values of ``xs`` (NaN when there are none)."""
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def md_table(header: list[str], body: list[list[Any]]) -> str:
    """A markdown table, ending with a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in body]
    return "\n".join(lines) + "\n"


def fmt_seconds(t: float | None, ms_below: float) -> str:
    """Seconds to 3 significant digits; below ``ms_below`` s as ``"<x> ms"``; ``-`` if unknown."""
    if t is None or not math.isfinite(t):
        return "-"
    return f"{t:.3g}" if t >= ms_below else f"{t * 1e3:.3g} ms"


def ref_time(
    refs: dict[tuple[str, str], dict[str, Any]],
    inst: str,
    name: str,
    fmt: Callable[[float], str],
) -> tuple[float | None, str]:
    """Seconds and table cell of reference ``name`` on ``inst`` from its ``ref`` row.

    A time-out gives ``inf`` and ``>T s`` (a lower bound: the job had run that long when
    it was killed), marked ``(budget)`` when the deadline rather than the limit cut it;
    a missing row or any other status gives ``None`` and the status.
    """
    r = refs.get((inst, name))
    if r is None:
        return None, "not run"
    if r["status"] == "ok":
        return r["t_solve_s"], fmt(r["t_solve_s"])
    if r["status"] == "timeout":
        budget = " (budget)" if r.get("cut_by_budget") else ""
        return math.inf, f">{r['timeout_s']:.0f} s{budget}"
    return None, r["status"]


def write_report(
    results: Path,
    build_report: Callable[[list[dict[str, Any]]], str],
    summary: Callable[[list[dict[str, Any]]], str],
) -> list[dict[str, Any]]:
    """End of a run: ``report.md`` beside ``results`` from its rows; print the summary.

    Returns
    -------
    list of dict
        The rows of ``results``.
    """
    rows = read_rows([results])
    (results.parent / "report.md").write_text(build_report(rows))
    print(summary(rows))
    return rows


def run_other_modes(
    args: Any,
    refs: Iterable[str],
    build_report: Callable[[list[dict[str, Any]]], str],
    **ref_job_kw: Any,
) -> int | None:
    """The command-line modes of a benchmark other than the benchmark itself.

    ``--ref-job GRAPH SOLVER`` (a :class:`RefRunner` child: print the :func:`ref_job` row
    as JSON, with ``--marker`` where the module has it), ``--ref-warmup``
    (:func:`ref_warmup` of ``refs``) and ``--report FILES [--md OUT]`` (print
    ``build_report`` of the rows, also written to ``OUT``).

    Returns
    -------
    int or None
        The exit status, or None when ``args`` asks for the benchmark itself.
    """
    if args.ref_job:
        marker = getattr(args, "marker", None)
        row = ref_job(*args.ref_job, marker=marker, **ref_job_kw)
        print(json.dumps(row, default=json_default))
        return 0
    if args.ref_warmup:
        ref_warmup(refs)
        return 0
    if args.report:
        text = build_report(read_rows(args.report))
        if args.md:
            args.md.write_text(text)
        print(text)
        return 0
    return None
