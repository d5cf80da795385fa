// Fashion-MNIST from Debian's dataset-fashion-mnist: the four gzipped IDX files
// (LeCun's MNIST format: big-endian magic, dimensions, then uint8 data) read with zlib.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace xpusim::cpu {

// Where Debian's dataset-fashion-mnist installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct ImageSet {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count x rows x cols
  std::vector<uint8_t> labels;  // count
};

struct FashionMnist {
  ImageSet train, test;
};

// Throws UnavailableError naming the Debian package when the files are missing, and
// UserError naming the file when one is malformed.
FashionMnist load_fashion_mnist(const std::string& dir = kFashionMnistDir);

}  // namespace xpusim::cpu
