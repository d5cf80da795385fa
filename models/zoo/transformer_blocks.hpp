// The transformer family's parsed parameters and its block builders (transformer_blocks.cpp),
// shared by the parser and graph builder (transformer.cpp).
#pragma once
#include <string>

#include "models/builder.hpp"
#include "models/llm_shape.hpp"

namespace xpusim::zoo {

struct TransformerParams {
  long long vocab = 0, hidden = 0, layers = 0, heads = 0, ffn = 0, max_positions = 0, type_vocab = 0;
  long long kv_heads = 0;  // = heads: multi-head; < heads: grouped-query; 1: multi-query
  long long head_dim = 0;  // query/key width per head (hidden / heads unless the file gives it)
  bool causal = false, pre_norm = false, final_norm = false, pooler = false;
  bool bias = true, norm_bias = true, tied_embeddings = true;
  LlmNorm norm = LlmNorm::layer_norm;
  LlmMlp mlp = LlmMlp::gelu;
  LlmPosition position = LlmPosition::learned;
  long long experts = 1, top_k = 1;
  double capacity_factor = 1.0;
  std::string head;
  double dropout = 0.1, eps = 1e-12;

  bool moe() const { return experts > 1; }
};

// A LayerNorm (with or without beta) or an RMSNorm, as the parameters say.
int transformer_norm(ModelBuilder& b, const TransformerParams& p, int x, const std::string& name);
// One block: self-attention and MLP (dense or mixture-of-experts), each a residual branch,
// normalised after (post-LN, BERT) or before (pre-LN, GPT-2 and later) the branch.
int transformer_block(ModelBuilder& b, const TransformerParams& p, int x, const std::string& name);

}  // namespace xpusim::zoo
