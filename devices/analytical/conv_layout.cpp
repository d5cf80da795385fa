// NCHW layout transposes around tensor-core convolutions (conv_layout.hpp).
#include "devices/analytical/conv_layout.hpp"

#include <algorithm>

#include "models/dtype.hpp"

namespace xpusim::analytical {

namespace {
bool is_conv(OpKind k) {
  return k == OpKind::Conv2D || k == OpKind::Conv2DBackwardData || k == OpKind::Conv2DBackwardFilter;
}
}  // namespace

double nchw_transpose_bytes(const OpGraph& g, int op, const Rates& r) {
  const OpNode& n = g.op(op);
  if (!is_conv(n.kind) || r.tensor_flops_s <= 0) return 0.0;
  const OpNode& f = n.forward_op >= 0 ? g.op(n.forward_op) : n;  // backward ops share the forward geometry
  const Shape& xs = g.tensor(f.inputs[0]).desc.shape;
  const int64_t cin = xs.size() > 1 ? xs[1] / std::max(1, f.attrs.groups) : 1;
  if (cin < 8) return 0.0;  // op_cost's tensor-core test: the RGB stem runs NCHW on CUDA cores
  const double elems = static_cast<double>(g.tensor(f.inputs[0]).desc.numel() + g.tensor(f.outputs[0]).desc.numel());
  const double bytes = static_cast<double>(dtype_bytes(activation_dtype(g.precision)));
  return 2.0 * elems * bytes;  // each tensor read and written once
}

void add_nchw_transposes(const OpGraph& g, int op, const Rates& r, const OpCostModel& model, OpCost& c) {
  const double bytes = nchw_transpose_bytes(g, op, r);
  if (bytes <= 0) return;
  c.overhead_s += 2 * r.op_overhead_s + model.memory_seconds(bytes);
}

}  // namespace xpusim::analytical
