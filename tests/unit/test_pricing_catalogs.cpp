// Price catalogs of today: the shipped 2025-2026 catalogs (every offer dated and sourced, on-
// demand and spot where published), SkyPilot vms.csv reading (column order, zones, regions,
// accelerator mapping, bad input with file:line) and the one-year staleness warning.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <set>

#include "common/error.hpp"
#include "costmodel/pricing.hpp"
#include "costmodel/pricing_skypilot.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::cost;

namespace {
const std::string kFixture = std::string(XPUSIM_TEST_DATA_DIR) + "/skypilot/aws/vms.csv";

std::string write_csv(const std::string& name, const std::string& text) {
  std::string path = "/tmp/xpusim_test_" + name + "_vms.csv";
  std::ofstream(path) << text;
  return path;
}

std::string load_error(const std::string& path, const std::string& region = "") {
  try {
    load_skypilot_catalog(path, region, "2026-11-26");
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("shipped catalogs: every offer has a date and a source; today's GPUs have on-demand and spot",
          "[pricing]") {
  PriceCatalog cat = load_price_catalog();
  for (const auto& [id, o] : cat.offers) {
    INFO(id);
    CHECK_FALSE(o.date.empty());
    CHECK_FALSE(o.source.empty());
    CHECK(price_age_days(o.date, "2026-11-26").has_value());
  }
  // The figures as listed in the sources named in the YAMLs.
  CHECK(cat.usd_per_h("aws_2026/p5.48xlarge", PricingTier::on_demand) == Approx(55.04));
  CHECK(cat.usd_per_h("aws_2026/p5.48xlarge", PricingTier::preemptible) == Approx(17.6289));
  CHECK(cat.usd_per_h("aws_2026/p4d.24xlarge", PricingTier::on_demand) == Approx(21.957642));
  CHECK(cat.usd_per_h("aws_2026/p6-b200.48xlarge", PricingTier::on_demand) == Approx(113.9328));
  CHECK(cat.usd_per_h("aws_2026/p6-b200.48xlarge", PricingTier::preemptible) == Approx(21.0148));
  CHECK(cat.usd_per_h("lambda_2026/gpu_8x_h100_sxm5", PricingTier::on_demand) == Approx(31.92));
  CHECK(cat.usd_per_h("nebius_2026/gpu-h100-sxm_8gpu-128vcpu-1600gb", PricingTier::preemptible) == Approx(10.0));
  CHECK(cat.usd_per_h("gcp_2026/tpu-v6e-8", PricingTier::on_demand) / 8 == Approx(2.70));
  // Lambda sells no spot: asking for it names what the offer has.
  CHECK_THROWS_WITH(cat.usd_per_h("lambda_2026/gpu_8x_h100_sxm5", PricingTier::preemptible),
                    Catch::Contains("has no preemptible price") && Catch::Contains("on_demand"));
  // At least five providers with prices dated 2025 or later.
  std::set<std::string> recent;
  for (const auto& [id, o] : cat.offers)
    if (o.date >= "2025") recent.insert(o.provider);
  CHECK(recent.size() >= 5);
}

TEST_CASE("price age: dates of one, two or three parts; stale past a year", "[pricing]") {
  CHECK(*price_age_days("2026-11-26", "2026-11-26") == 0);
  CHECK(*price_age_days("2025-11-26", "2026-11-26") == 365);
  CHECK(*price_age_days("2024-02", "2024-03-01") == 29);  // 2024 is a leap year
  CHECK(*price_age_days("2019", "2020-01-01") == 365);
  CHECK_FALSE(price_age_days("2019-13", "2020-01-01").has_value());
  CHECK_FALSE(price_age_days("soon", "2020-01-01").has_value());
  PriceOffer o;
  o.id = "x/y";
  o.date = "2025-11-25";
  o.source = "somewhere";
  CHECK(stale_price_warning(o, "2026-11-26").find("366 days old") != std::string::npos);
  o.date = "2025-11-26";
  CHECK(stale_price_warning(o, "2026-11-26").empty());
}

TEST_CASE("SkyPilot vms.csv: zones, regions, mapping to devices and systems", "[pricing][skypilot]") {
  PriceCatalog cat = load_skypilot_catalog(kFixture, "", "2026-11-26");
  // The CPU row and Trainium (no device) are not offers.
  CHECK(cat.offers.count("skypilot/m5.large") == 0);
  CHECK(cat.offers.count("skypilot/trn1.32xlarge") == 0);
  const PriceOffer& p5 = cat.get("skypilot/p5.48xlarge");
  // Cheapest on-demand region (us-east-1 and us-west-2 tie at 55.04: the first by name) and,
  // within it, the lowest spot of its two zones.
  CHECK(p5.region == "us-east-1");
  CHECK(p5.usd_per_h.at(PricingTier::on_demand) == Approx(55.04));
  CHECK(p5.usd_per_h.at(PricingTier::preemptible) == Approx(17.6289));
  CHECK(p5.contains.at(0).what == "h100_sxm5");
  CHECK(p5.contains.at(0).count == 8);
  CHECK(p5.contains.at(0).power_w == Approx(700));  // from configs/devices/h100_sxm5.yaml
  CHECK(p5.system == "dgx_h100");
  CHECK(p5.provider == "aws");  // the folder the file is in
  CHECK(p5.date == "2026-11-26");
  // 40 GB A100s by instance name, 80 GB by the accelerator name; V100 x4 has no system rule.
  CHECK(cat.get("skypilot/p4d.24xlarge").contains.at(0).what == "a100_sxm4_40gb");
  CHECK(cat.get("skypilot/p4de.24xlarge").contains.at(0).what == "a100_sxm4_80gb");
  CHECK(cat.get("skypilot/p3.8xlarge").system.empty());
  // No spot price listed: on-demand only.
  CHECK(cat.get("skypilot/p5.4xlarge").usd_per_h.count(PricingTier::preemptible) == 0);

  PriceCatalog west = load_skypilot_catalog(kFixture, "us-west-2", "2026-11-26");
  CHECK(west.get("skypilot/p5.48xlarge").usd_per_h.at(PricingTier::preemptible) == Approx(12.6935));
  CHECK(west.offers.count("skypilot/p3.8xlarge") == 0);
  CHECK_THAT(load_error(kFixture, "mars-1"), Catch::Contains("region 'mars-1' not in the catalog") &&
                                                 Catch::Contains("us-west-2"));
}

TEST_CASE("SkyPilot vms.csv: columns found by name (Lambda's order), bad rows with file:line", "[pricing][skypilot]") {
  // Lambda's files order Price before Region and have no AvailabilityZone.
  std::string lambda = write_csv("lambda",
                                 "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,"
                                 "SpotPrice\n"
                                 "gpu_1x_h100_pcie,H100,1.0,26.0,200.0,3.29,us-east-1,\"{'Gpus': [{'Name': 'H100', "
                                 "'MemoryInfo': {'SizeInMiB': 81920}}]}\",\n"
                                 "gpu_1x_h100_sxm5,H100,1.0,26.0,225.0,4.29,us-east-1,,\n");
  PriceCatalog cat = load_skypilot_catalog(lambda, "", "2026-11-26");
  CHECK(cat.get("skypilot/gpu_1x_h100_pcie").contains.at(0).what == "h100_pcie_80gb");
  CHECK(cat.get("skypilot/gpu_1x_h100_sxm5").contains.at(0).what == "h100_sxm5");
  CHECK(cat.get("skypilot/gpu_1x_h100_sxm5").usd_per_h.at(PricingTier::on_demand) == Approx(4.29));

  // Blackwell: an 8-GPU B200 instance maps to the DGX B200 system (the price is a placeholder:
  // only the mapping is checked).
  std::string b200 = write_csv("b200", "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\n"
                                       "p6-b200.48xlarge,B200,8.0,1.0,us-east-1\n");
  const PriceCatalog blackwell = load_skypilot_catalog(b200, "", "2026-11-28");
  const PriceOffer& b = blackwell.get("skypilot/p6-b200.48xlarge");
  CHECK(b.contains.at(0).what == "b200");
  CHECK(b.contains.at(0).count == 8);
  CHECK(b.contains.at(0).power_w == Approx(1000));  // configs/devices/b200.yaml
  CHECK(b.system == "dgx_b200");

  std::string bad_price = write_csv("bad_price",
                                    "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\n"
                                    "x,H100,1,cheap,us-east-1\n");
  CHECK_THAT(load_error(bad_price), Catch::Contains(bad_price + ":2: Price: expected a number"));
  std::string no_col = write_csv("no_col", "InstanceType,AcceleratorName,Price,Region\nx,H100,1,r\n");
  CHECK_THAT(load_error(no_col), Catch::Contains(no_col + ":1: header: no column 'AcceleratorCount'"));
  std::string none = write_csv("none", "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\nx,TPUv9,1,1,r\n");
  CHECK_THAT(load_error(none), Catch::Contains("no row maps to an xpusim device"));
  CHECK_THAT(load_error("/nonexistent/vms.csv"), Catch::Contains("SkyPilot catalog not found"));
}

TEST_CASE("merge_offers: a duplicate id is an error naming both places", "[pricing]") {
  PriceCatalog a = load_skypilot_catalog(kFixture, "", "2026-11-26");
  PriceCatalog b = load_skypilot_catalog(kFixture, "us-west-2", "2026-11-26");
  CHECK_THROWS_WITH(merge_offers(a, b), Catch::Contains("skypilot/p4d.24xlarge"));
  PriceCatalog c = load_price_catalog();
  const size_t before = c.offers.size();
  merge_offers(c, a);
  CHECK(c.offers.size() == before + a.offers.size());
}

TEST_CASE("today's offers are not matched to published reference rows", "[pricing]") {
  // A 2021 benchmark row of one RTX A6000 must not be priced at Lambda's 2026 rate.
  PriceCatalog cat = load_price_catalog();
  CHECK(cat.offers.count("lambda_2026/gpu_1x_a6000") == 1);
  CHECK_THROWS_WITH(cat.offer_containing("rtx_a6000", 1, "", "(2021-10-30)"),
                    Catch::Contains("no price offer contains 1 x rtx_a6000"));
  // The older catalogs still are: RiseML's p3.8xlarge row finds the 2018 price.
  CHECK(cat.offer_containing("v100_sxm2_16gb", 4, "aws", "RiseML blog (2018-04)") == "aws_2018/p3.8xlarge");
}

TEST_CASE("GCP 2026: TPU v4/v5e per chip-hour and A2 as VM plus GPU; committed_1y/3y name the reservation tiers",
          "[pricing]") {
  PriceCatalog cat = load_price_catalog();
  // Per chip-hour from the slice prices: v5e-4 4.80 / 4 chips; v4-8 is 4 chips (8 TensorCores).
  CHECK(cat.usd_per_h("gcp_2026/tpu-v5litepod-4", PricingTier::on_demand) / 4 == Approx(1.20));
  CHECK(cat.usd_per_h("gcp_2026/tpu-v5litepod-4", PricingTier::preemptible) / 4 == Approx(0.244925));
  CHECK(cat.usd_per_h("gcp_2026/tpu-v4-8", PricingTier::on_demand) / 4 == Approx(3.22));
  CHECK(cat.usd_per_h("gcp_2026/tpu-v4-32", PricingTier::on_demand) / 16 == Approx(3.22));
  CHECK(cat.get("gcp_2026/tpu-v4-8").region == "us-central2");
  // a2-highgpu-1g = machine type 0.73948 + one A100 2.93391 (spot 0.36975 + 1.4341).
  CHECK(cat.usd_per_h("gcp_2026/a2-highgpu-1g", PricingTier::on_demand) == Approx(0.73948 + 2.93391));
  CHECK(cat.usd_per_h("gcp_2026/a2-highgpu-1g", PricingTier::preemptible) == Approx(0.36975 + 1.4341));
  // GCP's word for a 1- or 3-year commitment selects the reservation tiers.
  PricingTier t = PricingTier::on_demand;
  REQUIRE(parse_tier("committed_1y", t));
  CHECK(t == PricingTier::reserved_1y);
  REQUIRE(parse_tier("committed_3y", t));
  CHECK(t == PricingTier::reserved_3y);
  CHECK_FALSE(parse_tier("committed_2y", t));
  CHECK(cat.usd_per_h("aws_2018/p3.8xlarge", PricingTier::reserved_1y) == Approx(8.34));
  // No commitment price is published in gcp_2026 (none was sourced): asking names what there is.
  CHECK_THROWS_WITH(cat.usd_per_h("gcp_2026/tpu-v5litepod-4", PricingTier::reserved_1y),
                    Catch::Contains("has no reserved_1y price") && Catch::Contains("on_demand, preemptible"));
}
