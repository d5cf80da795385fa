// How a convolution maps onto the TPU's 128 x 128 MXU (issue 32): the kernel's taps contracted
// in passes without im2col (small feature counts fold several taps into one pass), and below a
// per-core batch of 128 the weights held in the array with the positions streamed. Numbers by
// hand from the weight-stationary formula of sim/tpu/mxu_timing.hpp.
#include <catch2/catch.hpp>

#include "common/config_paths.hpp"
#include "models/builder.hpp"
#include "models/graph.hpp"
#include "models/training.hpp"
#include "models/work.hpp"
#include "sim/tpu/lowering.hpp"
#include "sim/tpu/mxu_timing.hpp"
#include "sim/tpu/tpu_spec.hpp"

using namespace xpusim;

namespace {

// x[batch, cin, hw, hw] -> conv cin->cout k x k, stride 1, same padding (forward only).
OpGraph one_conv(int64_t batch, int64_t cin, int64_t cout, int k, int64_t hw) {
  OpGraph g;
  ModelBuilder b(g, batch, Precision::bf16);
  const int x = b.image_input(cin, hw, hw);
  b.conv(x, static_cast<int>(cout), k, 1, k / 2, false, "conv");
  count_all_work(g);
  return g;
}

// MXU seconds of the step's one convolution without the fixed per-op issue cost, and its
// VMEM chunk count.
struct MxuTime {
  double seconds = 0;
  int64_t chunks = 0;
};
MxuTime conv_mxu(const OpGraph& g, const tpu::TpuSpec& s) {
  const tpu::Program p = tpu::lower_step(g, s, tpu::LoweringOptions{});
  MxuTime t;
  for (const tpu::Task& task : p.tasks)
    if (task.unit == tpu::Unit::mxu) t.seconds += task.seconds;
  for (const tpu::FusedOp& op : p.ops)
    if (op.kind == "conv2d") t.chunks = op.chunks;
  t.seconds -= s.op_overhead_us * 1e-6;
  return t;
}

tpu::TpuSpec conv_test_v2() { return tpu::load_tpu_spec(config_dir() + "/devices/tpu_v2.yaml"); }

}  // namespace

TEST_CASE("a convolution's taps fill the array's contraction rows in passes", "[tpu][conv_mapping]") {
  using tpu::conv_tap_passes;
  // 160 features (WRN-28-10's first group): each of the 9 taps its own pass of 160 rows
  // (2 row tiles of 128: 256 rows for 160 used, where im2col's 1,440 would take 12 x 128).
  CHECK(conv_tap_passes(160, 9, 128).rows == 160);
  CHECK(conv_tap_passes(160, 9, 128).passes == 9);
  CHECK(conv_tap_passes(640, 9, 128).passes == 9);
  // 64 features fold 2 taps a pass: 5 passes of 128 rows, as im2col's 576 -> 5 tiles.
  CHECK(conv_tap_passes(64, 9, 128).rows == 128);
  CHECK(conv_tap_passes(64, 9, 128).passes == 5);
  // A 3-channel image under a 7 x 7 kernel (ResNet-50's first layer): 42 taps a pass
  // (126 rows), 2 passes, as im2col's 147 -> 2 tiles.
  CHECK(conv_tap_passes(3, 49, 128).rows == 126);
  CHECK(conv_tap_passes(3, 49, 128).passes == 2);
  // WRN's 16-channel layers: 8 taps a pass, 2 passes. A 1 x 1 kernel is one pass.
  CHECK(conv_tap_passes(16, 9, 128).passes == 2);
  CHECK(conv_tap_passes(4, 1, 128).rows == 4);
  CHECK(conv_tap_passes(256, 1, 128).passes == 1);
  CHECK(conv_tap_passes(0, 9, 128).passes == 0);
}

TEST_CASE("a 160-channel 3x3 convolution at 16 per core holds its weights and pads 160 to 256",
          "[tpu][conv_mapping]") {
  const tpu::TpuSpec s = conv_test_v2();
  REQUIRE(s.mxu_rows == 128);
  REQUIRE(s.mxu_cols == 128);
  REQUIRE(s.mxu_count == 1);
  // 16 x 32 x 32 = 16,384 positions streamed; per pass (tap) a [160 x 160] weight tile set:
  // 2 x 2 = 4 tiles. A chunk of pc positions costs 3 x pc + (2 x 128 + 128 + pc - 2) cycles a
  // pass; 9 passes.
  const MxuTime t = conv_mxu(one_conv(16, 160, 160, 3, 32), s);
  REQUIRE(t.chunks >= 1);
  const int64_t pc = tpu::ceil_div(16384, t.chunks);
  const double cycles = static_cast<double>(t.chunks) * 9.0 * (3.0 * pc + 256 + 128 + pc - 2);
  CHECK(t.seconds == Approx(cycles / 700e6).epsilon(1e-9));
  // Busy fraction of the array: 16,384 x 1,440 x 160 MACs over 128 x 128 PEs = 230,400 cycles
  // of useful work against 9 x 4 x 16,384 = 589,824: at most 39.06 % (less each chunk's weight
  // load and pipeline fill, 382 cycles a pass). im2col with a free orientation gave 94 %.
  const double useful_s = 16384.0 * 1440.0 * 160.0 / (128.0 * 128.0) / 700e6;
  CHECK(useful_s / t.seconds <= 230400.0 / 589824.0);
  CHECK(useful_s / t.seconds > 0.38);
}

TEST_CASE("from 128 per core the array may hold the activations and stream the features",
          "[tpu][conv_mapping]") {
  const tpu::TpuSpec s = conv_test_v2();
  // 128 per core: the 160 output features stream (160 rows >= 128, no loss) through tiles of
  // [128 positions x 128 input features]; the input features still pad 160 -> 256: 62.5 %.
  const MxuTime big = conv_mxu(one_conv(128, 160, 160, 3, 32), s);
  const MxuTime small = conv_mxu(one_conv(16, 160, 160, 3, 32), s);
  const double useful_big = 128.0 * 1024 * 1440.0 * 160.0 / (128.0 * 128.0) / 700e6;
  // (at most; a tile's cold start, 2 x 128 + 128 + 160 - 2 = 542 cycles against 160, takes
  // a little of it).
  CHECK(useful_big / big.seconds <= 0.625);
  CHECK(useful_big / big.seconds > 0.60);
  // Per sample the 128-per-core run takes about 0.39 / 0.62 = 0.63 of the 16-per-core one.
  const double per_sample = (big.seconds / 128) / (small.seconds / 16);
  CHECK(per_sample > 0.60);
  CHECK(per_sample < 0.66);
  // 640 features need no padding: weights held at 16 per core fill the array (8 x 8 maps:
  // 1,024 positions; 25 tiles a pass, 9 passes).
  const MxuTime w640 = conv_mxu(one_conv(16, 640, 640, 3, 8), s);
  const double useful_640 = 1024.0 * 5760.0 * 640.0 / (128.0 * 128.0) / 700e6;
  CHECK(useful_640 / w640.seconds > 0.97);
}
