// TPU generations as configuration (issue 32): every generation's stated peak and ICI bandwidth
// against the figures its YAML cites (Cloud TPU docs; Jouppi et al.), the MXU x clock check that
// refuses a contradicting file naming the lines, and the provenance marks.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "sim/tpu/tpu_spec.hpp"

using namespace xpusim;
using namespace xpusim::tpu;

namespace {

std::string device_path(const std::string& name) { return config_dir() + "/devices/" + name + ".yaml"; }

TpuSpec gen(const std::string& name) { return load_tpu_spec(device_path(name)); }

// 1-based line of `key:` at the start of a line of `text`.
int line_of(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string l;
  for (int n = 1; std::getline(in, l); ++n)
    if (l.rfind(key + ":", 0) == 0) return n;
  return -1;
}

std::string read(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string write_temp(const std::string& stem, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / ("xpusim_gen_" + stem + ".yaml");
  std::ofstream(p) << text;
  return p.string();
}

std::string replace_line(std::string text, const std::string& key, const std::string& value) {
  const int n = line_of(text, key);
  REQUIRE(n > 0);
  std::istringstream in(text);
  std::string l, out;
  for (int i = 1; std::getline(in, l); ++i) out += (i == n ? key + ": " + value : l) + "\n";
  return out;
}

}  // namespace

TEST_CASE("each TPU generation's peak matches its cited figure and its MXUs x clock", "[tpu][generations]") {
  // name, cited bf16 TFLOPS per chip, TensorCores per chip, MXUs per core, MXU side
  struct Row { const char* name; double peak; int cores, mxus, side; };
  const Row rows[] = {
      {"tpu_v2", 46, 2, 1, 128},   // Jouppi et al. CACM 2020
      {"tpu_v3", 123, 2, 2, 128},  // Cloud TPU docs "TPU v3"
      {"tpu_v4", 275, 2, 4, 128},  // Cloud TPU docs "TPU v4"
      {"tpu_v5e", 197, 1, 4, 128}, // Cloud TPU docs "TPU v5e"
      {"tpu_v5p", 459, 2, 4, 128}, // Cloud TPU docs "TPU v5p"
      {"tpu_v6e", 918, 1, 2, 256}, // Cloud TPU docs "TPU v6e": two 256x256 MXUs
  };
  for (const auto& r : rows) {
    INFO(r.name);
    const TpuSpec s = gen(r.name);
    CHECK(s.peak_bf16_tflops_per_chip == r.peak);
    CHECK(s.cores_per_chip == r.cores);
    CHECK(s.mxu_count == r.mxus);
    CHECK(s.mxu_rows == r.side);
    CHECK(s.mxu_cols == r.side);
    CHECK(s.mxu_peak_flops_per_chip() / 1e12 == Approx(r.peak).epsilon(kPeakTolerance));
    CHECK_FALSE(s.source.empty());
    CHECK(s.power.stated());
  }
  // int8 and fp8 where published: v4 int8 = bf16 (docs: "275 teraflops (bf16 or int8)"); v5e/v6e twice.
  CHECK(gen("tpu_v4").peak_int8_tops_per_chip == 275);
  CHECK(gen("tpu_v5e").peak_int8_tops_per_chip == 393);
  CHECK(gen("tpu_v6e").peak_int8_tops_per_chip == 1836);
  CHECK(gen("tpu_v5p").peak_fp8_tflops_per_chip == 459);
  CHECK(gen("tpu_v6e").peak_fp8_tflops_per_chip == 0);
  CHECK(gen("tpu_v4").cmem_bytes_per_chip == 128ll << 20);  // Jouppi et al. ISCA 2023
}

TEST_CASE("each TPU generation's ICI bandwidth matches the cited per-chip and per-pod figures", "[tpu][generations]") {
  // Cloud TPU docs, bidirectional ICI bandwidth per chip: v5e 400 GB/s, v5p 1200 GB/s, v6e 800 GB/s.
  CHECK(gen("tpu_v5e").ici_bidirectional_bytes_per_s_per_chip() == Approx(400e9));
  CHECK(gen("tpu_v5p").ici_bidirectional_bytes_per_s_per_chip() == Approx(1200e9));
  CHECK(gen("tpu_v6e").ici_bidirectional_bytes_per_s_per_chip() == Approx(800e9));
  // Jouppi et al. CACM 2020: 496 Gbit/s and 656 Gbit/s per link (62 and 82 GB/s), 4 links.
  CHECK(gen("tpu_v2").ici_link_bandwidth_gbps == 62);
  CHECK(gen("tpu_v3").ici_link_bandwidth_gbps == 82);
  // Docs "all-reduce bandwidth per pod" = pod chips x links x per-link bandwidth (one direction):
  // v3 340 TB/s (1024 chips), v4 1.1 PB/s (4096), v5e 51.2 TB/s (256), v6e 102.4 TB/s (256).
  struct Pod { const char* name; double chips, tbps, tol; };
  const Pod pods[] = {{"tpu_v3", 1024, 340, 0.02}, {"tpu_v4", 4096, 1100, 0.01},
                      {"tpu_v5e", 256, 51.2, 1e-9}, {"tpu_v6e", 256, 102.4, 1e-9}};
  for (const auto& p : pods) {
    INFO(p.name);
    const TpuSpec s = gen(p.name);
    CHECK(p.chips * s.ici_links_per_chip * s.ici_link_bandwidth_gbps / 1e3 == Approx(p.tbps).epsilon(p.tol));
  }
  CHECK(gen("tpu_v4").ici_dims == 3);
  CHECK(gen("tpu_v5p").ici_dims == 3);
  CHECK(gen("tpu_v5e").ici_dims == 2);
  CHECK(gen("tpu_v6e").ici_dims == 2);
  // Docs: v5e per-host NIC 2 x 100 Gbps; v5p 50 Gbps DCN per chip x 4 chips per host.
  CHECK(gen("tpu_v5e").host_nic_gbps == 200);
  CHECK(gen("tpu_v5p").host_nic_gbps == 200);
}

TEST_CASE("derived, secondary and estimated figures are marked in the YAML", "[tpu][generations]") {
  auto has = [](const std::vector<std::string>& v, const std::string& k) {
    return std::find(v.begin(), v.end(), k) != v.end();
  };
  // No clock is published for v5e, v5p or v6e: it is derived from the peak and the MXUs.
  for (const char* n : {"tpu_v4", "tpu_v5e", "tpu_v5p", "tpu_v6e"}) {
    INFO(n);
    CHECK(has(gen(n).derived_fields, "clock_mhz"));
    CHECK_FALSE(gen(n).estimated_fields.empty());
  }
  CHECK(has(gen("tpu_v5p").secondary_fields, "peak_int8_tops_per_chip"));
  CHECK(has(gen("tpu_v6e").estimated_fields, "host_nic_gbps"));
  // A mark must name a field of the file.
  const std::string text = read(device_path("tpu_v6e"));  // no secondary: list of its own
  const std::string p = write_temp("bad_mark", text + "secondary: [clock_mhz, no_such_field]\n");
  CHECK_THROWS_WITH(load_tpu_spec(p), Catch::Contains("secondary: 'no_such_field' is not a field of this file"));
}

TEST_CASE("a TPU config whose peak contradicts its MXUs and clock is refused naming the lines", "[tpu][generations]") {
  const std::string text = replace_line(read(device_path("tpu_v5e")), "clock_mhz", "1000");
  const std::string p = write_temp("contradict", text);
  const std::string want = p + ":" + std::to_string(line_of(text, "peak_bf16_tflops_per_chip")) +
                           ": peak_bf16_tflops_per_chip: 197 TFLOPS contradicts mxu_count (line " +
                           std::to_string(line_of(text, "mxu_count")) + ")";
  CHECK_THROWS_WITH(load_tpu_spec(p), Catch::StartsWith(want) &&
                                          Catch::Contains("clock_mhz (line " + std::to_string(line_of(text, "clock_mhz")) + ")") &&
                                          Catch::Contains("= 131.072 TFLOPS"));
  CHECK_THROWS_AS(load_tpu_spec(p), UserError);
  // Within the 1% rounding tolerance the file loads (v5e's derived 1500 MHz gives 196.6 TFLOPS).
  CHECK_NOTHROW(load_tpu_spec(write_temp("tolerance", replace_line(read(device_path("tpu_v5e")), "clock_mhz", "1490"))));
  // A --set describes a hypothetical chip; the stated peak stays the real one's (sweeps vary the clock).
  CHECK(load_tpu_spec(device_path("tpu_v2"), {"clock_mhz=1400"}).clock_mhz == 1400);
  // A slice shape of the wrong dimensionality is an error on its line.
  const std::string t2 = replace_line(read(device_path("tpu_v5p")), "slice_shapes", "[\"4x4\"]");
  const std::string p2 = write_temp("shape_dims", t2);
  CHECK_THROWS_WITH(load_tpu_spec(p2), Catch::StartsWith(p2 + ":" + std::to_string(line_of(t2, "slice_shapes")) +
                                                         ": slice_shapes: '4x4' has 2 dimensions, the torus_3d has 3"));
}
