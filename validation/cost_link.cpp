// A reference row's price offer and tier (see cost_link.hpp).
#include "validation/cost_link.hpp"

#include <algorithm>
#include <cctype>

#include "common/error.hpp"

namespace xpusim::validation {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
bool starts(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::string provider_of(const ReferenceRow& row) {
  std::string s = lower(row.setup);
  if (starts(s, "aws")) return "aws";
  if (starts(s, "gce") || starts(s, "gcp") || starts(s, "cloud_tpu") || starts(s, "colab")) return "gcp";
  std::string src = lower(row.source + " " + row.note);
  bool aws = src.find("aws") != std::string::npos || src.find("amazon") != std::string::npos;
  bool gcp = src.find("google") != std::string::npos || src.find("gce") != std::string::npos ||
             src.find("gcp") != std::string::npos;
  if (aws != gcp) return aws ? "aws" : "gcp";
  return "";
}
}  // namespace

cost::PricingTier tier_for_row(const ReferenceRow& row) {
  std::string n = lower(row.note);
  if (n.find("reserved 3y") != std::string::npos || n.find("reserved_3y") != std::string::npos)
    return cost::PricingTier::reserved_3y;
  if (n.find("reserved") != std::string::npos) return cost::PricingTier::reserved_1y;
  if (n.find("preemptible") != std::string::npos) return cost::PricingTier::preemptible;
  return cost::PricingTier::on_demand;
}

cost::PricingTier tier_for_offer(const ReferenceRow& row, const cost::PriceCatalog& catalog, const std::string& offer) {
  cost::PricingTier tier = tier_for_row(row);
  if (tier == cost::PricingTier::on_demand && !catalog.has_price(offer, tier) &&
      catalog.has_price(offer, cost::PricingTier::preemptible))
    tier = cost::PricingTier::preemptible;
  return tier;
}

std::string offer_for_row(const ReferenceRow& row, const cost::PriceCatalog& catalog) {
  // The row's own offer column chooses among several that fit; it must hold the row's devices.
  if (!row.offer.empty()) {
    const cost::PriceOffer& o = catalog.get(row.offer);  // UserError naming the known ids
    const int n = row.num_devices.value_or(1);
    for (const auto& item : o.contains)
      if (item.what == row.device && item.count == n) return row.offer;
    throw UserError("offer '" + row.offer + "' does not hold " + std::to_string(n) + " x " + row.device);
  }
  return catalog.offer_containing(row.device, row.num_devices.value_or(1), provider_of(row), row.source);
}

}  // namespace xpusim::validation
