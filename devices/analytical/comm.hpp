// Data-parallel gradient exchange: ring all-reduce (NCCL) inside a host, hierarchical across
// hosts, or a parameter server on the host CPU. Pure functions of bytes and link specs so the
// unit tests can check them by hand.
#pragma once
#include <cstdint>
#include <string>

namespace xpusim::analytical {

struct CollectiveLinks {
  int replicas = 1;
  int devices_per_host = 1;
  double intra_bytes_s = 1;   // per device, one direction, efficiency applied
  double intra_latency_s = 0; // per hop
  double inter_bytes_s = 1;   // per host NIC
  double inter_latency_s = 0;
  bool parameter_server = false;
};

// Ring all-reduce of `bytes` over r devices: reduce-scatter + all-gather move 2(r-1)/r of the
// buffer through every device's link in 2(r-1) latency-bound steps (Patarasuk & Yuan 2009;
// NCCL's ring algorithm). Across hosts: intra-host ring, then a ring over the hosts' NICs
// carrying each host's 2(h-1)/h share. Parameter server: push of the gradient only (the
// weight pull happens once per step, see parameter_server_pull_s).
double allreduce_time_s(double bytes, const CollectiveLinks& l);
// Bandwidth one device gets for collectives inside a host, GB/s per direction: the system's
// link, capped by the device's own port where the topology runs over it (a Gen4 card in a
// Gen5 slot moves Gen4 rates; an A100 on an NVLink-4 switch moves NVLink-3 rates); a port of
// 0 means not stated (no cap). `nvlink_bridge_pairs`: GPUs bridged two by two; a pair
// exchanges over its bridge, a ring over more GPUs crosses PCIe between pairs and runs at
// the slowest hop (NCCL rings carry the same bytes over every hop).
double intra_host_gbps(const std::string& topology, double system_gbps, int local_devices, double device_pcie_gbps,
                       double device_nvlink_gbps);
// Parameter server: every device pulls the updated weights before the next forward pass.
double parameter_server_pull_s(double weight_bytes, const CollectiveLinks& l);

// Keras multi_gpu_model: the r-1 other devices send their gradients to the first one, which
// reduces them and sends the updated weights back: 2(r-1) buffers through the first
// device's link, one after another (its link is the bottleneck), plus two latencies.
double gather_on_first_time_s(double bytes, const CollectiveLinks& l);

}  // namespace xpusim::analytical
