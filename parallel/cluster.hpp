// A cluster: N nodes of one system (configs/systems/, a DGX or HGX node with its NVLink /
// NVSwitch fabric) joined by an inter-node network (NICs per node x Gb/s, InfiniBand or RoCE,
// latency, rail-optimized or fat-tree with oversubscription), parsed once from
// configs/clusters/NAME.yaml. The large-model planner prices its hierarchical collectives
// on the links this gives (llm_network), never on the YAML strings.
#pragma once
#include <string>
#include <vector>

#include "common/spec_reader.hpp"
#include "engine/platform_spec.hpp"
#include "parallel/topology.hpp"

namespace xpusim::parallel {

enum class NetworkKind { infiniband, roce };
enum class NetworkTopology { rail_optimized, fat_tree };

struct ClusterSpec {
  std::string name, description, source, file;
  SystemSpec node;                   // the system one node is (devices, NVLink fabric)
  std::vector<std::string> devices;  // devices the cluster's nodes hold (the node system's by default)
  std::string default_device;
  int max_nodes = 1;
  int nics_per_node = 1;
  double nic_gbits = 100;            // per NIC and direction, Gb/s
  NetworkKind network = NetworkKind::infiniband;
  NetworkTopology topology = NetworkTopology::fat_tree;
  double oversubscription = 1.0;     // leaf uplink oversubscription of the fat tree (1 = non-blocking)
  double latency_us = 5;             // one hop node to node, NIC to NIC
  // NCCL bus bandwidth over the link rate (nccl-tests' busbw definition): what a large
  // collective reaches on each fabric. Documented network constants (docs/parallel.md).
  double intra_bus_efficiency = 0.8;
  double inter_bus_efficiency = 0.9;

  int devices_per_node() const { return node.devices_per_host; }
  int max_devices() const { return max_nodes * node.devices_per_host; }
};

// configs/clusters/NAME.yaml or a path; FieldError(field) naming the known clusters when unknown.
ClusterSpec find_cluster(const std::string& name_or_path, const std::string& field = "cluster",
                         const std::vector<std::string>& overrides = {});
ClusterSpec load_cluster_spec(const std::string& path, const std::vector<std::string>& overrides = {});
// Whether configs/clusters/NAME.yaml exists or NAME is a TPU slice name (tpu_cluster.hpp)
// (validation: a row's setup may name a cluster).
bool cluster_exists(const std::string& name);
std::vector<FieldDoc> cluster_spec_fields(const std::string& path);

// The two fabrics one GPU of the cluster sees: NVLink/NVSwitch inside a node (the node
// system's per-GPU rate capped by the device's own port, bus efficiency applied) and its
// share of the node's NICs between nodes (bus efficiency and oversubscription applied).
struct LlmNetwork {
  int devices_per_node = 8;
  Link intra;
  Link inter;
};
LlmNetwork llm_network(const ClusterSpec& c, const DevicePorts& ports);

}  // namespace xpusim::parallel
