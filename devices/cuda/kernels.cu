// The small CUDA kernels of the backend (declarations and contracts in kernels.cuh).
// Grid-stride loops throughout; fp32 accumulation for every type.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "common/error.hpp"
#include "devices/cuda/kernels.cuh"

namespace xpusim::cuda {

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  // Grid-stride loops cover the rest; 64k blocks keep every SM of an H100 busy.
  return static_cast<int>(b > 65535 ? 65535 : b);
}

void check_launch(const char* what) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw InternalError(std::string("CUDA kernel ") + what + ": " + cudaGetErrorString(e));
}

template <class T> __device__ __forceinline__ float ld(T v);
template <> __device__ __forceinline__ float ld<float>(float v) { return v; }
template <> __device__ __forceinline__ float ld<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T st(float v);
template <> __device__ __forceinline__ float st<float>(float v) { return v; }
template <> __device__ __forceinline__ __half st<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 st<__nv_bfloat16>(float v) { return __float2bfloat16(v); }

__device__ __forceinline__ float sigmoidf(float x) { return 1.f / (1.f + __expf(-x)); }

#define XPUSIM_GRID_LOOP(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

// Runs the statements in __VA_ARGS__ with the type alias ALIAS bound to the C++ type of
// DType t (a macro rather than a template lambda: CMake's CUDA support stops at C++17).
#define XPUSIM_DISPATCH_AS(t, what, ALIAS, ...)                                                   \
  do {                                                                                            \
    switch (t) {                                                                                  \
      case DType::fp32: { using ALIAS = float; __VA_ARGS__; break; }                              \
      case DType::fp16: { using ALIAS = __half; __VA_ARGS__; break; }                             \
      case DType::bf16: { using ALIAS = __nv_bfloat16; __VA_ARGS__; break; }                     \
      default: throw InternalError(std::string(what) + ": unsupported element type " + dtype_name(t)); \
    }                                                                                             \
  } while (0)
#define XPUSIM_DISPATCH(t, what, ...)          \
  do {                                         \
    XPUSIM_DISPATCH_AS(t, what, T, __VA_ARGS__); \
    check_launch(what);                        \
  } while (0)

template <class S, class D>
__global__ void cast_kernel(const S* src, D* dst, int64_t n) {
  XPUSIM_GRID_LOOP(i, n) dst[i] = st<D>(ld<S>(src[i]));
}

struct Ptrs8 {
  const void* p[8];
};

template <class T>
__global__ void add_n_kernel(T* out, Ptrs8 ins, int nin, int64_t n) {
  XPUSIM_GRID_LOOP(i, n) {
    float acc = 0.f;
    for (int k = 0; k < nin; ++k) acc += ld<T>(static_cast<const T*>(ins.p[k])[i]);
    out[i] = st<T>(acc);
  }
}

template <class T>
__global__ void mul_kernel(T* out, const T* a, const T* b, int64_t n) {
  XPUSIM_GRID_LOOP(i, n) out[i] = st<T>(ld<T>(a[i]) * ld<T>(b[i]));
}

template <class T>
__global__ void add_bias_kernel(T* y, const float* bias, int64_t total, int64_t c, int64_t inner) {
  XPUSIM_GRID_LOOP(i, total) y[i] = st<T>(ld<T>(y[i]) + bias[(i / inner) % c]);
}

// One block per channel; threads stride over (outer, inner) and reduce in shared memory.
template <class T>
__global__ void reduce_channels_kernel(const T* x, float* out, int64_t outer, int64_t c, int64_t inner) {
  __shared__ float part[kThreads];
  const int64_t ch = blockIdx.x;
  float acc = 0.f;
  for (int64_t j = threadIdx.x; j < outer * inner; j += blockDim.x) {
    int64_t o = j / inner, i = j % inner;
    acc += ld<T>(x[(o * c + ch) * inner + i]);
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[ch] = part[0];
}

// One block per row: max, sum of exp, probabilities, then the row's loss share.
template <class T>
__global__ void softmax_ce_kernel(const T* logits, const int32_t* labels, int64_t rows, int64_t classes, float* probs,
                                  float* loss) {
  __shared__ float red[kThreads];
  const int64_t r = blockIdx.x;
  const T* z = logits + r * classes;
  float* p = probs + r * classes;
  const int32_t label = labels[r];
  if (classes == 1) {  // sigmoid cross-entropy, label in {0, 1}
    if (threadIdx.x == 0) {
      float x = ld<T>(z[0]);
      float q = sigmoidf(x);
      p[0] = q;
      // log(1 + e^-|x|) form: stable for large |x|.
      float l = fmaxf(x, 0.f) - x * static_cast<float>(label) + log1pf(__expf(-fabsf(x)));
      atomicAdd(loss, l / static_cast<float>(rows));
    }
    return;
  }
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) m = fmaxf(m, ld<T>(z[j]));
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) sum += __expf(ld<T>(z[j]) - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  sum = red[0];
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) p[j] = __expf(ld<T>(z[j]) - m) / sum;
  if (threadIdx.x == 0) atomicAdd(loss, (logf(sum) + m - ld<T>(z[label])) / static_cast<float>(rows));
}

template <class T>
__global__ void softmax_ce_backward_kernel(const float* probs, const int32_t* labels, int64_t rows, int64_t classes,
                                           T* dx, float scale) {
  XPUSIM_GRID_LOOP(i, rows * classes) {
    int64_t r = i / classes, j = i % classes;
    float target = classes == 1 ? static_cast<float>(labels[r]) : (labels[r] == j ? 1.f : 0.f);
    dx[i] = st<T>((probs[i] - target) * scale / static_cast<float>(rows));
  }
}

template <class T>
__global__ void embedding_forward_kernel(const int32_t* ids, const float* table, int64_t rows, int64_t vocab,
                                         int64_t dim, T* out) {
  XPUSIM_GRID_LOOP(i, rows * dim) {
    int64_t r = i / dim, d = i % dim;
    int64_t id = ids[r];
    id = id < 0 ? 0 : (id >= vocab ? vocab - 1 : id);  // ids are generated in range; clamp defends memory
    out[i] = st<T>(table[id * dim + d]);
  }
}

template <class T>
__global__ void embedding_backward_kernel(const T* dy, const int32_t* ids, int64_t rows, int64_t vocab, int64_t dim,
                                          float* dtable) {
  XPUSIM_GRID_LOOP(i, rows * dim) {
    int64_t r = i / dim, d = i % dim;
    int64_t id = ids[r];
    id = id < 0 ? 0 : (id >= vocab ? vocab - 1 : id);
    atomicAdd(&dtable[id * dim + d], ld<T>(dy[i]));
  }
}

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

// splitmix64 finaliser (Steele et al., "Fast splittable pseudorandom number generators",
// OOPSLA 2014): a counter-based hash with good avalanche, enough for dropout masks.
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <class T>
__global__ void dropout_forward_kernel(const T* x, T* y, uint8_t* mask, int64_t n, float keep, uint64_t seed) {
  XPUSIM_GRID_LOOP(i, n) {
    float u = static_cast<float>(mix64(seed ^ (static_cast<uint64_t>(i) * 0xD1B54A32D192ED03ull)) >> 40) *
              (1.f / 16777216.f);
    uint8_t k = u < keep ? 1 : 0;
    mask[i] = k;
    y[i] = st<T>(k ? ld<T>(x[i]) / keep : 0.f);
  }
}

template <class T>
__global__ void dropout_backward_kernel(const T* dy, const uint8_t* mask, T* dx, int64_t n, float keep) {
  XPUSIM_GRID_LOOP(i, n) dx[i] = st<T>(mask[i] ? ld<T>(dy[i]) / keep : 0.f);
}


// Sum of v over the block (blockDim.x == kThreads); every thread gets the total. `red` is
// kThreads floats of shared memory, free again on return.
__device__ float block_sum(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  float total = red[0];
  __syncthreads();
  return total;
}

__device__ float block_max(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + k]);
    __syncthreads();
  }
  float m = red[0];
  __syncthreads();
  return m;
}

// Two passes over the row (mean, then centred variance): no cancellation for large means.
template <class T>
__global__ void layer_norm_forward_kernel(const T* x, const float* gamma, const float* beta, int64_t rows, int64_t d,
                                          float eps, T* y, float* mean, float* rstd) {
  __shared__ float red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) s += ld<T>(xr[j]);
    const float mu = block_sum(s, red) / static_cast<float>(d);
    float v = 0.f;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      float c = ld<T>(xr[j]) - mu;
      v += c * c;
    }
    const float rs = rsqrtf(block_sum(v, red) / static_cast<float>(d) + eps);
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) y[r * d + j] = st<T>((ld<T>(xr[j]) - mu) * rs * gamma[j] + beta[j]);
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

template <class T>
__global__ void layer_norm_backward_dx_kernel(const T* dy, const T* x, const float* gamma, const float* mean,
                                              const float* rstd, int64_t rows, int64_t d, T* dx) {
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
    const float a = block_sum(sg, red) / static_cast<float>(d);
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
      dbeta[j] = tb;
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

template <class T>
__global__ void scale_kernel(const T* x, T* y, int64_t n, float alpha) {
  XPUSIM_GRID_LOOP(i, n) y[i] = st<T>(alpha * ld<T>(x[i]));
}

__global__ void unscale_check_kernel(float* g, int64_t n, float inv_scale, int* found_inf) {
  XPUSIM_GRID_LOOP(i, n) {
    float v = g[i] * inv_scale;
    if (!isfinite(v)) *found_inf = 1;
    g[i] = v;
  }
}

__global__ void sgd_kernel(float* w, const float* g, float* v, int64_t n, float lr, float mu, float wd,
                           const int* found_inf) {
  if (found_inf && *found_inf) return;
  XPUSIM_GRID_LOOP(i, n) {
    float vi = mu * v[i] + g[i] + wd * w[i];
    v[i] = vi;
    w[i] -= lr * vi;
  }
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, int64_t n, float lr, float b1, float b2,
                            float eps, float c1, float c2, const int* found_inf) {
  if (found_inf && *found_inf) return;
  XPUSIM_GRID_LOOP(i, n) {
    float gi = g[i];
    float mi = b1 * m[i] + (1.f - b1) * gi;
    float vi = b2 * v[i] + (1.f - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] -= lr * (mi / c1) / (sqrtf(vi / c2) + eps);
  }
}

}  // namespace

void k_cast(const void* src, DType st_, void* dst, DType dt, int64_t n, cudaStream_t s) {
  XPUSIM_DISPATCH_AS(st_, "cast", S, XPUSIM_DISPATCH_AS(dt, "cast", D,
      cast_kernel<S, D><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const S*>(src), static_cast<D*>(dst), n);));
  check_launch("cast");
}

void k_add_n(void* out, const void* const* ins, int nin, int64_t n, DType t, cudaStream_t s) {
  if (nin < 1 || nin > 8) throw InternalError("add_n: 1..8 inputs per call");
  Ptrs8 p{};
  for (int k = 0; k < nin; ++k) p.p[k] = ins[k];
  XPUSIM_DISPATCH(t, "add_n",
    add_n_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(out), p, nin, n););
}

void k_mul(void* out, const void* a, const void* b, int64_t n, DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "mul",
    mul_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(a),
                                                     static_cast<const T*>(b), n););
}

void k_add_bias(void* y, DType t, const float* bias, int64_t outer, int64_t c, int64_t inner, cudaStream_t s) {
  int64_t total = outer * c * inner;
  XPUSIM_DISPATCH(t, "add_bias",
    add_bias_kernel<T><<<blocks_for(total), kThreads, 0, s>>>(static_cast<T*>(y), bias, total, c, inner););
}

void k_reduce_channels(const void* x, DType t, float* out, int64_t outer, int64_t c, int64_t inner, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "reduce_channels",
    reduce_channels_kernel<T><<<static_cast<unsigned>(c), kThreads, 0, s>>>(static_cast<const T*>(x), out, outer, c,
                                                                             inner););
}

void k_softmax_ce_forward(const void* logits, DType t, const int32_t* labels, int64_t rows, int64_t classes,
                          float* probs, float* loss, cudaStream_t s) {
  if (cudaMemsetAsync(loss, 0, sizeof(float), s) != cudaSuccess) check_launch("softmax_ce memset");
  XPUSIM_DISPATCH(t, "softmax_ce",
    softmax_ce_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(static_cast<const T*>(logits), labels, rows,
                                                                           classes, probs, loss););
}

void k_softmax_ce_backward(const float* probs, const int32_t* labels, int64_t rows, int64_t classes, void* dx,
                           DType t, float loss_scale, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "softmax_ce_backward",
    softmax_ce_backward_kernel<T><<<blocks_for(rows * classes), kThreads, 0, s>>>(probs, labels, rows, classes,
                                                                                   static_cast<T*>(dx), loss_scale););
}

void k_embedding_forward(const int32_t* ids, const float* table, int64_t rows, int64_t vocab, int64_t dim, void* out,
                         DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "embedding",
    embedding_forward_kernel<T><<<blocks_for(rows * dim), kThreads, 0, s>>>(ids, table, rows, vocab, dim,
                                                                             static_cast<T*>(out)););
}

void k_embedding_backward(const void* dy, DType t, const int32_t* ids, int64_t rows, int64_t vocab, int64_t dim,
                          float* dtable, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "embedding_backward",
    embedding_backward_kernel<T><<<blocks_for(rows * dim), kThreads, 0, s>>>(static_cast<const T*>(dy), ids, rows,
                                                                              vocab, dim, dtable););
}

void k_lstm_forward_step(const LstmStepArgs& a, DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "lstm_forward", lstm_forward_kernel<T><<<blocks_for(a.n * a.hidden), kThreads, 0, s>>>(a););
}

void k_lstm_backward_step(const LstmStepArgs& a, DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "lstm_backward", lstm_backward_kernel<T><<<blocks_for(a.n * a.hidden), kThreads, 0, s>>>(a););
}

void k_dropout_forward(const void* x, void* y, uint8_t* mask, int64_t n, double rate, uint64_t seed, DType t,
                       cudaStream_t s) {
  float keep = static_cast<float>(1.0 - rate);
  XPUSIM_DISPATCH(t, "dropout",
    dropout_forward_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), mask, n,
                                                                 keep, seed););
}

void k_dropout_backward(const void* dy, const uint8_t* mask, void* dx, int64_t n, double rate, DType t,
                        cudaStream_t s) {
  float keep = static_cast<float>(1.0 - rate);
  XPUSIM_DISPATCH(t, "dropout_backward",
    dropout_backward_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(dy), mask, static_cast<T*>(dx),
                                                                  n, keep););
}

namespace {
// One block per row, at most 64k blocks (each loops over further rows).
unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(rows < 1 ? 1 : (rows > 65535 ? 65535 : rows)); }
}  // namespace

void k_layer_norm_forward(const void* x, DType t, const float* gamma, const float* beta, int64_t rows, int64_t d,
                          float eps, void* y, float* mean, float* rstd, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "layer_norm",
    layer_norm_forward_kernel<T><<<row_blocks(rows), kThreads, 0, s>>>(static_cast<const T*>(x), gamma, beta, rows, d,
                                                                       eps, static_cast<T*>(y), mean, rstd););
}

void k_layer_norm_backward(const void* dy, const void* x, DType t, const float* gamma, const float* mean,
                           const float* rstd, int64_t rows, int64_t d, void* dx, float* dgamma, float* dbeta,
                           cudaStream_t s) {
  XPUSIM_DISPATCH(t, "layer_norm_backward",
    layer_norm_backward_dx_kernel<T><<<row_blocks(rows), kThreads, 0, s>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), gamma, mean, rstd, rows, d, static_cast<T*>(dx));
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

void k_scale(const void* x, void* y, int64_t n, float alpha, DType t, cudaStream_t s) {
  XPUSIM_DISPATCH(t, "scale",
    scale_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), n, alpha););
}

void k_unscale_check(float* g, int64_t n, float inv_scale, int* found_inf, cudaStream_t s) {
  unscale_check_kernel<<<blocks_for(n), kThreads, 0, s>>>(g, n, inv_scale, found_inf);
  check_launch("unscale_check");
}

void k_sgd_momentum(float* w, const float* g, float* v, int64_t n, float lr, float momentum, float weight_decay,
                    const int* found_inf, cudaStream_t s) {
  sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, g, v, n, lr, momentum, weight_decay, found_inf);
  check_launch("sgd_momentum");
}

void k_adam(float* w, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float eps,
            int step, const int* found_inf, cudaStream_t s) {
  // Bias corrections of Kingma & Ba (ICLR 2015, Algorithm 1), computed once on the host.
  float c1 = 1.f - static_cast<float>(std::pow(static_cast<double>(beta1), step));
  float c2 = 1.f - static_cast<float>(std::pow(static_cast<double>(beta2), step));
  adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(w, g, m, v, n, lr, beta1, beta2, eps, c1, c2, found_inf);
  check_launch("adam");
}

}  // namespace xpusim::cuda
