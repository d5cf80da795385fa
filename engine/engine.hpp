// The one narrow interface every engine implements: real backends (cpu, cuda) execute a
// training step and time it; simulated ones (tpu_systemc, analytical) predict it. All return
// the same StepReport, whose field names are the stable JSON names.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/placement.hpp"
#include "models/graph.hpp"

namespace xpusim {

enum class DataSource { synthetic, real };
bool parse_data_source(const std::string& s, DataSource& out);
const char* data_source_name(DataSource d);

// The resources a report can name as the step's bottleneck and give a utilisation for. Engines
// model different units (a GPU roofline has compute and memory, the TPU model has its MXU,
// HBM, vector unit and ICI); the names are the stable JSON names.
enum class Resource {
  compute, memory, overhead, communication, infeed, input_pipeline,  // analytical
  mxu, hbm, vector, ici,                                              // tpu_systemc
  gpu,                                                                // cuda (busy share of the step)
  measured,                                                           // a real run: nothing modelled
};
const char* resource_name(Resource u);

// How an engine's device step meets the host that feeds it: which rule the host pass
// (predict/host_pass.hpp) applies to turn the device step into the step.
enum class HostCoupling {
  prefetched,    // the host pipeline and the input copy run ahead of the devices: step = max(device, infeed, pipeline) (analytical GPUs)
  shared_cores,  // the input pipeline runs on the cores that train: step = device + pipeline (analytical CPUs)
  simulated,     // the engine simulates the infeed queue from StepRequest::host_batch_s (tpu_systemc)
  measured,      // a real step, timed: nothing is added (cpu, cuda)
};

// The device side of a step, as an engine returns it (StepReport::device_step). The host pass
// adds the framework's step overheads and input pipeline, and derives the step time, global
// batch, throughput and, for prefetched and shared_cores, the bottleneck and utilisation.
struct DeviceStep {
  HostCoupling coupling = HostCoupling::measured;
  bool ran = true;               // false: not run (the step does not fit in memory): no time
  double device_s = 0;           // the devices' step (simulated, measured: the engine's whole step)
  double device_overhead_s = 0;  // the device's own per-step sync outside its timeline
  double infeed_s = 0;           // the input batch's copy to the device, overlapped with the step
  // Device-side shares of the step for the bottleneck, in tie-break order (prefetched,
  // shared_cores): the pass adds the step overhead to Resource::overhead and appends infeed and
  // input_pipeline.
  std::vector<std::pair<Resource, double>> shares;
  std::map<Resource, double> busy_s;  // busy seconds per unit: utilisation = min(1, busy / step)
  std::optional<double> flops;        // FLOPs per step: achieved_flops_per_s = flops / step
};

struct StepRequest {
  const OpGraph* graph = nullptr;        // a lowered training step (or inference pass, graph->task) at the per-device batch
  std::string model;                     // zoo name, for reports
  ResolvedPlacement placement;           // resolved once by predict(); engines never re-read YAML
  DataSource data = DataSource::synthetic;
  // Real data: seconds the host's input pipeline needs for the samples of one step it feeds
  // (ResolvedPlacement::input_feed), under the framework profile; set by the host pass.
  double host_batch_s = 0;
  // Gradient accumulation: micro-batches of `graph->batch` per device and optimizer step (the
  // global batch / (batch per device x replicas)); engines that model it say so
  // (Engine::models_gradient_accumulation).
  int micro_batches = 1;
  int steps = 10;                        // real backends: timed steps
  int warmup = 2;                        // real backends: untimed steps
  uint64_t seed = 1;
  int threads = 0;                       // 0 = all cores
  std::string trace_path;                // write a Chrome trace-event JSON of one step
  std::string vcd_path;                  // write a VCD waveform of the simulated steps
  bool progress = false;                 // print a progress bar on stderr
};

struct StepReport {
  std::string engine;
  std::string device;
  std::string system;
  std::string framework;                 // the profile, empty for the neutral default
  std::string model;
  std::string precision;
  std::string data;
  Task task = Task::train;               // inference: step_time_s is one forward pass
  int count = 1;
  int64_t batch_per_device = 0;
  int64_t global_batch = 0;
  double step_time_s = 0;
  double throughput_samples_per_s = 0;
  // Token-wise sequence models (ModelSpec::tokens_per_sample > 0): samples/s x tokens per
  // sample, set by predict(); 0 = not reported (and absent from the outputs).
  double throughput_tokens_per_s = 0;
  double compile_time_s = 0;             // one-off graph build / compile before the first step (0 = none modelled)
  int64_t memory_bytes = 0;              // per device
  int64_t memory_capacity_bytes = 0;     // per device
  bool fits_in_memory = true;
  // Modelled average power of the placement over the step (devices at their modelled activity
  // plus their hosts' idle power, docs/power.md) and energy per step = power x step time;
  // 0 = not modelled (real backends, devices that state no power) and absent from the outputs.
  double power_w = 0;
  double energy_per_step_j = 0;
  Resource bottleneck = Resource::compute;       // the unit that bounded the step
  std::map<Resource, double> utilization;  // resource -> fraction of the step busy
  std::map<std::string, double> per_op_s;      // op kind -> seconds per step
  nlohmann::json extra = nlohmann::json::object();  // engine-specific named statistics
  DeviceStep device_step;                // what the engine returns for the host pass; not an output

  // A numeric `extra` statistic (gpu_util_pct_smi, tower_wait_s, ...); nullopt when the engine
  // does not report it.
  std::optional<double> extra_number(const std::string& key) const;

  nlohmann::json to_json() const;
  // The record every front end prints (`predict`/`run` JSON and CSV, the Python module):
  // to_json() with the `extra` statistics lifted to the top level.
  nlohmann::json to_record() const;
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
  // Real backends execute on this machine and take no device YAML (cpu, cuda).
  virtual bool real_backend() const { return false; }
  // Whether run_step simulates a timeline of units it can write as a trace (trace_path) and a
  // waveform (vcd_path). predict() refuses both, naming the field, for engines without one,
  // so a request is never silently ignored.
  virtual bool has_timeline() const { return false; }
  // Whether run_step writes a trace (trace_path): every engine with a timeline, and the
  // analytical engine's estimated per-op one (devices/analytical/trace.hpp) without a waveform.
  virtual bool has_trace() const { return has_timeline(); }
  // Whether run_step models gradient accumulation (StepRequest::micro_batches > 1): predict()
  // refuses a global batch of several micro-batches per device, naming the field, elsewhere.
  virtual bool models_gradient_accumulation() const { return false; }
  // Parses a device YAML of this engine, with KEY=VALUE overrides applied, into its spec.
  // Called once per (file, overrides) by predict(); YAML errors are UserError file:line: key.
  virtual std::shared_ptr<const DeviceConfig> load_device(const std::string& path,
                                                          const std::vector<std::string>& overrides) const;
  // Engine-specific checks of a resolved placement and its replica count. predict() has
  // already checked what every engine shares (the system holds the device, count > 0).
  // Throws FieldError naming the field ("count", "build").
  virtual void check_placement(ResolvedPlacement& p) const;
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
