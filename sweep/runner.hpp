// Runs a sweep: in this process, in N forked worker processes (the SystemC kernel is one per
// process, so parallelism is processes), or across MPI ranks. Every mode writes the rows in
// point order, one flushed line at a time, so the file is byte-identical whatever the mode
// and N, and a killed run leaves a prefix that --resume completes.
#pragma once
#include <atomic>
#include <functional>
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
  // Set asynchronously (SIGINT/SIGTERM) to stop after the points being evaluated: the rows
  // finished in point order stay in `output` (a prefix that resume completes) and the stats
  // say `interrupted`. Forked workers inherit the handler and check their own copy of the
  // flag; this process forwards the signal to them once. Not used under MPI.
  const std::atomic<bool>* stop = nullptr;
  // Called after each row written to `output` (the CLI's interrupt test hook).
  std::function<void()> on_row;
  // Forked workers send rows to this process in batches (~100 ms) and the row file is flushed
  // as often; false sends and flushes every row, so that "stop after the N-th row" (the test
  // hook above) means the same with workers as without.
  bool batch_rows = true;
};

struct RunStats {
  bool root = true;          // false on MPI ranks other than 0 (they write nothing)
  long long points = 0, resumed = 0, computed = 0;
  int processes = 1;
  double seconds = 0;          // the sweep itself: points, resume, evaluation, merging
  double mpi_startup_seconds = 0;  // MPI_Init (wiring the ranks), before `seconds` starts
  bool interrupted = false;  // stopped by RunOptions::stop; `written` of `computed` rows are in the file
  long long written = 0;     // rows this run wrote
};

RunStats run_sweep(const SweepSpec& s, const RunOptions& o);

// Every row of a finished row file, in file order (the summary's input).
std::vector<PointResult> read_rows(const SweepSpec& s, const std::string& path, RowFormat f);

// Which of n workers (forked processes or MPI ranks) evaluates each point of `todo` (an index
// into it): points sharing a training-step graph together when there are many graphs, else
// dealt one by one in a fixed shuffled order. A function of the sweep, `todo` and n only.
std::vector<int> assign_workers(const SweepSpec& s, const std::vector<Point>& todo, int n);

// MPI: whether this process was started by mpirun (OpenMPI, MPICH/PMI environment), and
// whether xpusim was built with MPI (CMake XPUSIM_WITH_MPI).
bool launched_by_mpi();
// Upper bound of RunOptions::jobs on this machine: 4 per hardware thread (docs/sweeps.md).
int max_jobs();
bool mpi_built();

}  // namespace xpusim::sweep
