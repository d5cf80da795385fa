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
#include "costmodel/study.hpp"
#include "devices/analytical/device_spec.hpp"
#include "engine/platform_spec.hpp"
#include "models/onnx/onnx_import.hpp"
#include "models/zoo.hpp"
#include "sim/tpu/scalesim.hpp"
#include "sim/tpu/tpu_spec.hpp"
#include "validation/reference_csv.hpp"

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

std::string write_input(const uint8_t* data, size_t size, const char* ext) {
  std::string path = scratch_path(ext);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                 static_cast<std::streamsize>(size));
  // Never serve the previous input from the cache (a rewrite can keep size and mtime); the
  // configs/ files the input refers to stay cached.
  xpusim::forget_config_file(path);
  return path;
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
#else
#error "XPUSIM_FUZZ_TARGET must be 1..7"
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
