// Inception v3 as in torchvision (Szegedy et al. 2016): BasicConv2d = bias-free conv +
// batch-norm + relu, 299 px input, auxiliary classifier on Mixed_6e (trained with its own
// loss, as tf_cnn_benchmarks and torchvision do).
#include "models/zoo/conv_bn_relu.hpp"
#include "models/zoo/families.hpp"

namespace xpusim::zoo {

namespace {

struct InceptionV3 {
  ModelBuilder& b;

  int conv(int x, int filters, int kh, int kw, int s, int ph, int pw, const std::string& name) {
    return conv_bn_relu(b, x, filters, kh, kw, s, ph, pw, name);
  }
  int conv(int x, int filters, int k, int s, int p, const std::string& name) {
    return conv(x, filters, k, k, s, p, p, name);
  }

  int block_a(int x, int pool_features, const std::string& n) {
    int b1 = conv(x, 64, 1, 1, 0, n + ".branch1x1");
    int b5 = conv(conv(x, 48, 1, 1, 0, n + ".branch5x5_1"), 64, 5, 1, 2, n + ".branch5x5_2");
    int b3 = conv(x, 64, 1, 1, 0, n + ".branch3x3dbl_1");
    b3 = conv(b3, 96, 3, 1, 1, n + ".branch3x3dbl_2");
    b3 = conv(b3, 96, 3, 1, 1, n + ".branch3x3dbl_3");
    int bp = conv(b.avg_pool(x, 3, 1, 1, n + ".branch_pool.avg"), pool_features, 1, 1, 0, n + ".branch_pool");
    return b.concat({b1, b5, b3, bp}, 1, n);
  }
  int block_b(int x, const std::string& n) {
    int b3 = conv(x, 384, 3, 2, 0, n + ".branch3x3");
    int bd = conv(x, 64, 1, 1, 0, n + ".branch3x3dbl_1");
    bd = conv(bd, 96, 3, 1, 1, n + ".branch3x3dbl_2");
    bd = conv(bd, 96, 3, 2, 0, n + ".branch3x3dbl_3");
    int bp = b.max_pool(x, 3, 2, 0, n + ".branch_pool");
    return b.concat({b3, bd, bp}, 1, n);
  }
  int block_c(int x, int c7, const std::string& n) {
    int b1 = conv(x, 192, 1, 1, 0, n + ".branch1x1");
    int b7 = conv(x, c7, 1, 1, 0, n + ".branch7x7_1");
    b7 = conv(b7, c7, 1, 7, 1, 0, 3, n + ".branch7x7_2");
    b7 = conv(b7, 192, 7, 1, 1, 3, 0, n + ".branch7x7_3");
    int bd = conv(x, c7, 1, 1, 0, n + ".branch7x7dbl_1");
    bd = conv(bd, c7, 7, 1, 1, 3, 0, n + ".branch7x7dbl_2");
    bd = conv(bd, c7, 1, 7, 1, 0, 3, n + ".branch7x7dbl_3");
    bd = conv(bd, c7, 7, 1, 1, 3, 0, n + ".branch7x7dbl_4");
    bd = conv(bd, 192, 1, 7, 1, 0, 3, n + ".branch7x7dbl_5");
    int bp = conv(b.avg_pool(x, 3, 1, 1, n + ".branch_pool.avg"), 192, 1, 1, 0, n + ".branch_pool");
    return b.concat({b1, b7, bd, bp}, 1, n);
  }
  int block_d(int x, const std::string& n) {
    int b3 = conv(conv(x, 192, 1, 1, 0, n + ".branch3x3_1"), 320, 3, 2, 0, n + ".branch3x3_2");
    int b7 = conv(x, 192, 1, 1, 0, n + ".branch7x7x3_1");
    b7 = conv(b7, 192, 1, 7, 1, 0, 3, n + ".branch7x7x3_2");
    b7 = conv(b7, 192, 7, 1, 1, 3, 0, n + ".branch7x7x3_3");
    b7 = conv(b7, 192, 3, 2, 0, n + ".branch7x7x3_4");
    int bp = b.max_pool(x, 3, 2, 0, n + ".branch_pool");
    return b.concat({b3, b7, bp}, 1, n);
  }
  int block_e(int x, const std::string& n) {
    int b1 = conv(x, 320, 1, 1, 0, n + ".branch1x1");
    int b3 = conv(x, 384, 1, 1, 0, n + ".branch3x3_1");
    int b3a = conv(b3, 384, 1, 3, 1, 0, 1, n + ".branch3x3_2a");
    int b3b = conv(b3, 384, 3, 1, 1, 1, 0, n + ".branch3x3_2b");
    int bd = conv(x, 448, 1, 1, 0, n + ".branch3x3dbl_1");
    bd = conv(bd, 384, 3, 1, 1, n + ".branch3x3dbl_2");
    int bda = conv(bd, 384, 1, 3, 1, 0, 1, n + ".branch3x3dbl_3a");
    int bdb = conv(bd, 384, 3, 1, 1, 1, 0, n + ".branch3x3dbl_3b");
    int bp = conv(b.avg_pool(x, 3, 1, 1, n + ".branch_pool.avg"), 192, 1, 1, 0, n + ".branch_pool");
    return b.concat({b1, b3a, b3b, bda, bdb, bp}, 1, n);
  }
};

}  // namespace

ModelBuildFn parse_inception_v3(SpecReader& r) {
  bool aux = r.flag("aux_logits", true, "train the auxiliary classifier on Mixed_6e");
  double dropout = r.number("dropout", 0.5, "fraction", "dropout before the final classifier");
  return [aux, dropout](ModelBuilder& b, const ModelSpec& s) {
    Inputs in = image_inputs(b, s);
    InceptionV3 n{b};
    int x = n.conv(in.x, 32, 3, 2, 0, "Conv2d_1a_3x3");
    x = n.conv(x, 32, 3, 1, 0, "Conv2d_2a_3x3");
    x = n.conv(x, 64, 3, 1, 1, "Conv2d_2b_3x3");
    x = b.max_pool(x, 3, 2, 0, "maxpool1");
    x = n.conv(x, 80, 1, 1, 0, "Conv2d_3b_1x1");
    x = n.conv(x, 192, 3, 1, 0, "Conv2d_4a_3x3");
    x = b.max_pool(x, 3, 2, 0, "maxpool2");
    x = n.block_a(x, 32, "Mixed_5b");
    x = n.block_a(x, 64, "Mixed_5c");
    x = n.block_a(x, 64, "Mixed_5d");
    x = n.block_b(x, "Mixed_6a");
    x = n.block_c(x, 128, "Mixed_6b");
    x = n.block_c(x, 160, "Mixed_6c");
    x = n.block_c(x, 160, "Mixed_6d");
    x = n.block_c(x, 192, "Mixed_6e");
    if (aux) {
      int a = b.avg_pool(x, 5, 3, 0, "AuxLogits.avgpool");
      a = n.conv(a, 128, 1, 1, 0, "AuxLogits.conv0");
      a = n.conv(a, 768, 5, 1, 0, "AuxLogits.conv1");
      a = b.global_avg_pool(a, "AuxLogits.gap");
      a = b.dense(a, s.classes, true, "AuxLogits.fc");
      b.softmax_cross_entropy(a, in.labels, "aux_loss", /*auxiliary=*/true);
    }
    x = n.block_d(x, "Mixed_7a");
    x = n.block_e(x, "Mixed_7b");
    x = n.block_e(x, "Mixed_7c");
    x = b.global_avg_pool(x, "avgpool");
    if (dropout > 0) x = b.dropout(x, dropout, "dropout");
    x = b.dense(x, s.classes, true, "fc");
    b.softmax_cross_entropy(x, in.labels, "loss");
  };
}

}  // namespace xpusim::zoo
