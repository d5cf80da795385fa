// TpuSpec: one TPU device YAML (configs/devices/tpu_v2.yaml, tpu_v3.yaml) parsed once by
// SpecReader into an immutable struct, after KEY=VALUE overrides (the CLI's --set) were applied, so an
// override is validated exactly like the file. Every field the SystemC model reads lives here.
#pragma once
#include <string>
#include <vector>

#include "common/spec_reader.hpp"
#include "engine/placement.hpp"

namespace xpusim::tpu {

// name, file and default_system come from DeviceConfig (engine/placement.hpp).
struct TpuSpec : DeviceConfig {
  std::string description;
  // Per TensorCore.
  double clock_mhz = 700;
  int mxu_count = 1;             // systolic matrix units per core
  int mxu_rows = 128;            // PE rows (the contraction dimension K of a weight tile)
  int mxu_cols = 128;            // PE columns (output features N of a weight tile)
  int vector_lanes = 128;
  int vector_sublanes = 8;
  int vector_alus = 2;           // vector ALU slots per VLIW bundle, each a full lanes x sublanes op
  double transcendental_per_cycle = 128;  // exp/rsqrt/tanh results per cycle (EUP)
  long long vector_memory_bytes = 16ll << 20;
  long long hbm_capacity_bytes = 8ll << 30;
  double hbm_bandwidth_gbps = 350;  // per core
  double hbm_latency_ns = 500;
  int dma_engines = 2;
  long long dma_burst_bytes = 1 << 20;   // simulation granularity of HBM arbitration
  // Chip and board.
  int cores_per_chip = 2;
  int chips_per_board = 4;
  int ici_links_per_chip = 4;
  double ici_link_bandwidth_gbps = 62;   // per direction
  double ici_latency_us = 2;
  // Documented efficiency factors shared by every model (docs/tpu-model.md).
  double hbm_efficiency = 0.85;          // sustained / peak HBM bandwidth
  double op_overhead_us = 2;             // sequencer cost per fused op (program issue, sync)
  double runtime_reserved_bytes = 0;     // HBM the runtime keeps for itself
  int prefetch_depth_batches = 2;        // host -> device infeed queue depth
  bool collectives_async = false;        // all-reduce overlaps later ops (false: runs in program order)
  std::string source;

  double cycle_s() const { return 1e-6 / clock_mhz; }
  int cores_per_board() const { return cores_per_chip * chips_per_board; }
};

// Loads a device YAML with overrides (flag `--set`). UserError `file:line: key: message`.
TpuSpec load_tpu_spec(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace xpusim::tpu
