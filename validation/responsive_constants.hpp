// Constants a fit's rows cannot pin down. A constant that moves no row's prediction (a Turing
// kernel scale fitted on V100 rows, which the roofline prices) or stops moving them past a cap
// (an efficiency scale past the device's ceiling, where 1e8 prices like 2) is a flat direction
// for the minimiser: Nelder-Mead leaves it wherever the simplex wandered (leave-one-study-out
// once reported a profile's compute_efficiency_scale at 441,102,591 and its
// kernel_tensor_efficiency_scale at 0.005), and that arbitrary value then reaches every row
// that does respond to it: the profile's other devices, the profiles that take it as their
// base. After the fit each such constant is moved back towards its starting value as far as
// the fit's rows cannot tell the difference.
#pragma once
#include <functional>
#include <vector>

namespace xpusim::validation {

using PredictionsAt = std::function<std::vector<double>(const std::vector<double>&)>;

struct Settled {
  std::vector<double> x;        // the fitted point, each constant at its nearest equivalent
  std::vector<bool> no_effect;  // at x0, and moving it by +-log_step changes no row
};

// predictions(x): one value per fit row at the log-space point x (NaN: not predicted). Of the
// values that give every row the same prediction as `x`, each constant, in order, takes the
// one nearest x0 along the straight line: x0 itself when that is equivalent, else the edge
// of the equivalent region found by bisection (12 steps) when it moved more than log_step and
// a first step of 1/4096 of the way is still equivalent.
// The rows' predictions, and so the fit's error, do not change.
Settled settle_constants(const PredictionsAt& predictions, std::vector<double> x, const std::vector<double>& x0,
                         double log_step);

}  // namespace xpusim::validation
