// G-PR: atomic- and lock-free push-relabel maximum-cardinality bipartite matching.
//
// Deveci, Kaya, Uçar & Çatalyürek, an atomic- and lock-free GPU push-relabel algorithm for
// maximum-cardinality bipartite matching ("G-PR"; plain text in the shared papers folder,
// deveci-gpu-push-relabel-gpr.md), Algorithms 3-9. Driven by matchbench/solvers/gpu/gpr.py.
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

// Lowest-label row in the column list `nbr[begin, end)`: the push-relabel scan of
// Deveci et al. G-PR, Alg. 6 lines 5-12 (= Alg. 9 lines 4-11). Stops early once a row of
// label psi_v - 1 is found, the least any neighbour can have (the neighbourhood invariant
// psi(u) >= psi(v) - 1). Labels read here may be changed concurrently by other columns'
// pushes; each read is of one aligned integer, so the scan sees some label each row had
// during the launch, which is what the paper's race argument (Sec. III-B) allows.
__device__ __forceinline__ mb_index gpr_min_row(const mb_index* __restrict__ nbr, mb_index begin,
                                                mb_index end, const mb_index* psi_row,
                                                mb_index psi_v, mb_index inf,
                                                mb_index* psi_min_out) {
  mb_index psi_min = inf;
  mb_index best = -1;
  for (mb_index e = begin; e < end; ++e) {
    const mb_index u = nbr[e];
    const mb_index p = psi_row[u];
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
__device__ __forceinline__ bool gpr_is_active(const mb_index* mu_row, const mb_index* mu_col,
                                              mb_index v) {
  const mb_index mv = mu_col[v];
  return mv == -1 || (mv >= 0 && mu_row[mv] != v);
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
      p = psi_row[u];
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
    if (psi_min < inf) {  // Alg. 6 lines 13-17
      mu_row[u] = v;
      mu_col[v] = u;
      psi_col[v] = psi_min + 1;
      psi_row[u] = psi_min + 2;
    } else {
      mu_col[v] = -2;  // Alg. 6 line 19
    }
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
      if (lane == 0) {
        if (psi_min < inf) {  // Alg. 6 lines 13-17
          mu_row[u] = v;
          mu_col[v] = u;
          psi_col[v] = psi_min + 1;
          psi_row[u] = psi_min + 2;
        } else {
          mu_col[v] = -2;  // Alg. 6 line 19
        }
      }
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
    if (psi_min < inf) {
      const mb_index w = mu_row[u];
      if (w == -1 || ia[w] != loop) {  // Alg. 9 line 13
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
    if (lane == 0) {
      if (psi_min < inf) {
        const mb_index w = mu_row[u];
        if (w == -1 || ia[w] != loop) {  // Alg. 9 line 13
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
