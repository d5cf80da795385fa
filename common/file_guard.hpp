// Guards on the files a command reads and writes: inputs must be regular files no larger than
// a cap (a link to /dev/zero, a FIFO or a directory is refused with a message instead of
// filling memory or blocking), an output must not be one of the inputs or another output
// (compared by device and inode, so links are seen through), and a file two xpusim processes
// could append to at once (sweep row files, train logs, checkpoints) is held under an
// advisory lock. Caps: docs/reliability.md; $XPUSIM_MAX_INPUT_MB replaces every default.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xpusim {

// Default size caps, in bytes, per kind of input.
inline constexpr int64_t kMaxTextInputBytes = int64_t(256) << 20;   // CSV, row files, logs
inline constexpr int64_t kMaxYamlInputBytes = int64_t(4) << 20;     // spec files (largest shipped: 8 KB)
inline constexpr int64_t kMaxBinaryInputBytes = int64_t(4) << 30;   // ONNX models, checkpoints

// The cap in effect: $XPUSIM_MAX_INPUT_MB (a whole number of MiB >= 1) when set, else `def`.
int64_t input_size_cap(int64_t def);
// Reads a whole file. UserError "PATH: ..." when it is a directory, not a regular file
// (device, FIFO, socket: opened without blocking), unreadable, or larger than the cap.
std::string read_input_file(const std::string& path, int64_t default_cap);
// The same checks without reading (for readers that stream the file themselves).
void check_input_file(const std::string& path, int64_t default_cap);

// True when both paths exist and name the same file (same device and inode, links followed).
bool same_file(const std::string& a, const std::string& b);
// UserError "FLAG: PATH is the same file as INPUT; ..." when `output` is one of `inputs`.
// Empty input paths are skipped.
void refuse_output_over_input(const std::string& flag, const std::string& output,
                              const std::vector<std::string>& inputs);
// UserError when two outputs (flag, path) name one file (by path, or same_file when both exist).
void refuse_shared_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// An exclusive advisory lock (flock) on `path`, created when missing, held until destruction
// (a forked child shares it). UserError "PATH: in use by another xpusim process" when another
// process holds it. Paths that are not regular files (/dev/stdout, a FIFO) are not locked.
class FileLock {
 public:
  FileLock() = default;
  FileLock(const std::string& path, const std::string& what);
  FileLock(FileLock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();
  bool held() const { return fd_ >= 0; }
  // The locked descriptor (-1 when none): a forked worker closes its copy, so that the lock
  // ends with the process that took it.
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace xpusim
