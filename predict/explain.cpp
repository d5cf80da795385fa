// Per-op prices of a request for `predict --explain` (see explain.hpp).
#include "predict/explain.hpp"

#include "common/error.hpp"

namespace xpusim {

std::vector<analytical::OpExplain> explain_request(const PredictRequest& r) {
  PreparedRequest p = prepare_request(r);
  if (!p.placement.device || p.engine->name() != "analytical")
    throw FieldError("explain", "per-op prices come from the analytical engine; device '" + r.placement.device +
                                    "' runs on " + p.engine->name());
  const OpGraph g = build_graph(p.spec, p.options);
  return analytical::explain_ops(g, p.placement.device_as<analytical::DeviceSpec>(), *p.placement.framework,
                                 p.placement.count, p.placement.build);
}

}  // namespace xpusim
