// The one narrow interface every engine implements: real backends (cpu, cuda) execute a
// training step and time it; simulated ones (tpu_systemc, analytical) predict it. All return
// the same StepReport, whose field names are the stable JSON names.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/graph.hpp"

namespace xpusim {

enum class DataSource { synthetic, real };
bool parse_data_source(const std::string& s, DataSource& out);
const char* data_source_name(DataSource d);

// Where the step runs. `device` is a name under configs/devices/ or a YAML path.
struct Placement {
  std::string device;
  int count = 1;                         // GPUs, TPU cores or vCPUs (the CSV's num_devices)
  std::string system;                    // configs/systems/ name; empty = the device's default
  std::string build;                     // CPUs: "pip" or "compiled"; empty = default
  std::vector<std::string> overrides;    // --set KEY=VALUE on the device YAML
};

struct StepRequest {
  const OpGraph* graph = nullptr;        // a lowered training step at the per-device batch
  std::string model;                     // zoo name, for reports
  Placement placement;
  DataSource data = DataSource::synthetic;
  int steps = 10;                        // real backends: timed steps
  int warmup = 2;                        // real backends: untimed steps
  uint64_t seed = 1;
  int threads = 0;                       // 0 = all cores
  std::string trace_path;                // write a Chrome trace-event JSON of one step
  bool progress = false;                 // print a progress bar on stderr
};

struct StepReport {
  std::string engine;
  std::string device;
  std::string system;
  std::string model;
  std::string precision;
  std::string data;
  int count = 1;
  int64_t batch_per_device = 0;
  int64_t global_batch = 0;
  double step_time_s = 0;
  double throughput_samples_per_s = 0;
  int64_t memory_bytes = 0;              // per device
  int64_t memory_capacity_bytes = 0;     // per device
  bool fits_in_memory = true;
  std::string bottleneck;                // unit that bounded the step: mxu, hbm, vector, ici, infeed, compute, memory, ...
  std::map<std::string, double> utilization;   // unit -> fraction of the step busy
  std::map<std::string, double> per_op_s;      // op kind -> seconds per step
  nlohmann::json extra = nlohmann::json::object();  // engine-specific named statistics

  nlohmann::json to_json() const;
};

struct Availability {
  bool compiled = false;
  bool available = false;
  std::string reason;  // why not, when unavailable
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual Availability availability() const = 0;
  // Data-parallel replicas the training graph must be lowered for (GPUs and TPU cores are
  // replicas; the vCPUs of one CPU machine are not).
  virtual int replicas(const Placement& p) const { return p.count; }
  // Resolves the placement (device spec with its overrides, system, count) and throws what
  // run_step would for it (FieldError naming `set`, `system`, `count`) without running
  // anything: lets a sweep reject a bad axis value before its first point. Engines without a
  // device spec accept every placement here.
  virtual void check_placement(const Placement& p) const { (void)p; }
  // Throws UserError for bad requests, UnavailableError when the engine cannot run here.
  virtual StepReport run_step(const StepRequest& req) = 0;
};

// Engine registry: one line per engine in predict/engine_registry.cpp.
using EngineFactory = std::function<std::unique_ptr<Engine>()>;
struct EngineEntry {
  std::string name;
  EngineFactory make;
};
const std::vector<EngineEntry>& engine_registry();
std::unique_ptr<Engine> make_engine(const std::string& name);  // UserError on unknown names

}  // namespace xpusim
