// SkyPilot catalogs as price offers: a vms.csv (github.com/skypilot-org/skypilot-catalog, the
// file `sky` keeps under ~/.sky/catalogs/) read directly, its AcceleratorName mapped to an
// xpusim device and system by configs/pricing/skypilot/accelerators.yaml, one offer per
// instance type in one region. Also the helpers that merge catalogs and date their prices.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/pricing.hpp"

namespace xpusim::cost {

// One mapping rule (see the YAML's header for the fields).
struct SkypilotRule {
  std::string accelerator;        // AcceleratorName, compared case-insensitively
  std::string instance_contains;  // empty = any instance type
  std::optional<double> memory_gib;
  std::string device;
  double power_w = 0;             // the device YAML's max_power_w (0 when it has none)
  std::map<int, std::string> systems;
  int line = 0;
};

// <config_dir>/pricing/skypilot/accelerators.yaml unless `path` is given.
std::vector<SkypilotRule> load_skypilot_rules(const std::string& path = "");

// The first rule that fits (nullptr: none).
const SkypilotRule* match_skypilot_rule(const std::vector<SkypilotRule>& rules, const std::string& accelerator,
                                        const std::string& instance_type, std::optional<double> memory_gib);

// Offers "skypilot/<InstanceType>" from a vms.csv. Columns are found by header name (the
// clouds' files order them differently). `region` empty: each instance type in the region
// where its on-demand price is lowest; otherwise only that region (UserError naming the
// regions the file has when it has none). Several availability zones of one region: the
// lowest spot price (SkyPilot itself launches spot in the cheapest zone). The offers are dated
// by the file's modification day (when `sky` fetched it; the CSV holds no date) unless `date`
// is given. UserError "FILE:LINE: COLUMN: ..." for a malformed row or a missing column.
PriceCatalog load_skypilot_catalog(const std::string& vms_csv, const std::string& region,
                                   const std::string& date = "");

// Adds `from`'s offers to `into`; UserError on an id both have.
void merge_offers(PriceCatalog& into, const PriceCatalog& from);

// Today (UTC) as YYYY-MM-DD; $XPUSIM_TODAY (YYYY-MM-DD) overrides it so tests and archived
// outputs stay reproducible.
std::string today_utc();
// Whole days from a price date (YYYY, YYYY-MM or YYYY-MM-DD; a missing month or day counts as
// the first) to `today` (YYYY-MM-DD); nullopt when either does not parse.
std::optional<long> price_age_days(const std::string& date, const std::string& today);
// Prices older than this are flagged (one year).
constexpr long kStalePriceDays = 365;
// "offer X: price dated D is N days old (> 365); re-check SOURCE" or "" when fresh or undated.
std::string stale_price_warning(const PriceOffer& offer, const std::string& today);

}  // namespace xpusim::cost
