// Writes the trace-event JSON (format: "Trace Event Format", Google, the format Perfetto
// and chrome://tracing load).
#include "sim/tpu/trace_writer.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "common/checked_io.hpp"
#include "common/error.hpp"

namespace xpusim::tpu {

void write_trace(const std::string& path, const Program& p, const SimResult& r) {
  nlohmann::json ev = nlohmann::json::array();
  for (int u = 0; u < kNumUnits; ++u)
    ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", u},
                  {"args", {{"name", unit_name(static_cast<Unit>(u))}}}});
  for (const auto& e : r.trace) {
    const FusedOp& op = p.ops.at(static_cast<size_t>(e.op));
    ev.push_back({{"name", op.name}, {"cat", op.kind}, {"ph", "X"}, {"pid", 0},
                  {"tid", static_cast<int>(e.unit)}, {"ts", e.start_s * 1e6}, {"dur", (e.end_s - e.start_s) * 1e6}});
  }
  const nlohmann::json doc{{"traceEvents", ev}, {"displayTimeUnit", "ns"}};
  try {
    write_file_checked(path, [&](std::ostream& out) { out << doc.dump() << "\n"; });
  } catch (const UserError& e) {
    throw FieldError("trace", e.what());
  }
}

}  // namespace xpusim::tpu
