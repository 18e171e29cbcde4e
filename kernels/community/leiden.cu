// Leiden community detection on the GPU (the community family): Traag, Waltman & van Eck,
// "From Louvain to Leiden: guaranteeing well-connected communities", Sci. Rep. 9, 5233 (2019),
// Supplementary Algorithm A.2 (functions Leiden lines 1-12, MoveNodesFast 13-25,
// RefinePartition 26-32, MergeNodesSubset 33-43, AggregateGraph 44-48), in the parallel form
// of GVE-Leiden / nu-Leiden (Sahu 2023): synchronous rounds instead of a queue. The host loop
// (levels, iterations, rounds) is matchbench/families/community/leiden_gpu.py; its host
// model, leiden_gpu_model.py, computes every step below on the host in the same arithmetic
// (the tests' oracle on integer weights).
//
// A level's graph: CSR without self-loops, ptr (int64, n + 1), ind (int32), w (float64), both
// directions of every edge; loop[v] the self-loop aggregation gave v (counted twice in k_v,
// the community module's convention). Ids int32 (n < 2^31). Gains are in units of edge weight,
// as leiden.py's: dH(v -> C) = e(v, C) - r k_v K_C, r = gamma / 2m, K_C the community's
// weight; evaluated with the _rn intrinsics (never contracted into FMAs) in the order the host
// model evaluates them, so integer weights give bit-identical decisions on both.
//
// Where the parallel version departs from the sequential pseudo-code
//   MoveNodesFast (13-25): no queue. An iteration visits every flagged vertex (line 14's queue
//     becomes a flag per vertex: GVE-Leiden's vertex pruning; lines 20-21 flag the neighbours
//     of a moved vertex) in `rounds` rounds (vertices split by a hash of their id); the
//     vertices of one round decide on the configuration at the round's start (leiden_move_*),
//     then leiden_commit applies their moves and updates K_C and the sizes by atomics. Line
//     17's empty community is not offered (a vertex moves only to a neighbour's community). A
//     vertex alone in its community joins another singleton community only if that one's id
//     is lower (Lu et al. 2015: stops two singletons swapping); with lower_only (every
//     second iteration from the driver's pickless_from, nu-Louvain's pick-less rule) no
//     vertex moves to a higher id, so two groups cannot swap communities in one round. The
//     loop of line 23 (the driver's) ends when an iteration's summed gain (the moves' e and
//     k*K parts, summed apart: exact on integer weights) is at most the level's tolerance
//     (GVE-Leiden's rule), or nothing moved, or (cycle_stop) an iteration repeats the moves
//     and gain of the one two before it.
//   RefinePartition / MergeNodesSubset (26-43): greedy (theta = 0: the best gain, strictly
//     positive, ties to the lowest sub-community id), in rounds until no vertex has a target.
//     In a round every vertex that is still a singleton sub-community (line 36), not done,
//     and well connected to its community S (line 34) chooses the best well-connected
//     sub-community (line 37) of a neighbour inside S, on the round's starting configuration
//     (leiden_refine_*); one without a target is done (line 35 visits a vertex once). Those
//     whose target lies on the round's side (lower ids in even rounds, higher in odd ones)
//     mark it "wanted"; leiden_refine_commit then moves exactly the vertices that chose a
//     target and are not wanted themselves. Connectivity: a vertex only joins a
//     sub-community that holds a neighbour of it (the neighbour u with R[u] = target at the
//     round's start), and that sub-community does not move in the round (it is wanted, and
//     only singletons ever move), so u is still in it after the round; by induction every
//     sub-community is a connected set. Deterministic: no vertex's decision depends on
//     another's in the same round, so no compare-and-swap race decides anything.
//   AggregateGraph (44-48): by hashing (leiden_agg_*): each refined community gets a table
//     of twice its members' degree sum in slots, its members' edges to other communities are hashed
//     into it, their edges inside it summed (halved: both directions are stored) into its
//     self-loop with their loops; the tables are then compacted into the new CSR. A row's
//     entries come out in table order, not sorted: no decision depends on the order (sums
//     of integer weights are exact in any order, ties go to the lowest id), so the host
//     model's sorted rows give the same answer.
//   Leiden (1-12): line 4's test is "every community a single node"; a level whose refinement
//     merges nothing aggregates the connected pieces of its communities instead (leiden.py's
//     fallback; leiden_pieces_*); and the last level's communities are split into their
//     connected pieces, so the answer's communities are connected even when the level limit
//     or the aggregation tolerance stops the loop before line 4 does.
//
// Kernels (a group of G threads per vertex: G = LD_SUB, four groups to a warp, for degrees up
// to leiden_gpu.py SUB_DEGREE (the _sub kernels); G = 32, a warp, up to LD_WARP_DEGREE; a
// block of LD_BLOCK threads above; each kernel takes its vertices as a slice of a list; the
// group size changes no decision, only which threads compute it)
//   leiden_degrees        k_v = sum of w + 2 loop (a warp per vertex).
//   leiden_tally          K_C and the community sizes of a membership, by atomics.
//   leiden_move_sub/_warp/_block   MoveNodesFast lines 15-18 for one round's vertices.
//   leiden_commit(_sub)   line 19 (and 20-21: the neighbours' flags) for one round.
//   leiden_refine_ext     E(C, S - C) of every sub-community C (lines 34 and 37).
//   leiden_refine_sub/_warp/_block MergeNodesSubset lines 34-38 for every vertex.
//   leiden_refine_commit  line 39 for the vertices that may move.
//   leiden_agg_sizes      AggregateGraph: each new vertex's degree sum (its table's size) and
//                         its members' loops.
//   leiden_agg_sub/_warp/_block  its members' edges hashed into its table, the inside ones
//                         summed into its loop.
//   leiden_agg_emit_warp/_block  each table compacted into the new vertex's CSR row.
//   leiden_pieces_link / _flatten  connected pieces of a membership: union-find over the
//                         edges inside communities (CAS hooking, path halving), each piece
//                         labelled by its smallest vertex.
//   leiden_quality        Q's two sums (inside weight, sum of K_C^2) for the answer.
//
// Hash tables: per vertex, the 2 deg slots at 2 ptr[v] of a level-wide table (keys int32,
// LD_EMPTY for none; vals the running e(v, C)), linear probing from a multiplicative hash;
// a group of LD_SUB threads uses the first 2 deg of its own 2 LD_SUB_DEGREE slots in shared
// memory instead (LdTable; reused vertex after vertex: the group's shuffles after its last
// scan order that scan before the next clearing). The aggregation's tables live in the same
// level-wide arrays: new vertex c's at 2 x (its members' degrees before c's), 2 x its own
// members' degrees long (at most that many distinct neighbours), cleared by the host before
// the launch.
// Race argument (ld_hash_add): a key changes once, LD_EMPTY -> c, by atomicCAS; a thread that
// finds c adds its weight by atomicAdd, else probes on; occupied keys never change, so all
// threads inserting c stop at the same slot and no weight is lost. At most deg distinct keys
// in 2 deg slots, so a probe always ends. Cleared, filled and scanned between barriers of the
// group that owns it (an aggregation table: cleared before the launch that fills it, scanned
// by the next one). Exactly one insertion of each key sees its own CAS succeed, which is how
// ld_hash_add reports a new key (the aggregation counts a row's entries so).

#include "common.cuh"

#define LD_BLOCK 256
#define LD_FULL 0xffffffffu
#define LD_EMPTY (-1)
#define LD_NONE 0x7fffffff
#define LD_HASH_MULT 2654435761u
// The degree above which a vertex gets a block instead of a warp (leiden_gpu.py WARP_DEGREE).
#define LD_WARP_DEGREE 128
// Threads of a group for vertices of degree up to leiden_gpu.py SUB_DEGREE (four to a warp):
// a mesh's vertices (degree about 6) left 26 of a warp's 32 lanes idle.
#define LD_SUB 8
#define LD_SUB_DEGREE 16
// The least gain of a move, relative to k_v (leiden.py MOVE_RTOL): rounding noise in K_C
// must not move a vertex between two equally good communities.
#define LD_MOVE_RTOL 1e-12

// Slots of the iteration's stats (unsigned long long; doubles as bits): moved vertices, the
// sum of the moves' e(v, C) - e(v, C_v - v) and of their k_v (K_C - K_{C_v - v}).
#define LD_MOVED 0
#define LD_DE 1
#define LD_DK 2
// Slots of a refinement round's stats: vertices merged, vertices that had a target.
#define LD_CHOSE 1
// Slots of the quality stats: inside weight (2 x, loops counted), sum of K_C^2.
#define LD_INSIDE 0
#define LD_SPREAD 1

// ---- helpers ---------------------------------------------------------------------------

// The lanes of the calling thread's group of G (G = 8: a quarter warp; 32 and more: all).
template <int G>
__device__ __forceinline__ unsigned ld_mask() {
  return G >= 32 ? LD_FULL : (((1u << G) - 1u) << ((threadIdx.x & 31) & ~(G - 1)));
}

template <int G>
__device__ __forceinline__ void ld_sync() {
  if (G <= 32) {
    __syncwarp(ld_mask<G>());
  } else {
    __syncthreads();
  }
}

// Returns whether this call put c into the table (exactly one call per distinct key does).
__device__ __forceinline__ bool ld_hash_add(int* keys, double* vals, long long cap, int c,
                                            double x) {
  long long h = (long long)(((unsigned long long)(unsigned)c * LD_HASH_MULT) % (unsigned long long)cap);
  for (;;) {
    int cur = *((volatile int*)(keys + h));
    bool mine = false;
    if (cur == LD_EMPTY) {
      cur = atomicCAS(keys + h, LD_EMPTY, c);
      if (cur == LD_EMPTY) {
        cur = c;
        mine = true;
      }
    }
    if (cur == c) {
      atomicAdd(vals + h, x);
      return mine;
    }
    if (++h == cap) h = 0;
  }
}

// A vertex's hash table (2 deg slots): at 2 ptr[v] of the level-wide table in global memory,
// or, for a group of LD_SUB threads (degree <= LD_SUB_DEGREE), the group's 2 LD_SUB_DEGREE
// slots in shared memory (the same slots, hash and probes: only where they live differs).
template <int G>
struct LdTable {
  __device__ static __forceinline__ void get(int* keys, double* vals, long long b, int*& kt,
                                             double*& vt) {
    kt = keys + 2 * b;
    vt = vals + 2 * b;
  }
};
template <>
struct LdTable<LD_SUB> {
  __device__ static __forceinline__ void get(int*, double*, long long, int*& kt, double*& vt) {
    __shared__ int s_keys[LD_BLOCK / LD_SUB][2 * LD_SUB_DEGREE];
    __shared__ double s_vals[LD_BLOCK / LD_SUB][2 * LD_SUB_DEGREE];
    kt = s_keys[threadIdx.x / LD_SUB];
    vt = s_vals[threadIdx.x / LD_SUB];
  }
};

// The better of two candidates: the larger gain, ties to the lower id (LD_NONE: none).
__device__ __forceinline__ void ld_better(double& g, int& c, double og, int oc) {
  if (oc == LD_NONE) return;
  if (c == LD_NONE || og > g || (og == g && oc < c)) {
    g = og;
    c = oc;
  }
}

// Group reductions; every thread of the group calls them and gets the result. Sums of
// integers are exact in any order (the host model's equality relies on nothing more).
template <int G>
__device__ __forceinline__ double ld_sum(double x) {
#pragma unroll
  for (int o = (G < 32 ? G : 32) / 2; o > 0; o >>= 1) x += __shfl_xor_sync(ld_mask<G>(), x, o);
  if (G > 32) {
    __shared__ double s[LD_BLOCK / 32];
    if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = x;
    __syncthreads();
    x = s[0];
#pragma unroll
    for (int i = 1; i < LD_BLOCK / 32; ++i) x += s[i];
    __syncthreads();
  }
  return x;
}

template <int G>
__device__ __forceinline__ void ld_best(double& g, int& c) {
#pragma unroll
  for (int o = (G < 32 ? G : 32) / 2; o > 0; o >>= 1) {
    const double og = __shfl_xor_sync(ld_mask<G>(), g, o);
    const int oc = __shfl_xor_sync(ld_mask<G>(), c, o);
    ld_better(g, c, og, oc);
  }
  if (G > 32) {
    __shared__ double sg[LD_BLOCK / 32];
    __shared__ int sc[LD_BLOCK / 32];
    if ((threadIdx.x & 31) == 0) {
      sg[threadIdx.x >> 5] = g;
      sc[threadIdx.x >> 5] = c;
    }
    __syncthreads();
    g = sg[0];
    c = sc[0];
#pragma unroll
    for (int i = 1; i < LD_BLOCK / 32; ++i) ld_better(g, c, sg[i], sc[i]);
    __syncthreads();
  }
}

// The block's sum of every thread's x, added to *slot by one atomic (thread 0): a launch's
// counts all go to one address, and an atomic per vertex there serializes (on a 2^22 mesh
// leiden_commit took 1.4 ms a launch so, as long as the moves themselves). Every thread of
// the block calls it, after its grid-stride loop. Sums of counts, and of integer weights,
// are exact in any order.
template <typename T>
__device__ __forceinline__ void ld_block_add(T* slot, T x) {
  __shared__ T s[LD_BLOCK / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(LD_FULL, x, o);
  if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    T total = s[0];
#pragma unroll
    for (int i = 1; i < LD_BLOCK / 32; ++i) total += s[i];
    if (total != (T)0) atomicAdd(slot, total);
  }
  __syncthreads();  // s is read before the next call writes it
}

// The group's vertex slot: which item of the list, and the thread's rank in the group.
template <int G>
__device__ __forceinline__ long long ld_item() {
  return G <= 32 ? ((long long)blockIdx.x * blockDim.x + threadIdx.x) / G : (long long)blockIdx.x;
}
template <int G>
__device__ __forceinline__ long long ld_items() {
  return G <= 32 ? ((long long)gridDim.x * blockDim.x) / G : (long long)gridDim.x;
}
template <int G>
__device__ __forceinline__ int ld_rank() {
  return G <= 32 ? (threadIdx.x & (G - 1)) : threadIdx.x;
}

// ---- per-vertex sums, tallies ------------------------------------------------------------

// k_v = sum_p w[p] + 2 loop[v], a warp per vertex (grid-stride over warps).
extern "C" __global__ void leiden_degrees(long long n, const long long* ptr, const double* w,
                                          const double* loop, double* k) {
  const int lane = threadIdx.x & 31;
  for (long long v = ld_item<32>(); v < n; v += ld_items<32>()) {
    double s = 0.0;
    for (long long p = ptr[v] + lane; p < ptr[v + 1]; p += 32) s += w[p];
    s = ld_sum<32>(s);
    if (lane == 0) k[v] = s + 2.0 * loop[v];
  }
}

// K_C and |C| of the membership C (a and size zeroed by the caller).
extern "C" __global__ void leiden_tally(long long n, const int* C, const double* k, double* a,
                                        int* size) {
  MB_GRID_STRIDE(v, n) {
    atomicAdd(a + C[v], k[v]);
    atomicAdd(size + C[v], 1);
  }
}

// ---- MoveNodesFast (lines 13-25) ---------------------------------------------------------

// Lines 15-18 for vertex v on the round's configuration (C, a, size read-only in the launch):
// the best neighbouring community c != C[v] (line 17; ties to the lowest id) and whether its
// gain beats staying (line 18). newc[v] gets the decision; de[v], dk[v] the move's parts of
// the gain (0 when it stays). Only v's thread group writes v's entries and v's table.
template <int G>
__device__ void ld_move_one(int v, const long long* ptr, const int* ind, const double* w,
                            const int* C, const double* a, const int* size, const double* k,
                            double r, int* keys, double* vals, int* newc, double* de,
                            double* dk, unsigned char* flag, int prune, int lower_only) {
  const int t = ld_rank<G>();
  const int cv = C[v];
  if (prune) {
    const unsigned char f = flag[v];
    ld_sync<G>();  // every thread has read the flag before it is cleared
    if (!f) {
      if (t == 0) {
        newc[v] = cv;
        de[v] = 0.0;
        dk[v] = 0.0;
      }
      return;
    }
    if (t == 0) flag[v] = 0;
  }
  const long long b = ptr[v], e = ptr[v + 1];
  const long long cap = 2 * (e - b);
  int* kt;
  double* vt;
  LdTable<G>::get(keys, vals, b, kt, vt);
  for (long long i = t; i < cap; i += G) {
    kt[i] = LD_EMPTY;
    vt[i] = 0.0;
  }
  ld_sync<G>();
  for (long long p = b + t; p < e; p += G) ld_hash_add(kt, vt, cap, C[ind[p]], w[p]);
  ld_sync<G>();
  const double kv = k[v];
  const double rk = __dmul_rn(r, kv);
  double own = 0.0;  // e(v, C_v - v)
  double g = 0.0;
  int c = LD_NONE;
  for (long long i = t; i < cap; i += G) {
    const int key = kt[i];
    if (key == LD_EMPTY) continue;
    if (key == cv) {
      own = vt[i];
    } else {
      ld_better(g, c, __dsub_rn(vt[i], __dmul_rn(rk, a[key])), key);
    }
  }
  own = ld_sum<G>(own);
  ld_best<G>(g, c);
  // e(v, c) of the winner: the thread holding its slot contributes it (every thread ends
  // with the same values; only thread 0 writes, so no thread leaves the group early)
  double e_c = 0.0;
  if (c != LD_NONE)
    for (long long i = t; i < cap; i += G)
      if (kt[i] == c) e_c = vt[i];
  e_c = ld_sum<G>(e_c);
  const double a_own = __dsub_rn(a[cv], kv);
  const double stay = __dsub_rn(own, __dmul_rn(rk, a_own));
  int to = cv;
  if (c != LD_NONE && __dsub_rn(g, stay) > __dmul_rn(LD_MOVE_RTOL, kv) &&
      !(size[cv] == 1 && size[c] == 1 && c > cv) && (!lower_only || c < cv)) {
    to = c;
  }
  if (t == 0) {
    newc[v] = to;
    // the move's gain, (e_c - own) - r k_v (K_c - K_own), kept as its two parts
    de[v] = to != cv ? __dsub_rn(e_c, own) : 0.0;
    dk[v] = to != cv ? __dmul_rn(kv, __dsub_rn(a[to], a_own)) : 0.0;
  }
}

#define LD_MOVE_ARGS                                                                       \
  const int *verts, long long start, long long count, const long long *ptr, const int *ind, \
      const double *w, const int *C, const double *a, const int *size, const double *k,     \
      double r, int *keys, double *vals, int *newc, double *de, double *dk,                 \
      unsigned char *flag, int prune, int lower_only
#define LD_MOVE_PASS ptr, ind, w, C, a, size, k, r, keys, vals, newc, de, dk, flag, prune, lower_only

extern "C" __global__ void leiden_move_sub(LD_MOVE_ARGS) {
  for (long long i = ld_item<LD_SUB>(); i < count; i += ld_items<LD_SUB>())
    ld_move_one<LD_SUB>(verts[start + i], LD_MOVE_PASS);
}

extern "C" __global__ void leiden_move_warp(LD_MOVE_ARGS) {
  for (long long i = ld_item<32>(); i < count; i += ld_items<32>())
    ld_move_one<32>(verts[start + i], LD_MOVE_PASS);
}

extern "C" __global__ void leiden_move_block(LD_MOVE_ARGS) {
  for (long long i = ld_item<LD_BLOCK>(); i < count; i += ld_items<LD_BLOCK>())
    ld_move_one<LD_BLOCK>(verts[start + i], LD_MOVE_PASS);
}

// Line 19 for a round's vertices (a group of G threads each: a warp, or LD_SUB for the
// vertices leiden_move_sub decided), and lines 20-21: a moved vertex flags its neighbours
// (writes of 1 only; the flags are read by the next move launch). K_C and sizes by atomics;
// the stats summed per block (ld_block_add).
template <int G>
__device__ __forceinline__ void ld_commit(const int* verts, long long start, long long count,
                                          const long long* ptr, const int* ind,
                                          const int* newc, const double* k, const double* de,
                                          const double* dk, int* C, double* a, int* size,
                                          unsigned char* flag, unsigned long long* stats) {
  const int t = ld_rank<G>();
  unsigned long long moved = 0;
  double sum_de = 0.0, sum_dk = 0.0;
  for (long long i = ld_item<G>(); i < count; i += ld_items<G>()) {
    const int v = verts[start + i];
    const int to = newc[v];
    const int cv = C[v];
    if (to == cv) continue;
    ld_sync<G>();  // every thread of the group has read C[v] before thread 0 writes it
    if (t == 0) {
      C[v] = to;
      atomicAdd(a + to, k[v]);
      atomicAdd(a + cv, -k[v]);
      atomicAdd(size + to, 1);
      atomicSub(size + cv, 1);
      moved += 1;
      sum_de += de[v];
      sum_dk += dk[v];
    }
    for (long long p = ptr[v] + t; p < ptr[v + 1]; p += G) flag[ind[p]] = 1;
  }
  ld_block_add(stats + LD_MOVED, moved);
  ld_block_add((double*)(stats + LD_DE), sum_de);
  ld_block_add((double*)(stats + LD_DK), sum_dk);
}

#define LD_COMMIT_ARGS                                                                      \
  const int *verts, long long start, long long count, const long long *ptr, const int *ind, \
      const int *newc, const double *k, const double *de, const double *dk, int *C, double *a, \
      int *size, unsigned char *flag, unsigned long long *stats
#define LD_COMMIT_PASS verts, start, count, ptr, ind, newc, k, de, dk, C, a, size, flag, stats

extern "C" __global__ void leiden_commit(LD_COMMIT_ARGS) { ld_commit<32>(LD_COMMIT_PASS); }
extern "C" __global__ void leiden_commit_sub(LD_COMMIT_ARGS) { ld_commit<LD_SUB>(LD_COMMIT_PASS); }

// ---- RefinePartition / MergeNodesSubset (lines 26-43) ------------------------------------

// ext[R[v]] += the weight of v's edges to vertices of its community C outside its
// sub-community: E(R, S - R) for every sub-community R (ext zeroed by the caller). A warp
// takes four consecutive vertices: LD_SUB lanes each where all four have degree at most
// LD_SUB_DEGREE (a mesh's), else the whole warp for each in turn.
__device__ __forceinline__ double ld_ext_part(long long v, int lane, int lanes,
                                              const long long* ptr, const int* ind,
                                              const double* w, const int* C, const int* R) {
  const int s = C[v], rv = R[v];
  double x = 0.0;
  for (long long p = ptr[v] + lane; p < ptr[v + 1]; p += lanes) {
    const int u = ind[p];
    if (C[u] == s && R[u] != rv) x += w[p];
  }
  return x;
}

extern "C" __global__ void leiden_refine_ext(long long n, const long long* ptr, const int* ind,
                                             const double* w, const int* C, const int* R,
                                             double* ext) {
  const int lane = threadIdx.x & 31;
  const int per_warp = 32 / LD_SUB;  // vertices a warp takes at once
  const int quarter = lane / LD_SUB, t = lane & (LD_SUB - 1);
  for (long long base = ld_item<32>() * per_warp; base < n; base += ld_items<32>() * per_warp) {
    const long long v = base + quarter;
    const bool small = __all_sync(LD_FULL, v >= n || ptr[v + 1] - ptr[v] <= LD_SUB_DEGREE);
    if (small) {
      if (v < n) {
        const double x = ld_sum<LD_SUB>(ld_ext_part(v, t, LD_SUB, ptr, ind, w, C, R));
        if (t == 0 && x != 0.0) atomicAdd(ext + R[v], x);
      }
    } else {
      for (long long u = base; u < base + per_warp && u < n; ++u) {
        const double x = ld_sum<32>(ld_ext_part(u, lane, 32, ptr, ind, w, C, R));
        if (lane == 0 && x != 0.0) atomicAdd(ext + R[u], x);
      }
    }
  }
}

// Lines 34-38 for vertex v on the round's configuration (R, KR, sizeR, ext read-only here):
// only a singleton sub-community (line 36: R[v] == v, alone) not yet done, well connected to
// its community S (line 34: E(v, S - v) >= r k_v (K_S - k_v)), looks; it hashes the
// sub-communities of its neighbours inside S and takes the best well-connected one (line 37:
// E(C, S - C) >= r K_C (K_S - K_C)) of strictly positive gain (line 38 with theta = 0; ties
// to the lowest id). A vertex without such a target is done (the sequential loop visits each
// vertex once, line 35). A vertex whose target is on this round's side (parity 0: a lower
// id, 1: a higher id) sets target[v] and wanted[target] = 1 (writes of 1 only; read by
// leiden_refine_commit); the others wait for the next round. Only one direction per round
// keeps the "wants" acyclic, so the highest (lowest) chooser of a round is wanted by nobody
// and moves: every two rounds merge something while any vertex has a target.
template <int G>
__device__ unsigned long long ld_refine_one(int v, const long long* ptr, const int* ind, const double* w,
                              const int* C, const double* KS, const int* R, const double* KR,
                              const int* sizeR, const double* ext, const double* k, double r,
                              int parity, int* keys, double* vals, int* target,
                              unsigned char* wanted, unsigned char* done) {
  const int t = ld_rank<G>();
  if (done[v] || R[v] != v || sizeR[v] != 1) return 0;  // line 36
  const int s = C[v];
  const double kv = k[v];
  const double ks = KS[s];
  const double rk = __dmul_rn(r, kv);
  if (ext[v] < __dmul_rn(rk, __dsub_rn(ks, kv))) {  // line 34
    ld_sync<G>();  // every thread has read done[v]
    if (t == 0) done[v] = 1;
    return 0;
  }
  const long long b = ptr[v], e = ptr[v + 1];
  const long long cap = 2 * (e - b);
  int* kt;
  double* vt;
  LdTable<G>::get(keys, vals, b, kt, vt);
  for (long long i = t; i < cap; i += G) {
    kt[i] = LD_EMPTY;
    vt[i] = 0.0;
  }
  ld_sync<G>();
  for (long long p = b + t; p < e; p += G) {
    const int u = ind[p];
    if (C[u] == s) ld_hash_add(kt, vt, cap, R[u], w[p]);
  }
  ld_sync<G>();
  double g = 0.0;
  int c = LD_NONE;
  for (long long i = t; i < cap; i += G) {
    const int key = kt[i];
    if (key == LD_EMPTY) continue;
    const double kc = KR[key];
    if (ext[key] < __dmul_rn(__dmul_rn(r, kc), __dsub_rn(ks, kc))) continue;  // line 37
    const double gain = __dsub_rn(vt[i], __dmul_rn(rk, kc));
    if (gain > 0.0) ld_better(g, c, gain, key);  // line 38, greedy
  }
  ld_best<G>(g, c);
  if (t == 0) {
    if (c == LD_NONE) {
      done[v] = 1;
    } else {
      if ((parity == 0) == (c < v)) {
        target[v] = c;
        wanted[c] = 1;
      }
      return 1;  // v had a target (the round's LD_CHOSE count, thread 0's)
    }
  }
  return 0;
}

#define LD_REFINE_ARGS                                                                     \
  const int *verts, long long start, long long count, const long long *ptr, const int *ind, \
      const double *w, const int *C, const double *KS, const int *R, const double *KR,      \
      const int *sizeR, const double *ext, const double *k, double r, int parity,           \
      int *keys, double *vals, int *target, unsigned char *wanted, unsigned char *done,     \
      unsigned long long *stats
#define LD_REFINE_PASS \
  ptr, ind, w, C, KS, R, KR, sizeR, ext, k, r, parity, keys, vals, target, wanted, done

extern "C" __global__ void leiden_refine_sub(LD_REFINE_ARGS) {
  unsigned long long chose = 0;
  for (long long i = ld_item<LD_SUB>(); i < count; i += ld_items<LD_SUB>())
    chose += ld_refine_one<LD_SUB>(verts[start + i], LD_REFINE_PASS);
  ld_block_add(stats + LD_CHOSE, chose);
}

extern "C" __global__ void leiden_refine_warp(LD_REFINE_ARGS) {
  unsigned long long chose = 0;
  for (long long i = ld_item<32>(); i < count; i += ld_items<32>())
    chose += ld_refine_one<32>(verts[start + i], LD_REFINE_PASS);
  ld_block_add(stats + LD_CHOSE, chose);
}

extern "C" __global__ void leiden_refine_block(LD_REFINE_ARGS) {
  unsigned long long chose = 0;
  for (long long i = ld_item<LD_BLOCK>(); i < count; i += ld_items<LD_BLOCK>())
    chose += ld_refine_one<LD_BLOCK>(verts[start + i], LD_REFINE_PASS);
  ld_block_add(stats + LD_CHOSE, chose);
}

// Line 39 for the vertices that chose a target and are not wanted themselves (a thread each):
// a target is wanted, so it does not move in this round, and only singletons move, so no
// K_R or size entry is both added to and cleared here. Each thread clears its own vertex's
// target and wanted entries for the next round (every wanted vertex has an edge, so it is in
// the list).
extern "C" __global__ void leiden_refine_commit(const int* verts, long long count,
                                                const double* k, int* target,
                                                unsigned char* wanted, int* R, double* KR,
                                                int* sizeR, unsigned long long* stats) {
  unsigned long long moved = 0;
  MB_GRID_STRIDE(i, count) {
    const int v = verts[i];
    const int to = target[v];
    const unsigned char busy = wanted[v];
    target[v] = -1;
    wanted[v] = 0;
    if (to >= 0 && !busy) {
      R[v] = to;
      atomicAdd(KR + to, k[v]);
      atomicAdd(sizeR + to, 1);
      KR[v] = 0.0;
      sizeR[v] = 0;
      moved += 1;
    }
  }
  ld_block_add(stats + LD_MOVED, moved);
}

// ---- AggregateGraph (lines 44-48) --------------------------------------------------------

// Tables above this many slots are compacted by a block (leiden_agg_emit_block), the others
// by a warp (leiden_gpu.py AGG_WARP_SLOTS).
#define LD_AGG_WARP_SLOTS 4096

// AggregateGraph's sizes: cdeg[lab[v]] += deg(v) (the new vertex's table gets 2 cdeg slots: at
// most cdeg distinct neighbours, so half full at most), and the members' loops:
// nloop[lab[v]] += loop[v] (cdeg and nloop zeroed by the caller).
extern "C" __global__ void leiden_agg_sizes(long long n, const long long* ptr, const int* lab,
                                            const double* loop, unsigned long long* cdeg,
                                            double* nloop) {
  MB_GRID_STRIDE(v, n) {
    const int c = lab[v];
    const long long d = ptr[v + 1] - ptr[v];
    if (d) atomicAdd(cdeg + c, (unsigned long long)d);
    if (loop[v] != 0.0) atomicAdd(nloop + c, loop[v]);
  }
}

// AggregateGraph's edges for vertex v (a group of G threads): each edge to another new vertex b is
// hashed into lab[v]'s table (toff[a] .. toff[a + 1]) under b, and counted in rowlen[a] the
// first time b is seen; the edges inside lab[v] are summed, halved (the other direction is
// another entry) and added to its loop once per vertex.
template <int G>
__device__ __forceinline__ void ld_agg_one(int v, const long long* ptr, const int* ind,
                                           const double* w, const int* lab,
                                           const long long* toff, int* keys, double* vals,
                                           int* rowlen, double* nloop) {
  const int t = ld_rank<G>();
  const int a = lab[v];
  const long long base = toff[a], cap = toff[a + 1] - base;
  double inside = 0.0;
  for (long long p = ptr[v] + t; p < ptr[v + 1]; p += G) {
    const int b = lab[ind[p]];
    if (b == a) {
      inside += w[p];
    } else if (ld_hash_add(keys + base, vals + base, cap, b, w[p])) {
      atomicAdd(rowlen + a, 1);
    }
  }
  inside = ld_sum<G>(inside);
  if (t == 0 && inside != 0.0) atomicAdd(nloop + a, 0.5 * inside);
}

#define LD_AGG_ARGS                                                                          \
  const int *verts, long long start, long long count, const long long *ptr, const int *ind, \
      const double *w, const int *lab, const long long *toff, int *keys, double *vals,     \
      int *rowlen, double *nloop
#define LD_AGG_PASS ptr, ind, w, lab, toff, keys, vals, rowlen, nloop

extern "C" __global__ void leiden_agg_sub(LD_AGG_ARGS) {
  for (long long i = ld_item<LD_SUB>(); i < count; i += ld_items<LD_SUB>())
    ld_agg_one<LD_SUB>(verts[start + i], LD_AGG_PASS);
}

extern "C" __global__ void leiden_agg_warp(LD_AGG_ARGS) {
  for (long long i = ld_item<32>(); i < count; i += ld_items<32>())
    ld_agg_one<32>(verts[start + i], LD_AGG_PASS);
}

extern "C" __global__ void leiden_agg_block(LD_AGG_ARGS) {
  for (long long i = ld_item<LD_BLOCK>(); i < count; i += ld_items<LD_BLOCK>())
    ld_agg_one<LD_BLOCK>(verts[start + i], LD_AGG_PASS);
}

// AggregateGraph's new graph: new vertex c's row (nptr[c] .. nptr[c + 1], rowlen[c] entries) is
// its table's keys and sums in slot order; a warp per table of at most LD_AGG_WARP_SLOTS
// slots. The larger tables' vertices are listed in big (*nbig of them, zeroed by the caller)
// for leiden_agg_emit_block.
extern "C" __global__ void leiden_agg_emit_warp(long long k, const long long* toff,
                                                const int* keys, const double* vals,
                                                const long long* nptr, int* nind, double* nw,
                                                int* big, int* nbig) {
  const int lane = threadIdx.x & 31;
  const unsigned below = (1u << lane) - 1u;
  for (long long c = ld_item<32>(); c < k; c += ld_items<32>()) {
    const long long b = toff[c], e = toff[c + 1];
    if (e - b > LD_AGG_WARP_SLOTS) {
      if (lane == 0) big[atomicAdd(nbig, 1)] = (int)c;
      continue;
    }
    long long out = nptr[c];
    for (long long s = b; s < e; s += 32) {
      const long long i = s + lane;
      const int key = i < e ? keys[i] : LD_EMPTY;
      const unsigned mask = __ballot_sync(LD_FULL, key != LD_EMPTY);
      if (key != LD_EMPTY) {
        const long long at = out + __popc(mask & below);
        nind[at] = key;
        nw[at] = vals[i];
      }
      out += __popc(mask);
    }
  }
}

// The same for the tables leiden_agg_emit_warp listed (launched after it), a block each; a
// row's entries in the order its warps reserve their places (any order will do).
extern "C" __global__ void leiden_agg_emit_block(const long long* toff, const int* keys,
                                                 const double* vals, const long long* nptr,
                                                 int* nind, double* nw, const int* big,
                                                 const int* nbig) {
  __shared__ unsigned long long cursor;
  const int lane = threadIdx.x & 31;
  const unsigned below = (1u << lane) - 1u;
  const int m = *nbig;
  for (int j = blockIdx.x; j < m; j += gridDim.x) {
    const int c = big[j];
    const long long b = toff[c], e = toff[c + 1];
    if (threadIdx.x == 0) cursor = 0;
    __syncthreads();
    for (long long s = b; s < e; s += LD_BLOCK) {
      const long long i = s + threadIdx.x;
      const int key = i < e ? keys[i] : LD_EMPTY;
      const unsigned mask = __ballot_sync(LD_FULL, key != LD_EMPTY);
      unsigned long long first = 0;
      if (lane == 0 && mask) first = atomicAdd(&cursor, (unsigned long long)__popc(mask));
      first = __shfl_sync(LD_FULL, first, 0);
      if (key != LD_EMPTY) {
        const long long at = nptr[c] + (long long)first + __popc(mask & below);
        nind[at] = key;
        nw[at] = vals[i];
      }
    }
    __syncthreads();  // cursor is read before the next table resets it
  }
}

// ---- connected pieces of a membership ----------------------------------------------------

// Union-find over the edges inside communities, in two launches and no host sync (the
// hooking sweeps it replaces took one sync each and, on a road graph's long communities,
// over a hundred sweeps). lab[v] is v's parent; a root is its own parent. Invariant: a
// non-root's parent is smaller than it (a root is hooked only under a smaller root, and path
// halving replaces a parent by a grandparent), so every tree's root is its smallest vertex,
// the label the host model's _hm_pieces gives the piece.
// Races: a root's entry changes only by atomicCAS (root -> smaller root), so two hookings of
// one root cannot both succeed; a non-root's entry is overwritten only with an ancestor of
// it (path halving), so concurrent writes leave some ancestor, not necessarily the newest
// (which is why the final labels are written by a read-only walk, leiden_pieces_flatten,
// after every hooking has ended). Reads bypass L1 (__ldcg): a stale read still names an
// ancestor, and a stale "root" makes the CAS fail and return the current parent, so every
// retry starts from a fresher value and the loops end.
__device__ __forceinline__ int ld_root(int* lab, int v) {
  int p = __ldcg(lab + v);
  while (p != v) {
    const int g = __ldcg(lab + p);
    if (g == p) return p;
    lab[v] = g;  // path halving: v's parent becomes its grandparent
    v = g;
    p = __ldcg(lab + g);
  }
  return v;
}

// Pieces, step 1 (a warp per vertex, lanes over its edges): every edge (v, u) with u < v in
// one community joins the two trees, the larger root hooked under the smaller.
extern "C" __global__ void leiden_pieces_link(long long n, const long long* ptr, const int* ind,
                                              const int* C, int* lab) {
  const int lane = threadIdx.x & 31;
  for (long long v = ld_item<32>(); v < n; v += ld_items<32>()) {
    const int s = C[v];
    for (long long p = ptr[v] + lane; p < ptr[v + 1]; p += 32) {
      const int u = ind[p];
      if (u >= v || C[u] != s) continue;
      int a = ld_root(lab, (int)v), b = ld_root(lab, u);
      while (a != b) {
        if (a < b) {
          const int t = a;
          a = b;
          b = t;
        }
        const int old = atomicCAS(lab + a, a, b);  // hook root a under b
        if (old == a) break;
        a = ld_root(lab, old);  // a was hooked meanwhile: retry from the trees' roots
        b = ld_root(lab, b);
      }
    }
  }
}

// Pieces, step 2: every vertex labelled by its tree's root. No hooking is left to race
// with, but path halving is: a thread halving through x could store x's old grandparent
// over the root another thread has just written to x. So this walk only reads, and each
// entry is written once, by its own vertex's thread, with its root; a concurrent reader of
// that entry sees its old parent or the root, both ancestors.
extern "C" __global__ void leiden_pieces_flatten(long long n, int* lab) {
  MB_GRID_STRIDE(v, n) {
    int r = __ldcg(lab + v);
    for (int up = __ldcg(lab + r); up != r; up = __ldcg(lab + r)) r = up;
    lab[v] = r;
  }
}

// ---- the answer's modularity --------------------------------------------------------------

// Q's sums on the level-0 graph: 2 x the weight inside communities (warp per vertex, one
// atomic per block) and, over communities, sum K_C^2 (a: K_C). Q = inside / 2m - spread / 4m^2.
extern "C" __global__ void leiden_quality(long long n, const long long* ptr, const int* ind,
                                          const double* w, const double* loop, const int* C,
                                          const double* a, unsigned long long* stats) {
  __shared__ double s_in[LD_BLOCK / 32];
  __shared__ double s_sp[LD_BLOCK / 32];
  const int lane = threadIdx.x & 31;
  double inside = 0.0;
  for (long long v = ld_item<32>(); v < n; v += ld_items<32>()) {
    const int s = C[v];
    double x = lane == 0 ? 2.0 * loop[v] : 0.0;
    for (long long p = ptr[v] + lane; p < ptr[v + 1]; p += 32)
      if (C[ind[p]] == s) x += w[p];
    inside += x;
  }
  double spread = 0.0;
  MB_GRID_STRIDE(c, n) spread += a[c] * a[c];
  inside = ld_sum<32>(inside);
  spread = ld_sum<32>(spread);
  if (lane == 0) {
    s_in[threadIdx.x >> 5] = inside;
    s_sp[threadIdx.x >> 5] = spread;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double a1 = 0.0, a2 = 0.0;
    for (int i = 0; i < LD_BLOCK / 32; ++i) {
      a1 += s_in[i];
      a2 += s_sp[i];
    }
    atomicAdd((double*)(stats + LD_INSIDE), a1);
    atomicAdd((double*)(stats + LD_SPREAD), a2);
  }
}
