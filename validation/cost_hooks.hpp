// The narrow interface through which validation reaches the cost model (prices and
// accuracy curves live there, not here). validation/cost_link.cpp implements it on
// costmodel/; while a callback is empty (tests, other front ends), rows whose metric needs
// it are skipped with the reason "cost model not linked". A callback throws UserError/UnavailableError to skip one row with
// its message as the reason (e.g. "no price for device x on system y").
#pragma once
#include <functional>

#include "engine/engine.hpp"
#include "validation/reference_csv.hpp"

namespace xpusim::validation {

struct CostHooks {
  // USD per hour of the row's whole placement (accelerators + host VM), priced as the
  // study priced it (the row's note may say on-demand, reserved or preemptible).
  std::function<double(const ReferenceRow& row, const StepReport& predicted)> usd_per_hour;
  // Epochs the row's model needs to reach `target` top-1 (top5 = false) or top-5 accuracy
  // at the row's global batch and precision.
  std::function<double(const ReferenceRow& row, const StepReport& predicted, bool top5, double target)>
      epochs_to_accuracy;
  // Non-empty when that epochs figure is not predicted but read off an input curve point
  // (the published number itself): such a row would only compare a number with itself.
  std::function<std::string(const ReferenceRow& row, const StepReport& predicted, bool top5, double target)>
      epochs_input_source;
};

}  // namespace xpusim::validation
