// libFuzzer targets for every input loader (issue 16): each input must end in a clean
// UserError / UnavailableError or a valid result; any other exception, crash, sanitizer
// report or hang is a finding. One source, one executable per loader: XPUSIM_FUZZ_TARGET
// names which loader this build feeds (see tests/fuzz/CMakeLists.txt).
//   YAML loaders get the input as a file (the real path through load_config_yaml, cache
//   included); CSV parsers get it as text or as a file, as the CLI does.
//   What is not the input (the catalogues of configs/ a study checks names against) is read
//   once in LLVMFuzzerInitialize and stays cached: each execution parses and validates its
//   input only, which is what the fuzzer is for (study_yaml: ~4x more executions per second).
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/pricing.hpp"
#include "compare/study.hpp"
#include "devices/analytical/device_spec.hpp"
#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "models/onnx/onnx_import.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"
#include "sim/tpu/scalesim.hpp"
#include "sim/tpu/tpu_spec.hpp"
#include "sweep/sweep_spec.hpp"
#include "validation/calibration_overlay.hpp"
#include "validation/reference_csv.hpp"

#if XPUSIM_FUZZ_TARGET == 9
namespace xpusim {
// The fuzz build has no engines (they would make each target a full simulator build). A sweep
// point is checked as far as a request is checked without one (predict/request_checks.cpp:
// fields, precision, model, the device's engine); the engines' own placement checks are not
// fuzzed here.
void check_request(const PredictRequest& r) { check_request_specs(r); }
}  // namespace xpusim
#endif

namespace {

// The input's file lives in memory (/dev/shm) where there is one: on ext4, rewriting a file
// with O_TRUNC makes close() start writeback (auto_da_alloc), and waiting for it was over 90%
// of the wall time (topology_csv: 245 exec/s on /tmp, ~3,000 on /dev/shm, same machine).
std::string scratch_path(const char* ext) {
  static const std::string dir = [] {
    std::error_code ec;
    if (std::filesystem::is_directory("/dev/shm", ec) && access("/dev/shm", W_OK) == 0) return std::string("/dev/shm");
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp");
  }();
  return dir + "/xpusim_fuzz_" + std::to_string(getpid()) + ext;
}

std::string write_input_to(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
  // Never serve the previous input from the cache (a rewrite can keep size and mtime); the
  // configs/ files the input refers to stay cached.
  xpusim::forget_config_file(path);
  return path;
}

std::string write_input(const uint8_t* data, size_t size, const char* ext) {
  return write_input_to(scratch_path(ext), data, size);
}

// Catalogue loaders read every *.yaml of a folder: the input is the only file of its own one.
std::string write_input_folder(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    std::string d = scratch_path(".d");
    std::filesystem::create_directories(d);
    return d;
  }();
  write_input_to(dir + "/input.yaml", data, size);
  return dir;
}

// A "valid result" that is not one: the loader accepted values it documents as impossible.
[[noreturn]] void nonsense(const char* what) {
  std::fprintf(stderr, "fuzz: loader accepted nonsense: %s\n", what);
  std::abort();
}

#if XPUSIM_FUZZ_TARGET == 4
// Device names a study may use: configs/devices/ and every system's list (known_devices reads
// every system file, so once per process, not once per input).
const std::vector<std::string>* g_devices = nullptr;
#endif

void run(const uint8_t* data, size_t size) {
  using namespace xpusim;
#if XPUSIM_FUZZ_TARGET == 1  // model YAML: load, then build the graph at batch 1 and 2
  ModelSpec s = load_model_spec(write_input(data, size, ".yaml"));
  GraphOptions o;
  o.batch = 2;
  build_graph(s, o);
#elif XPUSIM_FUZZ_TARGET == 2  // device YAML: analytical devices and TPU devices
  std::string path = write_input(data, size, ".yaml");
  try {
    analytical::load_device_spec(path);
  } catch (const UserError&) {
  }
  tpu::load_tpu_spec(path);
#elif XPUSIM_FUZZ_TARGET == 3  // system YAML
  load_system_spec(write_input(data, size, ".yaml"));
#elif XPUSIM_FUZZ_TARGET == 4  // study YAML
  cost::load_study(write_input(data, size, ".yaml"), &cost::default_price_catalog(), g_devices);
#elif XPUSIM_FUZZ_TARGET == 5  // reference CSV
  validation::parse_reference_csv(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
#elif XPUSIM_FUZZ_TARGET == 7  // ONNX file: decode, check, lower at batch 2 and build the training step
  ModelSpec s = load_onnx_model(write_input(data, size, ".onnx"));
  GraphOptions o;
  o.batch = 2;
  build_graph(s, o);
#elif XPUSIM_FUZZ_TARGET == 6  // SCALE-Sim topology CSV, then cycles on a 128x128 array
  for (const auto& l : tpu::read_topology_csv(write_input(data, size, ".csv")))
    tpu::scalesim_layer(l, 128, 128, tpu::Dataflow::ws);
#elif XPUSIM_FUZZ_TARGET == 8  // framework profile YAML
  load_framework_spec(write_input(data, size, ".yaml"));
#elif XPUSIM_FUZZ_TARGET == 9  // sweep YAML: load and validate every axis, then the first point's request
  sweep::SweepSpec s = sweep::load_sweep(write_input(data, size, ".yaml"));
  if (s.grid_size() < 1) nonsense("a sweep with no points");
  sweep::request_for(s, std::vector<size_t>(s.axes.size(), 0));
#elif XPUSIM_FUZZ_TARGET == 10  // price catalogue YAML (a folder holding the input)
  cost::PriceCatalog cat = cost::load_price_catalog(write_input_folder(data, size));
  for (const auto& [id, offer] : cat.offers)
    for (cost::PricingTier t : {cost::PricingTier::on_demand, cost::PricingTier::preemptible, cost::PricingTier::reserved_1y,
                                cost::PricingTier::reserved_3y, cost::PricingTier::capacity_block, cost::PricingTier::owned})
      if (cat.has_price(id, t)) {
        const double usd = cat.usd_per_h(id, t);
        if (!(usd >= 0 && std::isfinite(usd))) nonsense("a price that is negative or not finite");
      }
#elif XPUSIM_FUZZ_TARGET == 11  // convergence catalogue YAML (a folder holding the input)
  cost::ConvergenceCatalog cat = cost::load_convergence_catalog(write_input_folder(data, size));
  for (const auto& c : cat.curves)
    for (const auto& p : c.points)
      if (!(p.accuracy >= 0 && p.accuracy <= 1 && std::isfinite(p.epoch))) nonsense("a curve point out of range");
#elif XPUSIM_FUZZ_TARGET == 12  // calibration overlay YAML
  validation::load_calibration_overlay(write_input(data, size, ".yaml"));
#elif XPUSIM_FUZZ_TARGET == 13  // training log TSV
  std::vector<cost::AccuracyPoint> pts = cost::read_train_log(write_input(data, size, ".tsv"));
  for (size_t i = 0; i < pts.size(); ++i) {
    if (!(std::isfinite(pts[i].epoch) && pts[i].epoch >= 0)) nonsense("an epoch that is negative or not finite");
    if (!(pts[i].accuracy >= 0 && pts[i].accuracy <= 1)) nonsense("an accuracy outside [0, 1]");
    if (i > 0 && !(pts[i].epoch > pts[i - 1].epoch)) nonsense("epochs that do not increase");
  }
#elif XPUSIM_FUZZ_TARGET == 14  // datasets YAML (configs/datasets.yaml's format)
  for (const auto& [name, d] : load_datasets_file(write_input(data, size, ".yaml")))
    if (d.train_examples <= 0 || d.test_examples < 0 || d.stored_bytes_per_example < 0 || !(d.host_preprocess_ms >= 0))
      nonsense("a dataset size or cost out of range");
#else
#error "XPUSIM_FUZZ_TARGET must be 1..14"
#endif
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace xpusim;
#if XPUSIM_FUZZ_TARGET == 4
  static const std::vector<std::string> devices = cost::known_devices();
  g_devices = &devices;
  cost::default_price_catalog();  // loaded on first use; here, so that no input pays for it
  cost::default_convergence_catalog();
#endif
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    run(data, size);
  } catch (const xpusim::UserError&) {
    // a clean error naming the input: the expected outcome for bad input
  } catch (const xpusim::UnavailableError&) {
  }
  // Anything else (InternalError, std::exception from a library) propagates and aborts:
  // libFuzzer reports it with the input that caused it.
  return 0;
}
