#include "sim/predict.hpp"

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
  std::string path = resolve_config("devices", device);
  if (!fs::exists(path)) {
    std::vector<std::string> names;
    fs::path dir = fs::path(config_dir()) / "devices";
    if (fs::is_directory(dir))
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
    std::sort(names.begin(), names.end());
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw UserError("--device: unknown device '" + device + "' (known: " + list + ")");
  }
  return path;
}

std::string engine_for_device(const std::string& device) {
  std::string path = device_yaml_path(device);
  YAML::Node n = load_yaml_file(path);
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

StepReport predict(const PredictRequest& r) {
  if (r.batch_per_device <= 0) throw UserError("--batch: must be > 0, got " + std::to_string(r.batch_per_device));
  if (r.placement.count <= 0) throw UserError("--count: must be > 0, got " + std::to_string(r.placement.count));
  GraphOptions o;
  o.batch = r.batch_per_device;
  if (!parse_precision(r.precision, o.precision))
    throw UserError("--precision: unknown precision '" + r.precision + "' (one of " + precision_choices() + ")");
  ModelSpec spec = find_model(r.model);
  std::string opt = r.optimizer.empty() ? spec.optimizer : r.optimizer;
  if (!parse_optimizer(opt, o.training_options.optimizer))
    throw UserError("--optimizer: unknown optimizer '" + opt + "' (sgd_momentum|adam)");
  std::string engine_name = r.engine.empty() ? engine_for_device(r.placement.device) : r.engine;
  Engine& engine = cached_engine(engine_name);
  o.training_options.replicas = engine.replicas(r.placement);
  OpGraph g = build_graph(spec, o);
  StepRequest req;
  req.graph = &g;
  req.model = spec.name;
  req.placement = r.placement;
  req.data = r.data;
  req.steps = r.steps;
  req.warmup = r.warmup;
  req.seed = r.seed;
  req.threads = r.threads;
  req.trace_path = r.trace_path;
  req.progress = r.progress;
  StepReport rep = engine.run_step(req);
  rep.model = spec.name;
  rep.precision = precision_name(o.precision);
  rep.data = data_source_name(r.data);
  return rep;
}

}  // namespace xpusim
