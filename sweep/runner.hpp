// Runs a sweep: in this process, in N forked worker processes (the SystemC kernel is one per
// process, so parallelism is processes), or across MPI ranks. Every mode writes the rows in
// point order, one flushed line at a time, so the file is byte-identical whatever the mode
// and N, and a killed run leaves a prefix that --resume completes.
#pragma once
#include <string>
#include <vector>

#include "sweep/results.hpp"

namespace xpusim::sweep {

struct RunOptions {
  std::string output;        // the row file
  RowFormat format = RowFormat::csv;
  bool resume = false;       // keep the rows already in `output`, run the others
  int jobs = 1;              // worker processes on this machine
  bool mpi = false;          // partition over MPI ranks (run under mpirun)
  bool progress = false;     // progress bar on stderr (points/s, ETA)
};

struct RunStats {
  bool root = true;          // false on MPI ranks other than 0 (they write nothing)
  long long points = 0, resumed = 0, computed = 0;
  int processes = 1;
  double seconds = 0;
};

RunStats run_sweep(const SweepSpec& s, const RunOptions& o);

// Every row of a finished row file, in file order (the summary's input).
std::vector<PointResult> read_rows(const SweepSpec& s, const std::string& path, RowFormat f);

// MPI: whether this process was started by mpirun (OpenMPI, MPICH/PMI environment), and
// whether xpusim was built with MPI (CMake XPUSIM_WITH_MPI).
bool launched_by_mpi();
bool mpi_built();

}  // namespace xpusim::sweep
