// Convolution algorithm choice, made once per shape: cuDNN's Find benchmarks the candidate
// algorithms the first time a (shape, type, direction) is seen and the winner is cached, as
// frameworks do (PyTorch's cudnn.benchmark, TensorFlow's autotune). The cache and the pick
// rule are plain C++ so they are unit-tested on the host.
#pragma once
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace xpusim::cuda {

enum class ConvDirection { forward, backward_data, backward_filter };

struct ConvKey {
  ConvDirection dir = ConvDirection::forward;
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0;
  int kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1, groups = 1;
  int data_type = 0;  // cudnnDataType_t
  int math_type = 0;  // cudnnMathType_t
  auto operator<=>(const ConvKey&) const = default;
};

// One candidate as reported by cuDNN's Find (cudnnConvolution*AlgoPerf_t).
struct AlgoCandidate {
  int algo = 0;
  bool ok = false;          // status == CUDNN_STATUS_SUCCESS
  float time_ms = 0;
  size_t workspace_bytes = 0;
  int math_type = 0;
};

// The fastest successful candidate whose workspace fits and, when `only_math_type` is not
// -1, that ran in that math mode; -1 if none does. fp32 asks for CUDNN_FMA_MATH only: cuDNN's
// Find also reports candidates in CUDNN_DEFAULT_MATH, which permits TF32 tensor cores on
// Ampere and later, so picking one of those would silently run fp32 as TF32 (seen on an H200:
// a filter gradient 2.6% off the fp32 host reference).
int pick_algorithm(const std::vector<AlgoCandidate>& c, size_t workspace_limit_bytes, int only_math_type = -1);

struct AlgoChoice {
  int algo = 0;
  size_t workspace_bytes = 0;
  int math_type = 0;
};

class AlgoCache {
 public:
  // Returns the cached choice for `key`, calling `find` (the benchmark) only on a miss.
  const AlgoChoice& get(const ConvKey& key, const std::function<AlgoChoice()>& find);
  int64_t finds() const { return finds_; }
  int64_t hits() const { return hits_; }
  size_t size() const { return map_.size(); }

 private:
  std::map<ConvKey, AlgoChoice> map_;
  int64_t finds_ = 0, hits_ = 0;
};

}  // namespace xpusim::cuda
