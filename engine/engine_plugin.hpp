// The C entry point of an engine built as a separate shared module (the `cuda` engine:
// xpusim_cuda_plugin.so; the `tpu_systemc` engine: xpusim_tpu_plugin.so). The host dlopens the module on first use and calls this one
// function; everything past it is the Engine interface (engine/engine.hpp).
#pragma once

namespace xpusim {
class Engine;

// Bumped whenever Engine, StepRequest, StepReport or what they hold change layout, so that a
// stale module from another build is refused with a message instead of crashing in a vtable.
inline constexpr int kEnginePluginAbi = 1;

// The symbol the cuda module exports (extern "C", so dlsym finds it by this name).
inline constexpr const char* kCudaPluginSymbol = "xpusim_cuda_plugin_create";
inline constexpr const char* kCudaPluginFile = "xpusim_cuda_plugin.so";
inline constexpr const char* kTpuPluginSymbol = "xpusim_tpu_plugin_create";
inline constexpr const char* kTpuPluginFile = "xpusim_tpu_plugin.so";

}  // namespace xpusim

extern "C" {
// Returns a new engine (the caller owns it: delete through the virtual destructor), or
// nullptr when abi differs from the module's kEnginePluginAbi. Never throws.
using XpusimEngineCreateFn = xpusim::Engine* (*)(int abi);
}
