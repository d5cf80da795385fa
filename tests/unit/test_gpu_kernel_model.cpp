// The GPU kernel model (docs/gpu_model.md) against hand-derived numbers, one architecture at a
// time: a GEMM whose tile count is one more than the concurrent CTAs takes a second wave
// (twice the math time for 1/slots more work); TF32 vs fp32 on Ampere is the ratio of the
// datasheet peaks times the architecture's efficiencies; fp8 on Hopper halves the math of bf16;
// and the device YAML errors name file:line: key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/gpu_arch_spec.hpp"
#include "devices/analytical/gpu_kernel_model.hpp"
#include "devices/analytical/op_cost.hpp"
#include "devices/analytical/rates.hpp"
#include "models/builder.hpp"
#include "models/work.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {

// A 128x128 tile of 16-bit operands keeps (128 + 128) x 32 x 2 B per stage in shared memory:
// 16 KiB; x3 stages (Ampere+) = 48 KiB, x2 (Volta/Turing) = 32 KiB. Its fp32 accumulators
// (16,384) plus fragments (x1.5) take 24,576 of an SM's 65,536 registers: 2 CTAs per SM.
GpuKernelRates rates_for(const ArchSpec& a, double sms, double peak_flops_s) {
  GpuKernelRates r;
  r.sm_count = sms;
  r.math_flops_s = peak_flops_s;
  r.smem_bytes_per_sm = a.smem_bytes_per_sm;
  r.registers_per_sm = a.registers_per_sm;
  r.pipeline_stages = a.generation >= 8 ? 3 : 2;
  r.l2_bytes = 40e6;
  r.l2_bytes_s = 1e18;   // traffic never binds here: the test is about math and waves
  r.dram_bytes_s = 1e18;
  return r;
}

}  // namespace

TEST_CASE("one tile more than the concurrent CTAs costs a second wave, on every architecture", "[kernel_model]") {
  // {architecture, SMs of a device of it, its 16-bit peak FLOP/s (tensor cores where it has them)}
  struct Case {
    const char* arch;
    double sms, peak, ctas;  // ctas: hand-derived CTAs per SM for a 128x128 fp16 tile
  };
  const Case cases[] = {
      {"kepler", 13, 4.37e12, 3},        // K80 die: 112 KiB / 32 KiB = 3; registers 131,072 / 24,576 = 5
      {"pascal", 56, 21.2e12, 2},        // P100 fp16: 64 KiB / 32 KiB = 2
      {"volta", 80, 125e12, 2},          // V100: 96 KiB / 32 KiB = 3, registers 2
      {"turing", 68, 56.9e12, 2},        // RTX 2080 Ti: 64 KiB / 32 KiB = 2
      {"ampere_ga100", 108, 312e12, 2},  // A100: 164 KiB / 48 KiB = 3, registers 2
      {"ampere_ga10x", 82, 71e12, 2},    // RTX 3090: 100 KiB / 48 KiB = 2
      {"ada", 128, 165.2e12, 2},         // RTX 4090: 100 KiB / 48 KiB = 2
      {"hopper", 132, 989.4e12, 2},      // H100 SXM5: 228 KiB / 48 KiB = 4, registers 2
      {"blackwell", 148, 2250e12, 2},    // B200: 228 KiB / 48 KiB = 4, registers 2
  };
  for (const auto& c : cases) {
    INFO(c.arch);
    const ArchSpec a = load_arch_spec(c.arch);
    const GpuKernelRates r = rates_for(a, c.sms, c.peak);
    const double slots = c.sms * c.ctas;
    GemmShape full{128 * slots, 128, 4096, 1, 2, 2};
    GemmShape one_more{128 * (slots + 1), 128, 4096, 1, 2, 2};
    const KernelTime t1 = gemm_kernel_time_tile(full, r, 128, 128);
    const KernelTime t2 = gemm_kernel_time_tile(one_more, r, 128, 128);
    CHECK(t1.ctas_per_sm == c.ctas);
    CHECK(t1.split_k == 1);
    CHECK(t1.tiles == slots);
    CHECK(t1.waves == 1);
    CHECK(t2.waves == 2);
    // One wave: each SM runs `ctas` tiles of 2 x 128 x 128 x 4096 FLOP at peak / SMs.
    const double wave_s = 2.0 * 128 * 128 * 4096 * c.ctas / (c.peak / c.sms);
    CHECK(t1.math_s == Approx(wave_s).epsilon(1e-12));
    CHECK(t2.math_s == Approx(2 * wave_s).epsilon(1e-12));
    CHECK(t1.efficiency == Approx(1.0));
    CHECK(t2.efficiency == Approx((slots + 1) / (2 * slots)));
  }
}

TEST_CASE("Ampere: TF32 tensor cores against fp32 CUDA cores on a large GEMM", "[kernel_model]") {
  const DeviceSpec d = load_device_spec("a100_sxm4_40gb");
  REQUIRE(d.kernel_model());
  const Rates tf32 = make_rates(d, Precision::tf32, CpuBuild::pip, 1);
  const Rates fp32 = make_rates(d, Precision::fp32, CpuBuild::pip, 1);
  // Datasheet peaks (156 TF32, 19.5 fp32) times the architecture's constants.
  CHECK(tf32.tensor_flops_s == Approx(156e12 * d.arch.tensor_efficiency));
  CHECK(fp32.tensor_flops_s == 0);
  CHECK(fp32.gemm_flops_s == Approx(19.5e12 * d.arch.cuda_efficiency));
  GemmShape g{8192, 8192, 8192, 1, 4, 4};
  GpuKernelRates kt = tf32.kernel, kf = fp32.kernel;
  kt.math_flops_s = tf32.tensor_flops_s;
  kf.math_flops_s = fp32.gemm_flops_s;
  const KernelTime a = gemm_kernel_time_tile(g, kt, 128, 128), b = gemm_kernel_time_tile(g, kf, 128, 128);
  // 64 x 64 = 4,096 tiles over 216 slots: 19 waves either way; math scales with the rate.
  CHECK(a.waves == 19);
  CHECK(b.waves == 19);
  CHECK(b.math_s / a.math_s == Approx((156.0 * d.arch.tensor_efficiency) / (19.5 * d.arch.cuda_efficiency)));
}

TEST_CASE("mixed precision off the tensor cores runs at the fp32 rate (fp16 data, fp32 compute)", "[kernel_model]") {
  // cuDNN's PSEUDO_HALF configuration (TensorFlow's and PyTorch's default for half convolutions)
  // and cuBLAS's CUBLAS_COMPUTE_32F convert to fp32: the A100's 3-channel first layer runs at
  // 19.5 TFLOP/s x cuda_efficiency, not at the 78 TFLOP/s packed half2 peak.
  const DeviceSpec a100 = load_device_spec("a100_sxm4_40gb");
  REQUIRE(a100.kernel_model());
  REQUIRE(a100.fp16_tflops == Approx(78));
  const Rates mixed = make_rates(a100, Precision::mixed_fp16, CpuBuild::pip, 1);
  CHECK(mixed.gemm_flops_s == Approx(19.5e12 * a100.arch.cuda_efficiency));
  CHECK(mixed.tensor_flops_s == Approx(312e12 * a100.arch.tensor_efficiency));
  // Turing (Quadro RTX 8000): 16.3 fp32, 32.6 half2: the fp32 rate.
  const DeviceSpec q = load_device_spec("quadro_rtx_8000");
  REQUIRE(q.kernel_model());
  CHECK(make_rates(q, Precision::mixed_fp16, CpuBuild::pip, 1).gemm_flops_s == Approx(16.3e12 * q.arch.cuda_efficiency));
  // The roofline devices keep the half2 rate their constants were fitted with (V100: 31.4).
  const DeviceSpec v = load_device_spec("v100_sxm2_16gb");
  REQUIRE_FALSE(v.kernel_model());
  CHECK(make_rates(v, Precision::mixed_fp16, CpuBuild::pip, 1).gemm_flops_s == Approx(31.4e12 * v.compute_efficiency));
}

namespace {
// One 3x3 stride-1 convolution (padding 1) of `ch` -> `ch` channels at hw x hw, batch 64, mixed
// precision, priced on kernel-model rates: 100 TFLOP/s tensor cores, 10 TFLOP/s CUDA cores,
// 1 TB/s memory, 10 us per kernel, Winograd saving 4x the multiplies.
struct WinogradCase {
  OpGraph g;
  int op = -1;
  Rates r;
  WinogradCase(int64_t ch, int64_t hw) {
    ModelBuilder b(g, 64, Precision::mixed_fp16);
    b.conv(b.image_input(ch, hw, hw), static_cast<int>(ch), 3, 1, 1, false, "conv");
    count_all_work(g);
    op = g.num_ops() - 1;
    r.kernel_model = true;
    r.tensor_flops_s = 100e12;
    r.gemm_flops_s = 10e12;
    r.memory_bytes_s = 1e12;
    r.op_overhead_s = 10e-6;
    r.winograd_speedup = 4;
    r.kernel.sm_count = 80;
    r.kernel.smem_bytes_per_sm = 96 * 1024.0;
    r.kernel.l2_bytes = 6e6;
    r.kernel.l2_bytes_s = 1e18;
  }
};
}  // namespace

TEST_CASE("a 3x3 convolution takes tensor-core Winograd where its channels outweigh the transforms", "[kernel_model]") {
  // 512 channels at 14x14: x and y hold 64 x 512 x 196 = 6,422,528 fp16 elements each. The
  // transforms write and read 2.25x both: 2 x 2.25 x 12,845,056 x 2 B = 115,605,504 B,
  // 115.6 us at 1 TB/s. The implicit GEMM (2 x 12,544 x 512 x 4,608 = 59.2 GFLOP) takes
  // >= 592 us of math at 100 TFLOP/s; Winograd a quarter of the same tiles' math plus the
  // transforms and two more kernels.
  WinogradCase wide(512, 14);
  Rates gemm_only = wide.r;
  gemm_only.winograd_speedup = 1;
  const OpCost implicit = OpCostModel(gemm_only).visit(wide.g, wide.op);
  REQUIRE(implicit.math_s >= 2.0 * 12544 * 512 * 4608 / 100e12);
  CHECK(implicit.flops_saved == 0);
  const OpCost w = OpCostModel(wide.r).visit(wide.g, wide.op);
  const double transform_s = 2.0 * 2.25 * 2.0 * 6422528 * 2 / 1e12;
  CHECK(transform_s == Approx(115.605504e-6));
  CHECK(w.math_s == Approx(implicit.math_s / 4));
  CHECK(w.overhead_s == Approx(3 * 10e-6));
  CHECK(w.time_s() == Approx(std::max(implicit.math_s / 4 + transform_s, w.memory_s) + 30e-6));
  CHECK(w.time_s() < implicit.time_s());
  CHECK(w.flops_saved == Approx(wide.g.op(wide.op).work.flops * 0.75));
  // 64 channels at 56x56: the same 6.4M elements per tensor (same 115.6 us of transforms) but
  // 8x fewer multiply-adds per element: 2 x 200,704 x 64 x 576 = 14.8 GFLOP, >= 148 us, whose
  // quarter plus the transforms exceeds the implicit GEMM: it stays.
  WinogradCase narrow(64, 56);
  const OpCost n = OpCostModel(narrow.r).visit(narrow.g, narrow.op);
  CHECK(n.flops_saved == 0);
  CHECK(n.overhead_s == Approx(10e-6));
}

TEST_CASE("Hopper: fp8 tensor cores run twice the bf16 rate; architectures before Ada have none", "[kernel_model]") {
  const ArchSpec h = load_arch_spec("hopper");
  CHECK(h.flops_per_clk_sm(MathDtype::tensor_fp8) == 2 * h.flops_per_clk_sm(MathDtype::tensor_bf16));
  const DeviceSpec d = load_device_spec("h100_sxm5");
  // The datasheet's dense rates agree with 132 SMs x per-SM rate x the stated clock.
  CHECK(d.tensor_bf16_tflops * 1e12 == Approx(132 * 4096 * d.boost_clock_mhz * 1e6).epsilon(0.01));
  CHECK(d.tensor_fp8_tflops == Approx(2 * d.tensor_bf16_tflops).epsilon(0.001));
  GpuKernelRates r = rates_for(h, 132, d.tensor_bf16_tflops * 1e12);
  GemmShape bf16{16384, 16384, 16384, 1, 2, 2};
  GemmShape fp8 = bf16;
  fp8.in_bytes = 1;
  const KernelTime tb = gemm_kernel_time_tile(bf16, r, 128, 128);
  r.math_flops_s = d.tensor_fp8_tflops * 1e12;
  const KernelTime t8 = gemm_kernel_time_tile(fp8, r, 128, 128);
  CHECK(t8.waves == tb.waves);
  CHECK(t8.math_s == Approx(tb.math_s / 2).epsilon(0.001));
  for (const char* a : {"kepler", "pascal", "volta", "turing", "ampere_ga100", "ampere_ga10x"})
    CHECK_FALSE(load_arch_spec(a).has(MathDtype::tensor_fp8));
  CHECK(load_arch_spec("ada").has(MathDtype::tensor_fp8));
}

TEST_CASE("Blackwell: twice Hopper's tensor rate per SM; B200 and GB200 state it at their clocks", "[kernel_model]") {
  const ArchSpec h = load_arch_spec("hopper"), b = load_arch_spec("blackwell");
  for (MathDtype m : {MathDtype::tensor_fp16, MathDtype::tensor_bf16, MathDtype::tensor_tf32, MathDtype::tensor_fp8})
    CHECK(b.flops_per_clk_sm(m) == 2 * h.flops_per_clk_sm(m));
  CHECK(b.flops_per_clk_sm(MathDtype::fp32) == h.flops_per_clk_sm(MathDtype::fp32));
  // No Blackwell rows to fit on: Hopper's constants carried over, not invented.
  CHECK(b.tensor_efficiency == h.tensor_efficiency);
  CHECK(b.memory_efficiency == h.memory_efficiency);
  CHECK(b.launch_us == h.launch_us);
  // The datasheets' dense rates = 148 SMs x 8192 FLOP/clk x the stated clock (B200 on HGX at
  // 1,000 W: 2,250 TFLOP/s; GB200 at 1,200 W: 2,500), fp8 twice that.
  for (const char* name : {"b200", "gb200"}) {
    INFO(name);
    const DeviceSpec d = load_device_spec(name);
    CHECK(d.sm_count == 148);
    CHECK(d.tensor_bf16_tflops * 1e12 == Approx(148 * 8192 * d.boost_clock_mhz * 1e6).epsilon(0.001));
    CHECK(d.tensor_fp8_tflops == Approx(2 * d.tensor_bf16_tflops));
    CHECK(d.tensor_tf32_tflops == Approx(d.tensor_bf16_tflops / 2));
  }
  // One full wave of 128x128 tiles on a B200 takes Hopper's tile time x (H100's per-SM rate /
  // B200's): 989.4 / 132 against 2,250 / 148 TFLOP/s per SM.
  const GpuKernelRates rh = rates_for(h, 132, 989.4e12), rb = rates_for(b, 148, 2250e12);
  const KernelTime th = gemm_kernel_time_tile({128.0 * 132 * 2, 128, 4096, 1, 2, 2}, rh, 128, 128);
  const KernelTime tb = gemm_kernel_time_tile({128.0 * 148 * 2, 128, 4096, 1, 2, 2}, rb, 128, 128);
  REQUIRE(th.waves == 1);
  REQUIRE(tb.waves == 1);
  CHECK(tb.math_s / th.math_s == Approx((989.4 / 132) / (2250.0 / 148)).epsilon(1e-9));
}

// Clusters (Hopper's TMA multicast, Blackwell's two-SM MMA): the larger operand panel of a
// tile is read from L2 once per cluster. 16 tiles of 128x256 over K = 4096, 16-bit, on 16 SMs
// (one CTA each: 1.5 x 32,768 accumulator registers fill an SM's 65,536): without sharing
// 16 x (128 + 256) x 4096 x 2 B of panels, with pairs 16 x (128 + 256 / 2) x 4096 x 2 B; the
// 512 x 1024 x 2 B output is written once either way. A lone tile has no partner.
TEST_CASE("clusters: a pair of CTAs reads the larger operand panel from L2 once", "[kernel_model]") {
  GpuKernelRates r = rates_for(load_arch_spec("hopper"), 16, 989.4e12 * 16 / 132);
  r.l2_bytes_s = 1e12;
  const double out = 512.0 * 1024 * 2;
  const GemmShape g{512, 1024, 4096, 1, 2, 2};
  r.cluster_operand_sharing = 1;
  const KernelTime alone = gemm_kernel_time_tile(g, r, 128, 256);
  REQUIRE(alone.tiles == 16);
  REQUIRE(alone.split_k == 1);
  CHECK(alone.l2_s == Approx((16.0 * 384 * 4096 * 2 + out) / 1e12));
  r.cluster_operand_sharing = 2;
  const KernelTime paired = gemm_kernel_time_tile(g, r, 128, 256);
  CHECK(paired.l2_s == Approx((16.0 * 256 * 4096 * 2 + out) / 1e12));
  CHECK(paired.math_s == alone.math_s);  // the math is the same tiles
  // 256x128 shares its A panel the same way.
  CHECK(gemm_kernel_time_tile({1024, 512, 4096, 1, 2, 2}, r, 256, 128).l2_s == Approx(paired.l2_s));
  // One tile on one SM: nothing to share.
  r.sm_count = 1;
  const KernelTime lone = gemm_kernel_time_tile({128, 256, 4096, 1, 2, 2}, r, 128, 256);
  REQUIRE(lone.split_k == 1);
  CHECK(lone.l2_s == Approx((384.0 * 4096 * 2 + 128.0 * 256 * 2) / 1e12));
  // A cluster of 4 over 1..8 tiles along M (the partners of a 128x256 tile's B panel): fewer
  // tiles share among themselves, so one more tile never reads less (t x (128 + 256 / min(t, 4))
  // x K x 2 B grows with t). Tiles along N need other B panels: nothing to share.
  r.cluster_operand_sharing = 4;
  r.sm_count = 8;
  r.math_flops_s = 1e20;  // traffic-bound: split-K would only add partials, so none is picked
  double previous = 0;
  for (int tiles = 1; tiles <= 8; ++tiles) {
    INFO(tiles << " tiles");
    const KernelTime kt = gemm_kernel_time_tile({128.0 * tiles, 256, 4096, 1, 2, 2}, r, 128, 256);
    REQUIRE(kt.split_k == 1);
    CHECK(kt.l2_s == Approx((tiles * (128 + 256.0 / std::min(tiles, 4)) * 4096 * 2 + 128.0 * tiles * 256 * 2) / 1e12));
    CHECK(kt.l2_s > previous);
    previous = kt.l2_s;
  }
  const KernelTime wide = gemm_kernel_time_tile({128, 256.0 * 8, 4096, 1, 2, 2}, r, 128, 256);
  CHECK(wide.l2_s == Approx((8 * 384.0 * 4096 * 2 + 128.0 * 2048 * 2) / 1e12));
  // The architectures say which have clusters: Hopper and Blackwell pair CTAs, none before.
  CHECK(load_arch_spec("hopper").cluster_operand_sharing == 2);
  CHECK(load_arch_spec("blackwell").cluster_operand_sharing == 2);
  for (const char* a : {"kepler", "pascal", "volta", "turing", "ampere_ga100", "ampere_ga10x", "ada"})
    CHECK(load_arch_spec(a).cluster_operand_sharing == 1);
}

TEST_CASE("the heuristic's tile: a small GEMM takes a small tile, a large one a large tile", "[kernel_model]") {
  const ArchSpec a = load_arch_spec("ampere_ga100");
  GpuKernelRates r = rates_for(a, 108, 312e12);
  r.l2_bytes_s = 5120 * 1.41e9;
  r.dram_bytes_s = 1.555e12;
  // 512 x 512: 128x128 tiles make 16 CTAs on 108 SMs; 64x64 tiles make 64 (and split-K fills more).
  const KernelTime small = gemm_kernel_time(GemmShape{512, 512, 512, 1, 2, 2}, r);
  CHECK(small.tile_m * small.tile_n <= 64 * 128);
  const KernelTime big = gemm_kernel_time(GemmShape{16384, 16384, 4096, 1, 2, 2}, r);
  CHECK(big.tile_m * big.tile_n >= 128 * 128);
  // A long-K product with a small output (a weight gradient) is split over K.
  const KernelTime wgrad = gemm_kernel_time_tile(GemmShape{256, 256, 200704, 1, 2, 2}, r, 128, 128);
  CHECK(wgrad.split_k > 1);
  CHECK(wgrad.tiles == 4 * wgrad.split_k);
}

TEST_CASE("split-K takes the least time over the splits the first wave allows, and is monotone", "[kernel_model]") {
  const ArchSpec a = load_arch_spec("ampere_ga100");
  GpuKernelRates r = rates_for(a, 108, 312e12);
  r.l2_bytes_s = 5120 * 1.41e9;
  r.dram_bytes_s = 1.555e12;
  // A weight gradient: 256 x 256 outputs, K = 200,704 (N*Ho*Wo). 128x128 tiles: 4 output tiles,
  // 2 CTAs/SM x 108 = 216 slots, so up to 54 slices fit one wave. With s slices the math is one
  // wave of 2 x 128 x 128 x ceil(K / s) x 2 CTAs at 312/108 TFLOP/s per SM; DRAM moves A and B
  // once (256 x 200,704 x 2 B each) plus the output and s fp32 partials written and read
  // (256 x 256 x (2 + 8 s) B) at 1.555 TB/s. s = 32: math 142.28 us < DRAM 143.04 us;
  // s = 31: math 146.9 us; s = 33: DRAM 143.38 us. So 32 slices, 143.04 us.
  const KernelTime t = gemm_kernel_time_tile(GemmShape{256, 256, 200704, 1, 2, 2}, r, 128, 128);
  CHECK(t.split_k == 32);
  CHECK(t.waves == 1);
  const double dram = 2.0 * 256 * 200704 * 2 + 256.0 * 256 * (2 + 8 * 32);
  CHECK(t.time_s() == Approx(dram / 1.555e12).epsilon(1e-9));
  // Monotone: the time never falls as K, M or the batch grow (the former rule, "slice until the
  // slots are full, each slice at least 8 K-steps", let K = 512 beat K = 511).
  for (double n : {64.0, 256.0, 1024.0}) {
    double prev = 0;
    for (double k = 64; k <= 8192; k += 61) {
      const double now = gemm_kernel_time(GemmShape{n, 576, k, 1, 2, 2}, r).time_s();
      INFO("n " << n << " k " << k);
      CHECK(now >= prev);
      prev = now;
    }
    prev = 0;
    for (double m = 8; m <= 8192; m += 37) {
      const double now = gemm_kernel_time(GemmShape{m, n, 4608, 1, 2, 2}, r).time_s();
      INFO("n " << n << " m " << m);
      CHECK(now >= prev);
      prev = now;
    }
  }
}

namespace {

std::string temp_device(const std::string& stem, const std::string& body) {
  const auto dir = std::filesystem::temp_directory_path() / "xpusim_kernel_model";
  std::filesystem::create_directories(dir);
  const auto path = dir / (stem + ".yaml");
  std::ofstream f(path);
  f << "name: " << stem << "\nengine: analytical\nkind: gpu\ndefault_system: server_pcie\nsource: test\n"
    << "memory_gb: 16\nmemory_bandwidth_gbps: 900\nfp32_tflops: 15\nsm_count: 80\n" << body;
  return path.string();
}

std::string error_of(const std::string& path) {
  try {
    load_device_spec(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a device YAML's architecture errors name file:line: key", "[kernel_model]") {
  // Unknown architecture.
  std::string p = temp_device("km_unknown", "architecture: maxwell\n");
  std::string e = error_of(p);
  CHECK(e.find(p + ":10: architecture: unknown architecture 'maxwell'") != std::string::npos);
  // A rate the architecture lacks: TF32 on Volta, fp8 on Ampere.
  p = temp_device("km_tf32_volta", "architecture: volta\ntensor_fp16_tflops: 125\ntensor_tf32_tflops: 100\n");
  e = error_of(p);
  CHECK(e.find(p + ":12: tensor_tf32_tflops: architecture volta has no TF32 tensor cores") != std::string::npos);
  p = temp_device("km_fp8_ampere",
                  "architecture: ampere_ga100\nl2_mb: 40\nboost_clock_mhz: 1410\ntensor_fp16_tflops: 312\n"
                  "tensor_bf16_tflops: 312\ntensor_tf32_tflops: 156\ntensor_fp8_tflops: 600\n");
  e = error_of(p);
  CHECK(e.find(p + ":16: tensor_fp8_tflops: architecture ampere_ga100 has no fp8 tensor cores") != std::string::npos);
  // A rate the architecture has but the file leaves out.
  p = temp_device("km_missing", "architecture: hopper\nl2_mb: 50\nboost_clock_mhz: 1830\ntensor_fp16_tflops: 989\n"
                                "tensor_bf16_tflops: 989\ntensor_tf32_tflops: 494\n");
  e = error_of(p);
  CHECK(e.find("tensor_fp8_tflops: required: architecture hopper has fp8 tensor cores") != std::string::npos);
  CHECK(e.find(p + ":") == 0);
  // A precision the architecture cannot run: tf32 before Ampere.
  p = temp_device("km_prec", "architecture: volta\ntensor_fp16_tflops: 125\nprecisions: [fp32, tf32]\n");
  e = error_of(p);
  CHECK(e.find(p + ":12: precisions: precision tf32 needs TF32 tensor cores") != std::string::npos);
}
