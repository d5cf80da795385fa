// The few MPI operations a sweep needs, behind plain C++ so that only mpi_transport.cpp
// includes <mpi.h>; mpi_none.cpp stands in (UnavailableError) when MPI is not built.
// Rank 0 owns the output; other ranks send it finished rows.
#pragma once
#include <string>
#include <vector>

namespace xpusim::sweep::mpi {

struct World {
  int rank = 0, size = 1;
};
World init();                                  // MPI_Init once; UnavailableError without MPI
void finalize();
void abort_all(int code);                      // a rank failed: stop every rank
void broadcast(std::vector<long long>& v);     // rank 0's vector to every rank
// To rank 0: finished rows as text, "INDEX<TAB>LINE\n" per row (a rank sends them in batches).
void send_rows(const std::string& rows);
void send_done();                              // this rank has sent all its rows
void release_all(int size);                    // rank 0: every row is in; ranks may finish
void wait_release();                           // other ranks: wait (sleeping) for release_all
// Rank 0: receives one message (blocking or not). Returns false when none is waiting
// (non-blocking only); `done` is true for a send_done message, else `rows` holds a batch.
bool receive(bool block, std::string& rows, bool& done);

}  // namespace xpusim::sweep::mpi
