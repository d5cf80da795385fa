// The TPU trace's queue-depth counters (sim/tpu/trace_queue_counters.cpp) on hand-made
// changes: the maximum depth held in each bin, a point only where it changes, a DMA run
// expanded burst by burst, several changes at one time counted as the last, values before the
// grid setting the first bin, values after it ignored, the end-of-step depth as the last point.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/tpu/trace_queue_counters.hpp"

using xpusim::tpu::Queue;

namespace {

std::string point(int core, const std::string& queue, const std::string& ts_us, int depth) {
  return "{\"ph\":\"C\",\"pid\":" + std::to_string(core) + ",\"name\":\"" + queue + "_queue_depth\",\"ts\":" + ts_us +
         ",\"args\":{\"depth\":" + std::to_string(depth) + "}}";
}

}  // namespace

TEST_CASE("queue-depth counters keep each bin's maximum", "[tpu][trace][queue_counters]") {
  // Grid 0..10 s in 10 bins of 1 s; listed out of (core, queue) order on purpose.
  const xpusim::tpu::QueueDepthLog changes = {
      {1, Queue::hbm_read, 1, 1, 0.0, 0.0},
      // Bursts 4, 3, 2, 1 at 0.5, 1.0, 1.5, 2.0 s (one record of a transfer alone on the channel), empty at 3.2 s.
      {0, Queue::hbm_read, 4, 4, 0.5, 0.5},
      {0, Queue::hbm_read, 0, 1, 3.2, 0.0},
      // The host adds a batch and the PCIe copy takes it at the same time: the queue held 0.
      {0, Queue::host, 1, 1, 0.5, 0.0},
      {0, Queue::host, 0, 1, 0.5, 0.0},
      // 2 before the grid, 1 at 9.5 s, 0 past its end (not in the step).
      {0, Queue::infeed, 2, 1, -1.0, 0.0},
      {0, Queue::infeed, 1, 1, 9.5, 0.0},
      {0, Queue::infeed, 0, 1, 11.0, 0.0},
  };
  std::vector<std::string> got;
  xpusim::tpu::write_queue_counters(changes, 0.0, 10.0, 10, [&](const std::string& e) { got.push_back(e); });
  // hbm_read: bin 0 max(0, 4) = 4; bin 1 starts with the 3 set at 1.0 s (4 is not held in it),
  // then 2 -> 3; bin 2: 1; bin 3: 1 until 3.2 s -> 1 (unchanged, no point); bins 4..9: 0.
  // infeed: 2 from before the grid, 1 at 9.5 s -> bins 0..9 hold max 2; ends the step at 1.
  const std::vector<std::string> want = {
      point(0, "hbm_read", "0.000000", 4),       point(0, "hbm_read", "1000000.000000", 3),
      point(0, "hbm_read", "2000000.000000", 1), point(0, "hbm_read", "4000000.000000", 0),
      point(0, "host", "0.000000", 0),           point(0, "infeed", "0.000000", 2),
      point(0, "infeed", "10000000.000000", 1),  point(1, "hbm_read", "0.000000", 1),
  };
  CHECK(got == want);
}

TEST_CASE("queue-depth counters need a grid and changes", "[tpu][trace][queue_counters]") {
  std::vector<std::string> got;
  auto sink = [&](const std::string& e) { got.push_back(e); };
  xpusim::tpu::write_queue_counters({}, 0.0, 1.0, 10, sink);
  xpusim::tpu::write_queue_counters({{0, Queue::host, 1, 1, 0.0, 0.0}}, 1.0, 1.0, 10, sink);
  CHECK(got.empty());
  CHECK(xpusim::tpu::queue_counter_name(Queue::hbm_write) == "hbm_write_queue_depth");
  CHECK(xpusim::tpu::queue_counter_name(Queue::infeed) == "infeed_queue_depth");
}
