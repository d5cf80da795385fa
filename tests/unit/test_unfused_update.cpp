// A stack whose fp32 Adam is a Python loop of unfused tensor ops (framework
// fp32_unfused_update_kernels / _accesses; DeepLearningExamples' BertAdam): hand-derived
// launches and bytes on one 1024 x 1024 weight, against the fused kernel.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "devices/analytical/op_cost.hpp"
#include "engine/framework_spec.hpp"
#include "models/builder.hpp"
#include "models/training.hpp"
#include "models/work.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
// x[8, 1024, 1, 1] -> pool -> dense 1024 (no bias) -> loss: one weight of 1,048,576 fp32
// elements, Adam.
struct OneDense {
  OpGraph g;
  int adam = -1;
  OneDense() {
    ModelBuilder b(g, 8, Precision::fp32);
    const int x = b.image_input(1024, 1, 1);
    const int labels = b.labels();
    const int y = b.dense(b.global_avg_pool(x, "gap"), 1024, false, "fc");
    b.softmax_cross_entropy(y, labels, "loss");
    TrainingOptions o;
    o.optimizer = Optimizer::adam;
    lower_to_training_step(g, o);
    count_all_work(g);
    for (int i = 0; i < g.num_ops(); ++i)
      if (g.op(i).kind == OpKind::AdamUpdate) adam = i;
  }
};

Rates rates(int kernels, int accesses) {
  Rates r;
  r.memory_bytes_s = 1e12;  // 1 TB/s, no cache
  r.vector_flops_s = 1e15;
  r.op_overhead_s = 10e-6;
  r.unfused_update_kernels = kernels;
  r.unfused_update_accesses = accesses;
  return r;
}
}  // namespace

TEST_CASE("unfused Adam: 13 launches and 31 fp32 accesses per element instead of one kernel and 7") {
  OneDense d;
  REQUIRE(d.adam >= 0);
  // Fused: reads w, grad, m, v and writes w, m, v: 7 x 1,048,576 x 4 B = 29,360,128 B = 29.360128 us
  // at 1 TB/s, plus one 10 us launch. The math (12 FLOPs + 1 sqrt at 4 slots per element,
  // 16.8 MFLOP at 1 PFLOP/s = 0.017 us) stays under the memory time.
  const OpCost fused = OpCostModel(rates(0, 0)).visit(d.g, d.adam);
  CHECK(fused.memory_s == Approx(29.360128e-6));
  CHECK(fused.overhead_s == Approx(10e-6));
  CHECK(fused.time_s() == Approx(39.360128e-6));
  // BertAdam: 13 ops, 31 x 1,048,576 x 4 B = 130,023,424 B = 130.023424 us; 13 x 10 us launches.
  const OpCost loop = OpCostModel(rates(13, 31)).visit(d.g, d.adam);
  CHECK(loop.memory_s == Approx(130.023424e-6));
  CHECK(loop.overhead_s == Approx(130e-6));
  CHECK(loop.time_s() == Approx(260.023424e-6));
  CHECK(loop.cls == OpClass::update);
  // Kernels without an access count: the fused kernel's bytes, 13 launches.
  const OpCost launches = OpCostModel(rates(13, 0)).visit(d.g, d.adam);
  CHECK(launches.time_s() == Approx(29.360128e-6 + 130e-6));
}

TEST_CASE("unfused Adam: each access moves an element of the optimizer state's type") {
  OneDense d;
  REQUIRE(d.adam >= 0);
  const OpNode& n = d.g.op(d.adam);
  REQUIRE(n.inputs.size() == 4);  // w, grad, m, v
  REQUIRE(d.g.tensor(n.inputs[2]).desc.dtype == DType::fp32);
  // bf16 moments (a low-precision optimizer state): 31 x 1,048,576 x 2 B =
  // 65,011,712 B = 65.011712 us at 1 TB/s, half the fp32 loop's bytes; the launches stay 13.
  d.g.tensor_mut(n.inputs[2]).desc.dtype = DType::bf16;
  d.g.tensor_mut(n.inputs[3]).desc.dtype = DType::bf16;
  const OpCost loop = OpCostModel(rates(13, 31)).visit(d.g, d.adam);
  CHECK(loop.memory_s == Approx(65.011712e-6));
  CHECK(loop.overhead_s == Approx(130e-6));
  // fp16 moments: the same 2 bytes.
  d.g.tensor_mut(n.inputs[2]).desc.dtype = DType::fp16;
  d.g.tensor_mut(n.inputs[3]).desc.dtype = DType::fp16;
  CHECK(OpCostModel(rates(13, 31)).visit(d.g, d.adam).memory_s == Approx(65.011712e-6));
}

TEST_CASE("fp32_unfused_update_*: read from the profile, default fused, a bad value names its line") {
  const std::string p = (std::filesystem::temp_directory_path() / "xpusim_unfused_update.yaml").string();
  std::ofstream(p) << "name: fw\nengines: [analytical]\nfp32_unfused_update_kernels: 13\nfp32_unfused_update_accesses: 31\n";
  const FrameworkSpec f = load_framework_spec(p);
  CHECK(f.fp32_unfused_update_kernels == 13);
  CHECK(f.fp32_unfused_update_accesses == 31);
  CHECK_FALSE(f.constants_neutral());
  const FrameworkSpec n = load_framework_spec(p, {"fp32_unfused_update_kernels=0", "fp32_unfused_update_accesses=0"});
  CHECK(n.constants_neutral());
  std::ofstream(p) << "name: fw\nengines: [analytical]\nfp32_unfused_update_kernels: -1\n";
  CHECK_THROWS_WITH(load_framework_spec(p), Catch::StartsWith(p + ":3: fp32_unfused_update_kernels:"));
  std::filesystem::remove(p);
}

TEST_CASE("gradient accumulation sums each device's own gradients, not the all-reduced copies too") {
  // BERT-large pre-training, 16 sequences of 128 per micro-batch, 8 micro-batches per step: each
  // device sums the same 393 local gradient tensors whatever the data-parallel width. Before the
  // fix the all-reduced copies (also weight_grad) were summed too, doubling the sums on 4 GPUs.
  auto req = [](int count) {
    PredictRequest r = fixtures::predict_request("v100_sxm2_16gb", count, "bert_large", 16, "mixed_fp16");
    r.seq_len = 128;
    r.global_batch = 16LL * 8 * count;
    r.placement.framework = "pytorch";
    return r;
  };
  const StepReport one = predict(req(1)), four = predict(req(4));
  REQUIRE(one.extra.count("gradient_accumulation_s"));
  REQUIRE(four.extra.count("gradient_accumulation_s"));
  const double a1 = one.extra.at("gradient_accumulation_s").get<double>();
  const double a4 = four.extra.at("gradient_accumulation_s").get<double>();
  CHECK(a1 > 0);
  CHECK(a4 == Approx(a1).epsilon(1e-12));
}
