// Memory per device of a decoder under a parallel configuration (formulas: llm_memory.hpp,
// docs/parallel.md).
#include "parallel/llm_memory.hpp"

#include <algorithm>

namespace xpusim::parallel {

namespace {

double kv_width(const LlmShape& s) {
  return static_cast<double>(s.kv_heads > 0 ? s.kv_heads : s.heads) * static_cast<double>(s.head_dim());
}

// Key/value heads are split over the tp ranks down to one head per rank (MQA/GQA with more
// ranks than kv heads replicate them).
double kv_split(const LlmShape& s, int tp) {
  const double kv = static_cast<double>(s.kv_heads > 0 ? s.kv_heads : s.heads);
  return std::min(static_cast<double>(tp), std::max(1.0, kv));
}

// Tokens an MLP sees per token of the sequence: top_k experts, padded to the capacity factor.
double mlp_token_factor(const LlmShape& s) {
  return s.moe() ? static_cast<double>(s.top_k) * s.capacity_factor : 1.0;
}

}  // namespace

double llm_layer_parameters(const LlmShape& s) {
  LlmShape one = s;
  one.layers = 1;
  LlmShape none = s;
  none.layers = 0;
  return static_cast<double>(llm_parameter_count(one) - llm_parameter_count(none));
}

double llm_embedding_parameters(const LlmShape& s) {
  double n = static_cast<double>(s.vocab * s.hidden);
  if (s.position == LlmPosition::learned) n += static_cast<double>(s.max_positions * s.hidden);
  return n;
}

double llm_head_parameters(const LlmShape& s) {
  return s.tied_embeddings ? 0.0 : static_cast<double>(s.vocab * s.hidden);
}

double layer_activation_bytes(const LlmJob& job, int64_t b_, int64_t s_, int tp, bool sp, Recompute r) {
  const LlmShape& m = job.shape;
  const double b = static_cast<double>(b_), s = static_cast<double>(s_), h = static_cast<double>(m.hidden);
  const double a = static_cast<double>(m.heads), f = static_cast<double>(m.ffn_hidden), t = tp;
  const double e = job.precision.activation_bytes;  // bytes per stored activation element
  const double sbh = s * b * h;
  // Tensors outside the tensor-parallel region: split over the ranks only with SP.
  const double rep = sp ? 1.0 / t : 1.0;
  if (r == Recompute::full) return e * sbh * rep;  // the layer's input only
  const bool drop = job.stack.dropout;
  // Attention: norm input and QKV input (replicated), Q / K / V, the projection's input.
  double bytes = e * 2.0 * sbh * rep;
  bytes += e * sbh / t + 2.0 * e * s * b * kv_width(m) / kv_split(m, tp) + e * sbh / t;
  if (drop) bytes += sbh * rep;  // dropout mask after the projection (1 byte)
  if (job.stack.flash_attention) {
    bytes += 4.0 * a * s * b / t;  // fp32 log-sum-exp per query and head
  } else if (r == Recompute::none) {
    // Scores: softmax output (e a s^2 b), and with dropout its mask (a s^2 b) and output.
    bytes += (drop ? (2.0 * e + 1.0) : e) * a * s * s * b / t;
  }
  // MLP: norm input and first GEMM input (replicated), then the hidden activations.
  bytes += e * 2.0 * sbh * rep;
  const double tok = mlp_token_factor(m);
  if (m.mlp == LlmMlp::swiglu)
    bytes += tok * 3.0 * e * s * b * f / t;  // gate, up and their product (the down GEMM's input)
  else
    bytes += tok * 2.0 * e * s * b * f / t;  // GELU input and output
  if (drop) bytes += sbh * rep;  // dropout mask after the MLP
  return bytes;
}

namespace {

LlmMemory stage_memory(const LlmJob& job, const LlmConfig& c, bool first, bool last) {
  const LlmShape& s = job.shape;
  const LlmPrecision& p = job.precision;
  const double t = c.tp;
  const LlmStageLayers st = llm_stage_layers(s, c);
  const double layers = first ? st.first : st.last;
  // Expert weights are split over the expert-parallel ranks, the rest over tp.
  double layer_params = llm_layer_parameters(s) / t;
  if (s.moe() && c.ep > 1) {
    LlmShape dense = s;
    dense.experts = 1;
    const double expert = (llm_layer_parameters(s) - llm_layer_parameters(dense)) / (s.experts - 1);
    layer_params -= expert * static_cast<double>(s.experts) * (1.0 - 1.0 / c.ep) / t;
  }
  double params = layer_params * layers;
  if (first) params += llm_embedding_parameters(s) / t;
  if (last) {
    LlmShape none = s;
    none.layers = 0;
    const double final_norm = static_cast<double>(llm_parameter_count(none)) - llm_embedding_parameters(s) -
                              llm_head_parameters(s);
    params += (llm_head_parameters(s) + final_norm) / t;  // untied head, final norm
  }
  LlmMemory m;
  m.parameters_per_device = params;
  m.stage_layers = layers;
  // ZeRO shards over every rank holding a replica of these parameters: dp x cp.
  const double shards = static_cast<double>(c.dp) * c.cp;
  m.weights = params * p.weight_bytes / (c.zero == ZeroStage::parameters ? shards : 1.0);
  // fp8: a 1-byte copy of the transformer layers' weights beside the 16-bit ones (norm gains
  // included, < 0.1% of a layer); embeddings and the LM head stay 16-bit (Transformer Engine).
  m.fp8_weights = layer_params * layers * p.fp8_weight_copy_bytes / (c.zero == ZeroStage::parameters ? shards : 1.0);
  m.gradients = params * p.grad_bytes / (c.zero == ZeroStage::gradients || c.zero == ZeroStage::parameters ? shards : 1.0);
  m.optimizer = params * p.optimizer_bytes / (c.zero != ZeroStage::none ? shards : 1.0);
  const int64_t s_loc = job.seq_len / c.cp;
  // MoE: the busiest expert-parallel rank keeps its share of routed tokens (llm_plan.hpp).
  LlmJob busy = job;
  if (s.moe() && c.ep > 1)
    busy.shape.capacity_factor =
        moe_rank_load_factor(s, static_cast<double>(c.micro_batch) * static_cast<double>(s_loc), c.ep);
  const double per_layer = layer_activation_bytes(busy, c.micro_batch, s_loc, c.tp, c.sequence_parallel, c.recompute);
  // 1F1B: stage i holds p - i micro-batches in flight (the first: p); interleaving adds
  // (p - 1) / (p v) of that (Korthikanti et al. 2022, section 4.2.3).
  double inflight = 1.0;
  if (c.pp > 1 && first) {
    inflight = static_cast<double>(std::min<int64_t>(c.pp, std::max<int64_t>(1, job.micro_batches(c))));
    if (c.virtual_stages > 1) inflight *= 1.0 + (c.pp - 1.0) / (c.pp * static_cast<double>(c.virtual_stages));
  }
  m.activations = per_layer * layers * inflight;
  const double tokens = static_cast<double>(c.micro_batch) * static_cast<double>(s_loc);
  if (first) m.activations += p.activation_bytes * tokens * s.hidden / (c.sequence_parallel ? t : 1.0);  // embedding output
  // Logits in the activation type plus the fp32 copy the cross-entropy reads, vocab-parallel
  // (a fused cross-entropy kernel computes in place on the 16-bit logits).
  if (last) m.logits = tokens * static_cast<double>(s.vocab) * (p.activation_bytes + (job.stack.fused_loss ? 0.0 : 4.0)) / t;
  // Temporaries: the layer being recomputed (full recompute) holds its whole activations
  // during its backward; ZeRO-3 holds this and the prefetched layer gathered and one
  // layer's unsharded gradients before their reduce-scatter.
  if (c.recompute == Recompute::full)
    m.temporary += layer_activation_bytes(busy, c.micro_batch, s_loc, c.tp, c.sequence_parallel, Recompute::selective);
  if (c.zero == ZeroStage::parameters && shards > 1)
    m.temporary += layer_params * (2.0 * p.weight_bytes + p.reduce_bytes);
  return m;
}

}  // namespace

LlmStageLayers llm_stage_layers(const LlmShape& s, const LlmConfig& c) {
  const int64_t pp = std::max(1, c.pp), v = std::max(1, c.virtual_stages), chunks = pp * v;
  const int64_t q = s.layers / chunks, r = s.layers % chunks;
  // Stage i holds v chunks of q layers, one more for each of its chunks i + k pp below r.
  auto stage = [&](int64_t i) {
    int64_t extra = 0;
    for (int64_t k = 0; k < v; ++k) extra += i + k * pp < r ? 1 : 0;
    return static_cast<double>(v * q + extra);
  };
  return {stage(0), stage(pp - 1)};
}

LlmMemory llm_memory(const LlmJob& job, const LlmConfig& c) {
  if (c.pp == 1) return stage_memory(job, c, true, true);
  LlmMemory first = stage_memory(job, c, true, false), last = stage_memory(job, c, false, true);
  return first.total() >= last.total() ? first : last;
}

}  // namespace xpusim::parallel
