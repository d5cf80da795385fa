// Collectives priced on a ClusterTopology: pure functions of bytes and links, so the unit
// tests check them by hand (tests/unit/test_parallel.cpp). Today the data-parallel gradient
// exchange; tensor, sequence and expert parallelism add their all-gathers, reduce-scatters
// and all-to-alls here (docs/architecture.md, "Distributed training").
#pragma once
#include "parallel/topology.hpp"

namespace xpusim::parallel {

// Ring all-reduce of `bytes` over r devices on one link: reduce-scatter + all-gather move
// 2(r-1)/r of the buffer through every device's link in 2(r-1) latency-bound steps
// (Patarasuk & Yuan 2009; NCCL's ring algorithm). 0 for r <= 1.
double ring_allreduce_s(double bytes, int r, const Link& link);

// All-reduce of `bytes` over every device of the topology. Ring: an intra-node ring, then a
// ring over the nodes' NICs (hierarchical). Parameter server: the push of the gradient over
// the intra-node link (the weight pull happens once per step, parameter_server_pull_s).
double allreduce_time_s(double bytes, const ClusterTopology& t);

// Parameter server: every device pulls the updated weights before the next forward pass.
// 0 unless the topology's collective is a parameter server and there is more than one device.
double parameter_server_pull_s(double weight_bytes, const ClusterTopology& t);

// Keras multi_gpu_model: the other devices send their gradients to the first one, which
// reduces them and sends the updated weights back: 2(r-1) buffers through the first
// device's link, one after another (its link is the bottleneck), plus two latencies.
double gather_on_first_time_s(double bytes, const ClusterTopology& t);

}  // namespace xpusim::parallel
