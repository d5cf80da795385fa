// The detected host CPU (devices/analytical/host_detect.hpp): which vector width sets the fp32
// peak, what a report says about the machine, that a stated figure wins over a detected one,
// and the host model against CPU-backend rows measured on an AMD Zen 4 (held out).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "devices/analytical/host_detect.hpp"
#include "predict/predict.hpp"
#include "tests/unit/predict_request.hpp"
#include "validation/measure.hpp"
#include "validation/reference_csv.hpp"
#include "validation/validate.hpp"
#include "xpusim_test_paths.hpp"

using namespace xpusim;
using namespace xpusim::analytical;

namespace {
// Two logical CPUs as /proc/cpuinfo prints them in a KVM guest.
std::string cpuinfo(const std::string& vendor, int family, int model, const std::string& name, const std::string& flags) {
  std::string t;
  for (int p = 0; p < 2; ++p)
    t += "processor\t: " + std::to_string(p) + "\nvendor_id\t: " + vendor + "\ncpu family\t: " + std::to_string(family) +
         "\nmodel\t\t: " + std::to_string(model) + "\nmodel name\t: " + name + "\nphysical id\t: 0\ncore id\t\t: " +
         std::to_string(p) + "\ncpu MHz\t\t: 2596.142\nflags\t\t: fpu sse sse2 " + flags + "\n\n";
  return t;
}
const std::string kAvx2 = "avx avx2 fma";
const std::string kAvx512 = "avx avx2 fma avx512f avx512dq avx512bw avx512vl avx512_bf16";

// The Zen 4 VM the measured files ran on, as `host` would detect it, with `lanes` counted per
// FMA pipe (8: its 256-bit units; 16: AVX-512 taken at its width).
std::vector<std::string> zen4_vm(int lanes) {
  return {"detect=false",       "frequency_ghz=2.596", "vcpus_per_core=1",
          "vcpus_per_socket=2", "max_vcpus=2",         "memory_gb=24",
          "compiled_simd_fp32_lanes=" + std::to_string(lanes), "compiled_fma_units=2", "llc_mb=33.554432"};
}

double peak_flops(const std::vector<std::string>& overrides) {
  PredictRequest r = fixtures::predict_request("host", 1, "mnist_mlp", 128, "fp32");
  r.placement.overrides = overrides;
  return predict(r).extra.at("peak_flops_per_s").get<double>();
}
}  // namespace

TEST_CASE("the fp32 peak follows the width of the FMA units, not of the ISA", "[analytical][host]") {
  const HostCpuInfo zen4 = parse_cpuinfo(cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC", kAvx512));
  CHECK(zen4.vendor == "AuthenticAMD");
  CHECK(zen4.family == 25);
  CHECK(zen4.model == 17);
  CHECK(zen4.model_name == "AMD EPYC");
  CHECK(zen4.avx512f);
  // Zen 4 executes a 512-bit FMA as two halves on 256-bit pipes.
  CHECK(simd_datapath_bits(zen4) == 256);
  // Zen 3 (family 25 without AVX-512), Zen 5 (family 26), Intel with AVX-512, SSE only.
  CHECK(simd_datapath_bits(parse_cpuinfo(cpuinfo("AuthenticAMD", 25, 1, "AMD EPYC 7B13", kAvx2))) == 256);
  CHECK(simd_datapath_bits(parse_cpuinfo(cpuinfo("AuthenticAMD", 26, 2, "AMD EPYC 9B45", kAvx512))) == 512);
  CHECK(simd_datapath_bits(parse_cpuinfo(cpuinfo("GenuineIntel", 6, 85, "Intel Xeon", kAvx512))) == 512);
  CHECK(simd_datapath_bits(parse_cpuinfo(cpuinfo("GenuineIntel", 6, 15, "old", ""))) == 128);

  CHECK(describe_host_cpu(zen4) ==
        "AuthenticAMD family 25 model 17 (AMD EPYC), 2 logical CPUs, 2 cores, 1 socket, 2.596 GHz, "
        "AVX-512+FMA on 256-bit units");
  // Text without the x86 fields still describes something.
  CHECK(describe_host_cpu(parse_cpuinfo("processor : 0\n")) == "unknown vendor, 1 logical CPUs, 1 core, 1 socket, SSE on 128-bit units");
}

TEST_CASE("a figure the device file or --set states wins over the detected one", "[analytical][host]") {
  // Whatever this machine is, lanes x FMA pipes x clock x vCPUs sets the GEMM peak: doubling
  // the stated lanes doubles it, and a stated clock replaces the detected one.
  const std::vector<std::string> base{"compiled_simd_fp32_lanes=8", "compiled_fma_units=2", "frequency_ghz=2"};
  const double p8 = peak_flops(base);
  CHECK(peak_flops({"compiled_simd_fp32_lanes=16", "compiled_fma_units=2", "frequency_ghz=2"}) == Approx(2 * p8));
  CHECK(peak_flops({"compiled_simd_fp32_lanes=8", "compiled_fma_units=1", "frequency_ghz=2"}) == Approx(p8 / 2));
  CHECK(peak_flops({"compiled_simd_fp32_lanes=8", "compiled_fma_units=2", "frequency_ghz=4"}) == Approx(2 * p8));
  // The report names the CPU the host device was detected as.
  PredictRequest r = fixtures::predict_request("host", 1, "mnist_mlp", 128, "fp32");
  const StepReport rep = predict(r);
  REQUIRE(rep.extra.contains("host_cpu"));
  CHECK(rep.extra.at("host_cpu").get<std::string>() == describe_host_cpu(detect_host_cpu()));
}

TEST_CASE("host model vs CPU-backend rows measured on an AMD Zen 4 (held out)", "[analytical][reference][host]") {
  // validation/measured/cpu-host-zen4-t1-2026-11-27.csv: the 7 cases host.yaml was calibrated
  // on (cpu-host-t1, a 2.445 GHz AVX2 VM), measured on a 2.596 GHz Zen 4 VM with AVX-512. Never
  // fitted on. The VM's detected figures are pinned, so the test gives the same answer anywhere.
  std::vector<validation::ReferenceRow> rows;
  for (const auto& r : validation::read_reference_csv(std::string(XPUSIM_MEASURED_DIR) + "/cpu-host-zen4-t1-2026-11-27.csv"))
    if (r.metric == "train_throughput") rows.push_back(r);
  REQUIRE(rows.size() == 7);
  auto validate_with_lanes = [&](int lanes) {
    validation::ValidateOptions o;
    o.overrides["host"] = zen4_vm(lanes);
    return validation::validate_rows(rows, o);
  };
  // The Zen 4's 256-bit FMA units: the model is low by what the VM does not show (the boost
  // clock over the 2.596 GHz it reports; DDR5), ~22 % when the file was taken.
  const auto zen4 = validate_with_lanes(8);
  REQUIRE(zen4.rows_used == 7);
  for (const auto& r : zen4.rows) {
    INFO(r.row.model << ": " << r.error_pct.value_or(1e9) << "%");
    CHECK(r.error_pct.value_or(1e9) < 0.0);
    CHECK(r.error_pct.value_or(1e9) > -45.0);
  }
  REQUIRE(zen4.mape_pct.has_value());
  CHECK(*zen4.mape_pct <= 28.0);
  // Counting AVX-512 as 16 lanes on both FMA pipes (what detection did before) over-predicts
  // every row, by ~50 % on average.
  const auto wide = validate_with_lanes(16);
  for (const auto& r : wide.rows) CHECK(r.error_pct.value_or(-1e9) > 0.0);
  REQUIRE(wide.mape_pct.has_value());
  CHECK(*wide.mape_pct > 2 * *zen4.mape_pct);

  // The same cases at 2 threads (cpu-host-zen4-t2-2026-11-27.csv): ~21 % when taken, with the
  // thread scaling the model misses on the LSTM: measured 1.28x over one thread, modelled 1.90x
  // (its timestep GEMMs are too small to split), so it is the one row predicted high.
  std::vector<validation::ReferenceRow> rows2;
  for (const auto& r : validation::read_reference_csv(std::string(XPUSIM_MEASURED_DIR) + "/cpu-host-zen4-t2-2026-11-27.csv"))
    if (r.metric == "train_throughput") rows2.push_back(r);
  REQUIRE(rows2.size() == 7);
  validation::ValidateOptions o2;
  o2.overrides["host"] = zen4_vm(8);
  const auto two = validation::validate_rows(rows2, o2);
  REQUIRE(two.rows_used == 7);
  REQUIRE(two.mape_pct.has_value());
  CHECK(*two.mape_pct <= 26.0);
  for (const auto& r : two.rows) {
    INFO(r.row.model << ": " << r.error_pct.value_or(1e9) << "%");
    CHECK(std::abs(r.error_pct.value_or(1e9)) < 45.0);
    if (r.row.model == "lstm_textgen") CHECK(r.error_pct.value_or(-1e9) > 0.0);
  }
}

TEST_CASE("a measured row says which CPU it ran on, and rows of another CPU are counted", "[analytical][host]") {
  validation::ReferenceRow a;
  a.device = "host";
  a.note = "steps=7 inputs=ab12 measured_on=cpu cpu=AuthenticAMD family 25 model 17 (AMD EPYC), 2 logical CPUs, "
           "2.596 GHz backend=real training steps";
  CHECK(validation::row_measured_cpu(a) == "AuthenticAMD family 25 model 17 (AMD EPYC), 2 logical CPUs, 2.596 GHz");
  validation::ReferenceRow last = a;  // the description ends the note
  last.note = "measured_on=cpu cpu=GenuineIntel family 6 model 85";
  CHECK(validation::row_measured_cpu(last) == "GenuineIntel family 6 model 85");
  validation::ReferenceRow none = a;
  none.note = "steps=7 threads=1";
  CHECK(validation::row_measured_cpu(none).empty());

  const std::string here = "AuthenticAMD family 25 model 17 (AMD EPYC), 2 logical CPUs, 2.596 GHz";
  CHECK(validation::host_cpu_mismatch({a, none}, here).rows == 0);
  const auto other = validation::host_cpu_mismatch({a, last, none, last}, here);
  CHECK(other.rows == 2);
  CHECK(other.cpu == "GenuineIntel family 6 model 85");
  // Rows on other devices are not the host's business.
  validation::ReferenceRow gpu = last;
  gpu.device = "v100_sxm2_16gb";
  CHECK(validation::host_cpu_mismatch({gpu}, here).rows == 0);
}
