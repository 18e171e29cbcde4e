"""The documented patches that make the public peers read our instances and print their answers.

Nothing of the peers is shipped with matchbench: a user clones each peer at the commit
named in its ``conf/algorithm/*.yaml``, runs this script on the checkout, and builds it
(docs/peers/README.md). Each patch replaces one exact line (an anchor) of the peer's
source with that line and a few lines of ours; an anchor that is not found exactly once
stops the script, so a peer that has moved on is noticed, not silently mispatched.

    python docs/peers/patch.py ecl-mm     PATH/TO/ECL-MM
    python docs/peers/patch.py hylac      PATH/TO/HyLAC            # Hung-CT, Hung, Hung-Tree
    python docs/peers/patch.py hylac-block PATH/TO/HyLAC           # branch Block-LAP
    python docs/peers/patch.py louvain    PATH/TO/louvain-communities-cuda
    python docs/peers/patch.py leiden     PATH/TO/leiden-communities-openmp

What each patch does:

ecl-mm
    ECL-MM computes the matching but prints only its size; its own ``printEdgesInMatching``
    is commented out. The patch enables it (the ``ecl_pairs`` reader reads what it prints),
    and drops the clock rates from its GPU banner (CUDA 13's ``cudaDeviceProp`` has none).
hylac
    HyLAC's three single-LAP programs generate their own random costs. The patch reads
    ``$MATCHBENCH_COSTS`` instead (raw row-major values of the program's cost type: uint32
    for Hung-CT and Hung, float64 for Hung-Tree) and prints the assignment after its timed
    solve, after a line ``matchbench assignment:``. Hung-Tree declares ``getAssignments``
    without defining it; the patch defines it. With CUDA 13 their build also needs
    ``cub_compat.cuh`` here (``cub::Min``/``cub::Sum`` are gone from CUB 3): see README.md.
hylac-block
    The Block-LAP stream solver (a thread block per LAP) generates ``-t`` problems; the patch
    reads ``$MATCHBENCH_COSTS`` (an int32 header ``B n`` and ``B * n * n`` float32 values,
    our ``raw_f32_stack``) and prints each problem's ``row_of_star_at_column`` on a line.
louvain
    The program runs GVE-Louvain (OpenMP) and nu-Louvain (CUDA) and prints their
    modularity. The patch writes each one's membership, a label per vertex and line, to
    ``$MATCHBENCH_MEMBERSHIP_OMP`` / ``$MATCHBENCH_MEMBERSHIP_CUDA`` where set, outside
    the timed calls, and runs only the method named by ``$MATCHBENCH_LOUVAIN`` ("omp" or
    "cuda") when set.
leiden
    The program runs GVE-Louvain and GVE-Leiden (both OpenMP) and prints their modularity.
    The patch writes each one's membership, as ``louvain`` does, to
    ``$MATCHBENCH_MEMBERSHIP_LOUVAIN`` / ``$MATCHBENCH_MEMBERSHIP_LEIDEN`` where set,
    outside the timed calls, and runs only the method named by ``$MATCHBENCH_LEIDEN``
    ("louvain" or "leiden") when set.
"""

from __future__ import annotations

import sys
from pathlib import Path

READ_RAW = """\
  // matchbench: read the instance from $MATCHBENCH_COSTS (raw row-major {ctype}) instead
  const char *mb_path = getenv("MATCHBENCH_COSTS");
  size_t mb_n = (size_t)({size}) * (size_t)({size});
  {ctype} *{var} = new {ctype}[mb_n];
  {{
    FILE *mb_f = mb_path ? fopen(mb_path, "rb") : NULL;
    if (!mb_f || fread({var}, sizeof({ctype}), mb_n, mb_f) != mb_n)
    {{
      fprintf(stderr, "matchbench: cannot read %zu values from $MATCHBENCH_COSTS=%s\\n", mb_n, mb_path ? mb_path : "(unset)");
      exit(2);
    }}
    fclose(mb_f);
  }}
"""

PATCHES: dict[str, list[tuple[str, str, str]]] = {
    "ecl-mm": [
        (
            "source/ECL-MM_10.cu",
            "/*\nstatic void printEdgesInMatching()",
            "static void printEdgesInMatching()",
        ),
        (
            "source/ECL-MM_10.cu",
            '      printf("%d %d\\n", a, mate[a]);\n  }\n}\n*/\n',
            '      printf("%d %d\\n", a, mate[a]);\n  }\n}\n',
        ),
        ("source/ECL-MM_10.cu", "  //printEdgesInMatching();", "  printEdgesInMatching();"),
        # CUDA 13 has no cudaDeviceProp::clockRate nor memoryClockRate: print the rest
        ("source/ECL-MM_10.cu",
         '  printf("\\nGPU: %s with %d SMs and %d mTpSM (%.1f MHz and %.1f MHz)\\n", deviceProp.name, SMs, mTpSM, '
         'deviceProp.clockRate * 0.001, deviceProp.memoryClockRate * 0.001);\n'
         '  printf("     %.1f GB/s peak bandwidth (%d-bit bus), compute capability %d.%d\\n\\n", 2.0 * '
         'deviceProp.memoryClockRate * (deviceProp.memoryBusWidth / 8) * 0.000001, deviceProp.memoryBusWidth, '
         'deviceProp.major, deviceProp.minor);\n',
         '  printf("\\nGPU: %s with %d SMs and %d mTpSM, compute capability %d.%d\\n\\n", deviceProp.name, SMs, '
         'mTpSM, deviceProp.major, deviceProp.minor); // matchbench: CUDA 13 has no clock rates\n'),
    ],
    "hylac": [
        # Hung-CT (the hybrid program; uint costs)
        (
            "codebase/Hung-CT/src/Hybrid.cu",
            "  data *h_costs = generate_cost<data>(config, seed);\n",
            READ_RAW.format(ctype="data", size="size", var="h_costs"),
        ),
        (
            "codebase/Hung-CT/src/Hybrid.cu",
            '  Log(critical, "solve time %f s", time);\n',
            '  Log(critical, "solve time %f s", time);\n  lpx.print_assignment(); // matchbench\n',
        ),
        (
            "codebase/Hung-CT/LAP/HLAP.cuh",
            "  void solve()\n  {\n    Allocate();",
            "  // matchbench: row i's column, after the solve\n"
            "  void print_assignment()\n  {\n    int *h_ass = new int[psize];\n"
            "    CUDA_RUNTIME(cudaMemcpy(h_ass, row_ass, psize * sizeof(int), cudaMemcpyDeviceToHost));\n"
            '    printf("matchbench assignment:\\n");\n'
            '    for (size_t i = 0; i < psize; i++)\n      printf("%d\\n", h_ass[i]);\n'
            "    delete[] h_ass;\n  }\n"
            "  void solve()\n  {\n    Allocate();",
        ),
        # Hung (the classical program; uint costs)
        (
            "codebase/Hung/src/Hung.cu",
            "  data *h_costs = generate_cost<data>(config, seed);\n",
            READ_RAW.format(ctype="data", size="user_n", var="h_costs"),
        ),
        (
            "codebase/Hung/src/Hung.cu",
            "  delete lap;\n",
            "  lap->print_assignment(); // matchbench\n  delete lap;\n",
        ),
        (
            "codebase/Hung/LAP/Hung_lap.cuh",
            "  bool passes_sanity_test(data *d_min)\n",
            "  // matchbench: the star of each row, after the solve\n"
            '  void print_assignment()\n  {\n    printf("matchbench assignment:\\n");\n'
            '    for (uint r = 0; r < h_nrows; r++)\n      printf("%d\\n", gh.column_of_star_at_row[r]);\n  }\n\n'
            "  bool passes_sanity_test(data *d_min)\n",
        ),
        # Hung-Tree (float64 costs)
        (
            "codebase/Hung-Tree/main.cu",
            "\tdouble *cost_matrix = generate_cost<double>(problemsize, costrange);\n",
            READ_RAW.format(ctype="double", size="problemsize", var="cost_matrix"),
        ),
        (
            "codebase/Hung-Tree/main.cu",
            "\t\tdelete[] stimes;\n",
            "\t\tdelete[] stimes;\n"
            "\t\t{ // matchbench: row i's column\n\t\t\tint *mb_ass = new int[problemsize];\n"
            '\t\t\tlpx.getAssignments(mb_ass);\n\t\t\tprintf("matchbench assignment:\\n");\n'
            '\t\t\tfor (size_t i = 0; i < problemsize; i++)\n\t\t\t\tprintf("%d\\n", mb_ass[i]);\n'
            "\t\t\tdelete[] mb_ass;\n\t\t}\n",
        ),
        (
            "codebase/Hung-Tree/LinearAssignmentProblem.cuh",
            "// Executes Hungarian algorithm on the input cost matrix. Returns minimum cost.\n",
            "// matchbench: the accessor the class declares, defined\n"
            "void LinearAssignmentProblem::getAssignments(int *_row_assignments)\n{\n"
            "\tmemcpy(_row_assignments, h_vertices.row_assignments, N * sizeof(int));\n}\n\n"
            "// Executes Hungarian algorithm on the input cost matrix. Returns minimum cost.\n",
        ),
    ],
    "hylac-block": [
        (
            "codebase/Block-LAP/src/Hung.cu",
            "  int nprob = config.tile;\n",
            "  int nprob = config.tile;\n"
            "  // matchbench: B and n from the header of $MATCHBENCH_COSTS (int32 B, int32 n, float32 costs)\n"
            '  const char *mb_path = getenv("MATCHBENCH_COSTS");\n'
            '  FILE *mb_f = mb_path ? fopen(mb_path, "rb") : NULL;\n'
            "  int mb_head[2];\n"
            "  if (!mb_f || fread(mb_head, sizeof(int), 2, mb_f) != 2)\n"
            '  {\n    fprintf(stderr, "matchbench: cannot read $MATCHBENCH_COSTS\\n");\n    exit(2);\n  }\n'
            "  nprob = mb_head[0];\n  user_n = mb_head[1];\n",
        ),
        (
            "codebase/Block-LAP/src/Hung.cu",
            "  for (int prob = 0; prob < nprob; prob++)\n",
            "  for (int prob = 0; prob < 1; prob++) // matchbench: one generated problem (overwritten below)\n",
        ),
        (
            "codebase/Block-LAP/src/Hung.cu",
            '  time = t.elapsed();\n  Log(debug, "cost generation time %f s", time);\n',
            "  // matchbench: our costs replace the generated ones\n"
            "  if (fread(tcosts, sizeof(data), (size_t)nprob * user_n * user_n, mb_f) != (size_t)nprob * user_n * user_n)\n"
            '  {\n    fprintf(stderr, "matchbench: $MATCHBENCH_COSTS is short\\n");\n    exit(2);\n  }\n'
            "  fclose(mb_f);\n"
            '  time = t.elapsed();\n  Log(debug, "cost generation time %f s", time);\n',
        ),
        (
            "codebase/Block-LAP/src/Hung.cu",
            "  CUDA_RUNTIME(cudaFree(d_tcosts));\n  CUDA_RUNTIME(cudaFree(Drow_ass));\n",
            "  { // matchbench: each problem's row of the star at each column, a line per problem\n"
            "    int *mb_ass = new int[(size_t)nprob * user_n];\n"
            "    CUDA_RUNTIME(cudaMemcpy(mb_ass, Drow_ass, (size_t)nprob * user_n * sizeof(int), cudaMemcpyDeviceToHost));\n"
            '    printf("matchbench assignment:\\n");\n'
            "    for (int p = 0; p < nprob; p++)\n    {\n"
            '      for (int j = 0; j < user_n; j++)\n        printf(j ? " %d" : "%d", mb_ass[(size_t)p * user_n + j]);\n'
            '      printf("\\n");\n    }\n    delete[] mb_ass;\n  }\n'
            "  CUDA_RUNTIME(cudaFree(d_tcosts));\n  CUDA_RUNTIME(cudaFree(Drow_ass));\n",
        ),
    ],
    "louvain": [
        (
            "main.cxx",
            '  auto b1 = louvainStaticOmp(x, {REPEAT_METHOD});\n  flog(b1, "louvainStaticOmp");\n'
            '  auto b2 = louvainStaticCuda(x, {REPEAT_METHOD});\n  flog(b2, "louvainStaticCuda");\n',
            "  // matchbench: run the method $MATCHBENCH_LOUVAIN names (both when unset) and write its\n"
            "  // membership (a label per vertex and line) where $MATCHBENCH_MEMBERSHIP_OMP/_CUDA say\n"
            '  const char *mb_which = getenv("MATCHBENCH_LOUVAIN");\n'
            "  auto mb_write = [&](const auto& ans, const char *var) {\n"
            "    const char *path = getenv(var);\n    if (!path) return;\n"
            '    FILE *f = fopen(path, "w");\n    if (!f) { fprintf(stderr, "matchbench: cannot write %s\\n", path); exit(2); }\n'
            '    for (size_t u = 0; u < ans.membership.size(); ++u)\n      fprintf(f, "%lu\\n", (unsigned long) ans.membership[u]);\n'
            "    fclose(f);\n  };\n"
            '  if (!mb_which || std::string(mb_which) == "omp") {\n'
            '    auto b1 = louvainStaticOmp(x, {REPEAT_METHOD});\n    flog(b1, "louvainStaticOmp");\n'
            '    mb_write(b1, "MATCHBENCH_MEMBERSHIP_OMP");\n  }\n'
            '  if (!mb_which || std::string(mb_which) == "cuda") {\n'
            '    auto b2 = louvainStaticCuda(x, {REPEAT_METHOD});\n    flog(b2, "louvainStaticCuda");\n'
            '    mb_write(b2, "MATCHBENCH_MEMBERSHIP_CUDA");\n  }\n',
        ),
    ],
    "leiden": [
        (
            "main.cxx",
            '    auto a0 = louvainStaticOmp(x, {repeat});\n    flog(a0, "louvainStaticOmp");\n'
            '    auto b0 = leidenStaticOmp(x, {repeat});\n    flog(b0, "leidenStaticOmp");\n',
            "    // matchbench: run the method $MATCHBENCH_LEIDEN names (both when unset) and write its\n"
            "    // membership (a label per vertex and line) where $MATCHBENCH_MEMBERSHIP_LOUVAIN/_LEIDEN say\n"
            '    const char *mb_which = getenv("MATCHBENCH_LEIDEN");\n'
            "    auto mb_write = [&](const auto& ans, const char *var) {\n"
            "      const char *path = getenv(var);\n      if (!path) return;\n"
            '      FILE *f = fopen(path, "w");\n      if (!f) { fprintf(stderr, "matchbench: cannot write %s\\n", path); exit(2); }\n'
            '      for (size_t u = 0; u < ans.membership.size(); ++u)\n        fprintf(f, "%lu\\n", (unsigned long) ans.membership[u]);\n'
            "      fclose(f);\n    };\n"
            '    if (!mb_which || std::string(mb_which) == "louvain") {\n'
            '      auto a0 = louvainStaticOmp(x, {repeat});\n      flog(a0, "louvainStaticOmp");\n'
            '      mb_write(a0, "MATCHBENCH_MEMBERSHIP_LOUVAIN");\n    }\n'
            '    if (!mb_which || std::string(mb_which) == "leiden") {\n'
            '      auto b0 = leidenStaticOmp(x, {repeat});\n      flog(b0, "leidenStaticOmp");\n'
            '      mb_write(b0, "MATCHBENCH_MEMBERSHIP_LEIDEN");\n    }\n',
        ),
    ],
}


def apply(peer: str, root: Path) -> list[str]:
    """Apply ``peer``'s patch to the checkout at ``root``; the files changed.

    Raises
    ------
    SystemExit
        When an anchor is not found exactly once (the peer's source is not the commit the
        patch was written for, or it is patched already).
    """
    changed: dict[Path, str] = {}
    for rel, anchor, replacement in PATCHES[peer]:
        path = root / rel
        text = changed.get(path) or path.read_text()
        count = text.count(anchor)
        if count != 1:
            raise SystemExit(
                f"{peer}: {rel}: the anchor {anchor[:60]!r} occurs {count} times, not once"
            )
        changed[path] = text.replace(anchor, replacement)
    for path, text in changed.items():
        path.write_text(text)
    return [str(p) for p in changed]


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in PATCHES:
        print(f"usage: patch.py {{{','.join(PATCHES)}}} CHECKOUT", file=sys.stderr)
        return 2
    for f in apply(argv[0], Path(argv[1])):
        print("patched", f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
