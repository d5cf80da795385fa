// Per-op prices for `predict --explain` (see explain.hpp).
#include "devices/analytical/explain.hpp"

#include "devices/analytical/op_cost.hpp"
#include "devices/analytical/rates.hpp"
#include "devices/analytical/stack_op_cost.hpp"

namespace xpusim::analytical {

std::vector<OpExplain> explain_ops(const OpGraph& g, const DeviceSpec& d, const FrameworkSpec& fw, int count,
                                   std::optional<CpuBuild> build) {
  const Rates rates = stack_rates(d, g.precision, build.value_or(d.default_build), count, fw);
  OpCostModel model(rates);
  std::vector<OpExplain> out;
  for (int op : g.schedule()) {
    const OpNode& n = g.op(op);
    const OpCost c = stack_op_cost(g, op, rates, model, fw);  // as the engine prices the step
    if (c.cls == OpClass::none || c.cls == OpClass::communication) continue;
    OpExplain e;
    e.name = n.name;
    e.kind = op_kind_name(n.kind);
    e.op_class = op_class_name(c.cls);
    e.time_s = c.time_s();
    e.math_s = c.waves > 0 ? c.math_s : c.compute_s;
    e.memory_s = c.memory_s;
    e.launch_s = c.overhead_s;
    e.tile_m = c.tile_m, e.tile_n = c.tile_n, e.waves = c.waves, e.wave_efficiency = c.wave_efficiency;
    e.unaligned = c.unaligned;
    out.push_back(e);
  }
  return out;
}

}  // namespace xpusim::analytical
