// Louvain community detection on the GPU (the community family): Naim, Manne, Halappanavar &
// Tumeo, "Community Detection on the GPU", IPDPS 2017 (paper III of Naim's 2017 thesis),
// Sec. 4: Alg. 1 (modularity optimization), Alg. 2 (computeMove), Alg. 3 (aggregation), with
// the thread and memory allocation of Sec. 4.1. The host loop (Alg. 1 lines 3-12, the stages,
// the thresholds) is matchbench/families/community/louvain_stages.py, driven by
// louvain_gpu.py (the tests' host model: louvain_model.py); every kernel here is one parallel
// step of it, and a kernel boundary is each global synchronization the paper's host returns
// for ("control is only returned to the host for calling new kernels").
//
// A level's graph. CSR without self-loops: ptr (int64 offsets, n + 1), ind (int32 vertex ids),
// w (float64 weights), both directions of every edge; src[p] the row of entry p (for the
// quality kernel); loop[i] the self-loop weight aggregation gave vertex i, kept apart from the
// CSR (community module docstring: a loop counts twice in k_i and in e_{i->C(i)}, once in m).
// Vertex and community ids are int32 (n < 2^31), edge offsets int64 (2|E| may pass 2^31).
//
// Eq. 1 and Eq. 2 (Sec. 2), in float64 throughout:
//   Q = 1/(2m) sum_i e_{i->C(i)} - sum_c a_c^2 / (4 m^2)
//   dQ_{i->c} = (e_{i->c} - e_{i->C(i)\{i}}) / m + k_i (a_{C(i)\{i}} - a_c) / (2 m^2)
// k_i includes 2 loop[i]; e_{i->C(i)\{i}} sums i's CSR entries into C(i) (the loop is not in
// the CSR, so it is excluded, as Eq. 2 needs: it moves with i). The gain is evaluated as
// (e - e_own) / m + scale * (a_own - a_c), scale = k_i / (2.0 * m * m), a_own = a_{C(i)} - k_i,
// the expression of the sequential reference (matchbench/families/community/louvain.py, _best_move),
// written with the _rn intrinsics, which are never contracted into fused multiply-adds
// (lv_gain): where the sums are exact (integer weights) the GPU and the host model
// (louvain_gpu_model) compute bit-identical gains and so make identical moves.
//
// Move rules (Sec. 4, after Lu et al. 2015): only strictly positive gains; ties to the lowest
// community id; a vertex that is a community by itself joins another singleton community only
// if its id is lower (else it stays: the winner is not replaced by the runner-up).
//
// Kernels
//   louvain_setup        Alg. 1 line 2: k_i (a thread per vertex, a warp per long row), C = newc = identity, a = k,
//                        size = 1, the degree bucket and sort key of each vertex, and per level
//                        the bucket counts, max degree, 2m, sum k^2 and 2 sum loop (block
//                        reductions, one atomic per block and value).
//   louvain_rows         src[p] = the row of p (level 0; later levels get it from compaction).
//   louvain_table_sizes  the hash table size of each vertex of bucket 7 (or community of merge
//                        bucket 3): the smallest prime above 1.5 deg (Sec. 4).
//   louvain_move_b1..b7  Alg. 2 for the vertices of one degree bucket (Alg. 1 lines 5-7):
//                        b1-b4 2^(k+1) threads per vertex, b5 a warp, b6 a block (hash tables in
//                        shared memory), b7 a block with its table in global memory (Sec. 4.1);
//                        b7v the same with a table region per vertex (option vertex_tables).
//   louvain_commit       Alg. 1 lines 8-11 after each bucket: C[i] = newComm[i], and a_c and the
//                        community sizes updated by the moved vertices' k_i (atomics).
//   louvain_tally        the relaxed variant's commit (Sec. 5): a_c and sizes of newc from zero.
//   louvain_quality      Eq. 1's two sums for the iteration's stopping test (Alg. 1 line 12).
//   louvain_com_sizes    Alg. 3 lines 2-6: comSize and comDegree by atomics.
//   louvain_com_keys     the aggregation buckets (Sec. 4.1: comDegree in [1,127], [128,479],
//                        above) as sort keys, and their counts.
//   louvain_relabel      Alg. 3 lines 17-19 (com[res] = i by atomicAdd on vertexStart) and the
//                        level's dense labels newID[C[i]] (lines 7-12, the prefix sum is CuPy's).
//   louvain_merge_warp / _block / _global
//                        mergeCommunity (Alg. 3 lines 20-23) for the three buckets.
//   louvain_compact      the edge lists compressed to consecutive slots (Sec. 4, after Alg. 3).
//   louvain_merge_flat / _emit
//                        aggregate="flat": bucket 3's communities hashed edge-parallel, then
//                        compacted (see Options below).
//
// Hash tables (Alg. 2). Per vertex, open addressing with double hashing over P slots, P the
// smallest prime above 1.5 deg (so at most 2/3 full): probe t is (c mod P + t * (1 + c mod
// (P - 1))) mod P, which visits every slot (P prime, step in [1, P - 1]). keys[] holds a
// community id or LV_EMPTY; vals[] the running e_{i->c}.
// Race argument (lv_hash_add): a slot's key changes once, LV_EMPTY -> c, by atomicCAS (line 9,
// writing C[j]: the text's C[i] is a slip, papers/README.md); a thread that reads or CASes a
// slot and finds c adds its weight there by atomicAdd (lines 7, 10, 12), otherwise it probes on
// (line 13). Occupied slots never change, so every thread inserting c walks the same probe
// sequence past the same occupied slots and stops at the same slot: each community has exactly
// one slot and no weight is lost. The table is cleared before and read after a barrier of the
// threads that own it (__syncwarp for groups within a warp, __syncthreads for blocks), which
// also orders the atomics before the reads. The scan of the table that follows (line 14's argmax
// over positions) evaluates Eq. 2 once per distinct community with its final e_{i->c}.
//
// Buckets are committed one after another (Alg. 1 lines 8-11): during a move kernel C, a and
// size are read-only (the commit is the next launch), so every vertex of a bucket decides on
// the same configuration, and the outcome does not depend on thread scheduling; only the order
// of the floating-point atomicAdds does (exact for integer weights).
//
// Options beyond the paper (louvain_stages.py, Options; each off by default, which is the
// paper's method), kept deterministic so that the host model still makes the same moves:
//   rounds      the vertices sorted by (id range, bucket): a step is one bucket of one range
//               (louvain_setup's keys and per-range counts); the host launches the steps in
//               turn, a move and a commit kernel each.
//   hashed_rounds
//               the same steps on a hub-free stage, with the range of v a hash of its id,
//               ((v * LV_HASH_MULT) mod 2^32) * R >> 32 (louvain_setup's hashed flag; the
//               host decides per stage, louvain_buckets.stage_ranges). Beyond the paper: it
//               splits Alg. 1 line 5's bucket pass (all vertices of a bucket at once) into R
//               passes over pseudo-random vertex sets, each committed (lines 8-11) before
//               the next, so a vertex decides after its neighbours in the earlier ranges.
//   hub_chunks  bucket 7 of a range launched as several steps (consecutive slices of the
//               degree-sorted list), each committed before the next.
//   prune       flag[v]: evaluate v only if flagged. A move kernel reads and clears only its
//               own vertices' flags; the commit kernel (the next launch) flags the neighbours
//               of the moved vertices (a warp per moved vertex, writes of 1 only), so no
//               kernel reads a flag another thread of it may write.
//   pickless    lower_only: a move to a higher community id is dropped (nu-Louvain's guard).
//   vertex_tables
//               bucket 7's global tables one per vertex (louvain_move_b7v) instead of one per
//               block, reused by the block's vertices in turn (louvain_move_b7).
//   aggregate="flat"
//               louvain_merge_flat hashes the entries of every community of aggregation
//               bucket 3 into its own global table, a CSR entry per thread (lv_hash_add's race
//               argument: one table per community instead of per block); louvain_merge_emit
//               compacts each table as lv_merge_one does.
//   small_merge louvain_merge_warp takes LV_MERGE_QUAD communities of aggregation bucket 1 a
//               warp, each merged by a group of 8 lanes when all have comDegree <= LV_M0
//               (per_warp = 1: the paper's warp per community).

#include "common.cuh"

#define LV_BLOCK 128  // four warps per block (Sec. 4.1)
#define LV_FULL 0xffffffffu
#define LV_EMPTY (-1)
#define LV_NONE 0x7fffffff  // "no candidate" in the best-move reductions

// Degree buckets of the modularity optimization (Sec. 4.1): upper degrees of buckets 1-6.
#define LV_B1 4
#define LV_B2 8
#define LV_B3 16
#define LV_B4 32
#define LV_B5 84
#define LV_B6 319
// Shared-memory slots per vertex: the table size of the bucket's largest degree.
#define LV_TS1 7
#define LV_TS2 13
#define LV_TS3 29
#define LV_TS4 53
#define LV_TS5 127
#define LV_TS6 479
// Bucket 7's tables of at most this many slots in shared memory (option smem_hubs; 12 bytes
// a slot: 42,000 bytes, under the 48 KiB of static shared memory): degrees up to ~2,330.
#define LV_TS7S 3500
// Aggregation buckets (comDegree upper bounds) and their shared table sizes.
#define LV_M1 127
#define LV_M2 479
#define LV_MTS1 191
#define LV_MTS2 719

// Slots of the iteration's stats array (unsigned long long; doubles as their bits).
#define LV_MOVED 0
#define LV_INSIDE 1
#define LV_SPREAD 2
// Slots of the level setup's stats array: LV_COUNTS + 8 r + b the vertex count of bucket b
// (0: isolated) in id range r (one range unless the options ask for more).
#define LV_MAXDEG 8
#define LV_TWO_M 9
#define LV_K2 10
#define LV_LOOP2 11
#define LV_COUNTS 16
// Most id ranges (matchbench/families/community/louvain_buckets.py, ROUNDS_MAX).
#define LV_ROUNDS_MAX 64
// hashed_rounds' multiplier (louvain_buckets.py, HASH_MULT: Knuth's 2^32 / golden ratio).
#define LV_HASH_MULT 2654435761u
// Slots of the aggregation's stats array: 0-3 the community count of each bucket (0: empty).
#define LV_MAXCOMDEG 4

// Sort keys: 8 r + b above bit 40 (r the vertex's id range, 0 unless the options ask for
// several; b its bucket); in the last bucket the complement of the degree below it, so that
// a stable sort lists those vertices by decreasing degree (Sec. 4.1: "sorted by degree before
// the vertices are assigned to thread blocks in an interleaved fashion") and the others by
// id.
#define LV_KEY_SHIFT 40
#define LV_KEY_LOW ((1ull << LV_KEY_SHIFT) - 1ull)

// lv_prime_of_deg[d]: the smallest prime above 1.5 d (the hash table size of a vertex of
// degree d, Sec. 4), d = 0..479; tests/test_louvain_gpu_host.py checks it against the host's.
__constant__ unsigned short lv_prime_of_deg[480] = {
    2, 2, 5, 5, 7, 11, 11, 11, 13, 17, 17, 17, 19, 23, 23, 23,
    29, 29, 29, 29, 31, 37, 37, 37, 37, 41, 41, 41, 43, 47, 47, 47,
    53, 53, 53, 53, 59, 59, 59, 59, 61, 67, 67, 67, 67, 71, 71, 71,
    73, 79, 79, 79, 79, 83, 83, 83, 89, 89, 89, 89, 97, 97, 97, 97,
    97, 101, 101, 101, 103, 107, 107, 107, 109, 113, 113, 113, 127, 127, 127, 127,
    127, 127, 127, 127, 127, 131, 131, 131, 137, 137, 137, 137, 139, 149, 149, 149,
    149, 149, 149, 149, 151, 157, 157, 157, 157, 163, 163, 163, 163, 167, 167, 167,
    173, 173, 173, 173, 179, 179, 179, 179, 181, 191, 191, 191, 191, 191, 191, 191,
    193, 197, 197, 197, 199, 211, 211, 211, 211, 211, 211, 211, 211, 223, 223, 223,
    223, 223, 223, 223, 223, 227, 227, 227, 229, 233, 233, 233, 239, 239, 239, 239,
    241, 251, 251, 251, 251, 251, 251, 251, 257, 257, 257, 257, 263, 263, 263, 263,
    269, 269, 269, 269, 271, 277, 277, 277, 277, 281, 281, 281, 283, 293, 293, 293,
    293, 293, 293, 293, 307, 307, 307, 307, 307, 307, 307, 307, 307, 311, 311, 311,
    313, 317, 317, 317, 331, 331, 331, 331, 331, 331, 331, 331, 331, 337, 337, 337,
    337, 347, 347, 347, 347, 347, 347, 347, 349, 353, 353, 353, 359, 359, 359, 359,
    367, 367, 367, 367, 367, 373, 373, 373, 373, 379, 379, 379, 379, 383, 383, 383,
    389, 389, 389, 389, 397, 397, 397, 397, 397, 401, 401, 401, 409, 409, 409, 409,
    409, 419, 419, 419, 419, 419, 419, 419, 421, 431, 431, 431, 431, 431, 431, 431,
    433, 439, 439, 439, 439, 443, 443, 443, 449, 449, 449, 449, 457, 457, 457, 457,
    457, 461, 461, 461, 463, 467, 467, 467, 479, 479, 479, 479, 479, 479, 479, 479,
    487, 487, 487, 487, 487, 491, 491, 491, 499, 499, 499, 499, 499, 503, 503, 503,
    509, 509, 509, 509, 521, 521, 521, 521, 521, 521, 521, 521, 523, 541, 541, 541,
    541, 541, 541, 541, 541, 541, 541, 541, 541, 547, 547, 547, 547, 557, 557, 557,
    557, 557, 557, 557, 563, 563, 563, 563, 569, 569, 569, 569, 571, 577, 577, 577,
    577, 587, 587, 587, 587, 587, 587, 587, 593, 593, 593, 593, 599, 599, 599, 599,
    601, 607, 607, 607, 607, 613, 613, 613, 613, 617, 617, 617, 619, 631, 631, 631,
    631, 631, 631, 631, 631, 641, 641, 641, 641, 641, 641, 641, 643, 647, 647, 647,
    653, 653, 653, 653, 659, 659, 659, 659, 661, 673, 673, 673, 673, 673, 673, 673,
    673, 677, 677, 677, 683, 683, 683, 683, 691, 691, 691, 691, 691, 701, 701, 701,
    701, 701, 701, 701, 709, 709, 709, 709, 709, 719, 719, 719, 719, 719, 719, 719,
};

// ---- helpers ------------------------------------------------------------------------------

__device__ __forceinline__ int lv_move_bucket(long long d) {
  if (d <= 0) return 0;
  if (d <= LV_B1) return 1;
  if (d <= LV_B2) return 2;
  if (d <= LV_B3) return 3;
  if (d <= LV_B4) return 4;
  if (d <= LV_B5) return 5;
  if (d <= LV_B6) return 6;
  return 7;
}

__device__ __forceinline__ bool lv_is_prime(unsigned long long x) {
  if (x < 2) return false;
  if (x < 4) return true;
  if ((x & 1ull) == 0) return false;
  for (unsigned long long f = 3; f * f <= x; f += 2)
    if (x % f == 0) return false;
  return true;
}

// The smallest prime above 1.5 d: floor(3d / 2) + 1 is the smallest integer above 1.5 d.
__device__ __forceinline__ unsigned long long lv_table_size(long long d) {
  if (d < 480) return lv_prime_of_deg[d < 0 ? 0 : d];
  unsigned long long x = (unsigned long long)(3 * d) / 2ull + 1ull;
  while (!lv_is_prime(x)) ++x;
  return x;
}

// Alg. 2 lines 3-13 for one edge: add weight wt to community c's slot of the table (keys,
// vals) of P slots, claiming the slot by CAS if c is new. Race argument in the file header.
// S is the slot index type: 32 bits for shared tables, 64 for global ones.
template <typename S>
__device__ __forceinline__ void lv_hash_add(int* keys, double* vals, S P, int c, double wt) {
  S pos = (S)((unsigned long long)(unsigned)c % (unsigned long long)P);                 // line 5
  const S step = (S)1 + (S)((unsigned long long)(unsigned)c % (unsigned long long)(P - 1));
  for (;;) {
    int cur = *((volatile int*)(keys + pos));
    if (cur == LV_EMPTY) {                                  // line 8
      cur = atomicCAS(keys + pos, LV_EMPTY, c);            // line 9 (C[j], not C[i])
      if (cur == LV_EMPTY) cur = c;                         // claimed
    }
    if (cur == c) {                                         // lines 6, 10, 11
      atomicAdd(vals + pos, wt);                            // lines 7, 10, 12
      return;
    }
    pos += step;                                            // line 13: probe on
    if (pos >= P) pos -= P;
  }
}

// Butterfly reductions over aligned groups of G lanes (G a power of two <= 32): every lane of
// the group ends with the group's result, computed in the same order on every run.
template <int G>
__device__ __forceinline__ double lv_group_sum(double x) {
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) x += __shfl_xor_sync(LV_FULL, x, o);
  return x;
}

// The better of two candidates: the larger gain, ties to the lower community id.
__device__ __forceinline__ void lv_better(double& g, int& c, double og, int oc) {
  if (og > g || (og == g && oc < c)) {
    g = og;
    c = oc;
  }
}

template <int G>
__device__ __forceinline__ void lv_group_best(double& g, int& c) {
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) {
    const double og = __shfl_xor_sync(LV_FULL, g, o);
    const int oc = __shfl_xor_sync(LV_FULL, c, o);
    lv_better(g, c, og, oc);
  }
}

// Inclusive scan over the warp; *total gets the warp's sum.
__device__ __forceinline__ long long lv_warp_scan(long long x, long long* total) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const long long y = __shfl_up_sync(LV_FULL, x, o);
    if (lane >= o) x += y;
  }
  *total = __shfl_sync(LV_FULL, x, 31);
  return x;
}

// Block-wide (LV_BLOCK threads) versions; every thread of the block must call them. Each
// ends with a barrier, so its shared scratch may be reused at once.
__device__ __forceinline__ double lv_block_sum(double x) {
  __shared__ double s[LV_BLOCK / 32];
  x = lv_group_sum<32>(x);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = x;
  __syncthreads();
  double t = s[0];
#pragma unroll
  for (int i = 1; i < LV_BLOCK / 32; ++i) t += s[i];
  __syncthreads();
  return t;
}

__device__ __forceinline__ void lv_block_best(double& g, int& c) {
  __shared__ double sg[LV_BLOCK / 32];
  __shared__ int sc[LV_BLOCK / 32];
  lv_group_best<32>(g, c);
  if ((threadIdx.x & 31) == 0) {
    sg[threadIdx.x >> 5] = g;
    sc[threadIdx.x >> 5] = c;
  }
  __syncthreads();
  g = sg[0];
  c = sc[0];
#pragma unroll
  for (int i = 1; i < LV_BLOCK / 32; ++i) lv_better(g, c, sg[i], sc[i]);
  __syncthreads();
}

__device__ __forceinline__ long long lv_block_scan(long long x, long long* total) {
  __shared__ long long s[LV_BLOCK / 32];
  long long wt;
  x = lv_warp_scan(x, &wt);
  const int wid = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 31) s[wid] = wt;
  __syncthreads();
  long long off = 0, t = 0;
#pragma unroll
  for (int i = 0; i < LV_BLOCK / 32; ++i) {
    if (i < wid) off += s[i];
    t += s[i];
  }
  __syncthreads();
  *total = t;
  return x + off;
}

__device__ __forceinline__ unsigned long long lv_block_sum_u64(unsigned long long x) {
  __shared__ unsigned long long s[LV_BLOCK / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(LV_FULL, x, o);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = x;
  __syncthreads();
  unsigned long long t = 0;
#pragma unroll
  for (int i = 0; i < LV_BLOCK / 32; ++i) t += s[i];
  __syncthreads();
  return t;
}

// A group of G threads (an aligned part of a warp, G = 8 or 16; a warp; or the whole block of
// LV_BLOCK): barrier, sum, scan. Groups within a warp use their own lane mask, so groups of one
// warp may take different trip counts through the same loops.
template <int G>
__device__ __forceinline__ unsigned lv_gmask() {
  if constexpr (G >= 32) return LV_FULL;
  else return ((1u << G) - 1u) << ((threadIdx.x & 31) & ~(G - 1));
}
template <int G>
__device__ __forceinline__ void lv_gsync() {
  if constexpr (G < 32) __syncwarp(lv_gmask<G>());
  else if constexpr (G == 32) __syncwarp();
  else __syncthreads();
}
template <int G>
__device__ __forceinline__ double lv_gsum(double x) {
  if constexpr (G < 32) {
    const unsigned mask = lv_gmask<G>();
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) x += __shfl_xor_sync(mask, x, o);
    return x;
  } else if constexpr (G == 32) {
    return lv_group_sum<32>(x);
  } else {
    return lv_block_sum(x);
  }
}
template <int G>
__device__ __forceinline__ long long lv_gscan(long long x, long long* total) {
  if constexpr (G < 32) {
    const unsigned mask = lv_gmask<G>();
    const int t = threadIdx.x & (G - 1);
#pragma unroll
    for (int o = 1; o < G; o <<= 1) {
      const long long y = __shfl_up_sync(mask, x, o, G);
      if (t >= o) x += y;
    }
    *total = __shfl_sync(mask, x, G - 1, G);
    return x;
  } else if constexpr (G == 32) {
    return lv_warp_scan(x, total);
  } else {
    return lv_block_scan(x, total);
  }
}

// Eq. 2 for a candidate with e = e_{i->c} and a_c, given e_own = e_{i->C(i)\{i}}, a_own and
// scale = k_i / (2 m^2): (e - e_own) / m + scale * (a_own - a_c), rounded step by step as the
// host computes it (no FMA contraction).
__device__ __forceinline__ double lv_gain(double e, double e_own, double m, double scale,
                                          double a_own, double a_c) {
  return __dadd_rn(__ddiv_rn(__dsub_rn(e, e_own), m), __dmul_rn(scale, __dsub_rn(a_own, a_c)));
}
__device__ __forceinline__ double lv_scale(double ki, double m) {
  return __ddiv_rn(ki, __dmul_rn(__dmul_rn(2.0, m), m));
}

__device__ __forceinline__ double* lv_dslot(unsigned long long* stats, int slot) {
  return reinterpret_cast<double*>(stats + slot);
}

// Grid-stride loops over a level's items in kernels launched with LV_BLOCK threads.
#define LV_FOR(i, n)                                                                    \
  for (long long i = (long long)blockIdx.x * LV_BLOCK + threadIdx.x; i < (long long)(n); \
       i += (long long)LV_BLOCK * gridDim.x)

// ---- Alg. 1 line 2: the level's setup ------------------------------------------------------

// A thread per vertex: k_i = sum of its weights + 2 loop[i] (Sec. 2: self-loops count in k_i);
// C = newc = identity (every vertex a community by itself), a = k, size = 1, flag = 1; key[i]
// its (range, bucket) sort key. stats (zeroed by the host): max degree, 2m = sum k, sum k^2
// (the singletons' Eq. 1 spread), 2 sum loop (their inside term), and from LV_COUNTS the
// vertex count of each (range, bucket), rounds <= LV_ROUNDS_MAX ranges: contiguous, v R / n
// (the options' rounds), or with hashed ((v * LV_HASH_MULT) mod 2^32) R >> 32 (hashed_rounds,
// beyond the paper: Alg. 1 line 5's pass over a bucket taken in R hashed parts; 32-bit
// unsigned product, then 64-bit, as louvain_buckets.round_of computes it).
// A row of more than LV_ROW_SERIAL entries is summed by its whole warp (lv_row_sum); the
// rest by their own thread: a warp per vertex left 31 lanes idle on graphs of mean degree
// 3-6 and made the level's setup latency-bound (1.56 ms for road 2^22's 4.2M vertices on an
// H100). Sums of integer weights are exact in any order, so the host model still agrees.
#define LV_ROW_SERIAL 16

// The weight sum of each lane's row [beg, end): rows of at most LV_ROW_SERIAL entries by
// their lane, longer ones by the whole warp in turn (called by all 32 lanes; has_row false
// for a lane past the last vertex).
__device__ __forceinline__ double lv_row_sum(bool has_row, long long beg, long long end,
                                             const double* __restrict__ w, int lane) {
  const bool wide = has_row && end - beg > LV_ROW_SERIAL;
  double s = 0.0;
  if (has_row && !wide)
    for (long long p = beg; p < end; ++p) s += w[p];
  for (unsigned m = __ballot_sync(LV_FULL, wide); m; m &= m - 1) {
    const int src = __ffs(m) - 1;
    const long long b = __shfl_sync(LV_FULL, beg, src), e = __shfl_sync(LV_FULL, end, src);
    double t = 0.0;
    for (long long p = b + lane; p < e; p += 32) t += w[p];
    t = lv_group_sum<32>(t);
    if (lane == src) s = t;
  }
  return s;
}

// Grid-stride loop in whole warps (every lane of a warp takes the same trips, so the warp's
// collectives in lv_row_sum see all 32 lanes); v is the lane's item, valid when v < n.
#define LV_FOR_WARPS(v, n)                                                               \
  for (long long v = (long long)blockIdx.x * LV_BLOCK + threadIdx.x,                     \
                 v##_first = v - (threadIdx.x & 31);                                     \
       v##_first < (long long)(n);                                                       \
       v += (long long)LV_BLOCK * gridDim.x, v##_first += (long long)LV_BLOCK * gridDim.x)

extern "C" __global__ void louvain_setup(long long n, const long long* __restrict__ ptr,
                                         const double* __restrict__ w,
                                         const double* __restrict__ loop, double* k, int* C,
                                         int* newc, double* a, int* size,
                                         unsigned long long* key, unsigned long long* stats,
                                         int rounds, unsigned char* flag, int hashed) {
  __shared__ unsigned long long s_cnt[8 * LV_ROUNDS_MAX];
  __shared__ unsigned long long s_max;
  __shared__ double s_sum[3];
  for (int i = threadIdx.x; i < 8 * rounds; i += LV_BLOCK) s_cnt[i] = 0;
  if (threadIdx.x == 0) s_max = 0;
  if (threadIdx.x < 3) s_sum[threadIdx.x] = 0.0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  double two_m = 0.0, k2 = 0.0, loop2 = 0.0;
  unsigned long long top = 0;
  LV_FOR_WARPS(v, n) {
    const bool has = v < n;
    const long long beg = has ? ptr[v] : 0, end = has ? ptr[v + 1] : 0;
    const double s = lv_row_sum(has, beg, end, w, lane);
    if (has) {
      const double lp = 2.0 * loop[v];
      const double kv = s + lp;
      k[v] = kv;
      a[v] = kv;
      C[v] = (int)v;
      newc[v] = (int)v;
      size[v] = 1;
      flag[v] = 1;
      const long long deg = end - beg;
      const int b = lv_move_bucket(deg);
      const unsigned long long low =
          b == 7 ? LV_KEY_LOW - (unsigned long long)min(deg, (long long)LV_KEY_LOW) : 0ull;
      // id range r: v R / n, or (hashed) ((v * LV_HASH_MULT) mod 2^32) R >> 32
      const unsigned long long h = (unsigned)v * LV_HASH_MULT;  // 32-bit product: mod 2^32
      const int r = hashed ? (int)((h * (unsigned long long)rounds) >> 32)
                           : (int)(v * (long long)rounds / n);
      const int slot = r * 8 + b;
      key[v] = ((unsigned long long)slot << LV_KEY_SHIFT) | low;
      atomicAdd(&s_cnt[slot], 1ull);
      top = max(top, (unsigned long long)deg);
      two_m += kv;
      k2 += kv * kv;
      loop2 += lp;
    }
  }
  // the block's sums: a warp reduction, then one shared atomic per warp and value
  two_m = lv_group_sum<32>(two_m);
  k2 = lv_group_sum<32>(k2);
  loop2 = lv_group_sum<32>(loop2);
  for (int o = 16; o > 0; o >>= 1) top = max(top, __shfl_xor_sync(LV_FULL, top, o));
  if (lane == 0) {
    atomicAdd(&s_sum[0], two_m);
    atomicAdd(&s_sum[1], k2);
    atomicAdd(&s_sum[2], loop2);
    atomicMax(&s_max, top);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 8 * rounds; i += LV_BLOCK)
    if (s_cnt[i]) atomicAdd(stats + LV_COUNTS + i, s_cnt[i]);
  if (threadIdx.x == 0) {
    atomicMax(stats + LV_MAXDEG, s_max);
    atomicAdd(lv_dslot(stats, LV_TWO_M), s_sum[0]);
    atomicAdd(lv_dslot(stats, LV_K2), s_sum[1]);
    atomicAdd(lv_dslot(stats, LV_LOOP2), s_sum[2]);
  }
}

// src[p] = i for every entry p of row i: a thread per row, rows of more than LV_ROW_SERIAL
// entries by their whole warp in turn (as lv_row_sum).
extern "C" __global__ void louvain_rows(long long n, const long long* __restrict__ ptr,
                                        int* src) {
  const int lane = threadIdx.x & 31;
  LV_FOR_WARPS(v, n) {
    const bool has = v < n;
    const long long beg = has ? ptr[v] : 0, end = has ? ptr[v + 1] : 0;
    const bool wide = has && end - beg > LV_ROW_SERIAL;
    if (has && !wide)
      for (long long p = beg; p < end; ++p) src[p] = (int)v;
    for (unsigned m = __ballot_sync(LV_FULL, wide); m; m &= m - 1) {
      const int from = __ffs(m) - 1;
      const long long b = __shfl_sync(LV_FULL, beg, from), e = __shfl_sync(LV_FULL, end, from);
      const int row = (int)__shfl_sync(LV_FULL, v, from);
      for (long long p = b + lane; p < e; p += 32) src[p] = row;
    }
  }
}

// out[t] = the table size of item order[start + t], t < count: the smallest prime above 1.5
// times its degree (ptr's row length) or, with use_bound, above 1.5 min(bound[item], cap).
extern "C" __global__ void louvain_table_sizes(const int* __restrict__ order, long long start,
                                               long long count,
                                               const long long* __restrict__ ptr,
                                               const long long* __restrict__ bound,
                                               int use_bound, long long cap, long long* out) {
  LV_FOR(t, count) {
    const int item = order[start + t];
    const long long d = use_bound ? min(bound[item], cap) : ptr[item + 1] - ptr[item];
    out[t] = (long long)lv_table_size(d);
  }
}

// ---- Alg. 2: computeMove -----------------------------------------------------------------

// Buckets 1-5: groups of G lanes of one warp per vertex, each lane hashing up to EPT of its
// edges (b1-b4: G = 2^(k+1) >= deg, one edge; b5: a warp, one to three edges, interleaved),
// tables of TS slots in shared memory (Sec. 4.1). Alg. 2 lines 2-13 hash the neighbours'
// communities other than C(i) (those sum to e_{i->C(i)\{i}} in registers); after the warp
// barrier, line 14: each lane evaluates Eq. 2 on its share of the slots, a butterfly picks
// the best (ties to the lower id); lines 15-18 with the singleton rule write newc[i].
template <int G, int EPT, int TS>
__device__ __forceinline__ void lv_move_groups(
    const int* __restrict__ order, long long start, long long count,
    const long long* __restrict__ ptr, const int* __restrict__ ind,
    const double* __restrict__ w, const int* __restrict__ C, const double* __restrict__ a,
    const int* __restrict__ size, const double* __restrict__ k, double m,
    int* __restrict__ newc, unsigned char* __restrict__ flag, int prune, int lower_only) {
  constexpr int V = LV_BLOCK / G;
  __shared__ int s_keys[V * TS];
  __shared__ double s_vals[V * TS];
  const int g = threadIdx.x / G;
  const int t = threadIdx.x % G;
  const long long idx = (long long)blockIdx.x * V + g;
  const bool inrange = idx < count;
  bool active = false;  // evaluated: in range and (without prune) or flagged
  int* keys = s_keys + g * TS;
  double* vals = s_vals + g * TS;
  int v = 0, ci = 0;
  long long beg = 0, end = 0;
  unsigned P = 0;
  if (inrange) {
    v = order[start + idx];
    ci = C[v];
    active = !prune || flag[v];
  }
  if (active) {
    beg = ptr[v];
    end = ptr[v + 1];
    P = lv_prime_of_deg[end - beg];
  }
  for (unsigned s = t; s < P; s += G) {
    keys[s] = LV_EMPTY;
    vals[s] = 0.0;
  }
  __syncwarp();
  double e_own = 0.0;
#pragma unroll
  for (int r = 0; r < EPT; ++r) {  // line 2: the neighbours in parallel
    const long long p = beg + t + (long long)r * G;
    if (p < end) {
      const int cj = C[ind[p]];
      const double wt = w[p];
      if (cj == ci)
        e_own += wt;
      else
        lv_hash_add<unsigned>(keys, vals, P, cj, wt);
    }
  }
  __syncwarp();
  e_own = lv_group_sum<G>(e_own);
  double bg = 0.0;
  int bc = LV_NONE;
  if (active) {
    const double ki = k[v];
    const double a_own = __dsub_rn(a[ci], ki);
    const double scale = lv_scale(ki, m);
    for (unsigned s = t; s < P; s += G) {  // line 14: argmax over the positions
      const int c = keys[s];
      if (c != LV_EMPTY) {
        const double gain = lv_gain(vals[s], e_own, m, scale, a_own, a[c]);  // Eq. 2
        if (gain > 0.0) lv_better(bg, bc, gain, c);
      }
    }
  }
  lv_group_best<G>(bg, bc);
  if (inrange && t == 0) {  // lines 15-18
    int nc = ci;
    if (active) {
      if (bc != LV_NONE && !(size[ci] == 1 && size[bc] == 1 && bc > ci)) nc = bc;
      if (lower_only && nc > ci) nc = ci;
      if (prune) flag[v] = 0;
    }
    newc[v] = nc;
  }
}

// Buckets 6 and 7: a block per vertex (bucket 7: block b takes the vertices b, b + gridDim.x,
// ... of the degree-sorted list, reusing its global table region keys/vals; bucket 6: one
// vertex per block, the table in shared memory). GLOBAL: the table is read through L2
// (volatile keys, __ldcg values), where its atomics are performed.
template <bool GLOBAL>
__device__ __forceinline__ void lv_move_block(
    const int* __restrict__ order, long long start, long long count,
    const long long* __restrict__ ptr, const int* __restrict__ ind,
    const double* __restrict__ w, const int* __restrict__ C, const double* __restrict__ a,
    const int* __restrict__ size, const double* __restrict__ k, double m,
    int* __restrict__ newc, unsigned char* __restrict__ flag, int prune, int lower_only,
    int* gkeys, double* gvals, const long long* __restrict__ tsize,
    int* skeys = nullptr, double* svals = nullptr,
    const long long* __restrict__ toff = nullptr) {
  for (long long idx = blockIdx.x; idx < count; idx += gridDim.x) {
    const int v = order[start + idx];
    const int ci = C[v];
    // block-uniform; thread 0 clears the flag after the barriers below
    if (prune && !flag[v]) {
      if (threadIdx.x == 0) newc[v] = ci;
      continue;
    }
    const long long beg = ptr[v], end = ptr[v + 1];
    const unsigned long long P =
        GLOBAL ? (unsigned long long)tsize[idx] : (unsigned long long)lv_prime_of_deg[end - beg];
    // bucket 7 (GLOBAL): a table of up to LV_TS7S slots in shared memory (skeys/svals), a
    // larger one in the block's global region; the same table either way (beyond the paper:
    // Sec. 4.1 keeps every bucket-7 table in global memory)
    const bool inglobal = GLOBAL && (skeys == nullptr || P > (unsigned long long)LV_TS7S);
    // option vertex_tables: the vertex's own region (toff[idx]), else the block's
    const long long off = toff != nullptr ? toff[idx] : 0;
    int* keys = GLOBAL && !inglobal ? skeys : gkeys + off;
    double* vals = GLOBAL && !inglobal ? svals : gvals + off;
    for (unsigned long long s = threadIdx.x; s < P; s += LV_BLOCK) {
      keys[s] = LV_EMPTY;
      vals[s] = 0.0;
    }
    __syncthreads();
    double e_own = 0.0;
    for (long long p = beg + threadIdx.x; p < end; p += LV_BLOCK) {
      const int cj = C[ind[p]];
      const double wt = w[p];
      if (cj == ci)
        e_own += wt;
      else
        lv_hash_add<unsigned long long>(keys, vals, P, cj, wt);
    }
    __syncthreads();
    e_own = lv_block_sum(e_own);
    const double ki = k[v];
    const double a_own = __dsub_rn(a[ci], ki);
    const double scale = lv_scale(ki, m);
    double bg = 0.0;
    int bc = LV_NONE;
    for (unsigned long long s = threadIdx.x; s < P; s += LV_BLOCK) {
      const int c = inglobal ? *((volatile int*)(keys + s)) : keys[s];
      if (c != LV_EMPTY) {
        const double e = inglobal ? __ldcg(vals + s) : vals[s];
        const double gain = lv_gain(e, e_own, m, scale, a_own, a[c]);  // Eq. 2
        if (gain > 0.0) lv_better(bg, bc, gain, c);
      }
    }
    lv_block_best(bg, bc);  // ends with a barrier: the table may be cleared again
    if (threadIdx.x == 0) {
      int nc = ci;
      if (bc != LV_NONE && !(size[ci] == 1 && size[bc] == 1 && bc > ci)) nc = bc;
      if (lower_only && nc > ci) nc = ci;
      if (prune) flag[v] = 0;
      newc[v] = nc;
    }
  }
}

#define LV_MOVE_ARGS                                                                        \
  const int *__restrict__ order, long long start, long long count,                          \
      const long long *__restrict__ ptr, const int *__restrict__ ind,                       \
      const double *__restrict__ w, const int *__restrict__ C, const double *__restrict__ a, \
      const int *__restrict__ size, const double *__restrict__ k, double m,                 \
      int *__restrict__ newc, unsigned char *__restrict__ flag, int prune, int lower_only
#define LV_MOVE_PASS \
  order, start, count, ptr, ind, w, C, a, size, k, m, newc, flag, prune, lower_only

extern "C" __global__ void __launch_bounds__(LV_BLOCK) louvain_move_b1(LV_MOVE_ARGS) {
  lv_move_groups<4, 1, LV_TS1>(LV_MOVE_PASS);
}
extern "C" __global__ void __launch_bounds__(LV_BLOCK) louvain_move_b2(LV_MOVE_ARGS) {
  lv_move_groups<8, 1, LV_TS2>(LV_MOVE_PASS);
}
extern "C" __global__ void __launch_bounds__(LV_BLOCK) louvain_move_b3(LV_MOVE_ARGS) {
  lv_move_groups<16, 1, LV_TS3>(LV_MOVE_PASS);
}
extern "C" __global__ void __launch_bounds__(LV_BLOCK) louvain_move_b4(LV_MOVE_ARGS) {
  lv_move_groups<32, 1, LV_TS4>(LV_MOVE_PASS);
}
extern "C" __global__ void __launch_bounds__(LV_BLOCK) louvain_move_b5(LV_MOVE_ARGS) {
  lv_move_groups<32, (LV_B5 + 31) / 32, LV_TS5>(LV_MOVE_PASS);
}
extern "C" __global__ void __launch_bounds__(LV_BLOCK) louvain_move_b6(LV_MOVE_ARGS) {
  __shared__ int s_keys[LV_TS6];
  __shared__ double s_vals[LV_TS6];
  lv_move_block<false>(LV_MOVE_PASS, s_keys, s_vals, nullptr);
}
// keys/vals: gridDim.x regions of `cap` slots; tsize[t]: the table size of the t-th vertex.
// smem7: a vertex whose table has at most LV_TS7S slots hashes in shared memory instead.
extern "C" __global__ void __launch_bounds__(LV_BLOCK)
    louvain_move_b7(LV_MOVE_ARGS, int* gkeys, double* gvals, long long cap,
                    const long long* __restrict__ tsize, int smem7) {
  __shared__ int s_keys[LV_TS7S];
  __shared__ double s_vals[LV_TS7S];
  lv_move_block<true>(LV_MOVE_PASS, gkeys + (long long)blockIdx.x * cap,
                      gvals + (long long)blockIdx.x * cap, tsize, smem7 ? s_keys : nullptr,
                      smem7 ? s_vals : nullptr);
}

// Option vertex_tables (beyond the paper): the same move with every vertex's global table in
// a region of its own, toff[t] slots into keys/vals (louvain_buckets.vertex_slices), so that
// a launch has a block per vertex instead of the few blocks whose tables of the level's
// largest size fit the budget (louvain_move_b7: on Kronecker 2^20, about 110 blocks of 128
// threads for 20,000 hubs). One vertex's table is written by its block only, as above.
extern "C" __global__ void __launch_bounds__(LV_BLOCK)
    louvain_move_b7v(LV_MOVE_ARGS, int* gkeys, double* gvals,
                     const long long* __restrict__ toff, const long long* __restrict__ tsize,
                     int smem7) {
  __shared__ int s_keys[LV_TS7S];
  __shared__ double s_vals[LV_TS7S];
  lv_move_block<true>(LV_MOVE_PASS, gkeys, gvals, tsize, smem7 ? s_keys : nullptr,
                      smem7 ? s_vals : nullptr, toff);
}

// ---- Alg. 1 lines 8-11: commit -------------------------------------------------------------

// With prune, the neighbours of the moved vertices of a warp's 32 items are flagged by the
// whole warp, one moved vertex after another (ballot, then its row strided over the lanes: a
// hub's row is not left to one thread). Called by every lane with the same loop bounds.
__device__ __forceinline__ void lv_mark_moved(bool moved, int v,
                                              const long long* __restrict__ ptr,
                                              const int* __restrict__ ind,
                                              unsigned char* __restrict__ flag) {
  const int lane = threadIdx.x & 31;
  unsigned mask = __ballot_sync(LV_FULL, moved);
  while (mask) {
    const int from = __ffs(mask) - 1;
    mask &= mask - 1;
    const int u = __shfl_sync(LV_FULL, v, from);
    const long long end = ptr[u + 1];
    for (long long p = ptr[u] + lane; p < end; p += 32) flag[ind[p]] = 1;
  }
}

// Warp-strided loops whose bounds are the same on every lane of a warp (for lv_mark_moved's
// ballots): i0 the warp's first item of the round, its lane's item i0 + lane.
#define LV_FOR_WARPS(i0, n)                                                                  \
  for (long long i0 = ((long long)blockIdx.x * (LV_BLOCK / 32) + (threadIdx.x >> 5)) * 32;   \
       i0 < (long long)(n); i0 += (long long)gridDim.x * LV_BLOCK)

// After one step (a bucket): C[i] = newc[i] for its vertices, and the communities' a_c and
// sizes follow the moved vertices (atomicAdd of -k_i and +k_i: the a_c of line 11 without an
// O(n) pass per bucket). Only vertex i writes C[i]; no move kernel runs concurrently (the next
// one is a later launch). stats[LV_MOVED] counts the moves. prune: the moved vertices'
// neighbours flagged (lv_mark_moved).
extern "C" __global__ void louvain_commit(const int* __restrict__ order, long long start,
                                          long long count, const int* __restrict__ newc,
                                          const double* __restrict__ k, int* C, double* a,
                                          int* size, unsigned long long* stats,
                                          const long long* __restrict__ ptr,
                                          const int* __restrict__ ind,
                                          unsigned char* __restrict__ flag, int prune) {
  unsigned long long moved = 0;
  LV_FOR_WARPS(t0, count) {
    const long long t = t0 + (threadIdx.x & 31);
    int v = 0;
    bool mv = false;
    if (t < count) {
      v = order[start + t];
      const int nc = newc[v], oc = C[v];
      if (nc != oc) {
        C[v] = nc;
        atomicAdd(a + oc, -k[v]);
        atomicAdd(a + nc, k[v]);
        atomicSub(size + oc, 1);
        atomicAdd(size + nc, 1);
        mv = true;
        ++moved;
      }
    }
    if (prune) lv_mark_moved(mv, v, ptr, ind, flag);
  }
  moved = lv_block_sum_u64(moved);
  if (threadIdx.x == 0 && moved) atomicAdd(stats + LV_MOVED, moved);
}

// The relaxed variant (Sec. 5): every move of the iteration computed from its starting C, all
// committed at its end. a2 and size2 (zeroed by the host) become newc's a_c and sizes, from
// scratch; stats[LV_MOVED] counts the vertices whose community changes (prune: their
// neighbours flagged).
extern "C" __global__ void louvain_tally(long long n, const int* __restrict__ C,
                                         const int* __restrict__ newc,
                                         const double* __restrict__ k, double* a2, int* size2,
                                         unsigned long long* stats,
                                         const long long* __restrict__ ptr,
                                         const int* __restrict__ ind,
                                         unsigned char* __restrict__ flag, int prune) {
  unsigned long long moved = 0;
  LV_FOR_WARPS(v0, n) {
    const long long v = v0 + (threadIdx.x & 31);
    bool mv = false;
    if (v < n) {
      const int c = newc[v];
      atomicAdd(a2 + c, k[v]);
      atomicAdd(size2 + c, 1);
      mv = c != C[v];
      moved += mv;
    }
    if (prune) lv_mark_moved(mv, (int)v, ptr, ind, flag);
  }
  moved = lv_block_sum_u64(moved);
  if (threadIdx.x == 0 && moved) atomicAdd(stats + LV_MOVED, moved);
}

// Eq. 1's sums for the stopping test of Alg. 1 line 12: stats[LV_INSIDE] += the weight of the
// CSR entries inside a community (the loops' 2 sum loop is added by the host),
// stats[LV_SPREAD] += sum_c a_c^2. Block reductions, one atomic per block and sum.
extern "C" __global__ void louvain_quality(long long nnz, const int* __restrict__ src,
                                           const int* __restrict__ ind,
                                           const double* __restrict__ w,
                                           const int* __restrict__ C, long long n,
                                           const double* __restrict__ a,
                                           unsigned long long* stats) {
  double inside = 0.0, spread = 0.0;
  LV_FOR(p, nnz) {
    if (C[src[p]] == C[ind[p]]) inside += w[p];
  }
  LV_FOR(c, n) {
    const double x = a[c];
    spread += x * x;
  }
  inside = lv_block_sum(inside);
  spread = lv_block_sum(spread);
  if (threadIdx.x == 0) {
    atomicAdd(lv_dslot(stats, LV_INSIDE), inside);
    atomicAdd(lv_dslot(stats, LV_SPREAD), spread);
  }
}

// ---- Alg. 3: aggregation -------------------------------------------------------------------

// Lines 2-6 (comSize and comDegree zeroed by the host).
extern "C" __global__ void louvain_com_sizes(long long n, const int* __restrict__ C,
                                             const long long* __restrict__ ptr, int* comSize,
                                             long long* comDegree) {
  LV_FOR(v, n) {
    const int c = C[v];
    atomicAdd(comSize + c, 1);
    atomicAdd((unsigned long long*)(comDegree + c), (unsigned long long)(ptr[v + 1] - ptr[v]));
  }
}

// The aggregation buckets of Sec. 4.1 as sort keys: 0 empty, 1 comDegree <= 127 (a warp), 2
// up to 479 (a block, shared table), 3 above (a block, global table; by decreasing comDegree,
// as bucket 7 of the moves). stats[0..3] the counts, stats[LV_MAXCOMDEG] the largest
// comDegree.
extern "C" __global__ void louvain_com_keys(long long n, const int* __restrict__ comSize,
                                            const long long* __restrict__ comDegree,
                                            unsigned long long* key,
                                            unsigned long long* stats) {
  __shared__ unsigned long long s_cnt[4];
  __shared__ unsigned long long s_max;
  if (threadIdx.x < 4) s_cnt[threadIdx.x] = 0;
  if (threadIdx.x == 0) s_max = 0;
  __syncthreads();
  LV_FOR(c, n) {
    const long long d = comDegree[c];
    const int b = comSize[c] == 0 ? 0 : d <= LV_M1 ? 1 : d <= LV_M2 ? 2 : 3;
    const unsigned long long low =
        b == 3 ? LV_KEY_LOW - (unsigned long long)min(d, (long long)LV_KEY_LOW) : 0ull;
    key[c] = ((unsigned long long)b << LV_KEY_SHIFT) | low;
    atomicAdd(&s_cnt[b], 1ull);
    if (b) atomicMax(&s_max, (unsigned long long)d);
  }
  __syncthreads();
  if (threadIdx.x < 4 && s_cnt[threadIdx.x]) atomicAdd(stats + threadIdx.x, s_cnt[threadIdx.x]);
  if (threadIdx.x == 0) atomicMax(stats + LV_MAXCOMDEG, s_max);
}

// Lines 17-19: members[atomicAdd(&cursor[C[i]], 1)] = i (cursor starts as vertexStart, the
// exclusive prefix sum of comSize, line 16), so each community's vertices are contiguous;
// and lab[i] = newID[C[i]] - 1, the dense id of i's community (newID the inclusive prefix sum
// of comSize > 0, lines 7-12), the level's map in the hierarchy.
extern "C" __global__ void louvain_relabel(long long n, const int* __restrict__ C,
                                           const int* __restrict__ newID, int* cursor,
                                           int* lab, int* members) {
  LV_FOR(v, n) {
    const int c = C[v];
    lab[v] = newID[c] - 1;
    members[atomicAdd(cursor + c, 1)] = (int)v;
  }
}

// mergeCommunity (Alg. 3 line 23; Sec. 4 after Alg. 3) for community c by a group of G threads
// (a warp, or the block): the neighbours of all its members hashed into one table keyed by
// their new vertex id lab[j] (lv_hash_add, as computeMove), the entries inside c summed apart
// (each inside edge is seen from both ends: half their sum, plus the members' loops, is the new
// vertex's self-loop). The members are taken G at a time and their edges dealt to the G threads
// as one range (a prefix sum of the G degrees, then a binary search per edge): all threads work
// on every member's edges, as in the paper, and members of degree 1 do not leave G - 1 threads
// idle. Then the table's occupied slots are compacted into the new edge list, at edgePos[c]
// (the exclusive prefix sum of comDegree, Alg. 3 line 14: at least the row's length), by a
// prefix sum of each thread's count over its share of the slots.
template <int G, bool GLOBAL>
__device__ __forceinline__ void lv_merge_one(
    int c, int* keys, double* vals, unsigned long long P, long long* s_beg, long long* s_pre,
    const int* __restrict__ vstart, const int* __restrict__ comSize,
    const int* __restrict__ members, const long long* __restrict__ ptr,
    const int* __restrict__ ind, const double* __restrict__ w, const double* __restrict__ loop,
    const int* __restrict__ lab, const int* __restrict__ newID,
    const long long* __restrict__ edgePos, int* tind, double* tw, long long* rowlen,
    long long* tpos, double* nloop) {
  const int t = G <= 32 ? (threadIdx.x & (G - 1)) : threadIdx.x;
  const int d = newID[c] - 1;
  for (unsigned long long s = t; s < P; s += G) {
    keys[s] = LV_EMPTY;
    vals[s] = 0.0;
  }
  lv_gsync<G>();
  const long long m0 = vstart[c], msz = comSize[c];
  double inside = 0.0, loops = 0.0;
  for (long long base = 0; base < msz; base += G) {
    long long b = 0, deg = 0;
    if (base + t < msz) {
      const int x = members[m0 + base + t];
      b = ptr[x];
      deg = ptr[x + 1] - b;
      loops += loop[x];
    }
    long long total;
    const long long incl = lv_gscan<G>(deg, &total);
    s_beg[t] = b;
    s_pre[t] = incl - deg;
    lv_gsync<G>();
    for (long long e = t; e < total; e += G) {
      int lo = 0, hi = G - 1;  // the last member whose range starts at or before e
      while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (s_pre[mid] <= e) lo = mid; else hi = mid - 1;
      }
      const long long p = s_beg[lo] + (e - s_pre[lo]);
      const int nb = lab[ind[p]];
      const double wt = w[p];
      if (nb == d)
        inside += wt;
      else
        lv_hash_add<unsigned long long>(keys, vals, P, nb, wt);
    }
    lv_gsync<G>();  // s_beg/s_pre reused, table complete
  }
  long long cnt = 0;
  for (unsigned long long s = t; s < P; s += G) {
    const int key = GLOBAL ? *((volatile int*)(keys + s)) : keys[s];
    cnt += (key != LV_EMPTY);
  }
  long long tot;
  const long long incl = lv_gscan<G>(cnt, &tot);
  const long long base = edgePos[c];
  long long o = base + incl - cnt;
  for (unsigned long long s = t; s < P; s += G) {
    const int key = GLOBAL ? *((volatile int*)(keys + s)) : keys[s];
    if (key != LV_EMPTY) {
      tind[o] = key;
      tw[o] = GLOBAL ? __ldcg(vals + s) : vals[s];
      ++o;
    }
  }
  inside = lv_gsum<G>(inside);
  loops = lv_gsum<G>(loops);
  if (t == 0) {
    rowlen[d] = tot;
    tpos[d] = base;
    nloop[d] = loops + 0.5 * inside;
  }
  lv_gsync<G>();  // the table is reused by the next community
}

#define LV_MERGE_ARGS                                                                       \
  const int *__restrict__ corder, long long start, long long count,                         \
      const int *__restrict__ vstart, const int *__restrict__ comSize,                      \
      const long long *__restrict__ comDegree, const int *__restrict__ members,             \
      const long long *__restrict__ ptr, const int *__restrict__ ind,                       \
      const double *__restrict__ w, const double *__restrict__ loop,                        \
      const int *__restrict__ lab, const int *__restrict__ newID,                           \
      const long long *__restrict__ edgePos, int *tind, double *tw, long long *rowlen,      \
      long long *tpos, double *nloop
#define LV_MERGE_PASS \
  vstart, comSize, members, ptr, ind, w, loop, lab, newID, edgePos, tind, tw, rowlen, tpos, nloop

// Bucket 1 (comDegree <= 127): a warp per community, its table in shared memory (Sec. 4.1;
// per_warp = 1). Option small_merge (per_warp = LV_MERGE_QUAD, beyond the paper): each warp
// takes LV_MERGE_QUAD consecutive communities of the bucket; when all of them have comDegree
// <= LV_M0 (most communities of a sparse graph's first levels: 2-6 vertices of degree 3-6) a
// group of 8 lanes merges each, at once, in a quarter of the warp's table (4 x
// lv_prime_of_deg[LV_M0] = 188 <= LV_MTS1 slots); otherwise the warp merges them one after
// another. A warp per small community left the merge latency-bound (1.67 ms for road 2^22's
// first level on an H100, 0.84 ms with the option). The same tables, so the same graph.
// Races: each group owns its quarter of the warp's table and its s_beg/s_pre slice, so
// lv_hash_add's argument holds per table; the group's barriers (__syncwarp on its 8-lane
// mask) order the clearing, the inserts and the scan as the warp's barriers do for a warp.
#define LV_M0 31
#define LV_MERGE_QUAD 4
extern "C" __global__ void __launch_bounds__(LV_BLOCK)
    louvain_merge_warp(LV_MERGE_ARGS, int per_warp) {
  constexpr int W = LV_BLOCK / 32;
  constexpr int S = 32 / LV_MERGE_QUAD, P0 = LV_MTS1 / LV_MERGE_QUAD;
  __shared__ int s_keys[W][LV_MTS1];
  __shared__ double s_vals[W][LV_MTS1];
  __shared__ long long s_beg[W][32];
  __shared__ long long s_pre[W][32];
  const int wid = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const long long first = ((long long)blockIdx.x * W + wid) * per_warp;
  if (first >= count) return;  // the whole warp: its barriers are warp barriers
  const int mine = (int)min((long long)per_warp, count - first);  // this warp's communities
  int c = -1;
  long long deg = 0;
  if (lane < mine) {
    c = corder[start + first + lane];
    deg = comDegree[c];
  }
  if (per_warp == LV_MERGE_QUAD && __all_sync(LV_FULL, deg <= LV_M0)) {
    const int g = lane / S;  // this lane's group and community
    const int cg = __shfl_sync(LV_FULL, c, g < mine ? g : 0);
    const long long dg = __shfl_sync(LV_FULL, deg, g < mine ? g : 0);
    if (g < mine)  // whole groups: their barriers are their own lanes'
      lv_merge_one<S, false>(cg, s_keys[wid] + g * P0, s_vals[wid] + g * P0,
                             lv_prime_of_deg[dg], s_beg[wid] + g * S, s_pre[wid] + g * S,
                             LV_MERGE_PASS);
    return;
  }
  for (int i = 0; i < mine; ++i) {
    const int ci = __shfl_sync(LV_FULL, c, i);
    lv_merge_one<32, false>(ci, s_keys[wid], s_vals[wid], lv_prime_of_deg[comDegree[ci]],
                            s_beg[wid], s_pre[wid], LV_MERGE_PASS);
  }
}

// Bucket 2 (comDegree in [128, 479]): a block per community, its table in shared memory.
extern "C" __global__ void __launch_bounds__(LV_BLOCK) louvain_merge_block(LV_MERGE_ARGS) {
  __shared__ int s_keys[LV_MTS2];
  __shared__ double s_vals[LV_MTS2];
  __shared__ long long s_beg[LV_BLOCK];
  __shared__ long long s_pre[LV_BLOCK];
  for (long long idx = blockIdx.x; idx < count; idx += gridDim.x) {
    const int c = corder[start + idx];
    lv_merge_one<LV_BLOCK, false>(c, s_keys, s_vals, lv_prime_of_deg[comDegree[c]], s_beg,
                                  s_pre, LV_MERGE_PASS);
  }
}

// Bucket 3 (comDegree above 479): a block per community, its table in global memory (gridDim.x
// regions of cap slots, reused by the block's communities start + b, b + gridDim.x, ...);
// tsize[t] the table size of the t-th community (above 1.5 min(comDegree, new vertices - 1)).
extern "C" __global__ void __launch_bounds__(LV_BLOCK)
    louvain_merge_global(LV_MERGE_ARGS, int* gkeys, double* gvals, long long cap,
                         const long long* __restrict__ tsize) {
  __shared__ long long s_beg[LV_BLOCK];
  __shared__ long long s_pre[LV_BLOCK];
  int* keys = gkeys + (long long)blockIdx.x * cap;
  double* vals = gvals + (long long)blockIdx.x * cap;
  for (long long idx = blockIdx.x; idx < count; idx += gridDim.x) {
    const int c = corder[start + idx];
    lv_merge_one<LV_BLOCK, true>(c, keys, vals, (unsigned long long)tsize[idx], s_beg, s_pre,
                                 LV_MERGE_PASS);
  }
}

// aggregate="flat", step 1: the CSR entries of every community c of aggregation bucket 3
// (tab[c] = its index t among them, -1 for the others) hashed by the whole grid into t's own
// global table (keys + toff[t], tsize[t] slots, cleared by the host): a warp takes 32 x
// LV_FLAT_RUN consecutive entries, one per lane per pass, so a huge community's entries are
// spread over every SM instead of one block. lv_hash_add's race argument holds per table. The
// entries inside c (both ends in c) go to inside[t] instead: each lane sums its run's share
// per community and the warp adds its lanes' sums with one atomic when they all hold the
// same community (the common case: the rows of hubs), else one atomic per lane.
#define LV_FLAT_RUN 8
extern "C" __global__ void __launch_bounds__(LV_BLOCK)
    louvain_merge_flat(long long nnz, const int* __restrict__ src, const int* __restrict__ ind,
                       const double* __restrict__ w, const int* __restrict__ C,
                       const int* __restrict__ lab, const int* __restrict__ tab,
                       const long long* __restrict__ toff, const long long* __restrict__ tsize,
                       int* keys, double* vals, double* inside) {
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (LV_BLOCK / 32);
  for (long long base = ((long long)blockIdx.x * (LV_BLOCK / 32) + (threadIdx.x >> 5)) *
                        (32 * LV_FLAT_RUN);
       base < nnz; base += warps * 32 * LV_FLAT_RUN) {
    int cur = -1;
    double acc = 0.0;
#pragma unroll
    for (int j = 0; j < LV_FLAT_RUN; ++j) {
      const long long p = base + (long long)j * 32 + lane;
      if (p >= nnz) break;
      const int v = src[p];
      const int t = tab[C[v]];
      if (t < 0) continue;
      const int d = lab[v];
      const int nb = lab[ind[p]];
      if (nb == d) {
        if (t != cur) {
          if (cur >= 0) atomicAdd(inside + cur, acc);
          cur = t;
          acc = 0.0;
        }
        acc += w[p];
      } else {
        lv_hash_add<unsigned long long>(keys + toff[t], vals + toff[t],
                                        (unsigned long long)tsize[t], nb, w[p]);
      }
    }
    const unsigned held = __ballot_sync(LV_FULL, cur >= 0);
    if (!held) continue;
    const int c0 = __shfl_sync(LV_FULL, cur, __ffs(held) - 1);
    if (__all_sync(LV_FULL, cur < 0 || cur == c0)) {
      const double sum = lv_group_sum<32>(acc);  // lanes without a community hold 0
      if (lane == 0) atomicAdd(inside + c0, sum);
    } else if (cur >= 0) {
      atomicAdd(inside + cur, acc);
    }
  }
}

// aggregate="flat", step 2: a block per community of bucket 3 (the t-th, c = corder[start +
// t]) compacts its table into the new edge list at edgePos[c] as lv_merge_one does (a prefix
// sum of each thread's count over its share of the slots), and sets the new vertex's row
// length, position and self-loop (its members' loops plus half the inside weight).
extern "C" __global__ void __launch_bounds__(LV_BLOCK)
    louvain_merge_emit(const int* __restrict__ corder, long long start, long long count,
                       const int* __restrict__ vstart, const int* __restrict__ comSize,
                       const int* __restrict__ members, const double* __restrict__ loop,
                       const int* __restrict__ newID, const long long* __restrict__ edgePos,
                       const long long* __restrict__ toff, const long long* __restrict__ tsize,
                       const int* __restrict__ keys, const double* __restrict__ vals,
                       const double* __restrict__ inside, int* tind, double* tw,
                       long long* rowlen, long long* tpos, double* nloop) {
  for (long long idx = blockIdx.x; idx < count; idx += gridDim.x) {
    const int c = corder[start + idx];
    const int d = newID[c] - 1;
    const int* kk = keys + toff[idx];
    const double* vv = vals + toff[idx];
    const long long P = tsize[idx];
    const long long m0 = vstart[c], msz = comSize[c];
    double loops = 0.0;
    for (long long i = threadIdx.x; i < msz; i += LV_BLOCK) loops += loop[members[m0 + i]];
    long long cnt = 0;
    for (long long s = threadIdx.x; s < P; s += LV_BLOCK) cnt += (kk[s] != LV_EMPTY);
    long long tot;
    const long long incl = lv_block_scan(cnt, &tot);
    const long long base = edgePos[c];
    long long o = base + incl - cnt;
    for (long long s = threadIdx.x; s < P; s += LV_BLOCK) {
      const int key = kk[s];
      if (key != LV_EMPTY) {
        tind[o] = key;
        tw[o] = vv[s];
        ++o;
      }
    }
    loops = lv_block_sum(loops);
    if (threadIdx.x == 0) {
      rowlen[d] = tot;
      tpos[d] = base;
      nloop[d] = loops + 0.5 * inside[idx];
    }
  }
}

// The edge lists compressed (Sec. 4, after Alg. 3): row d's rowlen[d] entries move from
// tpos[d] to nptr[d] (the exclusive prefix sum of rowlen), and nsrc gets their row. A warp
// per row.
extern "C" __global__ void louvain_compact(long long knew, const long long* __restrict__ tpos,
                                           const long long* __restrict__ rowlen,
                                           const long long* __restrict__ nptr,
                                           const int* __restrict__ tind,
                                           const double* __restrict__ tw, int* nind, double* nw,
                                           int* nsrc) {
  const int lane = threadIdx.x & 31;
  const long long warps = (long long)gridDim.x * (LV_BLOCK / 32);
  for (long long d = (long long)blockIdx.x * (LV_BLOCK / 32) + (threadIdx.x >> 5); d < knew;
       d += warps) {
    const long long from = tpos[d], to = nptr[d], len = rowlen[d];
    for (long long i = lane; i < len; i += 32) {
      nind[to + i] = tind[from + i];
      nw[to + i] = tw[from + i];
      nsrc[to + i] = (int)d;
    }
  }
}
