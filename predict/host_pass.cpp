// The host/framework pass above the engines (host_pass.hpp). The arithmetic keeps the order
// the engines used before the pass existed, so predictions are byte-identical
// (tests/golden_identity/capture.sh).
#include "predict/host_pass.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace xpusim {

double smt_thread_equivalents(double threads, const InputFeed& feed) {
  if (feed.threads_per_core <= 1) return std::min(feed.cores, threads);
  // A pipeline of a stated number of threads (DataLoader workers, a Python loop) on a host with
  // SMT: the OS spreads busy threads over idle cores first, so up to the physical cores each
  // runs alone on one; the rest share a core and add smt_yield of a core each. Counted in cores
  // running one thread (the unit a worker pipeline's input_cost_scale is fitted in: pytorch_1's
  // 5 workers per GPU all had a core of their own).
  const double physical = feed.cores / feed.threads_per_core;
  return std::min(threads, physical) + feed.smt_yield * std::max(0.0, std::min(threads, feed.cores) - physical);
}

double input_pipeline_threads(const FrameworkSpec& fw, const InputFeed& feed) {
  // The framework's pipeline may use fewer threads than the host has (a Python loop: 1; a
  // DataLoader's workers per training process).
  const int workers = fw.workers_per_device_on(feed.system);
  if (workers > 0) return smt_thread_equivalents(static_cast<double>(workers) * feed.devices_fed, feed);
  return fw.input_threads > 0 ? smt_thread_equivalents(static_cast<double>(fw.input_threads), feed) : 0.0;
}

double host_batch_s(const StepRequest& req, const OpGraph& g) {
  if (req.data != DataSource::real) return 0.0;
  if (!req.placement.dataset) throw InternalError("host pass: real data without a resolved dataset");
  const DatasetSpec& ds = *req.placement.dataset;
  const FrameworkSpec& fw = *req.placement.framework;
  const InputFeed& feed = req.placement.input_feed;
  const double samples = static_cast<double>(g.batch) * feed.devices_fed;
  const double threads = input_pipeline_threads(fw, feed);
  const double cores = (threads > 0 ? std::min(threads, feed.cores) : feed.cores) * feed.core_speed;
  return samples * (ds.host_preprocess_ms * fw.input_cost_scale) * 1e-3 / cores;
}

double host_dispatch_s(const StepRequest& req, const OpGraph& g) {
  const FrameworkSpec* fw = req.placement.framework.get();
  return fw ? fw->host_dispatch_us_per_op * 1e-6 * static_cast<double>(g.num_ops()) : 0.0;
}

double device_decode_s(const StepRequest& req, const OpGraph& g) {
  const FrameworkSpec* fw = req.placement.framework.get();
  if (!fw || req.data != DataSource::real || fw->input_mode != InputMode::device_loader) return 0.0;
  double us = fw->device_decode_us_per_sample;
  // Decoding is the same work the host pipeline would do (dataset host_preprocess_ms), done by
  // the device: scale the stated per-sample time by the dataset's cost where a reference is set.
  if (fw->device_decode_reference_ms > 0 && req.placement.dataset)
    us *= req.placement.dataset->host_preprocess_ms / fw->device_decode_reference_ms;
  return static_cast<double>(g.batch) * us * 1e-6;
}

namespace {

double throughput(int64_t global_batch, double step_s) {
  return step_s > 0 ? static_cast<double>(global_batch) / step_s : 0;
}

// Analytical engines: the host bounds or adds to the device step, and the bottleneck and
// utilisation are shares of the whole step.
void bounded_step(const StepRequest& req, const OpGraph& g, StepReport& rep, double framework_step_s) {
  const DeviceStep& dstep = rep.device_step;
  const FrameworkSpec& fw = *req.placement.framework;
  const SystemSpec& sys = *req.placement.system;
  const bool prefetched = dstep.coupling == HostCoupling::prefetched;
  // The device's and the host's per-step sync (session run, host sync) are part of the device
  // step; the training loop pays them per micro-batch (gradient accumulation).
  const double micro_batches = std::max(1, req.micro_batches);
  const double step_overhead_s = micro_batches * (dstep.device_overhead_s + sys.host.step_overhead_ms * 1e-3);
  double device_s = dstep.device_s + step_overhead_s;
  const double infeed_s = dstep.infeed_s;
  // With real data every sample is decoded and augmented on the host's cores (tf.data runs
  // ahead of the devices, so the step is bounded by the slower of the two), or on the
  // accelerator by a device loader (DALI): no host bound, device time per sample.
  double pipeline_s = 0;
  if (req.data == DataSource::real) {
    if (prefetched && fw.input_mode == InputMode::device_loader)
      device_s += micro_batches * device_decode_s(req, g);
    else
      pipeline_s = req.host_batch_s;
  }
  // The framework's per-op dispatch runs on one host thread ahead of the device's queue
  // (asynchronous launches): a GPU waits for it only when it is the longer. On a CPU device
  // the same thread runs the ops, so its time adds up, as the pipeline's.
  const double dispatch_s = host_dispatch_s(req, g);
  // On a CPU device the pipeline shares the cores that train, so its time adds up.
  double step_s = prefetched ? std::max({device_s, infeed_s, pipeline_s, dispatch_s})
                             : device_s + pipeline_s + dispatch_s;
  step_s += framework_step_s;
  rep.step_time_s = step_s;

  // Bottleneck: the largest share of the step, in a fixed order so ties are deterministic.
  std::vector<std::pair<Resource, double>> shares = dstep.shares;
  double overhead_s = step_overhead_s;
  for (auto& [k, v] : shares)
    if (k == Resource::overhead) v = overhead_s = v + step_overhead_s;
  shares.emplace_back(Resource::infeed, prefetched && infeed_s >= device_s ? infeed_s : 0.0);
  shares.emplace_back(Resource::input_pipeline,
                      (prefetched ? pipeline_s >= device_s : pipeline_s > 0) ? pipeline_s : 0.0);
  rep.bottleneck = Resource::compute;
  double best = -1;
  for (const auto& [k, v] : shares)
    if (v > best) best = v, rep.bottleneck = k;
  if (prefetched && std::max(infeed_s, pipeline_s) >= device_s)
    rep.bottleneck = infeed_s > pipeline_s ? Resource::infeed : Resource::input_pipeline;
  if (prefetched && dispatch_s > std::max({device_s, infeed_s, pipeline_s})) rep.bottleneck = Resource::overhead;

  // Utilisation = fraction of the step each unit is busy (engine.hpp).
  for (const auto& [k, busy] : dstep.busy_s) rep.utilization[k] = std::min(1.0, busy / step_s);
  if (dstep.flops) rep.extra["achieved_flops_per_s"] = *dstep.flops / step_s;
  if (pipeline_s > 0) rep.utilization[Resource::input_pipeline] = std::min(1.0, pipeline_s / step_s);
  rep.extra["time_overhead_s"] = overhead_s;
  rep.extra["input_pipeline_s"] = pipeline_s;
  if (dispatch_s > 0) rep.extra["host_dispatch_s"] = dispatch_s;
}

}  // namespace

void apply_host_pass(const StepRequest& req, const OpGraph& g, StepReport& rep) {
  const DeviceStep& dstep = rep.device_step;
  rep.global_batch = g.batch * req.placement.replicas * std::max(1, req.micro_batches);
  if (!dstep.ran) return;
  if (dstep.coupling == HostCoupling::measured) {
    rep.step_time_s = dstep.device_s;
    rep.throughput_samples_per_s = throughput(rep.global_batch, rep.step_time_s);
    return;
  }
  const FrameworkSpec& fw = *req.placement.framework;
  // The framework's host work per step (Python loop, callbacks, splitting the batch over
  // devices) runs between device steps, not under them.
  // Per iteration of the training loop, so per micro-batch under gradient accumulation.
  const double framework_step_s =
      std::max(1, req.micro_batches) *
      (fw.step_overhead_ms * 1e-3 + fw.device_step_overhead_ms * 1e-3 * static_cast<double>(req.placement.replicas - 1));
  if (dstep.coupling == HostCoupling::simulated) {
    rep.step_time_s = dstep.device_s + framework_step_s;
    if (req.data == DataSource::real) {
      const HostSpec& host = req.placement.system->host;
      rep.extra["host_images_per_s"] = host.cpu_cores * host.core_speed / (req.placement.dataset->host_preprocess_ms * 1e-3);
    }
  } else {
    bounded_step(req, g, rep, framework_step_s);
  }
  rep.throughput_samples_per_s = throughput(rep.global_batch, rep.step_time_s);
  if (!fw.neutral()) {
    rep.framework = fw.name;
    rep.extra["framework_step_overhead_s"] = framework_step_s;
    // A named profile with no constant of its own predicts as the calibration stack: say so.
    if (fw.constants_neutral()) rep.extra["framework_neutral"] = true;
  }
}

void apply_run_costs(const ResolvedPlacement& pl, bool real_backend, int64_t tokens_per_sample, const OpGraph& g,
                     StepReport& rep) {
  // One-off graph build / compile of the framework, from the size of the step's program: the
  // kernels an engine that lowers the step reports (`compiled_kernels`: XLA's fusions on the
  // TPU, each of which its backend compiles; docs/tpu-model.md "Compile time"), else the ops
  // of the step graph. Unless the engine modelled it itself.
  const FrameworkSpec& fw = *pl.framework;
  if (rep.compile_time_s == 0 && !real_backend) {
    const auto kernels = rep.extra.find("compiled_kernels");
    const double ops = kernels != rep.extra.end() ? kernels->get<double>() : static_cast<double>(g.num_ops());
    rep.compile_time_s = fw.compile_base_s + fw.compile_per_op_ms * 1e-3 * ops;
  }
  // Average power and energy per step of the placement from the report's utilisation
  // (engine/power.hpp, docs/power.md). Devices that state no power, and real backends (no
  // device spec), report none.
  if (pl.device && pl.device->power.stated() && rep.step_time_s > 0) {
    const int per_host = pl.system ? pl.system->devices_per_host : 0;
    const double host_w = pl.system ? pl.system->host.idle_power_w : 0.0;
    Activity activity = activity_from_utilization(rep.utilization);
    // The kernel-resident share where the step's monitoring reports it (predict/monitoring.hpp).
    if (const std::optional<double> smi = rep.extra_number("gpu_util_pct_smi")) {
      activity.resident = *smi / 100.0;
      // One board, as nvidia-smi's power.draw reads it (no host share, whatever the count).
      rep.extra["gpu_power_w"] = device_power_w(pl.device->power, activity);
    }
    rep.power_w = placement_power_w(pl.device->power, activity, pl.count, per_host, host_w);
    rep.energy_per_step_j = rep.power_w * rep.step_time_s;
  }
  if (tokens_per_sample > 0)
    rep.throughput_tokens_per_s = rep.throughput_samples_per_s * static_cast<double>(tokens_per_sample);
}

}  // namespace xpusim
