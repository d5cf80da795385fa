// The one exported function of xpusim_tpu_plugin.so (engine/engine_plugin.hpp): the host loads
// the module on first use of the `tpu_systemc` engine, so that commands which never simulate a
// TPU do not load SystemC. Also compiled into executables that link the engine in-process
// (unit tests, the Python module, benchmarks): the host then finds this symbol in the process
// and loads no module.
#include <exception>

#include "engine/engine_plugin.hpp"
#include "sim/tpu/tpu_engine.hpp"

// libsystemc's own main() calls sc_main; xpusim never uses it, but the shared library still
// references the symbol, and resolves it from the object that loaded it: here, outside the
// core libraries the module hides (--exclude-libs), so that the module's copy is visible to
// libsystemc. Executables that link the engine in-process get it from this file too.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char*[]) { return 1; }

extern "C" __attribute__((visibility("default"))) xpusim::Engine* xpusim_tpu_plugin_create(int abi) {
  if (abi != xpusim::kEnginePluginAbi) return nullptr;
  try {
    return xpusim::tpu::make_tpu_engine().release();
  } catch (const std::exception&) {
    return nullptr;  // exceptions do not cross a C entry point; the host reports the failure
  }
}
