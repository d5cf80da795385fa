// How a reference row is put to the cost model: which price offer and pricing tier it names.
// The formulas (time, dollars and ratios to a target) live in costmodel/cost.hpp; this file
// only reads the row's setup, source and note.
#pragma once
#include <string>

#include "costmodel/pricing.hpp"
#include "validation/reference_csv.hpp"

namespace xpusim::validation {

// The price-catalog offer of a row: its `offer` column when set (which must hold the row's
// devices), else the offers that contain exactly `num_devices` x `device`,
// narrowed by provider (from the row's setup, else its source: aws_*/AWS -> aws,
// gce_*/gcp_*/cloud_tpu*/colab*/Google -> gcp) and by the catalog year named in the source.
// UserError (-> the row is skipped with the message) when none or several remain.
std::string offer_for_row(const ReferenceRow& row, const cost::PriceCatalog& catalog);
// Pricing tier named in the row's note: "reserved 1y"/"reserved 3y", "preemptible", else on-demand.
cost::PricingTier tier_for_row(const ReferenceRow& row);
// tier_for_row, except that an offer sold only preemptible (the 2017 n1-highcpu VMs of the
// cloud-CPU study) is billed preemptible when the row names no tier.
cost::PricingTier tier_for_offer(const ReferenceRow& row, const cost::PriceCatalog& catalog, const std::string& offer);

}  // namespace xpusim::validation
