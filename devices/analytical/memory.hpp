// Device memory of one training step: weights, gradients, optimizer state and the peak of
// live activations over the schedule (counted on the graph, models/work.cpp), plus conv
// workspace and the runtime's reserved memory -> fits_in_memory.
#pragma once
#include <cstdint>

#include "devices/analytical/device_spec.hpp"
#include "models/graph.hpp"

namespace xpusim::analytical {

struct MemoryEstimate {
  int64_t persistent_bytes = 0;  // weights (+ low-precision copy), gradients, optimizer state
  int64_t activation_bytes = 0;  // peak of transient tensors (saved activations dominate)
  int64_t workspace_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t framework_bytes = 0;   // allocator slack and framework copies (framework profile)
  int64_t total_bytes = 0;
  int64_t capacity_bytes = 0;
  bool fits() const { return total_bytes <= capacity_bytes; }
};

MemoryEstimate estimate_memory(const OpGraph& g, const DeviceSpec& d, int vcpus);

}  // namespace xpusim::analytical
