#include "devices/cpu/bn_kernel_bf16.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include <immintrin.h>

#include "common/error.hpp"
#include "devices/cpu/avx512_bf16_target.hpp"

namespace xpusim::cpu {

namespace {

constexpr int B = 16;  // channels per block = fp32 lanes of one AVX-512 register

XPUSIM_BF16_TARGET inline __m512 load(const uint16_t* p) {  // 16 bf16 -> 16 fp32 (exact)
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

XPUSIM_BF16_TARGET inline void store(uint16_t* p, __m512 v) {  // round to nearest even
  const __m256bh b = _mm512_cvtneps_pbh(v);
  __m256i h;
  std::memcpy(&h, &b, sizeof h);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
}

// Four accumulators hide the latency of the dependent adds; sums of one n-slab stay in
// fp32 and are added across n in double (as bn_kernel.cpp does).
XPUSIM_BF16_TARGET __m512 slab_sum(const uint16_t* p, int64_t s_count) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t s = 0;
  for (; s + 4 <= s_count; s += 4) {
    a0 = _mm512_add_ps(a0, load(p + (s + 0) * B));
    a1 = _mm512_add_ps(a1, load(p + (s + 1) * B));
    a2 = _mm512_add_ps(a2, load(p + (s + 2) * B));
    a3 = _mm512_add_ps(a3, load(p + (s + 3) * B));
  }
  for (; s < s_count; ++s) a0 = _mm512_add_ps(a0, load(p + s * B));
  return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
}

XPUSIM_BF16_TARGET inline __m512 add_sq(__m512 acc, const uint16_t* p, __m512 mu) {  // acc + (p - mu)^2
  const __m512 d = _mm512_sub_ps(load(p), mu);
  return _mm512_fmadd_ps(d, d, acc);
}

XPUSIM_BF16_TARGET __m512 slab_sq(const uint16_t* p, int64_t s_count, __m512 mu) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t s = 0;
  for (; s + 4 <= s_count; s += 4) {
    a0 = add_sq(a0, p + (s + 0) * B, mu);
    a1 = add_sq(a1, p + (s + 1) * B, mu);
    a2 = add_sq(a2, p + (s + 2) * B, mu);
    a3 = add_sq(a3, p + (s + 3) * B, mu);
  }
  for (; s < s_count; ++s) a0 = add_sq(a0, p + s * B, mu);
  return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
}

XPUSIM_BF16_TARGET void add_to(double* acc, __m512 v) {
  float f[B];
  _mm512_storeu_ps(f, v);
  for (int j = 0; j < B; ++j) acc[j] += f[j];
}

// The masked gradient g = dy (where the fused ReLU passed, relu_y > 0).
template <bool Mask>
XPUSIM_BF16_TARGET inline __m512 grad(const uint16_t* dy, const uint16_t* ry, int64_t e) {
  const __m512 d = load(dy + e);
  if constexpr (!Mask) return d;
  return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(load(ry + e), _mm512_setzero_ps(), _CMP_GT_OQ), d);
}

template <bool Relu, bool Res>
XPUSIM_BF16_TARGET void forward_group(const BnShape& sh, float eps, int64_t gi, const uint16_t* x, const float* gamma,
                                      const float* beta, const uint16_t* residual, uint16_t* y, float* mean,
                                      float* var) {
  const int64_t slab = sh.s * B, stride_n = sh.c / B * slab;
  const double m = static_cast<double>(sh.n * sh.s);
  double sum[B] = {}, sq[B] = {};
  for (int64_t n = 0; n < sh.n; ++n) add_to(sum, slab_sum(x + n * stride_n + gi * slab, sh.s));
  float mu[B];
  for (int j = 0; j < B; ++j) mu[j] = static_cast<float>(sum[j] / m);
  const __m512 vmu = _mm512_loadu_ps(mu);
  for (int64_t n = 0; n < sh.n; ++n) add_to(sq, slab_sq(x + n * stride_n + gi * slab, sh.s, vmu));  // no cancellation
  float k[B], b[B];
  bn_forward_fold<B>(gi * B, sq, mu, m, gamma, beta, eps, mean, var, k, b);
  const __m512 vk = _mm512_loadu_ps(k), vb = _mm512_loadu_ps(b), zero = _mm512_setzero_ps();
  for (int64_t n = 0; n < sh.n; ++n) {
    const int64_t base = n * stride_n + gi * slab;
    for (int64_t s = 0; s < sh.s; ++s) {
      const int64_t e = base + s * B;
      __m512 v = _mm512_fmadd_ps(load(x + e), vk, vb);
      if constexpr (Res) v = _mm512_add_ps(v, load(residual + e));
      if constexpr (Relu) v = _mm512_max_ps(v, zero);
      store(y + e, v);
    }
  }
}

template <bool Mask>
XPUSIM_BF16_TARGET void backward_group(const BnShape& sh, float eps, int64_t gi, const uint16_t* dy,
                                       const uint16_t* relu_y, const uint16_t* x, const float* gamma, const float* mean,
                                       const float* var, uint16_t* dx, float* dgamma, float* dbeta) {
  const int64_t slab = sh.s * B, stride_n = sh.c / B * slab;
  const double m = static_cast<double>(sh.n * sh.s);
  const __m512 u = _mm512_loadu_ps(mean + gi * B);
  double sg[B] = {}, sgx[B] = {};  // sum of g and of g (x - mean)
  for (int64_t n = 0; n < sh.n; ++n) {
    const int64_t base = n * stride_n + gi * slab;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, c0 = a0, c1 = a0;
    int64_t s = 0;
    for (; s + 2 <= sh.s; s += 2) {
      const int64_t e = base + s * B;
      const __m512 g0 = grad<Mask>(dy, relu_y, e), g1 = grad<Mask>(dy, relu_y, e + B);
      a0 = _mm512_add_ps(a0, g0);
      a1 = _mm512_add_ps(a1, g1);
      c0 = _mm512_fmadd_ps(g0, _mm512_sub_ps(load(x + e), u), c0);
      c1 = _mm512_fmadd_ps(g1, _mm512_sub_ps(load(x + e + B), u), c1);
    }
    for (; s < sh.s; ++s) {
      const int64_t e = base + s * B;
      const __m512 g0 = grad<Mask>(dy, relu_y, e);
      a0 = _mm512_add_ps(a0, g0);
      c0 = _mm512_fmadd_ps(g0, _mm512_sub_ps(load(x + e), u), c0);
    }
    add_to(sg, _mm512_add_ps(a0, a1));
    add_to(sgx, _mm512_add_ps(c0, c1));
  }
  float k1[B], k2[B], k3[B];
  for (int j = 0; j < B; ++j) {
    const int64_t c = gi * B + j;
    const BnBackwardTerms t = bn_backward_terms(sg[j], sgx[j], gamma[c], var[c], eps, m);
    k1[j] = t.k1, k2[j] = t.k2, k3[j] = t.k3;
    dgamma[c] = t.dgamma, dbeta[c] = t.dbeta;
  }
  const __m512 K1 = _mm512_loadu_ps(k1), K2 = _mm512_loadu_ps(k2), K3 = _mm512_loadu_ps(k3);
  for (int64_t n = 0; n < sh.n; ++n) {
    const int64_t base = n * stride_n + gi * slab;
    for (int64_t s = 0; s < sh.s; ++s) {
      const int64_t e = base + s * B;
      const __m512 t = _mm512_fmadd_ps(K2, _mm512_sub_ps(load(x + e), u), K3);
      store(dx + e, _mm512_fmadd_ps(K1, grad<Mask>(dy, relu_y, e), t));
    }
  }
}

void check(const BnShape& sh) {
  if (sh.block != B || sh.c % B != 0)
    throw InternalError("bf16 bn kernel: needs 16-channel blocks, got block " + std::to_string(sh.block) + " of " +
                        std::to_string(sh.c) + " channels");
  if (!bn_bf16_kernel_available()) throw InternalError("bf16 bn kernel: this CPU has no avx512_bf16");
}

}  // namespace

bool bn_bf16_kernel_available() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  return ok;
}

// Channel blocks are handed out dynamically so that a running thread takes the work of a
// preempted one (bn_kernel.hpp); the groups are independent, so no barrier but the loop's end.
void bn_forward_bf16(const BnShape& sh, float eps, const uint16_t* x, const float* gamma, const float* beta,
                     const uint16_t* residual, bool relu, uint16_t* y, float* mean, float* var) {
  check(sh);
  auto* f = residual ? (relu ? &forward_group<true, true> : &forward_group<false, true>)
                     : (relu ? &forward_group<true, false> : &forward_group<false, false>);
  const int64_t groups = sh.c / B;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t gi = 0; gi < groups; ++gi) f(sh, eps, gi, x, gamma, beta, residual, y, mean, var);
}

void bn_backward_bf16(const BnShape& sh, float eps, const uint16_t* dy, const uint16_t* relu_y, const uint16_t* x,
                      const float* gamma, const float* mean, const float* var, uint16_t* dx, float* dgamma,
                      float* dbeta) {
  check(sh);
  auto* f = relu_y ? &backward_group<true> : &backward_group<false>;
  const int64_t groups = sh.c / B;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t gi = 0; gi < groups; ++gi) f(sh, eps, gi, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
}

}  // namespace xpusim::cpu
