// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78, as in iSCSI, ext4 and
// SSE4.2's crc32 instruction): the checksum of training checkpoints. Unlike the FNV-1a hash
// used for fingerprints it detects every burst error up to 32 bits and every odd number of
// flipped bits; it is a check against damage, not against a deliberate forger.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace xpusim {

// Continues a CRC-32C over `n` more bytes; start with crc = 0. crc32c("123456789") = 0xE3069283.
uint32_t crc32c(uint32_t crc, const void* data, size_t n);
// 8 lowercase hex digits.
std::string crc32c_hex(uint32_t crc);

}  // namespace xpusim
