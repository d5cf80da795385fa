// A text output file written in chunks as it is produced (a trace of tens of thousands of
// events is never held whole in memory), gzip-compressed when the path ends in ".gz" and
// xpusim was built with zlib (Debian zlib1g-dev). Every failure (unwritable directory, full
// disk, a .gz path without zlib) is a UserError naming the path.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace xpusim {

class ChunkedFileWriter {
 public:
  // `what` prefixes error messages (cli/ passes the flag, library code the field), or is empty.
  ChunkedFileWriter(const std::string& path, const std::string& what);
  ~ChunkedFileWriter();
  ChunkedFileWriter(const ChunkedFileWriter&) = delete;
  ChunkedFileWriter& operator=(const ChunkedFileWriter&) = delete;

  void write(std::string_view s);
  // Flushes, closes and checks; throws UserError on any failure. Must be called: the
  // destructor of an unclosed writer discards the file.
  void close();
  bool compressed() const { return gz_ != nullptr; }

  static bool gzip_available();
  static bool wants_gzip(const std::string& path);

 private:
  void flush();
  [[noreturn]] void fail(const std::string& why);
  std::string path_, what_, buf_;
  std::FILE* file_ = nullptr;
  void* gz_ = nullptr;  // gzFile when compressing
};

}  // namespace xpusim
