// Device-side helpers shared by the backend's kernel files (kernels.cu: elementwise, loss,
// embedding, dropout, optimizers; kernels_sequence.cu: LSTM, layer norm, softmax, GELU,
// transpose): launch geometry and checks, fp32 loads and stores of every element type, the
// element-type dispatch, and block-wide reductions.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "common/error.hpp"
#include "devices/cuda/kernels.cuh"

namespace xpusim::cuda::kern {

inline constexpr int kThreads = 256;

inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  // Grid-stride loops cover the rest; 64k blocks keep every SM of an H100 busy.
  return static_cast<int>(b > 65535 ? 65535 : b);
}

inline void check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw InternalError(std::string("CUDA kernel ") + what + ": " + cudaGetErrorString(e));
}

template <class T> __device__ __forceinline__ float ld(T v);
template <> __device__ __forceinline__ float ld<float>(float v) { return v; }
template <> __device__ __forceinline__ float ld<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T st(float v);
template <> __device__ __forceinline__ float st<float>(float v) { return v; }
template <> __device__ __forceinline__ __half st<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 st<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

__device__ __forceinline__ float sigmoidf(float x) { return 1.f / (1.f + __expf(-x)); }

#define XPUSIM_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

// Runs the statements in __VA_ARGS__ with the type alias ALIAS bound to the C++ type of
// DType t (a macro rather than a template lambda: CMake's CUDA support stops at C++17).
#define XPUSIM_DISPATCH_AS(t, what, ALIAS, ...)                                                   \
  do {                                                                                            \
    switch (t) {                                                                                  \
      case DType::fp32: { using ALIAS = float; __VA_ARGS__; break; }                              \
      case DType::fp16: { using ALIAS = __half; __VA_ARGS__; break; }                             \
      case DType::bf16: { using ALIAS = __nv_bfloat16; __VA_ARGS__; break; }                     \
      default: throw InternalError(std::string(what) + ": unsupported element type " + dtype_name(t)); \
    }                                                                                             \
  } while (0)
#define XPUSIM_DISPATCH(t, what, ...)          \
  do {                                         \
    XPUSIM_DISPATCH_AS(t, what, T, __VA_ARGS__); \
    check_launch(what);                        \
  } while (0)


// Sum of v over the block (blockDim.x == kThreads); every thread gets the total. `red` is
// kThreads floats of shared memory, free again on return.
__device__ inline float block_sum(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  float total = red[0];
  __syncthreads();
  return total;
}

__device__ inline float block_max(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + k]);
    __syncthreads();
  }
  float m = red[0];
  __syncthreads();
  return m;
}

}  // namespace xpusim::cuda::kern
