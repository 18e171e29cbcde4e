"""A small outside batched LAP program for the tests: reads a ``npy_stack`` (B, n, n) of
costs, prints one line per instance with its row-to-column assignment (``row_to_col_lines``)
after the line "assignments:" on standard output, and its time."""

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
    print(f"batch of {costs.shape[0]} LAPs of n = {costs.shape[1]}")
    print(f"elapsed {dt * 1e6:.1f} us")
    print("assignments:")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
