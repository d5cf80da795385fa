// The shape of a decoder-only language model as the large-model layer (parallel/, `xpusim
// plan`) sees it: enough to count parameters, FLOPs, bytes and activation memory per layer in
// closed form, without building the op graph. The transformer family (models/zoo/transformer.cpp)
// fills ModelSpec::llm from the same parsed parameters that build the graph, so the two agree;
// tests check parameter_count() against the built graph and against the published figures.
#pragma once
#include <cstdint>

namespace xpusim {

enum class LlmNorm { layer_norm, rms_norm };
enum class LlmMlp { gelu, swiglu };               // swiglu: gate and up projections, then down
enum class LlmPosition { learned, rotary, alibi };  // only learned adds parameters

struct LlmShape {
  int64_t layers = 0;
  int64_t hidden = 0;          // model width d
  int64_t heads = 0;           // query heads
  int64_t kv_heads = 0;        // key/value heads: = heads (MHA), < heads (GQA), 1 (MQA)
  int64_t attention_head_dim = 0;  // width of one head when heads x it != hidden (MaxText); 0 = hidden / heads
  int64_t ffn_hidden = 0;      // MLP inner width (per expert for MoE)
  int64_t vocab = 0;
  int64_t max_positions = 0;   // learned position table rows (0 when rotary / ALiBi)
  LlmNorm norm = LlmNorm::layer_norm;
  LlmMlp mlp = LlmMlp::gelu;
  LlmPosition position = LlmPosition::learned;
  bool bias = true;            // biases in the linear layers (and LayerNorm's beta)
  bool norm_bias = true;       // LayerNorm has a bias (MPT: no)
  bool tied_embeddings = true; // LM head shares the token table
  int64_t experts = 1;         // MoE experts per layer (1 = dense)
  int64_t top_k = 1;           // experts each token is routed to
  double capacity_factor = 1.0;

  int64_t head_dim() const { return attention_head_dim > 0 ? attention_head_dim : heads > 0 ? hidden / heads : 0; }
  int64_t attention_width() const { return heads * head_dim(); }  // q and attention output width
  bool moe() const { return experts > 1; }
};

// Parameters of the whole model (embeddings, every block, final norm, untied LM head), exact.
int64_t llm_parameter_count(const LlmShape& s);
// Parameters one token activates (MoE: top_k of the experts), for 6N-style FLOP counts.
int64_t llm_active_parameter_count(const LlmShape& s);

}  // namespace xpusim
