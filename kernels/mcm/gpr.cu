// G-PR: atomic- and lock-free push-relabel maximum-cardinality bipartite matching.
//
// Deveci, Kaya, Uçar & Çatalyürek, an atomic- and lock-free GPU push-relabel algorithm for
// maximum-cardinality bipartite matching ("G-PR"; plain text in the shared papers folder,
// deveci-gpu-push-relabel-gpr.md), Algorithms 3-9. Driven by matchbench/families/mcm/gpr.py (host loop: gpr_loop.py).
//
// Data (one allocation each, rows first):
//   mu[0, m)      row mates:    mu_row[u] = column matched to u, or -1 (unmatched row).
//   mu[m, m + n)  column mates: mu_col[v] = row, -1 (unmatched), -2 (cannot reach an
//                 unmatched row). A column entry may be stale: v is matched only if
//                 mu_row[mu_col[v]] == v (the paper's matching invariant, Sec. III).
//   psi           labels of rows then columns; `inf` = m + n means "unreachable".
//
// Control block and early exit. The driver queues kernels (or replays CUDA graphs of
// them) ahead of knowing whether the previous ones found work, so that the host reads the
// device's state only once per batch. Everything that changes from one launch to the next
// therefore lives on the device, in `ctl` (below), and the launch itself carries only
// its offset `j` within its batch. A launch that can tell the host "there was work"
// writes its stamp (a launch sequence number) into the ring buffer `ring`; a launch that
// depends on it is guarded by that stamp and returns at once when it is absent. A guard
// < 0 means "known to be true". Many threads writing the same stamp is benign: every
// writer stores the same value.

#include "common.cuh"

// Slots of the control block; kept in step with the _CTL_* constants of gpr.py.
#define GPR_CTL_SEQ 0     // stamp of offset 0 of the next batch
#define GPR_CTL_LOOP 1    // loop counter of offset 0 of the next push batch (Alg. 7 loop)
#define GPR_CTL_GUARD 2   // stamp meaning "active columns remain", -1: known
#define GPR_CTL_BGUARD 3  // stamp meaning "the BFS goes on", -1: known
#define GPR_CTL_LEVEL 4   // BFS level (cLevel of Alg. 4) of offset 0 of the next BFS batch
#define GPR_CTL_LEN 5     // length of the active-column lists (Alg. 7-9)
#define GPR_CTL_SIZE 8

#define GPR_FULL_MASK 0xffffffffu

// True when the launch stamped `guard` found no work (so this launch has none either).
__device__ __forceinline__ bool gpr_guard_failed(const int* ring, int ring_mask, int guard) {
  return guard >= 0 && ring[guard & ring_mask] != guard;
}

// The guard of offset j of a batch: the batch's guard slot for j == 0, else the stamp of
// offset j - 1 (each launch in a chain depends on its predecessor).
__device__ __forceinline__ int gpr_chain_guard(const int* ctl, int slot, int j) {
  return j == 0 ? ctl[slot] : ctl[GPR_CTL_SEQ] + j - 1;
}

// Publish `stamp` when any thread of the warp saw work. Called by every thread of the
// grid after its grid-stride loop (no thread returns early except through a guard, which
// is uniform over the grid), so the full-mask vote is well defined.
__device__ __forceinline__ void gpr_publish(int* ring, int ring_mask, int stamp, bool found) {
  if (__any_sync(GPR_FULL_MASK, found) && (threadIdx.x & 31) == 0) {
    ring[stamp & ring_mask] = stamp;
  }
}

// A label or mate written by other threads of the running launch. The persistent kernel
// (L2 = true) reads them through L2 (__ldcg): a block's L1 may still hold a line from
// before the last grid barrier, whereas the other kernels start after a kernel boundary.
template <bool L2>
__device__ __forceinline__ mb_index gpr_read(const mb_index* p) {
  return L2 ? __ldcg(p) : *p;
}

// Lowest-label row in the column list `nbr[begin, end)`: the push-relabel scan of
// Deveci et al. G-PR, Alg. 6 lines 5-12 (= Alg. 9 lines 4-11). Stops early once a row of
// label psi_v - 1 is found, the least any neighbour can have (the neighbourhood invariant
// psi(u) >= psi(v) - 1). Labels read here may be changed concurrently by other columns'
// pushes; each read is of one aligned integer, so the scan sees some label each row had
// during the launch, which is what the paper's race argument (Sec. III-B) allows.
template <bool L2 = false>
__device__ __forceinline__ mb_index gpr_min_row(const mb_index* __restrict__ nbr, mb_index begin,
                                                mb_index end, const mb_index* psi_row,
                                                mb_index psi_v, mb_index inf,
                                                mb_index* psi_min_out) {
  mb_index psi_min = inf;
  mb_index best = -1;
  for (mb_index e = begin; e < end; ++e) {
    const mb_index u = nbr[e];
    const mb_index p = gpr_read<L2>(psi_row + u);
    if (p < psi_min) {
      psi_min = p;
      best = u;
      if (psi_min == psi_v - 1) break;
    }
  }
  *psi_min_out = psi_min;
  return best;
}

// True when column v is active: unmatched (-1), or its row was taken by another column
// (mu_row[mu_col[v]] != v). A column with mu_col[v] == -2 is finished (Sec. III).
template <bool L2 = false>
__device__ __forceinline__ bool gpr_is_active(const mb_index* mu_row, const mb_index* mu_col,
                                              mb_index v) {
  const mb_index mv = gpr_read<L2>(mu_col + v);
  return mv == -1 || (mv >= 0 && gpr_read<L2>(mu_row + mv) != v);
}

// The push of column v to its lowest-label row u (label psi_min; psi_min == inf: none),
// Alg. 6 lines 13-19: mu(u) = v, mu(v) = u, relabel v and u; or v is finished (-2).
__device__ __forceinline__ void gpr_push_col(mb_index v, mb_index u, mb_index psi_min,
                                             mb_index inf, mb_index* mu_row, mb_index* mu_col,
                                             mb_index* psi_row, mb_index* psi_col) {
  if (psi_min < inf) {  // Alg. 6 lines 13-17
    mu_row[u] = v;
    mu_col[v] = u;
    psi_col[v] = psi_min + 1;
    psi_row[u] = psi_min + 2;
  } else {
    mu_col[v] = -2;  // Alg. 6 line 19
  }
}

// The push of slot i's column v of the active list of iteration `loop`, Alg. 9 lines
// 12-22: the push of Alg. 6 unless u's mate w is itself listed in this iteration
// (iA(w) == loop, line 13); the displaced column w, or -1, goes to ap[i] (line 18); a
// finished column clears both entries (lines 20-22). See gpr_push_active for the races.
template <bool L2 = false>
__device__ __forceinline__ void gpr_push_listed(long long i, mb_index v, mb_index u,
                                                mb_index psi_min, mb_index inf,
                                                mb_index* mu_row, mb_index* mu_col,
                                                mb_index* psi_row, mb_index* psi_col,
                                                mb_index* ac, mb_index* ap, const int* ia,
                                                int loop) {
  if (psi_min < inf) {
    const mb_index w = gpr_read<L2>(mu_row + u);
    if (w == -1 || (L2 ? __ldcg(ia + w) : ia[w]) != loop) {  // Alg. 9 line 13
      mu_row[u] = v;
      mu_col[v] = u;
      psi_col[v] = psi_min + 1;
      psi_row[u] = psi_min + 2;
      ap[i] = w;  // Alg. 9 line 18
    } else {
      ap[i] = -1;
    }
  } else {  // Alg. 9 lines 20-22
    mu_col[v] = -2;
    ac[i] = -1;
    ap[i] = -1;
  }
}

// ---- Warp-cooperative scans ("scan = warp" in the driver) -------------------------------
// The paper maps one thread to a vertex, which walks the vertex's adjacency alone: each
// neighbour costs a chain of dependent global loads, so a launch lasts as long as the
// longest adjacency walk (hubs of Kronecker graphs; a few rounds of memory latency per
// neighbour elsewhere). The *_warp kernels do the same per-edge work with a warp per
// group of vertices, the edges spread over the lanes. Every (vertex, neighbour) step is
// the paper's; only which thread runs it, and in which order, changes.

__device__ __forceinline__ int gpr_lane() { return threadIdx.x & 31; }
__device__ __forceinline__ long long gpr_warp_id() {
  return ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
}
__device__ __forceinline__ long long gpr_warp_count() {
  return ((long long)gridDim.x * blockDim.x) >> 5;
}

// Lowest-label row among `nbr[begin, end)`, with the whole warp (uniform arguments; every
// lane gets the result). Neighbours are taken 32 at a time in adjacency order; within a
// group the lowest label wins, ties to the earliest neighbour, and the walk stops after
// the group where the minimum reaches psi_v - 1 (Alg. 6 lines 5-12 with the early exit
// tested once per 32 neighbours).
template <bool L2 = false>
__device__ __forceinline__ mb_index gpr_warp_min_row(const mb_index* __restrict__ nbr,
                                                     mb_index begin, mb_index end,
                                                     const mb_index* psi_row, mb_index psi_v,
                                                     mb_index inf, mb_index* psi_min_out) {
  const int lane = gpr_lane();
  mb_index psi_min = inf;
  mb_index best = -1;
  for (mb_index base = begin; base < end; base += 32) {
    const mb_index e = base + lane;
    mb_index p = inf;
    mb_index u = -1;
    if (e < end) {
      u = nbr[e];
      p = gpr_read<L2>(psi_row + u);
    }
    // (label, lane) as one key: the butterfly minimum gives every lane the lowest label,
    // ties to the lowest lane, i.e. the earliest neighbour.
    long long key = ((long long)p << 5) | lane;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const long long other = __shfl_xor_sync(GPR_FULL_MASK, key, o);
      key = other < key ? other : key;
    }
    p = (mb_index)(key >> 5);
    u = __shfl_sync(GPR_FULL_MASK, u, (int)(key & 31));
    if (p < psi_min) {
      psi_min = p;
      best = u;
    }
    if (psi_min == psi_v - 1) break;
  }
  *psi_min_out = psi_min;
  return best;
}

extern "C" {

// Deveci et al. G-PR, Alg. 4 line 1, INITRELABEL: psi(u) = 0 for unmatched rows, m + n for
// every other vertex; one item per entry of the concatenated (rows, columns) labels.
// Guarded by "active columns remain" (Alg. 3 line 4: no relabel after the last push).
// Thread 0 also starts the BFS chain (level 0, its guard) and, when active columns
// remain, marks that as known (GUARD = -1), since the BFS may outlast the ring. Other
// threads may read GUARD before or after that write; both values pass the guard, so the
// race is benign.
__global__ void gpr_init_relabel(mb_index m, mb_index n, const mb_index* __restrict__ mu,
                                 mb_index* __restrict__ psi, mb_index inf,
                                 const int* __restrict__ ring, int ring_mask, int* ctl) {
  const int guard = ctl[GPR_CTL_GUARD];
  const bool ok = !gpr_guard_failed(ring, ring_mask, guard);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    ctl[GPR_CTL_LEVEL] = 0;
    ctl[GPR_CTL_BGUARD] = ok ? -1 : guard;
    if (ok) ctl[GPR_CTL_GUARD] = -1;
  }
  if (!ok) return;
  MB_GRID_STRIDE(i, (long long)m + n) {
    psi[i] = (i < m && mu[i] == -1) ? 0 : inf;
  }
}

// Deveci et al. G-PR, Alg. 5, G-GR-KRNL: one level pair of the BFS from all unmatched rows
// (offset j of a BFS batch: cLevel = LEVEL + 2j). Rows u with psi(u) == cLevel label their
// unvisited columns cLevel + 1 (line 5) and the rows matched to those columns cLevel + 2
// (line 7); a row added publishes the stamp (uAdded, line 8). Races: two rows may visit
// the same column v at once; both write psi(v) = cLevel + 1 and psi(mu(v)) = cLevel + 2,
// the same values, so the outcome does not depend on the order (Sec. III-A). The rows
// read with psi == cLevel were all labelled by earlier launches.
__global__ void gpr_gr_level(mb_index m, const mb_index* __restrict__ row_ptr,
                             const mb_index* __restrict__ row_ind, const mb_index* mu_row,
                             const mb_index* mu_col, mb_index* psi_row, mb_index* psi_col,
                             mb_index inf, int* ring, int ring_mask, const int* ctl, int j) {
  if (gpr_guard_failed(ring, ring_mask, gpr_chain_guard(ctl, GPR_CTL_BGUARD, j))) return;
  const int stamp = ctl[GPR_CTL_SEQ] + j;
  const mb_index level = (mb_index)ctl[GPR_CTL_LEVEL] + 2 * (mb_index)j;
  bool added = false;
  MB_GRID_STRIDE(u, m) {
    if (psi_row[u] != level) continue;  // Alg. 5 line 2
    for (mb_index e = row_ptr[u]; e < row_ptr[u + 1]; ++e) {
      const mb_index v = row_ind[e];
      if (psi_col[v] != inf) continue;  // Alg. 5 line 4
      psi_col[v] = level + 1;
      const mb_index w = mu_col[v];
      // Alg. 5 line 6: a stale column entry (mu(mu(v)) != v) leaves v unmatched.
      if (w > -1 && mu_row[w] == v) {
        psi_row[w] = level + 2;
        added = true;
      }
    }
  }
  gpr_publish(ring, ring_mask, stamp, added);
}

// gpr_gr_level with a warp per 32 consecutive rows: the warp's rows at level cLevel are
// found with one coalesced read, their adjacency lists are concatenated (a warp prefix
// sum of their degrees) and walked 32 edges at a time, each lane finding its edge's row by
// a binary search over the prefix sums. Same per-edge steps and races as gpr_gr_level.
__global__ void gpr_gr_level_warp(mb_index m, const mb_index* __restrict__ row_ptr,
                                  const mb_index* __restrict__ row_ind, const mb_index* mu_row,
                                  const mb_index* mu_col, mb_index* psi_row, mb_index* psi_col,
                                  mb_index inf, int* ring, int ring_mask, const int* ctl, int j) {
  if (gpr_guard_failed(ring, ring_mask, gpr_chain_guard(ctl, GPR_CTL_BGUARD, j))) return;
  const int stamp = ctl[GPR_CTL_SEQ] + j;
  const mb_index level = (mb_index)ctl[GPR_CTL_LEVEL] + 2 * (mb_index)j;
  const int lane = gpr_lane();
  bool added = false;
  for (long long tile = gpr_warp_id() * 32; tile < m; tile += gpr_warp_count() * 32) {
    const long long u = tile + lane;
    mb_index beg = 0, deg = 0;
    if (u < m && psi_row[u] == level) {  // Alg. 5 line 2
      beg = row_ptr[u];
      deg = row_ptr[u + 1] - beg;
    }
    mb_index incl = deg;  // inclusive prefix sum of the degrees over the lanes
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const mb_index x = __shfl_up_sync(GPR_FULL_MASK, incl, o);
      if (lane >= o) incl += x;
    }
    const mb_index total = __shfl_sync(GPR_FULL_MASK, incl, 31);
    for (mb_index t0 = 0; t0 < total; t0 += 32) {
      const mb_index t = t0 + lane;
      // Owner of concatenated edge t: the first lane whose inclusive sum exceeds t.
      int lo = 0, hi = 31;
#pragma unroll
      for (int step = 0; step < 5; ++step) {
        const int mid = (lo + hi) >> 1;
        if (__shfl_sync(GPR_FULL_MASK, incl, mid) > t) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      const mb_index o_beg = __shfl_sync(GPR_FULL_MASK, beg, lo & 31);
      const mb_index o_excl =
          __shfl_sync(GPR_FULL_MASK, incl, lo & 31) - __shfl_sync(GPR_FULL_MASK, deg, lo & 31);
      if (t >= total) continue;
      const mb_index v = row_ind[o_beg + (t - o_excl)];
      if (psi_col[v] != inf) continue;  // Alg. 5 line 4
      psi_col[v] = level + 1;
      const mb_index w = mu_col[v];
      if (w > -1 && mu_row[w] == v) {  // Alg. 5 line 6
        psi_row[w] = level + 2;
        added = true;
      }
    }
  }
  gpr_publish(ring, ring_mask, stamp, added);
}

// Deveci et al. G-PR, Alg. 6, G-PR-KRNL (G-PR-First): one thread per column; every active
// column finds its lowest-label neighbour u and pushes: mu(u) = v, mu(v) = u (a single
// push if u was unmatched; a double push otherwise, where the displaced column w keeps its
// stale mu(w) = u and is active from now on), then relabels v and u (lines 13-17); a
// column with no neighbour below m + n is finished, mu(v) = -2 (line 19). Publishes its
// stamp when it saw an active column (actExists, line 4).
// Races (Sec. III-B): two columns v, v' pushing to the same u both write mu(u); one wins
// and the loser is left with mu(mu(v)) != v, i.e. active again, so no push is lost. Both
// write psi(u) = psi_min + 2 with the psi_min each read; either value keeps
// psi(u) >= psi(v) - 1 for both columns. No atomics: every location is an aligned integer.
__global__ void gpr_push_first(mb_index n, const mb_index* __restrict__ col_ptr,
                               const mb_index* __restrict__ col_ind, mb_index* mu_row,
                               mb_index* mu_col, mb_index* psi_row, mb_index* psi_col,
                               mb_index inf, int* ring, int ring_mask, const int* ctl, int j) {
  if (gpr_guard_failed(ring, ring_mask, gpr_chain_guard(ctl, GPR_CTL_GUARD, j))) return;
  const int stamp = ctl[GPR_CTL_SEQ] + j;
  bool found = false;
  MB_GRID_STRIDE(v, n) {
    if (!gpr_is_active(mu_row, mu_col, v)) continue;  // Alg. 6 line 3
    found = true;
    mb_index psi_min;
    const mb_index u =
        gpr_min_row(col_ind, col_ptr[v], col_ptr[v + 1], psi_row, psi_col[v], inf, &psi_min);
    gpr_push_col(v, u, psi_min, inf, mu_row, mu_col, psi_row, psi_col);  // Alg. 6 l. 13-19
  }
  gpr_publish(ring, ring_mask, stamp, found);
}

// gpr_push_first with a warp per 32 consecutive columns: the active ones among them are
// found with one coalesced read, then processed one after the other, each by the whole
// warp (gpr_warp_min_row), lane 0 doing the push. Same steps and races as gpr_push_first.
__global__ void gpr_push_first_warp(mb_index n, const mb_index* __restrict__ col_ptr,
                                    const mb_index* __restrict__ col_ind, mb_index* mu_row,
                                    mb_index* mu_col, mb_index* psi_row, mb_index* psi_col,
                                    mb_index inf, int* ring, int ring_mask, const int* ctl,
                                    int j) {
  if (gpr_guard_failed(ring, ring_mask, gpr_chain_guard(ctl, GPR_CTL_GUARD, j))) return;
  const int stamp = ctl[GPR_CTL_SEQ] + j;
  const int lane = gpr_lane();
  bool found = false;
  for (long long tile = gpr_warp_id() * 32; tile < n; tile += gpr_warp_count() * 32) {
    const long long mine = tile + lane;
    const bool active = mine < n && gpr_is_active(mu_row, mu_col, mine);  // Alg. 6 line 3
    found |= active;
    unsigned todo = __ballot_sync(GPR_FULL_MASK, active);
    while (todo) {
      const mb_index v = tile + (__ffs(todo) - 1);
      todo &= todo - 1;
      mb_index psi_min;
      const mb_index u = gpr_warp_min_row(col_ind, col_ptr[v], col_ptr[v + 1], psi_row,
                                          psi_col[v], inf, &psi_min);
      if (lane == 0) gpr_push_col(v, u, psi_min, inf, mu_row, mu_col, psi_row, psi_col);
      __syncwarp();
    }
  }
  gpr_publish(ring, ring_mask, stamp, found);
}

// Deveci et al. G-PR, Alg. 8, G-PR-INITKRNL: fix the active list of iteration
// loop = LOOP + j. After the previous push launch and the swap, ap[i] is the column that
// slot i processed and ac[i] the column it displaced (or -1). If that push lost a race
// (the column is not matched to its row), it is rolled back: the slot processes the same
// column again (lines 5-6), and the displaced column stays with the slot that won. Every
// listed column is then stamped iA(v) = loop (line 10), and the stamp is published when
// one exists (actExists, line 11). Each slot touches only its own ac[i], ap[i] and its own
// column's iA entry (a column is listed in one slot at most, see gpr_push_active); mu is
// only read. No races.
__global__ void gpr_init_active(mb_index* __restrict__ ac, const mb_index* __restrict__ ap,
                                const mb_index* mu_row, const mb_index* mu_col,
                                int* __restrict__ ia, int* ring, int ring_mask, const int* ctl,
                                int j) {
  if (gpr_guard_failed(ring, ring_mask, gpr_chain_guard(ctl, GPR_CTL_GUARD, j))) return;
  const int stamp = ctl[GPR_CTL_SEQ] + j;
  const int loop = ctl[GPR_CTL_LOOP] + j;
  const mb_index len = ctl[GPR_CTL_LEN];
  bool found = false;
  MB_GRID_STRIDE(i, len) {
    const mb_index v = ap[i];
    if (v != -1 && gpr_is_active(mu_row, mu_col, v)) ac[i] = v;  // Alg. 8 lines 4-6
    const mb_index c = ac[i];                                     // Alg. 8 line 8
    if (c != -1) {
      ia[c] = loop;  // Alg. 8 line 10
      found = true;
    }
  }
  gpr_publish(ring, ring_mask, stamp, found);
}

// Deveci et al. G-PR, Alg. 9, G-PR-PUSHKRNL: the push of Alg. 6 for the listed columns
// only, guarded by the same iteration's G-PR-INITKRNL (Alg. 7 line 16). Slot i processes
// v = ac[i] and records the column it displaces in ap[i] (line 18), -1 when none. A row
// whose mate is itself listed in this iteration (iA(mu(u)) == loop, line 13) was just
// taken by another slot in this launch: pushing would put that column in two slots, so
// the push is skipped; v then is not matched to a row and the next G-PR-INITKRNL rolls
// the slot back to v. The paper leaves ap[i] unwritten in that case; we write -1 so that
// no stale entry (e.g. from before a shrink) can reach the list, which changes nothing
// else: the rollback replaces it. A finished column clears both entries (lines 20-22).
// Races as in gpr_push_first; the mate w of u is read once and that value is used both
// for the check and for ap[i].
__global__ void gpr_push_active(const mb_index* __restrict__ col_ptr,
                                const mb_index* __restrict__ col_ind, mb_index* mu_row,
                                mb_index* mu_col, mb_index* psi_row, mb_index* psi_col,
                                mb_index inf, mb_index* __restrict__ ac, mb_index* __restrict__ ap,
                                const int* ia, const int* ring, int ring_mask, const int* ctl,
                                int j) {
  // Guard: this iteration's G-PR-INITKRNL found active columns.
  if (gpr_guard_failed(ring, ring_mask, ctl[GPR_CTL_SEQ] + j)) return;
  const int loop = ctl[GPR_CTL_LOOP] + j;
  const mb_index len = ctl[GPR_CTL_LEN];
  MB_GRID_STRIDE(i, len) {
    const mb_index v = ac[i];
    if (v == -1) {
      ap[i] = -1;  // Alg. 9 line 24
      continue;
    }
    mb_index psi_min;
    const mb_index u =
        gpr_min_row(col_ind, col_ptr[v], col_ptr[v + 1], psi_row, psi_col[v], inf, &psi_min);
    gpr_push_listed(i, v, u, psi_min, inf, mu_row, mu_col, psi_row, psi_col, ac, ap, ia, loop);
  }
}

// gpr_push_active with a warp per slot (gpr_warp_min_row), lane 0 doing the push. Same
// steps and races as gpr_push_active.
__global__ void gpr_push_active_warp(const mb_index* __restrict__ col_ptr,
                                     const mb_index* __restrict__ col_ind, mb_index* mu_row,
                                     mb_index* mu_col, mb_index* psi_row, mb_index* psi_col,
                                     mb_index inf, mb_index* __restrict__ ac,
                                     mb_index* __restrict__ ap, const int* ia, const int* ring,
                                     int ring_mask, const int* ctl, int j) {
  if (gpr_guard_failed(ring, ring_mask, ctl[GPR_CTL_SEQ] + j)) return;
  const int loop = ctl[GPR_CTL_LOOP] + j;
  const mb_index len = ctl[GPR_CTL_LEN];
  const int lane = gpr_lane();
  for (long long i = gpr_warp_id(); i < len; i += gpr_warp_count()) {
    const mb_index v = ac[i];
    if (v == -1) {
      if (lane == 0) ap[i] = -1;  // Alg. 9 line 24
      continue;
    }
    mb_index psi_min;
    const mb_index u =
        gpr_warp_min_row(col_ind, col_ptr[v], col_ptr[v + 1], psi_row, psi_col[v], inf, &psi_min);
    if (lane == 0)
      gpr_push_listed(i, v, u, psi_min, inf, mu_row, mu_col, psi_row, psi_col, ac, ap, ia, loop);
    __syncwarp();
  }
}

// Deveci et al. G-PR, Alg. 7 line 12, G-PR-SHRKRNL, write pass: after G-PR-INITKRNL and
// the count pass with its prefix sum (done by the driver with CuPy's scan;
// pos = inclusive sum of ac[i] != -1 over the LEN entries), every listed column moves to
// its own slot pos[i] - 1 of `out`. Distinct slots: no races.
__global__ void gpr_compact(const mb_index* __restrict__ ac, const mb_index* __restrict__ pos,
                            mb_index* __restrict__ out, const int* ctl) {
  const mb_index len = ctl[GPR_CTL_LEN];
  MB_GRID_STRIDE(i, len) {
    const mb_index v = ac[i];
    if (v != -1) out[pos[i] - 1] = v;
  }
}

// Single thread, after gpr_compact: the lists' new length (the last prefix sum) into the
// control block and into ring[ring_mask + 1], where the host reads it. A kernel of its
// own because gpr_compact's threads read LEN as their loop bound.
__global__ void gpr_shrink_len(const mb_index* __restrict__ pos, int* ring, int ring_mask,
                               int* ctl) {
  const mb_index len = ctl[GPR_CTL_LEN];
  const int new_len = len > 0 ? (int)pos[len - 1] : 0;
  ctl[GPR_CTL_LEN] = new_len;
  ring[ring_mask + 1] = new_len;
}

// Single thread, last in every batch: move the control block past the batch's `count`
// stamps, `loops` push iterations and `levels` BFS levels, and make the batch's last
// stamp the guard (slot `guard_slot`) of the next batch.
__global__ void gpr_advance(int* ctl, int count, int loops, int levels, int guard_slot) {
  const int seq = ctl[GPR_CTL_SEQ];
  ctl[GPR_CTL_SEQ] = seq + count;
  ctl[GPR_CTL_LOOP] += loops;
  ctl[GPR_CTL_LEVEL] += levels;
  ctl[guard_slot] = seq + count - 1;
}

// Deveci et al. G-PR, Alg. 3 line 11 / Alg. 7 line 20, FIXMATCHING: mu(v) = -1 for every
// column not matched to its row (stale entries) and for finished columns (-2), so that
// the column mates agree with the row mates. Each thread writes only its own column.
__global__ void gpr_fix_matching(mb_index n, const mb_index* __restrict__ mu_row,
                                 mb_index* __restrict__ mu_col) {
  MB_GRID_STRIDE(v, n) {
    const mb_index mv = mu_col[v];
    if (mv < 0 || mu_row[mv] != v) mu_col[v] = -1;
  }
}

}  // extern "C"

// ---------------------------------------------------------------------------------------
// Persistent G-PR (persistent = true in the driver; beyond the paper)
//
// The host loop above pays a kernel launch per push iteration and per BFS level, and on the
// RCP-permuted meshes G-PR runs thousands of each, every one a few microseconds of work.
// Each level of its G-GR also scans all m rows to find the level's frontier. gpr_persistent
// runs the whole of Alg. 3 (G-PR-First) or Alg. 7 (G-PR-NoShr, G-PR-Shr) in one
// cooperative launch of a co-resident grid (the driver sizes it from the occupancy
// calculator), with a grid-wide barrier (mb_grid_sync) where the host loop has a kernel
// boundary. The steps of every push, INITKRNL and relabel are the paper's; what changes:
// - G-GR (Alg. 4-5) reads each level's rows from a frontier queue instead of testing
//   psi(u) == cLevel for every row (Alg. 5 line 2). A column is claimed with an atomic
//   compare-and-swap on psi(v) (inf -> cLevel + 1), so its matched row is queued once;
//   the paper's plain stores let several rows label v with the same value, so the labels
//   are the paper's. Its maxLevel is the paper's: 2 x the G-GR-KRNL calls, the last one
//   being the first that adds no row.
// - Adjacency walks are split by degree and by the number of vertices at hand: a frontier
//   row's or listed column's by a group of G lanes (G = 1 when the vertices outnumber the
//   threads, up to 32 when there are few; gpr_group_size), by the warp when it has >= 32
//   entries, and a frontier row's by the whole block when it has >= 1024. On the
//   RCP-permuted meshes most levels and lists are far smaller than the grid, and a
//   vertex's neighbours are then read at once instead of one after the other. Which
//   thread runs a step changes, not the step (G neighbours per early-exit test).
// - Shrinking (Alg. 7 lines 11-13) compacts the list in order with a prefix sum over the
//   blocks' counts (CuPy's scan, which the host loop uses, cannot run inside a kernel).
// - GETITERGR is computed on the device with the rule of relabel_interval (gpr.py).
// Decisions (frontier empty, active columns left, list length) are taken by every block
// from values read after a barrier that nobody writes before the next one, so all blocks
// follow the same path. Counts and flags rotate over three slots: the step that uses slot
// s sets s + 1 to 0, whose last reader finished before the previous barrier. Data written
// by other blocks during the launch (labels, mates, lists, queues, iA) is read through L2.
// A time limit (limit_ns, 0 = none) is checked before each global relabel; when it has
// passed, block 0 sets the abort word and every block leaves at its next barrier.
//
// Early-stopped relabel (gr_stop = 1, relabel_stop = active in the driver; beyond the
// paper). The paper's G-GR runs the BFS until no row is added, so every relabel walks
// the whole reachable graph: on a mesh with few unmatched rows that is thousands of
// levels, most of them far from any active column. Here INITRELABEL also counts the
// active columns (gpr_is_active), G-GR-KRNL counts those it labels, and the BFS ends
// after the first level at which all of them have a label; maxLevel is 2 x the levels
// run. Vertices it did not reach keep the label inf. They were all farther from the
// unmatched rows than any active column, and no push ever selects them: an active
// column always has a neighbour of finite label (the row the BFS reached it from, or the
// row it was last matched to, whose labels only ever get finite values), so it picks a
// finite one, and a column is declared finished (mu = -2) only when none is finite,
// as in the paper. A column the BFS did not reach is inactive and its row is never
// pushed to, so it stays as it is until the next relabel, which starts afresh from the
// unmatched rows. The labels of the reached vertices are the paper's.
//
// Local phases (local_max > 0; beyond the paper). A BFS level whose frontier has at most
// local_max rows, and a push iteration (lists only) whose list has at most local_max
// slots, is a few dependent loads of work, less than a grid barrier costs. Block 0 then
// runs such steps alone, separated by block barriers (__syncthreads orders the block's
// global accesses, L2 reads included: cache operators are hints in the PTX memory
// model), while the other blocks wait at the grid barrier: levels until the frontier
// grows past local_max or the BFS ends, and the rest of the push iterations until the
// next relabel (the list's length only changes at a shrink, which runs on the grid).
// Block 0 then hands its loop state (queue index, level, counts; or iteration number,
// pushes, list swap, "no active column left") over through pctl, and every block goes
// on from there. The steps are the same; only who runs them changes.

// pctl slots (long long), kept in step with the _P_* constants of gpr.py.
#define GPR_P_BAR 0         // grid barrier word (low 32 bits), see mb_grid_sync
#define GPR_P_ABORT 1       // 1: a barrier wait timed out; 2: the time limit passed
#define GPR_P_QCNT 2        // 2..4: rotating frontier-queue counts (G-GR levels)
#define GPR_P_ACT 5         // 5..7: rotating "an active column was seen" flags
#define GPR_P_LEN 8         // in: unmatched columns (the lists' length); out: final length
#define GPR_P_PUSHES 9      // out: push iterations that found active columns
#define GPR_P_RELABELS 10   // out: global relabels
#define GPR_P_LEVELS 11     // out: G-GR-KRNL calls of the paper's loop
#define GPR_P_MAXLEVEL 12   // out: maxLevel of the last global relabel
#define GPR_P_SHRINKS 13    // out: shrinks
#define GPR_P_SYNCS 14      // out: grid barriers
#define GPR_P_LOOPS 15      // out: push iterations run (the last one, finding none, too)
#define GPR_P_RELABEL_NS 16 // out: nanoseconds from each relabel's start to its last barrier
#define GPR_P_NACT 17       // 17..18: active columns at the start of relabel r, slot r % 2
#define GPR_P_SEEN 19       // 19..21: rotating counts of the active columns a level labelled
#define GPR_P_HQ 22         // 22..24: BFS state after a local phase (qt, t, seen)
#define GPR_P_HT 23
#define GPR_P_HSEEN 24
#define GPR_P_HLOOP 25      // 25..27: push state after a local phase (loop, pushes, flags)
#define GPR_P_HPUSH 26
#define GPR_P_HFLAGS 27     // bit 0: no active column was left; bit 1: the lists swapped
#define GPR_P_LOCAL 28      // out: BFS levels and push iterations run by block 0 alone
#define GPR_P_STOPS 29      // out: relabels ended early (relabel_stop = active)
#define GPR_P_SIZE 32
#define GPR_P_WARP_MIN 32     // adjacency walks of >= this many entries go to a warp
#define GPR_P_BLOCK_MIN 1024  // BFS rows of >= this many entries go to the whole block
#define GPR_P_MAX_THREADS 1024
#define GPR_SHRINK_MIN 512    // Alg. 7 line 11; SHRINK_MIN in gpr.py

// GETITERGR (Alg. 3 line 7), as relabel_interval in gpr.py: max(1, ceil(k * base)) with
// base = 1 (fix) or maxLevel (adaptive), less a tolerance of 1e-9 against rounding up.
__device__ __forceinline__ long long gpr_interval(int adaptive, double k, long long max_level) {
  const double base = adaptive ? (double)(max_level > 1 ? max_level : 1) : 1.0;
  const long long r = (long long)ceil(k * base - 1e-9);
  return r < 1 ? 1 : r;
}

// Lanes walk GPR_P_BATCH entries of an adjacency at once (entries e, e + G, ...): their
// loads are independent, so one lane keeps that many in flight instead of waiting on
// each neighbour's chain of dependent loads before starting the next. On the RCP meshes
// most steps are such chains (see "Local phases").
#define GPR_P_BATCH 4

// Alg. 5 lines 3-8 for the entries first, first + G, ... (B of them, those below end) of
// row_ind, a frontier row's adjacency at level cLevel: claim each unvisited column
// (label cLevel + 1) and queue its matched row (label cLevel + 2); with `seen`
// (relabel_stop = active), count each active column labelled. Each stage is issued for
// every entry before the next one (the label reads, the claims, the mates, then the
// rows' labels and appends); Alg. 5's steps do not depend on the order in which a row's
// columns are visited. B = 1 visits one entry (the warp and block tiers).
template <int B>
__device__ __forceinline__ void gpr_p_visit(const mb_index* __restrict__ row_ind,
                                            mb_index first, mb_index end, int G,
                                            mb_index level, mb_index inf,
                                            const mb_index* mu_row, const mb_index* mu_col,
                                            mb_index* psi_row, mb_index* psi_col,
                                            mb_index* next, unsigned long long* next_count,
                                            unsigned long long* seen) {
  mb_index v[B], w[B];
  bool mine[B];
#pragma unroll
  for (int j = 0; j < B; ++j) {
    const mb_index e = first + j * G;
    v[j] = e < end ? row_ind[e] : -1;
  }
#pragma unroll
  for (int j = 0; j < B; ++j)
    mine[j] = v[j] >= 0 && __ldcg(psi_col + v[j]) == inf;  // Alg. 5 line 4
#pragma unroll
  for (int j = 0; j < B; ++j)
    mine[j] = mine[j] && mb_cas(psi_col + v[j], inf, level + 1) == inf;  // line 5
#pragma unroll
  for (int j = 0; j < B; ++j) w[j] = mine[j] ? __ldcg(mu_col + v[j]) : -2;
#pragma unroll
  for (int j = 0; j < B; ++j) {
    if (!mine[j]) continue;
    if (w[j] > -1 && __ldcg(mu_row + w[j]) == v[j]) {  // Alg. 5 line 6
      psi_row[w[j]] = level + 2;                        // line 7
      mb_append(next, next_count, w[j]);                // uAdded (line 8)
    } else if (seen != nullptr && w[j] != -2) {
      atomicAdd(seen, 1ULL);  // v is active (gpr_is_active): unmatched or stale
    }
  }
}

// One G-GR-KRNL call (Alg. 5) over the rows of the frontier queue `cur` (cnt rows, label
// `level`), appending the rows it labels to `next`, run by blocks [0, nblk) of which this
// is block `bid` (the grid, or block 0 alone in a local phase). A row goes to a group of G lanes (a
// power of two <= 32, the same for the whole level), which stride over its adjacency;
// rows of >= 32 entries go to the whole warp when G < 32, rows of >= 1024 to the block.
// The loop over the queue is uniform per block (cnt is), so the block barriers are safe.
__device__ __forceinline__ void gpr_p_bfs_level(const mb_index* __restrict__ row_ptr,
                                                const mb_index* __restrict__ row_ind,
                                                const mb_index* cur, long long cnt,
                                                mb_index* next, unsigned long long* next_count,
                                                mb_index level, mb_index inf,
                                                const mb_index* mu_row, const mb_index* mu_col,
                                                mb_index* psi_row, mb_index* psi_col,
                                                mb_index* s_big, int* s_nbig, int G,
                                                long long bid, long long nblk,
                                                unsigned long long* seen) {
  const int lane = threadIdx.x & 31;
  const int sub = threadIdx.x & (G - 1);
  const long long per = blockDim.x / G;  // rows per block and round
  const long long stride = nblk * per;
  for (long long base = bid * per; base < cnt; base += stride) {
    const long long i = base + threadIdx.x / G;
    mb_index u = -1, beg = 0, deg = 0;
    if (i < cnt) {
      u = __ldcg(cur + i);
      beg = row_ptr[u];
      deg = row_ptr[u + 1] - beg;
    }
    if (threadIdx.x == 0) *s_nbig = 0;
    __syncthreads();
    if (deg >= GPR_P_BLOCK_MIN) {  // block tier
      if (sub == 0) s_big[atomicAdd(s_nbig, 1)] = u;
      deg = 0;
    }
    __syncthreads();
    for (int b = 0; b < *s_nbig; ++b) {
      const mb_index bu = s_big[b];
      const mb_index end = row_ptr[bu + 1];
      for (mb_index e = row_ptr[bu] + threadIdx.x; e < end; e += blockDim.x)
        gpr_p_visit<1>(row_ind, e, end, 0, level, inf, mu_row, mu_col, psi_row, psi_col,
                       next, next_count, seen);
    }
    // Warp tier (groups smaller than a warp only).
    unsigned big = __ballot_sync(GPR_FULL_MASK, G < 32 && sub == 0 && deg >= GPR_P_WARP_MIN);
    while (big) {
      const int src = __ffs(big) - 1;
      big &= big - 1;
      const mb_index wbeg = __shfl_sync(GPR_FULL_MASK, beg, src);
      const mb_index wend = wbeg + __shfl_sync(GPR_FULL_MASK, deg, src);
      for (mb_index e = wbeg + lane; e < wend; e += 32)
        gpr_p_visit<1>(row_ind, e, wend, 0, level, inf, mu_row, mu_col, psi_row, psi_col,
                       next, next_count, seen);
    }
    if (deg < GPR_P_WARP_MIN || G == 32)  // group tier, GPR_P_BATCH entries per lane
      for (mb_index e = beg + sub; e < beg + deg; e += GPR_P_BATCH * G)
        gpr_p_visit<GPR_P_BATCH>(row_ind, e, beg + deg, G, level, inf, mu_row, mu_col,
                                 psi_row, psi_col, next, next_count, seen);
    __syncthreads();  // s_big / s_nbig are reused by the next round
  }
}

// Lanes per vertex for `items` vertices over `threads` threads: the largest power of two
// <= 32 with items x G <= threads (1 when the items outnumber the threads). Small
// frontiers and lists then walk each adjacency with several lanes instead of one.
__device__ __forceinline__ int gpr_group_size(long long items, long long threads) {
  int G = 1;
  while (G < 32 && 2LL * G * items <= threads) G <<= 1;
  return G;
}

// Lowest-label row among nbr[begin, end) for a group of G lanes (aligned, a power of two
// <= 32; each group passes its own uniform arguments, an empty range for none). Every
// lane of the warp must call: the rounds are uniform over the warp. A round reads
// GPR_P_BATCH x G neighbours, GPR_P_BATCH per lane (entries sub, sub + G, ...; their loads
// are in flight together): the lowest label wins, ties to the earliest neighbour, and a
// group stops after the round in which its minimum reaches psi_v - 1 (Alg. 6 lines 5-12,
// the early exit tested once per round). Every neighbour's label is >= psi_v - 1 (the
// neighbourhood invariant), so the row chosen is the paper's sequential scan's: the
// earliest neighbour of the lowest label.
__device__ __forceinline__ mb_index gpr_group_min_row(const mb_index* __restrict__ nbr,
                                                      mb_index begin, mb_index end,
                                                      const mb_index* psi_row, mb_index psi_v,
                                                      mb_index inf, int G,
                                                      mb_index* psi_min_out) {
  const int lane = threadIdx.x & 31;
  const int sub = lane & (G - 1);
  mb_index psi_min = inf;
  mb_index best = -1;
  bool done = begin >= end;
  while (__any_sync(GPR_FULL_MASK, !done)) {
    mb_index uu[GPR_P_BATCH];
#pragma unroll
    for (int j = 0; j < GPR_P_BATCH; ++j) {
      const mb_index e = begin + j * G + sub;
      uu[j] = !done && e < end ? nbr[e] : -1;
    }
    // The lane's lowest (label, position in the round); positions j G + sub < 128.
    long long key = ((long long)inf << 7) | 127;
    mb_index u = -1;
#pragma unroll
    for (int j = 0; j < GPR_P_BATCH; ++j) {
      const mb_index p = uu[j] >= 0 ? __ldcg(psi_row + uu[j]) : inf;
      const long long kj = ((long long)p << 7) | (j * G + sub);
      if (kj < key) {
        key = kj;
        u = uu[j];
      }
    }
    for (int o = 1; o < G; o <<= 1) {
      const long long other = __shfl_xor_sync(GPR_FULL_MASK, key, o);
      key = other < key ? other : key;
    }
    u = __shfl_sync(GPR_FULL_MASK, u, (lane & ~(G - 1)) | (int)(key & 127 & (G - 1)));
    const mb_index p = (mb_index)(key >> 7);
    if (!done) {
      if (p < psi_min) {
        psi_min = p;
        best = u;
      }
      begin += GPR_P_BATCH * G;
      done = psi_min == psi_v - 1 || begin >= end;
    }
  }
  *psi_min_out = psi_min;
  return best;
}

// Block-wide exclusive prefix count of `flag` (every thread calls; blockDim.x a multiple
// of 32); returns this thread's rank among the flagged threads and the block's total.
__device__ __forceinline__ int gpr_block_rank(bool flag, int* s_warp, int* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned bal = __ballot_sync(GPR_FULL_MASK, flag);
  __syncthreads();  // s_warp's previous use is over
  if (lane == 0) s_warp[warp] = __popc(bal);
  __syncthreads();
  int before = 0, sum = 0;
  const int warps = blockDim.x >> 5;
  for (int w = 0; w < warps; ++w) {
    if (w == warp) before = sum;
    sum += s_warp[w];
  }
  *total = sum;
  return before + __popc(bal & ((1u << lane) - 1u));
}

// G-PR-INITKRNL (Alg. 8) of iteration `loop` over the list slots [first, len) with step
// `step` (the grid's threads, or one block's in a local phase); true when this thread
// listed a column (actExists, line 11).
__device__ __forceinline__ bool gpr_p_init_pass(mb_index* ac, const mb_index* ap, long long len,
                                                const mb_index* mu_row, const mb_index* mu_col,
                                                int* ia, int loop, long long first,
                                                long long step) {
  bool found = false;
  for (long long i = first; i < len; i += step) {
    const mb_index v = __ldcg(ap + i);
    if (v != -1 && gpr_is_active<true>(mu_row, mu_col, v)) ac[i] = v;  // lines 4-6
    const mb_index c = __ldcg(ac + i);                                  // line 8
    if (c != -1) {
      ia[c] = loop;  // line 10
      found = true;
    }
  }
  return found;
}

// G-PR-PUSHKRNL (Alg. 9) of iteration `loop` over the list, by warps [warp, warps): a group
// of G lanes per slot (gpr_group_size), 32 / G slots per warp and round; columns of >= 32
// entries to the whole warp. Every lane of a warp calls (the rounds are uniform).
__device__ __forceinline__ void gpr_p_push_pass(const mb_index* __restrict__ col_ptr,
                                                const mb_index* __restrict__ col_ind,
                                                mb_index* mu_row, mb_index* mu_col,
                                                mb_index* psi_row, mb_index* psi_col,
                                                mb_index inf, mb_index* ac, mb_index* ap,
                                                const int* ia, int loop, long long len,
                                                long long warp, long long warps, int G) {
  const int lane = threadIdx.x & 31;
  const int sub = lane & (G - 1);
  const long long spw = 32 / G;
  for (long long t0 = warp * spw; t0 < len; t0 += warps * spw) {
    const long long i = t0 + lane / G;
    mb_index v = -1, beg = 0, deg = 0, psi_min;
    if (i < len) {
      v = __ldcg(ac + i);
      if (v == -1) {
        if (sub == 0) ap[i] = -1;  // Alg. 9 line 24
      } else {
        beg = col_ptr[v];
        deg = col_ptr[v + 1] - beg;
      }
    }
    const bool grp = v != -1 && (deg < GPR_P_WARP_MIN || G == 32);
    const mb_index u = gpr_group_min_row(col_ind, grp ? beg : 0, grp ? beg + deg : 0, psi_row,
                                         grp ? __ldcg(psi_col + v) : 0, inf, G, &psi_min);
    if (grp && sub == 0)
      gpr_push_listed<true>(i, v, u, psi_min, inf, mu_row, mu_col, psi_row, psi_col, ac, ap, ia,
                            loop);
    unsigned big =
        __ballot_sync(GPR_FULL_MASK, G < 32 && sub == 0 && v != -1 && deg >= GPR_P_WARP_MIN);
    while (big) {
      const int src = __ffs(big) - 1;
      big &= big - 1;
      const mb_index wv = __shfl_sync(GPR_FULL_MASK, v, src);
      const mb_index wbeg = __shfl_sync(GPR_FULL_MASK, beg, src);
      const mb_index wend = wbeg + __shfl_sync(GPR_FULL_MASK, deg, src);
      const mb_index wu = gpr_warp_min_row<true>(col_ind, wbeg, wend, psi_row,
                                                 __ldcg(psi_col + wv), inf, &psi_min);
      if (lane == 0)
        gpr_push_listed<true>(t0 + src / G, wv, wu, psi_min, inf, mu_row, mu_col, psi_row,
                              psi_col, ac, ap, ia, loop);
      __syncwarp();
    }
  }
}

// Barrier probe: `reps` grid barriers and nothing else, for the benchmark's measure of
// what one barrier of the persistent kernel's grid costs (same barrier, same grid).
extern "C" __global__ void gpr_barrier_probe(long long* pctl, int reps,
                                             unsigned long long timeout_ns) {
  unsigned int* bar = (unsigned int*)&pctl[GPR_P_BAR];
  int* abort = (int*)&pctl[GPR_P_ABORT];
  for (int r = 0; r < reps; ++r)
    if (!mb_grid_sync(bar, abort, timeout_ns)) return;
}

extern "C" __global__ void __launch_bounds__(GPR_P_MAX_THREADS)
    gpr_persistent(mb_index m, mb_index n, const mb_index* __restrict__ row_ptr,
                   const mb_index* __restrict__ row_ind, const mb_index* __restrict__ col_ptr,
                   const mb_index* __restrict__ col_ind, mb_index* mu, mb_index* psi,
                   mb_index inf, mb_index* list0, mb_index* list1, int* ia, mb_index* queue,
                   long long* blk, long long* pctl, int variant, int adaptive, double k,
                   int gr_stop, long long local_max, unsigned long long limit_ns,
                   unsigned long long timeout_ns) {
  __shared__ mb_index s_big[GPR_P_MAX_THREADS];
  __shared__ int s_nbig;
  __shared__ int s_warp[GPR_P_MAX_THREADS / 32];
  __shared__ long long s_sum[2];
  mb_index* mu_row = mu;
  mb_index* mu_col = mu + m;
  mb_index* psi_row = psi;
  mb_index* psi_col = psi + m;
  unsigned int* bar = (unsigned int*)&pctl[GPR_P_BAR];
  int* abort = (int*)&pctl[GPR_P_ABORT];
  const bool lead = blockIdx.x == 0 && threadIdx.x == 0;
  const int lane = threadIdx.x & 31;
  const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long gthreads = (long long)gridDim.x * blockDim.x;
  const long long warp_id = gtid >> 5, warp_count = gthreads >> 5;
  const unsigned long long t_start = mb_globaltimer();
  long long len = pctl[GPR_P_LEN];  // written again only at the end, by block 0
  long long loop = 0, pushes = 0, relabels = 0, levels = 0, max_level = 0, shrinks = 0;
  long long syncs = 0, qt = 0, interval = 0, t = 0, local_steps = 0, stops = 0, gstep = 0;
  unsigned long long relabel_ns = 0, t_gr = 0;
  bool found = false, act = false, shrink = false;
  mb_index* ac = list0;  // Alg. 7's Ac and Ap, swapped after every push
  mb_index* ap = list1;

#define GPR_P_SYNC()                                    \
  do {                                                  \
    ++syncs;                                            \
    if (!mb_grid_sync(bar, abort, timeout_ns)) goto done; \
  } while (0)

  while (true) {
    // ---- G-GR (Alg. 4) with a frontier queue: Alg. 3 lines 5-7 / Alg. 7 lines 6-10 ----
    if (lead) {
      t_gr = mb_globaltimer();
      if (limit_ns != 0 && t_gr - t_start > limit_ns) atomicExch(abort, 2);
      // The next relabel's count: its last reader (relabel r - 1) passed a barrier since,
      // and its first writer comes after this relabel's first barrier. (This relabel's
      // own slot cannot be zeroed here: other blocks may be adding to it already.)
      pctl[GPR_P_NACT + (relabels + 1) % 2] = 0;
    }
    // INITRELABEL (Alg. 4 line 1); the unmatched rows form the frontier of level 0. Queue
    // index qt: half qt & 1, count slot qt % 3 (0: the previous BFS ended on it, or the
    // driver zeroed it). With relabel_stop = active, the active columns are counted too.
    if (lead) pctl[GPR_P_QCNT + (qt + 1) % 3] = pctl[GPR_P_SEEN + (qt + 1) % 3] = 0;
    {
      mb_index* q0 = queue + (qt & 1) * (long long)m;
      unsigned long long* c0 = (unsigned long long*)&pctl[GPR_P_QCNT + qt % 3];
      for (long long u = gtid; u < m; u += gthreads) {
        const bool free_row = __ldcg(mu_row + u) == -1;
        psi_row[u] = free_row ? 0 : inf;
        if (free_row) mb_append(q0, c0, (mb_index)u);
      }
      unsigned mine = 0;
      for (long long v = gtid; v < n; v += gthreads) {
        psi_col[v] = inf;
        if (gr_stop) mine += gpr_is_active<true>(mu_row, mu_col, (mb_index)v);
      }
      mine = __reduce_add_sync(GPR_FULL_MASK, mine);
      if (lane == 0 && mine != 0)
        atomicAdd((unsigned long long*)&pctl[GPR_P_NACT + relabels % 2],
                  (unsigned long long)mine);
    }
    GPR_P_SYNC();
    const long long n_active = __ldcg(&pctl[GPR_P_NACT + relabels % 2]);
    // Alg. 4 lines 3-6: one G-GR-KRNL per level pair, t of them so far. Level qt's
    // frontier count is slot qt % 3 of QCNT; with relabel_stop = active it also counts
    // the active columns it labels into slot (qt + 1) % 3 of SEEN (both rotate alike),
    // and every block adds them up in `seen` after the level's barrier. relabel_stop =
    // active (beyond the paper) ends the BFS after the level at which every active
    // column has its label (see "Early-stopped relabel" above).
    long long seen = 0;
    for (t = 0;;) {
      const long long cnt = __ldcg(&pctl[GPR_P_QCNT + qt % 3]);
      if (cnt == 0) break;
      if (gr_stop && seen >= n_active) {
        ++stops;
        ++qt;  // slot qt % 3 is not empty: the next relabel starts on the next, zeroed one
        break;
      }
      if (cnt <= local_max) {
        // Local phase: block 0 runs levels alone, with block barriers, while the frontier
        // stays within local_max rows; the others wait at the grid barrier. The first
        // barrier lets every block read cnt before block 0 reuses its slot.
        GPR_P_SYNC();
        if (blockIdx.x == 0) {
          long long lq = qt, lt = t, c = cnt;
          while (true) {
            if (threadIdx.x == 0)
              pctl[GPR_P_QCNT + (lq + 2) % 3] = pctl[GPR_P_SEEN + (lq + 2) % 3] = 0;
            gpr_p_bfs_level(row_ptr, row_ind, queue + (lq & 1) * (long long)m, c,
                            queue + ((lq + 1) & 1) * (long long)m,
                            (unsigned long long*)&pctl[GPR_P_QCNT + (lq + 1) % 3],
                            (mb_index)(2 * lt), inf, mu_row, mu_col, psi_row, psi_col, s_big,
                            &s_nbig, gpr_group_size(c, blockDim.x), 0, 1,
                            gr_stop ? (unsigned long long*)&pctl[GPR_P_SEEN + (lq + 1) % 3]
                                    : nullptr);
            __syncthreads();
            seen += __ldcg(&pctl[GPR_P_SEEN + (lq + 1) % 3]);
            ++lt;
            ++lq;
            ++local_steps;
            c = __ldcg(&pctl[GPR_P_QCNT + lq % 3]);
            if (c == 0 || c > local_max || (gr_stop && seen >= n_active)) break;
          }
          if (threadIdx.x == 0) {
            pctl[GPR_P_HQ] = lq;
            pctl[GPR_P_HT] = lt;
            pctl[GPR_P_HSEEN] = seen;
          }
        }
        GPR_P_SYNC();
        qt = __ldcg(&pctl[GPR_P_HQ]);
        t = __ldcg(&pctl[GPR_P_HT]);
        seen = __ldcg(&pctl[GPR_P_HSEEN]);
        continue;
      }
      if (lead) pctl[GPR_P_QCNT + (qt + 2) % 3] = pctl[GPR_P_SEEN + (qt + 2) % 3] = 0;
      gpr_p_bfs_level(row_ptr, row_ind, queue + (qt & 1) * (long long)m, cnt,
                      queue + ((qt + 1) & 1) * (long long)m,
                      (unsigned long long*)&pctl[GPR_P_QCNT + (qt + 1) % 3], (mb_index)(2 * t),
                      inf, mu_row, mu_col, psi_row, psi_col, s_big, &s_nbig,
                      gpr_group_size(cnt, gthreads), blockIdx.x, gridDim.x,
                      gr_stop ? (unsigned long long*)&pctl[GPR_P_SEEN + (qt + 1) % 3] : nullptr);
      GPR_P_SYNC();
      seen += __ldcg(&pctl[GPR_P_SEEN + (qt + 1) % 3]);
      ++t;
      ++qt;
    }
    // The paper's loop calls G-GR-KRNL once more than there were levels that added rows
    // (at least once); maxLevel = cLevel after the loop (Alg. 4 line 8).
    t = t > 1 ? t : 1;
    levels += t;
    max_level = 2 * t;
    ++relabels;
    if (lead) relabel_ns += mb_globaltimer() - t_gr;
    interval = gpr_interval(adaptive, k, max_level);

    // ---- push iterations until the next relabel (Alg. 3 lines 8-10 / Alg. 7 11-19) ----
    for (long long it = 0; it < interval; ++it) {
      // actExists of the grid's push iterations: slot gstep % 3 (local phases use none).
      const int slot = GPR_P_ACT + (int)(gstep % 3);
      if (variant == 0) {
        if (lead) pctl[GPR_P_ACT + (gstep + 1) % 3] = 0;
        ++gstep;
        ++loop;
        // G-PR-KRNL (Alg. 6) over all columns, 32 per warp; walks split by degree.
        found = false;
        for (long long tile = warp_id * 32; tile < n; tile += warp_count * 32) {
          const long long v = tile + lane;
          const bool active = v < n && gpr_is_active<true>(mu_row, mu_col, v);  // line 3
          found |= active;
          mb_index beg = 0, deg = 0, psi_min;
          if (active) {
            beg = col_ptr[v];
            deg = col_ptr[v + 1] - beg;
          }
          if (active && deg < GPR_P_WARP_MIN) {
            const mb_index u = gpr_min_row<true>(col_ind, beg, beg + deg, psi_row,
                                                 __ldcg(psi_col + v), inf, &psi_min);
            gpr_push_col(v, u, psi_min, inf, mu_row, mu_col, psi_row, psi_col);
          }
          unsigned big = __ballot_sync(GPR_FULL_MASK, active && deg >= GPR_P_WARP_MIN);
          while (big) {
            const int src = __ffs(big) - 1;
            big &= big - 1;
            const mb_index wv = tile + src;
            const mb_index wbeg = __shfl_sync(GPR_FULL_MASK, beg, src);
            const mb_index wend = wbeg + __shfl_sync(GPR_FULL_MASK, deg, src);
            const mb_index u = gpr_warp_min_row<true>(col_ind, wbeg, wend, psi_row,
                                                      __ldcg(psi_col + wv), inf, &psi_min);
            if (lane == 0) gpr_push_col(wv, u, psi_min, inf, mu_row, mu_col, psi_row, psi_col);
            __syncwarp();
          }
        }
        if (__syncthreads_or(found) && threadIdx.x == 0) pctl[slot] = 1;  // actExists
        GPR_P_SYNC();
        act = __ldcg(&pctl[slot]) != 0;
        if (!act) goto finished;  // Alg. 3 line 12: no active column was left
        ++pushes;
        continue;
      }
      shrink = variant == 2 && it == 0 && len >= GPR_SHRINK_MIN;  // Alg. 7 line 11
      if (!shrink && len <= local_max) {
        // Local phase: block 0 runs the rest of the interval's iterations alone (the
        // list's length stays put until the next relabel), with block barriers.
        if (blockIdx.x == 0) {
          long long lloop = loop, lpush = pushes, lit = it;
          mb_index* la = ac;
          mb_index* lp = ap;
          int fin = 0, swaps = 0;
          for (; lit < interval; ++lit) {
            ++lloop;
            ++local_steps;
            const bool f = gpr_p_init_pass(la, lp, len, mu_row, mu_col, ia, (int)lloop,
                                           threadIdx.x, blockDim.x);
            if (!__syncthreads_or(f)) {  // Alg. 7 line 5 / 19: no active column was left
              fin = 1;
              break;
            }
            ++lpush;
            gpr_p_push_pass(col_ptr, col_ind, mu_row, mu_col, psi_row, psi_col, inf, la, lp,
                            ia, (int)lloop, len, threadIdx.x >> 5, blockDim.x >> 5,
                            gpr_group_size(len, blockDim.x));
            __syncthreads();
            mb_index* tmp = la;  // Alg. 7 line 18
            la = lp;
            lp = tmp;
            swaps ^= 1;
          }
          if (threadIdx.x == 0) {
            pctl[GPR_P_HLOOP] = lloop;
            pctl[GPR_P_HPUSH] = lpush;
            pctl[GPR_P_HFLAGS] = fin | (swaps << 1);
          }
        }
        GPR_P_SYNC();
        loop = __ldcg(&pctl[GPR_P_HLOOP]);
        pushes = __ldcg(&pctl[GPR_P_HPUSH]);
        const long long flags = __ldcg(&pctl[GPR_P_HFLAGS]);
        if (flags & 2) {
          mb_index* tmp = ac;
          ac = ap;
          ap = tmp;
        }
        if (flags & 1) goto finished;
        break;  // the interval is over
      }
      if (lead) pctl[GPR_P_ACT + (gstep + 1) % 3] = 0;
      ++gstep;
      ++loop;
      // G-PR-INITKRNL (Alg. 8) for iteration `loop` (the stamp; see gpr_init_active).
      found = gpr_p_init_pass(ac, ap, len, mu_row, mu_col, ia, (int)loop, gtid, gthreads);
      if (__syncthreads_or(found) && threadIdx.x == 0) pctl[slot] = 1;  // actExists
      GPR_P_SYNC();
      act = __ldcg(&pctl[slot]) != 0;
      if (!act) goto finished;  // Alg. 7 line 5 / 19: no active column was left
      ++pushes;
      if (shrink) {
        // G-PR-SHRKRNL (Alg. 7 line 12): the listed columns of Ac, in order, to the front
        // of Ap. Block b owns entries [b chunk, (b + 1) chunk); counts, barrier, offsets.
        const long long chunk = (len + gridDim.x - 1) / gridDim.x;
        const long long lo = blockIdx.x * chunk;
        const long long hi = lo + chunk < len ? lo + chunk : len;
        long long mine = 0;
        for (long long b0 = lo; b0 < hi; b0 += blockDim.x) {
          const long long i = b0 + threadIdx.x;
          mine += __syncthreads_count(i < hi && __ldcg(ac + i) != -1);
        }
        if (threadIdx.x == 0) blk[blockIdx.x] = mine;
        GPR_P_SYNC();
        if (threadIdx.x == 0) s_sum[0] = s_sum[1] = 0;
        __syncthreads();
        long long before = 0, all = 0;
        for (long long b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
          const long long x = __ldcg(blk + b);
          all += x;
          if (b < blockIdx.x) before += x;
        }
        atomicAdd((unsigned long long*)&s_sum[0], (unsigned long long)before);
        atomicAdd((unsigned long long*)&s_sum[1], (unsigned long long)all);
        __syncthreads();
        long long at = s_sum[0];
        for (long long b0 = lo; b0 < hi; b0 += blockDim.x) {
          const long long i = b0 + threadIdx.x;
          const mb_index v = i < hi ? __ldcg(ac + i) : -1;
          int tile_total;
          const int rank = gpr_block_rank(v != -1, s_warp, &tile_total);
          if (v != -1) ap[at + rank] = v;
          at += tile_total;
        }
        len = s_sum[1];
        ++shrinks;
        GPR_P_SYNC();
        mb_index* tmp = ac;  // the push reads the compacted list; Ac is back after the swap
        ac = ap;
        ap = tmp;
      }
      // G-PR-PUSHKRNL (Alg. 9) over the list.
      gpr_p_push_pass(col_ptr, col_ind, mu_row, mu_col, psi_row, psi_col, inf, ac, ap, ia,
                      (int)loop, len, warp_id, warp_count, gpr_group_size(len, gthreads));
      GPR_P_SYNC();
      // Alg. 7 line 18: swap Ac and Ap.
      mb_index* tmp = ac;
      ac = ap;
      ap = tmp;
    }
  }

finished:
  // FIXMATCHING (Alg. 3 line 11 / Alg. 7 line 20), after the barrier of the last step.
  for (long long v = gtid; v < n; v += gthreads) {
    const mb_index mv = __ldcg(mu_col + v);
    if (mv < 0 || __ldcg(mu_row + mv) != v) mu_col[v] = -1;
  }
done:
  if (lead) {
    pctl[GPR_P_LEN] = len;
    pctl[GPR_P_PUSHES] = pushes;
    pctl[GPR_P_RELABELS] = relabels;
    pctl[GPR_P_LEVELS] = levels;
    pctl[GPR_P_MAXLEVEL] = max_level;
    pctl[GPR_P_SHRINKS] = shrinks;
    pctl[GPR_P_SYNCS] = syncs;
    pctl[GPR_P_LOOPS] = loop;
    pctl[GPR_P_RELABEL_NS] = (long long)relabel_ns;
    pctl[GPR_P_LOCAL] = local_steps;
    pctl[GPR_P_STOPS] = stops;
  }
#undef GPR_P_SYNC
}
