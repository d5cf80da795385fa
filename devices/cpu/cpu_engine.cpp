#include "devices/cpu/cpu_engine.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>
#include <dnnl.hpp>

#include "common/error.hpp"
#include "common/stats.hpp"
#include "common/progress.hpp"
#include "devices/cpu/executor.hpp"

namespace xpusim::cpu {

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux reports kilobytes
}

namespace {

class CpuEngine final : public Engine {
 public:
  std::string name() const override { return "cpu"; }
  std::string description() const override {
    return "real training steps (or inference passes) on this CPU (oneDNN " + std::to_string(dnnl::version()->major) + "." +
           std::to_string(dnnl::version()->minor) + ", Eigen), ISA " + cpu_isa_name();
  }
  Availability availability() const override { return {true, true, ""}; }
  bool real_backend() const override { return true; }
  void check_placement(ResolvedPlacement& p) const override { p.replicas = 1; }  // one machine, one replica

  StepReport run_step(const StepRequest& req) override {
    const OpGraph& g = *req.graph;
    const Precision p = g.precision;
    if (p != Precision::fp32 && p != Precision::bf16 && p != Precision::mixed_bf16)
      throw FieldError("precision", std::string("the cpu backend runs fp32 or bf16, not ") + precision_name(p));
    if (req.threads < 0) throw FieldError("threads", "must be >= 0");
    ExecOptions o;
    o.seed = req.seed;
    o.threads = req.threads;
    Executor ex(g, o);
    ex.fill_synthetic();
    // An inference graph holds forward ops only: a step is one forward pass in inference mode
    // (dropout is not in the graph; batch norm uses batch statistics, as the executor does).
    const bool inference = g.task == Task::inference;
    auto step = [&] {
      if (inference)
        ex.forward(false);
      else
        ex.step();
    };
    ProgressBar bar("cpu " + req.model, req.warmup + req.steps, req.progress);
    double first_loss = NAN;
    for (int s = 0; s < req.warmup; ++s) {
      step();
      if (s == 0) first_loss = ex.loss();
      bar.update(s + 1, "warm-up");
    }
    ex.reset_timers();
    std::vector<double> step_s;
    for (int s = 0; s < req.steps; ++s) {
      auto t0 = std::chrono::steady_clock::now();
      step();
      step_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (std::isnan(first_loss)) first_loss = ex.loss();
      bar.update(req.warmup + s + 1, "timed");
    }
    const double total = std::accumulate(step_s.begin(), step_s.end(), 0.0);
    bar.finish();

    StepReport r;
    r.engine = "cpu";
    r.device = "cpu";
    r.count = 1;
    r.batch_per_device = g.batch;
    // The median step: these machines are shared, and one step slowed by a neighbour should
    // not move the figure (the mean is kept as step_time_mean_s). The host pass makes it the
    // step and derives the throughput.
    r.device_step.coupling = HostCoupling::measured;
    r.device_step.device_s = median_of(step_s);
    r.memory_bytes = ex.buffer_bytes();
    r.memory_capacity_bytes = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
    r.fits_in_memory = r.memory_bytes <= r.memory_capacity_bytes;
    r.bottleneck = Resource::measured;
    double gemm_s = 0;
    for (OpKind k : all_op_kinds()) {
      double s = ex.seconds_by_kind()[static_cast<size_t>(k)];
      if (s <= 0) continue;
      r.per_op_s[op_kind_name(k)] = s / req.steps;
      if (k == OpKind::Conv2D || k == OpKind::Conv2DBackwardData || k == OpKind::Conv2DBackwardFilter ||
          k == OpKind::MatMul)
        gemm_s += s;
    }
    nlohmann::json per_op(r.per_op_s);
    r.extra["per_op"] = per_op;
    r.extra["peak_rss_bytes"] = peak_rss_bytes();
    // The memory plan's arena against its lower bound (most bytes live in one step), and how
    // many ops ran fused into another op's handler (fusion.cpp).
    r.extra["plan_peak_live_bytes"] = ex.peak_live_bytes();
    r.extra["fused_ops"] = ex.fused_ops();
    r.extra["split_bwd_weights_ops"] = ex.split_ops();
    r.extra["threads"] = ex.threads();
    r.extra["steps"] = req.steps;
    r.extra["step_time_mean_s"] = total / req.steps;
    r.extra["warmup"] = req.warmup;
    r.extra["isa"] = cpu_isa_name();
    r.extra["bf16_mode"] = bf16_mode(ex);
    r.extra["bf16_detail"] = bf16_detail(ex);
    r.extra["conv_matmul_gflops_per_s"] = gemm_s > 0 ? ex.conv_matmul_flops() / gemm_s / 1e9 : 0.0;
    double step_flops = 0;
    for (int i = 0; i < g.num_ops(); ++i) step_flops += g.op(i).work.flops;
    // Counted on the graph (models/work.cpp). An inference pass has no loss to report.
    if (inference) {
      r.extra["inference_step_flops"] = step_flops;
    } else {
      r.extra["train_step_flops"] = step_flops;
      r.extra["loss_first"] = first_loss;
      r.extra["loss_last"] = static_cast<double>(ex.loss());
    }
    return r;
  }
};

}  // namespace

std::string bf16_mode(const Executor& ex) {
  if (!ex.bf16()) return "off";
  return ex.bf16_native() ? "native" : "emulated";
}

std::string bf16_detail(const Executor& ex) {
  if (!ex.bf16()) return "fp32 graph";
  // oneDNN 2.6 creates no bf16 convolution or matmul primitive below avx512_core_bf16
  // ("could not create a primitive descriptor"), so there the backend emulates bf16
  // numerics: every bf16 tensor of the graph and the weight operands of conv/matmul are
  // rounded to bf16 (nearest even), arithmetic stays fp32.
  if (ex.bf16_native())
    return std::string("bf16 conv/matmul primitives and batch-norm kernel, fp32 accumulation, statistics and master weights (") +
           cpu_isa_name() + ")";
  return std::string("bf16-rounded storage, fp32 compute (") +
         (cpu_has_native_bf16() ? "emulation requested" : "no avx512_core_bf16 on this CPU") + ")";
}

std::unique_ptr<Engine> make_cpu_engine() { return std::make_unique<CpuEngine>(); }

}  // namespace xpusim::cpu
