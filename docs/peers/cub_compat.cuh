// matchbench: CUB 3 (CUDA 13) no longer has cub::Min and cub::Sum, which HyLAC's reductions
// name; these two functors stand in for them. Included before HyLAC's sources by its build:
//   make ARCH=90 NVCC="nvcc -include MATCHBENCH/docs/peers/cub_compat.cuh"
// (not needed with CUDA 12, whose CUB still has them).
#pragma once
namespace cub {
// Two parameter types: HyLAC reduces uint costs from an int initial value, and CUB 3
// invokes the operator with (init, item) as well as (item, item).
struct Min {
  template <class A, class B>
  __host__ __device__ __forceinline__ auto operator()(const A &a, const B &b) const { return b < a ? b : a; }
};
struct Sum {
  template <class A, class B>
  __host__ __device__ __forceinline__ auto operator()(const A &a, const B &b) const { return a + b; }
};
}  // namespace cub
