// Cluster YAMLs (configs/clusters/) and the per-GPU links they give (cluster.hpp).
#include "parallel/cluster.hpp"

#include <algorithm>
#include <filesystem>

#include "common/config_paths.hpp"
#include "parallel/tpu_cluster.hpp"

namespace xpusim::parallel {

namespace {

std::string positive(double v) { return v > 0 ? "" : "must be > 0"; }
std::string share(double v) { return v > 0 && v <= 1 ? "" : "must be in (0, 1]"; }

ClusterSpec read_cluster(SpecReader& r, const std::string& path) {
  ClusterSpec c;
  c.file = path;
  c.name = r.text("name", std::nullopt, "cluster name, as a plan request's cluster and a reference row's setup give it");
  c.description = r.text("description", std::string(""), "one line");
  c.source = r.text("source", std::string(""), "where the figures come from");
  const std::string node = r.text("node", std::nullopt, "the system one node is (configs/systems/)");
  c.node = find_system(node, "node");
  if (r.has("devices")) {
    YAML::Node d = r.child("devices", "devices the nodes hold (default: the node system's)");
    if (!d.IsSequence()) r.fail("devices", "expected a list of device names");
    for (const auto& e : d) {
      if (!e.IsScalar()) r.fail("devices", "expected a list of device names");
      if (std::find(c.node.devices.begin(), c.node.devices.end(), e.Scalar()) == c.node.devices.end())
        r.fail("devices", "node system '" + c.node.name + "' does not hold device '" + e.Scalar() + "'");
      c.devices.push_back(e.Scalar());
    }
  } else {
    r.child("devices", "devices the nodes hold (default: the node system's)");
    c.devices = c.node.devices;
  }
  if (c.devices.empty()) r.fail("devices", "the cluster holds no device");
  c.default_device = r.text("default_device", c.devices.front(), "device used when a request names none");
  if (std::find(c.devices.begin(), c.devices.end(), c.default_device) == c.devices.end())
    r.fail("default_device", "'" + c.default_device + "' is not one of the cluster's devices");
  c.max_nodes = static_cast<int>(r.integer("max_nodes", std::nullopt, "nodes", "nodes in the cluster",
                                           [](long long v) { return v > 0 && v <= 1 << 20 ? "" : "must be in [1, 1048576]"; }));
  c.nics_per_node = static_cast<int>(r.integer("nics_per_node", std::nullopt, "NICs", "network adapters per node",
                                               [](long long v) { return v > 0 ? "" : "must be > 0"; }));
  c.nic_gbits = r.number("nic_gbits", std::nullopt, "Gb/s", "line rate of one NIC, one direction", positive);
  c.network = r.text("network", std::nullopt, "fabric", {"infiniband", "roce"}) == "roce" ? NetworkKind::roce
                                                                                           : NetworkKind::infiniband;
  c.topology = r.text("topology", std::string("fat_tree"), "network topology", {"rail_optimized", "fat_tree"}) ==
                       "rail_optimized"
                   ? NetworkTopology::rail_optimized
                   : NetworkTopology::fat_tree;
  c.oversubscription = r.number("oversubscription", 1.0, "x", "leaf uplink oversubscription (1 = non-blocking)",
                                [](double v) { return v >= 1 ? "" : "must be >= 1"; });
  c.latency_us = r.number("latency_us", 5.0, "us", "node-to-node latency of one message", [](double v) {
    return v >= 0 ? "" : "must be >= 0";
  });
  c.intra_bus_efficiency = r.number("intra_bus_efficiency", 0.8, "x",
                                    "NCCL bus bandwidth over the NVLink rate for large collectives", share);
  c.inter_bus_efficiency = r.number("inter_bus_efficiency", 0.9, "x",
                                    "NCCL bus bandwidth over the NIC line rate for large collectives", share);
  r.finish();
  return c;
}

}  // namespace

ClusterSpec load_cluster_spec(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_config_yaml(path);
  apply_overrides(root, overrides, "set");
  SpecReader r(root, path);
  return read_cluster(r, path);
}

ClusterSpec find_cluster(const std::string& name_or_path, const std::string& field,
                         const std::vector<std::string>& overrides) {
  return load_cluster_spec(find_config_file("clusters", name_or_path, field, "cluster"), overrides);
}

bool cluster_exists(const std::string& name) {
  if (name.empty()) return false;
  std::error_code ec;
  // A TPU slice name (v5e-256, tpu_v5e_256_multislice) is a cluster too (tpu_cluster.hpp).
  return std::filesystem::exists(resolve_config("clusters", name), ec) || parse_tpu_cluster_name(name).has_value();
}

std::vector<FieldDoc> cluster_spec_fields(const std::string& path) {
  YAML::Node root = load_config_yaml(path);
  SpecReader r(root, path);
  read_cluster(r, path);
  return r.docs();
}

LlmNetwork llm_network(const ClusterSpec& c, const DevicePorts& ports) {
  LlmNetwork n;
  n.devices_per_node = c.devices_per_node();
  // A PCIe node of cards without peer-to-peer (GeForce) stages every hop through host memory:
  // the node's staging bandwidth is shared, as the analytical engine prices it (topology.hpp).
  const double intra_gbps = intra_node_gbps(c.node.intra_host.topology, c.node.intra_host.bandwidth_gbps,
                                            c.devices_per_node(), ports, c.node.host.staging_gbps);
  n.intra.bytes_s = std::max(1e-3, intra_gbps) * 1e9 * c.intra_bus_efficiency;
  n.intra.latency_s = c.node.intra_host.latency_us * 1e-6;
  // Each GPU's share of the node's NICs (a rail-optimized node gives each GPU its own NIC);
  // a fat tree's oversubscribed uplinks divide what crosses leaves.
  const double node_bytes_s = c.nics_per_node * c.nic_gbits * 1e9 / 8.0;
  n.inter.bytes_s = node_bytes_s / c.devices_per_node() * c.inter_bus_efficiency /
                    (c.topology == NetworkTopology::fat_tree ? c.oversubscription : 1.0);
  n.inter.latency_s = c.latency_us * 1e-6;
  return n;
}

}  // namespace xpusim::parallel
