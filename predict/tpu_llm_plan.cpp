// plan_llm_tpu: a slice name to the TPU planner's job, pricer and fabric (tpu_llm_plan.hpp).
#include "predict/tpu_llm_plan.hpp"

#include <algorithm>
#include <cmath>

#include "common/config_paths.hpp"
#include "common/error.hpp"
#include "engine/framework_spec.hpp"
#include "models/zoo.hpp"
#include "parallel/tpu_llm.hpp"
#include "sim/tpu/slice.hpp"
#include "sim/tpu/tpu_spec.hpp"

namespace xpusim {

namespace {

using namespace parallel;

// GEMMs on the MXUs: operands padded to the systolic array (a K or N below 128 idles PEs),
// the chip's bf16 peak times the framework's sustained fraction, or HBM-bound.
class TpuPricer final : public LlmKernelPricer {
 public:
  TpuPricer(const tpu::TpuSpec& s, const FrameworkSpec& fw)
      : rows_(s.mxu_rows), cols_(s.mxu_cols), flops_s_(s.mxu_peak_flops_per_chip() * fw.tensor_efficiency_scale) {
    memory_bytes_s = s.hbm_bandwidth_gbps * 1e9 * s.cores_per_chip * s.hbm_efficiency * fw.memory_efficiency_scale;
    launch_s = s.op_overhead_us * 1e-6 * fw.op_overhead_scale;
    peak_flops_s = s.mxu_peak_flops_per_chip();
  }
  double gemm_s(double m, double n, double k, double batch, bool) const override {
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return 0;
    const double np = std::ceil(n / cols_) * cols_, kp = std::ceil(k / rows_) * rows_;
    const double flops = 2.0 * m * np * kp * batch;
    const double bytes = (m * k + k * n + m * n) * 2.0 * batch;
    return std::max(flops / flops_s_, bytes / memory_bytes_s);
  }

 private:
  double rows_, cols_, flops_s_;
};

std::vector<std::string> split_set(const std::vector<std::string>& all, std::vector<std::string>& framework) {
  std::vector<std::string> device;
  for (const auto& o : all) {
    if (o.rfind("framework.", 0) == 0) framework.push_back(o.substr(10));
    else if (o.rfind("cluster.", 0) == 0)
      throw FieldError("set", "'" + o + "': a TPU slice has no cluster YAML; set the device's fields (KEY=VALUE)");
    else device.push_back(o);
  }
  return device;
}

// The slice module's FieldErrors name its own fields (slice, count): say the request's.
[[noreturn]] void rethrow_slice(const FieldError& e) {
  throw FieldError(e.field() == "count" ? "gpus" : "cluster", e.message());
}

}  // namespace

LlmPlanResult plan_llm_tpu(const LlmPlanRequest& r, const TpuClusterName& t) {
  std::vector<std::string> fw_ov;
  const std::vector<std::string> dev_ov = split_set(r.overrides, fw_ov);
  if (!r.device.empty() && r.device != t.device)
    throw FieldError("device", "cluster '" + r.cluster + "' is a slice of " + t.device + " chips, not " + r.device);
  const ModelSpec spec = llm_model_of(r);
  const tpu::TpuSpec d = tpu::load_tpu_spec(find_config_file("devices", t.device, "device", "device"), dev_ov);
  tpu::TpuMultislice ms;
  try {
    const tpu::TpuSlice one = tpu::tpu_slice(d, t.slice, "slice");
    if (r.gpus < 0) throw FieldError("gpus", "must be >= 1");
    ms = tpu::tpu_multislice(d, r.gpus == 0 ? one.chips : r.gpus, t.slice);
  } catch (const FieldError& e) {
    if (e.field() == "gpus") throw;
    rethrow_slice(e);
  }
  const long long chips = ms.chips();
  if (r.global_batch < 1) throw FieldError("global_batch", "must be >= 1");
  const std::string fw_file = find_framework_file(r.framework, "analytical");
  if (fw_file.empty() && !fw_ov.empty()) throw FieldError("set", "framework.* overrides need a framework profile");
  const FrameworkSpec fw = fw_file.empty() ? FrameworkSpec{} : load_framework_spec(fw_file, fw_ov);

  LlmJob job;
  job.shape = *spec.llm;
  job.seq_len = r.seq_len > 0 ? r.seq_len : job.shape.max_positions;
  if (job.seq_len < 1) throw FieldError("seq_len", "model '" + spec.name + "' has no position table: give a sequence length");
  job.global_batch = r.global_batch;
  // TPUs compute in bf16 (no fp16 MXU mode); mixed_bf16 keeps fp32 weights and reduces fp32
  // gradients, the layers all-gather the bf16 cast (LlmPrecision's defaults).
  if (r.precision == "bf16") job.precision.reduce_bytes = 2;
  else if (r.precision != "mixed_bf16")
    throw FieldError("precision", "'" + r.precision + "' on " + d.name + ": the TPU planner prices mixed_bf16 or bf16");
  job.stack.flash_attention = fw.flash_attention;
  job.stack.dropout = fw.dropout;
  job.stack.fused_loss = fw.flash_attention;
  // TPU flash attention (splash) skips the blocks the causal mask empties.
  job.stack.causal_block_skip = fw.flash_attention;

  const LlmConstraints& f = r.fixed;
  if (f.pp && *f.pp != 1) throw FieldError("pp", "the TPU planner has no pipeline parallelism (MaxText's FSDP + tensor recipes)");
  if (f.cp && *f.cp != 1) throw FieldError("cp", "the TPU planner has no context parallelism");
  if (f.ep && *f.ep != 1) throw FieldError("ep", "the TPU planner has no expert parallelism");
  if (f.virtual_stages && *f.virtual_stages != 1) throw FieldError("pp_virtual_stages", "no pipeline on TPU slices");
  // sequence_parallel is Megatron's switch: MaxText always shards activations over tp, so the
  // TPU planner does (tpu_llm.hpp) whatever a row or flag says.
  if (f.zero && *f.zero != ZeroStage::parameters && *f.zero != ZeroStage::none)
    throw FieldError("sharding", "the TPU planner prices zero3 (FSDP) or none (replicated data parallelism)");
  if (f.tp) {
    if (*f.tp > ms.slice.chips)
      throw FieldError("tp", std::to_string(*f.tp) + " is larger than a slice (" + ms.slice.name + ": " +
                                 std::to_string(ms.slice.chips) + " chips); tensor parallelism runs over ICI only");
    if (job.shape.heads % *f.tp != 0)
      throw FieldError("tp", std::to_string(*f.tp) + " does not divide the " + std::to_string(job.shape.heads) +
                                 " attention heads");
    TpuMeshGroups g;
    const std::string err = tpu_mesh_groups(ms.slice.torus, *f.tp, g);
    if (!err.empty()) throw FieldError("tp", err.substr(4));
  }

  TpuPricer pricer(d, fw);
  TpuFabric fabric;
  fabric.slice = ms.slice.torus;
  fabric.dcn = ms.dcn;  // dcn_efficiency and dcn_step_latency_us applied by tpu_multislice
  fabric.host_bytes_s_per_chip = d.host_link_gbps * 1e9;

  TpuSearchOptions o;
  o.chips = chips;
  o.fixed = f;
  o.fixed.micro_batch.reset();
  o.per_chip_batch = f.micro_batch;
  o.job.offload_activations = r.offload_activations;
  if (o.job.offload_activations && fabric.host_bytes_s_per_chip <= 0)
    throw FieldError("recompute", "offloading activations needs the host link of " + d.name + " (host_link_gbps)");
  o.keep = r.keep;
  const double hbm = static_cast<double>(d.hbm_capacity_bytes) * d.cores_per_chip;
  o.memory_bytes = (hbm - d.runtime_reserved_bytes * d.cores_per_chip) / (1.0 + fw.memory_overhead_fraction);

  LlmPlanResult out;
  out.model = spec.name;
  out.cluster = r.cluster;
  out.device = d.name;
  out.framework = fw.name;
  out.precision = r.precision;
  out.parameters = llm_parameter_count(job.shape);
  out.gpus = static_cast<int>(chips);
  out.nodes = static_cast<int>(ms.slice.hosts * ms.slices);
  out.seq_len = job.seq_len;
  out.global_batch = job.global_batch;
  out.memory_bytes = o.memory_bytes;
  out.peak_flops_s = pricer.peak_flops_s;
  out.search = tpu_llm_search(job, o, pricer, fabric);
  return out;
}

}  // namespace xpusim
