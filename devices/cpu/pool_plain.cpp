#include "devices/cpu/pool_plain.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace xpusim::cpu {

namespace {
// The window of output (r, c) clipped to the input: rows [r0, r1), columns [c0, c1).
struct Window {
  int64_t r0, r1, c0, c1;
};
inline Window window(const PlainPool& p, int64_t r, int64_t c) {
  const int64_t h0 = r * p.sh - p.ph, w0 = c * p.sw - p.pw;
  return {std::max<int64_t>(h0, 0), std::min(h0 + p.kh, p.h), std::max<int64_t>(w0, 0), std::min(w0 + p.kw, p.w)};
}
}  // namespace

void pool_plain_forward(const PlainPool& p, const float* x, float* y) {
  const float inv = 1.0f / static_cast<float>(p.kh * p.kw);
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < p.planes; ++q) {
    const float* xp = x + q * p.h * p.w;
    float* yp = y + q * p.oh * p.ow;
    for (int64_t r = 0; r < p.oh; ++r)
      for (int64_t c = 0; c < p.ow; ++c) {
        const Window wd = window(p, r, c);
        float acc = p.max ? -std::numeric_limits<float>::infinity() : 0.0f;
        for (int64_t i = wd.r0; i < wd.r1; ++i)
          for (int64_t j = wd.c0; j < wd.c1; ++j) acc = p.max ? std::max(acc, xp[i * p.w + j]) : acc + xp[i * p.w + j];
        yp[r * p.ow + c] = p.max ? acc : acc * inv;
      }
  }
}

void pool_plain_backward(const PlainPool& p, const float* dy, const float* x, const float* y, float* dx) {
  const float inv = 1.0f / static_cast<float>(p.kh * p.kw);
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < p.planes; ++q) {
    const float* xp = x + q * p.h * p.w;
    const float* yp = y + q * p.oh * p.ow;
    const float* dyp = dy + q * p.oh * p.ow;
    float* dxp = dx + q * p.h * p.w;
    std::memset(dxp, 0, static_cast<size_t>(p.h * p.w) * sizeof(float));
    for (int64_t r = 0; r < p.oh; ++r)
      for (int64_t c = 0; c < p.ow; ++c) {
        const Window wd = window(p, r, c);
        const float g = dyp[r * p.ow + c];
        if (p.max) {
          const float m = yp[r * p.ow + c];
          bool done = false;
          for (int64_t i = wd.r0; i < wd.r1 && !done; ++i)
            for (int64_t j = wd.c0; j < wd.c1; ++j)
              if (xp[i * p.w + j] == m) {
                dxp[i * p.w + j] += g;
                done = true;
                break;
              }
        } else {
          for (int64_t i = wd.r0; i < wd.r1; ++i)
            for (int64_t j = wd.c0; j < wd.c1; ++j) dxp[i * p.w + j] += g * inv;
        }
      }
  }
}

}  // namespace xpusim::cpu
