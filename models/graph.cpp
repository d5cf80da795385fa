#include "models/graph.hpp"

#include <boost/graph/topological_sort.hpp>

#include <iterator>
#include <sstream>

#include "common/error.hpp"

namespace xpusim {

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << "]";
  return os.str();
}

const char* tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::input: return "input";
    case TensorRole::label: return "label";
    case TensorRole::activation: return "activation";
    case TensorRole::weight: return "weight";
    case TensorRole::weight_grad: return "weight_grad";
    case TensorRole::activation_grad: return "activation_grad";
    case TensorRole::optimizer_state: return "optimizer_state";
    case TensorRole::loss: return "loss";
    case TensorRole::aux: return "aux";
  }
  return "?";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::backward: return "backward";
    case Phase::update: return "update";
    case Phase::communication: return "communication";
  }
  return "?";
}

const char* activation_name(ActivationFn f) {
  switch (f) {
    case ActivationFn::relu: return "relu";
    case ActivationFn::sigmoid: return "sigmoid";
    case ActivationFn::tanh: return "tanh";
    case ActivationFn::gelu: return "gelu";
  }
  return "?";
}

int OpGraph::add_tensor(std::string name, TensorDesc desc, TensorRole role) {
  for (auto d : desc.shape) {
    if (d <= 0) throw InternalError("tensor " + name + " has non-positive shape " + shape_str(desc.shape));
  }
  // Sizes come from the batch and the model's layer sizes, both user input. Every later sum
  // (bytes per op, memory per step) stays far from int64 overflow when no tensor exceeds
  // kMaxTensorBytes, so this one check makes the counting overflow-free.
  int64_t bytes = dtype_bytes(desc.dtype);
  for (auto d : desc.shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes) || bytes > kMaxTensorBytes)
      throw UserError("tensor '" + name + "' of shape " + shape_str(desc.shape) +
                      " would hold more than 2^46 bytes (64 TiB): lower the batch or the layer sizes");
  }
  tensors_.push_back(Tensor{std::move(name), std::move(desc), role, -1, false});
  consumers_.emplace_back();
  return static_cast<int>(tensors_.size()) - 1;
}

int OpGraph::add_op(OpNode op) {
  if (num_ops() >= kMaxGraphOps)
    throw GraphTooLarge("the graph has more than " + std::to_string(kMaxGraphOps) +
                        " ops (xpusim's limit; the largest zoo training step has under 2,000)");
  auto v = boost::add_vertex(op, g_);
  int idx = static_cast<int>(v);
  for (int t : op.inputs) {
    if (t < 0 || t >= num_tensors()) throw InternalError("op " + op.name + " reads unknown tensor");
    consumers_[static_cast<size_t>(t)].push_back(idx);
    int p = tensors_[static_cast<size_t>(t)].producer;
    if (p >= 0 && p != idx) boost::add_edge(static_cast<size_t>(p), v, EdgeData{t}, g_);
  }
  for (int t : op.outputs) {
    if (t < 0 || t >= num_tensors()) throw InternalError("op " + op.name + " writes unknown tensor");
    auto& tt = tensors_[static_cast<size_t>(t)];
    // Persistent tensors (weights, optimizer state) are updated in place by the update
    // ops; they keep no producer so the graph stays acyclic.
    bool persistent = tt.role == TensorRole::weight || tt.role == TensorRole::optimizer_state;
    if (!persistent) {
      if (tt.producer >= 0) throw InternalError("tensor " + tt.name + " written twice");
      tt.producer = idx;
    }
  }
  return idx;
}

std::vector<int> OpGraph::schedule() const {
  std::vector<int> s(static_cast<size_t>(num_ops()));
  for (int i = 0; i < num_ops(); ++i) s[static_cast<size_t>(i)] = i;
  return s;
}

std::vector<int> OpGraph::topological_order() const {
  std::vector<BoostOpGraph::vertex_descriptor> rev;
  boost::topological_sort(g_, std::back_inserter(rev));  // throws not_a_dag on cycles
  return std::vector<int>(rev.rbegin(), rev.rend());
}

std::vector<int> OpGraph::consumers(int t) const { return consumers_.at(static_cast<size_t>(t)); }

std::vector<int> OpGraph::tensors_with_role(TensorRole r) const {
  std::vector<int> out;
  for (int i = 0; i < num_tensors(); ++i)
    if (tensors_[static_cast<size_t>(i)].role == r) out.push_back(i);
  return out;
}

OpNode make_op(OpKind kind, const std::string& name, const OpAttrs& attrs, std::vector<int> in, std::vector<int> out,
               Phase phase, DType dtype, int forward_op) {
  OpNode op;
  op.name = name;
  op.kind = kind;
  op.phase = phase;
  op.attrs = attrs;
  op.inputs = std::move(in);
  op.outputs = std::move(out);
  op.compute_dtype = dtype;
  op.forward_op = forward_op;
  return op;
}

}  // namespace xpusim
