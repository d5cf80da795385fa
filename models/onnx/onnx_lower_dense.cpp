// Lowering of the dense and Transformer operators: Gemm, MatMul (dense and batched),
// elementwise binaries, LayerNormalization, Softmax.
#include "models/onnx/onnx_lowerer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace xpusim::onnx {

void Lowerer::lower_gemm(size_t i) {
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
void Lowerer::lower_matmul(size_t i) {
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
void Lowerer::lower_batch_matmul(size_t i) {
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

void Lowerer::lower_layer_norm(size_t i) {
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

void Lowerer::lower_softmax(size_t i) {
  const Val& x = act(i, 0);
  if (!last_axis(attr_i(i, "axis", -1), x.shape.size())) fail(i, "only softmax over the last axis is supported");
  int t = b_ ? b_->softmax(x.tensor, nname(i)) : -1;
  set_out(i, activation(x.shape, t));
}

// Elementwise Add/Sub/Mul/Div. By a scalar constant: the GELU pattern or a scale. Two
// computed tensors: add or mul, a broadcast operand of Mul read in place (an SE gate), of Add
// first copied to the full shape. A float initializer (position embedding, layer scale) is a
// parameter broadcast over the batch: materialised by param_tensor. A non-scalar constant is
// an elementwise pass over x (priced as a scale), unless it is a mask before a Softmax.
void Lowerer::lower_binary(size_t i) {
  const std::string& op = node(i).op_type;
  const Val& a = in(i, 0);
  const Val& c = in(i, 1);
  const bool a_act = a.kind == Val::Kind::activation, c_act = c.kind == Val::Kind::activation;
  if (op == "Div" && a_act && c_act) fail(i, "division of two computed tensors is not supported");
  if (a_act != c_act) {
    const Val& x = a_act ? a : c;
    const Val& k = a_act ? c : a;
    if (!a_act && (op == "Div" || op == "Sub")) fail(i, "a constant divided by or minus a computed tensor is not supported");
    if (auto s = scalar_of(k); s && op != "Add" && op != "Sub") {
      if (try_gelu(i, x, *s)) return;
      double alpha = op == "Div" ? 1.0 / *s : *s;
      if (!std::isfinite(alpha)) fail(i, "scale by a non-finite constant");
      int t = b_ ? b_->scale(x.tensor, alpha, nname(i)) : -1;
      return set_out(i, activation(x.shape, t));
    }
    if (k.kind == Val::Kind::weight && is_float(k.type) && (op == "Add" || op == "Mul")) {
      Shape out = broadcast_or_fail(i, x.shape, k.shape);
      if (out != x.shape) fail(i, "a parameter " + shape_str(k.shape) + " widens the computed tensor " + shape_str(x.shape));
      Val p = param_tensor(i, a_act ? 1 : 0, x.shape);
      return emit_elementwise(i, op, x, p);
    }
    if (op == "Add" && k.kind == Val::Kind::constant) {
      auto sm = sole_consumer(node(i).outputs[0]);
      if (sm && node(*sm).op_type == "Softmax") return lower_masked_softmax(i, a_act ? 0 : 1);
    }
    // Any other constant: one elementwise pass over x.
    if (broadcast_or_fail(i, x.shape, k.shape) != x.shape)
      fail(i, "a constant " + shape_str(k.shape) + " widens the computed tensor " + shape_str(x.shape));
    int t = b_ ? b_->scale(x.tensor, 1.0, nname(i)) : -1;
    return set_out(i, activation(x.shape, t));
  }
  if (!a_act) fail(i, "expected a computed operand");
  emit_elementwise(i, op, a, c);
}

// a op c for two activations whose shapes broadcast (numpy rules). An operand of lower rank
// is first viewed with leading 1s (a reshape, no traffic), as numpy aligns it.
void Lowerer::emit_elementwise(size_t i, const std::string& op, const Val& a_in, const Val& c_in) {
  const Shape out = broadcast_or_fail(i, a_in.shape, c_in.shape);
  auto to_rank = [&](const Val& v, const char* tag) {
    if (v.shape.size() == out.size()) return v;
    Shape s = v.shape;
    s.insert(s.begin(), out.size() - s.size(), 1);
    return activation(s, b_ ? b_->reshape(v.tensor, s, nname(i) + tag) : -1, v.type);
  };
  const Val a = to_rank(a_in, ".rank_a"), c = to_rank(c_in, ".rank_b");
  int t = -1;
  if (op == "Mul" && (a.shape == out || c.shape == out)) {
    const Val& big = a.shape == out ? a : c;
    const Val& small = a.shape == out ? c : a;
    if (b_) t = small.shape == out ? b_->mul(big.tensor, small.tensor, nname(i)) : b_->broadcast_mul(big.tensor, small.tensor, nname(i));
    return set_out(i, activation(out, t));
  }
  if (op == "Mul") fail(i, "a product where both operands broadcast is not supported");
  if (b_) {
    int x = a.shape == out ? a.tensor : b_->copy_to(a.tensor, out, 0, nname(i) + ".expand_a");
    int y = c.shape == out ? c.tensor : b_->copy_to(c.tensor, out, 0, nname(i) + ".expand_b");
    t = b_->add({x, y}, nname(i));  // Sub: the same elementwise pass as Add
  }
  set_out(i, activation(out, t));
}

Shape Lowerer::broadcast_or_fail(size_t i, const Shape& a, const Shape& b) const {
  try {
    return broadcast_shape(a, b);
  } catch (const std::invalid_argument& e) {
    fail(i, e.what());
  }
}

// Einsum of two computed tensors whose equation is a batched product (attention's
// "bhid,bhjd->bhij"): letters in both inputs and the output are batch, in both inputs only
// contracted, in one input and the output free. Lowered as transposes to [batch, M, K] and
// [batch, K, N], one batched product, and the transpose to the output's order.
void Lowerer::lower_einsum(size_t i) {
  std::string eq;
  for (char ch : attr_s(i, "equation", "")) if (ch != ' ') eq += ch;
  const auto arrow = eq.find("->"), comma = eq.find(',');
  if (node(i).inputs.size() != 2 || arrow == std::string::npos || comma == std::string::npos || comma > arrow ||
      eq.find("...") != std::string::npos)
    fail(i, "only two-operand equations with an explicit output and no ellipsis are supported");
  const std::string la = eq.substr(0, comma), lb = eq.substr(comma + 1, arrow - comma - 1), lo = eq.substr(arrow + 2);
  const Val& a = act(i, 0);
  const Val& b = act(i, 1);
  if (la.size() != a.shape.size() || lb.size() != b.shape.size()) fail(i, "equation ranks differ from the inputs'");
  std::map<char, int64_t> dim;
  auto note = [&](const std::string& l, const Shape& s) {
    for (size_t k = 0; k < l.size(); ++k) {
      auto [it, fresh] = dim.emplace(l[k], s[k]);
      if (!fresh && it->second != s[k]) fail(i, std::string("letter ") + l[k] + " has two sizes");
    }
  };
  note(la, a.shape);
  note(lb, b.shape);
  std::string batch, m, n, k;
  for (char c : la) {
    bool inb = lb.find(c) != std::string::npos, ino = lo.find(c) != std::string::npos;
    if (inb && ino) batch += c;
    else if (inb) k += c;
    else if (ino) m += c;
    else fail(i, std::string("letter ") + c + " is summed over one operand only (not supported)");
  }
  for (char c : lb)
    if (la.find(c) == std::string::npos) {
      if (lo.find(c) == std::string::npos) fail(i, std::string("letter ") + c + " is summed over one operand only");
      n += c;
    }
  for (char c : lo)
    if (!dim.count(c)) fail(i, std::string("output letter ") + c + " is in no input");
  auto prod = [&](const std::string& l) {
    int64_t p = 1;
    for (char c : l) p *= dim[c];
    return p;
  };
  const int64_t B = prod(batch), M = prod(m), N = prod(n), K = prod(k);
  // Operand x with letters l rearranged to `want` letters, then viewed as `view`.
  auto arrange = [&](const Val& x, const std::string& l, const std::string& want, const Shape& view,
                     const std::string& tag) {
    std::vector<int> perm;
    for (char c : want) perm.push_back(static_cast<int>(l.find(c)));
    int t = x.tensor;
    bool ident = true;
    for (size_t q = 0; q < perm.size(); ++q) ident = ident && perm[q] == static_cast<int>(q);
    if (b_ && !ident) t = b_->transpose(t, perm, nname(i) + "." + tag);
    Shape cur;
    for (char c : want) cur.push_back(dim[c]);
    if (b_ && cur != view) t = b_->reshape(t, view, nname(i) + "." + tag + "_view");
    return t;
  };
  int t = -1;
  Shape prod_shape{B, M, N};
  std::string prod_letters = batch + m + n;
  Shape out;
  for (char c : lo) out.push_back(dim[c]);
  if (b_) {
    int ta = arrange(a, la, batch + m + k, {B, M, K}, "a");
    int tb = arrange(b, lb, batch + k + n, {B, K, N}, "b");
    t = b_->batch_matmul(ta, tb, false, false, nname(i));
    Shape full;
    for (char c : prod_letters) full.push_back(dim[c]);
    if (full != prod_shape) t = b_->reshape(t, full, nname(i) + ".unview");
    std::vector<int> perm;
    for (char c : lo) perm.push_back(static_cast<int>(prod_letters.find(c)));
    bool ident = true;
    for (size_t q = 0; q < perm.size(); ++q) ident = ident && perm[q] == static_cast<int>(q);
    if (!ident) t = b_->transpose(t, perm, nname(i) + ".out");
  }
  if (lo.size() != prod_letters.size()) fail(i, "output letters repeat or are missing");
  set_out(i, activation(out, t));
}

}  // namespace xpusim::onnx
