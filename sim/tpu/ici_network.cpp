// Wiring of a board's ICI network (see ici_network.hpp): the snake numbering of the chips, the
// directed links and the dimension-order routes.
#include "sim/tpu/ici_network.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>

#include "common/error.hpp"
#include "sim/tpu/slice.hpp"

namespace xpusim::tpu {

namespace {

const char* kDimNames = "xyzw";

// Chip k of the snake: the reflected mixed-radix Gray code of k (dimension 0 fastest). Digit d
// runs backwards while the count of completed passes along it, k / (d_0 x ... x d_d), is odd,
// so consecutive chips differ by one step in one coordinate.
std::vector<int> snake_coords(const std::vector<int>& dims, int k) {
  std::vector<int> c(dims.size());
  long long below = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    const long long digit = (k / below) % dims[d];
    const long long passes = k / (below * dims[d]);
    c[d] = static_cast<int>(passes % 2 ? dims[d] - 1 - digit : digit);
    below *= dims[d];
  }
  return c;
}

}  // namespace

std::vector<int> IciNetwork::route(int a, int b) const {
  std::vector<int> hops;
  if (a == b) return hops;
  const int ca = chip_of(a), cb = chip_of(b);
  if (ca == cb) {
    for (size_t i = 0; i < links.size(); ++i)
      if (links[i].dim < 0 && links[i].from_core == a && links[i].to_core == b)
        return {static_cast<int>(i)};
    throw InternalError("ici route: no on-chip port from core " + std::to_string(a) + " to core " + std::to_string(b));
  }
  std::vector<int> at = chip_coords[static_cast<size_t>(ca)];
  const std::vector<int>& to = chip_coords[static_cast<size_t>(cb)];
  int chip = ca;
  for (size_t d = 0; d < dims.size(); ++d) {
    while (at[d] != to[d]) {
      const int n = dims[d];
      const int fwd = ((to[d] - at[d]) % n + n) % n;  // hops the + way round
      int step = to[d] > at[d] ? 1 : -1;
      if (wrap[d]) step = fwd <= n - fwd ? 1 : -1;
      std::vector<int> next = at;
      next[d] = ((at[d] + step) % n + n) % n;
      int next_chip = -1;
      for (int k = 0; k < chips(); ++k)
        if (chip_coords[static_cast<size_t>(k)] == next) next_chip = k;
      if (next_chip < 0) throw InternalError("ici route: the route leaves the chips taking part");
      int link = -1;
      for (size_t i = 0; i < links.size(); ++i) {
        const Link& l = links[i];
        // The + and - links of a wrapped dimension of two join the same chips: the + way takes
        // the link named x+, the - way x-.
        if (l.dim == static_cast<int>(d) && l.from_chip == chip && l.to_chip == next_chip && l.dir == step) {
          link = static_cast<int>(i);
          break;
        }
      }
      if (link < 0) throw InternalError("ici route: no link from chip " + std::to_string(chip) + " to " + std::to_string(next_chip));
      hops.push_back(link);
      at = next;
      chip = next_chip;
    }
  }
  return hops;
}

IciNetwork make_ici_network(const std::vector<int>& dims, const std::vector<bool>& wrap, int cores_per_chip, int cores,
                            double link_bytes_per_s, double hop_latency_s) {
  if (dims.empty() || dims.size() != wrap.size() || dims.size() > 4 || cores_per_chip < 1 || cores < 1)
    throw InternalError("make_ici_network: bad shape");
  IciNetwork net;
  net.dims = dims;
  net.wrap = wrap;
  net.cores_per_chip = cores_per_chip;
  net.cores = cores;
  net.link_bytes_per_s = link_bytes_per_s;
  net.hop_latency_s = hop_latency_s;
  long long grid = 1;
  for (int d : dims) grid *= d;
  // Every chip of the grid is wired (a route may cross a chip whose cores take no part); the
  // cores sit on the first ceil(cores / cores_per_chip) chips of the snake.
  if ((cores + cores_per_chip - 1) / cores_per_chip > grid) throw InternalError("make_ici_network: more cores than the grid holds");
  const int chips = static_cast<int>(grid);
  // The snake closes into a ring of neighbours when its slowest dimension has two chips (its
  // second pass retraces the first backwards, ending beside chip 0): such a dimension, if
  // any, is made the slowest (a 2x4 board snakes along its 4, comes back along the other row).
  std::vector<size_t> order(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) order[d] = d;
  for (size_t d = dims.size(); d-- > 0;)  // the slowest such dimension: a 2x2 keeps its order
    if (dims[d] == 2) {
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(d));
      order.push_back(d);
      break;
    }
  std::vector<int> permuted;
  for (size_t d : order) permuted.push_back(dims[d]);
  for (int k = 0; k < chips; ++k) {
    const std::vector<int> p = snake_coords(permuted, k);
    std::vector<int> c(dims.size());
    for (size_t i = 0; i < order.size(); ++i) c[order[i]] = p[i];
    net.chip_coords.push_back(c);
  }
  auto chip_at = [&](const std::vector<int>& c) {
    for (int k = 0; k < chips; ++k)
      if (net.chip_coords[static_cast<size_t>(k)] == c) return k;
    return -1;
  };
  for (int k = 0; k < chips; ++k) {
    // On-chip ports: every ordered pair of this chip's cores that take part.
    for (int a = k * cores_per_chip; a < std::min(cores, (k + 1) * cores_per_chip); ++a)
      for (int b = k * cores_per_chip; b < std::min(cores, (k + 1) * cores_per_chip); ++b)
        if (a != b)
          net.links.push_back({k, k, -1, 0, a, b, "chip" + std::to_string(k) + ": core" + std::to_string(a) + "->core" + std::to_string(b)});
    // Chip links: to the + and - neighbour of every dimension, where one exists among the chips
    // taking part (a wraparound link only where the dimension wraps).
    for (size_t d = 0; d < dims.size(); ++d) {
      for (int step : {1, -1}) {
        std::vector<int> c = net.chip_coords[static_cast<size_t>(k)];
        int v = c[d] + step;
        if (v < 0 || v >= dims[d]) {
          if (!wrap[d] || dims[d] < 2) continue;
          v = (v + dims[d]) % dims[d];
        }
        c[d] = v;
        const int to = chip_at(c);
        if (to < 0 || to == k) continue;
        net.links.push_back({k, to, static_cast<int>(d), step, -1, -1,
                             "chip" + std::to_string(k) + "->chip" + std::to_string(to) + " (" + kDimNames[d] + (step > 0 ? "+" : "-") + ")"});
      }
    }
  }
  return net;
}

IciNetwork board_ici_network(const TpuSpec& spec, int cores) {
  std::vector<int> dims{spec.chips_per_board};
  std::vector<bool> wrap{false};
  for (const auto& shape : spec.slice_shapes) {
    long long n = 1;
    for (int s : shape) n *= s;
    if (n != spec.chips_per_board) continue;
    const TpuSlice slice = tpu_slice(spec, shape);
    dims.clear();
    wrap.clear();
    for (const auto& d : slice.torus.dims) {
      dims.push_back(d.size);
      wrap.push_back(d.wrap);
    }
    break;
  }
  return make_ici_network(dims, wrap, spec.cores_per_chip, cores, spec.ici_link_bandwidth_gbps * 1e9,
                          spec.ici_latency_us * 1e-6);
}

}  // namespace xpusim::tpu
