// Small statistics shared by the measuring backends (CPU, CUDA): these machines are
// shared and noisy, so step times are summarised by their median.
#pragma once
#include <algorithm>
#include <vector>

namespace xpusim {

// Median of the values (the mean of the two middle ones for an even count); 0 when empty.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace xpusim
