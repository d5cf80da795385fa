#include "devices/cpu/memory_plan.hpp"

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
}  // namespace

MemoryPlan plan_memory(const OpGraph& g, bool share, const std::vector<int64_t>& floats) {
  // Storage of tensor t in floats: the caller's figure where given (bf16 storage takes half).
  auto floats_of = [&](int t) {
    return floats.empty() ? g.tensor(t).desc.numel() : floats[static_cast<size_t>(t)];
  };
  const int nt = g.num_tensors();
  // Root storage of each tensor: a view resolves to the tensor it reshapes.
  std::vector<int> root(static_cast<size_t>(nt));
  for (int t = 0; t < nt; ++t) root[static_cast<size_t>(t)] = t;
  std::vector<int> order = g.schedule();
  for (int i : order) {
    const OpNode& op = g.op(i);
    if (op.kind == OpKind::Reshape)
      root[static_cast<size_t>(op.outputs[0])] = root[static_cast<size_t>(op.inputs[0])];
  }
  // Last schedule position that touches each root.
  std::vector<int> last(static_cast<size_t>(nt), -1);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const OpNode& op = g.op(order[pos]);
    for (int t : op.inputs) last[static_cast<size_t>(root[static_cast<size_t>(t)])] = static_cast<int>(pos);
    for (int t : op.outputs) last[static_cast<size_t>(root[static_cast<size_t>(t)])] = static_cast<int>(pos);
  }
  MemoryPlan p;
  p.block_of.assign(static_cast<size_t>(nt), -1);
  std::vector<bool> is_root_persistent(static_cast<size_t>(nt), false);
  for (int t = 0; t < nt; ++t)
    if (root[static_cast<size_t>(t)] == t && (persistent(g, t) || !share)) {
      is_root_persistent[static_cast<size_t>(t)] = true;
      p.block_of[static_cast<size_t>(t)] = static_cast<int>(p.block_floats.size());
      p.block_floats.push_back(std::max<int64_t>(1, floats_of(t)));
    }
  std::vector<int> free_blocks;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const OpNode& op = g.op(order[pos]);
    for (int t : op.outputs) {
      if (root[static_cast<size_t>(t)] != t || p.block_of[static_cast<size_t>(t)] >= 0) continue;
      int64_t need = std::max<int64_t>(1, floats_of(t));
      // Best fit: the smallest free block that is large enough, else a new block.
      int best = -1;
      for (size_t k = 0; k < free_blocks.size(); ++k) {
        int b = free_blocks[k];
        if (p.block_floats[static_cast<size_t>(b)] >= need &&
            (best < 0 || p.block_floats[static_cast<size_t>(b)] <
                             p.block_floats[static_cast<size_t>(free_blocks[static_cast<size_t>(best)])]))
          best = static_cast<int>(k);
      }
      int block;
      if (best >= 0) {
        block = free_blocks[static_cast<size_t>(best)];
        free_blocks.erase(free_blocks.begin() + best);
      } else {
        block = static_cast<int>(p.block_floats.size());
        p.block_floats.push_back(need);
      }
      p.block_of[static_cast<size_t>(t)] = block;
    }
    // Release roots whose last use is this op (after its outputs were placed, so an op
    // never writes into a buffer it reads).
    std::vector<int> touched = op.inputs;
    touched.insert(touched.end(), op.outputs.begin(), op.outputs.end());
    for (int t : touched) {
      int r = root[static_cast<size_t>(t)];
      if (is_root_persistent[static_cast<size_t>(r)] || last[static_cast<size_t>(r)] != static_cast<int>(pos)) continue;
      int b = p.block_of[static_cast<size_t>(r)];
      if (b < 0) continue;
      bool already = false;
      for (int f : free_blocks) already = already || f == b;
      if (!already) free_blocks.push_back(b);
      last[static_cast<size_t>(r)] = std::numeric_limits<int>::max();  // released once
    }
  }
  for (int t = 0; t < nt; ++t) {
    int r = root[static_cast<size_t>(t)];
    if (p.block_of[static_cast<size_t>(r)] < 0) {  // never produced nor consumed: own block
      p.block_of[static_cast<size_t>(r)] = static_cast<int>(p.block_floats.size());
      p.block_floats.push_back(std::max<int64_t>(1, floats_of(r)));
    }
    p.block_of[static_cast<size_t>(t)] = p.block_of[static_cast<size_t>(r)];
  }
  return p;
}

}  // namespace xpusim::cpu
