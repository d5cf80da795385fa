// Convolutions under a framework's cuDNN workspace cap (conv_workspace.hpp).
#include "devices/analytical/conv_workspace.hpp"

#include "devices/analytical/winograd.hpp"
#include "models/dtype.hpp"

namespace xpusim::analytical {

double conv_fast_workspace_bytes(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  if (n.kind != OpKind::Conv2D && n.kind != OpKind::Conv2DBackwardData && n.kind != OpKind::Conv2DBackwardFilter)
    return 0.0;
  const OpNode& f = n.forward_op >= 0 ? g.op(n.forward_op) : n;  // backward ops share the forward geometry
  const OpAttrs& a = f.attrs;
  const bool fast = a.kernel_h == a.kernel_w && (a.kernel_h == 3 || a.kernel_h == 5) && a.stride_h == 1 &&
                    a.stride_w == 1 && a.dilation_h == 1 && a.dilation_w == 1 && a.groups == 1;
  if (!fast) return 0.0;
  const double elems = static_cast<double>(g.tensor(f.inputs[0]).desc.numel() + g.tensor(f.outputs[0]).desc.numel());
  return kWinogradNonfused3x3.tile_expansion() * elems * static_cast<double>(dtype_bytes(activation_dtype(g.precision)));
}

void apply_conv_workspace_cap(const OpGraph& g, int op, const Rates& r, OpCost& c) {
  if (!r.kernel_model || r.conv_workspace_limit_bytes <= 0 || r.conv_capped_efficiency >= 1.0) return;
  if (conv_fast_workspace_bytes(g, op) <= r.conv_workspace_limit_bytes) return;
  // The implicit GEMM the cap leaves runs its math slower; its memory traffic is the same.
  c.compute_s /= r.conv_capped_efficiency;
  c.math_s /= r.conv_capped_efficiency;
}

}  // namespace xpusim::analytical
