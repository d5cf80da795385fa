// Dynamic loss scaler state machine (see loss_scaler.hpp for the rule and its source).
#include "devices/cuda/loss_scaler.hpp"

#include <algorithm>

namespace xpusim::cuda {

DynamicLossScaler::DynamicLossScaler(LossScalerOptions o, bool enabled)
    : o_(o), enabled_(enabled), scale_(o.init_scale) {}

bool DynamicLossScaler::update(bool found_inf) {
  if (!enabled_) return !found_inf;
  if (found_inf) {
    scale_ = std::max(o_.min_scale, scale_ * o_.backoff_factor);
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_steps_ >= o_.growth_interval) {
    scale_ *= o_.growth_factor;
    good_steps_ = 0;
  }
  return true;
}

}  // namespace xpusim::cuda
