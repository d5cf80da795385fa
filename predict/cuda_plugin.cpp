// Loads the cuda engine module on first use; see cuda_plugin.hpp.
#include "predict/cuda_plugin.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "common/error.hpp"
#include "engine/engine_plugin.hpp"

// A process that links the engine statically (tests/gpu) defines the entry point itself;
// weak, so that the xpusim binary, which must not link CUDA, leaves it null.
extern "C" xpusim::Engine* xpusim_cuda_plugin_create(int abi) __attribute__((weak));

namespace xpusim {
namespace fs = std::filesystem;

namespace {

const char* kDescription = "NVIDIA GPUs via cuDNN, cuBLAS and NCCL (real training steps, timed with CUDA events)";

fs::path exe_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// The module, loaded once per process and never unloaded (engines it made may outlive any
// one caller). error is set when it could not be loaded.
struct Loaded {
  std::unique_ptr<Engine> engine;
  std::string error;
};

const Loaded& loaded() {
  // Leaked on purpose: at exit the module's own statics (its CUDA state) are destroyed before
  // anything constructed here would be, so the engine must not be destroyed after them.
  static Loaded& l = *new Loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    XpusimEngineCreateFn create = &xpusim_cuda_plugin_create;
    std::string where = "linked into this executable";
    if (!create) {
      where = cuda_plugin_path();
      // RTLD_LOCAL: the module carries its own copy of the core libraries (built -fPIC and
      // linked in, their symbols hidden), so nothing of it should bind other modules' names.
      void* h = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char* e = dlerror();
        l.error = "cannot load the cuda engine plugin " + where + ": " + (e ? e : "unknown error");
        return;
      }
      create = reinterpret_cast<XpusimEngineCreateFn>(dlsym(h, kCudaPluginSymbol));
      if (!create) {
        const char* e = dlerror();
        l.error = "the cuda engine plugin " + where + " has no " + kCudaPluginSymbol + ": " + (e ? e : "");
        return;
      }
    }
    l.engine.reset(create(kEnginePluginAbi));
    if (!l.engine)
      l.error = "the cuda engine plugin " + where + " refused this xpusim (built for another version: engine ABI " +
                std::to_string(kEnginePluginAbi) + " expected)";
  });
  return l;
}

Engine& require() {
  const Loaded& l = loaded();
  if (!l.engine) throw UnavailableError(l.error);
  return *l.engine;
}

class CudaPluginEngine final : public Engine {
 public:
  std::string name() const override { return "cuda"; }
  // Static text: `xpusim backends` describes the engine before (or without) loading it.
  std::string description() const override { return kDescription; }
  bool real_backend() const override { return true; }
  Availability availability() const override {
    const Loaded& l = loaded();
    if (!l.engine) return Availability{true, false, l.error};
    return l.engine->availability();
  }
  std::shared_ptr<const DeviceConfig> load_device(const std::string& path,
                                                  const std::vector<std::string>& overrides) const override {
    return require().load_device(path, overrides);
  }
  void check_placement(ResolvedPlacement& p) const override { require().check_placement(p); }
  StepReport run_step(const StepRequest& req) override { return require().run_step(req); }
};

}  // namespace

std::string cuda_plugin_path() {
  if (const char* env = std::getenv("XPUSIM_PLUGIN_DIR"); env && *env) return (fs::path(env) / kCudaPluginFile).string();
  std::vector<fs::path> tries;
  if (fs::path bin = exe_dir(); !bin.empty()) {
    tries.push_back(bin / XPUSIM_PLUGIN_INSTALL_RELDIR / kCudaPluginFile);
    tries.push_back(bin / kCudaPluginFile);
  }
#ifdef XPUSIM_PLUGIN_BUILD_DIR
  tries.push_back(fs::path(XPUSIM_PLUGIN_BUILD_DIR) / kCudaPluginFile);
#endif
  std::error_code ec;
  for (const auto& p : tries)
    if (fs::exists(p, ec)) return p.lexically_normal().string();
  return tries.empty() ? std::string(kCudaPluginFile) : tries.front().lexically_normal().string();
}

std::unique_ptr<Engine> make_cuda_plugin_engine() { return std::make_unique<CudaPluginEngine>(); }

}  // namespace xpusim
