// Memory per device of a decoder trained under a parallel configuration (docs/parallel.md):
// model state (weights, gradients, optimizer) sharded by ZeRO / FSDP (Rajbhandari et al.
// 2020), activations by Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", section 4) for each recomputation and sequence-parallel mode, the
// pipeline's in-flight micro-batches (1F1B: the first stage holds p of them; interleaved:
// times 1 + (p-1)/(p v)), the LM head's logits and the temporary buffers of FSDP.
#pragma once
#include "parallel/llm_plan.hpp"

namespace xpusim::parallel {

// Activation bytes one transformer layer keeps for the backward pass per micro-batch of
// `b` sequences of `s` tokens on one tensor-parallel rank. For a GPT layer (MLP 4h, GELU,
// multi-head attention, dropout, no flash attention) in 16 bits this is the paper's
//   none:      s b h (34 + 5 a s / h)                  (t = 1)
//   tp t:      s b h (10 + 24 / t + 5 a s / (h t))
//   tp + SP:   s b h / t (34 + 5 a s / h)
//   selective: the 5 a s / h term dropped (attention scores recomputed)
//   full:      2 s b h (only the layer's input; / t with SP)
// Without dropout the three masks (a s^2 b + 2 s b h bytes) go; with flash attention the
// scores are never stored (as selective); GQA, SwiGLU and other MLP widths change the terms
// by their tensor sizes (docs/parallel.md lists each term).
double layer_activation_bytes(const LlmJob& job, int64_t b, int64_t s, int tp, bool sequence_parallel,
                              Recompute r);

struct LlmMemory {
  double weights = 0, gradients = 0, optimizer = 0;  // model state on one device
  double fp8_weights = 0;                            // fp8 copies of the layers' GEMM weights (sharded as weights)
  double activations = 0;                            // in-flight micro-batches' saved tensors
  double logits = 0;                                 // LM head output and its fp32 loss copy
  double temporary = 0;                              // gathered FSDP layers, recomputed layer, buffers
  double parameters_per_device = 0;                  // parameters the busiest stage holds / tp (unsharded)
  double stage_layers = 0;                           // transformer layers of that stage
  double total() const { return weights + fp8_weights + gradients + optimizer + activations + logits + temporary; }
};

// Memory of the busiest device (the first pipeline stage, which holds the embedding and the
// most micro-batches in flight; the last stage's LM head counted when pp = 1).
LlmMemory llm_memory(const LlmJob& job, const LlmConfig& c);

// Transformer layers of the first and of the last pipeline stage. The L layers split into
// pp x v chunks (v = virtual stages of the interleaved schedule, 1 without it) as evenly as
// whole layers allow: the first L mod (pp v) chunks hold one layer more; stage i runs chunks
// i, i + pp, i + 2 pp, ... So the first stages hold the extra layers and the last stage, which
// also runs the LM head, the fewer (Megatron-LM's uneven first/last stages; Llama 3 405B: 126
// layers on 16 stages). pp = 1: both are L.
struct LlmStageLayers {
  double first = 0, last = 0;
};
LlmStageLayers llm_stage_layers(const LlmShape& s, const LlmConfig& c);

// Parameters of one transformer layer (all experts) and of the embedding (token table and
// learned positions) and the untied LM head.
double llm_layer_parameters(const LlmShape& s);
double llm_embedding_parameters(const LlmShape& s);
double llm_head_parameters(const LlmShape& s);

}  // namespace xpusim::parallel
