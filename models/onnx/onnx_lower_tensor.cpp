// Lowering of the operators that only rearrange data: Concat, Reshape/Flatten/Squeeze/
// Unsqueeze, Transpose, Gather (embeddings), Dropout.
#include "models/onnx/onnx_lowerer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xpusim::onnx {

void Lowerer::lower_transpose(size_t i) {
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

void Lowerer::lower_concat(size_t i) {
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

Shape Lowerer::reshape_target(size_t i, const Shape& from, const std::vector<int64_t>& target, bool allowzero) {
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

void Lowerer::emit_reshape(size_t i, const Val& x, const Shape& s, size_t out) {
  if (s == x.shape) return set_out(i, x, out);  // a no-op reshape adds no op
  int t = b_ ? b_->reshape(x.tensor, s, nname(i)) : -1;
  set_out(i, activation(s, t, x.type), out);
}

void Lowerer::lower_reshape(size_t i) {
  const Val& x = act(i, 0);
  emit_reshape(i, x, reshape_target(i, x.shape, ints_of(i, 1), attr_flag(i, "allowzero")));
}

void Lowerer::lower_flatten(size_t i) {
  const Val& x = act(i, 0);
  emit_reshape(i, x, view_shape(i, x.shape));
}

void Lowerer::lower_squeeze(size_t i) {
  const Val& x = act(i, 0);
  emit_reshape(i, x, view_shape(i, x.shape));
}

// The output shape of a view-like op (Flatten, Squeeze, Unsqueeze, Reshape, Transpose,
// Slice, Cast) on an input of shape `in`, from its attributes and constant inputs: shared by
// the lowering of computed tensors and of rearranged weights (try_derive_weight).
Shape Lowerer::view_shape(size_t i, const Shape& in, bool batched) {
  const std::string& op = node(i).op_type;
  const int64_t rank = static_cast<int64_t>(in.size());
  if (op == "Flatten") {
    int64_t axis = attr_i(i, "axis", 1);
    if (axis < -rank || axis > rank) fail(i, "axis out of range");
    if (axis < 0) axis += rank;
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < rank; ++k) (k < axis ? outer : inner) *= in[static_cast<size_t>(k)];
    return {outer, inner};
  }
  if (op == "Reshape") return reshape_target(i, in, ints_of(i, 1), attr_flag(i, "allowzero"));
  if (op == "Slice") {
    int first = 0;
    return slice_shape(i, in, first, batched);
  }
  if (op == "Transpose") {
    auto perm = attr_ints(i, "perm");
    if (perm.empty())
      for (int64_t k = rank; k-- > 0;) perm.push_back(k);
    if (static_cast<int64_t>(perm.size()) != rank) fail(i, "perm does not match the rank");
    std::vector<bool> seen(in.size(), false);
    Shape s;
    for (auto p : perm) {
      if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) fail(i, "perm is not a permutation");
      seen[static_cast<size_t>(p)] = true;
      s.push_back(in[static_cast<size_t>(p)]);
    }
    return s;
  }
  if (op != "Squeeze" && op != "Unsqueeze") return in;  // Cast, Identity
  std::vector<int64_t> axes = has_in(i, 1) ? ints_of(i, 1) : attr_ints(i, "axes");
  Shape s = in;
  if (op == "Unsqueeze") {
    int64_t out_rank = rank + static_cast<int64_t>(axes.size());
    for (auto& a : axes) {
      if (a < -out_rank || a >= out_rank) fail(i, "axis out of range");
      if (a < 0) a += out_rank;
    }
    std::sort(axes.begin(), axes.end());
    for (auto a : axes) s.insert(s.begin() + a, 1);
    return s;
  }
  Shape kept;
  for (int64_t k = 0; k < rank; ++k) {
    bool drop = axes.empty() && s[static_cast<size_t>(k)] == 1;
    for (auto a : axes)
      if ((a < 0 ? a + rank : a) == k) drop = true;
    if (drop && s[static_cast<size_t>(k)] != 1) fail(i, "squeezed axis is not 1");
    if (!drop) kept.push_back(s[static_cast<size_t>(k)]);
  }
  return kept;
}

// Gather of rows of a float table: an embedding. Indices from the graph's inputs feed it
// directly; constant indices (position ids) become a host-fed input of their own, [N, T].
void Lowerer::lower_gather(size_t i) {
  const Val& table = in(i, 0);
  // Constant indices into a computed tensor (ViT's x[:, 0]; Swin's q, k, v = qkv[0], qkv[1],
  // qkv[2] after a permute put the 3 in front): a copy of the part picked.
  if (table.kind == Val::Kind::activation) {
    const int64_t ax = axis_of(i, attr_i(i, "axis", 0), table.shape.size());
    auto idx = const_of(in(i, 1));
    if (!idx) fail(i, "only constant indices are supported on computed tensors");
    Shape out(table.shape.begin(), table.shape.begin() + ax);
    out.insert(out.end(), idx->shape.begin(), idx->shape.end());
    out.insert(out.end(), table.shape.begin() + ax + 1, table.shape.end());
    return emit_copy(i, table, out, static_cast<int>(ax));
  }
  if (table.kind != Val::Kind::weight || table.shape.size() != 2 || attr_i(i, "axis", 0) != 0)
    fail(i, "only embedding lookups (rows of a 2-D initializer by integer ids) are supported on computed tensors");
  const Val& ids = in(i, 1);
  int64_t vocab = table.shape[0], dim = table.shape[1];
  const bool position_ids = ids.shape.size() == 1 || (ids.shape.size() == 2 && ids.shape[0] == 1);
  static const std::set<std::string> rearranging = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten"};
  auto next = sole_consumer(node(i).outputs[0]);
  if (ids.kind != Val::Kind::activation && (!position_ids || (next && rearranging.count(node(*next).op_type)))) {
    auto idx = const_of(ids);
    if (!idx || !is_integer(ids.type)) fail(i, "indices must be integer constants");
    for (double d : idx->v)
      if (d < -static_cast<double>(vocab) || d >= static_cast<double>(vocab)) fail(i, "index out of range of the table");
    Val v = table;
    v.shape = ids.shape;
    v.shape.push_back(dim);
    v.init = nullptr;
    v.values.reset();
    v.table_rows = vocab;
    v.table_width = dim;
    return set_out(i, std::move(v));
  }
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

void Lowerer::lower_dropout(size_t i) {
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

// The data-movement ops below (slices, splits, pads, resizes, broadcast copies) read x and
// write the new shape: priced as that traffic (ModelBuilder::copy_to). An unchanged shape
// adds no op.
void Lowerer::emit_copy(size_t i, const Val& x, const Shape& s, int axis, size_t out) {
  if (s == x.shape) return set_out(i, x, out);
  if (numel(s) <= 0) fail(i, "output shape " + shape_str(s) + " is empty");
  const std::string name = out == 0 ? nname(i) : nname(i) + "." + std::to_string(out);
  int t = b_ ? b_->copy_to(x.tensor, s, std::max(0, std::min(axis, static_cast<int>(s.size()) - 1)), name) : -1;
  set_out(i, activation(s, t, x.type), out);
}

int64_t Lowerer::axis_of(size_t i, int64_t axis, size_t rank) const {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) fail(i, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

Shape Lowerer::slice_shape(size_t i, const Shape& in, int& first, bool batched) {
  const std::vector<int64_t> starts = ints_of(i, 1), ends = ints_of(i, 2);
  std::vector<int64_t> axes = has_in(i, 3) ? ints_of(i, 3) : std::vector<int64_t>{};
  std::vector<int64_t> steps = has_in(i, 4) ? ints_of(i, 4) : std::vector<int64_t>{};
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(i, "starts, ends, axes and steps differ in length");
  Shape s = in;
  first = static_cast<int>(s.size());
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t ax = axis_of(i, axes[k], s.size());
    const int64_t dim = in[static_cast<size_t>(ax)], step = steps[k];
    if (step == 0) fail(i, "step 0");
    if (ax == 0 && batched) fail(i, "slicing the batch dimension is not supported");
    auto clampi = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + dim : v, lo, hi); };
    int64_t n = 0;
    if (step > 0) {
      int64_t b = clampi(starts[k], 0, dim), e = clampi(ends[k], 0, dim);
      n = e > b ? (e - b + step - 1) / step : 0;
    } else {
      int64_t b = clampi(starts[k], -1, dim - 1), e = clampi(ends[k], -1, dim - 1);
      n = b > e ? (b - e - step - 1) / -step : 0;
    }
    s[static_cast<size_t>(ax)] = n;
    first = std::min(first, static_cast<int>(ax));
  }
  return s;
}

void Lowerer::lower_slice(size_t i) {
  const Val& x = act(i, 0);
  int first = 0;
  Shape s = slice_shape(i, x.shape, first, true);
  emit_copy(i, x, s, first);
}

void Lowerer::lower_split(size_t i) {
  const Val& x = act(i, 0);
  const int64_t ax = axis_of(i, attr_i(i, "axis", 0), x.shape.size());
  if (ax == 0) fail(i, "splitting the batch dimension is not supported");
  const int64_t dim = x.shape[static_cast<size_t>(ax)];
  std::vector<int64_t> parts = has_in(i, 1) ? ints_of(i, 1) : attr_ints(i, "split");
  const size_t outs = node(i).outputs.size();
  if (parts.empty()) {  // equal parts (opset 18: num_outputs; before: one per output)
    const int64_t n = static_cast<int64_t>(outs);
    for (int64_t k = 0; k < n; ++k) parts.push_back((dim + n - 1) / n);
    parts.back() = dim - (n - 1) * ((dim + n - 1) / n);
  }
  if (parts.size() != outs) fail(i, "split sizes do not match the outputs");
  int64_t total = 0;
  for (auto p : parts) total += p;
  if (total != dim) fail(i, "split sizes do not sum to the axis");
  for (size_t k = 0; k < outs; ++k) {
    if (node(i).outputs[k].empty()) continue;
    Shape s = x.shape;
    s[static_cast<size_t>(ax)] = parts[k];
    emit_copy(i, x, s, static_cast<int>(ax), k);
  }
}

// Expand of a computed tensor is a broadcast copy; of a parameter (ViT's class token expanded
// over the batch) the parameter itself (param_tensor), then a copy if it widens further.
void Lowerer::lower_expand(size_t i) {
  const Val& x = in(i, 0);
  std::vector<int64_t> target = ints_of(i, 1);
  Shape out = broadcast_or_fail(i, x.shape, Shape(target.begin(), target.end()));
  if (x.kind == Val::Kind::activation) return emit_copy(i, x, out, 0);
  if (x.kind != Val::Kind::weight || !is_float(x.type)) fail(i, "Expand of a constant that is not folded");
  if (out.empty() || out[0] != batch_) fail(i, "a parameter expanded to " + shape_str(out) + ", not over the batch");
  Shape first = x.shape;
  first.insert(first.begin(), out.size() - first.size(), 1);
  first[0] = batch_;
  Val p = param_tensor(i, 0, first);
  emit_copy(i, p, out, 0);
}

// Resize/Upsample (nearest or linear): a copy to the new size.
void Lowerer::lower_resize(size_t i) {
  const Val& x = act(i, 0);
  Shape out;
  const bool upsample = node(i).op_type == "Upsample";
  const size_t scales_at = upsample ? 1 : 2, sizes_at = 3;
  if (!upsample && has_in(i, sizes_at)) {
    auto sz = ints_of(i, sizes_at);
    out.assign(sz.begin(), sz.end());
    if (!out.empty()) out[0] = x.shape[0];  // dim 0 is the build's batch, whatever the export wrote
  } else if (has_in(i, scales_at)) {
    auto c = const_of(in(i, scales_at));
    if (!c) fail(i, "scales must be a constant");
    if (c->v.size() != x.shape.size()) fail(i, "scales do not match the input's rank");
    for (size_t k = 0; k < x.shape.size(); ++k)
      out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(x.shape[k]) * c->v[k])));
  } else {
    fail(i, "needs constant scales or sizes");
  }
  if (out.size() != x.shape.size() || out[0] != x.shape[0]) fail(i, "resizing the batch dimension is not supported");
  emit_copy(i, x, out, 2);
}

}  // namespace xpusim::onnx
