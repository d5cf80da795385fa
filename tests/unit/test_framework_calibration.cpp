// Calibrating a user's own framework profile and applying a framework fit's overlay: a
// profile kept outside configs/frameworks/ is fitted on the rows that name it (no name index
// knows it), and an overlay written by `calibrate --framework X` reaches the rows profile X
// predicts, and the profiles that name X as their base, for the keys they do not set.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "validation/calibrate.hpp"
#include "validation/framework_overlay.hpp"
#include "validation/graph_cache.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::validation;
namespace fs = std::filesystem;

namespace {
// The rows of `csv` whose line contains `needle`, with `from` replaced by `to`, in a scratch CSV.
std::vector<ReferenceRow> relabelled(const std::string& csv, const std::string& needle, const std::string& from,
                                     const std::string& to, const fs::path& out_path) {
  std::ifstream in(csv);
  std::ofstream out(out_path);
  std::string line;
  std::getline(in, line);
  out << line << "\n";
  while (std::getline(in, line)) {
    if (line.find(needle) == std::string::npos) continue;
    const size_t at = line.find(from);
    if (at != std::string::npos) line.replace(at, from.size(), to);
    out << line << "\n";
  }
  out.close();
  return read_reference_csv(out_path.string());
}

const ReferenceRow& first_row(const std::vector<ReferenceRow>& rows, const std::string& source_part,
                              const std::string& version) {
  for (const auto& r : rows)
    if (r.source.find(source_part) != std::string::npos && r.stack_version() == version) return r;
  FAIL("no row of " << source_part << " at " << version);
  return rows.front();
}
}  // namespace

TEST_CASE("a profile outside the config directory is calibrated on the rows that name it", "[frameworks][calibrate]") {
  const fs::path dir = fs::temp_directory_path() / ("xpusim_own_stack_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string mine = (dir / "our_trainer.yaml").string();
  std::ofstream(mine) << "name: our_trainer\nbase: pytorch_2\nnames: [our-pytorch]\nconv_layout: native\n"
                         "calibrate: [kernel_tensor_efficiency_scale]\n";
  CHECK(framework_outside_config_dir(mine));
  CHECK_FALSE(framework_outside_config_dir("pytorch_2"));
  // The four channels-last rows measured on an H100, under the user's name for the same stack.
  const std::string measured = std::string(XPUSIM_MEASURED_DIR) + "/h100-2026-11-27.csv";
  const auto rows = relabelled(measured, "pytorch-2.x-channels-last", "pytorch-2.x-channels-last", "our-pytorch",
                               dir / "rows.csv");
  REQUIRE(rows.size() == 4);
  CHECK(framework_fit_rows(rows, mine).size() == 4);  // before: "no profile for 'our-pytorch'"
  CalibrateOptions o;
  o.framework = mine;
  o.device = "framework " + mine;
  o.predict = graph_caching_predictor();
  o.max_evaluations = 40;
  const FitResult fit = fit_device(rows, o);
  CHECK(fit.after.rows_used == 4);
  REQUIRE(fit.params.size() == 1);
  CHECK(fit.params[0].initial == 1.578);  // pytorch_2's value, inherited
  // The profile says what pytorch_2_channels_last says, so before the fit its rows are priced
  // as the shipped profile prices the same rows under the shipped name.
  ValidateOptions vo;
  vo.predict = o.predict;
  std::vector<ReferenceRow> under_shipped_name;
  for (const auto& r : read_reference_csv(measured))
    if (r.framework == "pytorch-2.x-channels-last") under_shipped_name.push_back(r);
  const auto shipped = validate_rows(under_shipped_name, vo);
  REQUIRE(shipped.mape_pct);
  REQUIRE(fit.before.mape_pct);
  CHECK(*fit.before.mape_pct == Approx(*shipped.mape_pct).epsilon(1e-12));
  CHECK(*fit.after.mape_pct <= *fit.before.mape_pct);
  fs::remove_all(dir);
}

TEST_CASE("a framework fit's overlay reaches its profile's rows and those of the profiles based on it",
          "[frameworks][calibrate]") {
  CHECK(framework_overlay_stem("framework pytorch_amp_dali") == "pytorch_amp_dali");
  CHECK(framework_overlay_stem("framework /home/me/our_trainer.yaml") == "our_trainer");
  CHECK(framework_overlay_stem("v100_sxm2_16gb").empty());  // a device's overlay

  const auto modern = read_reference_csv(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/modern_calibration.csv");
  const std::map<std::string, std::vector<std::string>> fit = {
      {"pytorch_amp_dali", {"tensor_efficiency_scale=3", "kernel_tensor_efficiency_scale=2"}}};
  using V = std::vector<std::string>;
  const V both = {"framework.tensor_efficiency_scale=3", "framework.kernel_tensor_efficiency_scale=2"};
  // The profile's own rows (NGC 21.11 BERT).
  CHECK(framework_overlay_for(fit, first_row(modern, "BERT/README.md@a9e2c1d", "pytorch-ngc21.11"), "") == both);
  // pytorch_ngc_dataloader (NGC 20.12, base pytorch_amp_dali) sets neither key itself.
  CHECK(framework_overlay_for(fit, first_row(modern, "resnet50v1.5/README.md@097c7ff", "pytorch-ngc20.12"), "") == both);
  // pytorch_ngc_2020 (NGC 20.06) sets its own kernel scales: only the other key reaches it.
  CHECK(framework_overlay_for(fit, first_row(modern, "resnet50v1.5/README.md@46ff370", "pytorch-ngc20.06"), "") ==
        V{"framework.tensor_efficiency_scale=3"});
  // pytorch_ngc_2019 (NGC 19.07) has no base; a TensorFlow row is another stack.
  CHECK(framework_overlay_for(fit, first_row(modern, "BERT/README.md@3d3ff3e", "pytorch-ngc19.07"), "").empty());
  const auto tf = std::find_if(modern.begin(), modern.end(), [](const ReferenceRow& r) { return r.framework == "tensorflow"; });
  REQUIRE(tf != modern.end());
  CHECK(framework_overlay_for(fit, *tf, "").empty());
  // validate --framework: the forced profile is the row's.
  CHECK(framework_overlay_for(fit, *tf, "pytorch_amp_dali") == both);
}
