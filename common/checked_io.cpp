#include "common/checked_io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.hpp"

namespace xpusim {

size_t first_invalid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1Fu;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0Fu;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07u;
    else return i;
    if (i + static_cast<size_t>(len) > n) return i;
    for (int k = 1; k < len; ++k) {
      unsigned char cc = p[i + static_cast<size_t>(k)];
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    // Overlong encodings, UTF-16 surrogates and values past U+10FFFF are not UTF-8.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      return i;
    i += static_cast<size_t>(len);
  }
  return std::string_view::npos;
}

int line_of_offset(std::string_view s, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < s.size(); ++i)
    if (s[i] == '\n') ++line;
  return line;
}

void require_utf8(std::string_view s, const std::string& where) {
  size_t bad = first_invalid_utf8(s);
  if (bad == std::string_view::npos) return;
  char buf[64];
  std::snprintf(buf, sizeof buf, "byte 0x%02X at offset %zu", static_cast<unsigned char>(s[bad]), bad);
  throw UserError(where + ": not valid UTF-8 (" + buf + ")");
}

bool strip_utf8_bom(std::string& s) {
  if (s.size() >= 3 && static_cast<unsigned char>(s[0]) == 0xEF && static_cast<unsigned char>(s[1]) == 0xBB &&
      static_cast<unsigned char>(s[2]) == 0xBF) {
    s.erase(0, 3);
    return true;
  }
  return false;
}

void write_file_checked(const std::string& path, const std::function<void(std::ostream&)>& write,
                        const std::string& what) {
  const std::string who = (what.empty() ? "" : what + ": ") + path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(who + ": is a directory, expected a file");
  std::ofstream os(path, std::ios::binary | std::ios::trunc);
  if (!os) throw UserError(who + ": cannot write file: " + std::strerror(errno));
  write(os);
  os.flush();
  if (!os) throw UserError(who + ": write failed (disk full?)");
  os.close();
  if (os.fail()) throw UserError(who + ": write failed on close (disk full?)");
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write,
                       const std::string& what) {
  const std::string who = (what.empty() ? "" : what + ": ") + path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(who + ": is a directory, expected a file");
  // A device, pipe or other special file (/dev/stdout, /dev/full) is written in place:
  // renaming over it would replace the node itself. A symlink is followed, so the file it
  // names is replaced and the link stays.
  std::string target = path;
  if (std::filesystem::exists(path, ec)) {
    if (!std::filesystem::is_regular_file(path, ec)) return write_file_checked(path, write, what);
    if (std::filesystem::is_symlink(path, ec)) target = std::filesystem::canonical(path, ec).string();
    if (ec) throw UserError(who + ": cannot resolve link: " + ec.message());
  }
  const std::string tmp = target + ".tmp";
  write_file_checked(tmp, write, what);
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    std::filesystem::remove(tmp, ec);
    throw UserError(who + ": cannot replace file: " + std::strerror(err));
  }
}

void check_stream(std::ostream& os, const std::string& what) {
  os.flush();
  if (!os) throw UserError(what + ": write failed (disk full or closed pipe?)");
}

std::string without_file_location(const std::string& msg, const std::string& path) {
  if (msg.rfind(path + ":", 0) != 0) return msg;
  size_t i = path.size() + 1, digits = i;
  while (digits < msg.size() && msg[digits] >= '0' && msg[digits] <= '9') ++digits;
  if (digits > i && msg.compare(digits, 2, ": ") == 0) return msg.substr(digits + 2);
  if (msg.compare(path.size(), 2, ": ") == 0) return msg.substr(path.size() + 2);
  return msg;
}

int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw UserError(what + ": too large (integer overflow)");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw UserError(what + ": too large (integer overflow)");
  return r;
}

}  // namespace xpusim
