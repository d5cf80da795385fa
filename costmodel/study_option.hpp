// The typed study request: one option (a Placement plus the request and price fields, each its
// own type) and one target (model, dataset, accuracy or epochs). What the cost function
// (target_cost.hpp) prices; `compare` reads them from study YAML (compare/study.hpp), a sweep
// builds them from its points, validation from reference rows.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/pricing.hpp"
#include "engine/engine.hpp"
#include "engine/placement.hpp"
#include "models/dtype.hpp"
#include "models/task.hpp"

namespace xpusim::cost {

enum class ThroughputSource { given, predict, measured };
const char* throughput_source_name(ThroughputSource s);

struct StudyTarget {
  std::string label;
  std::string model;
  std::string dataset;
  std::string metric = "top1";
  double accuracy = 0;            // 0 = fixed epochs
  double epochs = 0;
  int64_t batch_per_device = 0;   // default for options that set none (the model's recipe)
  std::string where;              // file:line
};

// One option of a study, typed: the placement and request fields are those of a
// PredictRequest (engine/placement.hpp, models/dtype.hpp), so an option is predicted and
// priced without re-parsing text (compare, sweep and validate build the same struct).
struct StudyOption {
  std::string label;
  Placement placement;                    // device, count, system, CPU build, framework, overrides
  Precision precision = Precision::fp32;
  Task task = Task::train;                // inference: throughput of forward passes; targets in epochs only
  int64_t batch_per_device = 0;           // 0 = the target's
  DataSource data = DataSource::real;     // synthetic: throughput and price only
  std::string offer;                      // price catalog id; empty = no dollars
  PricingTier tier = PricingTier::on_demand;
  // Instances of the offer the placement takes (> 1 only when `offer: cheapest` chose several
  // whole instances of a smaller offer, costmodel/offer_choice.hpp); $/h and nameplate power scale.
  int offer_instances = 1;
  std::string offer_choice;               // how the offer was chosen (empty: the study named it)
  ThroughputSource source = ThroughputSource::predict;
  double given_throughput = 0;            // samples/s, when source == given
  std::string throughput_source_note;     // where a given number comes from
  std::string convergence;                // curve name; empty = best match per target
  double startup_s = 0;                   // one-off compile / start-up
  bool startup_given = false;             // startup_s set by the study (else the prediction's compile time)
  // How hours become billed hours: the offer's billing rule (granularity, minimum), or
  // prorated (hours x $/h, as a post that reports per-second cost does). A study's `billing:`.
  bool billing_prorated = false;
  double eval_s_per_epoch = 0;
  std::optional<double> power_w;          // overrides the modelled / offer's power for energy
  std::string where;                      // file:line
};

// Whether `device` may be billed as `offer` at tier `tier_text`: nullopt when it may, else the
// key (offer | pricing) and the message. Shared by studies and sweeps.
std::optional<std::pair<std::string, std::string>> offer_problem(const PriceCatalog& prices, const std::string& offer,
                                                                const std::string& tier_text, const std::string& device,
                                                                const std::vector<std::string>& devices);

// Device names xpusim knows: configs/devices/*.yaml and every system's `devices:` list.
std::vector<std::string> known_devices();

}  // namespace xpusim::cost
