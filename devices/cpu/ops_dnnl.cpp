// Op handlers backed by oneDNN primitives: convolution (forward, backward data, backward
// weights), matmul, batch normalisation, eltwise activations, the sum of blocked tensors,
// and pooling. On the native bf16 path (Runner::bf16_native) conv, matmul and blocked batch
// norm compute in bf16 with fp32 accumulation; the reorders that change layout also change
// precision. Most tensors are stored plain (nchw, oihw, row-major matrices, fp32) so that
// every op can read them, and primitives reorder to and from their preferred layout (see
// bind_in); tensors that only conv, batch norm and elementwise ops touch are stored
// channel-blocked in the compute type and bound directly (choose_layouts). Primitives are
// created on an op's first run and reused.
// Batch norm lives in ops_dnnl_bn.cpp; the helpers both files share in dnnl_prims.hpp.
#include <omp.h>

#include <cmath>
#include <functional>
#include <vector>

#include "common/error.hpp"
#include "devices/cpu/bn_kernel.hpp"
#include "devices/cpu/bn_kernel_bf16.hpp"
#include "devices/cpu/conv_split.hpp"
#include "devices/cpu/dnnl_prims.hpp"
#include "devices/cpu/pool_plain.hpp"
#include "devices/cpu/runner.hpp"
#include "devices/cpu/weight_reorder.hpp"

namespace xpusim::cpu {

using namespace prims;  // NOLINT: the shared helpers of this file and ops_dnnl_bn.cpp


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
