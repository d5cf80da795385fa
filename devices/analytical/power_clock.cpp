// Sustained SM clock under the board power limit (power_clock.hpp; docs/gpu_model.md).
#include "devices/analytical/power_clock.hpp"

#include <algorithm>
#include <cmath>

namespace xpusim::analytical {

double tensor_energy_weight(Precision p) {
  switch (p) {
    case Precision::fp32: return 0;
    case Precision::tf32: return 2;
    case Precision::mixed_fp16:
    case Precision::bf16:
    case Precision::mixed_bf16: return 1;
    case Precision::fp8: return 0.5;
  }
  return 0;
}

double power_limited_clock_factor(double budget_w, double demand_w) {
  if (!(budget_w > 0) || !(demand_w > 0) || demand_w <= budget_w) return 1.0;
  return std::pow(budget_w / demand_w, 1.0 / kClockPowerExponent);
}

double tensor_clock_factor(const DeviceSpec& d, Precision p, double tensor_flops_s) {
  if (!d.kernel_model() || !d.power.stated() || d.tensor_pj_per_flop <= 0) return 1.0;
  const double budget_w = d.power.max_power_w - d.power.idle_power_w;
  const double demand_w = d.tensor_pj_per_flop * 1e-12 * tensor_energy_weight(p) * tensor_flops_s;
  return power_limited_clock_factor(budget_w, demand_w);
}

}  // namespace xpusim::analytical
