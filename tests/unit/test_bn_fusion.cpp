// Batch norm + (residual add) + ReLU as one kernel under mixed precision (framework
// fused_bn_activation_half, devices/analytical/bn_fusion.hpp): which ops the fused kernel
// absorbs, and hand-derived prices of the ones it does not, on a two-conv residual block.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "devices/analytical/bn_fusion.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/rates.hpp"
#include "devices/analytical/stack_op_cost.hpp"
#include "engine/framework_spec.hpp"
#include "models/builder.hpp"
#include "models/training.hpp"
#include "models/work.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
// x[8, 64, 8, 8] -> conv 3x3 -> BN -> relu1 -> conv 3x3 -> BN -> add(relu1) -> relu2 -> gap ->
// dense 10 -> loss. Every activation is 8 x 64 x 8 x 8 = 32,768 elements: 65,536 B in fp16.
struct Block {
  OpGraph g;
  int relu1 = -1, add = -1, relu2 = -1, relu1_grad = -1, relu2_grad = -1, bn1 = -1;
  explicit Block(Precision p) {
    ModelBuilder b(g, 8, p);
    const int x = b.image_input(64, 8, 8);
    const int labels = b.labels();
    const int a = b.relu(b.batch_norm(b.conv(x, 64, 3, 1, 1, false, "c1"), "bn1"), "relu1");
    const int s = b.add({b.batch_norm(b.conv(a, 64, 3, 1, 1, false, "c2"), "bn2"), a}, "add");
    const int y = b.relu(s, "relu2");
    b.softmax_cross_entropy(b.dense(b.global_avg_pool(y, "gap"), 10, false, "fc"), labels, "loss");
    lower_to_training_step(g, TrainingOptions{});
    count_all_work(g);
    for (int i = 0; i < g.num_ops(); ++i) {
      const OpNode& n = g.op(i);
      if (n.name == "relu1") relu1 = i;
      if (n.name == "relu2") relu2 = i;
      if (n.name == "add") add = i;
      if (n.name == "bn1") bn1 = i;
      if (n.kind == OpKind::ActivationBackward && n.forward_op >= 0) {
        if (g.op(n.forward_op).name == "relu1") relu1_grad = i;
        if (g.op(n.forward_op).name == "relu2") relu2_grad = i;
      }
    }
  }
};

Rates gpu_rates() {
  Rates r;
  r.memory_bytes_s = 1e12;  // 1 TB/s, no cache: 65,536 B = 65.536 ns
  r.vector_flops_s = 1e15;
  r.gemm_flops_s = 1e13;
  r.tensor_flops_s = 1e14;  // a GPU with tensor cores at this precision
  r.op_overhead_s = 10e-6;
  return r;
}
}  // namespace

TEST_CASE("fused BN + ReLU: roles in a residual block, mixed precision only") {
  Block m(Precision::mixed_fp16);
  REQUIRE(m.relu1 >= 0);
  REQUIRE(m.add >= 0);
  REQUIRE(m.relu2 >= 0);
  REQUIRE(m.relu1_grad >= 0);
  REQUIRE(m.relu2_grad >= 0);
  CHECK(bn_fusion_role(m.g, m.relu1) == BnFusionRole::absorbed);
  CHECK(bn_fusion_role(m.g, m.add) == BnFusionRole::side_input);
  CHECK(bn_fusion_role(m.g, m.relu2) == BnFusionRole::absorbed);
  CHECK(bn_fusion_role(m.g, m.relu1_grad) == BnFusionRole::grad_absorbed);
  CHECK(bn_fusion_role(m.g, m.relu2_grad) == BnFusionRole::grad_absorbed_residual);
  CHECK(bn_fusion_role(m.g, m.bn1) == BnFusionRole::none);
  Block f(Precision::fp32);  // cuDNN's fused BN + activation is the 16-bit NHWC path only
  CHECK(bn_fusion_role(f.g, f.relu1) == BnFusionRole::none);
  CHECK(bn_fusion_role(f.g, f.add) == BnFusionRole::none);
  CHECK(bn_fusion_role(f.g, f.relu2_grad) == BnFusionRole::none);
}

TEST_CASE("fused BN + ReLU: hand-derived prices with and without the stack's fusion") {
  Block m(Precision::mixed_fp16);
  REQUIRE(m.g.tensor(m.g.op(m.relu1).outputs[0]).desc.bytes() == 65536);
  const Rates r = gpu_rates();
  OpCostModel model(r);
  FrameworkSpec plain, fused;
  fused.fused_bn_activation_half = true;
  // Unfused ReLU: reads x, writes y = 131,072 B = 131.072 ns, plus a 10 us launch.
  const OpCost relu = stack_op_cost(m.g, m.relu1, r, model, plain);
  CHECK(relu.memory_s == Approx(131.072e-9));
  CHECK(relu.time_s() == Approx(10e-6 + 131.072e-9));
  // Fused: the BN kernel writes the activated output; the ReLU costs nothing.
  CHECK(stack_op_cost(m.g, m.relu1, r, model, fused).time_s() == 0.0);
  CHECK(stack_op_cost(m.g, m.relu2, r, model, fused).time_s() == 0.0);
  // The residual add: unfused reads two tensors and writes one (196,608 B) + a launch; fused,
  // the BN kernel reads the shortcut: 65,536 B = 65.536 ns, no launch.
  CHECK(stack_op_cost(m.g, m.add, r, model, plain).time_s() == Approx(10e-6 + 196.608e-9));
  const OpCost add = stack_op_cost(m.g, m.add, r, model, fused);
  CHECK(add.overhead_s == 0.0);
  CHECK(add.time_s() == Approx(65.536e-9));
  // ReLU gradients: the BN backward reads y besides dy (65.536 ns); after the residual add it
  // also writes the shortcut's gradient (131.072 ns in all).
  CHECK(stack_op_cost(m.g, m.relu1_grad, r, model, plain).time_s() == Approx(10e-6 + 196.608e-9));
  CHECK(stack_op_cost(m.g, m.relu1_grad, r, model, fused).time_s() == Approx(65.536e-9));
  CHECK(stack_op_cost(m.g, m.relu2_grad, r, model, fused).time_s() == Approx(131.072e-9));
  // No tensor cores at the precision (a CPU, or a GPU without them): no cuDNN fusion.
  Rates cpu = r;
  cpu.tensor_flops_s = 0;
  OpCostModel cpu_model(cpu);
  CHECK(stack_op_cost(m.g, m.relu1, cpu, cpu_model, fused).time_s() == Approx(10e-6 + 131.072e-9));
}

TEST_CASE("fused_bn_activation_half and kernel_tf32_efficiency_scale: read, default off, bad value names its line") {
  const std::string p = (std::filesystem::temp_directory_path() / "xpusim_bn_fusion.yaml").string();
  std::ofstream(p) << "name: fw\nengines: [analytical]\nfused_bn_activation_half: true\nkernel_tf32_efficiency_scale: 0.8\n";
  const FrameworkSpec f = load_framework_spec(p);
  CHECK(f.fused_bn_activation_half);
  CHECK(f.kernel_tf32_efficiency_scale == 0.8);
  CHECK_FALSE(f.constants_neutral());
  CHECK(load_framework_spec(p, {"fused_bn_activation_half=false", "kernel_tf32_efficiency_scale=1"}).constants_neutral());
  std::ofstream(p) << "name: fw\nengines: [analytical]\nkernel_tf32_efficiency_scale: 0\n";
  CHECK_THROWS_WITH(load_framework_spec(p), Catch::StartsWith(p + ":3: kernel_tf32_efficiency_scale:"));
  std::ofstream(p) << "name: fw\nengines: [tpu_systemc]\nfused_bn_activation_half: true\n";
  CHECK_THROWS_WITH(load_framework_spec(p), Catch::StartsWith(p + ":3: fused_bn_activation_half:"));
  std::filesystem::remove(p);
}

TEST_CASE("kernel_tf32_efficiency_scale: TF32 tensor rates on kernel-model GPUs only, on top of the tensor scale",
          "[framework][kernel_model]") {
  const DeviceSpec a100 = load_device_spec("a100_sxm4_40gb");
  REQUIRE(a100.kernel_model());
  FrameworkSpec base, fw;
  base.fp32_as_tf32 = fw.fp32_as_tf32 = true;
  base.kernel_tensor_efficiency_scale = fw.kernel_tensor_efficiency_scale = 1.2;
  fw.kernel_tf32_efficiency_scale = 0.5;
  // TF32 (an "fp32" run of a stack whose fp32 is TF32, or tf32 asked for): efficiency x 1.2 x 0.5
  // = 0.6 of the architecture's share (under the cap of 1), against x 1.2: half the rate.
  REQUIRE(a100.tensor_efficiency * 1.2 < 1.0);
  for (Precision p : {Precision::fp32, Precision::tf32}) {
    const double b = stack_rates(a100, p, CpuBuild::pip, 1, base).tensor_flops_s;
    CHECK(b > 0);
    CHECK(stack_rates(a100, p, CpuBuild::pip, 1, fw).tensor_flops_s == Approx(0.5 * b));
  }
  // 16-bit runs keep the stack's tensor scale alone.
  CHECK(stack_rates(a100, Precision::mixed_fp16, CpuBuild::pip, 1, fw).tensor_flops_s ==
        Approx(stack_rates(a100, Precision::mixed_fp16, CpuBuild::pip, 1, base).tensor_flops_s));
  // A roofline GPU (V100, no TF32) is untouched.
  const DeviceSpec v100 = load_device_spec("v100_sxm2_16gb");
  CHECK(stack_rates(v100, Precision::mixed_fp16, CpuBuild::pip, 1, fw).tensor_flops_s ==
        Approx(stack_rates(v100, Precision::mixed_fp16, CpuBuild::pip, 1, base).tensor_flops_s));
}
