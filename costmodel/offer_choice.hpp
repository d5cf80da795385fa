// The cheapest offer that holds a placement: `offer: cheapest` in a study option or a sweep,
// `plan --offer cheapest`. Picks, among the catalog's offers that contain the placement's
// device, the lowest total $/h at a tier (whole instances: N devices on offers of k each take
// ceil(N / k) instances), optionally within one provider and one region. The rules that make an
// offer hold a placement are stated once here so compare, sweep and plan agree (see
// docs/cost-model.md "Choosing the cheapest offer").
#pragma once
#include <string>
#include <vector>

#include "costmodel/pricing.hpp"

namespace xpusim::cost {

// The word that asks for a choice instead of an offer id.
inline constexpr const char* kCheapestOffer = "cheapest";

struct OfferNeed {
  std::string device;           // xpusim device name
  int count = 1;                // devices of the placement
  // Devices of one host of the placement's system (0 = no system named): an instance must hold
  // a whole host (at least min(count, node_devices) devices), so the links the prediction
  // assumed inside a host are inside one instance. 0: one instance must hold every device.
  int node_devices = 0;
  std::string system;           // the placement's system; an offer that names another is skipped
  // Billed per device (plan): `count` must be a whole number of instances.
  bool whole_instances = false;
  PricingTier tier = PricingTier::on_demand;
  std::string provider;         // empty = any
  std::string region;           // empty = any
};

struct OfferChoice {
  std::string id;
  int instances = 1;
  int devices_per_instance = 0;
  double usd_per_h = 0;         // all instances at the tier
  int candidates = 0;           // offers that held the placement (before the cheapest was taken)
  // One line for outputs: "cheapest of 3 offers holding 8 x h100_sxm5 at on_demand: ..."
  std::string summary;
};

// FieldError("offer", ...) when no offer holds the placement: the message lists the offers
// that contain the device and why each was skipped (no price at the tier, another provider or
// region, too few devices per instance, another system, a price more than a year older than
// the newest price for the device). Ties go to the newer price, then fewer instances, then the
// id (deterministic).
OfferChoice cheapest_offer(const PriceCatalog& prices, const OfferNeed& need);

// Offers whose price is dated more than a year before the newest price of the same device are
// skipped: a 2018 list price is not what the device costs beside a 2026 one.
inline constexpr long kOfferChoiceMaxAgeDays = 365;

}  // namespace xpusim::cost
