// One op priced as the step pays for it on a framework stack (stack_op_cost.hpp).
#include "devices/analytical/stack_op_cost.hpp"

#include "devices/analytical/conv_layout.hpp"

namespace xpusim::analytical {

OpCost stack_op_cost(const OpGraph& g, int op, const Rates& rates, OpCostModel& model, const FrameworkSpec& fw) {
  OpCost c = model.visit(g, op);
  if (fw.nchw_activations) add_nchw_transposes(g, op, rates, model, c);
  return c;
}

}  // namespace xpusim::analytical
