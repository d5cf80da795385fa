// Finite-difference gradient checking for the cpu executor: build a tiny graph, run
// forward + backward, and compare the gradient of every weight with central differences
// of the loss (Goodfellow et al., Deep Learning, sec. 11.5 "gradient checking").
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "devices/cpu/executor.hpp"
#include "models/builder.hpp"
#include "models/training.hpp"
#include "models/work.hpp"

namespace xpusim::cpu::test {

struct Harness {
  OpGraph g;
  std::unique_ptr<Executor> ex;
  Harness(const std::function<void(ModelBuilder&)>& build, int64_t batch, uint64_t seed = 3,
          Optimizer opt = Optimizer::sgd_momentum, int replicas = 1) {
    ModelBuilder b(g, batch, Precision::fp32);
    build(b);
    TrainingOptions to;
    to.optimizer = opt;
    to.replicas = replicas;
    lower_to_training_step(g, to);
    count_all_work(g);
    ExecOptions o;
    o.seed = seed;
    o.threads = 2;
    o.plan_memory = false;  // keep every gradient readable
    ex = std::make_unique<Executor>(g, o);
    ex->fill_synthetic();
  }
  double loss() {
    ex->forward(true);  // the dropout mask is fixed until step() advances it
    return ex->loss();
  }
  int count_kind(OpKind k) const {
    int n = 0;
    for (int i = 0; i < g.num_ops(); ++i) n += g.op(i).kind == k;
    return n;
  }
};

// Checks up to `samples` entries of every weight's gradient. Tolerance: central
// differences in fp32 with step h have truncation error O(h^2) and rounding error about
// 1e-7 * |loss| / h; with h = 1e-2 and |loss| ~ 1 both stay below ~1e-4, so
// |analytic - numeric| <= 1e-3 + 3e-2 |numeric| leaves a margin of ten while still
// failing on any wrong factor, sign or missing term (which give errors of order |grad|).
inline void check_all_weight_gradients(Harness& h, int samples = 6, double step = 1e-2) {
  h.ex->forward(true);
  h.ex->backward();
  int checked = 0;
  for (int t : h.g.tensors_with_role(TensorRole::weight)) {
    int gt = gradient_of(h.g, t);
    REQUIRE(gt >= 0);
    const int64_t n = h.g.tensor(t).desc.numel();
    std::vector<float> analytic(h.ex->data(gt), h.ex->data(gt) + n);
    double max_abs = 0;
    for (float a : analytic) max_abs = std::max(max_abs, static_cast<double>(std::abs(a)));
    INFO("weight " << h.g.tensor(t).name);
    CHECK(max_abs > 1e-5);  // a gradient that is identically zero would pass vacuously
    for (int s = 0; s < samples; ++s) {
      const int64_t k = (n * s) / samples + (s % 2);
      if (k >= n) continue;
      float* w = h.ex->data(t) + k;
      const float w0 = *w;
      *w = static_cast<float>(w0 + step);
      const double lp = h.loss();
      *w = static_cast<float>(w0 - step);
      const double lm = h.loss();
      *w = w0;
      const double numeric = (lp - lm) / (2 * step);
      const double a = analytic[static_cast<size_t>(k)];
      INFO("element " << k << " analytic " << a << " numeric " << numeric);
      CHECK(std::abs(a - numeric) <= 1e-3 + 3e-2 * std::abs(numeric));
      ++checked;
    }
  }
  CHECK(checked > 0);
}

}  // namespace xpusim::cpu::test
