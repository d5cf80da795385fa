// A fingerprint of the inputs that produced a resumable output (a compare row file, the
// measured rows of validate --measure, a training checkpoint): FNV-1a 64 over "key=value"
// lines, shown as 16 hex digits. It detects a resume with other inputs; it is not a
// cryptographic hash and guards against mistakes, not against forgery.
#pragma once
#include <cstdint>
#include <string>

namespace xpusim {

class Fingerprint {
 public:
  Fingerprint& add(const std::string& key, const std::string& value);
  std::string hex() const;  // 16 lowercase hex digits

 private:
  void mix(const std::string& s);
  uint64_t h_ = 14695981039346656037ull;  // FNV-1a 64 offset basis
};

// FNV-1a 64 of a byte string as 16 hex digits (a file's contents, a checkpoint payload).
std::string fnv1a64_hex(const void* data, size_t n);

}  // namespace xpusim
