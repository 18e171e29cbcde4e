"""The ``matchbench`` command.

``matchbench [overrides]`` and ``matchbench -m ...`` are the Hydra app
(:mod:`matchbench.app`); three subcommands read results:

``matchbench results [RUN] [--root runs]``
    the latest (or a given) run as a table;
``matchbench report [RESULTS ...] -o report.html``
    the comparison report (:mod:`matchbench.report`);
``matchbench compare BASE NEW``
    the regression gate (:mod:`matchbench.results.compare`).
"""

from __future__ import annotations

import argparse
import sys


def results_main(argv: list[str]) -> int:
    import pandas as pd

    from matchbench.results.store import ResultsError, find_run, latest_run, read_results

    ap = argparse.ArgumentParser(prog="matchbench results", description="Show a run's results.")
    ap.add_argument("run", nargs="?", help="run id or results path (default: the latest run)")
    ap.add_argument("--root", default="runs", help="results root (default: runs)")
    ap.add_argument("--all-columns", action="store_true", help="print every column (long format)")
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


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "results":
        sys.exit(results_main(argv[1:]))
    if argv and argv[0] == "report":
        from matchbench.report import main as report_main

        sys.exit(report_main(argv[1:]))
    if argv and argv[0] == "compare":
        from matchbench.results.compare import main as compare_main

        sys.exit(compare_main(argv[1:]))
    from matchbench.app import main as app_main

    app_main()


if __name__ == "__main__":
    main()
