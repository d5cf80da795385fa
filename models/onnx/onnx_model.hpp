// The subset of the ONNX schema (onnx/onnx.proto3) that the importer needs, decoded from the
// file's bytes with proto_wire: ModelProto (ir_version, opset_import, graph), GraphProto
// (nodes, initializers, inputs, outputs), NodeProto, AttributeProto, TensorProto (dims and
// data type; values only on request, for small constants) and ValueInfoProto shapes
// (dim_value / dim_param). Fields we do not need are skipped, never interpreted.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xpusim::onnx {

// TensorProto.DataType values used here.
enum class DataType : int32_t {
  undefined = 0, float32 = 1, uint8 = 2, int8 = 3, uint16 = 4, int16 = 5, int32 = 6, int64 = 7,
  string = 8, boolean = 9, float16 = 10, float64 = 11, uint32 = 12, uint64 = 13, bfloat16 = 16,
};
const char* data_type_name(DataType t);
bool is_integer(DataType t);
int64_t data_type_bytes(DataType t);  // 0 for strings and unknown types

struct TensorProto {
  std::string name;
  std::vector<int64_t> dims;
  DataType data_type = DataType::undefined;
  // Values, in whichever field the writer used. raw_data is a view into the file's bytes
  // (OnnxModel::bytes keeps them alive).
  std::string_view raw_data;
  std::vector<int64_t> int_data;   // int32_data / int64_data (also bool, int8, ... in int32_data)
  std::vector<float> float_data;
  std::vector<double> double_data;
  bool external = false;           // data_location = EXTERNAL: values in another file
  int64_t numel() const;           // product of dims (1 for a scalar); -1 if it overflows
};

struct Attribute {
  enum class Type { undefined = 0, f = 1, i = 2, s = 3, t = 4, g = 5, floats = 6, ints = 7, strings = 8 };
  std::string name;
  Type type = Type::undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::shared_ptr<TensorProto> t;  // TENSOR attributes (Constant's value)
};

struct Node {
  std::string name;      // may be empty in the file; the importer names it by position then
  std::string op_type;
  std::string domain;
  std::vector<std::string> inputs;   // "" = an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;
  const Attribute* attr(const std::string& n) const;
};

// One dimension of a declared shape: a number, a symbol (dim_param) or nothing.
struct Dim {
  std::optional<int64_t> value;
  std::string param;
};

struct ValueInfo {
  std::string name;
  DataType elem_type = DataType::undefined;
  bool has_shape = false;
  std::vector<Dim> dims;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<TensorProto> initializers;
  std::vector<ValueInfo> inputs;   // may include initializers (IR < 4 files list them too)
  std::vector<ValueInfo> outputs;
};

struct OnnxModel {
  std::string file;
  int64_t ir_version = 0;
  std::string producer;
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  Graph graph;
  std::shared_ptr<const std::string> bytes;  // the file's contents; raw_data views point here
};

// Decodes a model from bytes; `file` names it in errors (UserError "FILE: not a valid ONNX
// model: ..."). Checks the structure only (fields, wire types, lengths); the importer checks
// the graph.
OnnxModel decode_onnx(std::shared_ptr<const std::string> bytes, const std::string& file);
OnnxModel load_onnx_file(const std::string& path);  // UserError when unreadable

// Values of a small constant tensor as int64 / double (any numeric type; raw_data or the
// typed fields). Throws WireError past `max_elements` or when the data does not match dims.
std::vector<int64_t> tensor_int64s(const TensorProto& t, int64_t max_elements = 1 << 22);
std::vector<double> tensor_doubles(const TensorProto& t, int64_t max_elements = 1 << 22);

}  // namespace xpusim::onnx
