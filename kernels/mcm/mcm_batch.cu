// Batched maximum-cardinality bipartite matching: many small graphs in one launch, one
// thread block per graph, the whole APFB search of the graph inside the block (Deveci,
// Kaya, Ucar & Catalyurek, Euro-Par 2013, Alg. 1 APFB with Alg. 4 GPUBFS-WR, Alg. 3
// ALTERNATE and FIXMATCHING), so that a batch costs one launch and no host sync.
// The host driver is matchbench/families/mcm/batch_gpu.py; its `apfb_reference` is this
// kernel's algorithm in numpy, statement for statement, and can interleave the threads'
// shared-memory accesses at random, which is how the race arguments below are tested on
// machines without a GPU.
//
// Sides. The graph comes as CSR rows -> columns (the user's matrix), and the BFS runs
// from the free rows over it: the paper's columns (BFS side, bfs_array, root) are our
// rows and the paper's rows (path ends, predecessor) our columns. The paper's formulas
// hold with the two names swapped; the comments below quote its line numbers.
//
// Layout. Graph g = blockIdx.x is described by meta[g * MCM_BATCH_M_SIZE + slot]: its row
// count, column count, the offset of its n_rows + 1 row pointers in indptr (local values,
// starting at 0), the offset of its column indices in indices (local, in [0, n_cols)), the
// offsets of its answers in row_match (n_rows entries) and col_match (n_cols entries),
// the offset of its state in the int scratch array (-1: the state is in dynamic shared
// memory) and how it starts (MCM_BATCH_START_*). stats[g * MCM_BATCH_S_SIZE + slot] gets
// the phases, BFS levels, error code, initial and final cardinality.
//
// State of one graph (ints, shared memory or global scratch: the host's `state_bytes`):
//   rmate[nr]  column of each row, -1 free                 (paper: cmatch)
//   level[nr]  BFS level of each row, L0 - 1 unvisited     (paper: bfs_array)
//   root[nr]   the free row whose BFS tree holds the row   (paper: root, Alg. 4)
//   cmate[nc]  row of each column, -1 free, -2 a free column that ends a path this phase
//                                                          (paper: rmatch)
//   pred[nc]   the row whose scan reached the column       (paper: predecessor)
// Thread t owns the rows t, t + T, ... in INITBFSARRAY and GPUBFS (the paper's CT layout
// within a block) and the columns t, t + T, ... in ALTERNATE and FIXMATCHING. Levels are
// separated by __syncthreads (the paper's kernel boundaries); every loop that holds a
// barrier runs on block-uniform values (phase and level counters, __syncthreads_or
// results), so all threads reach every barrier.
#include "common.cuh"

#define MCM_BATCH_L0 2  // BFS start level (Alg. 1 line 3); L0 - 2 = 0 marks a root done

// meta slots (long long), kept in step with META_* in batch_gpu.py
#define MCM_BATCH_M_ROWS 0
#define MCM_BATCH_M_COLS 1
#define MCM_BATCH_M_PTR 2
#define MCM_BATCH_M_IND 3
#define MCM_BATCH_M_RMATE 4
#define MCM_BATCH_M_CMATE 5
#define MCM_BATCH_M_SCRATCH 6
#define MCM_BATCH_M_START 7
#define MCM_BATCH_M_SIZE 8

// stats slots (long long), kept in step with STAT_* in batch_gpu.py
#define MCM_BATCH_S_PHASES 0
#define MCM_BATCH_S_LEVELS 1
#define MCM_BATCH_S_ERR 2
#define MCM_BATCH_S_INITIAL 3
#define MCM_BATCH_S_CARD 4
#define MCM_BATCH_S_SIZE 5

// How a graph starts (meta slot START), kept in step with START_* in batch_gpu.py
#define MCM_BATCH_START_GIVEN 0   // the mates in row_match / col_match (a valid matching)
#define MCM_BATCH_START_GREEDY 1  // the block's greedy matching below
#define MCM_BATCH_START_EMPTY 2   // the empty matching

// stats[S_ERR] codes (0: solved), kept in step with KERNEL_ERRORS in batch_gpu.py. None
// can happen for a valid input; they bound every loop so that a bug cannot hang the GPU.
#define MCM_BATCH_E_PHASES 1  // more than min(nr, nc) + 2 phases
#define MCM_BATCH_E_LEVELS 2  // a BFS ran more than nr + 1 levels
#define MCM_BATCH_E_WALK 3    // an ALTERNATE walk ran more than nr + 1 steps
#define MCM_BATCH_E_FIX 4     // after FIXMATCHING a row's column is not matched back

// Block-wide sum of one int per thread (two barriers; every thread must call it).
__device__ __forceinline__ int mcm_batch_block_sum(int v, int* s_acc) {
  __syncthreads();  // an earlier reader of *s_acc is done
  if (threadIdx.x == 0) *s_acc = 0;
  __syncthreads();
  if (v) atomicAdd(s_acc, v);
  __syncthreads();
  return *s_acc;
}

// One ALTERNATE walk (Alg. 3 lines 5-12) from the free column c marked -2 by the BFS.
// Race argument (the paper's Sec. 3 and Fig. 1, made exact for the final state): while
// walks run, pred[] is constant, cmate[c] is written only with pred[c] and rmate[r] only
// with a column c such that pred[c] = r. A walk that reads a row already flipped stops
// (line 8: its column then has pred == row); two walks that pass that check together
// write the same values below that row, except rmate of the row itself, where one of two
// columns survives and FIXMATCHING frees the other. Hence, after FIXMATCHING, every row
// matched before is still matched (rmate changes only to another column c with
// cmate[c] = that row), and the lowest flipped row of each BFS tree is its root (the walk
// that flipped any other row went on to the next lower row, which it found unflipped):
// the matching grows by the number of trees in which a walk started, >= 1 per phase that
// found a path. Each step moves to a row one BFS level lower, so a walk has at most
// nr + 1 steps; more sets MCM_BATCH_E_WALK.
__device__ __forceinline__ int mcm_batch_alternate(int c, int* rmate, int* cmate,
                                                   const int* pred, int nr) {
  int steps = 0;
  while (c != -1) {                                   // line 5
    const int r = pred[c];                            // line 6
    const int cn = rmate[r];                          // line 7
    if (cn != -1 && pred[cn] == r) break;             // lines 8-9 (cn = -1: r is the root)
    cmate[c] = r;                                     // line 10
    rmate[r] = c;                                     // line 11
    c = cn;                                           // line 12
    if (++steps > nr + 1) return MCM_BATCH_E_WALK;
  }
  return 0;
}

// APFB with GPUBFS-WR for the graph of this block (Deveci et al. 2013, Alg. 1 without
// lines 9-10, Alg. 4, Alg. 3, FIXMATCHING), from the start that meta[START] names.
extern "C" __global__ void __launch_bounds__(1024)
    mcm_batch_apfb(const int* __restrict__ indptr, const int* __restrict__ indices,
                   const long long* __restrict__ meta, int* __restrict__ row_match,
                   int* __restrict__ col_match, int* scratch, long long* __restrict__ stats) {
  extern __shared__ __align__(16) int mcm_batch_shared[];
  __shared__ int s_acc;
  __shared__ int s_err;
  const long long* m = meta + (long long)MCM_BATCH_M_SIZE * blockIdx.x;
  const int nr = (int)m[MCM_BATCH_M_ROWS], nc = (int)m[MCM_BATCH_M_COLS];
  const int* __restrict__ ptr = indptr + m[MCM_BATCH_M_PTR];
  const int* __restrict__ ind = indices + m[MCM_BATCH_M_IND];
  int* rout = row_match + m[MCM_BATCH_M_RMATE];
  int* cout = col_match + m[MCM_BATCH_M_CMATE];
  const long long so = m[MCM_BATCH_M_SCRATCH];
  const int start = (int)m[MCM_BATCH_M_START];
  // Generic pointers: the same code runs on shared memory or on the block's global
  // scratch (__syncthreads orders both for the threads of the block).
  int* rmate = so < 0 ? mcm_batch_shared : scratch + so;
  int* level = rmate + nr;
  int* root = level + nr;
  int* cmate = root + nr;
  int* pred = cmate + nc;
  const int tid = threadIdx.x, T = blockDim.x;
  const int L0 = MCM_BATCH_L0;

  if (tid == 0) s_err = 0;
  for (int r = tid; r < nr; r += T) rmate[r] = start == MCM_BATCH_START_GIVEN ? rout[r] : -1;
  for (int c = tid; c < nc; c += T) cmate[c] = start == MCM_BATCH_START_GIVEN ? cout[c] : -1;
  __syncthreads();
  if (start == MCM_BATCH_START_GREEDY) {  // block-uniform
    // The start (beyond the paper, which starts from the host's cheap matching): each
    // row takes its first free neighbour, claimed with atomicCAS so that a column goes
    // to one row; a row that loses every claim stays free. A maximal-in-spirit greedy,
    // not the sequential cheap matching: which row wins a column depends on timing.
    for (int r = tid; r < nr; r += T) {
      for (int p = ptr[r]; p < ptr[r + 1]; ++p) {
        const int c = ind[p];
        if (cmate[c] == -1 && atomicCAS(&cmate[c], -1, r) == -1) {
          rmate[r] = c;
          break;
        }
      }
    }
  }
  int mine = 0;
  for (int r = tid; r < nr; r += T) mine += rmate[r] >= 0;
  const int initial = mcm_batch_block_sum(mine, &s_acc);

  long long levels = 0;
  int phases = 0, err = 0;  // err: block-uniform codes (phases, levels)
  const int max_phases = (nr < nc ? nr : nc) + 2;
  for (;;) {  // Alg. 1 line 2: one phase per iteration
    if (++phases > max_phases) {  // each phase that goes on adds >= 1 edge (above)
      err = MCM_BATCH_E_PHASES;
      break;
    }
    // Alg. 1 line 4 (INITBFSARRAY) and Alg. 4's root array: free rows are the roots.
    for (int r = tid; r < nr; r += T) {
      level[r] = rmate[r] == -1 ? L0 : L0 - 1;
      root[r] = r;
    }
    __syncthreads();
    int found = 0;  // this thread's augmenting_path_found, over the whole BFS
    // Alg. 1 lines 5-11 without lines 9-10 (APFB: the BFS runs until no level inserts).
    // Level L is Alg. 4 (GPUBFS-WR) over this thread's rows. Benign races: threads that
    // reach the same unvisited row all write level L + 1 to it; their root[] and pred[]
    // writes differ, but each value names a row of level L adjacent to the column, so any
    // mix leaves pred chains that descend one level per step to a free row (ALTERNATE
    // needs only that; root[] only prunes). Threads that reach the same free column all
    // write -2 and a level-L row into pred. level[my_root] = L0 - 2 may land late: the
    // prune is a heuristic, and a phase that prunes has found a path, so the last phase
    // (no path: the matching is maximum by Berge's theorem) is a complete BFS.
    for (int L = L0;; ++L) {
      if (L - L0 > nr) {  // block-uniform; each level inserts >= 1 new row
        err = MCM_BATCH_E_LEVELS;
        break;
      }
      ++levels;
      int inserted = 0;
      for (int r = tid; r < nr; r += T) {                  // Alg. 4 lines 1-3
        if (level[r] != L) continue;                       // line 4
        const int my_root = root[r];                       // line 5
        if (level[my_root] < L0 - 1) continue;             // lines 6-7
        const int end = ptr[r + 1];
        for (int p = ptr[r]; p < end; ++p) {               // line 8
          const int c = ind[p];                            // line 9
          const int row_of_c = cmate[c];                   // line 10
          if (row_of_c > -1) {                             // line 11
            if (level[row_of_c] == L0 - 1) {               // line 12
              inserted = 1;                                // line 13
              level[row_of_c] = L + 1;                     // line 14
              root[row_of_c] = my_root;                    // line 15
              pred[c] = r;                                 // line 16
            }
          } else if (row_of_c == -1) {                     // line 18
            level[my_root] = L0 - 2;                       // line 19
            cmate[c] = -2;                                 // line 20
            pred[c] = r;                                   // line 21
            found = 1;                                     // line 22
          }
        }
      }
      if (!__syncthreads_or(inserted)) break;              // Alg. 1 line 6
    }
    if (err) break;  // block-uniform
    if (!__syncthreads_or(found)) break;                   // Alg. 1 line 2: maximum
    // Alg. 3 (ALTERNATE) from every column marked -2; only its own walk writes such a
    // column's cmate, so the test below is race-free.
    int walk_err = 0;
    for (int c = tid; c < nc; c += T)
      if (cmate[c] == -2) walk_err = max(walk_err, mcm_batch_alternate(c, rmate, cmate, pred, nr));
    if (walk_err) atomicMax(&s_err, walk_err);
    __syncthreads();
    // FIXMATCHING (Sec. 3), on the paper's rmatch side (our columns): cmate[c] = -1 where
    // rmate[cmate[c]] != c, and for the path ends no walk took (still -2). Reads rmate,
    // which no thread writes here; each thread writes only its own columns.
    for (int c = tid; c < nc; c += T) {
      const int r = cmate[c];
      if (r == -2 || (r >= 0 && rmate[r] != c)) cmate[c] = -1;
    }
    __syncthreads();
    if (s_err) break;  // block-uniform: written before the last two barriers
  }

  // The rows' side needs no repair (see mcm_batch_alternate); check it, as the final
  // cardinality is counted from it.
  mine = 0;
  int bad = 0;
  for (int r = tid; r < nr; r += T) {
    const int c = rmate[r];
    if (c >= 0) {
      ++mine;
      if (cmate[c] != r) bad = 1;
    }
  }
  if (bad) atomicMax(&s_err, MCM_BATCH_E_FIX);
  const int card = mcm_batch_block_sum(mine, &s_acc);  // its barriers publish s_err
  for (int r = tid; r < nr; r += T) rout[r] = rmate[r];
  for (int c = tid; c < nc; c += T) cout[c] = cmate[c];
  if (tid == 0) {
    long long* st = stats + (long long)MCM_BATCH_S_SIZE * blockIdx.x;
    st[MCM_BATCH_S_PHASES] = phases;
    st[MCM_BATCH_S_LEVELS] = levels;
    // The loop bounds' code, else the largest of the walks' and the row check's.
    st[MCM_BATCH_S_ERR] = err ? err : s_err;
    st[MCM_BATCH_S_INITIAL] = initial;
    st[MCM_BATCH_S_CARD] = card;
  }
}
