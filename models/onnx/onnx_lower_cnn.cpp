// Lowering of the convolutional operators: Conv, BatchNormalization, activations, pooling, Pad.
#include "models/onnx/onnx_lowerer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xpusim::onnx {

void Lowerer::check_no_autopad(size_t i) {
  std::string ap = attr_s(i, "auto_pad", "NOTSET");
  if (ap != "NOTSET" && ap != "VALID") fail(i, "auto_pad " + ap + " is not supported (export with explicit pads)");
}

// pads [top, left, bottom, right] -> symmetric (pad_h, pad_w) or an error.
std::pair<int, int> Lowerer::sym_pads(size_t i) {
  auto p = attr_ints(i, "pads");
  if (p.empty()) return {0, 0};
  if (p.size() != 4) fail(i, "pads must have 4 values for a 2-D window");
  if (p[0] != p[2] || p[1] != p[3]) fail(i, "asymmetric pads are not supported");
  if (p[0] < 0 || p[1] < 0 || p[0] > 65535 || p[1] > 65535) fail(i, "pads out of range");
  return {static_cast<int>(p[0]), static_cast<int>(p[1])};
}

std::pair<int, int> Lowerer::pair_attr(size_t i, const char* name, int def) {
  auto v = attr_ints(i, name);
  if (v.empty()) return {def, def};
  if (v.size() != 2) fail(i, std::string(name) + " must have 2 values (2-D only)");
  if (v[0] < 1 || v[1] < 1 || v[0] > 65535 || v[1] > 65535) fail(i, std::string(name) + " out of range");
  return {static_cast<int>(v[0]), static_cast<int>(v[1])};
}

void Lowerer::lower_conv(size_t i) {
  const Val& x = act(i, 0);
  if (x.shape.size() != 4) fail(i, "only 2-D convolutions on [N, C, H, W] are supported, input is " + shape_str(x.shape));
  check_no_autopad(i);
  const Val& wv = in(i, 1);
  if (wv.shape.size() != 4) fail(i, "weights must be [M, C/group, kH, kW]");
  ConvArgs a;
  a.groups = static_cast<int>(attr_i(i, "group", 1));
  if (a.groups < 1 || x.shape[1] % a.groups) fail(i, "group does not divide the input channels");
  a.filters = static_cast<int>(wv.shape[0]);
  auto k = pair_attr(i, "kernel_shape", 0);
  if (k.first == 0) k = {static_cast<int>(wv.shape[2]), static_cast<int>(wv.shape[3])};
  a.kernel_h = k.first;
  a.kernel_w = k.second;
  auto s = pair_attr(i, "strides", 1);
  a.stride_h = s.first;
  a.stride_w = s.second;
  auto d = pair_attr(i, "dilations", 1);
  if (d.first != d.second) fail(i, "different dilations per axis are not supported");
  a.dilation = d.first;
  auto p = sym_pads(i);
  a.pad_h = p.first;
  a.pad_w = p.second;
  a.bias = has_in(i, 2);
  weight(i, 1, {a.filters, x.shape[1] / a.groups, a.kernel_h, a.kernel_w});
  if (a.bias) weight(i, 2, {a.filters});
  if (a.filters < 1 || a.filters % a.groups) fail(i, "filters not divisible by group");
  int64_t ho = window_out(x.shape[2], a.kernel_h, a.stride_h, a.pad_h, a.dilation);
  int64_t wo = window_out(x.shape[3], a.kernel_w, a.stride_w, a.pad_w, a.dilation);
  if (ho <= 0 || wo <= 0) fail(i, "output would be empty for input " + shape_str(x.shape));
  int t = b_ ? b_->conv(x.tensor, a, nname(i)) : -1;
  set_out(i, activation({x.shape[0], a.filters, ho, wo}, t));
}

void Lowerer::lower_batch_norm(size_t i) {
  const Val& x = act(i, 0);
  if (x.shape.size() != 4 && x.shape.size() != 2) fail(i, "input must be [N, C, H, W] or [N, C]");
  int64_t c = x.shape[1];
  weight(i, 1, {c});
  weight(i, 2, {c});
  // Running mean and variance (inputs 3, 4) are statistics, not trainable parameters.
  int t = b_ ? b_->batch_norm(x.tensor, nname(i)) : -1;
  set_out(i, activation(x.shape, t));
  // Training-mode exports also output the updated running statistics; nothing trains on them.
  for (size_t k = 1; k < node(i).outputs.size(); ++k)
    if (!node(i).outputs[k].empty()) {
      Const stat;
      stat.shape = {c};
      stat.v.assign(static_cast<size_t>(c), 0.0);
      set_const(i, stat, k);
    }
}

void Lowerer::lower_activation(size_t i, ActivationFn f) {
  const Val& x = act(i, 0);
  int t = b_ ? b_->activation(x.tensor, f, nname(i)) : -1;
  set_out(i, activation(x.shape, t));
}

// Max and average pooling: 2-D windows, per-axis kernel, stride and pads (begin and end
// may differ), ceil_mode as torch computes it (a last window that starts in the right pad is
// dropped). The op records the begin pads; the output size is this one.
void Lowerer::lower_pool(size_t i) {
  const Val& x = act(i, 0);
  if (x.shape.size() != 4) fail(i, "only 2-D pooling on [N, C, H, W] is supported");
  check_no_autopad(i);
  auto k = pair_attr(i, "kernel_shape", 0);
  if (k.first == 0) fail(i, "kernel_shape is required");
  auto s = pair_attr(i, "strides", 1);
  auto d = pair_attr(i, "dilations", 1);
  if (d.first != 1 || d.second != 1) fail(i, "dilated pooling is not supported");
  auto p = attr_ints(i, "pads");
  if (p.empty()) p = {0, 0, 0, 0};
  if (p.size() != 4) fail(i, "pads must have 4 values for a 2-D window");
  for (auto v : p)
    if (v < 0 || v > 65535) fail(i, "pads out of range");
  const bool ceil_mode = attr_flag(i, "ceil_mode");
  auto out = [&](int64_t n, int kk, int ss, int64_t pb, int64_t pe) {
    int64_t span = n + pb + pe - kk;
    if (span < 0) return int64_t{0};
    int64_t o = (ceil_mode ? (span + ss - 1) / ss : span / ss) + 1;
    if (ceil_mode && (o - 1) * ss >= n + pb) --o;  // the last window must start inside the input or left pad
    return o;
  };
  int64_t ho = out(x.shape[2], k.first, s.first, p[0], p[2]);
  int64_t wo = out(x.shape[3], k.second, s.second, p[1], p[3]);
  if (ho <= 0 || wo <= 0) fail(i, "output would be empty for input " + shape_str(x.shape));
  if (node(i).outputs.size() > 1 && !node(i).outputs[1].empty()) fail(i, "MaxPool indices output is not supported");
  int t = -1;
  if (b_) {
    ConvArgs w;
    w.kernel_h = k.first;
    w.kernel_w = k.second;
    w.stride_h = s.first;
    w.stride_w = s.second;
    w.pad_h = static_cast<int>(p[0]);
    w.pad_w = static_cast<int>(p[1]);
    t = b_->pool(x.tensor, node(i).op_type == "MaxPool" ? PoolFn::max : PoolFn::avg, w, ho, wo, nname(i));
  }
  set_out(i, activation({x.shape[0], x.shape[1], ho, wo}, t));
}

// GlobalAveragePool gives [N, C, 1, 1]; followed by Flatten or a Reshape to [N, C] it is one
// [N, C] pool, as in the zoo (no reshape ops that the zoo's ResNet does not have).
void Lowerer::lower_global_pool(size_t i) {
  const Val& x = act(i, 0);
  if (x.shape.size() != 4) fail(i, "input must be [N, C, H, W]");
  Shape flat{x.shape[0], x.shape[1]};
  if (auto c = sole_consumer(node(i).outputs[0])) {
    const Node& n = node(*c);
    bool flatten = n.op_type == "Flatten" && (n.attr("axis") ? n.attr("axis")->i : 1) == 1;
    bool reshape = false;
    if (n.op_type == "Reshape" && n.inputs.size() == 2 && vals_.count(n.inputs[1])) {
      auto tc = const_of(vals_.at(n.inputs[1]));
      reshape = tc && tc->v.size() == 2 && (tc->v[0] == 0 || tc->v[0] == -1 || tc->v[0] == static_cast<double>(x.shape[0])) &&
                (tc->v[1] == -1 || tc->v[1] == static_cast<double>(x.shape[1]));
    }
    if (flatten || reshape) {
      int t = b_ ? b_->global_avg_pool(x.tensor, nname(i)) : -1;
      absorbed_.insert(*c);
      vals_[n.outputs[0]] = activation(flat, t);
      return;
    }
  }
  int t = -1;
  if (b_) t = b_->reshape(b_->global_avg_pool(x.tensor, nname(i)), {x.shape[0], x.shape[1], 1, 1}, nname(i) + ".4d");
  set_out(i, activation({x.shape[0], x.shape[1], 1, 1}, t));
}

// Pad: all-zero pads (torch's AvgPool2d export) are an identity; real padding is a copy to
// the padded shape (constant, reflect or edge: the same traffic).
void Lowerer::lower_pad(size_t i) {
  const Val& x = act(i, 0);
  std::vector<int64_t> pads = has_in(i, 1) ? ints_of(i, 1) : attr_ints(i, "pads");
  const size_t r = x.shape.size();
  std::vector<int64_t> axes;
  if (has_in(i, 3)) {
    for (auto a : ints_of(i, 3)) axes.push_back(axis_of(i, a, r));
  } else {
    for (size_t k = 0; k < r; ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (pads.size() != 2 * axes.size()) fail(i, "pads must have two values per axis");
  Shape out = x.shape;
  int first = static_cast<int>(r);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t add = pads[k] + pads[k + axes.size()];
    if (add == 0) continue;
    if (axes[k] == 0) fail(i, "padding the batch dimension is not supported");
    out[static_cast<size_t>(axes[k])] += add;
    if (out[static_cast<size_t>(axes[k])] <= 0) fail(i, "pads remove the whole axis");
    first = std::min(first, static_cast<int>(axes[k]));
  }
  emit_copy(i, x, out, first);
}

// Clip (torch's ReLU6 and hardtanh): bounds must be constants; one elementwise pass, priced as relu.
void Lowerer::lower_clip(size_t i) {
  for (size_t k = 1; k < 3; ++k)
    if (has_in(i, k) && !scalar_of(in(i, k))) fail(i, "min and max must be scalar constants");
  lower_activation(i, ActivationFn::relu);
}

// ReduceMean over the spatial axes of [N, C, H, W] (MnasNet's x.mean([2, 3])) is a global
// average pool; any other ReduceMean must start a decomposed LayerNormalization.
void Lowerer::lower_reduce_mean(size_t i) {
  const Val& x = act(i, 0);
  std::vector<int64_t> axes = has_in(i, 1) ? ints_of(i, 1) : attr_ints(i, "axes");
  for (auto& a : axes) a = axis_of(i, a, x.shape.size());
  std::sort(axes.begin(), axes.end());
  if (x.shape.size() != 4 || axes != std::vector<int64_t>{2, 3}) return lower_decomposed_layer_norm(i);
  const bool keep = attr_i(i, "keepdims", 1) != 0;
  int t = b_ ? b_->global_avg_pool(x.tensor, nname(i)) : -1;
  if (!keep) return set_out(i, activation({x.shape[0], x.shape[1]}, t));
  if (b_) t = b_->reshape(t, {x.shape[0], x.shape[1], 1, 1}, nname(i) + ".4d");
  set_out(i, activation({x.shape[0], x.shape[1], 1, 1}, t));
}

}  // namespace xpusim::onnx
