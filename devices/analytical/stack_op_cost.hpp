// One op priced as a training or inference step pays for it on a framework stack: the kernel
// model's cost (op_cost.hpp) plus what the stack adds around that op (the NCHW layout
// transposes of conv_layout.hpp, the cuDNN workspace cap of conv_workspace.hpp, the fused
// BN + ReLU of bn_fusion.hpp). The engine's
// step and `predict --explain` both price ops through this one function, so a new per-stack
// addition cannot make the explained per-op times drift from the step's.
#pragma once
#include "devices/analytical/op_cost.hpp"
#include "engine/framework_spec.hpp"

namespace xpusim::analytical {

OpCost stack_op_cost(const OpGraph& g, int op, const Rates& rates, OpCostModel& model, const FrameworkSpec& fw);

}  // namespace xpusim::analytical
