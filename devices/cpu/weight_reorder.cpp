#include "devices/cpu/weight_reorder.hpp"

#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "devices/cpu/avx512_bf16_target.hpp"
#include "devices/cpu/bn_kernel_bf16.hpp"

namespace xpusim::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

constexpr int B = 16;
constexpr int kBlock = B * B;

// A 16 x 16 block of ABcd16b16a holds s[i * 16 + o] (i: input channel, o: output channel).
void transpose_block(const float* __restrict s, float* __restrict d) {  // d[o * 16 + i]
  for (int i = 0; i < B; ++i)
    for (int o = 0; o < B; ++o) d[o * B + i] = s[i * B + o];
}

// Rows r and r + 1 of a 16 x 16 fp32 block, rounded to bf16 and interleaved element by
// element: the "8x16x2" inner blocks (ABcd8b16a2b: pairs of input channels per output
// channel) that bf16 dot-product instructions read.
XPUSIM_BF16_TARGET void pair_rows_bf16(const float* __restrict s, uint16_t* __restrict d) {
  alignas(64) static const uint16_t kIdx[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i idx = _mm512_load_si512(kIdx);
  for (int r = 0; r < B; r += 2) {
    // Lower 16 words from the second operand (row r), upper 16 from the first (row r + 1).
    const __m512bh both = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + (r + 1) * B), _mm512_loadu_ps(s + r * B));
    __m512i w;
    std::memcpy(&w, &both, sizeof w);
    _mm512_storeu_si512(d + r * B, _mm512_permutexvar_epi16(idx, w));
  }
}

enum class Kind { f32_abcd16a16b, f32_bacd16a16b, bf16_abcd8b16a2b, bf16_abcd8a16b2a, bf16_bacd8a16b2a };

struct Geometry {
  int64_t ob = 0, ib = 0, hw = 0;  // output-channel blocks, input-channel blocks, kh * kw
};

template <Kind K>
void run(const float* src, void* dst, const Geometry& g) {
  const bool swap = K == Kind::f32_bacd16a16b || K == Kind::bf16_bacd8a16b2a;  // BAcd: input blocks outer
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t o = 0; o < g.ob; ++o)
    for (int64_t i = 0; i < g.ib; ++i)
      for (int64_t p = 0; p < g.hw; ++p) {
        const float* s = src + ((o * g.ib + i) * g.hw + p) * kBlock;
        const int64_t at = ((swap ? i * g.ob + o : o * g.ib + i) * g.hw + p) * kBlock;
        if constexpr (K == Kind::f32_abcd16a16b || K == Kind::f32_bacd16a16b) {
          transpose_block(s, static_cast<float*>(dst) + at);
        } else if constexpr (K == Kind::bf16_abcd8b16a2b) {
          pair_rows_bf16(s, static_cast<uint16_t*>(dst) + at);  // pairs of input channels
        } else {
          alignas(64) float t[kBlock];  // pairs of output channels: transpose first
          transpose_block(s, t);
          pair_rows_bf16(t, static_cast<uint16_t*>(dst) + at);
        }
      }
}

}  // namespace

std::function<void(const void*, void*)> fast_weight_reorder(const memory::desc& from, const memory::desc& to) {
  const memory::dims d = from.dims();
  if (d.size() != 4 || d[0] % B != 0 || d[1] % B != 0) return {};
  if (from != memory::desc(d, dt::f32, tag::ABcd16b16a)) return {};
  const Geometry g{d[0] / B, d[1] / B, d[2] * d[3]};
  auto fn = [g](auto k) -> std::function<void(const void*, void*)> {
    return [g](const void* s, void* t) { run<decltype(k)::value>(static_cast<const float*>(s), t, g); };
  };
  if (to == memory::desc(d, dt::f32, tag::ABcd16a16b)) return fn(std::integral_constant<Kind, Kind::f32_abcd16a16b>{});
  if (to == memory::desc(d, dt::f32, tag::BAcd16a16b)) return fn(std::integral_constant<Kind, Kind::f32_bacd16a16b>{});
  if (!bn_bf16_kernel_available()) return {};
  if (to == memory::desc(d, dt::bf16, tag::ABcd8b16a2b))
    return fn(std::integral_constant<Kind, Kind::bf16_abcd8b16a2b>{});
  if (to == memory::desc(d, dt::bf16, tag::ABcd8a16b2a))
    return fn(std::integral_constant<Kind, Kind::bf16_abcd8a16b2a>{});
  if (to == memory::desc(d, dt::bf16, tag::BAcd8a16b2a))
    return fn(std::integral_constant<Kind, Kind::bf16_bacd8a16b2a>{});
  return {};
}

}  // namespace xpusim::cpu
