// One entry point for "how fast is this model on this placement": resolves the device YAML
// to its engine, builds the training-step graph with the right replica count and runs the
// engine. Used by `xpusim predict`, `xpusim run`, the cost model and validation. Engines are
// created once per process and reused (the SystemC engine elaborates once).
#pragma once
#include <string>

#include "models/zoo.hpp"
#include "engine/engine.hpp"

namespace xpusim {

struct PredictRequest {
  std::string model;                 // zoo name or YAML path
  int64_t batch_per_device = 32;
  std::string precision = "fp32";
  DataSource data = DataSource::synthetic;
  Placement placement;
  std::string optimizer;             // empty = the model's recipe
  std::string engine;                // empty = the device YAML's `engine:`; else a backend (cpu, cuda)
  int steps = 10, warmup = 2;        // real backends
  int threads = 0;
  uint64_t seed = 1;
  std::string trace_path;
  bool progress = false;
};

// The engine named by a device YAML (`engine:` key). UserError naming --device if unknown.
std::string engine_for_device(const std::string& device_name_or_path);
std::string device_yaml_path(const std::string& device_name_or_path);  // UserError naming --device
Engine& cached_engine(const std::string& name);
StepReport predict(const PredictRequest& req);
// The checks of predict() that need no graph and no simulation (fields, model, engine, device
// spec with its overrides); throws what predict() would. For sweeps that validate up front.
void check_request(const PredictRequest& req);

// predict() in two halves, for callers that reuse graphs across many requests (calibration):
// prepare_request validates the request and picks the engine and graph options; graph_key
// names the graph those options build; run_prepared runs the engine on such a graph.
struct PreparedRequest {
  ModelSpec spec;
  GraphOptions options;
  Engine* engine = nullptr;
  std::string graph_key;
};
PreparedRequest prepare_request(const PredictRequest& r);
StepReport run_prepared(const PredictRequest& r, const PreparedRequest& p, const OpGraph& g);

}  // namespace xpusim
