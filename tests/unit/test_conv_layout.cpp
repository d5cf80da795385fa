// NCHW layout transposes around tensor-core convolutions (devices/analytical/conv_layout.hpp):
// hand-derived bytes and seconds on one 3x3 convolution of ResNet-50's first stage.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "devices/analytical/conv_layout.hpp"
#include "devices/analytical/stack_op_cost.hpp"
#include "engine/framework_spec.hpp"
#include "models/builder.hpp"
#include "models/work.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
// x[32, cin, 56, 56] -> conv 3x3, 64 filters, stride 1, pad 1 -> y[32, 64, 56, 56].
struct OneConv {
  OpGraph g;
  int op = -1;
  OneConv(Precision p, int64_t cin) {
    ModelBuilder b(g, 32, p);
    b.conv(b.image_input(cin, 56, 56), 64, 3, 1, 1, false, "conv");
    op = g.num_ops() - 1;
    count_all_work(g);
  }
};

Rates tensor_rates(double tensor_flops_s) {
  Rates r;
  r.tensor_flops_s = tensor_flops_s;
  r.memory_bytes_s = 1e12;  // 1 TB/s, no cache
  r.op_overhead_s = 10e-6;
  return r;
}
}  // namespace

TEST_CASE("NCHW transposes: a tensor-core convolution reads and writes its input and output once more") {
  OneConv c(Precision::mixed_fp16, 64);
  REQUIRE(c.g.op(c.op).kind == OpKind::Conv2D);
  // x and y: 32 x 64 x 56 x 56 = 6,422,528 elements each; read + written, 2 bytes (fp16):
  // 2 x 12,845,056 x 2 = 51,380,224 bytes.
  const Rates r = tensor_rates(100e12);
  CHECK(nchw_transpose_bytes(c.g, c.op, r) == Approx(51380224.0));
  // Two more kernels (10 us each) and 51.38 MB at 1 TB/s: 71.380224 us added to the op.
  OpCostModel model(r);
  OpCost cost = model.visit(c.g, c.op);
  const double before = cost.time_s();
  add_nchw_transposes(c.g, c.op, r, model, cost);
  CHECK(cost.time_s() - before == Approx(71.380224e-6));
}

TEST_CASE("NCHW transposes: none off tensor cores, none for the RGB stem, 4 bytes under TF32") {
  // fp32 on a GPU without TF32 (no tensor rate at the precision): cuDNN's NCHW kernels run as is.
  OneConv fp32(Precision::fp32, 64);
  CHECK(nchw_transpose_bytes(fp32.g, fp32.op, tensor_rates(0)) == 0.0);
  // TF32 tensor cores on fp32 activations: 2 x 12,845,056 x 4 = 102,760,448 bytes.
  CHECK(nchw_transpose_bytes(fp32.g, fp32.op, tensor_rates(156e12)) == Approx(102760448.0));
  // 3 input channels: under the tensor cores' 8-wide fragment, the stem runs NCHW on CUDA cores.
  OneConv stem(Precision::mixed_fp16, 3);
  CHECK(nchw_transpose_bytes(stem.g, stem.op, tensor_rates(100e12)) == 0.0);
  // Not a convolution: the Input op.
  CHECK(nchw_transpose_bytes(stem.g, 0, tensor_rates(100e12)) == 0.0);
}

TEST_CASE("conv_layout: read from the profile, nchw only where named, a bad value names its line") {
  const std::string p = (std::filesystem::temp_directory_path() / "xpusim_conv_layout.yaml").string();
  std::ofstream(p) << "name: fw\nengines: [analytical]\nconv_layout: nchw\n";
  CHECK(load_framework_spec(p).nchw_activations);
  CHECK_FALSE(load_framework_spec(p, {"conv_layout=native"}).nchw_activations);
  CHECK(load_framework_spec(p, {"conv_layout=native"}).constants_neutral());
  CHECK_FALSE(load_framework_spec(p).constants_neutral());
  std::ofstream(p) << "name: fw\nengines: [analytical]\nconv_layout: nhwc\n";
  CHECK_THROWS_WITH(load_framework_spec(p), Catch::StartsWith(p + ":3: conv_layout:"));
  std::filesystem::remove(p);
}

TEST_CASE("conv_layout_fp32: channels-last AMP, NCHW TF32 (DeepLearningExamples ConvNets from NGC 20.12)") {
  FrameworkSpec fw;
  fw.nchw_activations = false;      // AMP: memory_format nhwc
  fw.nchw_activations_fp32 = true;  // TF32: the launcher sets no memory format
  CHECK_FALSE(fw.nchw_activations_for(Precision::mixed_fp16));
  CHECK(fw.nchw_activations_for(Precision::fp32));
  CHECK(fw.nchw_activations_for(Precision::tf32));
  const Rates r = tensor_rates(156e12);
  // AMP: the stack adds nothing to the convolution.
  OneConv amp(Precision::mixed_fp16, 64);
  OpCostModel m_amp(r);
  CHECK(stack_op_cost(amp.g, amp.op, r, m_amp, fw).time_s() == Approx(m_amp.visit(amp.g, amp.op).time_s()));
  // TF32: two 10 us kernels and 102,760,448 bytes at 1 TB/s: 122.760448 us more.
  OneConv tf32(Precision::fp32, 64);
  OpCostModel m_tf32(r);
  const double plain = m_tf32.visit(tf32.g, tf32.op).time_s();
  CHECK(stack_op_cost(tf32.g, tf32.op, r, m_tf32, fw).time_s() - plain == Approx(122.760448e-6));
}

TEST_CASE("conv_layout_fp32: defaults to conv_layout, may differ from it, a bad value names its line") {
  const std::string p = (std::filesystem::temp_directory_path() / "xpusim_conv_layout_fp32.yaml").string();
  std::ofstream(p) << "name: fw\nengines: [analytical]\nconv_layout: nchw\n";
  CHECK(load_framework_spec(p).nchw_activations_fp32);  // follows conv_layout
  std::ofstream(p) << "name: fw\nengines: [analytical]\nconv_layout_fp32: nchw\n";
  const FrameworkSpec f = load_framework_spec(p);
  CHECK_FALSE(f.nchw_activations);
  CHECK(f.nchw_activations_fp32);
  CHECK_FALSE(f.constants_neutral());
  CHECK(load_framework_spec(p, {"conv_layout_fp32=native"}).constants_neutral());
  std::ofstream(p) << "name: fw\nengines: [analytical]\nconv_layout_fp32: nhwc\n";
  CHECK_THROWS_WITH(load_framework_spec(p), Catch::StartsWith(p + ":3: conv_layout_fp32:"));
  std::filesystem::remove(p);
}
