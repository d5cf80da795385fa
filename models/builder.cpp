#include "models/builder.hpp"

#include "common/error.hpp"

namespace xpusim {

namespace {
int64_t conv_out(int64_t in, int k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }

// The window of a conv or pool (kernel, stride, padding per axis) as op attributes.
OpAttrs window_attrs(const ConvArgs& a) {
  OpAttrs at;  // per axis pair, as OpAttrs declares them
  at.kernel_h = a.kernel_h, at.kernel_w = a.kernel_w;
  at.stride_h = a.stride_h, at.stride_w = a.stride_w;
  at.pad_h = a.pad_h, at.pad_w = a.pad_w;
  return at;
}
}  // namespace

ModelBuilder::ModelBuilder(OpGraph& g, int64_t batch, Precision precision)
    : g_(g), batch_(batch), act_(activation_dtype(precision)), gemm_(gemm_input_dtype(precision)) {
  g_.batch = batch;
  g_.precision = precision;
}

int ModelBuilder::image_input(int64_t c, int64_t h, int64_t w) {
  int t = g_.add_tensor("images", {{batch_, c, h, w}, act_}, TensorRole::input);
  pending_inputs_.push_back(t);
  return t;
}

int ModelBuilder::sequence_input(const std::string& name, int64_t length) {
  int t = g_.add_tensor(name, {{batch_, length}, DType::int32}, TensorRole::input);
  pending_inputs_.push_back(t);
  return t;
}

int ModelBuilder::feature_input(const std::string& name, int64_t length, int64_t features) {
  int t = g_.add_tensor(name, {{batch_, length, features}, act_}, TensorRole::input);
  pending_inputs_.push_back(t);
  return t;
}

int ModelBuilder::labels(int64_t per_timestep_length, const std::string& name) {
  Shape s = per_timestep_length > 0 ? Shape{batch_, per_timestep_length} : Shape{batch_};
  int t = g_.add_tensor(name, {s, DType::int32}, TensorRole::label);
  pending_inputs_.push_back(t);
  return t;
}

void ModelBuilder::seal_inputs() {
  if (sealed_) return;
  sealed_ = true;
  if (pending_inputs_.empty()) throw InternalError("model declares no inputs");
  OpNode op;
  op.name = "input";
  op.kind = OpKind::Input;
  op.outputs = pending_inputs_;
  op.compute_dtype = act_;
  g_.add_op(op);
}

int ModelBuilder::weight(const std::string& name, Shape shape) {
  return g_.add_tensor(name, {std::move(shape), DType::fp32}, TensorRole::weight);
}

int ModelBuilder::act_tensor(const std::string& name, Shape shape) {
  return g_.add_tensor(name, {std::move(shape), act_}, TensorRole::activation);
}

int ModelBuilder::add(OpKind kind, const std::string& name, OpAttrs attrs, std::vector<int> in, std::vector<int> out) {
  seal_inputs();
  return g_.add_op(make_op(kind, name, attrs, std::move(in), std::move(out), Phase::forward, act_));
}

int ModelBuilder::conv(int x, const ConvArgs& a, const std::string& name) { return conv_op(x, a, -1, name); }

int ModelBuilder::conv_like(int x, int like, const std::string& name) {
  const OpNode& earlier = g_.op(g_.tensor(like).producer);
  if (earlier.kind != OpKind::Conv2D) throw InternalError(name + ": conv_like needs the output of a conv");
  const OpAttrs& at = earlier.attrs;
  ConvArgs a;
  a.filters = static_cast<int>(g_.tensor(earlier.inputs[1]).desc.shape[0]);
  a.kernel_h = at.kernel_h, a.kernel_w = at.kernel_w;
  a.stride_h = at.stride_h, a.stride_w = at.stride_w;
  a.pad_h = at.pad_h, a.pad_w = at.pad_w;
  a.dilation = at.dilation_h;
  a.groups = at.groups;
  a.bias = at.has_bias;
  return conv_op(x, a, g_.tensor(like).producer, name);
}

// shared_from >= 0: the conv op whose weight (and bias) this one reuses; else new ones.
int ModelBuilder::conv_op(int x, const ConvArgs& a, int shared_from, const std::string& name) {
  const Shape s = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  if (s.size() != 4) throw InternalError(name + ": conv needs NCHW input, got " + shape_str(s));
  int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  if (c % a.groups || a.filters % a.groups) throw InternalError(name + ": channels not divisible by groups");
  int64_t ho = conv_out(h, a.kernel_h, a.stride_h, a.pad_h, a.dilation);
  int64_t wo = conv_out(w, a.kernel_w, a.stride_w, a.pad_w, a.dilation);
  if (ho <= 0 || wo <= 0) throw InternalError(name + ": output would be empty for input " + shape_str(s));
  OpAttrs at = window_attrs(a);
  at.dilation_h = at.dilation_w = a.dilation;
  at.groups = a.groups;
  at.has_bias = a.bias;
  const Shape wshape{a.filters, c / a.groups, a.kernel_h, a.kernel_w};
  std::vector<int> in{x};
  if (shared_from >= 0) {
    const std::vector<int> params(g_.op(shared_from).inputs.begin() + 1, g_.op(shared_from).inputs.end());
    if (shape(params[0]) != wshape) throw InternalError(name + ": the shared conv weight does not fit this input");
    in.insert(in.end(), params.begin(), params.end());
  } else {
    in.push_back(weight(name + ".weight", wshape));
    if (a.bias) in.push_back(weight(name + ".bias", {a.filters}));
  }
  int y = act_tensor(name, {n, a.filters, ho, wo});
  add(OpKind::Conv2D, name, at, in, {y});
  return y;
}

int ModelBuilder::conv(int x, int filters, int k, int s, int p, bool bias, const std::string& name) {
  ConvArgs a;
  a.filters = filters;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  a.bias = bias;
  return conv(x, a, name);
}

int ModelBuilder::batch_norm(int x, const std::string& name) {
  const Shape s = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  if (s.size() != 2 && s.size() != 4) throw InternalError(name + ": batch-norm needs [N,C] or [N,C,H,W]");
  int64_t c = s[1];  // channels (NCHW) or features ([N, F])
  int gamma = weight(name + ".weight", {c});
  int beta = weight(name + ".bias", {c});
  int y = act_tensor(name, s);
  // Batch statistics are saved for the backward pass.
  int mean = g_.add_tensor(name + ".mean", {{c}, DType::fp32}, TensorRole::aux);
  int invstd = g_.add_tensor(name + ".invstd", {{c}, DType::fp32}, TensorRole::aux);
  add(OpKind::BatchNorm, name, {}, {x, gamma, beta}, {y, mean, invstd});
  return y;
}

// An op of one input that writes a tensor of its shape.
int ModelBuilder::same_shape_op(OpKind kind, int x, const OpAttrs& at, const std::string& name) {
  int y = act_tensor(name, shape(x));
  add(kind, name, at, {x}, {y});
  return y;
}

int ModelBuilder::activation(int x, ActivationFn f, const std::string& name) {
  OpAttrs at;
  at.act = f;
  return same_shape_op(OpKind::Activation, x, at, name);
}

// A square window k with stride s and padding p on both axes (floor mode).
int ModelBuilder::square_pool(int x, PoolFn f, int k, int s, int p, const std::string& name) {
  const Shape sh = shape(x);
  ConvArgs w;
  w.kernel_h = w.kernel_w = k;
  w.stride_h = w.stride_w = s;
  w.pad_h = w.pad_w = p;
  return pool(x, f, w, conv_out(sh[2], k, s, p, 1), conv_out(sh[3], k, s, p, 1), name);
}

int ModelBuilder::max_pool(int x, int k, int s, int p, const std::string& name) {
  return square_pool(x, PoolFn::max, k, s, p, name);
}

int ModelBuilder::avg_pool(int x, int k, int s, int p, const std::string& name) {
  return square_pool(x, PoolFn::avg, k, s, p, name);
}

int ModelBuilder::global_avg_pool(int x, const std::string& name) {
  const Shape sh = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  OpAttrs at;
  at.pool = PoolFn::avg;
  at.global_pool = true;
  Shape out;
  if (sh.size() == 4) {
    at.kernel_h = static_cast<int>(sh[2]);
    at.kernel_w = static_cast<int>(sh[3]);
    out = {sh[0], sh[1]};
  } else if (sh.size() == 3) {  // [N, T, F]: average over time (Keras GlobalAveragePooling1D)
    at.kernel_h = static_cast<int>(sh[1]);
    out = {sh[0], sh[2]};
  } else {
    throw InternalError(name + ": global pool needs a 3-D or 4-D input");
  }
  int y = act_tensor(name, out);
  add(OpKind::Pool, name, at, {x}, {y});
  return y;
}

// y = x W (+ b) over x's last axis, W already added as in[1]: the bias (when asked) is added
// here, then the output of x's shape with the last axis = units.
int ModelBuilder::dense_op(const Shape& sh, int64_t units, bool trans_w, bool bias, std::vector<int> in,
                           const std::string& name) {
  int64_t m = 1;
  for (size_t i = 0; i + 1 < sh.size(); ++i) m *= sh[i];
  OpAttrs at;
  at.m = m;
  at.n = units;
  at.k = sh.back();
  at.trans_b = trans_w;
  at.has_bias = bias;
  if (bias) in.push_back(weight(name + ".bias", {units}));
  Shape out = sh;
  out.back() = units;
  int y = act_tensor(name, out);
  gemm_precision(add(OpKind::MatMul, name, at, std::move(in), {y}));
  return y;
}

int ModelBuilder::dense(int x, int64_t units, bool bias, const std::string& name) {
  const Shape sh = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  // Stored [in, out] so y = x W; torchvision stores [out, in]: same count.
  return dense_op(sh, units, false, bias, {x, weight(name + ".weight", {sh.back(), units})}, name);
}

int ModelBuilder::dense_with(int x, int w, bool trans_w, bool bias, const std::string& name) {
  const Shape sh = shape(x);  // copies: adding tensors below may reallocate the tensor list
  const Shape ws = shape(w);
  if (ws.size() != 2) throw InternalError(name + ": dense_with needs a 2-D weight");
  const int64_t k = sh.back(), units = trans_w ? ws[0] : ws[1];
  if ((trans_w ? ws[1] : ws[0]) != k) throw InternalError(name + ": dense_with weight does not match the input");
  return dense_op(sh, units, trans_w, bias, {x, w}, name);
}

int ModelBuilder::dropout(int x, double rate, const std::string& name) {
  OpAttrs at;
  at.rate = rate;
  int y = act_tensor(name, shape(x));
  int mask = g_.add_tensor(name + ".mask", {shape(x), DType::uint8}, TensorRole::aux);
  add(OpKind::Dropout, name, at, {x}, {y, mask});
  return y;
}

int ModelBuilder::add(const std::vector<int>& xs, const std::string& name) {
  for (int x : xs)
    if (shape(x) != shape(xs[0])) throw InternalError(name + ": add of different shapes");
  int y = act_tensor(name, shape(xs[0]));
  add(OpKind::Add, name, {}, xs, {y});
  return y;
}

int ModelBuilder::mul(int a, int b, const std::string& name) {
  if (shape(a) != shape(b)) throw InternalError(name + ": mul of different shapes");
  int y = act_tensor(name, shape(a));
  add(OpKind::Mul, name, {}, {a, b}, {y});
  return y;
}

int ModelBuilder::broadcast_mul(int a, int b, const std::string& name) {
  const Shape as = shape(a), bs = shape(b);
  if (as.size() != bs.size()) throw InternalError(name + ": broadcast mul of different ranks");
  for (size_t k = 0; k < as.size(); ++k)
    if (bs[k] != as[k] && bs[k] != 1) throw InternalError(name + ": " + shape_str(bs) + " does not broadcast to " + shape_str(as));
  int y = act_tensor(name, as);
  add(OpKind::Mul, name, {}, {a, b}, {y});
  return y;
}

int ModelBuilder::pool(int x, PoolFn f, const ConvArgs& w, int64_t out_h, int64_t out_w, const std::string& name) {
  const Shape sh = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  OpAttrs at = window_attrs(w);
  at.pool = f;
  int y = act_tensor(name, {sh[0], sh[1], out_h, out_w});
  add(OpKind::Pool, name, at, {x}, {y});
  return y;
}

int ModelBuilder::copy_to(int x, const Shape& s, int axis, const std::string& name) {
  OpAttrs at;
  at.axis = axis;
  int y = act_tensor(name, s);
  add(OpKind::Concat, name, at, {x}, {y});
  return y;
}

int ModelBuilder::concat(const std::vector<int>& xs, int axis, const std::string& name) {
  Shape out = shape(xs[0]);
  int ax = axis < 0 ? static_cast<int>(out.size()) + axis : axis;
  out[static_cast<size_t>(ax)] = 0;
  for (int x : xs) out[static_cast<size_t>(ax)] += shape(x)[static_cast<size_t>(ax)];
  OpAttrs at;
  at.axis = ax;
  int y = act_tensor(name, out);
  add(OpKind::Concat, name, at, xs, {y});
  return y;
}

int ModelBuilder::reshape(int x, const Shape& s, const std::string& name) {
  int y = act_tensor(name, s);
  if (g_.tensor(y).desc.numel() != g_.tensor(x).desc.numel())
    throw InternalError(name + ": reshape changes the element count");
  g_.tensor_mut(y).is_view = true;
  add(OpKind::Reshape, name, {}, {x}, {y});
  return y;
}

int ModelBuilder::flatten(int x, const std::string& name) {
  const Shape sh = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  int64_t rest = 1;
  for (size_t i = 1; i < sh.size(); ++i) rest *= sh[i];
  return reshape(x, {sh[0], rest}, name);
}

int ModelBuilder::embedding(int ids, int64_t vocab, int64_t dim, const std::string& name) {
  Shape out = shape(ids);
  out.push_back(dim);
  int table = weight(name + ".weight", {vocab, dim});
  int y = act_tensor(name, out);
  add(OpKind::Embedding, name, {}, {ids, table}, {y});
  return y;
}

int ModelBuilder::lstm(int x, int64_t hidden, bool return_sequences, bool reverse, const std::string& name) {
  const Shape sh = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  if (sh.size() != 3) throw InternalError(name + ": lstm needs [N, T, F] input");
  OpAttrs at;
  at.seq_len = sh[1];
  at.hidden = hidden;
  at.input_size = sh[2];
  at.reverse = reverse;
  at.return_sequences = return_sequences;
  // Keras layout: kernel [F, 4H], recurrent kernel [H, 4H], one bias [4H] (gates i, f, c, o).
  int w = weight(name + ".kernel", {sh[2], 4 * hidden});
  int u = weight(name + ".recurrent_kernel", {hidden, 4 * hidden});
  int b = weight(name + ".bias", {4 * hidden});
  Shape out = return_sequences ? Shape{sh[0], sh[1], hidden} : Shape{sh[0], hidden};
  int y = act_tensor(name, out);
  // Gates and cell states of every timestep, kept for backpropagation through time.
  int state = g_.add_tensor(name + ".gates", {{sh[1], sh[0], 6 * hidden}, act_}, TensorRole::aux);
  add(OpKind::LSTM, name, at, {x, w, u, b}, {y, state});
  return y;
}

int ModelBuilder::layer_norm(int x, const std::string& name, double eps) {
  return layer_norm(x, name, eps, true, false);
}

int ModelBuilder::layer_norm(int x, const std::string& name, double eps, bool bias, bool rms) {
  const Shape s = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  if (s.size() < 2) throw InternalError(name + ": layer norm needs [..., D]");
  const int64_t d = s.back();
  const int64_t rows = g_.tensor(x).desc.numel() / d;
  OpAttrs at;
  at.eps = eps;
  at.rms = rms;
  std::vector<int> in{x, weight(name + ".weight", {d})};
  if (bias) in.push_back(weight(name + ".bias", {d}));
  int y = act_tensor(name, s);
  // Per-row statistics are saved for the backward pass (an RMSNorm's mean is 0).
  int mean = g_.add_tensor(name + ".mean", {{rows}, DType::fp32}, TensorRole::aux);
  int rstd = g_.add_tensor(name + ".rstd", {{rows}, DType::fp32}, TensorRole::aux);
  add(OpKind::LayerNorm, name, at, in, {y, mean, rstd});
  return y;
}

int ModelBuilder::expert_dense(int x, int64_t units, const std::string& name) {
  const Shape sh = shape(x);  // a copy: adding tensors below may reallocate the tensor list
  if (sh.size() != 3) throw InternalError(name + ": expert dense needs [E, C, K]");
  OpAttrs at;
  at.m = sh[1];
  at.n = units;
  at.k = sh[2];
  at.batches = sh[0];
  std::vector<int> in{x, weight(name + ".weight", {sh[0], sh[2], units})};
  int y = act_tensor(name, {sh[0], sh[1], units});
  gemm_precision(add(OpKind::MatMul, name, at, in, {y}));
  return y;
}

int ModelBuilder::attention(int q, int k, int v, int64_t heads, bool causal, const std::string& name) {
  const Shape qs = shape(q), ks = shape(k), vs = shape(v);
  if (qs.size() != 3 || ks.size() != 3 || vs != ks || qs[0] != ks[0] || qs[2] != ks[2])
    throw InternalError(name + ": attention needs q [N,Tq,D] and k, v [N,Tk,D], got " + shape_str(qs) + ", " +
                        shape_str(ks) + ", " + shape_str(vs));
  if (heads < 1 || qs[2] % heads) throw InternalError(name + ": heads must divide the model width");
  if (causal && qs[1] != ks[1]) throw InternalError(name + ": a causal mask needs Tq == Tk");
  OpAttrs at;
  at.heads = heads;
  at.causal = causal;
  at.seq_len = qs[1];
  int y = act_tensor(name, qs);
  int probs = g_.add_tensor(name + ".probs", {{qs[0], heads, qs[1], ks[1]}, act_}, TensorRole::aux);
  add(OpKind::Attention, name, at, {q, k, v}, {y, probs});
  return y;
}

int ModelBuilder::softmax(int x, const std::string& name) { return same_shape_op(OpKind::Softmax, x, {}, name); }

int ModelBuilder::transpose(int x, const std::vector<int>& perm, const std::string& name) {
  const Shape s = shape(x);
  if (perm.size() != s.size()) throw InternalError(name + ": transpose permutation rank differs from the input's");
  std::vector<bool> seen(s.size(), false);
  Shape out;
  for (int p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= s.size() || seen[static_cast<size_t>(p)])
      throw InternalError(name + ": transpose needs a permutation of the input axes");
    seen[static_cast<size_t>(p)] = true;
    out.push_back(s[static_cast<size_t>(p)]);
  }
  OpAttrs at;
  at.perm = perm;
  int y = act_tensor(name, out);
  add(OpKind::Transpose, name, at, {x}, {y});
  return y;
}

int ModelBuilder::batch_matmul(int a, int b, bool trans_a, bool trans_b, const std::string& name) {
  const Shape as = shape(a), bs = shape(b);
  if (as.size() < 2 || as.size() != bs.size())
    throw InternalError(name + ": batch matmul needs operands of equal rank >= 2, got " + shape_str(as) + " and " +
                        shape_str(bs));
  const size_t r = as.size();
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < r; ++i) {
    if (as[i] != bs[i]) throw InternalError(name + ": batch matmul leading dimensions differ");
    batches *= as[i];
  }
  const int64_t m = trans_a ? as[r - 1] : as[r - 2], ka = trans_a ? as[r - 2] : as[r - 1];
  const int64_t kb = trans_b ? bs[r - 1] : bs[r - 2], n = trans_b ? bs[r - 2] : bs[r - 1];
  if (ka != kb) throw InternalError(name + ": batch matmul inner dimensions differ");
  OpAttrs at;
  at.m = m;
  at.n = n;
  at.k = ka;
  at.trans_a = trans_a;
  at.trans_b = trans_b;
  at.batches = batches;
  Shape out(as.begin(), as.end() - 2);
  out.push_back(m);
  out.push_back(n);
  int y = act_tensor(name, out);
  add(OpKind::MatMul, name, at, {a, b}, {y});
  return y;
}

int ModelBuilder::scale(int x, double alpha, const std::string& name) {
  OpAttrs at;
  at.alpha = alpha;
  return same_shape_op(OpKind::Scale, x, at, name);
}

int ModelBuilder::softmax_cross_entropy(int logits, int labels, const std::string& name, bool auxiliary) {
  int loss = g_.add_tensor(name, {{1}, DType::fp32}, TensorRole::loss);
  int probs = g_.add_tensor(name + ".probs", {shape(logits), DType::fp32}, TensorRole::aux);
  OpAttrs a;
  a.training_only = auxiliary;
  add(OpKind::SoftmaxCrossEntropy, name, a, {logits, labels}, {loss, probs});
  return loss;
}

}  // namespace xpusim
