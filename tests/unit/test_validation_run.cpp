// Validation runs against the fake engine (tests/unit/validation_fixture.hpp): predicted
// values per metric, the skip list with reasons, cost metrics through the cost model (with
// hand-made price and curve catalogs), OOM agreement, measured rows,
// determinism, and one golden run compared with tests/data/validation/golden_expected.json.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "tests/unit/validation_fixture.hpp"
#include "validation/measure.hpp"
#include "validation/report_html.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::validation;
using xpusim::test::fake_predict;
using xpusim::test::fake_throughput;

namespace {
const std::string kHeader =
    "source,device,num_devices,setup,framework,model,dataset,batch_per_device,precision,data,metric,value,unit,note\n";

const cost::PriceCatalog kNoPrices;
const cost::ConvergenceCatalog kNoCurves;

// Tests pass their catalogs: the process-wide defaults would read configs/ of whichever
// config directory was current first.
ValidationResult run(const std::string& body, const cost::PriceCatalog& prices = kNoPrices,
                     const cost::ConvergenceCatalog& curves = kNoCurves) {
  ValidateOptions o;
  o.predict = fake_predict;
  o.prices = &prices;
  o.curves = &curves;
  return validate_rows(parse_reference_csv(kHeader + body, "t.csv"), o, "t.csv");
}

cost::PriceOffer offer(const std::string& id, const std::string& device, int count, double usd_per_h) {
  cost::PriceOffer o;
  o.id = id;
  o.provider = "test";
  o.contains.push_back({device, count, 0});
  o.usd_per_h[cost::PricingTier::on_demand] = usd_per_h;
  o.billing = {3600, 3600};  // per started hour: the billed cost differs from hours x $/h
  return o;
}

cost::ConvergenceCurve curve(const std::string& name, const std::string& metric,
                             std::vector<cost::AccuracyPoint> points) {
  cost::ConvergenceCurve c;
  c.name = name;
  c.model = "mnist_mlp";
  c.dataset = "mnist";
  c.metric = metric;
  c.global_batch = 512;  // 4 x 128, the rows below
  c.file = "/somewhere/configs/convergence/x.yaml";
  c.line = 3;
  c.points = std::move(points);
  return c;
}

const RowResult& at_line(const ValidationResult& r, int line) {
  for (const auto& x : r.rows)
    if (x.row.line == line) return x;
  throw std::runtime_error("no row at line " + std::to_string(line));
}

// Subset comparison with a relative tolerance (the golden-case convention of tests/golden).
void compare_json(const nlohmann::json& e, const nlohmann::json& a, const std::string& path, double tol) {
  INFO(path);
  if (e.is_number() && a.is_number()) {
    double x = e.get<double>(), y = a.get<double>();
    CHECK(std::fabs(x - y) <= tol * std::max(std::fabs(x), 1e-12));
    return;
  }
  REQUIRE(e.type() == a.type());
  if (e.is_object()) {
    for (auto it = e.begin(); it != e.end(); ++it) {
      INFO(path + "." + it.key());
      REQUIRE(a.contains(it.key()));
      compare_json(it.value(), a.at(it.key()), path + "." + it.key(), tol);
    }
  } else if (e.is_array()) {
    REQUIRE(e.size() == a.size());
    for (size_t i = 0; i < e.size(); ++i) compare_json(e[i], a[i], path + "[" + std::to_string(i) + "]", tol);
  } else {
    CHECK(e == a);
  }
}
}  // namespace

TEST_CASE("validate: throughput and epoch times follow the engine", "[validation][run]") {
  test::FakeConfigDir cfg;
  auto r = run(
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,images/s,\n"
      "s,fake_gpu,2,,tf,mnist_mlp,mnist,128,fp32,synthetic,epoch_seconds_median_after_first,2.5,s,\n"
      "s,fake_tpu,8,,tf,mnist_mlp,,128,bf16,synthetic,first_epoch_seconds,40,s,\n");
  REQUIRE(r.rows_used == 3);
  double thr1 = fake_throughput("mnist_mlp", 128, 1, 10, 0.5, 0.002);
  double thr2 = fake_throughput("mnist_mlp", 128, 2, 10, 0.5, 0.002);
  CHECK(*at_line(r, 2).predicted == Approx(thr1));
  CHECK(*at_line(r, 2).error_pct == Approx(100 * (thr1 - 1000) / 1000));
  CHECK(*at_line(r, 3).predicted == Approx(60000 / thr2));  // MNIST: 60,000 training images
  // The empty dataset column falls back to the model's dataset; + 30 s compile time.
  double thr_tpu = fake_throughput("mnist_mlp", 128, 8, 20, 0.6, 0.001);
  CHECK(*at_line(r, 4).predicted == Approx(60000 / thr_tpu + 30));
  CHECK(at_line(r, 4).engine == "fake");
  std::vector<double> errs;
  for (const auto& x : r.rows) errs.push_back(*x.error_pct);
  // MAPE by hand (not through mape_pct(), which would compare the summary with itself).
  CHECK(*r.mape_pct == Approx((std::fabs(errs[0]) + std::fabs(errs[1]) + std::fabs(errs[2])) / 3));
  REQUIRE(r.by_device.size() == 2);
  CHECK(r.by_device[0].key == "fake_gpu");
  CHECK(r.by_device[0].rows == 2);
  CHECK(r.by_device[0].mape_pct == Approx((std::fabs(errs[0]) + std::fabs(errs[1])) / 2));
}

TEST_CASE("validate: monitoring rows compare the step's nvidia-smi readings (issue 31)", "[validation][run]") {
  test::FakeConfigDir cfg;
  ValidateOptions o;
  // The fake GPU's step reports the four readings (predict/monitoring.hpp, host_pass.cpp); the
  // fake TPU's none, as the analytical engine does for TPUs and CPUs.
  o.predict = [](const PredictRequest& req) {
    StepReport rep = fake_predict(req);
    if (req.placement.device == "fake_gpu") {
      rep.extra["gpu_util_pct_smi"] = 80.0;
      rep.extra["gpu_mem_ctrl_util_pct"] = 25.0;
      rep.extra["gpu_mem_used_bytes"] = 2e9;
      rep.extra["gpu_power_w"] = 200.0;
    }
    return rep;
  };
  o.prices = &kNoPrices;
  o.curves = &kNoCurves;
  auto r = validate_rows(parse_reference_csv(kHeader +
                                                 "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,gpu_util_pct_smi,100,%,\n"
                                                 "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,gpu_mem_ctrl_util_pct,20,pct,\n"
                                                 "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,gpu_mem_used_bytes,4e9,bytes,\n"
                                                 "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,gpu_power_w,250,W,\n"
                                                 "s,fake_tpu,8,,tf,mnist_mlp,,128,bf16,synthetic,gpu_util_pct_smi,50,%,\n"
                                                 "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,gpu_power_w,0.25,kW,\n",
                                             "t.csv"),
                         o, "t.csv");
  REQUIRE(r.rows_used == 4);
  CHECK(*at_line(r, 2).predicted == Approx(80.0));
  CHECK(*at_line(r, 2).error_pct == Approx(-20.0));
  CHECK(*at_line(r, 3).error_pct == Approx(25.0));
  CHECK(*at_line(r, 4).error_pct == Approx(-50.0));
  CHECK(*at_line(r, 5).error_pct == Approx(-20.0));
  CHECK_FALSE(at_line(r, 6).used);
  CHECK(at_line(r, 6).reason.find("reports no gpu_util_pct_smi") != std::string::npos);
  CHECK_FALSE(at_line(r, 7).used);
  CHECK(at_line(r, 7).reason.find("unit: 'kW'") != std::string::npos);
  CHECK(parse_metric("gpu_power_w")->kind == MetricKind::gpu_power_w);
}

TEST_CASE("validate: MAPE per framework, in JSON and the table", "[validation][run]") {
  test::FakeConfigDir cfg;
  double thr = fake_throughput("mnist_mlp", 128, 1, 10, 0.5, 0.002);
  // References chosen so the errors are exactly +10%, -20% (tf) and +50% (pytorch, empty).
  auto ref = [&](double err_pct) { return std::to_string(thr / (1 + err_pct / 100)); };
  auto r = run("s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput," + ref(10) + ",images/s,\n" +
               "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput," + ref(-20) + ",images/s,\n" +
               "s,fake_gpu,1,,pytorch,mnist_mlp,mnist,128,fp32,synthetic,train_throughput," + ref(50) + ",images/s,\n" +
               "s,fake_gpu,1,,,mnist_mlp,mnist,128,fp32,synthetic,train_throughput," + ref(-50) + ",images/s,\n" +
               "s,fake_gpu,1,,mxnet,mnist_mlp,mnist,128,fp32,synthetic,bogus_metric,1,x,\n");  // skipped: no group
  REQUIRE(r.by_framework.size() == 3);
  CHECK(r.by_framework[0].key == "pytorch");
  CHECK(r.by_framework[0].rows == 1);
  CHECK(r.by_framework[0].mape_pct == Approx(50).epsilon(1e-4));
  CHECK(r.by_framework[1].key == "tf");
  CHECK(r.by_framework[1].rows == 2);
  CHECK(r.by_framework[1].mape_pct == Approx(15).epsilon(1e-4));
  CHECK(r.by_framework[1].mean_error_pct == Approx(-5).epsilon(1e-4));
  CHECK(r.by_framework[2].key == kUnspecifiedFramework);
  CHECK(r.by_framework[2].mean_error_pct == Approx(-50).epsilon(1e-4));
  auto j = validation_json(r);
  REQUIRE(j["summary"]["by_framework"].size() == 3);
  CHECK(j["summary"]["by_framework"]["tf"]["rows"] == 2);
  CHECK(j["summary"]["by_framework"]["unspecified"]["mape_pct"].get<double>() == Approx(50).epsilon(1e-4));
  std::ostringstream table;
  print_validation(table, r, OutputFormat::table);
  CHECK_THAT(table.str(), Catch::Contains("framework") && Catch::Contains("pytorch"));
}

TEST_CASE("validate: every skipped row keeps its reason", "[validation][run]") {
  test::FakeConfigDir cfg;
  auto r = run(
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,images/s,\n"
      "s,no_such_device,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,images/s,\n"
      "s,fake_gpu,1,no_such_system,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,images/s,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,bogus_metric,1000,x,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,,images/s,\n"
      "s,fake_gpu,1,,tf,no_such_model,mnist,128,fp32,synthetic,train_throughput,1000,images/s,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,cost_to_top1_0.75,10,usd,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,images_per_s_per_usd_per_h,10,(images/s)/(usd/h),\n"
      "s,broken,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,images/s,\n"
      "s,fake_gpu,,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,images/s,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp7,synthetic,train_throughput,1000,images/s,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,0,images/s,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,no_such_dataset,128,fp32,synthetic,epoch_seconds_median_after_first,3,s,\n");
  CHECK(r.rows.size() == 13);  // nothing dropped
  CHECK(r.rows_used == 1);
  CHECK(r.rows_skipped == 12);
  CHECK(at_line(r, 2).used);
  CHECK(at_line(r, 3).reason == "unknown device 'no_such_device'");
  CHECK(at_line(r, 4).reason == "unknown system 'no_such_system'");
  CHECK(at_line(r, 5).reason == "unknown metric 'bogus_metric'");
  CHECK(at_line(r, 6).reason == "value: missing");
  CHECK(at_line(r, 7).reason == "unknown model 'no_such_model'");
  CHECK(at_line(r, 8).reason == "cost model: no price offer contains 1 x fake_gpu (configs/pricing/)");
  CHECK(at_line(r, 9).reason == "cost model: no price offer contains 1 x fake_gpu (configs/pricing/)");
  CHECK_THAT(at_line(r, 10).reason, Catch::StartsWith("engine failed: ") && Catch::Contains("peak_tflops: must be > 0"));
  CHECK(at_line(r, 11).reason == "num_devices: missing");
  CHECK(at_line(r, 12).reason == "unknown precision 'fp7'");
  CHECK(at_line(r, 13).reason == "value: must be > 0 for a relative error");
  CHECK(at_line(r, 14).reason == "unknown dataset 'no_such_dataset'");
  for (const auto& x : r.rows)
    if (!x.used) CHECK_FALSE(x.predicted.has_value());
  auto j = validation_json(r);
  CHECK(j["summary"]["rows_skipped"] == 12);
  CHECK(j["summary"]["skipped_reasons"]["cost model: no price offer contains 1 x fake_gpu (configs/pricing/)"] == 2);
  CHECK(j["rows"][1]["status"] == "skipped");
  CHECK(j["rows"][1]["reason"] == "unknown device 'no_such_device'");
  CHECK(j["rows"][1]["predicted"].is_null());
}

TEST_CASE("validate: oom rows compare fits_in_memory", "[validation][run]") {
  test::FakeConfigDir cfg;
  auto r = run(
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,1000000,fp32,synthetic,oom,1,,\n"   // does not fit in 4 GiB
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,oom,1,,\n"       // fits: a mismatch
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,oom,0,,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,oom,2,,\n");
  CHECK(r.oom_total == 3);
  CHECK(r.oom_matches == 2);
  CHECK(*at_line(r, 2).match);
  CHECK_FALSE(*at_line(r, 3).match);
  CHECK(*at_line(r, 3).predicted == 0);
  CHECK(at_line(r, 5).reason == "oom: value must be 0 (fits) or 1 (out of memory)");
  CHECK_FALSE(r.mape_pct.has_value());  // OOM rows carry no percentage error
  auto j = validation_json(r);
  CHECK(j["rows"][0]["match"] == true);
  CHECK(j["rows"][0]["error_pct"].is_null());  // every row has every field (one CSV schema)
}

TEST_CASE("validate: cost metrics go through the cost model", "[validation][run]") {
  test::FakeConfigDir cfg;
  cost::PriceCatalog prices;
  prices.offers["test/gpu4"] = offer("test/gpu4", "fake_gpu", 4, 6.0);
  prices.offers["test/k80"] = offer("test/k80", "k80", 1, 1.5);
  cost::ConvergenceCatalog curves;
  // top-1 0.75 lies between (20, 0.5) and (60, 0.9): 20 + 40 x 0.25 / 0.4 = 45 epochs.
  curves.curves.push_back(curve("c1", "top1", {{20, 0.5}, {60, 0.9}}));
  // top-5 0.9 lies between (10, 0.6) and (50, 1.0): 10 + 40 x 0.3 / 0.4 = 40 epochs.
  curves.curves.push_back(curve("c5", "top5", {{10, 0.6}, {50, 1.0}}));
  auto r = run(
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,cost_to_top1_0.75,1,usd,\n"
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,hours_to_top5_0.9,1,h,\n"
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,minutes_to_top1_0.75,1,min,\n"
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,images_per_s_per_usd_per_h,1,(images/s)/(usd/h),\n"
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,epochs_to_top1_0.75,40,epochs,\n"
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,time_relative_to_k80,1,x,\n"
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,cost_relative_to_k80,1,x,\n"
      "s,fake_tpu,8,,tf,mnist_mlp,mnist,128,fp32,synthetic,cost_to_top1_0.75,1,usd,\n"
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,minutes_to_top1_0.95,1,min,\n",
      prices, curves);
  double thr = fake_throughput("mnist_mlp", 128, 4, 10, 0.5, 0.002);
  double k80 = fake_throughput("mnist_mlp", 128, 1, 4, 0.5, 0);
  double epoch_s = 60000 / thr;
  REQUIRE(45 * epoch_s < 3600);  // so one started hour would be billed, not what is compared
  CHECK(*at_line(r, 2).predicted == Approx(45 * epoch_s / 3600 * 6.0));
  CHECK(*at_line(r, 3).predicted == Approx(40 * epoch_s / 3600));
  CHECK(*at_line(r, 4).predicted == Approx(45 * epoch_s / 60));
  CHECK(*at_line(r, 5).predicted == Approx(thr / 6.0));
  CHECK(*at_line(r, 6).predicted == Approx(45));
  CHECK(*at_line(r, 6).error_pct == Approx(12.5));
  CHECK(*at_line(r, 7).predicted == Approx(k80 / thr));
  CHECK(*at_line(r, 8).predicted == Approx(k80 / thr * 6.0 / 1.5));
  CHECK(at_line(r, 9).reason == "cost model: no price offer contains 8 x fake_tpu (configs/pricing/)");
  CHECK_THAT(at_line(r, 10).reason, Catch::StartsWith("cost model: ") && Catch::Contains("0.9"));
  CHECK(r.rows_used == 7);
}

// Issue 16: options applied to every row were only checked row by row, so a typo in
// --framework or --baseline-device skipped every row it touched and still exited 0.
TEST_CASE("validate: an unknown framework or baseline device is an error naming the option", "[validation][run][reliability]") {
  test::FakeConfigDir cfg;
  ValidateOptions o;
  o.predict = fake_predict;
  o.prices = &kNoPrices;
  o.curves = &kNoCurves;
  const auto relative =
      parse_reference_csv(kHeader + "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,time_relative_to_k80,1,x,\n", "t.csv");
  const auto plain =
      parse_reference_csv(kHeader + "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1,images/s,\n", "t.csv");
  o.baseline_device = "no_such_gpu";
  try {
    validate_rows(relative, o);
    FAIL("no error");
  } catch (const FieldError& e) {
    CHECK(e.field() == "baseline_device");
    CHECK(e.message() == "unknown device 'no_such_gpu' (configs/devices/); time_relative_to_k80 rows are predicted against it");
  }
  CHECK(validate_rows(plain, o).rows_used == 1);  // no row needs a baseline: the option is not consulted
  o.baseline_device = "k80";
  CHECK(validate_rows(relative, o).rows_used == 1);
  o.framework = "no_such_framework";
  try {
    validate_rows(plain, o);
    FAIL("no error");
  } catch (const FieldError& e) {
    CHECK(e.field() == "framework");
    CHECK_THAT(e.message(), Catch::StartsWith("no profile named 'no_such_framework' (names a CSV or option may use: "));
  }
  // A profile given as a path must be one: a file of something else skipped every row too.
  const std::string not_profile = (cfg.path() / "not_a_profile.yaml").string();
  std::ofstream(not_profile) << "- just\n- a list\n";
  o.framework = not_profile;
  CHECK_THROWS_WITH(validate_rows(plain, o), not_profile + ":1: expected a mapping of key: value");
}

TEST_CASE("validate: an epochs row read straight off an input curve is skipped as circular", "[validation][run]") {
  test::FakeConfigDir cfg;
  // The curve holds the point (40 epochs, 0.75) at this batch: an input, not a prediction.
  cost::ConvergenceCatalog curves;
  curves.curves.push_back(curve("c", "top1", {{40, 0.75}, {80, 0.8}}));
  auto r = run(
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,epochs_to_top1_0.75,40,epochs,\n"
      "s,fake_gpu,4,,tf,mnist_mlp,mnist,128,fp32,synthetic,epochs_to_top1_0.7,40,epochs,\n",
      kNoPrices, curves);
  CHECK_FALSE(at_line(r, 2).used);
  CHECK(at_line(r, 2).reason ==
        "circular: at this global batch the epochs are an input, curve 'c' (configs/convergence/x.yaml:3), "
        "not a prediction");
  REQUIRE(at_line(r, 3).used);  // interpolated from (0, 0): 40 x 0.7 / 0.75 epochs, a prediction
  CHECK(*at_line(r, 3).predicted == Approx(40 * 0.7 / 0.75));
  CHECK(r.rows_skipped == 1);
}

TEST_CASE("validate: calibration overrides reach the engine", "[validation][run]") {
  test::FakeConfigDir cfg;
  ValidateOptions o;
  o.predict = fake_predict;
  o.overrides["fake_gpu"] = {"compute_efficiency=0.25"};
  auto rows = parse_reference_csv(kHeader + "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1,samples/s,\n"
                                            "s,fake_tpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1,samples/s,\n",
                                  "t.csv");
  auto r = validate_rows(rows, o);
  CHECK(*r.rows[0].predicted == Approx(fake_throughput("mnist_mlp", 128, 1, 10, 0.25, 0.002)));
  CHECK(*r.rows[1].predicted == Approx(fake_throughput("mnist_mlp", 128, 1, 20, 0.6, 0.001)));  // other device untouched
}

namespace {
// --measure cpu on two small cases with `threads` threads, dated for reproducible rows.
MeasureOptions two_cpu_cases(int threads) {
  MeasureOptions m;
  m.backend = "cpu";
  m.device = "host";
  m.setup = "host";
  m.count = threads;
  m.cases = parse_measure_cases("mnist_mlp:64,imdb_fasttext:32", "--measure-cases");
  m.date = "2026-01-02";
  return m;
}
}  // namespace

TEST_CASE("validate: measured rows keep the median of repeated runs, in rounds", "[validation][measure]") {
  test::FakeConfigDir cfg;
  MeasureOptions m = two_cpu_cases(1);
  m.repeats = 3;
  std::vector<std::string> order;
  int calls = 0;
  // Runs return 100, 200, 300, ...: a slow or fast outlier must not become the row's value.
  m.predict = [&](const PredictRequest& q) {
    order.push_back(q.model);
    StepReport r;
    r.throughput_samples_per_s = 100.0 * ++calls;
    if (q.model == "imdb_fasttext" && calls == 6) r.throughput_samples_per_s = 1e9;
    return r;
  };
  auto rows = measure_rows(m);
  REQUIRE(rows.size() == 2);
  CHECK(order == std::vector<std::string>{"mnist_mlp", "imdb_fasttext", "mnist_mlp", "imdb_fasttext", "mnist_mlp",
                                          "imdb_fasttext"});
  CHECK(*rows[0].value == Approx(300));  // runs 100, 300, 500
  CHECK(*rows[1].value == Approx(400));  // runs 200, 400, 1e9
  CHECK_THAT(rows[0].note, Catch::Contains("repeats=3 median of 100 300 500"));
}

TEST_CASE("validate: measured CPU rows are kept in the reference format", "[validation][measure]") {
  test::FakeConfigDir cfg;
  MeasureOptions m = two_cpu_cases(2);
  m.predict = fake_predict;
  auto rows = measure_rows(m);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].device == "host");
  CHECK(rows[0].num_devices == 2);
  CHECK(rows[0].dataset == "mnist");
  CHECK_THAT(rows[0].source, Catch::Contains("2026-01-02") && Catch::Contains("xpusim"));
  CHECK_THAT(rows[0].note, Catch::Contains("library_version=fake-1.0"));
  CHECK(*rows[0].value == Approx(fake_throughput("mnist_mlp", 64, 2, 0.1, 0.5, 0)));
  CHECK_FALSE(rows[1].value.has_value());
  CHECK_THAT(rows[1].note, Catch::Contains("run failed"));
  std::ostringstream csv;
  write_reference_csv(csv, rows);
  auto back = parse_reference_csv(csv.str(), "measured.csv");
  ValidateOptions o;
  o.predict = fake_predict;
  auto r = validate_rows(back, o);
  CHECK(*r.rows[0].error_pct == Approx(0).margin(1e-3));  // same fake on both sides
  CHECK(r.rows[1].reason == "value: missing");
  CHECK_THROWS_WITH(parse_measure_cases("mnist_mlp", "--measure-cases"), Catch::StartsWith("--measure-cases:"));
  CHECK_THROWS_WITH(parse_measure_cases("mnist_mlp:0", "--measure-cases"), Catch::StartsWith("--measure-cases:"));
}

TEST_CASE("validate: golden run matches expected JSON and is deterministic", "[validation][golden]") {
  test::FakeConfigDir cfg;
  std::string dir = XPUSIM_TEST_DATA_DIR "/validation";
  ValidateOptions o;
  o.predict = fake_predict;
  o.prices = &kNoPrices;  // the cost row is skipped: no offer for the fake device
  o.curves = &kNoCurves;
  auto rows = read_reference_csv(dir + "/golden_reference.csv");
  auto r1 = validate_rows(rows, o, "golden_reference.csv");
  auto r2 = validate_rows(rows, o, "golden_reference.csv");
  std::ostringstream a, b;
  print_json(a, validation_json(r1));
  print_json(b, validation_json(r2));
  CHECK(a.str() == b.str());
  // XPUSIM_UPDATE_GOLDEN=1 rewrites the expected file (review the diff before committing).
  if (const char* u = std::getenv("XPUSIM_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream out(dir + "/golden_expected.json");
    out << a.str();
  }
  std::ifstream in(dir + "/golden_expected.json");
  REQUIRE(in);
  nlohmann::json expected = nlohmann::json::parse(in);
  compare_json(expected, validation_json(r1), "$", 1e-6);
  // The report is plain, self-contained HTML with one SVG per plot.
  std::string html = report_html(r1);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("Skipped rows") != std::string::npos);
  CHECK(html == report_html(r2));
  // Issue 36: the scaling panel is a predicted / reference ratio with one dot per used
  // throughput row that has a device count, a y = 1 line and a +-10% band; the absolute
  // lines are folded below it.
  size_t want = 0;
  for (const auto& x : r1.rows)
    if (x.used && x.row.metric == "train_throughput" && x.row.num_devices && x.predicted && x.row.value) ++want;
  REQUIRE(want > 0);
  const size_t from = html.find("<h2>Predicted / reference throughput vs number of devices</h2>");
  const size_t to = html.find("<details class=\"scaling-lines\">");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  REQUIRE(from < to);
  const std::string panel = html.substr(from, to - from);
  size_t dots = 0;
  for (size_t at = panel.find("<circle cx="); at != std::string::npos; at = panel.find("<circle cx=", at + 1)) ++dots;
  CHECK(dots == want);  // legend markers are <circle class="legend-marker" ...>
  CHECK(panel.find("class=\"ratio-band\"") != std::string::npos);
  CHECK(panel.find("within 10% of the reference") != std::string::npos);
  CHECK(panel.find("predicted / reference (ratio)") != std::string::npos);
}

// Issue 16: a reference value of 1e308 used to turn the whole summary's MAPE into null, and
// the unit column was never read.
TEST_CASE("validate: absurd values and wrong units are skipped with a reason, the MAPE survives",
          "[validation][run][reliability]") {
  test::FakeConfigDir cfg;
  auto r = run(
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,samples/s,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1e308,samples/s,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,s,\n"
      "s,fake_gpu,1,,tf,mnist_mlp,mnist,128,fp32,synthetic,train_throughput,1000,,\n");
  CHECK(at_line(r, 2).used);
  CHECK_FALSE(at_line(r, 3).used);
  CHECK(at_line(r, 3).reason == "value: implausibly large (> 1e15)");
  CHECK_FALSE(at_line(r, 4).used);
  CHECK(at_line(r, 4).reason.rfind("unit: 's' is not a unit of train_throughput", 0) == 0);
  CHECK(at_line(r, 5).used);  // an empty unit means the metric's own
  REQUIRE(r.mape_pct.has_value());
  CHECK(std::isfinite(*r.mape_pct));
}

TEST_CASE("validate: an interrupted measurement resumes without redoing finished runs", "[validation][measure][resume]") {
  test::FakeConfigDir cfg;
  // Two cases, three repeats, in rounds: runs 1..6 alternate mnist_mlp, imdb_fasttext.
  auto fake = [](int* calls) {
    return [calls](const PredictRequest& q) {
      StepReport r;
      r.throughput_samples_per_s = 1000.0 / 3.0 * ++*calls + (q.model == "mnist_mlp" ? 0.0 : 0.5);
      return r;
    };
  };
  MeasureOptions full_o = two_cpu_cases(1);
  full_o.repeats = 3;
  int full_calls = 0;
  full_o.predict = fake(&full_calls);
  std::vector<ReferenceRow> full = measure_rows(full_o);
  REQUIRE(full_calls == 6);
  CHECK_THAT(full[0].note, Catch::Contains("inputs=" + measure_inputs_fingerprint(full_o)));
  for (int stop_after = 1; stop_after <= 5; ++stop_after) {
    MeasureOptions m = two_cpu_cases(1);
    m.repeats = 3;
    int calls = 0;
    std::atomic<bool> stop{false};
    m.stop = &stop;
    m.predict = fake(&calls);
    std::vector<ReferenceRow> last;
    m.on_run = [&](const std::vector<ReferenceRow>& now) {
      last = now;
      if (calls == stop_after) stop = true;
    };
    MeasureRun part = measure(m);
    CHECK(part.interrupted);
    CHECK(part.runs_done == stop_after);
    CHECK(part.finished_cases == (stop_after >= 5 ? 1u : 0u));
    // Through the CSV and back, as the CLI does; the resumed run does only the missing runs,
    // which the fake numbers the same as in the uninterrupted run.
    std::ostringstream csv;
    write_reference_csv(csv, part.rows);
    MeasureOptions r = two_cpu_cases(1);
    r.repeats = 3;
    r.resume = parse_reference_csv(csv.str(), "measured.csv");
    int resumed_calls = stop_after;
    r.predict = fake(&resumed_calls);
    MeasureRun rest = measure(r);
    CHECK_FALSE(rest.interrupted);
    CHECK(rest.runs_done == 6 - stop_after);
    CHECK(rest.finished_cases == 2);
    REQUIRE(rest.rows.size() == 2);
    for (size_t k = 0; k < 2; ++k) {
      CHECK(*rest.rows[k].value == *full[k].value);
      CHECK(rest.rows[k].note == full[k].note);
    }
  }
  // Rows measured with other options are refused.
  MeasureOptions other = two_cpu_cases(1);
  other.repeats = 2;
  int calls = 0;
  other.predict = fake(&calls);
  other.resume = full;
  CHECK_THROWS_WITH(measure(other), Catch::Contains("measured with other inputs"));
}

TEST_CASE("validate: seq_len reaches the request; on a non-Transformer it names the CSV line (issue 29)",
          "[validation][run]") {
  const std::string head =
      "source,device,num_devices,setup,framework,model,dataset,batch_per_device,precision,data,metric,value,unit,note,"
      "seq_len\n";
  ValidateOptions o;
  std::vector<int64_t> seen;
  o.predict = [&](const PredictRequest& q) {
    seen.push_back(q.seq_len);
    StepReport r;
    r.engine = "fake";
    r.throughput_samples_per_s = 100;
    r.global_batch = q.batch_per_device;
    return r;
  };
  auto rows = parse_reference_csv(head + "s,v100_sxm2_16gb,1,,pytorch,bert_large,,8,fp32,synthetic,train_throughput,100,"
                                         "sequences/s,,384\n",
                                  "modern.csv");
  ValidationResult r = validate_rows(rows, o, "modern.csv");
  CHECK(r.rows_used == 1);
  CHECK(seen == std::vector<int64_t>{384});
  rows = parse_reference_csv(head + "s,v100_sxm2_16gb,1,,pytorch,bert_large,,8,fp32,synthetic,train_throughput,100,"
                                    "sequences/s,,384\n"
                                    "s,v100_sxm2_16gb,1,,pytorch,resnet50,,8,fp32,synthetic,train_throughput,100,"
                                    "images/s,,128\n",
                             "modern.csv");
  CHECK_THROWS_WITH(validate_rows(rows, o, "modern.csv"),
                    Catch::Contains("modern.csv:3: seq_len: model 'resnet50' is not a Transformer"));
}
