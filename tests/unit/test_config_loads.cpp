// A placement is resolved once: config files are opened at most once per process, however
// many requests or validation rows use them (issue 12). Counts come from the YAML cache in
// common/config_paths.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/config_paths.hpp"
#include "predict/predict.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
namespace fs = std::filesystem;

namespace {
// A private copy of a shipped device file, so no earlier test has cached it.
std::string fresh_copy(const std::string& device, const std::string& tag) {
  fs::path dir = fs::temp_directory_path() / ("xpusim_loads_" + tag + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path dst = dir / (device + ".yaml");
  fs::copy_file(fs::path(config_dir()) / "devices" / (device + ".yaml"), dst, fs::copy_options::overwrite_existing);
  return dst.string();
}
}  // namespace

TEST_CASE("one predict opens its device, system and model files at most once", "[configs][loads]") {
  const std::string dev = fresh_copy("p100_sxm2", "predict");
  PredictRequest r;
  r.model = "resnet50";
  r.batch_per_device = 32;
  r.placement.device = dev;
  r.placement.count = 4;
  r.data = DataSource::real;
  StepReport a = predict(r);
  CHECK(a.throughput_samples_per_s > 0);
  CHECK(config_file_loads(dev) == 1);
  CHECK(config_file_loads((fs::path(config_dir()) / "systems" / "dgx1_nvlink.yaml").string()) <= 1);
  CHECK(config_file_loads((fs::path(config_dir()) / "models" / "resnet50.yaml").string()) <= 1);
  CHECK(config_file_loads((fs::path(config_dir()) / "datasets.yaml").string()) <= 1);
  // More requests on the same file, other counts and batches: still one open.
  r.placement.count = 8;
  r.batch_per_device = 64;
  predict(r);
  r.placement.overrides = {"compute_efficiency=0.5"};
  predict(r);
  CHECK(config_file_loads(dev) == 1);
}

TEST_CASE("validate opens each device file at most once over every row", "[configs][loads][validation]") {
  auto rows = validation::read_reference_csv(std::string(XPUSIM_TEST_DATA_DIR) + "/reference/published_calibration.csv");
  REQUIRE(rows.size() > 100);
  const std::string dev = fresh_copy("k80", "validate");
  int k80_rows = 0;
  for (auto& row : rows)
    if (row.device == "k80") row.device = dev, ++k80_rows;
  REQUIRE(k80_rows > 50);
  auto res = validation::validate_rows(rows, {});
  CHECK(res.rows_used > 100);
  CHECK(config_file_loads(dev) == 1);
  for (const char* d : {"p100_sxm2", "v100_sxm2_16gb", "tpu_v2", "gce_skylake_vcpu"})
    CHECK(config_file_loads((fs::path(config_dir()) / "devices" / (std::string(d) + ".yaml")).string()) <= 1);
}
