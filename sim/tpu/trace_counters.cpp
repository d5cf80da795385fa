// Bandwidth counter tracks of the TPU trace (trace_counters.hpp).
#include "sim/tpu/trace_counters.hpp"
#include "sim/tpu/trace_text.hpp"

#include <algorithm>

namespace xpusim::tpu {

bool BandwidthCounters::counts(Unit u) {
  return u == Unit::dma_in || u == Unit::dma_out || u == Unit::ici || u == Unit::infeed;
}

void BandwidthCounters::add(int core, Unit unit, double start_s, double end_s, double bytes) {
  const double dur = end_s - start_s;
  if (!counts(unit) || !(dur > 0)) return;
  tracks_[{core, static_cast<int>(unit)}].push_back({start_s, end_s, bytes / dur / 1e9});
}

bool BandwidthCounters::grid(double& t0, double& t1) const {
  if (tracks_.empty()) return false;
  t0 = tracks_.begin()->second.front().start_s, t1 = t0;
  for (const auto& [key, v] : tracks_)
    for (const auto& i : v) t0 = std::min(t0, i.start_s), t1 = std::max(t1, i.end_s);
  return t1 > t0;
}

void BandwidthCounters::write(const std::function<void(const std::string&)>& event) const {
  // One time grid for every track, so the cores' and units' counters line up.
  double t0 = 0, t1 = 0;
  if (!grid(t0, t1)) return;
  const double w = (t1 - t0) / kBins;
  if (!(w > 0)) return;
  std::vector<double> bytes(kBins);
  std::string body;
  for (const auto& [key, v] : tracks_) {
    // Each interval's bytes spread over the bins it covers, in proportion to the overlap.
    std::fill(bytes.begin(), bytes.end(), 0.0);
    for (const auto& i : v) {
      const double rate = i.gb_per_s * 1e9;
      const int first = std::clamp(static_cast<int>((i.start_s - t0) / w), 0, kBins - 1);
      const int last = std::clamp(static_cast<int>((i.end_s - t0) / w), 0, kBins - 1);
      for (int b = first; b <= last; ++b) {
        const double lo = std::max(i.start_s, t0 + b * w), hi = std::min(i.end_s, t0 + (b + 1) * w);
        if (hi > lo) bytes[static_cast<size_t>(b)] += rate * (hi - lo);
      }
    }
    const std::string head = "{\"ph\":\"C\",\"pid\":" + std::to_string(key.first) + ",\"name\":\"" +
                             unit_name(static_cast<Unit>(key.second)) + " GB/s\",\"ts\":";
    auto put = [&](double at_s, double gb_per_s) {
      body = head;
      put_us(body, at_s);
      body += ",\"args\":{\"GB/s\":";
      put_num(body, gb_per_s);
      body += "}}";
      event(body);
    };
    // A point where the value changes, and 0 at the end.
    double shown = -1;
    for (int b = 0; b < kBins; ++b) {
      const double gbps = bytes[static_cast<size_t>(b)] / w / 1e9;
      if (gbps != shown) put(t0 + b * w, gbps), shown = gbps;
    }
    if (shown != 0) put(t1, 0);
  }
}

}  // namespace xpusim::tpu
