// LSTM over a whole sequence on one GPU: the input projection of every timestep is one
// GEMM, then each timestep is a recurrent GEMM (h_{t-1} U) and a pointwise gate kernel;
// the backward pass runs the timesteps in reverse (backpropagation through time) and
// finishes with whole-sequence GEMMs for dW and dX. Keras layout: W [F, 4H], U [H, 4H],
// b [4H], gates i, f, c, o; the saved state is [T, N, 6H] = i, f, g, o, c, h per step.
#include "common/error.hpp"
#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/kernels.cuh"
#include "devices/cuda/replica.hpp"

namespace xpusim::cuda {

void Replica::on_LSTM(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: x, W, U, b; out: y, state
  const OpAttrs& a = n.attrs;
  const int64_t N = shape(n.inputs[0])[0], T = a.seq_len, F = a.input_size, H = a.hidden;
  DType ct = n.compute_dtype;
  if (dtype(n.inputs[0]) != ct) throw InternalError("cuda lstm: input is not " + std::string(dtype_name(ct)));
  const void* W = weight_as(n.inputs[1], ct);
  const void* U = weight_as(n.inputs[2], ct);
  const float* b = static_cast<const float*>(P(n.inputs[3]));
  char* state = static_cast<char*>(P(n.outputs[1]));
  const size_t eb = static_cast<size_t>(dtype_bytes(ct));
  const size_t step_bytes = static_cast<size_t>(N * 6 * H) * eb;

  float* xw = static_cast<float*>(scratch(static_cast<size_t>(N * T * 4 * H) * sizeof(float)));
  float* hu = static_cast<float*>(scratch(static_cast<size_t>(N * 4 * H) * sizeof(float)));
  GemmArgs x_w;  // XW[N*T, 4H] = X[N*T, F] W[F, 4H]
  x_w.m = N * T, x_w.n = 4 * H, x_w.k = F;
  x_w.a = P(n.inputs[0]), x_w.lda = F;
  x_w.b = W, x_w.ldb = 4 * H;
  x_w.c = xw, x_w.ldc = 4 * H;
  x_w.ab_type = ct, x_w.c_type = DType::fp32;
  gemm(cublas_, x_w, math_);

  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = a.reverse ? T - 1 - s : s;
    const int64_t tp = a.reverse ? t + 1 : t - 1;  // previous step in processing order
    const char* prev = s > 0 ? state + static_cast<size_t>(tp) * step_bytes : nullptr;
    if (prev) {  // HU[N, 4H] = h_{t-1}[N, H] (strided inside the state) U[H, 4H]
      GemmArgs h_u;
      h_u.m = N, h_u.n = 4 * H, h_u.k = H;
      h_u.a = prev + static_cast<size_t>(5 * H) * eb, h_u.lda = 6 * H;
      h_u.b = U, h_u.ldb = 4 * H;
      h_u.c = hu, h_u.ldc = 4 * H;
      h_u.ab_type = ct, h_u.c_type = DType::fp32;
      gemm(cublas_, h_u, math_);
    }
    LstmStepArgs la;
    la.n = N, la.hidden = H;
    la.xw = xw + t * 4 * H, la.xw_ld = T * 4 * H;
    la.hu = prev ? hu : nullptr;
    la.bias = b;
    la.state_prev = prev;
    la.state = state + static_cast<size_t>(t) * step_bytes;
    char* y = static_cast<char*>(P(n.outputs[0]));
    if (a.return_sequences) {
      la.y = y + static_cast<size_t>(t * H) * eb, la.y_ld = T * H;
    } else if (s == T - 1) {
      la.y = y, la.y_ld = H;
    }
    k_lstm_forward_step(la, ct, stream_);
  }
  free_scratch(hu);
  free_scratch(xw);
}

void Replica::on_LSTMBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: dy, x, W, U, state; out: [dx], dW, dU, db
  const OpNode& f = g.op(n.forward_op);
  const OpAttrs& a = f.attrs;
  const int64_t N = shape(n.inputs[1])[0], T = a.seq_len, F = a.input_size, H = a.hidden;
  DType ct = n.compute_dtype;
  const bool has_dx = n.outputs.size() == 4;
  const int dW = n.outputs[has_dx ? 1 : 0], dU = n.outputs[has_dx ? 2 : 1], db = n.outputs[has_dx ? 3 : 2];
  const void* W = weight_as(n.inputs[2], ct);
  const void* U = weight_as(n.inputs[3], ct);
  const char* state = static_cast<const char*>(P(n.inputs[4]));
  const char* dy = static_cast<const char*>(P(n.inputs[0]));
  const size_t eb = static_cast<size_t>(dtype_bytes(ct));
  const size_t step_bytes = static_cast<size_t>(N * 6 * H) * eb;

  char* dz = static_cast<char*>(scratch(static_cast<size_t>(N * T * 4 * H) * eb));  // [N*T, 4H]
  float* dh = static_cast<float*>(scratch(static_cast<size_t>(N * H) * sizeof(float)));
  float* dc = static_cast<float*>(scratch(static_cast<size_t>(N * H) * sizeof(float)));
  XPUSIM_CUDA(cudaMemsetAsync(dc, 0, static_cast<size_t>(N * H) * sizeof(float), stream_));
  XPUSIM_CUDA(cudaMemsetAsync(P(dU), 0, static_cast<size_t>(g.tensor(dU).desc.bytes()), stream_));

  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = a.reverse ? T - 1 - s : s;
    const int64_t tp = a.reverse ? t + 1 : t - 1;
    const char* prev = s > 0 ? state + static_cast<size_t>(tp) * step_bytes : nullptr;
    LstmStepArgs la;
    la.n = N, la.hidden = H;
    la.state_prev = prev;
    la.state = const_cast<char*>(state + static_cast<size_t>(t) * step_bytes);
    if (a.return_sequences) {
      la.dy = dy + static_cast<size_t>(t * H) * eb, la.dy_ld = T * H;
    } else if (s == T - 1) {
      la.dy = dy, la.dy_ld = H;
    }
    la.dh_rec = s < T - 1 ? dh : nullptr;
    la.dc = dc;
    la.dz = dz + static_cast<size_t>(t * 4 * H) * eb, la.dz_ld = T * 4 * H;
    k_lstm_backward_step(la, ct, stream_);
    if (!prev) continue;
    GemmArgs to_h;  // dh_{t-1}[N, H] = dZ_t[N, 4H] U^T
    to_h.trans_b = true;
    to_h.m = N, to_h.n = H, to_h.k = 4 * H;
    to_h.a = la.dz, to_h.lda = T * 4 * H;
    to_h.b = U, to_h.ldb = 4 * H;
    to_h.c = dh, to_h.ldc = H;
    to_h.ab_type = ct, to_h.c_type = DType::fp32;
    gemm(cublas_, to_h, math_);
    GemmArgs du;  // dU[H, 4H] += h_{t-1}^T[H, N] dZ_t[N, 4H]
    du.trans_a = true;
    du.m = H, du.n = 4 * H, du.k = N;
    du.a = prev + static_cast<size_t>(5 * H) * eb, du.lda = 6 * H;
    du.b = la.dz, du.ldb = T * 4 * H;
    du.c = P(dU), du.ldc = 4 * H;
    du.ab_type = ct, du.c_type = DType::fp32;
    du.beta = 1.f;
    gemm(cublas_, du, math_);
  }
  GemmArgs dw;  // dW[F, 4H] = X^T[F, N*T] dZ[N*T, 4H]
  dw.trans_a = true;
  dw.m = F, dw.n = 4 * H, dw.k = N * T;
  dw.a = P(n.inputs[1]), dw.lda = F;
  dw.b = dz, dw.ldb = 4 * H;
  dw.c = P(dW), dw.ldc = 4 * H;
  dw.ab_type = ct, dw.c_type = DType::fp32;
  gemm(cublas_, dw, math_);
  k_reduce_channels(dz, ct, static_cast<float*>(P(db)), N * T, 4 * H, 1, stream_);
  if (has_dx) {
    GemmArgs dx;  // dX[N*T, F] = dZ[N*T, 4H] W^T
    dx.trans_b = true;
    dx.m = N * T, dx.n = F, dx.k = 4 * H;
    dx.a = dz, dx.lda = 4 * H;
    dx.b = W, dx.ldb = 4 * H;
    dx.c = P(n.outputs[0]), dx.ldc = F;
    dx.ab_type = ct, dx.c_type = dtype(n.outputs[0]);
    gemm(cublas_, dx, math_);
  }
  free_scratch(dc);
  free_scratch(dh);
  free_scratch(dz);
}

}  // namespace xpusim::cuda
