"""Quick benchmark of the CPU MCM references on generated graphs, as a markdown table.

::

    python -m matchbench.bench.mcm_refs --scales 12 14 --families kron delaunay --out t.md

For each instance: the cheap matching (shared initializer, timed apart), then every
solver of ``--solvers`` from its ``conf/algorithm/<name>.yaml``: one warm-up and
``--reps`` timed repetitions (``prepare`` untimed, ``run`` timed), each answer checked by
:meth:`matchbench.problems.mcm.MCM.verify`; the table shows the median. A cell reads
``FAIL`` when an answer is not certified (the reason goes to stderr) and ``skip`` when
the solver declines the instance. The Hydra experiments are the full path; this is the
quick one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from matchbench.problems.bipartite import BipartiteGraph
from matchbench.problems.mcm import MCM

#: ``--families`` name -> generator function of :mod:`matchbench.datasets.generators`.
FAMILIES = {"kron": "kronecker", "delaunay": "delaunay"}
DEFAULT_SOLVERS = ("scipy_hk", "igraph_pr", "hk", "pfp", "pr")
CONF_DIR = Path(__file__).resolve().parents[2] / "conf" / "algorithm"


def load_graph(family: str, scale: int, seed: int = 1) -> BipartiteGraph:
    """The generated instance of ``family`` at ``scale`` (2**scale vertices)."""
    from matchbench.datasets import generators

    return getattr(generators, FAMILIES[family])(scale, seed=seed)


def make_solver(name: str, conf_dir: Path = CONF_DIR) -> Any:
    """Instantiate ``conf_dir/<name>.yaml`` as the runner does."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    return instantiate(OmegaConf.load(conf_dir / f"{name}.yaml"))


def _fmt(t: float | None) -> str:
    return "skip" if t is None else f"{t:.4g}"


def bench_instance(
    g: BipartiteGraph, solver_names: list[str], reps: int, conf_dir: Path = CONF_DIR
) -> dict[str, Any]:
    """One table row: sizes, initial and maximum cardinality, median seconds per solver.

    Raises nothing on a wrong answer: the cell becomes ``FAIL`` and the reason is printed
    to stderr, so one bad solver does not hide the others.
    """
    problem = MCM()
    init_times = []
    for _ in range(reps + 1):
        t0 = time.perf_counter()
        init = problem.initialize(g)
        init_times.append(time.perf_counter() - t0)
    row: dict[str, Any] = {
        "instance": g.name,
        "rows": g.n_rows,
        "cols": g.n_cols,
        "edges": g.n_edges,
        "init card": init.cardinality,
        "max card": None,
        "t cheap": _fmt(statistics.median(init_times[1:])),
    }
    for name in solver_names:
        solver = make_solver(name, conf_dir)
        skip, reason = solver.skip(g)
        if skip:
            print(f"{g.name} {name}: skipped: {reason}", file=sys.stderr)
            row[f"t {name}"] = "skip"
            continue
        times = []
        failed = False
        for rep in range(reps + 1):
            solver.prepare(g, init)
            t0 = time.perf_counter()
            solver.run()
            wall = time.perf_counter() - t0
            v = problem.verify(g, solver.result())
            if not v.verified:
                print(f"{g.name} {name} rep {rep}: {v.reason}", file=sys.stderr)
                failed = True
                break
            if row["max card"] is None:
                row["max card"] = int(v.reference)
            if rep > 0:
                # GPU solvers time themselves with CUDA events.
                times.append(solver.timings().get("solve", wall))
        row[f"t {name}"] = "FAIL" if failed else _fmt(statistics.median(times))
    return row


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Rows of equal keys as a GitHub markdown table."""
    if not rows:
        return ""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join(" --- " for _ in keys) + "|"]
    for r in rows:
        lines.append("| " + " | ".join("" if r[k] is None else str(r[k]) for k in keys) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m matchbench.bench.mcm_refs", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--scales", type=int, nargs="+", default=[12, 14])
    ap.add_argument("--families", nargs="+", choices=sorted(FAMILIES), default=["kron", "delaunay"])
    ap.add_argument("--solvers", nargs="+", default=list(DEFAULT_SOLVERS))
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions after one warm-up")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rcp", action="store_true", help="also run the row/column-permuted instances")
    ap.add_argument("--conf-dir", type=Path, default=CONF_DIR)
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here too")
    args = ap.parse_args(argv)

    rows = []
    for family in args.families:
        for scale in args.scales:
            g = load_graph(family, scale, seed=args.seed)
            graphs = [g, g.permuted(args.seed)] if args.rcp else [g]
            for h in graphs:
                rows.append(bench_instance(h, args.solvers, args.reps, args.conf_dir))
                print(f"done {h.name}", file=sys.stderr)
    table = (
        f"Median of {args.reps} runs after 1 warm-up, seconds; cheap matching timed apart; "
        f"scipy_hk and igraph_pr start from the empty matching.\n\n" + markdown_table(rows)
    )
    print(table)
    if args.out is not None:
        args.out.write_text(table)
    return 0 if all("FAIL" not in r.values() for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
