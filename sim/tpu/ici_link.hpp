// ICI links as SystemC channels (issue 32): one direction of one chip-to-chip link, or one
// on-chip port between two TensorCores of a chip, with its bandwidth and hop latency. A chunk
// crosses the links of its route (ici_network.hpp) cut-through: each link serialises it at its
// own bandwidth after the chunks that reserved it earlier (first come, first served), its head
// moves on one hop latency after it entered a link, and its tail cannot leave a link before
// it has arrived from the previous one. So one chunk over one free link takes
// latency + bytes / bandwidth, h free links latency x h + bytes / bandwidth, and chunks
// sharing a link queue behind each other: the time they wait is what the link costs them.
// Included by core_sim.hpp only. The links of an every-core run are plain objects created for
// that run, as its cores are (core_model.hpp: SystemC accepts no new primitive channel after
// elaboration), implementing a SystemC interface the cores call.
#pragma once
#include <systemc>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/tpu/ici_network.hpp"

namespace xpusim::tpu::detail {

struct IciLinkIf : virtual sc_core::sc_interface {
  struct Use {
    sc_core::sc_time start, end;  // the chunk occupies the link from start to end
  };
  // Reserves the link for a chunk of `bytes` whose head reaches it at `head` and whose tail
  // leaves the previous link at `tail` (== head at the source), `dur` = bytes / bandwidth.
  virtual Use carry(sc_core::sc_time head, sc_core::sc_time tail, sc_core::sc_time dur, double bytes) = 0;
};

class IciLink final : public IciLinkIf {
 public:
  explicit IciLink(std::string name) : name_(std::move(name)) {}
  Use carry(sc_core::sc_time head, sc_core::sc_time tail, sc_core::sc_time dur, double bytes) override {
    const sc_core::sc_time start = std::max(head, free_at_);
    const sc_core::sc_time end = std::max(start + dur, tail);
    free_at_ = end;
    queued_ += start - head;
    busy_ += end - start;
    bytes_ += bytes;
    return {start, end};
  }
  const std::string& name() const { return name_; }
  double busy_s() const { return busy_.to_seconds(); }
  double queued_s() const { return queued_.to_seconds(); }
  double bytes() const { return bytes_; }

 private:
  std::string name_;
  sc_core::sc_time free_at_, queued_, busy_;
  double bytes_ = 0;
};

// The links of one run and the routes of its ring (core i to i+1 and to i-1).
struct IciFabric {
  std::vector<std::unique_ptr<IciLink>> links;  // SystemC interfaces are not copyable
  std::vector<std::vector<int>> to_next, to_prev;  // per core: link ids of its routes
  sc_core::sc_time hop, zero;
  double bytes_per_s = 1;

  void build(const IciNetwork& net) {
    links.clear();
    for (const auto& l : net.links) links.push_back(std::make_unique<IciLink>(l.name));
    to_next.assign(static_cast<size_t>(net.cores), {});
    to_prev.assign(static_cast<size_t>(net.cores), {});
    for (int i = 0; i < net.cores; ++i) {
      to_next[static_cast<size_t>(i)] = net.route(i, (i + 1) % net.cores);
      to_prev[static_cast<size_t>(i)] = net.route(i, (i + net.cores - 1) % net.cores);
    }
    hop = sc_core::sc_time(net.hop_latency_s, sc_core::SC_SEC);
    bytes_per_s = net.link_bytes_per_s;
  }
  // Sends `bytes` from now along `route`: returns when its last byte arrives.
  sc_core::sc_time send(const std::vector<int>& route, double bytes) {
    sc_core::sc_time head = sc_core::sc_time_stamp(), tail = head;
    const sc_core::sc_time dur(bytes / bytes_per_s, sc_core::SC_SEC);
    for (int l : route) {
      const IciLinkIf::Use u = links[static_cast<size_t>(l)]->carry(head, tail, dur, bytes);
      head = u.start + hop;
      tail = u.end + hop;
    }
    return tail;
  }
};

}  // namespace xpusim::tpu::detail
