// Table-driven CRC-32C, one byte per step (a checkpoint of a few MB takes milliseconds). The
// table is the reflected polynomial's remainder of every byte value, built once.
#include "common/crc32c.hpp"

#include <array>
#include <cstdio>

namespace xpusim {

namespace {

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int k = 0; k < 8; ++k) r = (r & 1u) ? (r >> 1) ^ 0x82F63B78u : r >> 1;
    t[b] = r;
  }
  return t;
}

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
  static const std::array<uint32_t, 256> table = make_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return ~c;
}

std::string crc32c_hex(uint32_t crc) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

}  // namespace xpusim
