// Chakra execution-trace encoder: protobuf wire format by hand (field numbers in the header).
#include "models/chakra_export.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"

namespace xpusim {

namespace {

// Protobuf wire types used here.
constexpr int kVarint = 0;
constexpr int kBytes = 2;

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_tag(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}

void put_uint(std::string& out, int field, uint64_t v) {
  put_tag(out, field, kVarint);
  put_varint(out, v);
}

// int64 fields are plain varints of the two's complement (10 bytes when negative).
void put_int64(std::string& out, int field, int64_t v) { put_uint(out, field, static_cast<uint64_t>(v)); }

void put_bytes(std::string& out, int field, const std::string& v) {
  put_tag(out, field, kBytes);
  put_varint(out, v.size());
  out += v;
}

// AttributeProto: name = 1 and one value of the oneof.
std::string attr_uint64(const std::string& name, uint64_t v) {
  std::string a;
  put_bytes(a, 1, name);
  put_uint(a, 13, v);
  return a;
}
std::string attr_int64(const std::string& name, int64_t v) {
  std::string a;
  put_bytes(a, 1, name);
  put_int64(a, 9, v);
  return a;
}
std::string attr_bool(const std::string& name, bool v) {
  std::string a;
  put_bytes(a, 1, name);
  put_uint(a, 27, v ? 1 : 0);
  return a;
}
std::string attr_string(const std::string& name, const std::string& v) {
  std::string a;
  put_bytes(a, 1, name);
  put_bytes(a, 29, v);
  return a;
}

// IOInfo of a tensor list, in the text form PyTorch-converted traces use:
// values = tensor ids, shapes = [[d, ...], ...], types = ["Tensor(dtype)", ...].
std::string io_info(const OpGraph& g, const std::vector<int>& tensors) {
  std::string values = "[", shapes = "[", types = "[";
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = g.tensor(tensors[i]);
    const char* sep = i ? ", " : "";
    values += sep + std::to_string(tensors[i]);
    shapes += sep;
    shapes += "[";
    for (size_t d = 0; d < t.desc.shape.size(); ++d) shapes += (d ? ", " : "") + std::to_string(t.desc.shape[d]);
    shapes += "]";
    types += sep + std::string("\"Tensor(") + dtype_name(t.desc.dtype) + ")\"";
  }
  std::string io;
  put_bytes(io, 1, values + "]");
  put_bytes(io, 2, shapes + "]");
  put_bytes(io, 3, types + "]");
  return io;
}

uint64_t tensor_bytes(const OpGraph& g, const std::vector<int>& tensors) {
  uint64_t b = 0;
  for (int t : tensors) b += static_cast<uint64_t>(g.tensor(t).desc.bytes());
  return b;
}

std::string encode_node(const OpGraph& g, int op, double time_s) {
  const OpNode& n = g.op(op);
  ChakraNodeType type = n.kind == OpKind::Input       ? ChakraNodeType::mem_load
                        : n.kind == OpKind::AllReduce ? ChakraNodeType::comm_coll
                                                      : ChakraNodeType::comp;
  // The graph's edges: one from the producer each input had when the op was added (so a
  // forward op never depends on the update that later rewrites its weight).
  std::vector<uint64_t> deps;
  const BoostOpGraph& bg = g.boost_graph();
  for (auto [e, end] = boost::in_edges(static_cast<size_t>(op), bg); e != end; ++e)
    deps.push_back(static_cast<uint64_t>(boost::source(*e, bg)));
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());

  std::string m;
  put_uint(m, 1, static_cast<uint64_t>(op));
  put_bytes(m, 2, n.name);
  put_uint(m, 3, static_cast<uint64_t>(type));
  if (!deps.empty()) {  // proto3 packs repeated scalars
    std::string packed;
    for (uint64_t d : deps) put_varint(packed, d);
    put_bytes(m, 5, packed);
  }
  // Communication is timed by the simulator on its network; compute carries our estimate.
  if (type == ChakraNodeType::comp && time_s > 0) put_uint(m, 7, static_cast<uint64_t>(std::llround(time_s * 1e6)));
  if (!n.inputs.empty()) put_bytes(m, 8, io_info(g, n.inputs));
  if (!n.outputs.empty()) put_bytes(m, 9, io_info(g, n.outputs));
  std::vector<std::string> attrs;
  attrs.push_back(attr_bool("is_cpu_op", false));
  switch (type) {
    case ChakraNodeType::comm_coll:
      attrs.push_back(attr_int64("comm_type", kChakraAllReduce));
      attrs.push_back(attr_uint64("comm_size", tensor_bytes(g, n.inputs)));
      break;
    case ChakraNodeType::mem_load:
      attrs.push_back(attr_uint64("tensor_size", tensor_bytes(g, n.outputs)));
      break;
    case ChakraNodeType::comp:
      attrs.push_back(attr_int64("num_ops", static_cast<int64_t>(std::llround(n.work.flops))));
      attrs.push_back(attr_uint64("tensor_size", static_cast<uint64_t>(n.work.bytes_read + n.work.bytes_written)));
      break;
  }
  attrs.push_back(attr_string("op_kind", op_kind_name(n.kind)));  // ours; ASTRA-sim ignores it
  for (const std::string& a : attrs) put_bytes(m, 10, a);
  return m;
}

void put_delimited(std::string& out, const std::string& message) {
  put_varint(out, message.size());
  out += message;
}

}  // namespace

std::string encode_chakra_trace(const OpGraph& g, const std::vector<double>& op_time_s) {
  if (!op_time_s.empty() && op_time_s.size() != static_cast<size_t>(g.num_ops()))
    throw InternalError("chakra: " + std::to_string(op_time_s.size()) + " op times for " +
                        std::to_string(g.num_ops()) + " ops");
  std::string out;
  std::string meta;
  put_bytes(meta, 1, kChakraEtVersion);
  put_delimited(out, meta);
  for (int op : g.schedule())
    put_delimited(out, encode_node(g, op, op_time_s.empty() ? 0.0 : op_time_s[static_cast<size_t>(op)]));
  return out;
}

std::string chakra_file_stem(const std::string& name) {
  std::string s = name.empty() ? "graph" : name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  return s;
}

std::vector<std::string> write_chakra_traces(const std::string& dir, const std::string& name, const OpGraph& g,
                                             const std::vector<double>& op_time_s, int ranks) {
  if (ranks < 1) throw FieldError("count", "must be >= 1, got " + std::to_string(ranks));
  const std::string bytes = encode_chakra_trace(g, op_time_s);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError(dir + ": cannot create the directory: " + ec.message());
  std::vector<std::string> paths;
  const std::string stem = chakra_file_stem(name);
  for (int r = 0; r < ranks; ++r) {
    const std::string path = (std::filesystem::path(dir) / (stem + "." + std::to_string(r) + ".et")).string();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    f.close();
    if (!f) throw UserError(path + ": cannot write the Chakra trace");
    paths.push_back(path);
  }
  return paths;
}

}  // namespace xpusim
