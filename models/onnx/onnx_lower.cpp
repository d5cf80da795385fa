// The walk over a checked ONNX graph: values, host inputs, dispatch through the operator
// table (onnx_ops.cpp), constants and folding; and lower_graph, the entry point.
#include "models/onnx/onnx_lowerer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/onnx/proto_wire.hpp"

namespace xpusim::onnx {

LoweringResult Lowerer::run(const LoweringResult* plan, bool labels) {
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

void Lowerer::set_out(size_t i, Val v, size_t k) {
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

// Values of a constant (or of a small initializer read as one); nullopt for activations.
std::optional<Const> Lowerer::const_of(const Val& v) const {
  if (v.kind == Val::Kind::activation) return std::nullopt;
  if (v.values) return v.values;
  if (v.kind == Val::Kind::weight) {
    if (!v.init || numel(v.shape) > kMaxFoldElements) return std::nullopt;
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

std::vector<int64_t> Lowerer::ints_of(size_t i, size_t k) const {
  auto c = const_of(in(i, k));
  if (!c) fail(i, "input '" + node(i).inputs[k] + "' must be a constant (or computable from shapes)");
  std::vector<int64_t> out;
  for (double d : c->v) out.push_back(saturated_int(d));
  return out;
}

// A weight input: an initializer (or Identity alias) of the expected shape, used once.
const Val& Lowerer::weight(size_t i, size_t k, const Shape& expect) {
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

void Lowerer::plan_host_inputs() {
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

void Lowerer::lower(size_t i) {
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
  const Handler* h = handler(node(i).op_type);
  if (!h) fail(i, "operator not supported (docs/onnx.md lists the supported operators)");
  if (try_derive_weight(i) || try_fold(i)) return;
  (*h)(*this, i);
}

void Lowerer::lower_constant(size_t i) {
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

void Lowerer::set_const(size_t i, Const c, size_t k) {
  Val v;
  v.kind = Val::Kind::constant;
  v.shape = c.shape;
  v.type = c.type;
  v.values = std::move(c);
  set_out(i, std::move(v), k);
}

void Lowerer::lower_shape(size_t i) {
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
// An alias of a weight is a parameter of its own (torch de-duplicates equal initializers
// behind Identity nodes; docs/onnx.md, "Parameters").
void Lowerer::lower_identity(size_t i) {
  Val v = in(i, 0);
  if (v.kind == Val::Kind::weight) v.param = node(i).outputs[0];
  set_out(i, v);
}

// A weight rearranged before use (torch's exports transpose nn.MultiheadAttention's
// in_proj_weight and nn.Linear's weight, reshape or slice others): the result is a weight of
// the new shape. A view of the whole initializer stays that parameter (two uses are tied
// weights); a slice of it is a parameter of its own.
bool Lowerer::try_derive_weight(size_t i) {
  static const std::set<std::string> ops = {"Transpose", "Reshape", "Slice", "Squeeze", "Unsqueeze", "Flatten", "Cast"};
  const Node& n = node(i);
  if (!ops.count(n.op_type) || !has_in(i, 0)) return false;
  const Val& w = in(i, 0);
  // A scalar stays a constant (an epsilon or a GELU factor stored as an initializer).
  if (w.kind != Val::Kind::weight || !is_float(w.type) || numel(w.shape) == 1) return false;
  const Shape shape = view_shape(i, w.shape, false);
  // Every op but Slice keeps every element; a Slice that changes the shape takes a part.
  const bool whole = n.op_type != "Slice" || shape == w.shape;
  if (w.table_rows && !whole) fail(i, "a part of gathered table rows is not supported");
  Val v;
  v.kind = Val::Kind::weight;
  v.shape = shape;
  v.type = w.type;
  v.init = nullptr;
  v.table_rows = w.table_rows;
  v.table_width = w.table_width;
  // A buffer rearranged before a comparison (GPT's causal mask sliced to the length) is
  // also a constant: its values come along when the initializer is small enough to read.
  if (auto c = numel(w.shape) <= kMaxBufferElements ? const_of(w) : std::nullopt) {
    std::vector<Const> cs{std::move(*c)};
    for (size_t k = 1; k < n.inputs.size(); ++k) {
      if (n.inputs[k].empty()) {
        cs.push_back(Const{{}, {}, DataType::undefined});
        continue;
      }
      auto ck = const_of(get(n.inputs[k], &i));
      if (!ck) fail(i, "input '" + n.inputs[k] + "' must be a constant when rearranging weights");
      cs.push_back(std::move(*ck));
    }
    try {
      v.values = fold_node(n, cs, g_.opset);
    } catch (const std::invalid_argument& e) {
      fail(i, e.what());
    }
  }
  v.param = whole ? w.param : n.outputs[0];
  set_out(i, std::move(v));
  return true;
}

// A float parameter used as an operand of a computed tensor `like` [N, ...]: the position
// embedding of ViT, ConvNeXt's layer scale, a class token, a relative position bias. It
// becomes an embedding lookup by host-fed ids, reshaped to the parameter's shape right-aligned
// to like's rank with dim 0 like's (the batch, or a multiple of it: Swin's windows, N x nW):
// a whole parameter is one row (vocab 1, width its size) per sample and window; gathered
// table rows (Val::table_rows) are those rows of the table. Either way the parameter counts
// once and its gradient is the lookup's scatter-add.
Val Lowerer::param_tensor(size_t i, size_t k, const Shape& like) {
  const Val& w = in(i, k);
  Shape s = w.shape;
  if (s.size() > like.size()) fail(i, "parameter " + shape_str(s) + " has a higher rank than " + shape_str(like));
  s.insert(s.begin(), like.size() - s.size(), 1);
  if (s.empty() || s[0] != 1) fail(i, "parameter " + shape_str(w.shape) + " is not broadcast over the batch");
  if (like[0] % batch_ != 0)
    fail(i, "dim 0 of " + shape_str(like) + " is not a multiple of the batch " + std::to_string(batch_));
  const int64_t copies = like[0] / batch_;
  const int64_t size = numel(w.shape);
  const int64_t vocab = w.table_rows ? w.table_rows : 1, width = w.table_rows ? w.table_width : size;
  if (w.table_rows) {
    // The table itself is the parameter: checked (and marked used) at its own shape.
    if (b_ && !used_params_.insert(w.param).second)
      fail(i, "initializer '" + w.param + "' is the weights of two nodes (tied weights are not supported)");
  } else {
    weight(i, k, w.shape);
  }
  s[0] = like[0];
  const std::string name = nname(i) + ".param_ids";
  int t = -1;
  if (!b_) {
    InputPlan p;
    p.kind = InputPlan::Kind::sequence;
    p.name = name;
    p.shape = {batch_, copies * (size / width)};
    result_.inputs.push_back(p);
  } else {
    int e = b_->embedding(synth_tensors_.at(name), vocab, width, nname(i) + ".param");
    t = b_->reshape(e, s, nname(i) + ".param_shape");
  }
  return activation(s, t);
}

bool Lowerer::try_fold(size_t i) {
  const Node& n = node(i);
  if (!foldable_op(n.op_type) || n.op_type == "Identity") return false;
  // A parameter expanded over the batch (ViT's class token) is a parameter, not a constant.
  if (n.op_type == "Expand" && in(i, 0).kind == Val::Kind::weight && is_float(in(i, 0).type) &&
      numel(in(i, 0).shape) > 1)
    return false;
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
