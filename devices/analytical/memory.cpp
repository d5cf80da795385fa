#include "devices/analytical/memory.hpp"

#include <algorithm>

#include "models/work.hpp"

namespace xpusim::analytical {

MemoryEstimate estimate_memory(const OpGraph& g, const DeviceSpec& d, int vcpus) {
  GraphTotals t = graph_totals(g);
  MemoryEstimate m;
  m.persistent_bytes = t.weight_bytes + t.weight_grad_bytes + t.optimizer_state_bytes + t.low_precision_weight_bytes;
  m.activation_bytes = t.peak_bytes - m.persistent_bytes;
  // cuDNN picks the fastest algorithm whose workspace fits; frameworks budget it relative to
  // the layer sizes, so we take a fraction of the largest activation tensor.
  int64_t largest = 0;
  for (int i = 0; i < g.num_tensors(); ++i)
    if (g.tensor(i).role == TensorRole::activation && !g.tensor(i).is_view)
      largest = std::max(largest, g.tensor(i).desc.bytes());
  m.workspace_bytes = static_cast<int64_t>(d.workspace_fraction * static_cast<double>(largest));
  m.reserved_bytes = d.reserved_bytes;
  m.total_bytes = t.peak_bytes + m.workspace_bytes + m.reserved_bytes;
  m.capacity_bytes = d.memory_bytes > 0 ? d.memory_bytes : static_cast<int64_t>(d.memory_gb_per_vcpu * 1e9 * vcpus);
  return m;
}

}  // namespace xpusim::analytical
