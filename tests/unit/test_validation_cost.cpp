// The cost-model link of validation: which price offer and tier a reference row maps to,
// against the shipped price catalog (configs/pricing/).
#include <catch2/catch.hpp>

#include "common/error.hpp"
#include "costmodel/pricing.hpp"
#include "validation/cost_link.hpp"
#include "validation/reference_csv.hpp"
#include "xpusim_test_paths.hpp"

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

TEST_CASE("cost link: an offer column chooses among the offers that fit (issue 31)", "[validation][cost]") {
  cost::PriceCatalog cat = cost::load_price_catalog(XPUSIM_DEFAULT_CONFIG_DIR "/pricing");
  // One K80 die is sold by several catalogs; a row that names no year or provider cannot pick.
  ReferenceRow k80 = row("k80", 1, "", "a user's grid");
  CHECK_THROWS_WITH(offer_for_row(k80, cat), Catch::Contains("several price offers fit 1 x k80"));
  k80.offer = "gcp_2017/k80";
  CHECK(offer_for_row(k80, cat) == "gcp_2017/k80");
  // The offer must hold the row's devices, and must exist.
  k80.num_devices = 2;
  CHECK_THROWS_WITH(offer_for_row(k80, cat), Catch::Contains("offer 'gcp_2017/k80' does not hold 2 x k80"));
  k80.offer = "gcp_2017/no_such";
  CHECK_THROWS_WITH(offer_for_row(k80, cat), Catch::Contains("unknown price offer 'gcp_2017/no_such'"));
  // The column is read from a CSV (optional, like the parallel columns).
  auto rows = parse_reference_csv(
      "source,device,num_devices,setup,framework,model,dataset,batch_per_device,precision,data,metric,value,unit,note,"
      "offer\ns,k80,1,,keras-tf1.2,mnist_mlp,mnist,128,fp32,real,train_throughput,1,images/s,,gcp_2017/k80\n",
      "grid.csv");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].offer == "gcp_2017/k80");
}
