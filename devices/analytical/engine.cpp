#include "devices/analytical/engine.hpp"

#include <algorithm>
#include <vector>

#include "common/error.hpp"
#include "devices/analytical/comm.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/memory.hpp"
#include "devices/analytical/op_cost.hpp"
#include "devices/analytical/rates.hpp"
#include "engine/platform_spec.hpp"

namespace xpusim::analytical {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "" : ", ") + e;
  return s;
}

}  // namespace

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
    if (s.intra_host.topology == "nvlink_bridge_pairs" && d.nvlink_gbps <= 0)
      throw FieldError("system", "system '" + s.name + "' bridges GPU pairs with NVLink but device '" + d.name +
                                     "' states no nvlink_gbps");
    p.replicas = p.count;
  } else {
    const int most = std::min(d.max_vcpus, s.max_devices);
    if (p.count > most)
      throw FieldError("count", "device '" + d.name + "' on system '" + s.name + "' has at most " +
                                    std::to_string(most) + " vCPUs, got " + std::to_string(p.count));
    p.build = p.requested.build ? p.requested.build : p.framework_build ? p.framework_build : d.default_build;
    p.replicas = 1;  // the vCPUs of one machine are one worker
  }
}

StepReport AnalyticalEngine::run_step(const StepRequest& req) {
  if (!req.graph) throw InternalError("analytical: StepRequest without a graph");
  // The roofline model has no op timeline: a trace request must fail, not be ignored.
  if (!req.trace_path.empty())
    throw FieldError("trace", "the analytical engine predicts whole-op times without a timeline; traces come from "
                              "the tpu_systemc engine (a TPU device)");
  const OpGraph& g = *req.graph;
  const DeviceSpec& d = req.placement.device_as<DeviceSpec>();
  const SystemSpec& sys = *req.placement.system;
  const CpuBuild build = req.placement.build.value_or(d.default_build);
  if (!d.supports(g.precision))
    throw FieldError("precision", "device '" + d.name + "' does not support " + precision_name(g.precision) +
                    " (supports: " + join(d.precisions) + ")");
  const int count = req.placement.count;
  const bool gpu = d.kind == DeviceKind::gpu;
  const int replicas = gpu ? count : 1;

  const FrameworkSpec& fw = *req.placement.framework;
  Rates rates = stack_rates(d, g.precision, build, count, fw);
  // Keras multi_gpu_model: every tower's gradients go to one device, which sends weights back
  // after the whole backward pass (no overlap with compute).
  const bool gather = fw.strategy == MultiDeviceStrategy::gather_on_first && replicas > 1;
  CollectiveLinks links;
  links.replicas = replicas;
  links.devices_per_host = sys.devices_per_host;
  const double intra_gbps = intra_host_gbps(sys.intra_host.topology, sys.intra_host.bandwidth_gbps,
                                            std::min(replicas, sys.devices_per_host), d.pcie_gbps, d.nvlink_gbps);
  links.intra_bytes_s = std::max(1e-3, intra_gbps) * 1e9 * d.allreduce_efficiency;
  links.intra_latency_s = sys.intra_host.latency_us * 1e-6;
  links.inter_bytes_s = std::max(1e-3, sys.inter_host.bandwidth_gbps) * 1e9 * d.allreduce_efficiency;
  links.inter_latency_s = sys.inter_host.latency_us * 1e-6;
  links.parameter_server = sys.collective == Collective::parameter_server;

  // Two in-order timelines: the compute stream runs ops in schedule order as soon as their
  // inputs are ready; the communication stream runs all-reduces as soon as their gradient is.
  OpCostModel model(rates);
  std::vector<double> ready(static_cast<size_t>(g.num_tensors()), 0.0);
  double compute_free = 0, comm_free = 0, comm_busy = 0, comm_stall = 0;
  double t_compute_bound = 0, t_memory_bound = 0, t_overhead = 0;
  double flops = 0, bytes = 0, compute_busy = 0, memory_busy = 0;
  StepReport rep;
  for (int op : g.schedule()) {
    const OpNode& n = g.op(op);
    OpCost c = model.visit(g, op);
    double dep = 0;
    for (int t : n.inputs) dep = std::max(dep, ready[static_cast<size_t>(t)]);
    double end;
    if (c.cls == OpClass::communication) {
      const double t =
          (gather ? gather_on_first_time_s(c.comm_bytes, links) : allreduce_time_s(c.comm_bytes, links)) + c.overhead_s;
      end = std::max(comm_free, dep) + t;
      comm_free = end;
      comm_busy += t;
      // NCCL's reduction kernels run on the SMs and contend for memory bandwidth: the share
      // of a collective that is not hidden (1 - comm_overlap) stalls the compute stream.
      const double stall = gather ? t : (1.0 - d.comm_overlap) * t;
      compute_free = std::max(compute_free, end - t) + stall;
      comm_stall += stall;
      rep.per_op_s[op_kind_name(n.kind)] += t;
    } else {
      end = std::max(compute_free, dep) + c.time_s();
      compute_free = end;
      (c.compute_s >= c.memory_s ? t_compute_bound : t_memory_bound) += std::max(c.compute_s, c.memory_s);
      t_overhead += c.overhead_s;
      flops += n.work.flops;
      compute_busy += c.compute_s;
      memory_busy += c.memory_s;
      bytes += static_cast<double>(n.work.bytes_read + n.work.bytes_written);
      if (c.cls != OpClass::none) rep.per_op_s[op_kind_name(n.kind)] += c.time_s();
    }
    for (int t : n.outputs) ready[static_cast<size_t>(t)] = end;
  }

  MemoryEstimate mem = estimate_memory(g, d, count);
  // Parameter server: each device pulls the fp32 weights before its next forward pass. An
  // inference pass updates no weights, so there is nothing to pull (and, with no AllReduce
  // ops in its graph, nothing to exchange at all).
  const bool inference = g.task == Task::inference;
  int64_t weight_bytes = 0;
  for (int t : g.tensors_with_role(TensorRole::weight)) weight_bytes += g.tensor(t).desc.bytes();
  const double ps_pull_s = inference ? 0.0 : parameter_server_pull_s(static_cast<double>(weight_bytes), links);
  const double step_overhead_s = d.step_overhead_ms * 1e-3 + sys.host.step_overhead_ms * 1e-3;
  const double comm_exposed_s = std::max(0.0, comm_free - compute_free) + ps_pull_s + comm_stall;
  double device_s = std::max(compute_free, comm_free) + ps_pull_s + step_overhead_s;

  // Host side: the input batch crosses PCIe (prefetched, so it overlaps), and with real data
  // every sample is decoded and augmented on the host's cores (tf.data runs ahead of the
  // devices, so the step is bounded by the slower of the two).
  int64_t input_bytes = 0;
  for (int t : g.tensors_with_role(TensorRole::input)) input_bytes += g.tensor(t).desc.bytes();
  const double pcie_gbps = d.pcie_gbps > 0 ? std::min(sys.host.pcie_bandwidth_gbps, d.pcie_gbps) : sys.host.pcie_bandwidth_gbps;
  const double infeed_s = gpu ? static_cast<double>(input_bytes) / (pcie_gbps * 1e9) : 0.0;
  double pipeline_s = 0;
  if (req.data == DataSource::real) {
    if (!req.placement.dataset) throw InternalError("analytical: real data without a resolved dataset");
    const DatasetSpec& ds = *req.placement.dataset;
    const double samples = static_cast<double>(g.batch) * (gpu ? std::min(count, sys.devices_per_host) : 1);
    if (gpu && fw.input_mode == InputMode::device_loader) {
      // Decode and augmentation on the GPU (DALI): no host bound, device time per sample.
      device_s += static_cast<double>(g.batch) * fw.device_decode_us_per_sample * 1e-6;
    } else {
      // The framework's pipeline may use fewer threads than the host has (a Python loop: 1).
      const double threads = fw.input_threads > 0 ? static_cast<double>(fw.input_threads) : 0.0;
      const double cores = gpu ? (threads > 0 ? std::min<double>(threads, sys.host.cpu_cores) : sys.host.cpu_cores) *
                                     sys.host.core_speed
                               : (threads > 0 ? std::min(threads, cpu_effective_cores(d, count))
                                              : cpu_effective_cores(d, count));
      pipeline_s = samples * (ds.host_preprocess_ms * fw.input_cost_scale) * 1e-3 / cores;
    }
  }
  // On a CPU device the pipeline shares the cores that train, so its time adds up.
  double step_s = gpu ? std::max({device_s, infeed_s, pipeline_s}) : device_s + pipeline_s;
  // The framework's host work per step (Python loop, callbacks, splitting the batch over
  // devices) runs between device steps, not under them.
  const double framework_step_s =
      fw.step_overhead_ms * 1e-3 + fw.device_step_overhead_ms * 1e-3 * static_cast<double>(replicas - 1);
  step_s += framework_step_s;

  rep.engine = name();
  if (!fw.neutral()) rep.framework = fw.name;
  rep.device = d.name;
  rep.system = sys.name;
  rep.count = count;
  rep.batch_per_device = g.batch;
  rep.global_batch = g.batch * replicas;
  rep.step_time_s = step_s;
  rep.throughput_samples_per_s = static_cast<double>(rep.global_batch) / step_s;
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
  rep.memory_bytes = mem.total_bytes;
  rep.memory_capacity_bytes = mem.capacity_bytes;
  rep.fits_in_memory = mem.fits();

  // Bottleneck: the largest share of the step, in a fixed order so ties are deterministic.
  const std::vector<std::pair<Resource, double>> shares = {
      {Resource::compute, t_compute_bound},
      {Resource::memory, t_memory_bound},
      {Resource::overhead, t_overhead + step_overhead_s},
      {Resource::communication, comm_exposed_s},
      {Resource::infeed, gpu && infeed_s >= device_s ? infeed_s : 0.0},
      {Resource::input_pipeline, (gpu ? pipeline_s >= device_s : pipeline_s > 0) ? pipeline_s : 0.0},
  };
  rep.bottleneck = Resource::compute;
  double best = -1;
  for (const auto& [k, v] : shares)
    if (v > best) best = v, rep.bottleneck = k;
  if (gpu && std::max(infeed_s, pipeline_s) >= device_s) rep.bottleneck = infeed_s > pipeline_s ? Resource::infeed : Resource::input_pipeline;

  // Utilisation = fraction of the step each unit is busy (engine.hpp). Achieved FLOP/s against
  // the nominal peak goes to `extra` (it can exceed the busy share: Winograd skips multiplies).
  rep.utilization[Resource::compute] = std::min(1.0, compute_busy / step_s);
  rep.utilization[Resource::memory] = std::min(1.0, memory_busy / step_s);
  rep.extra["achieved_flops_per_s"] = flops / step_s;
  rep.extra["peak_flops_per_s"] = peak_gemm_flops_s(d, g.precision, build, count);
  rep.extra["bytes_per_step"] = bytes;
  if (replicas > 1) rep.utilization[Resource::communication] = std::min(1.0, comm_busy / step_s);
  if (pipeline_s > 0) rep.utilization[Resource::input_pipeline] = std::min(1.0, pipeline_s / step_s);

  rep.extra["kind"] = gpu ? "gpu" : "cpu";
  if (!gpu) rep.extra["build"] = cpu_build_name(build);
  rep.extra["time_compute_bound_s"] = t_compute_bound;
  rep.extra["time_memory_bound_s"] = t_memory_bound;
  rep.extra["time_overhead_s"] = t_overhead + step_overhead_s;
  rep.extra["communication_busy_s"] = comm_busy;
  rep.extra["communication_exposed_s"] = comm_exposed_s;
  rep.extra["infeed_s"] = infeed_s;
  rep.extra["input_pipeline_s"] = pipeline_s;
  rep.extra["flops_per_step"] = flops;
  rep.extra["memory_persistent_bytes"] = mem.persistent_bytes;
  rep.extra["memory_activation_bytes"] = mem.activation_bytes;
  rep.extra["memory_workspace_bytes"] = mem.workspace_bytes;
  rep.extra["memory_reserved_bytes"] = mem.reserved_bytes;
  if (!fw.neutral()) {
    rep.extra["memory_framework_bytes"] = mem.framework_bytes;
    rep.extra["framework_step_overhead_s"] = framework_step_s;
  }
  return rep;
}

}  // namespace xpusim::analytical
