// The ICI network of one TPU board as the every-core simulation uses it (issue 32): the chips on
// their grid (the board's slice shape, e.g. 2x2 for a v2-8), one directed link per neighbouring
// chip pair and direction (two when a dimension of two wraps), one on-chip port per ordered
// pair of TensorCores of a chip, and dimension-order routes between any two cores. Chips are
// numbered along a snake over the grid (consecutive chips are neighbours) and core i sits on chip
// i / cores_per_chip, so the ring 0 -> 1 -> ... -> n-1 -> 0 of the all-reduce crosses each chip
// link once per direction. No SystemC here: the
// links' timing lives in core_sim.hpp (IciLink), this is the wiring, testable on its own.
#pragma once
#include <string>
#include <vector>

#include "sim/tpu/tpu_spec.hpp"

namespace xpusim::tpu {

struct IciNetwork {
  struct Link {
    int from_chip = 0, to_chip = 0;
    int dim = -1;            // torus dimension it runs along; -1: an on-chip port between two cores
    int dir = 0;             // +1 / -1: the way it runs along `dim`
    int from_core = -1, to_core = -1;  // on-chip ports only
    std::string name;        // "chip0->chip1 (x+)", "chip0: core0->core1"
  };
  std::vector<int> dims;     // chips per dimension, fastest first
  std::vector<bool> wrap;    // per dimension: closed into a ring by wraparound links
  int cores_per_chip = 1;
  int cores = 1;             // cores taking part (may be fewer than the grid holds)
  double link_bytes_per_s = 0;  // every link, one direction
  double hop_latency_s = 0;     // per link crossed
  std::vector<Link> links;
  std::vector<std::vector<int>> chip_coords;  // per chip (snake order): its grid coordinates

  int chips() const { return static_cast<int>(chip_coords.size()); }
  int chip_of(int core) const { return core / cores_per_chip; }
  // Links a transfer from core a to core b crosses, in order: the on-chip port when both are
  // on one chip, else the chip links of dimension-order routing (lowest dimension first, the
  // shorter way round a wrapped dimension, ties the + way). Empty when a == b.
  std::vector<int> route(int a, int b) const;
};

// Chips `dims` (each wrapped or not), `cores` TensorCores placed cores_per_chip to a chip. The
// chips are numbered in reflected mixed-radix order (a snake; a dimension of two chips, if
// any, varies slowest so that the snake closes beside chip 0), all of them wired, and the
// cores sit on the first ceil(cores / cores_per_chip); only the ring's closing edge may take
// several hops (an odd line, or fewer cores than the board).
IciNetwork make_ici_network(const std::vector<int>& dims, const std::vector<bool>& wrap, int cores_per_chip, int cores,
                            double link_bytes_per_s, double hop_latency_s);

// The network of `cores` TensorCores of one board of `spec`: the board's chips on the offered
// slice shape with chips_per_board chips (wraparound as the slice's torus has it), else a line.
IciNetwork board_ici_network(const TpuSpec& spec, int cores);

}  // namespace xpusim::tpu
