// The zoo against reference implementations: exact parameter counts, and forward MACs
// against published per-image figures (torchvision / fvcore), checked with tolerances.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"

using namespace xpusim;

namespace {
GraphTotals totals(const std::string& name, int64_t batch, bool training = false,
                   Precision p = Precision::fp32) {
  GraphOptions o;
  o.batch = batch;
  o.training = training;
  o.precision = p;
  return graph_totals(build_graph(find_model(name), o));
}

double macs_per_sample(const std::string& name) {
  GraphOptions o;
  o.batch = 1;
  o.training = false;
  OpGraph g = build_graph(find_model(name), o);
  double flops = 0;
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::Conv2D || g.op(i).kind == OpKind::MatMul) flops += g.op(i).work.flops;
  return flops / 2;
}
}  // namespace

TEST_CASE("every zoo model with a reference count matches it exactly", "[zoo]") {
  auto zoo = load_zoo();
  REQUIRE(zoo.size() >= 18);
  int checked = 0;
  for (const auto& m : zoo) {
    if (!m.reference_params) continue;
    INFO(m.name);
    GraphOptions o;
    o.batch = 2;
    o.training = false;
    // The reference counts the backbone; a task head (weights named head.*) comes on top.
    GraphTotals t = graph_totals(build_graph(m, o));
    CHECK(t.params - t.head_params == *m.reference_params);
    ++checked;
  }
  CHECK(checked >= 13);
}

TEST_CASE("published parameter counts", "[zoo]") {
  CHECK(totals("resnet50", 1).params == 25557032);
  CHECK(totals("vgg16", 1).params == 138357544);
  CHECK(totals("resnet152", 1).params == 60192808);
  CHECK(totals("alexnet", 1).params == 61100840);
  CHECK(totals("inception_v3", 1).params == 27161264);
  // cnn10: "1.9 M params" in the CIFAR-10 2080 Ti vs TPU study
  CHECK(totals("cnn10", 1).params == Approx(1.9e6).epsilon(0.02));
}

TEST_CASE("forward MACs per image match published figures", "[zoo][flops]") {
  // torchvision / fvcore per-image MACs of conv and fully-connected layers
  CHECK(macs_per_sample("resnet50") == Approx(4.09e9).epsilon(0.02));
  CHECK(macs_per_sample("resnet152") == Approx(11.51e9).epsilon(0.02));
  CHECK(macs_per_sample("vgg16") == Approx(15.47e9).epsilon(0.02));
  CHECK(macs_per_sample("alexnet") == Approx(0.714e9).epsilon(0.03));
  CHECK(macs_per_sample("inception_v3") == Approx(5.71e9).epsilon(0.03));
}

TEST_CASE("ResNet-50 training step at batch 32: the totals of the golden case, derived by hand", "[zoo][flops]") {
  // tests/golden/graph_resnet50_totals asserts `xpusim graph --model resnet50 --batch 32
  // --totals`; these are the same numbers from published figures and simple arithmetic.
  GraphTotals t = totals("resnet50", 32, true);
  const int64_t params = 25557032;  // torchvision resnet50 (v1.5), 25.6 M
  CHECK(t.params == params);
  CHECK(t.weight_bytes == 4 * params);           // fp32
  CHECK(t.weight_grad_bytes == 4 * params);
  CHECK(t.optimizer_state_bytes == 4 * params);  // one momentum buffer
  CHECK(t.flops_update == Approx(6.0 * params).epsilon(1e-12));  // v = mu v + g + wd w; w -= lr v
  CHECK(t.input_bytes == 32 * (3 * 224 * 224 * 4 + 4));  // fp32 images + int32 labels
  // Forward: ~4.1 G multiply-adds per 224 px image (torchvision), 2 FLOPs each; BN, ReLU,
  // pooling and the loss add about 1%.
  CHECK(t.flops_forward / 32 / 2 == Approx(4.09e9).epsilon(0.02));
  // Backward: a data and a weight gradient per conv/matmul, about twice the forward.
  CHECK(t.flops_backward / t.flops_forward == Approx(2.0).epsilon(0.03));
  CHECK(t.flops_train_step == Approx(t.flops_forward + t.flops_backward + t.flops_update).epsilon(1e-12));
}

TEST_CASE("work scales linearly with batch and a training step is about 3x the forward", "[zoo][flops]") {
  GraphTotals b1 = totals("resnet50", 1, true), b8 = totals("resnet50", 8, true);
  CHECK(b8.flops_forward == Approx(8 * b1.flops_forward).epsilon(1e-9));
  CHECK(b8.params == b1.params);
  double ratio = b8.flops_train_step / b8.flops_forward;
  CHECK(ratio > 2.8);
  CHECK(ratio < 3.1);
  CHECK(b8.activation_bytes > b1.activation_bytes * 7);
  CHECK(b8.peak_bytes > b8.weight_bytes + b8.weight_grad_bytes + b8.optimizer_state_bytes);
}

TEST_CASE("every zoo model lowers to a training step at several batch sizes", "[zoo][lowering]") {
  for (const auto& m : load_zoo()) {
    for (int64_t batch : {1, 3}) {
      INFO(m.name << " batch " << batch);
      GraphOptions o;
      o.batch = batch;
      OpGraph g = build_graph(m, o);
      CHECK(g.is_training_step);
      for (const auto& [t, grad] : g.gradient_tensor) CHECK(g.tensor(grad).desc.shape == g.tensor(t).desc.shape);
      // every weight gets exactly one update
      int updates = 0;
      for (int i = 0; i < g.num_ops(); ++i) updates += g.op(i).phase == Phase::update;
      CHECK(updates == static_cast<int>(g.tensors_with_role(TensorRole::weight).size()));
      CHECK_NOTHROW(g.topological_order());
    }
  }
}

TEST_CASE("unknown models and non-positive batches are user errors", "[zoo][errors]") {
  CHECK_THROWS_AS(find_model("resnet51"), UserError);
  CHECK_THROWS_WITH(find_model("resnet51"), Catch::Contains("model: unknown model") && Catch::Contains("resnet50"));
  GraphOptions o;
  o.batch = 0;
  CHECK_THROWS_AS(build_graph(find_model("resnet50"), o), UserError);
}
