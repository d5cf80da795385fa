// Host-side launchers of the small CUDA kernels that neither cuDNN nor cuBLAS provides:
// casts, n-ary add, bias add and bias gradients, softmax cross-entropy, embedding gather and
// scatter-add, LSTM gate pointwise math, dropout, gradient unscaling and the optimizer
// updates. Element type is a runtime DType (fp32, fp16, bf16); accumulation is always fp32.
// Every launcher enqueues on `s` and returns at once; launch errors throw InternalError.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "models/dtype.hpp"

namespace xpusim::cuda {

void k_cast(const void* src, DType src_t, void* dst, DType dst_t, int64_t n, cudaStream_t s);
// out = sum of ins (up to 8 pointers per call; callers chain for more), all of type t.
void k_add_n(void* out, const void* const* ins, int nin, int64_t n, DType t, cudaStream_t s);
void k_mul(void* out, const void* a, const void* b, int64_t n, DType t, cudaStream_t s);
// y[o, c, i] += bias[c] for a [outer, C, inner] tensor; bias is fp32 (the master weight).
void k_add_bias(void* y, DType t, const float* bias, int64_t outer, int64_t c, int64_t inner, cudaStream_t s);
// out[c] = sum over o, i of x[o, c, i] (bias gradients), fp32 out.
void k_reduce_channels(const void* x, DType t, float* out, int64_t outer, int64_t c, int64_t inner, cudaStream_t s);
// Softmax (classes > 1) or sigmoid (classes == 1) cross-entropy, mean over rows.
void k_softmax_ce_forward(const void* logits, DType t, const int32_t* labels, int64_t rows, int64_t classes,
                          float* probs, float* loss, cudaStream_t s);
void k_softmax_ce_backward(const float* probs, const int32_t* labels, int64_t rows, int64_t classes, void* dx,
                           DType t, float loss_scale, cudaStream_t s);
void k_embedding_forward(const int32_t* ids, const float* table, int64_t rows, int64_t vocab, int64_t dim, void* out,
                         DType t, cudaStream_t s);
// dtable must be zeroed by the caller; rows scatter-add with atomics (ids repeat).
void k_embedding_backward(const void* dy, DType t, const int32_t* ids, int64_t rows, int64_t vocab, int64_t dim,
                          float* dtable, cudaStream_t s);

// LSTM (Keras gate order i, f, c, o). One timestep for a batch of n rows.
// z = xw[row] + hu[row] + b; state_t[row] = [i, f, g, o, c, h] (6H); y[row] = h.
struct LstmStepArgs {
  int64_t n = 0, hidden = 0;
  const float* xw = nullptr;  int64_t xw_ld = 0;   // x W for this timestep, fp32
  const float* hu = nullptr;                      // h_{t-1} U, [n, 4H] fp32; null at the first step
  const float* bias = nullptr;                    // [4H] fp32
  const void* state_prev = nullptr;               // [n, 6H] of the previous step; null at the first
  void* state = nullptr;                          // [n, 6H] of this step
  void* y = nullptr; int64_t y_ld = 0;            // where h goes (null: not stored)
  // Backward only:
  const void* dy = nullptr; int64_t dy_ld = 0;    // gradient arriving at h from the output (null: none)
  const float* dh_rec = nullptr;                  // gradient at h from step t+1, [n, H] fp32 (null at the last)
  float* dc = nullptr;                            // [n, H] fp32: in dc from t+1, out dc for t-1
  void* dz = nullptr; int64_t dz_ld = 0;          // pre-activation gate gradients, [n, 4H] rows
};
void k_lstm_forward_step(const LstmStepArgs& a, DType t, cudaStream_t s);
void k_lstm_backward_step(const LstmStepArgs& a, DType t, cudaStream_t s);

// Inverted dropout: keep with probability 1 - rate and scale by 1 / (1 - rate). The mask
// comes from a counter-based hash of (seed, index), so it needs no RNG state on the device.
void k_dropout_forward(const void* x, void* y, uint8_t* mask, int64_t n, double rate, uint64_t seed, DType t,
                       cudaStream_t s);
void k_dropout_backward(const void* dy, const uint8_t* mask, void* dx, int64_t n, double rate, DType t,
                        cudaStream_t s);

// Transformer kernels (replica_transformer.cpp). Rows are the leading dimensions flattened;
// every reduction is per row in fp32, one block per row.
// Layer norm over the last axis (d): y = (x - mean) rstd gamma + beta; saves mean and rstd
// (fp32, one per row). gamma and beta are the fp32 master weights; beta null = no bias (MPT);
// `rms`: RMSNorm (Zhang & Sennrich 2019), mean fixed at 0 (saved as 0), rstd = 1/sqrt(mean(x^2) + eps).
void k_layer_norm_forward(const void* x, DType t, const float* gamma, const float* beta, int64_t rows, int64_t d,
                          float eps, bool rms, void* y, float* mean, float* rstd, cudaStream_t s);
// dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = gamma dy; dgamma = sum_rows dy xhat,
// dbeta = sum_rows dy (fp32, overwritten; null: none). `rms`: no mean(g) term.
void k_layer_norm_backward(const void* dy, const void* x, DType t, const float* gamma, const float* mean,
                           const float* rstd, int64_t rows, int64_t d, bool rms, void* dx, float* dgamma, float* dbeta,
                           cudaStream_t s);
// y = softmax(alpha x) over rows of `cols`; with `causal`, row r is query r % tq of a [tq, cols]
// matrix and keys j > query get probability 0. x and y may differ in type (fp32 scores in,
// fp16 probabilities out).
void k_softmax_forward(const void* x, DType xt, void* y, DType yt, int64_t rows, int64_t cols, int64_t tq,
                       bool causal, float alpha, cudaStream_t s);
// dx = alpha y (dy - sum_row(dy y)); y and dx share a type, dy may be fp32.
void k_softmax_backward(const void* dy, DType dyt, const void* y, void* dx, DType t, int64_t rows, int64_t cols,
                        float alpha, cudaStream_t s);
// Exact GELU x Phi(x) (erf form) and its derivative Phi(x) + x phi(x) from the saved input.
void k_gelu_forward(const void* x, void* y, int64_t n, DType t, cudaStream_t s);
void k_gelu_backward(const void* dy, const void* x, void* dx, int64_t n, DType t, cudaStream_t s);
// y = x permuted: output axis i is input axis perm[i] (rank <= 8).
void k_transpose(const void* x, void* y, DType t, const int64_t* in_shape, const int* perm, int rank, cudaStream_t s);
// Grouped-query attention's head repeat (models/head_repeat.hpp): x [rows, kv dh] to y [rows,
// kv group dh] with query head h reading key/value head h / group; the backward sums the group's
// gradients per key/value head (fp32 accumulation).
void k_repeat_heads(const void* x, void* y, int64_t rows, int64_t kv_heads, int64_t group, int64_t head_dim, DType t,
                    cudaStream_t s);
void k_repeat_heads_backward(const void* dy, void* dx, int64_t rows, int64_t kv_heads, int64_t group, int64_t head_dim,
                             DType t, cudaStream_t s);
// y = alpha x.
void k_scale(const void* x, void* y, int64_t n, float alpha, DType t, cudaStream_t s);

// g *= inv_scale; sets *found_inf = 1 if any element is inf or NaN.
void k_unscale_check(float* g, int64_t n, float inv_scale, int* found_inf, cudaStream_t s);
// Updates are skipped on the device when *found_inf != 0 (an overflowed fp16 step).
void k_sgd_momentum(float* w, const float* g, float* v, int64_t n, float lr, float momentum, float weight_decay,
                    const int* found_inf, cudaStream_t s);
void k_adam(float* w, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float eps,
            int step, const int* found_inf, cudaStream_t s);

}  // namespace xpusim::cuda
