// Data-parallel step composition: two in-order timelines, compute and communication.
#include "parallel/step_composer.hpp"

#include <algorithm>

#include "common/error.hpp"
#include "parallel/collectives.hpp"

namespace xpusim::parallel {

StepComposer::StepComposer(const ParallelPlan& plan, const ClusterTopology& topology, const ComposeOptions& options)
    : plan_(plan), topology_(topology), options_(options) {
  check_plan(plan_);
  if (topology_.devices != plan_.devices())
    throw InternalError("parallel: topology of " + std::to_string(topology_.devices) + " devices for a plan of " +
                        std::to_string(plan_.devices()));
}

double StepComposer::gradient_exchange_s(double bytes) const {
  const bool gather = options_.strategy == MultiDeviceStrategy::gather_on_first && plan_.dp > 1;
  return gather ? gather_on_first_time_s(bytes, topology_) : allreduce_time_s(bytes, topology_);
}

ComposedStep StepComposer::compose(const OpGraph& g, const std::vector<PricedOp>& ops) const {
  if (static_cast<int>(ops.size()) != g.num_ops()) throw InternalError("parallel: one PricedOp per op expected");
  // Keras multi_gpu_model: every tower's gradients go to one device, which sends weights back
  // after the whole backward pass (no overlap with compute).
  const bool gather = options_.strategy == MultiDeviceStrategy::gather_on_first && plan_.dp > 1;
  ComposedStep s;
  s.collective_s.assign(ops.size(), 0.0);
  s.start_s.assign(ops.size(), 0.0);
  s.end_s.assign(ops.size(), 0.0);
  // Two in-order timelines: the compute stream runs ops in schedule order as soon as their
  // inputs are ready; the communication stream runs all-reduces as soon as their gradient (or
  // their bucket's last gradient) is.
  std::vector<double> ready(static_cast<size_t>(g.num_tensors()), 0.0);
  double compute_free = 0, comm_free = 0;
  // One exchange of `members` (op ids) on the communication stream, from `dep` on: one
  // collective launch for the whole bucket (its gradients are views into one flat buffer).
  auto exchange = [&](const std::vector<int>& members, double dep) {
    double bytes = 0, overhead = 0;
    for (int m : members) {
      bytes += ops[static_cast<size_t>(m)].collective_bytes;
      overhead = std::max(overhead, ops[static_cast<size_t>(m)].overhead_s);
    }
    const double t = gradient_exchange_s(bytes) + overhead;
    const double end = std::max(comm_free, dep) + t;
    comm_free = end;
    s.comm_busy_s += t;
    // The share of a collective that is not hidden (1 - comm_overlap) stalls the compute
    // stream; a gathered exchange is not overlapped at all.
    const double stall = gather ? t : (1.0 - options_.comm_overlap) * t;
    compute_free = std::max(compute_free, end - t) + stall;
    s.comm_stall_s += stall;
    // A bucket's time is shared out by bytes and drawn member after member (the trace's
    // slices do not overlap); every member's result is ready when the whole bucket is.
    double at = end - t;
    for (int m : members) {
      const double share = bytes > 0 ? ops[static_cast<size_t>(m)].collective_bytes / bytes : 1.0 / members.size();
      s.collective_s[static_cast<size_t>(m)] = t * share;
      s.start_s[static_cast<size_t>(m)] = at;
      at += t * share;
      s.end_s[static_cast<size_t>(m)] = at;
      for (int out : g.op(m).outputs) ready[static_cast<size_t>(out)] = end;
    }
  };
  // Buckets: the optimizer updates move after every exchange (DDP's order), so a bucket can
  // gather gradients whose updates come between them in the graph's schedule.
  const bool bucketed = options_.bucket_bytes > 0 && !gather;
  std::vector<int> order = g.schedule();
  int last_collective = -1;
  if (bucketed) {
    std::stable_partition(order.begin(), order.end(), [&](int op) { return g.op(op).phase != Phase::update; });
    for (int op : order)
      if (ops[static_cast<size_t>(op)].collective) last_collective = op;
  }
  std::vector<int> bucket;
  double bucket_bytes = 0, bucket_dep = 0;
  auto flush = [&]() {
    if (bucket.empty()) return;
    exchange(bucket, bucket_dep);
    bucket.clear();
    bucket_bytes = bucket_dep = 0;
  };
  // Whether op reads a gradient of the bucket still being filled (then the bucket goes now).
  auto reads_pending = [&](const OpNode& n) {
    for (int m : bucket)
      for (int out : g.op(m).outputs)
        if (std::find(n.inputs.begin(), n.inputs.end(), out) != n.inputs.end()) return true;
    return false;
  };
  for (int op : order) {
    const OpNode& n = g.op(op);
    const PricedOp& c = ops[static_cast<size_t>(op)];
    if (bucketed && !c.collective && reads_pending(n)) flush();
    double dep = 0;
    for (int t : n.inputs) dep = std::max(dep, ready[static_cast<size_t>(t)]);
    if (c.collective && bucketed) {
      bucket.push_back(op);
      bucket_bytes += c.collective_bytes;
      bucket_dep = std::max(bucket_dep, dep);
      if (bucket_bytes >= options_.bucket_bytes || op == last_collective) flush();
      continue;
    }
    if (c.collective) {
      exchange({op}, dep);
      continue;
    }
    s.start_s[static_cast<size_t>(op)] = std::max(compute_free, dep);
    const double end = s.start_s[static_cast<size_t>(op)] + c.time_s;
    compute_free = end;
    s.end_s[static_cast<size_t>(op)] = end;
    for (int t : n.outputs) ready[static_cast<size_t>(t)] = end;
  }
  // Gradient accumulation (DDP's no_sync, Horovod's backward_passes_per_step): the first
  // micro-batches run only their forward and backward ops and sum their gradients; the last
  // one's backward overlaps the exchange as above and the weights are updated once. So the
  // earlier micro-batches are a lead before that timeline.
  if (plan_.micro_batches > 1) {
    double per_micro_batch = options_.accumulate_s;
    for (int op : g.schedule()) {
      const Phase ph = g.op(op).phase;
      if (!ops[static_cast<size_t>(op)].collective && (ph == Phase::forward || ph == Phase::backward))
        per_micro_batch += ops[static_cast<size_t>(op)].time_s;
    }
    s.accumulation_lead_s = static_cast<double>(plan_.micro_batches - 1) * per_micro_batch;
    for (auto* v : {&s.start_s, &s.end_s})
      for (double& t : *v) t += s.accumulation_lead_s;
    compute_free += s.accumulation_lead_s;
    if (comm_free > 0) comm_free += s.accumulation_lead_s;
  }
  s.compute_end_s = compute_free;
  s.comm_end_s = comm_free;
  s.weight_pull_s = options_.inference ? 0.0 : parameter_server_pull_s(options_.weight_bytes, topology_);
  return s;
}

}  // namespace xpusim::parallel
