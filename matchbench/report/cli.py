"""``matchbench report``: the comparison report as one self-contained HTML file."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from matchbench.results.store import ResultsError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="matchbench report",
        description=(
            "Write an HTML report (Bokeh, opens offline) of result runs: profiles, "
            "per-instance tables, scaling, time breakdown, quality, history, failures."
        ),
    )
    p.add_argument(
        "results",
        metavar="RESULTS",
        nargs="*",
        help="run ids, commits (7+ hex) or result paths (default: the latest run under --root)",
    )
    p.add_argument("-o", "--output", default="report.html", help="HTML file (default report.html)")
    p.add_argument("--root", default="runs", help="results root (default: runs)")
    p.add_argument(
        "--all", dest="all_runs", action="store_true", help="every run under --root (history)"
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="speedup-profile baseline: algorithm or solver label "
        "(default: the slowest CPU reference per problem)",
    )
    p.add_argument("--title", default="matchbench report", help="page title")
    p.add_argument(
        "--config", default=None, help="regression rules for history marks (compare's YAML)"
    )
    return p


def _fail(msg: str) -> int:
    print(f"matchbench report: error: {msg}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Command line of ``matchbench report``; returns the exit status (2: unusable input)."""
    import yaml

    from matchbench.report.build import build_report
    from matchbench.results.compare import CompareConfig, select_many

    args = _parser().parse_args(argv)
    if args.all_runs and args.results:
        return _fail("give RESULTS or --all, not both")
    try:
        config = CompareConfig.load(args.config)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return _fail(f"config: {' '.join(str(exc).split())}")
    try:
        sel = select_many(args.results, args.root, all_runs=args.all_runs)
    except (ResultsError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else repr(exc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = build_report(
            sel.frame, title=args.title, baseline=args.baseline, config=config, source=sel.spec
        )
    for w in caught:
        if issubclass(w.category, UserWarning):
            print(f"matchbench report: warning: {w.message}", file=sys.stderr)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(sel.run_ids)} run(s), {len(sel.frame)} rows)")
    return 0
