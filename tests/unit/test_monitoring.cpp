// Monitoring metrics as the tools report them (predict/monitoring.hpp, issue 31): what
// nvidia-smi's utilization.gpu counts as a resident kernel, with hand-derived numbers.
#include <catch2/catch.hpp>

#include "engine/placement.hpp"
#include "models/graph.hpp"
#include "predict/monitoring.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"

using namespace xpusim;

namespace {

// A two-card 2080 Ti step under `framework`: 30 ms on the device, 9 ms of it the gradient
// exchange (the compute stream stalled for it), in a 40 ms step.
double smi_of_two_card_step(const std::string& framework, double tower_wait_s = 0) {
  Placement pl;
  pl.device = "rtx_2080ti";
  pl.count = 2;
  pl.system = "desktop";
  pl.framework = framework;
  StepRequest req;
  req.placement = resolve_placement(pl, cached_engine(engine_for_device("rtx_2080ti")));
  const OpGraph g;
  StepReport rep;
  rep.device_step.coupling = HostCoupling::prefetched;
  rep.device_step.device_s = 0.030;
  rep.device_step.busy_s[Resource::communication] = 0.009;
  rep.step_time_s = 0.040;
  rep.memory_capacity_bytes = 11000000000;
  if (tower_wait_s > 0) rep.extra["tower_wait_s"] = tower_wait_s;
  apply_monitoring(req, g, rep);
  return rep.extra.at("gpu_util_pct_smi").get<double>();
}

}  // namespace

TEST_CASE("nvidia-smi's GPU load: multi_gpu_model's copies are not kernels, NCCL's all-reduce is",
          "[monitoring]") {
  // Keras multi_gpu_model (strategy gather_on_first): TensorFlow's Send/Recv copies run on the
  // copy engines, so (30 - 9) / 40 = 52.5 %.
  CHECK(smi_of_two_card_step("keras-tf1.13") == Approx(52.5));
  // TF 1.x with NCCL's ring all-reduce (strategy system): the exchange is kernels, 30 / 40 = 75 %.
  CHECK(smi_of_two_card_step("tensorflow-1.x") == Approx(75));
  // Towers that take turns (serial_towers): 10 ms of the device step the card waits for the
  // other tower, no kernel of its own: (30 - 9 - 10) / 40 = 27.5 %.
  CHECK(smi_of_two_card_step("keras-tf1.13", 0.010) == Approx(27.5));
}

TEST_CASE("nvidia-smi's GPU load of a predicted multi_gpu_model step leaves its exchange out", "[monitoring]") {
  // cnn10 on two 2080 Ti under Keras: the report's own device step less its exchange, over the step.
  PredictRequest r = fixtures::predict_request("rtx_2080ti", 2, "cnn10", 128, "fp32", "desktop");
  r.data = DataSource::real;
  r.placement.framework = "keras-tf1.13";
  const StepReport rep = predict(r);
  const double exchange = rep.device_step.busy_s.at(Resource::communication);
  REQUIRE(exchange > 0);
  const double smi = rep.extra.at("gpu_util_pct_smi").get<double>();
  const double wait = rep.extra.at("tower_wait_s").get<double>();  // keras_tf1_13_gpu: serial_towers
  CHECK(smi == Approx(100.0 * (rep.device_step.device_s - exchange - wait) / rep.step_time_s));
  CHECK(smi < 100.0 * rep.device_step.device_s / rep.step_time_s);
}
