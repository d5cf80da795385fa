#include "models/inference.hpp"

#include <algorithm>
#include <vector>

#include "common/error.hpp"

namespace xpusim {

namespace {

bool is_loss(const OpNode& op) { return op.kind == OpKind::SoftmaxCrossEntropy; }

}  // namespace

OpGraph lower_to_inference(const OpGraph& f) {
  if (f.is_training_step) throw InternalError("lower_to_inference needs a forward graph, not a training step");
  const int n_ops = f.num_ops();
  const size_t n_t = static_cast<size_t>(f.num_tensors());
  for (int i = 0; i < n_ops; ++i)
    if (f.op(i).phase != Phase::forward) throw InternalError("lower_to_inference: op " + f.op(i).name + " is not forward");

  // Dropout is the identity at inference: its output stands for its input.
  std::vector<int> alias(n_t);
  for (size_t t = 0; t < n_t; ++t) alias[t] = static_cast<int>(t);
  for (int i = 0; i < n_ops; ++i) {
    const OpNode& op = f.op(i);
    if (op.kind == OpKind::Dropout) alias[static_cast<size_t>(op.outputs[0])] = alias[static_cast<size_t>(op.inputs[0])];
  }
  auto real = [&](int t) { return alias[static_cast<size_t>(t)]; };

  // The model's outputs: the logits of every loss op but those of training-only heads; a
  // graph without a loss keeps every forward value nothing reads.
  std::vector<bool> needed(n_t, false);
  bool any_loss = false;
  for (int i = 0; i < n_ops; ++i) {
    const OpNode& op = f.op(i);
    if (!is_loss(op)) continue;
    any_loss = true;
    if (!op.attrs.training_only) needed[static_cast<size_t>(real(op.inputs[0]))] = true;
  }
  if (!any_loss) {
    for (int i = 0; i < n_ops; ++i)
      for (int t : f.op(i).outputs)
        if (f.tensor(t).role == TensorRole::activation && f.consumers(t).empty()) needed[static_cast<size_t>(real(t))] = true;
  }

  // Ops that compute a needed value, walking back from the outputs (schedule order is
  // topological, so one reverse pass suffices).
  std::vector<bool> keep(static_cast<size_t>(n_ops), false);
  for (int i = n_ops - 1; i >= 0; --i) {
    const OpNode& op = f.op(i);
    if (op.kind == OpKind::Input || op.kind == OpKind::Dropout || is_loss(op)) continue;
    bool live = false;
    for (int t : op.outputs) live = live || needed[static_cast<size_t>(t)];
    if (!live) continue;
    keep[static_cast<size_t>(i)] = true;
    for (int t : op.inputs) needed[static_cast<size_t>(real(t))] = true;
  }

  OpGraph g;
  g.model_name = f.model_name;
  g.batch = f.batch;
  g.precision = f.precision;
  g.task = Task::inference;
  std::vector<int> map(n_t, -1);
  auto mapped = [&](int t) {
    t = real(t);
    int& m = map[static_cast<size_t>(t)];
    if (m < 0) {
      const Tensor& tt = f.tensor(t);
      m = g.add_tensor(tt.name, tt.desc, tt.role);
      g.tensor_mut(m).is_view = tt.is_view;
    }
    return m;
  };
  for (int i = 0; i < n_ops; ++i) {
    const OpNode& op = f.op(i);
    OpNode n = op;
    n.inputs.clear();
    n.outputs.clear();
    n.forward_op = -1;
    if (op.kind == OpKind::Input) {
      // Only what the kept ops read is fed: labels are gone with the loss.
      for (int t : op.outputs)
        if (needed[static_cast<size_t>(t)] && f.tensor(t).role != TensorRole::label) n.outputs.push_back(mapped(t));
      if (n.outputs.empty()) throw InternalError("lower_to_inference: the model reads none of its inputs");
    } else if (keep[static_cast<size_t>(i)]) {
      for (int t : op.inputs) n.inputs.push_back(mapped(t));
      // Every output is kept, side outputs too (batch-norm statistics, LSTM gates): the
      // engines' kernels write them; nothing reads them, so they are freed at once.
      for (int t : op.outputs) n.outputs.push_back(mapped(t));
    } else {
      continue;
    }
    g.add_op(std::move(n));
  }
  return g;
}

}  // namespace xpusim
