// How one training step of a model is partitioned over many devices: the degrees of data,
// tensor, pipeline, context (sequence) and expert parallelism, optimizer-state sharding,
// activation recomputation and micro-batching. The StepComposer (step_composer.hpp) turns a
// plan, the per-device work the engines price and the collectives on a ClusterTopology into
// one step. Today only data parallelism is composed; the other degrees are declared so the
// large-model work (issue 30) extends this type, not every caller.
#pragma once
#include <string>

namespace xpusim::parallel {

// ZeRO / FSDP: which of the model state is sharded over the data-parallel ranks.
enum class ZeroStage { none, optimizer, gradients, parameters };
// Activation recomputation in the backward pass.
enum class Recompute { none, selective, full };

struct ParallelPlan {
  int dp = 1;              // data-parallel replicas (each a full copy of the model, or a ZeRO shard)
  int tp = 1;              // tensor (intra-layer) parallel degree
  int pp = 1;              // pipeline stages
  int virtual_stages = 1;  // interleaved stages per pipeline rank
  int cp = 1;              // context / sequence parallel degree
  int ep = 1;              // expert parallel degree (experts sharded over the dp x cp ranks)
  ZeroStage zero = ZeroStage::none;
  Recompute recompute = Recompute::none;
  // Micro-batches per step and pipeline; without a pipeline, gradient accumulation: every
  // micro-batch runs the forward and backward pass, the gradients are exchanged and the
  // weights updated once per step (StepComposer).
  int micro_batches = 1;

  // Devices the plan occupies: dp x tp x pp x cp (expert parallelism reuses those ranks).
  int devices() const { return dp * tp * pp * cp; }
  // A plan of `replicas` data-parallel replicas and nothing else: what predict() runs today.
  static ParallelPlan data_parallel(int replicas);
};

// The first degree of the plan the StepComposer cannot compose yet, as its name ("tp",
// "zero", ...), or empty when it composes the whole plan (data parallelism only, today).
std::string unsupported_degree(const ParallelPlan& p);

// FieldError("parallel", ...) when a degree is below 1, ep does not divide dp x cp, or the
// composer cannot compose the plan yet.
void check_plan(const ParallelPlan& p);

}  // namespace xpusim::parallel
