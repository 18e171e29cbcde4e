// The mwpm family's certificate on the GPU (matchbench/families/mwpm/problem.py, item 3): the
// exhaustive local-optimality check of a perfect matching, for large n where the CPU scan
// takes minutes (n^2 / 8 pairs of matched edges). Written apart from the solvers' kernels
// (kernels/mwpm/roma.cu) and over a different enumeration: the matched edges listed once,
// (lo[p], hi[p]) with lo[p] < hi[p] in ascending lo, and every pair p < q visited once.
//
// For a pair, with u, mu = lo[p], hi[p] and x, mx = lo[q], hi[q] (float64 sums of float32
// weights, the CPU check's expression bit for bit):
//   cur = mw[p] + mw[q],  w1 = w[u, x] + w[mu, mx],  w2 = w[u, mx] + w[mu, x]
//   gain = max(w1, w2) - cur
// Outputs per p: best[p] the largest gain over q > p (-inf if none), arg[p] its first q, and
// cnt[p] the number of q with gain > tol. Offsets into w are 64-bit (n*n passes 2^31).

#include "common.cuh"

#define MWPM_INF __longlong_as_double(0x7ff0000000000000ll)

extern "C" __global__ void mwpm_flip_scan(const float* __restrict__ w,
                                          const long long* __restrict__ lo,
                                          const long long* __restrict__ hi,
                                          const double* __restrict__ mw, long long m,
                                          long long n, double tol, double* best,
                                          long long* arg, unsigned long long* cnt) {
  __shared__ double s_g[32];
  __shared__ long long s_q[32];
  __shared__ unsigned long long s_c[32];
  for (long long p = blockIdx.x; p < m; p += gridDim.x) {
    const long long u = lo[p], mu = hi[p];
    const float* wu = w + u * n;
    const float* wmu = w + mu * n;
    const double mwp = mw[p];
    double bg = -MWPM_INF;
    long long bq = -1;
    unsigned long long c = 0;
    for (long long q = p + 1 + threadIdx.x; q < m; q += blockDim.x) {
      const long long x = lo[q], mx = hi[q];
      const double cur = mwp + mw[q];
      const double w1 = (double)wu[x] + (double)wmu[mx];
      const double w2 = (double)wu[mx] + (double)wmu[x];
      const double g = (w1 > w2 ? w1 : w2) - cur;
      if (g > tol) ++c;
      if (g > bg) { bg = g; bq = q; }  // ascending q per thread: the first of equal gains
    }
    for (int off = 16; off > 0; off >>= 1) {
      const double g2 = __shfl_down_sync(0xffffffffu, bg, off);
      const long long q2 = __shfl_down_sync(0xffffffffu, bq, off);
      c += __shfl_down_sync(0xffffffffu, c, off);
      if (q2 >= 0 && (bq < 0 || g2 > bg || (g2 == bg && q2 < bq))) { bg = g2; bq = q2; }
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int nwarps = (blockDim.x + 31) >> 5;
    if (lane == 0) { s_g[warp] = bg; s_q[warp] = bq; s_c[warp] = c; }
    __syncthreads();
    if (warp == 0) {
      bg = lane < nwarps ? s_g[lane] : -MWPM_INF;
      bq = lane < nwarps ? s_q[lane] : -1;
      c = lane < nwarps ? s_c[lane] : 0;
      for (int off = 16; off > 0; off >>= 1) {
        const double g2 = __shfl_down_sync(0xffffffffu, bg, off);
        const long long q2 = __shfl_down_sync(0xffffffffu, bq, off);
        c += __shfl_down_sync(0xffffffffu, c, off);
        if (q2 >= 0 && (bq < 0 || g2 > bg || (g2 == bg && q2 < bq))) { bg = g2; bq = q2; }
      }
      if (lane == 0) { best[p] = bg; arg[p] = bq; cnt[p] = c; }
    }
    __syncthreads();  // s_* are reused by the next p
  }
}
