// Writes the trace-event JSON (format: "Trace Event Format", Google, the format Perfetto
// and chrome://tracing load), streamed and coalesced (see write_trace below).
//
// With a trace the engine simulates every TensorCore of the placement as its own core
// (core_model.hpp), so each process carries only the events its core produced: the
// all-reduce on the ici track is that core's part of the ring exchange, and it ends when
// the ring does on every core.
#include "sim/tpu/trace_writer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/chunked_writer.hpp"
#include "common/error.hpp"
#include "sim/tpu/trace_counters.hpp"
#include "sim/tpu/trace_queue_counters.hpp"
#include "sim/tpu/trace_text.hpp"

namespace xpusim::tpu {

namespace {

// Two back-to-back tasks of one op on one unit: the simulation's clock is in picoseconds, so
// a gap under half of one is no gap.
constexpr double kContiguous_s = 0.5e-12;

// The track of a core's ICI waits, after the units' tracks (tid = Unit).
constexpr int kIciWaitTid = kNumUnits;

// Per link of an every-core run over ICI links: bytes carried, busy time and the time chunks
// queued for it, over the whole simulated run.
nlohmann::json ici_links_json(const SimResult& r) {
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : r.ici_links)
    links.push_back({{"link", l.name}, {"bytes", l.bytes}, {"busy_s", l.busy_s}, {"queued_s", l.queued_s}});
  return links;
}

// Where each core waited on the ICI (core_model.hpp, IciWait): one complete event per wait on
// the core's ici_wait track, named after the all-reduce it belongs to.
template <class Event>
void write_ici_waits(const SimResult& r, const std::vector<std::string>& op_names, Event&& event) {
  std::string body;
  for (const auto& w : r.ici_waits) {
    body = "{\"ph\":\"X\",\"pid\":" + std::to_string(w.core) + ",\"tid\":" + std::to_string(kIciWaitTid) + ",\"ts\":";
    put_us(body, w.start_s);
    body += ",\"dur\":";
    put_us(body, w.end_s - w.start_s);
    body += ",\"name\":" + op_names.at(static_cast<size_t>(w.op)) +
            ",\"cat\":\"ici_wait\",\"args\":{\"waiting_for\":\"a neighbour's chunk: a busy link on its way or a late neighbour\"}}";
    event(body);
  }
}

// What the queue-depth counters hold (trace_queue_counters.hpp).
std::string queue_counters_note() {
  return "per core, \"QUEUE_depth\" (the VCD's signals): hbm_read_queue_depth / hbm_write_queue_depth = DMA bursts of "
         "the current HBM read / write transfer not yet issued; host_queue_depth = input batches the host prepared for "
         "the core, not yet sent over PCIe; infeed_queue_depth = batches in device memory, not yet consumed. Merged into "
         "the same " + std::to_string(BandwidthCounters::kBins) + " bins as the GB/s counters: the MAXIMUM depth held in "
         "each bin, a point where it changes, and the depth at the end of the step as the last point";
}

// Each queue's capacity, for a reader checking the counters: the prefetch depth for the host
// and infeed queues (their sum never exceeds it), the bursts of the largest transfer for a DMA queue.
nlohmann::json queue_capacity_json(const Program& p, const TraceInfo& info) {
  double in = 0, out = 0;
  for (const Task& t : p.tasks)
    if (t.unit == Unit::dma_in) in = std::max(in, t.bytes);
    else if (t.unit == Unit::dma_out) out = std::max(out, t.bytes);
  auto bursts = [&](double bytes) {
    return info.dma_burst_bytes > 0 ? static_cast<int64_t>(std::ceil(bytes / info.dma_burst_bytes)) : int64_t{0};
  };
  return {{queue_counter_name(Queue::hbm_read), bursts(in)},
          {queue_counter_name(Queue::hbm_write), bursts(out)},
          {queue_counter_name(Queue::host), info.prefetch_depth},
          {queue_counter_name(Queue::infeed), info.prefetch_depth},
          {"unit", "DMA queues: bursts; host and infeed queues: batches"}};
}

}  // namespace

// Consecutive tasks of the same fused op on the same unit of the same core, each starting
// where the previous ended, are one busy interval: they are written as one complete event
// whose flops and bytes are the tasks' sums and whose `tasks` says how many it holds. A
// ResNet-50 step issues its convolutions as thousands of chunks per unit; drawn one by one
// they made the v2-8 trace ~200k events (47 MB, 9 s and 713 MB to write as a DOM, issue 36).
// Events are written as they are produced (common/chunked_writer.hpp, `.gz` gzipped), per
// core, then unit, then time.
void write_trace(const std::string& path, const Program& p, const SimResult& r, const TraceInfo& info) {
  const int cores = info.cores > 0 ? info.cores : 1;
  const int per_chip = info.cores_per_chip > 0 ? info.cores_per_chip : 1;
  if (r.core_step_time_s.size() != static_cast<size_t>(cores))
    throw InternalError("write_trace: " + std::to_string(r.core_step_time_s.size()) + " simulated cores for " +
                        std::to_string(cores) + " in the placement");
  for (const auto& e : r.trace)
    if (e.core < 0 || e.core >= cores) throw InternalError("write_trace: event of core " + std::to_string(e.core));
  std::vector<size_t> order(r.trace.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const TraceEvent &x = r.trace[a], &y = r.trace[b];
    if (x.core != y.core) return x.core < y.core;
    if (x.unit != y.unit) return x.unit < y.unit;
    return x.start_s < y.start_s;
  });

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
      {"events", "one complete event per busy interval of a unit: back-to-back tasks of one fused op are merged; "
                 "args.tasks = how many, args.flops / args.bytes = their sums, args.op_* = the whole fused op"},
      {"simulated_tasks", r.trace.size()},
      {"counters", "per core, \"UNIT GB/s\": the rate a data-moving unit (hbm_read, hbm_write, ici, infeed) moves "
                   "bytes at, from the same merged intervals (an interval's bytes over its duration), averaged over 1000 "
                   "equal bins of the step; a point where the average changes"},
      {"queue_counters", queue_counters_note()},
      {"queue_capacity", queue_capacity_json(p, info)},
      {"all_reduce", cores > 1 ? (r.ici_links.empty()
                                      ? "ring exchange between the simulated cores (core i sends to i+1 and i-1)"
                                      : "ring exchange between the simulated cores (core i sends to i+1 and i-1) over "
                                        "the board's ICI links (ici_links); tid 6 shows where a core waited on them")
                               : "none (one core)"},
      {"ici_links", ici_links_json(r)}};
  try {
    ChunkedFileWriter out(path, "");
    out.write("{\"displayTimeUnit\":\"ns\",\"otherData\":" + other.dump() + ",\"traceEvents\":[");
    bool first = true;
    auto event = [&](const std::string& body) {
      out.write(first ? "\n" : ",\n");
      first = false;
      out.write(body);
    };
    for (int core = 0; core < cores; ++core) {
      const std::string pid = std::to_string(core);
      const std::string pname = "xpusim tpu_systemc: " + info.device + " core " + pid + " (chip " +
                                std::to_string(core / per_chip) + ")";
      event("{\"ph\":\"M\",\"pid\":" + pid + ",\"name\":\"process_name\",\"args\":{\"name\":" +
            nlohmann::json(pname).dump() + "}}");
      event("{\"ph\":\"M\",\"pid\":" + pid + ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":" + pid +
            "}}");
      for (int u = 0; u < kNumUnits; ++u)
        event("{\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + std::to_string(u) +
              ",\"name\":\"thread_name\",\"args\":{\"name\":\"" + unit_name(static_cast<Unit>(u)) + "\"}}");
      if (!r.ici_links.empty())
        event("{\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + std::to_string(kIciWaitTid) +
              ",\"name\":\"thread_name\",\"args\":{\"name\":\"ici_wait\"}}");
    }
    // Per fused op, once: its escaped name and kind, and the args of the whole op.
    std::vector<std::string> names(p.ops.size()), kinds(p.ops.size()), op_args(p.ops.size());
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const FusedOp& op = p.ops[i];
      names[i] = nlohmann::json(op.name).dump();
      kinds[i] = nlohmann::json(op.kind).dump();
      op_args[i] = ",\"op_flops\":";
      put_num(op_args[i], op.flops);
      op_args[i] += ",\"op_hbm_bytes\":";
      put_num(op_args[i], op.hbm_bytes);
      op_args[i] += ",\"op_chunks\":" + std::to_string(op.chunks) + "}}";
    }
    std::string body;
    BandwidthCounters counters;
    for (size_t i = 0; i < order.size();) {
      const TraceEvent& e = r.trace[order[i]];
      double end_s = e.end_s, flops = 0, bytes = 0;
      size_t j = i;
      for (; j < order.size(); ++j) {
        const TraceEvent& n = r.trace[order[j]];
        if (j > i && (n.core != e.core || n.unit != e.unit || n.op != e.op || std::fabs(n.start_s - end_s) > kContiguous_s))
          break;
        const Task& t = p.tasks.at(static_cast<size_t>(n.task));
        flops += t.flops;
        bytes += t.bytes;
        end_s = n.end_s;
      }
      const size_t op_index = static_cast<size_t>(e.op);
      if (op_index >= p.ops.size()) throw InternalError("write_trace: event of op " + std::to_string(e.op));
      body.clear();
      body += "{\"ph\":\"X\",\"pid\":" + std::to_string(e.core) + ",\"tid\":" + std::to_string(static_cast<int>(e.unit)) +
              ",\"ts\":";
      put_us(body, e.start_s);
      body += ",\"dur\":";
      put_us(body, end_s - e.start_s);
      body += ",\"name\":" + names[op_index] + ",\"cat\":" + kinds[op_index] + ",\"args\":{\"flops\":";
      put_num(body, flops);
      body += ",\"bytes\":";
      put_num(body, bytes);
      body += ",\"tasks\":" + std::to_string(j - i) + op_args[op_index];
      event(body);
      counters.add(e.core, e.unit, e.start_s, end_s, bytes);
      i = j;
    }
    counters.write(event);
    double t0 = 0, t1 = 0;
    if (counters.grid(t0, t1)) write_queue_counters(r.queue_depths, t0, t1, BandwidthCounters::kBins, event);
    write_ici_waits(r, names, event);
    out.write("\n]}\n");
    out.close();
  } catch (const UserError& e) {
    throw FieldError("trace", e.what());
  }
}

}  // namespace xpusim::tpu
