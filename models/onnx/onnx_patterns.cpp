// Chains of small ops that exporters write for one layer, matched on the graph structure and
// lowered as that layer: multi-head attention, GELU, a decomposed LayerNormalization, a
// constant mask before a Softmax (docs/onnx.md, "Patterns").
#include "models/onnx/onnx_lowerer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xpusim::onnx {

void Lowerer::find_attention() {
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
bool Lowerer::causal_mask(const AttentionMatch& m, int64_t t) const {
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

bool Lowerer::emit_attention(size_t y, const AttentionMatch& m) {
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

// A constant mask applied right before a last-axis Softmax (Where(mask, -inf, x) as torch's
// masked_fill exports it, or Add of a 0 / -inf constant) is part of that softmax: the
// masked entries get probability 0, the work is the softmax's.
void Lowerer::lower_masked_softmax(size_t i, size_t x_index) {
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

void Lowerer::broadcast_check(size_t i, const Shape& small, const Shape& big) {
  try {
    if (broadcast_shape(small, big) != big) fail(i, "mask " + shape_str(small) + " is larger than " + shape_str(big));
  } catch (const std::invalid_argument& e) {
    fail(i, e.what());
  }
}

// GELU as torch exports F.gelu: x / sqrt(2) -> Erf -> + 1 -> x * . -> * 0.5. Matched at the
// Div (or Mul by 1/sqrt(2)); returns false when the chain is something else.
bool Lowerer::try_gelu(size_t i, const Val& x, double c) {
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
void Lowerer::lower_decomposed_layer_norm(size_t i) {
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

}  // namespace xpusim::onnx
