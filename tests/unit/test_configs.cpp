// Every shipped config parses: systems, datasets and models (a YAML slip in one file would
// otherwise surface only when a command happens to read it).
#include <catch2/catch.hpp>

#include <filesystem>

#include "common/config_paths.hpp"
#include "models/zoo.hpp"
#include "engine/platform_spec.hpp"

using namespace xpusim;

TEST_CASE("every system YAML parses and names a default device it can hold", "[configs]") {
  namespace fs = std::filesystem;
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(config_dir()) / "systems")) {
    if (e.path().extension() != ".yaml") continue;
    INFO(e.path().string());
    SystemSpec s = load_system_spec(e.path().string());
    CHECK(s.name == e.path().stem().string());
    CHECK(std::find(s.devices.begin(), s.devices.end(), s.default_device) != s.devices.end());
    CHECK(s.devices_per_host <= s.max_devices);
    ++n;
  }
  CHECK(n >= 14);
}

TEST_CASE("the dataset catalog parses and covers every zoo model's dataset", "[configs]") {
  auto ds = load_datasets();
  CHECK(ds.at("imagenet").train_examples == 1281167);
  for (const auto& m : load_zoo()) {
    INFO(m.name << " trains on " << m.dataset);
    CHECK(ds.count(m.dataset) == 1);
  }
}

TEST_CASE("a configuration directory without the kind's folder is named, not listed as empty", "[configs]") {
  const std::string previous = config_dir();
  set_config_dir("no_such_xpusim_configs");
  CHECK_THROWS_WITH(find_config_file("models", "resnet50", "model", "model"),
                    Catch::Contains("unknown model 'resnet50': the configuration directory 'no_such_xpusim_configs' has "
                                    "no models/ folder (a relative path, read from "));
  set_config_dir(previous);
  CHECK(find_config_file("models", "resnet50", "model", "model").ends_with("models/resnet50.yaml"));
}
