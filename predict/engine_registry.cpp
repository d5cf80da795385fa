// The engine registry: one line per engine. An engine that is not compiled in (CUDA without
// nvcc) is simply absent; `xpusim backends` reports it as not compiled. The cuda and
// tpu_systemc engines are separately built modules, loaded on first use (engine_module.hpp),
// so that commands which use neither load no CUDA library and no SystemC.
#include "engine/engine.hpp"

#include "common/error.hpp"
#include "devices/analytical/engine.hpp"
#include "devices/cpu/cpu_engine.hpp"
#include "predict/engine_module.hpp"

// Entry points of engines linked into this process (weak: null in the xpusim binary, which
// loads the modules instead; defined where tpu_plugin_entry.cpp / cuda_plugin_entry.cpp is
// compiled in).
extern "C" xpusim::Engine* xpusim_tpu_plugin_create(int abi) __attribute__((weak));
#ifdef XPUSIM_HAVE_CUDA
extern "C" xpusim::Engine* xpusim_cuda_plugin_create(int abi) __attribute__((weak));
#endif

namespace xpusim {

namespace {
// `description` repeats the engine's own, so that `xpusim backends` needs no module loaded.
const EngineModule kTpuModule{
    "tpu_systemc", kTpuPluginFile, kTpuPluginSymbol, &xpusim_tpu_plugin_create,
    "cycle-approximate SystemC model of a TPU board (MXU, vector unit, HBM/DMA, ICI, host infeed)",
    /*real_backend=*/false, /*has_timeline=*/true};
#ifdef XPUSIM_HAVE_CUDA
const EngineModule kCudaModule{
    "cuda", kCudaPluginFile, kCudaPluginSymbol, &xpusim_cuda_plugin_create,
    "NVIDIA GPUs via cuDNN, cuBLAS and NCCL (real training steps, timed with CUDA events)",
    /*real_backend=*/true, /*has_timeline=*/false};
#endif
}  // namespace

const std::vector<EngineEntry>& engine_registry() {
  static const std::vector<EngineEntry> engines = {
      {"tpu_systemc", [] { return make_module_engine(kTpuModule); }},
      {"analytical", [] { return std::make_unique<analytical::AnalyticalEngine>(); }},
#ifdef XPUSIM_HAVE_CUDA
      {"cuda", [] { return make_module_engine(kCudaModule); }},
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
