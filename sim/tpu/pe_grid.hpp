// Cycle-accurate PE-level model of one weight-stationary systolic array (small arrays, for
// checking the fast model): every cycle each PE passes its input to the right and its
// partial sum down, register to register. Inputs and weights are bf16 (round to nearest
// even from fp32), products and sums are fp32, as in the TPU MXU (Jouppi et al., CACM 2020).
#pragma once
#include <cstdint>
#include <vector>

namespace xpusim::tpu {

// fp32 -> bf16 -> fp32 with round-to-nearest-even (NaN stays NaN).
float round_to_bf16(float x);

struct PeGridResult {
  std::vector<float> out;  // [p x q], row-major
  int64_t cycles = 0;      // cycles from the first weight shifted in to the last output out
};

// out[P,Q] = A[P,L] x B[L,Q] on an R x C grid. Larger operands are split into R x C weight
// tiles run one after the other (cold, no preload); the partial sums of successive K tiles
// are added in fp32 in tile order, as the vector unit does.
PeGridResult pe_grid_gemm(const std::vector<float>& a, const std::vector<float>& b, int64_t p, int64_t l,
                          int64_t q, int rows, int cols);

// Reference: the same products, summed in the same (tile, then row) order without a grid.
std::vector<float> reference_gemm_bf16(const std::vector<float>& a, const std::vector<float>& b, int64_t p,
                                       int64_t l, int64_t q, int rows);

}  // namespace xpusim::tpu
