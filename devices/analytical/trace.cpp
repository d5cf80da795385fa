// See trace.hpp. The JSON is written by hand, event by event: building a DOM of every event
// first is what made the TPU trace of one ResNet-50 step take seconds and hundreds of MB.
#include "devices/analytical/trace.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/chunked_writer.hpp"
#include "common/error.hpp"
#include "models/op_kinds.hpp"

namespace xpusim::analytical {

namespace {

// Microseconds with nanosecond resolution: fixed-point text is deterministic and short.
std::string us(double seconds) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", seconds * 1e6);
  return b;
}

std::string num(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }

enum Track { kCompute = 1, kMemory = 2, kCommunication = 3 };

struct Writer {
  ChunkedFileWriter& out;
  bool first = true;
  void event(const std::string& body) {
    out.write(first ? "\n" : ",\n");
    first = false;
    out.write(body);
  }
  void slice(int pid, int tid, const std::string& name, const char* cat, double start_s, double dur_s,
             const std::string& args) {
    event("{\"ph\":\"X\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + us(start_s) +
          ",\"dur\":" + us(dur_s) + ",\"name\":" + name + ",\"cat\":\"" + cat + "\",\"args\":{" + args + "}}");
  }
  void counter(int pid, const char* name, double at_s, const char* key, double v) {
    event("{\"ph\":\"C\",\"pid\":" + std::to_string(pid) + ",\"ts\":" + us(at_s) + ",\"name\":\"" + name +
          "\",\"args\":{\"" + key + "\":" + num(v) + "}}");
  }
  void meta(int pid, int tid, const char* what, const std::string& name) {
    event("{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + (tid >= 0 ? ",\"tid\":" + std::to_string(tid) : "") +
          ",\"name\":\"" + what + "\",\"args\":{\"name\":" + quoted(name) + "}}");
  }
  void sort_index(int pid, int tid, int index) {
    event("{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
          ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" + std::to_string(index) + "}}");
  }
};

}  // namespace

void write_trace(const std::string& path, const OpGraph& g, const std::vector<OpCost>& costs,
                 const parallel::ComposedStep& step, const TraceInfo& info) {
  if (costs.size() != static_cast<size_t>(g.num_ops()) || step.start_s.size() != costs.size())
    throw InternalError("analytical trace: one cost and one start per op expected");
  const int devices = std::max(1, std::min(info.devices, kMaxTraceDevices));
  ChunkedFileWriter out(path, "trace");
  nlohmann::ordered_json meta;
  meta["source"] = "xpusim analytical engine: estimated per-op timeline (not a measurement)";
  meta["device"] = info.device;
  meta["system"] = info.system;
  meta["model"] = info.model;
  meta["precision"] = info.precision;
  meta["devices"] = info.devices;
  meta["devices_in_trace"] = devices;
  meta["device_step_s"] = info.device_step_s;
  meta["note"] = "data-parallel replicas run the same ops; the step's host part (input pipeline, framework "
                 "overhead) is not on the device timeline";
  out.write("{\"displayTimeUnit\":\"ns\",\"otherData\":" + meta.dump() + ",\"traceEvents\":[");
  Writer w{out};
  const std::vector<int> order = g.schedule();
  for (int d = 0; d < devices; ++d) {
    w.meta(d, -1, "process_name", "device " + std::to_string(d) + ": " + info.device);
    w.meta(d, kCompute, "thread_name", "compute");
    w.meta(d, kMemory, "thread_name", "memory (DRAM)");
    w.meta(d, kCommunication, "thread_name", "communication");
    for (int t : {kCompute, kMemory, kCommunication}) w.sort_index(d, t, t);
    double in_flight = 0;  // all-reduce bytes on the links (counter)
    for (int op : order) {
      const size_t i = static_cast<size_t>(op);
      const OpCost& c = costs[i];
      if (c.cls == OpClass::none) continue;  // inputs, views: no time
      const OpNode& n = g.op(op);
      const std::string name = quoted(n.name);
      const char* cat = op_kind_name(n.kind);
      const std::string common = "\"kind\":\"" + std::string(cat) + "\",\"phase\":\"" + phase_name(n.phase) + "\"";
      if (c.cls == OpClass::communication) {
        const double t = step.collective_s[i];
        w.slice(d, kCommunication, name, cat, step.start_s[i], t, common + ",\"bytes\":" + num(c.comm_bytes));
        in_flight += c.comm_bytes;
        w.counter(d, "in flight all-reduce bytes", step.start_s[i], "bytes", in_flight);
        in_flight -= c.comm_bytes;
        w.counter(d, "in flight all-reduce bytes", step.end_s[i], "bytes", in_flight);
        continue;
      }
      const double start = step.start_s[i];
      const double bytes = static_cast<double>(n.work.bytes_read + n.work.bytes_written);
      const std::string work = common + ",\"flops\":" + num(n.work.flops) + ",\"bytes\":" + num(bytes) +
                               ",\"bound\":\"" + (c.compute_s >= c.memory_s ? "compute" : "memory") + "\"";
      if (c.overhead_s > 0) w.slice(d, kCompute, "\"launch\"", "overhead", start, c.overhead_s, common);
      const double body = start + c.overhead_s;
      if (c.compute_s > 0) w.slice(d, kCompute, name, cat, body, c.compute_s, work);
      if (c.memory_s > 0) {
        w.slice(d, kMemory, name, cat, body, c.memory_s, work);
        w.counter(d, "DRAM GB/s", body, "GB/s", bytes / c.memory_s / 1e9);
        w.counter(d, "DRAM GB/s", body + c.memory_s, "GB/s", 0);
      }
    }
  }
  out.write("\n]}\n");
  out.close();
}

}  // namespace xpusim::analytical
