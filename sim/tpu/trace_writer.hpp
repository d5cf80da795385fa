// Chrome / Perfetto trace-event JSON of one simulated step: one process (pid) per TensorCore
// of the placement, named; one track (tid) per unit; one complete event ("ph": "X") per task,
// times in microseconds, with the task's FLOPs and bytes in its args.
#pragma once
#include <string>

#include "sim/tpu/core_model.hpp"

namespace xpusim::tpu {

struct TraceInfo {
  std::string device;        // device name, for the process names
  int cores = 1;             // TensorCores of the placement (data-parallel replicas)
  int cores_per_chip = 1;
};

void write_trace(const std::string& path, const Program& p, const SimResult& r, const TraceInfo& info);

}  // namespace xpusim::tpu
