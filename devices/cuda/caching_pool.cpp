// Caching allocator logic (see caching_pool.hpp). No CUDA here: the raw allocator is injected.
#include "devices/cuda/caching_pool.hpp"

#include <algorithm>

#include "common/error.hpp"

namespace xpusim::cuda {

namespace {
constexpr size_t kSmallGranule = 512;            // cudaMalloc aligns to 256 B; 512 keeps classes few
constexpr size_t kLargeThreshold = size_t{1} << 20;
constexpr size_t kLargeGranule = size_t{2} << 20;
}  // namespace

CachingPool::CachingPool(RawAlloc a, RawFree f, OutOfMemory oom)
    : raw_alloc_(std::move(a)), raw_free_(std::move(f)), oom_(std::move(oom)) {}

CachingPool::~CachingPool() {
  empty_cache();
  for (auto& [p, size] : live_) raw_free_(p);
}

size_t CachingPool::round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  size_t g = bytes < kLargeThreshold ? kSmallGranule : kLargeGranule;
  return (bytes + g - 1) / g * g;
}

void* CachingPool::allocate(size_t bytes) { return allocate_impl(bytes, false); }

void* CachingPool::try_allocate(size_t bytes) { return allocate_impl(bytes, true); }

void* CachingPool::allocate_impl(size_t bytes, bool may_fail) {
  const size_t size = round_size(bytes);
  // Best fit among cached blocks, but never more than twice the request: a large block
  // kept for a small tensor would be wasted for the rest of the run.
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= 2 * size) {
    void* p = it->second;
    size_t got = it->first;
    free_.erase(it);
    live_[p] = got;
    stats_.in_use_bytes += static_cast<int64_t>(got);
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    ++stats_.cache_hits;
    return p;
  }
  void* p = raw_alloc_(size);
  if (!p) {
    // Fragmentation across size classes: give the cache back and try once more.
    empty_cache();
    p = raw_alloc_(size);
  }
  if (!p) {
    if (may_fail) return nullptr;
    oom_(size, stats_);
    throw InternalError("caching pool: out-of-memory handler returned");
  }
  live_[p] = size;
  ++stats_.raw_allocs;
  stats_.reserved_bytes += static_cast<int64_t>(size);
  stats_.in_use_bytes += static_cast<int64_t>(size);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return p;
}

void CachingPool::release(void* p) {
  if (!p) return;
  auto it = live_.find(p);
  if (it == live_.end()) throw InternalError("caching pool: release of a pointer it did not allocate");
  stats_.in_use_bytes -= static_cast<int64_t>(it->second);
  free_.emplace(it->second, p);
  live_.erase(it);
}

void CachingPool::empty_cache() {
  for (auto& [size, p] : free_) {
    raw_free_(p);
    stats_.reserved_bytes -= static_cast<int64_t>(size);
  }
  free_.clear();
}

size_t CachingPool::block_size(void* p) const {
  auto it = live_.find(p);
  if (it == live_.end()) throw InternalError("caching pool: size of a pointer it did not allocate");
  return it->second;
}

void CachingPool::reset_peaks() {
  stats_.peak_in_use_bytes = stats_.in_use_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

}  // namespace xpusim::cuda
