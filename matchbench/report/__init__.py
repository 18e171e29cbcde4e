"""The comparison report: ``matchbench report`` writes one self-contained Bokeh HTML file.

Sections (:data:`matchbench.report.build.SECTIONS`): overview with filters, performance
and speedup profiles, per-instance tables and geometric means, scaling, time breakdown,
solution quality, history with regression marks, failures. Nothing here imports Bokeh
until a report is built.
"""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``matchbench report`` (see :mod:`matchbench.report.cli`); returns the exit status."""
    from matchbench.report.cli import main as _main

    return _main(argv)
