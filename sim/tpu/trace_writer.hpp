// Chrome / Perfetto trace-event JSON of one simulated step: one process (pid) per TensorCore
// of the placement, each simulated as its own core, named "core i (chip c)"; one track (tid)
// per unit; one complete event ("ph": "X") per task the core executed, times in
// microseconds, with the task's FLOPs and bytes in its args.
#pragma once
#include <string>

#include "sim/tpu/core_model.hpp"

namespace xpusim::tpu {

struct TraceInfo {
  std::string device;        // device name, for the process names
  int cores = 1;             // TensorCores of the placement (data-parallel replicas)
  int cores_per_chip = 1;
  double predicted_step_time_s = 0;  // the prediction's (one-core) step, for the metadata
  int prefetch_depth = 0;            // SimConfig's: the host and infeed queues' capacity, batches
  double dma_burst_bytes = 0;        // SimConfig's: a DMA queue holds its transfer's bursts
};

// `r` must hold the events of every core of the placement (SimConfig::simulated_cores ==
// info.cores); an event of any other core is an InternalError.
void write_trace(const std::string& path, const Program& p, const SimResult& r, const TraceInfo& info);

}  // namespace xpusim::tpu
