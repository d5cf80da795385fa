#include "devices/analytical/comm.hpp"

#include <algorithm>

namespace xpusim::analytical {

namespace {
double ring_s(double bytes, int r, double bw, double lat) {
  if (r <= 1) return 0;
  return 2.0 * (r - 1) / r * bytes / bw + 2.0 * (r - 1) * lat;
}
double capped(double link, double port) { return port > 0 ? std::min(link, port) : link; }
}  // namespace

double intra_host_gbps(const std::string& topology, double system_gbps, int local_devices, double device_pcie_gbps,
                       double device_nvlink_gbps) {
  if (topology == "nvlink_bridge_pairs" && local_devices == 2 && device_nvlink_gbps > 0) return device_nvlink_gbps;
  if (topology == "pcie_tree" || topology == "nvlink_bridge_pairs") return capped(system_gbps, device_pcie_gbps);
  if (topology == "nvswitch") return capped(system_gbps, device_nvlink_gbps);
  return system_gbps;
}

double allreduce_time_s(double bytes, const CollectiveLinks& l) {
  if (l.replicas <= 1 || bytes <= 0) return 0;
  const int local = std::min(l.replicas, l.devices_per_host);
  const int hosts = (l.replicas + l.devices_per_host - 1) / l.devices_per_host;
  double t = l.parameter_server ? bytes / l.intra_bytes_s + l.intra_latency_s
                                : ring_s(bytes, local, l.intra_bytes_s, l.intra_latency_s);
  t += ring_s(bytes, hosts, l.inter_bytes_s, l.inter_latency_s);
  return t;
}

double gather_on_first_time_s(double bytes, const CollectiveLinks& l) {
  if (l.replicas <= 1 || bytes <= 0) return 0;
  return 2.0 * (l.replicas - 1) * bytes / l.intra_bytes_s + 2.0 * l.intra_latency_s;
}

double parameter_server_pull_s(double weight_bytes, const CollectiveLinks& l) {
  if (!l.parameter_server || l.replicas <= 1) return 0;
  return weight_bytes / l.intra_bytes_s + l.intra_latency_s;
}

}  // namespace xpusim::analytical
