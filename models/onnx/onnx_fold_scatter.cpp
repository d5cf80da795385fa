// ScatterND folded on constants: how torch 1.13 exports a slice assignment such as Swin's
// shifted-window mask (`mask[h0:h1, w0:w1] = k` on a zeros tensor). Split from onnx_fold.cpp,
// which dispatches here; the values are the doubles of onnx_fold.hpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/onnx/onnx_fold.hpp"

namespace xpusim::onnx {

// data with the slices named by the last axis of indices replaced by updates (reduction none)
// or combined with them (add, mul, max, min), as ONNX ScatterND (opsets 11-18) defines it.
Const fold_scatter_nd(const Node& node, const std::vector<Const>& in) {
  using Bad = std::invalid_argument;
  const Const& d = in[0];
  const Shape& is = in[1].shape;
  const int64_t rank = static_cast<int64_t>(d.shape.size());
  if (is.empty() || is.back() < 1 || is.back() > rank)
    throw Bad("ScatterND indices " + shape_str(is) + " do not index data " + shape_str(d.shape));
  const size_t k = static_cast<size_t>(is.back());
  Shape us(is.begin(), is.end() - 1);
  us.insert(us.end(), d.shape.begin() + static_cast<std::ptrdiff_t>(k), d.shape.end());
  if (in[2].shape != us) throw Bad("ScatterND updates are " + shape_str(in[2].shape) + ", expected " + shape_str(us));
  const Attribute* red = node.attr("reduction");
  const std::string how = red ? red->s : "none";
  if (how != "none" && how != "add" && how != "mul" && how != "max" && how != "min")
    throw Bad("ScatterND reduction '" + how + "' is not one of none, add, mul, max, min");
  // Elements per indexed slice (the dims after the first k), and the stride of each of those k.
  int64_t slice = 1;
  for (size_t a = k; a < d.shape.size(); ++a) slice *= d.shape[a];
  std::vector<int64_t> stride(k, slice);
  for (size_t a = k; a-- > 1;) stride[a - 1] = stride[a] * d.shape[a];
  Const r = d;
  for (size_t j = 0; (j + 1) * k <= in[1].v.size(); ++j) {
    int64_t off = 0;
    for (size_t a = 0; a < k; ++a) {
      const double x = in[1].v[j * k + a];
      if (x != std::floor(x)) throw Bad("ScatterND indices must be integers");
      const int64_t i = saturated_int(x), dim = d.shape[a];
      if (i < -dim || i >= dim) throw Bad("ScatterND index " + std::to_string(i) + " out of range");
      off += (i < 0 ? i + dim : i) * stride[a];
    }
    for (int64_t e = 0; e < slice; ++e) {
      double& o = r.v[static_cast<size_t>(off + e)];
      const double u = in[2].v[static_cast<size_t>(static_cast<int64_t>(j) * slice + e)];
      o = how == "add" ? o + u : how == "mul" ? o * u : how == "max" ? std::max(o, u) : how == "min" ? std::min(o, u) : u;
    }
  }
  return r;
}

}  // namespace xpusim::onnx
