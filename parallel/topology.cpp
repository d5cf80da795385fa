// The cluster topology from a system spec: which link limits a device's collectives.
#include "parallel/topology.hpp"

#include <algorithm>

namespace xpusim::parallel {

namespace {
double capped(double link, double port) { return port > 0 ? std::min(link, port) : link; }
}  // namespace

double intra_node_gbps(Topology topology, double system_gbps, int local_devices, const DevicePorts& ports,
                       double staging_gbps) {
  // A PCIe hop: the slot capped by the card's port, and without peer-to-peer the card's share
  // of the host's staging bandwidth (the hop crosses the root complex into host memory).
  auto pcie = [&] {
    const double link = capped(system_gbps, ports.pcie_gbps);
    if (ports.pcie_peer_to_peer || staging_gbps <= 0) return link;
    return std::min(link, staging_gbps / std::max(1, local_devices));
  };
  switch (topology) {
    case Topology::nvlink_bridge_pairs:
      if (local_devices == 2 && ports.nvlink_gbps > 0) return ports.nvlink_gbps;
      return pcie();
    case Topology::pcie_tree: return pcie();
    case Topology::nvswitch: return capped(system_gbps, ports.nvlink_gbps);
    // The system's figure is already per device for these (a hybrid cube mesh's NVLinks, a
    // ring, a torus, a NIC).
    case Topology::none:
    case Topology::ring:
    case Topology::nvlink_hybrid_cube_mesh:
    case Topology::ici_torus:
    case Topology::ethernet: return system_gbps;
  }
  return system_gbps;
}

double collective_efficiency(double framework, double fabric, double device) {
  if (framework > 0) return framework;
  return fabric > 0 ? fabric : device;
}

ClusterTopology make_cluster_topology(const SystemSpec& sys, int devices, const DevicePorts& ports,
                                      double link_efficiency) {
  ClusterTopology t;
  t.devices = devices;
  t.devices_per_node = sys.devices_per_host;
  t.intra_topology = sys.intra_host.topology;
  const double intra_gbps = intra_node_gbps(sys.intra_host.topology, sys.intra_host.bandwidth_gbps,
                                            std::min(devices, sys.devices_per_host), ports, sys.host.staging_gbps);
  t.intra.bytes_s = std::max(1e-3, intra_gbps) * 1e9 * link_efficiency;
  t.intra.latency_s = sys.intra_host.latency_us * 1e-6;
  t.inter.bytes_s = std::max(1e-3, sys.inter_host.bandwidth_gbps) * 1e9 * link_efficiency;
  t.inter.latency_s = sys.inter_host.latency_us * 1e-6;
  t.collective = sys.collective;
  return t;
}

}  // namespace xpusim::parallel
