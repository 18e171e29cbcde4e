// Device helpers shared by every matchbench kernel family.
#pragma once

// Index type of graph arrays: int32 where the graph fits (the loader guarantees it for
// graphs under 2^31 vertices and edges); families compiled with -DMB_INDEX64 use int64.
#ifdef MB_INDEX64
typedef long long mb_index;
#else
typedef int mb_index;
#endif

// Grid-stride loop: CT layouts launch a constant grid and stride; MT layouts launch one
// thread per item and run the body once.
#define MB_GRID_STRIDE(i, n)                                                  \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)

// Compare-and-swap on a graph index (either index width).
__device__ __forceinline__ mb_index mb_cas(mb_index* p, mb_index expected, mb_index value) {
#ifdef MB_INDEX64
  return (mb_index)atomicCAS((unsigned long long*)p, (unsigned long long)expected,
                             (unsigned long long)value);
#else
  return atomicCAS(p, expected, value);
#endif
}

// Appends v to a queue whose length is *count. Warp-aggregated: the lanes that append at
// the same time take one atomicAdd between them (a BFS level of a large mesh inserts
// millions of columns into one counter, which would otherwise serialize at that address).
// Callers run whole warps (block sizes are multiples of 32).
__device__ __forceinline__ void mb_append(mb_index* queue, unsigned long long* count,
                                          mb_index v) {
  const unsigned active = __activemask();
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(active) - 1;
  unsigned long long base = 0;
  if (lane == leader) base = atomicAdd(count, (unsigned long long)__popc(active));
  base = __shfl_sync(active, base, leader);
  queue[base + __popc(active & ((1u << lane) - 1))] = v;
}

// ---- Persistent kernels: clock and grid-wide barrier --------------------------------

__device__ __forceinline__ unsigned long long mb_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Grid-wide barrier of a co-resident grid (every thread of every block calls it). The
// scheme of CUDA's cooperative-groups grid sync, without its headers: each block's thread
// 0 adds 1 to the barrier word, block 0 adds 2^31 - (gridDim.x - 1), so the arrivals of one
// barrier add exactly 2^31 and the last one flips the top bit, which releases the waiters
// (a sense reversal); the word needs no reset. The fences publish the block's writes
// before it arrives and order its later reads after the release. A wait longer than
// `timeout_ns` (a grid that is not co-resident, or blocks that took different paths: a
// bug) sets *abort; a waiter that sees it gives up too, and so does a block that finds it
// set once the barrier is passed (a kernel may also set it to stop early, e.g. at a time
// limit). Returns false when this block gave up.
__device__ inline bool mb_grid_sync(unsigned int* bar, int* abort, unsigned long long timeout_ns) {
  __shared__ int s_ok;
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
    __threadfence();
    const unsigned int old = atomicAdd(bar, add);
    int ok = 1;
    unsigned int spins = 0;
    unsigned long long t0 = 0;
    // The low 31 bits are 0 between barriers (the word is zeroed before the launch), so
    // the top bit flips exactly at the last arrival: that block goes on without a polling
    // round trip.
    const bool last = ((old ^ (old + add)) & 0x80000000u) != 0;
    while (!last && ((old ^ *(volatile unsigned int*)bar) & 0x80000000u) == 0) {
      if ((++spins & 1023u) == 0) {
        if (*(volatile int*)abort) {
          ok = 0;
          break;
        }
        const unsigned long long t = mb_globaltimer();
        if (t0 == 0) {
          t0 = t;
        } else if (t - t0 > timeout_ns) {
          atomicExch(abort, 1);
          ok = 0;
          break;
        }
      }
    }
    __threadfence();
    // A block that gave up may have left before this barrier: leave too (the same answer
    // for every thread of the block, so its later barriers stay uniform).
    if (ok && *(volatile int*)abort) ok = 0;
    s_ok = ok;
  }
  __syncthreads();
  return s_ok != 0;
}
