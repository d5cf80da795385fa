// cuDNN descriptors and convolutions with a per-shape algorithm cache (see dnn.hpp).
#include "devices/cuda/dnn.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "devices/cuda/cuda_check.hpp"

namespace xpusim::cuda {

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::fp32: return CUDNN_DATA_FLOAT;
    case DType::fp16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::int32: return CUDNN_DATA_INT32;
    case DType::uint8: return CUDNN_DATA_UINT8;
    case DType::fp8: break;  // no fp8 convolutions: the model side only (models/dtype.hpp)
  }
  return CUDNN_DATA_FLOAT;
}

TensorDescriptor::TensorDescriptor(int64_t n, int64_t c, int64_t h, int64_t w, DType t) {
  XPUSIM_CUDA(cudnnCreateTensorDescriptor(&d_));
  XPUSIM_CUDA(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, cudnn_type(t), static_cast<int>(n),
                                         static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)));
}

TensorDescriptor::~TensorDescriptor() { cudnnDestroyTensorDescriptor(d_); }

cudnnMathType_t conv_math_type(Precision p) {
  switch (p) {
    case Precision::fp32: return CUDNN_FMA_MATH;       // no TF32: the fp32 baseline
    case Precision::tf32: return CUDNN_DEFAULT_MATH;   // lets cuDNN use TF32 tensor cores
    default: return CUDNN_TENSOR_OP_MATH;              // fp16/bf16 tensor cores
  }
}

namespace {

// The descriptors of one convolution call, released on scope exit.
struct ConvDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  explicit ConvDescs(const ConvCall& c) {
    const OpAttrs& a = c.attrs;
    XPUSIM_CUDA(cudnnCreateTensorDescriptor(&x));
    XPUSIM_CUDA(cudnnCreateTensorDescriptor(&y));
    XPUSIM_CUDA(cudnnCreateFilterDescriptor(&w));
    XPUSIM_CUDA(cudnnCreateConvolutionDescriptor(&conv));
    // cuDNN's 4-d descriptors hold int32 counts: a larger tensor (vgg16's first activation at
    // batch 1,024 has 3.3e9 elements, which fits in an H200's memory in fp16) would come back
    // as CUDNN_STATUS_NOT_SUPPORTED; say what it is.
    for (int64_t numel : {c.n * c.c * c.h * c.w, c.n * c.k * c.ho * c.wo})
      if (numel > int64_t{std::numeric_limits<int32_t>::max()})
        throw UnavailableError("a convolution tensor of " + std::to_string(numel) +
                               " elements (batch " + std::to_string(c.n) +
                               ") is beyond cuDNN's limit of 2^31-1 elements per tensor; try a smaller batch");
    cudnnDataType_t t = cudnn_type(c.type);
    XPUSIM_CUDA(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, t, int(c.n), int(c.c), int(c.h), int(c.w)));
    XPUSIM_CUDA(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, t, int(c.n), int(c.k), int(c.ho), int(c.wo)));
    XPUSIM_CUDA(cudnnSetFilter4dDescriptor(w, t, CUDNN_TENSOR_NCHW, int(c.k), int(c.c / a.groups), a.kernel_h,
                                           a.kernel_w));
    // fp32 accumulation for every storage type (cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configs).
    XPUSIM_CUDA(cudnnSetConvolution2dDescriptor(conv, a.pad_h, a.pad_w, a.stride_h, a.stride_w, a.dilation_h,
                                                a.dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    XPUSIM_CUDA(cudnnSetConvolutionGroupCount(conv, a.groups));
    XPUSIM_CUDA(cudnnSetConvolutionMathType(conv, c.math));
  }
  ~ConvDescs() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  ConvDescs(const ConvDescs&) = delete;
  ConvDescs& operator=(const ConvDescs&) = delete;
};

template <class Perf>
std::vector<AlgoCandidate> candidates(const Perf* p, int n) {
  std::vector<AlgoCandidate> v;
  for (int i = 0; i < n; ++i)
    v.push_back({static_cast<int>(p[i].algo), p[i].status == CUDNN_STATUS_SUCCESS, p[i].time,
                 p[i].memory, static_cast<int>(p[i].mathType)});
  return v;
}

// Scratch for the benchmark: as much as the pool can give up to 1 GiB, so the search is not
// limited to workspace-free algorithms but never fails for want of memory.
struct FindWorkspace {
  CachingPool& pool;
  void* p = nullptr;
  size_t bytes = 0;
  explicit FindWorkspace(CachingPool& pl) : pool(pl) {
    for (size_t b = size_t{1} << 30; b >= (size_t{16} << 20); b /= 4)
      if ((p = pool.try_allocate(b))) {
        bytes = b;
        break;
      }
  }
  ~FindWorkspace() {
    if (p) pool.release(p);
  }
  FindWorkspace(const FindWorkspace&) = delete;
  FindWorkspace& operator=(const FindWorkspace&) = delete;
};

AlgoChoice find(cudnnHandle_t h, CachingPool& pool, const ConvCall& c, const ConvDescs& d) {
  constexpr int kMax = 16;
  int got = 0;
  std::vector<AlgoCandidate> cand;
  FindWorkspace ws(pool);
  switch (c.dir) {
    case ConvDirection::forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[kMax];
      XPUSIM_CUDA(cudnnFindConvolutionForwardAlgorithmEx(h, d.x, c.xp, d.w, c.wp, d.conv, d.y, c.out, kMax, &got, perf,
                                                         ws.p, ws.bytes));
      cand = candidates(perf, got);
      break;
    }
    case ConvDirection::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
      XPUSIM_CUDA(cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, c.wp, d.y, c.yp, d.conv, d.x, c.out, kMax, &got,
                                                              perf, ws.p, ws.bytes));
      cand = candidates(perf, got);
      break;
    }
    case ConvDirection::backward_filter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
      XPUSIM_CUDA(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x, c.xp, d.y, c.yp, d.conv, d.w, c.out, kMax,
                                                                &got, perf, ws.p, ws.bytes));
      cand = candidates(perf, got);
      break;
    }
  }
  const bool fma_only = c.math == CUDNN_FMA_MATH;
  int best = pick_algorithm(cand, ws.bytes, fma_only ? int{CUDNN_FMA_MATH} : -1);
  // No candidate reported in FMA mode: take the fastest of any, and still run it in FMA mode
  // (the descriptor's request), so that fp32 stays fp32.
  bool forced = false;
  if (best < 0 && fma_only) {
    best = pick_algorithm(cand, ws.bytes);
    forced = true;
  }
  if (best < 0) throw InternalError("cuDNN found no usable convolution algorithm");
  const AlgoCandidate& b = cand[static_cast<size_t>(best)];
  return {b.algo, b.workspace_bytes, forced ? int{CUDNN_FMA_MATH} : b.math_type};
}

}  // namespace

void run_convolution(cudnnHandle_t h, AlgoCache& cache, CachingPool& pool, const ConvCall& c) {
  ConvDescs d(c);
  const OpAttrs& a = c.attrs;
  ConvKey key{c.dir, c.n, c.c, c.h, c.w, c.k, a.kernel_h, a.kernel_w, a.stride_h, a.stride_w, a.pad_h, a.pad_w,
              a.dilation_h, a.dilation_w, a.groups, static_cast<int>(cudnn_type(c.type)), static_cast<int>(c.math)};
  const AlgoChoice& ch = cache.get(key, [&] { return find(h, pool, c, d); });
  // Find may have measured the winner under a different math mode than requested (e.g.
  // FMA fallback); run it the way it was measured. fp32 (FMA) winners are FMA by construction
  // (pick_algorithm), so fp32 never runs as TF32.
  XPUSIM_CUDA(cudnnSetConvolutionMathType(d.conv, static_cast<cudnnMathType_t>(ch.math_type)));
  void* ws = ch.workspace_bytes ? pool.allocate(ch.workspace_bytes) : nullptr;
  const float one = 1.f, zero = 0.f;
  switch (c.dir) {
    case ConvDirection::forward:
      XPUSIM_CUDA(cudnnConvolutionForward(h, &one, d.x, c.xp, d.w, c.wp, d.conv,
                                          static_cast<cudnnConvolutionFwdAlgo_t>(ch.algo), ws, ch.workspace_bytes,
                                          &zero, d.y, c.out));
      break;
    case ConvDirection::backward_data:
      XPUSIM_CUDA(cudnnConvolutionBackwardData(h, &one, d.w, c.wp, d.y, c.yp, d.conv,
                                               static_cast<cudnnConvolutionBwdDataAlgo_t>(ch.algo), ws,
                                               ch.workspace_bytes, &zero, d.x, c.out));
      break;
    case ConvDirection::backward_filter:
      XPUSIM_CUDA(cudnnConvolutionBackwardFilter(h, &one, d.x, c.xp, d.y, c.yp, d.conv,
                                                 static_cast<cudnnConvolutionBwdFilterAlgo_t>(ch.algo), ws,
                                                 ch.workspace_bytes, &zero, d.w, c.out));
      break;
  }
  // Stream order makes the immediate release safe: later users of the block queue behind.
  if (ws) pool.release(ws);
}

}  // namespace xpusim::cuda
