// The per-core program the TPU model executes: a list of tasks, each bound to one unit
// (MXU, vector unit, inbound/outbound DMA, ICI, infeed) with its amount of work and the
// earlier tasks it waits for. Units run their own tasks in program order, concurrently with
// each other, so overlap (double-buffered DMA, all-reduce behind the backward pass) and
// stalls emerge from the event simulation rather than from a formula.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace xpusim::tpu {

enum class Unit { mxu, vector, dma_in, dma_out, ici, infeed };
inline constexpr int kNumUnits = 6;
const char* unit_name(Unit u);

struct Task {
  Unit unit = Unit::vector;
  double seconds = 0;        // compute units: busy time; DMA: extra fixed time
  double bytes = 0;          // DMA and ICI: bytes moved (time from the unit's bandwidth)
  double flops = 0;          // MXU: this chunk's share of the op's FLOPs; vector: operations issued
                             // (padded lanes and partial-sum adds included); for traces only
  std::vector<int> deps;     // task indices that must finish first (all earlier in the list)
  int op = -1;               // index into Program::ops
};

// One fused op (an XLA fusion: an anchor op plus the element-wise ops folded into it).
struct FusedOp {
  std::string name;          // name of the anchor op in the graph
  std::string kind;          // op kind of the anchor (json name)
  double flops = 0;
  double hbm_bytes = 0;
  int chunks = 1;            // VMEM-sized pieces it was split into
};

struct Program {
  std::vector<Task> tasks;
  std::vector<FusedOp> ops;
  double mxu_flops = 0;         // useful MXU flops of the step (for utilisation)
  double hbm_bytes = 0;
  double ici_bytes = 0;
  int64_t infeed_bytes = 0;     // one per-core batch as sent over PCIe (real data)
};

}  // namespace xpusim::tpu
