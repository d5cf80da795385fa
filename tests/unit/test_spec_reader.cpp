// SpecReader: typed fields, defaults, unknown keys and file:line errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "common/spec_reader.hpp"
#include "models/zoo.hpp"

using namespace xpusim;

namespace {
std::string write_tmp(const std::string& name, const std::string& text) {
  std::string path = "/tmp/xpusim_test_" + name;
  std::ofstream(path) << text;
  return path;
}
}  // namespace

TEST_CASE("fields are typed, defaulted and validated", "[spec]") {
  YAML::Node n = YAML::Load("a: 3\nb: hello\n");
  SpecReader r(n, "f.yaml");
  CHECK(r.number("a", std::nullopt, "x", "a number") == 3);
  CHECK(r.text("b", std::nullopt, "a string") == "hello");
  CHECK(r.integer("c", 7, "x", "defaulted") == 7);
  CHECK_NOTHROW(r.finish());
  CHECK(r.docs().size() == 3);
}

TEST_CASE("unknown keys are rejected with file and line", "[spec]") {
  YAML::Node n = YAML::Load("a: 3\n\nbandwidth_gpbs: 900\n");
  SpecReader r(n, "dev.yaml");
  r.number("a", std::nullopt, "x", "a");
  CHECK_THROWS_WITH(r.finish(), Catch::StartsWith("dev.yaml:3: bandwidth_gpbs: unknown key"));
}

TEST_CASE("a failed check names file:line: key: message", "[spec]") {
  YAML::Node n = YAML::Load("x: 1\nmemory_bandwidth_gbps: -5\n");
  SpecReader r(n, "configs/devices/v100.yaml");
  r.number("x", 0.0, "", "");
  CHECK_THROWS_WITH(r.number("memory_bandwidth_gbps", std::nullopt, "GB/s", "bandwidth",
                             [](double v) { return v > 0 ? "" : "must be > 0"; }),
                    "configs/devices/v100.yaml:2: memory_bandwidth_gbps: must be > 0");
}

TEST_CASE("a missing required field and a wrong type are errors", "[spec]") {
  YAML::Node n = YAML::Load("a: abc\n");
  SpecReader r(n, "f.yaml");
  CHECK_THROWS_WITH(r.number("a", std::nullopt, "", "a"), Catch::Contains("f.yaml:1: a: expected a number"));
  CHECK_THROWS_WITH(r.number("b", std::nullopt, "", "b"), Catch::Contains("b: required field is missing"));
}

TEST_CASE("KEY=VALUE overrides are applied before parsing and validated alike", "[spec]") {
  YAML::Node n = YAML::Load("hbm_bandwidth_gbps: 600\nhost: {cores: 4}\n");
  apply_overrides(n, {"hbm_bandwidth_gbps=1400", "host.cores=16"});
  CHECK(n["hbm_bandwidth_gbps"].as<double>() == 1400);
  CHECK(n["host"]["cores"].as<int>() == 16);
  CHECK_THROWS_WITH(apply_overrides(n, {"novalue"}), Catch::Contains("set: novalue: expected KEY=VALUE"));
}

TEST_CASE("malformed model YAML reports file:line: key", "[spec][zoo]") {
  std::string p = write_tmp("bad_model.yaml",
                            "name: m\nfamily: sequential\ndataset: mnist\ninput: [1, 28, 28]\nclasses: 10\n"
                            "params:\n  layers:\n    - {type: dense, units: 10, unitz: 3}\n");
  CHECK_THROWS_WITH(load_model_spec(p), Catch::Contains(p + ":8: params.layers[0].unitz: unknown key"));
  std::string q = write_tmp("bad_family.yaml", "name: m\nfamily: transformr\ndataset: x\ninput: [1,2,3]\nclasses: 2\n");
  CHECK_THROWS_WITH(load_model_spec(q), Catch::Contains(q + ":2: family: unknown family 'transformr'"));
  std::string s = write_tmp("bad_syntax.yaml", "name: m\n  family: [\n");
  CHECK_THROWS_AS(load_model_spec(s), UserError);
}
