// The `cpu` engine: executes training steps of the op graph for real on this machine
// (executor.hpp) and measures them as tf_cnn_benchmarks does: warm-up steps excluded,
// mean wall time of the timed steps, plus per-op-kind time, peak RSS and the achieved
// conv/matmul GFLOP/s.
#pragma once
#include <memory>

#include "engine/engine.hpp"

namespace xpusim::cpu {

std::unique_ptr<Engine> make_cpu_engine();

// What --precision bf16 means on this machine, for reports (see cpu_engine.cpp).
std::string bf16_mode_description();
// Peak resident set size of this process so far, in bytes (getrusage).
int64_t peak_rss_bytes();

}  // namespace xpusim::cpu
