// Writes the trace-event JSON (format: "Trace Event Format", Google, the format Perfetto
// and chrome://tracing load).
//
// Every TensorCore of a data-parallel job runs the same program on its own shard of the
// batch, and the model simulates that program once (core_model.hpp): the all-reduce, the
// only interaction between cores, is timed from the replica count. Each core's process in
// the trace therefore carries the simulated timeline; the process name says which core it
// is and that its timeline is the shared simulated one, so that a reader does not take
// identical tracks for independently simulated cores.
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
  for (int core = 0; core < cores; ++core) {
    std::string pname = "xpusim tpu_systemc: " + info.device + " core " + std::to_string(core) + " (chip " +
                        std::to_string(core / per_chip) + ")";
    if (cores > 1) pname += ", the program all " + std::to_string(cores) + " data-parallel cores run, simulated once";
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", core}, {"args", {{"name", pname}}}});
    ev.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", core}, {"args", {{"sort_index", core}}}});
    for (int u = 0; u < kNumUnits; ++u)
      ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", core}, {"tid", u},
                    {"args", {{"name", unit_name(static_cast<Unit>(u))}}}});
    for (const auto& e : r.trace) {
      const FusedOp& op = p.ops.at(static_cast<size_t>(e.op));
      const Task& t = p.tasks.at(static_cast<size_t>(e.task));
      // flops/bytes: this task's share (one chunk of the fused op on this unit); op_*: the
      // whole fused op, so a reader can sum either without double counting.
      ev.push_back({{"name", op.name}, {"cat", op.kind}, {"ph", "X"}, {"pid", core},
                    {"tid", static_cast<int>(e.unit)}, {"ts", e.start_s * 1e6}, {"dur", (e.end_s - e.start_s) * 1e6},
                    {"args", {{"flops", t.flops}, {"bytes", t.bytes}, {"op_flops", op.flops},
                              {"op_hbm_bytes", op.hbm_bytes}, {"op_chunks", op.chunks}}}});
    }
  }
  const nlohmann::json doc{{"traceEvents", ev}, {"displayTimeUnit", "ns"}};
  try {
    write_file_checked(path, [&](std::ostream& out) { out << doc.dump() << "\n"; });
  } catch (const UserError& e) {
    throw FieldError("trace", e.what());
  }
}

}  // namespace xpusim::tpu
