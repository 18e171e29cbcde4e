// Stable marriage on the GPU: McVitie-Wilson with one warp per man (mw_gpu).
//
// Manne, Naim, Lerring & Halappanavar, "On stable marriages and greedy matchings", CSC 2016
// (paper IV of Naim's 2017 thesis), the GPU version of McVitie-Wilson: a thread per man,
// the woman's current suitor updated by compare-and-swap, the displaced man continued by
// the same thread (McVitie-Wilson's recursion). Here:
//
// - The suitor word. S[w] (unsigned 64-bit) is (rank << 32) | man, where rank is the rank
//   (0 = best) that w gives the man, and all ones means free. Lower is better, so one
//   atomicMin replaces the paper's compare-and-swap loop: it installs the proposer exactly
//   when w prefers him, and returns the previous word, i.e. the man he displaced. Words are
//   unique (w ranks each man once), so there are no ties.
// - Hopeless proposals are skipped. S[w] only decreases, so a man who reads a word at or
//   below his own can never win w, now or later; he passes her without an atomic. This is
//   the test-and-test-and-set that keeps contention down: on the hard instance (every man
//   has the same list) the men that are already beaten only read the hot words, and only
//   a man who could still win issues an atomic.
// - Warp-cooperative search. A warp owns one man at a time and its 32 lanes read 32
//   consecutive entries of his list at once (a ballot finds the first woman he could win).
//   Lists of thousands of entries (the hard instance: n) are scanned 32 entries per step.
//
// - Master lists (the hard instances; smarriage_mw_master). Every man scans the same list,
//   so a woman sits at the same position p in every list, and her suitor word carries the
//   suitor's rank (the rank every woman gives him). The warp that displaces a man from the
//   woman at p therefore knows where he resumes (p + 1) and what his word is (the old word)
//   without a memory access, and it goes on with him at once, on the 32 suitor words it has
//   already read (a stale word is never below the current one, so a woman seen as hopeless
//   is hopeless; one wrongly seen as a candidate costs one failed atomicMin). There McVitie-
//   Wilson is an insertion sort (n^2/4 displacements, each one step down the common list),
//   and each displacement costs one atomic instead of three dependent L2 round trips (nxt,
//   the words, the atomic) and two fences.
//
// Invariants (the race argument). A man is active in exactly one warp at a time: in his
// own warp until he is accepted, then only in the warp whose atomicMin returned his word
// (unique). nxt[m], the position after the last woman he proposed to, is written only by
// the warp where he is active, before each atomic (fenced), and read by the warp that
// displaces him after its atomic (fenced, through L2). A man passes a woman only when she holds a better word,
// which she keeps or improves: so every woman a man passed is lost to him for good, and
// the final state is the man-optimal stable matching, as in the sequential algorithms.
#include "common.cuh"

#define SM_FULL 0xffffffffu
#define SM_FREE 0xffffffffffffffffull

// Slots of the stats array.
#define SM_PROPOSALS 0  // atomics issued (the solver reports them as "atomics")
#define SM_SCANNED 1    // women considered, hopeless ones included (reported as "proposals")
#define SM_DISPLACED 2

__device__ __forceinline__ unsigned long long sm_word(long long rank, mb_index man) {
  return ((unsigned long long)rank << 32) | (unsigned long long)(unsigned int)man;
}

extern "C" __global__ void smarriage_reset(unsigned long long* S, mb_index n_women,
                                          mb_index* nxt, mb_index n_men) {
  MB_GRID_STRIDE(i, n_women) S[i] = SM_FREE;
  MB_GRID_STRIDE(i, n_men) nxt[i] = 0;
}

// Master lists: every man's list is mlist[0 .. n_women) and mrank[m] is the rank every
// woman gives man m (the header's "master lists"). nxt is not used: a displaced man
// resumes after the position where he was displaced, which his displacer knows.
extern "C" __global__ void smarriage_mw_master(const mb_index* __restrict__ mlist,
                                              const int* __restrict__ mrank, mb_index n_men,
                                              mb_index n_women, unsigned long long* S,
                                              unsigned long long* stats) {
  const int lane = threadIdx.x & 31;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  const long long n = (long long)n_women;
  unsigned long long proposals = 0, scanned = 0, displaced = 0;
  for (long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; g < n_men;
       g += warps) {
    unsigned long long word = sm_word((long long)mrank[g], (mb_index)g);
    long long k = 0;       // the next position the current man considers
    long long cbase = -1;  // the chunk of positions [cbase, cbase + 32) the lanes hold
    mb_index w = 0;        // this lane's woman, mlist[cbase + lane]
    unsigned long long sw = 0;  // her suitor word when read (or since improved by us)
    while (k < n) {
      if (cbase < 0 || k >= cbase + 32) {  // read the next 32 positions
        cbase = k;
        const long long p = cbase + lane;
        if (p < n) {
          w = mlist[p];
          sw = __ldcg(S + w);
        }
      }
      const long long p = cbase + lane;
      const bool cand = p >= k && p < n && sw > word;  // not hopeless (as far as we know)
      const unsigned bal = __ballot_sync(SM_FULL, cand);
      if (bal == 0u) {
        const long long stop = min(cbase + 32, n);
        scanned += (unsigned long long)(stop - k);
        k = stop;
        continue;
      }
      const int f = __ffs(bal) - 1;
      scanned += (unsigned long long)(cbase + f - k + 1);
      ++proposals;
      unsigned long long old = 0;
      if (lane == f) {
        old = atomicMin(S + w, word);
        sw = old < word ? old : word;  // what she holds now (or better)
      }
      old = __shfl_sync(SM_FULL, old, f);
      k = cbase + f + 1;  // she is proposed to either way: never again
      if (old > word) {   // accepted
        if (old == SM_FREE) break;
        ++displaced;
        word = old;  // McVitie-Wilson: go on with the man displaced, from position k
      }
      // else: she took a better man between the read and the atomic; scan on
    }
    // k == n: the current man ends single (more men than women); nothing to record
  }
  if (lane == 0) {
    if (proposals) atomicAdd(stats + SM_PROPOSALS, proposals);
    if (scanned) atomicAdd(stats + SM_SCANNED, scanned);
    if (displaced) atomicAdd(stats + SM_DISPLACED, displaced);
  }
}

// Lists: man m's list is mlist[mptr[m] .. mptr[m+1]) and mrank[p] the rank the woman of
// entry p gives him. (master != 0 runs the same protocol on master lists, through nxt;
// smarriage_mw_master is the fast path for those.)
extern "C" __global__ void smarriage_mw(const mb_index* __restrict__ mptr,
                                       const mb_index* __restrict__ mlist,
                                       const int* __restrict__ mrank, int master,
                                       mb_index n_men, mb_index n_women,
                                       unsigned long long* S, mb_index* nxt,
                                       unsigned long long* stats) {
  const int lane = threadIdx.x & 31;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  unsigned long long proposals = 0, scanned = 0, displaced = 0;
  for (long long g = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; g < n_men;
       g += warps) {
    mb_index m = (mb_index)g;
    while (m >= 0) {  // McVitie-Wilson: carry on with every man this warp displaces
      const long long base = master ? 0 : (long long)mptr[m];
      const long long len = master ? (long long)n_women : (long long)mptr[m + 1] - base;
      __threadfence();  // acquire: nxt[m] was published before the atomic that handed m over
      long long k = (long long)__ldcg(nxt + m);
      mb_index next_man = -1;  // -1: m is accepted without displacing anyone, or single
      bool done = false;
      while (!done && k < len) {
        const long long kk = k + lane;
        bool cand = false;
        mb_index w = 0;
        unsigned long long word = 0;
        if (kk < len) {
          w = mlist[base + kk];
          word = sm_word(master ? (long long)mrank[m] : (long long)mrank[base + kk], m);
          cand = __ldcg(S + w) > word;  // not hopeless (yet)
        }
        const unsigned bal = __ballot_sync(SM_FULL, cand);
        if (bal == 0u) {
          scanned += (unsigned long long)min(32ll, len - k);
          k += 32;
          continue;
        }
        const int f = __ffs(bal) - 1;
        scanned += (unsigned long long)(f + 1);
        ++proposals;
        unsigned long long old = 0;
        if (lane == f) {
          // Publish where m resumes before the atomic that may make him someone else's
          // to continue: a warp that displaces m reads nxt[m] after its own atomic.
          nxt[m] = (mb_index)(kk + 1);
          __threadfence();
          old = atomicMin(S + w, word);
        }
        old = __shfl_sync(SM_FULL, old, f);
        const unsigned long long mine = __shfl_sync(SM_FULL, word, f);
        k += f + 1;  // she is proposed to either way: never again
        if (old > mine) {  // accepted
          done = true;
          if (old != SM_FREE) {
            next_man = (mb_index)(unsigned int)(old & 0xffffffffull);
            ++displaced;
          }
        }
        // else: she took a better man between the read and the atomic; scan on
      }
      // Single for good: no warp can hand m over any more, so this write races with none.
      // (An accepted man's nxt[m] was written before his atomic; writing it here could
      // overwrite the warp that has displaced him since.)
      if (!done && lane == 0) nxt[m] = (mb_index)k;
      __syncwarp();
      m = next_man;  // a displaced man resumes after the woman who left him
    }
  }
  if (lane == 0) {
    if (proposals) atomicAdd(stats + SM_PROPOSALS, proposals);
    if (scanned) atomicAdd(stats + SM_SCANNED, scanned);
    if (displaced) atomicAdd(stats + SM_DISPLACED, displaced);
  }
}

// wife[m] from the final suitor words (reads only).
extern "C" __global__ void smarriage_wives(const unsigned long long* __restrict__ S,
                                          mb_index n_women, mb_index* wife) {
  MB_GRID_STRIDE(i, n_women) {
    const unsigned long long s = S[i];
    if (s != SM_FREE) wife[(mb_index)(unsigned int)(s & 0xffffffffull)] = (mb_index)i;
  }
}
