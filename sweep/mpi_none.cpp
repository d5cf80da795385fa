// Stand-in for mpi_transport.cpp when xpusim is built without MPI: a sweep started under
// mpirun says so (exit 3) instead of running N independent copies that race on the output.
#include "common/error.hpp"
#include "sweep/mpi_transport.hpp"

namespace xpusim::sweep::mpi {

namespace {
[[noreturn]] void unavailable() {
  throw UnavailableError("this xpusim was built without MPI (install libopenmpi-dev and rebuild; "
                         "CMake option XPUSIM_WITH_MPI)");
}
}  // namespace

World init() { unavailable(); }
void finalize() {}
void abort_all(int) {}
void broadcast(std::vector<long long>&) { unavailable(); }
void send_rows(const std::string&) { unavailable(); }
void send_done() { unavailable(); }
void release_all(int) { unavailable(); }
void wait_release() { unavailable(); }
bool receive(bool, std::string&, bool&) { unavailable(); }

}  // namespace xpusim::sweep::mpi
