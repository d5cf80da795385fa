// The SystemC model of the TensorCores of a board and their feed: per core an MXU, a vector
// unit, inbound and outbound DMA sharing one HBM channel, ICI and an infeed queue; one host
// (input pipeline -> prefetch queue -> PCIe infeed per core).
//
// Two ways to run it (SimConfig::simulated_cores):
// - one core (the default, every prediction without a trace or waveform): all TensorCores of
//   a data-parallel job run the same program on their own data, so one core is simulated and
//   its all-reduce takes the ring formula's time for `replicas` cores. This is what sweeps
//   pay for (~15 ms a point), so it does nothing more.
// - every core (`--trace`, `--vcd`): each TensorCore is its own set of SystemC threads with its
//   own units, and the gradient all-reduce is a real exchange of chunks around the ring of
//   cores: a core's ring step ends only when its neighbours' chunks have arrived, so no core
//   leaves an all-reduce before every core has entered it (a barrier).
//
// SystemC 2.3 elaborates once per process and accepts no new module after that, while a
// process runs many simulations with different core counts (sweeps, the Python module). So
// the one-core model is a module elaborated once (lazily, on the first run) and parked on a
// start event; the cores of an every-core run are not modules but plain objects whose
// threads are created with sc_spawn (SystemC's dynamic processes, allowed after elaboration)
// for that run and end with it. Nothing is elaborated for cores nobody traces, and a process
// can trace any count at any time. Only a waveform's signals must exist before the first
// sc_start, so a VCD is still written by the first simulation of a process only (it knows
// the core count then). Durations are converted to integer picoseconds independently of the
// absolute simulation time, so a run gives the same result whether it is the first in the
// process or the hundredth.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "sim/tpu/ici_network.hpp"
#include "sim/tpu/program.hpp"

namespace xpusim::tpu {

struct SimConfig {
  double hbm_bytes_per_s = 1;      // sustained HBM bandwidth (peak x efficiency)
  double dma_latency_s = 0;        // per transfer, as seen by one DMA queue
  double dma_burst_bytes = 1 << 20;
  double ici_bytes_per_s = 1;      // per core, ring all-reduce
  double ici_hop_latency_s = 0;
  // Every core simulated: the board's ICI links (issue 32). Set, each ring step's chunks cross
  // these links as SystemC channels (ici_link.hpp) and the two rates above are unused by the
  // exchange; unset, a ring step takes 1/(2(n-1)) of the formula's time (slices past a board).
  std::shared_ptr<const IciNetwork> ici_network;
  int replicas = 1;                // cores taking part in the all-reduce
  // 1: simulate core 0 only (all-reduce from the ring formula); == replicas: simulate every
  // core, the all-reduce as a ring exchange between them (at most kMaxSimulatedCores).
  int simulated_cores = 1;
  int cores_per_chip = 1;          // names chips in the VCD scopes
  // Tests only: with every core simulated, core i starts its first step i x core_skew_s late,
  // to show that the ring exchange holds the early cores back (identical cores never differ).
  double core_skew_s = 0;
  bool real_data = false;
  double host_batch_s = 0;         // host time to prepare this core's share of one global batch
  double pcie_bytes_per_s = 1;
  int prefetch_depth = 2;
  int steps = 2;                   // simulated steps; the last one is measured (steady state)
  // Record every change of each core's queue depths (QueueDepthChange) in the measured step,
  // for the trace's counter tracks. Only with --trace: a sweep's one-core runs never pay for it.
  bool record_queue_depths = false;
  // Write the model's signals (unit busy, queue depths) as a VCD waveform of every simulated
  // step. SystemC fixes traced signals before its simulation first starts, and there is one
  // simulation per process: only the first simulate() of a process can write one
  // (FieldError("vcd") otherwise).
  std::string vcd_path;
};

// Every core simulated costs about as much as the one-core run; past this a trace would
// take minutes and gigabytes for identical cores, so the engine refuses it (FieldError).
inline constexpr int kMaxSimulatedCores = 64;

struct TraceEvent {
  Unit unit;
  int core;                        // simulated TensorCore that executed the task
  int op;
  int task;                        // index into Program::tasks (its bytes and FLOPs)
  double start_s, end_s;           // relative to the start of the measured step
};

// Where a core waited on the ICI in the measured step: from when its own chunks of a ring step
// had arrived until its neighbours' did (a busy link ahead of them, or a neighbour late).
struct IciWait {
  int core;
  int op;
  double start_s, end_s;           // as TraceEvent
};

// The queues whose depths a core records (the VCD's *_queue_depth signals, same order).
enum class Queue : int { hbm_read = 0, hbm_write, host, infeed };
inline constexpr int kNumQueues = 4;

// A change of one core's queue depth in the measured step (SimConfig::record_queue_depths):
// the depth becomes `depth` at start_s, then drops by one every interval_s, `count` values in
// all (count 1: a plain change). A DMA transfer alone on the HBM channel issues its bursts
// back to back in one wait (core_sim.hpp, dma_alone): one record, not one per burst.
struct QueueDepthChange {
  int core;
  Queue queue;
  int depth;
  int count;
  double start_s, interval_s;      // start_s as TraceEvent
};
using QueueDepthLog = std::vector<QueueDepthChange>;

// One ICI link over the whole run (every step simulated).
struct IciLinkUse {
  std::string name;
  double bytes = 0, busy_s = 0;
  double queued_s = 0;             // summed time chunks waited for the link to be free
};

struct SimResult {
  double step_time_s = 0;                    // core 0 (every core's, when all are simulated and symmetric)
  std::array<double, kNumUnits> busy_s{};   // core 0: busy time of each unit in the measured step
  double infeed_stall_s = 0;                 // core 0: time the measured step waited for its batch
  double host_busy_s = 0;                    // host pipeline time per batch (for utilisation)
  std::vector<double> core_step_time_s;      // per simulated core
  std::vector<TraceEvent> trace;             // measured step of every simulated core, when requested
  std::vector<double> core_ici_wait_s;       // per simulated core: ICI waits of the measured step
  std::vector<IciWait> ici_waits;            // with the trace: every such wait
  std::vector<IciLinkUse> ici_links;         // with SimConfig::ici_network
  QueueDepthLog queue_depths;                // with SimConfig::record_queue_depths, per (core, queue) in time order
};

// Runs `steps` back-to-back steps of `p` on c.simulated_cores cores (the process-wide
// elaborated one-core model, or spawned cores). SystemC has one simulation context per
// process, so concurrent calls are serialised by a mutex.
SimResult simulate(const Program& p, const SimConfig& c, bool want_trace);

// The names of the traced VCD signals, in the order they are declared (tests and docs).
const std::vector<std::string>& vcd_signal_names();

}  // namespace xpusim::tpu
