// Study options and targets: the names of their enums, the devices an option may name and
// whether a device may be billed as an offer (see study_option.hpp).
#include "costmodel/study_option.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "common/config_paths.hpp"
#include "common/suggest.hpp"
#include "engine/platform_spec.hpp"

namespace xpusim::cost {

namespace fs = std::filesystem;

const char* throughput_source_name(ThroughputSource s) {
  switch (s) {
    case ThroughputSource::given: return "given";
    case ThroughputSource::predict: return "predict";
    case ThroughputSource::measured: return "measured";
  }
  return "?";
}

std::vector<std::string> known_devices() {
  std::set<std::string> names;
  fs::path dev = fs::path(config_dir()) / "devices";
  if (fs::is_directory(dev))
    for (const auto& e : fs::directory_iterator(dev))
      if (e.path().extension() == ".yaml") names.insert(e.path().stem().string());
  fs::path sys = fs::path(config_dir()) / "systems";
  if (fs::is_directory(sys))
    for (const auto& e : fs::directory_iterator(sys))
      if (e.path().extension() == ".yaml") {
        SystemSpec s = load_system_spec(e.path().string());
        names.insert(s.devices.begin(), s.devices.end());
      }
  return {names.begin(), names.end()};
}

std::optional<std::pair<std::string, std::string>> offer_problem(const PriceCatalog& prices, const std::string& offer,
                                                                const std::string& tier_text, const std::string& device,
                                                                const std::vector<std::string>& devices) {
  using P = std::pair<std::string, std::string>;
  if (!prices.offers.count(offer)) return P{"offer", "unknown price offer '" + offer + "' (known: " + prices.known_ids() + ")"};
  PricingTier tier;
  if (!parse_tier(tier_text, tier)) return P{"pricing", "'" + tier_text + "' is not one of " + std::string(tier_choices())};
  if (!prices.has_price(offer, tier))
    return P{"pricing", "offer '" + offer + "' has no " + tier_text + " price (it has: " + join_names(prices.tiers_of(offer)) + ")"};
  // An offer that lists devices must hold the option's device (catches a TPU priced as a GPU).
  const PriceOffer& off = prices.get(offer);
  std::vector<std::string> held;
  for (const auto& c : off.contains)
    if (std::find(devices.begin(), devices.end(), c.what) != devices.end()) held.push_back(c.what);
  if (!held.empty() && std::find(held.begin(), held.end(), device) == held.end())
    return P{"offer", "offer '" + offer + "' holds " + join_names(held) + ", not " + device};
  return std::nullopt;
}

}  // namespace xpusim::cost
