// The engine registry: one line per engine. An engine that is not compiled in (CUDA without
// nvcc) is simply absent; `xpusim backends` reports it as not compiled.
#include "sim/engine.hpp"

#include "common/error.hpp"
#include "devices/cpu/cpu_engine.hpp"

namespace xpusim {

const std::vector<EngineEntry>& engine_registry() {
  static const std::vector<EngineEntry> engines = {
      {"cpu", [] { return cpu::make_cpu_engine(); }},
  };
  return engines;
}

std::unique_ptr<Engine> make_engine(const std::string& name) {
  for (const auto& e : engine_registry())
    if (e.name == name) return e.make();
  std::string list;
  for (const auto& e : engine_registry()) list += (list.empty() ? "" : ", ") + e.name;
  throw UserError("unknown engine '" + name + "' (known: " + list + ")");
}

}  // namespace xpusim
