#include "validation/nelder_mead.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace xpusim::validation {

NelderMeadResult nelder_mead(const std::function<double(const std::vector<double>&)>& fn, std::vector<double> x0,
                             const NelderMeadOptions& o, const std::function<void(int)>& on_evaluation) {
  const size_t n = x0.size();
  NelderMeadResult res;
  int evals = 0;
  auto f = [&](const std::vector<double>& x) {
    ++evals;
    double v = fn(x);
    if (on_evaluation) on_evaluation(evals);
    return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
  };
  if (n == 0) {
    res.x = x0;
    res.f = f(x0);
    res.evaluations = evals;
    res.converged = true;
    return res;
  }
  std::vector<std::vector<double>> s(n + 1, x0);
  for (size_t i = 0; i < n; ++i) s[i + 1][i] += o.initial_step;
  std::vector<double> fs(n + 1);
  for (size_t i = 0; i <= n; ++i) fs[i] = f(s[i]);

  const double alpha = 1, gamma = 2, rho = 0.5, sigma = 0.5;
  std::vector<size_t> order(n + 1);
  while (true) {
    // Stable sort on (value, index) keeps ties deterministic.
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return fs[a] < fs[b]; });
    std::vector<std::vector<double>> s2;
    std::vector<double> f2;
    for (size_t i : order) {
      s2.push_back(s[i]);
      f2.push_back(fs[i]);
    }
    s.swap(s2);
    fs.swap(f2);
    double xspread = 0;
    for (size_t i = 1; i <= n; ++i)
      for (size_t k = 0; k < n; ++k) xspread = std::max(xspread, std::fabs(s[i][k] - s[0][k]));
    bool fconv = std::isfinite(fs[n]) && std::fabs(fs[n] - fs[0]) <= o.f_tolerance;
    if (fconv && xspread <= o.x_tolerance) {
      res.converged = true;
      break;
    }
    if (evals >= o.max_evaluations) break;

    std::vector<double> c(n, 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < n; ++k) c[k] += s[i][k] / static_cast<double>(n);
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (size_t k = 0; k < n; ++k) x[k] = c[k] + t * (s[n][k] - c[k]);
      return x;
    };
    std::vector<double> xr = along(-alpha);
    double fr = f(xr);
    if (fr < fs[0]) {
      std::vector<double> xe = along(-gamma);
      double fe = f(xe);
      if (fe < fr) {
        s[n] = xe;
        fs[n] = fe;
      } else {
        s[n] = xr;
        fs[n] = fr;
      }
      continue;
    }
    if (fr < fs[n - 1]) {
      s[n] = xr;
      fs[n] = fr;
      continue;
    }
    // Contraction: outside when the reflection improved on the worst point, else inside.
    bool outside = fr < fs[n];
    std::vector<double> xc = along(outside ? -rho : rho);
    double fc = f(xc);
    if (outside ? fc <= fr : fc < fs[n]) {
      s[n] = xc;
      fs[n] = fc;
      continue;
    }
    for (size_t i = 1; i <= n; ++i) {
      for (size_t k = 0; k < n; ++k) s[i][k] = s[0][k] + sigma * (s[i][k] - s[0][k]);
      fs[i] = f(s[i]);
    }
  }
  res.x = s[0];
  res.f = fs[0];
  res.evaluations = evals;
  return res;
}

}  // namespace xpusim::validation
