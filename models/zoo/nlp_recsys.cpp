// Models of the Titan RTX study that are not CNNs: NCF (NeuMF), word2vec skip-gram and GNMT.
// Where the reference implementation has details the op set does not model exactly, the
// comment says what is approximated; FLOPs and bytes stay within a few percent.
#include "models/zoo/families.hpp"

namespace xpusim::zoo {

ModelBuildFn parse_ncf(SpecReader& r) {
  // MLPerf NCF (NeuMF, He et al. 2017) on MovieLens: GMF and MLP towers, concat, logistic output.
  const auto positive = layer_size_check;
  long long users = r.integer("users", 6040, "ids", "number of users (MovieLens-1M)", positive);
  long long items = r.integer("items", 3706, "ids", "number of items (MovieLens-1M)", positive);
  long long mf_dim = r.integer("mf_dim", 64, "features", "GMF embedding width", positive);
  auto mlp = r.integers("mlp_layers", std::vector<long long>{256, 256, 128, 64}, "units",
                        "MLP widths; the first is the concatenated user+item embedding");
  if (mlp.empty()) r.fail("mlp_layers", "needs at least one width");
  for (long long u : mlp)
    if (u < 2 || u > kMaxLayerSize) r.fail("mlp_layers", "widths must be in [2, 2147483647], got " + std::to_string(u));
  return [=](ModelBuilder& b, const ModelSpec& s) {
    int user = b.sequence_input("user_ids", 1);
    int item = b.sequence_input("item_ids", 1);
    int labels = b.labels();
    auto flat = [&](int t, const std::string& n) { return b.flatten(t, n + ".flat"); };
    int gu = flat(b.embedding(user, users, mf_dim, "gmf.user"), "gmf.user");
    int gi = flat(b.embedding(item, items, mf_dim, "gmf.item"), "gmf.item");
    int gmf = b.mul(gu, gi, "gmf.product");
    int mu = flat(b.embedding(user, users, mlp[0] / 2, "mlp.user"), "mlp.user");
    int mi = flat(b.embedding(item, items, mlp[0] / 2, "mlp.item"), "mlp.item");
    int x = b.concat({mu, mi}, 1, "mlp.concat");
    for (size_t i = 1; i < mlp.size(); ++i) {
      std::string n = "mlp.fc" + std::to_string(i);
      x = b.relu(b.dense(x, mlp[i], true, n), n + ".relu");
    }
    int both = b.concat({gmf, x}, 1, "neumf.concat");
    int logit = b.dense(both, s.classes, true, "neumf.out");
    b.softmax_cross_entropy(logit, labels, "loss");
  };
}

ModelBuildFn parse_word2vec(SpecReader& r) {
  // Skip-gram with noise-contrastive estimation (TensorFlow's word2vec_basic): the center
  // word's embedding is scored against the true context word and `negatives` words sampled
  // once per batch (nce_loss shares them), i.e. logits = E [D, 1+neg] gathered output rows.
  // The gathered rows are modelled as a dense layer over the sampled columns: FLOPs and
  // bytes are exact; the full output table (vocab x dim) is not a dense parameter because
  // TensorFlow updates only the sampled rows (sparse gradients).
  const auto positive = layer_size_check;
  long long vocab = r.integer("vocab", 50000, "words", "vocabulary", positive);
  long long dim = r.integer("dim", 128, "features", "embedding width", positive);
  long long negatives = r.integer("negatives", 64, "words", "sampled negatives per batch", positive);
  return [=](ModelBuilder& b, const ModelSpec& s) {
    int center = b.sequence_input("center_ids", 1);
    int labels = b.labels();
    int e = b.flatten(b.embedding(center, vocab, dim, "embedding"), "embedding.flat");  // [N, D]
    int logits = b.dense(e, 1 + negatives, true, "nce.sampled_rows");
    if (s.classes != 1 + negatives)
      throw UserError(s.file + ": classes: must equal 1 + negatives (" + std::to_string(1 + negatives) + ")");
    b.softmax_cross_entropy(logits, labels, "loss");
  };
}

ModelBuildFn parse_gnmt(SpecReader& r) {
  // GNMT v2 as in MLPerf/NVIDIA: 4-layer encoder (first layer bidirectional), 4-layer decoder
  // with normalized Bahdanau attention, residual connections from layer 3, shared vocab.
  // Attention is modelled as its two matmuls (scores and context) per decoder step.
  const auto positive = layer_size_check;
  long long vocab = r.integer("vocab", 32317, "tokens", "shared BPE vocabulary", positive);
  long long hidden = r.integer("hidden", 1024, "units", "LSTM and embedding width", positive);
  long long layers = r.integer("layers", 4, "layers", "encoder and decoder depth", positive);
  return [=](ModelBuilder& b, const ModelSpec& s) {
    const int64_t t = s.input[0];
    int src = b.sequence_input("source_ids", t);
    int tgt = b.sequence_input("target_ids", t);
    int labels = b.labels(t);
    int x = b.embedding(src, vocab, hidden, "encoder.embedding");
    int f = b.lstm(x, hidden, true, false, "encoder.l0.forward");
    int bw = b.lstm(x, hidden, true, true, "encoder.l0.backward");
    x = b.concat({f, bw}, -1, "encoder.l0");
    for (long long l = 1; l < layers; ++l) {
      std::string n = "encoder.l" + std::to_string(l);
      int y = b.lstm(x, hidden, true, false, n);
      x = l >= 2 ? b.add({x, y}, n + ".residual") : y;
    }
    int enc = x;  // [N, T, H]
    int y = b.embedding(tgt, vocab, hidden, "decoder.embedding");
    // Attention context: scores = Q K^T and context = softmax(scores) V, per target step.
    int q = b.lstm(y, hidden, true, false, "decoder.l0");
    int scores = b.dense(q, t, false, "attention.scores");         // ~ N*T*T*H MACs
    int probs = b.activation(scores, ActivationFn::sigmoid, "attention.normalize");
    int ctx = b.dense(probs, hidden, false, "attention.context");   // ~ N*T*T*H MACs
    int enc_proj = b.dense(enc, hidden, false, "attention.keys");
    ctx = b.add({ctx, enc_proj}, "attention.combine");
    x = q;
    for (long long l = 1; l < layers; ++l) {
      std::string n = "decoder.l" + std::to_string(l);
      int in = b.concat({x, ctx}, -1, n + ".input");
      int h = b.lstm(in, hidden, true, false, n);
      x = l >= 2 ? b.add({x, h}, n + ".residual") : h;
    }
    int logits = b.dense(x, vocab, true, "decoder.classifier");
    b.softmax_cross_entropy(logits, labels, "loss");
  };
}

}  // namespace xpusim::zoo
