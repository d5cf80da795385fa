// Transformer encoders and decoders: BERT (Devlin et al. 2019, post-LN, learned positions and
// token types, pooler) and GPT-2 (Radford et al. 2019, pre-LN, causal, final layer norm, LM
// head tied to the token embedding). Parameter counts equal Hugging Face's BertModel /
// GPT2LMHeadModel; tests check them against the published figures.
//
// Modelled as written, with these approximations (FLOPs within a fraction of a percent):
// - q, k and v are three dense layers (GPT-2's fused c_attn is one [D, 3D] GEMM: same FLOPs
//   and parameters).
// - The pooler reads the first token's hidden state; the op set has no slice, so it reads the
//   mean over tokens (same shape; N T D extra adds, < 0.01% of a step).
// - Position (and token type) ids are host-fed inputs gathered from learned tables, as the
//   frameworks do with a buffer of position ids.
// - Attention dropout is not modelled (the probabilities are not masked again); dropout on the
//   embeddings, attention output and FFN output is.
// - The masked-LM head (pretraining) scores every position, as Hugging Face does; NVIDIA's
//   implementation gathers the ~15% masked positions first.
#include "models/zoo/families.hpp"

namespace xpusim::zoo {

namespace {

struct TransformerParams {
  long long vocab, hidden, layers, heads, ffn, max_positions, type_vocab;
  bool causal, pre_norm, final_norm, pooler;
  std::string head;
  double dropout, eps;
};

// One block: self-attention and feed-forward, each a residual branch, normalised after
// (post-LN, BERT) or before (pre-LN, GPT-2) the branch.
int block(ModelBuilder& b, const TransformerParams& p, int x, const std::string& n) {
  const double eps = p.eps;
  int h = p.pre_norm ? b.layer_norm(x, n + ".ln_1", eps) : x;
  int q = b.dense(h, p.hidden, true, n + ".attn.q");
  int k = b.dense(h, p.hidden, true, n + ".attn.k");
  int v = b.dense(h, p.hidden, true, n + ".attn.v");
  int a = b.attention(q, k, v, p.heads, p.causal, n + ".attn");
  int o = b.dense(a, p.hidden, true, n + ".attn.out");
  if (p.dropout > 0) o = b.dropout(o, p.dropout, n + ".attn.dropout");
  x = b.add({x, o}, n + ".attn.residual");
  if (!p.pre_norm) x = b.layer_norm(x, n + ".attn.ln", eps);
  h = p.pre_norm ? b.layer_norm(x, n + ".ln_2", eps) : x;
  int f = b.activation(b.dense(h, p.ffn, true, n + ".ffn.in"), ActivationFn::gelu, n + ".ffn.gelu");
  f = b.dense(f, p.hidden, true, n + ".ffn.out");
  if (p.dropout > 0) f = b.dropout(f, p.dropout, n + ".ffn.dropout");
  x = b.add({x, f}, n + ".ffn.residual");
  if (!p.pre_norm) x = b.layer_norm(x, n + ".ffn.ln", eps);
  return x;
}

}  // namespace

ModelBuildFn parse_transformer(SpecReader& r) {
  auto positive = [](long long v) { return v > 0 && v <= kMaxLayerSize ? "" : "must be in [1, 2147483647]"; };
  TransformerParams p;
  p.vocab = r.integer("vocab", 30522, "tokens", "token vocabulary (BERT WordPiece 30522, GPT-2 BPE 50257)", positive);
  p.hidden = r.integer("hidden", 768, "features", "model width D", positive);
  p.layers = r.integer("layers", 12, "layers", "transformer blocks", positive);
  p.heads = r.integer("heads", 12, "heads", "attention heads; must divide hidden", positive);
  p.ffn = r.integer("ffn", 3072, "features", "feed-forward inner width", positive);
  p.max_positions = r.integer("max_positions", 512, "tokens", "rows of the learned position table", positive);
  p.type_vocab = r.integer("type_vocab", 2, "types", "token-type (segment) table rows; 0 = none (GPT-2)",
                           [](long long v) { return v >= 0 && v <= kMaxLayerSize ? "" : "must be in [0, 2147483647]"; });
  p.causal = r.flag("causal", false, "mask attention to earlier positions (decoder)");
  p.pre_norm = r.flag("pre_norm", false, "layer norm before each branch (GPT-2) instead of after (BERT)");
  p.final_norm = r.flag("final_norm", false, "a layer norm after the last block (GPT-2's ln_f)");
  p.pooler = r.flag("pooler", true, "BERT's pooler: dense + tanh on the first token");
  p.head = r.text("head", std::string("classifier"),
                  "training head: classifier (pooled output -> classes), pretraining (masked LM with the "
                  "decoder tied to the token table + next-sentence prediction), lm (next-token LM head tied "
                  "to the token table)",
                  {"classifier", "pretraining", "lm"});
  p.dropout = r.number("dropout", 0.1, "fraction", "dropout on embeddings and branch outputs",
                       [](double v) { return v >= 0 && v < 1 ? "" : "must be in [0, 1)"; });
  p.eps = r.number("layer_norm_eps", 1e-12, "", "layer norm epsilon (BERT 1e-12, GPT-2 1e-5)",
                   [](double v) { return v > 0 && v < 1 ? "" : "must be in (0, 1)"; });
  if (p.hidden % p.heads) r.fail("heads", "must divide hidden (" + std::to_string(p.hidden) + ")");
  if ((p.head == "classifier" || p.head == "pretraining") && !p.pooler)
    r.fail("head", p.head + " needs the pooler");
  return [p](ModelBuilder& b, const ModelSpec& s) {
    const int64_t t = s.input[0];
    if (t > p.max_positions)
      throw UserError(s.file + ": input: sequence length " + std::to_string(t) + " exceeds max_positions " +
                      std::to_string(p.max_positions));
    int ids = b.sequence_input("input_ids", t);
    int pos = b.sequence_input("position_ids", t);
    int types = p.type_vocab > 0 ? b.sequence_input("token_type_ids", t) : -1;
    int labels = -1, nsp_labels = -1;
    if (p.head == "classifier") labels = b.labels();
    if (p.head == "lm" || p.head == "pretraining") labels = b.labels(t);
    if (p.head == "pretraining") nsp_labels = b.labels(0, "nsp_labels");

    int x = b.embedding(ids, p.vocab, p.hidden, "embeddings.word");
    const int word_table = b.graph().op(b.graph().num_ops() - 1).inputs[1];
    std::vector<int> parts{x, b.embedding(pos, p.max_positions, p.hidden, "embeddings.position")};
    if (types >= 0) parts.push_back(b.embedding(types, p.type_vocab, p.hidden, "embeddings.token_type"));
    x = b.add(parts, "embeddings.sum");
    if (!p.pre_norm) x = b.layer_norm(x, "embeddings.ln", p.eps);
    if (p.dropout > 0) x = b.dropout(x, p.dropout, "embeddings.dropout");
    for (long long l = 0; l < p.layers; ++l) x = block(b, p, x, "layer" + std::to_string(l));
    if (p.final_norm) x = b.layer_norm(x, "ln_f", p.eps);

    int pooled = -1;
    if (p.pooler)
      pooled = b.activation(b.dense(b.global_avg_pool(x, "pooler.first_token"), p.hidden, true, "pooler.dense"),
                            ActivationFn::tanh, "pooler.tanh");
    if (p.head == "classifier") {
      // Weights named head.* are the task head: `xpusim models` counts them apart from the
      // backbone, whose count is the published one.
      b.softmax_cross_entropy(b.dense(pooled, s.classes, true, "head.classifier"), labels, "loss");
    } else if (p.head == "lm") {
      if (s.classes != p.vocab) throw UserError(s.file + ": classes: must equal vocab for the lm head");
      b.softmax_cross_entropy(b.dense_with(x, word_table, true, false, "lm_head"), labels, "loss");
    } else {
      if (s.classes != p.vocab) throw UserError(s.file + ": classes: must equal vocab for the pretraining head");
      int h = b.activation(b.dense(x, p.hidden, true, "head.mlm.transform"), ActivationFn::gelu, "head.mlm.gelu");
      h = b.layer_norm(h, "head.mlm.ln", p.eps);
      b.softmax_cross_entropy(b.dense_with(h, word_table, true, true, "head.mlm.decoder"), labels, "mlm_loss");
      b.softmax_cross_entropy(b.dense(pooled, 2, true, "head.nsp"), nsp_labels, "nsp_loss");
    }
  };
}

}  // namespace xpusim::zoo
