// plan_llm: names to the closed-form job, pricer and network, then the search (llm_plan.hpp).
#include "predict/llm_plan.hpp"

#include <algorithm>
#include <cmath>

#include "common/error.hpp"
#include "devices/analytical/device_spec.hpp"
#include "devices/analytical/gpu_kernel_model.hpp"
#include "devices/analytical/rates.hpp"
#include "engine/framework_spec.hpp"
#include "models/zoo.hpp"
#include "predict/tpu_llm_plan.hpp"

namespace xpusim {

namespace {

using namespace parallel;

// The analytical GPU model's GEMM pricing (tiles and waves when the architecture has the
// kernel model, the roofline otherwise) at the stack's 16-bit or fp8 tensor rate.
class AnalyticalPricer final : public LlmKernelPricer {
 public:
  AnalyticalPricer(const analytical::DeviceSpec& d, const analytical::Rates& r, double fp8_over_16)
      : kernel_model_(d.kernel_model()), r16_(r.kernel), tensor16_(r.tensor_flops_s) {
    r16_.math_flops_s = r.tensor_flops_s;
    r16_.dram_bytes_s = r.memory_bytes_s;
    r8_ = r16_;
    r8_.math_flops_s = r.tensor_flops_s * fp8_over_16;
    memory_bytes_s = r.memory_bytes_s;
    launch_s = r.op_overhead_s;
  }
  double gemm_s(double m, double n, double k, double batch, bool fp8) const override {
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
    const double in = fp8 ? 1.0 : 2.0;
    if (!kernel_model_) {
      const double flops = 2.0 * m * n * k * batch;
      const double bytes = (m * k + k * n) * in * batch + m * n * 2.0 * batch;
      return std::max(flops / (fp8 ? r8_.math_flops_s : tensor16_), bytes / memory_bytes_s);
    }
    analytical::GemmShape g;
    g.m = m, g.n = n, g.k = k, g.batch = batch, g.in_bytes = in, g.out_bytes = 2;
    return analytical::gemm_kernel_time(g, fp8 ? r8_ : r16_).time_s();
  }

 private:
  bool kernel_model_;
  analytical::GpuKernelRates r16_, r8_;
  double tensor16_;
};

struct Split {
  std::vector<std::string> device, framework, cluster;
};
Split split_overrides(const std::vector<std::string>& all) {
  Split s;
  for (const auto& o : all) {
    if (o.rfind("framework.", 0) == 0) s.framework.push_back(o.substr(10));
    else if (o.rfind("cluster.", 0) == 0) s.cluster.push_back(o.substr(8));
    else s.device.push_back(o);
  }
  return s;
}

LlmPrecision job_precision(const std::string& p, const analytical::DeviceSpec& d, Precision& compute) {
  LlmPrecision out;
  if (p == "fp8") {
    if (!(d.tensor_fp8_tflops > 0))
      throw FieldError("precision", "fp8 GEMMs need fp8 tensor cores; device '" + d.name + "' has none (Hopper, Ada and later)");
    out.fp8 = true;
    out.fp8_weight_copy_bytes = 1;  // beside the bf16 working copy and the fp32 master
    compute = Precision::bf16;
    return out;
  }
  if (p == "mixed_bf16") compute = Precision::mixed_bf16;
  else if (p == "mixed_fp16") compute = Precision::mixed_fp16;
  else if (p == "bf16") compute = Precision::bf16, out.reduce_bytes = 2;
  else throw FieldError("precision", "unknown precision '" + p + "' for a decoder (mixed_bf16, mixed_fp16, bf16, fp8)");
  if (!d.supports(compute))
    throw FieldError("precision", "device '" + d.name + "' does not support " + p);
  return out;
}

void check_fixed(const LlmJob& job, const LlmConstraints& f, int gpus) {
  // Each fixed degree alone must be possible: say which field, before searching.
  auto bad = [&](const char* field, const std::string& msg) { throw FieldError(field, msg); };
  const LlmShape& s = job.shape;
  if (f.tp && (*f.tp < 1 || s.heads % *f.tp != 0))
    bad("tp", std::to_string(*f.tp) + " does not divide the " + std::to_string(s.heads) + " attention heads");
  if (f.pp && (*f.pp < 1 || *f.pp > s.layers))
    bad("pp", std::to_string(*f.pp) + " stages for " + std::to_string(s.layers) +
                  " layers (between 1 and one stage per layer)");
  if (f.cp && (*f.cp < 1 || job.seq_len % *f.cp != 0))
    bad("cp", std::to_string(*f.cp) + " does not divide the sequence length " + std::to_string(job.seq_len));
  if (f.ep && *f.ep > 1 && !s.moe()) bad("ep", "expert parallelism on a dense model (no experts)");
  if (f.virtual_stages && *f.virtual_stages < 1) bad("pp_virtual_stages", "must be >= 1");
  if (f.micro_batch && (*f.micro_batch < 1 || job.global_batch % *f.micro_batch != 0))
    bad("micro_batch", std::to_string(*f.micro_batch) + " does not divide the global batch " +
                           std::to_string(job.global_batch));
  if (f.sequence_parallel && *f.sequence_parallel && f.tp && *f.tp == 1) bad("sequence_parallel", "needs tp > 1");
  const long long ranks = static_cast<long long>(f.tp.value_or(1)) * f.pp.value_or(1) * f.cp.value_or(1);
  if (gpus % ranks != 0)
    bad("gpus", std::to_string(gpus) + " GPUs are not divisible by tp x pp x cp = " + std::to_string(ranks));
  if (f.micro_batch) {
    const long long dp = gpus / ranks;
    if ((f.tp && f.pp && f.cp) && job.global_batch % (*f.micro_batch * dp) != 0)
      bad("global_batch", std::to_string(job.global_batch) + " is not divisible by micro-batch x dp (" +
                              std::to_string(*f.micro_batch) + " x " + std::to_string(dp) + ")");
  }
}

}  // namespace

ModelSpec llm_model_of(const LlmPlanRequest& r) {
  ModelSpec spec;
  if (r.shape) {
    spec.name = r.model;
    spec.llm = *r.shape;
  } else {
    spec = find_model(r.model);
  }
  if (!spec.llm)
    throw FieldError("model", "'" + spec.name + "' is not a decoder-only language model (no llm shape); plan needs one");
  return spec;
}

LlmPlanResult plan_llm(const LlmPlanRequest& r) {
  // A TPU slice name (v5e-256, tpu_v5e_256_multislice) goes to the TPU planner.
  if (auto t = parse_tpu_cluster_name(r.cluster)) return plan_llm_tpu(r, *t);
  if (r.gpus == 0) throw FieldError("gpus", "required on a GPU cluster (the GPUs of the job)");
  const Split ov = split_overrides(r.overrides);
  const ModelSpec spec = llm_model_of(r);
  const ClusterSpec cluster = find_cluster(r.cluster, "cluster", ov.cluster);
  const std::string device_name = r.device.empty() ? cluster.default_device : r.device;
  if (std::find(cluster.devices.begin(), cluster.devices.end(), device_name) == cluster.devices.end())
    throw FieldError("device", "cluster '" + cluster.name + "' does not hold device '" + device_name + "'");
  if (r.gpus < 1) throw FieldError("gpus", "must be >= 1");
  if (r.gpus > cluster.max_devices())
    throw FieldError("gpus", std::to_string(r.gpus) + " GPUs requested, cluster '" + cluster.name + "' has " +
                                 std::to_string(cluster.max_devices()) + " (" + std::to_string(cluster.max_nodes) +
                                 " nodes x " + std::to_string(cluster.devices_per_node()) + ")");
  if (r.global_batch < 1) throw FieldError("global_batch", "must be >= 1");
  const analytical::DeviceSpec d = analytical::load_device_spec(device_name, ov.device);
  if (d.kind != analytical::DeviceKind::gpu) throw FieldError("device", "'" + d.name + "' is not a GPU");
  const std::string fw_file = find_framework_file(r.framework, "analytical");
  if (fw_file.empty() && !ov.framework.empty()) throw FieldError("set", "framework.* overrides need a framework profile");
  const FrameworkSpec fw = fw_file.empty() ? FrameworkSpec{} : load_framework_spec(fw_file, ov.framework);

  LlmJob job;
  job.shape = *spec.llm;
  job.seq_len = r.seq_len > 0 ? r.seq_len : job.shape.max_positions;
  if (job.seq_len < 1) throw FieldError("seq_len", "model '" + spec.name + "' has no position table: give a sequence length");
  if (job.shape.position == LlmPosition::learned && job.seq_len > job.shape.max_positions && job.shape.max_positions > 0)
    job.shape.max_positions = job.seq_len;  // the table grows with the run's max_seq_len (llm-foundry)
  job.global_batch = r.global_batch;
  Precision compute = Precision::mixed_bf16;
  job.precision = job_precision(r.precision, d, compute);
  job.stack.flash_attention = fw.flash_attention;
  job.stack.dropout = fw.dropout;
  // The flash-kernel stacks also use flash-attn's fused cross-entropy (llm-foundry's benchmark
  // recipes: loss_fn fused_crossentropy); Megatron-LM 2021 kept fp32 logits for the loss.
  job.stack.fused_loss = fw.flash_attention;
  job.stack.tp_comm_overlap = fw.tp_comm_overlap;
  check_fixed(job, r.fixed, r.gpus);

  const analytical::Rates rates = analytical::stack_rates(d, compute, CpuBuild::compiled, 1, fw);
  const double peak16 = (compute == Precision::mixed_fp16 ? d.tensor_fp16_tflops : d.tensor_bf16_tflops) * 1e12;
  AnalyticalPricer pricer(d, rates, d.tensor_bf16_tflops > 0 ? d.tensor_fp8_tflops / d.tensor_bf16_tflops : 0);
  pricer.peak_flops_s = peak16 > 0 ? peak16 : d.fp32_tflops * 1e12;
  const LlmNetwork net = llm_network(cluster, DevicePorts{d.pcie_gbps, d.nvlink_gbps, d.pcie_p2p});

  LlmSearchOptions o;
  o.gpus = r.gpus;
  o.fixed = r.fixed;
  o.tp_across_nodes = r.tp_across_nodes;
  o.keep = r.keep;
  o.memory_bytes = (static_cast<double>(d.memory_bytes) - static_cast<double>(d.reserved_bytes)) /
                   (1.0 + fw.memory_overhead_fraction);

  LlmPlanResult out;
  out.model = spec.name;
  out.cluster = cluster.name;
  out.device = d.name;
  out.framework = fw.name;
  out.precision = r.precision;
  out.parameters = llm_parameter_count(job.shape);
  out.gpus = r.gpus;
  out.nodes = (r.gpus + cluster.devices_per_node() - 1) / cluster.devices_per_node();
  out.devices_per_node = cluster.devices_per_node();
  out.seq_len = job.seq_len;
  out.global_batch = job.global_batch;
  out.memory_bytes = o.memory_bytes;
  out.peak_flops_s = pricer.peak_flops_s;
  out.search = llm_search(job, o, pricer, net);
  return out;
}

}  // namespace xpusim
