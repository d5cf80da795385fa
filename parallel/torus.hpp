// ICI tori and closed-form collectives over them (issue 32): the TPU pod's 2D/3D torus, its
// dimensions with or without wraparound links, and all-reduce / all-gather / reduce-scatter
// priced from bytes, dimension sizes and per-link bandwidth -- no loop over chips, so a
// 6,144-chip slice costs the same to price as a board. Pure functions, checked by hand in
// tests/unit/test_torus.cpp; the TPU slice shapes that build these tori are sim/tpu/slice.hpp.
#pragma once
#include <vector>

namespace xpusim::parallel {

struct TorusDim {
  int size = 1;       // chips along the dimension
  bool wrap = false;  // a wraparound link closes the dimension into a ring
  // Share of the dimension's links one group's ring gets: 1 for a group that owns the
  // dimension, 1/i for the i strided sub-rings that split it (tpu_llm.hpp's mesh groups).
  double share = 1.0;
};

struct Torus {
  std::vector<TorusDim> dims;
  double link_bytes_per_s = 0;  // one ICI link, one direction
  double hop_latency_s = 0;     // per ring step between neighbours

  long long chips() const;
  // Bandwidth one chip can drive into the collective on dimension i: a wrapped ring runs both
  // directions (two counter-rotating rings), a line only one ring folded onto itself.
  double dim_bytes_per_s(int i) const;
  // Hops of the longest shortest path (wrapped: size/2 per dimension, line: size-1).
  int diameter_hops() const;
};

enum class TorusCollective { all_reduce, all_gather, reduce_scatter };

struct CollectiveTime {
  double seconds = 0;
  double bandwidth_s = 0;  // the bytes term
  double latency_s = 0;    // the per-step term
};

// A collective of `bytes` per chip over the torus dimensions `over` (indices; empty: all).
// `bytes` is the full buffer: the all-reduce's input, the all-gather's output, the
// reduce-scatter's input. Each dimension's chips run rings; the buffer is spread over the
// dimensions concurrently (XLA's multi-axis collectives split it so that every link is busy),
// so the bytes term is
//     (N - 1) / N x bytes / sum_i B_i          (reduce-scatter, all-gather; all-reduce twice)
// with N the chips taking part and B_i = dim_bytes_per_s(i); the latency term is one hop per
// ring step, sum_i (n_i - 1) (twice for the all-reduce). A full torus's sum_i B_i is
// links_per_chip x link bandwidth: the "all-reduce bandwidth per pod" of the Cloud TPU docs
// divided by the pod's chips (tested per generation).
CollectiveTime torus_collective(const Torus& t, TorusCollective c, double bytes, const std::vector<int>& over = {});

// Data-center network between slices (multislice): a ring over `slices` slices in which every
// chip exchanges its shard through its host's NIC, shared by the host's chips.
struct Dcn {
  int slices = 1;
  double bytes_per_s_per_chip = 0;  // host NIC / chips per host
  double latency_s = 0;             // per ring step between hosts
};

// Multislice all-reduce of `bytes` per chip, hierarchical as XLA runs it over DCN: reduce-scatter
// inside each slice over ICI, all-reduce of the 1/N shard across slices over DCN, all-gather
// inside the slice. Returns ICI and DCN parts in one CollectiveTime (seconds = their sum).
struct MultisliceTime {
  CollectiveTime ici, dcn;
  double seconds() const { return ici.seconds + dcn.seconds; }
};
MultisliceTime multislice_all_reduce(const Torus& slice, const Dcn& dcn, double bytes);

// The DCN part alone: a ring all-reduce over dcn.slices of `shard_bytes` per chip,
//     2 (s - 1) / s x shard / bytes_per_s_per_chip + 2 (s - 1) x latency_s.
CollectiveTime dcn_all_reduce(const Dcn& dcn, double shard_bytes);

}  // namespace xpusim::parallel
