#include "models/onnx/onnx_lower.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "common/error.hpp"
#include "models/onnx/onnx_fold.hpp"
#include "models/onnx/proto_wire.hpp"

namespace xpusim::onnx {

namespace {

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
};

// Element count; -1 when a dimension is negative or the product overflows.
int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

bool is_float(DataType t) {
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

  LoweringResult run(const LoweringResult* plan, bool labels) {
    for (const auto& [name, t] : g_.initializers) {
      Val v;
      v.kind = Val::Kind::weight;
      v.shape = Shape(t->dims.begin(), t->dims.end());
      v.type = t->data_type;
      v.init = t;
      v.param = name;
      vals_[name] = v;
    }
    for (const ValueInfo* in : g_.host_inputs) {
      Val v;
      v.shape = g_.input_shapes.at(in->name);
      v.shape[0] = batch_;
      v.type = in->elem_type;
      vals_[in->name] = v;
    }
    if (b_) {
      for (const InputPlan& p : plan->inputs) {
        int t = -1;
        switch (p.kind) {
          case InputPlan::Kind::image: t = b_->image_input(p.shape[1], p.shape[2], p.shape[3]); break;
          case InputPlan::Kind::sequence: t = b_->sequence_input(p.name, p.shape[1]); break;
          case InputPlan::Kind::features: t = b_->feature_input(p.name, p.shape[1], p.shape[2]); break;
        }
        synth_tensors_[p.name] = t;
        if (vals_.count(p.name)) vals_[p.name].tensor = t;
      }
      if (labels) result_labels_ = declare_training_labels(*b_, plan->output_shape, m_.file);
    } else {
      plan_host_inputs();
    }
    // Constants first: a pattern matched at one node reads the constants of later ones
    // (GELU's 1 and 0.5, LayerNorm's eps), which exporters emit right where they are used.
    for (size_t i : g_.order)
      if (node(i).op_type == "Constant") lower_constant(i);
    find_attention();
    for (size_t i : g_.order) {
      if (absorbed_.count(i) || node(i).op_type == "Constant") continue;
      lower(i);
    }
    const Val& out = get(g_.output, nullptr);
    if (out.kind != Val::Kind::activation)
      throw UserError(m_.file + ": graph output '" + g_.output + "' is a constant; there is nothing to train");
    result_.output_shape = out.shape;
    result_.output_tensor = out.tensor;
    if (b_ && labels) append_training_loss(*b_, out.tensor, result_labels_);
    return result_;
  }

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
  void set_out(size_t i, Val v, size_t k = 0) {
    const Node& n = node(i);
    if (k >= n.outputs.size()) fail(i, "has no output " + std::to_string(k));
    if (v.kind == Val::Kind::activation) {
      int64_t count = numel(v.shape);
      if (count <= 0 || count > (int64_t{1} << 44))
        fail(i, "output shape " + shape_str(v.shape) + " is empty or too large");
    }
    if (b_ && v.kind == Val::Kind::activation && v.tensor >= 0 && b_->shape(v.tensor) != v.shape)
      throw InternalError(m_.file + ": node '" + nname(i) + "': builder shape " + shape_str(b_->shape(v.tensor)) +
                          " differs from the inferred " + shape_str(v.shape));
    vals_[n.outputs[k]] = std::move(v);
  }
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
  std::optional<Const> const_of(const Val& v) const {
    if (v.kind == Val::Kind::activation) return std::nullopt;
    if (v.values) return v.values;
    if (v.kind == Val::Kind::weight) {
      if (numel(v.shape) > kMaxFoldElements) return std::nullopt;
      Const c;
      c.shape = v.shape;
      c.type = v.type;
      try {
        c.v = tensor_doubles(*v.init, kMaxFoldElements);
      } catch (const WireError& e) {
        throw UserError(m_.file + ": initializer '" + v.param + "': " + e.what());
      }
      return c;
    }
    return std::nullopt;
  }
  std::optional<double> scalar_of(const Val& v) const {
    if (v.kind == Val::Kind::activation || numel(v.shape) != 1) return std::nullopt;
    auto c = const_of(v);
    if (!c || c->v.size() != 1) return std::nullopt;
    return c->v[0];
  }
  std::vector<int64_t> ints_of(size_t i, size_t k) const {
    auto c = const_of(in(i, k));
    if (!c) fail(i, "input '" + node(i).inputs[k] + "' must be a constant (or computable from shapes)");
    std::vector<int64_t> out;
    for (double d : c->v) out.push_back(static_cast<int64_t>(d));
    return out;
  }
  // A weight input: an initializer (or Identity alias) of the expected shape, used once.
  const Val& weight(size_t i, size_t k, const Shape& expect) {
    const Val& v = in(i, k);
    if (v.kind != Val::Kind::weight)
      fail(i, "input '" + node(i).inputs[k] + "' must be an initializer (weights); computed weights are not supported");
    if (v.shape != expect)
      fail(i, "weights '" + v.param + "' have shape " + shape_str(v.shape) + ", expected " + shape_str(expect));
    for (auto d : v.shape)
      if (d <= 0) fail(i, "weights '" + v.param + "' are empty");
    if (b_) {
      if (!used_params_.insert(v.param).second)
        fail(i, "initializer '" + v.param + "' is the weights of two nodes (tied weights are not supported: "
                "each use would count as its own parameters)");
    }
    return v;
  }
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
  void plan_host_inputs() {
    bool image = false;
    for (const ValueInfo* vi : g_.host_inputs) {
      const Val& v = vals_.at(vi->name);
      InputPlan p;
      p.name = vi->name;
      p.shape = v.shape;
      if (is_float(v.type) && v.shape.size() == 4) {
        if (image)
          throw UserError(m_.file + ": input '" + vi->name + "': only one image input [N, C, H, W] is supported");
        image = true;
        p.kind = InputPlan::Kind::image;
      } else if (is_integer(v.type) && v.shape.size() == 2) {
        p.kind = InputPlan::Kind::sequence;
      } else if (is_float(v.type) && v.shape.size() == 3) {
        p.kind = InputPlan::Kind::features;
      } else {
        throw UserError(m_.file + ": input '" + vi->name + "' (" + data_type_name(v.type) + " " + shape_str(v.shape) +
                        "): supported inputs are float images [N, C, H, W], integer ids [N, T] and float "
                        "sequences [N, T, F]");
      }
      result_.inputs.push_back(p);
    }
  }

  // ---- dispatch ---------------------------------------------------------------------------
  void lower(size_t i) {
    if (auto a = attention_.find(i); a != attention_.end()) {
      AttentionMatch m = a->second;
      attention_.erase(a);
      if (emit_attention(i, m)) return;
      // Not the standard core after all (scale, mask or shapes): lower its nodes one by one.
      for (size_t n : m.chain) {
        bool done = true;
        for (const auto& o : node(n).outputs) done = done && (o.empty() || vals_.count(o));
        if (!done) lower(n);
      }
    }
    const Node& n = node(i);
    const std::string& op = n.op_type;
    if (op == "Constant") return lower_constant(i);
    if (op == "Shape") return lower_shape(i);
    if (op == "Identity") {
      Val v = in(i, 0);
      if (v.kind == Val::Kind::weight) v.param = n.outputs[0];  // an alias is a parameter of its own (see docs)
      return set_out(i, v);
    }
    if (try_fold(i)) return;
    if (op == "Conv") return lower_conv(i);
    if (op == "BatchNormalization") return lower_batch_norm(i);
    if (op == "Relu") return lower_activation(i, ActivationFn::relu);
    if (op == "Sigmoid") return lower_activation(i, ActivationFn::sigmoid);
    if (op == "Tanh") return lower_activation(i, ActivationFn::tanh);
    if (op == "MaxPool" || op == "AveragePool") return lower_pool(i);
    if (op == "GlobalAveragePool") return lower_global_pool(i);
    if (op == "Gemm") return lower_gemm(i);
    if (op == "MatMul") return lower_matmul(i);
    if (op == "Add" || op == "Mul" || op == "Div") return lower_binary(i);
    if (op == "LayerNormalization") return lower_layer_norm(i);
    if (op == "ReduceMean") return lower_decomposed_layer_norm(i);
    if (op == "Softmax") return lower_softmax(i);
    if (op == "Where") return lower_masked_softmax(i, 2);
    if (op == "Erf") fail(i, "Erf is supported only inside the GELU pattern x * 0.5 * (1 + erf(x / sqrt(2)))");
    if (op == "Concat") return lower_concat(i);
    if (op == "Reshape") return lower_reshape(i);
    if (op == "Flatten") return lower_flatten(i);
    if (op == "Squeeze" || op == "Unsqueeze") return lower_squeeze(i);
    if (op == "Gather") return lower_gather(i);
    if (op == "Dropout") return lower_dropout(i);
    if (op == "Pad") return lower_pad(i);
    if (op == "Transpose") return lower_transpose(i);
    fail(i, "operator not supported on computed tensors here (see docs/onnx.md for the supported list and patterns)");
  }

  // ---- constants --------------------------------------------------------------------------
  void lower_constant(size_t i) {
    const Node& n = node(i);
    Const c;
    if (const Attribute* a = n.attr("value"); a && a->t) {
      c.shape = Shape(a->t->dims.begin(), a->t->dims.end());
      c.type = a->t->data_type;
      try {
        c.v = tensor_doubles(*a->t, kMaxFoldElements);
      } catch (const WireError& e) {
        fail(i, e.what());
      }
    } else if (const Attribute* f = n.attr("value_float")) {
      c.v = {f->f};
    } else if (const Attribute* k = n.attr("value_int")) {
      c.type = DataType::int64;
      c.v = {static_cast<double>(k->i)};
    } else if (const Attribute* ks = n.attr("value_ints")) {
      c.type = DataType::int64;
      c.shape = {static_cast<int64_t>(ks->ints.size())};
      for (auto x : ks->ints) c.v.push_back(static_cast<double>(x));
    } else if (const Attribute* fs = n.attr("value_floats")) {
      c.shape = {static_cast<int64_t>(fs->floats.size())};
      for (auto x : fs->floats) c.v.push_back(x);
    } else {
      fail(i, "a Constant needs value, value_float(s) or value_int(s)");
    }
    set_const(i, std::move(c));
  }
  void set_const(size_t i, Const c, size_t k = 0) {
    Val v;
    v.kind = Val::Kind::constant;
    v.shape = c.shape;
    v.type = c.type;
    v.values = std::move(c);
    set_out(i, std::move(v), k);
  }
  void lower_shape(size_t i) {
    const Val& x = in(i, 0);
    int64_t r = static_cast<int64_t>(x.shape.size());
    int64_t start = attr_i(i, "start", 0), end = attr_i(i, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    Const c;
    c.type = DataType::int64;
    for (int64_t k = start; k < end; ++k) c.v.push_back(static_cast<double>(x.shape[static_cast<size_t>(k)]));
    c.shape = {static_cast<int64_t>(c.v.size())};
    set_const(i, std::move(c));
  }
  // Every input known: evaluate the node (Shape/Gather/Unsqueeze/Concat chains, masks).
  bool try_fold(size_t i) {
    const Node& n = node(i);
    if (!foldable_op(n.op_type)) return false;
    // A float initializer gathered by index is an embedding lookup, never a constant.
    if (n.op_type == "Gather" && in(i, 0).kind == Val::Kind::weight && is_float(in(i, 0).type)) return false;
    std::vector<Const> cs;
    for (const auto& name : n.inputs) {
      if (name.empty()) {
        cs.push_back(Const{{}, {}, DataType::undefined});
        continue;
      }
      auto c = const_of(get(name, &i));
      if (!c) return false;
      cs.push_back(std::move(*c));
    }
    try {
      set_const(i, fold_node(n, cs, g_.opset));
    } catch (const std::invalid_argument& e) {
      fail(i, e.what());
    }
    return true;
  }

  // ---- CNN operators ------------------------------------------------------------------
  void check_no_autopad(size_t i) {
    std::string ap = attr_s(i, "auto_pad", "NOTSET");
    if (ap != "NOTSET" && ap != "VALID") fail(i, "auto_pad " + ap + " is not supported (export with explicit pads)");
  }
  // pads [top, left, bottom, right] -> symmetric (pad_h, pad_w) or an error.
  std::pair<int, int> sym_pads(size_t i) {
    auto p = attr_ints(i, "pads");
    if (p.empty()) return {0, 0};
    if (p.size() != 4) fail(i, "pads must have 4 values for a 2-D window");
    if (p[0] != p[2] || p[1] != p[3]) fail(i, "asymmetric pads are not supported");
    if (p[0] < 0 || p[1] < 0 || p[0] > 65535 || p[1] > 65535) fail(i, "pads out of range");
    return {static_cast<int>(p[0]), static_cast<int>(p[1])};
  }
  std::pair<int, int> pair_attr(size_t i, const char* name, int def) {
    auto v = attr_ints(i, name);
    if (v.empty()) return {def, def};
    if (v.size() != 2) fail(i, std::string(name) + " must have 2 values (2-D only)");
    if (v[0] < 1 || v[1] < 1 || v[0] > 65535 || v[1] > 65535) fail(i, std::string(name) + " out of range");
    return {static_cast<int>(v[0]), static_cast<int>(v[1])};
  }
  static int64_t window_out(int64_t in, int k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

  void lower_conv(size_t i) {
    const Val& x = act(i, 0);
    if (x.shape.size() != 4) fail(i, "only 2-D convolutions on [N, C, H, W] are supported, input is " + shape_str(x.shape));
    check_no_autopad(i);
    const Val& wv = in(i, 1);
    if (wv.shape.size() != 4) fail(i, "weights must be [M, C/group, kH, kW]");
    ConvArgs a;
    a.groups = static_cast<int>(attr_i(i, "group", 1));
    if (a.groups < 1 || x.shape[1] % a.groups) fail(i, "group does not divide the input channels");
    a.filters = static_cast<int>(wv.shape[0]);
    auto k = pair_attr(i, "kernel_shape", 0);
    if (k.first == 0) k = {static_cast<int>(wv.shape[2]), static_cast<int>(wv.shape[3])};
    a.kernel_h = k.first;
    a.kernel_w = k.second;
    auto s = pair_attr(i, "strides", 1);
    a.stride_h = s.first;
    a.stride_w = s.second;
    auto d = pair_attr(i, "dilations", 1);
    if (d.first != d.second) fail(i, "different dilations per axis are not supported");
    a.dilation = d.first;
    auto p = sym_pads(i);
    a.pad_h = p.first;
    a.pad_w = p.second;
    a.bias = has_in(i, 2);
    weight(i, 1, {a.filters, x.shape[1] / a.groups, a.kernel_h, a.kernel_w});
    if (a.bias) weight(i, 2, {a.filters});
    if (a.filters < 1 || a.filters % a.groups) fail(i, "filters not divisible by group");
    int64_t ho = window_out(x.shape[2], a.kernel_h, a.stride_h, a.pad_h, a.dilation);
    int64_t wo = window_out(x.shape[3], a.kernel_w, a.stride_w, a.pad_w, a.dilation);
    if (ho <= 0 || wo <= 0) fail(i, "output would be empty for input " + shape_str(x.shape));
    int t = b_ ? b_->conv(x.tensor, a, nname(i)) : -1;
    set_out(i, activation({x.shape[0], a.filters, ho, wo}, t));
  }

  void lower_batch_norm(size_t i) {
    const Val& x = act(i, 0);
    if (x.shape.size() != 4 && x.shape.size() != 2) fail(i, "input must be [N, C, H, W] or [N, C]");
    int64_t c = x.shape[1];
    weight(i, 1, {c});
    weight(i, 2, {c});
    // Running mean and variance (inputs 3, 4) are statistics, not trainable parameters.
    int t = b_ ? b_->batch_norm(x.tensor, nname(i)) : -1;
    set_out(i, activation(x.shape, t));
    // Training-mode exports also output the updated running statistics; nothing trains on them.
    for (size_t k = 1; k < node(i).outputs.size(); ++k)
      if (!node(i).outputs[k].empty()) {
        Const stat;
        stat.shape = {c};
        stat.v.assign(static_cast<size_t>(c), 0.0);
        set_const(i, stat, k);
      }
  }

  void lower_activation(size_t i, ActivationFn f) {
    const Val& x = act(i, 0);
    int t = b_ ? b_->activation(x.tensor, f, nname(i)) : -1;
    set_out(i, activation(x.shape, t));
  }

  void lower_pool(size_t i) {
    const Val& x = act(i, 0);
    if (x.shape.size() != 4) fail(i, "only 2-D pooling on [N, C, H, W] is supported");
    check_no_autopad(i);
    auto k = pair_attr(i, "kernel_shape", 0);
    if (k.first == 0) fail(i, "kernel_shape is required");
    auto s = pair_attr(i, "strides", 1);
    auto p = sym_pads(i);
    auto d = pair_attr(i, "dilations", 1);
    if (d.first != 1 || d.second != 1) fail(i, "dilated pooling is not supported");
    if (k.first != k.second || s.first != s.second || p.first != p.second)
      fail(i, "only square windows (same kernel, stride and pad on both axes) are supported");
    int64_t ho = window_out(x.shape[2], k.first, s.first, p.first, 1);
    int64_t wo = window_out(x.shape[3], k.first, s.first, p.first, 1);
    if (attr_flag(i, "ceil_mode")) {
      // ceil_mode only matters when a window would start inside the padded input
      auto ceil_out = [&](int64_t n) { return (n + 2 * p.first - k.first + s.first - 1) / s.first + 1; };
      if (ceil_out(x.shape[2]) != ho || ceil_out(x.shape[3]) != wo) fail(i, "ceil_mode 1 changes the output size; not supported");
    }
    if (ho <= 0 || wo <= 0) fail(i, "output would be empty for input " + shape_str(x.shape));
    if (node(i).outputs.size() > 1 && !node(i).outputs[1].empty()) fail(i, "MaxPool indices output is not supported");
    int t = -1;
    if (b_)
      t = node(i).op_type == "MaxPool" ? b_->max_pool(x.tensor, k.first, s.first, p.first, nname(i))
                                       : b_->avg_pool(x.tensor, k.first, s.first, p.first, nname(i));
    set_out(i, activation({x.shape[0], x.shape[1], ho, wo}, t));
  }

  // GlobalAveragePool gives [N, C, 1, 1]; followed by Flatten or a Reshape to [N, C] it is one
  // [N, C] pool, as in the zoo (no reshape ops that the zoo's ResNet does not have).
  void lower_global_pool(size_t i) {
    const Val& x = act(i, 0);
    if (x.shape.size() != 4) fail(i, "input must be [N, C, H, W]");
    Shape flat{x.shape[0], x.shape[1]};
    if (auto c = sole_consumer(node(i).outputs[0])) {
      const Node& n = node(*c);
      bool flatten = n.op_type == "Flatten" && (n.attr("axis") ? n.attr("axis")->i : 1) == 1;
      bool reshape = false;
      if (n.op_type == "Reshape" && n.inputs.size() == 2 && vals_.count(n.inputs[1])) {
        auto tc = const_of(vals_.at(n.inputs[1]));
        reshape = tc && tc->v.size() == 2 && (tc->v[0] == 0 || tc->v[0] == -1 || tc->v[0] == static_cast<double>(x.shape[0])) &&
                  (tc->v[1] == -1 || tc->v[1] == static_cast<double>(x.shape[1]));
      }
      if (flatten || reshape) {
        int t = b_ ? b_->global_avg_pool(x.tensor, nname(i)) : -1;
        absorbed_.insert(*c);
        vals_[n.outputs[0]] = activation(flat, t);
        return;
      }
    }
    int t = -1;
    if (b_) t = b_->reshape(b_->global_avg_pool(x.tensor, nname(i)), {x.shape[0], x.shape[1], 1, 1}, nname(i) + ".4d");
    set_out(i, activation({x.shape[0], x.shape[1], 1, 1}, t));
  }

  void lower_gemm(size_t i) {
    const Val& x = act(i, 0);
    if (x.shape.size() != 2) fail(i, "input must be [M, K]");
    if (attr_i(i, "transA", 0) != 0) fail(i, "transA is not supported");
    if (attr_f(i, "alpha", 1.0f) != 1.0f || attr_f(i, "beta", 1.0f) != 1.0f) fail(i, "alpha and beta must be 1");
    const Val& wv = in(i, 1);
    if (wv.shape.size() != 2) fail(i, "weights must be 2-D");
    bool tb = attr_i(i, "transB", 0) != 0;
    int64_t k = x.shape[1];
    int64_t units = tb ? wv.shape[0] : wv.shape[1];
    weight(i, 1, tb ? Shape{units, k} : Shape{k, units});
    bool bias = has_in(i, 2);
    if (bias) {
      const Val& c = in(i, 2);
      if (c.kind != Val::Kind::weight || (c.shape != Shape{units} && c.shape != Shape{1, units}))
        fail(i, "bias C must be an initializer of shape [" + std::to_string(units) + "]");
      weight(i, 2, c.shape);
    }
    int t = b_ ? b_->dense(x.tensor, units, bias, nname(i)) : -1;
    set_out(i, activation({x.shape[0], units}, t));
  }

  // MatMul with a 2-D initializer is a dense layer; an Add of a [units] initializer right
  // after it (how torch exports nn.Linear on 3-D inputs) is its bias.
  void lower_matmul(size_t i) {
    const Val& a = act(i, 0);
    const Val& bv = in(i, 1);
    if (bv.kind == Val::Kind::activation) return lower_batch_matmul(i);
    if (bv.shape.size() != 2) fail(i, "weights must be 2-D [K, N]");
    if (a.shape.empty() || a.shape.back() != bv.shape[0])
      fail(i, "inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(bv.shape));
    int64_t units = bv.shape[1];
    weight(i, 1, bv.shape);
    std::string out_name = node(i).outputs[0];
    bool bias = false;
    if (auto c = sole_consumer(out_name); c && node(*c).op_type == "Add") {
      std::string other = other_input(*c, out_name);
      auto it = vals_.find(other);
      if (it != vals_.end() && it->second.kind == Val::Kind::weight && it->second.shape == Shape{units}) {
        bias = true;
        size_t add = *c;
        size_t k = node(add).inputs[0] == other ? 0 : 1;
        weight(add, k, {units});
        absorbed_.insert(add);
        out_name = node(add).outputs[0];
      }
    }
    Shape out = a.shape;
    out.back() = units;
    int t = b_ ? b_->dense(a.tensor, units, bias, nname(i)) : -1;
    Val v = activation(out, t);
    if (b_ && b_->shape(t) != out) throw InternalError("dense shape");
    vals_[out_name] = v;
  }

  // Activation x activation ([..., M, K] x [..., K, N], the same leading dims): attention's
  // QK^T and PV.
  void lower_batch_matmul(size_t i) {
    const Val& a = act(i, 0);
    const Val& c = act(i, 1);
    if (a.shape.size() < 3 || a.shape.size() != c.shape.size())
      fail(i, "batched product needs two tensors of the same rank >= 3, got " + shape_str(a.shape) + " x " +
                  shape_str(c.shape) + " (no broadcasting)");
    size_t r = a.shape.size();
    for (size_t k = 0; k + 2 < r; ++k)
      if (a.shape[k] != c.shape[k]) fail(i, "leading dimensions differ: " + shape_str(a.shape) + " x " + shape_str(c.shape));
    if (a.shape[r - 1] != c.shape[r - 2]) fail(i, "inner dimensions differ: " + shape_str(a.shape) + " x " + shape_str(c.shape));
    Shape out = a.shape;
    out[r - 1] = c.shape[r - 1];
    int t = b_ ? b_->batch_matmul(a.tensor, c.tensor, false, false, nname(i)) : -1;
    set_out(i, activation(out, t));
  }
  void lower_transpose(size_t i) {
    const Val& x = act(i, 0);
    auto perm = attr_ints(i, "perm");
    size_t r = x.shape.size();
    if (perm.empty())
      for (size_t k = r; k-- > 0;) perm.push_back(static_cast<int64_t>(k));  // default: reverse the axes
    if (perm.size() != r) fail(i, "perm has " + std::to_string(perm.size()) + " axes for a rank-" + std::to_string(r) + " input");
    std::vector<bool> seen(r, false);
    bool ident = true;
    Shape out;
    std::vector<int> p;
    for (size_t k = 0; k < r; ++k) {
      if (perm[k] < 0 || perm[k] >= static_cast<int64_t>(r) || seen[static_cast<size_t>(perm[k])]) fail(i, "perm is not a permutation");
      seen[static_cast<size_t>(perm[k])] = true;
      ident = ident && perm[k] == static_cast<int64_t>(k);
      out.push_back(x.shape[static_cast<size_t>(perm[k])]);
      p.push_back(static_cast<int>(perm[k]));
    }
    if (ident) return set_out(i, x);
    int t = b_ ? b_->transpose(x.tensor, p, nname(i)) : -1;
    set_out(i, activation(out, t));
  }

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
  void find_attention() {
    for (size_t sm : g_.order) {
      if (node(sm).op_type != "Softmax" || !sole_use(sm) || node(sm).inputs.size() != 1) continue;
      AttentionMatch m;
      m.softmax = sm;
      std::vector<size_t> chain{sm};
      std::string cur = node(sm).inputs[0];
      auto p = producer_of(cur);
      if (p && sole_use(*p) && (node(*p).op_type == "Where" || node(*p).op_type == "Add")) {
        m.mask = *p;
        chain.push_back(*p);
        const Node& mn = node(*p);
        if (mn.op_type == "Add") {
          if (mn.inputs.size() != 2) continue;
          auto a0 = producer_of(mn.inputs[0]);
          bool scores0 = a0 && (node(*a0).op_type == "Div" || node(*a0).op_type == "Mul" || node(*a0).op_type == "MatMul");
          m.mask_x = scores0 ? 0 : 1;
          cur = mn.inputs[m.mask_x];
        } else {
          if (mn.inputs.size() != 3) continue;
          cur = mn.inputs[2];
        }
        p = producer_of(cur);
      }
      if (p && sole_use(*p) && node(*p).inputs.size() == 2 && (node(*p).op_type == "Div" || node(*p).op_type == "Mul")) {
        m.scale = *p;
        chain.push_back(*p);
        cur = node(*p).inputs[0];
        p = producer_of(cur);
      }
      if (!p || node(*p).op_type != "MatMul" || !sole_use(*p) || node(*p).inputs.size() != 2) continue;
      m.qk = *p;
      chain.push_back(*p);
      auto pv = sole_consumer(node(sm).outputs[0]);
      if (!pv || node(*pv).op_type != "MatMul" || node(*pv).inputs.size() != 2 ||
          node(*pv).inputs[0] != node(sm).outputs[0] || !sole_use(*pv))
        continue;
      m.pv = *pv;
      chain.push_back(*pv);
      auto ot = sole_consumer(node(*pv).outputs[0]);
      if (!ot || node(*ot).op_type != "Transpose" || !sole_use(*ot) || node(*ot).inputs.size() != 1) continue;
      auto operm = node(*ot).attr("perm");
      if (!operm || operm->ints != std::vector<int64_t>{0, 2, 1, 3}) continue;
      chain.push_back(*ot);
      auto y = sole_consumer(node(*ot).outputs[0]);
      if (!y || node(*y).op_type != "Reshape" || node(*y).inputs.size() != 2) continue;
      auto qr = heads_split(node(m.qk).inputs[0], {0, 2, 1, 3}, chain);
      auto kr = heads_split(node(m.qk).inputs[1], {0, 2, 3, 1}, chain);
      auto vr = heads_split(node(m.pv).inputs[1], {0, 2, 1, 3}, chain);
      if (!qr || !kr || !vr) continue;
      m.qr = *qr;
      m.kr = *kr;
      m.vr = *vr;
      std::set<size_t> in_chain(chain.begin(), chain.end());
      if (in_chain.size() != chain.size()) continue;
      for (size_t n : g_.order)  // the walk order, for the fallback
        if (in_chain.count(n)) m.chain.push_back(n);
      for (size_t n : chain) absorbed_.insert(n);
      attention_[*y] = m;
    }
  }
  // Masked entries of a constant causal mask are exactly those above the diagonal.
  bool causal_mask(const AttentionMatch& m, int64_t t) const {
    const Node& n = node(*m.mask);
    std::optional<Const> c;
    bool where = n.op_type == "Where";
    if (where) {
      auto fill = scalar_of(get(n.inputs[1], m.mask ? &*m.mask : nullptr));
      if (!fill || !(*fill < -1e4)) return false;
      c = const_of(get(n.inputs[0], &*m.mask));
    } else {
      c = const_of(get(n.inputs[1 - m.mask_x], &*m.mask));
    }
    if (!c || c->shape.size() < 2 || c->shape[c->shape.size() - 1] != t || c->shape[c->shape.size() - 2] != t) return false;
    int64_t outer = c->numel() / (t * t);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t r = 0; r < t; ++r)
        for (int64_t k = 0; k < t; ++k) {
          double v = c->v[static_cast<size_t>((o * t + r) * t + k)];
          bool masked = where ? v != 0 : v < -1e4;
          if (!where && !masked && v != 0) return false;
          if (masked != (k > r)) return false;
        }
    return true;
  }
  bool emit_attention(size_t y, const AttentionMatch& m) {
    const Val* q = &get(node(m.qr).inputs[0], &m.qr);
    const Val* k = &get(node(m.kr).inputs[0], &m.kr);
    const Val* v = &get(node(m.vr).inputs[0], &m.vr);
    for (const Val* x : {q, k, v})
      if (x->kind != Val::Kind::activation || x->shape.size() != 3) return false;
    if (k->shape != v->shape || q->shape[0] != k->shape[0] || q->shape[2] != k->shape[2]) return false;
    auto split = [&](size_t r, const Val& x) -> std::optional<Shape> {
      auto c = const_of(get(node(r).inputs[1], &r));
      if (!c) return std::nullopt;
      std::vector<int64_t> target;
      for (double d : c->v) target.push_back(static_cast<int64_t>(d));
      Shape s = reshape_target(r, x.shape, target, attr_flag(r, "allowzero"));
      if (s.size() != 4 || s[0] != x.shape[0] || s[1] != x.shape[1] || s[2] * s[3] != x.shape[2]) return std::nullopt;
      return s;
    };
    auto qs = split(m.qr, *q), ks = split(m.kr, *k), vs = split(m.vr, *v);
    if (!qs || !ks || !vs || (*qs)[2] != (*ks)[2] || (*ks)[2] != (*vs)[2]) return false;
    const int64_t heads = (*qs)[2], dh = (*qs)[3];
    if (m.scale) {  // the fused op scales by 1/sqrt(dh); any other factor is not this op
      const Node& sn = node(*m.scale);
      auto s = scalar_of(get(sn.inputs[1], &*m.scale));
      if (!s) return false;
      double alpha = sn.op_type == "Div" ? 1.0 / *s : *s;
      if (std::fabs(alpha * std::sqrt(static_cast<double>(dh)) - 1) > 1e-3) return false;
    } else {
      return false;
    }
    bool causal = false;
    if (m.mask) {
      if (q->shape[1] != k->shape[1] || !causal_mask(m, q->shape[1])) return false;
      causal = true;
    }
    auto yc = const_of(get(node(y).inputs[1], &y));
    if (!yc) return false;
    std::vector<int64_t> target;
    for (double d : yc->v) target.push_back(static_cast<int64_t>(d));
    Shape ys = reshape_target(y, {q->shape[0], q->shape[1], heads, dh}, target, attr_flag(y, "allowzero"));
    if (ys != q->shape) return false;
    int t = b_ ? b_->attention(q->tensor, k->tensor, v->tensor, heads, causal, nname(m.qk)) : -1;
    set_out(y, activation(q->shape, t));
    return true;
  }

  // ---- Transformer operators and patterns ---------------------------------------------
  bool last_axis(int64_t axis, size_t rank) const {
    return axis == -1 || axis == static_cast<int64_t>(rank) - 1;
  }
  void lower_layer_norm(size_t i) {
    const Val& x = act(i, 0);
    if (!last_axis(attr_i(i, "axis", -1), x.shape.size())) fail(i, "only normalisation over the last axis is supported");
    if (!has_in(i, 2)) fail(i, "a LayerNormalization without bias B is not supported");
    int64_t d = x.shape.back();
    weight(i, 1, {d});
    weight(i, 2, {d});
    for (size_t k = 1; k < node(i).outputs.size(); ++k)
      if (!node(i).outputs[k].empty()) fail(i, "the Mean and InvStdDev outputs are not supported");
    double eps = attr_f(i, "epsilon", 1e-5f);
    int t = b_ ? b_->layer_norm(x.tensor, nname(i), eps) : -1;
    set_out(i, activation(x.shape, t));
  }
  void lower_softmax(size_t i) {
    const Val& x = act(i, 0);
    if (!last_axis(attr_i(i, "axis", -1), x.shape.size())) fail(i, "only softmax over the last axis is supported");
    int t = b_ ? b_->softmax(x.tensor, nname(i)) : -1;
    set_out(i, activation(x.shape, t));
  }

  // A constant mask applied right before a last-axis Softmax (Where(mask, -inf, x) as torch's
  // masked_fill exports it, or Add of a 0 / -inf constant) is part of that softmax: the
  // masked entries get probability 0, the work is the softmax's.
  void lower_masked_softmax(size_t i, size_t x_index) {
    const Node& n = node(i);
    const Val& x = act(i, x_index);
    auto sm = sole_consumer(n.outputs[0]);
    bool ok = sm && node(*sm).op_type == "Softmax" && last_axis(attr_i(*sm, "axis", -1), x.shape.size());
    if (ok && n.op_type == "Where") {
      auto fill = scalar_of(in(i, 1));
      auto cond = const_of(in(i, 0));
      ok = fill && *fill < -1e4 && cond.has_value();
      if (ok) broadcast_check(i, cond->shape, x.shape);
    } else if (ok) {  // Add
      auto mask = const_of(in(i, x_index == 0 ? 1 : 0));
      ok = mask.has_value();
      if (ok)
        for (double v : mask->v) ok = ok && (v == 0 || v < -1e4);
      if (ok) broadcast_check(i, mask->shape, x.shape);
    }
    if (!ok)
      fail(i, n.op_type == "Where" ? "Where is supported only as a constant mask (fill < -1e4) right before a Softmax"
                                   : "adding a constant to a computed tensor is supported only as a 0/-inf mask "
                                     "right before a Softmax");
    absorbed_.insert(*sm);
    int t = b_ ? b_->softmax(x.tensor, nname(*sm)) : -1;
    vals_[node(*sm).outputs[0]] = activation(x.shape, t);
  }
  void broadcast_check(size_t i, const Shape& small, const Shape& big) {
    try {
      if (broadcast_shape(small, big) != big) fail(i, "mask " + shape_str(small) + " is larger than " + shape_str(big));
    } catch (const std::invalid_argument& e) {
      fail(i, e.what());
    }
  }

  // GELU as torch exports F.gelu: x / sqrt(2) -> Erf -> + 1 -> x * . -> * 0.5. Matched at the
  // Div (or Mul by 1/sqrt(2)); returns false when the chain is something else.
  bool try_gelu(size_t i, const Val& x, double c) {
    const std::string& op = node(i).op_type;
    const double r2 = std::sqrt(2.0);
    if (!((op == "Div" && std::fabs(c - r2) < 1e-3) || (op == "Mul" && std::fabs(c - 1 / r2) < 1e-3))) return false;
    const std::string& xname =
        get(node(i).inputs[0], &i).kind == Val::Kind::activation ? node(i).inputs[0] : node(i).inputs[1];
    auto is = [&](std::optional<size_t> n, const char* t) { return is_op(n, t); };
    auto erf = sole_consumer(node(i).outputs[0]);
    if (!is(erf, "Erf")) return false;
    auto add = sole_consumer(node(*erf).outputs[0]);
    if (!is(add, "Add")) return false;
    auto one = vals_.find(other_input(*add, node(*erf).outputs[0]));
    if (one == vals_.end() || scalar_of(one->second) != 1.0) return false;
    auto mul = sole_consumer(node(*add).outputs[0]);
    if (!is(mul, "Mul")) return false;
    std::string xin = other_input(*mul, node(*add).outputs[0]);
    if (xin != xname) return false;
    auto half = sole_consumer(node(*mul).outputs[0]);
    if (!is(half, "Mul")) return false;
    auto h = vals_.find(other_input(*half, node(*mul).outputs[0]));
    if (h == vals_.end() || scalar_of(h->second) != 0.5) return false;
    for (size_t n : {*erf, *add, *mul, *half}) absorbed_.insert(n);
    int t = b_ ? b_->activation(x.tensor, ActivationFn::gelu, nname(i)) : -1;
    vals_[node(*half).outputs[0]] = activation(x.shape, t);
    return true;
  }

  // LayerNorm as an exporter may spell it: mean = ReduceMean(x); d = x - mean;
  // var = ReduceMean(d^2); y = d / sqrt(var + eps) * gamma + beta. Matched at the first
  // ReduceMean; a ReduceMean outside this pattern is not supported.
  void lower_decomposed_layer_norm(size_t i) {
    const Node& rm = node(i);
    const Val& x = act(i, 0);
    const std::string why = "ReduceMean is supported only as the start of a decomposed LayerNormalization "
                            "(ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta)";
    auto axes_ok = [&](size_t n) {
      std::vector<int64_t> axes = has_in(n, 1) ? ints_of(n, 1) : attr_ints(n, "axes");
      return axes.size() == 1 && last_axis(axes[0], x.shape.size()) && attr_i(n, "keepdims", 1) == 1;
    };
    auto is = [&](std::optional<size_t> n, const char* t) { return is_op(n, t); };
    if (!axes_ok(i)) fail(i, why);
    auto sub = sole_consumer(rm.outputs[0]);
    if (!is(sub, "Sub") || node(*sub).inputs[0] != rm.inputs[0] || node(*sub).inputs[1] != rm.outputs[0]) fail(i, why);
    const std::string d = node(*sub).outputs[0];
    auto users = consumers_.find(d);
    if (users == consumers_.end() || users->second.size() != 2) fail(i, why);
    std::optional<size_t> pw, dv;
    for (size_t u : users->second) (node(u).op_type == "Pow" ? pw : dv) = u;
    if (!is(pw, "Pow") || !is(dv, "Div") || node(*dv).inputs[0] != d) fail(i, why);
    if (scalar_of(get(node(*pw).inputs[1], &*pw)) != 2.0) fail(i, why);
    auto rm2 = sole_consumer(node(*pw).outputs[0]);
    if (!is(rm2, "ReduceMean") || !axes_ok(*rm2)) fail(i, why);
    auto add = sole_consumer(node(*rm2).outputs[0]);
    if (!is(add, "Add")) fail(i, why);
    auto eps = scalar_of(get(other_input(*add, node(*rm2).outputs[0]), &*add));
    if (!eps || !(*eps > 0)) fail(i, why);
    auto sq = sole_consumer(node(*add).outputs[0]);
    if (!is(sq, "Sqrt") || sole_consumer(node(*sq).outputs[0]) != dv) fail(i, why);
    auto mul = sole_consumer(node(*dv).outputs[0]);
    if (!is(mul, "Mul")) fail(i, why);
    auto bias = sole_consumer(node(*mul).outputs[0]);
    if (!is(bias, "Add")) fail(i, why);
    int64_t dim = x.shape.back();
    const std::string& g = other_input(*mul, node(*dv).outputs[0]);
    const std::string& be = other_input(*bias, node(*mul).outputs[0]);
    weight(*mul, node(*mul).inputs[0] == g ? 0 : 1, {dim});
    weight(*bias, node(*bias).inputs[0] == be ? 0 : 1, {dim});
    for (auto n : {*sub, *pw, *rm2, *add, *sq, *dv, *mul, *bias}) absorbed_.insert(n);
    int t = b_ ? b_->layer_norm(x.tensor, nname(i), *eps) : -1;
    vals_[node(*bias).outputs[0]] = activation(x.shape, t);
  }

  void lower_binary(size_t i) {
    const std::string& op = node(i).op_type;
    const Val& a = in(i, 0);
    const Val& c = in(i, 1);
    if (op == "Div" && a.kind == Val::Kind::activation && c.kind == Val::Kind::activation)
      fail(i, "division of two computed tensors is not supported");
    if (op != "Add" && (a.kind == Val::Kind::activation) != (c.kind == Val::Kind::activation)) {
      // By a scalar constant: the GELU pattern, else a scale (attention's 1/sqrt(d)).
      const Val& x = a.kind == Val::Kind::activation ? a : c;
      auto s = scalar_of(a.kind == Val::Kind::activation ? c : a);
      if (s && !(op == "Div" && a.kind != Val::Kind::activation)) {
        if (try_gelu(i, x, *s)) return;
        double alpha = op == "Div" ? 1.0 / *s : *s;
        if (!std::isfinite(alpha)) fail(i, "scale by a non-finite constant");
        int t = b_ ? b_->scale(x.tensor, alpha, nname(i)) : -1;
        return set_out(i, activation(x.shape, t));
      }
    }
    if (op == "Add" && (a.kind == Val::Kind::activation) != (c.kind == Val::Kind::activation))
      return lower_masked_softmax(i, a.kind == Val::Kind::activation ? 0 : 1);
    if (a.kind == Val::Kind::activation && c.kind == Val::Kind::activation) {
      if (a.shape != c.shape)
        fail(i, "broadcast of " + shape_str(a.shape) + " with " + shape_str(c.shape) + " is not supported (same shapes only)");
      int t = -1;
      if (b_) t = op == "Add" ? b_->add({a.tensor, c.tensor}, nname(i)) : b_->mul(a.tensor, c.tensor, nname(i));
      return set_out(i, activation(a.shape, t));
    }
    fail(i, "broadcast of a computed tensor " + shape_str(a.kind == Val::Kind::activation ? a.shape : c.shape) +
                " with a constant or initializer " + shape_str(a.kind == Val::Kind::activation ? c.shape : a.shape) +
                " is not supported");
  }

  void lower_concat(size_t i) {
    std::vector<int> ts;
    const Val& first = act(i, 0);
    int64_t rank = static_cast<int64_t>(first.shape.size());
    int64_t axis = attr_i(i, "axis", 1);
    if (axis < -rank || axis >= rank) fail(i, "axis out of range");
    if (axis < 0) axis += rank;
    Shape out = first.shape;
    out[static_cast<size_t>(axis)] = 0;
    for (size_t k = 0; k < node(i).inputs.size(); ++k) {
      const Val& v = act(i, k);
      if (static_cast<int64_t>(v.shape.size()) != rank) fail(i, "inputs of different ranks");
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && v.shape[static_cast<size_t>(d)] != first.shape[static_cast<size_t>(d)])
          fail(i, "inputs differ outside the concat axis");
      out[static_cast<size_t>(axis)] += v.shape[static_cast<size_t>(axis)];
      ts.push_back(v.tensor);
    }
    int t = b_ ? b_->concat(ts, static_cast<int>(axis), nname(i)) : -1;
    set_out(i, activation(out, t));
  }

  Shape reshape_target(size_t i, const Shape& from, const std::vector<int64_t>& target, bool allowzero) {
    Shape s;
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < target.size(); ++k) {
      int64_t t = target[k];
      if (t == 0 && !allowzero) {
        if (k >= from.size()) fail(i, "0 in the target shape past the input's rank");
        t = from[k];
      }
      if (t == -1) {
        if (infer >= 0) fail(i, "two -1 in the target shape");
        infer = static_cast<int64_t>(k);
        s.push_back(1);
        continue;
      }
      if (t < 0) fail(i, "negative dimension in the target shape");
      s.push_back(t);
      if (__builtin_mul_overflow(known, t, &known)) fail(i, "target shape too large");
    }
    int64_t n = numel(from);
    if (infer >= 0) {
      if (known == 0 || n % known) fail(i, "cannot infer -1 of the target shape");
      s[static_cast<size_t>(infer)] = n / known;
    }
    if (numel(s) != n)
      fail(i, "target shape " + shape_str(s) + " does not hold the input " + shape_str(from) +
                  " (a batch size fixed at export? export with a dynamic batch axis)");
    return s;
  }
  void emit_reshape(size_t i, const Val& x, const Shape& s, size_t out = 0) {
    if (s == x.shape) return set_out(i, x, out);  // a no-op reshape adds no op
    int t = b_ ? b_->reshape(x.tensor, s, nname(i)) : -1;
    set_out(i, activation(s, t, x.type), out);
  }
  void lower_reshape(size_t i) {
    const Val& x = act(i, 0);
    emit_reshape(i, x, reshape_target(i, x.shape, ints_of(i, 1), attr_flag(i, "allowzero")));
  }
  void lower_flatten(size_t i) {
    const Val& x = act(i, 0);
    int64_t r = static_cast<int64_t>(x.shape.size());
    int64_t axis = attr_i(i, "axis", 1);
    if (axis < -r || axis > r) fail(i, "axis out of range");
    if (axis < 0) axis += r;
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < r; ++k) (k < axis ? outer : inner) *= x.shape[static_cast<size_t>(k)];
    emit_reshape(i, x, {outer, inner});
  }
  void lower_squeeze(size_t i) {
    const Val& x = act(i, 0);
    std::vector<int64_t> axes = has_in(i, 1) ? ints_of(i, 1) : attr_ints(i, "axes");
    Shape s = x.shape;
    int64_t rank = static_cast<int64_t>(s.size());
    if (node(i).op_type == "Unsqueeze") {
      int64_t out_rank = rank + static_cast<int64_t>(axes.size());
      for (auto& a : axes) {
        if (a < -out_rank || a >= out_rank) fail(i, "axis out of range");
        if (a < 0) a += out_rank;
      }
      std::sort(axes.begin(), axes.end());
      for (auto a : axes) s.insert(s.begin() + a, 1);
    } else {
      Shape kept;
      for (int64_t k = 0; k < rank; ++k) {
        bool drop = axes.empty() && s[static_cast<size_t>(k)] == 1;
        for (auto a : axes)
          if ((a < 0 ? a + rank : a) == k) drop = true;
        if (drop && s[static_cast<size_t>(k)] != 1) fail(i, "squeezed axis is not 1");
        if (!drop) kept.push_back(s[static_cast<size_t>(k)]);
      }
      s = kept;
    }
    emit_reshape(i, x, s);
  }

  // Gather of rows of a float table: an embedding. Indices from the graph's inputs feed it
  // directly; constant indices (position ids) become a host-fed input of their own, [N, T].
  void lower_gather(size_t i) {
    const Val& table = in(i, 0);
    if (table.kind != Val::Kind::weight || table.shape.size() != 2 || attr_i(i, "axis", 0) != 0)
      fail(i, "only embedding lookups (rows of a 2-D initializer by integer ids) are supported on computed tensors");
    const Val& ids = in(i, 1);
    int64_t vocab = table.shape[0], dim = table.shape[1];
    weight(i, 0, table.shape);
    Shape idshape = ids.shape;
    int id_tensor = ids.tensor;
    if (ids.kind != Val::Kind::activation) {
      // [T] or [1, T] constant ids (position ids): fed by the host for every sample.
      int64_t t = numel(ids.shape);
      if (!(ids.shape.size() == 1 || (ids.shape.size() == 2 && ids.shape[0] == 1)))
        fail(i, "constant indices must be [T] or [1, T] (position ids), got " + shape_str(ids.shape));
      std::string name = nname(i) + ".indices";
      if (!b_) {
        InputPlan p;
        p.kind = InputPlan::Kind::sequence;
        p.name = name;
        p.shape = {batch_, t};
        result_.inputs.push_back(p);
      } else {
        id_tensor = synth_tensors_.at(name);
      }
      idshape = {batch_, t};
    } else if (!is_integer(ids.type)) {
      fail(i, "indices must be integers");
    }
    Shape out = idshape;
    out.push_back(dim);
    int t = b_ ? b_->embedding(id_tensor, vocab, dim, nname(i)) : -1;
    set_out(i, activation(out, t));
  }

  void lower_dropout(size_t i) {
    const Val& x = act(i, 0);
    // Eval-mode exports keep Dropout only as an identity; a training-mode export marks it
    // with a constant training_mode input, and then it is a real dropout of `ratio`.
    bool training = false;
    double ratio = 0.5;
    if (has_in(i, 1)) {
      auto r = scalar_of(in(i, 1));
      if (!r) fail(i, "ratio must be a constant");
      ratio = *r;
    }
    if (has_in(i, 2)) {
      auto tm = scalar_of(in(i, 2));
      if (!tm) fail(i, "training_mode must be a constant");
      training = *tm != 0;
    }
    if (!training || ratio == 0) {
      set_out(i, x);
    } else {
      if (!(ratio > 0 && ratio < 1)) fail(i, "ratio must be in [0, 1)");
      int t = b_ ? b_->dropout(x.tensor, ratio, nname(i)) : -1;
      set_out(i, activation(x.shape, t));
    }
    if (node(i).outputs.size() > 1 && !node(i).outputs[1].empty()) {
      Const mask;
      mask.shape = x.shape;
      mask.type = DataType::boolean;
      Val v;
      v.kind = Val::Kind::constant;  // nothing downstream may use the mask's values
      v.shape = x.shape;
      v.type = DataType::boolean;
      set_out(i, v, 1);
    }
  }

  // Pad with zero pads (torch exports AvgPool2d that way) is an identity; real padding is not.
  void lower_pad(size_t i) {
    const Val& x = act(i, 0);
    std::string mode = attr_s(i, "mode", "constant");
    std::vector<int64_t> pads = has_in(i, 1) ? ints_of(i, 1) : attr_ints(i, "pads");
    for (auto p : pads)
      if (p != 0) fail(i, "non-zero padding is not supported as a separate op (pads belong on Conv/Pool)");
    set_out(i, x);
  }
};

}  // namespace

int declare_training_labels(ModelBuilder& b, const Shape& logits, const std::string& file) {
  if (logits.size() == 2) return b.labels();
  if (logits.size() == 3) return b.labels(logits[1]);
  throw UserError(file + ": the graph output " + shape_str(logits) +
                  " is not logits [N, C] or [N, T, V]; a training loss cannot be attached");
}

void append_training_loss(ModelBuilder& b, int logits, int labels) { b.softmax_cross_entropy(logits, labels, "loss"); }

LoweringResult lower_graph(const CheckedGraph& g, int64_t batch, ModelBuilder* b, const LoweringResult* plan,
                           bool declare_labels_for_training) {
  if (b && !plan) throw InternalError("onnx: the emit pass needs the plan");
  Lowerer l(g, batch, b);
  return l.run(plan, declare_labels_for_training);
}

}  // namespace xpusim::onnx
