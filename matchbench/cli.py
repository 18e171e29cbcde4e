"""The ``matchbench`` command.

``matchbench [overrides]`` and ``matchbench -m ...`` are the Hydra app
(:mod:`matchbench.app`, on the configs shipped with matchbench; ``--config-dir DIR`` adds a
folder of one's own); ``matchbench --help`` lists all of it. Three subcommands read results:

``matchbench results [RUN] [--root runs]``
    the latest (or a given) run as a table;
``matchbench report [RESULTS ...] -o report.html``
    the comparison report (:mod:`matchbench.report`);
``matchbench compare BASE NEW``
    the regression gate (:mod:`matchbench.results.compare`).

Exit status of a run or sweep (:func:`matchbench.runner.execute.execute`):

- 0: every task ran (its rows may still say ``error``, ``timeout``, ``crashed``, ...);
- 2: a setting that cannot work (an unknown config option, ``gpu.repetitions=0``, a
  dataset path that is no file, a sweep that leaves every pair out, a reused ``run.id``
  without ``run.resume=true``: :mod:`matchbench.runner.settings`) or no cluster to run on
  (``cluster=external`` unreachable or without workers, a bad ``cluster`` setting), in
  one line each; nothing ran;
- 74: the results folder ran out of space; the resume line is printed;
- 75 (``EX_TEMPFAIL``): the Dask scheduler went away mid-sweep; the finished tasks are
  written and the line printed names the ``run.resume=true run.id=...`` command that
  runs the rest once a scheduler is back;
- 130: Ctrl-C, 143: SIGTERM (``kill``, a batch system's time limit), each with the same
  resume line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def results_main(argv: list[str]) -> int:
    import pandas as pd

    from matchbench.results.store import ResultsError, find_run, latest_run, read_results

    ap = argparse.ArgumentParser(prog="matchbench results", description="Show a run's results.")
    ap.add_argument("run", nargs="?", help="run id or results path (default: the latest run)")
    ap.add_argument("--root", default="runs", help="results root (default: runs)")
    ap.add_argument("--all-columns", action="store_true", help="print every column (long format)")
    ap.add_argument(
        "--pivot", action="store_true",
        help="Markdown table: one line per instance, median solve seconds per algorithm[variant]",
    )
    args = ap.parse_args(argv)

    try:
        if args.run is None:
            path = latest_run(args.root)
            if path is None:
                print(f"matchbench results: no runs under {args.root}/", file=sys.stderr)
                return 2
        else:
            path = find_run(args.root, args.run) or args.run
        df = read_results(path)
    except ResultsError as exc:
        print(f"matchbench results: {exc}", file=sys.stderr)
        return 2
    if df.empty:
        print(f"matchbench results: {path}: no rows", file=sys.stderr)
        return 2
    if args.pivot:
        print(pivot_markdown(df))
        return 0
    print(f"run {df['run_id'].iloc[0]}  ({path})")
    if args.all_columns:
        with pd.option_context("display.max_columns", None, "display.width", 200):
            print(df)
        return 0
    print(summary_table(df).to_string(index=False))
    failed = df[df["status"] != "ok"]
    if len(failed):
        print(f"\n{len(failed)} row(s) not ok:")
        cols = ["status", "instance", "algorithm", "variant", "error"]
        with pd.option_context("display.max_colwidth", 120):
            print(failed[cols].to_string(index=False))
    return 0


def summary_table(df):
    """instance x algorithm x variant: median solve time, objective, verified, status."""
    import pandas as pd

    ok = df[df["status"] == "ok"]
    keys = ["instance", "n_edges", "algorithm", "variant"]
    if ok.empty:
        return pd.DataFrame(columns=keys)
    g = ok.groupby(keys, dropna=False, sort=True)
    out = g.agg(
        reps=("t_solve_s", "size"),
        t_solve_median_s=("t_solve_s", "median"),
        t_init_s=("t_init_s", "first"),
        objective_init=("objective_init", "first"),
        objective=("objective", "max"),
        verified=("verified", "all"),
    ).reset_index()
    out["t_solve_median_s"] = out["t_solve_median_s"].map(lambda x: f"{x:.6f}")
    return out


def pivot_markdown(df) -> str:
    """Instances as lines, ``algorithm[variant]`` as columns, median ``t_solve_s`` in cells.

    A cell is the failure status where the pair has no verified ok row.
    """
    df = df[df["instance"].notna() & df["algorithm"].notna()].copy()
    df["variant"] = df["variant"].fillna("default")
    df["solver"] = df["algorithm"] + df["variant"].map(lambda v: "" if v == "default" else f"[{v}]")
    good = df[(df["status"] == "ok") & (df["verified"] == True)]  # noqa: E712
    med = good.groupby(["instance", "solver"])["t_solve_s"].median().unstack()
    failed = df[df["status"] != "ok"].groupby(["instance", "solver"])["status"].first().unstack()
    info = df.groupby("instance").agg(
        n_rows=("n_rows", "first"), n_edges=("n_edges", "first"),
        init=("objective_init", "first"), opt=("reference_objective", "max"),
    )
    solvers = sorted(df["solver"].unique())
    head = ["instance", "rows", "edges", "init", "optimum", *solvers]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for inst, r in info.sort_index().iterrows():
        cells = []
        for s in solvers:
            v = med.get(s, {}).get(inst) if s in med else None
            if v is not None and v == v:
                cells.append(f"{v:.4g}")
            else:
                f = failed.get(s, {}).get(inst) if failed is not None and s in failed else None
                cells.append(str(f) if isinstance(f, str) else "-")
        fmt = lambda x: "-" if x != x or x is None else f"{int(x)}"  # noqa: E731
        lines.append("| " + " | ".join([inst, fmt(r.n_rows), fmt(r.n_edges), fmt(r.init), fmt(r.opt), *cells]) + " |")
    return "\n".join(lines)


#: ``matchbench SUBCOMMAND``: one line each for ``matchbench --help``.
SUBCOMMANDS = {
    "results": "the latest (or a given) run as a table",
    "report": "the comparison report (HTML), or a preset's paper tables (--experiment NAME)",
    "compare": "the regression gate between two runs (exit status 1 on a regression)",
}


def usage() -> str:
    """``matchbench --help``: the run/sweep command, the subcommands, the config groups.

    Works where the configs cannot be found (it says where it looked instead of listing
    them), so that ``--help`` never ends in a traceback.
    """
    import textwrap

    from matchbench.core.paths import conf_dir

    lines = [
        "usage: matchbench [--config-dir DIR] [-m] [KEY=VALUE ...]   run one job, or (-m) a sweep",
        "       matchbench SUBCOMMAND [--help] ...",
        "",
        "Run or sweep (Hydra: every combination of -m's comma lists runs on one Dask cluster):",
        "  matchbench -m +experiment=quickstart          the quickstart: every solver, embedded instances",
        "  matchbench algorithm=hk dataset=kron dataset.scale=16",
        "  matchbench --config-dir DIR algorithm=mine     DIR/algorithm/mine.yaml beside the shipped configs",
        "  matchbench --cfg job [KEY=VALUE ...]           print the composed config, run nothing",
        "  matchbench --hydra-help                        Hydra's own options",
        "",
        "Subcommands:",
        *(f"  {name:<9} {text}" for name, text in SUBCOMMANDS.items()),
        "",
    ]
    try:
        root = conf_dir()
    except FileNotFoundError as exc:
        return "\n".join([*lines, f"Config groups: unavailable ({exc})", ""])
    lines.append(f"Config groups ({root}; KEY=NAME picks one, +experiment=NAME a preset):")
    for group in _config_groups(root):
        names = ", ".join(sorted(f.stem for f in (root / group).glob("*.yaml")))
        lines += textwrap.wrap(
            names, width=100, initial_indent=f"  {group:<11} ", subsequent_indent=" " * 14
        )
    return "\n".join([*lines, ""])


def _config_groups(root: Path) -> list[str]:
    """The groups ``config.yaml``'s defaults list picks from, and ``experiment`` (presets)."""
    import yaml

    defaults = (yaml.safe_load((root / "config.yaml").read_text()) or {}).get("defaults", [])
    picked = {k for d in defaults if isinstance(d, dict) for k in d if (root / k).is_dir()}
    return sorted(picked | {"experiment"})


#: The config groups whose option a command-line override names (``algorithm=hk``).
GROUPS = ("algorithm", "dataset", "init", "gpu", "cluster", "compare", "experiment")


def _config_dirs(argv: list[str]) -> list[Path]:
    """The shipped config folder and the ones ``--config-dir``/``-cd`` add."""
    from matchbench.core.paths import conf_dir

    dirs = [conf_dir()]
    for i, arg in enumerate(argv):
        if arg in ("--config-dir", "-cd") and i + 1 < len(argv):
            dirs.append(Path(argv[i + 1]))
        elif arg.startswith("--config-dir="):
            dirs.append(Path(arg.split("=", 1)[1]))
    return dirs


def unknown_choices(argv: list[str]) -> list[str]:
    """One message per config-group option the overrides name that no config folder holds,
    with the closest name (``algorithm=apfbb`` -> ``did you mean algorithm=apfb?``), so that
    a misspelling is one line instead of Hydra's listing of every option.

    >>> unknown_choices(["algorithm=hk,pfp", "dataset=kron"])
    []
    >>> unknown_choices(["-m", "algorithm=apfbb"])
    ["algorithm=apfbb: no such option of the config group 'algorithm'; did you mean algorithm=apfb?"]
    """
    import difflib

    dirs = _config_dirs(argv)
    out = []
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        group = key.lstrip("+~")
        if group not in GROUPS or key.startswith("~") or not value or value == "null":
            continue
        known = sorted({f.stem for d in dirs for f in (d / group).glob("*.yaml")})
        for choice in (v.strip() for v in value.split(",")):
            if not choice or any(c in choice for c in "()[]{}$*"):  # sweeps, interpolations
                continue
            if choice not in known:
                close = difflib.get_close_matches(choice, known, n=1)
                hint = f"; did you mean {group}={close[0]}?" if close else f" (options: {', '.join(known)})"
                out.append(f"{group}={choice}: no such option of the config group '{group}'{hint}")
    return out


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"], ["help"]):
        sys.stdout.write(usage())
        sys.exit(0)
    if argv and argv[0] == "results":
        sys.exit(results_main(argv[1:]))
    if argv and argv[0] == "report":
        from matchbench.report import main as report_main

        sys.exit(report_main(argv[1:]))
    if argv and argv[0] == "compare":
        from matchbench.results.compare import main as compare_main

        sys.exit(compare_main(argv[1:]))
    from matchbench.core.paths import conf_dir

    try:
        conf_dir()
    except FileNotFoundError as exc:
        print(f"matchbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
    problems = unknown_choices(argv)
    if problems:
        for message in problems:
            print(f"matchbench: error: {message}", file=sys.stderr)
        sys.exit(2)
    from matchbench.app import main as app_main

    app_main()


if __name__ == "__main__":
    main()
