// Batch norm + (residual add) + ReLU as one kernel under mixed precision (bn_fusion.hpp).
#include "devices/analytical/bn_fusion.hpp"

namespace xpusim::analytical {

namespace {
int producer_kind_is(const OpGraph& g, int tensor, OpKind k) {
  const int p = g.tensor(tensor).producer;
  return p >= 0 && g.op(p).kind == k ? p : -1;
}
bool is_relu(const OpNode& n) { return n.kind == OpKind::Activation && n.attrs.act == ActivationFn::relu; }
// An add of two tensors one of which a forward BN wrote.
bool adds_bn_output(const OpGraph& g, const OpNode& n) {
  if (n.kind != OpKind::Add || n.phase != Phase::forward || n.inputs.size() != 2) return false;
  return producer_kind_is(g, n.inputs[0], OpKind::BatchNorm) >= 0 || producer_kind_is(g, n.inputs[1], OpKind::BatchNorm) >= 0;
}
// A forward ReLU whose input a BN wrote, or an add of a BN's output wrote (the fused kernel's
// epilogue). Returns 0 (not fused), 1 (after the BN) or 2 (after a residual add).
int fused_relu(const OpGraph& g, const OpNode& n) {
  if (!is_relu(n) || n.phase != Phase::forward || n.inputs.empty()) return 0;
  if (producer_kind_is(g, n.inputs[0], OpKind::BatchNorm) >= 0) return 1;
  const int add = producer_kind_is(g, n.inputs[0], OpKind::Add);
  return add >= 0 && adds_bn_output(g, g.op(add)) ? 2 : 0;
}
double tensor_bytes(const OpGraph& g, int t) { return static_cast<double>(g.tensor(t).desc.bytes()); }
}  // namespace

BnFusionRole bn_fusion_role(const OpGraph& g, int op) {
  if (g.precision != Precision::mixed_fp16 && g.precision != Precision::mixed_bf16) return BnFusionRole::none;
  const OpNode& n = g.op(op);
  if (fused_relu(g, n) > 0) return BnFusionRole::absorbed;
  if (adds_bn_output(g, n)) {
    // Fused only where a ReLU consumes the sum (ResNet's block output). The graph's consumer
    // index holds the sum's readers: O(degree) per add, not a scan of every op.
    for (int o : g.consumers(n.outputs[0])) {
      const OpNode& c = g.op(o);
      if (is_relu(c) && c.phase == Phase::forward && c.inputs[0] == n.outputs[0]) return BnFusionRole::side_input;
    }
    return BnFusionRole::none;
  }
  if (n.kind == OpKind::ActivationBackward && n.forward_op >= 0) {
    const int how = fused_relu(g, g.op(n.forward_op));
    if (how == 1) return BnFusionRole::grad_absorbed;
    if (how == 2) return BnFusionRole::grad_absorbed_residual;
  }
  return BnFusionRole::none;
}

void apply_bn_fusion(const OpGraph& g, int op, const OpCostModel& model, OpCost& c) {
  const BnFusionRole role = bn_fusion_role(g, op);
  if (role == BnFusionRole::none) return;
  const OpNode& n = g.op(op);
  const OpClass cls = c.cls;
  double bytes = 0;
  switch (role) {
    case BnFusionRole::none:
    case BnFusionRole::absorbed: break;  // the BN kernel writes the activated output instead of its own
    case BnFusionRole::side_input:
      // The shortcut (the input a BN did not write) is read by the BN kernel.
      for (int t : n.inputs)
        if (producer_kind_is(g, t, OpKind::BatchNorm) < 0) bytes += tensor_bytes(g, t);
      break;
    case BnFusionRole::grad_absorbed_residual:
      bytes += tensor_bytes(g, n.outputs[0]);  // the shortcut's gradient, written by the BN backward
      [[fallthrough]];
    case BnFusionRole::grad_absorbed:
      // y (the ReLU's output, its input besides dy) read by the BN backward kernel.
      if (n.inputs.size() > 1) bytes += tensor_bytes(g, n.inputs[1]);
      break;
  }
  c = OpCost{};
  c.cls = cls;
  c.memory_s = bytes > 0 ? model.memory_seconds(bytes) : 0.0;
}

}  // namespace xpusim::analytical
