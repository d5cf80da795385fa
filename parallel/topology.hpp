// The cluster a multi-device step runs on, as the collective cost model sees it: devices per
// node, the intra-node fabric (its Topology enum, bandwidth per device, latency per hop) and the
// inter-node network, built once from a SystemSpec and the device's own link ports.
// Collectives (collectives.hpp) are priced on this, never on the YAML strings.
#pragma once
#include "engine/platform_spec.hpp"

namespace xpusim::parallel {

// One kind of link as a collective uses it: bytes/s per device and direction (efficiency
// applied) and latency per hop.
struct Link {
  double bytes_s = 1;
  double latency_s = 0;
};

struct ClusterTopology {
  int devices = 1;            // devices taking part in the step (today: the data-parallel replicas)
  int devices_per_node = 1;   // devices in one host, sharing the intra-node fabric
  Topology intra_topology = Topology::none;
  Link intra;                 // between the devices of one node (NVLink, NVSwitch, PCIe)
  Link inter;                 // between nodes, per node NIC
  Collective collective = Collective::ring;

  int local_devices() const { return devices < devices_per_node ? devices : devices_per_node; }
  int nodes() const { return (devices + devices_per_node - 1) / devices_per_node; }
};

// A device's own ports a collective may run over, GB/s per direction; 0 = not stated (no cap).
struct DevicePorts {
  double pcie_gbps = 0;
  double nvlink_gbps = 0;
  // false: the card cannot address its peers over PCIe (GeForce Ampere/Ada), so NCCL stages
  // every PCIe hop through host memory and the node's GPUs share the host's staging bandwidth.
  bool pcie_peer_to_peer = true;
};

// Bandwidth one device gets for collectives inside a node, GB/s per direction: the system's
// link, capped by the device's own port where the topology runs over it (a Gen4 card in a
// Gen5 slot moves Gen4 rates; an A100 on an NVLink-4 switch moves NVLink-3 rates).
// `nvlink_bridge_pairs`: GPUs bridged two by two; a pair exchanges over its bridge, a ring over
// more GPUs crosses PCIe between pairs and runs at the slowest hop (NCCL rings carry the same
// bytes over every hop).
// A card without PCIe peer-to-peer (`ports.pcie_peer_to_peer` false) gets at most
// `staging_gbps / local_devices` over PCIe when `staging_gbps` > 0: its ring hops go up to host
// memory and back down, and all the node's GPUs share the root complexes (issue 29).
double intra_node_gbps(Topology topology, double system_gbps, int local_devices, const DevicePorts& ports,
                       double staging_gbps = 0);

// The share of the link a gradient collective reaches, from the most specific source that sets
// one: the stack (a framework profile's allreduce_efficiency: its collective library), then the
// fabric (the system's intra_host.allreduce_efficiency: what the era's library reaches over
// that fabric), then the device (fitted on the 2017 stacks, NCCL 1.x on the DGX-1). 0 = not set.
double collective_efficiency(double framework, double fabric, double device);

// The topology of `devices` devices of the system, each link's rate scaled by
// `link_efficiency` (the device's achieved share of the link for collectives). A rate of 0 in
// the YAML (no such link) is floored at 1 MB/s so a time stays finite.
ClusterTopology make_cluster_topology(const SystemSpec& system, int devices, const DevicePorts& ports,
                                      double link_efficiency);

}  // namespace xpusim::parallel
