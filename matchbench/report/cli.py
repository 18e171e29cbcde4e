"""``matchbench report``: the comparison report as one self-contained HTML file.

With ``--experiment NAME`` it renders instead the tables that the preset
``conf/experiment/NAME.yaml`` declares (:mod:`matchbench.report.tables`), from the newest
run of that experiment under ``--root`` (or the given RESULTS), as Markdown or plain HTML.
"""

from __future__ import annotations

import argparse
import shlex
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
    p.add_argument(
        "-o",
        "--output",
        default=None,
        help="output file (default report.html; with --experiment and --format md: stdout)",
    )
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
    p.add_argument(
        "--title", default=None, help="page title (default: matchbench report, or the preset's)"
    )
    p.add_argument(
        "--config", default=None, help="regression rules for history marks (compare's YAML)"
    )
    p.add_argument(
        "--experiment",
        metavar="NAME",
        default=None,
        help="render the tables of conf/experiment/NAME.yaml's report section from a run of "
        "it (the newest under --root, or RESULTS)",
    )
    p.add_argument(
        "--format",
        choices=("md", "html"),
        default=None,
        help="with --experiment: md (Markdown, the default) or html (a plain HTML page)",
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
    if args.experiment is not None:
        return _experiment_main(args, argv)
    if args.format is not None:
        return _fail("--format applies to --experiment tables only")
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
            sel.frame,
            title=args.title or "matchbench report",
            baseline=args.baseline,
            config=config,
            source=sel.spec,
        )
    for w in caught:
        if issubclass(w.category, UserWarning):
            print(f"matchbench report: warning: {w.message}", file=sys.stderr)
    out = Path(args.output or "report.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(sel.run_ids)} run(s), {len(sel.frame)} rows)")
    return 0


def _experiment_main(args: argparse.Namespace, argv: list[str] | None) -> int:
    """``matchbench report --experiment NAME``: the preset's tables as Markdown or HTML."""
    from matchbench.report import tables

    for flag, given in (
        ("--all", args.all_runs),
        ("--baseline", args.baseline),
        ("--config", args.config),
    ):
        if given:
            return _fail(f"{flag} does not apply to --experiment (RESULTS chooses the runs)")
    fmt = args.format or "md"
    words = sys.argv[1:] if argv is None else argv
    if argv is None and words[:1] == ["report"]:
        words = words[1:]
    command = shlex.join(["matchbench", "report", *words])
    try:
        spec = tables.experiment_spec(args.experiment)
        if args.title is not None:
            spec = {**spec, "title": args.title}
        frame = tables.select_experiment_rows(args.experiment, args.results, args.root)
        text = tables.render_experiment(frame, spec, fmt=fmt, command=command)
    except (tables.ReportSpecError, ResultsError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else repr(exc))
    if args.output is None and fmt == "md":
        sys.stdout.write(text)
        return 0
    out = Path(args.output or "report.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    runs = frame["run_id"].dropna().nunique()
    print(f"wrote {out} ({args.experiment}: {runs} run(s), {len(frame)} rows)")
    return 0
