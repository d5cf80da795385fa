#include "common/fingerprint.hpp"

#include <cstdio>

namespace xpusim {

namespace {
constexpr uint64_t kPrime = 1099511628211ull;
std::string to_hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}
}  // namespace

void Fingerprint::mix(const std::string& s) {
  for (unsigned char c : s) {
    h_ ^= c;
    h_ *= kPrime;
  }
}

Fingerprint& Fingerprint::add(const std::string& key, const std::string& value) {
  // Length-prefixed so that ("ab", "c") and ("a", "bc") differ.
  mix(std::to_string(key.size()) + ":" + key + "=" + std::to_string(value.size()) + ":" + value + "\n");
  return *this;
}

std::string Fingerprint::hex() const { return to_hex(h_); }

std::string fnv1a64_hex(const void* data, size_t n) {
  uint64_t h = 14695981039346656037ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kPrime;
  }
  return to_hex(h);
}

}  // namespace xpusim
