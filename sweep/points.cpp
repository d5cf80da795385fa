// Grid, random and Latin-hypercube points. Latin hypercube over discrete axes: for N points
// each axis's N strata [i/N, (i+1)/N) are used once each (a seeded permutation per axis),
// and stratum k maps to value floor(k * len / N), so every value appears N/len times
// (within one) and axes are paired at random.
#include "sweep/points.hpp"

#include <numeric>

#include "common/error.hpp"

namespace xpusim::sweep {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t n) {
  if (n <= 1) return 0;
  // Rejection of the top partial range keeps every residue equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next();
  while (x >= limit);
  return x % n;
}

long long point_count(const SweepSpec& s) { return s.sampling == Sampling::grid ? s.grid_size() : s.samples; }

std::vector<Point> make_points(const SweepSpec& s) {
  const size_t naxes = s.axes.size();
  const long long n = point_count(s);
  if (n > 100'000'000) throw UserError(s.file + ": axes: " + std::to_string(n) + " points is more than 10^8; sample it (sampling: random or lhs)");
  std::vector<Point> pts(static_cast<size_t>(n));
  for (long long i = 0; i < n; ++i) {
    pts[i].index = i;
    pts[i].choice.assign(naxes, 0);
  }
  if (s.sampling == Sampling::grid) {
    for (long long i = 0; i < n; ++i) {
      long long rest = i;
      for (size_t a = naxes; a-- > 0;) {
        long long len = static_cast<long long>(s.axes[a].values.size());
        pts[i].choice[a] = static_cast<size_t>(rest % len);
        rest /= len;
      }
    }
  } else if (s.sampling == Sampling::random) {
    SplitMix64 rng(s.seed);
    for (auto& p : pts)
      for (size_t a = 0; a < naxes; ++a) p.choice[a] = static_cast<size_t>(rng.below(s.axes[a].values.size()));
  } else {
    SplitMix64 rng(s.seed);
    std::vector<long long> perm(static_cast<size_t>(n));
    for (size_t a = 0; a < naxes; ++a) {
      std::iota(perm.begin(), perm.end(), 0LL);
      for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);  // Fisher-Yates
      const long long len = static_cast<long long>(s.axes[a].values.size());
      for (long long i = 0; i < n; ++i) pts[i].choice[a] = static_cast<size_t>(perm[i] * len / n);
    }
  }
  return pts;
}

}  // namespace xpusim::sweep
