// FP32 lanes shared with INT32 (docs/gpu_model.md, "FP32 lanes shared with INT32"): on GA10x
// and Ada half of an SM's 128 FP32 lanes also run the integer instructions, so a kernel's
// ~36 integer per 100 floating-point instructions (Turing whitepaper) take FP32 issue slots;
// Turing, GA100 and Hopper issue them on separate INT32 lanes. Hand-derived figures:
// GA102: 100 FP + 36 INT instructions on 128 lanes take 136 slots: 128 x 100 / 136 = 94.1
// FP per clock = 0.735 of the peak; Turing 64 FP32 + 64 INT32: all 64 FP lanes stay FP = 1.0.
#include <catch2/catch.hpp>

#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/gpu_arch_spec.hpp"
#include "devices/analytical/rates.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

TEST_CASE("FP32 lanes shared with INT32 lose issue slots to the integer instructions", "[kernel_model]") {
  const ArchSpec ga10x = load_arch_spec("ampere_ga10x");
  REQUIRE(ga10x.fp32_lanes_shared_with_int32 == Approx(0.5));
  REQUIRE(ga10x.int_per_fp_instruction == Approx(0.36));
  CHECK(ga10x.fp32_issue_share() == Approx(100.0 / 136.0));
  CHECK(ga10x.fp32_issue_share() == Approx(0.735).margin(0.0005));
  CHECK(128 * ga10x.fp32_issue_share() == Approx(94.1).margin(0.05));
  CHECK(load_arch_spec("ada").fp32_issue_share() == Approx(0.735).margin(0.0005));
  for (const char* a : {"turing", "ampere_ga100", "hopper", "volta"}) {
    INFO(a);
    CHECK(load_arch_spec(a).fp32_lanes_shared_with_int32 == 0);
    CHECK(load_arch_spec(a).fp32_issue_share() == 1.0);
  }
}

TEST_CASE("the INT32 share binds only when few lanes are shared", "[kernel_model]") {
  // 128 lanes, 16 shared (s = 0.125), i = 0.36: INT needs 0.36 x slots <= 16, so x <= 44.4 FP
  // per clock (0.347 of the peak), below the 94.1 the lane total allows.
  ArchSpec a;
  a.fp32_lanes_shared_with_int32 = 0.125;
  a.int_per_fp_instruction = 0.36;
  CHECK(a.fp32_issue_share() == Approx(0.125 / 0.36));
  a.int_per_fp_instruction = 0;  // no integer work: the whole peak
  CHECK(a.fp32_issue_share() == 1.0);
}

TEST_CASE("the CUDA-core rate of a GA10x device carries the issue share, the tensor rate does not", "[kernel_model]") {
  const DeviceSpec d = load_device_spec("rtx_3090");
  REQUIRE(d.kernel_model());
  const Rates r = make_rates(d, Precision::fp32, CpuBuild::pip, 1);
  CHECK(r.gemm_flops_s == Approx(d.fp32_tflops * 1e12 * d.compute_efficiency * 100.0 / 136.0));
  const Rates t = make_rates(d, Precision::tf32, CpuBuild::pip, 1);
  CHECK(t.tensor_flops_s == Approx(d.tensor_tf32_tflops * 1e12 * d.tensor_efficiency));
  const DeviceSpec q = load_device_spec("quadro_rtx_8000");
  CHECK(make_rates(q, Precision::fp32, CpuBuild::pip, 1).gemm_flops_s == Approx(q.fp32_tflops * 1e12 * q.compute_efficiency));
}
