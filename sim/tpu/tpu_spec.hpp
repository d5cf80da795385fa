// TpuSpec: one TPU device YAML (configs/devices/tpu_v2 ... tpu_v6e.yaml) parsed once by
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
  bool simulate_board = true;            // every core of a board-sized placement, not core 0 alone
  std::string source;
  // Generation-level figures (issue 32): what the chip is sold as, stated with a source in the
  // YAML. The peak is checked against the MXUs and clock of the file (load_tpu_spec).
  double peak_bf16_tflops_per_chip = 0;  // 0: not stated
  double peak_int8_tops_per_chip = 0;    // 0: no int8 figure published
  double peak_fp8_tflops_per_chip = 0;   // 0: no fp8 mode
  long long cmem_bytes_per_chip = 0;     // common memory (TPU v4 CMEM); 0: none published
  int ici_dims = 2;                      // 2: 2D torus (v2, v3, v5e, v6e); 3: 3D torus (v4, v5p)
  int pod_chips = 0;                     // chips in the largest single slice (0: the board only)
  // Slice shapes the generation offers, in chips per dimension ("16x16", "4x4x8"), the board's first.
  std::vector<std::vector<int>> slice_shapes;
  bool slice_name_counts_cores = true;   // `v5p-128` counts TensorCores; `v5e-256` counts chips
  std::string slice_prefix;              // the accelerator-type name: "v5p", "v5litepod", "v6e"
  // A slice dimension closes into a ring (wraparound link) when its size is a multiple of this:
  // the full pod side on 2D generations, the 4-chip cube side on 3D ones (OCS closes it).
  int wraparound_multiple = 0;           // 0: never
  double host_nic_gbps = 0;              // data-center network per host, Gbit/s (0: not published)
  // The large-model planner's host and DCN figures (parallel/tpu_llm.hpp): per-chip host link
  // (PCIe, GB/s one direction) for offloaded activations, and the DCN all-reduce's sustained
  // share of the NIC and per-ring-step latency (fitted on the shared MaxText v5e rows).
  double host_link_gbps = 0;
  double dcn_efficiency = 1.0;
  double dcn_step_latency_us = 10;
  // Fields whose value is derived from other figures, taken from a secondary source, or
  // estimated (no published figure): the YAML marks them so.
  std::vector<std::string> derived_fields, secondary_fields, estimated_fields;

  double cycle_s() const { return 1e-6 / clock_mhz; }
  int cores_per_board() const { return cores_per_chip * chips_per_board; }
  // bf16 MACs per second of one chip from the MXUs and clock, x2 (FLOPs).
  double mxu_peak_flops_per_chip() const {
    return 2.0 * mxu_count * mxu_rows * mxu_cols * clock_mhz * 1e6 * cores_per_chip;
  }
  // ICI bandwidth of one chip, both directions of every link (the figure Cloud TPU docs give).
  double ici_bidirectional_bytes_per_s_per_chip() const {
    return 2.0 * ici_links_per_chip * ici_link_bandwidth_gbps * 1e9;
  }
};

// Relative tolerance of the peak check: published peaks are rounded (TPU v2: 45.9 -> 46).
inline constexpr double kPeakTolerance = 0.01;

// Loads a device YAML with overrides (flag `--set`). UserError `file:line: key: message`.
TpuSpec load_tpu_spec(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace xpusim::tpu
