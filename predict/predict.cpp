#include "predict/predict.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "common/error.hpp"
#include "common/spec_reader.hpp"
#include "models/zoo.hpp"

namespace xpusim {

namespace fs = std::filesystem;

std::string device_yaml_path(const std::string& device) {
  return find_config_file("devices", device, "device", "device");
}

std::string engine_for_device(const std::string& device) {
  std::string path = device_yaml_path(device);
  YAML::Node n = load_config_yaml(path);
  if (!n.IsMap() || !n["engine"] || !n["engine"].IsScalar())
    throw UserError(yaml_location(path, n) + ": engine: required field is missing (analytical or tpu_systemc)");
  return n["engine"].Scalar();
}

Engine& cached_engine(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Engine>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, make_engine(name)).first;
  return *it->second;
}

PreparedRequest prepare_request(const PredictRequest& r) {
  if (r.batch_per_device <= 0) throw FieldError("batch", "must be > 0, got " + std::to_string(r.batch_per_device));
  if (r.placement.count <= 0) throw FieldError("count", "must be > 0, got " + std::to_string(r.placement.count));
  PreparedRequest p;
  p.options.batch = r.batch_per_device;
  if (!parse_precision(r.precision, p.options.precision))
    throw FieldError("precision", "unknown precision '" + r.precision + "' (one of " + precision_choices() + ")");
  p.spec = find_model(r.model);
  std::string opt = r.optimizer.empty() ? p.spec.optimizer : r.optimizer;
  if (!parse_optimizer(opt, p.options.training_options.optimizer))
    throw FieldError("optimizer", "unknown optimizer '" + opt + "' (sgd_momentum|adam)");
  std::string engine_name = r.engine.empty() ? engine_for_device(r.placement.device) : r.engine;
  p.engine = &cached_engine(engine_name);
  p.options.training_options.replicas = p.engine->replicas(r.placement);
  p.graph_key = p.spec.file + "|" + std::to_string(p.options.batch) + "|" + precision_name(p.options.precision) +
                "|" + optimizer_name(p.options.training_options.optimizer) + "|" +
                std::to_string(p.options.training_options.replicas);
  return p;
}

StepReport run_prepared(const PredictRequest& r, const PreparedRequest& p, const OpGraph& g) {
  StepRequest req;
  req.graph = &g;
  req.model = p.spec.name;
  req.placement = r.placement;
  req.data = r.data;
  req.steps = r.steps;
  req.warmup = r.warmup;
  req.seed = r.seed;
  req.threads = r.threads;
  req.trace_path = r.trace_path;
  req.progress = r.progress;
  StepReport rep = p.engine->run_step(req);
  rep.model = p.spec.name;
  rep.precision = precision_name(p.options.precision);
  rep.data = data_source_name(r.data);
  return rep;
}

void check_request(const PredictRequest& r) {
  PreparedRequest p = prepare_request(r);
  p.engine->check_placement(r.placement);
}

StepReport predict(const PredictRequest& r) {
  PreparedRequest p = prepare_request(r);
  OpGraph g = build_graph(p.spec, p.options);
  return run_prepared(r, p, g);
}

}  // namespace xpusim
