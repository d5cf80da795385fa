#include "devices/cpu/memory_plan.hpp"

#include <algorithm>
#include <limits>

namespace xpusim::cpu {

namespace {
// Tensors that outlive one step or are read by the host after a forward pass.
bool persistent(const OpGraph& g, int t) {
  const Tensor& T = g.tensor(t);
  switch (T.role) {
    case TensorRole::input:
    case TensorRole::label:
    case TensorRole::weight:
    case TensorRole::optimizer_state:
    case TensorRole::loss:
      return true;
    default:
      break;
  }
  if (T.producer < 0) return true;
  return g.op(T.producer).kind == OpKind::SoftmaxCrossEntropy;  // probs: read for accuracy
}

constexpr int64_t kAlignFloats = 16;  // 64-byte alignment of every tensor (cache line, AVX-512 loads)
int64_t aligned(int64_t n) { return (std::max<int64_t>(1, n) + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

struct Item {
  int root;
  int64_t size;
  int first, last;  // step positions, inclusive
  int64_t offset = -1;
};
}  // namespace

std::vector<PlanStep> schedule_steps(const OpGraph& g) {
  std::vector<PlanStep> steps;
  for (int i : g.schedule()) steps.push_back({g.op(i).inputs, g.op(i).outputs});
  return steps;
}

MemoryPlan plan_memory(const OpGraph& g, bool share, const std::vector<int64_t>& floats,
                       const std::vector<PlanStep>* steps_in) {
  auto floats_of = [&](int t) {
    return floats.empty() ? g.tensor(t).desc.numel() : floats[static_cast<size_t>(t)];
  };
  const int nt = g.num_tensors();
  const std::vector<PlanStep> own = steps_in ? std::vector<PlanStep>{} : schedule_steps(g);
  const std::vector<PlanStep>& steps = steps_in ? *steps_in : own;
  // Root storage of each tensor: a view resolves to the tensor it reshapes.
  std::vector<int> root(static_cast<size_t>(nt));
  for (int t = 0; t < nt; ++t) root[static_cast<size_t>(t)] = t;
  for (int i : g.schedule()) {
    const OpNode& op = g.op(i);
    if (op.kind == OpKind::Reshape)
      root[static_cast<size_t>(op.outputs[0])] = root[static_cast<size_t>(op.inputs[0])];
  }
  // First and last step that touches each root (through the root or any view of it).
  const int end = std::max<int>(1, static_cast<int>(steps.size())) - 1;
  std::vector<int> first(static_cast<size_t>(nt), -1), last(static_cast<size_t>(nt), -1);
  for (size_t pos = 0; pos < steps.size(); ++pos)
    for (const auto* v : {&steps[pos].reads, &steps[pos].writes})
      for (int t : *v) {
        const auto r = static_cast<size_t>(root[static_cast<size_t>(t)]);
        if (first[r] < 0) first[r] = static_cast<int>(pos);
        last[r] = static_cast<int>(pos);
      }
  std::vector<Item> items;
  for (int t = 0; t < nt; ++t) {
    if (root[static_cast<size_t>(t)] != t) continue;
    const bool whole = !share || persistent(g, t);
    if (!whole && first[static_cast<size_t>(t)] < 0) continue;  // never touched: no storage
    Item it{t, aligned(floats_of(t)), whole ? 0 : first[static_cast<size_t>(t)],
            whole ? end : last[static_cast<size_t>(t)]};
    items.push_back(it);
  }
  MemoryPlan p;
  // Lower bound: the most bytes live at any one step.
  {
    std::vector<int64_t> delta(static_cast<size_t>(end) + 2, 0);
    for (const Item& it : items) {
      delta[static_cast<size_t>(it.first)] += it.size;
      delta[static_cast<size_t>(it.last) + 1] -= it.size;
    }
    int64_t live = 0;
    for (int64_t d : delta) p.peak_live_floats = std::max(p.peak_live_floats, live += d);
  }
  // Greedy by size: largest first (ties: earlier first, then tensor id, so the plan is
  // deterministic), each at the smallest gap that holds it among overlapping placed items.
  std::vector<size_t> order(items.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Item &x = items[a], &y = items[b];
    if (x.size != y.size) return x.size > y.size;
    if (x.first != y.first) return x.first < y.first;
    return x.root < y.root;
  });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, offset + size) of overlapping items
  for (size_t k : order) {
    Item& it = items[k];
    busy.clear();
    for (size_t q : placed) {
      const Item& o = items[q];
      if (o.first <= it.last && it.first <= o.last) busy.emplace_back(o.offset, o.offset + o.size);
    }
    std::sort(busy.begin(), busy.end());
    int64_t best = -1, best_gap = std::numeric_limits<int64_t>::max(), cursor = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo - cursor >= it.size && lo - cursor < best_gap) {
        best = cursor;
        best_gap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    it.offset = best >= 0 ? best : cursor;
    p.arena_floats = std::max(p.arena_floats, it.offset + it.size);
    placed.push_back(k);
  }
  p.offset.assign(static_cast<size_t>(nt), -1);
  for (const Item& it : items) p.offset[static_cast<size_t>(it.root)] = it.offset;
  for (int t = 0; t < nt; ++t) p.offset[static_cast<size_t>(t)] = p.offset[static_cast<size_t>(root[static_cast<size_t>(t)])];
  return p;
}

}  // namespace xpusim::cpu
