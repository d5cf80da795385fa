// `xpusim predict --explain`: the analytical engine's per-op prices with the kernel model's
// split (math, memory, launch; tile, waves, wave/tile efficiency), so a user sees why a step
// takes what it takes. Same rates as the engine (stack_rates), no timeline.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "devices/analytical/device_spec.hpp"
#include "engine/framework_spec.hpp"
#include "models/graph.hpp"

namespace xpusim::analytical {

struct OpExplain {
  std::string name, kind, op_class;
  double time_s = 0;        // the op's whole price: max(compute, memory) + launch
  double math_s = 0;        // arithmetic alone (kernel model: waves x tile math; else FLOPs / rate)
  double memory_s = 0;      // operand and output traffic (L2/DRAM) or streamed bytes
  double launch_s = 0;      // launches and dispatch
  double tile_m = 0, tile_n = 0, waves = 0, wave_efficiency = 0;  // kernel model, GEMM-like ops
  bool unaligned = false;   // GPUs: a tensor-core GEMM on unaligned kernels (gemm_alignment.hpp)
};

// Every op of the graph that costs device time (communication excluded), in schedule order.
// `build` is the resolved CPU build (--build, or the framework name's -pip/-compiled suffix);
// empty = the device's default, as the engine prices it.
std::vector<OpExplain> explain_ops(const OpGraph& g, const DeviceSpec& d, const FrameworkSpec& fw, int count,
                                   std::optional<CpuBuild> build = std::nullopt);

}  // namespace xpusim::analytical
