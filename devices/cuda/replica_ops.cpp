// The op handlers of a replica, one per op kind (LSTM in replica_lstm.cpp): cuDNN for
// convolution, batch-norm, pooling and activations, cuBLAS for matmul, our kernels for the
// rest. Mixed precision: activations are fp16/bf16 as the graph says, weights are fp32
// masters read through weight_as() (a per-step cast copy), weight gradients are fp32.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "common/error.hpp"
#include "devices/cuda/cuda_check.hpp"
#include "devices/cuda/dnn.hpp"
#include "devices/cuda/kernels.cuh"
#include "devices/cuda/replica.hpp"
#include "models/head_repeat.hpp"

namespace xpusim::cuda {

namespace {

// [N, C, H*W...] view of a tensor for cuDNN's 4-D descriptors (2-D [N, C] -> N, C, 1, 1).
struct NCHW {
  int64_t n = 1, c = 1, h = 1, w = 1;
};
NCHW as_nchw(const Shape& s) {
  NCHW r;
  if (s.empty()) return r;
  r.n = s[0];
  if (s.size() >= 2) r.c = s[1];
  if (s.size() >= 3) r.h = s[2];
  for (size_t i = 3; i < s.size(); ++i) r.w *= s[i];
  return r;
}
NCHW flat(const Shape& s) {  // [N, rest, 1, 1] for elementwise cuDNN ops
  NCHW r;
  if (s.empty()) return r;
  r.n = s[0];
  for (size_t i = 1; i < s.size(); ++i) r.c *= s[i];
  return r;
}

template <class D, void (*Destroy)(D)>
struct Handle {
  D d = nullptr;
  ~Handle() {
    if (d) Destroy(d);
  }
};
void destroy_act(cudnnActivationDescriptor_t d) { cudnnDestroyActivationDescriptor(d); }
void destroy_pool(cudnnPoolingDescriptor_t d) { cudnnDestroyPoolingDescriptor(d); }

cudnnActivationMode_t act_mode(ActivationFn f) {
  switch (f) {
    case ActivationFn::relu: return CUDNN_ACTIVATION_RELU;
    case ActivationFn::sigmoid: return CUDNN_ACTIVATION_SIGMOID;
    case ActivationFn::tanh: return CUDNN_ACTIVATION_TANH;
    case ActivationFn::gelu: break;  // our own kernel (k_gelu_*): cuDNN has no exact-erf GELU
  }
  return CUDNN_ACTIVATION_RELU;
}

// The cuDNN activation descriptor of one activation function (forward and backward).
struct ActivationDesc : Handle<cudnnActivationDescriptor_t, destroy_act> {
  explicit ActivationDesc(ActivationFn f) {
    XPUSIM_CUDA(cudnnCreateActivationDescriptor(&d));
    XPUSIM_CUDA(cudnnSetActivationDescriptor(d, act_mode(f), CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
};

// Batch-norm constants: epsilon 1e-5 and running-average momentum 0.1 (PyTorch defaults).
constexpr double kBnEpsilon = 1e-5;
constexpr double kBnMomentum = 0.1;

}  // namespace

void Replica::on_Input(const OpGraph&, int) {
  // The synthetic batch was uploaded once at construction and stays on the device.
}

void Replica::run_conv(const OpGraph& g, int op, int direction) {
  const OpNode& n = g.op(op);
  ConvCall c;
  c.dir = static_cast<ConvDirection>(direction);
  c.attrs = n.attrs;
  c.type = n.compute_dtype;
  c.math = conv_math_type(precision_);
  // Shapes come from the forward op: x = its input 0, y = its output 0.
  const OpNode& f = n.forward_op >= 0 ? g.op(n.forward_op) : n;
  const Shape& xs = shape(f.inputs[0]);
  const Shape& ys = shape(f.outputs[0]);
  c.n = xs[0], c.c = xs[1], c.h = xs[2], c.w = xs[3];
  c.k = ys[1], c.ho = ys[2], c.wo = ys[3];
  switch (c.dir) {
    case ConvDirection::forward: {
      c.xp = P(n.inputs[0]);
      c.wp = weight_as(n.inputs[1], c.type);
      c.out = P(n.outputs[0]);
      run_convolution(cudnn_, algo_cache_, *pool_, c);
      if (n.attrs.has_bias)
        k_add_bias(c.out, dtype(n.outputs[0]), static_cast<const float*>(P(n.inputs[2])), c.n, c.k, c.ho * c.wo,
                   stream_);
      break;
    }
    case ConvDirection::backward_data: {
      c.yp = P(n.inputs[0]);
      c.wp = weight_as(n.inputs[1], c.type);
      c.out = P(n.outputs[0]);
      run_convolution(cudnn_, algo_cache_, *pool_, c);
      break;
    }
    case ConvDirection::backward_filter: {
      c.xp = P(n.inputs[0]);
      c.yp = P(n.inputs[1]);
      int dw = n.outputs[0];
      // cuDNN writes dW in the data type; under mixed precision cast it into the fp32 gradient.
      bool cast = dtype(dw) != c.type;
      void* tmp = cast ? scratch(static_cast<size_t>(numel(dw) * dtype_bytes(c.type))) : nullptr;
      c.out = cast ? tmp : P(dw);
      run_convolution(cudnn_, algo_cache_, *pool_, c);
      if (cast) {
        k_cast(tmp, c.type, P(dw), dtype(dw), numel(dw), stream_);
        free_scratch(tmp);
      }
      if (n.outputs.size() > 1)
        k_reduce_channels(c.yp, dtype(n.inputs[1]), static_cast<float*>(P(n.outputs[1])), c.n, c.k, c.ho * c.wo,
                          stream_);
      break;
    }
  }
}

void Replica::on_Conv2D(const OpGraph& g, int op) { run_conv(g, op, static_cast<int>(ConvDirection::forward)); }
void Replica::on_Conv2DBackwardData(const OpGraph& g, int op) {
  run_conv(g, op, static_cast<int>(ConvDirection::backward_data));
}
void Replica::on_Conv2DBackwardFilter(const OpGraph& g, int op) {
  run_conv(g, op, static_cast<int>(ConvDirection::backward_filter));
}

void Replica::on_MatMul(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  const OpAttrs& a = n.attrs;
  DType ct = n.compute_dtype;
  auto operand = [&](int t) -> const void* {
    if (g.tensor(t).role == TensorRole::weight) return weight_as(t, ct);
    if (dtype(t) != ct) throw InternalError("cuda matmul: operand " + g.tensor(t).name + " is not " + dtype_name(ct));
    return P(t);
  };
  GemmArgs ga;
  ga.trans_a = a.trans_a;
  ga.trans_b = a.trans_b;
  ga.m = a.m, ga.n = a.n, ga.k = a.k;
  ga.a = operand(n.inputs[0]);
  ga.b = operand(n.inputs[1]);
  ga.lda = a.trans_a ? a.m : a.k;  // row-major storage: A is [k, m] when transposed
  ga.ldb = a.trans_b ? a.k : a.n;
  ga.c = P(n.outputs[0]);
  ga.ldc = a.n;
  ga.ab_type = ct;
  ga.c_type = dtype(n.outputs[0]);
  // A batched matmul of activations (attention written out): contiguous [batches, ., .] operands.
  ga.batch = a.batches;
  ga.stride_a = a.m * a.k;
  ga.stride_b = a.k * a.n;
  ga.stride_c = a.m * a.n;
  gemm(cublas_, ga, math_);
  if (!a.trans_a && n.inputs.size() > 2)  // forward with bias
    k_add_bias(ga.c, ga.c_type, static_cast<const float*>(P(n.inputs[2])), a.m * a.batches, a.n, 1, stream_);
  if (a.trans_a && n.outputs.size() > 1) {
    // Weight gradient: the bias gradient is dY's column sum. dY is input 1 for dW = X^T dY and
    // input 0 for a transposed weight (dW = dY^T X); its shape is the forward output's.
    const OpAttrs& f = n.forward_op >= 0 ? g.op(n.forward_op).attrs : a;
    const int dy = f.trans_b ? n.inputs[0] : n.inputs[1];
    k_reduce_channels(P(dy), dtype(dy), static_cast<float*>(P(n.outputs[1])), f.m, f.n, 1, stream_);
  }
}

void Replica::on_BatchNorm(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  NCHW s = as_nchw(shape(n.inputs[0]));
  TensorDescriptor xd(s.n, s.c, s.h, s.w, dtype(n.inputs[0]));
  TensorDescriptor pd(1, s.c, 1, 1, DType::fp32);
  const float one = 1.f, zero = 0.f;
  auto& run = bn_running_.at(op);
  XPUSIM_CUDA(cudnnBatchNormalizationForwardTraining(
      cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd.get(), P(n.inputs[0]), xd.get(), P(n.outputs[0]), pd.get(),
      P(n.inputs[1]), P(n.inputs[2]), kBnMomentum, run.first, run.second, kBnEpsilon, P(n.outputs[1]),
      P(n.outputs[2])));
}

void Replica::on_BatchNormBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: dy, x, gamma, mean, invstd; out: dx, dgamma, dbeta
  NCHW s = as_nchw(shape(n.inputs[1]));
  TensorDescriptor xd(s.n, s.c, s.h, s.w, dtype(n.inputs[1]));
  TensorDescriptor pd(1, s.c, 1, 1, DType::fp32);
  const float one = 1.f, zero = 0.f;
  XPUSIM_CUDA(cudnnBatchNormalizationBackward(cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, xd.get(),
                                              P(n.inputs[1]), xd.get(), P(n.inputs[0]), xd.get(), P(n.outputs[0]),
                                              pd.get(), P(n.inputs[2]), P(n.outputs[1]), P(n.outputs[2]), kBnEpsilon,
                                              P(n.inputs[3]), P(n.inputs[4])));
}

void Replica::on_Activation(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  if (n.attrs.act == ActivationFn::gelu) {
    k_gelu_forward(P(n.inputs[0]), P(n.outputs[0]), numel(n.inputs[0]), dtype(n.inputs[0]), stream_);
    return;
  }
  NCHW s = flat(shape(n.inputs[0]));
  TensorDescriptor d(s.n, s.c, s.h, s.w, dtype(n.inputs[0]));
  ActivationDesc ad(n.attrs.act);
  const float one = 1.f, zero = 0.f;
  XPUSIM_CUDA(cudnnActivationForward(cudnn_, ad.d, &one, d.get(), P(n.inputs[0]), &zero, d.get(), P(n.outputs[0])));
}

void Replica::on_ActivationBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: dy, y (gelu: dy, x)
  if (n.attrs.act == ActivationFn::gelu) {
    k_gelu_backward(P(n.inputs[0]), P(n.inputs[1]), P(n.outputs[0]), numel(n.inputs[0]), dtype(n.inputs[0]), stream_);
    return;
  }
  NCHW s = flat(shape(n.inputs[0]));
  TensorDescriptor d(s.n, s.c, s.h, s.w, dtype(n.inputs[0]));
  ActivationDesc ad(n.attrs.act);
  const float one = 1.f, zero = 0.f;
  // The graph keeps only y; relu, sigmoid and tanh derivatives are functions of y, and
  // y > 0 exactly where x > 0, so y stands in for x.
  XPUSIM_CUDA(cudnnActivationBackward(cudnn_, ad.d, &one, d.get(), P(n.inputs[1]), d.get(), P(n.inputs[0]), d.get(),
                                      P(n.inputs[1]), &zero, d.get(), P(n.outputs[0])));
}

void Replica::on_Add(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  DType t = dtype(n.outputs[0]);
  for (int x : n.inputs)
    if (dtype(x) != t) throw InternalError("cuda add: mixed element types in " + n.name);
  std::vector<const void*> ins;
  for (int x : n.inputs) ins.push_back(P(x));
  void* out = P(n.outputs[0]);
  // Eight summands per launch; later launches add onto the partial sum.
  size_t i = 0;
  bool first = true;
  while (i < ins.size()) {
    std::vector<const void*> chunk;
    if (!first) chunk.push_back(out);
    while (chunk.size() < 8 && i < ins.size()) chunk.push_back(ins[i++]);
    k_add_n(out, chunk.data(), static_cast<int>(chunk.size()), numel(n.outputs[0]), t, stream_);
    first = false;
  }
}

void Replica::on_Mul(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  if (numel(n.inputs[0]) != numel(n.outputs[0]) || numel(n.inputs[1]) != numel(n.outputs[0]))
    throw UserError("the cuda backend does not execute the broadcasting product '" + n.name +
                    "' (an imported model's gate or layer scale); predict prices it");
  k_mul(P(n.outputs[0]), P(n.inputs[0]), P(n.inputs[1]), numel(n.outputs[0]), dtype(n.outputs[0]), stream_);
}

namespace {
// cuDNN pooling descriptors for a Pool op; 3-D [N, T, F] global pooling is a (T x 1) window
// over an (N, 1, T, F) view.
struct PoolDescs {
  std::unique_ptr<TensorDescriptor> x, y;
  Handle<cudnnPoolingDescriptor_t, destroy_pool> pd;
  PoolDescs(const OpAttrs& a, const Shape& xs, DType t) {
    NCHW in, out;
    int kh = a.kernel_h, kw = a.kernel_w, sh = a.stride_h, sw = a.stride_w, ph = a.pad_h, pw = a.pad_w;
    if (xs.size() == 3) {
      in = {xs[0], 1, xs[1], xs[2]};
      out = {xs[0], 1, 1, xs[2]};
      kh = static_cast<int>(xs[1]), kw = 1, sh = kh, sw = 1, ph = pw = 0;
    } else {
      in = {xs[0], xs[1], xs[2], xs[3]};
      if (a.global_pool) {
        kh = static_cast<int>(xs[2]), kw = static_cast<int>(xs[3]);
        sh = kh, sw = kw, ph = pw = 0;
      }
      out = {xs[0], xs[1], (xs[2] + 2 * ph - kh) / sh + 1, (xs[3] + 2 * pw - kw) / sw + 1};
    }
    x = std::make_unique<TensorDescriptor>(in.n, in.c, in.h, in.w, t);
    y = std::make_unique<TensorDescriptor>(out.n, out.c, out.h, out.w, t);
    XPUSIM_CUDA(cudnnCreatePoolingDescriptor(&pd.d));
    // Average pooling counts padding (PyTorch's count_include_pad=True default).
    cudnnPoolingMode_t mode =
        a.pool == PoolFn::max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    XPUSIM_CUDA(cudnnSetPooling2dDescriptor(pd.d, mode, CUDNN_NOT_PROPAGATE_NAN, kh, kw, ph, pw, sh, sw));
  }
};
}  // namespace

void Replica::on_Pool(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  PoolDescs d(n.attrs, shape(n.inputs[0]), dtype(n.inputs[0]));
  const float one = 1.f, zero = 0.f;
  XPUSIM_CUDA(cudnnPoolingForward(cudnn_, d.pd.d, &one, d.x->get(), P(n.inputs[0]), &zero, d.y->get(),
                                  P(n.outputs[0])));
}

void Replica::on_PoolBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // max: dy, x, y; avg: dy
  const OpNode& f = g.op(n.forward_op);
  PoolDescs d(n.attrs, shape(f.inputs[0]), dtype(n.inputs[0]));
  const float one = 1.f, zero = 0.f;
  // Average pooling's gradient depends on shapes only; cuDNN still takes x and y pointers,
  // which it does not read in that mode.
  const void* x = n.inputs.size() > 1 ? P(n.inputs[1]) : P(n.outputs[0]);
  const void* y = n.inputs.size() > 2 ? P(n.inputs[2]) : P(n.inputs[0]);
  XPUSIM_CUDA(cudnnPoolingBackward(cudnn_, d.pd.d, &one, d.y->get(), y, d.y->get(), P(n.inputs[0]), d.x->get(), x,
                                   &zero, d.x->get(), P(n.outputs[0])));
}

namespace {
// Concat and split along `axis` are strided 2-D copies: `outer` rows of contiguous pieces.
int64_t outer_of(const Shape& s, int axis) {
  int64_t o = 1;
  for (int i = 0; i < axis; ++i) o *= s[static_cast<size_t>(i)];
  return o;
}
}  // namespace

void Replica::on_Concat(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  if (const auto h = head_repeat_of(g, n)) {  // grouped-query attention's key/value repeat
    if (dtype(n.inputs[0]) != dtype(n.outputs[0])) throw InternalError("cuda head repeat: types differ in " + n.name);
    k_repeat_heads(P(n.inputs[0]), P(n.outputs[0]), h->rows, h->kv_heads, h->group, h->head_dim, dtype(n.inputs[0]),
                   stream_);
    return;
  }
  // A one-input Concat is an imported model's slice, pad or resize (ModelBuilder::copy_to),
  // priced as traffic; only true concatenations run here.
  int64_t parts = 0;
  for (int x : n.inputs) parts += numel(x);
  if (parts != numel(n.outputs[0]))
    throw UserError("the cuda backend does not execute the data-movement op '" + n.name +
                    "' (a slice, pad or resize of an imported model); predict prices it");
  const Shape& ys = shape(n.outputs[0]);
  int64_t outer = outer_of(ys, n.attrs.axis);
  size_t eb = static_cast<size_t>(dtype_bytes(dtype(n.outputs[0])));
  size_t row = static_cast<size_t>(numel(n.outputs[0]) / std::max<int64_t>(1, outer)) * eb;
  char* dst = static_cast<char*>(P(n.outputs[0]));
  size_t off = 0;
  for (int x : n.inputs) {
    size_t piece = static_cast<size_t>(numel(x) / std::max<int64_t>(1, outer)) * eb;
    XPUSIM_CUDA(cudaMemcpy2DAsync(dst + off, row, P(x), piece, piece, static_cast<size_t>(outer),
                                  cudaMemcpyDeviceToDevice, stream_));
    off += piece;
  }
}

void Replica::on_Split(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  if (const auto h = head_repeat_of(g, n)) {  // its gradient: the group's sum per key/value head
    if (dtype(n.inputs[0]) != dtype(n.outputs[0])) throw InternalError("cuda head repeat: types differ in " + n.name);
    k_repeat_heads_backward(P(n.inputs[0]), P(n.outputs[0]), h->rows, h->kv_heads, h->group, h->head_dim,
                            dtype(n.inputs[0]), stream_);
    return;
  }
  int64_t parts = 0;
  for (int y : n.outputs) parts += numel(y);
  if (parts != numel(n.inputs[0]))
    throw UserError("the cuda backend does not execute the data-movement op '" + n.name +
                    "' (the gradient of a slice, pad or resize of an imported model); predict prices it");
  const Shape& xs = shape(n.inputs[0]);
  int64_t outer = outer_of(xs, n.attrs.axis);
  size_t eb = static_cast<size_t>(dtype_bytes(dtype(n.inputs[0])));
  size_t row = static_cast<size_t>(numel(n.inputs[0]) / std::max<int64_t>(1, outer)) * eb;
  const char* src = static_cast<const char*>(P(n.inputs[0]));
  size_t off = 0;
  for (int y : n.outputs) {
    size_t piece = static_cast<size_t>(numel(y) / std::max<int64_t>(1, outer)) * eb;
    XPUSIM_CUDA(cudaMemcpy2DAsync(P(y), piece, src + off, row, piece, static_cast<size_t>(outer),
                                  cudaMemcpyDeviceToDevice, stream_));
    off += piece;
  }
}

void Replica::on_Reshape(const OpGraph&, int) {
  // A view: run_op aliased the output to the input's buffer.
}

void Replica::on_Dropout(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);
  // A fresh mask per op, step and replica from a counter-based hash (no RNG state).
  uint64_t seed = o_.seed ^ (static_cast<uint64_t>(op) << 32) ^ (static_cast<uint64_t>(step_) << 8) ^
                  static_cast<uint64_t>(o_.replica);
  k_dropout_forward(P(n.inputs[0]), P(n.outputs[0]), static_cast<uint8_t*>(P(n.outputs[1])), numel(n.inputs[0]),
                    n.attrs.rate, seed, dtype(n.inputs[0]), stream_);
}

void Replica::on_DropoutBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: dy, mask
  k_dropout_backward(P(n.inputs[0]), static_cast<const uint8_t*>(P(n.inputs[1])), P(n.outputs[0]), numel(n.inputs[0]),
                     n.attrs.rate, dtype(n.inputs[0]), stream_);
}

void Replica::on_SoftmaxCrossEntropy(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: logits, labels; out: loss, probs
  int64_t classes = shape(n.inputs[0]).back();
  int64_t rows = numel(n.inputs[0]) / classes;
  k_softmax_ce_forward(P(n.inputs[0]), dtype(n.inputs[0]), static_cast<const int32_t*>(P(n.inputs[1])), rows, classes,
                       static_cast<float*>(P(n.outputs[1])), static_cast<float*>(P(n.outputs[0])), stream_);
}

void Replica::on_SoftmaxCrossEntropyBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: probs, labels; out: dlogits
  int64_t classes = shape(n.inputs[0]).back();
  int64_t rows = numel(n.inputs[0]) / classes;
  // The loss scale enters here, at the root of the backward pass.
  k_softmax_ce_backward(static_cast<const float*>(P(n.inputs[0])), static_cast<const int32_t*>(P(n.inputs[1])), rows,
                        classes, P(n.outputs[0]), dtype(n.outputs[0]), loss_scale_, stream_);
}

void Replica::on_Embedding(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: ids, table
  const Shape& ts = shape(n.inputs[1]);
  k_embedding_forward(static_cast<const int32_t*>(P(n.inputs[0])), static_cast<const float*>(P(n.inputs[1])),
                      numel(n.inputs[0]), ts[0], ts[1], P(n.outputs[0]), dtype(n.outputs[0]), stream_);
}

void Replica::on_EmbeddingBackward(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: dy, ids; out: dtable
  const Shape& ts = shape(n.outputs[0]);
  XPUSIM_CUDA(cudaMemsetAsync(P(n.outputs[0]), 0, static_cast<size_t>(g.tensor(n.outputs[0]).desc.bytes()), stream_));
  k_embedding_backward(P(n.inputs[0]), dtype(n.inputs[0]), static_cast<const int32_t*>(P(n.inputs[1])),
                       numel(n.inputs[1]), ts[0], ts[1], static_cast<float*>(P(n.outputs[0])), stream_);
}

// Before the first update of a step: unscale every gradient the optimizer will read and
// flag inf/NaN, so that no update runs on an overflowed step (the kernels check the flag).
void Replica::unscale_gradients_once() {
  if (unscaled_) return;
  unscaled_ = true;
  if (loss_scale_ == 1.f) return;
  for (int t : update_grads_)
    k_unscale_check(static_cast<float*>(P(t)), numel(t), 1.f / loss_scale_, found_inf_, stream_);
}

void Replica::on_SGDMomentumUpdate(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: w, grad, v
  unscale_gradients_once();
  k_sgd_momentum(static_cast<float*>(P(n.inputs[0])), static_cast<const float*>(P(n.inputs[1])),
                 static_cast<float*>(P(n.inputs[2])), numel(n.inputs[0]), o_.opt.sgd_lr, o_.opt.sgd_momentum,
                 o_.opt.sgd_weight_decay, found_inf_, stream_);
}

void Replica::on_AdamUpdate(const OpGraph& g, int op) {
  const OpNode& n = g.op(op);  // in: w, grad, m, v
  unscale_gradients_once();
  k_adam(static_cast<float*>(P(n.inputs[0])), static_cast<const float*>(P(n.inputs[1])),
         static_cast<float*>(P(n.inputs[2])), static_cast<float*>(P(n.inputs[3])), numel(n.inputs[0]),
         o_.opt.adam_lr, o_.opt.adam_beta1, o_.opt.adam_beta2, o_.opt.adam_eps, static_cast<int>(step_) + 1,
         found_inf_, stream_);
}

void Replica::on_AllReduce(const OpGraph&, int op) {
  // The engine launched the NCCL all-reduce when the gradient was produced (overlapping the
  // rest of the backward pass); the optimizer must wait for it here.
  auto it = comm_done_.find(op);
  if (it == comm_done_.end()) throw InternalError("cuda: all-reduce was not launched before its consumer");
  XPUSIM_CUDA(cudaStreamWaitEvent(stream_, it->second, 0));
}

}  // namespace xpusim::cuda
