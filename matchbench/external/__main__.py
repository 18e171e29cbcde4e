"""``python -m matchbench.external [FAMILY ...]``: the formats outside programs can use."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from matchbench.core.problem import problem_table
    from matchbench.external.formats import describe

    names = list(sys.argv[1:] if argv is None else argv) or sorted(problem_table())
    for name in names:
        try:
            print(describe(name))
        except KeyError as exc:
            print(f"error: {exc.args[0]}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
