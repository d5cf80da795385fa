#include "devices/cpu/bn_kernel.hpp"

#include <algorithm>
#include <cmath>

#include <immintrin.h>

#include "common/error.hpp"

namespace xpusim::cpu {

namespace {

// One group = B channels (block B) or one channel (plain, B = 1). Sums over one n-slab run in
// float (vectorised across the B channels, or across s with an omp simd reduction when
// B = 1) and are added across n in double, so the statistics of a 16 x 112 x 112 channel
// stay accurate to fp32 rounding.
// Relu, Res and Mask are template flags so that the elementwise loops carry no branches and
// vectorise; operands never alias (the memory plan gives a step's outputs bytes of their own).
template <int B, bool Relu, bool Res>
void forward_impl(const BnShape& sh, float eps, const float* __restrict x, const float* gamma, const float* beta,
                  const float* __restrict residual, float* __restrict y, float* mean, float* var) {
  const int64_t groups = sh.c / B, slab = sh.s * B, stride_n = groups * slab;
  const double m = static_cast<double>(sh.n * sh.s);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t gi = 0; gi < groups; ++gi) {
    double sum[B] = {}, sq[B] = {};
    for (int64_t n = 0; n < sh.n; ++n) {
      const float* p = x + n * stride_n + gi * slab;
      if constexpr (B == 1) {
        float a = 0;
#pragma omp simd reduction(+ : a)
        for (int64_t s = 0; s < sh.s; ++s) a += p[s];
        sum[0] += a;
      } else {
        float a[B] = {};
        for (int64_t s = 0; s < sh.s; ++s)
          for (int j = 0; j < B; ++j) a[j] += p[s * B + j];
        for (int j = 0; j < B; ++j) sum[j] += a[j];
      }
    }
    float mu[B];
    for (int j = 0; j < B; ++j) mu[j] = static_cast<float>(sum[j] / m);
    for (int64_t n = 0; n < sh.n; ++n) {  // second pass: variance about the mean (no cancellation)
      const float* p = x + n * stride_n + gi * slab;
      if constexpr (B == 1) {
        float a = 0;
        const float c = mu[0];
#pragma omp simd reduction(+ : a)
        for (int64_t s = 0; s < sh.s; ++s) a += (p[s] - c) * (p[s] - c);
        sq[0] += a;
      } else {
        float a[B] = {};
        for (int64_t s = 0; s < sh.s; ++s)
          for (int j = 0; j < B; ++j) a[j] += (p[s * B + j] - mu[j]) * (p[s * B + j] - mu[j]);
        for (int j = 0; j < B; ++j) sq[j] += a[j];
      }
    }
    float k[B], b[B];
    bn_forward_fold<B>(gi * B, sq, mu, m, gamma, beta, eps, mean, var, k, b);
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = n * stride_n + gi * slab;
      const float* __restrict p = x + base;
      const float* __restrict r = Res ? residual + base : nullptr;
      float* __restrict q = y + base;
      for (int64_t s = 0; s < sh.s; ++s)
        for (int j = 0; j < B; ++j) {
          float v = p[s * B + j] * k[j] + b[j];
          if constexpr (Res) v += r[s * B + j];
          if constexpr (Relu) v = v > 0.0f ? v : 0.0f;
          q[s * B + j] = v;
        }
    }
  }
}

template <int B, bool Mask>
void backward_impl(const BnShape& sh, float eps, const float* __restrict dy, const float* __restrict relu_y,
                   const float* __restrict x, const float* gamma, const float* mean, const float* var,
                   float* __restrict dx, float* dgamma, float* dbeta) {
  const int64_t groups = sh.c / B, slab = sh.s * B, stride_n = groups * slab;
  const double m = static_cast<double>(sh.n * sh.s);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t gi = 0; gi < groups; ++gi) {
    float mu[B];
    for (int j = 0; j < B; ++j) mu[j] = mean[gi * B + j];
    double sg[B] = {}, sgx[B] = {};  // sum of g and of g (x - mean), g = dy masked by the ReLU
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = n * stride_n + gi * slab;
      const float *__restrict d = dy + base, *__restrict p = x + base, *__restrict ry = Mask ? relu_y + base : nullptr;
      if constexpr (B == 1) {
        float a = 0, c = 0;
        const float u = mu[0];
#pragma omp simd reduction(+ : a, c)
        for (int64_t s = 0; s < sh.s; ++s) {
          float gv = d[s];
          if constexpr (Mask) gv = ry[s] > 0.0f ? gv : 0.0f;
          a += gv;
          c += gv * (p[s] - u);
        }
        sg[0] += a;
        sgx[0] += c;
      } else {
        // SSE (the x86-64 baseline) by hand: GCC leaves the masked accumulation scalar.
        constexpr int V = B / 4;
        __m128 a[V], c[V], u[V];
        for (int v = 0; v < V; ++v) {
          a[v] = c[v] = _mm_setzero_ps();
          u[v] = _mm_loadu_ps(mu + 4 * v);
        }
        for (int64_t s = 0; s < sh.s; ++s)
          for (int v = 0; v < V; ++v) {
            const int64_t e = s * B + 4 * v;
            __m128 gv = _mm_loadu_ps(d + e);
            if constexpr (Mask) gv = _mm_and_ps(gv, _mm_cmpgt_ps(_mm_loadu_ps(ry + e), _mm_setzero_ps()));
            a[v] = _mm_add_ps(a[v], gv);
            c[v] = _mm_add_ps(c[v], _mm_mul_ps(gv, _mm_sub_ps(_mm_loadu_ps(p + e), u[v])));
          }
        float af[B], cf[B];
        for (int v = 0; v < V; ++v) {
          _mm_storeu_ps(af + 4 * v, a[v]);
          _mm_storeu_ps(cf + 4 * v, c[v]);
        }
        for (int j = 0; j < B; ++j) {
          sg[j] += af[j];
          sgx[j] += cf[j];
        }
      }
    }
    float k1[B], k2[B], k3[B];
    for (int j = 0; j < B; ++j) {
      const int64_t c = gi * B + j;
      const BnBackwardTerms t = bn_backward_terms(sg[j], sgx[j], gamma[c], var[c], eps, m);
      k1[j] = t.k1, k2[j] = t.k2, k3[j] = t.k3;
      dgamma[c] = t.dgamma, dbeta[c] = t.dbeta;
    }
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = n * stride_n + gi * slab;
      const float *__restrict d = dy + base, *__restrict p = x + base, *__restrict ry = Mask ? relu_y + base : nullptr;
      float* __restrict q = dx + base;
      if constexpr (B == 1) {
        for (int64_t s = 0; s < sh.s; ++s) {
          float gv = d[s];
          if constexpr (Mask) gv = ry[s] > 0.0f ? gv : 0.0f;
          q[s] = k1[0] * gv + k2[0] * (p[s] - mu[0]) + k3[0];
        }
      } else {
        constexpr int V = B / 4;
        __m128 K1[V], K2[V], K3[V], U[V];
        for (int v = 0; v < V; ++v) {
          K1[v] = _mm_loadu_ps(k1 + 4 * v);
          K2[v] = _mm_loadu_ps(k2 + 4 * v);
          K3[v] = _mm_loadu_ps(k3 + 4 * v);
          U[v] = _mm_loadu_ps(mu + 4 * v);
        }
        for (int64_t s = 0; s < sh.s; ++s)
          for (int v = 0; v < V; ++v) {
            const int64_t e = s * B + 4 * v;
            __m128 gv = _mm_loadu_ps(d + e);
            if constexpr (Mask) gv = _mm_and_ps(gv, _mm_cmpgt_ps(_mm_loadu_ps(ry + e), _mm_setzero_ps()));
            const __m128 t = _mm_add_ps(_mm_mul_ps(K1[v], gv), _mm_mul_ps(K2[v], _mm_sub_ps(_mm_loadu_ps(p + e), U[v])));
            _mm_storeu_ps(q + e, _mm_add_ps(t, K3[v]));
          }
      }
    }
  }
}

void check(const BnShape& sh) {
  if ((sh.block != 1 && sh.block != 8 && sh.block != 16) || sh.c % sh.block != 0)
    throw InternalError("bn kernel: block " + std::to_string(sh.block) + " does not divide " + std::to_string(sh.c) +
                        " channels");
}

template <int B>
void forward_flags(const BnShape& sh, float eps, const float* x, const float* gamma, const float* beta,
                   const float* residual, bool relu, float* y, float* mean, float* var) {
  if (residual && relu) forward_impl<B, true, true>(sh, eps, x, gamma, beta, residual, y, mean, var);
  else if (residual) forward_impl<B, false, true>(sh, eps, x, gamma, beta, residual, y, mean, var);
  else if (relu) forward_impl<B, true, false>(sh, eps, x, gamma, beta, residual, y, mean, var);
  else forward_impl<B, false, false>(sh, eps, x, gamma, beta, residual, y, mean, var);
}

template <int B>
void backward_flags(const BnShape& sh, float eps, const float* dy, const float* relu_y, const float* x,
                    const float* gamma, const float* mean, const float* var, float* dx, float* dgamma, float* dbeta) {
  if (relu_y) backward_impl<B, true>(sh, eps, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
  else backward_impl<B, false>(sh, eps, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
}

}  // namespace

void bn_forward(const BnShape& sh, float eps, const float* x, const float* gamma, const float* beta,
                const float* residual, bool relu, float* y, float* mean, float* var) {
  check(sh);
  if (sh.block == 16) forward_flags<16>(sh, eps, x, gamma, beta, residual, relu, y, mean, var);
  else if (sh.block == 8) forward_flags<8>(sh, eps, x, gamma, beta, residual, relu, y, mean, var);
  else forward_flags<1>(sh, eps, x, gamma, beta, residual, relu, y, mean, var);
}

void bn_backward(const BnShape& sh, float eps, const float* dy, const float* relu_y, const float* x,
                 const float* gamma, const float* mean, const float* var, float* dx, float* dgamma, float* dbeta) {
  check(sh);
  if (sh.block == 16) backward_flags<16>(sh, eps, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
  else if (sh.block == 8) backward_flags<8>(sh, eps, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
  else backward_flags<1>(sh, eps, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
}

}  // namespace xpusim::cpu
