// Transformer op kinds on the CPU backend: layer norm, multi-head attention, softmax,
// transpose and scale (GELU and the batched matmul are oneDNN primitives in ops_dnnl.cpp).
//
// Layer norm and softmax are OpenMP loops over rows: the graph saves the per-row mean and
// 1/sqrt(var + eps) (oneDNN's layer_normalization saves the variance instead, and would
// need a second pass to convert). Attention runs one (sample, head) pair per OpenMP
// iteration with oneDNN's sgemm on the head's column slice (leading dimension D, no copy);
// sgemm called inside a parallel region runs single-threaded, so the pairs are the unit of
// parallelism. Every reduction has a fixed order: results are bit-reproducible for a fixed
// thread count. All tensors here are stored plain fp32 (choose_layouts in ops_dnnl.cpp blocks
// only tensors that conv / batch norm / elementwise ops alone touch); under bf16 the
// executor rounds the bf16-typed outputs afterwards, the saved statistics stay fp32.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.hpp"
#include "devices/cpu/runner.hpp"

namespace xpusim::cpu {

namespace {

// C = alpha op(A) op(B) + beta C, row-major with explicit leading dimensions. Called inside
// parallel regions, where an exception would terminate: the caller checks the status after.
dnnl_status_t gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void check(int failed, const OpNode& op) {
  if (failed) throw InternalError("oneDNN sgemm failed in " + op.name);
}

struct AttnGeom {
  int64_t n, tq, tk, d, heads, dh;
  float scale;
  bool causal;
};

AttnGeom attn_geom(const OpGraph& g, int fwd) {
  const OpNode& op = g.op(fwd);
  const Shape& q = g.tensor(op.inputs[0]).desc.shape;
  const Shape& k = g.tensor(op.inputs[1]).desc.shape;
  AttnGeom a{q[0], q[1], k[1], q[2], op.attrs.heads, q[2] / op.attrs.heads, 0.f, op.attrs.causal};
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(a.dh)));
  return a;
}

// Softmax of one row in place over its first `valid` entries (the rest, masked keys, are 0).
void softmax_row(float* r, int64_t len, int64_t valid) {
  float mx = r[0];
  for (int64_t j = 1; j < valid; ++j) mx = std::max(mx, r[j]);
  double sum = 0;
  for (int64_t j = 0; j < valid; ++j) {
    r[j] = std::exp(r[j] - mx);
    sum += r[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < valid; ++j) r[j] *= inv;
  for (int64_t j = valid; j < len; ++j) r[j] = 0.f;
}

}  // namespace

// y = (x - mean) * rstd * gamma + beta over the last axis; saves mean and rstd per row.
void Runner::on_LayerNorm(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {x, gamma[, beta]}; out: {y, mean, rstd}
  const int64_t d = g.tensor(op.inputs[0]).desc.shape.back(), rows = numel(op.inputs[0]) / d;
  const float* x = ptr(op.inputs[0]);
  const float* gamma = ptr(op.inputs[1]);
  const float* beta = op.inputs.size() > 2 ? ptr(op.inputs[2]) : nullptr;  // none: MPT, RMSNorm
  const bool rms = op.attrs.rms;
  float* y = ptr(op.outputs[0]);
  float* mean = ptr(op.outputs[1]);
  float* rstd = ptr(op.outputs[2]);
  const double eps = op.attrs.eps;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    double s = 0;
    for (int64_t j = 0; j < d; ++j) s += xr[j];
    const double mu = rms ? 0.0 : s / static_cast<double>(d);  // RMSNorm: x / rms(x)
    double v = 0;  // two passes: no cancellation when |mean| >> std
    for (int64_t j = 0; j < d; ++j) v += (xr[j] - mu) * (xr[j] - mu);
    const double rs = 1.0 / std::sqrt(v / static_cast<double>(d) + eps);
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(rs);
    const float m = static_cast<float>(mu), rsf = static_cast<float>(rs);
    float* yr = y + r * d;
    for (int64_t j = 0; j < d; ++j) yr[j] = (xr[j] - m) * rsf * gamma[j] + (beta ? beta[j] : 0.0f);
  }
}

// With xh = (x - mean) rstd and g = gamma dy: dx = rstd (g - mean(g) - xh mean(g xh)),
// dgamma = sum over rows of dy xh, dbeta = sum over rows of dy.
void Runner::on_LayerNormBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {dy, x, gamma, mean, rstd}; out: {dx, dgamma[, dbeta]}
  const int64_t d = g.tensor(op.inputs[1]).desc.shape.back(), rows = numel(op.inputs[1]) / d;
  const auto in = inputs_of<5>(op);
  const float *dy = in[0], *x = in[1], *gamma = in[2], *mean = in[3], *rstd = in[4];
  const auto out = outputs_of<2>(op);
  float *dx = out[0], *dgamma = out[1];
  float* dbeta = op.outputs.size() > 2 ? ptr(op.outputs[2]) : nullptr;
  const bool rms = op.attrs.rms;  // mean 0: dx = rstd (g - xh mean(g xh))
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * d;
    const float* xr = x + r * d;
    const float m = mean[r], rs = rstd[r];
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < d; ++j) {
      const double gj = static_cast<double>(gamma[j]) * dyr[j];
      sg += gj;
      sgx += gj * ((xr[j] - m) * rs);
    }
    const float mg = rms ? 0.0f : static_cast<float>(sg / static_cast<double>(d)), mgx = static_cast<float>(sgx / static_cast<double>(d));
    float* dxr = dx + r * d;
    for (int64_t j = 0; j < d; ++j) dxr[j] = rs * (gamma[j] * dyr[j] - mg - (xr[j] - m) * rs * mgx);
  }
  // Column sums: threads own slices of columns and walk the rows in order (contiguous reads
  // within a slice, a fixed summation order).
  constexpr int64_t kSlice = 64;
  const int64_t slices = (d + kSlice - 1) / kSlice;
#pragma omp parallel for schedule(static)
  for (int64_t s = 0; s < slices; ++s) {
    const int64_t j0 = s * kSlice, j1 = std::min(d, j0 + kSlice);
    double ag[kSlice] = {}, ab[kSlice] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* dyr = dy + r * d;
      const float* xr = x + r * d;
      const float m = mean[r], rs = rstd[r];
      for (int64_t j = j0; j < j1; ++j) {
        ag[j - j0] += static_cast<double>(dyr[j]) * ((xr[j] - m) * rs);
        ab[j - j0] += dyr[j];
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      dgamma[j] = static_cast<float>(ag[j - j0]);
      if (dbeta) dbeta[j] = static_cast<float>(ab[j - j0]);
    }
  }
}

// Per (sample n, head h): P = softmax(scale Q_h K_h^T) (causal: keys j > i get 0), written
// straight into the saved probs [N, H, Tq, Tk]; Y_h = P V_h into y's head columns.
void Runner::on_Attention(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {q, k, v}; out: {y, probs}
  const AttnGeom a = attn_geom(g, i);
  const auto in = inputs_of<3>(op);
  const float *q = in[0], *k = in[1], *v = in[2];
  const auto out = outputs_of<2>(op);
  float *y = out[0], *probs = out[1];
  const int64_t pairs = a.n * a.heads;
  int failed = 0;
#pragma omp parallel for schedule(static) reduction(| : failed)
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t n = p / a.heads, h = p % a.heads;
    const float* qh = q + n * a.tq * a.d + h * a.dh;
    const float* kh = k + n * a.tk * a.d + h * a.dh;
    const float* vh = v + n * a.tk * a.d + h * a.dh;
    float* P = probs + p * a.tq * a.tk;
    failed |= gemm(false, true, a.tq, a.tk, a.dh, a.scale, qh, a.d, kh, a.d, 0.f, P, a.tk) != dnnl_success;
    for (int64_t r = 0; r < a.tq; ++r) softmax_row(P + r * a.tk, a.tk, a.causal ? std::min(r + 1, a.tk) : a.tk);
    failed |= gemm(false, false, a.tq, a.dh, a.tk, 1.f, P, a.tk, vh, a.d, 0.f, y + n * a.tq * a.d + h * a.dh, a.d) !=
              dnnl_success;
  }
  check(failed, op);
}

// dV_h = P^T dY_h; dP = dY_h V_h^T; dS = P (dP - rowsum(dP P)) (masked entries have P = 0,
// so dS is 0 there); dQ_h = scale dS K_h; dK_h = scale dS^T Q_h.
void Runner::on_AttentionBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {dy, q, k, v, probs}; out: {dq, dk, dv}
  const AttnGeom a = attn_geom(g, op.forward_op);
  const auto in = inputs_of<5>(op);
  const float *dy = in[0], *q = in[1], *k = in[2], *v = in[3], *probs = in[4];
  const auto out = outputs_of<3>(op);
  float *dq = out[0], *dk = out[1], *dv = out[2];
  const int64_t pairs = a.n * a.heads;
  int failed = 0;
#pragma omp parallel reduction(| : failed)
  {
    std::vector<float> ds(static_cast<size_t>(a.tq * a.tk));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t n = p / a.heads, h = p % a.heads;
      const int64_t qo = n * a.tq * a.d + h * a.dh, ko = n * a.tk * a.d + h * a.dh;
      const float* P = probs + p * a.tq * a.tk;
      failed |= gemm(true, false, a.tk, a.dh, a.tq, 1.f, P, a.tk, dy + qo, a.d, 0.f, dv + ko, a.d) != dnnl_success;
      failed |= gemm(false, true, a.tq, a.tk, a.dh, 1.f, dy + qo, a.d, v + ko, a.d, 0.f, ds.data(), a.tk) != dnnl_success;
      for (int64_t r = 0; r < a.tq; ++r) {
        const float* pr = P + r * a.tk;
        float* dr = ds.data() + r * a.tk;
        double dot = 0;
        for (int64_t j = 0; j < a.tk; ++j) dot += static_cast<double>(dr[j]) * pr[j];
        const float df = static_cast<float>(dot);
        for (int64_t j = 0; j < a.tk; ++j) dr[j] = pr[j] * (dr[j] - df);
      }
      failed |= gemm(false, false, a.tq, a.dh, a.tk, a.scale, ds.data(), a.tk, k + ko, a.d, 0.f, dq + qo, a.d) !=
                dnnl_success;
      failed |= gemm(true, false, a.tk, a.dh, a.tq, a.scale, ds.data(), a.tk, q + qo, a.d, 0.f, dk + ko, a.d) !=
                dnnl_success;
    }
  }
  check(failed, op);
}

void Runner::on_Softmax(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  const int64_t d = g.tensor(op.inputs[0]).desc.shape.back(), rows = numel(op.inputs[0]) / d;
  const float* x = ptr(op.inputs[0]);
  float* y = ptr(op.outputs[0]);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(x + r * d, x + (r + 1) * d, y + r * d);
    softmax_row(y + r * d, d, d);
  }
}

// dx = y (dy - sum(dy y)) per row.
void Runner::on_SoftmaxBackward(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);  // in: {dy, y}
  const int64_t d = g.tensor(op.inputs[1]).desc.shape.back(), rows = numel(op.inputs[1]) / d;
  const float* dy = ptr(op.inputs[0]);
  const float* y = ptr(op.inputs[1]);
  float* dx = ptr(op.outputs[0]);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * d;
    const float* yr = y + r * d;
    double dot = 0;
    for (int64_t j = 0; j < d; ++j) dot += static_cast<double>(dyr[j]) * yr[j];
    const float df = static_cast<float>(dot);
    for (int64_t j = 0; j < d; ++j) dx[r * d + j] = yr[j] * (dyr[j] - df);
  }
}

// Output axis a is input axis perm[a]: each output row (last axis) gathers input elements
// at the stride of input axis perm.back().
void Runner::on_Transpose(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  const Shape& in = g.tensor(op.inputs[0]).desc.shape;
  const std::vector<int>& perm = op.attrs.perm;
  const size_t rank = in.size();
  if (perm.size() != rank || rank == 0) throw InternalError("transpose " + op.name + ": bad permutation");
  std::vector<int64_t> in_stride(rank, 1), out_shape(rank), src_stride(rank);
  for (size_t a = rank - 1; a > 0; --a) in_stride[a - 1] = in_stride[a] * in[a];
  for (size_t a = 0; a < rank; ++a) {
    out_shape[a] = in[static_cast<size_t>(perm[a])];
    src_stride[a] = in_stride[static_cast<size_t>(perm[a])];
  }
  const int64_t inner = out_shape[rank - 1], inner_stride = src_stride[rank - 1];
  const int64_t rows = numel(op.outputs[0]) / std::max<int64_t>(1, inner);
  const float* x = ptr(op.inputs[0]);
  float* y = ptr(op.outputs[0]);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, off = 0;
    for (size_t a = rank - 1; a > 0; --a) {  // output axes rank-2 .. 0
      off += (rem % out_shape[a - 1]) * src_stride[a - 1];
      rem /= out_shape[a - 1];
    }
    float* yr = y + r * inner;
    for (int64_t j = 0; j < inner; ++j) yr[j] = x[off + j * inner_stride];
  }
}

void Runner::on_Scale(const OpGraph& g, int i) {
  const OpNode& op = g.op(i);
  const float alpha = static_cast<float>(op.attrs.alpha);
  const float* x = ptr(op.inputs[0]);
  float* y = ptr(op.outputs[0]);
  const int64_t n = numel(op.outputs[0]);
#pragma omp parallel for schedule(static) if (n > (1 << 15))
  for (int64_t k = 0; k < n; ++k) y[k] = alpha * x[k];
}

}  // namespace xpusim::cpu
