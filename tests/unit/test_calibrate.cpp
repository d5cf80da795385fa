// Calibration: Nelder-Mead on known functions, recovery of known device constants from rows
// the fake engine generated, leave-one-model-out arithmetic, the YAML overlay round trip and
// the `calibrate:` contract errors.
#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "common/error.hpp"
#include "tests/unit/validation_fixture.hpp"
#include "validation/calibrate.hpp"
#include "validation/nelder_mead.hpp"

using namespace xpusim;
using namespace xpusim::validation;
using xpusim::test::fake_predict;
using xpusim::test::fake_throughput;

namespace {
// Rows a device with these constants would produce: fake_gpu has peak 10 TF/s.
std::vector<ReferenceRow> synthetic_rows(double eff, double overhead_s, const std::string& perturbed_model = "",
                                         double factor = 1.0) {
  struct Case {
    const char* model;
    long long batch;
    int count;
  };
  const Case cases[] = {{"cnn10", 16, 1},      {"cnn10", 256, 2},    {"cifar10_cnn", 32, 1}, {"cifar10_cnn", 256, 4},
                        {"mnist_cnn", 64, 1},  {"mnist_cnn", 512, 1}, {"mnist_mlp", 128, 1},  {"mnist_mlp", 1024, 2}};
  std::vector<ReferenceRow> rows;
  int line = 2;
  for (const auto& c : cases) {
    ReferenceRow r;
    r.line = line++;
    r.source = "synthetic";
    r.device = "fake_gpu";
    r.num_devices = c.count;
    r.model = c.model;
    r.batch_per_device = c.batch;
    r.precision = "fp32";
    r.data = "synthetic";
    r.metric = "train_throughput";
    r.value = fake_throughput(c.model, c.batch, c.count, 10, eff, overhead_s) * (r.model == perturbed_model ? factor : 1.0);
    rows.push_back(r);
  }
  return rows;
}

CalibrateOptions fake_options() {
  CalibrateOptions o;
  o.device = "fake_gpu";
  o.predict = fake_predict;
  o.max_evaluations = 200;
  return o;
}
}  // namespace

TEST_CASE("nelder-mead: minimises the Rosenbrock function", "[validation][calibrate]") {
  auto rosen = [](const std::vector<double>& x) {
    return 100 * std::pow(x[1] - x[0] * x[0], 2) + std::pow(1 - x[0], 2);
  };
  NelderMeadOptions o;
  o.max_evaluations = 2000;
  auto r = nelder_mead(rosen, {-1.2, 1.0}, o);
  CHECK(r.x[0] == Approx(1).margin(1e-3));
  CHECK(r.x[1] == Approx(1).margin(1e-3));
  CHECK(r.converged);
}

TEST_CASE("nelder-mead: infinite values act as walls", "[validation][calibrate]") {
  // Minimum of (x - 2)^2 constrained to x <= 1.5 is at the wall.
  auto f = [](const std::vector<double>& x) {
    return x[0] > 1.5 ? std::numeric_limits<double>::infinity() : (x[0] - 2) * (x[0] - 2);
  };
  auto r = nelder_mead(f, {0.0});
  CHECK(r.x[0] == Approx(1.5).margin(1e-4));
  CHECK(r.x[0] <= 1.5);
}

TEST_CASE("calibrate: recovers known efficiency and overhead", "[validation][calibrate]") {
  test::FakeConfigDir cfg;
  // fake_gpu starts at compute_efficiency 0.5, step_overhead_s 0.002.
  auto rows = synthetic_rows(0.37, 0.004);
  FitResult fit = fit_device(rows, fake_options());
  REQUIRE(fit.params.size() == 2);
  CHECK(fit.params[0].key == "compute_efficiency");
  CHECK(fit.params[0].initial == Approx(0.5));
  CHECK(fit.params[0].fitted == Approx(0.37).epsilon(1e-3));
  CHECK(fit.params[1].fitted == Approx(0.004).epsilon(1e-3));
  CHECK(fit.rms_log_error_after < 1e-3);
  CHECK(fit.rms_log_error_before > 0.05);
  CHECK(*fit.after.mape_pct < 0.1);
  CHECK(*fit.before.mape_pct > 5);
  CHECK(fit.after.rows_used == 8);
}

TEST_CASE("calibrate: leave one model out reports the held-out error", "[validation][calibrate]") {
  test::FakeConfigDir cfg;
  // mnist_mlp measured 30% faster than the model can explain: fitted without it, the other
  // three models agree exactly, so its held-out error is 100 * (1/1.3 - 1) = -23.08%.
  auto rows = synthetic_rows(0.37, 0.004, "mnist_mlp", 1.3);
  auto loo = leave_one_model_out(rows, fake_options());
  REQUIRE(loo.size() == 4);
  CHECK(loo[3].model == "mnist_mlp");
  CHECK(loo[3].rows_held_out == 2);
  CHECK(*loo[3].mape_pct_held_out == Approx(23.077).margin(0.05));
  CHECK(*loo[3].mape_pct_in_fit < 0.1);
  CHECK(loo[3].params[0].fitted == Approx(0.37).epsilon(2e-3));
  // Fitted with the biased rows, the other models show an error out of sample.
  CHECK(*loo[0].mape_pct_held_out > 1);
  CHECK(*leave_one_out_mape(loo) > 1);
}

TEST_CASE("calibrate: overlay YAML round-trips into validation", "[validation][calibrate]") {
  test::FakeConfigDir cfg;
  auto rows = synthetic_rows(0.37, 0.004);
  FitResult fit = fit_device(rows, fake_options());
  std::string yaml = overlay_yaml(fit, "ref.csv");
  CHECK_FALSE(std::regex_search(yaml, std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}")));  // no date in the overlay
  CHECK(yaml == overlay_yaml(fit, "ref.csv"));
  auto path = cfg.path() / "overlay.yaml";
  std::ofstream(path) << yaml;
  CalibrationOverlay ov = load_calibration_overlay(path.string());
  CHECK(ov.device == "fake_gpu");
  REQUIRE(ov.overrides.size() == 2);
  CHECK(ov.overrides[0].rfind("compute_efficiency=0.37", 0) == 0);
  ValidateOptions vo;
  vo.predict = fake_predict;
  vo.overrides[ov.device] = ov.overrides;
  auto r = validate_rows(rows, vo);
  CHECK(*r.mape_pct < 0.1);
  // JSON carries the fitted values and before/after errors under stable names.
  auto j = calibration_json(fit, nullptr);
  CHECK(j["device"] == "fake_gpu");
  CHECK(j["params"]["compute_efficiency"]["fitted"].get<double>() == Approx(0.37).epsilon(1e-3));
  CHECK(j["rows_used"] == 8);
  CHECK(j["mape_pct_after"].get<double>() < 0.1);
  CHECK_FALSE(j.contains("leave_one_out"));
  std::ostringstream csv;
  print_calibration(csv, fit, nullptr, OutputFormat::csv);
  // One CSV row, the fit: the JSON's scalar fields, params.<constant>.initial/.fitted.
  std::string text = csv.str();
  CHECK(text.rfind("device,", 0) == 0);
  CHECK(text.find("params.compute_efficiency.fitted") != std::string::npos);
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
  std::ofstream(path) << "device: fake_gpu\nfitted:\n  compute_efficiency: -1\n";
  CHECK_THROWS_WITH(load_calibration_overlay(path.string()), Catch::Contains("overlay.yaml:3: fitted.compute_efficiency: must be > 0"));
}

TEST_CASE("calibrate: the calibrate list is checked", "[validation][calibrate]") {
  test::FakeConfigDir cfg;
  CHECK_THROWS_WITH(fittable_constants("nocal"), Catch::Contains("nocal.yaml:1: calibrate: missing"));
  CHECK_THROWS_WITH(fittable_constants("badcal"), Catch::Contains("source: calibrate needs a number, got 'unit test'"));
  auto p = fittable_constants("fake_gpu", {"compute_efficiency=0.8"});
  CHECK(p[0].initial == Approx(0.8));
  CHECK(fit_rows(synthetic_rows(0.5, 0.002), "other").empty());
  // No row of the device can be predicted: a clear error instead of a fit on nothing.
  auto rows = synthetic_rows(0.5, 0.002);
  for (auto& r : rows) r.model = "no_such_model";
  CHECK_THROWS_WITH(fit_device(rows, fake_options()), Catch::Contains("no reference row of 'fake_gpu' can be predicted"));
}
