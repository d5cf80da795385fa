// Gradient accumulation (PredictRequest::global_batch, parallel/step_composer): forward and
// backward ops run once per micro-batch, the gradient exchange and the optimizer update once
// per step, and each micro-batch after the first sums its gradients into the accumulated ones.
// The relations below follow from that by hand; the error cases name the field.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"

using namespace xpusim;
using xpusim::fixtures::predict_request;

namespace {
double extra(const StepReport& r, const char* key) { return r.extra.contains(key) ? r.extra[key].get<double>() : 0.0; }
}  // namespace

TEST_CASE("gradient accumulation: k micro-batches cost k forward/backward passes, one update", "[accumulation]") {
  PredictRequest r = predict_request("v100_sxm2_16gb", 1, "resnet50", 64, "mixed_fp16", "dgx1v_nvlink");
  const StepReport one = predict(r);
  r.global_batch = 64 * 4;
  const StepReport four = predict(r);

  CHECK(one.global_batch == 64);
  CHECK(four.global_batch == 256);
  CHECK(four.extra["micro_batches"].get<int>() == 4);
  CHECK_FALSE(one.extra.contains("micro_batches"));
  // Forward and backward kernels four times, the SGD update once.
  CHECK(four.per_op_s.at("conv2d") == Approx(4 * one.per_op_s.at("conv2d")));
  CHECK(four.per_op_s.at("batch_norm_backward") == Approx(4 * one.per_op_s.at("batch_norm_backward")));
  CHECK(four.per_op_s.at("sgd_momentum_update") == Approx(one.per_op_s.at("sgd_momentum_update")));
  // One GPU, synthetic data: the step is its compute stream plus per-iteration overheads, so
  // step(4) = 4 step(1) - 3 update + the three gradient sums.
  const double update = one.per_op_s.at("sgd_momentum_update");
  const double sums = extra(four, "gradient_accumulation_s");
  CHECK(sums > 0);
  CHECK(four.step_time_s == Approx(4 * one.step_time_s - 3 * update + sums).epsilon(1e-9));
  // The sums stream the (at least 2-byte) gradients three times: bounded below by the bytes at the DRAM rate.
  CHECK(sums / 3 >= 3.0 * 2 * 25.5e6 / 900e9);
  // Samples per second: accumulation saves the update of the three earlier micro-batches.
  CHECK(four.throughput_samples_per_s > one.throughput_samples_per_s);
}

TEST_CASE("gradient accumulation: the gradient exchange runs once per step", "[accumulation]") {
  PredictRequest r = predict_request("v100_sxm2_16gb", 8, "bert_large", 8, "mixed_fp16", "dgx1v_nvlink");
  r.placement.framework = "pytorch";
  const StepReport one = predict(r);
  r.global_batch = 8 * 8 * 16;
  const StepReport many = predict(r);
  CHECK(extra(many, "communication_busy_s") == Approx(extra(one, "communication_busy_s")));
  CHECK(many.per_op_s.at("all_reduce") == Approx(one.per_op_s.at("all_reduce")));
  CHECK(many.global_batch == 1024);
  // The exchange is amortised over 16 micro-batches: more sequences per second per GPU.
  CHECK(many.throughput_samples_per_s > one.throughput_samples_per_s);
  // Memory holds one micro-batch's activations either way.
  CHECK(many.memory_bytes == one.memory_bytes);
}

TEST_CASE("gradient accumulation: a global batch equal to batch x devices changes nothing", "[accumulation]") {
  PredictRequest r = predict_request("a100_sxm4_40gb", 8, "resnet50", 128, "mixed_fp16", "dgx_a100");
  const StepReport plain = predict(r);
  r.global_batch = 1024;
  const StepReport same = predict(r);
  CHECK(same.step_time_s == plain.step_time_s);
  CHECK(same.global_batch == plain.global_batch);
}

TEST_CASE("gradient accumulation: bad global batches are field errors", "[accumulation]") {
  PredictRequest r = predict_request("v100_sxm2_16gb", 4, "resnet50", 32, "fp32", "dgx1v_nvlink");
  auto field_of = [](const PredictRequest& q) {
    try {
      predict(q);
    } catch (const FieldError& e) {
      return e.field() + ": " + e.message();
    }
    return std::string("no error");
  };
  r.global_batch = 100;  // not a multiple of 32 x 4
  CHECK_THAT(field_of(r), Catch::StartsWith("global_batch: must be a positive multiple") &&
                              Catch::Contains("(32 x 4 = 128)"));
  r.global_batch = 256;
  r.task = xpusim::Task::inference;
  CHECK_THAT(field_of(r), Catch::StartsWith("global_batch: an inference pass"));
  PredictRequest tpu = predict_request("tpu_v2", 8, "resnet50", 128, "bf16", "cloud_tpu_v2-8");
  tpu.global_batch = 2048;
  CHECK_THAT(field_of(tpu), Catch::StartsWith("global_batch: gradient accumulation (2 micro-batches per step) is "
                                              "modelled by the analytical engine only"));
}
