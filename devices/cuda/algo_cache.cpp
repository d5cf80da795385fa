// Algorithm pick rule and cache (see algo_cache.hpp).
#include "devices/cuda/algo_cache.hpp"

namespace xpusim::cuda {

int pick_algorithm(const std::vector<AlgoCandidate>& c, size_t limit, int only_math_type) {
  int best = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c[i].ok || c[i].workspace_bytes > limit) continue;
    if (only_math_type != -1 && c[i].math_type != only_math_type) continue;
    // Ties go to the smaller workspace: the same speed for less memory.
    if (best < 0 || c[i].time_ms < c[static_cast<size_t>(best)].time_ms ||
        (c[i].time_ms == c[static_cast<size_t>(best)].time_ms &&
         c[i].workspace_bytes < c[static_cast<size_t>(best)].workspace_bytes))
      best = static_cast<int>(i);
  }
  return best;
}

const AlgoChoice& AlgoCache::get(const ConvKey& key, const std::function<AlgoChoice()>& find) {
  auto it = map_.find(key);
  if (it != map_.end()) {
    ++hits_;
    return it->second;
  }
  ++finds_;
  return map_.emplace(key, find()).first->second;
}

}  // namespace xpusim::cuda
