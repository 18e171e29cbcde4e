// Hungarian algorithms for the linear assignment problem: CU-CLASS and CU-TREE.
//
// Date & Nagi, "GPU-accelerated Hungarian algorithms for the Linear Assignment Problem",
// Parallel Computing 2016. "Alg. N" below is that paper's Algorithm N; "Sec." its sections.
// The host driver is matchbench/families/lap/hungarian_driver.py; it keeps the control flow of
// Sec. 3.2 (each step one or more kernels, the host coordinating between them), reading
// device flags only where it must decide what runs next. CU-TREE also has a persistent
// form (hungarian_tree_persistent, at the end): the same steps in one launch, separated
// by grid-wide barriers instead of kernel boundaries and host reads. The steps both forms
// share are the __device__ functions below, so the two cannot drift apart.
//
// Conventions. C is a row-major block of the cost matrix with leading dimension `ld`
// (its number of columns). Assignment arrays Ar/Ac, predecessor Pr/Pc and successor
// Sr/Sc arrays hold indices, -1 for none (Sec. 2.1). Cover arrays Vr/Vc and the flag
// arrays (active, visited, rev, aug) are bytes. `ctrl` is an int array of device
// counters and flags (HUNG_* below). Duals are exact int64 for integer costs and float64
// for float costs; a slack counts as zero when it is <= eps (eps = 0 for integers).
//
// Dual update form. Alg. 8 and Alg. 9 add theta/2 to the duals of uncovered rows and
// columns and subtract theta/2 from covered ones. We add theta to uncovered rows and
// subtract theta from covered columns: the paper's update followed by the shift
// u -= theta/2, v += theta/2 of all duals, which leaves every slack c - u - v and the dual
// objective unchanged and keeps integer duals integral.
#include "common.cuh"

#ifndef HUNG_DTYPE
#define HUNG_DTYPE 0
#endif
#if HUNG_DTYPE == 0
typedef int cost_t;
typedef long long dual_t;
#define HUNG_INF (1LL << 62)
#elif HUNG_DTYPE == 1
typedef long long cost_t;
typedef long long dual_t;
#define HUNG_INF (1LL << 62)
#elif HUNG_DTYPE == 2
typedef float cost_t;
typedef double dual_t;
#define HUNG_INF 1e300
#elif HUNG_DTYPE == 3
typedef double cost_t;
typedef double dual_t;
#define HUNG_INF 1e300
#else
#error "HUNG_DTYPE must be 0 (int32), 1 (int64), 2 (float32) or 3 (float64)"
#endif

// ctrl layout; kept in step with CTRL_* in matchbench/families/lap/hungarian_driver.py.
#define HUNG_MATCH 0  // assigned rows counted by the optimality check (Alg. 2)
#define HUNG_NF 1     // size of the frontier F_in
#define HUNG_REV 2    // 1 once some column is marked "reverse" in the forward pass
#define HUNG_NCOMP 3  // size of the last compacted array (F_rev, F_aug)
#define HUNG_ERR 4    // 1: a dual update found no uncovered column (no finite theta)
#define HUNG_DONE 5   // blocks of a fused expansion that have finished (see "Fused contraction")
// Persistent kernel only:
#define HUNG_BAR 6     // grid barrier word (see mb_grid_sync in common.cuh)
#define HUNG_ABORT 7   // set by a block whose barrier wait timed out; the others then leave
#define HUNG_CNT 8     // HUNG_CNT + 0..2: sizes of the rotating frontiers
#define HUNG_LEVELS 11 // counters written at the end: BFS levels, phases, dual updates,
#define HUNG_PHASES 12 //   the assigned rows after the initial reduction, grid barriers
#define HUNG_DUALS 13
#define HUNG_INIT 14
#define HUNG_SYNCS 15
#define HUNG_NCTRL 16

// HUNG_ERR codes (0: none).
#define HUNG_E_THETA 1    // a dual update found no finite theta
#define HUNG_E_PHASES 2   // more phases than n + 1 (no augmentation progress)
#define HUNG_E_DUALS 3    // more dual updates than (n + 1) per phase
#define HUNG_E_LEVELS 4   // a phase ran past 2n + 2 BFS levels (at most 2n + 1 are possible)
#define HUNG_E_WALK 5     // a reverse or augmentation walk ran past n + 1 steps or off the tree
#define HUNG_E_BARRIER 6  // a grid barrier wait timed out (the grid was not co-resident)
#define HUNG_E_FRONTIER 7 // a frontier outgrew its n entries

#define HUNG_SCAN_THREADS 1024  // block size of the single-block kernels

// ---------------------------------------------------------------------------------------
// Block-wide helpers (blockDim.x a multiple of 32; every thread of the block must call).

__device__ __forceinline__ dual_t hungarian_min2(dual_t a, dual_t b) { return b < a ? b : a; }

__device__ dual_t hungarian_block_min(dual_t x) {
  __shared__ dual_t warp_min[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) x = hungarian_min2(x, __shfl_down_sync(0xffffffffu, x, o));
  if (lane == 0) warp_min[warp] = x;
  __syncthreads();
  if (warp == 0) {
    x = lane < nwarps ? warp_min[lane] : (dual_t)HUNG_INF;
    for (int o = 16; o > 0; o >>= 1) x = hungarian_min2(x, __shfl_down_sync(0xffffffffu, x, o));
  }
  return x;  // valid in thread 0
}

__device__ int hungarian_block_sum(int x) {
  __shared__ int warp_sum[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
  if (lane == 0) warp_sum[warp] = x;
  __syncthreads();
  if (warp == 0) {
    x = lane < nwarps ? warp_sum[lane] : 0;
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
  }
  return x;  // valid in thread 0
}

// Exclusive prefix sum over the block; *total gets the sum of all x. `tid` is the thread's
// linear index in the block and `nthreads` the block size (a multiple of 32).
__device__ int hungarian_block_exclusive_scan(int x, int tid, int nthreads, int* total) {
  __shared__ int warp_incl[32];
  const int lane = tid & 31, warp = tid >> 5, nwarps = nthreads >> 5;
  int incl = x;
  for (int o = 1; o < 32; o <<= 1) {
    int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) warp_incl[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int w = lane < nwarps ? warp_incl[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      int y = __shfl_up_sync(0xffffffffu, w, o);
      if (lane >= o) w += y;
    }
    if (lane < nwarps) warp_incl[lane] = w;
  }
  __syncthreads();
  *total = warp_incl[nwarps - 1];
  return (warp > 0 ? warp_incl[warp - 1] : 0) + incl - x;
}

// ---------------------------------------------------------------------------------------
// Initial reduction (Sec. 4.1)

// Date & Nagi 2016, Alg. 1 line 2 (row reduction kernel): out[r] = min_j C[r, j].
// One block per row. A multi-GPU column split takes the min of the partial results.
extern "C" __global__ void hungarian_row_min(const cost_t* __restrict__ C, int rows, int ncols,
                                        dual_t* __restrict__ out) {
  const int r = blockIdx.x;
  const cost_t* Cr = C + (long long)r * ncols;
  dual_t m = (dual_t)HUNG_INF;
  for (int j = threadIdx.x; j < ncols; j += blockDim.x) m = hungarian_min2(m, (dual_t)Cr[j]);
  m = hungarian_block_min(m);
  if (threadIdx.x == 0 && r < rows) out[r] = m;
}

// Date & Nagi 2016, Alg. 1 line 6 (column reduction kernel): part[y, j] = min over the
// rows of chunk y of C[i, j] - u[i]; the host takes the min over y. Block (32, 8): 32
// columns, 8 row lanes, so that each warp reads 32 consecutive costs of one row.
extern "C" __global__ void hungarian_col_min(const cost_t* __restrict__ C, int rows, int ncols,
                                        const dual_t* __restrict__ u, int chunk,
                                        dual_t* __restrict__ part) {
  __shared__ dual_t sm[8][32];
  const int j = blockIdx.x * 32 + threadIdx.x;
  const int r0 = blockIdx.y * chunk, r1 = min(rows, r0 + chunk);
  dual_t m = (dual_t)HUNG_INF;
  if (j < ncols)
    for (int r = r0 + threadIdx.y; r < r1; r += 8)
      m = hungarian_min2(m, (dual_t)C[(long long)r * ncols + j] - u[r]);
  sm[threadIdx.y][threadIdx.x] = m;
  __syncthreads();
  if (threadIdx.y == 0 && j < ncols) {
    for (int t = 1; t < 8; ++t) m = hungarian_min2(m, sm[t][threadIdx.x]);
    part[(long long)blockIdx.y * ncols + j] = m;
  }
}

// ---------------------------------------------------------------------------------------
// Optimality check and resets (Sec. 4.2)

// Date & Nagi 2016, Alg. 2 (optimality check) and the row resets of Sec. 4.2 for row i: an
// assigned row is covered (V_r = 1); P_r, S_r and the "augment" mark are cleared, and S_c
// of column i too (n rows = n columns). Returns whether row i is assigned. A_r is read
// through L2: in the persistent kernel other blocks wrote it in the same launch.
__device__ __forceinline__ bool hungarian_reset_row(int i, const int* Ar, char* Vr, int* Pr,
                                                    int* Sr, int* Sc, char* aug) {
  const bool matched = __ldcg(&Ar[i]) != -1;
  Vr[i] = (char)matched;
  Pr[i] = -1;
  Sr[i] = -1;
  Sc[i] = -1;
  aug[i] = 0;
  return matched;
}

// Sec. 4.2, column part, for one column: uncovered, no predecessor, no "reverse" mark, and
// (alternating tree variant) no slack yet. The pointers may be global or shared memory.
__device__ __forceinline__ void hungarian_reset_col(char* vc, int* pc, char* rev,
                                                    dual_t* slack) {
  *vc = 0;
  *pc = -1;
  *rev = 0;
  *slack = (dual_t)HUNG_INF;
}

// Date & Nagi 2016, Alg. 2 (optimality check kernel) with the resets of Sec. 4.2: an
// assigned row is covered and counted; the row flags are cleared. In the alternating tree
// variant the unassigned rows become "active": the first frontier (Sec. 4.3.1).
extern "C" __global__ void hungarian_reset_rows(int n, const int* __restrict__ Ar, char* Vr,
                                           int* Pr, int* Sr, int* Sc, char* active,
                                           char* visited, char* aug, int tree, int* ctrl) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int matched = 0;
  if (i < n) {
    matched = hungarian_reset_row(i, Ar, Vr, Pr, Sr, Sc, aug);
    active[i] = (char)(tree && !matched);
    visited[i] = 0;
  }
  // One atomic per block instead of one per assigned row (Alg. 2's "atomic add").
  const int count = __syncthreads_count(matched);
  if (threadIdx.x == 0 && count) atomicAdd(&ctrl[HUNG_MATCH], count);
}

// Sec. 4.2, column part: uncover every column, clear P_c and the "reverse" marks, and
// (alternating tree variant) reset the slack array to infinity.
extern "C" __global__ void hungarian_reset_cols(int ncols, char* Vc, int* Pc, char* rev,
                                           dual_t* slack) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= ncols) return;
  hungarian_reset_col(&Vc[j], &Pc[j], &rev[j], &slack[j]);
}

// ---------------------------------------------------------------------------------------
// Stream compaction (Sec. 3.3): the indices of the flagged entries, in increasing order.

// Date & Nagi 2016, Sec. 3.3 (array compression by a prefix sum over a predicate array):
// out[0..count) = { i : flag[i] != 0 } in increasing order; clears the flags when `clear`.
// Run by one whole block (each thread owns a contiguous chunk, so the result is
// deterministic and stable). Flags are read through L2 (__ldcg): in a fused contraction
// they were written by other blocks of the same launch.
__device__ void hungarian_compact_block(char* flag, int n, int clear, int* __restrict__ out,
                                        int* __restrict__ count, int tid, int nthreads) {
  const int chunk = (n + nthreads - 1) / nthreads;
  const int lo = min(n, tid * chunk), hi = min(n, lo + chunk);
  int c = 0;
  for (int i = lo; i < hi; ++i) c += __ldcg(&flag[i]) != 0;
  int total;
  int pos = hungarian_block_exclusive_scan(c, tid, nthreads, &total);
  for (int i = lo; i < hi; ++i) {
    if (__ldcg(&flag[i])) {
      out[pos++] = i;
      if (clear) flag[i] = 0;
    }
  }
  if (tid == 0) *count = total;
}

// The compaction above as a kernel of one block of HUNG_SCAN_THREADS threads. Builds the
// frontiers F_in (Sec. 4.3.1, contraction), F_rev (Sec. 4.3.2) and F_aug (Sec. 4.3.3).
extern "C" __global__ void hungarian_compact(char* flag, int n, int clear,
                                             int* __restrict__ out, int* __restrict__ count) {
  hungarian_compact_block(flag, n, clear, out, count, threadIdx.x, blockDim.x);
}

// Fused contraction. An expansion launched with `fuse` set also contracts: every block
// fences its writes and counts itself done in ctrl[HUNG_DONE]; the last block to finish
// (all others have stopped reading F_in) builds the next frontier in F_in and its size,
// then resets the counter. This saves one launch per BFS level; the result is the one the
// separate contraction gives (up to the order of F_in, which decides nothing but ties).
__device__ bool hungarian_last_block(int* ctrl, int tid) {
  __shared__ int last;
  __threadfence();
  __syncthreads();
  if (tid == 0) last = atomicAdd(&ctrl[HUNG_DONE], 1) == (int)(gridDim.x * gridDim.y) - 1;
  __syncthreads();
  if (last) __threadfence();
  return last;
}

// ---------------------------------------------------------------------------------------
// Alternating tree variant (CU-TREE)

// Date & Nagi 2016, Alg. 4 lines 4-6, the merge of a column's 8 row lanes: each lane holds
// the least slack over its share of F_in and that entry's frontier position; the least
// slack wins and, among equals, the earliest position, which is what Alg. 4's sequential
// scan of F_in (strict ">") keeps. `mins` and `pos` point at lane 0 and step by `stride`.
// Returns the winning lane.
__device__ __forceinline__ int hungarian_lane_argmin(const dual_t* mins, const int* pos,
                                                     int stride) {
  int w = 0;
  dual_t b = mins[0];
  int p = pos[0];
  for (int t = 1; t < 8; ++t) {
    const dual_t x = mins[t * stride];
    const int q = pos[t * stride];
    if (x < b || (x == b && q < p)) {
      b = x;
      p = q;
      w = t;
    }
  }
  return w;
}

// Date & Nagi 2016, Alg. 4 lines 4-16 for one uncovered column `col` whose least slack
// over the frontier is `best`, reached from frontier row `row`: lower the column's slack
// and predecessor (lines 4-6); at zero slack (line 9) cover the column and extend the tree
// through its assigned row `ac` (lines 10-14, returned), or, unassigned, mark it "reverse"
// (line 16; returns -1). The column's state (slack, pc, vc, rev) may sit in global or
// shared memory; `pc_mirror`, when given, is a global copy of P_c kept for the reverse
// pass. Benign race: every writer of ctrl[HUNG_REV] stores 1.
__device__ __forceinline__ int hungarian_tree_visit(dual_t best, int row, dual_t eps, int col,
                                                    dual_t* slack, int* pc, int* pc_mirror,
                                                    char* vc, int ac, int* Pr, char* Vr,
                                                    char* rev, int* ctrl) {
  dual_t sl = *slack;
  if (sl > best) {  // Alg. 4 lines 4-6
    sl = best;
    *slack = sl;
    *pc = row;
    if (pc_mirror) *pc_mirror = row;
  }
  if (sl > eps) return -1;  // line 9: not a zero-slack column
  if (ac != -1) {           // lines 10-14: extend the tree through the column's row
    Pr[ac] = col;
    Vr[ac] = 0;
    *vc = 1;
    return ac;
  }
  *rev = 1;  // line 16: an unassigned column ends an augmenting path
  ctrl[HUNG_REV] = 1;
  return -1;
}

// Date & Nagi 2016, Alg. 4 (forward pass expansion kernel, alternating tree variant): one
// thread per column j of this block of columns (global index col0 + j). For an uncovered
// column, slack[j] and P_c[j] take the least C[i, j] - u[i] - v[j] over the frontier
// (Alg. 4 lines 4-6, strict ">" so the first frontier row in F_in order wins ties); a
// zero-slack column (line 9) is covered and makes its assigned row active (lines 10-14)
// or, unassigned, is marked "reverse" (line 16); see hungarian_tree_visit. With `fuse`,
// the new rows go to per-block lists (blk_rows, blk_cnt) from which the last block builds
// the next F_in (see "Fused contraction"); F_in is then in the order of the columns that
// reached the rows. Block (32, 8): each column's scan of F_in is split over 8 row lanes
// (F_in[y], F_in[y + 8], ...) whose minima are merged by frontier position
// (hungarian_lane_argmin), which gives Alg. 4's sequential result with 8x the warps.
// No race: P_r, V_r and `active` of row Ac[j] are written by column j's thread alone
// (a row is assigned to one column), and columns are split across devices.
extern "C" __global__ void hungarian_tree_expand(
    const cost_t* __restrict__ C, long long ld, int ncols, int col0,
    const dual_t* __restrict__ u, const dual_t* __restrict__ v, int* Fin, int* nf_ptr,
    dual_t* slack, int* Pc, char* Vc, const int* __restrict__ Ac, int* Pr, char* Vr,
    char* active, char* rev, int* ctrl, dual_t eps, int fuse, int* blk_rows, int* blk_cnt) {
  __shared__ dual_t s_min[8][32];
  __shared__ int s_pos[8][32];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 32 + tx;
  const int j = blockIdx.x * 32 + tx;
  const bool live = j < ncols && !Vc[j];  // Alg. 4 line 2: uncovered columns only
  dual_t best = (dual_t)HUNG_INF;
  int pos = 0x7fffffff;
  const int nf = *nf_ptr;
  if (live) {
    const dual_t vj = v[j];
    const cost_t* Cj = C + j;
#pragma unroll 4
    for (int k = ty; k < nf; k += 8) {
      const int i = Fin[k];
      const dual_t s = (dual_t)Cj[(long long)i * ld] - u[i] - vj;
      if (s < best) {
        best = s;
        pos = k;
      }
    }
  }
  s_min[ty][tx] = best;
  s_pos[ty][tx] = pos;
  __syncthreads();
  int reached = -1;  // the row this column adds to the next frontier
  if (ty == 0 && live) {
    const int w = hungarian_lane_argmin(&s_min[0][tx], &s_pos[0][tx], 32);
    best = s_min[w][tx];
    pos = s_pos[w][tx];
    const int row = pos < nf ? Fin[pos] : -1;  // pos is set whenever best is finite
    reached = hungarian_tree_visit(best, row, eps, col0 + j, &slack[j], &Pc[j], nullptr,
                                   &Vc[j], Ac[j], Pr, Vr, &rev[j], ctrl);
    if (reached >= 0 && !fuse) active[reached] = 1;
  }
  if (!fuse) return;
  // Fused contraction: warp 0 lists this block's new rows (in column order) ...
  if (ty == 0) {
    const unsigned b = __ballot_sync(0xffffffffu, reached >= 0);
    if (reached >= 0) blk_rows[blockIdx.x * 32 + __popc(b & ((1u << tx) - 1u))] = reached;
    if (tx == 0) blk_cnt[blockIdx.x] = __popc(b);
  }
  if (!hungarian_last_block(ctrl, tid)) return;
  // ... and the last block concatenates the lists in block order into F_in.
  const int nb = gridDim.x, chunk = (nb + 255) / 256;
  const int lo = min(nb, tid * chunk), hi = min(nb, lo + chunk);
  int c = 0;
  for (int b = lo; b < hi; ++b) c += __ldcg(&blk_cnt[b]);
  int total;
  int at = hungarian_block_exclusive_scan(c, tid, 256, &total);
  for (int b = lo; b < hi; ++b) {
    const int cnt = __ldcg(&blk_cnt[b]);
    for (int r = 0; r < cnt; ++r) Fin[at++] = __ldcg(&blk_rows[b * 32 + r]);
  }
  if (tid == 0) {
    *nf_ptr = total;
    ctrl[HUNG_DONE] = 0;
  }
}

// Date & Nagi 2016, Sec. 4.4: a column's candidate for theta, its slack when it is
// uncovered and positive, else infinity.
__device__ __forceinline__ dual_t hungarian_theta_candidate(char covered, dual_t slack,
                                                            dual_t eps) {
  return !covered && slack > eps ? slack : (dual_t)HUNG_INF;
}

// Date & Nagi 2016, Sec. 4.4 (dual update, alternating tree variant): theta = the least
// positive slack of an uncovered column, "a simple O(n) reduction of the slack array".
// Single block. Sets ctrl[HUNG_ERR] when there is none (no finite theta).
extern "C" __global__ void hungarian_tree_theta(const dual_t* __restrict__ slack,
                                           const char* __restrict__ Vc, int ncols, dual_t eps,
                                           dual_t* __restrict__ theta, int* ctrl, int report) {
  dual_t m = (dual_t)HUNG_INF;
  for (int j = threadIdx.x; j < ncols; j += blockDim.x)
    m = hungarian_min2(m, hungarian_theta_candidate(Vc[j], slack[j], eps));
  m = hungarian_block_min(m);
  if (threadIdx.x == 0) {
    *theta = m;
    if (report && m >= (dual_t)HUNG_INF) ctrl[HUNG_ERR] = 1;
  }
}

// out[0] = min(x[0..n)); single block. Combines per-row (Alg. 7) or per-device minima.
// Sets ctrl[HUNG_ERR] when `report` and the minimum is infinite.
extern "C" __global__ void hungarian_min_reduce(const dual_t* __restrict__ x, int n,
                                           dual_t* __restrict__ out, int* ctrl, int report) {
  dual_t m = (dual_t)HUNG_INF;
  for (int k = threadIdx.x; k < n; k += blockDim.x) m = hungarian_min2(m, x[k]);
  m = hungarian_block_min(m);
  if (threadIdx.x == 0) {
    *out = m;
    if (report && m >= (dual_t)HUNG_INF) ctrl[HUNG_ERR] = 1;
  }
}

// Date & Nagi 2016, Alg. 8 and Alg. 9, row part: uncovered rows (V_r = 0, the rows of the
// alternating trees) get u += theta (see "Dual update form" above). `rows` rows held
// locally, whose cover flags are Vr[row0 ...].
extern "C" __global__ void hungarian_dual_update_rows(int rows, int row0,
                                                 const char* __restrict__ Vr,
                                                 const dual_t* __restrict__ theta,
                                                 dual_t* u) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows && !Vr[row0 + r]) u[r] += *theta;
}

// Date & Nagi 2016, Alg. 8 and Alg. 9, column part, for one column: a covered column gets
// v -= theta; in the alternating tree variant (`tree`) an uncovered column's positive
// slack drops by theta (Alg. 9 lines 12-13). Returns true when that slack reaches zero:
// the caller then puts the column's predecessor row P_c back into the frontier (lines
// 14-15). The pointers may be global or shared memory.
__device__ __forceinline__ bool hungarian_dual_col(char covered, int tree, dual_t t, dual_t* v,
                                                   dual_t* slack, dual_t eps) {
  if (covered) {
    *v -= t;
    return false;
  }
  if (!tree) return false;
  dual_t s = *slack;
  if (s <= eps) return false;
  s -= t;
  *slack = s;
  return s <= eps;
}

// Date & Nagi 2016, Alg. 8 and Alg. 9, column part (hungarian_dual_col per column); a
// column whose slack reaches zero marks its predecessor row active for the next expansion
// (Alg. 9 lines 12-15). Benign race: several columns may mark the same row; all store 1.
extern "C" __global__ void hungarian_dual_update_cols(int ncols, const char* __restrict__ Vc,
                                                 const dual_t* __restrict__ theta, dual_t* v,
                                                 int tree, dual_t* slack,
                                                 const int* __restrict__ Pc, char* active,
                                                 dual_t eps) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= ncols) return;
  if (hungarian_dual_col(Vc[j], tree, *theta, &v[j], &slack[j], eps)) active[Pc[j]] = 1;
}

// Multi-GPU alternating tree (Sec. 5, item 4b, contraction): merge the rows a device's
// expansion reached (act_in, with their predecessor columns pr_in) into the root's arrays.
extern "C" __global__ void hungarian_merge_rows(int n, const char* __restrict__ act_in,
                                           const int* __restrict__ pr_in, char* active,
                                           int* Pr, char* Vr) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || !act_in[i]) return;
  active[i] = 1;
  const int p = pr_in[i];
  if (p != -1) {
    Pr[i] = p;
    Vr[i] = 0;
  }
}

// Clears a device's local row scratch after the root has taken it.
extern "C" __global__ void hungarian_clear_rows(int n, char* act, int* pr) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  act[i] = 0;
  pr[i] = -1;
}

// ---------------------------------------------------------------------------------------
// Classical variant (CU-CLASS)

// Date & Nagi 2016, Sec. 3.3 and 4.3.1 (matrix compression), pass 1: cnt[r] = the number
// of zero-slack entries of local row r. One block per row. The host turns the counts into
// the CSR row pointer P by a prefix sum.
extern "C" __global__ void hungarian_zero_count(const cost_t* __restrict__ C, int rows, int ncols,
                                           const dual_t* __restrict__ u,
                                           const dual_t* __restrict__ v, dual_t eps,
                                           int* __restrict__ cnt) {
  const int r = blockIdx.x;
  const cost_t* Cr = C + (long long)r * ncols;
  const dual_t ur = u[r];
  int c = 0;
  for (int j = threadIdx.x; j < ncols; j += blockDim.x) c += ((dual_t)Cr[j] - ur - v[j]) <= eps;
  c = hungarian_block_sum(c);
  if (threadIdx.x == 0 && r < rows) cnt[r] = c;
}

// Date & Nagi 2016, Sec. 3.3 and 4.3.1 (matrix compression), pass 2: scatter the column
// indices of row r's zero-slack entries, in increasing order, to Z[P[r] ...]. One block
// per row; each tile of blockDim.x columns is compacted by a ballot and a scan of the
// warp counts.
extern "C" __global__ void hungarian_zero_scatter(const cost_t* __restrict__ C, int rows, int ncols,
                                             const dual_t* __restrict__ u,
                                             const dual_t* __restrict__ v, dual_t eps,
                                             const long long* __restrict__ P,
                                             int* __restrict__ Z) {
  __shared__ int warp_cnt[32];
  const int r = blockIdx.x;
  if (r >= rows) return;
  const cost_t* Cr = C + (long long)r * ncols;
  const dual_t ur = u[r];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  long long base = P[r];
  for (int j0 = 0; j0 < ncols; j0 += blockDim.x) {
    const int j = j0 + threadIdx.x;
    const bool z = j < ncols && ((dual_t)Cr[j] - ur - v[j]) <= eps;
    const unsigned b = __ballot_sync(0xffffffffu, z);
    if (lane == 0) warp_cnt[warp] = __popc(b);
    __syncthreads();
    int off = 0, tot = 0;
    for (int w = 0; w < nwarps; ++w) {
      const int c = warp_cnt[w];
      off += w < warp ? c : 0;
      tot += c;
    }
    if (z) Z[base + off + __popc(b & ((1u << lane) - 1u))] = j;
    base += tot;
    __syncthreads();
  }
}

// Date & Nagi 2016, Sec. 4.3.1 (classical forward pass, first bullet): the rows of the
// trees (V_r = 0: the unassigned rows after the optimality check, every tree row after a
// dual update) with a zero-slack edge become active; those without become visited.
extern "C" __global__ void hungarian_class_seed(int n, const char* __restrict__ Vr,
                                           const long long* __restrict__ P, char* active,
                                           char* visited) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const bool tree = !Vr[i];
  const bool deg = P[i + 1] > P[i];
  active[i] = (char)(tree && deg);
  visited[i] = (char)(tree && !deg);
}

// Date & Nagi 2016, Alg. 3 (forward pass expansion kernel, classical variant): one thread
// per frontier row i, scanning its zero-slack columns Z[P[i] .. P[i+1]). Benign race
// (Prop. 1, observation 3): threads of rows sharing an uncovered column j all store
// P_c[j] and only one value survives; each stored value is a frontier row with a
// zero-slack edge to j, so the trees stay trees; all of them store the same P_r and V_r of
// Ac[j]. "Gather i_new into F_out" is the `active` flag here: the contraction (compaction
// of the active flags) drops duplicates and visited rows in one step; with `fuse` the last
// block does it (see "Fused contraction").
extern "C" __global__ void hungarian_class_expand(int* Fin, int* nf_ptr,
                                                  const long long* __restrict__ P,
                                                  const int* __restrict__ Z,
                                                  const int* __restrict__ Ac, int* Pc, int* Pr,
                                                  char* Vr, char* Vc, char* active,
                                                  char* visited, char* rev, int* ctrl, int n,
                                                  int fuse) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < *nf_ptr) {
    const int i = Fin[k];
    const long long e1 = P[i + 1];
    for (long long e = P[i]; e < e1; ++e) {
      const int j = Z[e];
      if (Vc[j]) continue;  // Alg. 3 line 3: uncovered columns only
      Pc[j] = i;            // line 4
      const int inew = Ac[j];
      if (inew == i) continue;
      if (inew != -1) {  // lines 7-14
        Pr[inew] = j;
        Vr[inew] = 0;
        Vc[j] = 1;
        if (!visited[inew]) active[inew] = 1;
      } else {  // line 16
        rev[j] = 1;
        ctrl[HUNG_REV] = 1;
      }
    }
    visited[i] = 1;  // line 20
  }
  // Fused contraction: the last block compacts the active flags into the next F_in.
  if (fuse && hungarian_last_block(ctrl, threadIdx.x)) {
    hungarian_compact_block(active, n, 1, Fin, nf_ptr, threadIdx.x, blockDim.x);
    if (threadIdx.x == 0) ctrl[HUNG_DONE] = 0;
  }
}

// Date & Nagi 2016, Alg. 7 (dual update stage 1, classical variant): U[r] = the least
// slack between uncovered local row r (global row0 + r) and any uncovered column, HUNG_INF
// for a covered row. One block per row; the final min over U (Alg. 7's single thread
// loop) is hungarian_min_reduce.
extern "C" __global__ void hungarian_class_min_slack(const cost_t* __restrict__ C, int rows,
                                                int ncols, int row0,
                                                const dual_t* __restrict__ u,
                                                const dual_t* __restrict__ v,
                                                const char* __restrict__ Vr,
                                                const char* __restrict__ Vc,
                                                dual_t* __restrict__ U) {
  const int r = blockIdx.x;
  dual_t m = (dual_t)HUNG_INF;
  if (r < rows && !Vr[row0 + r]) {
    const cost_t* Cr = C + (long long)r * ncols;
    const dual_t ur = u[r];
    for (int j = threadIdx.x; j < ncols; j += blockDim.x)
      if (!Vc[j]) m = hungarian_min2(m, (dual_t)Cr[j] - ur - v[j]);
  }
  m = hungarian_block_min(m);
  if (threadIdx.x == 0 && r < rows) U[r] = m;
}

// ---------------------------------------------------------------------------------------
// Reverse and augmentation passes (both variants, root device)

// Date & Nagi 2016, Alg. 5 lines 4-10 (reverse pass) from the "reverse" column `col`:
// walk the predecessors back to the tree's root, recording successors, and mark the root
// "augment". Returns false (marks nothing) when the walk leaves the tree or takes more than
// `limit` steps, which a consistent tree never does. P_r and P_c are read through L2: in
// the persistent kernel other blocks wrote them in the same launch.
__device__ __forceinline__ bool hungarian_reverse_walk(int col, const int* Pr, const int* Pc,
                                                       int* Sr, int* Sc, char* aug,
                                                       int limit) {
  int rcur = -1, ccur = col;
  for (int steps = 0; ccur != -1; ++steps) {  // Alg. 5 lines 4-9
    if (steps > limit) return false;
    Sc[ccur] = rcur;
    rcur = __ldcg(&Pc[ccur]);
    if (rcur < 0) return false;
    Sr[rcur] = ccur;
    ccur = __ldcg(&Pr[rcur]);
  }
  aug[rcur] = 1;  // line 10
  return true;
}

// Date & Nagi 2016, Alg. 6 lines 4-9 (augmentation pass) from the root `row`: flip the
// path's assigned and unassigned edges. Returns false on a walk that leaves the path or
// takes more than `limit` steps.
__device__ __forceinline__ bool hungarian_augment_walk(int row, const int* Sr, const int* Sc,
                                                       int* Ar, int* Ac, int limit) {
  int rcur = row;
  for (int steps = 0; rcur != -1; ++steps) {
    if (steps > limit) return false;
    const int ccur = __ldcg(&Sr[rcur]);
    if (ccur < 0) return false;
    Ar[rcur] = ccur;
    Ac[ccur] = rcur;
    rcur = __ldcg(&Sc[ccur]);
  }
  return true;
}

// Date & Nagi 2016, Alg. 5 (reverse pass kernel): one thread per column of F_rev walks the
// predecessors back to the tree's root (hungarian_reverse_walk). Benign race (Prop. 2):
// walks from leaves of one tree meet at a row and race on its S_r; the surviving value is
// a child column on some walk, every S_c they write is the same (the column's assigned
// row), so from each root the successors spell one alternating path, and paths of
// distinct trees are vertex-disjoint (Prop. 1).
extern "C" __global__ void hungarian_reverse(const int* __restrict__ Frev,
                                        const int* __restrict__ count,
                                        const int* __restrict__ Pr,
                                        const int* __restrict__ Pc, int* Sr, int* Sc,
                                        char* aug) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= *count) return;
  hungarian_reverse_walk(Frev[k], Pr, Pc, Sr, Sc, aug, 0x7ffffffe);
}

// Date & Nagi 2016, Alg. 6 (augmentation pass kernel): one thread per root in F_aug flips
// its path's assigned and unassigned edges (hungarian_augment_walk). Paths are
// vertex-disjoint (Prop. 2), so the threads write disjoint entries of A_r and A_c.
extern "C" __global__ void hungarian_augment(const int* __restrict__ Faug,
                                        const int* __restrict__ count,
                                        const int* __restrict__ Sr,
                                        const int* __restrict__ Sc, int* Ar, int* Ac) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= *count) return;
  hungarian_augment_walk(Faug[k], Sr, Sc, Ar, Ac, 0x7ffffffe);
}

// ---------------------------------------------------------------------------------------
// Persistent CU-TREE: the whole solve loop in one launch (beyond the paper)
//
// Date & Nagi's host drives each step (Sec. 3.2); at n = 5000 with costs in [0, 10n] that is
// thousands of BFS levels, each a few microseconds of work, so the time went to launches
// and host reads. hungarian_tree_persistent runs the same steps, in the same order, in one
// cooperative launch of a grid that is co-resident by construction (the host sizes it from
// the occupancy calculator, and a cooperative launch fails rather than start a grid that
// is not), with a grid-wide barrier where the host loop had a kernel boundary or a flag
// read. What changes besides:
// - Columns are owned. Block b owns the columns [b W, b W + W), W = 32 x tiles; their slack,
//   v, P_c, A_c, cover and "reverse" state live in its shared memory for the whole solve
//   (P_c is mirrored to global memory for the reverse walks of other blocks). A level then
//   reads from global memory only the frontier and the costs.
// - Frontiers are appended to (warp-aggregated atomicAdd on a count) instead of compacted
//   from flags: one barrier per BFS level instead of two steps. The order of F_in then
//   depends on timing, which decides nothing but ties (Alg. 4 keeps any least-slack row;
//   Prop. 1 needs only that P_c is a frontier row with the least slack). Each entry carries
//   its row's dual u: the row the expansion reaches is covered until then, so no dual
//   update has changed its u since the phase began and the owner of its column read it
//   then; rows put back by a dual update read u again at the next level ("fresh").
// - Three frontier counts rotate: the step that consumes frontier f appends to f + 1 and
//   clears the count of f + 2, whose last reader finished before the previous barrier.
// - Every block takes every decision (frontier empty, "reverse" found, theta, done) from
//   values read after a barrier that nobody writes before the next one, so all blocks
//   follow the same path through the loop; the counters and bounds are kept per block.
// Shared-memory and global data written by other blocks in this launch are read through
// L2 (__ldcg), never a possibly stale L1 line.

#define HUNG_PERSIST_THREADS 256  // block size of the persistent kernel: 32 columns x 8 lanes
#define HUNG_LANE_BATCH 8         // cost loads a lane issues before it compares

// Appends (row, ru) to a frontier for the threads of the warp with `take` set: one atomic
// per warp on the count, then each taker writes its slot. Every lane of the warp must call.
// Slots past `cap` are not written; they set HUNG_E_FRONTIER (a broken invariant), and the
// count, read after the next barrier, makes every block stop.
__device__ __forceinline__ void hungarian_append(bool take, int row, dual_t ru, int* F,
                                                 dual_t* Fu, int* count, int cap, int* ctrl) {
  const unsigned int mask = __ballot_sync(0xffffffffu, take);
  if (!mask) return;
  const int lane = threadIdx.x & 31;
  int base = 0;
  if (lane == 0) base = atomicAdd(count, __popc(mask));
  base = __shfl_sync(0xffffffffu, base, 0);
  if (take) {
    const int at = base + __popc(mask & ((1u << lane) - 1u));
    if (at < cap) {
      F[at] = row;
      Fu[at] = ru;
    } else {
      ctrl[HUNG_ERR] = HUNG_E_FRONTIER;
    }
  }
}

// Rows just added to the next frontier (`take`, one per lane of this warp) are read in
// full, by every block, at the next BFS level. Asking L2 for them now overlaps their DRAM
// latency with the grid barrier in between. A hint only: it changes no data. Every lane of
// the warp must call.
__device__ __forceinline__ void hungarian_prefetch_rows(bool take, int row,
                                                        const cost_t* __restrict__ C,
                                                        long long ld, int ncols) {
  unsigned int mask = __ballot_sync(0xffffffffu, take);
  const int lane = threadIdx.x & 31;
  const int per_line = 128 / (int)sizeof(cost_t);  // cost entries per 128-byte line
  while (mask) {
    const int src = __ffs(mask) - 1;
    mask &= mask - 1u;
    const cost_t* Ci = C + (long long)__shfl_sync(0xffffffffu, row, src) * ld;
    for (int off = lane * per_line; off < ncols; off += 32 * per_line)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(Ci + off));
  }
}

// theta = min over the blocks: positive slacks only, so for float64 duals the bit patterns
// order like the values and the int64 atomicMin serves both dual types.
__device__ __forceinline__ void hungarian_atomic_min_pos(dual_t* addr, dual_t x) {
#if HUNG_DTYPE >= 2
  atomicMin((long long*)addr, __double_as_longlong(x));
#else
  atomicMin((long long*)addr, (long long)x);
#endif
}

// Date & Nagi 2016, CU-TREE (Alg. 2, 4, 5, 6 and 9, Sec. 4.2-4.4) as one persistent kernel;
// see the section comment above. One device (col0 = 0, ld = n). Launched cooperatively with
// gridDim.x = ceil(n / (32 tiles)) blocks of HUNG_PERSIST_THREADS threads and the dynamic
// shared memory of persistent_smem_bytes (matchbench/families/lap/hungarian_tree.py).
// Inputs: u, v after the initial reduction (Alg. 1), A_r = A_c = -1, ctrl zeroed; `stamp`
// (n) and theta2 (2) are scratch. Outputs: A_r, A_c, u, v, and in ctrl the error code,
// the counters, and the barrier word. F and Fu hold two frontiers of n entries each.
extern "C" __global__ void __launch_bounds__(HUNG_PERSIST_THREADS)
    hungarian_tree_persistent(const cost_t* __restrict__ C, int n, int tiles, dual_t* u,
                              dual_t* v, int* Ar, int* Ac, int* Pr, int* Pc, int* Sr, int* Sc,
                              char* Vr, char* aug, int* stamp, int* F, dual_t* Fu,
                              dual_t* theta2, int* ctrl, dual_t eps,
                              unsigned long long timeout_ns) {
  extern __shared__ __align__(16) unsigned char hung_smem[];
  const int tid = threadIdx.x, nthr = HUNG_PERSIST_THREADS;
  const int tx = tid & 31, ty = tid >> 5;
  const int W = 32 * tiles, c0 = blockIdx.x * W;
  const long long ld = n;
  // Shared memory: the owned columns' state, the 8 lanes' minima per column, one chunk of
  // the frontier.
  dual_t* s_slack = (dual_t*)hung_smem;
  dual_t* s_v = s_slack + W;
  dual_t* s_uac = s_v + W;  // u of the column's assigned row, read at the phase start
  dual_t* red_min = s_uac + W;
  dual_t* s_fu = red_min + 8 * W;
  int* s_pc = (int*)(s_fu + nthr);
  int* s_ac = s_pc + W;
  int* red_pos = s_ac + W;
  int* red_row = red_pos + 8 * W;
  int* s_fi = red_row + 8 * W;
  char* s_vc = (char*)(s_fi + nthr);
  char* s_rev = s_vc + W;
  unsigned int* bar = (unsigned int*)&ctrl[HUNG_BAR];
  const int gtid = blockIdx.x * nthr + tid, gthreads = gridDim.x * nthr;
  const int nrows32 = (n + 31) & ~31;  // row loops run whole warps (hungarian_append)
  const bool lead = blockIdx.x == 0 && tid == 0;

  for (int jl = tid; jl < W; jl += nthr) {
    const int j = c0 + jl;
    s_v[jl] = j < n ? v[j] : (dual_t)0;
    s_vc[jl] = 1;  // columns past n stay covered (inert); the phase reset sets the rest
  }
  for (int k = tid; k < 8 * W; k += nthr) {
    red_min[k] = (dual_t)HUNG_INF;
    red_pos[k] = 0x7fffffff;
  }
  // Left over from an earlier solve; first read after the first barrier.
  for (int i = gtid; i < n; i += gthreads) stamp[i] = 0;
  if (lead) theta2[0] = theta2[1] = (dual_t)HUNG_INF;

  int f = 0;          // index of the current frontier: F[(f & 1) n ...], count HUNG_CNT + f % 3
  int levels = 0, phases = 0, duals = 0, syncs = 0, err = 0;
  // A level that leaves a non-empty frontier covers an assigned column (at most n per phase)
  // and each forward pass ends with one level that does not (at most one pass per dual
  // update, at most n dual updates per phase, plus one): at most 2n + 1 levels per phase.
  int levels_in_phase = 0;
  bool fresh = false;  // the current frontier's u values must be read from u
  for (;;) {
    // ---- Optimality check and resets (Alg. 2, Sec. 4.2); the unassigned rows are the next
    // frontier (Sec. 4.3.1), appended with their duals.
    {
      const int nx = (f + 1) & 1;
      for (int i = gtid; i < nrows32; i += gthreads) {
        bool take = false;
        dual_t ui = 0;
        if (i < n && !hungarian_reset_row(i, Ar, Vr, Pr, Sr, Sc, aug)) {
          take = true;
          ui = __ldcg(&u[i]);
        }
        hungarian_append(take, i, ui, F + nx * n, Fu + nx * n, &ctrl[HUNG_CNT + (f + 1) % 3], n,
                         ctrl);
      }
      for (int jl = tid; jl < W; jl += nthr) {
        const int j = c0 + jl;
        if (j >= n) continue;
        hungarian_reset_col(&s_vc[jl], &s_pc[jl], &s_rev[jl], &s_slack[jl]);
        Pc[j] = -1;
        const int a = __ldcg(&Ac[j]);
        s_ac[jl] = a;
        s_uac[jl] = a != -1 ? __ldcg(&u[a]) : (dual_t)0;
      }
      if (lead) {
        ctrl[HUNG_REV] = 0;
        ctrl[HUNG_CNT + (f + 2) % 3] = 0;
      }
      ++syncs;
      if (!mb_grid_sync(bar, &ctrl[HUNG_ABORT], timeout_ns)) goto done;
      ++f;
      fresh = false;
    }
    {
      const int nfree = __ldcg(&ctrl[HUNG_CNT + f % 3]);
      if (nfree > n) {
        err = HUNG_E_FRONTIER;
        goto done;
      }
      if (phases == 1 && lead) ctrl[HUNG_INIT] = n - nfree;  // assigned by the first phase
      if (nfree == 0) break;  // every row assigned: optimal (Alg. 2)
      if (++phases > n + 1) {
        err = HUNG_E_PHASES;
        goto done;
      }
    }
    levels_in_phase = 0;
    for (;;) {
      // ---- Forward pass (Sec. 4.3.1): BFS levels until the frontier is empty.
      for (;;) {
        const int* Fc = F + (f & 1) * n;
        const dual_t* Fuc = Fu + (f & 1) * n;
        // The first chunk of the frontier is loaded alongside its count rather than after
        // it (one L2 round trip per level fewer); entries past the count are ignored.
        int i0 = 0;
        dual_t fu0 = 0;
        if (tid < n) {
          i0 = __ldcg(&Fc[tid]);
          fu0 = __ldcg(&Fuc[tid]);
        }
        const int nf = __ldcg(&ctrl[HUNG_CNT + f % 3]);
        if (nf > n) {
          err = HUNG_E_FRONTIER;
          goto done;
        }
        if (nf == 0) break;
        ++levels;
        if (++levels_in_phase > 2 * n + 2) {
          err = HUNG_E_LEVELS;
          goto done;
        }
        // Expansion (Alg. 4): lanes scan the frontier in chunks of nthr entries.
        for (int base = 0; base < nf; base += nthr) {
          const int m = min(nthr, nf - base);
          if (base) __syncthreads();  // the previous chunk is consumed
          if (tid < m) {
            const int i = base ? __ldcg(&Fc[base + tid]) : i0;
            s_fi[tid] = i;
            s_fu[tid] = fresh ? __ldcg(&u[i]) : base ? __ldcg(&Fuc[base + tid]) : fu0;
          }
          __syncthreads();
          for (int t = 0; t < tiles; ++t) {
            const int jl = t * 32 + tx, j = c0 + jl;
            if (j >= n || s_vc[jl]) continue;  // Alg. 4 line 2: uncovered columns only
            const int slot = 8 * t * 32 + ty * 32 + tx;
            dual_t b = red_min[slot];
            int p = red_pos[slot], r = red_row[slot];
            const dual_t vj = s_v[jl];
            const cost_t* Cj = C + j;
            // HUNG_LANE_BATCH predicated loads in flight per lane before the first use: one
            // DRAM round trip for up to 8 x HUNG_LANE_BATCH frontier rows, where a loop with
            // a runtime trip count pays one per leftover iteration. Same order (k rising),
            // so the first least row still wins.
            for (int k0 = ty; k0 < m; k0 += 8 * HUNG_LANE_BATCH) {
              cost_t c[HUNG_LANE_BATCH];
#pragma unroll
              for (int q = 0; q < HUNG_LANE_BATCH; ++q) {
                const int k = k0 + 8 * q;
                c[q] = k < m ? Cj[(long long)s_fi[k] * ld] : (cost_t)0;
              }
#pragma unroll
              for (int q = 0; q < HUNG_LANE_BATCH; ++q) {
                const int k = k0 + 8 * q;
                if (k < m) {
                  const dual_t s = (dual_t)c[q] - s_fu[k] - vj;
                  if (s < b) {
                    b = s;
                    p = base + k;
                    r = s_fi[k];
                  }
                }
              }
            }
            red_min[slot] = b;
            red_pos[slot] = p;
            red_row[slot] = r;
          }
        }
        __syncthreads();
        {
          const int nx = (f + 1) & 1;
          int* cnt = &ctrl[HUNG_CNT + (f + 1) % 3];
          for (int jl = tid; jl < W; jl += nthr) {
            const int j = c0 + jl;
            int add = -1;
            if (j < n && !s_vc[jl]) {
              const int t = jl >> 5, x = jl & 31, s0 = 8 * t * 32 + x;
              const int w = hungarian_lane_argmin(&red_min[s0], &red_pos[s0], 32);
              const dual_t best = red_min[s0 + 32 * w];
              const int row = red_row[s0 + 32 * w];
              for (int l = 0; l < 8; ++l) {  // ready for the next level
                red_min[s0 + 32 * l] = (dual_t)HUNG_INF;
                red_pos[s0 + 32 * l] = 0x7fffffff;
              }
              add = hungarian_tree_visit(best, row, eps, j, &s_slack[jl], &s_pc[jl], &Pc[j],
                                         &s_vc[jl], s_ac[jl], Pr, Vr, &s_rev[jl], ctrl);
            }
            hungarian_append(add >= 0, add, add >= 0 ? s_uac[jl] : (dual_t)0, F + nx * n,
                             Fu + nx * n, cnt, n, ctrl);
            hungarian_prefetch_rows(add >= 0, add, C, ld, n);
          }
        }
        if (lead) ctrl[HUNG_CNT + (f + 2) % 3] = 0;
        ++syncs;
        if (!mb_grid_sync(bar, &ctrl[HUNG_ABORT], timeout_ns)) goto done;
        ++f;
        fresh = false;
      }
      if (__ldcg(&ctrl[HUNG_REV])) break;  // augmenting paths found (Alg. 4 line 16)

      // ---- Dual update (Sec. 4.4, Alg. 9). theta: per-block minima, one atomic each.
      {
        dual_t m = (dual_t)HUNG_INF;
        for (int jl = tid; jl < W; jl += nthr)
          if (c0 + jl < n)
            m = hungarian_min2(m, hungarian_theta_candidate(s_vc[jl], s_slack[jl], eps));
        m = hungarian_block_min(m);
        if (tid == 0 && m < (dual_t)HUNG_INF) hungarian_atomic_min_pos(&theta2[duals & 1], m);
        ++syncs;
        if (!mb_grid_sync(bar, &ctrl[HUNG_ABORT], timeout_ns)) goto done;
      }
      {
        const dual_t theta = __ldcg(&theta2[duals & 1]);
        if (!(theta < (dual_t)HUNG_INF)) {
          err = HUNG_E_THETA;
          goto done;
        }
        if (++duals > (n + 1) * phases) {
          err = HUNG_E_DUALS;
          goto done;
        }
        if (lead) {
          theta2[duals & 1] = (dual_t)HUNG_INF;  // the slot of the next dual update
          ctrl[HUNG_CNT + (f + 2) % 3] = 0;
        }
        for (int i = gtid; i < n; i += gthreads)  // Alg. 9, rows: the tree rows
          if (!__ldcg(&Vr[i])) u[i] = __ldcg(&u[i]) + theta;
        const int nx = (f + 1) & 1;
        for (int jl = tid; jl < W; jl += nthr) {
          const int j = c0 + jl;
          bool take = false;
          int r = -1;
          if (j < n && hungarian_dual_col(s_vc[jl], 1, theta, &s_v[jl], &s_slack[jl], eps)) {
            // Alg. 9 lines 14-15: the predecessor row goes back into the frontier; the
            // stamp (this dual update's number) lets one of its columns add it.
            r = s_pc[jl];
            take = atomicMax(&stamp[r], duals) < duals;
          }
          hungarian_append(take, r, (dual_t)0, F + nx * n, Fu + nx * n,
                           &ctrl[HUNG_CNT + (f + 1) % 3], n, ctrl);
          hungarian_prefetch_rows(take, r, C, ld, n);
        }
        ++syncs;
        if (!mb_grid_sync(bar, &ctrl[HUNG_ABORT], timeout_ns)) goto done;
        ++f;
        fresh = true;  // u of these rows changed in this step
      }
    }

    // ---- Reverse pass (Alg. 5) from the owned "reverse" columns, then augmentation (Alg. 6)
    // from the roots they marked.
    for (int jl = tid; jl < W; jl += nthr)
      if (c0 + jl < n && s_rev[jl] &&
          !hungarian_reverse_walk(c0 + jl, Pr, Pc, Sr, Sc, aug, n + 1))
        ctrl[HUNG_ERR] = HUNG_E_WALK;
    ++syncs;
    if (!mb_grid_sync(bar, &ctrl[HUNG_ABORT], timeout_ns)) goto done;
    for (int i = gtid; i < n; i += gthreads)
      if (__ldcg(&aug[i]) && !hungarian_augment_walk(i, Sr, Sc, Ar, Ac, n + 1))
        ctrl[HUNG_ERR] = HUNG_E_WALK;
    ++syncs;
    if (!mb_grid_sync(bar, &ctrl[HUNG_ABORT], timeout_ns)) goto done;
    if (__ldcg(&ctrl[HUNG_ERR])) goto done;
  }

done:
  for (int jl = tid; jl < W; jl += nthr)
    if (c0 + jl < n) v[c0 + jl] = s_v[jl];
  if (lead) {
    if (err) ctrl[HUNG_ERR] = err;
    if (__ldcg(&ctrl[HUNG_ABORT]) && !__ldcg(&ctrl[HUNG_ERR])) ctrl[HUNG_ERR] = HUNG_E_BARRIER;
    ctrl[HUNG_LEVELS] = levels;
    ctrl[HUNG_PHASES] = phases;
    ctrl[HUNG_DUALS] = duals;
    ctrl[HUNG_SYNCS] = syncs;
  }
}
