#include "common/file_guard.hpp"
#include "models/onnx/onnx_model.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "models/onnx/proto_wire.hpp"

namespace xpusim::onnx {

const char* data_type_name(DataType t) {
  switch (t) {
    case DataType::float32: return "float";
    case DataType::uint8: return "uint8";
    case DataType::int8: return "int8";
    case DataType::uint16: return "uint16";
    case DataType::int16: return "int16";
    case DataType::int32: return "int32";
    case DataType::int64: return "int64";
    case DataType::string: return "string";
    case DataType::boolean: return "bool";
    case DataType::float16: return "float16";
    case DataType::float64: return "double";
    case DataType::uint32: return "uint32";
    case DataType::uint64: return "uint64";
    case DataType::bfloat16: return "bfloat16";
    case DataType::undefined: break;
  }
  return "undefined";
}

bool is_integer(DataType t) {
  switch (t) {
    case DataType::uint8: case DataType::int8: case DataType::uint16: case DataType::int16:
    case DataType::int32: case DataType::int64: case DataType::boolean: case DataType::uint32:
    case DataType::uint64:
      return true;
    default:
      return false;
  }
}

int64_t data_type_bytes(DataType t) {
  switch (t) {
    case DataType::uint8: case DataType::int8: case DataType::boolean: return 1;
    case DataType::uint16: case DataType::int16: case DataType::float16: case DataType::bfloat16: return 2;
    case DataType::int32: case DataType::uint32: case DataType::float32: return 4;
    case DataType::int64: case DataType::uint64: case DataType::float64: return 8;
    default: return 0;
  }
}

int64_t TensorProto::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && n > INT64_MAX / d) return -1;
    n *= d;
  }
  return n;
}

const Attribute* Node::attr(const std::string& n) const {
  for (const auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

namespace {

// Where in the file a decode error happened, for the message ("graph > node 12 > attribute").
struct Ctx {
  std::vector<std::string> path;
  std::string str() const {
    std::string s;
    for (const auto& p : path) s += (s.empty() ? "" : " > ") + p;
    return s;
  }
};

TensorProto decode_tensor(std::string_view msg) {
  TensorProto t;
  WireReader r(msg);
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case 1: append_int64s(f, t.dims); break;
      case 2: t.data_type = static_cast<DataType>(as_int32(f)); break;
      case 4: append_floats(f, t.float_data); break;
      case 5: append_int64s(f, t.int_data); break;  // int32_data (varints)
      case 7: append_int64s(f, t.int_data); break;  // int64_data
      case 8: t.name = as_string(f); break;
      case 9: t.raw_data = as_message(f); break;
      case 10: append_doubles(f, t.double_data); break;
      case 14: t.external = as_int32(f) == 1; break;
      default: break;  // segment, string_data, doc_string, external_data, uint64_data: unused
    }
  }
  for (int64_t d : t.dims)
    if (d < 0) throw WireError("tensor '" + t.name + "' has a negative dimension " + std::to_string(d));
  return t;
}

Attribute decode_attribute(std::string_view msg) {
  Attribute a;
  WireReader r(msg);
  int32_t type = 0;
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case 1: a.name = as_string(f); break;
      case 2: a.f = as_float(f); break;
      case 3: a.i = as_int64(f); break;
      case 4: a.s = as_string(f); break;
      case 5: a.t = std::make_shared<TensorProto>(decode_tensor(as_message(f))); break;
      case 7: append_floats(f, a.floats); break;
      case 8: append_int64s(f, a.ints); break;
      case 20: type = as_int32(f); break;
      default: break;  // subgraphs, strings, tensors lists, sparse tensors: not used by supported ops
    }
  }
  a.type = (type >= 0 && type <= 8) ? static_cast<Attribute::Type>(type) : Attribute::Type::undefined;
  return a;
}

Node decode_node(std::string_view msg) {
  Node n;
  WireReader r(msg);
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case 1: n.inputs.push_back(as_string(f)); break;
      case 2: n.outputs.push_back(as_string(f)); break;
      case 3: n.name = as_string(f); break;
      case 4: n.op_type = as_string(f); break;
      case 5: n.attributes.push_back(decode_attribute(as_message(f))); break;
      case 7: n.domain = as_string(f); break;
      default: break;
    }
  }
  return n;
}

// TensorShapeProto.Dimension
Dim decode_dim(std::string_view msg) {
  Dim d;
  WireReader r(msg);
  while (!r.done()) {
    Field f = r.next();
    if (f.number == 1) d.value = as_int64(f);
    else if (f.number == 2) d.param = as_string(f);
  }
  return d;
}

ValueInfo decode_value_info(std::string_view msg) {
  ValueInfo v;
  WireReader r(msg);
  while (!r.done()) {
    Field f = r.next();
    if (f.number == 1) {
      v.name = as_string(f);
    } else if (f.number == 2) {  // TypeProto
      WireReader tr(as_message(f));
      while (!tr.done()) {
        Field tf = tr.next();
        if (tf.number != 1) continue;  // only tensor_type; sequences and maps are not model inputs we take
        WireReader tt(as_message(tf));
        while (!tt.done()) {
          Field x = tt.next();
          if (x.number == 1) {
            v.elem_type = static_cast<DataType>(as_int32(x));
          } else if (x.number == 2) {  // TensorShapeProto
            v.has_shape = true;
            WireReader sr(as_message(x));
            while (!sr.done()) {
              Field d = sr.next();
              if (d.number == 1) v.dims.push_back(decode_dim(as_message(d)));
            }
          }
        }
      }
    }
  }
  return v;
}

Graph decode_graph(std::string_view msg, Ctx& ctx) {
  Graph g;
  WireReader r(msg);
  while (!r.done()) {
    Field f = r.next();
    switch (f.number) {
      case 1:
        ctx.path.push_back("node " + std::to_string(g.nodes.size()));
        g.nodes.push_back(decode_node(as_message(f)));
        ctx.path.pop_back();
        break;
      case 2: g.name = as_string(f); break;
      case 5:
        ctx.path.push_back("initializer " + std::to_string(g.initializers.size()));
        g.initializers.push_back(decode_tensor(as_message(f)));
        ctx.path.pop_back();
        break;
      case 11:
        ctx.path.push_back("input " + std::to_string(g.inputs.size()));
        g.inputs.push_back(decode_value_info(as_message(f)));
        ctx.path.pop_back();
        break;
      case 12:
        ctx.path.push_back("output " + std::to_string(g.outputs.size()));
        g.outputs.push_back(decode_value_info(as_message(f)));
        ctx.path.pop_back();
        break;
      default: break;  // value_info, sparse initializers, annotations, doc_string
    }
  }
  return g;
}

}  // namespace

OnnxModel decode_onnx(std::shared_ptr<const std::string> bytes, const std::string& file) {
  OnnxModel m;
  m.file = file;
  m.bytes = bytes;
  Ctx ctx;
  bool has_graph = false;
  try {
    if (bytes->empty()) throw WireError("the file is empty");
    WireReader r(*bytes);
    while (!r.done()) {
      Field f = r.next();
      switch (f.number) {
        case 1: m.ir_version = as_int64(f); break;
        case 2: m.producer = as_string(f); break;
        case 7:
          // Protobuf would merge a second graph into the first; a file concatenated with
          // itself (or another model) is not a model.
          if (has_graph) throw WireError("a second graph (two models concatenated?)");
          ctx.path.push_back("graph");
          m.graph = decode_graph(as_message(f), ctx);
          ctx.path.pop_back();
          has_graph = true;
          break;
        case 8: {
          ctx.path.push_back("opset_import");
          std::string domain;
          int64_t version = 0;
          WireReader o(as_message(f));
          while (!o.done()) {
            Field x = o.next();
            if (x.number == 1) domain = as_string(x);
            else if (x.number == 2) version = as_int64(x);
          }
          if (domain == "ai.onnx") domain.clear();
          m.opsets[domain] = version;
          ctx.path.pop_back();
          break;
        }
        default: break;
      }
    }
  } catch (const WireError& e) {
    std::string where = ctx.str();
    throw UserError(file + ": not a valid ONNX model (" + (where.empty() ? "" : where + ": ") + e.what() + ")");
  }
  if (!has_graph || m.ir_version <= 0)
    throw UserError(file + ": not a valid ONNX model (no " + std::string(has_graph ? "ir_version" : "graph") +
                    " field; is it an ONNX file?)");
  return m;
}

OnnxModel load_onnx_file(const std::string& path) {
  // A regular file within the cap: a .onnx link to /dev/zero grew to 7.6 GB (file_guard.hpp).
  return decode_onnx(std::make_shared<const std::string>(read_input_file(path, kMaxBinaryInputBytes)), path);
}

namespace {
template <typename T>
T read_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // ONNX raw_data is little-endian, as is every host we build on
  return v;
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

// Element i of a tensor as double, from whichever field holds its values.
template <typename Out>
std::vector<Out> tensor_values(const TensorProto& t, int64_t max_elements) {
  int64_t n = t.numel();
  if (n < 0 || n > max_elements)
    throw WireError("constant tensor '" + t.name + "' is too large to read (" + std::to_string(n) + " elements)");
  if (t.external) throw WireError("constant tensor '" + t.name + "' keeps its values in an external file");
  std::vector<Out> out;
  out.reserve(static_cast<size_t>(n));
  const size_t un = static_cast<size_t>(n);
  if (!t.raw_data.empty()) {
    int64_t eb = data_type_bytes(t.data_type);
    if (eb == 0) throw WireError("constant tensor '" + t.name + "' has data type " + data_type_name(t.data_type));
    if (t.raw_data.size() != un * static_cast<size_t>(eb))
      throw WireError("constant tensor '" + t.name + "' holds " + std::to_string(t.raw_data.size()) +
                      " bytes of raw data for " + std::to_string(n) + " elements");
    const char* p = t.raw_data.data();
    for (size_t i = 0; i < un; ++i, p += eb) {
      double v = 0;
      switch (t.data_type) {
        case DataType::float32: v = read_le<float>(p); break;
        case DataType::float64: v = read_le<double>(p); break;
        case DataType::int64: v = static_cast<double>(read_le<int64_t>(p)); break;
        case DataType::uint64: v = static_cast<double>(read_le<uint64_t>(p)); break;
        case DataType::int32: v = read_le<int32_t>(p); break;
        case DataType::uint32: v = read_le<uint32_t>(p); break;
        case DataType::int16: v = read_le<int16_t>(p); break;
        case DataType::uint16: v = read_le<uint16_t>(p); break;
        case DataType::int8: v = read_le<int8_t>(p); break;
        case DataType::uint8: case DataType::boolean: v = read_le<uint8_t>(p); break;
        case DataType::float16: case DataType::bfloat16: {
          uint16_t h = read_le<uint16_t>(p);
          if (t.data_type == DataType::bfloat16) {
            uint32_t u = uint32_t{h} << 16;
            v = read_le<float>(reinterpret_cast<const char*>(&u));
          } else {
            v = half_to_float(h);
          }
          break;
        }
        default: throw WireError("constant tensor '" + t.name + "' has data type " + data_type_name(t.data_type));
      }
      if constexpr (std::is_integral_v<Out>) {
        if (t.data_type == DataType::int64) {
          out.push_back(read_le<int64_t>(p));  // exact, beyond 2^53
          continue;
        }
        if (!(v >= -9.2e18 && v <= 9.2e18)) throw WireError("constant tensor '" + t.name + "' holds a non-integer value");
        out.push_back(static_cast<Out>(v));
      } else {
        out.push_back(static_cast<Out>(v));
      }
    }
    return out;
  }
  auto take = [&](const auto& src) {
    if (src.size() != un)
      throw WireError("constant tensor '" + t.name + "' holds " + std::to_string(src.size()) + " values for " +
                      std::to_string(n) + " elements");
    for (auto v : src) {
      if constexpr (std::is_integral_v<Out>) {
        double d = static_cast<double>(v);
        if (!(d >= -9.2e18 && d <= 9.2e18)) throw WireError("constant tensor '" + t.name + "' holds a non-integer value");
      }
      out.push_back(static_cast<Out>(v));
    }
  };
  if (!t.int_data.empty()) take(t.int_data);
  else if (!t.float_data.empty()) take(t.float_data);
  else if (!t.double_data.empty()) take(t.double_data);
  else if (n != 0) throw WireError("constant tensor '" + t.name + "' has no values");
  return out;
}
}  // namespace

std::vector<int64_t> tensor_int64s(const TensorProto& t, int64_t max_elements) {
  return tensor_values<int64_t>(t, max_elements);
}
std::vector<double> tensor_doubles(const TensorProto& t, int64_t max_elements) {
  return tensor_values<double>(t, max_elements);
}

}  // namespace xpusim::onnx
