// APFB / APsB: GPU maximum-cardinality bipartite matching by speculative augmentation
// along BFS paths (Deveci, Kaya, Ucar & Catalyurek, Euro-Par 2013, Algorithms 1-4).
//
// Graph: columns -> rows CSR (col_ptr, col_ind). Matching: rmatch[r] = c, cmatch[c] = r,
// -1 unmatched; during a BFS phase rmatch[r] = -2 marks the unmatched row ending a path.
//
// Every BFS level is one launch of apfb_bfs*. Instead of the paper's host-side
// vertex_inserted / augmenting_path_found flags (read by the host after every level), a
// small device array `flags` carries them, so several levels can be queued (or replayed
// from a CUDA graph) with one host read per batch:
//   flags[0..2]  ring of "level L inserted a column at level L+1" flags, slot L % 3
//   flags[3]     augmenting_path_found of the current phase: the level that found it
//   flags[4]     base level: level = flags[4] + offset (offset is the launch argument,
//                so a captured CUDA graph can replay the same kernels at later levels)
//   flags[5]     number of BFS levels that did work (the bfs_levels counter)
//   flags[6]     error: an ALTERNATE walk exceeded its bound (never expected)
//   flags[7]     adjacency entries scanned by the BFS (only with -DAPFB_COUNT_EDGES, an
//                instrumented build for throughput figures; off in timed runs)
// Kernel L zeroes slot (L+1) % 3 before anything else, so a level that exits early
// leaves its own slot at 0 and every later level of the batch exits early too.
#include "common.cuh"

#define APFB_L0 2            // BFS start level; 2 so that bfs_array >= 0 except markers
#define APFB_FOUND 3
#define APFB_BASE 4
#define APFB_LEVELS 5
#define APFB_ERR 6
#define APFB_EDGES 7

// Ring slot of a level; non-negative also for the level L0 - 1 - L0 = -1 of the empty
// warm-up launches.
__device__ __forceinline__ int apfb_slot(long long level) { return (int)(((level % 3) + 3) % 3); }

// Deveci et al. 2013, Alg. 1 line 4 (INITBFSARRAY) and Sec. 3 before Alg. 4 (root array):
// bfs_array[c] = L0 for unmatched columns (the BFS roots), L0 - 1 (unvisited) otherwise;
// root[c] = c for roots, 0 otherwise. Also starts the phase's flags.
template <bool WITH_ROOT>
__device__ __forceinline__ void apfb_init_impl(const mb_index* __restrict__ cmatch,
                                               mb_index* __restrict__ bfs_array,
                                               mb_index* __restrict__ root, long long* flags,
                                               mb_index nc, long long base_init) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    // Slot L0 % 3 is written only by level L0; slot (L0 + 1) % 3 is zeroed by level L0.
    flags[apfb_slot(APFB_L0)] = 0;
    flags[APFB_FOUND] = 0;
    flags[APFB_BASE] = base_init;
  }
  MB_GRID_STRIDE(c, nc) {
    bool unmatched = cmatch[c] == -1;
    bfs_array[c] = unmatched ? APFB_L0 : APFB_L0 - 1;
    if (WITH_ROOT) root[c] = unmatched ? (mb_index)c : 0;
  }
}

extern "C" __global__ void apfb_init_bfs_array(const mb_index* __restrict__ cmatch,
                                               mb_index* __restrict__ bfs_array,
                                               mb_index* __restrict__ root, long long* flags,
                                               mb_index nc, long long base_init) {
  apfb_init_impl<false>(cmatch, bfs_array, root, flags, nc, base_init);
}

extern "C" __global__ void apfb_init_bfs_array_wr(const mb_index* __restrict__ cmatch,
                                                  mb_index* __restrict__ bfs_array,
                                                  mb_index* __restrict__ root, long long* flags,
                                                  mb_index nc, long long base_init) {
  apfb_init_impl<true>(cmatch, bfs_array, root, flags, nc, base_init);
}

#ifdef APFB_COUNT_EDGES
// Adds each thread's count of scanned adjacency entries to flags[APFB_EDGES], with one
// global atomic per block. Every thread of the block must call it (it has barriers).
__device__ __forceinline__ void apfb_count_edges(unsigned long long scanned, long long* flags) {
  __shared__ unsigned long long block_scanned;
  if (threadIdx.x == 0) block_scanned = 0;
  __syncthreads();
  if (scanned) atomicAdd(&block_scanned, scanned);
  __syncthreads();
  if (threadIdx.x == 0 && block_scanned)
    atomicAdd((unsigned long long*)&flags[APFB_EDGES], block_scanned);
}
#endif

// One BFS level: Deveci et al. 2013, Alg. 2 (GPUBFS; WR = false) and Alg. 4 (GPUBFS-WR;
// WR = true). NEG_ROW is the APsB-GPUBFS-WR refinement (Sec. 3, after Alg. 4): with
// L0 = 2 the root's entry takes -(end row) instead of L0 - 2, so ALTERNATE can start once
// per root from that row.
//
// Benign races: threads of one level that reach the same unvisited column all write the
// same level into bfs_array; their writes to root[] and predecessor[] differ, but each
// value names a column of this level adjacent to the row, so any mix still yields
// predecessor chains that descend one level per step to a root (ALTERNATE relies only on
// that). Several threads may mark rows -2 for one root; ALTERNATE's predecessor check and
// FIXMATCHING (or, with NEG_ROW, the one recorded end row) resolve the overlap.
template <bool WR, bool NEG_ROW>
__device__ __forceinline__ void apfb_bfs_impl(const mb_index* __restrict__ col_ptr,
                                              const mb_index* __restrict__ col_ind,
                                              mb_index* bfs_array, mb_index* rmatch,
                                              mb_index* predecessor, mb_index* root,
                                              long long* flags, mb_index nc,
                                              long long offset, int early_stop) {
  const long long level = flags[APFB_BASE] + offset;
  const bool lead = blockIdx.x == 0 && threadIdx.x == 0;
  if (lead) flags[apfb_slot(level + 1)] = 0;
  // Alg. 1 line 6: the previous level inserted nothing, so the BFS is over.
  if (level > APFB_L0 && flags[apfb_slot(level - 1)] == 0) return;
  // Alg. 1 lines 9-10 (APsB only): stop after the first level that found a path. The
  // flag holds that level, so threads of this level that start late are not stopped by
  // their own level's finds, and the exit stays uniform over the grid.
  if (early_stop && flags[APFB_FOUND] != 0 && flags[APFB_FOUND] < level) return;
  if (lead) flags[APFB_LEVELS] += 1;

  bool inserted = false;
  bool found = false;
#ifdef APFB_COUNT_EDGES
  unsigned long long scanned = 0;
#endif
  MB_GRID_STRIDE(c, nc) {                                        // Alg. 2/4 lines 1-3
    if (bfs_array[c] != level) continue;                         // Alg. 2/4 line 4
    mb_index my_root = 0;
    if (WR) {
      my_root = root[c];                                         // Alg. 4 line 5
      if (bfs_array[my_root] < APFB_L0 - 1) continue;            // Alg. 4 lines 6-7
    }
    const mb_index end = col_ptr[c + 1];
#ifdef APFB_COUNT_EDGES
    scanned += (unsigned long long)(end - col_ptr[c]);
#endif
    for (mb_index j = col_ptr[c]; j < end; ++j) {                // Alg. 2 line 5 / 4 line 8
      const mb_index row = col_ind[j];
      const mb_index col_match = rmatch[row];
      if (col_match > -1) {
        if (bfs_array[col_match] == APFB_L0 - 1) {               // Alg. 2 line 9 / 4 line 12
          inserted = true;
          bfs_array[col_match] = (mb_index)(level + 1);
          if (WR) root[col_match] = my_root;                     // Alg. 4 line 15
          predecessor[row] = (mb_index)c;
        }
      } else if (col_match == -1) {                              // Alg. 2 line 14 / 4 line 18
        if (WR) bfs_array[my_root] = NEG_ROW ? -row : APFB_L0 - 2;  // Alg. 4 line 19
        rmatch[row] = -2;
        predecessor[row] = (mb_index)c;
        found = true;
      }
    }
  }
  if (inserted) flags[apfb_slot(level)] = 1;                     // vertex_inserted
  if (found) flags[APFB_FOUND] = level;                          // augmenting_path_found
#ifdef APFB_COUNT_EDGES
  apfb_count_edges(scanned, flags);  // the early exits above are uniform over the grid
#endif
}

extern "C" __global__ void apfb_bfs(const mb_index* __restrict__ col_ptr,
                                    const mb_index* __restrict__ col_ind, mb_index* bfs_array,
                                    mb_index* rmatch, mb_index* predecessor, mb_index* root,
                                    long long* flags, mb_index nc, long long offset,
                                    int early_stop) {
  apfb_bfs_impl<false, false>(col_ptr, col_ind, bfs_array, rmatch, predecessor, root, flags,
                              nc, offset, early_stop);
}

extern "C" __global__ void apfb_bfs_wr(const mb_index* __restrict__ col_ptr,
                                       const mb_index* __restrict__ col_ind, mb_index* bfs_array,
                                       mb_index* rmatch, mb_index* predecessor, mb_index* root,
                                       long long* flags, mb_index nc, long long offset,
                                       int early_stop) {
  apfb_bfs_impl<true, false>(col_ptr, col_ind, bfs_array, rmatch, predecessor, root, flags,
                             nc, offset, early_stop);
}

extern "C" __global__ void apfb_bfs_wr_negrow(const mb_index* __restrict__ col_ptr,
                                              const mb_index* __restrict__ col_ind,
                                              mb_index* bfs_array, mb_index* rmatch,
                                              mb_index* predecessor, mb_index* root,
                                              long long* flags, mb_index nc, long long offset,
                                              int early_stop) {
  apfb_bfs_impl<true, true>(col_ptr, col_ind, bfs_array, rmatch, predecessor, root, flags, nc,
                            offset, early_stop);
}

// ---------------------------------------------------------------------------------------
// Frontier queues (frontier = "queue"; beyond the paper). The paper's GPUBFS reads
// bfs_array over all columns at every level to find the frontier, which costs O(n_cols)
// per level: on graphs whose BFS runs thousands of levels (RCP meshes, road networks)
// that scan is most of the run. Here level L reads the columns that level L - 1 inserted
// from a queue and appends the columns it inserts to the other one:
//   queue[0 .. nc) and queue[nc .. 2nc)  ping-pong buffers, level L reads half L & 1
//   flags[L % 3]                         number of columns level L inserted (> 0 is the
//                                        paper's vertex_inserted, as in the scan kernels)
// An insertion claims the column with atomicCAS(bfs_array[c], L0 - 1, L + 1), so each
// column enters a queue once per phase; its root[] and predecessor[] are written by the
// claiming thread alone (the paper's plain stores let several threads write them; any of
// those values is valid, so this is one of the paper's outcomes).
// Work per frontier column goes to one thread (degree < APFB_WARP_MIN), one warp, or the
// whole block (degree >= APFB_BLOCK_MIN), so that hub columns of power-law graphs are not
// walked by a single thread.
#define APFB_WARP_MIN 32
#define APFB_BLOCK_MIN 1024
#define APFB_MAX_BLOCK 1024

// Deveci et al. 2013, Alg. 1 line 4 (INITBFSARRAY) with the roots appended to queue half
// L0 & 1 and counted in flags[(L0 - 1) % 3] ("inserted by level L0 - 1"), which the
// previous phase's apfb_fix_matching_q (or prepare) left at 0.
template <bool WITH_ROOT>
__device__ __forceinline__ void apfb_init_queue_impl(const mb_index* __restrict__ cmatch,
                                                     mb_index* __restrict__ bfs_array,
                                                     mb_index* __restrict__ root,
                                                     long long* flags,
                                                     mb_index* __restrict__ queue,
                                                     mb_index nc, long long base_init) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    flags[apfb_slot(APFB_L0)] = 0;
    flags[APFB_FOUND] = 0;
    flags[APFB_BASE] = base_init;
  }
  mb_index* out = queue + (long long)(APFB_L0 & 1) * nc;
  MB_GRID_STRIDE(c, nc) {
    bool unmatched = cmatch[c] == -1;
    bfs_array[c] = unmatched ? APFB_L0 : APFB_L0 - 1;
    if (WITH_ROOT) root[c] = unmatched ? (mb_index)c : 0;
    if (unmatched) {
      long long at = atomicAdd((unsigned long long*)&flags[apfb_slot(APFB_L0 - 1)], 1ULL);
      out[at] = (mb_index)c;
    }
  }
}

extern "C" __global__ void apfb_init_queue(const mb_index* __restrict__ cmatch,
                                           mb_index* __restrict__ bfs_array,
                                           mb_index* __restrict__ root, long long* flags,
                                           mb_index* __restrict__ queue, mb_index nc,
                                           long long base_init) {
  apfb_init_queue_impl<false>(cmatch, bfs_array, root, flags, queue, nc, base_init);
}

extern "C" __global__ void apfb_init_queue_wr(const mb_index* __restrict__ cmatch,
                                              mb_index* __restrict__ bfs_array,
                                              mb_index* __restrict__ root, long long* flags,
                                              mb_index* __restrict__ queue, mb_index nc,
                                              long long base_init) {
  apfb_init_queue_impl<true>(cmatch, bfs_array, root, flags, queue, nc, base_init);
}

// The body of Alg. 2 lines 6-17 / Alg. 4 lines 8-21 for one adjacency entry j of the
// frontier column c (root my_root). Returns through *inserted / *found as the paper's flags.
template <bool WR, bool NEG_ROW>
__device__ __forceinline__ void apfb_visit_edge(mb_index c, mb_index my_root, mb_index j,
                                                const mb_index* __restrict__ col_ind,
                                                mb_index* bfs_array, mb_index* rmatch,
                                                mb_index* predecessor, mb_index* root,
                                                long long* flags, mb_index* next,
                                                long long level, bool* found) {
  const mb_index row = col_ind[j];
  const mb_index col_match = rmatch[row];
  if (col_match > -1) {
    // Alg. 2 line 9 / 4 line 12, as a claim: the winner inserts col_match (lines 10-15).
    if (bfs_array[col_match] == APFB_L0 - 1 &&
        mb_cas(&bfs_array[col_match], APFB_L0 - 1, (mb_index)(level + 1)) == APFB_L0 - 1) {
      if (WR) root[col_match] = my_root;                         // Alg. 4 line 15
      predecessor[row] = c;
      mb_append(next, (unsigned long long*)&flags[apfb_slot(level)], col_match);
    }
  } else if (col_match == -1) {                                  // Alg. 2 line 14 / 4 line 18
    if (WR) bfs_array[my_root] = NEG_ROW ? -row : APFB_L0 - 2;   // Alg. 4 line 19
    rmatch[row] = -2;
    predecessor[row] = c;
    *found = true;
  }
}

// One BFS level over the frontier queue: Alg. 2 (GPUBFS) / Alg. 4 (GPUBFS-WR) with the
// frontier read from queue half level & 1 instead of found by scanning bfs_array (Alg. 2
// line 4). Launched with blockDim.x a multiple of 32 and at most APFB_MAX_BLOCK. The early
// exits are uniform over the grid (they read flags no thread of this level writes), and
// the loop over the queue is uniform per block, so the barriers below are safe.
template <bool WR, bool NEG_ROW>
__device__ __forceinline__ void apfb_bfs_queue_impl(const mb_index* __restrict__ col_ptr,
                                                    const mb_index* __restrict__ col_ind,
                                                    mb_index* bfs_array, mb_index* rmatch,
                                                    mb_index* predecessor, mb_index* root,
                                                    long long* flags,
                                                    mb_index* __restrict__ queue, mb_index nc,
                                                    long long offset, int early_stop) {
  __shared__ mb_index s_col[APFB_MAX_BLOCK];
  __shared__ mb_index s_root[APFB_MAX_BLOCK];
  __shared__ int s_big;
  const long long level = flags[APFB_BASE] + offset;
  const bool lead = blockIdx.x == 0 && threadIdx.x == 0;
  if (lead) flags[apfb_slot(level + 1)] = 0;
  const long long count = flags[apfb_slot(level - 1)];           // inserted by level - 1
  if (count == 0) return;                                        // Alg. 1 line 6
  if (early_stop && flags[APFB_FOUND] != 0 && flags[APFB_FOUND] < level) return;  // l. 9-10
  if (lead) flags[APFB_LEVELS] += 1;
  const mb_index* cur = queue + (level & 1) * (long long)nc;
  mb_index* next = queue + ((level + 1) & 1) * (long long)nc;
  const int lane = threadIdx.x & 31;
  bool found = false;
#ifdef APFB_COUNT_EDGES
  unsigned long long scanned = 0;
#endif
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long base = (long long)blockIdx.x * blockDim.x; base < count; base += stride) {
    const long long i = base + threadIdx.x;
    mb_index c = -1, my_root = 0, start = 0, deg = 0;
    if (i < count) {
      c = cur[i];
      bool live = true;
      if (WR) {
        my_root = root[c];                                       // Alg. 4 line 5
        live = bfs_array[my_root] >= APFB_L0 - 1;                // Alg. 4 lines 6-7
      }
      if (live) {
        start = col_ptr[c];
        deg = col_ptr[c + 1] - start;
      }
    }
#ifdef APFB_COUNT_EDGES
    scanned += (unsigned long long)deg;
#endif
    // Block tier: the block walks each of its columns of degree >= APFB_BLOCK_MIN.
    if (threadIdx.x == 0) s_big = 0;
    __syncthreads();
    if (deg >= APFB_BLOCK_MIN) {
      const int at = atomicAdd(&s_big, 1);
      s_col[at] = c;
      s_root[at] = my_root;
      deg = 0;
    }
    __syncthreads();
    for (int b = 0; b < s_big; ++b) {
      const mb_index bc = s_col[b];
      const mb_index end = col_ptr[bc + 1];
      for (mb_index j = col_ptr[bc] + threadIdx.x; j < end; j += blockDim.x)
        apfb_visit_edge<WR, NEG_ROW>(bc, s_root[b], j, col_ind, bfs_array, rmatch,
                                     predecessor, root, flags, next, level, &found);
    }
    // Warp tier: the warp walks each of its columns of degree in [WARP_MIN, BLOCK_MIN).
    unsigned big = __ballot_sync(0xffffffffu, deg >= APFB_WARP_MIN);
    while (big) {
      const int src = __ffs(big) - 1;
      big &= big - 1;
      const mb_index wc = __shfl_sync(0xffffffffu, c, src);
      const mb_index wroot = __shfl_sync(0xffffffffu, my_root, src);
      const mb_index wstart = __shfl_sync(0xffffffffu, start, src);
      const mb_index wdeg = __shfl_sync(0xffffffffu, deg, src);
      for (mb_index j = wstart + lane; j < wstart + wdeg; j += 32)
        apfb_visit_edge<WR, NEG_ROW>(wc, wroot, j, col_ind, bfs_array, rmatch, predecessor,
                                     root, flags, next, level, &found);
    }
    // Thread tier.
    if (deg < APFB_WARP_MIN)
      for (mb_index j = start; j < start + deg; ++j)
        apfb_visit_edge<WR, NEG_ROW>(c, my_root, j, col_ind, bfs_array, rmatch, predecessor,
                                     root, flags, next, level, &found);
    __syncthreads();  // s_col / s_big are reused by the next round
  }
  if (found) flags[APFB_FOUND] = level;                          // augmenting_path_found
#ifdef APFB_COUNT_EDGES
  apfb_count_edges(scanned, flags);  // the early exits above are uniform over the grid
#endif
}

extern "C" __global__ void apfb_bfs_queue(const mb_index* __restrict__ col_ptr,
                                          const mb_index* __restrict__ col_ind,
                                          mb_index* bfs_array, mb_index* rmatch,
                                          mb_index* predecessor, mb_index* root,
                                          long long* flags, mb_index* __restrict__ queue,
                                          mb_index nc, long long offset, int early_stop) {
  apfb_bfs_queue_impl<false, false>(col_ptr, col_ind, bfs_array, rmatch, predecessor, root,
                                    flags, queue, nc, offset, early_stop);
}

extern "C" __global__ void apfb_bfs_queue_wr(const mb_index* __restrict__ col_ptr,
                                             const mb_index* __restrict__ col_ind,
                                             mb_index* bfs_array, mb_index* rmatch,
                                             mb_index* predecessor, mb_index* root,
                                             long long* flags, mb_index* __restrict__ queue,
                                             mb_index nc, long long offset, int early_stop) {
  apfb_bfs_queue_impl<true, false>(col_ptr, col_ind, bfs_array, rmatch, predecessor, root,
                                   flags, queue, nc, offset, early_stop);
}

extern "C" __global__ void apfb_bfs_queue_wr_negrow(const mb_index* __restrict__ col_ptr,
                                                    const mb_index* __restrict__ col_ind,
                                                    mb_index* bfs_array, mb_index* rmatch,
                                                    mb_index* predecessor, mb_index* root,
                                                    long long* flags,
                                                    mb_index* __restrict__ queue, mb_index nc,
                                                    long long offset, int early_stop) {
  apfb_bfs_queue_impl<true, true>(col_ptr, col_ind, bfs_array, rmatch, predecessor, root,
                                  flags, queue, nc, offset, early_stop);
}

// Moves the base level on by k after a captured batch of k levels (CUDA-graph mode).
extern "C" __global__ void apfb_advance(long long* flags, long long k) {
  if (blockIdx.x == 0 && threadIdx.x == 0) flags[APFB_BASE] += k;
}

// Deveci et al. 2013, Alg. 3 lines 5-12: flip the edges of the path ending at `row`,
// walking predecessor links back to the root.
//
// Benign races (Sec. 3, Fig. 1): paths of one phase may share columns. A thread that
// finds its column already taken by a row whose predecessor is that column stops
// (line 8), so it never walks into a path another thread has flipped; two threads that
// pass the check together both write, one cmatch write survives and FIXMATCHING unmatches
// the loser's row. Writes to cmatch are rows whose predecessor is that column, so every
// step either stops or moves to a column one BFS level lower: the walk ends within
// nc + 1 steps; the bound only guards against a broken invariant (flags[APFB_ERR]).
__device__ __forceinline__ void apfb_alternate_from(mb_index row, mb_index* cmatch,
                                                    mb_index* rmatch,
                                                    const mb_index* predecessor,
                                                    long long* flags, mb_index nc) {
  long long steps = 0;
  while (row != -1) {                                            // line 5
    const mb_index matched_col = predecessor[row];               // line 6
    const mb_index matched_row = cmatch[matched_col];            // line 7
    // Line 8; matched_row = -1 means matched_col is the root and has no predecessor.
    if (matched_row != -1 && predecessor[matched_row] == matched_col) break;  // line 9
    cmatch[matched_col] = row;                                   // line 10
    rmatch[row] = matched_col;                                   // line 11
    row = matched_row;                                           // line 12
    if (++steps > (long long)nc + 1) {
      flags[APFB_ERR] = 1;
      break;
    }
  }
}

// Deveci et al. 2013, Alg. 3 (ALTERNATE): one walk from every row marked -2.
extern "C" __global__ void apfb_alternate(mb_index* cmatch, mb_index* rmatch,
                                          const mb_index* predecessor, long long* flags,
                                          mb_index nr, mb_index nc) {
  MB_GRID_STRIDE(r, nr) {                                        // lines 1-3
    if (rmatch[r] == -2)                                         // line 4
      apfb_alternate_from((mb_index)r, cmatch, rmatch, predecessor, flags, nc);
  }
}

// ALTERNATE of APsB-GPUBFS-WR (Deveci et al. 2013, Sec. 3 after Alg. 4): each root whose
// BFS found a path holds -(end row) in bfs_array (values <= L0 - 2 = 0 occur only there),
// so the walk starts once per root from that row, and the other rows marked -2 for the
// same root are left to FIXMATCHING instead of being partially alternated.
extern "C" __global__ void apfb_alternate_roots(mb_index* cmatch, mb_index* rmatch,
                                                const mb_index* predecessor,
                                                const mb_index* bfs_array, long long* flags,
                                                mb_index nc) {
  MB_GRID_STRIDE(c, nc) {
    const mb_index b = bfs_array[c];
    if (b <= APFB_L0 - 2) apfb_alternate_from(-b, cmatch, rmatch, predecessor, flags, nc);
  }
}

// Deveci et al. 2013, Sec. 3 (FIXMATCHING): rmatch[r] = -1 where cmatch[rmatch[r]] != r.
// Rows still marked -2 (path ends ALTERNATE did not take) are unmatched too; the paper's
// formula would index cmatch[-2] for them.
extern "C" __global__ void apfb_fix_matching(const mb_index* __restrict__ cmatch,
                                             mb_index* __restrict__ rmatch, mb_index nr) {
  MB_GRID_STRIDE(r, nr) {
    const mb_index c = rmatch[r];
    if (c == -2 || (c >= 0 && cmatch[c] != r)) rmatch[r] = -1;
  }
}

// FIXMATCHING of the queue mode: as apfb_fix_matching, and zeroes the root counter
// flags[(L0 - 1) % 3] for the next phase's apfb_init_queue (no kernel of this phase reads
// it any more: the BFS is over).
extern "C" __global__ void apfb_fix_matching_q(const mb_index* __restrict__ cmatch,
                                               mb_index* __restrict__ rmatch, long long* flags,
                                               mb_index nr) {
  if (blockIdx.x == 0 && threadIdx.x == 0) flags[apfb_slot(APFB_L0 - 1)] = 0;
  MB_GRID_STRIDE(r, nr) {
    const mb_index c = rmatch[r];
    if (c == -2 || (c >= 0 && cmatch[c] != r)) rmatch[r] = -1;
  }
}
