// The one exported function of xpusim_cuda_plugin.so (engine/engine_plugin.hpp): the host
// loads the module on first use of the `cuda` engine and gets the engine from here. Also
// compiled into executables that link the engine statically (tests/gpu): the host then finds
// this symbol in the process and loads no module.
#include <exception>

#include "devices/cuda/cuda_engine.hpp"
#include "engine/engine_plugin.hpp"

extern "C" __attribute__((visibility("default"))) xpusim::Engine* xpusim_cuda_plugin_create(int abi) {
  if (abi != xpusim::kEnginePluginAbi) return nullptr;
  try {
    return xpusim::cuda::make_cuda_engine().release();
  } catch (const std::exception&) {
    return nullptr;  // exceptions do not cross a C entry point; the host reports the failure
  }
}
