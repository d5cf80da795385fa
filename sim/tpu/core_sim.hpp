// The SystemC side of one TensorCore run (core_model.cpp's internals): the waveform signals of
// a core, the Board the cores of one run share (program, configuration, host input pipeline,
// clock origin) and CoreSim, one core's units as SystemC threads executing their task queues.
// Included by core_model.cpp only.
#pragma once
#ifndef SC_INCLUDE_DYNAMIC_PROCESSES
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: the cores of an every-core run
#endif
#include <systemc>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "sim/tpu/core_model.hpp"
#include "sim/tpu/ici_link.hpp"

namespace xpusim::tpu::detail {

using sc_core::sc_time;
using sc_core::SC_SEC;

inline sc_time seconds(double s) { return sc_time(s > 0 ? s : 0.0, SC_SEC); }

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
  Sig<bool> ici_wait;        // waiting on the ICI: own chunks arrived, a neighbour's not yet
  // `prefix` keeps the object names of several cores' signals apart (SystemC objects need
  // unique names); the names the VCD shows are given to sc_trace separately.
  explicit Signals(const std::string& prefix)
      : busy{Sig<bool>{name(prefix, 0).c_str()}, Sig<bool>{name(prefix, 1).c_str()}, Sig<bool>{name(prefix, 2).c_str()},
             Sig<bool>{name(prefix, 3).c_str()}, Sig<bool>{name(prefix, 4).c_str()}, Sig<bool>{name(prefix, 5).c_str()}},
        hbm_read_queue(name(prefix, 6).c_str()), hbm_write_queue(name(prefix, 7).c_str()), host_queue(name(prefix, 8).c_str()),
        infeed_queue(name(prefix, 9).c_str()), step(name(prefix, 10).c_str()), ici_wait(name(prefix, 11).c_str()) {}
  // sc_signal copies its name: the temporary string lives until the signal is constructed.
  static std::string name(const std::string& prefix, size_t i) { return prefix + vcd_signal_names()[i]; }
  void trace(sc_core::sc_trace_file* f, const std::string& scope) {
    const auto& names = vcd_signal_names();
    size_t i = 0;
    for (auto& b : busy) sc_core::sc_trace(f, b, scope + names[i++]);
    for (auto* q : {&hbm_read_queue, &hbm_write_queue, &host_queue, &infeed_queue, &step})
      sc_core::sc_trace(f, *q, scope + names[i++]);
    sc_core::sc_trace(f, ici_wait, scope + names[i++]);
  }
};

struct CoreSim;

// What the cores of one run share: the program, the configuration, the host, the clock origin.
struct Board {
  const Program* prog = nullptr;
  SimConfig cfg;
  bool want_trace = false;
  bool ring = false;                               // all-reduce as an exchange between the cores
  bool links = false;                              // ... over the ICI links of `fabric`
  IciFabric fabric;
  std::vector<IciWait> ici_waits;
  std::array<std::vector<int>, kNumUnits> queue;   // task ids per unit, program order (every core)
  std::vector<CoreSim*> cores;
  int running_cores = 0;
  sc_time t0;
  std::vector<TraceEvent> trace;
  QueueDepthLog queue_depths;                      // cfg.record_queue_depths: every core's
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
  bool measuring = false;                          // recording queue depths (the measured step)
  std::array<int, kNumQueues> depth_now{};         // each queue's depth, for the step's first values
  std::array<size_t, kNumQueues> last_record{};    // each queue's latest entry in b.queue_depths
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
  std::vector<HbmRequest> grant_due, grant_later;  // grant_hbm()'s scratch lists
  bool transferring[2] = {false, false};           // inbound, outbound queue inside a transfer
  sc_core::sc_event hbm_asked_ev;                  // a queue asked for the channel (dma_alone)
  // Ring exchange: chunks received from the previous and the next core, ring steps taken.
  int64_t from_prev = 0, from_next = 0, ring_steps = 0;
  sc_core::sc_event done_ev, ring_ev;
  // Over links: when each ring step's chunk from the previous / next core arrives (or will).
  std::vector<sc_time> in_prev, in_next;
  std::vector<double> ici_wait_in_step;
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
    depth_now.fill(0);
    last_record.fill(SIZE_MAX);
    measuring = false;
    if (cfg->steps == 1) start_measuring();
    stall_s = 0;
    busy_s = {};
    from_prev = from_next = ring_steps = 0;
    in_prev.clear();
    in_next.clear();
    ici_wait_in_step.assign(steps, 0.0);
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
    if (s == &Signals::step) return;
    const Queue q = s == &Signals::hbm_read_queue ? Queue::hbm_read
                    : s == &Signals::hbm_write_queue ? Queue::hbm_write
                    : s == &Signals::host_queue      ? Queue::host
                                                     : Queue::infeed;
    depth_now[static_cast<size_t>(q)] = v;
    if (measuring) record_depth(q, v, b.now_s());
  }
  // A queue's new depth. One burst fewer at the same interval as the previous ones extends the
  // queue's latest record (QueueDepthChange's count): contended DMA transfers issue a burst
  // every two burst times, and one record per burst was 30 MB of a v2-8 ResNet-50 trace run.
  void record_depth(Queue q, int v, double t) {
    size_t& last = last_record[static_cast<size_t>(q)];
    if (last < b.queue_depths.size()) {
      QueueDepthChange& c = b.queue_depths[last];
      const double last_t = c.start_s + (c.count - 1) * c.interval_s;
      // Half a picosecond: the kernel's resolution, so the expanded times are the recorded ones.
      const bool on_time = c.count == 1 ? t > last_t : std::fabs(t - (last_t + c.interval_s)) < 0.5e-12;
      if (v == c.depth - c.count && on_time) {
        if (c.count == 1) c.interval_s = t - c.start_s;
        ++c.count;
        return;
      }
    }
    last = b.queue_depths.size();
    b.queue_depths.push_back({index, q, v, 1, t, 0.0});
  }
  // The measured step begins: every queue's depth at its start, then each change.
  void start_measuring() {
    measuring = cfg->record_queue_depths;
    if (!measuring) return;
    last_record.fill(SIZE_MAX);
    for (int q = 0; q < kNumQueues; ++q) {
      last_record[static_cast<size_t>(q)] = b.queue_depths.size();
      b.queue_depths.push_back({index, static_cast<Queue>(q), depth_now[static_cast<size_t>(q)], 1, b.now_s(), 0.0});
    }
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
        execute(u, prog->tasks[static_cast<size_t>(id)], step);
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
          if (step == cfg->steps - 2) start_measuring();
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

  void execute(Unit u, const Task& t, int step) {
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
        if (b.links)
          link_allreduce(t.bytes, n, t.op, step);
        else if (b.ring)
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

  // The all-reduce as an exchange between the cores (ici_exchange.hpp): at the formula's
  // time per ring step (past a board), or over the board's ICI links.
  void ring_allreduce(sc_time total, int n);
  void link_allreduce(double bytes, int n, int op, int step);

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
    if (!sig && !transferring[1 - queue] && hbm_pending.empty() && hbm_free_at <= sc_core::sc_time_stamp()) {
      const double t0 = b.now_s();
      bytes = dma_alone(bytes);
      // The bursts it issued, one every burst time from t0 (the per-burst loop's depths).
      const int issued = pending - static_cast<int>(std::ceil(bytes / burst));
      if (issued > 0) {
        if (measuring) {
          last_record[static_cast<size_t>(queue)] = b.queue_depths.size();
          b.queue_depths.push_back({index, static_cast<Queue>(queue), pending - 1, issued, t0,
                                    seconds(burst / cfg->hbm_bytes_per_s).to_seconds()});
        }
        pending -= issued;
        depth_now[static_cast<size_t>(queue)] = pending;
      }
    }
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
    // Scratch lists kept between calls: allocating two vectors per grant was ~5% of an
    // every-core run (bench/tpu_board.sh). At most a few requests wait, so a stable insertion
    // sort gives std::stable_sort's order without its buffer.
    grant_due.clear();
    grant_later.clear();
    for (const auto& r : hbm_pending) (r.delta < now_delta ? grant_due : grant_later).push_back(r);
    auto before = [](const HbmRequest& x, const HbmRequest& y) {
      return x.delta != y.delta ? x.delta < y.delta : x.queue < y.queue;
    };
    for (size_t i = 1; i < grant_due.size(); ++i)
      for (size_t j = i; j > 0 && before(grant_due[j], grant_due[j - 1]); --j) std::swap(grant_due[j], grant_due[j - 1]);
    const sc_time now = sc_core::sc_time_stamp();
    for (const auto& r : grant_due) {
      sc_time start = hbm_free_at > now ? hbm_free_at : now;
      hbm_free_at = start + seconds(r.bytes / cfg->hbm_bytes_per_s);
      *r.end = hbm_free_at;
    }
    hbm_pending.swap(grant_later);
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

inline bool Board::any_queue_full() const {
  for (const CoreSim* c : cores)
    if (c->running && c->host_ready + c->device_ready >= cfg.prefetch_depth) return true;
  return false;
}

// The host input pipeline, one per board: prepares global batches back to back (each core's
// share of one), while every running core's prefetch queue has room.
inline void Board::host_loop() {
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

}  // namespace xpusim::tpu::detail
