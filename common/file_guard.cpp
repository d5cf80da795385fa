// Input caps, regular-file checks, output identity checks and advisory locks (file_guard.hpp).
#include "common/file_guard.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"

namespace xpusim {

namespace {

std::string mib(int64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// Opens `path` for reading without blocking (a FIFO with no writer would block open()) and
// checks what it is. Returns the fd and its size.
int open_input(const std::string& path, int64_t default_cap, int64_t& size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::error_code ec;
    if (err == EISDIR || std::filesystem::is_directory(path, ec))
      throw UserError(path + ": is a directory, expected a file");
    throw UserError(path + ": cannot open file: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw UserError(path + ": cannot open file: " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw UserError(path + ": is a directory, expected a file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UserError(path + ": not a regular file (a device, pipe or socket); give a file");
  }
  const int64_t cap = input_size_cap(default_cap);
  if (st.st_size > cap) {
    ::close(fd);
    throw UserError(path + ": " + std::to_string(st.st_size) + " bytes, more than the " + mib(cap) +
                    " limit for this kind of input (set XPUSIM_MAX_INPUT_MB to raise it)");
  }
  size = st.st_size;
  return fd;
}

}  // namespace

int64_t input_size_cap(int64_t def) {
  const char* env = std::getenv("XPUSIM_MAX_INPUT_MB");
  if (!env || !*env) return def;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(env, &end, 10);
  if (errno != 0 || *end != '\0' || v < 1 || v > (int64_t(1) << 40))
    throw UserError(std::string("XPUSIM_MAX_INPUT_MB: '") + env + "' is not a whole number of MiB in [1, 2^40]");
  return static_cast<int64_t>(v) << 20;
}

void check_input_file(const std::string& path, int64_t default_cap) {
  int64_t size = 0;
  ::close(open_input(path, default_cap, size));
}

std::string read_input_file(const std::string& path, int64_t default_cap) {
  int64_t size = 0;
  const int fd = open_input(path, default_cap, size);
  const int64_t cap = input_size_cap(default_cap);
  std::string out;
  out.resize(static_cast<size_t>(size));
  size_t have = 0;
  for (;;) {
    if (have == out.size()) {
      // The file may have grown since fstat: read on, within the cap.
      if (static_cast<int64_t>(out.size()) >= cap + 1) break;
      out.resize(std::min<size_t>(static_cast<size_t>(cap + 1), out.size() + 65536));
    }
    const ssize_t n = ::read(fd, out.data() + have, out.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw UserError(path + ": cannot read file: " + std::strerror(err));
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  if (static_cast<int64_t>(have) > cap)
    throw UserError(path + ": more than the " + mib(cap) + " limit for this kind of input (set XPUSIM_MAX_INPUT_MB to raise it)");
  out.resize(have);
  return out;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (a.empty() || b.empty() || ::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void refuse_output_over_input(const std::string& flag, const std::string& output, const std::vector<std::string>& inputs) {
  if (output.empty()) return;
  for (const auto& in : inputs)
    if (same_file(output, in))
      throw UserError(flag + ": " + output + " is the same file as the input " + in +
                      "; writing it would destroy the input (give another path)");
}

void refuse_shared_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  namespace fs = std::filesystem;
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [fa, pa] = outputs[i];
      const auto& [fb, pb] = outputs[j];
      if (pa.empty() || pb.empty()) continue;
      std::error_code ea, eb;
      const fs::path ca = fs::weakly_canonical(pa, ea), cb = fs::weakly_canonical(pb, eb);
      if (pa == pb || (!ea && !eb && ca == cb) || same_file(pa, pb))
        throw UserError(fb + ": " + pb + " is also the " + fa + " output; give each output its own file");
    }
}

FileLock::FileLock(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return;  // /dev/stdout, a FIFO: nothing to share
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;  // the writer reports why it cannot open the file
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw UserError((what.empty() ? "" : what + ": ") + path +
                      ": in use by another xpusim process (it holds the file's lock); wait for it to finish or "
                      "write elsewhere");
  }
}

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace xpusim
