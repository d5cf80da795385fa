// A tiny ONNX writer for tests: builds ModelProto bytes field by field (the protobuf wire
// format), so tests can craft exactly the graph a case needs (an unknown operator, a cycle, a
// dynamic dimension) without torch.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace xpusim::test_onnx {

inline void put_varint(std::string& o, uint64_t v) {
  while (v >= 0x80) {
    o.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  o.push_back(static_cast<char>(v));
}
inline void put_tag(std::string& o, uint32_t field, uint32_t wire) { put_varint(o, (uint64_t{field} << 3) | wire); }
inline void put_int(std::string& o, uint32_t field, int64_t v) {
  put_tag(o, field, 0);
  put_varint(o, static_cast<uint64_t>(v));
}
inline void put_bytes(std::string& o, uint32_t field, const std::string& b) {
  put_tag(o, field, 2);
  put_varint(o, b.size());
  o += b;
}
inline void put_float(std::string& o, uint32_t field, float f) {
  put_tag(o, field, 5);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  for (int i = 0; i < 4; ++i) o.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

struct Attr {
  std::string name;
  std::vector<int64_t> ints;
  int64_t i = 0;
  bool is_int = false;
  std::string tensor;  // encoded TensorProto for TENSOR attributes
};
inline Attr ints_attr(const std::string& n, std::vector<int64_t> v) { return {n, std::move(v), 0, false, ""}; }
inline Attr int_attr(const std::string& n, int64_t v) { return {n, {}, v, true, ""}; }

// TensorProto with dims and data type 1 (float) or 7 (int64); int64 values go to int64_data,
// float tensors get zero raw_data (weights need no values).
inline std::string tensor(const std::string& name, const std::vector<int64_t>& dims, int type = 1,
                          const std::vector<int64_t>& ints = {}) {
  std::string t;
  for (auto d : dims) put_int(t, 1, d);
  put_int(t, 2, type);
  if (type == 7) {
    std::string packed;
    for (auto v : ints) put_varint(packed, static_cast<uint64_t>(v));
    put_bytes(t, 7, packed);
  } else {
    int64_t n = 1;
    for (auto d : dims) n *= d;
    put_bytes(t, 9, std::string(static_cast<size_t>(n) * 4, '\0'));
  }
  put_bytes(t, 8, name);
  return t;
}
inline Attr tensor_attr(const std::string& n, const std::string& t) { return {n, {}, 0, false, t}; }

inline std::string node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::string& name, const std::vector<Attr>& attrs = {}) {
  std::string n;
  for (const auto& i : in) put_bytes(n, 1, i);
  for (const auto& o : out) put_bytes(n, 2, o);
  put_bytes(n, 3, name);
  put_bytes(n, 4, op);
  for (const auto& a : attrs) {
    std::string m;
    put_bytes(m, 1, a.name);
    if (!a.tensor.empty()) {
      put_bytes(m, 5, a.tensor);
      put_int(m, 20, 4);
    } else if (a.is_int) {
      put_int(m, 3, a.i);
      put_int(m, 20, 2);
    } else {
      std::string packed;
      for (auto v : a.ints) put_varint(packed, static_cast<uint64_t>(v));
      put_bytes(m, 8, packed);
      put_int(m, 20, 7);
    }
    put_bytes(n, 5, m);
  }
  return n;
}

// ValueInfoProto: dims > 0 are dim_value, "" entries of `params` make dim_param symbols.
inline std::string value_info(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                              const std::vector<std::string>& params = {}) {
  std::string shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    std::string d;
    if (i < params.size() && !params[i].empty()) put_bytes(d, 2, params[i]);
    else put_int(d, 1, dims[i]);
    put_bytes(shape, 1, d);
  }
  std::string tt;
  put_int(tt, 1, elem_type);
  put_bytes(tt, 2, shape);
  std::string type;
  put_bytes(type, 1, tt);
  std::string v;
  put_bytes(v, 1, name);
  put_bytes(v, 2, type);
  return v;
}

struct GraphSpec {
  std::vector<std::string> nodes, initializers, inputs, outputs;
};

inline std::string model(const GraphSpec& g, int64_t opset = 17) {
  std::string graph;
  for (const auto& n : g.nodes) put_bytes(graph, 1, n);
  put_bytes(graph, 2, "test");
  for (const auto& t : g.initializers) put_bytes(graph, 5, t);
  for (const auto& i : g.inputs) put_bytes(graph, 11, i);
  for (const auto& o : g.outputs) put_bytes(graph, 12, o);
  std::string m;
  put_int(m, 1, 8);  // ir_version
  put_bytes(m, 2, "xpusim-test");
  std::string ops;
  put_bytes(ops, 1, "");
  put_int(ops, 2, opset);
  put_bytes(m, 8, ops);
  put_bytes(m, 7, graph);
  return m;
}

}  // namespace xpusim::test_onnx
