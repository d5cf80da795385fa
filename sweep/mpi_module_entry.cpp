// The one exported function of xpusim_mpi_transport.so (mpi_module.hpp): the table of the
// transport functions compiled into the module from mpi_transport.cpp.
#include "sweep/mpi_module.hpp"

extern "C" __attribute__((visibility("default"))) const xpusim::sweep::mpi::ModuleTable* xpusim_mpi_transport(
    int abi) {
  namespace m = xpusim::sweep::mpi;
  static const m::ModuleTable table{&m::init,     &m::finalize,     &m::abort_all,     &m::broadcast, &m::send_rows,
                                    &m::send_done, &m::release_all, &m::wait_release, &m::receive};
  return abi == m::kMpiModuleAbi ? &table : nullptr;
}
