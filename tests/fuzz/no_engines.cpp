// The fuzz build links the loaders without the engines (no predict library: it would pull in
// oneDNN, SystemC and every engine instrumented for coverage). The study loader asks predict
// for an option's replicas only to label it, and falls back to the requested device count when
// the engine is not available (a module not built): these two definitions make every engine
// unavailable here, which is that path.
#include "common/error.hpp"
#include "predict/predict.hpp"

namespace xpusim {

Engine& cached_engine(const std::string& name) {
  throw UnavailableError("engine '" + name + "' is not in the fuzz build");
}

ResolvedPlacement resolve_placement(const Placement&, const Engine&, const std::string&, bool) {
  throw UnavailableError("placements are not resolved in the fuzz build");
}

}  // namespace xpusim
