// The head repeat of grouped-query attention (head_repeat.hpp): recognised from the op's shapes
// and its heads attribute, and the two host loops.
#include "models/head_repeat.hpp"

#include "common/error.hpp"

namespace xpusim {

int repeat_heads(ModelBuilder& b, int x, int64_t width, int64_t heads, const std::string& name) {
  Shape s = b.shape(x);
  const int64_t narrow = s.back();
  if (heads < 1 || width % heads != 0 || narrow % (width / heads) != 0 || narrow < width / heads ||
      heads % (narrow / (width / heads)) != 0)
    throw InternalError(name + ": a head repeat needs whole heads on both sides");
  s.back() = width;
  const int y = b.copy_to(x, s, static_cast<int>(s.size()) - 1, name);
  OpGraph& g = b.graph();
  g.op_mut(g.num_ops() - 1).attrs.heads = heads;  // the copy just added
  return y;
}

std::optional<HeadRepeat> head_repeat_of(const OpGraph& g, const OpNode& op) {
  int narrow_t = -1, wide_t = -1;
  if (op.kind == OpKind::Concat && op.inputs.size() == 1 && op.outputs.size() == 1) {
    narrow_t = op.inputs[0], wide_t = op.outputs[0];
  } else if (op.kind == OpKind::Split && op.inputs.size() == 1 && op.outputs.size() == 1) {
    narrow_t = op.outputs[0], wide_t = op.inputs[0];
  } else {
    return std::nullopt;
  }
  const int64_t heads = op.attrs.heads;
  const Shape& ns = g.tensor(narrow_t).desc.shape;
  const Shape& ws = g.tensor(wide_t).desc.shape;
  if (heads < 2 || ns.empty() || ns.size() != ws.size()) return std::nullopt;
  const int last = static_cast<int>(ws.size()) - 1;
  if (op.attrs.axis != last && op.attrs.axis != -1) return std::nullopt;
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) {
    if (ns[static_cast<size_t>(d)] != ws[static_cast<size_t>(d)]) return std::nullopt;
    rows *= ws[static_cast<size_t>(d)];
  }
  const int64_t wide = ws.back(), narrow = ns.back();
  if (wide % heads != 0) return std::nullopt;
  HeadRepeat h;
  h.rows = rows;
  h.head_dim = wide / heads;
  if (h.head_dim < 1 || narrow % h.head_dim != 0) return std::nullopt;
  h.kv_heads = narrow / h.head_dim;
  if (h.kv_heads < 1 || heads % h.kv_heads != 0) return std::nullopt;
  h.group = heads / h.kv_heads;
  return h;
}

void head_repeat_forward(const HeadRepeat& h, const float* x, float* y) {
  const int64_t heads = h.kv_heads * h.group;
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t q = 0; q < heads; ++q) {
      const float* src = x + r * h.narrow() + (q / h.group) * h.head_dim;
      float* dst = y + r * h.wide() + q * h.head_dim;
      for (int64_t j = 0; j < h.head_dim; ++j) dst[j] = src[j];
    }
}

void head_repeat_backward(const HeadRepeat& h, const float* dy, float* dx) {
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t k = 0; k < h.kv_heads; ++k)
      for (int64_t j = 0; j < h.head_dim; ++j) {
        double acc = 0;
        for (int64_t g = 0; g < h.group; ++g) acc += dy[r * h.wide() + (k * h.group + g) * h.head_dim + j];
        dx[r * h.narrow() + k * h.head_dim + j] = static_cast<float>(acc);
      }
}

}  // namespace xpusim
