// The SystemC model of one TensorCore and its feed: MXU, vector unit, inbound and outbound
// DMA sharing one HBM channel, ICI, and the host (input pipeline -> prefetch queue -> PCIe
// infeed). All TensorCores of a data-parallel job run the same program on their own data,
// so one core is simulated and the ICI all-reduce time accounts for the others.
//
// SystemC 2.3 elaborates once per process, so the module hierarchy is built once (lazily, on
// the first run) and every later run loads a new program and configuration into the same
// elaborated model, then calls sc_start() until the event queue drains. Durations are
// converted to integer picoseconds independently of the absolute simulation time, so a run
// gives the same result whether it is the first in the process or the hundredth.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "sim/tpu/program.hpp"

namespace xpusim::tpu {

struct SimConfig {
  double hbm_bytes_per_s = 1;      // sustained HBM bandwidth (peak x efficiency)
  double dma_latency_s = 0;        // per transfer, as seen by one DMA queue
  double dma_burst_bytes = 1 << 20;
  double ici_bytes_per_s = 1;      // per core, ring all-reduce
  double ici_hop_latency_s = 0;
  int replicas = 1;                // cores taking part in the all-reduce
  bool real_data = false;
  double host_batch_s = 0;         // host time to prepare this core's share of one global batch
  double pcie_bytes_per_s = 1;
  int prefetch_depth = 2;
  int steps = 2;                   // simulated steps; the last one is measured (steady state)
  // Write the model's signals (unit busy, queue depths) as a VCD waveform of every simulated
  // step. SystemC fixes traced signals before its simulation first starts, and there is one
  // simulation per process: only the first simulate() of a process can write one
  // (FieldError("vcd") otherwise).
  std::string vcd_path;
};

struct TraceEvent {
  Unit unit;
  int op;
  int task;                        // index into Program::tasks (its bytes and FLOPs)
  double start_s, end_s;           // relative to the start of the measured step
};

struct SimResult {
  double step_time_s = 0;
  std::array<double, kNumUnits> busy_s{};   // busy time of each unit in the measured step
  double infeed_stall_s = 0;                 // time the measured step waited for its batch
  double host_busy_s = 0;                    // host pipeline time per batch (for utilisation)
  std::vector<TraceEvent> trace;             // measured step, when requested
};

// Runs `steps` back-to-back steps of `p` on the process-wide elaborated model. SystemC has one
// simulation context per process, so concurrent calls are serialised by a mutex.
SimResult simulate(const Program& p, const SimConfig& c, bool want_trace);

// The names of the traced VCD signals, in the order they are declared (tests and docs).
const std::vector<std::string>& vcd_signal_names();

}  // namespace xpusim::tpu
