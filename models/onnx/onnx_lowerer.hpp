// Internal to models/onnx: the Lowerer that walks a checked ONNX graph (onnx_lower.hpp says
// what the two passes do). Its methods live in one file per family of operators:
// onnx_lower.cpp (the walk, values, constants), onnx_lower_cnn.cpp, onnx_lower_dense.cpp,
// onnx_lower_tensor.cpp, onnx_patterns.cpp (attention, GELU, decomposed LayerNorm, masked
// softmax) and onnx_ops.cpp (the one {op_type, handler} table: the supported operator set).
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/onnx/onnx_fold.hpp"
#include "models/onnx/onnx_lower.hpp"

namespace xpusim::onnx {

// A value of the graph while it is walked: a tensor the builder holds (activation), an
// initializer used as weights (parameters), or a folded constant.
struct Val {
  enum class Kind { activation, weight, constant } kind = Kind::activation;
  Shape shape;
  DataType type = DataType::float32;
  int tensor = -1;                        // activation, emit pass
  const TensorProto* init = nullptr;      // weight
  std::string param;                      // weight: the initializer's name, or its Identity alias
  std::optional<Const> values;            // constant (and weights once read as constants)
  // weight: rows of a 2-D float table picked by constant indices and then rearranged (Swin's
  // and MaxViT's relative position bias): the table's rows and width, so its parameters
  // count once however many rows are picked; 0 for any other weight.
  int64_t table_rows = 0, table_width = 0;
};

// Element count; -1 when a dimension is negative or the product overflows.
inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

inline bool is_float(DataType t) {
  return t == DataType::float32 || t == DataType::float16 || t == DataType::bfloat16 || t == DataType::float64;
}

class Lowerer {
 public:
  Lowerer(const CheckedGraph& g, int64_t batch, ModelBuilder* b) : g_(g), m_(*g.model), batch_(batch), b_(b) {
    for (size_t i : g_.order) {
      for (const auto& in : m_.graph.nodes[i].inputs)
        if (!in.empty()) consumers_[in].push_back(i);
      for (const auto& out : m_.graph.nodes[i].outputs)
        if (!out.empty()) producer_[out] = i;
    }
  }

  LoweringResult run(const LoweringResult* plan, bool labels);

  // The operator table (onnx_ops.cpp): its keys are the supported operator set.
  using Handler = void (*)(Lowerer&, size_t);
  struct OpEntry {
    const char* op_type;
    Handler lower;
  };
  static const std::vector<OpEntry>& op_table();
  static const Handler* handler(const std::string& op_type);  // nullptr: not supported

 private:
  const CheckedGraph& g_;
  const OnnxModel& m_;
  int64_t batch_;
  ModelBuilder* b_;
  std::map<std::string, Val> vals_;
  std::map<std::string, std::vector<size_t>> consumers_;
  std::map<std::string, size_t> producer_;
  std::set<size_t> absorbed_;
  std::set<std::string> used_params_;
  std::map<std::string, int> synth_tensors_;
  // Attention cores found by find_attention, keyed by the node whose output they produce.
  struct AttentionMatch {
    std::vector<size_t> chain;  // the absorbed nodes, in walk order (lowered one by one if the fusion does not apply)
    size_t qr, kr, vr;          // the Reshapes that split heads off q, k, v
    size_t qk, pv, softmax;     // QK^T and PV products, the softmax
    std::optional<size_t> scale, mask;
    size_t mask_x = 0;          // which input of an Add mask is the scores
  };
  std::map<size_t, AttentionMatch> attention_;
  LoweringResult result_;
  int result_labels_ = -1;

  // ---- helpers ------------------------------------------------------------------------
  const Node& node(size_t i) const { return m_.graph.nodes[i]; }
  const std::string& nname(size_t i) const { return g_.node_names[i]; }

  [[noreturn]] void fail(size_t i, const std::string& msg) const {
    throw UserError(m_.file + ": node '" + nname(i) + "' (" + node(i).op_type + "): " + msg);
  }

  const Val& get(const std::string& name, const size_t* at) const {
    auto it = vals_.find(name);
    if (it == vals_.end()) {
      if (at) fail(*at, "input '" + name + "' has no value");
      throw UserError(m_.file + ": value '" + name + "' is never produced");
    }
    return it->second;
  }
  const Val& in(size_t i, size_t k) const {
    const Node& n = node(i);
    if (k >= n.inputs.size() || n.inputs[k].empty()) fail(i, "needs input " + std::to_string(k));
    return get(n.inputs[k], &i);
  }
  bool has_in(size_t i, size_t k) const { return k < node(i).inputs.size() && !node(i).inputs[k].empty(); }
  const Val& act(size_t i, size_t k) const {
    const Val& v = in(i, k);
    if (v.kind != Val::Kind::activation) fail(i, "input '" + node(i).inputs[k] + "' must be computed from the graph's inputs here");
    return v;
  }
  void set_out(size_t i, Val v, size_t k = 0);
  Val activation(Shape s, int tensor, DataType t = DataType::float32) {
    Val v;
    v.shape = std::move(s);
    v.tensor = tensor;
    v.type = t;
    return v;
  }
  int64_t attr_i(size_t i, const char* name, int64_t def) const {
    const Attribute* a = node(i).attr(name);
    return a ? a->i : def;
  }
  // A 0/1 attribute (ceil_mode, allowzero): any other value is an error naming the node, not
  // "true" (ceil_mode=-1 and allowzero=2^62 were accepted without a word).
  bool attr_flag(size_t i, const char* name) const {
    const int64_t v = attr_i(i, name, 0);
    if (v != 0 && v != 1) fail(i, std::string(name) + " must be 0 or 1, got " + std::to_string(v));
    return v == 1;
  }
  float attr_f(size_t i, const char* name, float def) const {
    const Attribute* a = node(i).attr(name);
    return a ? a->f : def;
  }
  std::vector<int64_t> attr_ints(size_t i, const char* name) const {
    const Attribute* a = node(i).attr(name);
    return a ? a->ints : std::vector<int64_t>{};
  }
  std::string attr_s(size_t i, const char* name, const std::string& def) const {
    const Attribute* a = node(i).attr(name);
    return a ? a->s : def;
  }

  // Values of a constant (or of a small initializer read as one); nullopt for activations.
  std::optional<Const> const_of(const Val& v) const;
  std::optional<double> scalar_of(const Val& v) const {
    if (v.kind == Val::Kind::activation || numel(v.shape) != 1) return std::nullopt;
    auto c = const_of(v);
    if (!c || c->v.size() != 1) return std::nullopt;
    return c->v[0];
  }
  std::vector<int64_t> ints_of(size_t i, size_t k) const;
  // A weight input: an initializer (or Identity alias) of the expected shape, used once.
  const Val& weight(size_t i, size_t k, const Shape& expect);
  // The only consumer of value `name` (and not the graph output), or nothing.
  std::optional<size_t> sole_consumer(const std::string& name) const {
    if (name == g_.output) return std::nullopt;
    auto it = consumers_.find(name);
    if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
    return it->second[0];
  }
  // Node n exists, has type t, an output, and the inputs a pattern step reads (two for
  // binary ops, at least one otherwise).
  bool is_op(std::optional<size_t> n, const char* t) const {
    if (!n || node(*n).op_type != t || node(*n).outputs.empty() || node(*n).inputs.empty()) return false;
    static const std::set<std::string> binary = {"Add", "Sub", "Mul", "Div", "Pow", "MatMul"};
    return !binary.count(t) || node(*n).inputs.size() == 2;
  }
  // The other input of a two-input node, given one of them.
  std::string other_input(size_t i, const std::string& one) const {
    const Node& n = node(i);
    if (n.inputs.size() != 2) return "";
    return n.inputs[0] == one ? n.inputs[1] : n.inputs[0];
  }

  // ---- host inputs (plan pass) --------------------------------------------------------
  void plan_host_inputs();

  // ---- dispatch ---------------------------------------------------------------------------
  void lower(size_t i);

  // ---- constants --------------------------------------------------------------------------
  void lower_constant(size_t i);
  void set_const(size_t i, Const c, size_t k = 0);
  void lower_shape(size_t i);
  // Every input known: evaluate the node (Shape/Gather/Unsqueeze/Concat chains, masks).
  bool try_fold(size_t i);

  // ---- CNN operators ------------------------------------------------------------------
  void check_no_autopad(size_t i);
  // pads [top, left, bottom, right] -> symmetric (pad_h, pad_w) or an error.
  std::pair<int, int> sym_pads(size_t i);
  std::pair<int, int> pair_attr(size_t i, const char* name, int def);
  static int64_t window_out(int64_t in, int k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

  void lower_conv(size_t i);

  void lower_batch_norm(size_t i);

  void lower_activation(size_t i, ActivationFn f);

  void lower_pool(size_t i);

  // GlobalAveragePool gives [N, C, 1, 1]; followed by Flatten or a Reshape to [N, C] it is one
  // [N, C] pool, as in the zoo (no reshape ops that the zoo's ResNet does not have).
  void lower_global_pool(size_t i);

  void lower_gemm(size_t i);

  // MatMul with a 2-D initializer is a dense layer; an Add of a [units] initializer right
  // after it (how torch exports nn.Linear on 3-D inputs) is its bias.
  void lower_matmul(size_t i);

  // Activation x activation ([..., M, K] x [..., K, N], the same leading dims): attention's
  // QK^T and PV.
  void lower_batch_matmul(size_t i);
  void lower_transpose(size_t i);

  // ---- fused attention -------------------------------------------------------------------
  // Multi-head attention as exporters write it out, matched on structure before the walk:
  //   q = Transpose(Reshape(Q, [N,T,H,Dh]), 0 2 1 3)      k, v likewise (k to [N,H,Dh,T])
  //   p = Softmax([mask](QK^T [/ sqrt(Dh)]))              y = Reshape(Transpose(p V, 0 2 1 3), [N,T,D])
  // becomes one attention(Q, K, V, H, causal) op, as the zoo's Transformers are built, so an
  // imported BERT or GPT is costed like the zoo's. Shapes, the scale and the mask are checked
  // when y is reached; anything else lowers node by node.
  std::optional<size_t> producer_of(const std::string& v) const {
    auto it = producer_.find(v);
    if (it == producer_.end()) return std::nullopt;
    return it->second;
  }
  bool sole_use(size_t n) const {
    return node(n).outputs.size() >= 1 && sole_consumer(node(n).outputs[0]).has_value();
  }
  std::optional<size_t> producer_op(const std::string& v, const char* op) const {
    auto p = producer_of(v);
    if (!p || node(*p).op_type != op || !sole_use(*p)) return std::nullopt;
    return p;
  }
  // The Reshape under up to two Transposes whose composed permutation is `want`.
  std::optional<size_t> heads_split(const std::string& v, const std::vector<int64_t>& want,
                                    std::vector<size_t>& chain) const {
    std::vector<int64_t> perm{0, 1, 2, 3};
    std::string cur = v;
    for (int depth = 0; depth < 2; ++depth) {
      auto t = producer_op(cur, "Transpose");
      if (!t) break;
      auto p = node(*t).attr("perm");
      if (!p || p->ints.size() != 4 || node(*t).inputs.size() != 1) return std::nullopt;
      std::vector<int64_t> composed(4);
      for (size_t k = 0; k < 4; ++k) {
        if (perm[k] < 0 || perm[k] > 3) return std::nullopt;
        composed[k] = p->ints[static_cast<size_t>(perm[k])];
      }
      perm = composed;
      chain.push_back(*t);
      cur = node(*t).inputs[0];
    }
    if (perm != want) return std::nullopt;
    auto r = producer_op(cur, "Reshape");
    if (r && node(*r).inputs.size() != 2) return std::nullopt;
    if (r) chain.push_back(*r);
    return r;
  }
  void find_attention();
  // Masked entries of a constant causal mask are exactly those above the diagonal.
  bool causal_mask(const AttentionMatch& m, int64_t t) const;
  bool emit_attention(size_t y, const AttentionMatch& m);

  // ---- Transformer operators and patterns ---------------------------------------------
  bool last_axis(int64_t axis, size_t rank) const {
    return axis == -1 || axis == static_cast<int64_t>(rank) - 1;
  }
  void lower_layer_norm(size_t i);
  void lower_softmax(size_t i);

  // A constant mask applied right before a last-axis Softmax (Where(mask, -inf, x) as torch's
  // masked_fill exports it, or Add of a 0 / -inf constant) is part of that softmax: the
  // masked entries get probability 0, the work is the softmax's.
  void lower_masked_softmax(size_t i, size_t x_index);
  void broadcast_check(size_t i, const Shape& small, const Shape& big);

  // GELU as torch exports F.gelu: x / sqrt(2) -> Erf -> + 1 -> x * . -> * 0.5. Matched at the
  // Div (or Mul by 1/sqrt(2)); returns false when the chain is something else.
  bool try_gelu(size_t i, const Val& x, double c);

  // LayerNorm as an exporter may spell it: mean = ReduceMean(x); d = x - mean;
  // var = ReduceMean(d^2); y = d / sqrt(var + eps) * gamma + beta. Matched at the first
  // ReduceMean; a ReduceMean outside this pattern is not supported.
  void lower_decomposed_layer_norm(size_t i);

  void lower_binary(size_t i);
  void emit_elementwise(size_t i, const std::string& op, const Val& a, const Val& c);
  Shape broadcast_or_fail(size_t i, const Shape& a, const Shape& b) const;
  Val param_tensor(size_t i, size_t k, const Shape& like);
  bool try_derive_weight(size_t i);
  void lower_identity(size_t i);
  void lower_clip(size_t i);
  void lower_reduce_mean(size_t i);
  void lower_resize(size_t i);
  void lower_einsum(size_t i);
  void lower_split(size_t i);
  void lower_slice(size_t i);
  void lower_expand(size_t i);
  // `batched`: dim 0 of `in` is the batch (a computed tensor), not of a weight.
  Shape view_shape(size_t i, const Shape& in, bool batched = true);
  Shape slice_shape(size_t i, const Shape& in, int& first, bool batched);
  // Weights up to this size are also read as values when rearranged (buffers such as masks).
  static constexpr int64_t kMaxBufferElements = int64_t{1} << 16;
  int64_t axis_of(size_t i, int64_t axis, size_t rank) const;
  void emit_copy(size_t i, const Val& x, const Shape& s, int axis, size_t out = 0);

  void lower_concat(size_t i);

  Shape reshape_target(size_t i, const Shape& from, const std::vector<int64_t>& target, bool allowzero);
  void emit_reshape(size_t i, const Val& x, const Shape& s, size_t out = 0);
  void lower_reshape(size_t i);
  void lower_flatten(size_t i);
  void lower_squeeze(size_t i);

  // Gather of rows of a float table: an embedding. Indices from the graph's inputs feed it
  // directly; constant indices (position ids) become a host-fed input of their own, [N, T],
  // unless they are not position ids or the rows are rearranged next (a relative position
  // bias): then the rows are a weight of the gathered shape (Val::table_rows), looked up
  // where it meets a computed tensor (param_tensor).
  void lower_gather(size_t i);

  void lower_dropout(size_t i);

  // Pad with zero pads (torch exports AvgPool2d that way) is an identity; real padding is not.
  void lower_pad(size_t i);
};

}  // namespace xpusim::onnx
