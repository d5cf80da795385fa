// Operator fusion (devices/cpu/fusion.cpp), the batch-norm kernel (bn_kernel.hpp) and the
// arena memory plan (memory_plan.hpp): fused steps give the unfused results within fp32
// tolerance, gradients through fused groups pass finite differences, the kernel matches
// oneDNN's batch norm, and the plan never lets two live tensors overlap.
#include <algorithm>
#include <cmath>

#include "devices/cpu/bn_kernel.hpp"
#include "devices/cpu/executor.hpp"
#include "devices/cpu/memory_plan.hpp"
#include "models/builder.hpp"
#include "models/training.hpp"
#include "models/work.hpp"
#include "tests/unit/cpu/gradcheck_util.hpp"

using namespace xpusim;
using namespace xpusim::cpu;

namespace {

// Every fusion pattern: conv(+bias) -> relu, conv -> bn -> relu (8 channels, blocked),
// bn -> add -> relu (a residual block), bn -> add without relu, a 2-D batch norm -> relu
// (plain), dense -> relu; plus a conv whose output has a second reader (not fusable).
void fusion_net(ModelBuilder& b) {
  int x = b.image_input(3, 6, 6);
  int labels = b.labels();
  int y = b.relu(b.conv(x, 8, 3, 1, 1, true, "c0"), "r0");                          // conv + relu
  int z = b.relu(b.batch_norm(b.conv(y, 8, 3, 1, 1, false, "c1"), "bn1"), "r1");    // bn + relu
  int s = b.batch_norm(b.conv(z, 8, 1, 1, 0, false, "c2"), "bn2");
  y = b.relu(b.add({s, y}, "res"), "r2");                                          // bn + add + relu
  int t = b.conv(y, 8, 1, 1, 0, false, "c3");
  int u = b.add({b.batch_norm(t, "bn3"), t}, "res2");                               // bn + add; t read twice
  y = b.max_pool(b.relu(u, "r3"), 2, 2, 0, "mp");
  y = b.flatten(y, "flat");
  y = b.relu(b.batch_norm(b.dense(y, 12, false, "d1"), "bn4"), "r4");              // 2-D bn + relu
  y = b.relu(b.dense(y, 10, true, "d2"), "r5");                                    // dense + relu
  b.softmax_cross_entropy(b.dense(y, 3, true, "d3"), labels, "loss");
}

OpGraph graph_of(int64_t batch) {
  OpGraph g;
  ModelBuilder b(g, batch, Precision::fp32);
  fusion_net(b);
  lower_to_training_step(g, TrainingOptions{});
  count_all_work(g);
  return g;
}

std::unique_ptr<Executor> executor(const OpGraph& g, bool fuse, bool own_bn = true, bool plan = true,
                                   bool blocked = true) {
  ExecOptions o;
  o.blocked_layouts = blocked;
  o.seed = 9;
  o.threads = 2;
  o.fuse_ops = fuse;
  o.own_batch_norm = own_bn;
  o.plan_memory = plan;
  auto ex = std::make_unique<Executor>(g, o);
  ex->fill_synthetic();
  return ex;
}

double max_rel(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    num = std::max(num, std::abs(static_cast<double>(a[k]) - b[k]));
    den = std::max(den, std::abs(static_cast<double>(b[k])));
  }
  return den > 0 ? num / den : num;
}

}  // namespace

TEST_CASE("fusion: the graph patterns are found, and only those", "[cpu][fusion]") {
  OpGraph g = graph_of(4);
  CHECK(executor(g, false)->fused_ops() == 0);
  // All tensors plain (one layout): forward r0 (conv), r1 (bn1), res + r2 (bn2), res2 + r3
  // (bn3: its input t has a second reader, the add, but the bn's output does not), r4 (2-D
  // bn4), r5 (dense); backward: the relu backward before bn1 and before bn4 (r2's and r3's
  // gradients also flow to the shortcut, so they stay separate ops).
  auto plain = executor(g, true, true, true, false);
  CHECK(plain->fused_ops() == 10);
  // Tensors passed inside a group are not stored; their consumers' results still are.
  int away = 0;
  for (int t = 0; t < g.num_tensors(); ++t) away += !plain->materialized(t);
  CHECK(away == 10);
  // Channel-blocked storage fuses a batch norm only with operands in its own layout.
  auto blocked = executor(g, true);
  CHECK(blocked->fused_ops() >= 6);
  CHECK(blocked->fused_ops() <= 10);
}

TEST_CASE("fusion: fused and unfused backward passes give the same weight gradients", "[cpu][fusion]") {
  OpGraph g = graph_of(8);
  auto fused = executor(g, true, true, false);
  auto plain = executor(g, false, true, false);
  for (auto* ex : {fused.get(), plain.get()}) {
    ex->forward(true);
    ex->backward();
  }
  int n = 0;
  for (int t = 0; t < g.num_tensors(); ++t) {
    if (g.tensor(t).role != TensorRole::weight_grad) continue;
    INFO(g.tensor(t).name);
    CHECK(max_rel(fused->read(t), plain->read(t)) < 1e-5);
    ++n;
  }
  CHECK(n >= 14);
}

TEST_CASE("fusion: fused training steps match unfused ones within fp32 tolerance", "[cpu][fusion]") {
  OpGraph g = graph_of(8);
  auto fused = executor(g, true);
  auto plain = executor(g, false);
  for (int s = 0; s < 4; ++s) {
    fused->step();
    plain->step();
    INFO("step " << s << " fused " << fused->loss() << " unfused " << plain->loss());
    CHECK(std::abs(fused->loss() - plain->loss()) <= 1e-5 * std::abs(plain->loss()) + 1e-6);
  }
  for (int t : fused->persistent_tensors()) {
    INFO(g.tensor(t).name);
    CHECK(max_rel(fused->read(t), plain->read(t)) < 1e-4);
  }
  CHECK(max_rel(fused->read(fused->probs_tensor()), plain->read(plain->probs_tensor())) < 1e-4);
}

// The fused patterns with few ReLU inputs (4x4 images, global pooling instead of max
// pooling), so that central differences rarely straddle a ReLU kink: fusion_net itself
// fails finite differences with or without fusion (a kink within 1e-3 of some input).
void fusion_net_small(ModelBuilder& b) {
  int x = b.image_input(2, 3, 3);
  int labels = b.labels();
  int y = b.relu(b.conv(x, 8, 3, 1, 1, true, "c0"), "r0");
  int z = b.relu(b.batch_norm(b.conv(y, 8, 1, 1, 0, false, "c1"), "bn1"), "r1");
  y = b.relu(b.add({b.batch_norm(b.conv(z, 8, 1, 1, 0, false, "c2"), "bn2"), y}, "res"), "r2");
  y = b.global_avg_pool(y, "gap");
  y = b.relu(b.dense(y, 5, true, "d2"), "r5");
  b.softmax_cross_entropy(b.dense(y, 3, true, "d3"), labels, "loss");
}

TEST_CASE("fusion: gradients through fused groups pass finite differences", "[cpu][fusion][grad]") {
  // The harness runs with the default options: fusion and the batch-norm kernel on.
  test::Harness h(fusion_net_small, 2);
  REQUIRE(h.ex->fused_ops() > 0);
  test::check_all_weight_gradients(h, 4, 1e-3);
}

TEST_CASE("batch-norm kernel matches oneDNN's batch norm (blocked and plain)", "[cpu][fusion]") {
  OpGraph g = graph_of(8);
  for (bool plan : {false, true}) {
    auto own = executor(g, false, true, plan);
    auto ref = executor(g, false, false, plan);
    own->forward(true);
    ref->forward(true);
    own->backward();
    ref->backward();
    int compared = 0;
    for (int i = 0; i < g.num_ops(); ++i) {
      const OpNode& op = g.op(i);
      if (op.kind != OpKind::BatchNorm && op.kind != OpKind::BatchNormBackward) continue;
      for (int t : op.outputs) {
        if (plan && g.tensor(t).role != TensorRole::weight_grad && g.tensor(t).role != TensorRole::aux) continue;
        INFO(op_kind_name(op.kind) << " " << g.tensor(t).name);
        CHECK(max_rel(own->read(t), ref->read(t)) < 2e-5);
        ++compared;
      }
    }
    CHECK(compared > 8);
  }
}

TEST_CASE("batch-norm kernel: direct values, fused add and relu, gradient mask", "[cpu][fusion]") {
  // 2 images, 8 channels (one block of 8), 3 positions; channel c holds c + k.
  BnShape sh{2, 8, 3, 8};
  std::vector<float> x(48), gamma(8, 2.0f), beta(8, 0.5f), r(48, -3.0f), y(48), mean(8), var(8);
  for (int n = 0; n < 2; ++n)
    for (int s = 0; s < 3; ++s)
      for (int c = 0; c < 8; ++c) x[static_cast<size_t>((n * 3 + s) * 8 + c)] = static_cast<float>(c + n * 3 + s);
  bn_forward(sh, 0.0f, x.data(), gamma.data(), beta.data(), r.data(), true, y.data(), mean.data(), var.data());
  // Per channel the values are c + {0,1,2,3,4,5}: mean c + 2.5, variance 35/12.
  for (int c = 0; c < 8; ++c) {
    CHECK(mean[static_cast<size_t>(c)] == Approx(c + 2.5));
    CHECK(var[static_cast<size_t>(c)] == Approx(35.0 / 12.0));
  }
  const double istd = 1.0 / std::sqrt(35.0 / 12.0);
  for (int k = 0; k < 6; ++k) {  // x - mean = k - 2.5; y = relu(2 (k - 2.5) istd + 0.5 - 3)
    const int n = k / 3, s = k % 3;
    const double want = std::max(0.0, 2 * (k - 2.5) * istd - 2.5);
    CHECK(y[static_cast<size_t>((n * 3 + s) * 8 + 5)] == Approx(want).margin(1e-6));
  }
  // Backward with the mask: only the last position (k = 5) passed the ReLU.
  std::vector<float> dy(48, 1.0f), dx(48), dg(8), db(8);
  bn_backward(sh, 0.0f, dy.data(), y.data(), x.data(), gamma.data(), mean.data(), var.data(), dx.data(), dg.data(),
              db.data());
  CHECK(db[3] == Approx(1.0));
  CHECK(dg[3] == Approx(2.5 * istd));
}

TEST_CASE("memory plan: live tensors never overlap and the arena is near its lower bound", "[cpu][fusion]") {
  OpGraph g = graph_of(8);
  const std::vector<PlanStep> steps = schedule_steps(g);
  MemoryPlan p = plan_memory(g, true, {}, &steps);
  REQUIRE(p.arena_floats >= p.peak_live_floats);
  CHECK(static_cast<double>(p.arena_floats) <= 1.25 * static_cast<double>(p.peak_live_floats));
  // Lifetimes from the steps (views resolve to what they view through the offsets, so compare roots).
  const int nt = g.num_tensors();
  std::vector<int> first(static_cast<size_t>(nt), -1), last(static_cast<size_t>(nt), -1);
  for (size_t k = 0; k < steps.size(); ++k)
    for (const auto* v : {&steps[k].reads, &steps[k].writes})
      for (int t : *v) {
        if (first[static_cast<size_t>(t)] < 0) first[static_cast<size_t>(t)] = static_cast<int>(k);
        last[static_cast<size_t>(t)] = static_cast<int>(k);
      }
  int pairs = 0;
  for (int a = 0; a < nt; ++a)
    for (int b = a + 1; b < nt; ++b) {
      const Tensor &A = g.tensor(a), &B = g.tensor(b);
      if (A.is_view || B.is_view || first[static_cast<size_t>(a)] < 0 || first[static_cast<size_t>(b)] < 0) continue;
      if (A.role != TensorRole::activation && A.role != TensorRole::activation_grad) continue;
      if (B.role != TensorRole::activation && B.role != TensorRole::activation_grad) continue;
      const bool live_together = first[static_cast<size_t>(a)] <= last[static_cast<size_t>(b)] &&
                                 first[static_cast<size_t>(b)] <= last[static_cast<size_t>(a)];
      if (!live_together) continue;
      const int64_t oa = p.offset[static_cast<size_t>(a)], ob = p.offset[static_cast<size_t>(b)];
      INFO(A.name << " and " << B.name);
      CHECK((oa + A.desc.numel() <= ob || ob + B.desc.numel() <= oa));
      ++pairs;
    }
  CHECK(pairs > 50);
  // Without sharing every tensor has its own bytes.
  MemoryPlan own = plan_memory(g, false);
  CHECK(own.arena_floats > p.arena_floats);
}
