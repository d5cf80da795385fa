// The host side of the MPI transport module (mpi_module.hpp): the functions of
// mpi_transport.hpp forward to the module, which is loaded on the first call (a sweep run
// under mpirun) and never unloaded.
#include <dlfcn.h>

#include <mutex>

#include "common/error.hpp"
#include "predict/engine_module.hpp"
#include "sweep/mpi_module.hpp"

namespace xpusim::sweep::mpi {

namespace {

const ModuleTable& table() {
  static const ModuleTable* t = nullptr;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string where = engine_module_path(kMpiModuleFile);
    // RTLD_GLOBAL: Open MPI dlopens its own components, which look up libmpi's symbols globally.
    void* h = dlopen(where.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char* e = dlerror();
      error = "cannot load the MPI transport module " + where + ": " + (e ? e : "unknown error");
      return;
    }
    auto entry = reinterpret_cast<XpusimMpiTransportFn>(dlsym(h, kMpiModuleSymbol));
    if (!entry) {
      error = "the MPI transport module " + where + " has no " + kMpiModuleSymbol;
      return;
    }
    t = entry(kMpiModuleAbi);
    if (!t) error = "the MPI transport module " + where + " is from another xpusim build (ABI " +
                    std::to_string(kMpiModuleAbi) + " expected)";
  });
  if (!t) throw UnavailableError(error);
  return *t;
}

}  // namespace

World init() { return table().init(); }
void finalize() { table().finalize(); }
void abort_all(int code) { table().abort_all(code); }
void broadcast(std::vector<long long>& v) { table().broadcast(v); }
void send_rows(const std::string& rows) { table().send_rows(rows); }
void send_done() { table().send_done(); }
void release_all(int size) { table().release_all(size); }
void wait_release() { table().wait_release(); }
bool receive(bool block, std::string& rows, bool& done) { return table().receive(block, rows, done); }

}  // namespace xpusim::sweep::mpi
