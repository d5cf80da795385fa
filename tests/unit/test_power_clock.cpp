// Sustained clock under the board power limit (power_clock.hpp; docs/gpu_model.md, "Sustained
// clock under the power limit"). Hand-derived figures, with the architecture constants set by
// override so that the numbers do not follow a refit:
//   RTX A6000 (GA102, 154.8 TFLOP/s dense fp16, 300 W max, 60 W idle), tensor efficiency 0.5,
//   6 pJ per fp16 FLOP: 154.8e12 x 0.5 = 77.4e12 FLOP/s x 6e-12 J = 464.4 W above idle at the
//   boost clock against a 240 W budget: clock factor (240 / 464.4)^(1/3) = 0.80249, so
//   62.11 TFLOP/s and 1444 MHz. TF32 (77.4 TFLOP/s) costs 2x per FLOP: the same 464.4 W.
//   RTX 3090 (the same chip, 71 TFLOP/s with fp32 accumulate, 350 W, 70 W idle): 35.5e12 x 6e-12
//   = 213 W under its 280 W budget: it holds the boost clock.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "common/error.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/power_clock.hpp"
#include "devices/analytical/rates.hpp"
#include "engine/framework_spec.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
const std::vector<std::string> kFixed = {"kernel_tensor_efficiency=0.5", "kernel_tensor_pj_per_flop=6",
                                         "kernel_memory_efficiency=0.8895"};
}

TEST_CASE("the clock factor is the cube root of budget over demand, never above 1", "[kernel_model][power]") {
  CHECK(power_limited_clock_factor(240, 640) == Approx(0.7211247851537042));
  CHECK(power_limited_clock_factor(240, 1920) == Approx(0.5));  // 1/8 of the power: half the clock
  CHECK(power_limited_clock_factor(240, 240) == 1.0);
  CHECK(power_limited_clock_factor(240, 100) == 1.0);  // under the limit: the boost clock, not more
  CHECK(power_limited_clock_factor(0, 640) == 1.0);    // no budget stated
  CHECK(power_limited_clock_factor(240, 0) == 1.0);    // nothing drawn
}

TEST_CASE("a tensor FLOP costs in proportion to its operand width", "[kernel_model][power]") {
  CHECK(tensor_energy_weight(Precision::mixed_fp16) == 1.0);
  CHECK(tensor_energy_weight(Precision::mixed_bf16) == 1.0);
  CHECK(tensor_energy_weight(Precision::bf16) == 1.0);
  CHECK(tensor_energy_weight(Precision::tf32) == 2.0);
  CHECK(tensor_energy_weight(Precision::fp8) == 0.5);
  CHECK(tensor_energy_weight(Precision::fp32) == 0.0);
}

TEST_CASE("the workstation GA102 runs its tensor cores below boost, the GeForce one at boost", "[kernel_model][power]") {
  const DeviceSpec a6000 = load_device_spec("rtx_a6000", kFixed);
  REQUIRE(a6000.power.max_power_w == 300);
  REQUIRE(a6000.power.idle_power_w == 60);
  REQUIRE(a6000.tensor_pj_per_flop == 6);
  const double s = 0.8024900879696655;  // (240 / 464.4)^(1/3)
  CHECK(tensor_clock_factor(a6000, Precision::mixed_fp16, 77.4e12) == Approx(s));
  CHECK(tensor_clock_factor(a6000, Precision::tf32, 38.7e12) == Approx(s));
  const Rates r = stack_rates(a6000, Precision::mixed_fp16, CpuBuild::pip, 1, FrameworkSpec{});
  CHECK(r.tensor_clock_factor == Approx(s));
  CHECK(r.tensor_flops_s == Approx(62.11273e12).epsilon(1e-6));
  CHECK(a6000.boost_clock_mhz * r.tensor_clock_factor == Approx(1444.48).epsilon(1e-5));
  // The tiles' L2 runs at the same clock: 5248 B/clk x 1800 MHz x 0.8895 x s.
  CHECK(r.kernel.l2_bytes_s == Approx(5248 * 1800e6 * 0.8895 * s));
  // DRAM streams at its own clock; the CUDA-core rate (no tensor math in those kernels) holds.
  const Rates none = stack_rates(load_device_spec("rtx_a6000", {"kernel_tensor_efficiency=0.5",
                                                                "kernel_tensor_pj_per_flop=0",
                                                                "kernel_memory_efficiency=0.8895"}),
                                 Precision::mixed_fp16, CpuBuild::pip, 1, FrameworkSpec{});
  CHECK(none.tensor_clock_factor == 1.0);
  CHECK(none.tensor_flops_s == Approx(77.4e12));
  CHECK(r.memory_bytes_s == Approx(none.memory_bytes_s));
  CHECK(r.gemm_flops_s == Approx(none.gemm_flops_s));
  // TF32 (the stacks' "fp32" on Ampere): 38.7e12 x 2 x 6 pJ = the same 464.4 W.
  const Rates t = stack_rates(a6000, Precision::tf32, CpuBuild::pip, 1, FrameworkSpec{});
  CHECK(t.tensor_clock_factor == Approx(s));
  CHECK(t.tensor_flops_s == Approx(38.7e12 * s));

  const DeviceSpec rtx3090 = load_device_spec("rtx_3090", kFixed);
  const Rates g = stack_rates(rtx3090, Precision::mixed_fp16, CpuBuild::pip, 1, FrameworkSpec{});
  CHECK(g.tensor_clock_factor == 1.0);  // 213 W < 280 W
  CHECK(g.tensor_flops_s == Approx(35.5e12));
  // So the same chip's 2.18x tensor peak becomes 1.75x at the sustained clocks.
  CHECK(r.tensor_flops_s / g.tensor_flops_s == Approx(62.11273 / 35.5).epsilon(1e-5));
}

TEST_CASE("no power limit without a kernel model, a tensor path or a stated power", "[kernel_model][power]") {
  // fp32 on Turing runs on CUDA cores: no tensor demand.
  const DeviceSpec q = load_device_spec("quadro_rtx_8000", {"kernel_tensor_pj_per_flop=6"});
  CHECK(stack_rates(q, Precision::fp32, CpuBuild::pip, 1, FrameworkSpec{}).tensor_clock_factor == 1.0);
  CHECK(tensor_clock_factor(q, Precision::fp32, 50e12) == 1.0);
  // Quadro RTX 8000 mixed: 130.5e12 x 0.5 x 6 pJ = 391.5 W against 295 - 59 = 236 W.
  const DeviceSpec q2 = load_device_spec("quadro_rtx_8000", {"kernel_tensor_efficiency=0.5", "kernel_tensor_pj_per_flop=6"});
  CHECK(stack_rates(q2, Precision::mixed_fp16, CpuBuild::pip, 1, FrameworkSpec{}).tensor_clock_factor ==
        Approx(std::cbrt(236.0 / 391.5)));
  // The roofline devices (Volta) carry their fitted efficiencies: no clock model.
  const DeviceSpec v = load_device_spec("v100_sxm2_16gb");
  REQUIRE_FALSE(v.kernel_model());
  CHECK(tensor_clock_factor(v, Precision::mixed_fp16, 1e15) == 1.0);
}

TEST_CASE("a negative energy per FLOP is an error naming the key", "[kernel_model][power]") {
  try {
    load_device_spec("rtx_a6000", {"kernel_tensor_pj_per_flop=-1"});
    FAIL("expected an error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("kernel_tensor_pj_per_flop") != std::string::npos);
    CHECK(std::string(e.what()).find("must be >= 0") != std::string::npos);
  }
}
