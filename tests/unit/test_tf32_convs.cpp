// A stack that sends only its convolutions to the TF32 tensor cores (framework fp32_math:
// tf32_convs; PyTorch >= 1.12's defaults: cudnn.allow_tf32 on, cuda.matmul.allow_tf32 off),
// and the pytorch_2 profile built on it. Hand-derived rates on one dense layer, then the
// relations a prediction must keep.
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
// x[8, 1024, 1, 1] -> pool -> dense 1024 (no bias) -> loss: the forward matmul is
// M = 8, N = 1024, K = 1024, 2 x 8 x 1024 x 1024 = 16,777,216 FLOPs.
int forward_matmul(OpGraph& g) {
  ModelBuilder b(g, 8, Precision::fp32);
  const int x = b.image_input(1024, 1, 1);
  const int labels = b.labels();
  const int y = b.dense(b.global_avg_pool(x, "gap"), 1024, false, "fc");
  b.softmax_cross_entropy(y, labels, "loss");
  count_all_work(g);
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::MatMul) return i;
  return -1;
}

Rates rates(bool matmul_tensor_cores) {
  Rates r;
  r.gemm_flops_s = 5e13;     // CUDA cores
  r.tensor_flops_s = 4e14;   // TF32 tensor cores
  r.vector_flops_s = 1e15;
  r.memory_bytes_s = 1e15;   // memory far from binding
  r.matmul_tensor_cores = matmul_tensor_cores;
  return r;  // no fill, shape or tile model: time = FLOPs / rate
}

StepReport run(const std::string& model, const std::string& framework, const std::string& precision) {
  PredictRequest r = fixtures::predict_request("a100_sxm4_80gb", 1, model, 32, precision, "");
  r.data = DataSource::synthetic;
  r.placement.framework = framework;
  return predict(r);
}
double op_s(const StepReport& r, const std::string& kind) {
  const auto it = r.per_op_s.find(kind);
  return it == r.per_op_s.end() ? 0.0 : it->second;
}
}  // namespace

TEST_CASE("tf32_convs: a matmul runs on the CUDA cores, not the TF32 tensor cores", "[frameworks][tf32]") {
  OpGraph g;
  const int mm = forward_matmul(g);
  REQUIRE(mm >= 0);
  REQUIRE(g.op(mm).work.flops == Approx(16777216.0));
  // 16,777,216 FLOPs at 4e14 FLOP/s = 41.943 ns on the tensor cores; at 5e13 = 335.544 ns.
  CHECK(OpCostModel(rates(true)).visit(g, mm).compute_s == Approx(41.943040e-9));
  CHECK(OpCostModel(rates(false)).visit(g, mm).compute_s == Approx(335.544320e-9));
}

TEST_CASE("fp32_math: tf32_convs reads as TF32 with strict matmuls; a bad value names the key", "[frameworks][tf32]") {
  const std::string p = (std::filesystem::temp_directory_path() / "xpusim_tf32_convs.yaml").string();
  auto load = [&](const std::string& extra) {
    std::ofstream(p) << "name: fw\nengines: [analytical]\n" << extra;
    return load_framework_spec(p);
  };
  const FrameworkSpec convs = load("fp32_math: tf32_convs\n");
  CHECK(convs.fp32_as_tf32);
  CHECK(convs.fp32_matmul_strict);
  CHECK_FALSE(convs.constants_neutral());
  const FrameworkSpec all = load("fp32_math: tf32\n");
  CHECK(all.fp32_as_tf32);
  CHECK_FALSE(all.fp32_matmul_strict);
  const FrameworkSpec none = load("");
  CHECK_FALSE(none.fp32_as_tf32);
  CHECK_FALSE(none.fp32_matmul_strict);
  CHECK_THROWS_WITH(load("fp32_math: tf16\n"), Catch::StartsWith(p + ":3: fp32_math:") && Catch::Contains("tf32_convs"));
  std::filesystem::remove(p);
}

TEST_CASE("pytorch-2.x: fp32 convolutions as TF32, matmuls strict; --precision tf32 takes both", "[frameworks][tf32]") {
  // ResNet-50 on an A100: the convolutions cost the same in fp32 and tf32 runs (both TF32),
  // the classifier's matmul does not (strict fp32 on the CUDA cores in the fp32 run).
  const StepReport f = run("resnet50", "pytorch-2.x", "fp32");
  const StepReport t = run("resnet50", "pytorch-2.x", "tf32");
  for (const char* k : {"conv2d", "conv2d_backward_data", "conv2d_backward_filter"}) {
    INFO(k);
    CHECK(op_s(f, k) > 0);
    CHECK(op_s(f, k) == Approx(op_s(t, k)));
  }
  CHECK(op_s(f, "matmul") > 1.5 * op_s(t, "matmul"));
  // BERT has no convolutions: its fp32 run is strict fp32 throughout, far slower than TF32.
  const StepReport bf = run("bert_base", "pytorch-2.x", "fp32");
  const StepReport bt = run("bert_base", "pytorch-2.x", "tf32");
  CHECK(op_s(bf, "matmul") > 4 * op_s(bt, "matmul"));
  CHECK(bf.step_time_s > bt.step_time_s);
}

TEST_CASE("pytorch-2.x: torch.optim's foreach Adam, not DeepLearningExamples' per-parameter BertAdam loop",
          "[frameworks][tf32]") {
  // Same kernels otherwise: the TF32 run of BERT-base differs between the two PyTorch profiles
  // only in the optimizer step (pytorch: 13 launches and 31 fp32 accesses per parameter tensor).
  const StepReport dle = run("bert_base", "pytorch", "tf32");
  const StepReport p2 = run("bert_base", "pytorch-2.x", "tf32");
  CHECK(op_s(dle, "adam_update") > 5 * op_s(p2, "adam_update"));
  CHECK(op_s(dle, "matmul") == Approx(op_s(p2, "matmul")));
  CHECK(p2.step_time_s < dle.step_time_s);
  // Under AMP both run a fused optimizer: the same update.
  CHECK(op_s(run("bert_base", "pytorch", "mixed_fp16"), "adam_update") ==
        Approx(op_s(run("bert_base", "pytorch-2.x", "mixed_fp16"), "adam_update")));
}
