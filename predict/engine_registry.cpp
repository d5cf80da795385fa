// The engine registry: one line per engine. An engine that is not compiled in (CUDA without
// nvcc) is simply absent; `xpusim backends` reports it as not compiled. The cuda engine is a
// separately built module that is loaded on first use.
#include "engine/engine.hpp"

#include "common/error.hpp"
#include "sim/tpu/tpu_engine.hpp"
#include "devices/analytical/engine.hpp"
#ifdef XPUSIM_HAVE_CUDA
#include "predict/cuda_plugin.hpp"
#endif
#include "devices/cpu/cpu_engine.hpp"

namespace xpusim {

const std::vector<EngineEntry>& engine_registry() {
  static const std::vector<EngineEntry> engines = {
      {"tpu_systemc", [] { return tpu::make_tpu_engine(); }},
      {"analytical", [] { return std::make_unique<analytical::AnalyticalEngine>(); }},
#ifdef XPUSIM_HAVE_CUDA
      // A separately built module, loaded on first use (predict/cuda_plugin.hpp).
      {"cuda", [] { return make_cuda_plugin_engine(); }},
#endif
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
