// Finite-difference gradient checks for every op kind of the cpu executor, on tiny graphs.
// Each graph's comment lists the op kinds whose backward pass it exercises; the last test
// checks that together they cover the whole op registry.
#include <set>

#include "tests/unit/cpu/gradcheck_util.hpp"

using namespace xpusim;
using namespace xpusim::cpu::test;

namespace {

// Conv2D (+bias) / Conv2DBackwardData / Conv2DBackwardFilter, BatchNorm (4-D), relu,
// sigmoid, tanh, max and average Pool, Reshape, MatMul (+bias), Dropout, softmax CE.
void conv_net(ModelBuilder& b) {
  int x = b.image_input(3, 6, 6);
  int labels = b.labels();
  // 8 channels: batch norm takes oneDNN's channel-blocked path (the 2-D batch norm of
  // branch_net takes the plain one). A bias before batch norm has zero gradient.
  int y = b.conv(x, 8, 3, 1, 1, false, "c1");
  y = b.relu(b.batch_norm(y, "bn1"), "r1");
  y = b.max_pool(y, 2, 2, 0, "mp");
  y = b.activation(b.conv(y, 5, 3, 1, 1, true, "c2"), ActivationFn::sigmoid, "s2");
  y = b.avg_pool(y, 3, 1, 1, "ap");
  y = b.flatten(y, "flat");
  y = b.activation(b.dense(y, 6, true, "d1"), ActivationFn::tanh, "t1");
  y = b.dropout(y, 0.3, "drop");
  y = b.dense(y, 3, true, "d2");
  b.softmax_cross_entropy(y, labels, "loss");
}

// Concat / Split, Add with gradient fan-out (grad_sum Add), Mul, grouped and strided conv,
// global average pooling over [N, C, H, W], batch norm on [N, F].
void branch_net(ModelBuilder& b) {
  int x = b.image_input(4, 5, 5);
  int labels = b.labels();
  ConvArgs g;
  g.filters = 4;
  g.kernel_h = g.kernel_w = 3;
  g.pad_h = g.pad_w = 1;
  g.groups = 2;
  int a = b.conv(x, g, "grouped");
  int c = b.conv(x, 2, 1, 1, 0, false, "c1x1");
  int d = b.conv(x, 2, 3, 1, 1, false, "c3x3");
  int cat = b.concat({c, d}, 1, "cat");
  int s = b.add({a, cat}, "sum");
  int m = b.mul(s, b.activation(a, ActivationFn::sigmoid, "gate"), "prod");
  int st = b.conv(m, 3, 3, 2, 1, false, "strided");
  int p = b.global_avg_pool(st, "gap");
  int f = b.batch_norm(b.dense(p, 4, false, "d1"), "bn2d");
  b.softmax_cross_entropy(b.dense(f, 3, true, "d2"), labels, "loss");
}

// Embedding, LSTM forward and reverse (return_sequences both ways), global average pool
// over time, sigmoid cross-entropy (one class).
void seq_net(ModelBuilder& b) {
  int ids = b.sequence_input("ids", 4);
  int labels = b.labels();
  int e = b.embedding(ids, 7, 3, "emb");
  int h1 = b.lstm(e, 3, true, false, "lstm_fwd");
  int h2 = b.lstm(h1, 2, true, true, "lstm_rev");
  int p = b.global_avg_pool(h2, "gap_t");
  int h3 = b.lstm(e, 2, false, true, "lstm_last");
  int cat = b.concat({p, h3}, 1, "cat");
  b.softmax_cross_entropy(b.dense(cat, 1, true, "out"), labels, "loss");
}

}  // namespace

TEST_CASE("cpu gradients: conv, batch norm, activations, pooling, dense, dropout", "[cpu][grad]") {
  Harness h(conv_net, 3);
  check_all_weight_gradients(h);
}

TEST_CASE("cpu gradients: concat/split, add fan-out, mul, grouped conv, global pool", "[cpu][grad]") {
  Harness h(branch_net, 3);
  REQUIRE(h.count_kind(OpKind::Split) == 1);
  check_all_weight_gradients(h);
}

TEST_CASE("cpu gradients: embedding, lstm both directions, sigmoid cross-entropy", "[cpu][grad]") {
  Harness h(seq_net, 3);
  check_all_weight_gradients(h);
}

TEST_CASE("cpu gradient checks cover every op kind", "[cpu][grad]") {
  std::set<OpKind> seen;
  for (auto* build : {conv_net, branch_net, seq_net}) {
    Harness h(build, 2);
    for (int i = 0; i < h.g.num_ops(); ++i) seen.insert(h.g.op(i).kind);
  }
  Harness adam(conv_net, 2, 3, Optimizer::adam);
  for (int i = 0; i < adam.g.num_ops(); ++i) seen.insert(adam.g.op(i).kind);
  Harness ar(conv_net, 2, 3, Optimizer::sgd_momentum, 2);
  for (int i = 0; i < ar.g.num_ops(); ++i) seen.insert(ar.g.op(i).kind);
  // Optimizers and all-reduce have no gradient: test_cpu_executor.cpp checks them against
  // their formulas.
  for (OpKind k : all_op_kinds()) {
    INFO(op_kind_name(k));
    CHECK(seen.count(k) == 1);
  }
}
