// SystemC implementation of the TensorCore model (see core_model.hpp). Each unit is an
// SC_THREAD that executes its own tasks in program order; a task starts when the tasks it
// depends on have finished, so units overlap exactly as far as the data dependences and
// the double-buffer window allow.
#include "sim/tpu/core_model.hpp"

#include <systemc>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>

#include "common/error.hpp"

namespace xpusim::tpu {

const std::vector<std::string>& vcd_signal_names() {
  // Busy flags in Unit order, then the queue depths and the step counter.
  static const std::vector<std::string> names = {
      "mxu_busy", "vector_busy", "dma_in_busy", "dma_out_busy", "ici_busy", "infeed_busy",
      "hbm_read_queue_depth", "hbm_write_queue_depth", "host_queue_depth", "infeed_queue_depth", "step"};
  return names;
}

const char* unit_name(Unit u) {
  switch (u) {
    case Unit::mxu: return "mxu";
    case Unit::vector: return "vector";
    case Unit::dma_in: return "hbm_read";
    case Unit::dma_out: return "hbm_write";
    case Unit::ici: return "ici";
    case Unit::infeed: return "infeed";
  }
  return "?";
}

namespace {

using sc_core::sc_time;
using sc_core::SC_SEC;

sc_time seconds(double s) { return sc_time(s > 0 ? s : 0.0, SC_SEC); }

SC_MODULE(CoreModel) {
  // Loaded per run.
  const Program* prog = nullptr;
  SimConfig cfg;
  bool want_trace = false;
  std::array<std::vector<int>, kNumUnits> queue;  // task ids per unit, program order
  std::vector<int> done_step;                      // last step in which each task finished
  std::vector<int> finished_in_step;
  std::vector<double> step_end;
  bool running = false;
  sc_time t0;
  sc_time hbm_free_at;
  int host_ready = 0, device_ready = 0;
  double stall_s = 0;
  SimResult res;

  sc_core::sc_event start_ev, done_ev, queue_ev;

  // Waveform signals (VCD). Written only while a VCD is recorded (`tracing`), so runs without
  // one schedule no extra update phases. Nobody waits on them: they observe, never steer.
  // Unchecked writers: the infeed depths change in more than one thread, possibly in the same
  // delta cycle; the last write of a delta is the value shown, which is what a queue holds then.
  template <class T>
  using Sig = sc_core::sc_signal<T, sc_core::SC_UNCHECKED_WRITERS>;
  bool tracing = false;
  std::array<Sig<bool>, kNumUnits> busy_sig;     // per unit: executing a task
  Sig<int> hbm_read_queue{"hbm_read_queue_depth"};    // bursts of the current inbound transfer not yet issued
  Sig<int> hbm_write_queue{"hbm_write_queue_depth"};  // same, outbound
  Sig<int> host_queue{"host_queue_depth"};            // batches prepared by the host, not yet sent
  Sig<int> infeed_queue{"infeed_queue_depth"};        // batches in device memory, not yet consumed
  Sig<int> step_sig{"step"};                          // simulated step being executed

  void set_busy(Unit u, bool b) {
    if (tracing) busy_sig[static_cast<size_t>(u)].write(b);
  }
  void set_depth(Sig<int>& s, int v) {
    if (tracing) s.write(v);
  }
  void publish_infeed() {
    set_depth(host_queue, host_ready);
    set_depth(infeed_queue, device_ready);
  }

  SC_CTOR(CoreModel)
      : busy_sig{Sig<bool>{"mxu_busy"}, Sig<bool>{"vector_busy"}, Sig<bool>{"dma_in_busy"},
                 Sig<bool>{"dma_out_busy"}, Sig<bool>{"ici_busy"}, Sig<bool>{"infeed_busy"}} {
    SC_THREAD(mxu_thread);
    SC_THREAD(vector_thread);
    SC_THREAD(dma_in_thread);
    SC_THREAD(dma_out_thread);
    SC_THREAD(ici_thread);
    SC_THREAD(infeed_thread);
    SC_THREAD(host_thread);
    SC_THREAD(pcie_thread);
  }

  double now_s() const { return (sc_core::sc_time_stamp() - t0).to_seconds(); }

  void mxu_thread() { unit_loop(Unit::mxu); }
  void vector_thread() { unit_loop(Unit::vector); }
  void dma_in_thread() { unit_loop(Unit::dma_in); }
  void dma_out_thread() { unit_loop(Unit::dma_out); }
  void ici_thread() { unit_loop(Unit::ici); }
  void infeed_thread() { unit_loop(Unit::infeed); }

  bool ready(int id, int step) const {
    for (int d : prog->tasks[static_cast<size_t>(id)].deps)
      if (done_step[static_cast<size_t>(d)] < step) return false;
    return true;
  }

  void unit_loop(Unit u) {
    for (;;) {
      sc_core::wait(start_ev);
      const auto& q = queue[static_cast<int>(u)];
      for (int step = 0; step < cfg.steps; ++step) {
        // Steps run back to back: the next starts when the whole previous one has finished.
        while (step > 0 && finished_in_step[static_cast<size_t>(step - 1)] < static_cast<int>(prog->tasks.size()))
          sc_core::wait(done_ev);
        if (u == Unit::mxu) set_depth(step_sig, step);
        for (int id : q) {
          while (!ready(id, step)) sc_core::wait(done_ev);
          double start = now_s();
          set_busy(u, true);
          execute(u, prog->tasks[static_cast<size_t>(id)]);
          set_busy(u, false);
          double end = now_s();
          if (step == cfg.steps - 1) {
            if (u != Unit::infeed) res.busy_s[static_cast<int>(u)] += end - start;
            if (want_trace && end > start)
              res.trace.push_back({u, prog->tasks[static_cast<size_t>(id)].op, id, start, end});
          }
          done_step[static_cast<size_t>(id)] = step;
          if (++finished_in_step[static_cast<size_t>(step)] == static_cast<int>(prog->tasks.size())) {
            step_end[static_cast<size_t>(step)] = end;
            if (step == cfg.steps - 1) {
              running = false;
              queue_ev.notify(sc_core::SC_ZERO_TIME);
            }
          }
          done_ev.notify(sc_core::SC_ZERO_TIME);
        }
      }
    }
  }

  void execute(Unit u, const Task& t) {
    switch (u) {
      case Unit::mxu:
      case Unit::vector:
        sc_core::wait(seconds(t.seconds));
        return;
      case Unit::dma_in:
        dma(t.bytes, hbm_read_queue);
        return;
      case Unit::dma_out:
        dma(t.bytes, hbm_write_queue);
        return;
      case Unit::ici: {
        // Bidirectional ring all-reduce (reduce-scatter + all-gather): each core sends and
        // receives 2(n-1)/n of the buffer in 2(n-1) latency-bound hops (Patarasuk & Yuan 2009).
        int n = cfg.replicas;
        if (n <= 1 || t.bytes <= 0) return;
        double steps = 2.0 * (n - 1);
        sc_core::wait(seconds(steps / n * t.bytes / cfg.ici_bytes_per_s + steps * cfg.ici_hop_latency_s));
        return;
      }
      case Unit::infeed: {
        if (!cfg.real_data) return;  // synthetic data lives on the device
        double w0 = now_s();
        while (device_ready == 0) sc_core::wait(queue_ev);
        --device_ready;
        publish_infeed();
        queue_ev.notify(sc_core::SC_ZERO_TIME);
        stall_s = now_s() - w0;
        return;
      }
    }
  }

  // One DMA transfer: the latency of the first access, then bursts that each hold the shared
  // HBM channel for burst/bandwidth (first come, first served between the two queues).
  void dma(double bytes, Sig<int>& depth) {
    if (bytes <= 0) return;
    int pending = static_cast<int>(std::ceil(bytes / cfg.dma_burst_bytes));
    set_depth(depth, pending);
    sc_core::wait(seconds(cfg.dma_latency_s));
    while (bytes > 0) {
      double b = bytes < cfg.dma_burst_bytes ? bytes : cfg.dma_burst_bytes;
      bytes -= b;
      set_depth(depth, --pending);
      sc_time now = sc_core::sc_time_stamp();
      sc_time start = hbm_free_at > now ? hbm_free_at : now;
      hbm_free_at = start + seconds(b / cfg.hbm_bytes_per_s);
      sc_core::wait(hbm_free_at - now);
    }
  }

  // The host input pipeline: prepares batches back to back while the prefetch queue has room.
  void host_thread() {
    for (;;) {
      sc_core::wait(start_ev);
      while (running && cfg.real_data) {
        sc_core::wait(seconds(cfg.host_batch_s));
        while (running && host_ready + device_ready >= cfg.prefetch_depth) sc_core::wait(queue_ev);
        if (!running) break;
        ++host_ready;
        publish_infeed();
        queue_ev.notify(sc_core::SC_ZERO_TIME);
      }
    }
  }

  // PCIe infeed: copies prepared batches into device memory, one at a time.
  void pcie_thread() {
    for (;;) {
      sc_core::wait(start_ev);
      while (running && cfg.real_data) {
        while (running && host_ready == 0) sc_core::wait(queue_ev);
        if (!running) break;
        --host_ready;
        publish_infeed();
        sc_core::wait(seconds(static_cast<double>(prog->infeed_bytes) / cfg.pcie_bytes_per_s));
        ++device_ready;
        publish_infeed();
        queue_ev.notify(sc_core::SC_ZERO_TIME);
      }
    }
  }
};

struct Kernel {
  std::unique_ptr<CoreModel> model;
  sc_core::sc_trace_file* vcd = nullptr;  // open from elaboration to the end of the first run
  std::string vcd_path;
  explicit Kernel(const std::string& vcd_file) : vcd_path(vcd_file) {
    // A bad path is refused before anything is elaborated, so a later run can still start.
    std::string base;
    if (!vcd_path.empty()) base = check_vcd_path();
    // SystemC prints a banner on stdout unless told not to; stdout carries JSON.
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    // Nor may its info reports ("tracing timescale unit set" when a VCD is opened) reach it.
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    model = std::make_unique<CoreModel>("tpu_core");
    if (!vcd_path.empty()) open_vcd(base);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaborate and park every thread on start_ev
  }

  // sc_create_vcd_trace_file appends ".vcd" to the name it is given: returns the path without
  // it, so the file written is exactly the one asked for. SystemC reports an unwritable file
  // only as a warning, so writability is checked here.
  std::string check_vcd_path() const {
    std::string base = vcd_path;
    if (base.size() <= 4 || base.compare(base.size() - 4, 4, ".vcd") != 0)
      throw FieldError("vcd", vcd_path + ": the file name must end in .vcd");
    base.resize(base.size() - 4);
    std::ofstream probe(vcd_path);
    if (!probe) throw FieldError("vcd", vcd_path + ": cannot open for writing");
    return base;
  }

  // Traces must be declared before the simulation starts (SystemC initialises a trace file at
  // its first delta cycle and refuses later additions), hence here, before sc_start.
  void open_vcd(const std::string& base) {
    vcd = sc_core::sc_create_vcd_trace_file(base.c_str());
    // 1 ps, the kernel's default time resolution: every event lands on its exact time.
    vcd->set_time_unit(1, sc_core::SC_PS);
    CoreModel& m = *model;
    const auto& names = vcd_signal_names();
    size_t i = 0;
    for (auto& b : m.busy_sig) sc_core::sc_trace(vcd, b, names[i++]);
    for (auto* q : {&m.hbm_read_queue, &m.hbm_write_queue, &m.host_queue, &m.infeed_queue, &m.step_sig})
      sc_core::sc_trace(vcd, *q, names[i++]);
    m.tracing = true;
  }
  void close_vcd() {
    if (!vcd) return;
    sc_core::sc_close_vcd_trace_file(vcd);  // flushes; later runs record nothing
    vcd = nullptr;
    model->tracing = false;
  }
};

}  // namespace

SimResult simulate(const Program& p, const SimConfig& c, bool want_trace) {
  // One SystemC context per process: concurrent callers (e.g. a parallel sweep) take turns.
  static std::mutex lock;
  std::lock_guard<std::mutex> guard(lock);
  // Built by the first call, with that call's VCD request: a trace file can only be declared
  // before SystemC's one simulation starts.
  static std::unique_ptr<Kernel> kernel_ptr;
  if (!kernel_ptr) {
    kernel_ptr = std::make_unique<Kernel>(c.vcd_path);
  } else if (!c.vcd_path.empty()) {
    throw FieldError("vcd", "only the first TPU simulation of a process can write a waveform (SystemC declares "
                            "traced signals before its one simulation starts); write it from its own xpusim run");
  }
  Kernel& kernel = *kernel_ptr;
  CoreModel& m = *kernel.model;
  // Whatever happens below, a waveform is recorded by one run only and is flushed at its end.
  struct CloseVcd {
    Kernel& k;
    ~CloseVcd() { k.close_vcd(); }
  } close_vcd{kernel};
  if (c.steps < 1) throw InternalError("simulate: steps must be >= 1");
  if (p.tasks.empty()) return SimResult{};  // nothing to run (the host threads would never stop)
  m.prog = &p;
  m.cfg = c;
  m.want_trace = want_trace;
  for (auto& q : m.queue) q.clear();
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    for (int d : t.deps)
      if (d < 0 || d >= static_cast<int>(i)) throw InternalError("tpu program: dependence on a later task");
    m.queue[static_cast<int>(t.unit)].push_back(static_cast<int>(i));
  }
  m.done_step.assign(p.tasks.size(), -1);
  m.finished_in_step.assign(static_cast<size_t>(c.steps), 0);
  m.step_end.assign(static_cast<size_t>(c.steps), 0.0);
  m.running = true;
  m.t0 = sc_core::sc_time_stamp();
  m.hbm_free_at = m.t0;
  m.host_ready = 0;
  m.device_ready = 0;
  m.stall_s = 0;
  m.res = SimResult{};
  m.start_ev.notify(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  if (m.finished_in_step.back() != static_cast<int>(p.tasks.size()))
    throw InternalError("tpu model: simulation stopped before the step finished (deadlock)");
  SimResult r = m.res;
  double prev = c.steps > 1 ? m.step_end[static_cast<size_t>(c.steps - 2)] : 0.0;
  r.step_time_s = m.step_end.back() - prev;
  r.infeed_stall_s = m.stall_s;
  r.host_busy_s = c.real_data ? c.host_batch_s : 0.0;
  // Trace times relative to the start of the measured step.
  for (auto& e : r.trace) { e.start_s -= prev; e.end_s -= prev; }
  m.prog = nullptr;
  return r;
}

}  // namespace xpusim::tpu
