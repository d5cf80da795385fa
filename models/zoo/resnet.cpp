// ResNet v1.5 as in torchvision (stride on the 3x3 conv of a bottleneck), and the common
// CIFAR variant (3x3 stem, no max-pool). Also Wide ResNet for CIFAR.
#include "models/zoo/families.hpp"

namespace xpusim::zoo {

namespace {

struct ResNetParams {
  std::vector<long long> blocks;
  bool bottleneck = true;
  bool cifar_stem = false;
};

int conv_bn(ModelBuilder& b, int x, int filters, int k, int s, int p, const std::string& name, bool relu) {
  int y = b.conv(x, filters, k, s, p, false, name + ".conv");
  y = b.batch_norm(y, name + ".bn");
  return relu ? b.relu(y, name + ".relu") : y;
}

void build_resnet(ModelBuilder& b, const ModelSpec& s, const ResNetParams& p) {
  Inputs in = image_inputs(b, s);
  int x;
  if (p.cifar_stem) {
    x = conv_bn(b, in.x, 64, 3, 1, 1, "stem", true);
  } else {
    x = conv_bn(b, in.x, 64, 7, 2, 3, "stem", true);
    x = b.max_pool(x, 3, 2, 1, "stem.maxpool");
  }
  int64_t channels = 64;
  const int expansion = p.bottleneck ? 4 : 1;
  for (size_t stage = 0; stage < p.blocks.size(); ++stage) {
    int width = 64 << stage;
    for (long long blk = 0; blk < p.blocks[stage]; ++blk) {
      std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(blk);
      int stride = (blk == 0 && stage > 0) ? 2 : 1;
      int shortcut = x;
      int out_ch = width * expansion;
      if (stride != 1 || channels != out_ch) shortcut = conv_bn(b, x, out_ch, 1, stride, 0, name + ".downsample", false);
      int y;
      if (p.bottleneck) {
        y = conv_bn(b, x, width, 1, 1, 0, name + ".1", true);
        y = conv_bn(b, y, width, 3, stride, 1, name + ".2", true);
        y = conv_bn(b, y, out_ch, 1, 1, 0, name + ".3", false);
      } else {
        y = conv_bn(b, x, width, 3, stride, 1, name + ".1", true);
        y = conv_bn(b, y, out_ch, 3, 1, 1, name + ".2", false);
      }
      x = b.relu(b.add({y, shortcut}, name + ".add"), name + ".relu");
      channels = out_ch;
    }
  }
  x = b.global_avg_pool(x, "avgpool");
  x = b.dense(x, s.classes, true, "fc");
  b.softmax_cross_entropy(x, in.labels, "loss");
}

struct WrnParams {
  long long depth = 28;
  long long widen = 10;
  double dropout = 0.0;
};

// Pre-activation basic block: BN-ReLU-conv3x3-BN-ReLU-(dropout)-conv3x3, 1x1 conv shortcut
// when the shape changes (Zagoruyko & Komodakis 2016, their PyTorch reference: bias-free convs).
void build_wrn(ModelBuilder& b, const ModelSpec& s, const WrnParams& p) {
  Inputs in = image_inputs(b, s);
  const long long n = (p.depth - 4) / 6;
  int x = b.conv(in.x, 16, 3, 1, 1, false, "conv1");
  int64_t channels = 16;
  for (int stage = 0; stage < 3; ++stage) {
    int width = static_cast<int>((16 << stage) * p.widen);
    for (long long blk = 0; blk < n; ++blk) {
      std::string name = "block" + std::to_string(stage + 1) + "." + std::to_string(blk);
      int stride = (blk == 0 && stage > 0) ? 2 : 1;
      int o = b.relu(b.batch_norm(x, name + ".bn1"), name + ".relu1");
      int shortcut = (channels == width) ? x : b.conv(o, width, 1, stride, 0, false, name + ".shortcut");
      int y = b.conv(o, width, 3, stride, 1, false, name + ".conv1");
      y = b.relu(b.batch_norm(y, name + ".bn2"), name + ".relu2");
      if (p.dropout > 0) y = b.dropout(y, p.dropout, name + ".dropout");
      y = b.conv(y, width, 3, 1, 1, false, name + ".conv2");
      x = b.add({y, shortcut}, name + ".add");
      channels = width;
    }
  }
  x = b.relu(b.batch_norm(x, "bn_final"), "relu_final");
  x = b.global_avg_pool(x, "avgpool");
  x = b.dense(x, s.classes, true, "fc");
  b.softmax_cross_entropy(x, in.labels, "loss");
}

}  // namespace

ModelBuildFn parse_resnet(SpecReader& r) {
  ResNetParams p;
  p.blocks = r.integers("blocks", std::nullopt, "blocks", "residual blocks per stage, e.g. [3,4,6,3]");
  p.bottleneck = r.flag("bottleneck", true, "bottleneck (1x1-3x3-1x1, x4) blocks; false = basic blocks");
  p.cifar_stem = r.flag("cifar_stem", false, "3x3 stride-1 stem without max-pool (32 px inputs)");
  if (p.blocks.empty()) r.fail("blocks", "needs at least one stage");
  for (long long n : p.blocks)
    if (n < 1 || n > 10000) r.fail("blocks", "each stage needs 1 to 10000 blocks, got " + std::to_string(n));
  return [p](ModelBuilder& b, const ModelSpec& s) { build_resnet(b, s, p); };
}

ModelBuildFn parse_wide_resnet(SpecReader& r) {
  WrnParams p;
  p.depth = r.integer("depth", 28, "layers", "depth; (depth - 4) must be divisible by 6",
                      [](long long d) {
                        return (d - 4) % 6 == 0 && d > 4 && d <= 10000 ? "" : "(depth - 4) must be a positive multiple of 6, depth <= 10000";
                      });
  p.widen = r.integer("widen", 10, "x", "widening factor k",
                      [](long long v) { return v > 0 && v <= 1024 ? "" : "must be in [1, 1024]"; });
  p.dropout = r.number("dropout", 0.0, "fraction", "dropout between the convs of a block",
                       [](double v) { return v >= 0 && v < 1 ? "" : "must be in [0, 1)"; });
  return [p](ModelBuilder& b, const ModelSpec& s) { build_wrn(b, s, p); };
}

}  // namespace xpusim::zoo
