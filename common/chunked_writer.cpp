// See chunked_writer.hpp. zlib is optional (XPUSIM_HAVE_ZLIB): without it a ".gz" path is
// refused rather than written uncompressed under a name that says otherwise.
#include "common/chunked_writer.hpp"

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

#ifdef XPUSIM_HAVE_ZLIB
#include <zlib.h>
#endif

namespace xpusim {

namespace {
constexpr size_t kChunkBytes = 1 << 20;  // one write (and one deflate call) per MiB
}

bool ChunkedFileWriter::gzip_available() {
#ifdef XPUSIM_HAVE_ZLIB
  return true;
#else
  return false;
#endif
}

bool ChunkedFileWriter::wants_gzip(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
}

ChunkedFileWriter::ChunkedFileWriter(const std::string& path, const std::string& what) : path_(path), what_(what) {
  if (wants_gzip(path)) {
#ifdef XPUSIM_HAVE_ZLIB
    // Level 1: traces are written to be fast (issue 36: 1 s for a v2-8 step); on trace JSON it
    // costs about 0.6x the CPU of zlib's default 6 for a file 1.25x larger (a 35 MB TPU trace:
    // 1.8 MB instead of 1.46 MB). "wb" writes a gzip (not raw deflate) stream.
    gzFile f = gzopen(path.c_str(), "wb1");
    if (!f) fail(std::strerror(errno));
    gz_ = f;
#else
    fail("this xpusim was built without zlib (Debian zlib1g-dev): write a .json path, or rebuild with zlib");
#endif
  } else {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) fail(std::strerror(errno));
  }
  buf_.reserve(kChunkBytes + 4096);
}

ChunkedFileWriter::~ChunkedFileWriter() {
  if (file_) std::fclose(file_);
#ifdef XPUSIM_HAVE_ZLIB
  if (gz_) gzclose(static_cast<gzFile>(gz_));
#endif
}

void ChunkedFileWriter::fail(const std::string& why) {
  throw UserError((what_.empty() ? "" : what_ + ": ") + path_ + ": cannot write file: " + why);
}

void ChunkedFileWriter::write(std::string_view s) {
  buf_.append(s);
  if (buf_.size() >= kChunkBytes) flush();
}

void ChunkedFileWriter::flush() {
  if (buf_.empty()) return;
#ifdef XPUSIM_HAVE_ZLIB
  if (gz_) {
    if (gzwrite(static_cast<gzFile>(gz_), buf_.data(), static_cast<unsigned>(buf_.size())) !=
        static_cast<int>(buf_.size())) {
      int err = 0;
      const char* msg = gzerror(static_cast<gzFile>(gz_), &err);
      fail(err == Z_ERRNO ? std::strerror(errno) : msg);
    }
    buf_.clear();
    return;
  }
#endif
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) fail(std::strerror(errno));
  buf_.clear();
}

void ChunkedFileWriter::close() {
  flush();
#ifdef XPUSIM_HAVE_ZLIB
  if (gz_) {
    const int rc = gzclose(static_cast<gzFile>(gz_));
    gz_ = nullptr;
    if (rc != Z_OK) fail(rc == Z_ERRNO ? std::strerror(errno) : "gzip stream error");
    return;
  }
#endif
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fflush(f) != 0 || std::ferror(f)) {
    const int e = errno;
    std::fclose(f);
    fail(std::strerror(e));
  }
  if (std::fclose(f) != 0) fail(std::strerror(errno));
}

}  // namespace xpusim
