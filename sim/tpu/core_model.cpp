// SystemC implementation of the TensorCore model (see core_model.hpp). Each unit of a core is
// an SC_THREAD that executes its own tasks in program order; a task starts when the tasks it
// depends on have finished, so units overlap exactly as far as the data dependences and the
// double-buffer window allow. The same CoreSim code runs the one-core model (threads of an
// elaborated module) and every core of a traced run (threads spawned for that run), so a
// traced core can only differ from the untraced one through what really differs: the
// all-reduce is an exchange with the other cores instead of the formula's wait.
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: the cores of an every-core run
#include "sim/tpu/core_model.hpp"
#include "sim/tpu/core_sim.hpp"
#include "sim/tpu/ici_exchange.hpp"

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
      "hbm_read_queue_depth", "hbm_write_queue_depth", "host_queue_depth", "infeed_queue_depth", "step", "ici_wait"};
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

using namespace detail;  // NOLINT: the SystemC internals of this file (core_sim.hpp)

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
  b.queue_depths.clear();
  b.ici_waits.clear();
  b.links = b.ring && c.ici_network;
  if (b.links) {
    if (c.ici_network->cores != c.replicas) throw InternalError("simulate: the ICI network holds other cores than the run");
    b.fabric.build(*c.ici_network);
  }
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
  for (const CoreSim* core : b.cores) r.core_ici_wait_s.push_back(core->ici_wait_in_step[last]);
  r.queue_depths = std::move(b.queue_depths);
  for (auto& q : r.queue_depths) q.start_s -= prev;
  r.ici_waits = std::move(b.ici_waits);
  for (auto& w : r.ici_waits) {
    w.start_s -= prev;
    w.end_s -= prev;
  }
  if (b.links)
    for (const auto& l : b.fabric.links) r.ici_links.push_back({l->name(), l->bytes(), l->busy_s(), l->queued_s()});
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
        if (n > 1 && c.ici_network && c.simulated_cores > 1)  // every chunk of every core over one link, the longest route
          step += 2 * (n - 1) * t.bytes / c.ici_network->link_bytes_per_s +
                  2 * (n - 1) * c.ici_network->hop_latency_s * (c.ici_network->chips() + 1);
        else if (n > 1)
          step += 2 * (n - 1) / n * t.bytes / c.ici_bytes_per_s + 2 * (n - 1) * c.ici_hop_latency_s;
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
