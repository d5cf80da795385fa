#include "devices/analytical/gemm_alignment.hpp"

#include <algorithm>
#include <cstdint>

namespace xpusim::analytical {

namespace {
constexpr double kVectorBytes = 16;  // one LDG.128 / cp.async.16 / TMA element stride

int64_t padded(int64_t dim, int padded_to) {
  if (padded_to <= 1) return dim;
  return (dim + padded_to - 1) / padded_to * padded_to;
}
}  // namespace

double elements_per_vector(double element_bytes) {
  return element_bytes > 0 ? std::max(1.0, kVectorBytes / element_bytes) : 1.0;
}

bool gemm_leading_dims_aligned(const OpAttrs& a, double element_bytes, int padded_to) {
  const auto per = static_cast<int64_t>(elements_per_vector(element_bytes));
  if (per <= 1) return true;
  const int64_t lda = a.trans_a ? a.m : a.k;  // A stored [k, m] when transposed
  const int64_t ldb = a.trans_b ? a.k : a.n;  // B stored [n, k] when transposed
  const int64_t ldc = a.n;
  for (int64_t ld : {lda, ldb, ldc})
    if (padded(ld, padded_to) % per != 0) return false;
  return true;
}

}  // namespace xpusim::analytical
