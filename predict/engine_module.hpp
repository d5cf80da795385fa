// Engines built as separate shared modules (engine/engine_plugin.hpp), as seen by the
// registry: a stand-in that dlopens the module the first time the engine is asked anything
// that needs it, so that commands which never use an engine do not load its libraries
// (issue 17, start-up): `cuda` (cuDNN, cuBLAS, NCCL) and `tpu_systemc` (SystemC, whose
// load-time initialisation alone costs ~4 ms of CPU and ~900 page faults per process).
#pragma once
#include <memory>
#include <string>

#include "engine/engine.hpp"
#include "engine/engine_plugin.hpp"

namespace xpusim {

// What the host knows of a module engine before loading it.
struct EngineModule {
  const char* name;            // the engine's name (registry, errors)
  const char* file;            // e.g. xpusim_tpu_plugin.so
  const char* symbol;          // its XpusimEngineCreateFn
  // The entry point when it is linked into this process (a weak symbol: tests and the Python
  // module link engines in-process); null to dlopen `file`.
  XpusimEngineCreateFn linked;
  const char* description;     // static, so `backends` describes the engine without loading it
  bool real_backend;
  bool has_timeline;           // Engine::has_timeline() of the module's engine
};

// Where `file` is looked for, first match wins: $XPUSIM_PLUGIN_DIR; the installed layout
// (<bin>/../lib/xpusim beside the running binary, as configs are found under share/); the
// binary's own folder; the build tree's plugin folder. Returns the path tried first when none
// exists, so that errors can name it.
std::string engine_module_path(const char* file);

// The engine of `m`, loading the module once per process on first use (never unloaded).
std::unique_ptr<Engine> make_module_engine(const EngineModule& m);

}  // namespace xpusim
