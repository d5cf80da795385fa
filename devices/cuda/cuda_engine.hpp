// The `cuda` engine: executes a training-step graph on one or several NVIDIA GPUs of this
// machine (data parallel, one process, NCCL all-reduce overlapped with backward) and times
// the steps with CUDA events, as tf_cnn_benchmarks does (warm-up excluded, mean of the
// timed steps). Without a usable GPU it reports itself unavailable with the reason.
#pragma once
#include <memory>

#include "engine/engine.hpp"

namespace xpusim::cuda {

std::unique_ptr<Engine> make_cuda_engine();

}  // namespace xpusim::cuda
