// TPU HBM storage dtype (issue 32): a stack that keeps an fp32 model's tensors in fp32 in HBM
// (Keras 2.2 / TF 1.13 on a Colab TPU; only the MXU multiplies in bf16) doubles the HBM bytes
// of every 16-bit tensor and leaves fp32 tensors and the MXU's time alone.
#include <catch2/catch.hpp>

#include "common/config_paths.hpp"
#include "engine/framework_spec.hpp"
#include "models/graph.hpp"
#include "models/work.hpp"
#include "predict/predict.hpp"
#include "sim/tpu/lowering.hpp"
#include "sim/tpu/tpu_spec.hpp"
#include "tests/unit/predict_request.hpp"

using namespace xpusim;

namespace {

// One ReLU on x[8, 128] of DTYPE: a tensor exactly one vreg tile (8 sublanes x 128 lanes), so
// the layout padding is 1 and the op reads x once and writes y once.
OpGraph one_relu(DType dtype) {
  OpGraph g;
  g.batch = 8;
  TensorDesc d;
  d.shape = {8, 128};
  d.dtype = dtype;
  const int x = g.add_tensor("x", d, TensorRole::activation);
  const int y = g.add_tensor("y", d, TensorRole::activation);
  g.add_op(make_op(OpKind::Activation, "relu", OpAttrs{}, {x}, {y}, Phase::forward, dtype));
  count_all_work(g);
  return g;
}

tpu::TpuSpec v2() { return tpu::load_tpu_spec(config_dir() + "/devices/tpu_v2.yaml"); }

}  // namespace

TEST_CASE("fp32 storage doubles the HBM bytes of 16-bit tensors only", "[tpu][storage]") {
  const tpu::TpuSpec s = v2();
  tpu::LoweringOptions compute, fp32;
  fp32.fp32_storage = true;
  // bf16: 8 x 128 x 2 B = 2,048 B read + 2,048 B written.
  const tpu::Program b = tpu::lower_step(one_relu(DType::bf16), s, compute);
  const tpu::Program b32 = tpu::lower_step(one_relu(DType::bf16), s, fp32);
  REQUIRE(b.ops.size() == 1);
  CHECK(b.hbm_bytes == Approx(4096.0));
  CHECK(b32.hbm_bytes == Approx(8192.0));  // 8 x 128 x 4 B, each way
  // An fp32 tensor is 4 bytes either way: 8,192 B.
  CHECK(tpu::lower_step(one_relu(DType::fp32), s, compute).hbm_bytes == Approx(8192.0));
  CHECK(tpu::lower_step(one_relu(DType::fp32), s, fp32).hbm_bytes == Approx(8192.0));
}

TEST_CASE("fp32 storage doubles the live tensors of the peak, not the persistent state", "[tpu][storage]") {
  GraphTotals t;
  t.weight_bytes = 100;               // fp32 master weights
  t.weight_grad_bytes = 100;          // fp32 gradients
  t.optimizer_state_bytes = 100;      // momentum
  t.low_precision_weight_bytes = 50;  // the bf16 weight copy
  t.peak_bytes = 1000 + 350;          // 1,000 B of live bf16 tensors on top of the 350 persistent
  // bf16 stored as fp32: 2 x 1,000 + 350 - 50 (no 16-bit copy) = 2,300 B.
  CHECK(tpu::stored_peak_bytes(t, Precision::bf16, true) == 2300);
  CHECK(tpu::stored_peak_bytes(t, Precision::bf16, false) == 1350);
  CHECK(tpu::stored_peak_bytes(t, Precision::fp32, true) == 1350);  // already 4 bytes
}

TEST_CASE("the Keras TF 1.13 TPU profile keeps tensors in fp32; the MXU time is unchanged", "[tpu][storage]") {
  const FrameworkSpec keras = load_framework_spec(config_dir() + "/frameworks/keras_tf1_13_tpu.yaml");
  CHECK(keras.tpu_fp32_storage);
  CHECK_FALSE(load_framework_spec(config_dir() + "/frameworks/tpu_estimator.yaml").tpu_fp32_storage);
  // cnn10 on a Colab v2-8 at 16 per core, bf16 run: under the fp32-storage profile the HBM
  // bytes grow (16-bit activations doubled), the MXU's busy time does not (bf16 multiplies).
  PredictRequest r = fixtures::predict_request("tpu_v2", 8, "wrn28_10", 16, "bf16", "colab_tpu_v2-8");
  r.data = DataSource::synthetic;
  const StepReport plain = predict(r);
  r.placement.framework = "keras_tf1_13_tpu";
  const StepReport keras_r = predict(r);
  const double hb = plain.extra.at("hbm_bytes_per_step").get<double>();
  const double hk = keras_r.extra.at("hbm_bytes_per_step").get<double>();
  CHECK(hk > 1.3 * hb);
  CHECK(hk < 2.0 * hb);  // fp32 weights, gradients and optimizer state do not grow
  CHECK(keras_r.extra.at("busy_s_mxu").get<double>() ==
        Approx(plain.extra.at("busy_s_mxu").get<double>()).epsilon(0.03));
  CHECK(keras_r.step_time_s > plain.step_time_s);
  CHECK(keras_r.memory_bytes > plain.memory_bytes);
}
