// A small deterministic Nelder-Mead minimiser (Nelder & Mead, Computer Journal 7(4), 1965;
// coefficients and shrink step as in Lagarias et al., SIAM J. Optim. 9(1), 1998). Used by
// calibration in log space, where a few (1-4) efficiency constants are fitted; it needs no
// gradients, which the engines do not provide. Infinite objective values (a parameter
// set the device spec rejects) are allowed and simply lose every comparison.
#pragma once
#include <functional>
#include <vector>

namespace xpusim::validation {

struct NelderMeadOptions {
  double initial_step = 0.25;   // simplex edge along each axis (log space: ~28%)
  int max_evaluations = 400;
  double f_tolerance = 1e-12;   // stop when the simplex values agree to this
  double x_tolerance = 1e-7;    // ... and its vertices to this
};

struct NelderMeadResult {
  std::vector<double> x;
  double f = 0;
  int evaluations = 0;
  bool converged = false;
};

NelderMeadResult nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                             const NelderMeadOptions& o = {},
                             const std::function<void(int evaluations)>& on_evaluation = {});

}  // namespace xpusim::validation
