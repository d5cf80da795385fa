// Timing of a GEMM on weight-stationary systolic arrays: the one formula the fast model and
// the PE-level grid (pe_grid.hpp) share, so a test can check the two agree cycle for cycle.
//
// One R x C array computes out[P, Q] = A[P, L] x B[L, Q] by holding an R x C tile of B
// (L rows, Q columns) in its PEs and streaming the P rows of A through it. A cold tile takes
//   2R + C + P - 2 cycles
// (R cycles to shift the weights in, then the last of the P skewed input rows enters after
// P - 1 cycles and leaves the bottom-right PE R + C - 1 cycles later); this is SCALE-Sim's
// stall-free weight-stationary fold time (Samajdar et al., "SCALE-Sim", arXiv:1811.02883,
// and SCALE-Sim v2). The TPU's MXU double-buffers weights (Jouppi et al., ISCA 2017, sec. 2:
// "weights are double-buffered ... to hide the latency of loading them"), so back-to-back
// tiles overlap: each further tile costs max(P, R) cycles.
#pragma once
#include <cstdint>

namespace xpusim::tpu {

struct GemmShape {
  int64_t p = 0;  // streamed rows
  int64_t l = 0;  // contraction
  int64_t q = 0;  // output columns
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Cycles of one cold tile (p streamed rows) on an R x C array.
inline int64_t ws_tile_cycles(int64_t rows, int64_t cols, int64_t p) { return 2 * rows + cols + p - 2; }

// Cycles of a whole GEMM on `arrays` arrays of R x C with weight preloading; the tiles are
// split evenly over the arrays.
inline int64_t ws_gemm_cycles(const GemmShape& g, int64_t rows, int64_t cols, int64_t arrays) {
  if (g.p <= 0 || g.l <= 0 || g.q <= 0) return 0;
  int64_t tiles = ceil_div(g.l, rows) * ceil_div(g.q, cols);
  int64_t per_array = ceil_div(tiles, arrays);
  int64_t steady = g.p > rows ? g.p : rows;
  return (per_array - 1) * steady + ws_tile_cycles(rows, cols, g.p);
}

// The cheaper of the two orientations (stream P with B stationary, or stream Q with A^T
// stationary), as a compiler's layout assignment would choose.
inline int64_t best_gemm_cycles(const GemmShape& g, int64_t rows, int64_t cols, int64_t arrays) {
  int64_t a = ws_gemm_cycles(g, rows, cols, arrays);
  int64_t b = ws_gemm_cycles(GemmShape{g.q, g.l, g.p}, rows, cols, arrays);
  return a < b ? a : b;
}

// A K x K convolution on the MXU without im2col (XLA's TPU emitter reads the shifted windows
// in place): the kernel's taps are contracted in passes over the array's R contraction rows,
// each pass a GEMM whose contraction is the input features of the taps it holds, the passes
// accumulated. A feature count of R or more gives every tap its own pass, padded to a multiple
// of R (the Cloud TPU performance guide's rule for convolutions at a small per-core batch:
// "feature dimension sizes should be a multiple of 128"); fewer features fold floor(R / F)
// whole taps into one pass, so a 3-channel image or 64 features fill the rows as im2col would.
struct TapPasses {
  int64_t rows = 0;    // contraction (or feature) rows of one pass: features x taps in it
  int64_t passes = 0;  // passes over the taps
};

inline TapPasses conv_tap_passes(int64_t features, int64_t taps, int64_t array_rows) {
  if (features <= 0 || taps <= 0 || array_rows <= 0) return {0, 0};
  if (features >= array_rows) return {features, taps};
  int64_t per = array_rows / features;
  if (per > taps) per = taps;
  return {features * per, ceil_div(taps, per)};
}

}  // namespace xpusim::tpu
