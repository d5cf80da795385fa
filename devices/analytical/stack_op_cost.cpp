// One op priced as the step pays for it on a framework stack (stack_op_cost.hpp).
#include "devices/analytical/stack_op_cost.hpp"

#include "devices/analytical/bn_fusion.hpp"
#include "devices/analytical/conv_layout.hpp"
#include "devices/analytical/conv_workspace.hpp"

namespace xpusim::analytical {

OpCost stack_op_cost(const OpGraph& g, int op, const Rates& rates, OpCostModel& model, const FrameworkSpec& fw) {
  OpCost c = model.visit(g, op);
  if (fw.nchw_activations_for(g.precision)) add_nchw_transposes(g, op, rates, model, c);
  apply_conv_workspace_cap(g, op, rates, c);  // the stack's cuDNN workspace cap (rates carry it)
  // BN + (add) + ReLU in one kernel on 16-bit data: GPUs only (cuDNN's fused BN).
  if (fw.fused_bn_activation_half && rates.tensor_flops_s > 0) apply_bn_fusion(g, op, model, c);
  return c;
}

}  // namespace xpusim::analytical
