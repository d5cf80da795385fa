// Closed-form collectives over an ICI torus and across slices (torus.hpp has the formulas).
#include "parallel/torus.hpp"

#include <string>

#include "common/error.hpp"

namespace xpusim::parallel {

long long Torus::chips() const {
  long long n = 1;
  for (const auto& d : dims) n *= d.size;
  return n;
}

double Torus::dim_bytes_per_s(int i) const {
  const TorusDim& d = dims.at(static_cast<size_t>(i));
  return link_bytes_per_s * (d.wrap ? 2.0 : 1.0) * d.share;
}

int Torus::diameter_hops() const {
  int h = 0;
  for (const auto& d : dims) h += d.wrap ? d.size / 2 : d.size - 1;
  return h;
}

CollectiveTime torus_collective(const Torus& t, TorusCollective c, double bytes, const std::vector<int>& over) {
  std::vector<int> idx = over;
  if (idx.empty())
    for (size_t i = 0; i < t.dims.size(); ++i) idx.push_back(static_cast<int>(i));
  double n = 1, bw = 0, steps = 0;
  for (int i : idx) {
    if (i < 0 || static_cast<size_t>(i) >= t.dims.size())
      throw InternalError("torus_collective: no dimension " + std::to_string(i));
    const int s = t.dims[static_cast<size_t>(i)].size;
    if (s <= 1) continue;  // a dimension of one chip moves nothing
    n *= s;
    bw += t.dim_bytes_per_s(i);
    steps += s - 1;
  }
  CollectiveTime r;
  if (n <= 1 || bytes <= 0) return r;
  if (bw <= 0) throw InternalError("torus_collective: no link bandwidth");
  const double passes = c == TorusCollective::all_reduce ? 2.0 : 1.0;
  r.bandwidth_s = passes * (n - 1) / n * bytes / bw;
  r.latency_s = passes * steps * t.hop_latency_s;
  r.seconds = r.bandwidth_s + r.latency_s;
  return r;
}

MultisliceTime multislice_all_reduce(const Torus& slice, const Dcn& dcn, double bytes) {
  MultisliceTime m;
  const CollectiveTime rs = torus_collective(slice, TorusCollective::reduce_scatter, bytes);
  const CollectiveTime ag = torus_collective(slice, TorusCollective::all_gather, bytes);
  m.ici.bandwidth_s = rs.bandwidth_s + ag.bandwidth_s;
  m.ici.latency_s = rs.latency_s + ag.latency_s;
  m.ici.seconds = rs.seconds + ag.seconds;
  m.dcn = dcn_all_reduce(dcn, bytes / static_cast<double>(slice.chips()));
  return m;
}

CollectiveTime dcn_all_reduce(const Dcn& dcn, double shard_bytes) {
  CollectiveTime r;
  if (dcn.slices <= 1 || shard_bytes <= 0) return r;
  if (dcn.bytes_per_s_per_chip <= 0) throw InternalError("dcn_all_reduce: no DCN bandwidth");
  const double s = dcn.slices;
  r.bandwidth_s = 2 * (s - 1) / s * shard_bytes / dcn.bytes_per_s_per_chip;
  r.latency_s = 2 * (s - 1) * dcn.latency_s;
  r.seconds = r.bandwidth_s + r.latency_s;
  return r;
}

}  // namespace xpusim::parallel
