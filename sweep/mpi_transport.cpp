// MPI transport of sweep rows (built when CMake finds MPI). A batch of rows travels as one
// message of text, "INDEX<TAB>LINE\n" per row; an empty message of its own tag says a rank is done.
#include "sweep/mpi_transport.hpp"

#include <mpi.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/error.hpp"

namespace xpusim::sweep::mpi {

namespace {
constexpr int kTagRow = 1, kTagDone = 2, kTagRelease = 3;

// OpenMPI's blocking calls spin on a core. A rank waiting for others (rank 0 for rows, the
// others for the end) polls and sleeps instead, so that with more ranks than free cores the
// waiting ranks do not take CPU from those still computing.
void wait_for(int source, int tag, MPI_Status* st) {
  int flag = 0;
  for (;;) {
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, st);
    if (flag) return;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}
}  // namespace

World init() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) MPI_Init(nullptr, nullptr);
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

void finalize() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

void abort_all(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

void broadcast(std::vector<long long>& v) {
  long long n = static_cast<long long>(v.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  v.resize(static_cast<size_t>(n));
  if (n > 0) MPI_Bcast(v.data(), int(n), MPI_LONG_LONG, 0, MPI_COMM_WORLD);
}

void send_rows(const std::string& rows) {
  if (rows.empty()) return;
  MPI_Send(rows.data(), int(rows.size()), MPI_CHAR, 0, kTagRow, MPI_COMM_WORLD);
}

void send_done() { MPI_Send(nullptr, 0, MPI_CHAR, 0, kTagDone, MPI_COMM_WORLD); }

void release_all(int size) {
  for (int r = 1; r < size; ++r) MPI_Send(nullptr, 0, MPI_CHAR, r, kTagRelease, MPI_COMM_WORLD);
}

void wait_release() {
  MPI_Status st;
  wait_for(0, kTagRelease, &st);
  MPI_Recv(nullptr, 0, MPI_CHAR, 0, kTagRelease, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

bool receive(bool block, std::string& rows, bool& done) {
  MPI_Status st;
  if (block) {
    wait_for(MPI_ANY_SOURCE, MPI_ANY_TAG, &st);
  } else {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (!flag) return false;
  }
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string buf(static_cast<size_t>(n), '\0');
  MPI_Recv(buf.data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  done = st.MPI_TAG == kTagDone;
  if (!done) rows = std::move(buf);
  return true;
}

}  // namespace xpusim::sweep::mpi
