// Operator fusion for the cpu executor, decided from op-graph patterns alone (no model
// names): an op's handler also runs the elementwise ops that consume its result when that
// result has no other reader, so the intermediate tensor is never written, read back or
// stored, and one parallel region replaces two or three (on a loaded machine every region
// is a wait for both threads to be scheduled). Patterns, fp32 and bf16 graphs (under bf16
// the executor rounds what a fused group writes, not the values passed inside it: conv or
// batch norm + ReLU gives the unfused result, as ReLU commutes with rounding; batch norm +
// add rounds once where the unfused ops round twice):
//   Conv2D -> ReLU          oneDNN eltwise post-op (conv + bias + ReLU of AlexNet, VGG)
//   MatMul -> ReLU          the same on the forward dense layers
//   BatchNorm [-> Add] [-> ReLU]   bn_kernel.hpp (ResNet's bn-relu and bn-add-relu)
//   ReLU backward -> BatchNormBackward   the kernel masks dy by the saved ReLU output
// oneDNN's conv + sum post-op would need the conv output to feed an Add directly; the zoo's
// CNNs put batch norm in between (that case is BatchNorm -> Add above), so it is not used.
// Gradients are unchanged: ReLU's backward reads the ReLU output in every case, and the
// skipped intermediates (conv output before ReLU, batch-norm output before the add) are
// read by no backward op (sole_reader checks that).
#include <algorithm>

#include "devices/cpu/runner.hpp"

namespace xpusim::cpu {

void Runner::plan_fusion(const std::vector<int>& order) {
  const int no = g_.num_ops();
  fusion.assign(static_cast<size_t>(no), Fusion{});
  run_as.resize(static_cast<size_t>(no));
  for (int i = 0; i < no; ++i) run_as[static_cast<size_t>(i)] = i;
  fused_ops = 0;
  fused_away.assign(static_cast<size_t>(g_.num_tensors()), 0);
  if (!opts.fuse_ops) return;
  // An intermediate value that exactly one op reads, once.
  auto sole_reader = [&](int t, int op) {
    const Tensor& T = g_.tensor(t);
    if (T.is_view || (T.role != TensorRole::activation && T.role != TensorRole::activation_grad)) return false;
    const auto& cons = g_.consumers(t);
    if (cons.size() != 1 || cons[0] != op) return false;
    return std::count(g_.op(op).inputs.begin(), g_.op(op).inputs.end(), t) == 1;
  };
  std::vector<char> claimed(static_cast<size_t>(no), 0);
  auto claim = [&](int op) { return claimed[static_cast<size_t>(op)] ? false : (claimed[static_cast<size_t>(op)] = 1, true); };
  // The ReLU that alone reads t (same phase as t's producer), or -1.
  auto relu_reading = [&](int t) {
    const auto& cons = g_.consumers(t);
    if (cons.size() != 1) return -1;
    const OpNode& a = g_.op(cons[0]);
    if (a.kind != OpKind::Activation || a.attrs.act != ActivationFn::relu || a.inputs[0] != t) return -1;
    if (a.phase != g_.op(g_.tensor(t).producer).phase || claimed[static_cast<size_t>(cons[0])]) return -1;
    return sole_reader(t, cons[0]) ? cons[0] : -1;
  };
  auto same_layout = [&](int a, int b) { return layout_block(a) == layout_block(b); };
  for (int i = 0; i < no; ++i) {
    const OpNode& op = g_.op(i);
    Fusion& f = fusion[static_cast<size_t>(i)];
    const bool fwd = op.phase == Phase::forward;
    if ((op.kind == OpKind::Conv2D && fwd) ||
        (op.kind == OpKind::MatMul && fwd && op.forward_op < 0 && op.outputs.size() == 1)) {
      const int y = op.outputs[0], a = relu_reading(y);
      if (a >= 0 && same_layout(y, g_.op(a).outputs[0]) && claim(a)) f.relu = a;
    } else if (op.kind == OpKind::BatchNorm && bn_own_kernel_fwd(i)) {
      int y = op.outputs[0];
      const auto& cons = g_.consumers(y);
      if (cons.size() == 1) {
        const OpNode& ad = g_.op(cons[0]);
        if (ad.kind == OpKind::Add && ad.inputs.size() == 2 && ad.phase == op.phase && sole_reader(y, cons[0])) {
          // Operands stored in another layout than x's pass through a copy (bn_operand, ops_dnnl.cpp).
          if (claim(cons[0])) {
            f.add = cons[0];
            y = ad.outputs[0];
          }
        }
      }
      const int a = relu_reading(y);
      if (a >= 0 && claim(a)) f.relu = a;
    } else if (op.kind == OpKind::BatchNormBackward && bn_own_kernel_bwd(i)) {
      const int dz = op.inputs[0], p = g_.tensor(dz).producer;
      if (p < 0) continue;
      const OpNode& ab = g_.op(p);
      if (ab.kind == OpKind::ActivationBackward && ab.attrs.act == ActivationFn::relu && ab.phase == op.phase &&
          sole_reader(dz, i) && claim(p))
        f.act_bwd = p;
    }
  }
  // Tensors passed inside a group: never written, so never read back (Executor::read).
  fused_away.assign(static_cast<size_t>(g_.num_tensors()), 0);
  for (int i = 0; i < no; ++i) {
    const Fusion& f = fusion[static_cast<size_t>(i)];
    if (f.relu >= 0 || f.add >= 0) fused_away[static_cast<size_t>(g_.op(i).outputs[0])] = 1;
    if (f.relu >= 0 && f.add >= 0) fused_away[static_cast<size_t>(g_.op(f.add).outputs[0])] = 1;
    if (f.act_bwd >= 0) fused_away[static_cast<size_t>(g_.op(f.act_bwd).outputs[0])] = 1;
  }
  // Each group runs at the schedule position of its last member: every input exists then.
  std::vector<int> pos(static_cast<size_t>(no), -1);
  for (size_t k = 0; k < order.size(); ++k) pos[static_cast<size_t>(order[k])] = static_cast<int>(k);
  for (int i = 0; i < no; ++i) {
    const Fusion& f = fusion[static_cast<size_t>(i)];
    int anchor = i;
    for (int m : {f.relu, f.add, f.act_bwd})
      if (m >= 0) {
        run_as[static_cast<size_t>(m)] = -1;
        ++fused_ops;
        if (pos[static_cast<size_t>(m)] > pos[static_cast<size_t>(anchor)]) anchor = m;
      }
    if (anchor != i) {
      run_as[static_cast<size_t>(i)] = -1;
      run_as[static_cast<size_t>(anchor)] = i;
    }
  }
}

int Runner::fused_out(int op) const {
  const Fusion& f = fusion[static_cast<size_t>(op)];
  if (f.relu >= 0) return g_.op(f.relu).outputs[0];
  if (f.add >= 0) return g_.op(f.add).outputs[0];
  return g_.op(op).outputs[0];
}

std::vector<PlanStep> Runner::plan_steps(const std::vector<int>& order) const {
  std::vector<PlanStep> steps;
  for (int at : order) {
    const int h = run_as[static_cast<size_t>(at)];
    if (h >= 0) steps.push_back(step_of(h));
  }
  return steps;
}

PlanStep Runner::step_of(int h) const {
  const Fusion& f = fusion[static_cast<size_t>(h)];
  std::vector<int> members{h};
  for (int m : {f.act_bwd, f.add, f.relu})
    if (m >= 0) members.push_back(m);
  PlanStep s;
  std::vector<int> internal;  // written by one member, read by another: never stored
  for (int m : members)
    for (int t : g_.op(m).outputs)
      for (int q : members)
        if (q != m && std::count(g_.op(q).inputs.begin(), g_.op(q).inputs.end(), t)) internal.push_back(t);
  auto keep = [&](int t) { return std::find(internal.begin(), internal.end(), t) == internal.end(); };
  for (int m : members) {
    for (int t : g_.op(m).inputs)
      if (keep(t)) s.reads.push_back(t);
    for (int t : g_.op(m).outputs)
      if (keep(t)) s.writes.push_back(t);
  }
  return s;
}

}  // namespace xpusim::cpu
