// Data-parallel towers that take turns (a framework profile's serial_towers: Keras 2.2's
// multi_gpu_model on TF 1.13, issue 31v): the step holds (replicas - 1) more towers' forward
// and backward ops, the update runs once, and the wait is no kernel time for nvidia-smi.
#include <catch2/catch.hpp>

#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"

using namespace xpusim;

namespace {

// cnn10 at 128 images per card on `count` 2080 Ti under Keras, synthetic data (no generator
// bound), serial_towers as given.
StepReport keras_step(int count, bool serial) {
  PredictRequest r = fixtures::predict_request("rtx_2080ti", count, "cnn10", 128, "fp32", "desktop");
  r.placement.framework = "keras-tf1.13";
  r.placement.overrides = {std::string("framework.serial_towers=") + (serial ? "true" : "false")};
  return predict(r);
}

double wait_of(const StepReport& rep) {
  auto w = rep.extra.find("tower_wait_s");
  return w == rep.extra.end() ? 0.0 : w->get<double>();
}

}  // namespace

TEST_CASE("serial towers: each other tower's forward and backward ops are added to the device step",
          "[serial_towers]") {
  const StepReport one = keras_step(1, true);
  const StepReport two = keras_step(2, true), two_concurrent = keras_step(2, false);
  const StepReport four = keras_step(4, true);
  // One card has no other tower to wait for.
  CHECK(wait_of(one) == 0.0);
  CHECK(wait_of(two_concurrent) == 0.0);
  // The wait is exactly what the device step gains over concurrent towers.
  REQUIRE(wait_of(two) > 0);
  CHECK(two.device_step.device_s == Approx(two_concurrent.device_step.device_s + wait_of(two)).epsilon(1e-12));
  // One tower's forward + backward ops are the one-card step less its weight update (the
  // update runs once, on the gathering device): one card's device step is its single stream.
  double update_s = 0;
  for (const auto& [kind, s] : one.per_op_s)
    if (kind.find("update") != std::string::npos) update_s += s;
  REQUIRE(update_s > 0);
  CHECK(wait_of(two) == Approx(one.device_step.device_s - update_s).epsilon(1e-9));
  // Four cards wait for three other towers: 3x the two-card wait.
  CHECK(wait_of(four) == Approx(3.0 * wait_of(two)).epsilon(1e-12));
}

TEST_CASE("serial towers: nvidia-smi's load counts a card's own tower, not its wait", "[serial_towers]") {
  const StepReport two = keras_step(2, true);
  const double exchange = two.device_step.busy_s.at(Resource::communication);
  const double smi = two.extra.at("gpu_util_pct_smi").get<double>();
  CHECK(smi == Approx(100.0 * (two.device_step.device_s - exchange - wait_of(two)) / two.step_time_s));
  // Two cards taking turns on the same per-card batch: each is resident for its own tower
  // (plus, on the first, the update), so less than half of the concurrent towers' share.
  const StepReport two_concurrent = keras_step(2, false);
  CHECK(smi < two_concurrent.extra.at("gpu_util_pct_smi").get<double>());
}
