// The tpu_systemc engine: specs -> lowering -> SystemC simulation -> StepReport.
#include "sim/tpu/tpu_engine.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "models/work.hpp"
#include "engine/op_visitor.hpp"
#include "engine/platform_spec.hpp"
#include "sim/tpu/core_model.hpp"
#include "sim/tpu/ici_network.hpp"
#include "sim/tpu/lowering.hpp"
#include "sim/tpu/slice.hpp"
#include "sim/tpu/tpu_spec.hpp"
#include "sim/tpu/trace_writer.hpp"

namespace xpusim::tpu {

namespace {

class TpuEngine final : public Engine {
 public:
  std::string name() const override { return "tpu_systemc"; }
  std::string description() const override {
    return "cycle-approximate SystemC model of a TPU board (MXU, vector unit, HBM/DMA, ICI, host infeed)";
  }
  Availability availability() const override { return {true, true, ""}; }
  bool has_timeline() const override { return true; }

  std::shared_ptr<const DeviceConfig> load_device(const std::string& path,
                                                  const std::vector<std::string>& overrides) const override {
    return std::make_shared<const TpuSpec>(load_tpu_spec(path, overrides));
  }

  void check_placement(ResolvedPlacement& p) const override {
    if (p.count > p.system->max_devices)
      throw FieldError("count", p.system->name + " has at most " + std::to_string(p.system->max_devices) +
                                    " TensorCores, got " + std::to_string(p.count));
    if (p.requested.build) throw FieldError("build", "only CPU devices take a framework build (pip|compiled)");
    // Past one board a placement is a slice, or equal slices over DCN (sim/tpu/slice.hpp): a
    // count the generation does not offer is refused here, naming `count`.
    const TpuSpec& spec = p.device_as<TpuSpec>();
    if (p.count > spec.cores_per_board() && !spec.slice_shapes.empty()) {
      if (p.count % spec.cores_per_chip != 0)
        throw FieldError("count", std::to_string(p.count) + " TensorCores are not whole " + spec.name + " chips (" +
                                      std::to_string(spec.cores_per_chip) + " cores each)");
      tpu_multislice(spec, p.count / spec.cores_per_chip);
    }
    p.replicas = p.count;  // every TensorCore is a data-parallel replica
    // The host prepares the global batch on all its cores; each core receives its share.
    p.input_feed = InputFeed{static_cast<double>(p.system->host.cpu_cores), p.system->host.core_speed, p.count,
                             p.system->host.threads_per_core, p.system->host.smt_yield, p.system->name};
  }

  StepReport run_step(const StepRequest& req) override {
    if (!req.graph) throw InternalError("tpu_systemc: no graph");
    const OpGraph& g = *req.graph;
    const TpuSpec& spec = req.placement.device_as<TpuSpec>();
    const SystemSpec& sys = *req.placement.system;
    const int count = req.placement.count;
    // A board (count <= cores_per_board, issue 32) is simulated whole: every TensorCore its own
    // core with its own units and HBM channel, the gradient all-reduce a real exchange between
    // them (core_model.hpp), and the step is the slowest core's. A trace or a waveform shows
    // every TensorCore for any count up to kMaxSimulatedCores. Past the board without a trace
    // (or with simulate_board false, for sweeps that pay per point) core 0 alone is simulated,
    // the cores being symmetric, and the all-reduce takes the ring formula's time.
    const bool traced = !req.trace_path.empty() || !req.vcd_path.empty();
    const bool whole_board = spec.simulate_board && count > 1 && count <= spec.cores_per_board() &&
                             count <= kMaxSimulatedCores;
    const bool every_core = traced || whole_board;
    if (every_core && count > kMaxSimulatedCores)
      throw FieldError(req.trace_path.empty() ? "vcd" : "trace",
                       "a trace or waveform simulates every TensorCore, at most " + std::to_string(kMaxSimulatedCores) +
                           "; got " + std::to_string(count) +
                           " (data-parallel cores are symmetric: trace a smaller count, the per-core timeline is the same "
                           "up to the all-reduce)");

    StepReport rep;
    rep.engine = name();
    rep.device = spec.name;
    rep.system = sys.name;
    rep.count = count;
    rep.batch_per_device = g.batch;
    rep.device_step.coupling = HostCoupling::simulated;

    // Memory: persistent state plus the peak of live tensors over the schedule (work.cpp).
    GraphTotals tot = graph_totals(g);
    const bool fp32_storage = req.placement.framework && req.placement.framework->tpu_fp32_storage;
    rep.memory_bytes = stored_peak_bytes(tot, g.precision, fp32_storage) + static_cast<int64_t>(spec.runtime_reserved_bytes);
    rep.memory_capacity_bytes = spec.hbm_capacity_bytes;
    rep.fits_in_memory = rep.memory_bytes <= spec.hbm_capacity_bytes;
    rep.extra["memory_bytes_per_core"] = rep.memory_bytes;
    // A step that does not fit is still simulated, as the analytical engine still times it:
    // the report says fits_in_memory false with the time the step would take. Returning
    // early reported step_time_s 0 and throughput 0 with exit 0.
    if (!rep.fits_in_memory) rep.extra["memory_needed_bytes"] = rep.memory_bytes;

    LoweringOptions lo;
    lo.real_data = req.data == DataSource::real;
    lo.fp32_storage = fp32_storage;
    Program prog = lower_step(g, spec, lo);

    SimConfig c;
    c.hbm_bytes_per_s = spec.hbm_bandwidth_gbps * 1e9 * spec.hbm_efficiency;
    // Inbound and outbound queues each keep dma_engines/2 transfers in flight, hiding latency.
    c.dma_latency_s = spec.hbm_latency_ns * 1e-9 / std::max(1, spec.dma_engines / 2);
    c.dma_burst_bytes = static_cast<double>(spec.dma_burst_bytes);
    // A bidirectional ring over the board's cores (docs/tpu-model.md, "ICI links"): in each
    // ring step a core sends half its chunk to each neighbour, each half over its own link
    // (the chips in snake order, a chip's cores consecutive, so no link carries two chunks of
    // one step): per core, two links' worth of bandwidth.
    c.ici_bytes_per_s = 2.0 * spec.ici_link_bandwidth_gbps * 1e9;
    c.ici_hop_latency_s = spec.ici_latency_us * 1e-6;
    c.replicas = count;
    c.simulated_cores = every_core ? count : 1;
    // Every core of one board: the exchange crosses the board's ICI links as SystemC channels.
    if (every_core && count <= spec.cores_per_board())
      c.ici_network = std::make_shared<const IciNetwork>(board_ici_network(spec, count));
    if (count > spec.cores_per_board() && !spec.slice_shapes.empty()) {
      // A slice or multislice: the all-reduce over the torus and DCN in closed form
      // (parallel/torus.hpp), no loop over chips. Its time is linear in the bytes, a x bytes + b,
      // which the core model's ring formula 2(n-1)/n x bytes / B + 2(n-1) x hop reproduces with
      // B and hop chosen below. A chip's links carry each of its cores' gradients (x cores_per_chip).
      const TpuMultislice m = tpu_multislice(spec, count / spec.cores_per_chip);
      int all_reduces = 0;
      for (const Task& t : prog.tasks) all_reduces += t.unit == Unit::ici && t.bytes > 0;
      const SliceRingRates rates = slice_ring_rates(spec, m, count, all_reduces);
      c.ici_bytes_per_s = rates.bytes_per_s;
      c.ici_hop_latency_s = rates.hop_latency_s;
      rep.extra["slices"] = static_cast<int64_t>(m.slices);
      rep.extra["slice_chips"] = static_cast<int64_t>(m.slice.chips);
    }
    c.cores_per_chip = spec.cores_per_chip;
    c.real_data = lo.real_data;
    if (c.real_data) {
      // The host pass's time for the input pipeline to prepare one step's batch (the
      // framework's threads and per-sample cost); the simulation queues it against the step.
      c.host_batch_s = req.host_batch_s;
      c.pcie_bytes_per_s = sys.host.pcie_bandwidth_gbps * 1e9;
    }
    c.prefetch_depth = spec.prefetch_depth_batches;
    c.steps = 2;
    c.vcd_path = req.vcd_path;
    c.record_queue_depths = !req.trace_path.empty();

    // With a trace or waveform, every core first (a waveform can only be written by the
    // process's first simulation), then the one-core run the report comes from: a prediction
    // is the same with and without a trace. The two steps differ only by how ties at the HBM
    // channel are broken (core_model.cpp, dma()); the trace's metadata gives both.
    SimResult board;
    if (c.simulated_cores > 1 && !whole_board) {
      board = simulate(prog, c, true);
      c.simulated_cores = 1;
      c.vcd_path.clear();
      c.record_queue_depths = false;  // the trace is the board's
    }
    SimResult r = simulate(prog, c, true);
    if (whole_board) {
      board = r;
      // The step ends when the last core has finished it (symmetric cores: all at once).
      for (double t : r.core_step_time_s) r.step_time_s = std::max(r.step_time_s, t);
      rep.extra["simulated_cores"] = static_cast<int64_t>(count);
    } else {
      rep.extra["simulated_cores"] = static_cast<int64_t>(1);
    }
    if (!req.trace_path.empty())
      write_trace(req.trace_path, prog, count > 1 ? board : r,
                  TraceInfo{spec.name, count, spec.cores_per_chip, r.step_time_s, c.prefetch_depth, c.dma_burst_bytes});


    // The device step; the host pass adds the framework's host work between steps.
    rep.device_step.device_s = r.step_time_s;
    const double T = r.step_time_s > 0 ? r.step_time_s : 1;
    auto busy = [&](Unit u) { return r.busy_s[static_cast<int>(u)]; };
    rep.utilization[Resource::mxu] = busy(Unit::mxu) / T;
    rep.utilization[Resource::vector] = busy(Unit::vector) / T;
    rep.utilization[Resource::hbm] = prog.hbm_bytes / c.hbm_bytes_per_s / T;
    rep.utilization[Resource::ici] = busy(Unit::ici) / T;
    rep.utilization[Resource::infeed] = std::min(1.0, r.host_busy_s / T);
    // The bottleneck: infeed when the measured step waited for its batch (the host bounds
    // the step); otherwise the busiest device unit, ties to the first in this order.
    const Resource order[] = {Resource::mxu, Resource::hbm, Resource::vector, Resource::ici};
    Resource best = order[0];
    for (Resource u : order)
      if (rep.utilization[u] > rep.utilization[best] + 1e-12) best = u;
    if (r.infeed_stall_s > 1e-3 * r.step_time_s) best = Resource::infeed;
    rep.bottleneck = best;

    // Per op kind: the busy time of each fused op's busiest unit.
    std::vector<std::array<double, kNumUnits>> per(prog.ops.size());
    for (const auto& e : r.trace)
      if (e.core == 0) per[static_cast<size_t>(e.op)][static_cast<int>(e.unit)] += e.end_s - e.start_s;
    for (size_t i = 0; i < prog.ops.size(); ++i) {
      double m = *std::max_element(per[i].begin(), per[i].end());
      if (m > 0) rep.per_op_s[prog.ops[i].kind] += m;
    }

    double peak_flops = 2.0 * spec.mxu_rows * spec.mxu_cols * spec.mxu_count * spec.clock_mhz * 1e6;
    rep.extra["mxu_flops_utilization"] = prog.mxu_flops / (peak_flops * T);
    // The core fields every engine shares (engine/core_fields.hpp): per core, like the rest.
    rep.extra["flops_per_step"] = prog.mxu_flops;
    rep.extra["peak_flops_per_s"] = peak_flops;
    rep.extra["hbm_bytes_per_step"] = prog.hbm_bytes;
    rep.extra["ici_bytes_per_step"] = prog.ici_bytes;
    rep.extra["infeed_bytes_per_step"] = prog.infeed_bytes;
    rep.extra["infeed_stall_s"] = r.infeed_stall_s;
    rep.extra["fused_ops"] = static_cast<int64_t>(prog.ops.size());
    // What XLA compiles before the first step: one kernel per fused op. The host pass prices
    // the compile by it (issue 32; docs/tpu-model.md "Compile time").
    rep.extra["compiled_kernels"] = static_cast<int64_t>(prog.ops.size());
    rep.extra["program_tasks"] = static_cast<int64_t>(prog.tasks.size());
    rep.extra["simulated_steps"] = c.steps;
    for (int u = 0; u < kNumUnits; ++u)
      rep.extra[std::string("busy_s_") + unit_name(static_cast<Unit>(u))] = r.busy_s[static_cast<size_t>(u)];
    return rep;
  }
};

}  // namespace

std::unique_ptr<Engine> make_tpu_engine() { return std::make_unique<TpuEngine>(); }

}  // namespace xpusim::tpu
