// Loads engine modules on first use; see engine_module.hpp.
#include "predict/engine_module.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "common/error.hpp"

namespace xpusim {
namespace fs = std::filesystem;

namespace {

fs::path exe_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// A module, loaded once per process and never unloaded (engines it made may outlive any one
// caller). error is set when it could not be loaded.
struct Loaded {
  std::unique_ptr<Engine> engine;
  std::string error;
};

const Loaded& loaded(const EngineModule& m) {
  // Leaked on purpose: at exit a module's own statics (CUDA state, the SystemC kernel) are
  // destroyed before anything constructed here would be, so its engine must not be destroyed
  // after them.
  static auto& mu = *new std::mutex;
  static auto& modules = *new std::map<std::string, Loaded*>;
  std::lock_guard<std::mutex> lock(mu);
  Loaded*& slot = modules[m.name];
  if (slot) return *slot;
  slot = new Loaded;
  Loaded& l = *slot;
  XpusimEngineCreateFn create = m.linked;
  std::string where = "linked into this executable";
  const std::string engine = std::string("the ") + m.name + " engine plugin ";
  if (!create) {
    where = engine_module_path(m.file);
    // RTLD_LOCAL: the module carries its own copy of the core libraries (built -fPIC and
    // linked in, their symbols hidden), so nothing of it should bind other modules' names.
    void* h = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      l.error = std::string("cannot load ") + engine + where + ": " + (e ? e : "unknown error");
      return l;
    }
    create = reinterpret_cast<XpusimEngineCreateFn>(dlsym(h, m.symbol));
    if (!create) {
      const char* e = dlerror();
      l.error = engine + where + " has no " + m.symbol + ": " + (e ? e : "");
      return l;
    }
  }
  l.engine.reset(create(kEnginePluginAbi));
  if (!l.engine)
    l.error = engine + where + " refused this xpusim (built for another version: engine ABI " +
              std::to_string(kEnginePluginAbi) + " expected)";
  return l;
}

class ModuleEngine final : public Engine {
 public:
  explicit ModuleEngine(const EngineModule& m) : m_(m) {}
  std::string name() const override { return m_.name; }
  std::string description() const override { return m_.description; }
  bool real_backend() const override { return m_.real_backend; }
  Availability availability() const override {
    const Loaded& l = loaded(m_);
    if (!l.engine) return Availability{true, false, l.error};
    return l.engine->availability();
  }
  bool has_timeline() const override { return m_.has_timeline; }
  std::shared_ptr<const DeviceConfig> load_device(const std::string& path,
                                                  const std::vector<std::string>& overrides) const override {
    return require().load_device(path, overrides);
  }
  void check_placement(ResolvedPlacement& p) const override { require().check_placement(p); }
  StepReport run_step(const StepRequest& req) override { return require().run_step(req); }

 private:
  Engine& require() const {
    const Loaded& l = loaded(m_);
    if (!l.engine) throw UnavailableError(l.error);
    return *l.engine;
  }
  EngineModule m_;
};

}  // namespace

std::string engine_module_path(const char* file) {
  if (const char* env = std::getenv("XPUSIM_PLUGIN_DIR"); env && *env) return (fs::path(env) / file).string();
  std::vector<fs::path> tries;
  if (fs::path bin = exe_dir(); !bin.empty()) {
    tries.push_back(bin / XPUSIM_PLUGIN_INSTALL_RELDIR / file);
    tries.push_back(bin / file);
  }
#ifdef XPUSIM_PLUGIN_BUILD_DIR
  tries.push_back(fs::path(XPUSIM_PLUGIN_BUILD_DIR) / file);
#endif
  std::error_code ec;
  for (const auto& p : tries)
    if (fs::exists(p, ec)) return p.lexically_normal().string();
  return tries.empty() ? std::string(file) : tries.front().lexically_normal().string();
}

std::unique_ptr<Engine> make_module_engine(const EngineModule& m) { return std::make_unique<ModuleEngine>(m); }

}  // namespace xpusim
