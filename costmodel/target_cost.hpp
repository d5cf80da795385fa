// The one cost function: a study option, a target and what a prediction (or a given number)
// says about the option's speed -> price, epochs, hours, billed hours, dollars and kWh to the
// target. `xpusim compare` prices each study row with it, a sweep each point, and `xpusim
// validate` each cost-based reference row (through evaluate_cost), so all three agree.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "costmodel/convergence.hpp"
#include "costmodel/pricing.hpp"
#include "costmodel/study_option.hpp"

namespace xpusim::cost {

// What the cost of an option needs from its prediction.
struct OptionSpeed {
  std::optional<double> samples_per_s;  // absent: the prediction failed (price and power only)
  int64_t global_batch = 0;             // picks the convergence curve's point
  std::optional<double> modelled_power_w;  // the prediction's power (docs/power.md); absent = none
};

struct TargetCost {
  std::optional<double> usd_per_h;
  std::optional<double> samples_per_s_per_usd_per_h;
  std::optional<double> epochs;
  std::optional<double> seconds, hours;
  std::optional<double> billed_hours;
  std::optional<double> cost_usd;        // billed: the offer's increments and minimum applied
  // hours x $/h without billing increments or minimum: how published cost-to-accuracy figures
  // (RiseML 2018, DAWNBench) are stated, and what validation compares them with.
  std::optional<double> usage_cost_usd;
  // Power for energy, W, and its source: "option" (the option's power_w; 0 = no energy), else
  // "modelled" (the prediction's), else "offer" (the offer's nameplate power).
  std::optional<double> power_w;
  std::string power_source;
  std::optional<double> energy_kwh;
  std::string curve;                     // the convergence curve used, if any
  // Why a field is missing (no curve, not reached, synthetic data, ...): a note on the row, not
  // a failure (a row's `error` is kept for a prediction or placement that failed).
  std::string note;
};

// An option without an offer gets no dollars; without a target (nullptr), price and power
// only. Throws only for inputs a loaded study cannot hold (unknown offer or dataset, a
// throughput <= 0); what a row can lack is said in `note`.
TargetCost cost_to_target(const StudyOption& o, const StudyTarget* target, const OptionSpeed& speed,
                          const PriceCatalog& prices, const ConvergenceCatalog& curves);
// The same with the configured catalogs (configs/pricing, configs/convergence).
TargetCost cost_to_target(const StudyOption& o, const StudyTarget* target, const OptionSpeed& speed);

}  // namespace xpusim::cost
