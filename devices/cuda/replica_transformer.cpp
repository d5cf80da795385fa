// Transformer op kinds on the CUDA backend: layer norm, attention, softmax, transpose, scale
// (GELU and the batched matmul live with their kinds in replica_ops.cpp).
//
// Attention is composed as the frameworks without FlashAttention do it: per batch element a
// cuBLAS strided-batched GEMM over the heads, a softmax kernel, and a second batched GEMM.
// The head split needs no copy: head h of q [N, T, D] is the [T, dh] matrix starting at
// column h dh with leading dimension D, so consecutive heads are `dh` elements apart (the
// GEMM batch stride) and batch elements T D apart (one call each). Scores and their gradient
// are fp32 scratch (cuBLAS writes fp32 from fp16/bf16 operands); the probabilities, saved for
// the backward pass, are in the activation type like the graph says.
#include <cmath>

#include "common/error.hpp"
#include "devices/cuda/kernels.cuh"
#include "devices/cuda/replica.hpp"

namespace xpusim::cuda {

namespace {

int64_t last_dim(const Shape& s) { return s.empty() ? 1 : s.back(); }

// Shapes of one attention op (from its forward op for the backward).
struct AttnDims {
  int64_t n, tq, tk, d, heads, dh;
  float alpha;  // 1 / sqrt(dh)
};
AttnDims attn_dims(const OpGraph& g, const OpNode& f) {
  const Shape& qs = g.tensor(f.inputs[0]).desc.shape;
  const Shape& ks = g.tensor(f.inputs[1]).desc.shape;
  AttnDims a{};
  a.n = qs[0], a.tq = qs[1], a.tk = ks[1], a.d = qs[2];
  a.heads = f.attrs.heads < 1 ? 1 : f.attrs.heads;
  a.dh = a.d / a.heads;
  a.alpha = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.dh)));
  return a;
}

// Element offset `e` into a buffer of element size `eb`.
const void* at(const void* p, int64_t e, size_t eb) { return static_cast<const char*>(p) + e * static_cast<int64_t>(eb); }
void* at(void* p, int64_t e, size_t eb) { return static_cast<char*>(p) + e * static_cast<int64_t>(eb); }

// One batch element's per-head product: C_h = op(A_h) op(B_h) for h < heads. Per-head operands
// are either a head slice of a [T, D] activation (ld D, stride dh) or a [Tq, Tk] score matrix
// (ld Tk, stride Tq Tk).
struct HeadOperand {
  const void* p;
  int64_t ld, stride;
};
struct HeadsGemm {
  cublasHandle_t h;
  GemmMath math;
  int64_t heads;
  DType ab_type;
  void operator()(bool ta, bool tb, int64_t m, int64_t n, int64_t k, HeadOperand A, HeadOperand B, void* c,
                  int64_t ldc, int64_t stride_c, DType c_type) const {
    GemmArgs ga;
    ga.trans_a = ta, ga.trans_b = tb;
    ga.m = m, ga.n = n, ga.k = k;
    ga.a = A.p, ga.lda = A.ld, ga.stride_a = A.stride;
    ga.b = B.p, ga.ldb = B.ld, ga.stride_b = B.stride;
    ga.c = c, ga.ldc = ldc, ga.stride_c = stride_c;
    ga.batch = heads;
    ga.ab_type = ab_type, ga.c_type = c_type;
    gemm(h, ga, math);
  }
};

}  // namespace

void Replica::on_LayerNorm(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: x, gamma[, beta]; out: y, mean, rstd
  // No beta: a bias-free LayerNorm (MPT) or RMSNorm (attrs.rms: mean 0), as the CPU runner.
  const int64_t d = last_dim(shape(n.inputs[0]));
  const float* beta = n.inputs.size() > 2 ? static_cast<const float*>(P(n.inputs[2])) : nullptr;
  k_layer_norm_forward(P(n.inputs[0]), dtype(n.inputs[0]), static_cast<const float*>(P(n.inputs[1])), beta,
                       numel(n.inputs[0]) / d, d, static_cast<float>(n.attrs.eps), n.attrs.rms, P(n.outputs[0]),
                       static_cast<float*>(P(n.outputs[1])), static_cast<float*>(P(n.outputs[2])), stream_);
}

void Replica::on_LayerNormBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: dy, x, gamma, mean, rstd; out: dx, dgamma[, dbeta]
  const int64_t d = last_dim(shape(n.inputs[1]));
  if (dtype(n.inputs[0]) != dtype(n.inputs[1])) throw InternalError("cuda layer norm backward: dy and x types differ");
  k_layer_norm_backward(P(n.inputs[0]), P(n.inputs[1]), dtype(n.inputs[1]), static_cast<const float*>(P(n.inputs[2])),
                        static_cast<const float*>(P(n.inputs[3])), static_cast<const float*>(P(n.inputs[4])),
                        numel(n.inputs[1]) / d, d, n.attrs.rms, P(n.outputs[0]), static_cast<float*>(P(n.outputs[1])),
                        n.outputs.size() > 2 ? static_cast<float*>(P(n.outputs[2])) : nullptr, stream_);
}

void Replica::on_Attention(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: q, k, v; out: y, probs [N, H, Tq, Tk]
  const AttnDims a = attn_dims(g, n);
  const DType ct = dtype(n.inputs[0]);
  for (int t : {n.inputs[1], n.inputs[2], n.outputs[0], n.outputs[1]})
    if (dtype(t) != ct) throw InternalError("cuda attention: mixed element types in " + n.name);
  const size_t eb = static_cast<size_t>(dtype_bytes(ct));
  const int64_t sq = a.tq * a.tk;  // one head's scores
  float* scores = static_cast<float*>(scratch(static_cast<size_t>(a.n * a.heads * sq) * sizeof(float)));
  HeadsGemm heads_gemm{cublas_, math_, a.heads, ct};
  for (int64_t b = 0; b < a.n; ++b) {  // S_h = Q_h K_h^T, [Tq, Tk] per head, fp32
    heads_gemm(false, true, a.tq, a.tk, a.dh, {at(P(n.inputs[0]), b * a.tq * a.d, eb), a.d, a.dh},
               {at(P(n.inputs[1]), b * a.tk * a.d, eb), a.d, a.dh}, scores + b * a.heads * sq, a.tk, sq,
               DType::fp32);
  }
  k_softmax_forward(scores, DType::fp32, P(n.outputs[1]), ct, a.n * a.heads * a.tq, a.tk, a.tq, n.attrs.causal,
                    a.alpha, stream_);
  for (int64_t b = 0; b < a.n; ++b) {  // Y_h = P_h V_h, written into head h's columns of y
    heads_gemm(false, false, a.tq, a.dh, a.tk, {at(P(n.outputs[1]), b * a.heads * sq, eb), a.tk, sq},
               {at(P(n.inputs[2]), b * a.tk * a.d, eb), a.d, a.dh}, at(P(n.outputs[0]), b * a.tq * a.d, eb), a.d,
               a.dh, ct);
  }
  free_scratch(scores);
}

void Replica::on_AttentionBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: dy, q, k, v, probs; out: dq, dk, dv
  const AttnDims a = attn_dims(g, g.op(n.forward_op));
  const DType ct = dtype(n.inputs[1]);
  for (int t : {n.inputs[0], n.inputs[2], n.inputs[3], n.inputs[4], n.outputs[0], n.outputs[1], n.outputs[2]})
    if (dtype(t) != ct) throw InternalError("cuda attention backward: mixed element types in " + n.name);
  const size_t eb = static_cast<size_t>(dtype_bytes(ct));
  const int64_t sq = a.tq * a.tk;
  const int64_t scores_n = a.n * a.heads * sq;
  float* dp = static_cast<float*>(scratch(static_cast<size_t>(scores_n) * sizeof(float)));
  void* ds = scratch(static_cast<size_t>(scores_n) * eb);
  const void *dy = P(n.inputs[0]), *q = P(n.inputs[1]), *k = P(n.inputs[2]), *v = P(n.inputs[3]),
             *pr = P(n.inputs[4]);
  void *dq = P(n.outputs[0]), *dk = P(n.outputs[1]), *dv = P(n.outputs[2]);
  HeadsGemm heads_gemm{cublas_, math_, a.heads, ct};
  for (int64_t b = 0; b < a.n; ++b) {
    const int64_t oq = b * a.tq * a.d, ok = b * a.tk * a.d, os = b * a.heads * sq;
    // dV_h [Tk, dh] = P_h^T dY_h
    heads_gemm(true, false, a.tk, a.dh, a.tq, {at(pr, os, eb), a.tk, sq}, {at(dy, oq, eb), a.d, a.dh},
               at(dv, ok, eb), a.d, a.dh, ct);
    // dP_h [Tq, Tk] = dY_h V_h^T (fp32)
    heads_gemm(false, true, a.tq, a.tk, a.dh, {at(dy, oq, eb), a.d, a.dh}, {at(v, ok, eb), a.d, a.dh}, dp + os,
               a.tk, sq, DType::fp32);
  }
  // dS = alpha P (dP - rowsum(dP P)); masked keys have P = 0, hence dS = 0 there.
  k_softmax_backward(dp, DType::fp32, pr, ds, ct, a.n * a.heads * a.tq, a.tk, a.alpha, stream_);
  for (int64_t b = 0; b < a.n; ++b) {
    const int64_t oq = b * a.tq * a.d, ok = b * a.tk * a.d, os = b * a.heads * sq;
    // dQ_h [Tq, dh] = dS_h K_h
    heads_gemm(false, false, a.tq, a.dh, a.tk, {at(ds, os, eb), a.tk, sq}, {at(k, ok, eb), a.d, a.dh},
               at(dq, oq, eb), a.d, a.dh, ct);
    // dK_h [Tk, dh] = dS_h^T Q_h
    heads_gemm(true, false, a.tk, a.dh, a.tq, {at(ds, os, eb), a.tk, sq}, {at(q, oq, eb), a.d, a.dh},
               at(dk, ok, eb), a.d, a.dh, ct);
  }
  free_scratch(ds);
  free_scratch(dp);
}

void Replica::on_Softmax(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  const Shape& s = shape(n.inputs[0]);
  const int64_t cols = last_dim(s), tq = s.size() >= 2 ? s[s.size() - 2] : 1;
  k_softmax_forward(P(n.inputs[0]), dtype(n.inputs[0]), P(n.outputs[0]), dtype(n.outputs[0]), numel(n.inputs[0]) / cols,
                    cols, tq, n.attrs.causal, 1.f, stream_);
}

void Replica::on_SoftmaxBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: dy, y
  const int64_t cols = last_dim(shape(n.inputs[1]));
  if (dtype(n.inputs[1]) != dtype(n.outputs[0])) throw InternalError("cuda softmax backward: y and dx types differ");
  k_softmax_backward(P(n.inputs[0]), dtype(n.inputs[0]), P(n.inputs[1]), P(n.outputs[0]), dtype(n.outputs[0]),
                     numel(n.inputs[1]) / cols, cols, 1.f, stream_);
}

void Replica::on_Transpose(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  const Shape& s = shape(n.inputs[0]);
  if (n.attrs.perm.size() != s.size()) throw InternalError("cuda transpose: permutation rank differs in " + n.name);
  k_transpose(P(n.inputs[0]), P(n.outputs[0]), dtype(n.inputs[0]), s.data(), n.attrs.perm.data(),
              static_cast<int>(s.size()), stream_);
}

void Replica::on_Scale(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  k_scale(P(n.inputs[0]), P(n.outputs[0]), numel(n.inputs[0]), static_cast<float>(n.attrs.alpha),
          dtype(n.inputs[0]), stream_);
}

}  // namespace xpusim::cuda
