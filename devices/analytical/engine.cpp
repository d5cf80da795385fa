#include "devices/analytical/engine.hpp"

#include <algorithm>
#include <vector>

#include "common/error.hpp"
#include "common/suggest.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/memory.hpp"
#include "devices/analytical/op_cost.hpp"
#include "devices/analytical/rates.hpp"
#include "devices/analytical/stack_op_cost.hpp"
#include "devices/analytical/trace.hpp"
#include "engine/platform_spec.hpp"
#include "parallel/step_composer.hpp"

namespace xpusim::analytical {

namespace {

// Every op of the per-device step priced on one device, as the parallel layer's PricedOps
// (indexed by op id) and as the roofline's OpCosts (for the report's time split).
// Each op costs what the stack pays for it (stack_op_cost.hpp, shared with `predict --explain`).
std::vector<parallel::PricedOp> price_ops(const OpGraph& g, const Rates& rates, const FrameworkSpec& fw,
                                          std::vector<OpCost>& costs) {
  std::vector<parallel::PricedOp> priced(static_cast<size_t>(g.num_ops()));
  costs.assign(static_cast<size_t>(g.num_ops()), OpCost{});
  OpCostModel model(rates);
  for (int op : g.schedule()) {
    const OpCost c = stack_op_cost(g, op, rates, model, fw);
    costs[static_cast<size_t>(op)] = c;
    parallel::PricedOp& p = priced[static_cast<size_t>(op)];
    p.collective = c.cls == OpClass::communication;
    p.time_s = c.time_s();
    p.collective_bytes = c.comm_bytes;
    p.overhead_s = c.overhead_s;
  }
  return priced;
}

}  // namespace

std::vector<double> op_times_s(const OpGraph& g, const ResolvedPlacement& p) {
  const DeviceSpec& d = p.device_as<DeviceSpec>();
  if (!d.supports(g.precision))
    throw FieldError("precision", "device '" + d.name + "' does not support " + precision_name(g.precision) +
                                      " (supports: " + join_names(d.precisions) + ")");
  const Rates rates = stack_rates(d, g.precision, p.build.value_or(d.default_build), p.count, *p.framework);
  std::vector<OpCost> costs;
  price_ops(g, rates, *p.framework, costs);
  std::vector<double> t(costs.size(), 0.0);
  for (size_t i = 0; i < costs.size(); ++i)
    if (costs[i].cls != OpClass::communication) t[i] = costs[i].time_s();
  return t;
}

std::string AnalyticalEngine::description() const {
  return "analytical roofline model of GPUs and CPUs (configs/devices/, docs/analytical-model.md)";
}

std::shared_ptr<const DeviceConfig> AnalyticalEngine::load_device(const std::string& path,
                                                                  const std::vector<std::string>& overrides) const {
  return std::make_shared<const DeviceSpec>(load_device_spec(path, overrides));
}

// Device x system x count x build, beyond what predict() checks for every engine.
void AnalyticalEngine::check_placement(ResolvedPlacement& p) const {
  const DeviceSpec& d = p.device_as<DeviceSpec>();
  const SystemSpec& s = *p.system;
  if (d.kind == DeviceKind::gpu) {
    if (p.count > s.max_devices)
      throw FieldError("count", "system '" + s.name + "' holds at most " + std::to_string(s.max_devices) +
                                    " devices, got " + std::to_string(p.count));
    if (p.requested.build) throw FieldError("build", "only CPU devices take a framework build (pip|compiled)");
    if (s.intra_host.topology == Topology::nvlink_bridge_pairs && d.nvlink_gbps <= 0)
      throw FieldError("system", "system '" + s.name + "' bridges GPU pairs with NVLink but device '" + d.name +
                                     "' states no nvlink_gbps");
    p.replicas = p.count;
    // The host's cores feed the GPUs of one host.
    p.input_feed = InputFeed{static_cast<double>(s.host.cpu_cores), s.host.core_speed,
                             std::min(p.count, s.devices_per_host), s.host.threads_per_core, s.host.smt_yield, s.name};
  } else {
    const int most = std::min(d.max_vcpus, s.max_devices);
    if (p.count > most)
      throw FieldError("count", "device '" + d.name + "' on system '" + s.name + "' has at most " +
                                    std::to_string(most) + " vCPUs, got " + std::to_string(p.count));
    p.build = p.requested.build ? p.requested.build : p.framework_build ? p.framework_build : d.default_build;
    p.replicas = 1;  // the vCPUs of one machine are one worker
    // The input pipeline runs on the vCPUs that train (their effective cores).
    p.input_feed = InputFeed{cpu_effective_cores(d, p.count), 1.0, 1, 1, 0.0, s.name};
  }
}

StepReport AnalyticalEngine::run_step(const StepRequest& req) {
  if (!req.graph) throw InternalError("analytical: StepRequest without a graph");
  // No waveform: the roofline model has no units with signals to record.
  if (!req.vcd_path.empty())
    throw FieldError("vcd", "the analytical engine has no simulated units to record as a waveform; waveforms come "
                            "from the tpu_systemc engine (a TPU device)");
  const OpGraph& g = *req.graph;
  const DeviceSpec& d = req.placement.device_as<DeviceSpec>();
  const SystemSpec& sys = *req.placement.system;
  const CpuBuild build = req.placement.build.value_or(d.default_build);
  if (!d.supports(g.precision))
    throw FieldError("precision", "device '" + d.name + "' does not support " + precision_name(g.precision) +
                    " (supports: " + join_names(d.precisions) + ")");
  const int count = req.placement.count;
  const bool gpu = d.kind == DeviceKind::gpu;
  const int replicas = req.placement.replicas;  // check_placement: the GPUs, or 1 for a CPU machine

  const FrameworkSpec& fw = *req.placement.framework;
  const Rates rates = stack_rates(d, g.precision, build, count, fw);

  // The step over `replicas` devices: the parallel layer composes it from the per-op costs
  // priced here and the gradient exchange priced on the system's topology.
  std::vector<OpCost> costs;
  const std::vector<parallel::PricedOp> priced = price_ops(g, rates, fw, costs);
  // Parameter server: each device pulls the fp32 weights before its next forward pass. An
  // inference pass updates no weights, so there is nothing to pull (and, with no AllReduce
  // ops in its graph, nothing to exchange at all).
  const bool inference = g.task == Task::inference;
  int64_t weight_bytes = 0;
  for (int t : g.tensors_with_role(TensorRole::weight)) weight_bytes += g.tensor(t).desc.bytes();
  parallel::ComposeOptions co;
  co.strategy = fw.strategy;
  co.comm_overlap = d.comm_overlap;
  co.weight_bytes = static_cast<double>(weight_bytes);
  co.inference = inference;
  co.bucket_bytes = fw.allreduce_bucket_mb * 1024.0 * 1024.0;
  // Gradient accumulation: each micro-batch after the first adds its weight gradients into
  // the accumulated ones, one elementwise kernel per gradient tensor (PyTorch's
  // AccumulateGrad) reading both and writing the sum.
  const int micro_batches = std::max(1, req.micro_batches);
  if (micro_batches > 1) {
    // Only the backward's own gradients are summed: the all-reduced copies a data-parallel
    // graph also tags weight_grad exist once per step (counting them doubled the sums on
    // every multi-GPU row, issue 29v).
    double grad_bytes = 0, summed = 0;
    for (int t : g.tensors_with_role(TensorRole::weight_grad)) {
      const int producer = g.tensor(t).producer;
      if (producer >= 0 && g.op(producer).kind == OpKind::AllReduce) continue;
      grad_bytes += static_cast<double>(g.tensor(t).desc.bytes());
      summed += 1;
    }
    co.accumulate_s = OpCostModel(rates).memory_seconds(3 * grad_bytes) + summed * rates.op_overhead_s;
  }
  parallel::ParallelPlan plan = parallel::ParallelPlan::data_parallel(replicas);
  plan.micro_batches = micro_batches;
  const parallel::StepComposer composer(
      plan,
      parallel::make_cluster_topology(sys, replicas, parallel::DevicePorts{d.pcie_gbps, d.nvlink_gbps, d.pcie_p2p},
                                      parallel::collective_efficiency(fw.allreduce_efficiency,
                                                                      sys.intra_host.allreduce_efficiency,
                                                                      d.allreduce_efficiency)),
      co);
  const parallel::ComposedStep step = composer.compose(g, priced);
  if (!req.trace_path.empty())
    write_trace(req.trace_path, g, costs, step,
                TraceInfo{d.name, sys.name, req.model, precision_name(g.precision), replicas, step.device_s()});

  double t_compute_bound = 0, t_memory_bound = 0, t_overhead = 0;
  double flops = 0, bytes = 0, compute_busy = 0, memory_busy = 0;
  double flops_saved = 0;  // skipped by Winograd / FFT: counted in flops_per_step, not executed
  double unaligned_s = 0;  // GEMMs on unaligned kernels (gemm_alignment.hpp)
  StepReport rep;
  for (int op : g.schedule()) {
    const OpNode& n = g.op(op);
    const OpCost& c = costs[static_cast<size_t>(op)];
    if (c.cls == OpClass::communication) {
      rep.per_op_s[op_kind_name(n.kind)] += step.collective_s[static_cast<size_t>(op)];
    } else {
      // Forward and backward ops run once per micro-batch, the update once per step.
      const double w = n.phase == Phase::forward || n.phase == Phase::backward ? micro_batches : 1;
      (c.compute_s >= c.memory_s ? t_compute_bound : t_memory_bound) += w * std::max(c.compute_s, c.memory_s);
      t_overhead += w * c.overhead_s;
      flops += w * n.work.flops;
      flops_saved += w * c.flops_saved;
      compute_busy += w * c.compute_s;
      memory_busy += w * c.memory_s;
      bytes += w * static_cast<double>(n.work.bytes_read + n.work.bytes_written);
      if (c.cls != OpClass::none) rep.per_op_s[op_kind_name(n.kind)] += w * c.time_s();
      if (c.unaligned) unaligned_s += w * c.time_s();
    }
  }
  if (micro_batches > 1) {
    const double sums_s = (micro_batches - 1) * co.accumulate_s;
    t_memory_bound += sums_s;
    memory_busy += sums_s;
    rep.extra["micro_batches"] = micro_batches;
    rep.extra["gradient_accumulation_s"] = sums_s;
  }

  MemoryEstimate mem = estimate_memory(g, d, count);
  const double comm_exposed_s = step.exposed_comm_s();

  // The input batch crosses PCIe to each GPU (prefetched, so it overlaps the step); the host
  // pass bounds the step by it and by the host's input pipeline (predict/host_pass.hpp).
  int64_t input_bytes = 0;
  for (int t : g.tensors_with_role(TensorRole::input)) input_bytes += g.tensor(t).desc.bytes();
  const double pcie_gbps = d.pcie_gbps > 0 ? std::min(sys.host.pcie_bandwidth_gbps, d.pcie_gbps) : sys.host.pcie_bandwidth_gbps;
  const double infeed_s =
      gpu ? static_cast<double>(micro_batches) * static_cast<double>(input_bytes) / (pcie_gbps * 1e9) : 0.0;

  // Towers that take turns (the profile's serial_towers: Keras multi_gpu_model on TF 1.13):
  // while one GPU runs its tower's forward and backward ops the others wait, so the step holds
  // (replicas - 1) more towers' worth of them. The update runs once, on the gathering device.
  double tower_wait_s = 0;
  if (fw.serial_towers && replicas > 1) {
    double tower_s = 0;
    for (int op : g.schedule()) {
      const Phase ph = g.op(op).phase;
      const parallel::PricedOp& c = priced[static_cast<size_t>(op)];
      if (!c.collective && (ph == Phase::forward || ph == Phase::backward)) tower_s += c.time_s;
    }
    tower_wait_s = static_cast<double>(replicas - 1) * micro_batches * tower_s;
    rep.extra["tower_wait_s"] = tower_wait_s;
  }

  DeviceStep& ds = rep.device_step;
  ds.coupling = gpu ? HostCoupling::prefetched : HostCoupling::shared_cores;
  ds.device_s = step.device_s() + tower_wait_s;
  // The device file's per-step cost is a graph session's run (fitted on TF rows); a runtime
  // without one (the profile's session_run: false) does not pay it.
  ds.device_overhead_s = fw.session_run ? d.step_overhead_ms * 1e-3 : 0.0;
  ds.infeed_s = infeed_s;
  ds.shares = {{Resource::compute, t_compute_bound},
               {Resource::memory, t_memory_bound},
               {Resource::overhead, t_overhead},
               {Resource::communication, comm_exposed_s}};
  ds.busy_s[Resource::compute] = compute_busy;
  ds.busy_s[Resource::memory] = memory_busy;
  if (replicas > 1) ds.busy_s[Resource::communication] = step.comm_busy_s;
  ds.flops = flops - flops_saved;

  rep.engine = name();
  rep.device = d.name;
  rep.system = sys.name;
  rep.count = count;
  rep.batch_per_device = g.batch;
  // Framework memory: allocator slack and copies over the tensors, and extra weight copies
  // (the gathering device of multi_gpu_model holds the merged weights and gradients: training
  // only, an inference pass merges nothing).
  if (fw.memory_overhead_fraction > 0 || fw.extra_weight_copies > 0) {
    const int copies =
        !inference && (replicas > 1 || fw.strategy == MultiDeviceStrategy::system) ? fw.extra_weight_copies : 0;
    mem.framework_bytes = static_cast<int64_t>(fw.memory_overhead_fraction *
                                                static_cast<double>(mem.persistent_bytes + mem.activation_bytes)) +
                          copies * weight_bytes;
    mem.total_bytes += mem.framework_bytes;
  }
  // The framework's pool reserve (MXNet): device memory held back from the tensors.
  if (fw.memory_pool_reserve_fraction > 0) {
    const auto reserve =
        static_cast<int64_t>(fw.memory_pool_reserve_fraction * static_cast<double>(mem.capacity_bytes));
    mem.framework_bytes += reserve;
    mem.total_bytes += reserve;
  }
  rep.memory_bytes = mem.total_bytes;
  rep.memory_capacity_bytes = mem.capacity_bytes;
  rep.fits_in_memory = mem.fits();

  // Achieved FLOP/s counts the FLOPs the device executes (ds.flops), so it stays under the
  // peak; the multiplies Winograd / FFT skip are reported apart (crediting them gave
  // 26.4 TFLOP/s on a 21.2 TFLOP/s P100). The host pass divides by the step.
  rep.extra["fast_algorithm_flops_saved_per_step"] = flops_saved;
  // Reported only where it happens: pad the dimension (a vocabulary to a multiple of 8) to avoid it.
  if (unaligned_s > 0) rep.extra["unaligned_gemm_s"] = unaligned_s;
  rep.extra["peak_flops_per_s"] = peak_gemm_flops_s(d, g.precision, build, count);
  rep.extra["bytes_per_step"] = bytes;

  rep.extra["kind"] = gpu ? "gpu" : "cpu";
  if (!gpu) rep.extra["build"] = cpu_build_name(build);
  // The detected host CPU the prediction assumed (vendor, family, clock, vector width).
  if (!d.detected_cpu.empty()) rep.extra["host_cpu"] = d.detected_cpu;
  rep.extra["time_compute_bound_s"] = t_compute_bound;
  rep.extra["time_memory_bound_s"] = t_memory_bound;
  rep.extra["communication_busy_s"] = step.comm_busy_s;
  rep.extra["communication_exposed_s"] = comm_exposed_s;
  rep.extra["infeed_s"] = infeed_s;
  rep.extra["flops_per_step"] = flops;
  rep.extra["memory_persistent_bytes"] = mem.persistent_bytes;
  rep.extra["memory_activation_bytes"] = mem.activation_bytes;
  rep.extra["memory_workspace_bytes"] = mem.workspace_bytes;
  rep.extra["memory_reserved_bytes"] = mem.reserved_bytes;
  if (!fw.neutral()) rep.extra["memory_framework_bytes"] = mem.framework_bytes;
  return rep;
}

}  // namespace xpusim::analytical
