// The predict request of a real run on the cpu engine (what `xpusim run --backend cpu` builds),
// shared by the cpu engine's tests.
#pragma once
#include <cstdint>
#include <string>

#include "predict/predict.hpp"

namespace xpusim::cpu::test {

inline PredictRequest cpu_run_request(const std::string& model, int64_t batch, int steps, int warmup, int threads) {
  PredictRequest r;
  r.model = model;
  r.batch_per_device = batch;
  r.engine = "cpu";
  r.placement.device = "cpu";
  r.steps = steps;
  r.warmup = warmup;
  r.threads = threads;
  return r;
}

}  // namespace xpusim::cpu::test
