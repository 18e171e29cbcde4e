#!/usr/bin/env bash
# Build the public peers from checkouts made as docs/peers/README.md says, with the
# documented patches, and print the environment lines that point matchbench at them.
#
#   bash docs/peers/build.sh DIR [ARCH]      # ARCH: 90 for H100/H200 (the default)
#   eval "$(bash docs/peers/build.sh DIR)"   # ... and export them
#
# DIR holds the checkouts at the commits named in conf/algorithm/*.yaml, in folders named
# ECL-MM, HyLAC (branch Hung-Hybrid), HyLAC-Block-LAP (branch Block-LAP),
# louvain-communities-cuda and leiden-communities-openmp; a missing folder is skipped with
# one line. Each checkout is patched once (a marker file remembers it); the builds run side
# by side, each logging to DIR/<folder>.build.log; a failed build names its log and leaves
# the others standing.
set -uo pipefail
[ $# -ge 1 ] && [ -d "$1" ] || { echo "usage: build.sh DIR [ARCH] (DIR: the peers' checkouts)" >&2; exit 2; }
dir=$(cd "$1" && pwd)
arch=${2:-90}
mb=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
cub="NVCC=nvcc -include $mb/docs/peers/cub_compat.cuh"

patch_once() {  # peer folder
  [ -e "$dir/$2/.matchbench-patched" ] && return 0
  "$py" "$mb/docs/peers/patch.py" "$1" "$dir/$2" >&2 && touch "$dir/$2/.matchbench-patched"
}

build() {  # folder variable binary command...
  local folder=$1 var=$2 bin=$3; shift 3
  if [ ! -d "$dir/$folder" ]; then echo "build.sh: $dir/$folder is missing; $var not set" >&2; return 0; fi
  if (cd "$dir/$folder" && "$@") >"$dir/$folder.build.log" 2>&1 && [ -x "$dir/$folder/$bin" ]; then
    echo "export $var=$dir/$folder/$bin"
  else
    echo "build.sh: building $folder failed; see $dir/$folder.build.log" >&2
  fi
}

for p in "ecl-mm ECL-MM" "hylac HyLAC" "hylac-block HyLAC-Block-LAP" "louvain louvain-communities-cuda" \
         "leiden leiden-communities-openmp"; do
  set -- $p
  [ -d "$dir/$2" ] && { patch_once "$1" "$2" || { echo "build.sh: patching $2 failed" >&2; exit 1; }; }
done

out=$(mktemp)
{
  build ECL-MM ECL_MM_BIN ecl-mm nvcc -O3 -arch=sm_$arch -Xcompiler -fopenmp source/ECL-MM_10.cu -o ecl-mm &
  build HyLAC/codebase/Hung-CT HYLAC_BIN build/exe/src/Hybrid.cu.exe make ARCH=$arch "$cub" &
  build HyLAC/codebase/Hung HYLAC_CLASSICAL_BIN build/exe/src/Hung.cu.exe make ARCH=$arch "$cub" &
  build HyLAC/codebase/Hung-Tree HYLAC_TREE_BIN build/exe/main.cu.exe make ARCH=$arch &
  build HyLAC-Block-LAP/codebase/Block-LAP HYLAC_BLOCK_BIN build/exe/src/Hung.cu.exe make ARCH=$arch "$cub" &
  build louvain-communities-cuda GVE_LOUVAIN_BIN louvain nvcc -DTYPE=float -DMAX_THREADS=16 \
    -DREPEAT_METHOD=1 -std=c++17 -arch=sm_$arch -O3 -Xcompiler -fopenmp -x cu main.cxx -o louvain &
  build leiden-communities-openmp GVE_LEIDEN_BIN leiden g++ -DTYPE=float -DMAX_THREADS=16 \
    -DREPEAT_METHOD=1 -std=c++17 -O3 -fopenmp main.cxx -o leiden &
  wait
} >"$out"
cat "$out"
# One program runs both Louvains.
sed -n 's/^export GVE_LOUVAIN_BIN=/export NU_LOUVAIN_BIN=/p' "$out"
rm -f "$out"
