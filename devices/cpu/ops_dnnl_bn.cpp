// Batch normalisation handlers of the CPU runner: forward and backward on the project's own
// kernels (bn_kernel.hpp, bn_kernel_bf16.hpp) or oneDNN's primitive, in the storage
// (layout and element type) of the input; see ops_dnnl.cpp for the other oneDNN handlers.
#include <dnnl.hpp>

#include <cmath>
#include <vector>

#include "common/error.hpp"
#include "devices/cpu/bn_kernel.hpp"
#include "devices/cpu/bn_kernel_bf16.hpp"
#include "devices/cpu/dnnl_prims.hpp"
#include "devices/cpu/runner.hpp"

namespace xpusim::cpu {

using namespace prims;  // NOLINT: the helpers shared with ops_dnnl.cpp

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

}  // namespace xpusim::cpu
