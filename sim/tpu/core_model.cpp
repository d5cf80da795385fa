// SystemC implementation of the TensorCore model (see core_model.hpp). Each unit of a core is
// an SC_THREAD that executes its own tasks in program order; a task starts when the tasks it
// depends on have finished, so units overlap exactly as far as the data dependences and the
// double-buffer window allow. The same CoreSim code runs the one-core model (threads of an
// elaborated module) and every core of a traced run (threads spawned for that run), so a
// traced core can only differ from the untraced one through what really differs: the
// all-reduce is an exchange with the other cores instead of the formula's wait.
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: the cores of an every-core run
#include "sim/tpu/core_model.hpp"

#include <systemc>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "common/checked_io.hpp"
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

// Waveform signals of one core. Written only while a VCD is recorded (CoreSim::sig set), so
// runs without one schedule no extra update phases. Nobody waits on them: they observe, never
// steer. Unchecked writers: the infeed depths change in more than one thread, possibly in the
// same delta cycle; the last write of a delta is the value shown, which is what a queue holds.
template <class T>
using Sig = sc_core::sc_signal<T, sc_core::SC_UNCHECKED_WRITERS>;

struct Signals {
  std::array<Sig<bool>, kNumUnits> busy;  // per unit: executing a task
  Sig<int> hbm_read_queue;   // bursts of the current inbound transfer not yet issued
  Sig<int> hbm_write_queue;  // same, outbound
  Sig<int> host_queue;       // batches prepared by the host for this core, not yet sent
  Sig<int> infeed_queue;     // batches in this core's device memory, not yet consumed
  Sig<int> step;             // simulated step being executed
  // `prefix` keeps the object names of several cores' signals apart (SystemC objects need
  // unique names); the names the VCD shows are given to sc_trace separately.
  explicit Signals(const std::string& prefix)
      : busy{Sig<bool>{name(prefix, 0).c_str()}, Sig<bool>{name(prefix, 1).c_str()}, Sig<bool>{name(prefix, 2).c_str()},
             Sig<bool>{name(prefix, 3).c_str()}, Sig<bool>{name(prefix, 4).c_str()}, Sig<bool>{name(prefix, 5).c_str()}},
        hbm_read_queue(name(prefix, 6).c_str()), hbm_write_queue(name(prefix, 7).c_str()), host_queue(name(prefix, 8).c_str()),
        infeed_queue(name(prefix, 9).c_str()), step(name(prefix, 10).c_str()) {}
  // sc_signal copies its name: the temporary string lives until the signal is constructed.
  static std::string name(const std::string& prefix, size_t i) { return prefix + vcd_signal_names()[i]; }
  void trace(sc_core::sc_trace_file* f, const std::string& scope) {
    const auto& names = vcd_signal_names();
    size_t i = 0;
    for (auto& b : busy) sc_core::sc_trace(f, b, scope + names[i++]);
    for (auto* q : {&hbm_read_queue, &hbm_write_queue, &host_queue, &infeed_queue, &step})
      sc_core::sc_trace(f, *q, scope + names[i++]);
  }
};

struct CoreSim;

// What the cores of one run share: the program, the configuration, the host, the clock origin.
struct Board {
  const Program* prog = nullptr;
  SimConfig cfg;
  bool want_trace = false;
  bool ring = false;                               // all-reduce as an exchange between the cores
  std::array<std::vector<int>, kNumUnits> queue;   // task ids per unit, program order (every core)
  std::vector<CoreSim*> cores;
  int running_cores = 0;
  sc_time t0;
  std::vector<TraceEvent> trace;
  sc_core::sc_event queue_ev;                      // a host or infeed queue changed

  double now_s() const { return (sc_core::sc_time_stamp() - t0).to_seconds(); }
  bool any_queue_full() const;
  void host_loop();
};

struct CoreSim {
  Board& b;
  const int index;
  Signals* sig = nullptr;                          // set while a VCD records this core
  const Program* prog = nullptr;                   // the board's, cached for the hot loops
  const SimConfig* cfg = nullptr;
  std::vector<int> done_step;                      // last step in which each task finished
  std::vector<int> finished_in_step;
  std::vector<double> step_end;
  bool running = false;
  sc_time hbm_free_at;
  int host_ready = 0, device_ready = 0;
  double stall_s = 0;
  std::array<double, kNumUnits> busy_s{};
  // Every-core runs: HBM requests of this delta cycle, granted in a fixed order (dma()).
  struct HbmRequest {
    uint64_t delta;
    int queue;                                     // 0 inbound, 1 outbound: the order at a tie
    double bytes;
    sc_time* end;                                  // where the requester waits for its grant
  };
  std::vector<HbmRequest> hbm_pending;
  bool transferring[2] = {false, false};           // inbound, outbound queue inside a transfer
  sc_core::sc_event hbm_asked_ev;                  // a queue asked for the channel (dma_alone)
  // Ring exchange: chunks received from the previous and the next core, ring steps taken.
  int64_t from_prev = 0, from_next = 0, ring_steps = 0;
  sc_core::sc_event done_ev, ring_ev;
  // A unit blocked on a task whose inputs are not done is woken only when they are (issue 32:
  // waking every blocked unit on every finished task cost most of an every-core run).
  std::array<int, kNumUnits> waiting_for{}, waiting_step{};
  std::array<sc_core::sc_event, kNumUnits> unit_ev;

  CoreSim(Board& board, int i) : b(board), index(i) {}

  void reset() {
    prog = b.prog;
    cfg = &b.cfg;
    const size_t n = prog->tasks.size(), steps = static_cast<size_t>(cfg->steps);
    done_step.assign(n, -1);
    finished_in_step.assign(steps, 0);
    step_end.assign(steps, 0.0);
    running = true;
    hbm_free_at = b.t0;
    host_ready = device_ready = 0;
    stall_s = 0;
    busy_s = {};
    from_prev = from_next = ring_steps = 0;
    waiting_for.fill(-1);
    waiting_step.fill(0);
    hbm_pending.clear();
    transferring[0] = transferring[1] = false;
  }

  void set_busy(Unit u, bool v) {
    if (sig) sig->busy[static_cast<size_t>(u)].write(v);
  }
  void set_depth(Sig<int> Signals::*s, int v) {
    if (sig) (sig->*s).write(v);
  }
  void publish_infeed() {
    set_depth(&Signals::host_queue, host_ready);
    set_depth(&Signals::infeed_queue, device_ready);
  }

  bool ready(int id, int step) const {
    for (int d : prog->tasks[static_cast<size_t>(id)].deps)
      if (done_step[static_cast<size_t>(d)] < step) return false;
    return true;
  }

  // One unit of this core through all simulated steps.
  void run_unit(Unit u) {
    const auto& q = b.queue[static_cast<int>(u)];
    const int ntasks = static_cast<int>(prog->tasks.size());
    if (b.ring && index > 0 && cfg->core_skew_s > 0) sc_core::wait(seconds(index * cfg->core_skew_s));
    for (int step = 0; step < cfg->steps; ++step) {
      // Steps run back to back: the next starts when the whole previous one has finished.
      while (step > 0 && finished_in_step[static_cast<size_t>(step - 1)] < ntasks) sc_core::wait(done_ev);
      if (u == Unit::mxu) set_depth(&Signals::step, step);
      for (int id : q) {
        const size_t ui = static_cast<size_t>(u);
        while (!ready(id, step)) {
          waiting_for[ui] = id;
          waiting_step[ui] = step;
          sc_core::wait(unit_ev[ui]);
        }
        waiting_for[ui] = -1;
        double start = b.now_s();
        set_busy(u, true);
        execute(u, prog->tasks[static_cast<size_t>(id)]);
        set_busy(u, false);
        double end = b.now_s();
        if (step == cfg->steps - 1) {
          if (u != Unit::infeed) busy_s[static_cast<int>(u)] += end - start;
          if (b.want_trace && end > start)
            b.trace.push_back({u, index, prog->tasks[static_cast<size_t>(id)].op, id, start, end});
        }
        done_step[static_cast<size_t>(id)] = step;
        for (size_t v = 0; v < static_cast<size_t>(kNumUnits); ++v)
          if (waiting_for[v] >= 0 && ready(waiting_for[v], waiting_step[v])) {
            waiting_for[v] = -1;
            unit_ev[v].notify(sc_core::SC_ZERO_TIME);
          }
        if (++finished_in_step[static_cast<size_t>(step)] == ntasks) {
          step_end[static_cast<size_t>(step)] = end;
          if (step == cfg->steps - 1) {
            running = false;
            --b.running_cores;
            b.queue_ev.notify(sc_core::SC_ZERO_TIME);
          }
          done_ev.notify(sc_core::SC_ZERO_TIME);  // units waiting for the step to end
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
        dma(t.bytes, &Signals::hbm_read_queue);
        return;
      case Unit::dma_out:
        dma(t.bytes, &Signals::hbm_write_queue);
        return;
      case Unit::ici: {
        // Bidirectional ring all-reduce (reduce-scatter + all-gather): each core sends and
        // receives 2(n-1)/n of the buffer in 2(n-1) latency-bound hops (Patarasuk & Yuan 2009).
        int n = cfg->replicas;
        if (n <= 1 || t.bytes <= 0) return;
        double steps = 2.0 * (n - 1);
        sc_time total = seconds(steps / n * t.bytes / cfg->ici_bytes_per_s + steps * cfg->ici_hop_latency_s);
        if (b.ring)
          ring_allreduce(total, n);
        else
          sc_core::wait(total);
        return;
      }
      case Unit::infeed: {
        if (!cfg->real_data) return;  // synthetic data lives on the device
        double w0 = b.now_s();
        while (device_ready == 0) sc_core::wait(b.queue_ev);
        --device_ready;
        publish_infeed();
        b.queue_ev.notify(sc_core::SC_ZERO_TIME);
        stall_s = b.now_s() - w0;
        return;
      }
    }
  }

  // The all-reduce as an exchange around the ring of cores 0 -> 1 -> ... -> n-1 -> 0. In
  // each of its 2(n-1) steps a core sends one chunk to each neighbour (half of the buffer
  // travels each way) and starts the next step only when both neighbours' chunks of this
  // step have arrived: a core that enters late holds its neighbours back, and after n-1
  // steps every core, so no core leaves the all-reduce before every core has entered it.
  // A step takes the chunk (bytes/n) over the core's share of its chip's links
  // (ici_bytes_per_s: 2 links' directions / cores_per_chip, the chip's links shared by its
  // cores) plus one hop, i.e. 1/(2(n-1)) of the formula's time. That time is rounded to the
  // kernel's picosecond once, as the one-core run rounds it, and split in whole picoseconds
  // so that the steps add up to it exactly: symmetric cores leave the exchange at the
  // picosecond the formula gives, and a trace predicts the same step as the run without one.
  void ring_allreduce(sc_time total, int n) {
    const uint64_t S = 2 * static_cast<uint64_t>(n - 1);
    const uint64_t D = total.value();
    CoreSim& next = *b.cores[static_cast<size_t>((index + 1) % n)];
    CoreSim& prev = *b.cores[static_cast<size_t>((index + n - 1) % n)];
    for (uint64_t s = 0; s < S; ++s) {
      sc_core::wait(sc_time::from_value(D * (s + 1) / S - D * s / S));
      // Immediate notification: a neighbour already waiting resumes in this delta cycle, so
      // the exchange ends in the same delta as the formula's wait would.
      ++next.from_prev;
      next.ring_ev.notify();
      ++prev.from_next;
      prev.ring_ev.notify();
      ++ring_steps;
      while (from_prev < ring_steps || from_next < ring_steps) sc_core::wait(ring_ev);
    }
  }

  // One DMA transfer: the latency of the first access, then bursts that each hold the shared
  // HBM channel for burst/bandwidth (first come, first served between the two queues).
  //
  // The one-core model lets the two queues take the channel in the order the kernel runs
  // them, also when both ask at the same picosecond. That order is the kernel's process order,
  // which depends on every process of the simulation: with 8 cores the same core broke such
  // ties differently (cores shifted against each other by whole bursts). So an every-core run
  // grants requests of the same delta cycle in a fixed order, inbound first, after one delta
  // in which both queues can ask: each core then has the same timeline. The one-core model
  // keeps its order (the default path stays byte-identical), which is why an every-core step
  // can differ from the one-core step by a few bursts (docs/tpu-model.md, tested).
  void dma(double bytes, Sig<int> Signals::*depth) {
    if (bytes <= 0) return;
    if (b.ring) return dma_fixed_ties(bytes, depth);
    const double burst = cfg->dma_burst_bytes;
    int pending = static_cast<int>(std::ceil(bytes / burst));
    set_depth(depth, pending);
    sc_core::wait(seconds(cfg->dma_latency_s));
    while (bytes > 0) {
      double chunk = bytes < burst ? bytes : burst;
      bytes -= chunk;
      set_depth(depth, --pending);
      sc_time now = sc_core::sc_time_stamp();
      sc_time start = hbm_free_at > now ? hbm_free_at : now;
      hbm_free_at = start + seconds(chunk / cfg->hbm_bytes_per_s);
      sc_core::wait(hbm_free_at - now);
    }
  }

  void dma_fixed_ties(double bytes, Sig<int> Signals::*depth) {
    const double burst = cfg->dma_burst_bytes;
    const int queue = depth == &Signals::hbm_read_queue ? 0 : 1;
    int pending = static_cast<int>(std::ceil(bytes / burst));
    set_depth(depth, pending);
    sc_core::wait(seconds(cfg->dma_latency_s));
    transferring[queue] = true;
    if (!sig && !transferring[1 - queue] && hbm_pending.empty() && hbm_free_at <= sc_core::sc_time_stamp())
      bytes = dma_alone(bytes);
    while (bytes > 0) {
      double chunk = bytes < burst ? bytes : burst;
      bytes -= chunk;
      set_depth(depth, --pending);
      sc_time end;
      hbm_pending.push_back({sc_core::sc_delta_count(), queue, chunk, &end});
      hbm_asked_ev.notify();  // a transfer alone on the channel yields at its next burst boundary
      sc_core::wait(sc_core::SC_ZERO_TIME);
      grant_hbm();
      sc_core::wait(end - sc_core::sc_time_stamp());
    }
    transferring[queue] = false;
  }

  // A transfer alone on the channel takes its bursts back to back in one wait instead of one
  // wait per burst (issue 32: per-burst waits were most of an every-core run). When the other
  // queue asks for the channel meanwhile, the transfer stops at the end of the burst in
  // progress and hands the rest to the per-burst loop, so the channel is granted exactly as
  // burst by burst: each burst's duration is rounded to the picosecond on its own, as there.
  // Returns the bytes left for the per-burst loop.
  double dma_alone(double bytes) {
    const double burst = cfg->dma_burst_bytes;
    const sc_time t0 = sc_core::sc_time_stamp();
    const sc_time d = seconds(burst / cfg->hbm_bytes_per_s);
    const auto full = static_cast<uint64_t>(std::floor(bytes / burst));
    const double last = bytes - static_cast<double>(full) * burst;
    const sc_time end = t0 + d * static_cast<double>(full) + (last > 0 ? seconds(last / cfg->hbm_bytes_per_s) : sc_core::SC_ZERO_TIME);
    hbm_free_at = end;
    sc_core::wait(end - t0, hbm_asked_ev);
    const sc_time now = sc_core::sc_time_stamp();
    if (now >= end) return 0;
    // Interrupted: bursts that began before now run to their end; the channel is free after.
    uint64_t begun = (now - t0).value() / d.value() + ((now - t0).value() % d.value() ? 1 : 0);
    if (begun > full) {  // inside the last, partial burst
      sc_core::wait(end - now);
      return 0;
    }
    hbm_free_at = t0 + d * static_cast<double>(begun);
    if (hbm_free_at > now) sc_core::wait(hbm_free_at - now);
    return bytes - static_cast<double>(begun) * burst;
  }
  // Grants every request made in an earlier delta cycle, by (delta, queue): whichever requester
  // runs first in this delta grants them all, so the kernel's order does not matter.
  void grant_hbm() {
    const uint64_t now_delta = sc_core::sc_delta_count();
    std::vector<HbmRequest> due, later;
    for (const auto& r : hbm_pending) (r.delta < now_delta ? due : later).push_back(r);
    std::stable_sort(due.begin(), due.end(), [](const HbmRequest& x, const HbmRequest& y) {
      return x.delta != y.delta ? x.delta < y.delta : x.queue < y.queue;
    });
    const sc_time now = sc_core::sc_time_stamp();
    for (const auto& r : due) {
      sc_time start = hbm_free_at > now ? hbm_free_at : now;
      hbm_free_at = start + seconds(r.bytes / cfg->hbm_bytes_per_s);
      *r.end = hbm_free_at;
    }
    hbm_pending = std::move(later);
  }

  // PCIe infeed of this core: copies its prepared batches into device memory, one at a time.
  void pcie_loop() {
    while (running && cfg->real_data) {
      while (running && host_ready == 0) sc_core::wait(b.queue_ev);
      if (!running) break;
      --host_ready;
      publish_infeed();
      sc_core::wait(seconds(static_cast<double>(prog->infeed_bytes) / cfg->pcie_bytes_per_s));
      ++device_ready;
      publish_infeed();
      b.queue_ev.notify(sc_core::SC_ZERO_TIME);
    }
  }
};

bool Board::any_queue_full() const {
  for (const CoreSim* c : cores)
    if (c->running && c->host_ready + c->device_ready >= cfg.prefetch_depth) return true;
  return false;
}

// The host input pipeline, one per board: prepares global batches back to back (each core's
// share of one), while every running core's prefetch queue has room.
void Board::host_loop() {
  while (running_cores > 0 && cfg.real_data) {
    sc_core::wait(seconds(cfg.host_batch_s));
    while (running_cores > 0 && any_queue_full()) sc_core::wait(queue_ev);
    if (running_cores == 0) break;
    for (CoreSim* c : cores) {
      ++c->host_ready;
      c->publish_infeed();
    }
    queue_ev.notify(sc_core::SC_ZERO_TIME);
  }
}

// The one-core model: elaborated once per process, its threads parked on start_ev between runs.
SC_MODULE(CoreModel) {
  Board board;
  Signals sig{""};
  CoreSim core{board, 0};
  sc_core::sc_event start_ev;

  SC_CTOR(CoreModel) {
    board.cores = {&core};
    SC_THREAD(mxu_thread);
    SC_THREAD(vector_thread);
    SC_THREAD(dma_in_thread);
    SC_THREAD(dma_out_thread);
    SC_THREAD(ici_thread);
    SC_THREAD(infeed_thread);
    SC_THREAD(host_thread);
    SC_THREAD(pcie_thread);
  }
  void unit(Unit u) {
    for (;;) {
      sc_core::wait(start_ev);
      core.run_unit(u);
    }
  }
  void mxu_thread() { unit(Unit::mxu); }
  void vector_thread() { unit(Unit::vector); }
  void dma_in_thread() { unit(Unit::dma_in); }
  void dma_out_thread() { unit(Unit::dma_out); }
  void ici_thread() { unit(Unit::ici); }
  void infeed_thread() { unit(Unit::infeed); }
  void host_thread() {
    for (;;) {
      sc_core::wait(start_ev);
      board.host_loop();
    }
  }
  void pcie_thread() {
    for (;;) {
      sc_core::wait(start_ev);
      core.pcie_loop();
    }
  }
};

// Loads a run into a board: the program's per-unit queues (checked), the configuration, the
// clock origin, and every core's state.
void load(Board& b, const Program& p, const SimConfig& c, bool want_trace) {
  b.prog = &p;
  b.cfg = c;
  b.want_trace = want_trace;
  for (auto& q : b.queue) q.clear();
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const Task& t = p.tasks[i];
    for (int d : t.deps)
      if (d < 0 || d >= static_cast<int>(i)) throw InternalError("tpu program: dependence on a later task");
    b.queue[static_cast<int>(t.unit)].push_back(static_cast<int>(i));
  }
  b.t0 = sc_core::sc_time_stamp();
  b.trace.clear();
  b.running_cores = static_cast<int>(b.cores.size());
  for (CoreSim* core : b.cores) core->reset();
}

// After sc_start: every core's result, times relative to the end of core 0's warm-up step.
SimResult collect(Board& b) {
  const size_t ntasks = b.prog->tasks.size();
  for (const CoreSim* core : b.cores)
    if (core->finished_in_step.back() != static_cast<int>(ntasks))
      throw InternalError("tpu model: simulation stopped before the step finished (deadlock)");
  SimResult r;
  const size_t last = static_cast<size_t>(b.cfg.steps - 1);
  auto warmup_end = [&](const CoreSim& core) { return last > 0 ? core.step_end[last - 1] : 0.0; };
  for (const CoreSim* core : b.cores) r.core_step_time_s.push_back(core->step_end[last] - warmup_end(*core));
  const CoreSim& c0 = *b.cores.front();
  const double prev = warmup_end(c0);
  r.step_time_s = r.core_step_time_s.front();
  r.busy_s = c0.busy_s;
  r.infeed_stall_s = c0.stall_s;
  r.host_busy_s = b.cfg.real_data ? b.cfg.host_batch_s : 0.0;
  r.trace = std::move(b.trace);
  for (auto& e : r.trace) {
    e.start_s -= prev;
    e.end_s -= prev;
  }
  return r;
}

struct Kernel {
  std::unique_ptr<CoreModel> model;
  // Every core's signals, when the process's first run records a VCD of every core.
  std::vector<std::unique_ptr<Signals>> core_sig;
  sc_core::sc_trace_file* vcd = nullptr;  // open from elaboration to the end of the first run
  std::string vcd_path;
  // SystemC writes the waveform here and never reports a failed write (a --vcd /dev/full
  // exited 0): finish_vcd copies it to vcd_path through a checked stream.
  std::string vcd_scratch;
  explicit Kernel(const SimConfig& first) : vcd_path(first.vcd_path) {
    // A bad path is refused before anything is elaborated, so a later run can still start.
    std::string base;
    if (!vcd_path.empty()) base = check_vcd_path();
    // SystemC prints a banner on stdout unless told not to; stdout carries JSON.
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    // Nor may its info reports ("tracing timescale unit set" when a VCD is opened) reach it.
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    model = std::make_unique<CoreModel>("tpu_core");
    if (!vcd_path.empty()) open_vcd(base, first);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaborate and park every thread on start_ev
  }

  // sc_create_vcd_trace_file appends ".vcd" to the name it is given: returns the path without
  // it, so the file written is exactly the one asked for. SystemC reports an unwritable file
  // only as a warning, so writability is checked here.
  std::string check_vcd_path() {
    std::string base = vcd_path;
    if (base.size() <= 4 || base.compare(base.size() - 4, 4, ".vcd") != 0)
      throw FieldError("vcd", vcd_path + ": the file name must end in .vcd");
    std::ofstream probe(vcd_path);
    if (!probe) throw FieldError("vcd", vcd_path + ": cannot open for writing");
    std::error_code ec;
    const auto scratch = std::filesystem::temp_directory_path(ec) /
                         ("xpusim-" + std::to_string(static_cast<long long>(::getpid())) + "-waveform.vcd");
    if (ec) throw FieldError("vcd", "no temporary directory for the waveform: " + ec.message());
    vcd_scratch = scratch.string();
    return vcd_scratch.substr(0, vcd_scratch.size() - 4);
  }

  // Traces must be declared before the simulation starts (SystemC initialises a trace file at
  // its first delta cycle and refuses later additions; signals, being primitive channels,
  // can only be created during elaboration), hence here, before sc_start. One core: the
  // module's signals, at the top of the VCD. Every core: one scope per chip and core
  // (chip1.core3.mxu_busy), signals created now for the count of this first run.
  void open_vcd(const std::string& base, const SimConfig& first) {
    vcd = sc_core::sc_create_vcd_trace_file(base.c_str());
    // 1 ps, the kernel's default time resolution: every event lands on its exact time.
    vcd->set_time_unit(1, sc_core::SC_PS);
    if (first.simulated_cores <= 1) {
      model->sig.trace(vcd, "");
      model->core.sig = &model->sig;
      return;
    }
    const int per_chip = first.cores_per_chip > 0 ? first.cores_per_chip : 1;
    for (int i = 0; i < first.simulated_cores; ++i) {
      core_sig.push_back(std::make_unique<Signals>("core" + std::to_string(i) + "_"));
      core_sig.back()->trace(vcd, "chip" + std::to_string(i / per_chip) + ".core" + std::to_string(i) + ".");
    }
  }
  void close_vcd() {
    if (!vcd) return;
    sc_core::sc_close_vcd_trace_file(vcd);  // flushes; later runs record nothing
    vcd = nullptr;
    model->core.sig = nullptr;
  }
  // After a run that recorded the waveform: closes it and copies it to --vcd's path, every
  // write checked (FieldError "vcd" on a full disk).
  void finish_vcd() {
    if (!vcd) return;
    close_vcd();
    std::ifstream in(vcd_scratch, std::ios::binary);
    if (!in) throw FieldError("vcd", vcd_scratch + ": the simulator wrote no waveform");
    try {
      write_file_checked(vcd_path, [&](std::ostream& os) { os << in.rdbuf(); });
    } catch (const UserError& e) {
      std::error_code ec;
      std::filesystem::remove(vcd_scratch, ec);
      throw FieldError("vcd", e.what());
    }
    std::error_code ec;
    std::filesystem::remove(vcd_scratch, ec);
  }
  ~Kernel() {
    if (!vcd_scratch.empty()) {
      std::error_code ec;
      std::filesystem::remove(vcd_scratch, ec);
    }
  }
};

// The one-core run on the elaborated module.
SimResult run_one_core(Kernel& k, const Program& p, const SimConfig& c, bool want_trace) {
  CoreModel& m = *k.model;
  load(m.board, p, c, want_trace);
  m.start_ev.notify(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  SimResult r = collect(m.board);
  m.board.prog = nullptr;
  return r;
}

// Every core: a board of CoreSims whose threads are spawned for this run and end with it.
SimResult run_every_core(Kernel& k, const Program& p, const SimConfig& c, bool want_trace) {
  const int n = c.simulated_cores;
  if (n != c.replicas) throw InternalError("simulate: every core or one core, not " + std::to_string(n));
  if (n > kMaxSimulatedCores) throw InternalError("simulate: more cores than kMaxSimulatedCores");
  auto board = std::make_unique<Board>();
  std::vector<std::unique_ptr<CoreSim>> cores;
  for (int i = 0; i < n; ++i) {
    cores.push_back(std::make_unique<CoreSim>(*board, i));
    board->cores.push_back(cores.back().get());
    if (k.vcd && static_cast<size_t>(i) < k.core_sig.size()) cores.back()->sig = k.core_sig[static_cast<size_t>(i)].get();
  }
  board->ring = true;
  load(*board, p, c, want_trace);
  // The same threads as the module's, in the same order per core.
  std::vector<sc_core::sc_process_handle> threads;
  for (auto& core : cores) {
    CoreSim* cs = core.get();
    for (int u = 0; u < kNumUnits; ++u)
      threads.push_back(sc_core::sc_spawn([cs, u] { cs->run_unit(static_cast<Unit>(u)); }));
  }
  Board* b = board.get();
  threads.push_back(sc_core::sc_spawn([b] { b->host_loop(); }));
  for (auto& core : cores) {
    CoreSim* cs = core.get();
    threads.push_back(sc_core::sc_spawn([cs] { cs->pcie_loop(); }));
  }
  sc_core::sc_start();
  for (auto& h : threads) {
    if (!h.terminated()) {
      // A thread still waits on an event of this board: keep the board alive (leak it) rather
      // than let a later run wake a thread into freed memory.
      board.release();
      for (auto& core : cores) core.release();
      throw InternalError("tpu model: a core's thread did not finish (deadlock)");
    }
  }
  return collect(*board);
}

}  // namespace

namespace {

// SystemC counts time in 64-bit multiples of its resolution (1 ps by default): 2^64 ps, about
// 213 days. A longer run wrapped silently (hbm_bandwidth_gbps: 1e-310 gave the normal step
// time), so the run is bounded before it starts, by every task of every step back to back
// (twice that when the cores wait for each other in a ring). Before SystemC runs anything.
void check_time_range(const Program& p, const SimConfig& c) {
  double step = c.host_batch_s + (c.real_data ? static_cast<double>(p.infeed_bytes) / c.pcie_bytes_per_s : 0.0);
  const double n = c.replicas;
  for (const Task& t : p.tasks) {
    switch (t.unit) {
      case Unit::mxu:
      case Unit::vector: step += t.seconds; break;
      case Unit::dma_in:
      case Unit::dma_out: step += c.dma_latency_s + t.bytes / c.hbm_bytes_per_s; break;
      case Unit::ici:
        if (n > 1) step += 2 * (n - 1) / n * t.bytes / c.ici_bytes_per_s + 2 * (n - 1) * c.ici_hop_latency_s;
        break;
      case Unit::infeed: break;
    }
  }
  const double bound = (step * c.steps + c.core_skew_s * c.simulated_cores) * (c.simulated_cores > 1 ? 2 : 1);
  constexpr double kMaxSimulatedSeconds = 18446744.0 * 0.9;  // 2^64 ps, with a margin
  if (!(bound <= kMaxSimulatedSeconds)) {
    char b[64];
    std::snprintf(b, sizeof b, "%.3g", bound);
    throw UserError(std::string("tpu_systemc: the simulated run could last up to ") + b + " s, past the " +
                    std::to_string(static_cast<long long>(kMaxSimulatedSeconds)) + " s SystemC can count: a rate in the device or system YAML is too small (hbm_bandwidth_gbps, "
                    "ici_link_bandwidth_gbps, clock_mhz, pcie_bandwidth_gbps) or the batch too large");
  }
}

}  // namespace

SimResult simulate(const Program& p, const SimConfig& c, bool want_trace) {
  check_time_range(p, c);
  // One SystemC context per process: concurrent callers (e.g. a parallel sweep) take turns.
  static std::mutex lock;
  std::lock_guard<std::mutex> guard(lock);
  // Built by the first call, with that call's VCD request: a trace file can only be declared
  // before SystemC's one simulation starts.
  static std::unique_ptr<Kernel> kernel_ptr;
  if (!kernel_ptr) {
    kernel_ptr = std::make_unique<Kernel>(c);
  } else if (!c.vcd_path.empty()) {
    throw FieldError("vcd", "only the first TPU simulation of a process can write a waveform (SystemC declares "
                            "traced signals before its one simulation starts); write it from its own xpusim run");
  }
  Kernel& kernel = *kernel_ptr;
  // Whatever happens below, a waveform is recorded by one run only and is flushed at its end.
  struct CloseVcd {
    Kernel& k;
    ~CloseVcd() { k.close_vcd(); }
  } close_vcd{kernel};
  if (c.steps < 1) throw InternalError("simulate: steps must be >= 1");
  if (p.tasks.empty()) return SimResult{};  // nothing to run (the host threads would never stop)
  SimResult res = c.simulated_cores > 1 ? run_every_core(kernel, p, c, want_trace) : run_one_core(kernel, p, c, want_trace);
  kernel.finish_vcd();
  return res;
}

}  // namespace xpusim::tpu
