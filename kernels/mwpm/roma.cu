// Parallel ROMA on complete graphs (the mwpm family): Hovland, "Maximum weighted matching on a
// GPU", MSc thesis, Bergen 2020, Chapter 4.
//
//   roma_phase1   Alg. 6: a thread per vertex u with u < M[u] (so one per matched edge), the
//                 serial scan of Alg. 5 over the other matched edges, then atomicFlip.
//   roma_phase2   Alg. 8: a block per vertex u with u < M[u]; its threads scan the matched
//                 edges block-strided (line 21: x += blockDim.x, the text's "x != blockDim.x"
//                 slip), each keeping its best (a, b, gain); a block reduction (line 23);
//                 thread 0 calls atomicFlip and gives up if it fails (line 26; the thesis's
//                 choice, Sec. 4.1.2: wait for the next phase).
//   roma_flip     Alg. 7 (atomicFlip), shared by both.
//
// The host loop (Alg. 9) is matchbench/families/mwpm/roma_gpu.py: a launch per phase, the flip
// counter read back after each one, stop at a phase without flips or after k phases.
//
// Weights and indexing. w is the n x n row-major float32 matrix; w[i * n + j] passes 2^31
// from n = 46341, so every offset is computed in 64 bits (long long) from the row start.
// Vertices (and the mate array M) are int: n <= 2^31 - 1 is far above what fits (n^2 floats).
// Gains are computed in double from the float32 weights, with the same expression as the
// sequential numba reference (matchbench/families/mwpm/roma.py, Alg. 5):
//   currentWeight = w[u, M[u]] + w[x, M[x]]            (Alg. 8 line 10)
//   w1 = w[u, x] + w[M[u], M[x]],  w2 = w[u, M[x]] + w[M[u], x]   (lines 11-12)
//   w1 > w2 ? gain = w1 - currentWeight : gain = w2 - currentWeight   (lines 13-19)
// so a flip found on the GPU gains exactly what the CPU computes for it, and the
// convergence claim (no flip above the threshold) means the same on both.
//
// The gain threshold: a thread's best starts at `threshold` (Alg. 8 line 5 with maxGain = 0,
// raised to the threshold; Sec. 5.5.4 uses 1e-5), so only flips gaining more are attempted
// (line 25: maxGain > 0 becomes maxGain > threshold).
//
// atomicFlip and its correctness (Alg. 7, with one strengthened check)
// --------------------------------------------------------------------
// A matched edge is locked through its smaller endpoint. The thread that wants to flip its
// edge (u, mateU), u < mateU, with (x, M[x]), x < M[x], takes locks[min(u, x)] and then
// locks[max(u, x)] with atomicCAS(-1 -> u) (lines 2-4), gives up at the first failure and
// releases what it took (lines 9-10). Holding both, it checks that the two edges are still
// matched and flips them (lines 5-7); a __threadfence orders the flip before the release
// (line 8). Lemma 4.1.1: whenever an improving 4-cycle exists at the start of a phase, some
// flip of that phase succeeds (the holder of the highest first lock can always take its
// second, or whoever holds it flips). So a phase without flips is a matching without an
// improving flip, read from an unchanging M: the convergence claim, which the verifier
// checks exhaustively anyway.
//
// The text's check (line 6: mateU == M[u] and M[x] == max(a, b)) reads one endpoint of each
// edge. That leaves a window: the flip writes M[u], M[a], M[mateU], M[b] in turn, and the new
// edge (mateU, b) may have its smaller endpoint outside the two locks held (mateU < b, or b =
// M[x] < u). A block started mid-phase (blocks are scheduled as SMs free up) can read
// M[mateU] = b, lock mateU as the smaller end of "its" edge (mateU, b), pass the one-sided
// check, and write M[b] before this flip's own write of M[b] lands: an invalid matching. We
// check both endpoints of both edges instead (M[u] == mateU, M[mateU] == u, M[x] == mx,
// M[mx] == x). An edge whose two ends name each other is either an old edge, whose smaller
// end is locked by its flipper until the flip is complete, or a new edge whose two writes
// are both visible; the flipper writes neither end again, and a later write to either end
// is coherence-ordered after the value it observed. So every flip acts on edges of the
// current matching and M stays a perfect matching (tests: hundreds of instances at every
// block size, the matching checked after every phase). The check costs two loads per
// attempted flip; Lemma 4.1.1 is unchanged (in a phase without flips the checks pass).
//
// The acquire side: after both CAS succeed, a __threadfence orders the checks' loads after
// the locks; M is read through volatile pointers (the L2, coherent across SMs) everywhere.
// The scan's reads of M are unlocked and may be stale or mid-flip: that only affects which
// flip is attempted; the locked check decides whether it is applied. The gain of an applied
// flip is the one computed in the scan: both edges are unchanged, so are their four weights.
//
// stats[0] flips applied, stats[1] atomicFlip calls (attempted flips, Fig. 5.12's potential
// flips), stats[2] the sum of the applied flips' gains, as a double's bits (atomicAdd on
// double; its order varies, so the sum's last bits may: reporting only).

#include "common.cuh"

#define ROMA_FLIPS 0
#define ROMA_ATTEMPTS 1
#define ROMA_GAIN 2

// Alg. 7, atomicFlip(M, (a, b), u, mateU, locks): u gets a, mateU gets b. Returns true if
// the flip was applied.
__device__ __forceinline__ bool roma_flip(volatile int* M, int* locks, int a, int b, int u,
                                          int mateU, double gain, unsigned long long* stats) {
  const int x = min(a, b);   // line 1: the other edge's smaller endpoint
  const int mx = max(a, b);
  const int lo = min(u, x), hi = max(u, x);
  bool done = false;
  atomicAdd(&stats[ROMA_ATTEMPTS], 1ull);
  if (atomicCAS(&locks[lo], -1, u) == -1) {      // line 2
    if (atomicCAS(&locks[hi], -1, u) == -1) {    // lines 3-4
      __threadfence();  // acquire: read M after the locks (see the header)
      // line 6, both ends of both edges (the header's strengthened check)
      if (M[u] == mateU && M[mateU] == u && M[x] == mx && M[mx] == x) {
        M[u] = a;       // line 7: flip(M, (a, b), u), Alg. 4
        M[a] = u;
        M[mateU] = b;
        M[b] = mateU;
        done = true;
      }
      __threadfence();  // line 8: the flip is visible before the locks are released
      atomicExch(&locks[hi], -1);                // line 9
    }
    atomicExch(&locks[lo], -1);                  // line 10
  }
  if (done) {
    atomicAdd(&stats[ROMA_FLIPS], 1ull);
    atomicAdd(reinterpret_cast<double*>(&stats[ROMA_GAIN]), gain);
  }
  return done;
}

// Alg. 5's inner step for one candidate edge (x, mx), x < mx, of the edge (u, mu): raises
// (best, a, b) when a flip gains more (strictly: the first of equal gains in scan order).
__device__ __forceinline__ void roma_candidate(const float* __restrict__ wu,
                                               const float* __restrict__ wmu,
                                               const float* __restrict__ w, long long n,
                                               double w_umu, int x, int mx, double& best,
                                               int& a, int& b) {
  const double cur = w_umu + (double)__ldg(&w[(long long)x * n + mx]);  // line 10
  const double w1 = (double)__ldg(&wu[x]) + (double)__ldg(&wmu[mx]);    // line 11
  const double w2 = (double)__ldg(&wu[mx]) + (double)__ldg(&wmu[x]);    // line 12
  if (w1 > w2) {                                                         // lines 13-15
    const double g = w1 - cur;
    if (g > best) { best = g; a = x; b = mx; }
  } else {                                                               // lines 17-19
    const double g = w2 - cur;
    if (g > best) { best = g; a = mx; b = x; }
  }
}

// Alg. 6: one thread per vertex; the threads with u < M[u] augment their edge.
extern "C" __global__ void roma_phase1(const float* __restrict__ w, int* Mw, int* locks,
                                       long long n, double threshold,
                                       unsigned long long* stats) {
  volatile int* M = Mw;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // line 1
  if (t >= n) return;
  const int u = (int)t;
  const int mateU = M[u];
  if (!(u < mateU)) return;                                              // line 2
  // line 3: augLocks(G, M, u, M[u], locks), i.e. Alg. 5 with atomicFlip
  const float* wu = w + (long long)u * n;
  const float* wmu = w + (long long)mateU * n;
  const double w_umu = (double)__ldg(&wu[mateU]);
  double best = threshold;
  int a = -1, b = -1;
  for (int x = 0; x < (int)n; ++x) {
    const int mx = M[x];
    if (x == u || x == mateU || x > mx) continue;  // Alg. 5 line 4
    roma_candidate(wu, wmu, w, n, w_umu, x, mx, best, a, b);
  }
  if (a >= 0) roma_flip(M, locks, a, b, u, mateU, best, stats);
}

// Alg. 8: one block per vertex u; the block augments (u, M[u]) when u < M[u].
// `rescans`: after a failed atomicFlip, search the matched edges this many more times (the
// alternative of Sec. 4.1.2 measured in Fig. 5.7, "searching through the neighbors one more
// time"); 0 is the thesis's choice, wait for the next phase.
extern "C" __global__ void roma_phase2(const float* __restrict__ w, int* Mw, int* locks,
                                       long long n, double threshold,
                                       unsigned long long* stats, int rescans) {
  volatile int* M = Mw;
  __shared__ int s_mate, s_go;
  __shared__ double s_gain[32];
  __shared__ int s_a[32], s_b[32];
  const int u = blockIdx.x;                                              // line 1
  const unsigned full = 0xffffffffu;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int nwarps = (blockDim.x + 31) >> 5;
  for (int round = 0; round <= rescans; ++round) {
    if (threadIdx.x == 0) s_mate = M[u];                                 // line 2
    __syncthreads();
    const int mateU = s_mate;  // one value for the whole block
    if (!(u < mateU)) return;                                            // line 3
    const float* wu = w + (long long)u * n;
    const float* wmu = w + (long long)mateU * n;
    const double w_umu = (double)__ldg(&wu[mateU]);
    double best = threshold;                                             // line 5
    int a = -1, b = -1;
    for (long long xl = threadIdx.x; xl < n; xl += blockDim.x) {         // lines 6-21
      const int x = (int)xl;
      const int mx = M[x];
      if (x == u || x == mateU || x > mx) continue;                      // lines 7-8
      roma_candidate(wu, wmu, w, n, w_umu, x, mx, best, a, b);           // lines 10-19
    }
    // line 23: BlockReduce with the max on gains; equal gains go to the smaller scanned
    // edge (min(a, b)), the sequential scan's choice. Warp shuffles, then warp 0.
    for (int off = 16; off > 0; off >>= 1) {
      const double g2 = __shfl_down_sync(full, best, off);
      const int a2 = __shfl_down_sync(full, a, off);
      const int b2 = __shfl_down_sync(full, b, off);
      if (a2 >= 0 && (a < 0 || g2 > best || (g2 == best && min(a2, b2) < min(a, b)))) {
        best = g2; a = a2; b = b2;
      }
    }
    if (lane == 0) { s_gain[warp] = best; s_a[warp] = a; s_b[warp] = b; }
    __syncthreads();                                                     // line 24
    if (warp == 0) {
      best = lane < nwarps ? s_gain[lane] : threshold;
      a = lane < nwarps ? s_a[lane] : -1;
      b = lane < nwarps ? s_b[lane] : -1;
      for (int off = 16; off > 0; off >>= 1) {
        const double g2 = __shfl_down_sync(full, best, off);
        const int a2 = __shfl_down_sync(full, a, off);
        const int b2 = __shfl_down_sync(full, b, off);
        if (a2 >= 0 && (a < 0 || g2 > best || (g2 == best && min(a2, b2) < min(a, b)))) {
          best = g2; a = a2; b = b2;
        }
      }
      if (lane == 0) {  // lines 25-26; a rescan only after a failed flip
        s_go = a >= 0 && !roma_flip(M, locks, a, b, u, mateU, best, stats);
      }
    }
    __syncthreads();
    if (!s_go) return;
  }
}

// Instrumentation between phases (outside the timed region): is M a perfect matching with
// every lock released? bad[0] counts vertices v with M[v] out of range, M[v] == v or
// M[M[v]] != v; bad[1] counts locks still held.
extern "C" __global__ void roma_check(const int* __restrict__ M, const int* __restrict__ locks,
                                      long long n, unsigned long long* bad) {
  MB_GRID_STRIDE(v, n) {
    const int m = M[v];
    if (m < 0 || m >= n || m == v || M[m] != v) atomicAdd(&bad[0], 1ull);
    if (locks[v] != -1) atomicAdd(&bad[1], 1ull);
  }
}
