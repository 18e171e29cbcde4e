// Half-approximate weighted matching on general graphs (b = 1): GPU Suitor and GPU
// locally-dominant. Both compute the greedy matching of the global edge order of
// matchbench/graphs/weighted.py edge_order_key, (w, max(u, v), min(u, v)), larger first.
//
// Edge ranks. The driver hands every CSR entry p the rank rank[p] in 1..m of its
// undirected edge in that order (the heaviest edge has rank m, the same from both
// directions), so "edge e precedes edge f" is the integer comparison rank(e) > rank(f) and
// ties follow the global order exactly. 0 means "no edge".
//
// The proposal word. S[v] (unsigned 64-bit) holds v's current suitor's offer:
//   int32 indices: (rank << 32) | suitor   (rank < 2^32, suitor < 2^31)
//   int64 indices: rank, the suitor being ends[rank - 1] ^ v (ends[r - 1] = u ^ v of the
//                  edge {u, v} of rank r)
// and 0 for "no suitor". In both layouts the word orders offers as their ranks do, so one
// atomicMax replaces the paper's lock/compare/set (Alg. 3 lines 19-25) and returns the
// previous offer, i.e. the displaced suitor.
#include "common.cuh"

#ifdef MB_INDEX64
typedef unsigned long long wm_rank;
#else
typedef unsigned int wm_rank;
#endif

#define WM_FULL 0xffffffffu

__device__ __forceinline__ wm_rank wm_word_rank(unsigned long long word) {
#ifdef MB_INDEX64
  return (wm_rank)word;
#else
  return (wm_rank)(word >> 32);
#endif
}

__device__ __forceinline__ unsigned long long wm_pack(wm_rank r, mb_index proposer) {
#ifdef MB_INDEX64
  (void)proposer;
  return (unsigned long long)r;
#else
  return ((unsigned long long)r << 32) | (unsigned long long)(unsigned int)proposer;
#endif
}

// The suitor held in word (non-zero) at vertex v.
__device__ __forceinline__ mb_index wm_proposer(unsigned long long word, mb_index v,
                                                const mb_index* __restrict__ ends) {
#ifdef MB_INDEX64
  return ends[word - 1] ^ v;
#else
  (void)v;
  (void)ends;
  return (mb_index)(unsigned int)(word & 0xffffffffull);
#endif
}

// S is read while other warps raise it: bypass L1 (not coherent across SMs) so that a
// vertex does not keep picking a neighbour on a stale offer forever.
__device__ __forceinline__ unsigned long long wm_load_word(const unsigned long long* S,
                                                           mb_index v) {
  return __ldcg(S + v);
}

// Variants (the paper's Sec. 4, "Synchronization and Load Balancing").
#define WM_NOSYNC 0
#define WM_SYNCNOLB 1
#define WM_SYNCLB 2
#define WM_HYBRID 3

// Slots of the stats array.
#define WM_PROPOSALS 0
#define WM_ITERATIONS 1
#define WM_DISPLACED 2
#define WM_REBALANCES 3

// One iteration of a warp over its queue q[0..cnt) (Alg. 4 lines 5-9), in groups of 32:
// the warp finds the best candidate of each vertex of the group in turn (lines 6-7: the
// lanes stride over adj(x), then a butterfly reduction), lane j keeping vertex j's; then
// every lane makes its vertex's proposal (line 8) and the unsuccessful vertices, the
// proposer itself when its partner already had a better offer (Alg. 3 lines 26-28, with
// next <- current) or the suitor it displaced (lines 21-23), are compacted to the front of
// q by a ballot prefix sum (line 9). A vertex with no eligible neighbour is done. Returns
// the new queue length (at most cnt: each vertex yields at most one).
// Race argument: S[v] only grows (atomicMax), so a stale read of S[v] during the scan can
// only make v look eligible when it is not, and the proposal then fails and is retried; a
// vertex is active in at most one queue, since only the atomic that displaces it (unique:
// it returns the word that held it) hands it to a queue.
__device__ int wm_suitor_iteration(mb_index* q, int cnt, const mb_index* __restrict__ ptr,
                                   const mb_index* __restrict__ ind,
                                   const wm_rank* __restrict__ rank,
                                   const mb_index* __restrict__ ends, unsigned long long* S,
                                   unsigned long long* stats) {
  const int lane = threadIdx.x & 31;
  const unsigned lt = (1u << lane) - 1u;
  int out = 0;
  for (int g = 0; g < cnt; g += 32) {
    const int k = min(32, cnt - g);
    mb_index my_x = -1, my_c = -1;
    wm_rank my_r = 0;
    if (lane < k) my_x = q[g + lane];
    for (int j = 0; j < k; ++j) {
      const mb_index x = __shfl_sync(WM_FULL, my_x, j);
      wm_rank best_r = 0;
      mb_index best_v = -1;
      const mb_index end = ptr[x + 1];
      for (mb_index p = ptr[x] + lane; p < end; p += 32) {
        const wm_rank r = rank[p];
        if (r > best_r) {
          const mb_index v = ind[p];
          // Alg. 3 line 14: (x, v) precedes v's current offer.
          if (r > wm_word_rank(wm_load_word(S, v))) {
            best_r = r;
            best_v = v;
          }
        }
      }
      // Ranks are unique per edge, so the maximum rank names the candidate.
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) {
        const wm_rank r2 = __shfl_xor_sync(WM_FULL, best_r, off);
        const mb_index v2 = __shfl_xor_sync(WM_FULL, best_v, off);
        if (r2 > best_r) {
          best_r = r2;
          best_v = v2;
        }
      }
      if (lane == j) {
        my_r = best_r;
        my_c = best_v;
      }
    }
    mb_index redo = -1;
    const bool proposes = lane < k && my_c >= 0;
    if (proposes) {
      const unsigned long long word = wm_pack(my_r, my_x);
      const unsigned long long old = atomicMax(S + my_c, word);
      if (old < word) {
        if (old != 0ull) redo = wm_proposer(old, my_c, ends);  // displaced suitor
      } else {
        redo = my_x;  // the partner got a better offer after the scan: search again
      }
    }
    const unsigned pm = __ballot_sync(WM_FULL, proposes);
    const unsigned dm = __ballot_sync(WM_FULL, proposes && redo >= 0 && redo != my_x);
    if (lane == 0 && pm) {
      atomicAdd(stats + WM_PROPOSALS, (unsigned long long)__popc(pm));
      if (dm) atomicAdd(stats + WM_DISPLACED, (unsigned long long)__popc(dm));
    }
    // All lanes have read q[g .. g + k) into registers; writes go below g + k.
    __syncwarp();
    const unsigned m = __ballot_sync(WM_FULL, redo >= 0);
    if (redo >= 0) q[out + __popc(m & lt)] = redo;
    out += __popc(m);
    __syncwarp();
  }
  return out;
}

// Even re-deal of the block's queued vertices over its warps when the largest queue is
// more than 25% above the average (the paper's SyncLB tolerance). Called by every thread
// of the block after the per-warp counts are in s_cnt; returns this warp's new count.
// Queues are copied to `pool` at their prefix offsets, then warp w takes the w-th
// contiguous slice (floor or ceil of the average, never above vertices_per_warp).
__device__ int wm_rebalance(mb_index* queues, mb_index* pool, int vpw, const int* s_cnt,
                            int nwarps, int warp, int cnt, unsigned long long* stats) {
  int total = 0, mx = 0, before = 0;
  for (int w = 0; w < nwarps; ++w) {
    const int c = s_cnt[w];
    total += c;
    mx = max(mx, c);
    if (w < warp) before += c;
  }
  // mx > 1.25 * total / nwarps, in integers; the same answer in every thread.
  if (total == 0 || 4ll * nwarps * mx <= 5ll * total) return cnt;
  const int lane = threadIdx.x & 31;
  mb_index* q = queues + (long long)warp * vpw;
  for (int i = lane; i < cnt; i += 32) pool[before + i] = q[i];
  __syncthreads();
  const int base = total / nwarps, extra = total % nwarps;
  const int mine = base + (warp < extra ? 1 : 0);
  const int start = warp * base + min(warp, extra);
  for (int i = lane; i < mine; i += 32) q[i] = pool[start + i];
  if (threadIdx.x == 0) atomicAdd(stats + WM_REBALANCES, 1ull);
  return mine;
}

// GPU-Suitor, Naim et al., HiPC 2015 (paper I of Naim's thesis), Alg. 4, b = 1.
// Warp i owns the chunk V_i = [i * vpw, (i + 1) * vpw) (line 2); its queue, in dynamic
// shared memory, starts as the chunk (initial phase) and then holds the unsuccessful
// vertices of the previous iteration (recurrent phase), until it is empty (line 3).
// variant: WM_NOSYNC, warps never wait for each other; WM_SYNCNOLB, the block's warps
// synchronize after every iteration and stop together; WM_SYNCLB, as SYNCNOLB and during
// the first lb_iters synchronized iterations the queued vertices are re-dealt among the
// block's warps (wm_rebalance); WM_HYBRID, re-deal during the first lb_iters iterations,
// then NoSync. Shared memory: nwarps * vpw indices (twice that for SYNCLB and HYBRID).
// Race argument: see wm_suitor_iteration; the block-level variants only move queue
// entries between warps of one block between two __syncthreads.
extern "C" __global__ void wmatch_suitor(const mb_index* __restrict__ ptr,
                                         const mb_index* __restrict__ ind,
                                         const wm_rank* __restrict__ rank,
                                         const mb_index* __restrict__ ends,
                                         unsigned long long* S, mb_index n, int vpw, int variant,
                                         int lb_iters, unsigned long long* stats) {
  extern __shared__ __align__(16) unsigned char wm_smem_raw[];
  mb_index* queues = reinterpret_cast<mb_index*>(wm_smem_raw);
  __shared__ int s_cnt[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  mb_index* q = queues + (long long)warp * vpw;
  mb_index* pool = queues + (long long)nwarps * vpw;

  // Initial phase: the chunk's vertex indices to the warp's shared memory.
  const long long first = ((long long)blockIdx.x * nwarps + warp) * vpw;
  int cnt = 0;
  if (first < (long long)n) cnt = (int)min((long long)vpw, (long long)n - first);
  for (int i = lane; i < cnt; i += 32) q[i] = (mb_index)(first + i);
  __syncwarp();

  int it = 0;
  if (variant != WM_NOSYNC) {
    for (;;) {
      cnt = wm_suitor_iteration(q, cnt, ptr, ind, rank, ends, S, stats);
      ++it;
      if (lane == 0) s_cnt[warp] = cnt;
      __syncthreads();
      int total = 0;
      for (int w = 0; w < nwarps; ++w) total += s_cnt[w];
      if (total == 0) break;  // block-uniform
      const bool lb = (variant == WM_SYNCLB || variant == WM_HYBRID) && it <= lb_iters;
      if (lb) cnt = wm_rebalance(queues, pool, vpw, s_cnt, nwarps, warp, cnt, stats);
      __syncthreads();  // s_cnt and the pool read before the next iteration writes them
      if (variant == WM_HYBRID && it >= lb_iters) break;  // then NoSync
    }
  }
  // NoSync (and the tail of Hybrid): this warp alone, until its queue is empty.
  while (cnt > 0) {
    cnt = wm_suitor_iteration(q, cnt, ptr, ind, rank, ends, S, stats);
    ++it;
  }
  if (lane == 0) atomicMax(stats + WM_ITERATIONS, (unsigned long long)it);
}

// The matching from the final offers: v is matched to its suitor u when v is u's suitor
// too (the Suitor invariant makes the final offers mutual; the test keeps a wrong answer
// a valid matching for the verifier to reject). Reads only.
extern "C" __global__ void wmatch_suitor_mate(const unsigned long long* __restrict__ S,
                                              const mb_index* __restrict__ ends, mb_index n,
                                              mb_index* __restrict__ mate) {
  MB_GRID_STRIDE(i, n) {
    const mb_index v = (mb_index)i;
    const unsigned long long wv = S[v];
    mb_index m = -1;
    if (wv != 0ull) {
      const mb_index u = wm_proposer(wv, v, ends);
      const unsigned long long wu = S[u];
      if (wu != 0ull && wm_proposer(wu, u, ends) == v) m = u;
    }
    mate[v] = m;
  }
}

// ---- GPU locally-dominant (Halappanavar et al.; paper I, Alg. 1-2, thread per vertex) ----

// Alg. 2 lines 2-8 for every vertex s of the round's queue (all vertices when all != 0):
// candidate[s] is s's first neighbour in the global order that is unmatched, -1 if none.
// Reads mate only (written by the next kernel), so every thread sees the same state.
extern "C" __global__ void wmatch_ld_candidate(const mb_index* __restrict__ ptr,
                                               const mb_index* __restrict__ ind,
                                               const wm_rank* __restrict__ rank,
                                               const mb_index* __restrict__ mate,
                                               const mb_index* __restrict__ queue,
                                               long long len, int all,
                                               mb_index* __restrict__ candidate) {
  MB_GRID_STRIDE(i, len) {
    const mb_index s = all ? (mb_index)i : queue[i];
    wm_rank best_r = 0;
    mb_index best = -1;
    for (mb_index p = ptr[s]; p < ptr[s + 1]; ++p) {
      const wm_rank r = rank[p];
      if (r > best_r) {
        const mb_index t = ind[p];
        if (mate[t] == -1) {
          best_r = r;
          best = t;
        }
      }
    }
    candidate[s] = best;
  }
}

// Alg. 2 lines 9-12: a vertex s whose candidate c points back is matched to it; the pair
// goes to `matched` (both ends). Race argument: mutual pairs are disjoint (candidate is a
// function), and when both ends are in the queue the compare-and-swap on the smaller
// end's mate lets exactly one of the two threads record the pair.
extern "C" __global__ void wmatch_ld_match(const mb_index* __restrict__ queue, long long len,
                                           int all, const mb_index* __restrict__ candidate,
                                           mb_index* mate, mb_index* matched,
                                           unsigned long long* n_matched) {
  MB_GRID_STRIDE(i, len) {
    const mb_index s = all ? (mb_index)i : queue[i];
    const mb_index c = candidate[s];
    bool won = false;
    mb_index lo = 0, hi = 0;
    if (c >= 0 && candidate[c] == s) {
      lo = min(s, c);
      hi = max(s, c);
      if (mb_cas(mate + lo, -1, hi) == -1) {
        mate[hi] = lo;
        won = true;
      }
    }
    if (won) {
      mb_append(matched, n_matched, lo);
      mb_append(matched, n_matched, hi);
    }
  }
}

// Alg. 1 lines 9-11: every unmatched neighbour v of a newly matched vertex x whose
// candidate was x must look again: it goes to the next queue. v's candidate is one vertex,
// so v is appended once; mate is not written during this kernel.
extern "C" __global__ void wmatch_ld_enqueue(const mb_index* __restrict__ ptr,
                                             const mb_index* __restrict__ ind,
                                             const mb_index* __restrict__ matched,
                                             const unsigned long long* __restrict__ n_matched,
                                             const mb_index* __restrict__ mate,
                                             const mb_index* __restrict__ candidate,
                                             mb_index* next, unsigned long long* n_next) {
  // The matched count is read on the device (a grid-stride launch of fixed size), so that
  // the host reads one number per round, the next queue's length.
  const long long len = (long long)*n_matched;
  MB_GRID_STRIDE(i, len) {
    const mb_index x = matched[i];
    for (mb_index p = ptr[x]; p < ptr[x + 1]; ++p) {
      const mb_index v = ind[p];
      if (mate[v] == -1 && candidate[v] == x) mb_append(next, n_next, v);
    }
  }
}

// ---- Edge ranks on the device -----------------------------------------------------------
//
// The driver sorts the forward entries (u < v) of the CSR by (w, v, u) ascending (two
// radix argsorts, or a lexsort) and hands their CSR positions `order` here: the k-th one
// gets rank k + 1 and ends[k] = u ^ v. Then every backward entry (u > v) copies the rank
// of its mirror (v, u), found by binary search in v's sorted row.

extern "C" __global__ void wmatch_rank_scatter(const long long* __restrict__ order, long long m,
                                               const mb_index* __restrict__ rows,
                                               const mb_index* __restrict__ ind,
                                               wm_rank* __restrict__ rank,
                                               mb_index* __restrict__ ends) {
  MB_GRID_STRIDE(k, m) {
    const long long p = order[k];
    rank[p] = (wm_rank)(k + 1);
    ends[k] = rows[p] ^ ind[p];
  }
}

extern "C" __global__ void wmatch_rank_mirror(const mb_index* __restrict__ ptr,
                                              const mb_index* __restrict__ ind,
                                              const mb_index* __restrict__ rows, long long nnz,
                                              wm_rank* __restrict__ rank) {
  MB_GRID_STRIDE(p, nnz) {
    const mb_index u = rows[p], v = ind[p];
    if (u > v) {
      mb_index lo = ptr[v], hi = ptr[v + 1];  // the first position in row v with ind >= u
      while (lo < hi) {
        const mb_index mid = lo + (hi - lo) / 2;
        if (ind[mid] < u) lo = mid + 1; else hi = mid;
      }
      rank[p] = rank[lo];  // the graph is symmetric: ind[lo] == u
    }
  }
}

// ---- b-Suitor (Khan, Pothen, Patwary, Halappanavar, Satish, Sundaram & Dubey, SISC 2016) --
//
// Each vertex v keeps its c(v) = min(b(v), deg(v)) best offers in the slots
// S[hoff[v] .. hoff[v+1]) (proposal words as above, 0 = empty slot). A proposal of x to v
// through an edge of rank r succeeds when the word (r, x) beats v's lowest slot (an empty
// one if there is one); it replaces that slot by compare-and-swap and the suitor it held,
// if any, is displaced and must propose again (b-Suitor's MakeSuitor recursion, here the
// proposing warp carries on with the displaced vertex, as Alg. 3's loop does for b = 1).
//
// Why no locks. (1) Slot words only grow (a slot is replaced only by a larger word), so a
// warp that reads the c(v) slots one by one and picks the minimum it saw, then swaps it
// out by CAS on exactly that value, replaced the true minimum at the moment of the CAS:
// every other slot held at least its observed value, which was >= the observed minimum.
// A failed CAS re-reads. (2) A vertex's proposals go down the global order: every edge
// above its latest proposal was proposed through already (and is still held, or was
// displaced: v's lowest offer only grows, so never again eligible) or was ineligible when
// it was passed over (v full with a better lowest offer: ineligible for good). So the
// state of x's search is one rank, last[x], and "x proposes to v at most once" holds
// without a per-edge flag. Two warps may search for x at once (x's own warp and one that
// displaced x); each claims its candidate by CAS on last[x] from the bound it searched
// below, so candidates are never shared. (3) thr[v] is a lower bound of v's lowest offer
// once v is full (0 before; all ones when c(v) = 0), raised by atomicMax from a snapshot
// minimum after each replacement; the scan skips v only when (r, x) is not above thr[v],
// and the CAS on the slots decides exactly. Final answer: x and v are matched when each
// holds the other's offer, which b-Suitor's invariant makes symmetric.

#define WM_BS_PROPOSALS 0
#define WM_BS_DISPLACED 1
#define WM_BS_RETRIES 2
#define WM_BS_CHAINS 3

#ifdef MB_INDEX64
#define WM_RANK_NONE 0xffffffffffffffffull
#else
#define WM_RANK_NONE 0xffffffffu
#endif

__device__ __forceinline__ wm_rank wm_load_rank(const wm_rank* a, mb_index i) {
  return __ldcg(a + i);
}

extern "C" __global__ void wmatch_bsuitor_reset(const mb_index* __restrict__ ptr,
                                                const int* __restrict__ b, mb_index n,
                                                const long long* __restrict__ hoff,
                                                unsigned long long* S,
                                                unsigned long long* thr, wm_rank* last) {
  MB_GRID_STRIDE(i, n) {
    const long long c = hoff[i + 1] - hoff[i];
    for (long long s = hoff[i]; s < hoff[i + 1]; ++s) S[s] = 0ull;
    thr[i] = c == 0 ? 0xffffffffffffffffull : 0ull;
    last[i] = WM_RANK_NONE;
  }
}

// A warp's search for x: the best edge (x, v) below last[x] whose word beats thr[v],
// claimed by CAS on last[x]. Returns the rank (0: x has no eligible edge left, for good)
// and sets *v_out.
__device__ wm_rank wm_bs_search(mb_index x, const mb_index* __restrict__ ptr,
                                const mb_index* __restrict__ ind,
                                const wm_rank* __restrict__ rank,
                                const unsigned long long* thr, wm_rank* last,
                                mb_index* v_out, unsigned long long* stats) {
  const int lane = threadIdx.x & 31;
  for (;;) {
    const wm_rank bound = wm_load_rank(last, x);
    wm_rank best_r = 0;
    mb_index best_v = -1;
    const mb_index end = ptr[x + 1];
    for (mb_index p = ptr[x] + lane; p < end; p += 32) {
      const wm_rank r = rank[p];
      if (r < bound && r > best_r) {
        const mb_index v = ind[p];
        if (wm_pack(r, x) > __ldcg(thr + v)) {
          best_r = r;
          best_v = v;
        }
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const wm_rank r2 = __shfl_xor_sync(WM_FULL, best_r, off);
      const mb_index v2 = __shfl_xor_sync(WM_FULL, best_v, off);
      if (r2 > best_r) {
        best_r = r2;
        best_v = v2;
      }
    }
    if (best_r == 0) return 0;
    wm_rank seen = 0;
    if (lane == 0) seen = atomicCAS(last + x, bound, best_r);
    seen = __shfl_sync(WM_FULL, seen, 0);
    if (seen == bound) {
      *v_out = best_v;
      return best_r;
    }
    if (lane == 0) atomicAdd(stats + WM_BS_RETRIES, 1ull);  // another warp moved last[x]
  }
}

// x offers word (rank r) to v. Returns 1 and *displaced (-1 for an empty slot) on
// success, 0 when v's lowest offer beats it.
__device__ int wm_bs_offer(mb_index v, unsigned long long word,
                           const long long* __restrict__ hoff,
                           const mb_index* __restrict__ ends, unsigned long long* S,
                           unsigned long long* thr, mb_index* displaced,
                           unsigned long long* stats) {
  const int lane = threadIdx.x & 31;
  const long long s0 = hoff[v], s1 = hoff[v + 1];
  for (;;) {
    unsigned long long lo_w = 0xffffffffffffffffull;
    long long lo_s = -1;
    for (long long s = s0 + lane; s < s1; s += 32) {
      const unsigned long long w = __ldcg(S + s);
      if (w < lo_w) {
        lo_w = w;
        lo_s = s;
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const unsigned long long w2 = __shfl_xor_sync(WM_FULL, lo_w, off);
      const long long s2 = __shfl_xor_sync(WM_FULL, lo_s, off);
      if (w2 < lo_w || (w2 == lo_w && s2 >= 0 && (lo_s < 0 || s2 < lo_s))) {
        lo_w = w2;
        lo_s = s2;
      }
    }
    if (lo_s < 0 || word <= lo_w) return 0;  // no slot, or every held offer is better
    unsigned long long seen = 0;
    if (lane == 0) seen = atomicCAS(S + lo_s, lo_w, word);
    seen = __shfl_sync(WM_FULL, seen, 0);
    if (seen != lo_w) {
      if (lane == 0) atomicAdd(stats + WM_BS_RETRIES, 1ull);
      continue;
    }
    // The new lowest offer (a snapshot, hence a lower bound) raises thr[v] once v is full.
    unsigned long long m = 0xffffffffffffffffull;
    for (long long s = s0 + lane; s < s1; s += 32) m = min(m, __ldcg(S + s));
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = min(m, __shfl_xor_sync(WM_FULL, m, off));
    if (lane == 0 && m != 0ull) atomicMax(thr + v, m);
    *displaced = lo_w == 0ull ? (mb_index)-1 : wm_proposer(lo_w, v, ends);
    return 1;
  }
}

// b-Suitor, a warp per vertex u (grid-stride over the vertices): u seeks up to b(u)
// partners; each seek is a chain of proposals, carried on with each displaced suitor
// (MakeSuitor), that ends with a proposal into an empty slot or a vertex that has no
// eligible edge left.
extern "C" __global__ void wmatch_bsuitor(const mb_index* __restrict__ ptr,
                                          const mb_index* __restrict__ ind,
                                          const wm_rank* __restrict__ rank,
                                          const mb_index* __restrict__ ends,
                                          const int* __restrict__ b,
                                          const long long* __restrict__ hoff,
                                          unsigned long long* S, unsigned long long* thr,
                                          wm_rank* last, mb_index n,
                                          unsigned long long* stats) {
  const int lane = threadIdx.x & 31;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  unsigned long long proposals = 0, displaced_n = 0, chains = 0;
  for (long long wu = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; wu < n;
       wu += warps) {
    const mb_index u = (mb_index)wu;
    const int bu = b[u];
    for (int i = 0; i < bu; ++i) {
      mb_index x = u;
      bool u_done = false;
      ++chains;
      while (x >= 0) {
        mb_index v = -1;
        const wm_rank r = wm_bs_search(x, ptr, ind, rank, thr, last, &v, stats);
        if (r == 0) {  // x has no eligible edge left: its seek ends unanswered
          u_done = (x == u);
          break;
        }
        ++proposals;
        mb_index y = -1;
        if (wm_bs_offer(v, wm_pack(r, x), hoff, ends, S, thr, &y, stats)) {
          if (y >= 0) ++displaced_n;
          x = y;  // the displaced suitor seeks again; -1 ends the chain
        }
        // else: v's lowest offer rose after the scan; x searches again below r
      }
      if (u_done) break;  // u can never again find a partner
    }
  }
  if (lane == 0) {
    if (proposals) atomicAdd(stats + WM_BS_PROPOSALS, proposals);
    if (displaced_n) atomicAdd(stats + WM_BS_DISPLACED, displaced_n);
    if (chains) atomicAdd(stats + WM_BS_CHAINS, chains);
  }
}
