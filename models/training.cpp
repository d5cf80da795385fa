#include "models/training.hpp"

#include <map>
#include <set>

#include "common/error.hpp"

namespace xpusim {

bool parse_optimizer(const std::string& s, Optimizer& out) {
  if (s == "sgd_momentum" || s == "sgd" || s == "momentum") out = Optimizer::sgd_momentum;
  else if (s == "adam") out = Optimizer::adam;
  else return false;
  return true;
}

const char* optimizer_name(Optimizer o) { return o == Optimizer::adam ? "adam" : "sgd_momentum"; }

namespace {

class Lowering {
 public:
  explicit Lowering(OpGraph& g) : g_(g) {}

  void run(const TrainingOptions& opts) {
    const int n_forward = g_.num_ops();
    mark_requires_grad(n_forward);
    // Seed: d(loss)/d(loss) is implicit; loss ops emit their backward directly.
    for (int i = n_forward - 1; i >= 0; --i) backward_of(i);
    // Weight gradients, in the order their backward ops produced them (as frameworks
    // launch all-reduce buckets while the backward pass runs).
    for (int w : weight_grad_order_) {
      int grad = finalize_grad(w);
      if (grad < 0) continue;
      if (opts.replicas > 1) grad = all_reduce(w, grad, opts.replicas);
      update(w, grad, opts.optimizer);
    }
    g_.is_training_step = true;
  }

 private:
  OpGraph& g_;
  std::vector<bool> requires_grad_;
  std::map<int, std::vector<int>> contributions_;  // tensor -> gradient pieces
  std::map<int, int> final_grad_;
  std::vector<int> weight_grad_order_;
  std::set<int> weight_seen_;

  const Tensor& T(int t) const { return g_.tensor(t); }
  bool needs(int t) const { return requires_grad_[static_cast<size_t>(t)]; }

  void mark_requires_grad(int n_forward) {
    requires_grad_.assign(static_cast<size_t>(g_.num_tensors()), false);
    for (int t = 0; t < g_.num_tensors(); ++t)
      if (T(t).role == TensorRole::weight) requires_grad_[static_cast<size_t>(t)] = true;
    for (int i = 0; i < n_forward; ++i) {
      const OpNode& op = g_.op(i);
      bool any = false;
      for (int t : op.inputs) any = any || needs(t);
      if (op.kind == OpKind::Embedding) any = needs(op.inputs[1]);
      for (int t : op.outputs)
        if (T(t).role == TensorRole::activation) requires_grad_[static_cast<size_t>(t)] = any;
    }
  }

  int grad_tensor(int t, const std::string& suffix = "") {
    TensorRole role = T(t).role == TensorRole::weight ? TensorRole::weight_grad : TensorRole::activation_grad;
    TensorDesc d = T(t).desc;
    if (role == TensorRole::weight_grad) d.dtype = DType::fp32;
    return g_.add_tensor("d(" + T(t).name + ")" + suffix, d, role);
  }

  void contribute(int t, int grad) {
    if (!needs(t)) return;
    contributions_[t].push_back(grad);
    if (T(t).role == TensorRole::weight && weight_seen_.insert(t).second) weight_grad_order_.push_back(t);
  }

  // All consumers of t have run their backward (reverse order), so its gradient pieces
  // are complete: sum them if there are several (fan-out, e.g. a residual branch point).
  int finalize_grad(int t) {
    auto it = final_grad_.find(t);
    if (it != final_grad_.end()) return it->second;
    auto c = contributions_.find(t);
    if (c == contributions_.end() || c->second.empty()) return -1;
    int g = c->second[0];
    if (c->second.size() > 1) {
      g = grad_tensor(t, ".sum");
      emit(OpKind::Add, "grad_sum/" + T(t).name, {}, c->second, {g}, -1, Phase::backward);
    }
    final_grad_[t] = g;
    g_.gradient_tensor[t] = g;
    return g;
  }

  int emit(OpKind kind, const std::string& name, OpAttrs attrs, std::vector<int> in, std::vector<int> out,
           int fwd, Phase phase) {
    const DType dtype = fwd >= 0 ? g_.op(fwd).compute_dtype : activation_dtype(g_.precision);
    return g_.add_op(make_op(kind, name, attrs, std::move(in), std::move(out), phase, dtype, fwd));
  }

  void backward_of(int i) {
    const OpNode op = g_.op(i);  // copy: add_op may reallocate vertex storage
    const std::string bname = op.name + "/grad";
    if (op.kind == OpKind::SoftmaxCrossEntropy) {
      int logits = op.inputs[0];
      if (!needs(logits)) return;
      int dx = grad_tensor(logits);
      emit(OpKind::SoftmaxCrossEntropyBackward, bname, op.attrs, {op.outputs[1], op.inputs[1]}, {dx}, i,
           Phase::backward);
      contribute(logits, dx);
      return;
    }
    // Other ops: need the gradient of their (first) output.
    if (op.outputs.empty()) return;
    int y = op.outputs[0];
    if (!needs(y)) return;
    int dy = finalize_grad(y);
    if (dy < 0) return;  // output does not reach the loss
    switch (op.kind) {
      case OpKind::Input:
      case OpKind::SoftmaxCrossEntropy:
      case OpKind::SoftmaxCrossEntropyBackward:
      case OpKind::Conv2DBackwardData:
      case OpKind::Conv2DBackwardFilter:
      case OpKind::BatchNormBackward:
      case OpKind::ActivationBackward:
      case OpKind::PoolBackward:
      case OpKind::Split:
      case OpKind::DropoutBackward:
      case OpKind::EmbeddingBackward:
      case OpKind::LSTMBackward:
      case OpKind::LayerNormBackward:
      case OpKind::AttentionBackward:
      case OpKind::SoftmaxBackward:
      case OpKind::SGDMomentumUpdate:
      case OpKind::AdamUpdate:
      case OpKind::AllReduce:
        throw InternalError("op kind " + std::string(op_kind_name(op.kind)) + " cannot appear in a forward graph");
      case OpKind::Conv2D: {
        int x = op.inputs[0], w = op.inputs[1];
        if (needs(x)) {
          int dx = grad_tensor(x);
          emit(OpKind::Conv2DBackwardData, bname + "/data", op.attrs, {dy, w}, {dx}, i, Phase::backward);
          contribute(x, dx);
        }
        std::vector<int> outs{grad_tensor(w)};
        if (op.attrs.has_bias) outs.push_back(grad_tensor(op.inputs[2]));
        emit(OpKind::Conv2DBackwardFilter, bname + "/filter", op.attrs, {x, dy}, outs, i, Phase::backward);
        contribute(w, outs[0]);
        if (op.attrs.has_bias) contribute(op.inputs[2], outs[1]);
        return;
      }
      case OpKind::MatMul: {
        // C = op(A) op(B) with op(A) [m,k], op(B) [k,n] (per batch). Dense layers have
        // A = X, B = W, no transposes; attention written out has both operands activations.
        const OpAttrs& f = op.attrs;
        int x = op.inputs[0], w = op.inputs[1];
        if (needs(x)) {
          OpAttrs a = f;
          a.has_bias = false;
          std::vector<int> in;
          if (!f.trans_a) {  // dA[m,k] = dC[m,n] x op(B)^T[n,k]
            a.n = f.k;
            a.k = f.n;
            a.trans_b = !f.trans_b;
            in = {dy, w};
          } else {  // A is [k,m]: dA = op(B)[k,n] x dC^T[n,m]
            a.m = f.k;
            a.n = f.m;
            a.k = f.n;
            a.trans_a = f.trans_b;
            a.trans_b = true;
            in = {w, dy};
          }
          int dx = grad_tensor(x);
          emit(OpKind::MatMul, bname + "/data", a, in, {dx}, i, Phase::backward);
          contribute(x, dx);
        }
        if (!needs(w)) return;
        // dB[k,n] = op(A)^T[k,m] x dC[m,n]; the bias gradient is the column sum of dC.
        OpAttrs a = f;
        std::vector<int> in;
        if (!f.trans_b) {
          a.m = f.k;
          a.k = f.m;
          a.trans_a = !f.trans_a;
          in = {x, dy};
        } else {  // B is [n,k]: dB = dC^T[n,m] x op(A)[m,k]
          a.m = f.n;
          a.n = f.k;
          a.k = f.m;
          a.trans_a = true;
          a.trans_b = f.trans_a;
          in = {dy, x};
        }
        std::vector<int> outs{grad_tensor(w)};
        if (f.has_bias) outs.push_back(grad_tensor(op.inputs[2]));
        emit(OpKind::MatMul, bname + "/weight", a, in, outs, i, Phase::backward);
        contribute(w, outs[0]);
        if (f.has_bias) contribute(op.inputs[2], outs[1]);
        return;
      }
      case OpKind::LayerNorm: {
        // A norm without beta (RMSNorm, MPT's LayerNorm) has no dbeta output.
        int x = op.inputs[0];
        const bool beta = op.inputs.size() > 2;
        int dx = grad_tensor(x), dg = grad_tensor(op.inputs[1]);
        std::vector<int> outs{dx, dg};
        if (beta) outs.push_back(grad_tensor(op.inputs[2]));
        emit(OpKind::LayerNormBackward, bname, op.attrs, {dy, x, op.inputs[1], op.outputs[1], op.outputs[2]}, outs, i,
             Phase::backward);
        contribute(x, dx);
        contribute(op.inputs[1], dg);
        if (beta) contribute(op.inputs[2], outs[2]);
        return;
      }
      case OpKind::Attention: {
        int q = op.inputs[0], k = op.inputs[1], v = op.inputs[2];
        int dq = grad_tensor(q, ".attn"), dk = grad_tensor(k, ".attn"), dv = grad_tensor(v, ".attn");
        emit(OpKind::AttentionBackward, bname, op.attrs, {dy, q, k, v, op.outputs[1]}, {dq, dk, dv}, i,
             Phase::backward);
        contribute(q, dq);
        contribute(k, dk);
        contribute(v, dv);
        return;
      }
      case OpKind::Softmax: {
        int x = op.inputs[0];
        int dx = grad_tensor(x);
        emit(OpKind::SoftmaxBackward, bname, op.attrs, {dy, y}, {dx}, i, Phase::backward);
        contribute(x, dx);
        return;
      }
      case OpKind::Transpose: {
        int x = op.inputs[0];
        OpAttrs a = op.attrs;  // the inverse permutation
        for (size_t j = 0; j < op.attrs.perm.size(); ++j) a.perm[static_cast<size_t>(op.attrs.perm[j])] = static_cast<int>(j);
        int dx = grad_tensor(x);
        emit(OpKind::Transpose, bname, a, {dy}, {dx}, i, Phase::backward);
        contribute(x, dx);
        return;
      }
      case OpKind::Scale: {
        int x = op.inputs[0];
        int dx = grad_tensor(x);
        emit(OpKind::Scale, bname, op.attrs, {dy}, {dx}, i, Phase::backward);
        contribute(x, dx);
        return;
      }
      case OpKind::BatchNorm: {
        int x = op.inputs[0];
        int dx = grad_tensor(x), dg = grad_tensor(op.inputs[1]), db = grad_tensor(op.inputs[2]);
        emit(OpKind::BatchNormBackward, bname, op.attrs, {dy, x, op.inputs[1], op.outputs[1], op.outputs[2]},
             {dx, dg, db}, i, Phase::backward);
        contribute(x, dx);
        contribute(op.inputs[1], dg);
        contribute(op.inputs[2], db);
        return;
      }
      case OpKind::Activation: {
        int x = op.inputs[0];
        int dx = grad_tensor(x);
        // relu, sigmoid and tanh derivatives are all functions of the output; gelu's is not.
        emit(OpKind::ActivationBackward, bname, op.attrs, {dy, op.attrs.act == ActivationFn::gelu ? x : y}, {dx}, i,
             Phase::backward);
        contribute(x, dx);
        return;
      }
      case OpKind::Add:
        // The gradient flows unchanged to every summand.
        for (int x : op.inputs) contribute(x, dy);
        return;
      case OpKind::Mul: {
        int a = op.inputs[0], b = op.inputs[1];
        if (needs(a)) {
          int da = grad_tensor(a);
          emit(OpKind::Mul, bname + "/a", {}, {dy, b}, {da}, i, Phase::backward);
          contribute(a, da);
        }
        if (needs(b)) {
          int db = grad_tensor(b);
          emit(OpKind::Mul, bname + "/b", {}, {dy, a}, {db}, i, Phase::backward);
          contribute(b, db);
        }
        return;
      }
      case OpKind::Pool: {
        int x = op.inputs[0];
        int dx = grad_tensor(x);
        // Max pooling needs the input (argmax positions); average pooling only shapes.
        std::vector<int> in{dy};
        if (op.attrs.pool == PoolFn::max) in = {dy, x, y};
        emit(OpKind::PoolBackward, bname, op.attrs, in, {dx}, i, Phase::backward);
        contribute(x, dx);
        return;
      }
      case OpKind::Concat: {
        std::vector<int> outs;
        for (int x : op.inputs) outs.push_back(grad_tensor(x));
        emit(OpKind::Split, bname, op.attrs, {dy}, outs, i, Phase::backward);
        for (size_t k = 0; k < outs.size(); ++k) contribute(op.inputs[k], outs[k]);
        return;
      }
      case OpKind::Reshape: {
        int x = op.inputs[0];
        int dx = grad_tensor(x);
        g_.tensor_mut(dx).is_view = true;
        emit(OpKind::Reshape, bname, op.attrs, {dy}, {dx}, i, Phase::backward);
        contribute(x, dx);
        return;
      }
      case OpKind::Dropout: {
        int x = op.inputs[0];
        int dx = grad_tensor(x);
        emit(OpKind::DropoutBackward, bname, op.attrs, {dy, op.outputs[1]}, {dx}, i, Phase::backward);
        contribute(x, dx);
        return;
      }
      case OpKind::Embedding: {
        int table = op.inputs[1];
        int dt = grad_tensor(table);
        emit(OpKind::EmbeddingBackward, bname, op.attrs, {dy, op.inputs[0]}, {dt}, i, Phase::backward);
        contribute(table, dt);
        return;
      }
      case OpKind::LSTM: {
        int x = op.inputs[0];
        std::vector<int> outs;
        bool dx_needed = needs(x);
        if (dx_needed) outs.push_back(grad_tensor(x));
        for (size_t k = 1; k < 4; ++k) outs.push_back(grad_tensor(op.inputs[k]));
        emit(OpKind::LSTMBackward, bname, op.attrs, {dy, x, op.inputs[1], op.inputs[2], op.outputs[1]}, outs, i,
             Phase::backward);
        size_t o = 0;
        if (dx_needed) contribute(x, outs[o++]);
        for (size_t k = 1; k < 4; ++k) contribute(op.inputs[k], outs[o++]);
        return;
      }
    }
  }

  int all_reduce(int w, int grad, int replicas) {
    OpAttrs a;
    a.replicas = replicas;
    TensorDesc d = T(grad).desc;
    int out = g_.add_tensor(T(grad).name + ".allreduced", d, TensorRole::weight_grad);
    emit(OpKind::AllReduce, "allreduce/" + T(w).name, a, {grad}, {out}, -1, Phase::communication);
    return out;
  }

  void update(int w, int grad, Optimizer opt) {
    TensorDesc d{T(w).desc.shape, DType::fp32};
    if (opt == Optimizer::sgd_momentum) {
      int v = g_.add_tensor(T(w).name + ".momentum", d, TensorRole::optimizer_state);
      emit(OpKind::SGDMomentumUpdate, "sgd/" + T(w).name, {}, {w, grad, v}, {w, v}, -1, Phase::update);
    } else {
      int m = g_.add_tensor(T(w).name + ".adam_m", d, TensorRole::optimizer_state);
      int v = g_.add_tensor(T(w).name + ".adam_v", d, TensorRole::optimizer_state);
      emit(OpKind::AdamUpdate, "adam/" + T(w).name, {}, {w, grad, m, v}, {w, m, v}, -1, Phase::update);
    }
  }
};

}  // namespace

void lower_to_training_step(OpGraph& g, const TrainingOptions& opts) {
  if (g.is_training_step) throw InternalError("graph is already a training step");
  if (opts.replicas < 1) throw InternalError("replicas must be >= 1");
  Lowering(g).run(opts);
}

int gradient_of(const OpGraph& g, int t) {
  auto it = g.gradient_tensor.find(t);
  return it == g.gradient_tensor.end() ? -1 : it->second;
}

}  // namespace xpusim
