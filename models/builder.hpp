// ModelBuilder: the layer-level API the zoo uses to build a forward graph. Each call adds
// one op (plus its weight tensors) and returns the output tensor id. Shapes follow PyTorch
// conventions so parameter counts can be checked against torchvision.
#pragma once
#include <string>
#include <vector>

#include "models/graph.hpp"

namespace xpusim {

struct ConvArgs {
  int filters = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation = 1;
  int groups = 1;
  bool bias = false;
};

class ModelBuilder {
 public:
  ModelBuilder(OpGraph& g, int64_t batch, Precision precision);

  // Host-fed inputs. Declare all inputs first: the first layer call seals them into one
  // Input op (one infeed per step).
  int image_input(int64_t channels, int64_t height, int64_t width);
  int sequence_input(const std::string& name, int64_t length);  // int32 token ids [N, T]
  int feature_input(const std::string& name, int64_t length, int64_t features);  // floats [N, T, F]
  // Labels: one class id per sample (or per timestep when `per_timestep_length` > 0).
  int labels(int64_t per_timestep_length = 0, const std::string& name = "labels");

  int conv(int x, const ConvArgs& a, const std::string& name);
  // Square-kernel shortcut: k x k, stride s, pad p.
  int conv(int x, int filters, int k, int s, int p, bool bias, const std::string& name);
  // The conv that produced `like`, applied to x with the same weight and bias (a head shared
  // by several feature levels, as an FPN's RPN head): no new parameters.
  int conv_like(int x, int like, const std::string& name);
  int batch_norm(int x, const std::string& name);
  int activation(int x, ActivationFn f, const std::string& name);
  int relu(int x, const std::string& name) { return activation(x, ActivationFn::relu, name); }
  int max_pool(int x, int k, int s, int p, const std::string& name);
  int avg_pool(int x, int k, int s, int p, const std::string& name);
  int global_avg_pool(int x, const std::string& name);  // [N,C,H,W] -> [N,C]; [N,T,F] -> [N,F]
  int dense(int x, int64_t units, bool bias, const std::string& name);  // on the last axis
  int dropout(int x, double rate, const std::string& name);
  int add(const std::vector<int>& xs, const std::string& name);
  int mul(int a, int b, const std::string& name);
  // Elementwise product where b broadcasts to a's shape (same rank, each dim equal or 1): a
  // squeeze-excitation gate [N,C,1,1] x [N,C,H,W], a layer scale. A Mul op: priced over the
  // larger operand, its gradient for b a reduction of the same size.
  int broadcast_mul(int a, int b, const std::string& name);
  // Pooling with per-axis windows and an output size the caller computed (ceil mode).
  int pool(int x, PoolFn f, const ConvArgs& window, int64_t out_h, int64_t out_w, const std::string& name);
  // A data-movement op that reads x and writes a tensor of `shape` (a slice, a pad, a resize,
  // a broadcast copy), priced as the traffic of both. It is a Concat of one input: its
  // gradient is the Split that moves the same bytes back.
  int copy_to(int x, const Shape& shape, int axis, const std::string& name);
  int concat(const std::vector<int>& xs, int axis, const std::string& name);
  int flatten(int x, const std::string& name);  // [N, ...] -> [N, prod(...)]
  int reshape(int x, const Shape& shape, const std::string& name);
  int embedding(int ids, int64_t vocab, int64_t dim, const std::string& name);
  int lstm(int x, int64_t hidden, bool return_sequences, bool reverse, const std::string& name);
  // Transformer ops. All act on the last axis of [..., D] activations.
  int layer_norm(int x, const std::string& name, double eps = 1e-5);  // weights gamma, beta [D]
  // A layer norm with or without beta, or an RMSNorm (gamma only, no mean subtraction).
  int layer_norm(int x, const std::string& name, double eps, bool bias, bool rms);
  // Mixture-of-experts GEMM: x [E, C, K] (C tokens dispatched to each of E experts) times one
  // weight [E, K, units] per expert -> [E, C, units]; a batched MatMul (a grouped GEMM).
  int expert_dense(int x, int64_t units, const std::string& name);
  // Multi-head scaled dot-product attention core: q [N, Tq, D], k and v [N, Tk, D] (already
  // projected) -> [N, Tq, D]; heads split D. The probabilities [N, H, Tq, Tk] are saved.
  int attention(int q, int k, int v, int64_t heads, bool causal, const std::string& name);
  int softmax(int x, const std::string& name);
  int transpose(int x, const std::vector<int>& perm, const std::string& name);
  // [..., M, K] x [..., K, N] (op() per trans flag) with equal leading dims; no weights.
  int batch_matmul(int a, int b, bool trans_a, bool trans_b, const std::string& name);
  int scale(int x, double alpha, const std::string& name);  // y = alpha x
  // A dense layer on the last axis with an existing weight (tied embeddings): W is [K, N], or
  // [N, K] when trans_w (an embedding table [vocab, D] used as the output projection).
  int dense_with(int x, int w, bool trans_w, bool bias, const std::string& name);
  // Softmax cross-entropy over the last axis (sigmoid cross-entropy when it has size 1).
  // `auxiliary`: the loss of a head that only training uses (inference drops it).
  int softmax_cross_entropy(int logits, int labels, const std::string& name, bool auxiliary = false);

  const Shape& shape(int t) const { return g_.tensor(t).desc.shape; }
  OpGraph& graph() { return g_; }
  DType act_dtype() const { return act_; }

 private:
  int weight(const std::string& name, Shape shape);
  int act_tensor(const std::string& name, Shape shape);
  int add(OpKind kind, const std::string& name, OpAttrs attrs, std::vector<int> in, std::vector<int> out);
  int conv_op(int x, const ConvArgs& a, int shared_from, const std::string& name);
  int square_pool(int x, PoolFn f, int k, int s, int p, const std::string& name);
  int same_shape_op(OpKind kind, int x, const OpAttrs& at, const std::string& name);
  int dense_op(const Shape& sh, int64_t units, bool trans_w, bool bias, std::vector<int> in, const std::string& name);
  // A layer's GEMM (x times a weight): under Precision::fp8 it computes in fp8.
  void gemm_precision(int op) { g_.op_mut(op).compute_dtype = gemm_; }
  void seal_inputs();

  OpGraph& g_;
  int64_t batch_;
  DType act_;
  DType gemm_;  // dense layers' compute type: fp8 under Precision::fp8 (weights read as fp8 copies)
  std::vector<int> pending_inputs_;
  bool sealed_ = false;
};

}  // namespace xpusim
