// SCALE-Sim-compatible compute cycles of convolution layers on one systolic array
// (Samajdar et al., "SCALE-Sim: Systolic CNN Accelerator Simulator", arXiv:1811.02883;
// SCALE-Sim v2, github.com/scalesim-project/scale-sim-v2). Stall-free convention, batch 1,
// no padding: per fold 2R + C + T - 2 cycles (ws, is) or R + C + T - 2 (os), and a layer
// takes folds x per-fold - 1 cycles. Closed form per layer, so a whole network takes
// microseconds instead of SCALE-Sim's cycle-by-cycle demand matrices.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace xpusim::tpu {

enum class Dataflow { ws, os, is };
bool parse_dataflow(const std::string& s, Dataflow& out);

// Bounds of the inputs (a typo, not a layer, beyond them): each topology value and each
// array dimension. Cycle counts are computed with checked arithmetic on top.
constexpr int64_t kMaxTopologyValue = int64_t{1} << 24;
constexpr int64_t kMaxArrayDim = int64_t{1} << 16;

struct TopologyLayer {
  std::string name;
  int64_t ifmap_h = 0, ifmap_w = 0, filter_h = 0, filter_w = 0, channels = 0, filters = 0, stride = 1;
};

// Reads a SCALE-Sim topology CSV (header `Layer name, IFMAP Height, IFMAP Width, Filter
// Height, Filter Width, Channels, Num Filter, Strides,`). UserError `file:line: message`.
std::vector<TopologyLayer> read_topology_csv(const std::string& path);

struct LayerCycles {
  std::string name;
  int64_t sr = 0, sc = 0, t = 0;   // mapped rows, mapped columns, streamed length
  int64_t folds = 0;
  int64_t cycles = 0;
  double macs = 0;
  double utilization = 0;          // MACs / (R x C x cycles)
};

LayerCycles scalesim_layer(const TopologyLayer& l, int64_t rows, int64_t cols, Dataflow df);

}  // namespace xpusim::tpu
