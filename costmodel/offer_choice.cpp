// The cheapest offer that holds a placement (offer_choice.hpp): filter the catalog's offers by
// device, tier, provider, region, system and instance size, drop prices a year older than the
// newest one left, and take the lowest total $/h.
#include "costmodel/offer_choice.hpp"

#include <algorithm>
#include <optional>

#include "common/error.hpp"
#include "common/output.hpp"
#include "costmodel/pricing_skypilot.hpp"

namespace xpusim::cost {

namespace {

struct Candidate {
  const PriceOffer* offer;
  int per_instance;
  int instances;
  double usd_per_h;
};

std::string plural(int n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

OfferChoice cheapest_offer(const PriceCatalog& prices, const OfferNeed& need) {
  if (need.count < 1) throw FieldError("offer", "a placement of " + std::to_string(need.count) + " devices holds nothing to price");
  const std::string what = std::to_string(need.count) + " x " + need.device;
  const std::string at = std::string(" at ") + tier_name(need.tier) +
                         (need.provider.empty() ? "" : ", provider " + need.provider) +
                         (need.region.empty() ? "" : ", region " + need.region);
  // Devices of one host the instance must keep together.
  const int host = need.node_devices > 0 ? std::min(need.count, need.node_devices) : need.count;

  std::vector<Candidate> held;
  std::vector<std::string> skipped;  // "id: why", in id order
  for (const auto& entry : prices.offers) {
    // Named, not a structured binding: the lambda below captures `id` (clang < 16 refuses
    // captured bindings, and the fuzz build uses clang).
    const std::string& id = entry.first;
    const auto& o = entry.second;
    int k = 0;
    for (const auto& c : o.contains)
      if (c.what == need.device) k += c.count;
    if (k == 0) continue;
    auto skip = [&](const std::string& why) { skipped.push_back(id + ": " + why); };
    if (!prices.has_price(id, need.tier)) {
      std::string have;
      for (const auto& t : prices.tiers_of(id)) have += (have.empty() ? "" : ", ") + t;
      skip("no " + std::string(tier_name(need.tier)) + " price (has: " + (have.empty() ? "none" : have) + ")");
    } else if (!need.provider.empty() && o.provider != need.provider) {
      skip("provider " + o.provider);
    } else if (!need.region.empty() && o.region != need.region) {
      skip(o.region.empty() ? "no region stated" : "region " + o.region);
    } else if (!need.system.empty() && !o.system.empty() && o.system != need.system) {
      skip("its node is " + o.system + ", the placement's " + need.system);
    } else if (k < host) {
      skip(plural(k, "device") + " per instance" +
           (need.node_devices > 0 && need.count > need.node_devices ? " splits a host of " + std::to_string(need.node_devices)
                                                                   : " cannot hold " + std::to_string(host) + " together"));
    } else if (need.whole_instances && need.count % k != 0) {
      skip(std::to_string(need.count) + " devices are not whole instances of " + std::to_string(k));
    } else {
      const int n = (need.count + k - 1) / k;
      held.push_back({&o, k, n, n * prices.usd_per_h(id, need.tier)});
    }
  }

  // A price more than a year older than the newest one left is not today's price beside it.
  std::string newest;  // the latest parseable date among them
  for (const auto& c : held) {
    if (!price_age_days(c.offer->date, c.offer->date)) continue;  // undated: never the newest, never dropped
    if (newest.empty() || *price_age_days(c.offer->date, newest) < 0) newest = c.offer->date;
  }
  std::vector<Candidate> current;
  for (const auto& c : held) {
    auto age = price_age_days(c.offer->date, newest);
    if (age && *age > kOfferChoiceMaxAgeDays)
      skipped.push_back(c.offer->id + ": price dated " + c.offer->date + ", more than a year before the newest (" + newest + ")");
    else
      current.push_back(c);
  }

  if (current.empty()) {
    if (skipped.empty())
      throw FieldError("offer", "no price offer contains " + need.device + " (configs/pricing/ and any SkyPilot catalog loaded)");
    std::sort(skipped.begin(), skipped.end());
    constexpr size_t kListed = 12;
    std::string list;
    for (size_t i = 0; i < skipped.size() && i < kListed; ++i) list += (i ? "; " : "") + skipped[i];
    if (skipped.size() > kListed) list += "; and " + std::to_string(skipped.size() - kListed) + " more";
    throw FieldError("offer", "no price offer holds " + what + at + ": " + list);
  }
  // Lowest total $/h; ties to the newer price, then fewer instances, then the id.
  auto better = [](const Candidate& a, const Candidate& b) {
    if (a.usd_per_h != b.usd_per_h) return a.usd_per_h < b.usd_per_h;
    auto age = price_age_days(a.offer->date, b.offer->date);  // days from a's date to b's
    if (age && *age != 0) return *age < 0;                     // a is newer
    if (a.instances != b.instances) return a.instances < b.instances;
    return a.offer->id < b.offer->id;
  };
  const Candidate best = *std::min_element(current.begin(), current.end(), better);
  OfferChoice ch;
  ch.id = best.offer->id;
  ch.instances = best.instances;
  ch.devices_per_instance = best.per_instance;
  ch.usd_per_h = best.usd_per_h;
  ch.candidates = static_cast<int>(current.size());
  ch.summary = "cheapest of " + plural(ch.candidates, "offer") + " holding " + what + at + ": " +
               (ch.instances > 1 ? std::to_string(ch.instances) + " x " : "") + ch.id + ", " + fmt_g(ch.usd_per_h, 6) +
               " USD/h, listed " + best.offer->date + ", source " + best.offer->source;
  return ch;
}

}  // namespace xpusim::cost
