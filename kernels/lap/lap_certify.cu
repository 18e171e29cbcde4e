// Dual feasibility of many LAP answers at once, in one pass over their cost stack: the
// O(n^2) part of the certificate of matchbench/families/lap/problem.py (_device_verdicts),
// whose O(n) parts (a permutation, slack on the assigned cells, primal = dual objective)
// are CuPy array operations there. Written apart from the solver's kernel (lap_batch.cu):
// it shares no code with what it checks.
//
// Date & Nagi 2016, Sec. 2, the dual constraints (6): u_i + v_j <= c_ij for every cell,
// here as c_ij - u_i - v_j >= 0 in exact int64 arithmetic (int32 costs; the caller checks
// |u|, |v| <= 2^61, so that no difference overflows).
//
// Layout: block (x, y) checks instance b = x's rows y*ROWS .. y*ROWS + ROWS - 1, each row
// by the block's threads over its columns (coalesced reads of the row). A violated cell
// sets bad[b] = 1 (a plain store: every writer writes 1).
#include "common.cuh"

#define LAP_CERTIFY_ROWS 8

extern "C" __global__ void lap_certify_dual_feasible_i32(const int* __restrict__ C,
                                                 const long long* __restrict__ u,
                                                 const long long* __restrict__ v,
                                                 long long B, long long n,
                                                 int* __restrict__ bad) {
  const long long b = blockIdx.x;
  if (b >= B) return;
  const long long row0 = (long long)blockIdx.y * LAP_CERTIFY_ROWS;
  const int* Cb = C + b * n * n;
  const long long* ub = u + b * n;
  const long long* vb = v + b * n;
  int violated = 0;
  for (long long i = row0; i < row0 + LAP_CERTIFY_ROWS && i < n; ++i) {
    const long long ui = ub[i];
    const int* row = Cb + i * n;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      violated |= ((long long)row[j] - ui - vb[j]) < 0;
    }
  }
  if (__syncthreads_or(violated) && threadIdx.x == 0) bad[b] = 1;
}
