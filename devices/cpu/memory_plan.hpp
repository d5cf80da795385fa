// Static memory plan for the executor: walks the schedule once and lets tensors whose
// lifetimes do not overlap share one buffer (best-fit reuse of freed blocks), the way
// frameworks free activation gradients as soon as their last consumer ran. Views
// (reshape) alias the storage of the tensor they view.
#pragma once
#include <cstdint>
#include <vector>

#include "models/graph.hpp"

namespace xpusim::cpu {

struct MemoryPlan {
  std::vector<int> block_of;          // tensor id -> block index
  std::vector<int64_t> block_floats;  // block index -> size in floats
};

// `share` = false gives every non-view tensor a block of its own (gradient checks read
// every intermediate tensor after the step). `floats` (per tensor, optional) overrides the
// storage size, in floats, of each tensor (default: its element count).
MemoryPlan plan_memory(const OpGraph& g, bool share, const std::vector<int64_t>& floats = {});

}  // namespace xpusim::cpu
