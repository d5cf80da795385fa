// CostHooks backed by costmodel/ (prices from configs/pricing/, accuracy curves from
// configs/convergence/). The only place validation depends on the cost model; everything
// else sees the narrow CostHooks interface (cost_hooks.hpp).
#pragma once
#include <string>

#include "costmodel/pricing.hpp"
#include "validation/cost_hooks.hpp"

namespace xpusim::validation {

// The price-catalog offer of a row: the offers that contain exactly `num_devices` x `device`,
// narrowed by provider (from the row's setup, else its source: aws_*/AWS -> aws,
// gce_*/gcp_*/cloud_tpu*/colab*/Google -> gcp) and by the catalog year named in the source.
// UserError (-> the row is skipped with the message) when none or several remain.
std::string offer_for_row(const ReferenceRow& row, const cost::PriceCatalog& catalog);
// Pricing tier named in the row's note: "reserved 1y"/"reserved 3y", "preemptible", else on-demand.
cost::PricingTier tier_for_row(const ReferenceRow& row);

CostHooks costmodel_hooks();

}  // namespace xpusim::validation
