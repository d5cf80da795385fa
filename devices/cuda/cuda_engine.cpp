// CudaEngine: availability, the multi-GPU step loop with NCCL and the StepReport.
#include "devices/cuda/cuda_engine.hpp"

#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <vector>

#include "common/error.hpp"
#include "common/stats.hpp"
#include "common/progress.hpp"
#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/loss_scaler.hpp"
#include "devices/cuda/replica.hpp"
#include "devices/cuda/step_order.hpp"

namespace xpusim::cuda {

namespace {

// Owns the NCCL communicators of one run (one per GPU, all in this process).
struct NcclComms {
  std::vector<ncclComm_t> comms;
  explicit NcclComms(int k) {
    if (k < 2) return;
    comms.resize(static_cast<size_t>(k));
    std::vector<int> devs(static_cast<size_t>(k));
    std::iota(devs.begin(), devs.end(), 0);
    XPUSIM_CUDA(ncclCommInitAll(comms.data(), k, devs.data()));
  }
  ~NcclComms() {
    for (auto c : comms) ncclCommDestroy(c);
  }
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;
};

bool has_tensor_cores_for(Precision p, const cudaDeviceProp& prop) {
  // TF32 and bf16 tensor cores arrived with Ampere (compute capability 8.0); fp16 with Volta (7.0).
  if (p == Precision::tf32 || p == Precision::bf16 || p == Precision::mixed_bf16) return prop.major >= 8;
  if (p == Precision::mixed_fp16) return prop.major >= 7;
  if (p == Precision::fp8) return false;  // this backend runs no fp8 GEMMs (the analytical engine prices them)
  return true;
}

class CudaEngine final : public Engine {
 public:
  std::string name() const override { return "cuda"; }
  std::string description() const override {
    return "NVIDIA GPUs via cuDNN, cuBLAS and NCCL (real training steps or inference passes, timed with CUDA events)";
  }

  bool real_backend() const override { return true; }
  Availability availability() const override {
    Availability a;
    a.compiled = true;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      a.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    } else if (n == 0) {
      a.reason = "cudaGetDeviceCount found 0 devices";
    } else {
      a.available = true;
    }
    return a;
  }

  StepReport run_step(const StepRequest& req) override {
    Availability av = availability();
    if (!av.available) throw UnavailableError("no CUDA device: " + av.reason);
    if (!req.graph) throw InternalError("cuda: run_step without a graph");
    if (req.steps < 1) throw FieldError("steps", "must be > 0, got " + std::to_string(req.steps));
    if (req.warmup < 0) throw FieldError("warmup", "must be >= 0, got " + std::to_string(req.warmup));
    const OpGraph& g = *req.graph;
    if (req.data != DataSource::synthetic)
      throw UnavailableError("cuda backend: only synthetic data is supported (no input pipeline on the GPU host yet)");
    int have = 0;
    XPUSIM_CUDA(cudaGetDeviceCount(&have));
    const int k = req.placement.count;
    if (k < 1 || k > have)
      throw FieldError("count", "asked for " + std::to_string(k) + " GPUs, this machine has " + std::to_string(have));
    cudaDeviceProp prop{};
    XPUSIM_CUDA(cudaGetDeviceProperties(&prop, 0));
    if (!has_tensor_cores_for(g.precision, prop))
      throw FieldError("precision", std::string() + precision_name(g.precision) + " needs tensor cores that " +
                      prop.name + " (compute capability " + std::to_string(prop.major) + "." +
                      std::to_string(prop.minor) + ") lacks");

    std::vector<std::unique_ptr<Replica>> reps;
    for (int r = 0; r < k; ++r) {
      ReplicaOptions o;
      o.device = r;
      o.replica = r;
      o.seed = req.seed;
      reps.push_back(std::make_unique<Replica>(g, o));
    }
    NcclComms nccl(k);

    // All-reduces launch right after the op that produces their gradient, so NCCL overlaps
    // the rest of the backward pass (the graph lists them after backward, in order of
    // gradient readiness, as frameworks bucket them).
    std::vector<int> sched = step_order(g);
    std::map<int, std::vector<int>> launch_after;
    for (int op : sched)
      if (g.op(op).kind == OpKind::AllReduce) {
        int producer = g.tensor(g.op(op).inputs[0]).producer;
        launch_after[producer].push_back(op);
      }
    auto launch = [&](int ar) {
      std::vector<Replica::CommBuffers> b;
      for (auto& r : reps) b.push_back(r->prepare_all_reduce(ar));
      XPUSIM_CUDA(ncclGroupStart());
      for (size_t r = 0; r < reps.size(); ++r)
        XPUSIM_CUDA(ncclAllReduce(b[r].send, b[r].recv, b[r].count, ncclFloat, ncclAvg, nccl.comms[r], b[r].stream));
      XPUSIM_CUDA(ncclGroupEnd());
      for (auto& r : reps) r->all_reduce_launched(ar);
    };

    // fp16 needs loss scaling; bf16 has fp32's exponent range and does not.
    DynamicLossScaler scaler({}, g.precision == Precision::mixed_fp16);
    const int total = req.warmup + req.steps + 1;  // + one profiled step for per-op times
    ProgressBar bar("cuda " + req.model, total, req.progress);
    std::vector<double> step_s;
    std::vector<std::pair<int, float>> op_ms;
    double first_loss = 0, last_loss = 0;
    for (int s = 0; s < total; ++s) {
      const bool profile = s == total - 1;
      for (auto& r : reps) r->begin_step(static_cast<float>(scaler.scale()), profile);
      for (int op : sched) {
        for (auto& r : reps) r->run_op(op);
        auto it = launch_after.find(op);
        if (it != launch_after.end())
          for (int ar : it->second) launch(ar);
      }
      bool found_inf = false;
      float ms = 0;
      for (auto& r : reps) {
        found_inf = r->end_step() || found_inf;
        ms = std::max(ms, r->last_step_ms());
      }
      scaler.update(found_inf);
      if (s == 0) first_loss = reps[0]->last_loss();
      last_loss = reps[0]->last_loss();
      if (s >= req.warmup && !profile) step_s.push_back(ms / 1e3);
      if (profile) op_ms = reps[0]->op_times_ms();
      bar.update(s + 1);
    }
    bar.finish();

    StepReport rep;
    rep.engine = "cuda";
    rep.device = "cuda";
    rep.count = k;
    rep.batch_per_device = g.batch;
    // The median step, as on the CPU backend (a step slowed by something else on the machine
    // does not move it); the mean is kept as step_time_mean_s. The host pass makes it the
    // step and derives the global batch and throughput.
    const double median_s = median_of(step_s);
    rep.device_step.coupling = HostCoupling::measured;
    rep.device_step.device_s = median_s;
    rep.memory_bytes = reps[0]->pool_stats().peak_in_use_bytes;
    rep.memory_capacity_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    rep.fits_in_memory = true;
    double busy = 0;
    for (auto& [op, t] : op_ms) {
      rep.per_op_s[op_kind_name(g.op(op).kind)] += t / 1e3;
      busy += t / 1e3;
    }
    std::string top;
    double top_s = -1;
    for (auto& [kind, t] : rep.per_op_s)
      if (t > top_s) top = kind, top_s = t;
    // A measured run names no modelled unit; the op kind with the largest share of device
    // time in the profiled step says where the time went.
    rep.bottleneck = Resource::measured;
    rep.extra["top_op_kind"] = top;
    rep.utilization[Resource::gpu] = std::min(1.0, busy / std::max(1e-12, median_s));
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    rep.extra["gpu_name"] = prop.name;
    rep.extra["gpu_count"] = k;
    rep.extra["gpu_compute_capability"] = std::to_string(prop.major) + "." + std::to_string(prop.minor);
    rep.extra["gpu_memory_peak_bytes"] = reps[0]->pool_stats().peak_reserved_bytes;
    rep.extra["step_time_mean_s"] = std::accumulate(step_s.begin(), step_s.end(), 0.0) / static_cast<double>(step_s.size());
    rep.extra["timed_steps"] = static_cast<int>(step_s.size());
    rep.extra["warmup_steps"] = req.warmup;
    // An inference graph (forward ops only, no loss) runs through the same loop: each step is
    // one forward pass, with nothing to all-reduce and no loss to report.
    if (g.task != Task::inference) {
      rep.extra["loss_first"] = first_loss;
      rep.extra["loss_last"] = last_loss;
      rep.extra["loss_scale"] = scaler.scale();
      rep.extra["skipped_steps"] = scaler.skipped_steps();
    }
    rep.extra["conv_algorithm_searches"] = reps[0]->algo_cache().finds();
    rep.extra["cuda_runtime_version"] = rt;
    rep.extra["cuda_driver_version"] = drv;
    rep.extra["cudnn_version"] = static_cast<int64_t>(cudnnGetVersion());
    return rep;
  }
};

}  // namespace

std::unique_ptr<Engine> make_cuda_engine() { return std::make_unique<CudaEngine>(); }

}  // namespace xpusim::cuda
