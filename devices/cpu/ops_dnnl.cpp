// Op handlers backed by oneDNN primitives: convolution (forward, backward data, backward
// weights), matmul, batch normalisation, eltwise activations, the sum of blocked tensors,
// and pooling. On the native bf16 path (Runner::bf16_native) conv, matmul and blocked batch
// norm compute in bf16 with fp32 accumulation; the reorders that change layout also change
// precision. Most tensors are stored plain (nchw, oihw, row-major matrices, fp32) so that
// every op can read them, and primitives reorder to and from their preferred layout (see
// bind_in); tensors that only conv, batch norm and elementwise ops touch are stored
// channel-blocked in the compute type and bound directly (choose_layouts). Primitives are
// created on an op's first run and reused.
#include <omp.h>

#include <cmath>
#include <functional>
#include <vector>

#include "common/error.hpp"
#include "devices/cpu/bn_kernel.hpp"
#include "devices/cpu/bn_kernel_bf16.hpp"
#include "devices/cpu/conv_split.hpp"
#include "devices/cpu/pool_plain.hpp"
#include "devices/cpu/runner.hpp"
#include "devices/cpu/weight_reorder.hpp"

namespace xpusim::cpu {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

memory::desc plain(const memory::dims& d) {
  static const tag tags[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde};
  return memory::desc(d, dt::f32, tags[d.size()]);
}
memory::dims dims_of(const Shape& s) { return memory::dims(s.begin(), s.end()); }

struct Reorder {
  dnnl::reorder prim;
  memory from, to;
  memory blocked;  // the side in the preferred layout, living in a scratch slot
  int slot = 0;
  std::function<void(const void*, void*)> fast;  // weight_reorder.hpp's kernel for this pair, if any
};

struct Prim : OpState {
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  std::vector<Reorder> pre, post;  // plain -> preferred layout before, back after
};

// body: what runs between the reorders instead of p.prim (it reads p.args' handles, which
// point into scratch slots by then).
void exec(Runner& r, Prim& p, const std::function<void()>& body = {}) {
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

// Convolutions run in the layout oneDNN prefers (blocked nChw8c / OIhw8i8o on AVX2, which
// has JIT kernels; plain nchw only has im2col + sgemm). Inputs are reordered from the
// plain buffers before the primitive and outputs back after it, as PyTorch's mkldnn path
// does, so every other op keeps reading plain tensors.
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
memory::desc any_of(const memory::desc& d, dt type = dt::f32) { return memory::desc(d.dims(), type, tag::any); }
// The data type conv, matmul and batch norm compute in: bf16 on the native path (oneDNN
// accumulates in fp32 and the reorders around the primitive convert precision and layout
// in one pass), else fp32.
dt compute_dt(const Runner& r) { return r.bf16_native ? dt::bf16 : dt::f32; }

// Channel-blocked layout in the compute type (bf16 on the native path).
memory::desc blocked_desc(const Runner& r, const memory::dims& d) {
  return memory::desc(d, compute_dt(r), r.avx512 ? tag::aBcd16b : tag::aBcd8b);
}
// How tensor t is stored (plain_d describes it as plain fp32).
memory::desc stored(const Runner& r, const memory::desc& plain_d, int t) {
  const memory::desc& w = r.weight_layout[static_cast<size_t>(t)];
  if (!w.is_zero()) return w;
  return r.blocked[static_cast<size_t>(t)] ? blocked_desc(r, plain_d.dims()) : plain_d;
}
// What a primitive is asked to take for tensor t: the blocked layout in the compute type
// when t is stored blocked (no reorder, or only a precision change), else whatever oneDNN
// prefers in that type.
memory::desc want(const Runner& r, const memory::desc& plain_d, int t, dt type) {
  if (!r.blocked[static_cast<size_t>(t)]) return any_of(plain_d, type);
  return memory::desc(plain_d.dims(), type, r.avx512 ? tag::aBcd16b : tag::aBcd8b);
}

// Convolution geometry from the forward op (backward ops pass their forward_op).
struct ConvGeom {
  memory::desc src, wei, bias, dst;
  memory::dims strides, dil, pad_l, pad_r;
};

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

// A ReLU eltwise post-op (fusion.cpp), or no attributes.
dnnl::primitive_attr relu_attr(bool relu) {
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  return attr;
}

// relu: the forward primitive itself, with the fused ReLU; false for the hint that the
// backward primitives are created from.
dnnl::convolution_forward::primitive_desc conv_fwd_pd(Runner& r, const OpGraph& g, int fwd, bool relu = false) {
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

// The backward-weights primitive of forward convolution `fwd` on src and diff_dst
// descriptors (any number of images): bf16 (native) or fp32 activations and gradients in,
// fp32 weight gradient out (it feeds the fp32 master).
dnnl::convolution_backward_weights::primitive_desc conv_bwd_weights_pd_on(Runner& r, const OpGraph& g, int fwd,
                                                                          const memory::desc& src,
                                                                          const memory::desc& dst, bool bias,
                                                                          const dnnl::primitive_attr& attr = {}) {
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

// The same for the step's tensors: forward convolution `fwd` reading gradient tensor dy.
dnnl::convolution_backward_weights::primitive_desc conv_bwd_weights_pd(Runner& r, const OpGraph& g, int fwd, int dy,
                                                                       bool bias) {
  const ConvGeom c = conv_geom(g, fwd);
  const OpNode& op = g.op(fwd);
  return conv_bwd_weights_pd_on(r, g, fwd, want(r, c.src, op.inputs[0], compute_dt(r)),
                                want(r, c.dst, dy, compute_dt(r)), bias);
}

template <class S>
S& state_of(Runner& r, int op, bool& fresh) {
  auto& s = r.state[static_cast<size_t>(op)];
  fresh = !s;
  if (!s) s = std::make_unique<S>();
  return static_cast<S&>(*s);
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

// Elementwise ops see a tensor as a 1-D run of its elements, in whatever layout all their
// operands share (one group of Runner::blocked), fp32 or, when blocked, the compute type.
memory::desc flat_desc(const Runner& r, const OpGraph& g, int t) {
  return memory::desc({g.tensor(t).desc.numel()}, r.blocked[static_cast<size_t>(t)] ? compute_dt(r) : dt::f32, tag::a);
}

dnnl::eltwise_forward::primitive_desc eltwise_fwd_pd(Runner& r, const OpGraph& g, int fwd) {
  const OpNode& op = g.op(fwd);
  memory::desc d = flat_desc(r, g, op.inputs[0]);
  return dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, eltwise_alg(op.attrs.act), d, 0.f, 0.f), r.eng);
}

// Pooling over 4-D tensors (pool_plain.hpp); global pooling writes [N, C] viewed as [N, C, 1, 1].
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

// Batch norm over [N, C, H, W], or [N, C] viewed as [N, C, 1, 1].
memory::desc bn_desc(const OpGraph& g, int fwd) {
  const Shape& x = g.tensor(g.op(fwd).inputs[0]).desc.shape;
  if (x.size() == 2) return plain({x[0], x[1], 1, 1});
  if (x.size() == 3) return plain({x[0], x[1], x[2], 1});  // [N, T, F]: channels = T, as the builder sizes gamma
  return plain(dims_of(x));
}
// oneDNN's JIT batch norm needs channel-blocked data (nChw8c on AVX2); on plain nchw it
// falls back to a generic implementation that took over half of a ResNet-50 step. 4-D
// tensors with whole blocks of 8 channels are therefore reordered around the primitive.
// With AVX-512 the kernels block by 16 channels (aBcd16b), as the convolutions around
// them do. On the native bf16 path blocked batch norm runs in bf16 (fp32 statistics).
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
constexpr float kBnEps = 1e-5f;  // PyTorch BatchNorm2d default
const auto kBnFlags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;

dnnl::batch_normalization_forward::primitive_desc bn_fwd_pd(Runner& r, const OpGraph& g, int fwd) {
  return dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, bn_compute_desc(r, g, fwd), kBnEps,
                                              kBnFlags),
      r.eng);
}

}  // namespace

// Two kinds of blocked storage, both channel-blocked in the compute type (bf16 on the
// native path). Kind 1: a convolution's output read only by batch norm (and conv
// backward), and that tensor's gradient. Kind 2: groups of tensors joined by layout-agnostic elementwise ops
// (activation, activation backward, add), whose other producers and consumers are all
// convolution or batch-norm arguments (a batch-norm output through relu into the next
// convolution, residual adds, their gradients), stored the same way; eltwise primitives
// and the sum primitive (Add) run on them in that type. A group that also touches
// pooling, concat, matmul, a reshape or anything else stays plain.
void Runner::choose_layouts() {
  const int nt = g_.num_tensors();
  blocked.assign(static_cast<size_t>(nt), 0);
  if (!opts.blocked_layouts) return;
  const int64_t block = avx512 ? 16 : 8;
  auto plain_conv = [&](int op) { return g_.op(op).attrs.groups <= 1; };
  auto shape_ok = [&](int t) {
    const Tensor& T = g_.tensor(t);
    return !T.is_view && T.producer >= 0 && T.desc.shape.size() == 4 && T.desc.shape[1] % block == 0;
  };
  // Batch norm computes in exactly blocked_desc's layout for this tensor's shape.
  auto bn_fits = [&](int bn_fwd, int t) {
    return bn_compute_desc(*this, g_, bn_fwd) == blocked_desc(*this, dims_of(g_.tensor(t).desc.shape));
  };
  for (int t = 0; t < nt; ++t) {
    if (!shape_ok(t)) continue;
    const OpNode& p = g_.op(g_.tensor(t).producer);
    bool ok = p.outputs[0] == t && ((p.kind == OpKind::Conv2D && plain_conv(g_.tensor(t).producer)) ||
                                    (p.kind == OpKind::BatchNormBackward && bn_fits(p.forward_op, t)));
    const auto& cons = g_.consumers(t);
    ok = ok && !cons.empty();
    for (int c : cons) {
      const OpNode& o = g_.op(c);
      ok = ok && ((o.kind == OpKind::BatchNorm && o.inputs[0] == t && bn_fits(c, t)) ||
                  (o.kind == OpKind::BatchNormBackward && o.inputs[1] == t && o.inputs[0] != t) ||
                  (o.kind == OpKind::Conv2DBackwardData && o.inputs[0] == t && plain_conv(o.forward_op)) ||
                  (o.kind == OpKind::Conv2DBackwardFilter && o.inputs[1] == t && o.inputs[0] != t &&
                   plain_conv(o.forward_op)));
    }
    blocked[static_cast<size_t>(t)] = ok ? 1 : 0;
  }
  // Kind 2: union-find over tensors joined by elementwise ops.
  std::vector<int> root(static_cast<size_t>(nt));
  for (int t = 0; t < nt; ++t) root[static_cast<size_t>(t)] = t;
  auto find = [&](int t) {
    while (root[static_cast<size_t>(t)] != t) t = root[static_cast<size_t>(t)] = root[static_cast<size_t>(root[static_cast<size_t>(t)])];
    return t;
  };
  auto elementwise = [](OpKind k) { return k == OpKind::Activation || k == OpKind::ActivationBackward || k == OpKind::Add; };
  for (int i = 0; i < g_.num_ops(); ++i) {
    const OpNode& o = g_.op(i);
    if (!elementwise(o.kind)) continue;
    std::vector<int> ts(o.inputs);
    ts.insert(ts.end(), o.outputs.begin(), o.outputs.end());
    for (int t : ts) root[static_cast<size_t>(find(t))] = find(ts[0]);
  }
  // A tensor's uses outside elementwise ops must all be convolution / batch-norm arguments.
  auto use_ok = [&](int t) {
    if (!shape_ok(t) || blocked[static_cast<size_t>(t)]) return false;
    const int pi = g_.tensor(t).producer;
    const OpNode& p = g_.op(pi);
    bool ok = elementwise(p.kind) || (p.kind == OpKind::BatchNorm && p.outputs[0] == t && bn_fits(pi, t)) ||
              (p.kind == OpKind::Conv2DBackwardData && plain_conv(p.forward_op));
    for (int c : g_.consumers(t)) {
      const OpNode& o = g_.op(c);
      ok = ok && (elementwise(o.kind) ||
                  (o.kind == OpKind::Conv2D && o.inputs[0] == t && plain_conv(c)) ||
                  (o.kind == OpKind::Conv2DBackwardFilter && o.inputs[0] == t && o.inputs[1] != t &&
                   plain_conv(o.forward_op)) ||
                  (o.kind == OpKind::BatchNormBackward && o.inputs[0] == t && o.inputs[1] != t &&
                   bn_fits(o.forward_op, t)));
    }
    return ok;
  };
  std::vector<char> group_ok(static_cast<size_t>(nt), 1), in_group(static_cast<size_t>(nt), 0);
  for (int i = 0; i < g_.num_ops(); ++i) {
    const OpNode& o = g_.op(i);
    if (!elementwise(o.kind)) continue;
    for (const auto* v : {&o.inputs, &o.outputs})
      for (int t : *v) in_group[static_cast<size_t>(t)] = 1;
  }
  for (int t = 0; t < nt; ++t)
    if (in_group[static_cast<size_t>(t)] && !use_ok(t)) group_ok[static_cast<size_t>(find(t))] = 0;
  for (int t = 0; t < nt; ++t)
    if (in_group[static_cast<size_t>(t)] && group_ok[static_cast<size_t>(find(t))]) blocked[static_cast<size_t>(t)] = 2;
}

// Conv weights, their gradients and optimizer state in the fp32 layout oneDNN's backward-
// weights primitive writes (ABcd16b16a under AVX-512, ABcd8b8a under AVX2 for most
// convolutions): the weight gradient is then written in place, and the forward and
// backward-data primitives reorder from a blocked source (or, in fp32, not at all: the
// forward takes that layout), where reorders from plain oihw were a transpose with poor
// locality that cost ~15% of a bf16 ResNet-50 step. The optimizer updates are elementwise,
// so any layout shared by the weight, its gradient and its state works, provided it has no
// padding (same element count). A weight anything else reads (a shared weight, a grouped
// convolution, an all-reduce of its gradient) stays plain.
void Runner::choose_weight_layouts() {
  const int nt = g_.num_tensors();
  weight_layout.assign(static_cast<size_t>(nt), memory::desc());
  if (!opts.blocked_layouts) return;
  auto is_update = [&](int op) {
    const OpKind k = g_.op(op).kind;
    return k == OpKind::SGDMomentumUpdate || k == OpKind::AdamUpdate;
  };
  for (int i = 0; i < g_.num_ops(); ++i) {
    const OpNode& conv = g_.op(i);
    if (conv.kind != OpKind::Conv2D || conv.attrs.groups > 1) continue;
    const int w = conv.inputs[1];
    if (g_.tensor(w).role != TensorRole::weight || g_.tensor(w).is_view) continue;
    int bwd_w = -1, update = -1;
    bool ok = true;
    for (int c : g_.consumers(w)) {
      const OpNode& o = g_.op(c);
      if (c == i || (o.kind == OpKind::Conv2DBackwardData && o.forward_op == i && o.inputs[1] == w)) continue;
      if (is_update(c) && o.inputs[0] == w && update < 0) update = c;
      else ok = false;
    }
    for (int c = 0; c < g_.num_ops() && ok; ++c)
      if (g_.op(c).kind == OpKind::Conv2DBackwardFilter && g_.op(c).forward_op == i) bwd_w = c;
    if (!ok || bwd_w < 0 || update < 0) continue;
    const OpNode& up = g_.op(update);
    std::vector<int> group{w};
    for (size_t k = 1; k < up.inputs.size(); ++k) group.push_back(up.inputs[k]);  // grad, optimizer state
    if (group[1] != g_.op(bwd_w).outputs[0]) continue;
    for (size_t k = 1; k < group.size(); ++k) {
      const Tensor& T = g_.tensor(group[k]);
      const auto& cons = g_.consumers(group[k]);
      ok = ok && !T.is_view && T.desc.shape == g_.tensor(w).desc.shape && cons.size() == 1 && cons[0] == update;
    }
    if (!ok) continue;
    const memory::desc l =
        conv_bwd_weights_pd(*this, g_, i, g_.op(bwd_w).inputs[1], g_.op(bwd_w).outputs.size() > 1).diff_weights_desc();
    const memory::desc p = plain(dims_of(g_.tensor(w).desc.shape));
    if (l.dims() != p.dims() || l == p || l.data_type() != dt::f32 || l.get_size() != p.get_size()) continue;
    for (int t : group) weight_layout[static_cast<size_t>(t)] = l;
  }
}

// Add over blocked operands: oneDNN's sum primitive (unit scales), which reads and writes the
// compute type; plain fp32 operands take the OpenMP loop in ops_host.cpp.
bool Runner::add_blocked(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  if (!blocked[static_cast<size_t>(op.outputs[0])]) return false;
  bool fresh;
  auto& s = state_of<Prim>(*this, i, fresh);
  if (fresh) {
    std::vector<memory::desc> srcs;
    for (int t : op.inputs) srcs.push_back(flat_desc(*this, g, t));
    const memory::desc dst = flat_desc(*this, g, op.outputs[0]);
    dnnl::sum::primitive_desc pd(dst, std::vector<float>(op.inputs.size(), 1.0f), srcs, eng);
    s.prim = dnnl::sum(pd);
    for (size_t k = 0; k < op.inputs.size(); ++k)
      s.args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = memory(srcs[k], eng, ptr(op.inputs[k]));
    s.args[DNNL_ARG_DST] = memory(dst, eng, ptr(op.outputs[0]));
  }
  exec(*this, s);
  return true;
}

std::vector<float> Runner::read_plain(int t) {
  const Tensor& T = g_.tensor(t);
  std::vector<float> out(static_cast<size_t>(T.desc.numel()));
  if (!stored_blocked(t)) {
    std::copy(ptr(t), ptr(t) + out.size(), out.begin());
    return out;
  }
  memory::desc pd = plain(dims_of(T.desc.shape));
  memory from(stored(*this, pd, t), eng, ptr(t)), to(pd, eng, out.data());
  dnnl::reorder(from, to).execute(strm, from, to);
  strm.wait();
  return out;
}

void Runner::write_plain(int t, const std::vector<float>& values) {
  const Tensor& T = g_.tensor(t);
  if (static_cast<int64_t>(values.size()) != T.desc.numel())
    throw InternalError("write_plain: " + T.name + " takes " + std::to_string(T.desc.numel()) + " values, got " +
                        std::to_string(values.size()));
  if (!stored_blocked(t)) {
    std::copy(values.begin(), values.end(), ptr(t));
    return;
  }
  memory::desc pd = plain(dims_of(T.desc.shape));
  std::vector<float> src(values);
  memory from(pd, eng, src.data()), to(stored(*this, pd, t), eng, ptr(t));
  dnnl::reorder(from, to).execute(strm, from, to);
  strm.wait();
}

void Runner::on_Conv2D(const OpGraph& g, int i) {
  bool fresh;
  auto& s = state_of<Prim>(*this, i, fresh);
  const OpNode& op = g.op(i);
  float* w = weight_operand(i, op.inputs[1]);
  if (fresh) {
    const bool relu = fusion[static_cast<size_t>(i)].relu >= 0;
    const int out = fused_out(i);  // the ReLU's output when fused (stored in the conv output's layout)
    auto pd = conv_fwd_pd(*this, g, i, relu);
    ConvGeom c = conv_geom(g, i);
    s.prim = dnnl::convolution_forward(pd);
    s.args[DNNL_ARG_SRC] = bind_in(*this, s, pd.src_desc(), stored(*this, c.src, op.inputs[0]), ptr(op.inputs[0]), 0);
    s.args[DNNL_ARG_WEIGHTS] = bind_in(*this, s, pd.weights_desc(), stored(*this, c.wei, op.inputs[1]), w, 1);
    if (op.attrs.has_bias) s.args[DNNL_ARG_BIAS] = memory(pd.bias_desc(), eng, ptr(op.inputs[2]));
    s.args[DNNL_ARG_DST] = bind_out(*this, s, pd.dst_desc(), stored(*this, c.dst, out), ptr(out), 2);
    exact_bf16_out[static_cast<size_t>(i)] = bf16_native;
  }
  exec(*this, s);
}

void Runner::on_Conv2DBackwardData(const OpGraph& g, int i) {
  bool fresh;
  auto& s = state_of<Prim>(*this, i, fresh);
  const OpNode& op = g.op(i);
  float* w = weight_operand(i, op.inputs[1]);
  if (fresh) {
    ConvGeom c = conv_geom(g, op.forward_op);
    dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(
            dnnl::algorithm::convolution_direct, want(*this, c.src, op.outputs[0], compute_dt(*this)),
            any_of(c.wei, compute_dt(*this)), want(*this, c.dst, op.inputs[0], compute_dt(*this)), c.strides, c.dil,
            c.pad_l, c.pad_r),
        eng, conv_fwd_pd(*this, g, op.forward_op));
    s.prim = dnnl::convolution_backward_data(pd);
    s.args[DNNL_ARG_DIFF_DST] =
        bind_in(*this, s, pd.diff_dst_desc(), stored(*this, c.dst, op.inputs[0]), ptr(op.inputs[0]), 0);
    s.args[DNNL_ARG_WEIGHTS] = bind_in(*this, s, pd.weights_desc(), stored(*this, c.wei, op.inputs[1]), w, 1);
    s.args[DNNL_ARG_DIFF_SRC] =
        bind_out(*this, s, pd.diff_src_desc(), stored(*this, c.src, op.outputs[0]), ptr(op.outputs[0]), 2);
    exact_bf16_out[static_cast<size_t>(i)] = bf16_native;
  }
  exec(*this, s);
}

// Backward-weights state: the primitive and, on the native bf16 path, its split over the
// minibatch (conv_split.hpp) when that applies.
struct ConvBwdWeights : Prim {
  MinibatchSplit split;
  bool split_on = false;
};

void Runner::on_Conv2DBackwardFilter(const OpGraph& g, int i) {
  bool fresh;
  auto& s = state_of<ConvBwdWeights>(*this, i, fresh);
  const OpNode& op = g.op(i);
  const bool bias = op.outputs.size() > 1;
  if (fresh) {
    ConvGeom c = conv_geom(g, op.forward_op);
    auto pd = conv_bwd_weights_pd(*this, g, op.forward_op, op.inputs[1], bias);
    s.prim = dnnl::convolution_backward_weights(pd);
    s.args[DNNL_ARG_SRC] = bind_in(*this, s, pd.src_desc(), stored(*this, c.src, op.inputs[0]), ptr(op.inputs[0]), 0);
    s.args[DNNL_ARG_DIFF_DST] =
        bind_in(*this, s, pd.diff_dst_desc(), stored(*this, c.dst, op.inputs[1]), ptr(op.inputs[1]), 1);
    s.args[DNNL_ARG_DIFF_WEIGHTS] =
        bind_out(*this, s, pd.diff_weights_desc(), stored(*this, c.wei, op.outputs[0]), ptr(op.outputs[0]), 2);
    if (bias) s.args[DNNL_ARG_DIFF_BIAS] = memory(pd.diff_bias_desc(), eng, ptr(op.outputs[1]));
    if (bf16_native && opts.split_bwd_weights)
      s.split_on = plan_minibatch_split(
          pd, bias, omp_get_max_threads(),
          [&](const memory::desc& src, const memory::desc& dst, const dnnl::primitive_attr& attr) {
            return conv_bwd_weights_pd_on(*this, g, op.forward_op, src, dst, bias, attr);
          },
          s.split);
    split_ops += s.split_on;
  }
  if (!s.split_on) {
    exec(*this, s);
    return;
  }
  exec(*this, s, [&] {
    run_minibatch_split(s.split, eng, s.args[DNNL_ARG_SRC].get_data_handle(), s.args[DNNL_ARG_DIFF_DST].get_data_handle(),
                        static_cast<float*>(s.args[DNNL_ARG_DIFF_WEIGHTS].get_data_handle()),
                        bias ? static_cast<float*>(s.args[DNNL_ARG_DIFF_BIAS].get_data_handle()) : nullptr,
                        [&](int k, size_t bytes) { return scratch(3 + k, bytes); });  // slots 0-2: the reorders
  });
}

// C[m,n] = op(A)[m,k] x op(B)[k,n] (+ bias), `batches` times over stacked operands (a
// batched matmul of activations: a leading batch dimension on every operand). A transposed
// operand is described by its strides, so no copy is made. A second output is the bias
// gradient: the column sum of the forward's dC (the graph's weight-gradient matmul reads
// {X, dC}, or {dC, X} when the forward weight was transposed, and writes {dW, db}).
void Runner::on_MatMul(const OpGraph& g, int i) {
  bool fresh;
  auto& s = state_of<Prim>(*this, i, fresh);
  const OpNode& op = g.op(i);
  const OpAttrs& a = op.attrs;
  bool fwd_bias = op.inputs.size() > 2;
  // The bf16-rounded copy where B is a weight (emulated bf16), else B itself.
  float* b = weight_operand(i, op.inputs[1]);
  if (fresh) {
    memory::dims ad_dims{a.m, a.k}, bd_dims{a.k, a.n}, cd_dims{a.m, a.n};
    memory::dims as = a.trans_a ? memory::dims{1, a.m} : memory::dims{a.k, 1};
    memory::dims bs = a.trans_b ? memory::dims{1, a.k} : memory::dims{a.n, 1};
    if (a.batches != 1) {  // [batches, rows, cols], each matrix contiguous
      ad_dims.insert(ad_dims.begin(), a.batches);
      bd_dims.insert(bd_dims.begin(), a.batches);
      cd_dims.insert(cd_dims.begin(), a.batches);
      as.insert(as.begin(), a.m * a.k);
      bs.insert(bs.begin(), a.k * a.n);
    }
    memory::desc ad(ad_dims, dt::f32, as), bd(bd_dims, dt::f32, bs);
    // Native bf16: bf16 copies of both operands (same strides), fp32 result and bias.
    memory::desc ac(ad.dims(), compute_dt(*this), as), bc(bd.dims(), compute_dt(*this), bs);
    memory::desc cd = plain(cd_dims);
    memory::desc biasd = plain({1, a.n});
    auto d = fwd_bias ? dnnl::matmul::desc(ac, bc, biasd, cd) : dnnl::matmul::desc(ac, bc, cd);
    dnnl::matmul::primitive_desc pd(d, relu_attr(fusion[static_cast<size_t>(i)].relu >= 0), eng);
    s.prim = dnnl::matmul(pd);
    s.args[DNNL_ARG_SRC] = bind_in(*this, s, ac, ad, ptr(op.inputs[0]), 0);
    s.args[DNNL_ARG_WEIGHTS] = bind_in(*this, s, bc, bd, b, 1);
    if (fwd_bias) s.args[DNNL_ARG_BIAS] = memory(biasd, eng, ptr(op.inputs[2]));
    s.args[DNNL_ARG_DST] = memory(cd, eng, ptr(fused_out(i)));
  }
  exec(*this, s);
  if (op.outputs.size() > 1) {  // db[n] = sum over the rows of dC
    const bool dc_first = op.forward_op >= 0 && g.op(op.forward_op).attrs.trans_b;
    const int dc = op.inputs[dc_first ? 0 : 1];
    const float* bp = ptr(dc);
    float* db = ptr(op.outputs[1]);
    const int64_t cols = numel(op.outputs[1]), rows = numel(dc) / cols;
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < cols; ++j) {
      double acc = 0;
      for (int64_t r = 0; r < rows; ++r) acc += bp[r * cols + j];
      db[j] = static_cast<float>(acc);
    }
  }
}

// Training-mode batch norm. The graph's two saved statistics hold the batch mean and the
// batch variance (oneDNN's backward pass takes the variance, not its inverse root).
// Shape of a batch norm's operands for bn_kernel.hpp, in the layout of tensor t.
static BnShape bn_shape(const Runner& r, const OpGraph& g, int fwd, int t) {
  const memory::dims d = bn_desc(g, fwd).dims();
  BnShape sh;
  sh.n = d[0];
  sh.c = d[1];
  sh.s = d[2] * d[3];
  sh.block = r.layout_block(t);
  return sh;
}

// Batch norm runs on the kernels (bn_kernel.hpp in fp32, bn_kernel_bf16.hpp where x is
// stored bf16 on the native path) in the storage of its input x; an operand stored otherwise
// (Inception: a blocked convolution output normalised into a plain concat; ResNet's stem: a
// bf16 blocked convolution output normalised into a plain fp32 max-pool input) passes
// through a scratch copy in x's storage (one reorder, which has no spinning barrier, unlike
// oneDNN's batch norm).
bool Runner::bn_own_kernel_fwd(int bn) const {
  if (!opts.own_batch_norm) return false;
  const int x = g_.op(bn).inputs[0];
  return !bf16_stored(x) || (layout_block(x) == 16 && bn_bf16_kernel_available());
}
bool Runner::bn_own_kernel_bwd(int bn_bwd) const { return bn_own_kernel_fwd(g_.op(bn_bwd).forward_op); }

namespace {
size_t bytes_in(const Runner& r, int t, Runner::Storage s) {
  return static_cast<size_t>(r.numel(t)) * (s.bf16 ? sizeof(uint16_t) : sizeof(float));
}
// Copies a batch norm operand between storages (layout and element type; to bf16 rounds to
// nearest even, from bf16 is exact).
void bn_relayout(Runner& r, const memory::dims& d, const void* from, Runner::Storage from_s, void* to,
                 Runner::Storage to_s) {
  auto desc = [&](Runner::Storage s) {
    return memory::desc(d, s.bf16 ? dt::bf16 : dt::f32, s.block == 1 ? tag::abcd : s.block == 8 ? tag::aBcd8b : tag::aBcd16b);
  };
  memory src(desc(from_s), r.eng, const_cast<void*>(from)), dst(desc(to_s), r.eng, to);
  dnnl::reorder(src, dst).execute(r.strm, src, dst);  // oneDNN's primitive cache keeps it
  r.strm.wait();
}
// t's storage in `want`: t itself, or a scratch copy in slot `slot`.
const void* bn_operand(Runner& r, const memory::dims& d, int t, Runner::Storage want, int slot) {
  if (r.storage_of(t) == want) return r.ptr(t);
  void* tmp = r.scratch(slot, bytes_in(r, t, want));
  bn_relayout(r, d, r.ptr(t), r.storage_of(t), tmp, want);
  return tmp;
}
const uint16_t* bf16_ptr(const void* p) { return static_cast<const uint16_t*>(p); }
const float* f32_ptr(const void* p) { return static_cast<const float*>(p); }
}  // namespace

void Runner::on_BatchNorm(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  if (bn_own_kernel_fwd(i)) {
    const Fusion& f = fusion[static_cast<size_t>(i)];
    const memory::dims d = bn_desc(g, i).dims();
    const Storage xs = storage_of(op.inputs[0]);
    const int out = fused_out(i);
    const void* residual = nullptr;
    if (f.add >= 0) {
      const OpNode& a = g.op(f.add);
      residual = bn_operand(*this, d, a.inputs[0] == op.outputs[0] ? a.inputs[1] : a.inputs[0], xs, 1);
    }
    void* y = storage_of(out) == xs ? static_cast<void*>(ptr(out)) : scratch(0, bytes_in(*this, out, xs));
    const BnShape sh = bn_shape(*this, g, i, op.inputs[0]);
    if (xs.bf16)
      bn_forward_bf16(sh, kBnEps, bf16_ptr(ptr(op.inputs[0])), ptr(op.inputs[1]), ptr(op.inputs[2]),
                      bf16_ptr(residual), f.relu >= 0, static_cast<uint16_t*>(y), ptr(op.outputs[1]),
                      ptr(op.outputs[2]));
    else
      bn_forward(sh, kBnEps, ptr(op.inputs[0]), ptr(op.inputs[1]), ptr(op.inputs[2]), f32_ptr(residual),
                 f.relu >= 0, static_cast<float*>(y), ptr(op.outputs[1]), ptr(op.outputs[2]));
    if (y != ptr(out)) bn_relayout(*this, d, y, xs, ptr(out), storage_of(out));
    exact_bf16_out[static_cast<size_t>(i)] = xs.bf16;  // bf16 stores, and exact bf16 -> fp32 copies
    return;
  }
  bool fresh;
  auto& s = state_of<Prim>(*this, i, fresh);
  if (fresh) {
    auto pd = bn_fwd_pd(*this, g, i);
    s.prim = dnnl::batch_normalization_forward(pd);
    memory::desc c = plain({g.tensor(op.inputs[1]).desc.numel()});
    memory::desc d = bn_desc(g, i);
    s.args[DNNL_ARG_SRC] = bind_in(*this, s, pd.src_desc(), stored(*this, d, op.inputs[0]), ptr(op.inputs[0]), 0);
    s.args[DNNL_ARG_SCALE] = memory(c, eng, ptr(op.inputs[1]));
    s.args[DNNL_ARG_SHIFT] = memory(c, eng, ptr(op.inputs[2]));
    s.args[DNNL_ARG_DST] = bind_out(*this, s, pd.dst_desc(), stored(*this, d, op.outputs[0]), ptr(op.outputs[0]), 2);
    s.args[DNNL_ARG_MEAN] = memory(pd.mean_desc(), eng, ptr(op.outputs[1]));
    s.args[DNNL_ARG_VARIANCE] = memory(pd.variance_desc(), eng, ptr(op.outputs[2]));
    exact_bf16_out[static_cast<size_t>(i)] = bn_native(*this, g, i);
  }
  exec(*this, s);
}

void Runner::on_BatchNormBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {dy, x, gamma, mean, var}; out: {dx, dgamma, dbeta}
  if (bn_own_kernel_bwd(i)) {
    const int ab = fusion[static_cast<size_t>(i)].act_bwd;  // fused ReLU backward: {dy of the ReLU, its output}
    const memory::dims d = bn_desc(g, op.forward_op).dims();
    const Storage xs = storage_of(op.inputs[1]);
    const int dx_t = op.outputs[0];
    const void* dy = bn_operand(*this, d, ab >= 0 ? g.op(ab).inputs[0] : op.inputs[0], xs, 0);
    const void* relu_y = ab >= 0 ? bn_operand(*this, d, g.op(ab).inputs[1], xs, 1) : nullptr;
    void* dx = storage_of(dx_t) == xs ? static_cast<void*>(ptr(dx_t)) : scratch(2, bytes_in(*this, dx_t, xs));
    const BnShape sh = bn_shape(*this, g, op.forward_op, op.inputs[1]);
    if (xs.bf16)
      bn_backward_bf16(sh, kBnEps, bf16_ptr(dy), bf16_ptr(relu_y), bf16_ptr(ptr(op.inputs[1])), ptr(op.inputs[2]),
                       ptr(op.inputs[3]), ptr(op.inputs[4]), static_cast<uint16_t*>(dx), ptr(op.outputs[1]),
                       ptr(op.outputs[2]));
    else
      bn_backward(sh, kBnEps, f32_ptr(dy), f32_ptr(relu_y), ptr(op.inputs[1]), ptr(op.inputs[2]), ptr(op.inputs[3]),
                  ptr(op.inputs[4]), static_cast<float*>(dx), ptr(op.outputs[1]), ptr(op.outputs[2]));
    if (dx != ptr(dx_t)) bn_relayout(*this, d, dx, xs, ptr(dx_t), storage_of(dx_t));
    exact_bf16_out[static_cast<size_t>(i)] = xs.bf16;
    return;
  }
  bool fresh;
  auto& s = state_of<Prim>(*this, i, fresh);
  if (fresh) {
    memory::desc d = bn_desc(g, op.forward_op), cd = bn_compute_desc(*this, g, op.forward_op);
    dnnl::batch_normalization_backward::primitive_desc pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, cd, cd, kBnEps, kBnFlags), eng,
        bn_fwd_pd(*this, g, op.forward_op));
    s.prim = dnnl::batch_normalization_backward(pd);
    memory::desc c = plain({g.tensor(op.inputs[2]).desc.numel()});
    s.args[DNNL_ARG_DIFF_DST] =
        bind_in(*this, s, pd.diff_dst_desc(), stored(*this, d, op.inputs[0]), ptr(op.inputs[0]), 0);
    s.args[DNNL_ARG_SRC] = bind_in(*this, s, pd.src_desc(), stored(*this, d, op.inputs[1]), ptr(op.inputs[1]), 1);
    s.args[DNNL_ARG_SCALE] = memory(c, eng, ptr(op.inputs[2]));
    // oneDNN 2.6 asks for the shift too (it does not enter the gradients): the forward's beta.
    s.args[DNNL_ARG_SHIFT] = memory(c, eng, ptr(g.op(op.forward_op).inputs[2]));
    s.args[DNNL_ARG_MEAN] = memory(pd.mean_desc(), eng, ptr(op.inputs[3]));
    s.args[DNNL_ARG_VARIANCE] = memory(pd.variance_desc(), eng, ptr(op.inputs[4]));
    s.args[DNNL_ARG_DIFF_SRC] =
        bind_out(*this, s, pd.diff_src_desc(), stored(*this, d, op.outputs[0]), ptr(op.outputs[0]), 2);
    s.args[DNNL_ARG_DIFF_SCALE] = memory(c, eng, ptr(op.outputs[1]));
    s.args[DNNL_ARG_DIFF_SHIFT] = memory(c, eng, ptr(op.outputs[2]));
    exact_bf16_out[static_cast<size_t>(i)] = bn_native(*this, g, op.forward_op);
  }
  exec(*this, s);
}

void Runner::on_Activation(const OpGraph& g, int i) {
  bool fresh;
  auto& s = state_of<Prim>(*this, i, fresh);
  const OpNode& op = g.op(i);
  if (fresh) {
    auto pd = eltwise_fwd_pd(*this, g, i);
    s.prim = dnnl::eltwise_forward(pd);
    s.args[DNNL_ARG_SRC] = memory(pd.src_desc(), eng, ptr(op.inputs[0]));
    s.args[DNNL_ARG_DST] = memory(pd.dst_desc(), eng, ptr(op.outputs[0]));
    // max(x, 0) of a bf16 value is a bf16 value: no rounding pass needed.
    exact_bf16_out[static_cast<size_t>(i)] =
        bf16_native && op.attrs.act == ActivationFn::relu && g.tensor(op.inputs[0]).desc.dtype == DType::bf16;
  }
  exec(*this, s);
}

void Runner::on_ActivationBackward(const OpGraph& g, int i) {
  bool fresh;
  auto& s = state_of<Prim>(*this, i, fresh);
  const OpNode& op = g.op(i);  // in: {dy, y}
  if (fresh) {
    memory::desc d = flat_desc(*this, g, op.inputs[0]);
    dnnl::eltwise_backward::primitive_desc pd(
        dnnl::eltwise_backward::desc(eltwise_alg(op.attrs.act), d, d, 0.f, 0.f), eng,
        eltwise_fwd_pd(*this, g, op.forward_op));
    s.prim = dnnl::eltwise_backward(pd);
    s.args[DNNL_ARG_DIFF_DST] = memory(d, eng, ptr(op.inputs[0]));
    // in: {dy, y}, or {dy, x} for GELU (training.cpp)
    s.args[op.attrs.act == ActivationFn::gelu ? DNNL_ARG_SRC : DNNL_ARG_DST] = memory(d, eng, ptr(op.inputs[1]));
    s.args[DNNL_ARG_DIFF_SRC] = memory(d, eng, ptr(op.outputs[0]));
  }
  exec(*this, s);
}

void Runner::on_Pool(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  if (pool_is_1d_global(g, i)) {  // [N, T, F] -> [N, F]: mean over time
    const Shape& x = g.tensor(op.inputs[0]).desc.shape;
    const float* xp = ptr(op.inputs[0]);
    float* y = ptr(op.outputs[0]);
    const int64_t n = x[0], t = x[1], f = x[2];
    // Rows of x are contiguous over features: sum row by row (a feature-at-a-time walk
    // touched a new cache line per add), in double, in time order (deterministic).
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < n; ++b) {
      std::vector<double> acc(static_cast<size_t>(f), 0.0);
      for (int64_t s = 0; s < t; ++s) {
        const float* row = xp + (b * t + s) * f;
        for (int64_t k = 0; k < f; ++k) acc[static_cast<size_t>(k)] += row[k];
      }
      for (int64_t k = 0; k < f; ++k) y[b * f + k] = static_cast<float>(acc[static_cast<size_t>(k)] / static_cast<double>(t));
    }
    return;
  }
  const PlainPool p = plain_pool(g, i);
  pool_plain_forward(p, ptr(op.inputs[0]), ptr(op.outputs[0]));
}

// Max pooling's backward pass routes each gradient to its window's argmax, found again from
// the graph's {dy, x, y} inputs (pool_plain.cpp); average pooling needs dy only.
void Runner::on_PoolBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  if (pool_is_1d_global(g, op.forward_op)) {
    const Shape& x = g.tensor(op.outputs[0]).desc.shape;
    const float* dy = ptr(op.inputs[0]);
    float* dx = ptr(op.outputs[0]);
    const int64_t n = x[0], t = x[1], f = x[2];
    const float inv = 1.0f / static_cast<float>(t);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t s = 0; s < t; ++s)
        for (int64_t k = 0; k < f; ++k) dx[(b * t + s) * f + k] = dy[b * f + k] * inv;
    return;
  }
  // in: {dy, x, y} for max pooling, {dy} for average pooling (training.cpp)
  const PlainPool p = plain_pool(g, op.forward_op);
  const bool has_xy = op.inputs.size() == 3;
  pool_plain_backward(p, ptr(op.inputs[0]), has_xy ? ptr(op.inputs[1]) : nullptr,
                      has_xy ? ptr(op.inputs[2]) : nullptr, ptr(op.outputs[0]));
}

}  // namespace xpusim::cpu
