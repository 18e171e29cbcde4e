#!/usr/bin/env bash
# louvain_gpu's options beyond paper III on the GPU, in under 4 minutes (issue #33):
#   1. the GPU tests (tests/community/test_louvain_gpu.py: the device against the host model,
#      move for move, with every option; certified partitions), while the host generates
#      the graphs;
#   2. each variant's seconds (CUDA events around the solve, median of 3 after a warm-up)
#      and recomputed modularity on the family's 2^20-vertex graphs: community_kron (edge
#      factor 16), community_delaunay, community_rgg, community_road.
# Run from the repository root on a GPU host, with the package importable:
#   export PYTHONPATH=/tmp/site:$PWD; OUT=/tmp/out bash docs/benchmarks/scripts/louvain_variants_gpu.sh
# Logs: $OUT/pytest.log, $OUT/graphs.log, $OUT/variants.log (the table), $OUT/variants.jsonl.
set -u
OUT=${OUT:-/tmp/louvain_variants}
GRAPHS=${GRAPHS:-/tmp/louvain_variants_graphs}
SCALE=${SCALE:-20}
mkdir -p "$OUT" "$GRAPHS"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1

# 1. graphs (host, background) and the GPU tests (foreground)
timeout 200 python3 - "$GRAPHS" "$SCALE" > "$OUT/graphs.log" 2>&1 <<'EOF' &
import sys, time
import numpy as np
from matchbench.families.community import datasets as D
out, scale = sys.argv[1], int(sys.argv[2])
for kind in ("road", "rgg", "delaunay", "kron"):
    t = time.perf_counter()
    g = getattr(D, f"community_{kind}")(scale)
    np.savez(f"{out}/{kind}.npz", ptr=g.ptr, ind=g.ind, weight=g.weight, n=g.n)
    print(kind, g.n, g.ind.shape[0], f"{time.perf_counter() - t:.1f} s", flush=True)
EOF
GEN=$!
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider --durations=12 \
  tests/community/test_louvain_gpu.py > "$OUT/pytest.log" 2>&1
echo "pytest exit $?" >> "$OUT/pytest.log"
tail -3 "$OUT/pytest.log"
wait $GEN
cat "$OUT/graphs.log"

# 2. variants: seconds and Q
timeout 150 python3 - "$GRAPHS" "$OUT" > "$OUT/variants.log" 2>&1 <<'EOF'
import json, sys, time
from pathlib import Path
import numpy as np
from omegaconf import OmegaConf
from matchbench.families.community.louvain_gpu import louvain_gpu
from matchbench.families.community.louvain_stages import Options
from matchbench.families.community.problem import CommunityGraph, modularity

graphs, out = Path(sys.argv[1]), Path(sys.argv[2])
cfg = OmegaConf.to_container(OmegaConf.load("conf/algorithm/louvain_gpu_fast.yaml"))
fast = {k: v for k, v in cfg.items() if k in Options.__dataclass_fields__}
variants = {
    "paper": {},
    "fast": fast,
    "fast_hash": {**fast, "aggregate": "hash"},
    "fast_rounds1": {**fast, "rounds": 1},
    "fast_noprune": {**fast, "prune": False},
    "fast_agg08": {**fast, "aggregation_tolerance": 0.8},
    "fast_drop10": {**fast, "t_drop": 10.0},
    "paper_flat": {"aggregate": "flat"},
}
rows = []
log = open(out / "variants.jsonl", "w")
for kind in ("kron", "delaunay", "rgg", "road"):
    f = graphs / f"{kind}.npz"
    if not f.exists():
        print(f"{kind}: no graph (generation failed or timed out)", flush=True)
        continue
    z = np.load(f)
    g = CommunityGraph(int(z["n"]), z["ptr"], z["ind"], z["weight"], name=f"{kind}_2^20")
    for name, kw in variants.items():
        try:
            louvain_gpu(g, **kw)  # warm-up (compilation, pools)
            secs, runs = [], []
            for _ in range(3):
                part, c, t = louvain_gpu(g, **kw)
                secs.append(t["solve"])
                runs.append((part, c, t))
            part, c, t = runs[int(np.argsort(secs)[1])]
            q = modularity(g, part.community)
            row = {
                "graph": kind, "variant": name, "solve_s": float(np.median(secs)),
                "q": q, "q_reported": part.modularity, "levels": c["levels"],
                "iterations": c["level_iterations"], "communities": c["communities"],
                "optimize_s": t.get("optimize"), "aggregate_s": t.get("aggregate"),
                "launches": c["kernel_launches"], "syncs": c["host_syncs"],
                "edges": c["level_edges"],
            }
        except Exception as exc:  # a failure is a row
            row = {"graph": kind, "variant": name, "error": repr(exc)[:300]}
        rows.append(row)
        log.write(json.dumps(row) + "\n")
        log.flush()
        if "error" in row:
            print(f"{kind:9s} {name:13s} ERROR {row['error']}", flush=True)
        else:
            print(f"{kind:9s} {name:13s} {row['solve_s']*1e3:9.2f} ms  Q {row['q']:.5f}  "
                  f"opt {row['optimize_s']*1e3:7.2f} agg {row['aggregate_s']*1e3:7.2f} ms  "
                  f"levels {row['levels']} its {row['iterations']} launches {row['launches']}",
                  flush=True)
EOF
echo "variants exit $?" >> "$OUT/variants.log"
cat "$OUT/variants.log"
