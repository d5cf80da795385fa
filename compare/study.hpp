// Comparison studies (configs/studies/*.yaml): options (hardware, price, throughput source)
// x targets (model, dataset, accuracy or epochs). Parsed and validated once into a Study;
// every name (device, system, model, dataset, offer, curve) is checked here so that a bad
// study fails with `file:line: key: message` before anything runs.
#pragma once
#include <string>
#include <vector>

#include "costmodel/pricing.hpp"
#include "costmodel/study_option.hpp"

namespace xpusim::cost {

struct Study {
  std::string name;
  std::string description;
  std::string source;
  std::string file;
  std::vector<StudyTarget> targets;
  std::vector<StudyOption> options;
  std::string breakeven_against;          // option label owned options are compared with
};

// Loads and validates a study. `catalog` defaults to the configured price catalog, `devices`
// (the device names an option may use) to known_devices(), which reads every system file:
// a caller loading many studies (the fuzzer) passes the list once read.
Study load_study(const std::string& path, const PriceCatalog* catalog = nullptr,
                 const std::vector<std::string>* devices = nullptr);

}  // namespace xpusim::cost
