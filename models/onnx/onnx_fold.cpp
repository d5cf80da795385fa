#include "models/onnx/onnx_fold.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace xpusim::onnx {

int64_t Const::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace {

using Bad = std::invalid_argument;

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) {
    if (d < 0) throw Bad("negative dimension " + std::to_string(d));
    if (d != 0 && n > kMaxFoldElements / d) throw Bad("constant result too large to fold");
    n *= d;
  }
  if (n > kMaxFoldElements) throw Bad("constant result too large to fold");
  return n;
}

int64_t norm_axis(int64_t axis, size_t rank, const char* what) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) throw Bad(std::string(what) + " " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

std::vector<int64_t> ints_of(const Const& c) {
  std::vector<int64_t> out;
  for (double d : c.v) {
    if (d != std::floor(d)) throw Bad("expected integers");
    out.push_back(saturated_int(d));
  }
  return out;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Index of the broadcast source element for output position `idx` (multi-index by strides).
int64_t bcast_index(int64_t flat, const Shape& out, const Shape& in) {
  int64_t idx = 0, mult = 1;
  for (size_t k = out.size(); k-- > 0;) {
    int64_t coord = flat % out[k];
    flat /= out[k];
    size_t ki = k + in.size() - out.size();
    if (k + in.size() >= out.size()) {
      int64_t d = in[ki];
      idx += (d == 1 ? 0 : coord) * mult;
      mult *= d;
    }
  }
  return idx;
}

Const elementwise(const std::vector<Const>& in, DataType type, double (*f)(const double*)) {
  Shape s = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) s = broadcast_shape(s, in[i].shape);
  Const r;
  r.shape = s;
  r.type = type;
  int64_t n = count(s);
  r.v.resize(static_cast<size_t>(n));
  double args[3];
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = in[k].v[static_cast<size_t>(bcast_index(i, s, in[k].shape))];
    r.v[static_cast<size_t>(i)] = f(args);
  }
  return r;
}

const Attribute* attr(const Node& n, const char* name) { return n.attr(name); }
int64_t attr_i(const Node& n, const char* name, int64_t def) {
  const Attribute* a = n.attr(name);
  return a ? a->i : def;
}

// Axes of Unsqueeze / Squeeze / ReduceX: an input from opset 13 (18 for reductions), an
// attribute before.
std::vector<int64_t> axes_arg(const Node& n, const std::vector<Const>& in, size_t input_index) {
  if (in.size() > input_index && in[input_index].type != DataType::undefined) return ints_of(in[input_index]);
  if (const Attribute* a = attr(n, "axes")) return a->ints;
  return {};
}

bool cast_to_int(DataType t) { return is_integer(t); }

}  // namespace

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Bad("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool foldable_op(const std::string& t) {
  static const char* ops[] = {"Identity", "Cast", "Unsqueeze", "Squeeze", "Concat", "Gather", "Slice", "Reshape",
                              "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Neg", "Equal", "Less", "Greater", "Not",
                              "And", "Or", "Where", "ConstantOfShape", "Range", "Expand", "Floor", "Ceil", "Abs", "Transpose", "Flatten", "Mod",
                              "ScatterND"};
  return std::find(std::begin(ops), std::end(ops), t) != std::end(ops);
}

Const fold_node(const Node& node, const std::vector<Const>& in, int64_t /*opset*/) {
  const std::string& op = node.op_type;
  auto need = [&](size_t k) {
    if (in.size() < k) throw Bad(op + " needs " + std::to_string(k) + " inputs");
    for (size_t i = 0; i < k; ++i)
      if (in[i].type == DataType::undefined) throw Bad(op + " input " + std::to_string(i) + " is missing");
  };
  if (op == "Identity") {
    need(1);
    return in[0];
  }
  if (op == "Cast") {
    need(1);
    Const r = in[0];
    r.type = static_cast<DataType>(attr_i(node, "to", 1));
    if (cast_to_int(r.type))
      for (auto& x : r.v) x = r.type == DataType::boolean ? (x != 0) : std::trunc(x);
    return r;
  }
  if (op == "Unsqueeze") {
    need(1);
    auto axes = axes_arg(node, in, 1);
    Const r = in[0];
    size_t rank = r.shape.size() + axes.size();
    std::vector<int64_t> norm;
    for (auto a : axes) norm.push_back(norm_axis(a, rank, "axis"));
    std::sort(norm.begin(), norm.end());
    if (std::adjacent_find(norm.begin(), norm.end()) != norm.end()) throw Bad("repeated axis");
    for (auto a : norm) r.shape.insert(r.shape.begin() + a, 1);
    return r;
  }
  if (op == "Squeeze") {
    need(1);
    auto axes = axes_arg(node, in, 1);
    Const r = in[0];
    Shape s;
    for (size_t i = 0; i < r.shape.size(); ++i) {
      bool drop = axes.empty() ? r.shape[i] == 1 : false;
      for (auto a : axes)
        if (norm_axis(a, r.shape.size(), "axis") == static_cast<int64_t>(i)) {
          if (r.shape[i] != 1) throw Bad("squeezed axis is not 1");
          drop = true;
        }
      if (!drop) s.push_back(r.shape[i]);
    }
    r.shape = s;
    return r;
  }
  if (op == "Flatten") {
    need(1);
    int64_t r = static_cast<int64_t>(in[0].shape.size());
    int64_t axis = attr_i(node, "axis", 1);
    if (axis < -r || axis > r) throw Bad("axis out of range");
    if (axis < 0) axis += r;
    Const c = in[0];
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < r; ++k) (k < axis ? outer : inner) *= c.shape[static_cast<size_t>(k)];
    c.shape = {outer, inner};
    return c;
  }
  if (op == "Transpose") {
    need(1);
    const Const& x = in[0];
    const size_t r = x.shape.size();
    std::vector<int64_t> perm;
    if (const Attribute* a = node.attr("perm")) perm = a->ints;
    if (perm.empty())
      for (size_t k = r; k-- > 0;) perm.push_back(static_cast<int64_t>(k));
    if (perm.size() != r) throw Bad("perm has " + std::to_string(perm.size()) + " axes for rank " + std::to_string(r));
    std::vector<bool> seen(r, false);
    Shape s;
    for (auto p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)]) throw Bad("perm is not a permutation");
      seen[static_cast<size_t>(p)] = true;
      s.push_back(x.shape[static_cast<size_t>(p)]);
    }
    // Strides of the input; walk the output in order and read the permuted index.
    std::vector<int64_t> stride(r, 1);
    for (size_t k = r; k-- > 1;) stride[k - 1] = stride[k] * x.shape[k];
    Const c;
    c.shape = s;
    c.type = x.type;
    c.v.resize(x.v.size());
    std::vector<int64_t> idx(r, 0);
    for (size_t o = 0; o < c.v.size(); ++o) {
      int64_t src = 0;
      for (size_t k = 0; k < r; ++k) src += idx[k] * stride[static_cast<size_t>(perm[k])];
      c.v[o] = x.v[static_cast<size_t>(src)];
      for (size_t k = r; k-- > 0;) {
        if (++idx[k] < s[k]) break;
        idx[k] = 0;
      }
    }
    return c;
  }
  if (op == "Concat") {
    if (in.empty()) throw Bad("Concat without inputs");
    need(in.size());
    size_t rank = in[0].shape.size();
    int64_t axis = norm_axis(attr_i(node, "axis", 0), rank, "axis");
    Shape s = in[0].shape;
    s[static_cast<size_t>(axis)] = 0;
    for (const auto& c : in) {
      if (c.shape.size() != rank) throw Bad("Concat of different ranks");
      for (size_t k = 0; k < rank; ++k)
        if (static_cast<int64_t>(k) != axis && c.shape[k] != in[0].shape[k]) throw Bad("Concat of mismatched shapes");
      s[static_cast<size_t>(axis)] += c.shape[static_cast<size_t>(axis)];
    }
    count(s);
    int64_t outer = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= s[static_cast<size_t>(k)];
    Const r;
    r.shape = s;
    r.type = in[0].type;
    for (int64_t o = 0; o < outer; ++o)
      for (const auto& c : in) {
        int64_t chunk = c.numel() / std::max<int64_t>(outer, 1);
        for (int64_t i = 0; i < chunk; ++i) r.v.push_back(c.v[static_cast<size_t>(o * chunk + i)]);
      }
    return r;
  }
  if (op == "Gather") {
    need(2);
    const Const& d = in[0];
    if (d.shape.empty()) throw Bad("Gather on a scalar");
    int64_t axis = norm_axis(attr_i(node, "axis", 0), d.shape.size(), "axis");
    auto idx = ints_of(in[1]);
    int64_t dim = d.shape[static_cast<size_t>(axis)];
    Shape s(d.shape.begin(), d.shape.begin() + axis);
    s.insert(s.end(), in[1].shape.begin(), in[1].shape.end());
    s.insert(s.end(), d.shape.begin() + axis + 1, d.shape.end());
    count(s);
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= d.shape[static_cast<size_t>(k)];
    for (size_t k = static_cast<size_t>(axis) + 1; k < d.shape.size(); ++k) inner *= d.shape[k];
    Const r;
    r.shape = s;
    r.type = d.type;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : idx) {
        if (i < -dim || i >= dim) throw Bad("Gather index " + std::to_string(i) + " out of range");
        int64_t ii = i < 0 ? i + dim : i;
        for (int64_t k = 0; k < inner; ++k) r.v.push_back(d.v[static_cast<size_t>((o * dim + ii) * inner + k)]);
      }
    return r;
  }
  if (op == "Slice") {
    need(3);
    const Const& d = in[0];
    auto starts = ints_of(in[1]), ends = ints_of(in[2]);
    std::vector<int64_t> axes, steps;
    if (in.size() > 3 && in[3].type != DataType::undefined) axes = ints_of(in[3]);
    if (in.size() > 4 && in[4].type != DataType::undefined) steps = ints_of(in[4]);
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      throw Bad("Slice starts, ends, axes and steps differ in length");
    size_t rank = d.shape.size();
    std::vector<int64_t> lo(rank, 0), step(rank, 1);
    Shape s = d.shape;
    for (size_t i = 0; i < starts.size(); ++i) {
      size_t a = static_cast<size_t>(norm_axis(axes[i], rank, "axis"));
      int64_t dim = d.shape[a];
      const int64_t sp = steps[i];
      if (sp == 0) throw Bad("Slice with step 0");
      int64_t st = starts[i] < 0 ? starts[i] + dim : starts[i];
      int64_t en = ends[i] < 0 ? ends[i] + dim : ends[i];
      // ONNX's clamps: [0, dim] both ends for a positive step; for a negative one the start
      // in [0, dim - 1] and the end in [-1, dim - 1] (-1: through element 0).
      st = sp > 0 ? std::clamp<int64_t>(st, 0, dim) : std::clamp<int64_t>(st, 0, dim - 1);
      en = sp > 0 ? std::clamp<int64_t>(en, 0, dim) : std::clamp<int64_t>(en, -1, dim - 1);
      lo[a] = st;
      step[a] = sp;
      s[a] = sp > 0 ? (en > st ? (en - st + sp - 1) / sp : 0) : (st > en ? (st - en - sp - 1) / -sp : 0);
    }
    int64_t n = count(s);
    auto ist = strides_of(d.shape);
    Const r;
    r.shape = s;
    r.type = d.type;
    r.v.resize(static_cast<size_t>(n));
    for (int64_t f = 0; f < n; ++f) {
      int64_t rem = f, src = 0;
      for (size_t k = rank; k-- > 0;) {
        int64_t c = rem % s[k];
        rem /= s[k];
        src += (lo[k] + c * step[k]) * ist[k];
      }
      r.v[static_cast<size_t>(f)] = d.v[static_cast<size_t>(src)];
    }
    return r;
  }
  if (op == "Reshape") {
    need(2);
    Const r = in[0];
    auto target = ints_of(in[1]);
    Shape s;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < target.size(); ++i) {
      int64_t t = target[i];
      if (t == 0) t = i < r.shape.size() ? r.shape[i] : throw Bad("Reshape 0 past the input's rank");
      if (t == -1) {
        if (infer >= 0) throw Bad("Reshape with two -1");
        infer = static_cast<int64_t>(i);
        s.push_back(1);
        continue;
      }
      if (t < 0) throw Bad("Reshape to a negative dimension");
      s.push_back(t);
      known *= t;
    }
    if (infer >= 0) {
      if (known == 0 || r.numel() % known) throw Bad("Reshape cannot infer -1");
      s[static_cast<size_t>(infer)] = r.numel() / known;
    }
    if (count(s) != r.numel()) throw Bad("Reshape changes the element count");
    r.shape = s;
    return r;
  }
  if (op == "ConstantOfShape") {
    need(1);
    Const r;
    for (auto d : ints_of(in[0])) r.shape.push_back(d);
    double fill = 0;
    r.type = DataType::float32;
    if (const Attribute* a = attr(node, "value"); a && a->t) {
      auto vals = tensor_doubles(*a->t, 1);
      if (vals.size() == 1) fill = vals[0];
      r.type = a->t->data_type;
    }
    r.v.assign(static_cast<size_t>(count(r.shape)), fill);
    return r;
  }
  if (op == "Range") {
    need(3);
    if (in[0].v.size() != 1 || in[1].v.size() != 1 || in[2].v.size() != 1) throw Bad("Range needs scalars");
    double start = in[0].v[0], limit = in[1].v[0], delta = in[2].v[0];
    if (delta == 0) throw Bad("Range with delta 0");
    double n = std::max(0.0, std::ceil((limit - start) / delta));
    if (n > static_cast<double>(kMaxFoldElements)) throw Bad("constant result too large to fold");
    Const r;
    r.type = in[0].type;
    r.shape = {static_cast<int64_t>(n)};
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) r.v.push_back(start + static_cast<double>(i) * delta);
    return r;
  }
  if (op == "Expand") {
    need(2);
    Const shape_c;
    for (auto d : ints_of(in[1])) shape_c.shape.push_back(d);
    Shape s = broadcast_shape(in[0].shape, shape_c.shape);
    Const one;
    one.shape = s;
    one.v.assign(static_cast<size_t>(count(s)), 0.0);
    return elementwise({in[0], one}, in[0].type, [](const double* a) { return a[0]; });
  }
  if (op == "ScatterND") {
    need(3);
    return fold_scatter_nd(node, in);
  }
  if (op == "Where") {
    need(3);
    return elementwise({in[0], in[1], in[2]}, in[1].type, [](const double* a) { return a[0] != 0 ? a[1] : a[2]; });
  }
  // Elementwise unary and binary ops.
  if (op == "Sqrt" || op == "Neg" || op == "Not" || op == "Floor" || op == "Ceil" || op == "Abs") {
    need(1);
    double (*f)(const double*) = nullptr;
    if (op == "Sqrt") f = [](const double* a) { return std::sqrt(a[0]); };
    else if (op == "Neg") f = [](const double* a) { return -a[0]; };
    else if (op == "Not") f = [](const double* a) { return a[0] == 0 ? 1.0 : 0.0; };
    else if (op == "Floor") f = [](const double* a) { return std::floor(a[0]); };
    else if (op == "Ceil") f = [](const double* a) { return std::ceil(a[0]); };
    else f = [](const double* a) { return std::fabs(a[0]); };
    return elementwise({in[0]}, op == "Not" ? DataType::boolean : in[0].type, f);
  }
  need(2);
  DataType t = in[0].type;
  bool integer = is_integer(t);
  if (op == "Add") return elementwise({in[0], in[1]}, t, [](const double* a) { return a[0] + a[1]; });
  if (op == "Sub") return elementwise({in[0], in[1]}, t, [](const double* a) { return a[0] - a[1]; });
  if (op == "Mul") return elementwise({in[0], in[1]}, t, [](const double* a) { return a[0] * a[1]; });
  if (op == "Mod") {  // fmod 1: C's fmod (sign of the dividend); fmod 0: Python's (sign of the divisor)
    for (double d : in[1].v)
      if (d == 0) throw Bad("Mod by zero");
    if (attr_i(node, "fmod", 0) != 0)
      return elementwise({in[0], in[1]}, t, [](const double* a) { return std::fmod(a[0], a[1]); });
    return elementwise({in[0], in[1]}, t, [](const double* a) {
      double r = std::fmod(a[0], a[1]);
      return r != 0 && ((r < 0) != (a[1] < 0)) ? r + a[1] : r;
    });
  }
  if (op == "Pow") return elementwise({in[0], in[1]}, t, [](const double* a) { return std::pow(a[0], a[1]); });
  if (op == "Div") {
    if (integer)
      return elementwise({in[0], in[1]}, t, [](const double* a) {
        if (a[1] == 0) throw Bad("integer division by zero");
        return std::trunc(a[0] / a[1]);
      });
    return elementwise({in[0], in[1]}, t, [](const double* a) { return a[0] / a[1]; });
  }
  if (op == "Equal") return elementwise({in[0], in[1]}, DataType::boolean, [](const double* a) { return a[0] == a[1] ? 1.0 : 0.0; });
  if (op == "Less") return elementwise({in[0], in[1]}, DataType::boolean, [](const double* a) { return a[0] < a[1] ? 1.0 : 0.0; });
  if (op == "Greater") return elementwise({in[0], in[1]}, DataType::boolean, [](const double* a) { return a[0] > a[1] ? 1.0 : 0.0; });
  if (op == "And") return elementwise({in[0], in[1]}, DataType::boolean, [](const double* a) { return (a[0] != 0 && a[1] != 0) ? 1.0 : 0.0; });
  if (op == "Or") return elementwise({in[0], in[1]}, DataType::boolean, [](const double* a) { return (a[0] != 0 || a[1] != 0) ? 1.0 : 0.0; });
  throw Bad("cannot fold " + op);
}

}  // namespace xpusim::onnx
