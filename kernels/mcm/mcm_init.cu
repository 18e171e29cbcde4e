// Initial matchings for maximum-cardinality bipartite matching, built on the device from
// the graph already resident there (the `cheap_gpu` initializer), and the two small
// reductions the GPU solvers need around them.
//
// Graph: both CSR directions, columns -> rows (col_ptr, col_ind) and rows -> columns
// (row_ptr, row_ind). Matching: rmatch[r] = c, cmatch[c] = r, -1 unmatched.
//
// Counters (unsigned long long cnt[4], zeroed by mcm_init_reset):
//   cnt[0]  pairs matched by the initializer (its cardinality)
//   cnt[1]  long columns deferred to mcm_init_greedy_long (length of `deferred`)
//
// The one invariant every kernel here keeps: a row, once matched, stays matched (its
// rmatch entry only ever goes from -1 to a column, by compare-and-swap). The greedy
// kernels' maximality rests on it.
#include "common.cuh"

#define MCM_INIT_MATCHED 0
#define MCM_INIT_DEFERRED 1
#define MCM_INIT_FULL 0xffffffffu
// "No proposal" in prop[] of the proposal rounds: larger than every column index.
#ifdef MB_INDEX64
#define MCM_INIT_NONE 0x7fffffffffffffffLL
#else
#define MCM_INIT_NONE 0x7fffffff
#endif

// Adds the calling lanes' hits to *count with one atomic per warp (a kernel over millions
// of columns would otherwise serialize on one address).
__device__ __forceinline__ void mcm_init_tally(unsigned long long* count, bool hit) {
  const unsigned active = __activemask();
  const unsigned hits = __ballot_sync(active, hit);
  const int lane = threadIdx.x & 31;
  if (hits && lane == __ffs(active) - 1) atomicAdd(count, (unsigned long long)__popc(hits));
}

// rmatch = cmatch = -1, no proposals, the counters zeroed, in one launch.
extern "C" __global__ void mcm_init_reset(mb_index* __restrict__ rmatch,
                                          mb_index* __restrict__ cmatch,
                                          mb_index* __restrict__ prop, mb_index nr,
                                          mb_index nc, unsigned long long* cnt) {
  if (blockIdx.x == 0 && threadIdx.x < 4) cnt[threadIdx.x] = 0;
  const long long n = nr > nc ? (long long)nr : (long long)nc;
  MB_GRID_STRIDE(i, n) {
    if (i < nr) {
      rmatch[i] = -1;
      prop[i] = MCM_INIT_NONE;
    }
    if (i < nc) cmatch[i] = -1;
  }
}

// Karp & Sipser's degree-1 rule (Karp & Sipser, FOCS 1981; as the first phase of the
// initializers of Duff, Kaya & Ucar, ACM TOMS 38(2), 2011), one round on the input
// degrees, columns first: a column of degree 1 takes its only row. Some maximum matching
// contains each such pair (swap the row's partner for the column), so this step never
// costs the solver an augmentation. Two degree-1 columns of one row race on the row's
// compare-and-swap; one wins, and no matching could have both.
extern "C" __global__ void mcm_init_ks_cols(const mb_index* __restrict__ col_ptr,
                                            const mb_index* __restrict__ col_ind,
                                            mb_index* rmatch, mb_index* cmatch, mb_index nc,
                                            unsigned long long* cnt) {
  MB_GRID_STRIDE(c, nc) {
    bool hit = false;
    const mb_index b = col_ptr[c];
    if (col_ptr[c + 1] - b == 1) {
      const mb_index r = col_ind[b];
      if (mb_cas(&rmatch[r], -1, (mb_index)c) == -1) {
        cmatch[c] = r;
        hit = true;
      }
    }
    mcm_init_tally(&cnt[MCM_INIT_MATCHED], hit);
  }
}

// The same rule for rows, after the columns' pass (a separate launch, so every column
// matched there is visible): an unmatched row of degree 1 takes its only column, by a
// compare-and-swap on the column's mate (degree-1 rows of one column race on it).
extern "C" __global__ void mcm_init_ks_rows(const mb_index* __restrict__ row_ptr,
                                            const mb_index* __restrict__ row_ind,
                                            mb_index* rmatch, mb_index* cmatch, mb_index nr,
                                            unsigned long long* cnt) {
  MB_GRID_STRIDE(r, nr) {
    bool hit = false;
    const mb_index b = row_ptr[r];
    if (row_ptr[r + 1] - b == 1 && rmatch[r] == -1) {
      const mb_index c = row_ind[b];
      if (mb_cas(&cmatch[c], -1, (mb_index)r) == -1) {
        rmatch[r] = c;
        hit = true;
      }
    }
    mcm_init_tally(&cnt[MCM_INIT_MATCHED], hit);
  }
}

// Block-local greedy, before the parallel one: thread t owns the columns and the rows of
// the index range [t * chunk, (t + 1) * chunk) and runs the sequential cheap matching
// there, each of its columns in order taking the first free row of its list that lies
// in the range (no atomics: no other thread writes these rows in this launch; columns
// and rows matched by the degree-1 round are skipped). Why: on graphs numbered along
// their geometry (meshes in their natural order) the sequential cheap matching is nearly
// perfect because column j takes row j - 1 or j + 1 just after its neighbours chose,
// pairing consecutive vertices; the parallel greedy below instead lets every column
// grab its lowest row at once, which shifts whole strips by one and leaves a few
// unmatched vertices at the ends of very long augmenting paths. Within each range this
// pass makes the sequential choices; on a randomly numbered graph a range holds almost
// no edges and the pass costs one read of the column pointers. CSR lists are sorted
// ascending, so a walk stops at its first row past the range. Columns of long_min or
// more entries are left to the warp tier.
extern "C" __global__ void mcm_init_local(const mb_index* __restrict__ col_ptr,
                                          const mb_index* __restrict__ col_ind,
                                          mb_index* rmatch, mb_index* cmatch, mb_index nr,
                                          mb_index nc, long long chunk, long long long_min,
                                          unsigned long long* cnt) {
  const long long n = nc > nr ? (long long)nc : (long long)nr;
  const long long n_chunks = (n + chunk - 1) / chunk;
  MB_GRID_STRIDE(t, n_chunks) {
    const long long lo = t * chunk;
    const long long hi = lo + chunk < n ? lo + chunk : n;
    const long long c_hi = hi < (long long)nc ? hi : (long long)nc;
    unsigned long long made = 0;
    for (long long c = lo; c < c_hi; ++c) {
      if (cmatch[c] != -1) continue;
      const mb_index b = col_ptr[c], e = col_ptr[c + 1];
      if (long_min > 0 && (long long)(e - b) >= long_min) continue;
      for (mb_index p = b; p < e; ++p) {
        const mb_index r = col_ind[p];
        if (r < lo) continue;
        if (r >= hi) break;
        if (rmatch[r] == -1) {
          rmatch[r] = (mb_index)c;
          cmatch[c] = r;
          ++made;
          break;
        }
      }
    }
    if (made) atomicAdd(&cnt[MCM_INIT_MATCHED], made);
  }
}

// Proposal rounds (Luby-style, resolved by priority): every unmatched column (fewer than
// long_min entries) proposes to the first free row of its list, atomicMin on prop[row]
// keeps the lowest-numbered proposer, and mcm_init_accept matches each row with it. A
// round makes the choice the sequential cheap matching makes wherever the lower-numbered
// columns' choices are already settled, and conflicts go to the lower number as they do
// there, instead of to whichever compare-and-swap lands first; the few rounds run before
// the parallel greedy (which then guarantees maximality). want[c] remembers the row c
// proposed to; prop[] is all MCM_INIT_NONE between rounds: each proposed row has
// one winner, who resets it.
extern "C" __global__ void mcm_init_propose(const mb_index* __restrict__ col_ptr,
                                            const mb_index* __restrict__ col_ind,
                                            const mb_index* __restrict__ rmatch,
                                            const mb_index* __restrict__ cmatch,
                                            mb_index* prop, mb_index* want, mb_index nc,
                                            long long long_min) {
  MB_GRID_STRIDE(c, nc) {
    mb_index target = -1;
    if (cmatch[c] == -1) {
      const mb_index b = col_ptr[c], e = col_ptr[c + 1];
      if (long_min <= 0 || (long long)(e - b) < long_min) {
        for (mb_index p = b; p < e; ++p) {
          const mb_index r = col_ind[p];
          if (rmatch[r] == -1) {
            target = r;
            break;
          }
        }
      }
    }
    want[c] = target;
    if (target != -1) atomicMin(&prop[target], (mb_index)c);
  }
}

extern "C" __global__ void mcm_init_accept(mb_index* rmatch, mb_index* cmatch, mb_index* prop,
                                           const mb_index* __restrict__ want, mb_index nc,
                                           unsigned long long* cnt) {
  MB_GRID_STRIDE(c, nc) {
    const mb_index r = want[c];
    const bool won = r != -1 && prop[r] == (mb_index)c;
    if (won) {
      rmatch[r] = (mb_index)c;
      cmatch[c] = r;
      prop[r] = MCM_INIT_NONE;
    }
    mcm_init_tally(&cnt[MCM_INIT_MATCHED], won);
  }
}

// Greedy maximal matching, one thread per column: the parallel form of the sequential
// cheap matching (Duff, Kaya & Ucar 2011; Deveci et al., Euro-Par 2013, Sec. 4): each
// unmatched column walks its rows in CSR order and takes the first free one, claiming it
// with a compare-and-swap on rmatch (the winner of a race keeps the row, the losers walk
// on). A read of rmatch before the CAS skips rows already taken without an atomic; a
// stale -1 there only costs a failed CAS (rows never become free again).
// Maximal: a column left unmatched saw every row of its list matched (a failed CAS or a
// read != -1), and those rows stay matched, so every edge has a matched end.
// Columns with at least long_min entries (long_min > 0) are appended to `deferred`
// instead, for mcm_init_greedy_long: a thread would walk a hub's list alone, and
// running the hubs after the rest is also the "low degree first" order that keeps
// hubs, which have rows to spare, from taking the only rows of low-degree columns.
extern "C" __global__ void mcm_init_greedy(const mb_index* __restrict__ col_ptr,
                                           const mb_index* __restrict__ col_ind,
                                           mb_index* rmatch, mb_index* cmatch, mb_index nc,
                                           long long long_min, mb_index* deferred,
                                           unsigned long long* cnt) {
  MB_GRID_STRIDE(c, nc) {
    bool hit = false;
    if (cmatch[c] == -1) {
      const mb_index b = col_ptr[c], e = col_ptr[c + 1];
      if (long_min > 0 && (long long)(e - b) >= long_min) {
        mb_append(deferred, &cnt[MCM_INIT_DEFERRED], (mb_index)c);
      } else {
        for (mb_index p = b; p < e; ++p) {
          const mb_index r = col_ind[p];
          if (__ldcg(&rmatch[r]) != -1) continue;
          if (mb_cas(&rmatch[r], -1, (mb_index)c) == -1) {
            cmatch[c] = r;
            hit = true;
            break;
          }
        }
      }
    }
    mcm_init_tally(&cnt[MCM_INIT_MATCHED], hit);
  }
}

// The deferred long columns, one warp per column: the warp reads 32 rows' mates at a
// time, and the lowest lane that saw a free row tries its CAS; on a failure the next
// free lane tries, in CSR order, so the column takes the first free row as the thread
// version does. One lane at a time: if several lanes claimed rows at once, the extra
// rows would have to be released, and a released row breaks the invariant that the
// other columns' maximality rests on. The queue's length is read on the device (no host
// round trip); the grid is any size, warps stride over the queue.
extern "C" __global__ void mcm_init_greedy_long(const mb_index* __restrict__ col_ptr,
                                                const mb_index* __restrict__ col_ind,
                                                mb_index* rmatch, mb_index* cmatch,
                                                const mb_index* __restrict__ deferred,
                                                unsigned long long* cnt) {
  const long long n = (long long)cnt[MCM_INIT_DEFERRED];
  const int lane = threadIdx.x & 31;
  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  unsigned long long mine = 0;
  for (long long w = warp; w < n; w += warps) {
    const mb_index c = deferred[w];
    const mb_index b = col_ptr[c], e = col_ptr[c + 1];
    bool done = false;
    for (mb_index base = b; base < e && !done; base += 32) {
      const mb_index p = base + lane;
      const mb_index r = p < e ? col_ind[p] : (mb_index)-1;
      unsigned free_lanes = __ballot_sync(MCM_INIT_FULL, p < e && __ldcg(&rmatch[r]) == -1);
      while (free_lanes) {
        const int leader = __ffs(free_lanes) - 1;
        int won = 0;
        if (lane == leader && mb_cas(&rmatch[r], -1, c) == -1) {
          cmatch[c] = r;
          won = 1;
        }
        if (__shfl_sync(MCM_INIT_FULL, won, leader)) {
          done = true;
          break;
        }
        free_lanes &= free_lanes - 1;
      }
    }
    if (done && lane == 0) ++mine;
  }
  if (lane == 0 && mine) atomicAdd(&cnt[MCM_INIT_MATCHED], mine);
}

// Graph statistics for the `mcm_gpu` selector, with the matching's size: out[0] +=
// matched columns, out[1] = max column degree, out[2] += columns with an edge, out[3] +=
// columns with a row numbered within `near` of their own number among their first
// `near` entries (graphs numbered along their geometry have nearly all columns so; a
// random numbering almost none). One atomic per warp and quantity.
extern "C" __global__ void mcm_init_stats(const mb_index* __restrict__ col_ptr,
                                          const mb_index* __restrict__ col_ind,
                                          const mb_index* __restrict__ cmatch, mb_index nc,
                                          long long near, unsigned long long* out) {
  unsigned matched = 0, nonempty = 0, max_deg = 0, close = 0;
  MB_GRID_STRIDE(c, nc) {
    const mb_index b = col_ptr[c];
    const long long d = (long long)(col_ptr[c + 1] - b);
    matched += cmatch[c] != -1;
    nonempty += d > 0;
    max_deg = max(max_deg, (unsigned)min(d, 0xffffffffll));
    const long long k = d < near ? d : near;
    for (long long p = 0; p < k; ++p) {
      const long long gap = (long long)col_ind[b + p] - c;
      if (gap <= near && gap >= -near) {
        ++close;
        break;
      }
    }
  }
  matched = __reduce_add_sync(MCM_INIT_FULL, matched);
  nonempty = __reduce_add_sync(MCM_INIT_FULL, nonempty);
  max_deg = __reduce_max_sync(MCM_INIT_FULL, max_deg);
  close = __reduce_add_sync(MCM_INIT_FULL, close);
  if ((threadIdx.x & 31) == 0) {
    if (matched) atomicAdd(&out[0], (unsigned long long)matched);
    if (max_deg) atomicMax(&out[1], (unsigned long long)max_deg);
    if (nonempty) atomicAdd(&out[2], (unsigned long long)nonempty);
    if (close) atomicAdd(&out[3], (unsigned long long)close);
  }
}

// G-PR's active-column lists from a matching that lives on the device (Deveci et al.,
// G-PR, Alg. 7 line 2: Ac and Ap start as the unmatched columns), with their length
// added to *len (zeroed by the caller). Order within the lists follows the warps'
// atomics; G-PR's steps do not depend on it.
extern "C" __global__ void mcm_init_unmatched(const mb_index* __restrict__ cmatch, mb_index nc,
                                              mb_index* list0, mb_index* list1,
                                              unsigned long long* len) {
  MB_GRID_STRIDE(c, nc) {
    const bool free_col = cmatch[c] == -1;
    const unsigned active = __activemask();
    const unsigned want = __ballot_sync(active, free_col);
    const int lane = threadIdx.x & 31;
    const int leader = __ffs(active) - 1;
    unsigned long long base = 0;
    if (lane == leader && want) base = atomicAdd(len, (unsigned long long)__popc(want));
    base = __shfl_sync(active, base, leader);
    if (free_col) {
      const unsigned long long pos = base + __popc(want & ((1u << lane) - 1));
      list0[pos] = (mb_index)c;
      list1[pos] = (mb_index)c;
    }
  }
}
