// A sweep's `offer: cheapest` (costmodel/offer_choice.hpp): the offer a point's placement is
// billed on, and the text columns that name it in the row (id, instances, date, source). Apart
// from results.cpp so that file stays one purpose.
#include <algorithm>

#include "costmodel/offer_choice.hpp"
#include "engine/platform_spec.hpp"
#include "sweep/results.hpp"

namespace xpusim::sweep {

namespace {
const std::vector<std::string>& offer_text_fields() {
  static const std::vector<std::string> f = {"offer_chosen", "offer_instances", "offer_date", "offer_source"};
  return f;
}
}  // namespace

bool uses_cheapest_offer(const SweepSpec& s) {
  auto cheapest = [](const std::vector<Assignment>& as) {
    return std::any_of(as.begin(), as.end(),
                       [](const Assignment& a) { return a.first == "offer" && a.second == cost::kCheapestOffer; });
  };
  if (cheapest(s.fixed)) return true;
  for (const auto& a : s.axes)
    for (const auto& v : a.values)
      if (cheapest(v)) return true;
  return false;
}

std::vector<std::string> row_text_fields(const SweepSpec& s) {
  std::vector<std::string> f = text_result_fields(s.kind);
  if (uses_cheapest_offer(s)) f.insert(f.end(), offer_text_fields().begin(), offer_text_fields().end());
  return f;
}

void put_offer_texts(const std::string& id, int instances, const std::string& date, const std::string& source,
                     PointResult& r) {
  r.texts["offer_chosen"] = id;
  r.texts["offer_instances"] = std::to_string(instances);
  r.texts["offer_date"] = date;
  r.texts["offer_source"] = source;
}

cost::OfferChoice cheapest_point_offer(const PointRequest& r) {
  const Placement& pl = r.predict.placement;
  cost::OfferNeed need;
  need.device = pl.device;
  need.count = pl.count;
  need.system = pl.system;
  if (!pl.system.empty()) need.node_devices = find_system(pl.system).devices_per_host;
  if (!cost::parse_tier(r.pricing, need.tier))
    throw FieldError("pricing", "'" + r.pricing + "' is not one of " + std::string(cost::tier_choices()));
  need.provider = r.offer_provider;
  need.region = r.offer_region;
  return cost::cheapest_offer(cost::default_price_catalog(), need);
}

}  // namespace xpusim::sweep
