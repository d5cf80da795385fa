// A minimal protobuf wire-format reader: varints, fixed 32/64-bit and length-delimited
// fields over one byte range, every read bounds-checked. The ONNX decoder (onnx_model.cpp)
// walks messages with it; no libprotobuf, so the loader has no dependency, its limits are
// ours, and a fuzzer can drive it directly.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace xpusim::onnx {

// Malformed bytes: the decoder turns it into a UserError naming the file and the message
// being read.
class WireError : public std::runtime_error {
 public:
  explicit WireError(const std::string& msg) : std::runtime_error(msg) {}
};

enum class WireType : uint8_t { varint = 0, fixed64 = 1, bytes = 2, start_group = 3, end_group = 4, fixed32 = 5 };

struct Field {
  uint32_t number = 0;
  WireType type = WireType::varint;
  uint64_t varint = 0;         // varint, fixed32 and fixed64 payloads
  std::string_view bytes;      // length-delimited payload (a view into the reader's range)
};

class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }
  // Reads the next field (tag and payload). Groups (deprecated, never in ONNX) are errors.
  Field next();
  size_t offset() const { return pos_; }

 private:
  uint64_t varint();
  std::string_view take(uint64_t n);
  std::string_view data_;
  size_t pos_ = 0;
};

// Field payload helpers; each checks the wire type the schema expects.
int64_t as_int64(const Field& f);
int32_t as_int32(const Field& f);
float as_float(const Field& f);
double as_double(const Field& f);
std::string as_string(const Field& f);
std::string_view as_message(const Field& f);
// Repeated scalars arrive packed (one length-delimited field) or one per field; both append.
void append_int64s(const Field& f, std::vector<int64_t>& out);
void append_floats(const Field& f, std::vector<float>& out);
void append_doubles(const Field& f, std::vector<double>& out);

}  // namespace xpusim::onnx
