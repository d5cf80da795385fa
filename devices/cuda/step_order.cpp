// The cuda engine's op order for one step (see step_order.hpp).
#include "devices/cuda/step_order.hpp"

#include <algorithm>

namespace xpusim::cuda {

std::vector<int> step_order(const OpGraph& g) {
  std::vector<int> s = g.schedule();
  std::stable_partition(s.begin(), s.end(), [&](int op) { return g.op(op).phase != Phase::update; });
  return s;
}

}  // namespace xpusim::cuda
