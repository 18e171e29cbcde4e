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
