// Helpers the oneDNN-backed op handlers share (ops_dnnl.cpp, ops_dnnl_bn.cpp): plain and
// blocked memory descriptors, the reorders around a primitive (Prim, exec, bind_in/out), the
// compute type of the native bf16 path, and the primitive descriptors of convolution,
// eltwise, pooling and batch norm built from the op graph.
#pragma once
#include <dnnl.hpp>

#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "devices/cpu/pool_plain.hpp"
#include "devices/cpu/runner.hpp"

namespace xpusim::cpu::prims {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

memory::desc plain(const memory::dims& d);
memory::dims dims_of(const Shape& s);

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
void exec(Runner& r, Prim& p, const std::function<void()>& body = {});

// Convolutions run in the layout oneDNN prefers (blocked nChw8c / OIhw8i8o on AVX2, which
// has JIT kernels; plain nchw only has im2col + sgemm). Inputs are reordered from the
// plain buffers before the primitive and outputs back after it, as PyTorch's mkldnn path
// does, so every other op keeps reading plain tensors.
memory bind_in(Runner& r, Prim& s, const memory::desc& want, const memory::desc& plain_d, float* p, int slot);
memory bind_out(Runner& r, Prim& s, const memory::desc& want, const memory::desc& plain_d, float* p, int slot);
memory::desc any_of(const memory::desc& d, dt type = dt::f32);
// The data type conv, matmul and batch norm compute in: bf16 on the native path (oneDNN
// accumulates in fp32 and the reorders around the primitive convert precision and layout
// in one pass), else fp32.
dt compute_dt(const Runner& r);

// Channel-blocked layout in the compute type (bf16 on the native path).
memory::desc blocked_desc(const Runner& r, const memory::dims& d);
// How tensor t is stored (plain_d describes it as plain fp32).
memory::desc stored(const Runner& r, const memory::desc& plain_d, int t);
// What a primitive is asked to take for tensor t: the blocked layout in the compute type
// when t is stored blocked (no reorder, or only a precision change), else whatever oneDNN
// prefers in that type.
memory::desc want(const Runner& r, const memory::desc& plain_d, int t, dt type);

// Convolution geometry from the forward op (backward ops pass their forward_op).
struct ConvGeom {
  memory::desc src, wei, bias, dst;
  memory::dims strides, dil, pad_l, pad_r;
};

ConvGeom conv_geom(const OpGraph& g, int fwd);

// A ReLU eltwise post-op (fusion.cpp), or no attributes.
dnnl::primitive_attr relu_attr(bool relu);

// relu: the forward primitive itself, with the fused ReLU; false for the hint that the
// backward primitives are created from.
dnnl::convolution_forward::primitive_desc conv_fwd_pd(Runner& r, const OpGraph& g, int fwd, bool relu = false);

// The backward-weights primitive of forward convolution `fwd` on src and diff_dst
// descriptors (any number of images): bf16 (native) or fp32 activations and gradients in,
// fp32 weight gradient out (it feeds the fp32 master).
dnnl::convolution_backward_weights::primitive_desc conv_bwd_weights_pd_on(Runner& r, const OpGraph& g, int fwd,
                                                                          const memory::desc& src,
                                                                          const memory::desc& dst, bool bias,
                                                                          const dnnl::primitive_attr& attr = {});

// The same for the step's tensors: forward convolution `fwd` reading gradient tensor dy.
dnnl::convolution_backward_weights::primitive_desc conv_bwd_weights_pd(Runner& r, const OpGraph& g, int fwd, int dy,
                                                                       bool bias);

template <class S>
S& state_of(Runner& r, int op, bool& fresh) {
  auto& s = r.state[static_cast<size_t>(op)];
  fresh = !s;
  if (!s) s = std::make_unique<S>();
  return static_cast<S&>(*s);
}

dnnl::algorithm eltwise_alg(ActivationFn f);

// Elementwise ops see a tensor as a 1-D run of its elements, in whatever layout all their
// operands share (one group of Runner::blocked), fp32 or, when blocked, the compute type.
memory::desc flat_desc(const Runner& r, const OpGraph& g, int t);

dnnl::eltwise_forward::primitive_desc eltwise_fwd_pd(Runner& r, const OpGraph& g, int fwd);

// Pooling over 4-D tensors (pool_plain.hpp); global pooling writes [N, C] viewed as [N, C, 1, 1].
PlainPool plain_pool(const OpGraph& g, int fwd);

bool pool_is_1d_global(const OpGraph& g, int fwd);

// Batch norm over [N, C, H, W], or [N, C] viewed as [N, C, 1, 1].
memory::desc bn_desc(const OpGraph& g, int fwd);
// oneDNN's JIT batch norm needs channel-blocked data (nChw8c on AVX2); on plain nchw it
// falls back to a generic implementation that took over half of a ResNet-50 step. 4-D
// tensors with whole blocks of 8 channels are therefore reordered around the primitive.
// With AVX-512 the kernels block by 16 channels (aBcd16b), as the convolutions around
// them do. On the native bf16 path blocked batch norm runs in bf16 (fp32 statistics).
memory::desc bn_compute_desc(const Runner& r, const OpGraph& g, int fwd);
bool bn_native(const Runner& r, const OpGraph& g, int fwd);
inline constexpr float kBnEps = 1e-5f;  // PyTorch BatchNorm2d default
inline const auto kBnFlags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;

dnnl::batch_normalization_forward::primitive_desc bn_fwd_pd(Runner& r, const OpGraph& g, int fwd);

}  // namespace xpusim::cpu::prims
