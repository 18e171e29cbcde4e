"""A small outside MCM program for the tests: reads the ``edges`` format (or a Matrix
Market file), answers in ``row_mates``, and misbehaves on request (``--mode``)::

    fake_mcm.py INPUT OUTPUT [--mode correct|wrong|crash|hang|garbage|silent|noanswer|flood]

correct: a maximum matching (SciPy's Hopcroft-Karp) and "solve time: T s";
wrong: a valid but not maximum matching (one matched pair dropped);
crash: exit status 3 after printing to stderr; hang: sleeps; garbage: text that is no
answer; silent: a correct answer but no time line; noanswer: exits 0 without writing;
flood: writes to stdout without end.
"""

import sys
import time


def main() -> int:
    inp, out = sys.argv[1], sys.argv[2]
    mode = "correct"
    for a in sys.argv[3:]:
        if a.startswith("--mode="):
            mode = a.split("=", 1)[1]
    if mode == "crash":
        print("fake_mcm: segmentation fault (pretend)", file=sys.stderr)
        return 3
    if mode == "hang":
        time.sleep(600)
        return 0
    if mode == "flood":
        line = "x" * 1023 + "\n"
        while True:
            sys.stdout.write(line)
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_bipartite_matching

    t0 = time.perf_counter()
    with open(inp) as f:
        head = f.readline()
        if head.startswith("%%MatrixMarket"):
            from scipy.io import mmread

            a = sp.csr_matrix(mmread(inp))
            n_rows, n_cols = a.shape
        else:
            n_rows, n_cols, m = map(int, head.split())
            e = np.loadtxt(f, dtype=np.int64, ndmin=2) if m else np.zeros((0, 2), np.int64)
            a = sp.csr_matrix((np.ones(m), (e[:, 0], e[:, 1])), shape=(n_rows, n_cols))
    row_mates = maximum_bipartite_matching(a, perm_type="column")
    if mode == "wrong":
        matched = np.flatnonzero(row_mates >= 0)
        row_mates[matched[0]] = -1
    dt = time.perf_counter() - t0
    if mode == "noanswer":
        return 0
    with open(out, "w") as f:
        if mode == "garbage":
            f.write("0\n1\nsegfault at 0xdeadbeef\n")
        else:
            f.write("\n".join(map(str, row_mates.tolist())) + "\n")
    if mode != "silent":
        print(f"fake_mcm {n_rows}x{n_cols}\nsolve time: {dt:.6e} s")
    print(f"matched: {int((row_mates >= 0).sum())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
