#include "validation/responsive_constants.hpp"

#include <algorithm>
#include <cmath>

namespace xpusim::validation {

namespace {

// Equal predictions: both missing, or the same value to a relative 1e-12 (the engines are
// deterministic, so a constant without effect reproduces every value exactly).
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return false;
      continue;
    }
    if (std::fabs(a[i] - b[i]) > 1e-12 * std::max({std::fabs(a[i]), std::fabs(b[i]), 1e-300})) return false;
  }
  return true;
}

}  // namespace

Settled settle_constants(const PredictionsAt& predictions, std::vector<double> x, const std::vector<double>& x0,
                         double log_step) {
  const std::vector<double> at_x = predictions(x);
  Settled out;
  out.no_effect.assign(x.size(), false);
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != x0[i]) {
      auto at = [&](double t) {
        std::vector<double> y = x;
        y[i] = t >= 1 ? x0[i] : x[i] + t * (x0[i] - x[i]);
        return y;
      };
      if (same(predictions(at(1)), at_x)) {
        x[i] = x0[i];
      } else if (std::fabs(x[i] - x0[i]) > log_step && same(predictions(at(1.0 / 4096)), at_x)) {
        // (a constant the rows respond to right where it is skips the bisection)
        double lo = 1.0 / 4096, hi = 1;  // equivalent at lo, not at hi
        for (int k = 0; k < 12; ++k) {
          const double mid = 0.5 * (lo + hi);
          (same(predictions(at(mid)), at_x) ? lo : hi) = mid;
        }
        x[i] = at(lo)[i];
      }
    }
    if (x[i] != x0[i]) continue;
    bool responds = false;
    for (const double step : {log_step, -log_step}) {
      std::vector<double> y = x;
      y[i] += step;
      responds = responds || !same(predictions(y), at_x);
      if (responds) break;
    }
    out.no_effect[i] = !responds;
  }
  out.x = x;
  return out;
}

}  // namespace xpusim::validation
