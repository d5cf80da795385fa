// The engine registry: one line per engine. An engine that is not compiled in (CUDA without
// nvcc) is simply absent; `xpusim backends` reports it as not compiled.
#include "sim/engine.hpp"

namespace xpusim {

const std::vector<EngineEntry>& engine_registry() {
  static const std::vector<EngineEntry> engines = {
  };
  return engines;
}

}  // namespace xpusim
