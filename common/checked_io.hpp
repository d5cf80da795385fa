// Input and output checks shared by every loader and writer: UTF-8 validation (YAML and CSV
// must be UTF-8, and JSON output cannot carry anything else), reading a file that must be a
// regular file, and writing a file or stream with every failure (full disk, unwritable
// directory, closed pipe) reported as a UserError naming the path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace xpusim {

// Offset of the first byte that is not part of a valid UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are invalid), or npos when `s` is valid.
size_t first_invalid_utf8(std::string_view s);
// 1-based line number of byte offset `pos` in `s`.
int line_of_offset(std::string_view s, size_t pos);
// Throws UserError "WHERE: not valid UTF-8 (byte 0xNN at offset K)" when `s` is not UTF-8.
void require_utf8(std::string_view s, const std::string& where);
// A leading UTF-8 byte-order mark (EF BB BF), which editors on Windows write.
bool strip_utf8_bom(std::string& s);

// Writes a whole file through `write` and checks the stream after writing and after
// closing: UserError "PATH: cannot write file: REASON" on any failure. `what` prefixes the
// message (cli/ passes the flag it came from), or is empty.
void write_file_checked(const std::string& path, const std::function<void(std::ostream&)>& write,
                        const std::string& what = "");
// Like write_file_checked, but the file is replaced atomically: written to PATH.tmp in the
// same directory, checked, then renamed over PATH. A crash or Ctrl-C while writing leaves
// the previous PATH intact, so a resumable output is always a whole file.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write,
                       const std::string& what = "");
// Flushes `os` and throws UserError "WHAT: write failed" when the stream is bad (stdout to a
// full disk or a closed pipe).
void check_stream(std::ostream& os, const std::string& what);

// "PATH:LINE: rest" or "PATH: rest" -> "rest": for errors in a value that came from an
// override (--set), where the file's line would point at text the user did not write.
std::string without_file_location(const std::string& msg, const std::string& path);

// a * b and a + b for sizes that must not wrap: nullopt-free API, throws UserError(`what`
// + ": too large (integer overflow)") on overflow.
int64_t checked_mul(int64_t a, int64_t b, const std::string& what);
int64_t checked_add(int64_t a, int64_t b, const std::string& what);

}  // namespace xpusim
