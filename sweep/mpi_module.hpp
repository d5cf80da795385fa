// The MPI transport as a separately built module (xpusim_mpi_transport.so): the functions of
// mpi_transport.hpp behind one C entry point, so that the xpusim binary does not link Open MPI
// (libmpi and its libopen-pal, libopen-rte, hwloc, libevent: ~2 ms of CPU at the start of
// every command, issue 17) and loads it only when a sweep runs under mpirun.
#pragma once
#include <string>
#include <vector>

#include "sweep/mpi_transport.hpp"

namespace xpusim::sweep::mpi {

// Bumped when this table or World changes, so a stale module is refused, not called.
inline constexpr int kMpiModuleAbi = 2;  // 2: rows travel in batches (send_rows)
inline constexpr const char* kMpiModuleFile = "xpusim_mpi_transport.so";
inline constexpr const char* kMpiModuleSymbol = "xpusim_mpi_transport";

struct ModuleTable {
  World (*init)();
  void (*finalize)();
  void (*abort_all)(int);
  void (*broadcast)(std::vector<long long>&);
  void (*send_rows)(const std::string&);
  void (*send_done)();
  void (*release_all)(int);
  void (*wait_release)();
  bool (*receive)(bool, std::string&, bool&);
};

}  // namespace xpusim::sweep::mpi

extern "C" {
// The module's table, or nullptr when abi differs from its kMpiModuleAbi.
using XpusimMpiTransportFn = const xpusim::sweep::mpi::ModuleTable* (*)(int abi);
}
