"""``matchbench compare BASE NEW``: the regression gate between two sets of results.

BASE and NEW are each a run id (under ``--root``), a commit (hex prefix of at least 7
characters) or a result path (file, run folder or results root):
:mod:`matchbench.results.selection`. Every key found on either side gets a ``status`` and
a ``verdict`` (:mod:`matchbench.results.verdicts`, with the settings of
``conf/compare/default.yaml``), written as a table, Markdown or JSON
(:mod:`matchbench.results.compare_format`). Exit status: 1 when some verdict is
"regression"; 3 when none is but some key has too few repetitions to decide (fewer than
3 a side: neither the rank test nor the separation rule of
:func:`~matchbench.results.stats.separation_verdict` can judge it; ``--allow-inconclusive``
makes that 0); 2 on unusable input; 0 otherwise.

The names of those modules stay importable from here (``from matchbench.results.compare
import CompareConfig, normalize, select_many``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from matchbench.results import stats
from matchbench.results.compare_format import (
    FORMATS,
    format_json,
    format_markdown,
    format_table,
)
from matchbench.results.schema import KEY_COLUMNS
from matchbench.results.selection import CPU_LABEL, Selection, normalize, select, select_many
from matchbench.results.store import ResultsError
from matchbench.results.verdicts import (
    TIME_COLUMNS,
    CompareConfig,
    compare_frames,
    compare_key,
    summarize,
)

__all__ = [
    "CPU_LABEL",
    "TIME_COLUMNS",
    "CompareConfig",
    "Selection",
    "compare_frames",
    "compare_key",
    "format_json",
    "format_markdown",
    "format_table",
    "main",
    "normalize",
    "select",
    "select_many",
    "summarize",
]

#: Exit status when nothing regressed but some key had too few repetitions to decide.
EXIT_INCONCLUSIVE = 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="matchbench compare",
        description="Compare two sets of results; exit 1 on a regression, 3 when some key has "
        "too few repetitions to decide, 2 on unusable input, 0 otherwise.",
    )
    p.add_argument("base", metavar="BASE", help="run id, commit (7+ hex) or results path")
    p.add_argument("new", metavar="NEW", help="run id, commit (7+ hex) or results path")
    p.add_argument("--root", default="runs", help="results root (default: runs)")
    p.add_argument("--threshold", type=float, default=None, help="runtime ratio (default 1.10)")
    p.add_argument("--alpha", type=float, default=None, help="significance level (default 0.01)")
    p.add_argument(
        "--time",
        choices=TIME_COLUMNS,
        default=None,
        help="time compared: t_solve_s (the papers' protocol, default) or t_e2e_s "
        "(initializer + solve)",
    )
    p.add_argument("--config", default=None, help="rules YAML (default: conf/compare/default.yaml)")
    p.add_argument("--format", choices=sorted(FORMATS), default="table")
    p.add_argument("-o", "--output", default=None, help="write here instead of stdout")
    p.add_argument(
        "--allow-inconclusive",
        action="store_true",
        help="exit 0, not 3, when keys with too few repetitions are the only finding",
    )
    p.add_argument(
        "--changes-only",
        action="store_true",
        help="leave out unchanged keys in the table and JSON output",
    )
    return p


def _fail(msg: str) -> int:
    print(f"matchbench compare: error: {msg}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Command line of ``matchbench compare``; returns the exit status."""
    import yaml

    args = _parser().parse_args(argv)
    try:
        config = CompareConfig.load(args.config)
        if args.threshold is not None:
            config.threshold = args.threshold
        if args.alpha is not None:
            config.alpha = args.alpha
        if args.time is not None:
            config.time = args.time
        config.validate()
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return _fail(f"config: {' '.join(str(exc).split())}")
    try:
        base = select(args.base, args.root)
        new = select(args.new, args.root)
    except (ResultsError, OSError) as exc:
        return _fail(str(exc).splitlines()[0] if str(exc) else repr(exc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = compare_frames(base.frame, new.frame, config)
    summary = summarize(rows)
    if summary["overlapping"] == 0:
        return _fail(f"no overlapping keys ({', '.join(KEY_COLUMNS)}) between BASE and NEW")
    for w in caught:
        print(f"matchbench compare: warning: {w.message}", file=sys.stderr)
    shown = rows[rows["verdict"] != "unchanged"] if args.changes_only else rows
    # the summary (and the verdict) must not depend on what is shown
    text = FORMATS[args.format](shown, base, new, config, summary)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    if summary.get("regression", 0):
        return 1
    undecided = summary.get("inconclusive", 0)
    if undecided and not args.allow_inconclusive:
        print(
            f"matchbench compare: {undecided} key(s) have too few repetitions to decide "
            f"(the rank test needs enough to reach p < {config.alpha}, the separation rule "
            f"{stats.SEPARATION_MIN_REPETITIONS} per side); rerun with more "
            "(gpu.repetitions=5), or pass --allow-inconclusive",
            file=sys.stderr,
        )
        return EXIT_INCONCLUSIVE
    return 0


if __name__ == "__main__":
    sys.exit(main())
