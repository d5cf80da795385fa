// cuDNN wrappers: RAII descriptors and convolutions (forward, backward data, backward
// filter) whose algorithm is found once per shape with cudnnFind*Ex and cached (algo_cache.hpp).
#pragma once
#include <cudnn.h>

#include <cstdint>

#include "devices/cuda/algo_cache.hpp"
#include "devices/cuda/caching_pool.hpp"
#include "models/dtype.hpp"
#include "models/graph.hpp"

namespace xpusim::cuda {

cudnnDataType_t cudnn_type(DType t);

class TensorDescriptor {
 public:
  TensorDescriptor(int64_t n, int64_t c, int64_t h, int64_t w, DType t);
  ~TensorDescriptor();
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

// How convolutions may compute: fp32 FMA only, TF32 tensor cores allowed, or fp16/bf16
// tensor cores (cuDNN's CUDNN_FMA_MATH / CUDNN_DEFAULT_MATH / CUDNN_TENSOR_OP_MATH).
cudnnMathType_t conv_math_type(Precision p);

struct ConvCall {
  ConvDirection dir = ConvDirection::forward;
  int64_t n = 0, c = 0, h = 0, w = 0;   // input x
  int64_t k = 0, ho = 0, wo = 0;        // output y
  OpAttrs attrs;                        // window, stride, padding, dilation, groups
  DType type = DType::fp32;             // x, w and y share it
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  // forward: xp, wp in; backward_data: yp (= dy), wp in; backward_filter: xp, yp (= dy) in;
  // `out` receives y, dx or dw.
  const void* xp = nullptr;
  const void* wp = nullptr;
  const void* yp = nullptr;
  void* out = nullptr;
};

void run_convolution(cudnnHandle_t h, AlgoCache& cache, CachingPool& pool, const ConvCall& c);

}  // namespace xpusim::cuda
