// Inception v4 (Szegedy, Ioffe, Vanhoucke & Alemi, "Inception-v4, Inception-ResNet and the
// Impact of Residual Connections on Learning", AAAI 2017, figures 3-9), as TensorFlow-Slim's
// inception_v4 and tf_cnn_benchmarks build it: conv = bias-free conv + batch-norm + relu,
// 299 px input, stem, 4x Inception-A, Reduction-A, 7x Inception-B, Reduction-B,
// 3x Inception-C, global average pool, dropout, classifier (no auxiliary head).
#include "models/zoo/conv_bn_relu.hpp"
#include "models/zoo/families.hpp"

namespace xpusim::zoo {

namespace {

struct InceptionV4 {
  ModelBuilder& b;

  int conv(int x, int filters, int kh, int kw, int s, int ph, int pw, const std::string& name) {
    return conv_bn_relu(b, x, filters, kh, kw, s, ph, pw, name);
  }
  // Square kernel; `same` pads to keep the size at stride 1, else no padding ("VALID").
  int conv(int x, int filters, int k, int s, bool same, const std::string& name) {
    const int p = same ? k / 2 : 0;
    return conv(x, filters, k, k, s, p, p, name);
  }
  int conv1x7(int x, int filters, const std::string& name) { return conv(x, filters, 1, 7, 1, 0, 3, name); }
  int conv7x1(int x, int filters, const std::string& name) { return conv(x, filters, 7, 1, 1, 3, 0, name); }
  int conv1x3(int x, int filters, const std::string& name) { return conv(x, filters, 1, 3, 1, 0, 1, name); }
  int conv3x1(int x, int filters, const std::string& name) { return conv(x, filters, 3, 1, 1, 1, 0, name); }

  int stem(int x) {
    x = conv(x, 32, 3, 2, false, "stem.conv1");
    x = conv(x, 32, 3, 1, false, "stem.conv2");
    x = conv(x, 64, 3, 1, true, "stem.conv3");
    x = b.concat({b.max_pool(x, 3, 2, 0, "stem.mixed3a.pool"), conv(x, 96, 3, 2, false, "stem.mixed3a.conv")}, 1,
                 "stem.mixed3a");
    int b0 = conv(conv(x, 64, 1, 1, true, "stem.mixed4a.b0_1"), 96, 3, 1, false, "stem.mixed4a.b0_2");
    int b1 = conv(x, 64, 1, 1, true, "stem.mixed4a.b1_1");
    b1 = conv1x7(b1, 64, "stem.mixed4a.b1_2");
    b1 = conv7x1(b1, 64, "stem.mixed4a.b1_3");
    b1 = conv(b1, 96, 3, 1, false, "stem.mixed4a.b1_4");
    x = b.concat({b0, b1}, 1, "stem.mixed4a");
    return b.concat({conv(x, 192, 3, 2, false, "stem.mixed5a.conv"), b.max_pool(x, 3, 2, 0, "stem.mixed5a.pool")}, 1,
                    "stem.mixed5a");
  }
  int block_a(int x, const std::string& n) {
    int b0 = conv(x, 96, 1, 1, true, n + ".b0");
    int b1 = conv(conv(x, 64, 1, 1, true, n + ".b1_1"), 96, 3, 1, true, n + ".b1_2");
    int b2 = conv(x, 64, 1, 1, true, n + ".b2_1");
    b2 = conv(b2, 96, 3, 1, true, n + ".b2_2");
    b2 = conv(b2, 96, 3, 1, true, n + ".b2_3");
    int b3 = conv(b.avg_pool(x, 3, 1, 1, n + ".b3_pool"), 96, 1, 1, true, n + ".b3");
    return b.concat({b0, b1, b2, b3}, 1, n);
  }
  int reduction_a(int x, const std::string& n) {
    int b0 = conv(x, 384, 3, 2, false, n + ".b0");
    int b1 = conv(x, 192, 1, 1, true, n + ".b1_1");
    b1 = conv(b1, 224, 3, 1, true, n + ".b1_2");
    b1 = conv(b1, 256, 3, 2, false, n + ".b1_3");
    return b.concat({b0, b1, b.max_pool(x, 3, 2, 0, n + ".b2_pool")}, 1, n);
  }
  int block_b(int x, const std::string& n) {
    int b0 = conv(x, 384, 1, 1, true, n + ".b0");
    int b1 = conv(x, 192, 1, 1, true, n + ".b1_1");
    b1 = conv1x7(b1, 224, n + ".b1_2");
    b1 = conv7x1(b1, 256, n + ".b1_3");
    int b2 = conv(x, 192, 1, 1, true, n + ".b2_1");
    b2 = conv7x1(b2, 192, n + ".b2_2");
    b2 = conv1x7(b2, 224, n + ".b2_3");
    b2 = conv7x1(b2, 224, n + ".b2_4");
    b2 = conv1x7(b2, 256, n + ".b2_5");
    int b3 = conv(b.avg_pool(x, 3, 1, 1, n + ".b3_pool"), 128, 1, 1, true, n + ".b3");
    return b.concat({b0, b1, b2, b3}, 1, n);
  }
  int reduction_b(int x, const std::string& n) {
    int b0 = conv(conv(x, 192, 1, 1, true, n + ".b0_1"), 192, 3, 2, false, n + ".b0_2");
    int b1 = conv(x, 256, 1, 1, true, n + ".b1_1");
    b1 = conv1x7(b1, 256, n + ".b1_2");
    b1 = conv7x1(b1, 320, n + ".b1_3");
    b1 = conv(b1, 320, 3, 2, false, n + ".b1_4");
    return b.concat({b0, b1, b.max_pool(x, 3, 2, 0, n + ".b2_pool")}, 1, n);
  }
  int block_c(int x, const std::string& n) {
    int b0 = conv(x, 256, 1, 1, true, n + ".b0");
    int b1 = conv(x, 384, 1, 1, true, n + ".b1_1");
    int b1a = conv1x3(b1, 256, n + ".b1_2a");
    int b1b = conv3x1(b1, 256, n + ".b1_2b");
    int b2 = conv(x, 384, 1, 1, true, n + ".b2_1");
    b2 = conv3x1(b2, 448, n + ".b2_2");
    b2 = conv1x3(b2, 512, n + ".b2_3");
    int b2a = conv1x3(b2, 256, n + ".b2_4a");
    int b2b = conv3x1(b2, 256, n + ".b2_4b");
    int b3 = conv(b.avg_pool(x, 3, 1, 1, n + ".b3_pool"), 256, 1, 1, true, n + ".b3");
    return b.concat({b0, b1a, b1b, b2a, b2b, b3}, 1, n);
  }
};

}  // namespace

ModelBuildFn parse_inception_v4(SpecReader& r) {
  double dropout = r.number("dropout", 0.2, "fraction", "dropout before the classifier (Slim: keep 0.8)");
  return [dropout](ModelBuilder& b, const ModelSpec& s) {
    Inputs in = image_inputs(b, s);
    InceptionV4 n{b};
    int x = n.stem(in.x);
    for (int i = 0; i < 4; ++i) x = n.block_a(x, "Mixed_5" + std::string(1, static_cast<char>('b' + i)));
    x = n.reduction_a(x, "Mixed_6a");
    for (int i = 0; i < 7; ++i) x = n.block_b(x, "Mixed_6" + std::string(1, static_cast<char>('b' + i)));
    x = n.reduction_b(x, "Mixed_7a");
    for (int i = 0; i < 3; ++i) x = n.block_c(x, "Mixed_7" + std::string(1, static_cast<char>('b' + i)));
    x = b.global_avg_pool(x, "avgpool");
    if (dropout > 0) x = b.dropout(x, dropout, "dropout");
    x = b.dense(x, s.classes, true, "fc");
    b.softmax_cross_entropy(x, in.labels, "loss");
  };
}

}  // namespace xpusim::zoo
