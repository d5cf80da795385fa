// Large-model training in closed form (Calculon-style; docs/parallel.md): one decoder (an
// LlmShape), one job (sequence length, global batch, precision) and one parallel
// configuration (data, tensor, pipeline with virtual stages, context and expert parallelism,
// micro-batch, ZeRO stage, recomputation, sequence parallelism) on a cluster give the memory
// per device and the step time. Every cost is per layer and per micro-batch, multiplied by
// counts: a prediction for 16,384 GPUs costs the same as one for 16 (no per-device loop).
// This file holds the inputs; llm_memory.hpp and llm_time.hpp the two halves of the model.
#pragma once
#include <cstdint>
#include <string>

#include "models/llm_shape.hpp"
#include "parallel/plan.hpp"

namespace xpusim::parallel {

// One candidate configuration of a job.
struct LlmConfig {
  int dp = 1, tp = 1, pp = 1, virtual_stages = 1, cp = 1, ep = 1;
  int64_t micro_batch = 1;          // sequences per micro-batch and data-parallel rank
  ZeroStage zero = ZeroStage::none;
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;   // Megatron SP: norms and dropouts split over the tp ranks

  int devices() const { return dp * tp * pp * cp; }
};

// Numeric precision of a job as the closed-form model needs it.
struct LlmPrecision {
  double activation_bytes = 2;      // bf16 / fp16 activations
  double weight_bytes = 2;          // the working copy the GEMMs read
  double grad_bytes = 2;            // gradients as kept between backward and optimizer
  double reduce_bytes = 4;          // gradients as reduced (fp32 in mixed precision, bf16 "pure")
  double optimizer_bytes = 12;      // fp32 master + Adam's two moments (ZeRO's K = 12)
  bool fp8 = false;                 // fp8 GEMMs (Transformer Engine), bf16 elsewhere
  double fp8_weight_copy_bytes = 0; // fp8: the 1-byte copy of the layers' GEMM weights the fp8 GEMMs read
};

// The training stack's choices that change the cost of a layer.
struct LlmStack {
  bool flash_attention = false;     // attention scores never stored; causal blocks skipped
  bool dropout = false;             // dropout masks (1 byte per element) in the recipe
  bool fsdp_prefetch = true;        // ZeRO-3 gathers the next layer while this one computes
  bool fused_loss = false;          // fused cross-entropy: no fp32 copy of the logits kept
  bool causal_block_skip = false;   // flash kernel skips the causal mask's empty blocks (TPU splash attention)
  double tp_comm_overlap = 0;       // share of the tensor-parallel collectives the stack hides under the
                                    // layer's GEMMs with sequence parallelism (llm_time.hpp); 0 = none
};

struct LlmJob {
  LlmShape shape;
  int64_t seq_len = 2048;
  int64_t global_batch = 1;         // sequences per optimizer step
  LlmPrecision precision;
  LlmStack stack;

  int64_t micro_batches(const LlmConfig& c) const {
    return c.micro_batch * c.dp > 0 ? global_batch / (c.micro_batch * c.dp) : 0;
  }
};

// "" when the configuration can run the job, else the first field that forbids it and why
// (tp must divide the heads and kv heads, pp the layers, the micro-batch times dp the global
// batch, ...). Memory is checked separately (llm_memory.hpp).
std::string llm_config_error(const LlmJob& job, const LlmConfig& c);

// Expert-parallel load imbalance (docs/parallel.md, "Expert parallelism"): the expected load
// of the busiest of `ep` ranks, as a multiple of the balanced load (tokens x top_k / ep of the
// group's routed tokens), when each of `tokens_per_rank` tokens picks top_k of the experts
// uniformly without replacement (each rank hosts experts / ep of them). A rank's count is a sum
// of per-token hypergeometric draws: mean A = T k / ep-share, and with the group's total fixed
// the busiest rank sits z(ep) sigma above the mean, sigma^2 = T k (E - k) / (E - 1):
//   I = 1 + z(ep) sqrt((E - k) / ((E - 1) T k))
// (z(n) = expected_max_std_normal(n)). The expert buffers hold capacity_factor C times the
// balanced load (padded, GShard / Switch); routing is dropless (MegaBlocks, Mixtral), so the
// busiest rank processes max(C, I) times the balanced load. 1 for dense models and ep = 1.
double moe_rank_load_factor(const LlmShape& s, double tokens_per_rank, int ep);

// Expected maximum of n independent standard normals, Blom's (1958) approximation
// Phi^-1((n - 0.375) / (n + 0.25)): 0 for n = 1, 0.589 for 2 (exact 1/sqrt(pi) = 0.564),
// 1.4325 for 8 (exact 1.4236, Harter 1961).
double expected_max_std_normal(int n);

const char* zero_stage_name(ZeroStage z);   // none | zero1 | zero2 | zero3
const char* recompute_name(Recompute r);    // none | selective | full
bool parse_zero_stage(const std::string& s, ZeroStage& out);
bool parse_recompute(const std::string& s, Recompute& out);

}  // namespace xpusim::parallel
