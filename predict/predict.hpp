// One entry point for "how fast is this model on this placement": checks the request once,
// resolves the placement once (device YAML -> its engine's spec, system, replicas, CPU build,
// dataset; each parsed at most once per process and cached), builds the training-step graph
// with the right replica count and runs the engine. Used by `xpusim predict`, `xpusim run`,
// the cost model and validation. Engines are created once per process and reused (the
// SystemC engine elaborates once).
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "engine/engine.hpp"
#include "predict/sequence_bins.hpp"
#include "models/zoo.hpp"

namespace xpusim {

struct PredictRequest {
  std::string model;                 // zoo name, YAML path or ONNX file
  OnnxImportOptions onnx;            // ONNX files: shapes of dynamic inputs
  int64_t batch_per_device = 32;
  int64_t seq_len = 0;               // Transformers: tokens per sequence; 0 = the model file's input
  // The dataset the samples come from (configs/datasets.yaml); empty = the model file's. Real
  // data: its host cost per sample, and a text corpus's document lengths where the loader bins.
  std::string dataset;
  // Samples per optimizer step over all devices; a multiple of batch_per_device x replicas,
  // the rest being gradient accumulation (micro-batches per step). 0 = one micro-batch.
  int64_t global_batch = 0;
  std::string precision = "fp32";
  Task task = Task::train;           // inference: the forward pass only (models/inference.hpp)
  DataSource data = DataSource::synthetic;
  Placement placement;
  std::string optimizer;             // empty = the model's recipe
  std::string engine;                // empty = the device YAML's `engine:`; else a backend (cpu, cuda)
  int steps = 10, warmup = 2;        // real backends
  int threads = 0;
  uint64_t seed = 1;
  std::string trace_path;            // Chrome trace-event JSON (engines with a timeline)
  std::string vcd_path;              // VCD waveform (engines with a timeline)
  bool progress = false;
};

// The checks of a request that do not depend on its engine: batch, count, steps, warmup,
// threads (FieldError naming the field). predict() and check_request() run them first.
void check_request_fields(const PredictRequest& r);
// The request's precision; FieldError("precision") listing the choices when unknown.
Precision request_precision(const PredictRequest& r);
// Those, the precision, the model and the device's engine name: what check_request() checks
// short of resolving the placement on the engine (request_checks.cpp, which needs no engine).
void check_request_specs(const PredictRequest& r);

// The engine named by a device YAML (`engine:` key). FieldError("device") if unknown.
std::string engine_for_device(const std::string& device_name_or_path);
std::string device_yaml_path(const std::string& device_name_or_path);  // FieldError("device")
Engine& cached_engine(const std::string& name);

// A placement's KEY=VALUE overrides by what they set: `framework.KEY` a field of the framework
// profile, `system.KEY` one of the system, any other KEY one of the device (prefixes removed).
struct PlacementOverrides {
  std::vector<std::string> device, framework, system;
};
PlacementOverrides split_placement_overrides(const std::vector<std::string>& overrides);

// Resolves a placement for `engine` once: the device spec (parsed by the engine, cached per
// file and overrides), the system (cached per file), the checks every engine shares (count
// > 0, the system holds the device) and the engine's own (check_placement). `dataset` is the
// model's dataset name, resolved when `need_dataset`.
ResolvedPlacement resolve_placement(const Placement& p, const Engine& engine, const std::string& dataset = "",
                                    bool need_dataset = false);

StepReport predict(const PredictRequest& req);
// The checks of predict() that need no graph and no simulation (fields, model, engine, the
// whole placement resolution); throws what predict() would. For sweeps that validate up front.
void check_request(const PredictRequest& req);

// predict() in two halves, for callers that reuse graphs across many requests (calibration):
// prepare_request checks the request, resolves the placement and picks the engine and graph
// options; graph_key names the graph those options build; run_prepared runs the engine on
// such a graph.
struct PreparedRequest {
  ModelSpec spec;
  GraphOptions options;
  Engine* engine = nullptr;
  ResolvedPlacement placement;
  std::string graph_key;
  // A loader that bins sequences by length (sequence_bins.hpp): `spec` runs at the bins' mean
  // padded length; `longest` is the model at its own length (the longest bin), whose step
  // holds the memory peak. Empty otherwise.
  struct Binned {
    ModelSpec longest;
    std::string graph_key;
    SequenceBins bins;
  };
  std::optional<Binned> binned;
};
PreparedRequest prepare_request(const PredictRequest& r);
StepReport run_prepared(const PredictRequest& r, const PreparedRequest& p, const OpGraph& g);
// run_prepared on `graph_of(p.spec, p.graph_key)`; where the loader bins sequences, the
// memory fields (memory_bytes, fits_in_memory, memory_*, gpu_mem_used_bytes) come from a run
// of the longest bin's graph (`graph_of(longest, its key)`), and the report states the bins.
using GraphProvider = std::function<const OpGraph&(const ModelSpec&, const GraphOptions&, const std::string& key)>;
StepReport run_prepared_binned(const PredictRequest& r, const PreparedRequest& p, const GraphProvider& graph_of);

}  // namespace xpusim
