// Queue-depth counter tracks ("ph": "C") of the TPU trace: per TensorCore, the depth of each
// queue the core model keeps (the VCD's *_queue_depth signals): DMA bursts of the current HBM
// read / write transfer not yet issued, and host-prepared / device-resident input batches
// (SimResult::queue_depths). A DMA queue changes at every burst (tens of thousands of times a
// step), so the depths are merged into the bandwidth counters' bins (trace_counters.hpp): the
// MAXIMUM depth held in each bin, a point where it changes, and the depth at the end of the
// step as the last point. A short-lived peak stays visible; the area under it means nothing.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "sim/tpu/core_model.hpp"

namespace xpusim::tpu {

// Writes the "C" events of `changes` (per (core, queue) in time order), per core, then queue,
// then time, on the grid [t0, t1] of `bins` bins. Counter names: vcd_signal_names()' queue
// names ("hbm_read_queue_depth", ...), args {"depth": n}.
void write_queue_counters(const QueueDepthLog& changes, double t0, double t1, int bins,
                          const std::function<void(const std::string&)>& event);

// The name of `q`'s counter (and VCD signal).
const std::string& queue_counter_name(Queue q);

}  // namespace xpusim::tpu
