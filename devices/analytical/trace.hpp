// An estimated per-op timeline of the analytical engine's step as Chrome / Perfetto
// trace-event JSON (`predict --trace PATH`, `.json.gz` gzipped). The roofline model prices
// each op as max(compute, memory) + launch overhead and the step composer places ops on a
// compute stream and a communication stream (parallel/step_composer.hpp); the trace draws
// exactly that, per device of the placement:
//   one process (pid) per device ("device i: NAME"), data-parallel replicas run the same ops;
//   tracks (tid) 1 "compute" (launch slice, then the op's FLOPs at the effective rate),
//   2 "memory" (the op's DRAM traffic at the effective bandwidth, overlapping its compute),
//   3 "communication" (gradient all-reduces, overlapping backward);
//   counter tracks "DRAM GB/s" and "in flight all-reduce bytes" per device.
// It is an estimate: op times are the model's, not a measurement, and the step's host part
// (input pipeline, framework overhead) is outside the device timeline (metadata says both).
// Events are written as they are produced (common/chunked_writer.hpp), in a fixed order with
// fixed-point microseconds, so the same inputs give the same bytes.
#pragma once
#include <string>
#include <vector>

#include "devices/analytical/op_cost.hpp"
#include "models/graph.hpp"
#include "parallel/step_composer.hpp"

namespace xpusim::analytical {

struct TraceInfo {
  std::string device, system, model, precision;
  int devices = 1;           // devices of the placement (each gets its tracks, up to kMaxTraceDevices)
  double device_step_s = 0;  // the devices' step (both streams drained, weights pulled)
};

// Past this many devices the trace holds the first kMaxTraceDevices (data-parallel replicas
// are identical); the metadata says how many were left out.
inline constexpr int kMaxTraceDevices = 64;

// `costs` and `step` are indexed by op id (price_ops and StepComposer::compose).
void write_trace(const std::string& path, const OpGraph& g, const std::vector<OpCost>& costs,
                 const parallel::ComposedStep& step, const TraceInfo& info);

}  // namespace xpusim::analytical
