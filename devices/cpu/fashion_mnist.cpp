#include "devices/cpu/fashion_mnist.hpp"

#include <zlib.h>

#include <filesystem>

#include "common/checked_io.hpp"
#include "common/error.hpp"

namespace xpusim::cpu {

namespace {

std::vector<uint8_t> gunzip(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(path + ": is a directory, expected a .gz file");
  const bool exists = std::filesystem::exists(path, ec);
  // ENOENT is "not installed"; anything else (a name too long, no permission) is the path's fault.
  if (ec && ec != std::errc::no_such_file_or_directory) throw UserError(path + ": " + ec.message());
  if (!exists)
    throw UnavailableError(path +
                           ": Fashion-MNIST not found; install the Debian package dataset-fashion-mnist "
                           "(sudo apt-get install dataset-fashion-mnist) or name the directory that holds it (data_dir)");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw UnavailableError(path + ": cannot open");
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  bool err = n < 0;
  gzclose(f);
  if (err) throw UserError(path + ": corrupt gzip stream");
  return out;
}

uint32_t be32(const std::vector<uint8_t>& d, size_t off) {
  return (uint32_t{d[off]} << 24) | (uint32_t{d[off + 1]} << 16) | (uint32_t{d[off + 2]} << 8) | d[off + 3];
}

// IDX: magic 0x00000803 (uint8, 3 dims) for images, 0x00000801 for labels.
void read_set(const std::string& dir, const std::string& prefix, ImageSet& s) {
  std::string ip = dir + "/" + prefix + "-images-idx3-ubyte.gz", lp = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  auto img = gunzip(ip), lab = gunzip(lp);
  if (img.size() < 16 || be32(img, 0) != 0x803) throw UserError(ip + ": not an IDX image file");
  if (lab.size() < 8 || be32(lab, 0) != 0x801) throw UserError(lp + ": not an IDX label file");
  s.count = be32(img, 4);
  s.rows = be32(img, 8);
  s.cols = be32(img, 12);
  // Each dimension is up to 2^32 - 1: their product wraps int64 (4 x 2^31 x 2^31 is 0, which a
  // 16-byte file then "matched", and every image read ran off the buffer). Checked instead.
  if (s.rows == 0 || s.cols == 0) throw UserError(ip + ": images of " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " pixels");
  const int64_t bytes = checked_mul(checked_mul(s.count, s.rows, ip + ": image count x rows"), s.cols, ip + ": image size");
  if (img.size() - 16 != static_cast<uint64_t>(bytes))
    throw UserError(ip + ": holds " + std::to_string(img.size() - 16) + " pixel bytes, its header says " + std::to_string(s.count) +
                    " images of " + std::to_string(s.rows) + "x" + std::to_string(s.cols) + " (truncated?)");
  if (be32(lab, 4) != s.count || lab.size() != 8 + static_cast<size_t>(s.count))
    throw UserError(lp + ": label count does not match " + ip);
  s.pixels.assign(img.begin() + 16, img.end());
  s.labels.assign(lab.begin() + 8, lab.end());
  for (uint8_t l : s.labels)
    if (l > 9) throw UserError(lp + ": label " + std::to_string(l) + " outside 0..9");
}

}  // namespace

FashionMnist load_fashion_mnist(const std::string& dir) {
  FashionMnist d;
  read_set(dir, "train", d.train);
  read_set(dir, "t10k", d.test);
  return d;
}

}  // namespace xpusim::cpu
