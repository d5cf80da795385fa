// The sequence-model kernels of the backend (declarations and contracts in kernels.cuh): the
// LSTM cell step, layer norm, the attention softmax, GELU, transpose and the grouped-query
// head repeat. Grid-stride loops, fp32 accumulation for every element type.
#include "devices/cuda/kernels_device.cuh"

namespace xpusim::cuda {

using namespace kern;  // NOLINT: the helpers every kernel file shares

namespace {

template <class T>
__global__ void lstm_forward_kernel(LstmStepArgs a) {
  const int64_t H = a.hidden;
  const T* prev = static_cast<const T*>(a.state_prev);
  T* state = static_cast<T*>(a.state);
  XPUSIM_GRID_LOOP(idx, a.n * H) {
    int64_t r = idx / H, j = idx % H;
    float z[4];
    for (int k = 0; k < 4; ++k) {
      z[k] = a.xw[r * a.xw_ld + k * H + j] + a.bias[k * H + j];
      if (a.hu) z[k] += a.hu[r * 4 * H + k * H + j];
    }
    float i = sigmoidf(z[0]), f = sigmoidf(z[1]), g = tanhf(z[2]), o = sigmoidf(z[3]);
    float c_prev = prev ? ld<T>(prev[r * 6 * H + 4 * H + j]) : 0.f;
    float c = f * c_prev + i * g;
    float h = o * tanhf(c);
    T* s = state + r * 6 * H;
    s[j] = st<T>(i);
    s[H + j] = st<T>(f);
    s[2 * H + j] = st<T>(g);
    s[3 * H + j] = st<T>(o);
    s[4 * H + j] = st<T>(c);
    s[5 * H + j] = st<T>(h);
    if (a.y) static_cast<T*>(a.y)[r * a.y_ld + j] = st<T>(h);
  }
}

template <class T>
__global__ void lstm_backward_kernel(LstmStepArgs a) {
  const int64_t H = a.hidden;
  const T* prev = static_cast<const T*>(a.state_prev);
  const T* state = static_cast<const T*>(a.state);
  T* dz = static_cast<T*>(a.dz);
  XPUSIM_GRID_LOOP(idx, a.n * H) {
    int64_t r = idx / H, j = idx % H;
    const T* s = state + r * 6 * H;
    float i = ld<T>(s[j]), f = ld<T>(s[H + j]), g = ld<T>(s[2 * H + j]), o = ld<T>(s[3 * H + j]);
    float c = ld<T>(s[4 * H + j]);
    float c_prev = prev ? ld<T>(prev[r * 6 * H + 4 * H + j]) : 0.f;
    float dh = 0.f;
    if (a.dy) dh += ld<T>(static_cast<const T*>(a.dy)[r * a.dy_ld + j]);
    if (a.dh_rec) dh += a.dh_rec[r * H + j];
    float tc = tanhf(c);
    float dc = a.dc[r * H + j] + dh * o * (1.f - tc * tc);
    float d_o = dh * tc, d_i = dc * g, d_g = dc * i, d_f = dc * c_prev;
    a.dc[r * H + j] = dc * f;  // flows to c_{t-1}
    T* d = dz + r * a.dz_ld;
    d[j] = st<T>(d_i * i * (1.f - i));
    d[H + j] = st<T>(d_f * f * (1.f - f));
    d[2 * H + j] = st<T>(d_g * (1.f - g * g));
    d[3 * H + j] = st<T>(d_o * o * (1.f - o));
  }
}

// Two passes over the row (mean, then centred variance): no cancellation for large means.
// RMSNorm (`rms`): mean 0, rstd = 1 / sqrt(mean(x^2) + eps); no beta when it is null.
template <class T>
__global__ void layer_norm_forward_kernel(const T* x, const float* gamma, const float* beta, int64_t rows, int64_t d,
                                          float eps, bool rms, T* y, float* mean, float* rstd) {
  __shared__ float red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    float mu = 0.f;
    if (!rms) {  // uniform over the block: every thread takes the same branch into block_sum
      float s = 0.f;
      for (int64_t j = threadIdx.x; j < d; j += blockDim.x) s += ld<T>(xr[j]);
      mu = block_sum(s, red) / static_cast<float>(d);
    }
    float v = 0.f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      float c = ld<T>(xr[j]) - mu;
      v += c * c;
    }
    const float rs = rsqrtf(block_sum(v, red) / static_cast<float>(d) + eps);
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
      y[r * d + j] = st<T>((ld<T>(xr[j]) - mu) * rs * gamma[j] + (beta ? beta[j] : 0.f));
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

// RMSNorm: the mean is a constant 0, so its gradient term mean(g) drops: dx = rstd (g - xh mean(g xh)).
template <class T>
__global__ void layer_norm_backward_dx_kernel(const T* dy, const T* x, const float* gamma, const float* mean,
                                              const float* rstd, int64_t rows, int64_t d, bool rms, T* dx) {
  __shared__ float red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float mu = mean[r], rs = rstd[r];
    float sg = 0.f, sgx = 0.f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      float g = gamma[j] * ld<T>(dy[r * d + j]);
      float xh = (ld<T>(x[r * d + j]) - mu) * rs;
      sg += g;
      sgx += g * xh;
    }
    const float a = rms ? 0.f : block_sum(sg, red) / static_cast<float>(d);
    const float b = block_sum(sgx, red) / static_cast<float>(d);
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      float g = gamma[j] * ld<T>(dy[r * d + j]);
      float xh = (ld<T>(x[r * d + j]) - mu) * rs;
      dx[r * d + j] = st<T>(rs * (g - a - xh * b));
    }
  }
}

// One block per feature column; threads stride over the rows.
template <class T>
__global__ void layer_norm_backward_params_kernel(const T* dy, const T* x, const float* mean, const float* rstd,
                                                  int64_t rows, int64_t d, float* dgamma, float* dbeta) {
  __shared__ float red[kThreads];
  for (int64_t j = blockIdx.x; j < d; j += gridDim.x) {
    float sg = 0.f, sb = 0.f;
    for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
      float g = ld<T>(dy[r * d + j]);
      sb += g;
      sg += g * (ld<T>(x[r * d + j]) - mean[r]) * rstd[r];
    }
    const float tg = block_sum(sg, red), tb = block_sum(sb, red);
    if (threadIdx.x == 0) {
      dgamma[j] = tg;
      if (dbeta) dbeta[j] = tb;  // null: a norm without beta
    }
  }
}

template <class TX, class TY>
__global__ void softmax_forward_kernel(const TX* x, TY* y, int64_t rows, int64_t cols, int64_t tq, bool causal,
                                       float alpha) {
  __shared__ float red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    // Keys beyond the query's position are masked (the row's first `last + 1` entries live).
    const int64_t last = causal ? (r % tq) : cols - 1;
    const TX* xr = x + r * cols;
    TY* yr = y + r * cols;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) m = fmaxf(m, alpha * ld<TX>(xr[j]));
    m = block_max(m, red);
    float s = 0.f;
    for (int64_t j = threadIdx.x; j <= last; j += blockDim.x) s += __expf(alpha * ld<TX>(xr[j]) - m);
    s = block_sum(s, red);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      yr[j] = st<TY>(j <= last ? __expf(alpha * ld<TX>(xr[j]) - m) / s : 0.f);
  }
}

template <class TD, class T>
__global__ void softmax_backward_kernel(const TD* dy, const T* y, T* dx, int64_t rows, int64_t cols, float alpha) {
  __shared__ float red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += ld<TD>(dy[r * cols + j]) * ld<T>(y[r * cols + j]);
    s = block_sum(s, red);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float p = ld<T>(y[r * cols + j]);
      dx[r * cols + j] = st<T>(alpha * p * (ld<TD>(dy[r * cols + j]) - s));
    }
  }
}

// One thread per element of the output: y[r, h dh + j] = x[r, (h / group) dh + j].
template <class T>
__global__ void repeat_heads_kernel(const T* x, T* y, int64_t rows, int64_t kv, int64_t group, int64_t dh) {
  const int64_t in_w = kv * dh, out_w = in_w * group;
  XPUSIM_GRID_LOOP(i, rows * out_w) {
    const int64_t r = i / out_w, c = i % out_w;
    y[i] = x[r * in_w + (c / dh / group) * dh + c % dh];
  }
}

// One thread per element of dx: the sum over the group's query heads, in fp32.
template <class T>
__global__ void repeat_heads_backward_kernel(const T* dy, T* dx, int64_t rows, int64_t kv, int64_t group, int64_t dh) {
  const int64_t in_w = kv * dh, out_w = in_w * group;
  XPUSIM_GRID_LOOP(i, rows * in_w) {
    const int64_t r = i / in_w, c = i % in_w;
    const T* src = dy + r * out_w + (c / dh) * group * dh + c % dh;
    float acc = 0.f;
    for (int64_t g = 0; g < group; ++g) acc += ld<T>(src[g * dh]);
    dx[i] = st<T>(acc);
  }
}

template <class T>
__global__ void gelu_forward_kernel(const T* x, T* y, int64_t n) {
  XPUSIM_GRID_LOOP(i, n) {
    float v = ld<T>(x[i]);
    y[i] = st<T>(0.5f * v * (1.f + erff(v * 0.70710678118654752f)));
  }
}

template <class T>
__global__ void gelu_backward_kernel(const T* dy, const T* x, T* dx, int64_t n) {
  XPUSIM_GRID_LOOP(i, n) {
    float v = ld<T>(x[i]);
    float cdf = 0.5f * (1.f + erff(v * 0.70710678118654752f));
    float pdf = 0.39894228040143268f * __expf(-0.5f * v * v);
    dx[i] = st<T>(ld<T>(dy[i]) * (cdf + v * pdf));
  }
}

constexpr int kMaxRank = 8;
struct TransposeDims {
  int rank;
  int64_t out_dim[kMaxRank];     // output shape
  int64_t in_stride[kMaxRank];   // input stride of the input axis that output axis i reads
};

template <class T>
__global__ void transpose_kernel(const T* x, T* y, int64_t n, TransposeDims td) {
  XPUSIM_GRID_LOOP(i, n) {
    int64_t rem = i, src = 0;
    for (int a = td.rank - 1; a >= 0; --a) {
      int64_t c = rem % td.out_dim[a];
      rem /= td.out_dim[a];
      src += c * td.in_stride[a];
    }
    y[i] = x[src];
  }
}

}  // namespace

void k_lstm_forward_step(const LstmStepArgs& a, DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "lstm_forward", lstm_forward_kernel<T><<<blocks_for(a.n * a.hidden), kThreads, 0, s>>>(a););
}

void k_lstm_backward_step(const LstmStepArgs& a, DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "lstm_backward", lstm_backward_kernel<T><<<blocks_for(a.n * a.hidden), kThreads, 0, s>>>(a););
}

namespace {
// One block per row, at most 64k blocks (each loops over further rows).
unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(rows < 1 ? 1 : (rows > 65535 ? 65535 : rows)); }
}  // namespace

void k_layer_norm_forward(const void* x, DType t, const float* gamma, const float* beta, int64_t rows, int64_t d,
                          float eps, bool rms, void* y, float* mean, float* rstd, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "layer_norm",
    layer_norm_forward_kernel<T><<<row_blocks(rows), kThreads, 0, s>>>(static_cast<const T*>(x), gamma, beta, rows, d,
                                                                       eps, rms, static_cast<T*>(y), mean, rstd););
}

void k_layer_norm_backward(const void* dy, const void* x, DType t, const float* gamma, const float* mean,
                           const float* rstd, int64_t rows, int64_t d, bool rms, void* dx, float* dgamma, float* dbeta,
                           cudaStream_t s) {
  XPUSIM_DISPATCH(t, "layer_norm_backward",
    layer_norm_backward_dx_kernel<T><<<row_blocks(rows), kThreads, 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), gamma, mean, rstd, rows, d, rms, static_cast<T*>(dx));
    layer_norm_backward_params_kernel<T><<<row_blocks(d), kThreads, 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), mean, rstd, rows, d, dgamma, dbeta););
}

void k_softmax_forward(const void* x, DType xt, void* y, DType yt, int64_t rows, int64_t cols, int64_t tq,
                       bool causal, float alpha, cudaStream_t s) {
  if (causal && tq < 1) throw InternalError("softmax: a causal mask needs the query count");
  XPUSIM_DISPATCH_AS(xt, "softmax", TX, XPUSIM_DISPATCH_AS(yt, "softmax", TY,
    softmax_forward_kernel<TX, TY><<<row_blocks(rows), kThreads, 0, s>>>(static_cast<const TX*>(x),
                                                                          static_cast<TY*>(y), rows, cols,
                                                                          causal ? tq : 1, causal, alpha);));
  check_launch("softmax");
}

void k_softmax_backward(const void* dy, DType dyt, const void* y, void* dx, DType t, int64_t rows, int64_t cols,
                        float alpha, cudaStream_t s) {
  XPUSIM_DISPATCH_AS(dyt, "softmax_backward", TD, XPUSIM_DISPATCH_AS(t, "softmax_backward", T,
    softmax_backward_kernel<TD, T><<<row_blocks(rows), kThreads, 0, s>>>(static_cast<const TD*>(dy),
                                                                          static_cast<const T*>(y),
                                                                          static_cast<T*>(dx), rows, cols, alpha);));
  check_launch("softmax_backward");
}

void k_gelu_forward(const void* x, void* y, int64_t n, DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "gelu",
    gelu_forward_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n););
}

void k_gelu_backward(const void* dy, const void* x, void* dx, int64_t n, DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "gelu_backward",
    gelu_backward_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(dy), static_cast<const T*>(x),
                                                               static_cast<T*>(dx), n););
}

void k_repeat_heads(const void* x, void* y, int64_t rows, int64_t kv_heads, int64_t group, int64_t head_dim, DType t,
                    cudaStream_t s) {
  XPUSIM_DISPATCH(t, "repeat_heads",
    repeat_heads_kernel<T><<<blocks_for(rows * kv_heads * group * head_dim), kThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), rows, kv_heads, group, head_dim););
}

void k_repeat_heads_backward(const void* dy, void* dx, int64_t rows, int64_t kv_heads, int64_t group, int64_t head_dim,
                             DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "repeat_heads_backward",
    repeat_heads_backward_kernel<T><<<blocks_for(rows * kv_heads * head_dim), kThreads, 0, s>>>(
        static_cast<const T*>(dy), static_cast<T*>(dx), rows, kv_heads, group, head_dim););
}

void k_transpose(const void* x, void* y, DType t, const int64_t* in_shape, const int* perm, int rank, cudaStream_t s) {
  if (rank < 1 || rank > kMaxRank) throw InternalError("transpose: rank must be 1.." + std::to_string(kMaxRank));
  int64_t in_stride[kMaxRank];
  int64_t n = 1;
  for (int a = rank - 1; a >= 0; --a) {
    in_stride[a] = n;
    n *= in_shape[a];
  }
  TransposeDims td{};
  td.rank = rank;
  for (int a = 0; a < rank; ++a) {
    if (perm[a] < 0 || perm[a] >= rank) throw InternalError("transpose: bad permutation");
    td.out_dim[a] = in_shape[perm[a]];
    td.in_stride[a] = in_stride[perm[a]];
  }
  XPUSIM_DISPATCH(t, "transpose",
    transpose_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, td););
}

}  // namespace xpusim::cuda
