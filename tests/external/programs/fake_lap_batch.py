"""A small outside batched LAP program for the tests: reads a ``npy_stack`` (B, n, n) of
costs, prints one line per instance with its row-to-column assignment (``row_to_col_lines``)
after the line "assignments:" on standard output, and its time. ``--color`` logs as
coloured loggers do: each log line in a colour, the reset code opening the next line."""

import sys
import time

import numpy as np
from scipy.optimize import linear_sum_assignment


def main() -> int:
    costs = np.load(sys.argv[1])
    t0 = time.perf_counter()
    lines = []
    for c in costs:
        _, cols = linear_sum_assignment(c)
        lines.append(" ".join(map(str, cols.tolist())))
    dt = time.perf_counter() - t0
    color = "--color" in sys.argv[2:]
    on, off = ("\x1b[1;34m", "\x1b[0m") if color else ("", "")
    print(f"{on}batch of {costs.shape[0]} LAPs of n = {costs.shape[1]}")
    print(f"{off}{on}elapsed {dt * 1e6:.1f} us")
    print(f"{off}assignments:")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
