#include "models/work.hpp"

#include <algorithm>
#include <set>

#include "common/error.hpp"

namespace xpusim {

namespace {

int64_t bytes_of(const OpGraph& g, int t) { return g.tensor(t).is_view ? 0 : g.tensor(t).desc.bytes(); }
int64_t numel(const OpGraph& g, int t) { return g.tensor(t).desc.numel(); }

// Weights are read in the op's compute type (the low-precision copy under mixed precision).
int64_t read_bytes(const OpGraph& g, const OpNode& op, int t) {
  const Tensor& tt = g.tensor(t);
  if (tt.is_view) return 0;
  if (tt.role == TensorRole::weight && op.phase != Phase::update) return tt.desc.numel() * dtype_bytes(op.compute_dtype);
  return tt.desc.bytes();
}

void io_bytes(const OpGraph& g, const OpNode& op, Work& w) {
  for (int t : op.inputs) w.bytes_read += read_bytes(g, op, t);
  for (int t : op.outputs) w.bytes_written += bytes_of(g, t);
}

// Multiply-accumulates of a convolution, from the forward op's attributes and shapes.
double conv_macs(const OpGraph& g, const OpNode& fwd_like, int x, int y) {
  const Shape& xs = g.tensor(x).desc.shape;
  const Shape& ys = g.tensor(y).desc.shape;
  const OpAttrs& a = fwd_like.attrs;
  double cin_per_group = static_cast<double>(xs[1]) / a.groups;
  return static_cast<double>(ys[0]) * ys[1] * ys[2] * ys[3] * cin_per_group * a.kernel_h * a.kernel_w;
}

}  // namespace

Work count_work(const OpGraph& g, const OpNode& op) {
  Work w;
  const OpAttrs& a = op.attrs;
  switch (op.kind) {
    case OpKind::Input:
      for (int t : op.outputs) w.bytes_written += bytes_of(g, t);
      return w;
    case OpKind::Conv2D: {
      int y = op.outputs[0];
      w.flops = 2 * conv_macs(g, op, op.inputs[0], y) + (a.has_bias ? static_cast<double>(numel(g, y)) : 0.0);
      break;
    }
    case OpKind::Conv2DBackwardData: {
      // dX has x's shape, dY has y's: MACs equal the forward conv's.
      const OpNode& f = g.op(op.forward_op);
      w.flops = 2 * conv_macs(g, f, f.inputs[0], f.outputs[0]);
      break;
    }
    case OpKind::Conv2DBackwardFilter: {
      const OpNode& f = g.op(op.forward_op);
      w.flops = 2 * conv_macs(g, f, f.inputs[0], f.outputs[0]) +
                (a.has_bias ? static_cast<double>(numel(g, f.outputs[0])) : 0.0);
      break;
    }
    case OpKind::MatMul:
      w.flops = 2.0 * a.m * a.n * a.k;
      if (a.has_bias) w.flops += static_cast<double>(a.m) * a.n;  // bias add, or bias-gradient reduction
      w.flops *= static_cast<double>(a.batches);
      break;
    case OpKind::BatchNorm:
      // statistics: sum and sum of squares (3/elem); normalise and scale: (x-mu)*r*g+b (4/elem).
      // Inference normalises with running statistics folded into one scale and shift (2/elem).
      w.flops = (g.task == Task::inference ? 2.0 : 7.0) * numel(g, op.inputs[0]);
      w.transcendentals = static_cast<double>(numel(g, op.outputs[1]));  // rsqrt per channel
      break;
    case OpKind::BatchNormBackward:
      // dgamma, dbeta reductions (4/elem) and dx = r*g*(dy - mean(dy) - xhat*mean(dy*xhat)) (5/elem)
      w.flops = 9.0 * numel(g, op.inputs[0]);
      break;
    case OpKind::Activation:
      // gelu: x * 0.5 * (1 + erf(x / sqrt 2)), erf as one transcendental plus ~4 FLOPs.
      w.flops = (a.act == ActivationFn::relu ? 1.0 : a.act == ActivationFn::gelu ? 5.0 : 4.0) *
                numel(g, op.outputs[0]);
      if (a.act != ActivationFn::relu) w.transcendentals = static_cast<double>(numel(g, op.outputs[0]));
      break;
    case OpKind::ActivationBackward:
      // gelu': Phi(x) + x phi(x): an erf and an exp from the saved input, ~6 FLOPs.
      w.flops = (a.act == ActivationFn::relu ? 1.0 : a.act == ActivationFn::gelu ? 6.0 : 3.0) *
                numel(g, op.outputs[0]);
      if (a.act == ActivationFn::gelu) w.transcendentals = 2.0 * numel(g, op.outputs[0]);
      break;
    case OpKind::Add:
      w.flops = static_cast<double>(op.inputs.size() - 1) * numel(g, op.outputs[0]);
      break;
    case OpKind::Mul:
      // Over the larger operand: a broadcast gate's product, or its gradient's reduction.
      w.flops = static_cast<double>(std::max({numel(g, op.inputs[0]), numel(g, op.inputs[1]), numel(g, op.outputs[0])}));
      break;
    case OpKind::Pool:
      // One compare or add per window element per output (global: per input element).
      w.flops = a.global_pool ? static_cast<double>(numel(g, op.inputs[0]))
                              : static_cast<double>(numel(g, op.outputs[0])) * a.kernel_h * a.kernel_w;
      break;
    case OpKind::PoolBackward: {
      const OpNode& f = g.op(op.forward_op);
      w.flops = a.global_pool ? static_cast<double>(numel(g, f.inputs[0]))
                              : static_cast<double>(numel(g, f.outputs[0])) * a.kernel_h * a.kernel_w;
      break;
    }
    case OpKind::Concat:
    case OpKind::Split:
      break;  // pure data movement
    case OpKind::Reshape:
      return w;  // a view: no work at all
    case OpKind::Dropout:
      w.flops = 2.0 * numel(g, op.inputs[0]);  // random compare + scale
      break;
    case OpKind::DropoutBackward:
      w.flops = static_cast<double>(numel(g, op.inputs[0]));
      break;
    case OpKind::SoftmaxCrossEntropy:
      // max, subtract, exp, sum, divide per logit
      w.flops = 5.0 * numel(g, op.inputs[0]);
      w.transcendentals = static_cast<double>(numel(g, op.inputs[0]));
      break;
    case OpKind::SoftmaxCrossEntropyBackward:
      w.flops = 2.0 * numel(g, op.outputs[0]);  // (p - onehot) / N
      break;
    case OpKind::Embedding: {
      // Reads only the gathered rows of the table.
      w.bytes_read = bytes_of(g, op.inputs[0]) + numel(g, op.outputs[0]) * dtype_bytes(op.compute_dtype);
      w.bytes_written = bytes_of(g, op.outputs[0]);
      return w;
    }
    case OpKind::EmbeddingBackward:
      // Scatter-add of every gathered row into a dense table gradient (zeroed first).
      w.flops = static_cast<double>(numel(g, op.inputs[0]));
      break;
    case OpKind::LSTM: {
      // Per timestep: gates = x_t W + h_{t-1} U + b (4 gates), then 3 sigmoids, 2 tanh and
      // ~5 elementwise products/sums per hidden unit.
      const double n = static_cast<double>(g.tensor(op.inputs[0]).desc.shape[0]);
      const double h = static_cast<double>(a.hidden), in = static_cast<double>(a.input_size);
      const double t = static_cast<double>(a.seq_len);
      w.flops = t * (2.0 * n * (in + h) * 4 * h + 4 * n * h + 9.0 * n * h);
      w.transcendentals = t * 5.0 * n * h;
      break;
    }
    case OpKind::LSTMBackward: {
      // Twice the gate matmuls (data and weight gradients) plus ~20 pointwise ops per unit.
      const double n = static_cast<double>(g.tensor(op.inputs[1]).desc.shape[0]);
      const double h = static_cast<double>(a.hidden), in = static_cast<double>(a.input_size);
      const double t = static_cast<double>(a.seq_len);
      w.flops = t * (2.0 * 2.0 * n * (in + h) * 4 * h + 20.0 * n * h);
      break;
    }
    case OpKind::LayerNorm:
      // per row: mean (1/elem), variance (3/elem), normalise (2/elem), affine (2/elem); one rsqrt.
      // Without beta the affine is 1/elem; an RMSNorm has no mean: squares and sum (2), scale (2).
      w.flops = (a.rms ? 4.0 : op.inputs.size() > 2 ? 8.0 : 7.0) * numel(g, op.inputs[0]);
      w.transcendentals = static_cast<double>(numel(g, op.outputs[1]));
      break;
    case OpKind::LayerNormBackward:
      // dgamma, dbeta reductions (4/elem) and dx = r*(g*dy - mean(g*dy) - xhat*mean(g*dy*xhat)) (7/elem);
      // no dbeta: 1/elem less; an RMSNorm's dx has no mean(g*dy) term: 2/elem less.
      w.flops = (11.0 - (op.outputs.size() > 2 ? 0.0 : 1.0) - (a.rms ? 2.0 : 0.0)) * numel(g, op.inputs[0]);
      break;
    case OpKind::Attention: {
      // Per head: S = Q K^T (2 Tq Tk dh), P = softmax(S / sqrt(dh)) (scale, max, subtract, exp,
      // sum, divide: 5 per score, one exp), Y = P V (2 Tq Tk dh). Summed over heads the matmuls
      // are 4 N Tq Tk D. A causal mask is counted as dense: the kernels of the frameworks this
      // models (cuBLAS batched GEMM + softmax, no FlashAttention) compute the masked half too.
      const Shape& qs = g.tensor(op.inputs[0]).desc.shape;
      const double scores = static_cast<double>(numel(g, op.outputs[1]));  // N H Tq Tk
      w.flops = 4.0 * scores * static_cast<double>(qs[2]) / static_cast<double>(a.heads) + 5.0 * scores;
      w.transcendentals = scores;
      // Written out as three kernels, the scores are written and read once more and the
      // probabilities read by P V: beyond reading Q, K, V and writing Y and P.
      w.bytes_read += 2 * bytes_of(g, op.outputs[1]);
      w.bytes_written += bytes_of(g, op.outputs[1]);
      break;
    }
    case OpKind::AttentionBackward: {
      // dV = P^T dY, dP = dY V^T, dS = P * (dP - rowsum(dP * P)) / sqrt(dh), dQ = dS K,
      // dK = dS^T Q: four matmuls (8 N Tq Tk D) and 4 FLOPs per score.
      const Shape& qs = g.tensor(op.inputs[1]).desc.shape;
      const double scores = static_cast<double>(numel(g, op.inputs[4]));
      w.flops = 8.0 * scores * static_cast<double>(qs[2]) / static_cast<double>(g.op(op.forward_op).attrs.heads) +
                4.0 * scores;
      // dP and dS are materialised: written once each, read three times between them.
      w.bytes_read += 3 * bytes_of(g, op.inputs[4]);
      w.bytes_written += 2 * bytes_of(g, op.inputs[4]);
      break;
    }
    case OpKind::Softmax:
      w.flops = 4.0 * numel(g, op.inputs[0]);  // max, subtract, exp-sum, divide
      w.transcendentals = static_cast<double>(numel(g, op.inputs[0]));
      break;
    case OpKind::SoftmaxBackward:
      w.flops = 3.0 * numel(g, op.outputs[0]);  // dx = y * (dy - sum(dy * y))
      break;
    case OpKind::Transpose:
      break;  // pure data movement
    case OpKind::Scale:
      w.flops = static_cast<double>(numel(g, op.outputs[0]));
      break;
    case OpKind::SGDMomentumUpdate:
      // v = mu*v + g + wd*w (4); w -= lr*v (2)
      w.flops = 6.0 * numel(g, op.inputs[0]);
      break;
    case OpKind::AdamUpdate:
      // two moment updates (6), bias corrections and sqrt/divide (4), update (2)
      w.flops = 12.0 * numel(g, op.inputs[0]);
      w.transcendentals = static_cast<double>(numel(g, op.inputs[0]));
      break;
    case OpKind::AllReduce:
      // Summing contributions of r replicas: (r-1)/r of one add per element; bytes are
      // those of the local gradient (engines model the wire traffic).
      w.flops = static_cast<double>(numel(g, op.inputs[0])) * (a.replicas - 1) / std::max(1, a.replicas);
      break;
  }
  io_bytes(g, op, w);
  return w;
}

void count_all_work(OpGraph& g) {
  for (int i = 0; i < g.num_ops(); ++i) g.op_mut(i).work = count_work(g, g.op(i));
}

GraphTotals graph_totals(const OpGraph& g) {
  GraphTotals t;
  t.task = g.task;
  t.num_ops = g.num_ops();
  std::set<int> weights;
  for (int i = 0; i < g.num_tensors(); ++i) {
    const Tensor& tt = g.tensor(i);
    switch (tt.role) {
      case TensorRole::weight:
        t.params += tt.desc.numel();
        if (tt.name.rfind("head.", 0) == 0) t.head_params += tt.desc.numel();
        t.weight_bytes += tt.desc.bytes();
        weights.insert(i);
        break;
      case TensorRole::optimizer_state: t.optimizer_state_bytes += tt.desc.bytes(); break;
      case TensorRole::input:
      case TensorRole::label: t.input_bytes += tt.desc.bytes(); break;
      default: break;
    }
  }
  if (g.task == Task::inference)
    // A framework serving the model holds it in the compute type only: no fp32 master copy
    // (the graph's weight tensors stay fp32 so that the engines' kernels run unchanged).
    t.weight_bytes = t.params * dtype_bytes(activation_dtype(g.precision));
  else if (activation_dtype(g.precision) != DType::fp32)
    t.low_precision_weight_bytes = t.params * dtype_bytes(activation_dtype(g.precision));
  for (int i = 0; i < g.num_ops(); ++i) {
    const OpNode& op = g.op(i);
    const Work& w = op.work;
    switch (op.phase) {
      case Phase::forward: t.flops_forward += w.flops; break;
      case Phase::backward: t.flops_backward += w.flops; break;
      case Phase::update:
      case Phase::communication: t.flops_update += w.flops; break;
    }
    t.flops_train_step += w.flops;
    t.transcendentals += w.transcendentals;
    t.bytes_read += w.bytes_read;
    t.bytes_written += w.bytes_written;
  }
  // Saved activations: forward-produced tensors that a backward op reads.
  std::set<int> saved;
  for (int i = 0; i < g.num_ops(); ++i) {
    const OpNode& op = g.op(i);
    if (op.phase != Phase::backward) continue;
    for (int in : op.inputs) {
      const Tensor& tt = g.tensor(in);
      if (tt.producer >= 0 && g.op(tt.producer).phase == Phase::forward && !tt.is_view) saved.insert(in);
    }
  }
  for (int s : saved) t.activation_bytes += g.tensor(s).desc.bytes();
  // One persistent fp32 gradient buffer per weight (frameworks accumulate in place).
  for (int w : weights) t.weight_grad_bytes += g.tensor(w).desc.bytes();
  if (!g.is_training_step) t.weight_grad_bytes = 0;

  // Liveness over the schedule: a tensor lives from its producer to its last consumer.
  // Persistent state (weights, their gradients, optimizer state, low-precision copies) is
  // added on top.
  std::vector<int> last_use(static_cast<size_t>(g.num_tensors()), -1);
  for (int i = 0; i < g.num_ops(); ++i)
    for (int in : g.op(i).inputs) last_use[static_cast<size_t>(in)] = std::max(last_use[static_cast<size_t>(in)], i);
  int64_t live = 0, peak = 0;
  std::vector<std::vector<int>> frees(static_cast<size_t>(g.num_ops()));
  for (int i = 0; i < g.num_ops(); ++i) {
    for (int out : g.op(i).outputs) {
      const Tensor& tt = g.tensor(out);
      if (tt.role == TensorRole::weight || tt.role == TensorRole::optimizer_state || tt.is_view) continue;
      if (tt.role == TensorRole::weight_grad) continue;  // counted as persistent
      live += tt.desc.bytes();
      int lu = last_use[static_cast<size_t>(out)];
      frees[static_cast<size_t>(lu < i ? i : lu)].push_back(out);
    }
    peak = std::max(peak, live);
    for (int f : frees[static_cast<size_t>(i)]) live -= g.tensor(f).desc.bytes();
  }
  t.peak_bytes = peak + t.weight_bytes + t.weight_grad_bytes + t.optimizer_state_bytes + t.low_precision_weight_bytes;
  return t;
}

nlohmann::json graph_totals_json(const GraphTotals& t) {
  nlohmann::json j = {{"params", t.params},
          {"flops_forward", t.flops_forward},
          {"flops_backward", t.flops_backward},
          {"flops_update", t.flops_update},
          {"flops_train_step", t.flops_train_step},
          {"bytes_read_train_step", t.bytes_read},
          {"bytes_written_train_step", t.bytes_written},
          {"activation_bytes", t.activation_bytes},
          {"weight_bytes", t.weight_bytes},
          {"weight_grad_bytes", t.weight_grad_bytes},
          {"optimizer_state_bytes", t.optimizer_state_bytes},
          {"low_precision_weight_bytes", t.low_precision_weight_bytes},
          {"input_bytes", t.input_bytes},
          {"peak_memory_bytes", t.peak_bytes},
          {"num_ops_train_step", t.num_ops}};
  // Only inference graphs name their task, so training totals keep their shape; the
  // *_train_step fields then cover the inference pass.
  if (t.task == Task::inference) j["task"] = task_name(t.task);
  return j;
}

}  // namespace xpusim
