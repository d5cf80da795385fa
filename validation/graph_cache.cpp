#include "validation/graph_cache.hpp"

#include <map>
#include <memory>

#include "common/error.hpp"
#include "models/zoo.hpp"

namespace xpusim::validation {

PredictFn graph_caching_predictor() {
  auto graphs = std::make_shared<std::map<std::string, std::shared_ptr<OpGraph>>>();
  return [graphs](const PredictRequest& r) -> StepReport {
    if (r.engine == "cpu" || r.engine == "cuda") return predict(r);
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
    std::string key = spec.file + "|" + std::to_string(o.batch) + "|" + r.precision + "|" + opt + "|" +
                      std::to_string(o.training_options.replicas);
    auto it = graphs->find(key);
    if (it == graphs->end()) it = graphs->emplace(key, std::make_shared<OpGraph>(build_graph(spec, o))).first;
    StepRequest req;
    req.graph = it->second.get();
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
  };
}

}  // namespace xpusim::validation
