// The `cpu` engine: executes training steps of the op graph for real on this machine
// (executor.hpp) and measures them as tf_cnn_benchmarks does: warm-up steps excluded,
// mean wall time of the timed steps, plus per-op-kind time, peak RSS and the achieved
// conv/matmul GFLOP/s.
#pragma once
#include <memory>

#include "engine/engine.hpp"

namespace xpusim::cpu {

std::unique_ptr<Engine> make_cpu_engine();

class Executor;
// Which bf16 path an executor runs, for reports: "off" (fp32 graph), "native" or
// "emulated" (stable values), and a sentence on what that means (see cpu_engine.cpp).
std::string bf16_mode(const Executor& ex);
std::string bf16_detail(const Executor& ex);
// Peak resident set size of this process so far, in bytes (getrusage).
int64_t peak_rss_bytes();

}  // namespace xpusim::cpu
