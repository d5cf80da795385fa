// Graph construction, training lowering and work counting on tiny graphs whose numbers are
// derived by hand in the comments.
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "models/builder.hpp"
#include "models/training.hpp"
#include "models/work.hpp"

using namespace xpusim;

namespace {
// x[2,3,8,8] -> conv 4x3x3x3 s1 p1 (no bias) -> bn -> relu -> gap -> dense 4->5 (+b) -> loss
struct Tiny {
  OpGraph g;
  int conv_op = -1, dense_op = -1;
  Tiny(Precision p = Precision::fp32) {
    ModelBuilder b(g, 2, p);
    int x = b.image_input(3, 8, 8);
    int labels = b.labels();
    int y = b.conv(x, 4, 3, 1, 1, false, "conv");
    conv_op = g.num_ops() - 1;
    y = b.relu(b.batch_norm(y, "bn"), "relu");
    y = b.global_avg_pool(y, "gap");
    y = b.dense(y, 5, true, "fc");
    dense_op = g.num_ops() - 1;
    b.softmax_cross_entropy(y, labels, "loss");
  }
};
}  // namespace

TEST_CASE("forward work of a conv and a dense layer is counted by hand", "[graph][work]") {
  Tiny t;
  count_all_work(t.g);
  // conv: N*Ho*Wo*Cout*Cin*Kh*Kw MACs = 2*8*8*4*3*3*3 = 13824 -> 27648 FLOPs
  CHECK(t.g.op(t.conv_op).work.flops == 27648);
  // bytes: x 2*3*8*8*4 = 1536, w 4*3*3*3*4 = 432, y 2*4*8*8*4 = 2048
  CHECK(t.g.op(t.conv_op).work.bytes_read == 1536 + 432);
  CHECK(t.g.op(t.conv_op).work.bytes_written == 2048);
  // dense: 2*M*N*K + M*N = 2*2*5*4 + 10 = 90
  CHECK(t.g.op(t.dense_op).work.flops == 90);
  GraphTotals tot = graph_totals(t.g);
  // params: conv 108 + bn 8 + fc 20 + 5 = 141
  CHECK(tot.params == 141);
}

TEST_CASE("training lowering gives every tensor a gradient of its own shape", "[graph][lowering]") {
  Tiny t;
  const int forward_ops = t.g.num_ops();
  lower_to_training_step(t.g);
  count_all_work(t.g);
  REQUIRE(t.g.num_ops() > forward_ops);
  int checked = 0;
  for (const auto& [tensor, grad] : t.g.gradient_tensor) {
    CHECK(t.g.tensor(grad).desc.shape == t.g.tensor(tensor).desc.shape);
    ++checked;
  }
  // weights (conv.w, bn.g, bn.b, fc.w, fc.b) and activations (conv, bn, relu, gap, fc)
  CHECK(checked == 10);
  // The image input needs no gradient: no backward-data conv for the first layer.
  int bwd_data = 0, bwd_filter = 0, sgd = 0;
  for (int i = 0; i < t.g.num_ops(); ++i) {
    bwd_data += t.g.op(i).kind == OpKind::Conv2DBackwardData;
    bwd_filter += t.g.op(i).kind == OpKind::Conv2DBackwardFilter;
    sgd += t.g.op(i).kind == OpKind::SGDMomentumUpdate;
  }
  CHECK(bwd_data == 0);
  CHECK(bwd_filter == 1);
  CHECK(sgd == 5);
  // The backward filter conv does as many MACs as the forward conv.
  for (int i = 0; i < t.g.num_ops(); ++i)
    if (t.g.op(i).kind == OpKind::Conv2DBackwardFilter) CHECK(t.g.op(i).work.flops == 27648);
  GraphTotals tot = graph_totals(t.g);
  CHECK(tot.optimizer_state_bytes == 141 * 4);
  CHECK(tot.weight_grad_bytes == 141 * 4);
}

TEST_CASE("the schedule is a topological order of the Boost graph", "[graph]") {
  Tiny t;
  lower_to_training_step(t.g);
  auto topo = t.g.topological_order();
  REQUIRE(static_cast<int>(topo.size()) == t.g.num_ops());
  // Every edge goes forward in the insertion schedule.
  const auto& bg = t.g.boost_graph();
  for (auto [ei, ee] = boost::edges(bg); ei != ee; ++ei)
    CHECK(boost::source(*ei, bg) < boost::target(*ei, bg));
}

TEST_CASE("residual fan-out sums gradient pieces with an Add", "[graph][lowering]") {
  OpGraph g;
  ModelBuilder b(g, 4, Precision::fp32);
  int x = b.image_input(2, 4, 4);
  int labels = b.labels();
  int a = b.conv(x, 2, 3, 1, 1, false, "a");
  int c = b.conv(a, 2, 3, 1, 1, false, "c");
  int s = b.add({a, c}, "res");  // a feeds both c and the add
  int f = b.dense(b.flatten(s, "flat"), 3, false, "fc");
  b.softmax_cross_entropy(f, labels, "loss");
  lower_to_training_step(g);
  int sums = 0;
  for (int i = 0; i < g.num_ops(); ++i)
    if (g.op(i).kind == OpKind::Add && g.op(i).phase == Phase::backward) ++sums;
  CHECK(sums == 1);
  CHECK(g.tensor(gradient_of(g, a)).desc.shape == g.tensor(a).desc.shape);
}

// An FPN's RPN head: one conv applied to two feature levels. Parameters once, work twice, and
// the weight's gradient summed over both uses (one backward Add, one all-reduce, one update).
TEST_CASE("conv_like shares an earlier conv's weight and bias", "[graph][lowering]") {
  OpGraph g;
  ModelBuilder b(g, 2, Precision::fp32);
  int x = b.image_input(3, 8, 8);
  int labels = b.labels();
  int p2 = b.conv(x, 4, 1, 1, 0, false, "p2");               // [2,4,8,8]
  int p3 = b.max_pool(p2, 1, 2, 0, "p3");                     // [2,4,4,4]
  int h2 = b.conv(p2, 4, 3, 1, 1, true, "head.p2");          // weight 4x4x3x3 = 144, bias 4
  int h3 = b.conv_like(p3, h2, "head.p3");
  CHECK(b.shape(h3) == Shape{2, 4, 4, 4});
  CHECK_THROWS_AS(b.conv_like(x, h2, "wrong_input"), InternalError);  // 3 input channels, not 4
  int f = b.dense(b.concat({b.flatten(h2, "f2"), b.flatten(h3, "f3")}, 1, "cat"), 3, false, "fc");
  b.softmax_cross_entropy(f, labels, "loss");
  count_all_work(g);
  // params: p2 4x3 = 12, head 144 + 4 = 148 (once), fc (256 + 64) x 3 = 960 -> 1120
  CHECK(graph_totals(g).params == 1120);
  // head.p3: N 2 x 4x4 x Cout 4 x Cin 4 x 3x3 = 4608 MACs, 9216 FLOPs; a quarter of head.p2 (8x8)
  const OpNode& h2_op = g.op(g.tensor(h2).producer);
  const OpNode& h3_op = g.op(g.tensor(h3).producer);
  CHECK(h3_op.work.flops >= 9216);
  CHECK(h3_op.work.flops * 4 == h2_op.work.flops);
  CHECK(h3_op.inputs.size() == 3);
  CHECK(h3_op.inputs[1] == h2_op.inputs[1]);
  CHECK(h3_op.inputs[2] == h2_op.inputs[2]);
  TrainingOptions o;
  o.replicas = 2;
  lower_to_training_step(g, o);
  int ar = 0;
  for (int i = 0; i < g.num_ops(); ++i) ar += g.op(i).kind == OpKind::AllReduce;
  CHECK(ar == 4);  // p2.weight, head.weight, head.bias, fc.weight: the shared pair once each
}

TEST_CASE("data-parallel lowering adds one all-reduce per weight and Adam keeps two moments", "[graph][lowering]") {
  Tiny t;
  TrainingOptions o;
  o.replicas = 8;
  o.optimizer = Optimizer::adam;
  lower_to_training_step(t.g, o);
  count_all_work(t.g);
  int ar = 0, adam = 0;
  for (int i = 0; i < t.g.num_ops(); ++i) {
    ar += t.g.op(i).kind == OpKind::AllReduce;
    adam += t.g.op(i).kind == OpKind::AdamUpdate;
  }
  CHECK(ar == 5);
  CHECK(adam == 5);
  CHECK(graph_totals(t.g).optimizer_state_bytes == 2 * 141 * 4);
}

TEST_CASE("mixed precision halves activation bytes and keeps fp32 master weights", "[graph][precision]") {
  Tiny f32(Precision::fp32), mixed(Precision::mixed_fp16);
  count_all_work(f32.g);
  count_all_work(mixed.g);
  GraphTotals a = graph_totals(f32.g), b = graph_totals(mixed.g);
  CHECK(a.flops_forward == b.flops_forward);
  CHECK(b.weight_bytes == a.weight_bytes);
  CHECK(b.low_precision_weight_bytes == 141 * 2);
  CHECK(mixed.g.op(mixed.conv_op).work.bytes_written * 2 == f32.g.op(f32.conv_op).work.bytes_written);
}

TEST_CASE("every op kind has a distinct name", "[registry]") {
  std::set<std::string> names;
  for (OpKind k : all_op_kinds()) names.insert(op_kind_name(k));
  CHECK(static_cast<int>(names.size()) == kNumOpKinds);
}
