// Step time of a decoder under a parallel configuration, in closed form (docs/parallel.md):
// per layer and micro-batch, the GEMMs (Megatron's column/row splits: QKV and MLP-up split by
// output columns, projection and MLP-down by input rows), attention (materialized scores or
// flash-style), the elementwise and norm traffic, priced with the device model's kernels; then
// tensor-parallel all-reduces (or reduce-scatter + all-gather with sequence parallelism),
// pipeline 1F1B / interleaved bubbles and point-to-point sends, ring attention for context
// parallelism, expert all-to-alls, and the data-parallel / ZeRO / FSDP gradient and parameter
// collectives with their overlap. Hierarchical collectives over the cluster's two fabrics.
#pragma once
#include "parallel/cluster.hpp"
#include "parallel/llm_plan.hpp"

namespace xpusim::parallel {

// What the device model says a kernel costs (predict/ fills it from the analytical GPU
// kernel model: tiles, waves, per-dtype tensor rates and efficiencies).
class LlmKernelPricer {
 public:
  virtual ~LlmKernelPricer() = default;
  // One GEMM C[m, n] = A[m, k] B[k, n], `batch` times, in 16-bit or fp8 operands: seconds.
  virtual double gemm_s(double m, double n, double k, double batch, bool fp8) const = 0;
  double memory_bytes_s = 1e12;  // streaming (elementwise, norms, softmax, optimizer)
  double launch_s = 0;           // per kernel
  double peak_flops_s = 1;       // dense 16-bit tensor peak, for MFU and HFU
};

// One transformer layer's time on one device per micro-batch, and the LM head's.
struct LlmLayerCost {
  double fwd_s = 0, bwd_s = 0;    // whole layer (GEMMs, attention, elementwise, launches)
  double attn_fwd_s = 0;          // the attention core's forward (selective recompute redoes it)
  double head_fwd_s = 0, head_bwd_s = 0;  // LM head GEMM and the loss
  double gemm_fwd_s = 0, gemm_bwd_s = 0;   // the four linear layers' GEMMs (in fwd/bwd)
  double fp8_cast_fwd_s = 0, fp8_cast_bwd_s = 0;  // fp8 casts and scale updates (in fwd/bwd)
  double moe_fwd_s = 0, moe_bwd_s = 0;    // MoE: the expert GEMMs and activation at the capacity-factor load (in fwd/bwd)
};
// fp8 scaling and casts of one layer per micro-batch (Transformer Engine's delayed scaling,
// Micikevicius et al. 2022; docs/parallel.md): before each of the four fp8 GEMMs its 16-bit
// activation input is read once and written as fp8 and fp8-transposed (the weight-gradient
// GEMM's operand), the amax taken in the same pass: (e + 2) bytes per element of the QKV,
// projection, MLP-up and MLP-down inputs forward; the same for each GEMM's output gradient
// backward. A scale update per pass from the amax history (one small kernel). Memory-bound.
struct Fp8CastBytes {
  double fwd = 0, bwd = 0;   // bytes moved
  int kernels = 0;           // per pass: 4 casts + 1 scale update
};
Fp8CastBytes fp8_cast_bytes(const LlmJob& job, double tokens, int tp);

// With sequence parallelism (`sp`) the norms, residual adds and dropouts are split over tp.
LlmLayerCost llm_layer_cost(const LlmJob& job, int64_t micro_batch, int tp, int cp, bool sp, const LlmKernelPricer& k);

// Collectives of `bytes` (the whole buffer) over a group of g ranks placed k per node
// (k >= g: inside one node): ring inside the node, ring over the nodes' NICs between them
// for a 1/k slice per GPU (NCCL's hierarchical schedule).
double group_allreduce_s(double bytes, int g, int k, const LlmNetwork& n);
double group_allgather_s(double bytes, int g, int k, const LlmNetwork& n);  // = reduce-scatter
double group_alltoall_s(double bytes, int g, int k, const LlmNetwork& n);

struct LlmTime {
  double step_s = 0;
  double compute_s = 0;           // micro-batches x stage compute (including recompute)
  double bubble_s = 0;            // pipeline fill and drain
  double tp_comm_s = 0, pp_comm_s = 0, cp_comm_s = 0, ep_comm_s = 0;  // exposed
  double dp_comm_s = 0;           // exposed data-parallel / ZeRO / FSDP collectives
  double optimizer_s = 0;
  double moe_load_factor = 1;     // busiest expert-parallel rank's load over the balanced one (moe_rank_load_factor)
  double model_flops = 0;         // per step, all devices: 6 N tokens + attention (no recompute)
  double hardware_flops = 0;      // the same with the recomputed forward
};

// Tensor-parallel communication overlap (docs/parallel.md): without sequence parallelism the
// all-reduces sit on the compute stream between dependent GEMMs (Megatron-LM 2021: none hidden).
// With it, a stack that decomposes each all-gather / reduce-scatter into chunks pipelined with
// the adjacent GEMM (Wang et al., ASPLOS 2023; Megatron-core --tp-comm-overlap with Transformer
// Engine userbuffers, which requires sequence parallelism) hides the share `o` =
// LlmStack::tp_comm_overlap of them, at most the GEMM time that runs beside them:
//   exposed = C_tp - min(o C_tp, GEMMs of the layer's passes)
double tp_comm_exposed_s(double comm_s, double gemm_s, double overlap, bool sequence_parallel);

// Needs `cost` = llm_layer_cost(job, c.micro_batch, c.tp, c.cp, c.sequence_parallel, pricer) (the search caches it).
LlmTime llm_step_time(const LlmJob& job, const LlmConfig& c, const LlmLayerCost& cost, const LlmKernelPricer& k,
                      const LlmNetwork& n);

}  // namespace xpusim::parallel
