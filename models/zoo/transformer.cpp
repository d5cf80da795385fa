// Transformer encoders and decoders: BERT (Devlin et al. 2019, post-LN, learned positions and
// token types, pooler), GPT-2/GPT-3 and Megatron-LM GPT (pre-LN, causal, final layer norm, LM
// head tied to the token embedding), MPT (no biases, bias-free LayerNorm), Llama-2/3 and
// MaxText (RMSNorm, SwiGLU, rotary positions, grouped-query attention, untied LM head) and
// Mixtral (mixture-of-experts MLPs, top-2 of 8). Parameter counts equal Hugging Face's models;
// tests check them against the published figures and against models/llm_shape's closed form,
// which this file fills (ModelSpec::llm) for causal LMs from the same parsed parameters.
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
// - RMSNorm is a LayerNorm op without mean subtraction or beta (op attribute rms).
// - SwiGLU's silu is a sigmoid and a product (two elementwise ops where kernels fuse one).
// - Rotary positions are the unfused x*cos + rotate_half(x)*sin (a copy, two scales, an add)
//   on q and k; ALiBi's score bias is inside the attention op's per-score work.
// - Grouped-query attention repeats k and v to the query heads (a copy each) before a
//   multi-head attention core: the FLOPs of GQA kernels, a little more data movement.
// - Mixture of experts: the router's top-k choice is a balanced one: every expert gets
//   ceil(tokens x top_k x capacity_factor / experts) rows, one grouped GEMM per projection
//   (transformer_blocks.cpp). Expert MLPs have no biases (bias: false is required).
#include "models/zoo/families.hpp"
#include "models/zoo/transformer_blocks.hpp"

namespace xpusim::zoo {

namespace {

void fill_llm_shape(const TransformerParams& p, ModelSpec& s) {
  LlmShape l;
  l.layers = p.layers;
  l.hidden = p.hidden;
  l.heads = p.heads;
  l.kv_heads = p.kv_heads;
  if (p.heads * p.head_dim != p.hidden) l.attention_head_dim = p.head_dim;
  l.ffn_hidden = p.ffn;
  l.vocab = p.vocab;
  l.max_positions = p.position != LlmPosition::learned ? 0 : p.max_positions > 0 ? p.max_positions : s.input[0];
  l.norm = p.norm;
  l.mlp = p.mlp;
  l.position = p.position;
  l.bias = p.bias;
  l.norm_bias = p.norm_bias;
  l.tied_embeddings = p.tied_embeddings;
  l.experts = p.experts;
  l.top_k = p.top_k;
  l.capacity_factor = p.capacity_factor;
  s.llm = l;
  s.positions_follow_seq_len = p.position == LlmPosition::learned && p.max_positions == 0;
}

void build(ModelBuilder& b, const TransformerParams& p, const ModelSpec& s) {
  const int64_t t = s.input[0];
  const bool learned = p.position == LlmPosition::learned;
  if (p.max_positions > 0 && t > p.max_positions)
    throw UserError(s.file + ": input: sequence length " + std::to_string(t) + " exceeds max_positions " +
                    std::to_string(p.max_positions));
  int ids = b.sequence_input("input_ids", t);
  int pos = learned ? b.sequence_input("position_ids", t) : -1;
  int types = p.type_vocab > 0 ? b.sequence_input("token_type_ids", t) : -1;
  int labels = -1, nsp_labels = -1;
  if (p.head == "classifier") labels = b.labels();
  if (p.head == "lm" || p.head == "pretraining") labels = b.labels(t);
  if (p.head == "pretraining") nsp_labels = b.labels(0, "nsp_labels");

  int x = b.embedding(ids, p.vocab, p.hidden, "embeddings.word");
  const int word_table = b.graph().op(b.graph().num_ops() - 1).inputs[1];
  std::vector<int> parts{x};
  // llm-foundry sizes the learned table by the run's sequence length (max_positions 0).
  if (learned) parts.push_back(b.embedding(pos, p.max_positions > 0 ? p.max_positions : t, p.hidden, "embeddings.position"));
  if (types >= 0) parts.push_back(b.embedding(types, p.type_vocab, p.hidden, "embeddings.token_type"));
  if (parts.size() > 1) x = b.add(parts, "embeddings.sum");
  if (!p.pre_norm) x = transformer_norm(b, p, x, "embeddings.ln");
  if (p.dropout > 0) x = b.dropout(x, p.dropout, "embeddings.dropout");
  for (long long l = 0; l < p.layers; ++l) x = transformer_block(b, p, x, "layer" + std::to_string(l));
  if (p.final_norm) x = transformer_norm(b, p, x, "ln_f");

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
    int logits = p.tied_embeddings ? b.dense_with(x, word_table, true, false, "lm_head")
                                   : b.dense(x, p.vocab, false, "lm_head");
    b.softmax_cross_entropy(logits, labels, "loss");
  } else {
    if (s.classes != p.vocab) throw UserError(s.file + ": classes: must equal vocab for the pretraining head");
    int h = b.activation(b.dense(x, p.hidden, true, "head.mlm.transform"), ActivationFn::gelu, "head.mlm.gelu");
    h = b.layer_norm(h, "head.mlm.ln", p.eps);
    b.softmax_cross_entropy(b.dense_with(h, word_table, true, true, "head.mlm.decoder"), labels, "mlm_loss");
    b.softmax_cross_entropy(b.dense(pooled, 2, true, "head.nsp"), nsp_labels, "nsp_loss");
  }
}

}  // namespace

ModelBuildFn parse_transformer(SpecReader& r, ModelSpec& spec) {
  const auto positive = layer_size_check;
  auto non_negative = [](long long v) { return v >= 0 && v <= kMaxLayerSize ? "" : "must be in [0, 2147483647]"; };
  TransformerParams p;
  p.vocab = r.integer("vocab", 30522, "tokens", "token vocabulary (BERT WordPiece 30522, GPT-2 BPE 50257)", positive);
  p.hidden = r.integer("hidden", 768, "features", "model width D", positive);
  p.layers = r.integer("layers", 12, "layers", "transformer blocks", positive);
  p.heads = r.integer("heads", 12, "heads", "attention (query) heads; must divide hidden unless head_dim is given", positive);
  p.kv_heads = r.integer("kv_heads", 0, "heads",
                         "key/value heads: 0 = heads (multi-head), fewer = grouped-query, 1 = multi-query; "
                         "must divide heads", non_negative);
  p.head_dim = r.integer("head_dim", 0, "features", "width of one head; 0 = hidden / heads (MaxText sets 128)",
                         non_negative);
  p.ffn = r.integer("ffn", 3072, "features", "feed-forward inner width (per expert with experts > 1)", positive);
  p.max_positions = r.integer("max_positions", 512, "tokens",
                              "longest sequence; with learned positions the table's rows (0 = the sequence length, "
                              "llm-foundry's max_seq_len)", non_negative);
  p.type_vocab = r.integer("type_vocab", 2, "types", "token-type (segment) table rows; 0 = none (GPT-2)", non_negative);
  p.causal = r.flag("causal", false, "mask attention to earlier positions (decoder)");
  p.pre_norm = r.flag("pre_norm", false, "norm before each branch (GPT-2) instead of after (BERT)");
  p.final_norm = r.flag("final_norm", false, "a norm after the last block (GPT-2's ln_f)");
  p.pooler = r.flag("pooler", true, "BERT's pooler: dense + tanh on the first token");
  p.head = r.text("head", std::string("classifier"),
                  "training head: classifier (pooled output -> classes), pretraining (masked LM with the "
                  "decoder tied to the token table + next-sentence prediction), lm (next-token LM head, tied to "
                  "the token table unless tied_embeddings is false)",
                  {"classifier", "pretraining", "lm"});
  p.norm = r.text("norm", std::string("layer_norm"), "normalisation: layer_norm or rms_norm (Llama)",
                  {"layer_norm", "rms_norm"}) == "rms_norm" ? LlmNorm::rms_norm : LlmNorm::layer_norm;
  p.norm_bias = r.flag("norm_bias", true, "LayerNorm has a bias (beta); MPT: false");
  p.mlp = r.text("mlp", std::string("gelu"), "MLP: gelu (dense, GELU, dense) or swiglu (gate, up, down; Llama)",
                 {"gelu", "swiglu"}) == "swiglu" ? LlmMlp::swiglu : LlmMlp::gelu;
  const std::string position = r.text("position", std::string("learned"),
                                      "positions: learned table, rotary (RoPE, on q and k) or alibi (score bias)",
                                      {"learned", "rotary", "alibi"});
  p.position = position == "rotary" ? LlmPosition::rotary : position == "alibi" ? LlmPosition::alibi : LlmPosition::learned;
  p.bias = r.flag("bias", true, "biases in the attention and MLP linear layers (Llama, MPT: false)");
  p.tied_embeddings = r.flag("tied_embeddings", true, "lm head: the output projection is the token table");
  p.experts = r.integer("experts", 1, "experts", "mixture-of-experts MLPs per layer; 1 = dense", positive);
  p.top_k = r.integer("top_k", 1, "experts", "experts each token is routed to (MoE only)", positive);
  p.capacity_factor = r.number("capacity_factor", 1.0, "", "expert capacity over the balanced load (MoE only)",
                               [](double v) { return v >= 1 && v <= 64 ? "" : "must be in [1, 64]"; });
  p.dropout = r.number("dropout", 0.1, "fraction", "dropout on embeddings and branch outputs",
                       [](double v) { return v >= 0 && v < 1 ? "" : "must be in [0, 1)"; });
  p.eps = r.number("layer_norm_eps", 1e-12, "", "norm epsilon (BERT 1e-12, GPT-2 1e-5)",
                   [](double v) { return v > 0 && v < 1 ? "" : "must be in (0, 1)"; });

  if (p.head_dim == 0) {
    if (p.hidden % p.heads) r.fail("heads", "must divide hidden (" + std::to_string(p.hidden) + ") unless head_dim is given");
    p.head_dim = p.hidden / p.heads;
  } else if (p.heads * p.head_dim > kMaxLayerSize) {
    r.fail("head_dim", "heads x head_dim must be at most 2147483647");
  }
  if (p.kv_heads == 0) p.kv_heads = p.heads;
  if (p.kv_heads > p.heads || p.heads % p.kv_heads)
    r.fail("kv_heads", "must divide heads (" + std::to_string(p.heads) + ")");
  if (p.norm == LlmNorm::rms_norm && r.has("norm_bias")) r.fail("norm_bias", "an RMSNorm has no bias");
  if (p.norm == LlmNorm::rms_norm) p.norm_bias = false;
  if (!p.moe()) {
    if (r.has("top_k")) r.fail("top_k", "is a mixture-of-experts option: the model is dense (experts 1)");
    if (r.has("capacity_factor"))
      r.fail("capacity_factor", "is a mixture-of-experts option: the model is dense (experts 1)");
  } else {
    if (p.top_k > p.experts) r.fail("top_k", "must be at most experts (" + std::to_string(p.experts) + ")");
    if (p.bias) r.fail("bias", "must be false with experts > 1 (expert MLPs are built without biases)");
  }
  if (p.head != "lm" && r.has("tied_embeddings"))
    r.fail("tied_embeddings", "applies to the lm head only (head is " + p.head + ")");
  if ((p.head == "classifier" || p.head == "pretraining") && !p.pooler)
    r.fail("head", p.head + " needs the pooler");
  if (p.causal && p.head == "lm") fill_llm_shape(p, spec);
  return [p](ModelBuilder& b, const ModelSpec& s) { build(b, p, s); };
}

}  // namespace xpusim::zoo
