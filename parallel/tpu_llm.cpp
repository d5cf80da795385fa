// The closed-form TPU step and its search (formulas: tpu_llm.hpp, docs/tpu-llm.md).
#include "parallel/tpu_llm.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "common/error.hpp"
#include "parallel/llm_memory.hpp"

namespace xpusim::parallel {

namespace {

double ici_s(const Torus& t, TorusCollective c, double bytes) {
  return t.dims.empty() ? 0.0 : torus_collective(t, c, bytes).seconds;
}

long long group_size(const Torus& t) { return t.dims.empty() ? 1 : t.chips(); }

// The configuration llm_memory sees: model state sharded over the slice's FSDP ranks only.
LlmConfig in_slice(const LlmConfig& c, const TpuFabric& f) {
  LlmConfig s = c;
  s.dp = std::max(1, c.dp / std::max(1, f.dcn.slices));
  return s;
}

// Bytes one layer's saved activations take on a chip under selective remat, sharded over tp
// as MaxText shards activations along its tensor axis (sequence-parallel layout).
double offload_bytes(const LlmJob& job, const LlmConfig& c) {
  return layer_activation_bytes(job, c.micro_batch, job.seq_len, c.tp, c.tp > 1, Recompute::selective);
}

}  // namespace

std::string tpu_mesh_groups(const Torus& slice, int tp, TpuMeshGroups& out) {
  out = TpuMeshGroups{};
  out.tp.link_bytes_per_s = out.fsdp.link_bytes_per_s = slice.link_bytes_per_s;
  out.tp.hop_latency_s = out.fsdp.hop_latency_s = slice.hop_latency_s;
  if (tp < 1) return "tp: must be >= 1";
  if (tp > slice.chips())
    return "tp: " + std::to_string(tp) + " is larger than a slice (" + std::to_string(slice.chips()) +
           " chips); tensor parallelism stays on ICI";
  long long left = tp;
  for (const TorusDim& d : slice.dims) {
    if (left >= d.size) {
      if (left % d.size != 0) break;
      out.tp.dims.push_back(d);
      left /= d.size;
    } else if (left > 1) {
      if (d.size % left != 0) break;
      const int seg = static_cast<int>(left);
      out.tp.dims.push_back({seg, false, d.share});
      out.fsdp.dims.push_back({d.size / seg, d.wrap, d.share / seg});
      left = 1;
    } else {
      out.fsdp.dims.push_back(d);
    }
  }
  if (left != 1) return "tp: " + std::to_string(tp) + " does not map onto the slice's torus dimensions";
  return "";
}

LlmMemory tpu_llm_memory(const LlmJob& job, const LlmConfig& c, const TpuFabric& f, const TpuJobOptions& o) {
  const LlmConfig sc = in_slice(c, f);
  LlmMemory m = llm_memory(job, sc);
  if (sc.zero == ZeroStage::parameters && sc.dp > 1) {
    // llm_memory holds a whole layer's unsharded gradients before the reduce-scatter (PyTorch
    // FSDP's flat buffer); XLA reduce-scatters each weight's gradient as its matmul produces it,
    // so one matrix (the widest) is unsharded at a time. The gathered bf16 layer and the
    // prefetched one stay.
    const LlmShape& s = job.shape;
    const double pl = llm_layer_parameters(s) / c.tp;
    const double widest = static_cast<double>(s.hidden) *
                          static_cast<double>(std::max(s.ffn_hidden, s.attention_width())) / c.tp;
    m.temporary -= pl * job.precision.reduce_bytes;
    m.temporary += widest * job.precision.reduce_bytes;
  }
  if (o.offload_activations) {
    // Saved tensors live in host memory; the layer in flight keeps its own on the chip.
    m.activations = 0;
    m.temporary += offload_bytes(job, c);
  }
  return m;
}

LlmTime tpu_llm_step_time(const LlmJob& job, const LlmConfig& c, const LlmLayerCost& lc, const LlmKernelPricer& k,
                          const TpuFabric& f, const TpuMeshGroups& g, const TpuJobOptions& o) {
  const LlmShape& s = job.shape;
  const LlmPrecision& p = job.precision;
  LlmTime r;
  const double m = static_cast<double>(job.micro_batches(c));
  const double e = p.activation_bytes;
  const double T = static_cast<double>(c.micro_batch) * static_cast<double>(job.seq_len);
  const double h = static_cast<double>(s.hidden), layers = static_cast<double>(s.layers);
  const bool full = c.recompute == Recompute::full;
  const double recompute = full                                                              ? lc.fwd_s
                           : c.recompute == Recompute::selective && !job.stack.flash_attention ? lc.attn_fwd_s
                                                                                               : 0.0;
  const double layer = lc.fwd_s + lc.bwd_s + recompute;
  // Tensor parallelism over its ICI group, on the compute stream.
  const double tp_layer = (4.0 + (full ? 2.0 : 0.0)) * ici_s(g.tp, TorusCollective::all_reduce, e * T * h);
  // Offloaded activations: written to the host during the forward, read back in the backward.
  double offload_layer = 0;
  if (o.offload_activations) {
    if (f.host_bytes_s_per_chip <= 0) throw InternalError("tpu_llm_step_time: no host link bandwidth");
    const double one_way = offload_bytes(job, c) / f.host_bytes_s_per_chip;
    offload_layer = std::max(0.0, one_way - lc.fwd_s) + std::max(0.0, one_way - lc.bwd_s - recompute);
  }
  const double head = lc.head_fwd_s + lc.head_bwd_s;
  r.tp_comm_s = m * layers * tp_layer;
  r.compute_s = m * (layers * (layer + offload_layer) + head);
  // FSDP (ZeRO-3) inside the slice, or replicated data parallelism's gradient all-reduce.
  const LlmMemory mem = llm_memory(job, in_slice(c, f));
  const double P = mem.parameters_per_device;              // per tp rank, unsharded
  const double pl = llm_layer_parameters(s) / c.tp;
  const double outer = std::max(0.0, P - layers * pl);     // embeddings, head, final norm
  const long long fsdp = group_size(g.fsdp);
  double ici = 0;
  if (fsdp > 1) {
    if (c.zero == ZeroStage::parameters) {
      const double comm_layer = 2.0 * ici_s(g.fsdp, TorusCollective::all_gather, pl * p.weight_bytes) +
                                ici_s(g.fsdp, TorusCollective::reduce_scatter, pl * p.reduce_bytes);
      const double root = ici_s(g.fsdp, TorusCollective::all_gather, outer * p.weight_bytes) +
                          ici_s(g.fsdp, TorusCollective::reduce_scatter, outer * p.reduce_bytes);
      // Prefetch hides a layer's collectives behind its compute; the first layer's gather
      // and the root unit's show.
      ici = m * (layers * std::max(0.0, comm_layer - layer) + root +
                 ici_s(g.fsdp, TorusCollective::all_gather, pl * p.weight_bytes));
    } else {
      ici = std::max(0.0, ici_s(g.fsdp, TorusCollective::all_reduce, P * p.reduce_bytes) - layers * lc.bwd_s);
    }
  }
  // DCN: every layer's gradient shard (and the root unit's) all-reduced across the slices,
  // once per step after the backward.
  const double shard = c.zero == ZeroStage::parameters ? 1.0 / static_cast<double>(fsdp) : 1.0;
  const double dcn = layers * dcn_all_reduce(f.dcn, pl * p.reduce_bytes * shard).seconds +
                     dcn_all_reduce(f.dcn, outer * p.reduce_bytes * shard).seconds;
  r.dp_comm_s = ici + dcn;
  const double local = P * (c.zero != ZeroStage::none ? 1.0 / static_cast<double>(fsdp) : 1.0);
  r.optimizer_s = local * (p.reduce_bytes + 26.0) / k.memory_bytes_s + 4.0 * k.launch_s;
  r.step_s = r.compute_s + r.tp_comm_s + r.dp_comm_s + r.optimizer_s;
  // FLOPs as the GPU planner counts them (6 N per token + 12 L h s; recompute on top).
  const double tokens = static_cast<double>(job.global_batch) * static_cast<double>(job.seq_len);
  const double n = static_cast<double>(llm_active_parameter_count(s));
  const double attn = 12.0 * layers * static_cast<double>(s.attention_width()) * static_cast<double>(job.seq_len);
  r.model_flops = tokens * (6.0 * n + attn);
  const double layer_params = n - llm_embedding_parameters(s) - llm_head_parameters(s);
  const double extra = full ? 2.0 * layer_params + attn / 3.0 : c.recompute == Recompute::selective ? attn / 3.0 : 0.0;
  r.hardware_flops = r.model_flops + tokens * extra;
  return r;
}

namespace {

std::vector<int> divisors(long long n) {
  std::vector<int> d;
  for (long long i = 1; i <= n; ++i)
    if (n % i == 0) d.push_back(static_cast<int>(i));
  return d;
}

}  // namespace

LlmSearchResult tpu_llm_search(const LlmJob& job, const TpuSearchOptions& o, const LlmKernelPricer& k,
                               const TpuFabric& f) {
  LlmSearchResult res;
  LlmRejections rejected;
  const std::vector<int> tps = o.fixed.tp ? std::vector<int>{*o.fixed.tp} : divisors(f.slice_chips());
  const std::vector<ZeroStage> zs =
      o.fixed.zero ? std::vector<ZeroStage>{*o.fixed.zero} : std::vector<ZeroStage>{ZeroStage::parameters, ZeroStage::none};
  const std::vector<Recompute> rs = o.fixed.recompute ? std::vector<Recompute>{*o.fixed.recompute}
                                                      : std::vector<Recompute>{Recompute::none, Recompute::selective,
                                                                               Recompute::full};
  for (int tp : tps) {
    LlmConfig base;
    base.tp = tp;
    base.dp = static_cast<int>(o.chips / tp);
    TpuMeshGroups g;
    const std::string map_err = tpu_mesh_groups(f.slice, tp, g);
    if (!map_err.empty()) {
      ++res.enumerated;
      rejected.add("tp", base, map_err.substr(4));
      continue;
    }
    const long long per_rank = job.global_batch % base.dp == 0 ? job.global_batch / base.dp : 0;
    std::vector<int64_t> mbs;
    if (o.per_chip_batch) mbs = {*o.per_chip_batch * tp};
    else if (o.fixed.micro_batch) mbs = {*o.fixed.micro_batch};
    else
      for (int d : divisors(std::max(1LL, per_rank))) mbs.push_back(d);
    std::map<int64_t, LlmLayerCost> costs;  // per micro-batch, this tp
    for (int64_t mb : mbs)
      for (ZeroStage z : zs)
        for (Recompute rc : rs) {
          LlmConfig c = base;
          c.micro_batch = mb, c.zero = z, c.recompute = rc;
          // MaxText shards activations along the tensor axis too (Megatron's SP layout).
          c.sequence_parallel = tp > 1;
          if (!rejected.admit(job, c, res)) continue;
          auto it = costs.find(mb);
          if (it == costs.end()) it = costs.emplace(mb, llm_layer_cost(job, mb, tp, 1, tp > 1, k)).first;
          LlmCandidate cand;
          cand.config = c;
          cand.memory = tpu_llm_memory(job, c, f, o.job);
          if (cand.memory.total() > o.memory_bytes) {
            char msg[96];
            std::snprintf(msg, sizeof msg, "needs %.1f GB per chip, %.1f GB usable", cand.memory.total() / 1e9,
                          o.memory_bytes / 1e9);
            rejected.add("memory", c, msg);
            continue;
          }
          cand.time = tpu_llm_step_time(job, c, it->second, k, f, g, o.job);
          const double chips = static_cast<double>(o.chips);
          cand.tokens_per_s = static_cast<double>(job.global_batch) * static_cast<double>(job.seq_len) / cand.time.step_s;
          cand.mfu = cand.time.model_flops / (cand.time.step_s * chips * k.peak_flops_s);
          cand.hfu = cand.time.hardware_flops / (cand.time.step_s * chips * k.peak_flops_s);
          res.ranked.push_back(cand);
        }
  }
  rejected.finish(res, o.keep);
  return res;
}

}  // namespace xpusim::parallel
