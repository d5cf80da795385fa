// The cost-model link of validation: which price offer and tier a reference row maps to,
// against the shipped price catalog (configs/pricing/).
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "costmodel/pricing.hpp"
#include "validation/cost_link.hpp"

using namespace xpusim;
using namespace xpusim::validation;

namespace {
ReferenceRow row(const std::string& device, int n, const std::string& setup, const std::string& source,
                 const std::string& note = "") {
  ReferenceRow r;
  r.device = device;
  r.num_devices = n;
  r.setup = setup;
  r.source = source;
  r.note = note;
  return r;
}
}  // namespace

TEST_CASE("cost link: rows map to one price offer and tier", "[validation][cost]") {
  cost::PriceCatalog cat = cost::load_price_catalog(XPUSIM_DEFAULT_CONFIG_DIR "/pricing");
  CHECK(offer_for_row(row("tpu_v2", 8, "cloud_tpu_v2-8", "RiseML blog (2018-04)"), cat) == "gcp_2018/cloud_tpu_v2-8");
  CHECK(offer_for_row(row("v100_sxm2_16gb", 4, "aws_p3_8xlarge", "RiseML blog (2018-04)"), cat) ==
        "aws_2018/p3.8xlarge");
  CHECK(tier_for_row(row("x", 1, "", "", "aws p3.8xlarge reserved 1y no upfront")) == cost::PricingTier::reserved_1y);
  CHECK(tier_for_row(row("x", 1, "", "", "preemptible VM")) == cost::PricingTier::preemptible);
  CHECK(tier_for_row(row("x", 1, "", "")) == cost::PricingTier::on_demand);
  CHECK_THROWS_WITH(offer_for_row(row("tpu_v2", 3, "cloud_tpu_v2-8", "2018"), cat),
                    Catch::Contains("no price offer contains 3 x tpu_v2"));
}
