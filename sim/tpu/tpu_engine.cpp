// The tpu_systemc engine: specs -> lowering -> SystemC simulation -> StepReport.
#include "sim/tpu/tpu_engine.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/error.hpp"
#include "models/work.hpp"
#include "models/zoo.hpp"
#include "engine/op_visitor.hpp"
#include "engine/platform_spec.hpp"
#include "sim/tpu/core_model.hpp"
#include "sim/tpu/lowering.hpp"
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
  void check_placement(const Placement& p) const override { resolve(p); }

  // Device spec (with overrides) and system of a placement; FieldError naming the bad field.
  static std::pair<TpuSpec, SystemSpec> resolve(const Placement& p) {
    TpuSpec spec = load_tpu_spec(resolve_config("devices", p.device), p.overrides);
    SystemSpec sys = find_system(p.system.empty() ? spec.default_system : p.system);
    if (std::find(sys.devices.begin(), sys.devices.end(), spec.name) == sys.devices.end())
      throw FieldError("system", "" + sys.name + " does not hold device " + spec.name);
    if (p.count > sys.max_devices)
      throw FieldError("count", "" + sys.name + " has at most " + std::to_string(sys.max_devices) +
                      " TensorCores, got " + std::to_string(p.count));
    return {spec, sys};
  }

  StepReport run_step(const StepRequest& req) override {
    if (!req.graph) throw InternalError("tpu_systemc: no graph");
    const OpGraph& g = *req.graph;
    auto [spec, sys] = resolve(req.placement);
    const int count = req.placement.count;

    StepReport rep;
    rep.engine = name();
    rep.device = spec.name;
    rep.system = sys.name;
    rep.count = count;
    rep.batch_per_device = g.batch;
    rep.global_batch = g.batch * count;

    // Memory: persistent state plus the peak of live tensors over the schedule (work.cpp).
    GraphTotals tot = graph_totals(g);
    rep.memory_bytes = tot.peak_bytes + static_cast<int64_t>(spec.runtime_reserved_bytes);
    rep.memory_capacity_bytes = spec.hbm_capacity_bytes;
    rep.fits_in_memory = rep.memory_bytes <= spec.hbm_capacity_bytes;
    rep.extra["memory_bytes_per_core"] = rep.memory_bytes;
    if (!rep.fits_in_memory) {
      // Not simulated: the program could not be placed in HBM.
      rep.bottleneck = "memory";
      rep.extra["memory_needed_bytes"] = rep.memory_bytes;
      return rep;
    }

    LoweringOptions lo;
    lo.real_data = req.data == DataSource::real;
    Program prog = lower_step(g, spec, lo);

    SimConfig c;
    c.hbm_bytes_per_s = spec.hbm_bandwidth_gbps * 1e9 * spec.hbm_efficiency;
    // Inbound and outbound queues each keep dma_engines/2 transfers in flight, hiding latency.
    c.dma_latency_s = spec.hbm_latency_ns * 1e-9 / std::max(1, spec.dma_engines / 2);
    c.dma_burst_bytes = static_cast<double>(spec.dma_burst_bytes);
    // A bidirectional ring over the board: each chip sends on one link per direction, shared
    // by its cores (docs/tpu-model.md).
    c.ici_bytes_per_s = 2.0 * spec.ici_link_bandwidth_gbps * 1e9 / spec.cores_per_chip;
    c.ici_hop_latency_s = spec.ici_latency_us * 1e-6;
    c.replicas = count;
    c.real_data = lo.real_data;
    if (c.real_data) {
      DatasetSpec ds = find_dataset(find_model(req.model).dataset);
      // The host prepares the global batch on all its cores; each core receives its share.
      double host_core_s = static_cast<double>(rep.global_batch) * ds.host_preprocess_ms * 1e-3;
      c.host_batch_s = host_core_s / (sys.host.cpu_cores * sys.host.core_speed);
      c.pcie_bytes_per_s = sys.host.pcie_bandwidth_gbps * 1e9;
      rep.extra["host_images_per_s"] = sys.host.cpu_cores * sys.host.core_speed / (ds.host_preprocess_ms * 1e-3);
    }
    c.prefetch_depth = spec.prefetch_depth_batches;
    c.steps = 2;

    SimResult r = simulate(prog, c, true);
    if (!req.trace_path.empty()) write_trace(req.trace_path, prog, r);

    rep.step_time_s = r.step_time_s;
    rep.throughput_samples_per_s = r.step_time_s > 0 ? rep.global_batch / r.step_time_s : 0;
    const double T = r.step_time_s > 0 ? r.step_time_s : 1;
    auto busy = [&](Unit u) { return r.busy_s[static_cast<int>(u)]; };
    rep.utilization["mxu"] = busy(Unit::mxu) / T;
    rep.utilization["vector"] = busy(Unit::vector) / T;
    rep.utilization["hbm"] = prog.hbm_bytes / c.hbm_bytes_per_s / T;
    rep.utilization["ici"] = busy(Unit::ici) / T;
    rep.utilization["infeed"] = std::min(1.0, r.host_busy_s / T);
    // The bottleneck: infeed when the measured step waited for its batch (the host bounds
    // the step); otherwise the busiest device unit, ties to the first in this order.
    const char* order[] = {"mxu", "hbm", "vector", "ici"};
    std::string best = order[0];
    for (const char* u : order)
      if (rep.utilization[u] > rep.utilization[best] + 1e-12) best = u;
    if (r.infeed_stall_s > 1e-3 * r.step_time_s) best = "infeed";
    rep.bottleneck = best;

    // Per op kind: the busy time of each fused op's busiest unit.
    std::vector<std::array<double, kNumUnits>> per(prog.ops.size());
    for (const auto& e : r.trace) per[static_cast<size_t>(e.op)][static_cast<int>(e.unit)] += e.end_s - e.start_s;
    for (size_t i = 0; i < prog.ops.size(); ++i) {
      double m = *std::max_element(per[i].begin(), per[i].end());
      if (m > 0) rep.per_op_s[prog.ops[i].kind] += m;
    }

    double peak_flops = 2.0 * spec.mxu_rows * spec.mxu_cols * spec.mxu_count * spec.clock_mhz * 1e6;
    rep.extra["mxu_flops_utilization"] = prog.mxu_flops / (peak_flops * T);
    rep.extra["hbm_bytes_per_step"] = prog.hbm_bytes;
    rep.extra["ici_bytes_per_step"] = prog.ici_bytes;
    rep.extra["infeed_bytes_per_step"] = prog.infeed_bytes;
    rep.extra["infeed_stall_s"] = r.infeed_stall_s;
    rep.extra["fused_ops"] = static_cast<int64_t>(prog.ops.size());
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
