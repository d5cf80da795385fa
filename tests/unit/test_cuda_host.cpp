// Host-side logic of the CUDA backend, tested without a GPU: the caching pool (with malloc
// as the raw allocator), the loss scaler state machine, the convolution algorithm pick rule
// and cache, and the engine's availability report when no device is present.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <set>

#include "common/error.hpp"
#include "devices/cuda/algo_cache.hpp"
#include "devices/cuda/caching_pool.hpp"
#include "devices/cuda/loss_scaler.hpp"
#include "devices/cuda/step_order.hpp"
#include "models/zoo.hpp"
#include "engine/engine.hpp"
#include "predict/predict.hpp"

using namespace xpusim;
using namespace xpusim::cuda;

namespace {
struct MallocCounter {
  int allocs = 0, frees = 0;
  size_t limit = size_t(-1), held = 0;
  std::map<void*, size_t> sizes;
  CachingPool make() {
    return CachingPool(
        [this](size_t n) -> void* {
          if (held + n > limit) return nullptr;
          void* p = std::malloc(n);
          ++allocs;
          held += n;
          sizes[p] = n;
          return p;
        },
        [this](void* p) {
          ++frees;
          held -= sizes[p];
          sizes.erase(p);
          std::free(p);
        },
        [](size_t asked, const PoolStats&) { throw UnavailableError("oom " + std::to_string(asked)); });
  }
};
}  // namespace

TEST_CASE("caching pool rounds sizes into few classes", "[cuda][pool]") {
  CHECK(CachingPool::round_size(0) == 512);
  CHECK(CachingPool::round_size(1) == 512);
  CHECK(CachingPool::round_size(512) == 512);
  CHECK(CachingPool::round_size(513) == 1024);
  CHECK(CachingPool::round_size((1 << 20) + 1) == (size_t{2} << 20));
  CHECK(CachingPool::round_size(size_t{5} << 20) == (size_t{6} << 20));
}

TEST_CASE("caching pool reuses freed blocks without calling the raw allocator", "[cuda][pool]") {
  MallocCounter m;
  {
    CachingPool pool = m.make();
    // Two "steps" allocating the same tensor sizes: the second is served from the cache.
    for (int step = 0; step < 2; ++step) {
      void* a = pool.allocate(1000);
      void* b = pool.allocate(3 << 20);
      void* c = pool.allocate(1000);
      CHECK(a != c);
      pool.release(a);
      pool.release(b);
      pool.release(c);
    }
    CHECK(m.allocs == 3);
    CHECK(pool.stats().raw_allocs == 3);
    CHECK(pool.stats().cache_hits == 3);
    CHECK(pool.stats().in_use_bytes == 0);
    CHECK(pool.stats().peak_in_use_bytes == 1024 + 1024 + (4 << 20));
    CHECK(pool.stats().reserved_bytes == 1024 + 1024 + (4 << 20));
    // A cached block up to twice the request is reused (a 1 KiB block for 512 B)...
    void* small = pool.allocate(100);
    CHECK(pool.block_size(small) == 1024);
    CHECK(m.allocs == 3);
    // ...but one more than twice is not: 4 MiB stays cached, ~1 MiB comes from the device.
    void* mid = pool.allocate((1 << 20) - 512);
    CHECK(pool.block_size(mid) == (1 << 20) - 512);
    CHECK(m.allocs == 4);
    pool.release(small);
    pool.release(mid);
    CHECK_THROWS_AS(pool.release(reinterpret_cast<void*>(0x1234)), InternalError);
  }
  CHECK(m.frees == m.allocs);  // the destructor returns everything
}

TEST_CASE("caching pool empties its cache before giving up, then reports out of memory", "[cuda][pool]") {
  MallocCounter m;
  m.limit = 8 << 20;
  CachingPool pool = m.make();
  void* a = pool.allocate(3 << 20);  // 4 MiB class
  pool.release(a);                    // cached
  void* b = pool.allocate(5 << 20);  // 6 MiB: only fits after the cached 4 MiB is freed
  CHECK(b != nullptr);
  CHECK(m.frees == 1);
  CHECK(pool.try_allocate(7 << 20) == nullptr);
  CHECK_THROWS_WITH(pool.allocate(7 << 20), Catch::Contains("oom 8388608"));
  pool.release(b);
}

TEST_CASE("dynamic loss scaler halves on overflow and grows after a clean interval", "[cuda][scaler]") {
  LossScalerOptions o;
  o.init_scale = 1024;
  o.growth_interval = 3;
  DynamicLossScaler s(o);
  CHECK(s.scale() == 1024);
  CHECK_FALSE(s.update(true));  // overflow: skip, halve
  CHECK(s.scale() == 512);
  CHECK(s.skipped_steps() == 1);
  CHECK(s.update(false));
  CHECK(s.update(false));
  CHECK(s.scale() == 512);
  CHECK(s.update(false));  // third clean step: double
  CHECK(s.scale() == 1024);
  CHECK_FALSE(s.update(true));
  CHECK(s.update(false));
  CHECK(s.update(false));  // counter restarted after the overflow
  CHECK(s.scale() == 512);
  for (int i = 0; i < 40; ++i) s.update(true);
  CHECK(s.scale() == o.min_scale);
  DynamicLossScaler off(o, false);
  CHECK(off.scale() == 1.0);
  off.update(true);
  CHECK(off.scale() == 1.0);
}

TEST_CASE("convolution algorithm: fastest that fits, found once per shape", "[cuda][algo]") {
  std::vector<AlgoCandidate> c = {
      {0, true, 2.0f, 0, 0}, {1, true, 1.0f, 900, 1}, {2, false, 0.5f, 0, 0}, {3, true, 1.0f, 100, 1}};
  CHECK(pick_algorithm(c, 1000) == 3);  // tie on time: smaller workspace
  CHECK(pick_algorithm(c, 50) == 0);    // the fast ones need more workspace
  CHECK(pick_algorithm({{0, false, 1.f, 0, 0}}, 1000) == -1);
  // fp32 asks for one math mode (FMA): a faster candidate in another mode (TF32-permitting
  // default math) is not eligible, and none in that mode means none at all.
  std::vector<AlgoCandidate> m = {{0, true, 2.f, 0, 1}, {1, true, 1.f, 0, 0}, {2, true, 3.f, 0, 1}};
  CHECK(pick_algorithm(m, 1000) == 1);
  CHECK(pick_algorithm(m, 1000, 1) == 0);
  CHECK(pick_algorithm({{1, true, 1.f, 0, 0}}, 1000, 1) == -1);

  AlgoCache cache;
  ConvKey k1;
  k1.n = 32, k1.c = 64, k1.h = k1.w = 56, k1.k = 64, k1.kernel_h = k1.kernel_w = 3;
  ConvKey k2 = k1;
  k2.dir = ConvDirection::backward_filter;
  int calls = 0;
  auto finder = [&] {
    ++calls;
    return AlgoChoice{calls, 0, 0};
  };
  CHECK(cache.get(k1, finder).algo == 1);
  CHECK(cache.get(k1, finder).algo == 1);
  CHECK(cache.get(k2, finder).algo == 2);
  CHECK(calls == 2);
  CHECK(cache.finds() == 2);
  CHECK(cache.hits() == 1);
  CHECK(cache.size() == 2);
}

TEST_CASE("cuda engine reports availability consistently with run_step", "[cuda][engine]") {
  auto e = make_engine("cuda");
  Availability a = e->availability();
  CHECK(a.compiled);
  if (a.available) {
    CHECK(a.reason.empty());
    return;  // the GPU tests (label gpu) exercise run_step on a device
  }
  CHECK_FALSE(a.reason.empty());
  PredictRequest r;
  r.model = "mnist_mlp";
  r.engine = "cuda";
  r.placement.device = "cuda";
  r.batch_per_device = 8;
  r.steps = 1;
  r.warmup = 0;
  try {
    predict(r);
    FAIL("run without a GPU should throw");
  } catch (const UnavailableError& err) {
    CHECK_THAT(err.what(), Catch::StartsWith("no CUDA device: ") && Catch::Contains(a.reason));
  }
}

TEST_CASE("cuda step order: every optimizer update after every gradient, the rest in graph order",
          "[cuda][step_order]") {
  // BERT pre-training ties the MLM decoder to the word table; the graph lists the NSP head's
  // update before the sum of the table's two gradients (seen on an H200 as "tensor
  // 'd(embeddings.word.weight).sum' has no buffer": the first update unscales every gradient).
  GraphOptions o;
  o.batch = 2;
  o.precision = Precision::mixed_fp16;
  OpGraph g = build_graph(find_model("bert_large_pretraining"), o);
  std::vector<int> in_graph = g.schedule();
  int first_update = -1, last_other = -1;
  for (size_t i = 0; i < in_graph.size(); ++i) {
    if (g.op(in_graph[i]).phase == Phase::update && first_update < 0) first_update = static_cast<int>(i);
    if (g.op(in_graph[i]).phase != Phase::update) last_other = static_cast<int>(i);
  }
  REQUIRE(first_update >= 0);
  CHECK(first_update < last_other);  // the case this order exists for

  std::vector<int> s = step_order(g);
  REQUIRE(s.size() == in_graph.size());
  CHECK(std::set<int>(s.begin(), s.end()).size() == s.size());
  std::vector<int> pos(s.size());
  for (size_t i = 0; i < s.size(); ++i) pos[static_cast<size_t>(s[i])] = static_cast<int>(i);
  bool updates_started = false, producers_first = true;
  for (int op : s) {
    bool upd = g.op(op).phase == Phase::update;
    CHECK((!updates_started || upd));  // no other op once the updates began
    updates_started = updates_started || upd;
    for (int t : g.op(op).inputs) {
      int p = g.tensor(t).producer;
      if (p >= 0 && pos[static_cast<size_t>(p)] > pos[static_cast<size_t>(op)]) producers_first = false;
    }
  }
  CHECK(producers_first);
  // Stable: the non-update ops keep the graph's order.
  std::vector<int> others_in_graph, others_here;
  for (int op : in_graph)
    if (g.op(op).phase != Phase::update) others_in_graph.push_back(op);
  for (int op : s)
    if (g.op(op).phase != Phase::update) others_here.push_back(op);
  CHECK(others_in_graph == others_here);
}
