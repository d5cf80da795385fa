#include "devices/cpu/bn_kernel.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"

namespace xpusim::cpu {

namespace {

// One group = B channels (block B) or one channel (plain, B = 1). Sums over one n-slab run in
// float (vectorised across the B channels, or across s with an omp simd reduction when
// B = 1) and are added across n in double, so the statistics of a 16 x 112 x 112 channel
// stay accurate to fp32 rounding.
template <int B>
void forward_impl(const BnShape& sh, float eps, const float* x, const float* gamma, const float* beta,
                  const float* residual, bool relu, float* y, float* mean, float* var) {
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
    for (int j = 0; j < B; ++j) {
      const int64_t c = gi * B + j;
      const float v = static_cast<float>(sq[j] / m);
      mean[c] = mu[j];
      var[c] = v;
      k[j] = gamma[c] / std::sqrt(v + eps);
      b[j] = beta[c] - mu[j] * k[j];
    }
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = n * stride_n + gi * slab;
      const float* p = x + base;
      const float* r = residual ? residual + base : nullptr;
      float* q = y + base;
      for (int64_t s = 0; s < sh.s; ++s)
        for (int j = 0; j < B; ++j) {
          float v = p[s * B + j] * k[j] + b[j];
          if (r) v += r[s * B + j];
          q[s * B + j] = relu ? std::max(v, 0.0f) : v;
        }
    }
  }
}

template <int B>
void backward_impl(const BnShape& sh, float eps, const float* dy, const float* relu_y, const float* x,
                   const float* gamma, const float* mean, const float* var, float* dx, float* dgamma, float* dbeta) {
  const int64_t groups = sh.c / B, slab = sh.s * B, stride_n = groups * slab;
  const double m = static_cast<double>(sh.n * sh.s);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t gi = 0; gi < groups; ++gi) {
    float mu[B];
    for (int j = 0; j < B; ++j) mu[j] = mean[gi * B + j];
    double sg[B] = {}, sgx[B] = {};  // sum of g and of g (x - mean), g = dy masked by the ReLU
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = n * stride_n + gi * slab;
      const float *d = dy + base, *p = x + base, *ry = relu_y ? relu_y + base : nullptr;
      if constexpr (B == 1) {
        float a = 0, c = 0;
        const float u = mu[0];
        if (ry) {
#pragma omp simd reduction(+ : a, c)
          for (int64_t s = 0; s < sh.s; ++s) {
            const float gv = ry[s] > 0.0f ? d[s] : 0.0f;
            a += gv;
            c += gv * (p[s] - u);
          }
        } else {
#pragma omp simd reduction(+ : a, c)
          for (int64_t s = 0; s < sh.s; ++s) {
            a += d[s];
            c += d[s] * (p[s] - u);
          }
        }
        sg[0] += a;
        sgx[0] += c;
      } else {
        float a[B] = {}, c[B] = {};
        for (int64_t s = 0; s < sh.s; ++s)
          for (int j = 0; j < B; ++j) {
            const int64_t e = s * B + j;
            const float gv = (!ry || ry[e] > 0.0f) ? d[e] : 0.0f;
            a[j] += gv;
            c[j] += gv * (p[e] - mu[j]);
          }
        for (int j = 0; j < B; ++j) {
          sg[j] += a[j];
          sgx[j] += c[j];
        }
      }
    }
    // dx = gamma istd (g - sum(g)/M - xhat sum(g xhat)/M), xhat = (x - mean) istd.
    float k1[B], k2[B], k3[B];
    for (int j = 0; j < B; ++j) {
      const int64_t c = gi * B + j;
      const double istd = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
      dbeta[c] = static_cast<float>(sg[j]);
      dgamma[c] = static_cast<float>(sgx[j] * istd);
      k1[j] = static_cast<float>(gamma[c] * istd);
      k2[j] = static_cast<float>(-gamma[c] * istd * istd * istd * sgx[j] / m);
      k3[j] = static_cast<float>(-gamma[c] * istd * sg[j] / m);
    }
    for (int64_t n = 0; n < sh.n; ++n) {
      const int64_t base = n * stride_n + gi * slab;
      const float *d = dy + base, *p = x + base, *ry = relu_y ? relu_y + base : nullptr;
      float* q = dx + base;
      for (int64_t s = 0; s < sh.s; ++s)
        for (int j = 0; j < B; ++j) {
          const int64_t e = s * B + j;
          const float gv = (!ry || ry[e] > 0.0f) ? d[e] : 0.0f;
          q[e] = k1[j] * gv + k2[j] * (p[e] - mu[j]) + k3[j];
        }
    }
  }
}

void check(const BnShape& sh) {
  if ((sh.block != 1 && sh.block != 8 && sh.block != 16) || sh.c % sh.block != 0)
    throw InternalError("bn kernel: block " + std::to_string(sh.block) + " does not divide " + std::to_string(sh.c) +
                        " channels");
}

}  // namespace

void bn_forward(const BnShape& sh, float eps, const float* x, const float* gamma, const float* beta,
                const float* residual, bool relu, float* y, float* mean, float* var) {
  check(sh);
  if (sh.block == 16) forward_impl<16>(sh, eps, x, gamma, beta, residual, relu, y, mean, var);
  else if (sh.block == 8) forward_impl<8>(sh, eps, x, gamma, beta, residual, relu, y, mean, var);
  else forward_impl<1>(sh, eps, x, gamma, beta, residual, relu, y, mean, var);
}

void bn_backward(const BnShape& sh, float eps, const float* dy, const float* relu_y, const float* x,
                 const float* gamma, const float* mean, const float* var, float* dx, float* dgamma, float* dbeta) {
  check(sh);
  if (sh.block == 16) backward_impl<16>(sh, eps, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
  else if (sh.block == 8) backward_impl<8>(sh, eps, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
  else backward_impl<1>(sh, eps, dy, relu_y, x, gamma, mean, var, dx, dgamma, dbeta);
}

}  // namespace xpusim::cpu
