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
#include <optional>
#include <string>
#include <vector>

#include "common/config_paths.hpp"
#include "common/crc32c.hpp"
#include "common/error.hpp"
#include "costmodel/convergence.hpp"
#include "costmodel/pricing.hpp"
#include "compare/study.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/cpu/checkpoint.hpp"
#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "models/onnx/onnx_import.hpp"
#include "models/zoo.hpp"
#include "predict/predict.hpp"
#include "sim/tpu/scalesim.hpp"
#include "sim/tpu/tpu_spec.hpp"
#include "sweep/results.hpp"
#include "sweep/sweep_spec.hpp"
#include "validation/calibration_overlay.hpp"
#include "validation/graph_cache.hpp"
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

#if XPUSIM_FUZZ_TARGET == 16
namespace xpusim {
// The sweep row reader is fuzzed without engines: nothing here evaluates a point.
void check_request(const PredictRequest& r) { check_request_specs(r); }
StepReport predict(const PredictRequest&) { throw UnavailableError("no engines in the fuzz build"); }
Engine& cached_engine(const std::string&) { throw UnavailableError("no engines in the fuzz build"); }
ResolvedPlacement resolve_placement(const Placement&, const Engine&, const std::string&, bool) {
  throw UnavailableError("no engines in the fuzz build");
}
namespace validation {
PredictFn graph_caching_predictor() { return [](const PredictRequest& r) { return predict(r); }; }
}  // namespace validation
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

#if XPUSIM_FUZZ_TARGET == 16
// The sweep whose rows are read: written once by LLVMFuzzerInitialize.
std::string g_rows_sweep;
#endif

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
#elif XPUSIM_FUZZ_TARGET == 15  // training checkpoint: DIR/checkpoint.xpck
  // Inputs whose first byte is even get their CRC-32C line recomputed (as a forger would), so
  // that mutations reach the range checks behind the checksum instead of stopping at it.
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && (data[0] & 1) == 0) {
    const size_t end = bytes.find("\nend\n"), crc_at = bytes.find("crc32c ");
    if (end != std::string::npos && crc_at != std::string::npos && crc_at < end) {
      const std::string covered = bytes.substr(0, crc_at), payload = bytes.substr(end + 5);
      uint32_t crc = crc32c(0, covered.data(), covered.size());
      crc = crc32c(crc, payload.data(), payload.size());
      bytes = covered + "crc32c " + crc32c_hex(crc) + "\nend\n" + payload;
    }
  }
  static const std::string dir = [] {
    std::string d = scratch_path(".ckpt");
    std::filesystem::create_directories(d);
    return d;
  }();
  write_input_to(cpu::checkpoint_path(dir), reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  std::optional<cpu::TrainCheckpoint> ck = cpu::read_checkpoint(dir);
  if (!ck) nonsense("a checkpoint file read as absent");
  if (static_cast<int>(ck->epochs.size()) != ck->epoch) nonsense("records that are not the epochs");
  for (size_t i = 0; i < ck->epochs.size(); ++i) {
    const auto& e = ck->epochs[i];
    if (e.epoch != static_cast<int>(i) + 1) nonsense("records out of order");
    if (!(e.test_accuracy >= 0 && e.test_accuracy <= 1)) nonsense("an accuracy outside [0, 1]");
    if (!(std::isfinite(e.train_loss) && e.train_loss >= 0 && std::isfinite(e.seconds) && e.seconds >= 0))
      nonsense("a loss or time that is negative or not finite");
  }
  if (static_cast<int64_t>(ck->order.size()) != ck->train_images) nonsense("a data order of another size");
  std::vector<char> seen(ck->order.size(), 0);
  for (int64_t v : ck->order) {
    if (v < 0 || v >= static_cast<int64_t>(seen.size()) || seen[static_cast<size_t>(v)]) nonsense("an index out of range");
    seen[static_cast<size_t>(v)] = 1;
  }
  for (const auto& t : ck->tensors)
    for (float v : t.values)
      if (!std::isfinite(v)) nonsense("a weight that is not finite");
  if (!(ck->lr > 0 && std::isfinite(ck->lr)) || ck->batch < 1) nonsense("a learning rate or batch out of range");
#elif XPUSIM_FUZZ_TARGET == 16  // sweep row file (what --resume and the summary read back)
  // The first byte picks the format; the rest is the file, read line by line as read_rows does.
  static const sweep::SweepSpec spec = sweep::load_sweep(g_rows_sweep);
  const sweep::RowFormat f = size > 0 && (data[0] & 1) ? sweep::RowFormat::jsonl : sweep::RowFormat::csv;
  const std::string text = size > 0 ? std::string(reinterpret_cast<const char*>(data) + 1, size - 1) : std::string();
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (f == sweep::RowFormat::csv && line_no == 1) continue;  // the header
    sweep::PointResult r = sweep::parse_row(spec, line, f, "rows:" + std::to_string(line_no));
    if (r.status != "ok" && r.status != "infeasible" && r.status != "error") nonsense("a status outside ok|infeasible|error");
    if (r.point < 0) nonsense("a negative point index");
    if (r.request.size() != spec.columns.size()) nonsense("a row with another number of request fields");
    for (const auto& [k, v] : r.values)
      if (!std::isfinite(v) || v < 0) nonsense("a result value that is negative or not finite");
  }
#else
#error "XPUSIM_FUZZ_TARGET must be 1..16"
#endif
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  using namespace xpusim;
#if XPUSIM_FUZZ_TARGET == 16
  g_rows_sweep = scratch_path("_rows_sweep.yaml");
  std::ofstream(g_rows_sweep) << "fixed: {device: v100_sxm2_16gb, model: mnist_mlp, precision: fp32}\n"
                                 "axes:\n  batch: [16, 32, 64, 128]\n";
#endif
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
