// A framework's cuDNN workspace cap (MXNet 1.x Convolution `workspace`, 1024 MB): the fast
// algorithms' scratch (conv_workspace.hpp) and the convolutions the cap slows, with the
// numbers worked by hand.
#include <catch2/catch.hpp>

#include <vector>

#include "devices/analytical/conv_workspace.hpp"
#include "models/builder.hpp"
#include "models/work.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
struct Layers {
  OpGraph g;
  int big = -1, small = -1, pointwise = -1;
};

// VGG16's conv1_2 (64 -> 64, 3x3 at 224x224), a 512-wide 3x3 at 14x14 and a 1x1, batch 128, fp32.
void build(Layers& l) {
  ModelBuilder b(l.g, 128, Precision::fp32);
  const int wide_in = b.image_input(64, 224, 224);
  const int deep_in = b.image_input(512, 14, 14);  // inputs first: the first layer seals them
  const int x = b.conv(wide_in, 64, 3, 1, 1, false, "big");
  b.conv(x, 64, 1, 1, 0, false, "pointwise");
  b.conv(deep_in, 512, 3, 1, 1, false, "small");
  count_all_work(l.g);
  std::vector<int> convs;  // in insertion order: big, pointwise, small
  for (int i = 0; i < l.g.num_ops(); ++i)
    if (l.g.op(i).kind == OpKind::Conv2D) convs.push_back(i);
  if (convs.size() == 3) l.big = convs[0], l.pointwise = convs[1], l.small = convs[2];
}
}  // namespace

TEST_CASE("the fast algorithm's scratch: 2.25x the input and output tiles of a 3x3 stride-1 convolution",
          "[kernel_model][framework]") {
  Layers l;
  build(l);
  REQUIRE(l.big >= 0);
  REQUIRE(l.small >= 0);
  REQUIRE(l.pointwise >= 0);
  // 224x224: x = y = 128 x 64 x 50,176 = 411,041,792 elements; 2.25 x 822,083,584 x 4 B.
  CHECK(conv_fast_workspace_bytes(l.g, l.big) == Approx(7398752256.0));
  // 14x14: x = y = 128 x 512 x 196 = 12,845,056; 2.25 x 25,690,112 x 4 B = 231 MB.
  CHECK(conv_fast_workspace_bytes(l.g, l.small) == Approx(231211008.0));
  // A 1x1 convolution has no Winograd/FFT algorithm: an implicit GEMM, no scratch counted.
  CHECK(conv_fast_workspace_bytes(l.g, l.pointwise) == 0);
}

TEST_CASE("a 1 GB workspace cap halves the math rate of the layers past it, on kernel-model GPUs only",
          "[kernel_model][framework]") {
  Layers l;
  build(l);
  Rates r;
  r.kernel_model = true;
  r.conv_workspace_limit_bytes = 1024.0 * 1024 * 1024;
  r.conv_capped_efficiency = 0.5;
  auto priced = [&](int op, const Rates& rates) {
    OpCost c;
    c.compute_s = 1e-3, c.math_s = 1e-3, c.memory_s = 0.4e-3, c.overhead_s = 1e-6;
    apply_conv_workspace_cap(l.g, op, rates, c);
    return c;
  };
  // 7.40 GB > 1.07 GB: the math takes 1 / 0.5 = 2x; memory and launch stay.
  const OpCost big = priced(l.big, r);
  CHECK(big.compute_s == Approx(2e-3));
  CHECK(big.math_s == Approx(2e-3));
  CHECK(big.memory_s == Approx(0.4e-3));
  CHECK(big.time_s() == Approx(2.001e-3));
  // 0.23 GB fits: unchanged.
  CHECK(priced(l.small, r).compute_s == Approx(1e-3));
  CHECK(priced(l.pointwise, r).compute_s == Approx(1e-3));
  // A cap of 8 GB lets even the 224 px layer keep its algorithm.
  Rates wide = r;
  wide.conv_workspace_limit_bytes = 8.0 * 1024 * 1024 * 1024;
  CHECK(priced(l.big, wide).compute_s == Approx(1e-3));
  // Roofline devices (no kernel model) and stacks without a cap are untouched.
  Rates roofline = r;
  roofline.kernel_model = false;
  CHECK(priced(l.big, roofline).compute_s == Approx(1e-3));
  Rates uncapped = r;
  uncapped.conv_workspace_limit_bytes = 0;
  CHECK(priced(l.big, uncapped).compute_s == Approx(1e-3));
}
