// Hungarian algorithms for the linear assignment problem: CU-CLASS and CU-TREE.
//
// Date & Nagi, "GPU-accelerated Hungarian algorithms for the Linear Assignment Problem",
// Parallel Computing 2016. "Alg. N" below is that paper's Algorithm N; "Sec." its sections.
// The host driver is matchbench/solvers/gpu/hungarian.py; it keeps the control flow of
// Sec. 3.2 (each step one or more kernels, the host coordinating between them), reading
// device flags only where it must decide what runs next.
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

// ctrl layout; kept in step with _CTRL_* in matchbench/solvers/gpu/hungarian.py.
#define HUNG_MATCH 0  // assigned rows counted by the optimality check (Alg. 2)
#define HUNG_NF 1     // size of the frontier F_in
#define HUNG_REV 2    // 1 once some column is marked "reverse" in the forward pass
#define HUNG_NCOMP 3  // size of the last compacted array (F_rev, F_aug)
#define HUNG_ERR 4    // 1: a dual update found no uncovered column (no finite theta)
#define HUNG_DONE 5   // blocks of a fused expansion that have finished (see "Fused contraction")

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

// Date & Nagi 2016, Alg. 2 (optimality check kernel) with the resets of Sec. 4.2: an
// assigned row is covered (V_r = 1) and counted; P_r, S_r and the row flags are cleared.
// S_c (global, on the root) is cleared here too (n rows = n columns). In the alternating
// tree variant the unassigned rows become "active": the first frontier (Sec. 4.3.1).
extern "C" __global__ void hungarian_reset_rows(int n, const int* __restrict__ Ar, char* Vr,
                                           int* Pr, int* Sr, int* Sc, char* active,
                                           char* visited, char* aug, int tree, int* ctrl) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int matched = 0;
  if (i < n) {
    matched = Ar[i] != -1;
    Vr[i] = (char)matched;
    Pr[i] = -1;
    Sr[i] = -1;
    Sc[i] = -1;
    active[i] = (char)(tree && !matched);
    visited[i] = 0;
    aug[i] = 0;
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
  Vc[j] = 0;
  Pc[j] = -1;
  rev[j] = 0;
  slack[j] = (dual_t)HUNG_INF;
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

// Date & Nagi 2016, Alg. 4 (forward pass expansion kernel, alternating tree variant): one
// thread per column j of this block of columns (global index col0 + j). For an uncovered
// column, slack[j] and P_c[j] take the least C[i, j] - u[i] - v[j] over the frontier
// (Alg. 4 lines 4-6, strict ">" so the first frontier row in F_in order wins ties); a
// zero-slack column (line 9) is covered and makes its assigned row active (lines 10-14)
// or, unassigned, is marked "reverse" (line 16). With `fuse`, the new rows go to per-block
// lists (blk_rows, blk_cnt) from which the last block builds the next F_in (see "Fused
// contraction"); F_in is then in the order of the columns that reached the rows. Block (32, 8): each column's scan
// of F_in is split over 8 row lanes (F_in[y], F_in[y + 8], ...) whose minima are merged
// by frontier position, which gives Alg. 4's sequential result with 8x the warps.
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
  if (live) {
    const int nf = *nf_ptr;
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
    for (int t = 1; t < 8; ++t) {
      const dual_t b = s_min[t][tx];
      const int p = s_pos[t][tx];
      if (b < best || (b == best && p < pos)) {
        best = b;
        pos = p;
      }
    }
    dual_t sl = slack[j];
    if (sl > best) {  // Alg. 4 lines 4-6
      sl = best;
      slack[j] = sl;
      Pc[j] = Fin[pos];
    }
    if (sl <= eps) {  // Alg. 4 line 9: zero slack
      const int inew = Ac[j];
      if (inew != -1) {  // lines 10-14: column assigned, extend the tree through its row
        Pr[inew] = col0 + j;
        Vr[inew] = 0;
        Vc[j] = 1;
        reached = inew;
        if (!fuse) active[inew] = 1;
      } else {  // line 16: unassigned column, a reverse pass candidate
        rev[j] = 1;
        ctrl[HUNG_REV] = 1;  // benign race: every writer stores 1
      }
    }
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

// Date & Nagi 2016, Sec. 4.4 (dual update, alternating tree variant): theta = the least
// positive slack of an uncovered column, "a simple O(n) reduction of the slack array".
// Single block. Sets ctrl[HUNG_ERR] when there is none (no finite theta).
extern "C" __global__ void hungarian_tree_theta(const dual_t* __restrict__ slack,
                                           const char* __restrict__ Vc, int ncols, dual_t eps,
                                           dual_t* __restrict__ theta, int* ctrl, int report) {
  dual_t m = (dual_t)HUNG_INF;
  for (int j = threadIdx.x; j < ncols; j += blockDim.x) {
    if (!Vc[j]) {
      const dual_t s = slack[j];
      if (s > eps) m = hungarian_min2(m, s);
    }
  }
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

// Date & Nagi 2016, Alg. 8 and Alg. 9, column part: covered columns get v -= theta. In
// the alternating tree variant (`tree`), an uncovered column's positive slack drops by
// theta, and a column whose slack reaches zero marks its predecessor row P_c[j] active
// for the next expansion (Alg. 9 lines 12-15). Benign race: several columns may mark the
// same row; all store 1.
extern "C" __global__ void hungarian_dual_update_cols(int ncols, const char* __restrict__ Vc,
                                                 const dual_t* __restrict__ theta, dual_t* v,
                                                 int tree, dual_t* slack,
                                                 const int* __restrict__ Pc, char* active,
                                                 dual_t eps) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= ncols) return;
  const dual_t t = *theta;
  if (Vc[j]) {
    v[j] -= t;
  } else if (tree) {
    dual_t s = slack[j];
    if (s > eps) {
      s -= t;
      slack[j] = s;
      if (s <= eps) active[Pc[j]] = 1;
    }
  }
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

// Date & Nagi 2016, Alg. 5 (reverse pass kernel): one thread per column of F_rev walks the
// predecessors back to the tree's root, recording successors, and marks the root
// "augment". Benign race (Prop. 2): walks from leaves of one tree meet at a row and race
// on its S_r; the surviving value is a child column on some walk, every S_c they write is
// the same (the column's assigned row), so from each root the successors spell one
// alternating path, and paths of distinct trees are vertex-disjoint (Prop. 1).
extern "C" __global__ void hungarian_reverse(const int* __restrict__ Frev,
                                        const int* __restrict__ count,
                                        const int* __restrict__ Pr,
                                        const int* __restrict__ Pc, int* Sr, int* Sc,
                                        char* aug) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= *count) return;
  int rcur = -1, ccur = Frev[k];
  while (ccur != -1) {  // Alg. 5 lines 4-9
    Sc[ccur] = rcur;
    rcur = Pc[ccur];
    Sr[rcur] = ccur;
    ccur = Pr[rcur];
  }
  aug[rcur] = 1;  // line 10
}

// Date & Nagi 2016, Alg. 6 (augmentation pass kernel): one thread per root in F_aug flips
// its path's assigned and unassigned edges. Paths are vertex-disjoint (Prop. 2), so the
// threads write disjoint entries of A_r and A_c.
extern "C" __global__ void hungarian_augment(const int* __restrict__ Faug,
                                        const int* __restrict__ count,
                                        const int* __restrict__ Sr,
                                        const int* __restrict__ Sc, int* Ar, int* Ac) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= *count) return;
  int rcur = Faug[k];
  while (rcur != -1) {  // Alg. 6 lines 4-9
    const int ccur = Sr[rcur];
    Ar[rcur] = ccur;
    Ac[ccur] = rcur;
    rcur = Sc[ccur];
  }
}
