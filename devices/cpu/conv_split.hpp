// A convolution's backward-weights pass split over the minibatch: each thread runs its own
// single-threaded oneDNN primitive on a contiguous slice of the images, into its own partial
// weight gradient, and the partials are summed in one parallel pass. Used for bf16
// backward-weights on the native path because oneDNN 2.6's multi-threaded
// jit_avx512_core_bf16 backward-weights kernel synchronises its threads with spinning
// barriers (transposition and reduction of per-thread partials) for some shapes: on the
// shared 2-core development machine ResNet-50's stride-2 3x3 and 7x7x512 3x3 layers took
// 160-200 ms on 2 threads against 25-35 ms on one (and against 25-50 ms split this way),
// ~25% of a bf16 step. Here the only synchronisation is the end of each parallel loop.
#pragma once
#include <dnnl.hpp>

#include <functional>
#include <vector>

namespace xpusim::cpu {

struct MinibatchSplit {
  struct Part {
    int64_t n_begin = 0;
    dnnl::convolution_backward_weights prim;
    dnnl::memory::desc src, diff_dst, diff_weights, diff_bias, scratchpad;
  };
  std::vector<Part> parts;  // one per thread, in thread order
  size_t src_image_bytes = 0, dst_image_bytes = 0;
  size_t weight_floats = 0, bias_floats = 0;
  bool bias = false;
};

// Builds a primitive for the images of one slice (src and diff_dst descriptors of that
// many images, attributes with a user scratchpad).
using BwdWeightsPdOf = std::function<dnnl::convolution_backward_weights::primitive_desc(
    const dnnl::memory::desc& src, const dnnl::memory::desc& diff_dst, const dnnl::primitive_attr& attr)>;

// Plans the split of `full` (the primitive the step would otherwise run) over `threads`
// threads, each taking at least two images. False (and no plan) when it does not apply:
// fewer than 2 threads or images, a layout in which an image's data is not one contiguous
// run (images outermost), or slice primitives that take other layouts than `full`.
bool plan_minibatch_split(const dnnl::convolution_backward_weights::primitive_desc& full, bool bias, int threads,
                          const BwdWeightsPdOf& pd_of, MinibatchSplit& out);

// Runs the plan: src and diff_dst in the full primitive's layouts; writes diff_weights
// (fp32, full's layout) and diff_bias (may be null without bias). partial(k, bytes) returns
// storage for thread k's partials and scratchpad; it is called before the parallel region.
void run_minibatch_split(const MinibatchSplit& plan, const dnnl::engine& eng, const void* src, const void* diff_dst,
                         float* diff_weights, float* diff_bias, const std::function<void*(int, size_t)>& partial);

}  // namespace xpusim::cpu
