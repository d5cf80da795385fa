// Large models on TPU slices (issue 32; docs/tpu-llm.md): the closed-form step of a decoder
// trained as MaxText trains it -- tensor parallelism and FSDP (ZeRO-3) over the slice's ICI
// torus, data parallelism between slices over the data-center network (DCN), remat (full,
// selective, selective with the saved activations offloaded to the host), bf16 compute with
// fp32 weights, flash attention -- and the search of `xpusim plan` over it. The per-layer
// compute is the GPU planner's llm_layer_cost with a TPU kernel pricer (predict/ fills it from
// the device YAML: MXU peak, HBM bandwidth); collectives are parallel/torus.hpp's. Like the
// GPU planner, every cost is per layer and multiplied by counts: no loop over chips.
#pragma once
#include <optional>
#include <string>

#include "parallel/llm_search.hpp"
#include "parallel/torus.hpp"

namespace xpusim::parallel {

// The two ICI groups of a chip: its tp ranks and its FSDP (or data-parallel) ranks inside the
// slice. tp is laid innermost, filling torus dimensions in order (MaxText's mesh puts the
// tensor axis on the fastest-varying devices): a dimension wholly inside tp belongs to tp; one
// split by tp gives tp a line segment of it (no wraparound) and FSDP the strided sub-rings,
// which share the dimension's links (share 1 / segment length); the rest belongs to FSDP.
struct TpuMeshGroups {
  Torus tp, fsdp;
};
// "" and `out` set, or why tp does not map onto the slice ("tp: ...").
std::string tpu_mesh_groups(const Torus& slice, int tp, TpuMeshGroups& out);

struct TpuFabric {
  Torus slice;                       // ICI of one slice
  Dcn dcn;                           // between slices (dcn.slices = slices; per-chip NIC share)
  double host_bytes_s_per_chip = 0;  // host link a chip offloads activations over (PCIe share)
  long long slice_chips() const { return slice.chips(); }
};

struct TpuJobOptions {
  bool offload_activations = false;  // remat selective_offloaded (MaxText minimal_offloaded)
};

// One configuration's step. c.dp counts every data-parallel rank (FSDP ranks of a slice x
// slices); c.micro_batch is the sequences a tp group processes per micro-batch (MaxText's
// per-device batch x tp). With zero3 the model state is sharded over the slice's FSDP ranks
// only (slices hold replicas). Exposed time, per micro-batch m and layer:
//   compute  = fwd + bwd + recompute (full: fwd; selective without flash: the attention core)
//   tp       = (4 + 2 full) x all_reduce(e T h) over the tp torus (on the compute stream)
//   fsdp     = max(0, 2 AG(p_l w) + RS(p_l r) - compute)    (prefetched behind the layer)
//   offload  = max(0, 2 a_l / host - compute)              (activations out and back)
// and per step: DCN all-reduce of every layer's gradient shard (p_l r / fsdp per chip,
// dcn_all_reduce), not overlapped (MaxText reduces over the DCN data axis after the
// backward); the root unit's (embeddings, head) gathers; Adam on the local shard.
// p_l = layer parameters / tp, w and r the gathered-weight and reduced-gradient bytes, e T h
// a micro-batch's activations, a_l a layer's saved activations (selective) / tp.
// time.dp_comm_s holds FSDP (ICI) + DCN; offload's exposed part is in compute_s.
LlmTime tpu_llm_step_time(const LlmJob& job, const LlmConfig& c, const LlmLayerCost& cost, const LlmKernelPricer& k,
                          const TpuFabric& f, const TpuMeshGroups& g, const TpuJobOptions& o);

// Memory of a chip: llm_memory with the state sharded over the slice's FSDP ranks; XLA's
// per-weight gradient reduce-scatter (one matrix unsharded at a time, not a layer); offloaded
// activations leave HBM (the layer in flight keeps its own).
LlmMemory tpu_llm_memory(const LlmJob& job, const LlmConfig& c, const TpuFabric& f, const TpuJobOptions& o);

struct TpuSearchOptions {
  long long chips = 1;               // all slices
  double memory_bytes = 16e9;        // usable HBM per chip
  LlmConstraints fixed;              // tp, zero (none | zero3), recompute (micro_batch: below)
  // Sequences per chip and micro-batch (MaxText's per_device_batch_size): a tp group of chips
  // shares its sequences, so the configuration's micro-batch is this x tp. Empty: searched.
  std::optional<int64_t> per_chip_batch;
  TpuJobOptions job;
  int keep = 0;
};

// Every tp that maps onto the slice (a divisor of its chips and of the heads), micro-batch,
// sharding (zero3 = FSDP, none = replicated data parallel) and remat, ranked by tokens/s;
// pp = cp = ep = 1 (MaxText's dense recipes on one slice type); activations sharded over tp
// (sequence_parallel = tp > 1, MaxText's layout). Rejections by reason.
LlmSearchResult tpu_llm_search(const LlmJob& job, const TpuSearchOptions& o, const LlmKernelPricer& k,
                               const TpuFabric& f);

}  // namespace xpusim::parallel
