// Cost formulas, billing rules, convergence interpolation, the McCandlish batch model and the
// `xpusim train` log reader, against hand-derived numbers.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/cost.hpp"
#include "costmodel/pricing.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::cost;

TEST_CASE("billing rounds up to the increment and applies the minimum", "[costmodel]") {
  BillingRule per_second{1, 60};
  CHECK(billed_seconds(30, per_second) == 60);         // minimum
  CHECK(billed_seconds(90.2, per_second) == 91);       // next whole second
  CHECK(billed_seconds(120, per_second) == 120);       // exact multiple stays
  BillingRule per_hour{3600, 0};
  CHECK(billed_seconds(3601, per_hour) == 7200);       // per started hour
  BillingRule per_minute_10min{60, 600};
  CHECK(billed_seconds(61, per_minute_10min) == 600);
  CHECK(billed_seconds(601, per_minute_10min) == 660);
  // Dollars: 2 started hours at $3/h.
  CHECK(cost_usd(3601, 3.0, per_hour) == Approx(6.0));
}

TEST_CASE("time, throughput per dollar and energy", "[costmodel]") {
  // 10 epochs of 1000 samples at 100 samples/s = 100 s, + 20 s start-up + 10 x 2 s eval.
  CHECK(seconds_to_target(100, 10, 1000, 20, 2) == Approx(140));
  CHECK(hours_to_target(100, 36, 1000) == Approx(0.1));
  CHECK(images_per_s_per_usd_per_h(1000, 4) == Approx(250));
  CHECK_THROWS_AS(images_per_s_per_usd_per_h(1000, 0), UserError);
  CHECK_THROWS_AS(seconds_to_target(0, 1, 1), UserError);
  // 1200 W for 30 min = 0.6 kWh.
  CHECK(energy_kwh(1800, 1200) == Approx(0.6));
}

TEST_CASE("owned hardware amortises purchase and pays electricity", "[costmodel]") {
  OwnedCost o;
  o.purchase_usd = 8766;         // one dollar per hour over one year
  o.service_life_years = 1;
  o.utilization = 0.5;           // busy half the time -> $2 per busy hour
  o.electricity_usd_per_kwh = 0.10;
  o.system_power_w = 500;        // + $0.05 per hour
  CHECK(owned_usd_per_h(o) == Approx(2.05));
  // Break-even: $1000 purchase, $10 rented vs $2 electricity per run -> 125 runs.
  CHECK(*breakeven_runs(1000, 2, 10) == Approx(125));
  CHECK_FALSE(breakeven_runs(1000, 10, 10).has_value());
  CHECK(*breakeven_hours(1000, 3.0, 0.5) == Approx(400));
}

TEST_CASE("convergence curves interpolate and report the best accuracy", "[costmodel]") {
  ConvergenceCurve c;
  c.name = "t";
  c.global_batch = 256;
  c.points = {{10, 0.5}, {20, 0.7}, {30, 0.65}, {40, 0.75}};
  CHECK(*epochs_on_curve(c, 0.7) == Approx(20));
  CHECK(*epochs_on_curve(c, 0.6) == Approx(15));
  CHECK(*epochs_on_curve(c, 0.25) == Approx(5));       // from (0, 0)
  CHECK(*epochs_on_curve(c, 0.72) == Approx(34));      // best-so-far stays 0.7 until epoch 30, then to (40, 0.75)
  CHECK_FALSE(epochs_on_curve(c, 0.8).has_value());
  CHECK(c.best_accuracy() == Approx(0.75));
  CHECK(c.best_epoch() == Approx(40));
  try {
    epochs_to_target(c, 0.8, 256);
    FAIL("expected an error");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("best accuracy known is 0.75") != std::string::npos);
  }
  // Another batch without a noise scale cannot be extrapolated.
  CHECK_THROWS_AS(epochs_to_target(c, 0.7, 512), UserError);
}

TEST_CASE("McCandlish et al. 2018: epochs grow as 1 + B / B_noise", "[costmodel]") {
  // B0 = B_noise: doubling to 2 B_noise gives (1 + 2) / (1 + 1) = 1.5x epochs.
  CHECK(batch_epoch_factor(2000, 1000, 1000) == Approx(1.5));
  // Far below B_noise the batch is nearly free in epochs.
  CHECK(batch_epoch_factor(64, 32, 100000) == Approx(1.00032).epsilon(1e-6));
  ConvergenceCurve c;
  c.name = "t";
  c.global_batch = 1000;
  c.noise_scale_batch = 1000;
  c.points = {{10, 0.9}};
  CHECK(epochs_to_target(c, 0.9, 3000) == Approx(20));  // (1 + 3) / (1 + 1) = 2
  // Steps = epochs x N / B fall with batch while epochs rise: 10 x 1e4 / 1000 = 100 steps
  // at B0, 20 x 1e4 / 3000 = 66.7 steps at 3 B0.
  CHECK(epochs_to_target(c, 0.9, 3000) * 1e4 / 3000 < 10 * 1e4 / 1000);
}

TEST_CASE("xpusim train logs are read as accuracy by epoch", "[costmodel]") {
  auto pts = read_train_log(std::string(XPUSIM_TEST_DATA_DIR) + "/costmodel/train_log.tsv");
  REQUIRE(pts.size() == 5);
  CHECK(pts[2].epoch == 3);
  CHECK(pts[2].accuracy == Approx(0.70));
  ConvergenceCurve c;
  c.points = pts;
  CHECK(*epochs_on_curve(c, 0.75) == Approx(4.5));  // from (3, 0.70) to (5, 0.80)
  CHECK_THROWS_AS(read_train_log("/nonexistent/log.tsv"), UserError);
}

TEST_CASE("price catalog: includes add up, missing tiers are errors", "[costmodel]") {
  const PriceCatalog& cat = default_price_catalog();
  // Cloud TPU v2-8 2018 = $6.50 TPU + $0.19 n1-standard-4 VM.
  CHECK(cat.usd_per_h("gcp_2018/cloud_tpu_v2-8", PricingTier::on_demand) == Approx(6.69));
  CHECK_FALSE(cat.has_price("aws_2018/p3.8xlarge", PricingTier::reserved_3y));
  try {
    cat.usd_per_h("aws_2018/p3.8xlarge", PricingTier::reserved_3y);
    FAIL("expected an error");
  } catch (const UserError& e) {
    std::string m = e.what();
    CHECK(m.find("no reserved_3y price") != std::string::npos);
    CHECK(m.find("on_demand, reserved_1y") != std::string::npos);
  }
  CHECK_THROWS_AS(cat.get("nope/none"), UserError);
  // Owned offers price an hour from purchase and electricity.
  CHECK(cat.usd_per_h("owned_2019/titan_rtx", PricingTier::owned) ==
        Approx(2499.0 / (3 * 8766.0) + 0.280 * 0.13));
}

TEST_CASE("a convergence catalog curve can come from an xpusim train log", "[costmodel]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "xpusim_test_convergence";
  fs::create_directories(dir);
  std::ofstream(dir / "c.yaml") << "curves:\n  - name: mine\n    model: cnn10\n    dataset: cifar10\n"
                                   "    global_batch: 128\n    source: test\n    train_log: " XPUSIM_TEST_DATA_DIR
                                   "/costmodel/train_log.tsv\n";
  ConvergenceCatalog cat = load_convergence_catalog(dir.string());
  REQUIRE(cat.find("mine"));
  CHECK(cat.find("mine")->points.size() == 5);
  CHECK(epochs_to_target(*cat.find("mine"), 0.8, 128) == Approx(5));
  CHECK(cat.best("cnn10", "cifar10", "top1", "", 256) == cat.find("mine"));
  fs::remove_all(dir);
}

TEST_CASE("validation API: evaluate_cost from names and a throughput", "[costmodel]") {
  CostQuery q;
  q.model = "resnet50";
  q.dataset = "imagenet";
  q.metric = "top1";
  q.accuracy = 0.757;
  q.global_batch = 1024;
  q.precision = "bf16";  // picks the TPU curve (75.7% at epoch 64)
  q.throughput_samples_per_s = 2796;
  q.offer = "gcp_2018/cloud_tpu_v2-8";
  CostResult r = evaluate_cost(q);
  CHECK(r.curve == "riseml_resnet50_tpu_v2");
  CHECK(r.epochs == Approx(64));
  CHECK(r.hours == Approx(64 * 1281167.0 / 2796 / 3600));
  CHECK(*r.usd_per_h == Approx(6.69));
  CHECK(*r.cost_usd == Approx(std::ceil(64 * 1281167.0 / 2796) / 3600 * 6.69));  // per-second billing
  CHECK(*r.usage_cost_usd == Approx(64 * 1281167.0 / 2796 / 3600 * 6.69));         // hours x $/h, as published
  CHECK(*r.images_per_s_per_usd_per_h == Approx(2796 / 6.69));
  CHECK(epochs_to_target("resnet50", "imagenet", "top1", 0.757, 1024, "mixed_fp16") == Approx(84));
  q.accuracy = 0;
  q.epochs = 10;
  CHECK(evaluate_cost(q).epochs == 10);
  q.offer = "nope/none";
  CHECK_THROWS_AS(evaluate_cost(q), UserError);
}

TEST_CASE("ratios to a baseline placement: time and cost of the same job", "[costmodel]") {
  // 400 vs 100 samples/s: a quarter of the time; at $2/h vs $0.50/h the same dollars.
  CHECK(time_relative(400, 100) == Approx(0.25));
  CHECK(cost_relative(400, 2.0, 100, 0.5) == Approx(1.0));
  CHECK(cost_relative(100, 0.5, 100, 1.0) == Approx(0.5));
  CHECK_THROWS_AS(time_relative(0, 100), UserError);
  CHECK_THROWS_AS(cost_relative(100, 0, 100, 1), UserError);
}

TEST_CASE("price catalog: the one offer containing N x device", "[costmodel]") {
  const PriceCatalog& cat = default_price_catalog();
  CHECK(cat.offer_containing("tpu_v2", 8, "gcp", "RiseML blog (2018-04)") == "gcp_2018/cloud_tpu_v2-8");
  CHECK(cat.offer_containing("v100_sxm2_16gb", 4, "aws", "2018") == "aws_2018/p3.8xlarge");
  CHECK_THROWS_WITH(cat.offer_containing("tpu_v2", 3, "", ""), "no price offer contains 3 x tpu_v2 (configs/pricing/)");
  // A hint that matches nothing does not empty the list; two years left are ambiguous.
  PriceCatalog two;
  for (const char* id : {"a_2018/x", "b_2019/x"}) {
    PriceOffer o;
    o.id = id;
    o.provider = "p";
    o.date = std::string(id).substr(2, 4);
    o.contains.push_back({"dev", 2, 0});
    two.offers[id] = o;
  }
  CHECK(two.offer_containing("dev", 2, "other", "in 2019") == "b_2019/x");
  CHECK_THROWS_WITH(two.offer_containing("dev", 2, "", "undated"), "several price offers fit 2 x dev: a_2018/x, b_2019/x");
}
