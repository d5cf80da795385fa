#include "validation/cost_link.hpp"

#include <algorithm>
#include <cctype>

#include "common/error.hpp"
#include "costmodel/cost.hpp"
#include "models/zoo.hpp"

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

std::string offer_for_row(const ReferenceRow& row, const cost::PriceCatalog& catalog) {
  int n = row.num_devices.value_or(1);
  std::vector<const cost::PriceOffer*> found;
  for (const auto& [id, offer] : catalog.offers)
    for (const auto& item : offer.contains)
      if (item.what == row.device && item.count == n) found.push_back(&offer);
  if (found.empty())
    throw UserError("no price offer contains " + std::to_string(n) + " x " + row.device + " (configs/pricing/)");
  auto narrow = [&](auto keep) {
    std::vector<const cost::PriceOffer*> k;
    for (auto* o : found)
      if (keep(*o)) k.push_back(o);
    if (!k.empty()) found = k;
  };
  std::string provider = provider_of(row);
  if (!provider.empty()) narrow([&](const cost::PriceOffer& o) { return o.provider == provider; });
  narrow([&](const cost::PriceOffer& o) {
    return o.date.size() >= 4 && row.source.find(o.date.substr(0, 4)) != std::string::npos;
  });
  if (found.size() > 1) {
    std::string ids;
    for (auto* o : found) ids += (ids.empty() ? "" : ", ") + o->id;
    throw UserError("several price offers fit " + std::to_string(n) + " x " + row.device + ": " + ids);
  }
  return found.front()->id;
}

CostHooks costmodel_hooks() {
  CostHooks h;
  h.usd_per_hour = [](const ReferenceRow& row, const StepReport&) {
    const cost::PriceCatalog& cat = cost::default_price_catalog();
    const std::string offer = offer_for_row(row, cat);
    cost::PricingTier tier = tier_for_row(row);
    // An offer that is sold only preemptible (the 2017 n1-highcpu VMs of the cloud-CPU study)
    // is billed at that price when the row names no tier.
    if (tier == cost::PricingTier::on_demand && !cat.has_price(offer, tier) &&
        cat.has_price(offer, cost::PricingTier::preemptible))
      tier = cost::PricingTier::preemptible;
    return cat.usd_per_h(offer, tier);
  };
  h.epochs_to_accuracy = [](const ReferenceRow& row, const StepReport& rep, bool top5, double target) {
    std::string dataset = row.dataset.empty() ? find_model(row.model).dataset : row.dataset;
    return cost::epochs_to_target(row.model, dataset, top5 ? "top5" : "top1", target, rep.global_batch, row.precision);
  };
  h.epochs_input_source = [](const ReferenceRow& row, const StepReport& rep, bool top5, double target) {
    std::string dataset = row.dataset.empty() ? find_model(row.model).dataset : row.dataset;
    return cost::epochs_input_source(row.model, dataset, top5 ? "top5" : "top1", target, rep.global_batch, row.precision);
  };
  return h;
}

}  // namespace xpusim::validation
