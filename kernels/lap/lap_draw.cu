// Seeded LAP cost matrices drawn on the GPU, bit-identical to NumPy's
// `numpy.random.default_rng(seed).integers(0, hi + 1, size=(n, n), dtype=int32)`, the
// one-by-one generator `matchbench.families.lap.datasets.uniform` (int32 costs). The host
// driver is matchbench/families/lap/draw_gpu.py; it runs NumPy's SeedSequence mixing for
// every seed (vectorized) and hands this kernel the four 64-bit words that PCG64 seeds
// from; everything after that happens here. Nothing here is from a paper: these are the
// published definitions of the generators NumPy implements.
//
// PCG64 (O'Neill 2014, "PCG: a family of simple fast space-efficient statistically good
// algorithms for random number generation", the XSL-RR 128/64 member as NumPy's
// `pcg64.h`): a 128-bit LCG s' = s * MULT + inc, each 64-bit output
// rotr64(hi(s') ^ lo(s'), hi(s') >> 58) taken from the state after the step. Seeding
// (`pcg_setseq_128_srandom_r`): inc = (initseq << 1) | 1, s = 0, step, s += initstate,
// step, with initstate = words[0]:words[1] and initseq = words[2]:words[3] (high:low).
// `next_uint32` gives the low half of an output, then its high half.
//
// Bounded integers (`random_bounded_uint32_fill`, Lemire 2019, "Fast random integer
// generation in an interval", Alg. 5 as NumPy writes it): with r = hi + 1, a 32-bit draw x
// gives m = x * r (64-bit) and the value m >> 32, unless its low half is below
// (2^32 - r) mod r, which rejects x and draws again. A rejection shifts every later value
// of the instance by one draw; it is rare (r = 65: 61 in 2^32 draws), so the kernel
// flags the instance (flags[b] = 1) and the host draws that instance again with NumPy.
//
// Parallel layout. Block b draws instance b: its P = n*n values come from Q = ceil(P/2)
// outputs, output q giving values 2q and 2q+1. Thread t takes the outputs q = t, t + T,
// ...: it jumps the seeded state q + 1 steps ahead (Brown 1994, "Random number generation
// with arbitrary strides": an LCG's k-step map is again affine, found in O(log k)
// squarings, as `pcg_advance_lcg_128`), then T steps at a time with the T-step map.
#include "common.cuh"

struct u128 {
  unsigned long long hi, lo;
};

__device__ __forceinline__ u128 mul128(u128 a, u128 b) {
  u128 r;
  r.lo = a.lo * b.lo;
  r.hi = __umul64hi(a.lo, b.lo) + a.lo * b.hi + a.hi * b.lo;
  return r;
}

__device__ __forceinline__ u128 add128(u128 a, u128 b) {
  u128 r;
  r.lo = a.lo + b.lo;
  r.hi = a.hi + b.hi + (r.lo < a.lo ? 1ull : 0ull);
  return r;
}

// PCG_DEFAULT_MULTIPLIER_128 of pcg64.h
__device__ __forceinline__ u128 pcg_mult() {
  u128 m;
  m.hi = 2549297995355413924ull;
  m.lo = 4865540595714422341ull;
  return m;
}

// The affine map of `delta` steps: s -> s * (*mult) + (*plus) (pcg_advance_lcg_128).
__device__ void pcg_jump(unsigned long long delta, u128 inc, u128* mult, u128* plus) {
  u128 acc_mult = {0ull, 1ull}, acc_plus = {0ull, 0ull};
  u128 cur_mult = pcg_mult(), cur_plus = inc;
  const u128 one = {0ull, 1ull};
  while (delta > 0) {
    if (delta & 1ull) {
      acc_mult = mul128(acc_mult, cur_mult);
      acc_plus = add128(mul128(acc_plus, cur_mult), cur_plus);
    }
    cur_plus = mul128(add128(cur_mult, one), cur_plus);
    cur_mult = mul128(cur_mult, cur_mult);
    delta >>= 1;
  }
  *mult = acc_mult;
  *plus = acc_plus;
}

__device__ __forceinline__ unsigned long long pcg_output(u128 s) {
  const unsigned long long x = s.hi ^ s.lo;
  const unsigned int rot = (unsigned int)(s.hi >> 58);
  return (x >> rot) | (x << ((64u - rot) & 63u));
}

// The seeded state of PCG64 from four SeedSequence words w, and its increment *inc
// (pcg_setseq_128_srandom_r): inc = (initseq << 1) | 1; s = 0 * MULT + inc;
// s += initstate; s = s * MULT + inc.
__device__ __forceinline__ u128 pcg_seeded(const unsigned long long* w, u128* inc) {
  const u128 initstate = {w[0], w[1]}, initseq = {w[2], w[3]};
  inc->hi = (initseq.hi << 1) | (initseq.lo >> 63);
  inc->lo = (initseq.lo << 1) | 1ull;
  u128 s = add128(*inc, initstate);
  return add128(mul128(s, pcg_mult()), *inc);
}
// words: B x 4 SeedSequence words per instance (draw_gpu.seed_words); out: B x P int32;
// flags: B ints, set to 1 where a draw was rejected (the instance must be drawn again on
// the host). hi: the inclusive upper end, 0 < hi < 2^31.
extern "C" __global__ void lap_draw_uniform_i32(const unsigned long long* __restrict__ words,
                                                 long long B, long long P, unsigned int hi,
                                                 int* __restrict__ out, int* __restrict__ flags) {
  const unsigned int range = hi + 1u;                    // r = hi + 1 (rng_excl)
  const unsigned int threshold = (0xFFFFFFFFu - hi) % range;  // (2^32 - 1 - rng) mod r
  const long long Q = (P + 1) / 2;
  for (long long b = blockIdx.x; b < B; b += gridDim.x) {
    u128 inc;
    const u128 s = pcg_seeded(words + 4 * b, &inc);
    u128 m_first, p_first, m_step, p_step;
    pcg_jump((unsigned long long)threadIdx.x + 1ull, inc, &m_first, &p_first);
    pcg_jump((unsigned long long)blockDim.x, inc, &m_step, &p_step);
    u128 st = add128(mul128(s, m_first), p_first);  // the state after output threadIdx.x's step
    int rejected = 0;
    int* o = out + b * P;
    for (long long q = threadIdx.x; q < Q; q += blockDim.x) {
      const unsigned long long x = pcg_output(st);
      #pragma unroll
      for (int half = 0; half < 2; ++half) {
        const long long p = 2 * q + half;
        if (p < P) {
          const unsigned int x32 = half ? (unsigned int)(x >> 32) : (unsigned int)x;
          const unsigned long long m = (unsigned long long)x32 * range;
          rejected |= ((unsigned int)m < threshold);
          o[p] = (int)(m >> 32);
        }
      }
      st = add128(mul128(st, m_step), p_step);
    }
    if (__syncthreads_or(rejected) && threadIdx.x == 0) flags[b] = 1;
  }
}

// The raw 32-bit draws of the instances whose bounded draw was rejected (flags above):
// out[f * J + j] is draw j of instance idx[f] (the low half of PCG64 output j / 2 for
// even j, its high half for odd j), for j < J. The host driver keeps the accepted ones
// in order (Lemire's rule, as lap_draw_uniform_i32 applies it), which is the instance
// exactly as NumPy draws it, rejections included: value p is the p-th accepted draw.
// Same parallel layout as lap_draw_uniform_i32, one block per instance.
extern "C" __global__ void lap_draw_raw_u32(const unsigned long long* __restrict__ words,
                                            const long long* __restrict__ idx, long long F,
                                            long long J, unsigned int* __restrict__ out) {
  const long long Q = (J + 1) / 2;
  for (long long f = blockIdx.x; f < F; f += gridDim.x) {
    u128 inc;
    const u128 s = pcg_seeded(words + 4 * idx[f], &inc);
    u128 m_first, p_first, m_step, p_step;
    pcg_jump((unsigned long long)threadIdx.x + 1ull, inc, &m_first, &p_first);
    pcg_jump((unsigned long long)blockDim.x, inc, &m_step, &p_step);
    u128 st = add128(mul128(s, m_first), p_first);
    unsigned int* o = out + f * J;
    for (long long q = threadIdx.x; q < Q; q += blockDim.x) {
      const unsigned long long x = pcg_output(st);
      if (2 * q < J) o[2 * q] = (unsigned int)x;
      if (2 * q + 1 < J) o[2 * q + 1] = (unsigned int)(x >> 32);
      st = add128(mul128(st, m_step), p_step);
    }
  }
}
