// Batched linear assignment: many small dense LAPs in one launch, one thread block per
// instance, each solved by the shortest augmenting path method (Jonker & Volgenant 1987,
// in the form of Crouse 2016, Alg. 4 / SciPy's linear_sum_assignment) after JV's column
// reduction. The host driver is matchbench/families/lap/batch_gpu.py; its
// `sap_reference` is a numpy transcription of lap_batch_solve below, step for step (the
// same tie-breaking and the same floating-point operations in the same order), so that
// the algorithm is tested on machines without a GPU and the kernel can be checked against
// it bit for bit on one.
//
// Layout. The instances of one launch lie back to back in C (row-major, instance k at
// element meta[k].cost_off, n = meta[k].n); the answers go to r2c/u/v at meta[k].vec_off
// (n entries each) and to stats[k] (Dijkstra steps, error code, rows the greedy start
// assigned). Costs are int32, int64, float32 or float64; duals are exact int64 for integer
// costs and float64 for float costs, the dtypes the LAP verifier certifies in
// (matchbench/families/lap/problem.py).
//
// Block. Thread t owns the columns j = t, t + T, t + 2T, ... (T = blockDim.x, a multiple
// of 32). Column state (v, the shortest-path distances sp, the predecessor rows path, the
// assigned rows row4col and the scanned flags sc) and row state (u, col4row) live in
// dynamic shared memory, carved by lap_batch_smem; with SMEM the cost matrix is copied
// there too, else it is read from global memory, one coalesced row per Dijkstra step.
// Inside a Dijkstra step a thread touches only its own columns' state; the one block-wide
// exchange is the argmin (warp shuffles, then one __syncthreads over the warps' minima,
// double-buffered so that the next step needs no second barrier). Every loop that contains
// a barrier runs on block-uniform values (n, cur, the broadcast argmin), so all threads
// reach every __syncthreads.
#include "common.cuh"

// stats[k][1] codes (0: solved); kept in step with KERNEL_ERRORS in lap_batch.py.
#define LAP_BATCH_E_NOCOL 1  // a Dijkstra step found no unscanned column (cannot happen)
#define LAP_BATCH_E_STEPS 2  // an augmentation took more than n Dijkstra steps (cannot happen)
#define LAP_BATCH_E_WALK 3   // the augmentation walk did not reach its root in n steps (cannot happen)

struct lap_batch_meta {
  long long cost_off;  // first cost of the instance in C (elements)
  long long vec_off;   // first entry of its r2c, u, v
  long long n;         // rows = columns
};

template <typename T>
struct lap_batch_limits;
template <>
struct lap_batch_limits<long long> {
  // Above every distance of an instance the LAP validator admits; never used in arithmetic.
  __device__ static long long inf() { return 0x7fffffffffffffffLL; }
};
template <>
struct lap_batch_limits<double> {
  __device__ static double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
};

// Tie-break key of column j: unassigned columns first (a tie then ends the search at a
// sink, as Crouse's "select one which gives us a new sink node"), then the lowest index.
// No key reaches NO_KEY, the key of "no unscanned column".
#define LAP_BATCH_NO_KEY 0x7fffffff
__device__ __forceinline__ int lap_batch_key(int j, int assigned_row) {
  return (assigned_row != -1 ? (1 << 30) : 0) | j;
}

// A cost, from shared memory (SMEM) or through the read-only cache.
template <bool SMEM, typename cost_t>
__device__ __forceinline__ cost_t lap_batch_load(const cost_t* p) {
  if constexpr (SMEM)
    return *p;
  else
    return __ldg(p);
}

template <typename D>
__device__ __forceinline__ void lap_batch_take_min(D& bv, int& bk, D ov, int ok) {
  if (ov < bv || (ov == bv && ok < bk)) {
    bv = ov;
    bk = ok;
  }
}

// Block-wide argmin of (bv, bk) in lexicographic order; every thread gets the result.
// Keys are distinct (column indices), so the order is total and the result does not depend
// on the reduction tree. One __syncthreads; the warps' minima go to slot `parity` of the
// double buffer (rv, rk), 32 entries each: the slot written here is written again two calls
// later, after every thread has passed the barrier of the call in between, hence after it
// has read this call's entries.
template <typename D>
__device__ __forceinline__ void lap_batch_argmin(D& bv, int& bk, D* rv, int* rk, int parity) {
  for (int o = 16; o > 0; o >>= 1)
    lap_batch_take_min(bv, bk, __shfl_xor_sync(0xffffffffu, bv, o),
                       __shfl_xor_sync(0xffffffffu, bk, o));
  const int nw = blockDim.x >> 5;
  if (nw == 1) return;  // block-uniform: one warp needs no barrier
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  D* sv = rv + parity * 32;
  int* sk = rk + parity * 32;
  if (lane == 0) {
    sv[warp] = bv;
    sk[warp] = bk;
  }
  __syncthreads();
  bv = lane < nw ? sv[lane] : lap_batch_limits<D>::inf();
  bk = lane < nw ? sk[lane] : LAP_BATCH_NO_KEY;
  // Lanes >= nw hold the neutral element, so the butterfly over the offsets o < nw leaves
  // the minimum in lanes 0 .. P - 1 (P: nw rounded up to a power of two); lane 0 tells all.
  for (int o = 16; o > 0; o >>= 1)
    if (o < nw)
      lap_batch_take_min(bv, bk, __shfl_xor_sync(0xffffffffu, bv, o),
                         __shfl_xor_sync(0xffffffffu, bk, o));
  bv = __shfl_sync(0xffffffffu, bv, 0);
  bk = __shfl_sync(0xffffffffu, bk, 0);
}

// Dynamic shared memory of one block for an instance of size n (the host's
// lap_batch.smem_bytes computes the same sum for the largest n of a launch):
//   D:      u[n], v[n], sp[n], rv[64]
//   cost_t: Cs[n * n]                 (SMEM only)
//   int:    path[n], row4col[n], col4row[n], rk[64]
//   char:   sc[n]
// 8-byte types first, so every array is aligned to its element size.
template <typename cost_t, typename D, bool SMEM>
struct lap_batch_smem {
  D *u, *v, *sp, *rv;
  cost_t* Cs;
  int *path, *row4col, *col4row, *rk;
  char* sc;
  __device__ explicit lap_batch_smem(char* base, int n) {
    u = (D*)base;
    v = u + n;
    sp = v + n;
    rv = sp + n;
    char* p = (char*)(rv + 64);
    Cs = (cost_t*)p;
    if (SMEM) p += (size_t)n * n * sizeof(cost_t);
    path = (int*)p;
    row4col = path + n;
    col4row = row4col + n;
    rk = col4row + n;
    sc = (char*)(rk + 64);
  }
};

// Jonker & Volgenant 1987 (the column reduction of its initialization, without the
// reduction transfer and augmenting row reduction) followed by the shortest augmenting path method of Crouse 2016,
// Alg. 4 (the Dijkstra search) and Alg. 3 lines 8-13 (the dual update), for the instance
// of this block. Race argument: between two barriers each column's state is written only
// by its owner thread; u[i] of the scanned row is read by all threads and written only in
// the dual update, which follows the last step's argmin barrier; row4col, col4row and path
// are changed only by thread 0's augmentation walk, between two barriers.
template <typename cost_t, typename D, bool SMEM>
__device__ void lap_batch_solve(const cost_t* __restrict__ C, const lap_batch_meta* __restrict__ meta,
                                int* __restrict__ r2c, D* __restrict__ u_out,
                                D* __restrict__ v_out, long long* __restrict__ stats) {
  extern __shared__ __align__(16) char lap_batch_shared[];
  const lap_batch_meta m = meta[blockIdx.x];
  const int n = (int)m.n;
  const int tid = threadIdx.x, T = blockDim.x;
  const D INF = lap_batch_limits<D>::inf();
  lap_batch_smem<cost_t, D, SMEM> s(lap_batch_shared, n);
  const cost_t* __restrict__ Cg = C + m.cost_off;
  if (SMEM) {
    for (int e = tid; e < n * n; e += T) s.Cs[e] = lap_batch_load<false>(&Cg[e]);
    __syncthreads();
  }
  const cost_t* __restrict__ Cm = SMEM ? s.Cs : Cg;

  // Column reduction: v_j = min_i c_ij, reached first at row path[j] (the lowest such i);
  // u = 0. Every reduced cost c_ij - u_i - v_j is then >= 0, as the search needs.
  for (int j = tid; j < n; j += T) {
    D best = (D)lap_batch_load<SMEM>(&Cm[j]);
    int arg = 0;
    for (int i = 1; i < n; ++i) {
      const D c = (D)lap_batch_load<SMEM>(&Cm[(long long)i * n + j]);
      if (c < best) {
        best = c;
        arg = i;
      }
    }
    s.v[j] = best;
    s.path[j] = arg;
    s.row4col[j] = -1;
  }
  for (int i = tid; i < n; i += T) {
    s.u[i] = (D)0;
    s.col4row[i] = -1;
  }
  __syncthreads();
  // JV's greedy step: column j takes its minimum row when that row is still free; the pair
  // is tight (c_ij - 0 - v_j = 0). Sequential, in column order (as the reference).
  int initial = 0;  // thread 0's count
  if (tid == 0) {
    for (int j = 0; j < n; ++j) {
      const int i = s.path[j];
      if (s.col4row[i] == -1) {
        s.col4row[i] = j;
        s.row4col[j] = i;
        ++initial;
      }
    }
  }
  __syncthreads();

  long long steps = 0;
  int err = 0, walk_err = 0;  // err is block-uniform; walk_err is thread 0's
  int parity = 0;
  for (int cur = 0; cur < n; ++cur) {
    if (s.col4row[cur] != -1) continue;  // block-uniform: written before the last barrier
    for (int j = tid; j < n; j += T) {
      s.sp[j] = INF;
      s.sc[j] = 0;
    }
    // Dijkstra from row cur over the reduced costs (Crouse 2016, Alg. 4). minv is the
    // distance of the last column scanned; i the row being scanned.
    D minv = (D)0;
    int i = cur, sink = -1, k = 0;
    while (sink < 0) {  // block-uniform: sink and i come from the broadcast argmin
      ++steps;
      if (++k > n) {  // each step scans a new column, and an unassigned one ends the search
        err = LAP_BATCH_E_STEPS;
        break;
      }
      const D ui = s.u[i];
      const cost_t* __restrict__ Ci = Cm + (long long)i * n;
      D bv = INF;
      int bk = LAP_BATCH_NO_KEY;
      for (int j = tid; j < n; j += T) {
        if (s.sc[j]) continue;
        const D c = (D)lap_batch_load<SMEM>(&Ci[j]);
        const D r = minv + c - ui - s.v[j];  // same order as the reference: ((minv + c) - ui) - v
        D sj = s.sp[j];
        if (r < sj) {
          sj = r;
          s.sp[j] = r;
          s.path[j] = i;
        }
        lap_batch_take_min(bv, bk, sj, lap_batch_key(j, s.row4col[j]));
      }
      lap_batch_argmin(bv, bk, s.rv, s.rk, parity);
      parity ^= 1;
      if (bk == LAP_BATCH_NO_KEY) {
        err = LAP_BATCH_E_NOCOL;
        break;
      }
      const int j = bk & ((1 << 30) - 1);
      minv = bv;
      if (j % T == tid) s.sc[j] = 1;  // its owner
      const int r = s.row4col[j];
      if (r == -1)
        sink = j;
      else
        i = r;
    }
    if (err) break;  // block-uniform
    // Dual update (Crouse 2016, Alg. 3): u_cur += minv; for each scanned column j,
    // d = minv - sp_j: v_j -= d and its assigned row (a scanned row) gets u += d. cur is
    // unassigned, so no thread writes its u but thread 0.
    if (tid == 0) s.u[cur] += minv;
    for (int j = tid; j < n; j += T) {
      if (!s.sc[j]) continue;
      const D d = minv - s.sp[j];
      s.v[j] -= d;
      const int r = s.row4col[j];
      if (r != -1) s.u[r] += d;
    }
    __syncthreads();
    // Augment along the predecessors from the sink back to cur.
    if (tid == 0) {
      int j = sink, t = 0;
      for (; t < n; ++t) {  // the path alternates; it holds at most n columns
        const int r = s.path[j];
        s.row4col[j] = r;
        const int nxt = s.col4row[r];
        s.col4row[r] = j;
        j = nxt;
        if (r == cur) break;
      }
      if (t == n) walk_err = LAP_BATCH_E_WALK;
    }
    __syncthreads();
  }

  const long long o = m.vec_off;
  for (int t = tid; t < n; t += T) {
    r2c[o + t] = s.col4row[t];
    u_out[o + t] = s.u[t];
    v_out[o + t] = s.v[t];
  }
  if (tid == 0) {
    long long* st = stats + 3 * (long long)blockIdx.x;
    st[0] = steps;
    st[1] = err ? err : walk_err;
    st[2] = initial;
  }
}

// One entry point per cost dtype and cost placement (the host picks it per group of
// instances): lap_batch_sap_<dtype> reads the costs from global memory,
// lap_batch_sap_smem_<dtype> first copies each instance's matrix into shared memory.
// __launch_bounds__(1024): any block size the host allows launches (ptxas keeps the
// registers at <= 64 per thread: no spills at sm_90, a few bytes in some sm_80 builds).
#define LAP_BATCH_ENTRY(NAME, COST, DUAL, SMEM)                                              \
  extern "C" __global__ void __launch_bounds__(1024) NAME(const COST* __restrict__ C,      \
                                  const lap_batch_meta* __restrict__ meta, int* r2c,         \
                                  DUAL* u_out, DUAL* v_out, long long* stats) {              \
    lap_batch_solve<COST, DUAL, SMEM>(C, meta, r2c, u_out, v_out, stats);                    \
  }

LAP_BATCH_ENTRY(lap_batch_sap_i32, int, long long, false)
LAP_BATCH_ENTRY(lap_batch_sap_i64, long long, long long, false)
LAP_BATCH_ENTRY(lap_batch_sap_f32, float, double, false)
LAP_BATCH_ENTRY(lap_batch_sap_f64, double, double, false)
LAP_BATCH_ENTRY(lap_batch_sap_smem_i32, int, long long, true)
LAP_BATCH_ENTRY(lap_batch_sap_smem_i64, long long, long long, true)
LAP_BATCH_ENTRY(lap_batch_sap_smem_f32, float, double, true)
LAP_BATCH_ENTRY(lap_batch_sap_smem_f64, double, double, true)

// ---- A stack already on the device: matchbench.lap.solve_batch (families/lap/api.py) ----
// Around the one launch above, three small kernels keep the call at the kernel's own
// cost: the launch's meta rows made on the device (no host table to copy up), the
// answers finished in one pass (the int64 assignment and the objective from the caller's
// costs, a warp per problem), and, for float costs, the value check as one read of the
// stack. None of them is part of the papers' algorithm.

// meta[k] = {k n^2, k n, n} for the back-to-back (B, n, n) stack; *first_bad = B (no
// failed block yet: lap_batch_finish lowers it to the first failed problem's index).
extern "C" __global__ void lap_batch_stack_meta(lap_batch_meta* meta, long long B, long long n,
                                                unsigned long long* first_bad) {
  MB_GRID_STRIDE(k, B) {
    meta[k].cost_off = k * n * n;
    meta[k].vec_off = k * n;
    meta[k].n = n;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *first_bad = (unsigned long long)B;
}

// Problem k (one warp; blockDim a multiple of 32): assign[k, i] = r2c[k, i] for its r
// real rows (r2c rows have stride N, the padded square size), objective[k] = the sum of
// W[k, i, assign[k, i]] over the caller's (B, r, s) costs W, in the dual type (exact int64
// for integer costs). A problem whose block reported an error (stats[k, 1] != 0) lowers
// *first_bad to k; its column indices are not trusted (out-of-range ones add nothing).
template <typename cost_t, typename D>
__device__ __forceinline__ void lap_batch_finish(const cost_t* __restrict__ W,
                                                 const int* __restrict__ r2c,
                                                 const long long* __restrict__ stats, long long B,
                                                 long long r, long long s, long long N,
                                                 long long* assign, D* objective,
                                                 unsigned long long* first_bad) {
  const int lane = threadIdx.x & 31;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  // k is the same for the 32 lanes of a warp, so the shuffles below see whole warps
  for (long long k = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; k < B; k += warps) {
    const cost_t* Wk = W + k * r * s;
    D acc = 0;
    for (long long i = lane; i < r; i += 32) {
      const int j = r2c[k * N + i];
      assign[k * r + i] = j;
      if (j >= 0 && j < s) acc += (D)Wk[i * s + j];
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) {
      objective[k] = acc;
      if (stats[3 * k + 1] != 0) atomicMin(first_bad, (unsigned long long)k);
    }
  }
}

#define LAP_BATCH_FINISH(NAME, COST, DUAL)                                                    \
  extern "C" __global__ void NAME(const COST* W, const int* r2c, const long long* stats,    \
                                  long long B, long long r, long long s, long long N,          \
                                  long long* assign, DUAL* objective,                         \
                                  unsigned long long* first_bad) {                            \
    lap_batch_finish<COST, DUAL>(W, r2c, stats, B, r, s, N, assign, objective, first_bad);   \
  }

LAP_BATCH_FINISH(lap_batch_finish_i32, int, long long)
LAP_BATCH_FINISH(lap_batch_finish_i64, long long, long long)
LAP_BATCH_FINISH(lap_batch_finish_f32, float, double)
LAP_BATCH_FINISH(lap_batch_finish_f64, double, double)

// top[k] = max |C[k, e]| over problem k's `per` costs, +inf if one is not finite; one
// block per problem (blockDim a multiple of 32, at most 1024).
template <typename T>
__device__ __forceinline__ void lap_batch_absmax(const T* __restrict__ C, long long per,
                                                 double* top) {
  __shared__ double warp_max[32];
  const double inf = __longlong_as_double(0x7ff0000000000000LL);
  const T* Ck = C + (long long)blockIdx.x * per;
  double m = 0.0;
  for (long long e = threadIdx.x; e < per; e += blockDim.x) {
    const double x = (double)Ck[e];
    m = fmax(m, isfinite(x) ? fabs(x) : inf);
  }
  for (int o = 16; o > 0; o >>= 1) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if (lane == 0) warp_max[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < nw ? warp_max[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) m = fmax(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) top[blockIdx.x] = m;
  }
}

extern "C" __global__ void lap_batch_absmax_f32(const float* C, long long per, double* top) {
  lap_batch_absmax<float>(C, per, top);
}
extern "C" __global__ void lap_batch_absmax_f64(const double* C, long long per, double* top) {
  lap_batch_absmax<double>(C, per, top);
}
