// Static memory plan for the executor: every tensor gets an offset in one arena, and
// tensors whose lifetimes (first to last step that touches them) do not overlap may share
// addresses, the way frameworks free activations and gradients as soon as their last
// consumer ran. Offsets are assigned greedy by size (largest tensor first, each at the
// best-fitting gap among the tensors already placed whose lifetimes overlap its own;
// Pisarchuk & Ivanov, "Efficient Memory Management for Deep Neural Net Inference", 2020),
// which packs far tighter than reusing whole freed buffers: a freed 50 MB activation can
// hold two 25 MB ones. Views (reshape) alias the storage of the tensor they view.
#pragma once
#include <cstdint>
#include <vector>

#include "models/graph.hpp"

namespace xpusim::cpu {

// One execution step as the planner sees it: the tensors it reads and writes. Normally one
// op; a fused group of ops (fusion.hpp) is one step that never touches the tensors passed
// between its members.
struct PlanStep {
  std::vector<int> reads, writes;
};

// The graph's schedule, one op per step.
std::vector<PlanStep> schedule_steps(const OpGraph& g);

struct MemoryPlan {
  std::vector<int64_t> offset;     // tensor -> offset in floats into the arena; -1: no storage
  int64_t arena_floats = 0;        // size of the arena
  int64_t peak_live_floats = 0;    // most floats live during one step (a lower bound on the arena)
};

// `share` = false gives every tensor storage of its own (gradient checks read every
// intermediate tensor after the step). `floats` (per tensor, optional) overrides the
// storage size, in floats, of each tensor (default: its element count). `steps` (optional)
// is the execution order (default schedule_steps(g)); with `share`, a non-persistent tensor
// that no step touches gets no storage (offset -1).
MemoryPlan plan_memory(const OpGraph& g, bool share, const std::vector<int64_t>& floats = {},
                       const std::vector<PlanStep>* steps = nullptr);

}  // namespace xpusim::cpu
