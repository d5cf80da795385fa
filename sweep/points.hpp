// The points of a sweep: every combination of the axes (grid), or `samples` draws (random,
// Latin hypercube) from a seeded generator of our own (splitmix64), so the same YAML gives
// the same points on every machine, compiler and standard library.
#pragma once
#include <cstdint>
#include <vector>

#include "sweep/sweep_spec.hpp"

namespace xpusim::sweep {

struct Point {
  long long index = 0;          // 0-based position in the sweep; the row's `point` column
  std::vector<size_t> choice;   // value index per axis
};

// Deterministic 64-bit generator (Steele et al., splitmix64); below(n) is unbiased.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  uint64_t below(uint64_t n);
 private:
  uint64_t state_;
};

// Point count without building them (grid: product of axis lengths; else samples).
long long point_count(const SweepSpec& s);
// The points in sweep order. Grid: the last axis varies fastest.
std::vector<Point> make_points(const SweepSpec& s);

}  // namespace xpusim::sweep
