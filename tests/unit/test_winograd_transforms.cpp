// cuDNN's Winograd algorithms for a 3x3 stride-1 convolution off the tensor cores (fp32), as
// autotuning would pick among them (issue 31): WINOGRAD_NONFUSED F(4x4, 3x3) divides the
// multiplies by the device's winograd_speedup, but its transforms move 3.25 x (x + y) bytes
// through DRAM and its batched GEMMs read and write the 2.25x-expanded tiles; the fused
// F(2x2, 3x3) kernel keeps the transforms in
// shared memory but saves at most 36/16 = 2.25x, and exists for the forward pass and the data
// gradient only. Few channels (cnn10's 64 at 32x32) make the transforms dear.
#include <catch2/catch.hpp>

#include "devices/analytical/op_cost.hpp"
#include "devices/analytical/winograd.hpp"
#include "models/builder.hpp"
#include "models/training.hpp"
#include "models/work.hpp"
#include "tests/unit/kernel_rates.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
// fp32 kernel-model rates: 10 TFLOP/s CUDA cores, no tensor cores at this precision, 500 GB/s
// DRAM, an L2 fast enough never to bind, no launch cost.
Rates fp32_rates(double winograd_speedup) {
  Rates r = test::kernel_model_rates({.tensor_flops_s = 0, .gemm_flops_s = 10e12, .memory_bytes_s = 500e9,
                                      .op_overhead_s = 0, .sm_count = 68, .smem_kib_per_sm = 64,
                                      .pipeline_stages = 2, .l2_bytes = 5.5e6});
  r.winograd_speedup = winograd_speedup;
  return r;
}

struct Layer {
  OpGraph g;
  int fwd = -1, data = -1, filter = -1;
};

// One 3x3 'same' convolution C -> C channels on an HxW image, batch 128, with its gradients.
void build(Layer& l, int c, int hw) {
  ModelBuilder b(l.g, 128, Precision::fp32);
  const int x = b.image_input(c, hw, hw);
  const int labels = b.labels();
  // A first convolution so that "conv" has an input gradient to compute.
  int y = b.conv(b.conv(x, c, 3, 1, 1, false, "first"), c, 3, 1, 1, false, "conv");
  y = b.dense(b.global_avg_pool(y, "gap"), 10, true, "fc");
  b.softmax_cross_entropy(y, labels, "loss");
  lower_to_training_step(l.g);
  count_all_work(l.g);
  for (int i = 0; i < l.g.num_ops(); ++i) {
    const OpNode& n = l.g.op(i);
    const OpNode& f = n.forward_op >= 0 ? l.g.op(n.forward_op) : n;
    if (f.name != "conv") continue;
    if (n.kind == OpKind::Conv2D) l.fwd = i;
    if (n.kind == OpKind::Conv2DBackwardData) l.data = i;
    if (n.kind == OpKind::Conv2DBackwardFilter) l.filter = i;
  }
}
}  // namespace

TEST_CASE("Winograd tile arithmetic: Lavin & Gray's F(2x2, 3x3) and F(4x4, 3x3)", "[kernel_model]") {
  // F(2x2, 3x3): a 4x4 input tile, 16 multiplies for the 2 x 2 x 9 = 36 of a direct 3x3.
  CHECK(kWinogradFused3x3.input_tile() == 4);
  CHECK(kWinogradFused3x3.multiply_reduction() == 36.0 / 16);
  // F(4x4, 3x3): a 6x6 input tile, 36 multiplies for 4 x 4 x 9 = 144; 36 transformed elements
  // per 16 of the tensor.
  CHECK(kWinogradNonfused3x3.input_tile() == 6);
  CHECK(kWinogradNonfused3x3.multiply_reduction() == 144.0 / 36);
  CHECK(kWinogradNonfused3x3.tile_expansion() == 36.0 / 16);
  // Larger output tiles save more multiplies and expand the tensors less: F(6x6, 3x3) 324 / 64
  // and 64 / 36, where F(2x2, 3x3)'s 4x4 tiles per 2x2 block are 16 / 4.
  constexpr WinogradTile f6{6, 3};
  CHECK(f6.multiply_reduction() == Approx(324.0 / 64));
  CHECK(f6.tile_expansion() == Approx(64.0 / 36));
  CHECK(kWinogradFused3x3.tile_expansion() == 16.0 / 4);
}

TEST_CASE("Winograd transforms: cnn10's 64-channel 32x32 layer keeps the fused kernel forward, pays them for the weight gradient",
          "[kernel_model]") {
  Layer l;
  build(l, 64, 32);
  REQUIRE(l.fwd >= 0);
  REQUIRE(l.data >= 0);
  REQUIRE(l.filter >= 0);
  // x = y = 128 x 64 x 32 x 32 = 8,388,608 fp32 elements. The transforms move
  // 3.25 x (x + y) x 4 B = 218,103,808 B (0.436 ms at 500 GB/s); the batched GEMMs read and
  // write 2.25 x (x + y) x 4 B = 150,994,944 B (0.302 ms).
  const double transform_s = 3.25 * (2 * 8388608.0) * 4 / 500e9;
  const double gemm_traffic_s = 2.25 * (2 * 8388608.0) * 4 / 500e9;
  CHECK(transform_s == Approx(436.21e-6).epsilon(1e-4));
  CHECK(gemm_traffic_s == Approx(301.99e-6).epsilon(1e-4));
  // The implicit GEMM's math (no fast algorithm): 2 x 131,072 x 64 x 576 = 9.66 GFLOP, at least
  // 0.966 ms at 10 TFLOP/s.
  const OpCost direct_fwd = OpCostModel(fp32_rates(1.0)).visit(l.g, l.fwd);
  const OpCost direct_filter = OpCostModel(fp32_rates(1.0)).visit(l.g, l.filter);
  CHECK(direct_fwd.math_s >= 2 * 131072.0 * 64 * 576 / 10e12);

  // winograd_speedup 4 (F(4x4, 3x3)'s theoretical 144/36): forward, nonfused would take
  // max(math/4 = ~0.24 ms, 0.302 ms) + 0.436 ms = 0.738 ms; fused F(2x2, 3x3) math/2.25 =
  // ~0.43 ms: fused wins.
  OpCostModel w4(fp32_rates(4.0));
  const OpCost fwd = w4.visit(l.g, l.fwd);
  CHECK(fwd.time_s() == Approx(direct_fwd.math_s / 2.25).epsilon(1e-6));
  CHECK(fwd.flops_saved == Approx(l.g.op(l.fwd).work.flops * (1 - 1 / 2.25)).epsilon(1e-6));
  CHECK(w4.visit(l.g, l.data).time_s() == Approx(OpCostModel(fp32_rates(1.0)).visit(l.g, l.data).math_s / 2.25).epsilon(1e-6));
  // Weight gradient: no fused Winograd in cuDNN, so nonfused against the implicit GEMM. Its
  // GEMMs are bound by their traffic (math/4 < 0.302 ms), so it takes 5.5 x (x + y) x 4 B at
  // DRAM speed, 0.738 ms < 0.97 ms.
  REQUIRE(direct_filter.math_s / 4 < gemm_traffic_s);
  const OpCost filter = w4.visit(l.g, l.filter);
  CHECK(filter.time_s() == Approx(gemm_traffic_s + transform_s).epsilon(1e-6));
  CHECK(filter.time_s() == Approx(738.2e-6).epsilon(1e-3));
  CHECK(filter.time_s() < direct_filter.time_s());
  // Before issue 31 the weight gradient was priced at math/4 alone, ~0.24 ms, 3x less.
  CHECK(filter.time_s() > 2.5 * direct_filter.math_s / 4);
  // A speed-up of 1.5 is below the fused cap: the fused kernel takes math/1.5.
  CHECK(OpCostModel(fp32_rates(1.5)).visit(l.g, l.fwd).time_s() == Approx(direct_fwd.math_s / 1.5).epsilon(1e-6));
}

TEST_CASE("Winograd transforms: a 256-channel 8x8 layer takes the nonfused F(4x4, 3x3) forward", "[kernel_model]") {
  Layer l;
  build(l, 256, 8);
  REQUIRE(l.fwd >= 0);
  // x = y = 128 x 256 x 8 x 8 = 2,097,152 elements: transforms 3.25 x 4,194,304 x 4 B =
  // 54.5 MB, 0.109 ms; GEMM traffic 2.25 x ... = 37.7 MB, 0.075 ms, under their math. The same
  // 9.66 GFLOP as the 64-channel layer (4x the channels squared, 1/16 the pixels): nonfused
  // math/4 + 0.109 ms = ~0.35 ms beats fused math/2.25 = ~0.43 ms.
  const double transform_s = 3.25 * (2 * 2097152.0) * 4 / 500e9;
  CHECK(transform_s == Approx(109.05e-6).epsilon(1e-4));
  const OpCost direct = OpCostModel(fp32_rates(1.0)).visit(l.g, l.fwd);
  CHECK(l.g.op(l.fwd).work.flops == Approx(2 * 8192.0 * 256 * 2304).epsilon(1e-3));
  const OpCost fwd = OpCostModel(fp32_rates(4.0)).visit(l.g, l.fwd);
  CHECK(fwd.time_s() == Approx(direct.math_s / 4 + transform_s).epsilon(1e-6));
  CHECK(fwd.time_s() < direct.math_s / 2.25);
}
