// Queue-depth counter tracks of the TPU trace (trace_queue_counters.hpp).
#include "sim/tpu/trace_queue_counters.hpp"
#include "sim/tpu/trace_text.hpp"

#include <algorithm>
#include <numeric>

namespace xpusim::tpu {

const std::string& queue_counter_name(Queue q) {
  // The VCD names the four queue depths right after the six busy flags.
  return vcd_signal_names().at(static_cast<size_t>(kNumUnits) + static_cast<size_t>(q));
}

void write_queue_counters(const QueueDepthLog& changes, double t0, double t1, int bins,
                          const std::function<void(const std::string&)>& event) {
  const double w = (t1 - t0) / bins;
  if (changes.empty() || !(w > 0)) return;
  // Per core, then queue; a stable sort keeps each track's changes in time order.
  std::vector<size_t> order(changes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto &x = changes[a], &y = changes[b];
    return x.core != y.core ? x.core < y.core : x.queue < y.queue;
  });
  std::string body;
  for (size_t i = 0; i < order.size();) {
    const QueueDepthChange& first = changes[order[i]];
    size_t end = i;
    while (end < order.size() && changes[order[end]].core == first.core && changes[order[end]].queue == first.queue) ++end;
    const std::string head = "{\"ph\":\"C\",\"pid\":" + std::to_string(first.core) + ",\"name\":\"" +
                             queue_counter_name(first.queue) + "\",\"ts\":";
    auto put = [&](double at_s, int depth) {
      body = head;
      put_us(body, at_s);
      body += ",\"args\":{\"depth\":" + std::to_string(depth) + "}}";
      event(body);
    };
    // Walk the track's values (a DMA run expanded burst by burst) against the bins: a value
    // before t0 only sets the depth the first bin starts with; one after t1 is past the step.
    int now = 0, peak = 0, shown = -1, bin = 0;
    auto close_bins_before = [&](double t) {
      // Ends every bin that ends at or before t: its peak is written where it changes.
      while (bin < bins && t >= t0 + (bin + 1) * w) {
        if (peak != shown) put(t0 + bin * w, peak), shown = peak;
        ++bin;
        peak = now;
      }
    };
    auto take = [&](double t, int depth) {
      close_bins_before(t);
      now = depth;
      // A change at (or before) the bin's start: the previous depth is not held in this bin.
      peak = t <= t0 + bin * w ? now : std::max(peak, now);
    };
    // Of several changes at one picosecond (delta cycles: the host adds a batch, the PCIe
    // thread takes it), only the last is a depth the queue held, as in the VCD.
    double held_t = 0;
    int held = -1;
    for (size_t k = i; k < end; ++k) {
      const QueueDepthChange& c = changes[order[k]];
      for (int n = 0; n < c.count; ++n) {
        const double t = c.start_s + n * c.interval_s;
        if (t > t1) break;
        if (held >= 0 && t != held_t) take(held_t, held);
        held_t = t, held = c.depth - n;
      }
    }
    if (held >= 0) take(held_t, held);
    close_bins_before(t1 + w);  // the rest of the bins hold the last depth
    if (now != shown) put(t1, now);
    i = end;
  }
}

}  // namespace xpusim::tpu
