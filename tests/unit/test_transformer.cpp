// Transformer op kinds and zoo models: parameter counts (exact, against Hugging Face's
// published counts), forward FLOPs against the published per-sequence formula of Hoffmann
// et al. 2022 (Chinchilla, appendix F), gradient shapes of the new kinds, and the backward
// of a batched matmul with transposed operands.
#include <catch2/catch.hpp>

#include "models/builder.hpp"
#include "models/training.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"

using namespace xpusim;

namespace {

GraphTotals totals(const std::string& name, int64_t batch, bool training) {
  GraphOptions o;
  o.batch = batch;
  o.training = training;
  return graph_totals(build_graph(find_model(name), o));
}

// Hoffmann et al. 2022, appendix F, forward FLOPs of one sequence, without the embedding
// lookups (a gather, not a matmul, here): per layer QKV 2T*3D*D, logits 2T*T*D, softmax
// 3H*T*T, values 2T*T*D, projection 2T*D*D, FFN 2T*2*D*F; final logits 2T*D*V.
double chinchilla_forward(double t, double d, double h, double f, double layers, double head_out) {
  double per_layer = 2 * t * 3 * d * d + 2 * t * t * d + 3 * h * t * t + 2 * t * t * d + 2 * t * d * d + 2 * t * 2 * d * f;
  return layers * per_layer + 2 * t * d * head_out;
}

}  // namespace

TEST_CASE("transformer zoo: published parameter counts", "[zoo][transformer]") {
  // BertModel (with pooler): bert-base-uncased 109,482,240; bert-large-uncased 335,141,888;
  // GPT2LMHeadModel with tied embeddings: 124,439,808.
  GraphTotals b = totals("bert_base", 1, false);
  CHECK(b.params - b.head_params == 109482240);
  CHECK(b.head_params == 768 * 2 + 2);
  GraphTotals l = totals("bert_large", 1, false);
  CHECK(l.params - l.head_params == 335141888);
  GraphTotals p = totals("bert_large_pretraining", 1, false);
  CHECK(p.params - p.head_params == 335141888);
  // MLM transform (D*D + D), its layer norm (2D), decoder bias (V), NSP (2D + 2).
  CHECK(p.head_params == 1024 * 1024 + 1024 + 2 * 1024 + 30522 + 2 * 1024 + 2);
  GraphTotals g = totals("gpt2", 1, false);
  CHECK(g.params == 124439808);
  CHECK(g.head_params == 0);
}

TEST_CASE("transformer zoo: forward FLOPs match the published formula", "[zoo][transformer]") {
  // Our count adds biases, layer norms, GELU, dropout and residual adds on top: within 3%.
  double gpt2 = totals("gpt2", 1, false).flops_forward;
  double ref = chinchilla_forward(1024, 768, 12, 3072, 12, 50257);
  CHECK(gpt2 >= ref);
  CHECK(gpt2 <= 1.03 * ref);
  double bert = totals("bert_base", 1, false).flops_forward;
  double ref_b = chinchilla_forward(128, 768, 12, 3072, 12, 0);
  CHECK(bert >= ref_b);
  CHECK(bert <= 1.03 * ref_b + 2 * 768 * 768 * 2);  // + pooler and classifier
  // Sequence 512 costs more than 4x sequence 128 (attention is quadratic).
  CHECK(totals("bert_base_seq512", 1, false).flops_forward > 4.0 * bert);
}

TEST_CASE("transformer training step: every new kind has its backward", "[transformer]") {
  GraphOptions o;
  o.batch = 2;
  o.training = true;
  OpGraph g = build_graph(find_model("tiny_transformer"), o);
  int ln = 0, lnb = 0, at = 0, atb = 0;
  for (int i = 0; i < g.num_ops(); ++i) {
    switch (g.op(i).kind) {
      case OpKind::LayerNorm: ++ln; break;
      case OpKind::LayerNormBackward: ++lnb; break;
      case OpKind::Attention: ++at; break;
      case OpKind::AttentionBackward: ++atb; break;
      default: break;
    }
  }
  CHECK(ln == 5);  // 2 per block + ln_f
  CHECK(lnb == ln);
  CHECK(at == 2);
  CHECK(atb == at);
  // The tied token table gets two gradient pieces (embedding and LM head), summed.
  int table = -1;
  for (int t = 0; t < g.num_tensors(); ++t)
    if (g.tensor(t).name == "embeddings.word.weight") table = t;
  REQUIRE(table >= 0);
  int grad = gradient_of(g, table);
  REQUIRE(grad >= 0);
  CHECK(g.tensor(grad).desc.shape == g.tensor(table).desc.shape);
  CHECK(g.op(g.tensor(grad).producer).kind == OpKind::Add);
}

TEST_CASE("batched matmul with transposes: gradient shapes and FLOPs", "[transformer]") {
  OpGraph g;
  ModelBuilder b(g, 3, Precision::fp32);
  int x = b.feature_input("x", 5, 8);  // [3, 5, 8]
  int labels = b.labels(5);
  int q = b.dense(x, 8, false, "q");
  int k = b.dense(x, 8, false, "k");
  int s = b.batch_matmul(q, k, false, true, "scores");  // [3, 5, 5]
  CHECK(b.shape(s) == Shape{3, 5, 5});
  int p = b.softmax(b.scale(s, 0.25, "scale"), "softmax");
  int kt = b.transpose(k, {0, 2, 1}, "kt");  // [3, 8, 5]
  int y = b.batch_matmul(kt, p, false, true, "mix");  // [3, 8, 5] x [3, 5, 5]^T -> [3, 8, 5]
  CHECK(b.shape(y) == Shape{3, 8, 5});
  int z = b.transpose(y, {0, 2, 1}, "zt");
  b.softmax_cross_entropy(z, labels, "loss");
  lower_to_training_step(g);
  count_all_work(g);
  for (int t : {q, k, s, p, kt, y}) {
    int gt = gradient_of(g, t);
    INFO(g.tensor(t).name);
    REQUIRE(gt >= 0);
    CHECK(g.tensor(gt).desc.shape == g.tensor(t).desc.shape);
  }
  // Every matmul of the step, forward or backward, has consistent M, N, K with its operands.
  for (int i = 0; i < g.num_ops(); ++i) {
    const OpNode& op = g.op(i);
    if (op.kind != OpKind::MatMul) continue;
    const Shape& a = g.tensor(op.inputs[0]).desc.shape;
    const Shape& bb = g.tensor(op.inputs[1]).desc.shape;
    const Shape& c = g.tensor(op.outputs[0]).desc.shape;
    INFO(op.name);
    // Dense layers flatten leading axes into M, so compare element counts; a batched
    // matmul's operands also show K on the axis its transpose flag names.
    auto numel = [](const Shape& s) { int64_t n = 1; for (auto d : s) n *= d; return n; };
    const auto& at = op.attrs;
    CHECK(numel(a) == at.batches * at.m * at.k);
    CHECK(numel(bb) == at.batches * at.k * at.n);
    CHECK(numel(c) == at.batches * at.m * at.n);
    CHECK(c[c.size() - 1] == at.n);
    if (at.batches > 1) {
      CHECK((at.trans_a ? a[a.size() - 2] : a[a.size() - 1]) == at.k);
      CHECK((at.trans_b ? bb[bb.size() - 1] : bb[bb.size() - 2]) == at.k);
    }
    CHECK(op.work.flops == Approx(2.0 * op.attrs.batches * op.attrs.m * op.attrs.n * op.attrs.k));
  }
}
