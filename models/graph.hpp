// The op graph of a training step: ops are vertices of a Boost.Graph, tensors are the
// values that flow along its edges. Shapes are NCHW for images, [N, T, F] for sequences.
#pragma once
#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "models/dtype.hpp"
#include "models/op_kinds.hpp"
#include "models/task.hpp"

namespace xpusim {

using Shape = std::vector<int64_t>;

// The largest tensor a graph may hold (2^46 bytes = 64 TiB, far beyond any device's memory);
// OpGraph::add_tensor rejects larger ones so that work and memory sums never overflow int64.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 46;

struct TensorDesc {
  Shape shape;
  DType dtype = DType::fp32;
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  int64_t bytes() const { return numel() * dtype_bytes(dtype); }
};

std::string shape_str(const Shape& s);

enum class TensorRole {
  input,            // a batch fed by the host (images, token ids)
  label,            // labels fed by the host
  activation,       // forward values
  weight,           // trainable parameter (fp32 master copy)
  weight_grad,      // gradient of a weight
  activation_grad,  // gradient of an activation
  optimizer_state,  // momentum / Adam moments
  loss,
  aux,              // saved side outputs: dropout masks, BN statistics, LSTM gates
};
const char* tensor_role_name(TensorRole r);

struct Tensor {
  std::string name;
  TensorDesc desc;
  TensorRole role = TensorRole::activation;
  int producer = -1;  // op that writes it; -1 for weights and optimizer state (persistent)
  bool is_view = false;  // a reshape of another tensor: occupies no memory of its own
};

enum class Phase { forward, backward, update, communication };
const char* phase_name(Phase p);

// gelu: the exact (erf) form of BERT/GPT-2; its derivative needs the input, so its
// ActivationBackward reads {dy, x} where the others read {dy, y}.
enum class ActivationFn { relu, sigmoid, tanh, gelu };
enum class PoolFn { max, avg };
const char* activation_name(ActivationFn f);

// Attributes of every op kind in one plain struct; each kind reads the fields it needs.
struct OpAttrs {
  // Convolution and pooling windows (NCHW).
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
  bool has_bias = false;
  // Pooling.
  PoolFn pool = PoolFn::max;
  bool global_pool = false;
  // Activations.
  ActivationFn act = ActivationFn::relu;
  // MatMul: C[m,n] = op(A)[m,k] x op(B)[k,n], `batches` independent products (a batched
  // matmul of two activations, e.g. attention written out); dense layers have batches = 1.
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batches = 1;
  // Attention: heads share the model width D (head dim D / heads); causal masks key j > query i.
  int64_t heads = 1;
  bool causal = false;
  // Layer norm epsilon; rms: RMSNorm (no mean subtraction; Zhang & Sennrich 2019). A layer
  // norm without a bias (RMSNorm, MPT's LayerNorm) has inputs {x, gamma} and outputs no dbeta.
  double eps = 1e-5;
  bool rms = false;
  // Transpose: output axis i is input axis perm[i].
  std::vector<int> perm;
  // Scale: y = alpha x.
  double alpha = 1.0;
  // LSTM over a whole sequence.
  int64_t seq_len = 0, hidden = 0, input_size = 0;
  bool reverse = false, return_sequences = false;
  // Dropout.
  double rate = 0.0;
  // Concat / split axis.
  int axis = 1;
  // Data-parallel replicas an AllReduce sums over.
  int replicas = 1;
  // A loss of an auxiliary head that exists only for training (Inception's): the inference
  // lowering drops it with every op that only fed it.
  bool training_only = false;
};

// Work counted once per op (XLA HloCostAnalysis style); engines turn it into time.
struct Work {
  double flops = 0;            // a multiply-add counts 2
  double transcendentals = 0;  // exp, tanh, sigmoid, sqrt evaluations
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
};

struct OpNode {
  std::string name;
  OpKind kind = OpKind::Input;
  Phase phase = Phase::forward;
  OpAttrs attrs;
  std::vector<int> inputs;   // tensor ids
  std::vector<int> outputs;  // tensor ids
  DType compute_dtype = DType::fp32;
  int forward_op = -1;  // for backward ops: the forward op they differentiate
  Work work;
};

// An op of KIND reading tensors IN and writing OUT, run in PHASE at DTYPE; FORWARD_OP is the
// forward op a backward op differentiates (-1 for forward ops). Work is counted later.
OpNode make_op(OpKind kind, const std::string& name, const OpAttrs& attrs, std::vector<int> in, std::vector<int> out,
               Phase phase, DType dtype, int forward_op = -1);

struct EdgeData {
  int tensor = -1;
};

using BoostOpGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, OpNode, EdgeData>;

// An op graph holds at most this many ops, training step included. The largest zoo graph
// (ResNet-152's training step) has 1,653, a 96-layer Transformer a few thousand, ResNet-1202
// about 22,000; a model file asking for far more (the fuzzer found `blocks: [4, 4, 8651]`,
// 277,131 ops, 1.6 s and 400 MB to build, then `[5, 8, 3567]` stopping at a 100,000 limit after
// 13 s under ASan on a loaded core) is a mistake, and `layers: 2000000000` would never finish.
inline constexpr int kMaxGraphOps = 50000;

// Thrown by add_op past kMaxGraphOps; build_graph names the model file.
class GraphTooLarge : public UserError {
 public:
  using UserError::UserError;
};

class OpGraph {
 public:
  int add_tensor(std::string name, TensorDesc desc, TensorRole role);
  // Adds the op, sets it as producer of its outputs and adds an edge from the producer of
  // each input. Returns the op index (also its vertex descriptor).
  int add_op(OpNode op);

  const OpNode& op(int i) const { return g_[static_cast<size_t>(i)]; }
  OpNode& op_mut(int i) { return g_[static_cast<size_t>(i)]; }
  const Tensor& tensor(int t) const { return tensors_.at(static_cast<size_t>(t)); }
  Tensor& tensor_mut(int t) { return tensors_.at(static_cast<size_t>(t)); }
  int num_ops() const { return static_cast<int>(boost::num_vertices(g_)); }
  int num_tensors() const { return static_cast<int>(tensors_.size()); }
  const BoostOpGraph& boost_graph() const { return g_; }

  // Ops in insertion order: forward, then backward in reverse, then updates. Always a
  // valid topological order (tests check it against boost::topological_sort).
  std::vector<int> schedule() const;
  std::vector<int> topological_order() const;
  // Ops that read tensor t.
  std::vector<int> consumers(int t) const;
  std::vector<int> tensors_with_role(TensorRole r) const;

  std::string model_name;
  int64_t batch = 0;
  Precision precision = Precision::fp32;
  bool is_training_step = false;
  // Task::inference: a forward-only graph from models/inference.hpp (no labels, loss,
  // dropout or backward), whose memory figure counts weights in the compute type.
  Task task = Task::train;
  // Filled by the training lowering: tensor id -> id of its (summed) gradient.
  std::map<int, int> gradient_tensor;

 private:
  BoostOpGraph g_;
  std::vector<Tensor> tensors_;
  std::vector<std::vector<int>> consumers_;
};

}  // namespace xpusim
