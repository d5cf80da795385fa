// Blocks of the transformer family (see transformer.cpp's header for what is modelled and the
// approximations): attention with multi-, grouped- or multi-query heads and rotary positions,
// GELU or SwiGLU MLPs, and mixture-of-experts MLPs, all from the existing op kinds.
#include "models/zoo/transformer_blocks.hpp"

#include <cmath>

#include "models/head_repeat.hpp"

namespace xpusim::zoo {

namespace {

// Rotary embedding (Su et al. 2021) written as the unfused PyTorch code computes it:
// x * cos + rotate_half(x) * sin, with rotate_half a copy and the cos/sin tables folded into
// two scales (3 FLOPs per element, no parameters). Fused kernels (Transformer Engine, MaxText)
// move less data; the FLOPs are the same.
int rotary(ModelBuilder& b, int x, const std::string& n) {
  const Shape s = b.shape(x);
  int r = b.copy_to(x, s, static_cast<int>(s.size()) - 1, n + ".rotate_half");
  const int cos = b.scale(x, 1.0, n + ".cos");
  const int sin = b.scale(r, 1.0, n + ".sin");
  return b.add({cos, sin}, n);
}

// Grouped-query attention: k or v [N, T, kv_heads * dh] repeated to the query heads
// [N, T, heads * dh] (Hugging Face's repeat_kv) so the attention core stays multi-head; its
// FLOPs are those of the query heads, as in every GQA kernel.
int repeat_kv(ModelBuilder& b, int x, int64_t width, int64_t heads, const std::string& n) {
  return repeat_heads(b, x, width, heads, n);
}

int attention(ModelBuilder& b, const TransformerParams& p, int h, const std::string& n) {
  const int64_t qw = p.heads * p.head_dim, kvw = p.kv_heads * p.head_dim;
  int q = b.dense(h, qw, p.bias, n + ".attn.q");
  int k = b.dense(h, kvw, p.bias, n + ".attn.k");
  int v = b.dense(h, kvw, p.bias, n + ".attn.v");
  if (p.position == LlmPosition::rotary) {
    q = rotary(b, q, n + ".attn.q_rotary");
    k = rotary(b, k, n + ".attn.k_rotary");
  }
  if (kvw != qw) {
    k = repeat_kv(b, k, qw, p.heads, n + ".attn.k_repeat");
    v = repeat_kv(b, v, qw, p.heads, n + ".attn.v_repeat");
  }
  // ALiBi adds a fixed per-head bias to the scores inside the softmax: no parameters, and its
  // one add per score is within the attention op's per-score work.
  int a = b.attention(q, k, v, p.heads, p.causal, n + ".attn");
  return b.dense(a, p.hidden, p.bias, n + ".attn.out");
}

// SwiGLU (Shazeer 2020): down(silu(gate x) * up x), silu(z) = z * sigmoid(z) written as a
// sigmoid and a product.
int swiglu(ModelBuilder& b, int gate, int up, const std::string& n) {
  const int sigmoid = b.activation(gate, ActivationFn::sigmoid, n + ".gate_sigmoid");
  const int silu = b.mul(gate, sigmoid, n + ".silu");
  return b.mul(silu, up, n + ".swiglu");
}

int dense_mlp(ModelBuilder& b, const TransformerParams& p, int h, const std::string& n) {
  if (p.mlp == LlmMlp::swiglu) {
    // Named steps: the op order must not depend on the compiler's argument evaluation order.
    const int gate = b.dense(h, p.ffn, p.bias, n + ".mlp.gate");
    const int up = b.dense(h, p.ffn, p.bias, n + ".mlp.up");
    return b.dense(swiglu(b, gate, up, n + ".mlp"), p.hidden, p.bias, n + ".mlp.down");
  }
  int f = b.activation(b.dense(h, p.ffn, p.bias, n + ".ffn.in"), ActivationFn::gelu, n + ".ffn.gelu");
  return b.dense(f, p.hidden, p.bias, n + ".ffn.out");
}

// Mixture of experts (Switch/GShard style, Mixtral's top-2): a router scores the experts, the
// tokens are dispatched to `experts` groups of `capacity` = ceil(tokens x top_k x
// capacity_factor / experts) rows (equal load, the capacity-factor bound of a balanced
// router), every expert's MLP runs as one grouped GEMM over its rows, and the outputs are
// gathered back and weighted by the routing probabilities. Top-k selection is a copy of the
// probabilities; the experts' weights are [experts, in, out] tensors.
int moe_mlp(ModelBuilder& b, const TransformerParams& p, int h, const std::string& n) {
  const Shape hs = b.shape(h);
  const int64_t tokens = hs[0] * hs[1];
  const auto capacity = static_cast<int64_t>(
      std::ceil(static_cast<double>(tokens) * static_cast<double>(p.top_k) * p.capacity_factor / static_cast<double>(p.experts)));
  int probs = b.softmax(b.dense(h, p.experts, false, n + ".moe.router"), n + ".moe.router_softmax");
  int xe = b.copy_to(h, {p.experts, std::max<int64_t>(1, capacity), p.hidden}, 1, n + ".moe.dispatch");
  int f;
  if (p.mlp == LlmMlp::swiglu) {
    const int gate = b.expert_dense(xe, p.ffn, n + ".moe.experts.gate");
    const int up = b.expert_dense(xe, p.ffn, n + ".moe.experts.up");
    f = swiglu(b, gate, up, n + ".moe.experts");
  } else {
    f = b.activation(b.expert_dense(xe, p.ffn, n + ".moe.experts.in"), ActivationFn::gelu, n + ".moe.experts.gelu");
  }
  int ye = b.expert_dense(f, p.hidden, n + ".moe.experts.down");
  int y = b.copy_to(ye, hs, 1, n + ".moe.combine");
  int w = b.copy_to(probs, {hs[0], hs[1], 1}, 2, n + ".moe.top_k");
  return b.broadcast_mul(y, w, n + ".moe.weighted");
}

}  // namespace

int transformer_norm(ModelBuilder& b, const TransformerParams& p, int x, const std::string& name) {
  if (p.norm == LlmNorm::rms_norm) return b.layer_norm(x, name, p.eps, false, true);
  if (!p.norm_bias) return b.layer_norm(x, name, p.eps, false, false);
  return b.layer_norm(x, name, p.eps);
}

int transformer_block(ModelBuilder& b, const TransformerParams& p, int x, const std::string& n) {
  int h = p.pre_norm ? transformer_norm(b, p, x, n + ".ln_1") : x;
  int o = attention(b, p, h, n);
  if (p.dropout > 0) o = b.dropout(o, p.dropout, n + ".attn.dropout");
  x = b.add({x, o}, n + ".attn.residual");
  if (!p.pre_norm) x = transformer_norm(b, p, x, n + ".attn.ln");
  h = p.pre_norm ? transformer_norm(b, p, x, n + ".ln_2") : x;
  int f = p.moe() ? moe_mlp(b, p, h, n) : dense_mlp(b, p, h, n);
  if (p.dropout > 0) f = b.dropout(f, p.dropout, n + ".ffn.dropout");
  x = b.add({x, f}, n + ".ffn.residual");
  if (!p.pre_norm) x = transformer_norm(b, p, x, n + ".ffn.ln");
  return x;
}

}  // namespace xpusim::zoo
