// Collective times on a cluster topology (formulas: collectives.hpp).
#include "parallel/collectives.hpp"

namespace xpusim::parallel {

double ring_allreduce_s(double bytes, int r, const Link& link) {
  if (r <= 1) return 0;
  return 2.0 * (r - 1) / r * bytes / link.bytes_s + 2.0 * (r - 1) * link.latency_s;
}

double allreduce_time_s(double bytes, const ClusterTopology& t) {
  if (t.devices <= 1 || bytes <= 0) return 0;
  double s = t.collective == Collective::parameter_server ? bytes / t.intra.bytes_s + t.intra.latency_s
                                                          : ring_allreduce_s(bytes, t.local_devices(), t.intra);
  s += ring_allreduce_s(bytes, t.nodes(), t.inter);
  return s;
}

double gather_on_first_time_s(double bytes, const ClusterTopology& t) {
  if (t.devices <= 1 || bytes <= 0) return 0;
  return 2.0 * (t.devices - 1) * bytes / t.intra.bytes_s + 2.0 * t.intra.latency_s;
}

double parameter_server_pull_s(double weight_bytes, const ClusterTopology& t) {
  if (t.collective != Collective::parameter_server || t.devices <= 1) return 0;
  return weight_bytes / t.intra.bytes_s + t.intra.latency_s;
}

}  // namespace xpusim::parallel
