// The small CUDA kernels of the backend (declarations and contracts in kernels.cuh): casts,
// elementwise sums and products, bias and channel reductions, softmax cross-entropy, embedding,
// dropout, scaling and the optimizers; the sequence kernels are in kernels_sequence.cu.
// Grid-stride loops throughout; fp32 accumulation for every type.
#include "devices/cuda/kernels_device.cuh"

namespace xpusim::cuda {

using namespace kern;  // NOLINT: the helpers every kernel file shares

namespace {

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
