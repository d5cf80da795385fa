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

// LayerNorm, Attention causal and non-causal (2 heads), GELU, Softmax, Scale, Transpose
// (last-axis swap and a leading-axis swap), batched MatMul with every transpose-flag pair,
// a head tied to the embedding table with a bias (dense_with, transposed weight: its bias
// gradient comes from the weight-gradient matmul's first operand), per-timestep labels.
void transformer_net(ModelBuilder& b) {
  const int64_t t = 4;
  int ids = b.sequence_input("ids", t);
  int labels = b.labels(t);
  int e = b.embedding(ids, 7, 8, "emb");
  const int table = b.graph().op(b.graph().num_ops() - 1).inputs[1];
  int x = b.layer_norm(e, "ln1", 1e-5);
  // No bias on k: softmax is invariant to a per-row constant, so its gradient is exactly 0.
  int q = b.dense(x, 8, true, "q"), k = b.dense(x, 8, false, "k"), v = b.dense(x, 8, true, "v");
  int a = b.attention(q, k, v, 2, true, "attn_causal");
  int a2 = b.attention(b.dense(a, 8, false, "q2"), k, v, 2, false, "attn_full");
  // Attention written out: softmax(alpha A B^T) C, then products with transposed operands.
  int s = b.batch_matmul(a2, x, false, true, "scores");                // [N,T,T]
  int p = b.softmax(b.scale(s, 0.5, "scaled"), "softmax");
  int c = b.batch_matmul(p, v, false, false, "ctx");                     // [N,T,8]
  int ct = b.batch_matmul(p, c, true, false, "ctx_t");                   // P^T C: [N,T,8]
  int cc = b.batch_matmul(ct, p, true, true, "both_t");                  // (P^T C)^T P^T: [N,8,T]
  int back = b.transpose(cc, {0, 2, 1}, "swap_last");                    // [N,T,8]
  int lead = b.transpose(b.transpose(back, {1, 0, 2}, "swap_lead"), {1, 0, 2}, "unswap_lead");
  int h = b.add({x, c, lead}, "residual");
  h = b.activation(b.dense(b.layer_norm(h, "ln2", 1e-5), 12, true, "ffn_in"), ActivationFn::gelu, "gelu");
  h = b.dense(h, 8, true, "ffn_out");
  b.softmax_cross_entropy(b.dense_with(h, table, true, true, "tied_head"), labels, "loss");
}

// Issue 30's decoder pieces: an RMSNorm and a bias-free LayerNorm (gamma only; Llama, MPT) and
// a grouped expert GEMM (MoE: a batched matmul whose second operand is a weight [E, K, N]).
void llm_net(ModelBuilder& b) {
  const int64_t t = 4;
  int ids = b.sequence_input("ids", t);
  int labels = b.labels(t);
  int x = b.layer_norm(b.embedding(ids, 7, 8, "emb"), "rms", 1e-5, false, true);
  x = b.layer_norm(b.dense(x, 8, false, "proj"), "ln_no_bias", 1e-5, false, false);
  int experts = b.expert_dense(b.reshape(x, {2, 6, 8}, "dispatch"), 8, "experts");
  x = b.add({x, b.reshape(experts, {3, 4, 8}, "combine")}, "residual");
  b.softmax_cross_entropy(b.dense(x, 7, false, "head"), labels, "loss");
}

}  // namespace

TEST_CASE("cpu gradients: RMSNorm, bias-free layer norm, grouped expert GEMM", "[cpu][grad]") {
  Harness h(llm_net, 3);
  REQUIRE(h.count_kind(OpKind::LayerNormBackward) == 2);
  check_all_weight_gradients(h, 8, 2e-3);
}

TEST_CASE("cpu gradients: layer norm, attention, softmax, transpose, scale, gelu, batched matmul", "[cpu][grad]") {
  Harness h(transformer_net, 3);
  REQUIRE(h.count_kind(OpKind::AttentionBackward) == 2);
  // A smaller step: the table's entries (+-0.05) reach the first layer norm with a spread of
  // ~0.03, so the default 1e-2 step is a third of a standard deviation there (O(h^2) error).
  check_all_weight_gradients(h, 8, 2e-3);
}

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
  for (auto* build : {conv_net, branch_net, seq_net, transformer_net}) {
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
