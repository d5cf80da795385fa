// Definitions of the oneDNN helpers in dnnl_prims.hpp.
#include "devices/cpu/dnnl_prims.hpp"

#include <cmath>

#include "common/error.hpp"
#include "devices/cpu/conv_split.hpp"
#include "devices/cpu/weight_reorder.hpp"

namespace xpusim::cpu::prims {

memory::desc plain(const memory::dims& d) {
  static const tag tags[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde};
  return memory::desc(d, dt::f32, tags[d.size()]);
}

memory::dims dims_of(const Shape& s) { return memory::dims(s.begin(), s.end()); }

void exec(Runner& r, Prim& p, const std::function<void()>& body) {
  // Blocked copies live in scratch slots shared by all ops (ops run one at a time), so
  // they cost the largest copy once, not one copy per op.
  for (auto* v : {&p.pre, &p.post})
    for (auto& o : *v) o.blocked.set_data_handle(r.scratch(o.slot, o.blocked.get_desc().get_size()));
  for (auto& o : p.pre) {
    if (o.fast) o.fast(o.from.get_data_handle(), o.to.get_data_handle());
    else o.prim.execute(r.strm, o.from, o.to);
  }
  if (body) body();
  else p.prim.execute(r.strm, p.args);
  for (auto& o : p.post) o.prim.execute(r.strm, o.from, o.to);
  r.strm.wait();
}

memory bind_in(Runner& r, Prim& s, const memory::desc& want, const memory::desc& plain_d, float* p, int slot) {
  memory user(plain_d, r.eng, p);
  if (want == plain_d) return user;
  memory m(want, r.eng, DNNL_MEMORY_NONE);
  s.pre.push_back({dnnl::reorder(user, m), user, m, m, slot, fast_weight_reorder(plain_d, want)});
  return m;
}

memory bind_out(Runner& r, Prim& s, const memory::desc& want, const memory::desc& plain_d, float* p, int slot) {
  memory user(plain_d, r.eng, p);
  if (want == plain_d) return user;
  memory m(want, r.eng, DNNL_MEMORY_NONE);
  s.post.push_back({dnnl::reorder(m, user), m, user, m, slot, {}});
  return m;
}

memory::desc any_of(const memory::desc& d, dt type) { return memory::desc(d.dims(), type, tag::any); }

dt compute_dt(const Runner& r) { return r.bf16_native ? dt::bf16 : dt::f32; }

memory::desc blocked_desc(const Runner& r, const memory::dims& d) {
  return memory::desc(d, compute_dt(r), r.avx512 ? tag::aBcd16b : tag::aBcd8b);
}

memory::desc stored(const Runner& r, const memory::desc& plain_d, int t) {
  const memory::desc& w = r.weight_layout[static_cast<size_t>(t)];
  if (!w.is_zero()) return w;
  return r.blocked[static_cast<size_t>(t)] ? blocked_desc(r, plain_d.dims()) : plain_d;
}

memory::desc want(const Runner& r, const memory::desc& plain_d, int t, dt type) {
  if (!r.blocked[static_cast<size_t>(t)]) return any_of(plain_d, type);
  return memory::desc(plain_d.dims(), type, r.avx512 ? tag::aBcd16b : tag::aBcd8b);
}

ConvGeom conv_geom(const OpGraph& g, int fwd) {
  const OpNode& op = g.op(fwd);
  const OpAttrs& a = op.attrs;
  const Shape& x = g.tensor(op.inputs[0]).desc.shape;
  const Shape& w = g.tensor(op.inputs[1]).desc.shape;
  const Shape& y = g.tensor(op.outputs[0]).desc.shape;
  ConvGeom c;
  c.src = plain(dims_of(x));
  c.dst = plain(dims_of(y));
  if (a.groups > 1)  // [O, C/g, kh, kw] viewed as [g, O/g, C/g, kh, kw]
    c.wei = plain({a.groups, w[0] / a.groups, w[1], w[2], w[3]});
  else
    c.wei = plain(dims_of(w));
  c.bias = plain({w[0]});
  c.strides = {a.stride_h, a.stride_w};
  c.dil = {a.dilation_h - 1, a.dilation_w - 1};  // oneDNN counts dilation from 0
  // Symmetric padding: oneDNN sizes the output with floor division like PyTorch and the
  // builder, so right padding beyond the last window is never read.
  c.pad_l = {a.pad_h, a.pad_w};
  c.pad_r = c.pad_l;
  return c;
}

dnnl::primitive_attr relu_attr(bool relu) {
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  return attr;
}

dnnl::convolution_forward::primitive_desc conv_fwd_pd(Runner& r, const OpGraph& g, int fwd, bool relu) {
  ConvGeom c = conv_geom(g, fwd);
  const OpNode& op = g.op(fwd);
  c.src = want(r, c.src, op.inputs[0], compute_dt(r));
  c.wei = any_of(c.wei, compute_dt(r));
  c.dst = want(r, c.dst, op.outputs[0], compute_dt(r));  // the bias stays fp32
  bool bias = g.op(fwd).attrs.has_bias;
  auto d = bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                  dnnl::algorithm::convolution_direct, c.src, c.wei, c.bias,
                                                  c.dst, c.strides, c.dil, c.pad_l, c.pad_r)
                : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                  dnnl::algorithm::convolution_direct, c.src, c.wei, c.dst,
                                                  c.strides, c.dil, c.pad_l, c.pad_r);
  return dnnl::convolution_forward::primitive_desc(d, relu_attr(relu), r.eng);
}

dnnl::convolution_backward_weights::primitive_desc conv_bwd_weights_pd_on(Runner& r, const OpGraph& g, int fwd,
                                                                          const memory::desc& src,
                                                                          const memory::desc& dst, bool bias,
                                                                          const dnnl::primitive_attr& attr) {
  const ConvGeom c = conv_geom(g, fwd);
  const memory::desc wei = any_of(c.wei);
  auto fd = g.op(fwd).attrs.has_bias
                ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                  src, any_of(c.wei, compute_dt(r)), c.bias, dst, c.strides, c.dil,
                                                  c.pad_l, c.pad_r)
                : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                                  src, any_of(c.wei, compute_dt(r)), dst, c.strides, c.dil, c.pad_l,
                                                  c.pad_r);
  const dnnl::convolution_forward::primitive_desc hint(fd, r.eng);
  auto d = bias ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, wei, c.bias, dst,
                                                           c.strides, c.dil, c.pad_l, c.pad_r)
                : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, wei, dst,
                                                           c.strides, c.dil, c.pad_l, c.pad_r);
  return dnnl::convolution_backward_weights::primitive_desc(d, attr, r.eng, hint);
}

dnnl::convolution_backward_weights::primitive_desc conv_bwd_weights_pd(Runner& r, const OpGraph& g, int fwd, int dy,
                                                                       bool bias) {
  const ConvGeom c = conv_geom(g, fwd);
  const OpNode& op = g.op(fwd);
  return conv_bwd_weights_pd_on(r, g, fwd, want(r, c.src, op.inputs[0], compute_dt(r)),
                                want(r, c.dst, dy, compute_dt(r)), bias);
}

dnnl::algorithm eltwise_alg(ActivationFn f) {
  // The *_use_dst_for_bwd variants let the backward pass read the output, which is what
  // the graph hands ActivationBackward ({dy, y}); GELU's derivative needs the input, so its
  // backward reads {dy, x} and runs the src-based algorithm (erf form, as the graph's).
  switch (f) {
    case ActivationFn::relu: return dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    case ActivationFn::sigmoid: return dnnl::algorithm::eltwise_logistic_use_dst_for_bwd;
    case ActivationFn::tanh: return dnnl::algorithm::eltwise_tanh_use_dst_for_bwd;
    case ActivationFn::gelu: return dnnl::algorithm::eltwise_gelu_erf;
  }
  return dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
}

memory::desc flat_desc(const Runner& r, const OpGraph& g, int t) {
  return memory::desc({g.tensor(t).desc.numel()}, r.blocked[static_cast<size_t>(t)] ? compute_dt(r) : dt::f32, tag::a);
}

dnnl::eltwise_forward::primitive_desc eltwise_fwd_pd(Runner& r, const OpGraph& g, int fwd) {
  const OpNode& op = g.op(fwd);
  memory::desc d = flat_desc(r, g, op.inputs[0]);
  return dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, eltwise_alg(op.attrs.act), d, 0.f, 0.f), r.eng);
}

PlainPool plain_pool(const OpGraph& g, int fwd) {
  const OpNode& op = g.op(fwd);
  const OpAttrs& a = op.attrs;
  const Shape& x = g.tensor(op.inputs[0]).desc.shape;
  const Shape& y = g.tensor(op.outputs[0]).desc.shape;
  PlainPool p;
  p.planes = x[0] * x[1];
  p.h = x[2];
  p.w = x[3];
  p.oh = y.size() == 4 ? y[2] : 1;
  p.ow = y.size() == 4 ? y[3] : 1;
  p.kh = a.global_pool ? x[2] : a.kernel_h;
  p.kw = a.global_pool ? x[3] : a.kernel_w;
  p.sh = a.global_pool ? 1 : a.stride_h;
  p.sw = a.global_pool ? 1 : a.stride_w;
  p.ph = a.global_pool ? 0 : a.pad_h;  // symmetric, floor-sized output (as for convolution)
  p.pw = a.global_pool ? 0 : a.pad_w;
  p.max = a.pool == PoolFn::max;
  return p;
}

bool pool_is_1d_global(const OpGraph& g, int fwd) {
  return g.tensor(g.op(fwd).inputs[0]).desc.shape.size() == 3;
}

memory::desc bn_desc(const OpGraph& g, int fwd) {
  const Shape& x = g.tensor(g.op(fwd).inputs[0]).desc.shape;
  if (x.size() == 2) return plain({x[0], x[1], 1, 1});
  if (x.size() == 3) return plain({x[0], x[1], x[2], 1});  // [N, T, F]: channels = T, as the builder sizes gamma
  return plain(dims_of(x));
}

memory::desc bn_compute_desc(const Runner& r, const OpGraph& g, int fwd) {
  memory::desc d = bn_desc(g, fwd);
  const Shape& x = g.tensor(g.op(fwd).inputs[0]).desc.shape;
  if (x.size() == 4 && r.avx512 && x[1] % 16 == 0) return memory::desc(d.dims(), compute_dt(r), tag::aBcd16b);
  if (x.size() == 4 && x[1] % 8 == 0) return memory::desc(d.dims(), compute_dt(r), tag::aBcd8b);
  return d;
}

bool bn_native(const Runner& r, const OpGraph& g, int fwd) {
  return bn_compute_desc(r, g, fwd).data_type() == memory::data_type::bf16;
}

dnnl::batch_normalization_forward::primitive_desc bn_fwd_pd(Runner& r, const OpGraph& g, int fwd) {
  return dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, bn_compute_desc(r, g, fwd), kBnEps,
                                              kBnFlags),
      r.eng);
}

}  // namespace xpusim::cpu::prims
