#include "devices/analytical/gemm_alignment.hpp"

#include <algorithm>
#include <cstdint>

namespace xpusim::analytical {

namespace {
int64_t padded(int64_t dim, int padded_to) {
  if (padded_to <= 1) return dim;
  return (dim + padded_to - 1) / padded_to * padded_to;
}

// The widest access cuBLAS has kernels for that a leading dimension of `ld_bytes` allows.
double access_for(double ld_bytes, double element_bytes) {
  const auto b = static_cast<int64_t>(ld_bytes);
  if (b % static_cast<int64_t>(kAlignedAccessBytes) == 0) return kAlignedAccessBytes;
  if (element_bytes < 4 && b % 4 == 0) return 4;  // the `_align2` 16-bit, `_align4` fp8 kernels
  return element_bytes;
}
}  // namespace

double gemm_access_bytes(const OpAttrs& a, double element_bytes, int padded_to) {
  if (element_bytes <= 0 || element_bytes >= kAlignedAccessBytes) return kAlignedAccessBytes;
  const int64_t lda = a.trans_a ? a.m : a.k;  // A stored [k, m] when transposed
  const int64_t ldb = a.trans_b ? a.k : a.n;  // B stored [n, k] when transposed
  const int64_t ldc = a.n;
  double access = kAlignedAccessBytes;
  for (int64_t ld : {lda, ldb, ldc})
    access = std::min(access, access_for(static_cast<double>(padded(ld, padded_to)) * element_bytes, element_bytes));
  return access;
}

}  // namespace xpusim::analytical
