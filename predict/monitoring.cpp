// Monitoring metrics of a predicted step (monitoring.hpp). What each tool measures:
// - nvidia-smi "utilization.gpu": the share of the sample period in which at least one kernel
//   was resident on the GPU, however few SMs it used. A step whose host side (Python loop,
//   input pipeline, eager per-op dispatch) leaves the GPU waiting shows below 100 % even when its kernels are slow.
// - nvidia-smi "utilization.memory": the share of the period the memory controller was busy.
// - nvidia-smi "memory.used": what the allocator took, not what the step needs.
// - top's CPU %: busy core-seconds over the period, as a share of every host core.
#include "predict/monitoring.hpp"

#include <algorithm>
#include <cmath>

#include "engine/framework_spec.hpp"
#include "engine/platform_spec.hpp"
#include "predict/host_pass.hpp"

namespace xpusim {

void apply_monitoring(const StepRequest& req, const OpGraph& g, StepReport& rep) {
  const ResolvedPlacement& pl = req.placement;
  const DeviceStep& d = rep.device_step;
  if (!pl.device || pl.device->device_class != DeviceClass::accelerator || !pl.system || !pl.framework) return;
  if (!d.ran || d.coupling != HostCoupling::prefetched || !(rep.step_time_s > 0)) return;
  const FrameworkSpec& fw = *pl.framework;
  const double step_s = rep.step_time_s;

  // Kernel-resident time: the device's step (compute, memory and collective kernels, each op's
  // launch tail) plus on-device decoding (DALI); the host's waits are not. NCCL's all-reduce
  // runs as kernels and counts; multi_gpu_model's exchange (gather_on_first: TensorFlow's
  // Send/Recv copies of the towers' gradients to the first GPU and of the weights back) is
  // DMA on the copy engines, no kernel, so nvidia-smi does not count it. The composer stalls
  // the compute stream for the whole exchange, so it is all inside device_s.
  double copy_s = 0;
  if (fw.strategy == MultiDeviceStrategy::gather_on_first && pl.replicas > 1) {
    auto c = d.busy_s.find(Resource::communication);
    if (c != d.busy_s.end()) copy_s = std::min(c->second, d.device_s);
  }
  // Towers that take turns (serial_towers): a GPU's wait for the other towers is no kernel.
  double wait_s = 0;
  if (const std::optional<double> w = rep.extra_number("tower_wait_s")) wait_s = *w;
  const double kernel_s = std::max(0.0, d.device_s - copy_s - wait_s) + device_decode_s(req, g);
  rep.extra["gpu_util_pct_smi"] = 100.0 * std::min(1.0, kernel_s / step_s);
  auto mem = rep.utilization.find(Resource::memory);
  rep.extra["gpu_mem_ctrl_util_pct"] = 100.0 * (mem == rep.utilization.end() ? 0.0 : mem->second);
  const double reserved = fw.allocator_reserved_fraction * static_cast<double>(rep.memory_capacity_bytes);
  rep.extra["gpu_mem_used_bytes"] =
      static_cast<int64_t>(std::llround(std::max(reserved, static_cast<double>(rep.memory_bytes))));

  // Host CPU: the input pipeline's work (its threads busy for the samples of a step), the
  // framework's per-step Python work on one thread, and the host's launch/sync overhead.
  const HostSpec& host = pl.system->host;
  const double cores = std::max(1, host.cpu_cores);
  double busy_core_s = fw.step_overhead_ms * 1e-3 +
                       fw.device_step_overhead_ms * 1e-3 * static_cast<double>(pl.replicas - 1) +
                       host.step_overhead_ms * 1e-3 + host_dispatch_s(req, g);
  if (req.data == DataSource::real && fw.input_mode == InputMode::host_pipeline) {
    const double t = input_pipeline_threads(fw, pl.input_feed);
    const double threads = t > 0 ? t : pl.input_feed.cores;
    busy_core_s += req.host_batch_s * threads;
  }
  rep.extra["cpu_util_pct"] = 100.0 * std::min(1.0, busy_core_s / (step_s * cores));
}

}  // namespace xpusim
