// The first convolution of a stack whose input pipeline pads the image's channels (DALI
// crop_mirror_normalize pad_output, framework first_layer_input_channels_padded_to): on a
// kernel-model GPU it runs on the tensor cores with the padded channel count's FLOPs, instead
// of at the CUDA-core rate with 3 channels; only 16-bit runs and only the input's consumer pad.
#include <catch2/catch.hpp>

#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/op_cost.hpp"
#include "devices/analytical/rates.hpp"
#include "engine/framework_spec.hpp"
#include "models/builder.hpp"
#include "models/work.hpp"
#include "tests/unit/kernel_rates.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
// ResNet's stem: 7x7 stride-2 (padding 3) convolution, 3 -> 64 channels at 224x224, batch 32,
// mixed precision; kernel-model rates of 100 TFLOP/s tensor cores, 10 TFLOP/s CUDA cores.
Rates stem_rates(int pad_to) {
  Rates r = test::kernel_model_rates({.tensor_flops_s = 100e12, .gemm_flops_s = 10e12, .memory_bytes_s = 1e12,
                                      .op_overhead_s = 10e-6, .sm_count = 80, .smem_kib_per_sm = 96,
                                      .pipeline_stages = 3, .l2_bytes = 6e6});
  r.first_layer_channels_padded_to = pad_to;
  return r;
}
}  // namespace

TEST_CASE("a first layer padded to 4 channels runs on the tensor cores with 4/3 of the FLOPs", "[kernel_model]") {
  OpGraph g;
  ModelBuilder b(g, 32, Precision::mixed_fp16);
  const int stem = b.conv(b.image_input(3, 224, 224), 64, 7, 2, 3, false, "stem");
  // A later 3-channel convolution (not fed by the input) is not padded by the pipeline.
  b.conv(b.conv(stem, 3, 1, 1, 0, false, "squeeze"), 64, 7, 1, 3, false, "late");
  count_all_work(g);
  int first = -1, late = -1;
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::Conv2D) (first < 0 ? first : late) = i;
  REQUIRE(first >= 0);
  REQUIRE(late > first);
  // Output 112x112: M = 32 x 112 x 112 = 401,408 pixels, N = 64, K = 3 x 49 = 147 unpadded,
  // 4 x 49 = 196 padded: 2 x 401,408 x 64 x 147 = 7.553 GFLOP and x 196 = 10.071 GFLOP.
  const double m = 32.0 * 112 * 112;
  const double unpadded_flops = 2 * m * 64 * 147, padded_flops = 2 * m * 64 * 196;
  CHECK(unpadded_flops == Approx(7552892928.0));
  CHECK(padded_flops / unpadded_flops == Approx(4.0 / 3));
  CHECK(g.op(first).work.flops == Approx(unpadded_flops));

  const OpCost plain = OpCostModel(stem_rates(0)).visit(g, first);
  const OpCost padded = OpCostModel(stem_rates(4)).visit(g, first);
  // Math time x the rate x the share of paid tiles that is useful = the GEMM's FLOPs: 3 channels
  // at the CUDA-core 10 TFLOP/s, 4 channels at the tensor cores' 100 TFLOP/s.
  CHECK(plain.math_s * 10e12 * plain.wave_efficiency == Approx(unpadded_flops));
  CHECK(padded.math_s * 100e12 * padded.wave_efficiency == Approx(padded_flops));
  CHECK(padded.math_s >= padded_flops / 100e12);
  CHECK(padded.math_s < plain.math_s);
  // The later 3-channel convolution keeps the CUDA cores.
  const OpCost later = OpCostModel(stem_rates(4)).visit(g, late);
  const OpCost later_plain = OpCostModel(stem_rates(0)).visit(g, late);
  CHECK(later.math_s == Approx(later_plain.math_s));
  CHECK(later.math_s * 10e12 * later.wave_efficiency == Approx(2 * m * 64 * 147));
}

TEST_CASE("the profile's channel padding reaches the rates of 16-bit runs on kernel-model GPUs only", "[kernel_model]") {
  FrameworkSpec fw;
  fw.first_layer_input_channels_padded_to = 4;
  const DeviceSpec a100 = load_device_spec("a100_sxm4_40gb");
  REQUIRE(a100.kernel_model());
  CHECK(stack_rates(a100, Precision::mixed_fp16, CpuBuild::pip, 1, fw).first_layer_channels_padded_to == 4);
  // DeepLearningExamples' MXNet runner asks for 3 channels in float32 (TF32 on Ampere).
  CHECK(stack_rates(a100, Precision::fp32, CpuBuild::pip, 1, fw).first_layer_channels_padded_to == 0);
  // Roofline devices keep the constants fitted without it.
  const DeviceSpec v100 = load_device_spec("v100_sxm2_16gb");
  REQUIRE_FALSE(v100.kernel_model());
  CHECK(stack_rates(v100, Precision::mixed_fp16, CpuBuild::pip, 1, fw).first_layer_channels_padded_to == 0);
  CHECK(stack_rates(a100, Precision::mixed_fp16, CpuBuild::pip, 1, FrameworkSpec{}).first_layer_channels_padded_to == 0);
}
