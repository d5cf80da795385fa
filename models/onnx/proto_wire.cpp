#include "models/onnx/proto_wire.hpp"

#include <cstring>

namespace xpusim::onnx {

uint64_t WireReader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) throw WireError("truncated varint at byte " + std::to_string(pos_));
    uint8_t b = static_cast<uint8_t>(data_[pos_++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw WireError("varint longer than 10 bytes at byte " + std::to_string(pos_));
}

std::string_view WireReader::take(uint64_t n) {
  if (n > data_.size() - pos_)
    throw WireError("field of " + std::to_string(n) + " bytes runs past the end (" +
                    std::to_string(data_.size() - pos_) + " bytes left at byte " + std::to_string(pos_) + ")");
  std::string_view v = data_.substr(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return v;
}

Field WireReader::next() {
  uint64_t tag = varint();
  Field f;
  f.number = static_cast<uint32_t>(tag >> 3);
  if (f.number == 0 || (tag >> 3) > 536870911u) throw WireError("invalid field number in tag " + std::to_string(tag));
  uint8_t t = static_cast<uint8_t>(tag & 7);
  switch (t) {
    case 0:
      f.type = WireType::varint;
      f.varint = varint();
      break;
    case 1: {
      f.type = WireType::fixed64;
      std::string_view b = take(8);
      uint64_t v = 0;
      for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[static_cast<size_t>(i)]);
      f.varint = v;
      break;
    }
    case 2:
      f.type = WireType::bytes;
      f.bytes = take(varint());
      break;
    case 5: {
      f.type = WireType::fixed32;
      std::string_view b = take(4);
      uint32_t v = 0;
      for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[static_cast<size_t>(i)]);
      f.varint = v;
      break;
    }
    default:
      throw WireError("unsupported wire type " + std::to_string(t) + " (field " + std::to_string(f.number) + ")");
  }
  return f;
}

namespace {
void expect(const Field& f, WireType t, const char* what) {
  if (f.type != t) throw WireError("field " + std::to_string(f.number) + " should be " + what);
}
float bits_to_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
double bits_to_double(uint64_t u) {
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
}  // namespace

int64_t as_int64(const Field& f) {
  expect(f, WireType::varint, "a varint");
  return static_cast<int64_t>(f.varint);
}

int32_t as_int32(const Field& f) {
  expect(f, WireType::varint, "a varint");
  return static_cast<int32_t>(static_cast<int64_t>(f.varint));
}

float as_float(const Field& f) {
  expect(f, WireType::fixed32, "a 32-bit float");
  return bits_to_float(static_cast<uint32_t>(f.varint));
}

double as_double(const Field& f) {
  expect(f, WireType::fixed64, "a 64-bit double");
  return bits_to_double(f.varint);
}

std::string as_string(const Field& f) {
  expect(f, WireType::bytes, "a string");
  return std::string(f.bytes);
}

std::string_view as_message(const Field& f) {
  expect(f, WireType::bytes, "a message");
  return f.bytes;
}

void append_int64s(const Field& f, std::vector<int64_t>& out) {
  if (f.type == WireType::varint) {
    out.push_back(static_cast<int64_t>(f.varint));
    return;
  }
  expect(f, WireType::bytes, "packed varints");
  // Each packed varint is at least one byte: the count is bounded by the payload.
  const std::string_view p = f.bytes;
  size_t i = 0;
  while (i < p.size()) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7, ++i) {
      if (i >= p.size()) throw WireError("truncated packed varint");
      if (shift >= 64) throw WireError("packed varint longer than 10 bytes");
      uint8_t b = static_cast<uint8_t>(p[i]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    ++i;
    out.push_back(static_cast<int64_t>(v));
  }
}

void append_floats(const Field& f, std::vector<float>& out) {
  if (f.type == WireType::fixed32) {
    out.push_back(bits_to_float(static_cast<uint32_t>(f.varint)));
    return;
  }
  expect(f, WireType::bytes, "packed floats");
  if (f.bytes.size() % 4) throw WireError("packed floats of " + std::to_string(f.bytes.size()) + " bytes");
  for (size_t i = 0; i < f.bytes.size(); i += 4) {
    uint32_t u = 0;
    for (int k = 3; k >= 0; --k) u = (u << 8) | static_cast<uint8_t>(f.bytes[i + static_cast<size_t>(k)]);
    out.push_back(bits_to_float(u));
  }
}

void append_doubles(const Field& f, std::vector<double>& out) {
  if (f.type == WireType::fixed64) {
    out.push_back(bits_to_double(f.varint));
    return;
  }
  expect(f, WireType::bytes, "packed doubles");
  if (f.bytes.size() % 8) throw WireError("packed doubles of " + std::to_string(f.bytes.size()) + " bytes");
  for (size_t i = 0; i < f.bytes.size(); i += 8) {
    uint64_t u = 0;
    for (int k = 7; k >= 0; --k) u = (u << 8) | static_cast<uint8_t>(f.bytes[i + static_cast<size_t>(k)]);
    out.push_back(bits_to_double(u));
  }
}

}  // namespace xpusim::onnx
