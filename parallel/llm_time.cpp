// Step time of a decoder under a parallel configuration (formulas: llm_time.hpp and
// docs/parallel.md).
#include "parallel/llm_time.hpp"

#include <algorithm>
#include <cmath>

#include "parallel/llm_memory.hpp"

namespace xpusim::parallel {

namespace {

double kv_width(const LlmShape& s) {
  return static_cast<double>(s.kv_heads > 0 ? s.kv_heads : s.heads) * static_cast<double>(s.head_dim());
}
double kv_split(const LlmShape& s, int tp) {
  return std::min(static_cast<double>(tp), std::max(1.0, static_cast<double>(s.kv_heads > 0 ? s.kv_heads : s.heads)));
}
double mlp_token_factor(const LlmShape& s) { return s.moe() ? static_cast<double>(s.top_k) * s.capacity_factor : 1.0; }

// Forward, input-gradient and weight-gradient GEMMs of one linear layer [m, k] x [k, n].
double linear_fwd(const LlmKernelPricer& p, double m, double n, double k, bool fp8) { return p.gemm_s(m, n, k, 1, fp8); }
double linear_bwd(const LlmKernelPricer& p, double m, double n, double k, bool fp8) {
  return p.gemm_s(m, k, n, 1, fp8) + p.gemm_s(k, n, m, 1, fp8);
}

// Ring over r ranks of `frac` x bytes per step pattern: (r - 1) steps of bytes / r.
double ring_s(double bytes, int r, const Link& l, double passes) {
  if (r <= 1 || bytes <= 0) return 0;
  return passes * ((r - 1.0) / r * bytes / l.bytes_s + (r - 1.0) * l.latency_s);
}

// Ranks of a group per node when the group's ranks are `inner` apart (tp-major placement).
int per_node(int group, int inner, int devices_per_node) {
  return std::clamp(devices_per_node / std::max(1, inner), 1, std::max(1, group));
}

}  // namespace

double group_allgather_s(double bytes, int g, int k, const LlmNetwork& n) {
  if (g <= 1) return 0;
  k = std::clamp(k, 1, g);
  const int nodes = (g + k - 1) / k;
  return ring_s(bytes, k, n.intra, 1.0) + ring_s(bytes / k, nodes, n.inter, 1.0);
}

double group_allreduce_s(double bytes, int g, int k, const LlmNetwork& n) {
  if (g <= 1) return 0;
  k = std::clamp(k, 1, g);
  const int nodes = (g + k - 1) / k;
  return ring_s(bytes, k, n.intra, 2.0) + ring_s(bytes / k, nodes, n.inter, 2.0);
}

double group_alltoall_s(double bytes, int g, int k, const LlmNetwork& n) {
  if (g <= 1) return 0;
  k = std::clamp(k, 1, g);
  // Each rank keeps 1/g of its buffer and sends the rest: the share bound for other nodes
  // crosses the NICs, the rest NVLink.
  const double off_node = (g - k) / static_cast<double>(g), on_node = (k - 1.0) / g;
  return on_node * bytes / n.intra.bytes_s + off_node * bytes / n.inter.bytes_s +
         (k > 1 ? n.intra.latency_s : 0) + (g > k ? n.inter.latency_s : 0);
}

Fp8CastBytes fp8_cast_bytes(const LlmJob& job, double T, int tp) {
  Fp8CastBytes out;
  if (!job.precision.fp8) return out;
  const LlmShape& s = job.shape;
  const double e = job.precision.activation_bytes, t = tp, h = static_cast<double>(s.hidden);
  const double f = static_cast<double>(s.ffn_hidden), tok = mlp_token_factor(s);
  const double up = s.mlp == LlmMlp::swiglu ? 2.0 : 1.0, kv = kv_width(s) / kv_split(s, tp);
  const double per = e + 2.0;  // read 16-bit, write fp8 and its transpose
  // Inputs of QKV, projection, MLP-up (the routed tokens under MoE), MLP-down.
  out.fwd = per * (T * h + T * h / t + T * tok * h + T * tok * f / t);
  // Output gradients of the same four GEMMs.
  out.bwd = per * (T * (h / t + 2.0 * kv) + T * h + T * tok * up * f / t + T * tok * h);
  out.kernels = 5;
  return out;
}

double tp_comm_exposed_s(double comm_s, double gemm_s, double overlap, bool sequence_parallel) {
  if (!sequence_parallel || overlap <= 0) return comm_s;
  return comm_s - std::min(std::clamp(overlap, 0.0, 1.0) * comm_s, std::max(0.0, gemm_s));
}

namespace {
// The 16-bit tensor rate of a large compute-bound GEMM (8192^3) on this device: what fused
// attention kernels, which keep their scores on chip, run at (llm_layer_cost).
double large_gemm_flops_s(const LlmKernelPricer& k) {
  constexpr double n = 8192;
  const double s = k.gemm_s(n, n, n, 1, false);
  return s > 0 ? 2.0 * n * n * n / s : k.peak_flops_s;
}
}  // namespace

LlmLayerCost llm_layer_cost(const LlmJob& job, int64_t micro_batch, int tp, int cp, bool sp,
                            const LlmKernelPricer& k) {
  const LlmShape& s = job.shape;
  const bool fp8 = job.precision.fp8;
  const double e = job.precision.activation_bytes, t = tp;
  const double b = static_cast<double>(micro_batch), S = static_cast<double>(job.seq_len), sl = S / cp;
  const double T = b * sl, h = static_cast<double>(s.hidden), f = static_cast<double>(s.ffn_hidden);
  const double kv = kv_width(s) / kv_split(s, tp), dh = static_cast<double>(s.head_dim());
  const double heads = static_cast<double>(s.heads) / t, tok = mlp_token_factor(s);
  const double up = s.mlp == LlmMlp::swiglu ? 2.0 : 1.0;
  LlmLayerCost c;
  // Linear layers: QKV and MLP-up split by output columns, projection and MLP-down by rows.
  // Q and the projection's input are heads x head_dim wide (MaxText's 16b: 8192 on a 4096 model).
  const double aw = static_cast<double>(s.attention_width());
  double fwd = linear_fwd(k, T, aw / t + 2 * kv, h, fp8) + linear_fwd(k, T, h, aw / t, fp8) +
               linear_fwd(k, T * tok, up * f / t, h, fp8) + linear_fwd(k, T * tok, h, f / t, fp8);
  double bwd = linear_bwd(k, T, aw / t + 2 * kv, h, fp8) + linear_bwd(k, T, h, aw / t, fp8) +
               linear_bwd(k, T * tok, up * f / t, h, fp8) + linear_bwd(k, T * tok, h, f / t, fp8);
  c.gemm_fwd_s = fwd;
  c.gemm_bwd_s = bwd;
  if (s.moe()) {
    // The routed part, which the busiest expert-parallel rank scales by its load (llm_step_time).
    const double act = (up + 1.0) * e * T * tok * f / t / k.memory_bytes_s;
    c.moe_fwd_s = linear_fwd(k, T * tok, up * f / t, h, fp8) + linear_fwd(k, T * tok, h, f / t, fp8) + act;
    c.moe_bwd_s = linear_bwd(k, T * tok, up * f / t, h, fp8) + linear_bwd(k, T * tok, h, f / t, fp8) + 2.0 * act;
  }
  // Attention core: QK^T and PV per head over the whole sequence (ring attention visits every
  // key block). Flash-style kernels recompute the scores in the backward (5 products instead
  // of 4); they skip the causal mask's upper blocks but run well below the GEMMs' efficiency
  // (FlashAttention-2 on A100: 50-73% of peak forward, 35-50% backward, vs ~80% for cuBLAS),
  // so the whole product at the GEMM rate stands for both (the llm-foundry rows' MFU stays
  // flat to 64k tokens, which a 2x causal saving would not). That rate is a large
  // compute-bound GEMM's, whatever the head width: the scores stay on chip, so the products
  // are not the DRAM GEMMs their shapes would make (QK^T writing S x S scores, a K of 64 at
  // head dim 64), and FlashAttention-2's throughput at head dim 64 is close to 128's. Priced
  // as those GEMMs, MPT-125M/350M (head dim 64) ran 30 % slow at 16-64k tokens while head dim
  // 128 held (docs/parallel.md). Materialized scores (no flash kernels) are the batched GEMMs
  // they are, and stream through memory (softmax, dropout) in both passes.
  // MaxText's splash attention on TPU does skip them (tpu_llm.hpp): half the products.
  const double causal = job.stack.causal_block_skip ? 0.5 : 1.0;
  const double core = causal * (job.stack.flash_attention
                                    ? 4.0 * sl * S * dh * b * heads / large_gemm_flops_s(k)
                                    : k.gemm_s(sl, S, dh, b * heads, false) + k.gemm_s(sl, dh, S, b * heads, false));
  double attn_fwd = core, attn_bwd = (job.stack.flash_attention ? 2.5 : 2.0) * core;
  if (!job.stack.flash_attention) {
    const double scores = b * heads * sl * S;
    const double bytes = (job.stack.dropout ? 4.0 * e + 1.0 : 2.0 * e) * scores;
    attn_fwd += bytes / k.memory_bytes_s;
    attn_bwd += 2.0 * bytes / k.memory_bytes_s;
  }
  // Elementwise traffic: two norms (read + write), two residual adds (2 reads + 1 write),
  // dropouts (read, write, 1-byte mask), the MLP activation; outside the TP region these are
  // split over the ranks only with sequence parallelism. fp8: a cast of every GEMM input.
  const double rep = sp ? 1.0 / t : 1.0;
  double elem = (4.0 * e + 6.0 * e + (job.stack.dropout ? 4.0 * e + 2.0 : 0.0)) * T * h * rep;
  elem += (up + 1.0) * e * T * tok * f / t;
  const double elem_s = elem / k.memory_bytes_s;
  const double kernels = job.stack.flash_attention ? 14 : 18;
  const Fp8CastBytes cast = fp8_cast_bytes(job, T, tp);
  c.fp8_cast_fwd_s = cast.fwd / k.memory_bytes_s + cast.kernels * k.launch_s;
  c.fp8_cast_bwd_s = cast.bwd / k.memory_bytes_s + cast.kernels * k.launch_s;
  c.attn_fwd_s = attn_fwd;
  c.fwd_s = fwd + attn_fwd + elem_s + kernels * k.launch_s + c.fp8_cast_fwd_s;
  c.bwd_s = bwd + attn_bwd + 2.0 * elem_s + 2.0 * kernels * k.launch_s + c.fp8_cast_bwd_s;
  // LM head (vocab-parallel) and the cross-entropy over fp32 logits.
  const double V = static_cast<double>(s.vocab);
  const double loss_bytes = T * V / t * (e + 4.0);
  c.head_fwd_s = linear_fwd(k, T, V / t, h, false) + loss_bytes / k.memory_bytes_s + 3 * k.launch_s;
  c.head_bwd_s = linear_bwd(k, T, V / t, h, false) + loss_bytes / k.memory_bytes_s + 3 * k.launch_s;
  return c;
}

LlmTime llm_step_time(const LlmJob& job, const LlmConfig& c, const LlmLayerCost& lc, const LlmKernelPricer& k,
                      const LlmNetwork& n) {
  const LlmShape& s = job.shape;
  const LlmPrecision& p = job.precision;
  LlmTime r;
  const double m = static_cast<double>(job.micro_batches(c));
  const double e = p.activation_bytes, t = c.tp;
  const double T = static_cast<double>(c.micro_batch) * static_cast<double>(job.seq_len) / c.cp;
  const double h = static_cast<double>(s.hidden);
  const double layers = static_cast<double>(s.layers) / c.pp;  // per stage, on average
  const LlmStageLayers st = llm_stage_layers(s, c);
  const int dpn = n.devices_per_node;
  const double fwd = lc.fwd_s, bwd = lc.bwd_s;
  const double recompute = c.recompute == Recompute::full                                  ? fwd
                     : c.recompute == Recompute::selective && !job.stack.flash_attention ? lc.attn_fwd_s
                                                                                       : 0.0;
  // Tensor parallelism: 2 all-reduces forward, 2 backward, 2 more in a recomputed forward
  // (with SP: reduce-scatter + all-gather pairs of the same volume), on the compute stream.
  const double ars = 4.0 + (c.recompute == Recompute::full ? 2.0 : 0.0);
  const double gemms = lc.gemm_fwd_s + lc.gemm_bwd_s + (c.recompute == Recompute::full ? lc.gemm_fwd_s : 0.0);
  const double tp_layer = tp_comm_exposed_s(ars * group_allreduce_s(e * T * h, c.tp, std::min(c.tp, dpn), n), gemms,
                                            job.stack.tp_comm_overlap, c.sequence_parallel);
  // Context parallelism: K and V blocks passed around the ring while attention computes.
  double cp_layer = 0;
  if (c.cp > 1) {
    const double kv = 2.0 * e * T * kv_width(s) / kv_split(s, c.tp);
    const int k_cp = per_node(c.cp, c.tp, dpn);
    const Link& l = k_cp >= c.cp ? n.intra : n.inter;
    const double pass = (c.cp - 1.0) * (kv / l.bytes_s + l.latency_s);
    cp_layer = std::max(0.0, pass - lc.attn_fwd_s) + std::max(0.0, 2.0 * pass - 2.0 * lc.attn_fwd_s);
  }
  // Expert parallelism: dispatch and combine all-to-alls forward and backward, and the expert
  // work, both at the busiest rank's load (moe_rank_load_factor: max(capacity, expected max
  // under uniform top-k routing)); the layer cost holds them at the capacity factor.
  double ep_layer = 0, moe_extra = 0;
  if (s.moe() && c.ep > 1) {
    r.moe_load_factor = moe_rank_load_factor(s, T, c.ep);
    const double tokens = static_cast<double>(s.top_k) * r.moe_load_factor;
    ep_layer = 4.0 * group_alltoall_s(e * T * h * tokens, c.ep, per_node(c.ep, c.tp, dpn), n);
    const double scale = r.moe_load_factor / s.capacity_factor - 1.0;
    moe_extra = scale * (lc.moe_fwd_s + lc.moe_bwd_s + (c.recompute == Recompute::full ? lc.moe_fwd_s : 0.0));
  }
  const double layer = fwd + bwd + recompute + moe_extra;
  const double per_layer = layer + tp_layer + cp_layer + ep_layer;
  const double per_mb_layers = layers * per_layer;
  const double head = lc.head_fwd_s + lc.head_bwd_s;
  // The slowest stage sets the pace: the last carries the LM head; with uneven stages the
  // first ones hold a layer more (llm_stage_layers), and may be the slower.
  const bool first_slower = c.pp > 1 && st.first * per_layer > st.last * per_layer + head;
  const double busy_layers = first_slower ? st.first : st.last;
  const double stage_max = first_slower ? st.first * per_layer : busy_layers * per_layer + head;
  const double stage_avg = per_mb_layers + head / c.pp;
  r.tp_comm_s = m * busy_layers * tp_layer;
  r.cp_comm_s = m * busy_layers * cp_layer;
  r.ep_comm_s = m * busy_layers * ep_layer;
  r.compute_s = m * stage_max - r.tp_comm_s - r.cp_comm_s - r.ep_comm_s;
  // Pipeline: 1F1B fill and drain of (p - 1) / v micro-batch slots; sends of the boundary
  // activations (/ tp with SP's scatter-gather) forward and backward at every chunk edge.
  if (c.pp > 1) {
    r.bubble_s = (c.pp - 1.0) / c.virtual_stages * stage_avg;
    const double x = e * T * h / (c.sequence_parallel ? t : 1.0);
    const bool cross = static_cast<long long>(c.tp) * c.cp * c.dp >= dpn;
    const Link& l = cross ? n.inter : n.intra;
    r.pp_comm_s = 2.0 * (c.virtual_stages * m + c.pp - 1.0) * (x / l.bytes_s + l.latency_s);
  }
  // Data parallelism and ZeRO over the dp x cp ranks holding the same parameters.
  const LlmMemory mem = llm_memory(job, c);
  const double P = mem.parameters_per_device;
  const int g = c.dp * c.cp, kg = per_node(g, c.tp, dpn);
  if (g > 1) {
    if (c.zero == ZeroStage::parameters) {
      // FSDP / ZeRO-3: every micro-batch gathers each layer's shard forward and again
      // backward, and reduce-scatters its gradients; the next layer's collectives run while
      // this one computes (prefetch), so only what exceeds the layer's compute shows.
      const double pl = llm_layer_parameters(s) / t;
      const double comm_layer = 2.0 * group_allgather_s(pl * p.weight_bytes, g, kg, n) +
                                group_allgather_s(pl * p.reduce_bytes, g, kg, n);
      const double hidden = job.stack.fsdp_prefetch ? layer : 0.0;
      const double outer = std::max(0.0, P - mem.stage_layers * pl);  // embeddings and head: the root unit
      const double root = group_allgather_s(outer * p.weight_bytes, g, kg, n) +
                          group_allgather_s(outer * p.reduce_bytes, g, kg, n);
      r.dp_comm_s = m * (mem.stage_layers * std::max(0.0, comm_layer - hidden) + root +
                         group_allgather_s(pl * p.weight_bytes, g, kg, n));
    } else {
      const double comm = c.zero == ZeroStage::none
                              ? group_allreduce_s(P * p.reduce_bytes, g, kg, n)
                              : group_allgather_s(P * p.reduce_bytes, g, kg, n) +
                                    group_allgather_s(P * p.weight_bytes, g, kg, n);
      // Bucketed all-reduce overlaps the last micro-batch's backward without a pipeline;
      // with one it runs after the flush (Megatron-LM).
      const double window = c.pp == 1 ? layers * bwd : 0.0;
      r.dp_comm_s = std::max(0.0, comm - window);
    }
  }
  // Adam on the local shard: read gradient, master, two moments; write them and the weights.
  const double local = P / (c.zero != ZeroStage::none ? static_cast<double>(g) : 1.0);
  r.optimizer_s = local * (p.reduce_bytes + 26.0) / k.memory_bytes_s + 4.0 * k.launch_s;
  // fp8: the updated 16-bit weights are cast to their fp8 copy once per step (read 2 bytes,
  // write the copy; Transformer Engine caches it over the micro-batches).
  if (p.fp8_weight_copy_bytes > 0)
    r.optimizer_s += mem.fp8_weights / p.fp8_weight_copy_bytes * (p.weight_bytes + p.fp8_weight_copy_bytes) /
                         k.memory_bytes_s + k.launch_s;
  r.step_s = r.compute_s + r.tp_comm_s + r.cp_comm_s + r.ep_comm_s + r.bubble_s + r.pp_comm_s + r.dp_comm_s +
             r.optimizer_s;
  // FLOPs: 6 N per token plus attention 12 L h s (PaLM's and llm-foundry's MFU convention);
  // the recomputed forward adds 2 N (+ 4 L h s) for full, the attention core for selective.
  const double tokens = static_cast<double>(job.global_batch) * static_cast<double>(job.seq_len);
  const double n_active = static_cast<double>(llm_active_parameter_count(s));
  const double attn = 12.0 * static_cast<double>(s.layers) * h * static_cast<double>(job.seq_len);
  r.model_flops = tokens * (6.0 * n_active + attn);
  const double layer_params = n_active - llm_embedding_parameters(s) - llm_head_parameters(s);
  const double extra = c.recompute == Recompute::full        ? 2.0 * layer_params + attn / 3.0
                       : c.recompute == Recompute::selective ? attn / 3.0
                                                             : 0.0;
  r.hardware_flops = r.model_flops + tokens * extra;
  return r;
}

}  // namespace xpusim::parallel
