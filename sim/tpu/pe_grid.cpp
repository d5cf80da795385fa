// The PE-level systolic grid. Timing per tile: R cycles to shift the weights down the
// columns, then input row p enters grid row r at cycle p + r (skewed), reaches column c at
// p + r + c, and the finished sum leaves the bottom of column c at p + (R-1) + c; the tile
// ends when the last one leaves: R + (P + R + C - 2) = 2R + C + P - 2 cycles.
#include "sim/tpu/pe_grid.hpp"

#include <cstring>

#include "common/error.hpp"

namespace xpusim::tpu {

float round_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {
    u |= 0x00400000u;  // quiet NaN, keep it a NaN after truncation
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);  // round half to even on the upper 16 bits
  }
  u &= 0xffff0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

namespace {

struct Pe {
  float w = 0;      // stationary weight (bf16 value)
  float a = 0;      // input register, moves right
  bool a_valid = false;
  float s = 0;      // partial-sum register, moves down
};

}  // namespace

PeGridResult pe_grid_gemm(const std::vector<float>& a, const std::vector<float>& b, int64_t p, int64_t l,
                          int64_t q, int rows, int cols) {
  if (rows < 1 || cols < 1 || p < 1 || l < 1 || q < 1) throw InternalError("pe_grid_gemm: bad sizes");
  PeGridResult res;
  res.out.assign(static_cast<size_t>(p * q), 0.0f);
  const int R = rows, C = cols;
  std::vector<Pe> grid(static_cast<size_t>(R * C)), next(grid.size());
  auto at = [&](std::vector<Pe>& g, int r, int c) -> Pe& { return g[static_cast<size_t>(r * C + c)]; };

  for (int64_t k0 = 0; k0 < l; k0 += R) {
    for (int64_t n0 = 0; n0 < q; n0 += C) {
      // Weight load: the tile's rows enter at the top, bottom row first, one row per cycle;
      // after R cycles PE (r, c) holds B[k0 + r][n0 + c] (zero outside the operand).
      std::vector<float> wreg(static_cast<size_t>(R * C), 0.0f);
      for (int cyc = 0; cyc < R; ++cyc) {
        for (int r = R - 1; r > 0; --r)
          for (int c = 0; c < C; ++c) wreg[static_cast<size_t>(r * C + c)] = wreg[static_cast<size_t>((r - 1) * C + c)];
        int src_row = R - 1 - cyc;
        for (int c = 0; c < C; ++c) {
          int64_t k = k0 + src_row, n = n0 + c;
          wreg[static_cast<size_t>(c)] =
              (k < l && n < q) ? round_to_bf16(b[static_cast<size_t>(k * q + n)]) : 0.0f;
        }
        ++res.cycles;
      }
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
          Pe& pe = at(grid, r, c);
          pe = Pe{};
          pe.w = wreg[static_cast<size_t>(r * C + c)];
        }
      // Streaming: P + R + C - 2 cycles until the last sum leaves the bottom-right PE.
      const int64_t stream_cycles = p + R + C - 2;
      for (int64_t t = 0; t < stream_cycles; ++t) {
        for (int r = 0; r < R; ++r) {
          for (int c = 0; c < C; ++c) {
            Pe& n = at(next, r, c);
            n.w = at(grid, r, c).w;
            if (c == 0) {
              int64_t row = t - r;  // input row entering grid row r this cycle
              int64_t k = k0 + r;
              n.a_valid = row >= 0 && row < p;
              n.a = (n.a_valid && k < l) ? round_to_bf16(a[static_cast<size_t>(row * l + k)]) : 0.0f;
            } else {
              n.a = at(grid, r, c - 1).a;
              n.a_valid = at(grid, r, c - 1).a_valid;
            }
            float above = r == 0 ? 0.0f : at(grid, r - 1, c).s;
            // bf16 x bf16 is exact in fp32; the sum rounds once, like an fp32 adder.
            float prod = n.a * n.w;
            n.s = above + prod;
          }
        }
        grid.swap(next);
        // Column c's bottom PE now holds the sum for input row t - (R-1) - c.
        for (int c = 0; c < C; ++c) {
          int64_t row = t - (R - 1) - c, col = n0 + c;
          if (row >= 0 && row < p && col < q) res.out[static_cast<size_t>(row * q + col)] += at(grid, R - 1, c).s;
        }
        ++res.cycles;
      }
    }
  }
  return res;
}

std::vector<float> reference_gemm_bf16(const std::vector<float>& a, const std::vector<float>& b, int64_t p,
                                       int64_t l, int64_t q, int rows) {
  std::vector<float> out(static_cast<size_t>(p * q), 0.0f);
  for (int64_t i = 0; i < p; ++i)
    for (int64_t j = 0; j < q; ++j) {
      float total = 0.0f;
      for (int64_t k0 = 0; k0 < l; k0 += rows) {
        float part = 0.0f;
        for (int64_t k = k0; k < k0 + rows && k < l; ++k)
          part += round_to_bf16(a[static_cast<size_t>(i * l + k)]) * round_to_bf16(b[static_cast<size_t>(k * q + j)]);
        total += part;
      }
      out[static_cast<size_t>(i * q + j)] = total;
    }
  return out;
}

}  // namespace xpusim::tpu
