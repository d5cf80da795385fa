// The `cuda` engine as seen by the registry: a stand-in that loads xpusim_cuda_plugin.so
// (dlopen) the first time the engine is asked anything that needs CUDA, so that commands
// which never touch a GPU do not load cuDNN, cuBLAS and NCCL (issue 17: start-up).
#pragma once
#include <memory>
#include <string>

#include "engine/engine.hpp"

namespace xpusim {

// Where the module is looked for, first match wins: $XPUSIM_PLUGIN_DIR; the installed layout
// (<bin>/../lib/xpusim beside the running binary, as configs are found under share/); the
// binary's own folder; the build tree's plugin folder. Returns the path tried last when none
// exists, so that errors can name it.
std::string cuda_plugin_path();

std::unique_ptr<Engine> make_cuda_plugin_engine();

}  // namespace xpusim
