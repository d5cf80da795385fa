// Counter tracks ("ph": "C") of the TPU trace: per TensorCore, the bandwidth each data-moving
// unit (HBM read and write DMA, ICI, infeed) runs at over the measured step, GB/s. Built from
// the same merged busy intervals the trace draws (trace_writer.cpp): a unit moves one interval's
// bytes over its duration, and nothing between intervals; those bytes are averaged over
// kBins equal bins of the step (one grid for every core and unit), and a point is written where
// the average changes. Drawing every interval's edges instead doubled the v2-8 ResNet-50
// trace (170k counter points for 154k events) and its write time. The area under a counter is
// still exactly the bytes moved. Kept apart from the event writer so each stays one purpose.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/tpu/program.hpp"

namespace xpusim::tpu {

class BandwidthCounters {
 public:
  // Whether `u` moves bytes (gets a counter track).
  static bool counts(Unit u);
  // One busy interval of `unit` on `core` that moved `bytes`; per (core, unit) in time order.
  void add(int core, Unit unit, double start_s, double end_s, double bytes);
  // The "C" events, per core, then unit, then time: the bin average where it changes, and 0 at
  // the end of the step. `event` writes one event's JSON object.
  void write(const std::function<void(const std::string&)>& event) const;
  // The time grid of the counters: [t0, t1] = the span of every track's intervals, cut into
  // kBins equal bins. False when nothing moved bytes (no grid, no counters).
  bool grid(double& t0, double& t1) const;
  static constexpr int kBins = 1000;

 private:
  struct Interval {
    double start_s, end_s, gb_per_s;
  };
  std::map<std::pair<int, int>, std::vector<Interval>> tracks_;
};

}  // namespace xpusim::tpu
