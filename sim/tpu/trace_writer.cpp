// Writes the trace-event JSON (format: "Trace Event Format", Google, the format Perfetto
// and chrome://tracing load).
//
// With a trace the engine simulates every TensorCore of the placement as its own core
// (core_model.hpp), so each process carries only the events its core produced: the
// all-reduce on the ici track is that core's part of the ring exchange, and it ends when
// the ring does on every core.
#include "sim/tpu/trace_writer.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"

namespace xpusim::tpu {

void write_trace(const std::string& path, const Program& p, const SimResult& r, const TraceInfo& info) {
  nlohmann::json ev = nlohmann::json::array();
  const int cores = info.cores > 0 ? info.cores : 1;
  const int per_chip = info.cores_per_chip > 0 ? info.cores_per_chip : 1;
  if (r.core_step_time_s.size() != static_cast<size_t>(cores))
    throw InternalError("write_trace: " + std::to_string(r.core_step_time_s.size()) + " simulated cores for " +
                        std::to_string(cores) + " in the placement");
  for (int core = 0; core < cores; ++core) {
    const std::string pname = "xpusim tpu_systemc: " + info.device + " core " + std::to_string(core) + " (chip " +
                              std::to_string(core / per_chip) + ")";
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", core}, {"args", {{"name", pname}}}});
    ev.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", core}, {"args", {{"sort_index", core}}}});
    for (int u = 0; u < kNumUnits; ++u)
      ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", core}, {"tid", u},
                    {"args", {{"name", unit_name(static_cast<Unit>(u))}}}});
  }
  for (const auto& e : r.trace) {
    if (e.core < 0 || e.core >= cores) throw InternalError("write_trace: event of core " + std::to_string(e.core));
    const FusedOp& op = p.ops.at(static_cast<size_t>(e.op));
    const Task& t = p.tasks.at(static_cast<size_t>(e.task));
    // flops/bytes: this task's share (one chunk of the fused op on this unit); op_*: the
    // whole fused op, so a reader can sum either without double counting.
    ev.push_back({{"name", op.name}, {"cat", op.kind}, {"ph", "X"}, {"pid", e.core},
                  {"tid", static_cast<int>(e.unit)}, {"ts", e.start_s * 1e6}, {"dur", (e.end_s - e.start_s) * 1e6},
                  {"args", {{"flops", t.flops}, {"bytes", t.bytes}, {"op_flops", op.flops},
                            {"op_hbm_bytes", op.hbm_bytes}, {"op_chunks", op.chunks}}}});
  }
  // What was simulated, for a reader who did not run it (the format keeps "otherData").
  const nlohmann::json other{
      {"device", info.device},
      {"cores", cores},
      {"simulated_cores", r.core_step_time_s.size()},
      {"cores_per_chip", per_chip},
      {"simulated_step_time_s", r.core_step_time_s},
      {"predicted_step_time_s", info.predicted_step_time_s},
      {"step_time_note", "simulated_step_time_s: the measured step of each simulated core; predicted_step_time_s: "
                         "the prediction's, from one simulated core. They differ only where the two DMA queues of a "
                         "core reach its HBM channel at the same picosecond (docs/tpu-model.md, Every core)"},
      {"step", "the measured (second) simulated step; ts from the end of core 0's warm-up step"},
      {"all_reduce", cores > 1 ? "ring exchange between the simulated cores (core i sends to i+1 and i-1)"
                               : "none (one core)"}};
  const nlohmann::json doc{{"traceEvents", ev}, {"displayTimeUnit", "ns"}, {"otherData", other}};
  try {
    write_file_checked(path, [&](std::ostream& out) { out << doc.dump() << "\n"; });
  } catch (const UserError& e) {
    throw FieldError("trace", e.what());
  }
}

}  // namespace xpusim::tpu
