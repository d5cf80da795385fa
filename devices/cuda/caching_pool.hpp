// A caching allocator for device memory: blocks freed during a training step go back to a
// free list and are handed out again for the next request of the same rounded size, so
// the steady state makes no cudaMalloc/cudaFree calls (which synchronise the device).
// The raw allocator is a callback, so the caching logic is plain C++ and unit-tested on the
// host with malloc. Single stream per pool: a block released after its last use has been
// enqueued may be reused by later work on the same stream (stream order keeps it safe).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

namespace xpusim::cuda {

struct PoolStats {
  int64_t in_use_bytes = 0;         // handed out and not yet released
  int64_t reserved_bytes = 0;       // obtained from the raw allocator (in use + cached)
  int64_t peak_in_use_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t raw_allocs = 0;           // calls to the raw allocator that succeeded
  int64_t cache_hits = 0;           // requests served from the free list
};

class CachingPool {
 public:
  // raw_alloc returns nullptr when the device is out of memory; raw_free never fails.
  // out_of_memory is called (and must throw) when a request cannot be met even after the
  // cache has been emptied; it receives the rounded size asked for.
  using RawAlloc = std::function<void*(size_t)>;
  using RawFree = std::function<void(void*)>;
  using OutOfMemory = std::function<void(size_t bytes_asked, const PoolStats&)>;

  CachingPool(RawAlloc a, RawFree f, OutOfMemory oom);
  ~CachingPool();
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;

  void* allocate(size_t bytes);  // bytes == 0 gives a valid minimum-size block
  // As allocate, but returns nullptr instead of calling out_of_memory (optional scratch).
  void* try_allocate(size_t bytes);
  void release(void* p);         // InternalError on a pointer the pool did not hand out
  void empty_cache();            // return every cached free block to the raw allocator
  size_t block_size(void* p) const;
  const PoolStats& stats() const { return stats_; }
  void reset_peaks();

  // Rounding: 512 B granules below 1 MiB, 2 MiB granules above, so that the sizes of one
  // model's tensors fall into few classes and blocks are reusable across steps.
  static size_t round_size(size_t bytes);

 private:
  void* allocate_impl(size_t bytes, bool may_fail);
  RawAlloc raw_alloc_;
  RawFree raw_free_;
  OutOfMemory oom_;
  std::multimap<size_t, void*> free_;          // size -> cached block
  std::unordered_map<void*, size_t> live_;     // handed-out block -> its size
  PoolStats stats_;
};

}  // namespace xpusim::cuda
