#include "devices/analytical/comm.hpp"

#include <algorithm>

namespace xpusim::analytical {

namespace {
double ring_s(double bytes, int r, double bw, double lat) {
  if (r <= 1) return 0;
  return 2.0 * (r - 1) / r * bytes / bw + 2.0 * (r - 1) * lat;
}
}  // namespace

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
