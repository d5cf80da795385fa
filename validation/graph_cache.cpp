#include "validation/graph_cache.hpp"

#include <map>
#include <memory>

#include "common/error.hpp"
#include "models/zoo.hpp"

namespace xpusim::validation {

PredictFn graph_caching_predictor() {
  auto graphs = std::make_shared<std::map<std::string, std::shared_ptr<OpGraph>>>();
  return [graphs](const PredictRequest& r) -> StepReport {
    if (!r.engine.empty() && cached_engine(r.engine).real_backend()) return predict(r);
    // Graphs do not depend on device constants, so a fit builds each one once.
    PreparedRequest p = prepare_request(r);
    return run_prepared_binned(r, p,
                               [&](const ModelSpec& spec, const GraphOptions& o, const std::string& key) -> const OpGraph& {
                                 auto it = graphs->find(key);
                                 if (it == graphs->end())
                                   it = graphs->emplace(key, std::make_shared<OpGraph>(build_graph(spec, o))).first;
                                 return *it->second;
                               });
  };
}

}  // namespace xpusim::validation
