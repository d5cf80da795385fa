// Closed-form parameter counts of a decoder (models/llm_shape.hpp).
#include "models/llm_shape.hpp"

namespace xpusim {

namespace {

int64_t norm_params(const LlmShape& s) {
  return s.norm == LlmNorm::rms_norm || !s.norm_bias ? s.hidden : 2 * s.hidden;
}

int64_t mlp_params(const LlmShape& s) {
  const int64_t d = s.hidden, f = s.ffn_hidden, b = s.bias ? 1 : 0;
  if (s.mlp == LlmMlp::swiglu) return 3 * d * f + b * (2 * f + d);
  return 2 * d * f + b * (f + d);
}

int64_t block_params(const LlmShape& s, int64_t experts_counted) {
  const int64_t d = s.hidden, q = s.attention_width(), kv = s.kv_heads * s.head_dim(), b = s.bias ? 1 : 0;
  const int64_t attention = d * q + 2 * d * kv + q * d + b * (q + 2 * kv + d);
  const int64_t router = s.moe() ? d * s.experts : 0;
  return attention + 2 * norm_params(s) + router + experts_counted * mlp_params(s);
}

int64_t outer_params(const LlmShape& s) {
  int64_t n = s.vocab * s.hidden + norm_params(s);
  if (s.position == LlmPosition::learned) n += s.max_positions * s.hidden;
  if (!s.tied_embeddings) n += s.vocab * s.hidden;
  return n;
}

}  // namespace

int64_t llm_parameter_count(const LlmShape& s) {
  return outer_params(s) + s.layers * block_params(s, s.experts);
}

int64_t llm_active_parameter_count(const LlmShape& s) {
  return outer_params(s) + s.layers * block_params(s, s.moe() ? s.top_k : 1);
}

}  // namespace xpusim
