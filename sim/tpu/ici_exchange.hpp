// The gradient all-reduce of an every-core run as an exchange between the cores (CoreSim's
// ring steps): at the formula's time per step (placements past a board), or with each step's
// chunks crossing the board's ICI links (ici_link.hpp). Included by core_model.cpp after
// core_sim.hpp.
#pragma once
#include "sim/tpu/core_sim.hpp"

namespace xpusim::tpu::detail {

// The all-reduce as an exchange around the ring of cores 0 -> 1 -> ... -> n-1 -> 0. In
// each of its 2(n-1) steps a core sends one chunk to each neighbour (half of the buffer
// travels each way) and starts the next step only when both neighbours' chunks of this
// step have arrived: a core that enters late holds its neighbours back, and after n-1
// steps every core, so no core leaves the all-reduce before every core has entered it.
// Used past a board (a traced slice), where the links are not simulated: a step takes
// 1/(2(n-1)) of the formula's time at the slice's closed-form rates (slice_ring_rates). That time is rounded to the
// kernel's picosecond once, as the one-core run rounds it, and split in whole picoseconds
// so that the steps add up to it exactly: symmetric cores leave the exchange at the
// picosecond the formula gives, and a trace predicts the same step as the run without one.
inline void CoreSim::ring_allreduce(sc_time total, int n) {
  const uint64_t S = 2 * static_cast<uint64_t>(n - 1);
  const uint64_t D = total.value();
  CoreSim& next = *b.cores[static_cast<size_t>((index + 1) % n)];
  CoreSim& prev = *b.cores[static_cast<size_t>((index + n - 1) % n)];
  for (uint64_t s = 0; s < S; ++s) {
    sc_core::wait(sc_time::from_value(D * (s + 1) / S - D * s / S));
    // Immediate notification: a neighbour already waiting resumes in this delta cycle, so
    // the exchange ends in the same delta as the formula's wait would.
    ++next.from_prev;
    next.ring_ev.notify();
    ++prev.from_next;
    prev.ring_ev.notify();
    ++ring_steps;
    while (from_prev < ring_steps || from_next < ring_steps) sc_core::wait(ring_ev);
  }
}

// The all-reduce over the board's ICI links: the same ring and steps as ring_allreduce, but
// in each step the core sends half of its chunk (bytes/n) to each neighbour over their routes
// (ici_link.hpp), and moves on when both neighbours' chunks have arrived. A chunk arrives one
// hop latency per link plus its serialisation after it was sent, later when a link on its way
// is busy: on a board whose ring crosses each link once per direction, 2(n-1) x (latency +
// bytes / (2 n link)), the formula's time at ici_bytes_per_s = 2 x link (tested).
inline void CoreSim::link_allreduce(double bytes, int n, int op, int step) {
  const uint64_t S = 2 * static_cast<uint64_t>(n - 1);
  const double half = bytes / n / 2;
  CoreSim& next = *b.cores[static_cast<size_t>((index + 1) % n)];
  CoreSim& prev = *b.cores[static_cast<size_t>((index + n - 1) % n)];
  const auto i = static_cast<size_t>(index);
  for (uint64_t s = 0; s < S; ++s) {
    const sc_time to_next = b.fabric.send(b.fabric.to_next[i], half);
    const sc_time to_prev = b.fabric.send(b.fabric.to_prev[i], half);
    next.in_prev.push_back(to_next);
    next.ring_ev.notify();
    prev.in_next.push_back(to_prev);
    prev.ring_ev.notify();
    const auto k = static_cast<size_t>(ring_steps++);
    // Until this core's own chunks have arrived it is sending, not waiting.
    const sc_time mine = std::max(to_next, to_prev);
    if (mine > sc_core::sc_time_stamp()) sc_core::wait(mine - sc_core::sc_time_stamp());
    const sc_time w0 = sc_core::sc_time_stamp();
    while (in_prev.size() <= k || in_next.size() <= k) {
      if (sig) sig->ici_wait.write(true);
      sc_core::wait(ring_ev);
    }
    const sc_time arrive = std::max(in_prev[k], in_next[k]);
    if (arrive > sc_core::sc_time_stamp()) {
      if (sig) sig->ici_wait.write(true);
      sc_core::wait(arrive - sc_core::sc_time_stamp());
    }
    const sc_time w1 = sc_core::sc_time_stamp();
    if (w1 > w0) {
      if (sig) sig->ici_wait.write(false);
      ici_wait_in_step[static_cast<size_t>(step)] += (w1 - w0).to_seconds();
      if (b.want_trace && step == cfg->steps - 1)
        b.ici_waits.push_back({index, op, (w0 - b.t0).to_seconds(), (w1 - b.t0).to_seconds()});
    }
  }
}

}  // namespace xpusim::tpu::detail
