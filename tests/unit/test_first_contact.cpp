// Issue 36 helpers with hand-derived numbers: did-you-mean for names, the core fields every
// engine's report shares (engine/core_fields.hpp), and table cells rounded for reading.
#include <catch2/catch.hpp>

#include <sstream>

#include "common/output.hpp"
#include "common/suggest.hpp"
#include "engine/engine.hpp"

using namespace xpusim;

TEST_CASE("did you mean: containment first, then edit distance; nothing for far names", "[first_contact]") {
  const std::vector<std::string> devices{"a100_pcie_40gb", "a100_sxm4_40gb", "a10", "h100_sxm5", "tpu_v2", "v100_sxm2_16gb"};
  // "a100" is contained in two names (and "a10" is one edit away): containment ranks first.
  auto c = closest_names("a100", devices);
  REQUIRE(c.size() == 3);
  CHECK(c[0] == "a100_pcie_40gb");
  CHECK(c[1] == "a100_sxm4_40gb");
  CHECK(c[2] == "a10");
  CHECK(closest_names("h100_sxm", devices) == std::vector<std::string>{"h100_sxm5"});
  CHECK(closest_names("tpu_v3", devices) == std::vector<std::string>{"tpu_v2"});  // one substitution
  CHECK(closest_names("quantum_chip", devices).empty());
  CHECK(did_you_mean("TPU_V2x", devices) == "did you mean tpu_v2?");  // case-insensitive, one deletion
  CHECK(did_you_mean("zzz", devices).empty());
}

TEST_CASE("core fields: a TPU-style report maps mxu/hbm/ici; FLOPs give achieved and MFU", "[first_contact]") {
  StepReport r;
  r.step_time_s = 0.5;
  r.utilization[Resource::mxu] = 0.6;
  r.utilization[Resource::hbm] = 0.3;
  r.utilization[Resource::ici] = 0.1;
  r.extra["flops_per_step"] = 2.0e12;      // 2 TFLOP per core per step
  r.extra["peak_flops_per_s"] = 8.0e12;    // 8 TFLOP/s peak
  r.extra["hbm_bytes_per_step"] = 5.0e9;
  nlohmann::json j = r.to_json();
  CHECK(j["flops_per_step"].get<double>() == Approx(2e12));
  CHECK(j["achieved_flops_per_s"].get<double>() == Approx(4e12));  // 2e12 / 0.5 s
  CHECK(j["mfu"].get<double>() == Approx(0.5));                    // 4e12 / 8e12
  CHECK(j["hbm_bytes_per_step"].get<double>() == Approx(5e9));
  CHECK(j["utilization"]["compute"].get<double>() == Approx(0.6));
  CHECK(j["utilization"]["memory"].get<double>() == Approx(0.3));
  CHECK(j["utilization"]["network"].get<double>() == Approx(0.1));
  CHECK(j["utilization"]["mxu"].get<double>() == Approx(0.6));  // the engine's own name stays
  CHECK(j["power_w"].is_null());                                 // not modelled: null, not 0
}

TEST_CASE("core fields: the analytical names; an engine's own achieved figure wins; no peak, no MFU",
          "[first_contact]") {
  StepReport r;
  r.step_time_s = 2.0;
  r.power_w = 300;
  r.energy_per_step_j = 600;
  r.utilization[Resource::compute] = 0.8;
  r.utilization[Resource::memory] = 0.4;
  r.extra["flops_per_step"] = 1.0e12;
  r.extra["achieved_flops_per_s"] = 4.5e11;  // executed FLOPs (fast algorithms skip some)
  r.extra["bytes_per_step"] = 7.0e8;
  nlohmann::json j = r.to_record();
  CHECK(j["achieved_flops_per_s"].get<double>() == Approx(4.5e11));
  CHECK(j["mfu"].is_null());
  CHECK(j["hbm_bytes_per_step"].get<double>() == Approx(7e8));
  CHECK(j["bytes_per_step"].get<double>() == Approx(7e8));  // the old name stays
  CHECK(j["utilization"]["network"].is_null());            // one device: no links modelled
  CHECK(j["power_w"].get<double>() == Approx(300));
}

TEST_CASE("tables: decimals past 6 significant digits are rounded for reading; CSV stays exact", "[first_contact]") {
  Table t{{"name", "value", "count"}};
  t.add({"a", "0.02943960000000015", "25557032"});
  t.add({"b", "1.5", "2026-11-26"});
  std::ostringstream table, csv;
  t.print(table, OutputFormat::table);
  t.print(csv, OutputFormat::csv);
  CHECK(table.str().find("0.0294396") != std::string::npos);
  CHECK(table.str().find("0.02943960000000015") == std::string::npos);
  CHECK(table.str().find("25557032") != std::string::npos);  // integers untouched
  CHECK(table.str().find("2026-11-26") != std::string::npos);
  CHECK(csv.str().find("0.02943960000000015") != std::string::npos);
}
