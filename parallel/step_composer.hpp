// Composes one step of a model partitioned over many devices from the per-device work an
// engine priced (one PricedOp per op of the lowered per-device graph) and the collectives
// priced on the cluster topology. Data parallelism today: the graph's gradient AllReduce ops
// run on a communication stream beside the compute stream, each as soon as its gradient is
// ready, so the exchange overlaps the rest of the backward pass (docs/analytical-model.md).
// Tensor, pipeline, context and expert parallelism and ZeRO sharding extend compose() and the
// plan (docs/architecture.md, "Distributed training": where to add a parallelism strategy).
#pragma once
#include <algorithm>
#include <vector>

#include "engine/framework_spec.hpp"
#include "models/graph.hpp"
#include "parallel/plan.hpp"
#include "parallel/topology.hpp"

namespace xpusim::parallel {

// One op of the per-device step as the engine priced it.
struct PricedOp {
  bool collective = false;      // a gradient exchange (the graph's AllReduce ops)
  double time_s = 0;            // compute ops: seconds on one device
  double collective_bytes = 0;  // collectives: bytes each device contributes
  double overhead_s = 0;        // collectives: launch / dispatch overhead
};

// How the devices run collectives beside compute.
struct ComposeOptions {
  MultiDeviceStrategy strategy = MultiDeviceStrategy::system;  // the framework's
  // Share of a collective's time hidden under compute (NCCL's reduction kernels run on the
  // SMs and contend for memory bandwidth: the rest stalls the compute stream).
  double comm_overlap = 1.0;
  double weight_bytes = 0;  // fp32 weights a parameter server sends back per step
  bool inference = false;   // an inference pass exchanges nothing
  // Gradient accumulation (plan.micro_batches > 1): seconds each micro-batch after the first
  // spends adding its weight gradients into the accumulated ones (an elementwise pass).
  double accumulate_s = 0;
  // Gradient buckets (PyTorch DDP's bucket_cap_mb): consecutive gradients are exchanged in one
  // collective of up to this many bytes, launched when its last gradient is ready, and the
  // optimizer updates run after the last bucket (DDP waits for every bucket at the end of the
  // backward). 0 = one collective per gradient tensor, each weight updated as soon as its own
  // exchange ends (TensorFlow's per-variable NCCL all-reduce, Horovod without fusion).
  double bucket_bytes = 0;
};

struct ComposedStep {
  double compute_end_s = 0;   // when the compute stream finishes
  double comm_end_s = 0;      // when the communication stream finishes
  double comm_busy_s = 0;     // seconds the links are busy
  double comm_stall_s = 0;    // compute-stream seconds lost to collectives
  double weight_pull_s = 0;   // parameter server: weights pulled before the next step
  // Gradient accumulation: the micro-batches before the last (forward, backward and the
  // gradient sums), run before the timeline below, which is the last micro-batch's.
  double accumulation_lead_s = 0;
  std::vector<double> collective_s;  // per op id: the collective's time (0 for compute ops)
  // Per op id: when the op starts and ends on its stream (compute or communication), s from
  // the step's start; what an estimated timeline (devices/analytical/trace.hpp) draws.
  std::vector<double> start_s, end_s;

  // The devices' step: both streams drained and the weights pulled.
  double device_s() const { return std::max(compute_end_s, comm_end_s) + weight_pull_s; }
  // Communication not hidden under compute.
  double exposed_comm_s() const {
    return std::max(0.0, comm_end_s - compute_end_s) + weight_pull_s + comm_stall_s;
  }
};

class StepComposer {
 public:
  // check_plan(plan) first: FieldError("parallel") for a plan it cannot compose.
  StepComposer(const ParallelPlan& plan, const ClusterTopology& topology, const ComposeOptions& options);
  // `ops` is indexed by op id (g.num_ops() entries); ops run in g.schedule() order.
  ComposedStep compose(const OpGraph& g, const std::vector<PricedOp>& ops) const;
  // One collective of `bytes` under this plan and strategy, seconds (launch overhead excluded).
  double gradient_exchange_s(double bytes) const;

  const ParallelPlan& plan() const { return plan_; }
  const ClusterTopology& topology() const { return topology_; }

 private:
  ParallelPlan plan_;
  ClusterTopology topology_;
  ComposeOptions options_;
};

}  // namespace xpusim::parallel
