// The 2019 framework profiles' kernel-model scales (issue 31, Titan RTX study): on a GPU priced
// by the kernel model a profile's kernel_*_efficiency_scale replaces its roofline scale (fitted
// on V100 rows); a roofline GPU keeps the roofline scale. MXNet 1.x and PyTorch 1.x set only the
// fp32 one (fitted on the study's VGG16 gaps), so their tensor-core rates stay the architecture's.
#include <catch2/catch.hpp>

#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/rates.hpp"
#include "engine/framework_spec.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

TEST_CASE("a kernel-model GPU takes the profile's kernel fp32 scale, a roofline GPU its roofline scale",
          "[framework][kernel_model]") {
  const DeviceSpec titan = load_device_spec("titan_rtx");
  REQUIRE(titan.kernel_model());
  FrameworkSpec fw;
  fw.compute_efficiency_scale = 1.284;        // roofline (V100) scale: ignored on Turing
  fw.tensor_efficiency_scale = 3.08;          // likewise
  fw.kernel_compute_efficiency_scale = 0.624;
  fw.kernel_tensor_efficiency_scale = 1.0;    // set to 1: the architecture's tensor-core constant
  const FrameworkSpec neutral;
  const Rates base = stack_rates(titan, Precision::fp32, CpuBuild::pip, 1, neutral);
  const Rates mx = stack_rates(titan, Precision::fp32, CpuBuild::pip, 1, fw);
  // efficiency x 0.624 stays under 1, so the rate is 0.624 of the neutral one.
  CHECK(mx.gemm_flops_s == Approx(0.624 * base.gemm_flops_s));
  CHECK(mx.memory_bytes_s == Approx(base.memory_bytes_s));
  const Rates base16 = stack_rates(titan, Precision::mixed_fp16, CpuBuild::pip, 1, neutral);
  const Rates mx16 = stack_rates(titan, Precision::mixed_fp16, CpuBuild::pip, 1, fw);
  CHECK(mx16.tensor_flops_s == Approx(base16.tensor_flops_s));

  // V100 (roofline): the kernel scale is ignored; 1.284 x the device's compute efficiency.
  const DeviceSpec v100 = load_device_spec("v100_sxm2_16gb");
  REQUIRE_FALSE(v100.kernel_model());
  const double eff = v100.compute_efficiency;
  REQUIRE(eff * 1.284 < 1.0);
  const Rates v_base = stack_rates(v100, Precision::fp32, CpuBuild::pip, 1, neutral);
  const Rates v_mx = stack_rates(v100, Precision::fp32, CpuBuild::pip, 1, fw);
  CHECK(v_mx.gemm_flops_s == Approx(1.284 * v_base.gemm_flops_s));
}

TEST_CASE("the shipped 2019 profiles: PyTorch 1.x at 0.776 of TF 1.x's Turing fp32 rate, MXNet 1.x at TF's",
          "[framework][kernel_model]") {
  const DeviceSpec titan = load_device_spec("titan_rtx");
  const auto tf = find_framework_profile("tensorflow-1.x", "analytical");
  const auto pt = find_framework_profile("pytorch-1.x", "analytical");
  const auto mx = find_framework_profile("mxnet-1.x", "analytical");
  REQUIRE(tf);
  REQUIRE(pt);
  REQUIRE(mx);
  const double tf_rate = stack_rates(titan, Precision::fp32, CpuBuild::pip, 1, *tf).gemm_flops_s;
  CHECK(stack_rates(titan, Precision::fp32, CpuBuild::pip, 1, *pt).gemm_flops_s == Approx(0.776 * tf_rate));
  // MXNet 1.x differs on Turing only where its cuDNN workspace cap bites (conv_workspace.hpp).
  const Rates mx_rates = stack_rates(titan, Precision::fp32, CpuBuild::pip, 1, *mx);
  CHECK(mx_rates.gemm_flops_s == Approx(tf_rate));
  CHECK(mx_rates.conv_workspace_limit_bytes == Approx(1024.0 * 1024 * 1024));
  // TF 1.x is the Turing constants' own stack: the neutral rate.
  CHECK(tf_rate == Approx(stack_rates(titan, Precision::fp32, CpuBuild::pip, 1, FrameworkSpec{}).gemm_flops_s));
  // Tensor cores: every 2019 profile keeps the architecture's constant on Turing.
  const double tf16 = stack_rates(titan, Precision::mixed_fp16, CpuBuild::pip, 1, *tf).tensor_flops_s;
  CHECK(stack_rates(titan, Precision::mixed_fp16, CpuBuild::pip, 1, *mx).tensor_flops_s == Approx(tf16));
  CHECK(stack_rates(titan, Precision::mixed_fp16, CpuBuild::pip, 1, *pt).tensor_flops_s == Approx(tf16));
  // Roofline devices ignore the cap.
  CHECK(stack_rates(load_device_spec("v100_sxm2_16gb"), Precision::fp32, CpuBuild::pip, 1, *mx)
            .conv_workspace_limit_bytes == 0);
}
