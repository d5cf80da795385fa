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
    auto it = graphs->find(p.graph_key);
    if (it == graphs->end())
      it = graphs->emplace(p.graph_key, std::make_shared<OpGraph>(build_graph(p.spec, p.options))).first;
    return run_prepared(r, p, *it->second);
  };
}

}  // namespace xpusim::validation
