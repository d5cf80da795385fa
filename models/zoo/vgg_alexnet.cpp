// VGG and AlexNet as in torchvision (ImageNet), which fixes their parameter counts.
#include "models/zoo/families.hpp"

namespace xpusim::zoo {

namespace {

// The classifier of both: (adaptive avg-pool to 6x6 or 7x7), dropout-fc-relu x2, fc.
int classifier(ModelBuilder& b, int x, int64_t classes, double dropout, bool dropout_first) {
  x = b.flatten(x, "flatten");
  if (dropout_first && dropout > 0) x = b.dropout(x, dropout, "classifier.dropout1");
  x = b.relu(b.dense(x, 4096, true, "classifier.fc1"), "classifier.relu1");
  if (!dropout_first && dropout > 0) x = b.dropout(x, dropout, "classifier.dropout1");
  if (dropout_first && dropout > 0) x = b.dropout(x, dropout, "classifier.dropout2");
  x = b.relu(b.dense(x, 4096, true, "classifier.fc2"), "classifier.relu2");
  if (!dropout_first && dropout > 0) x = b.dropout(x, dropout, "classifier.dropout2");
  return b.dense(x, classes, true, "classifier.fc3");
}

}  // namespace

ModelBuildFn parse_vgg(SpecReader& r) {
  // Channel plan; 0 = max-pool (torchvision's "M").
  auto plan = r.integers("layers", std::vector<long long>{64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0,
                                                           512, 512, 512, 0},
                         "channels", "conv widths in order, 0 = 2x2 max-pool (default: VGG-16 'D')");
  for (long long c : plan)
    if (c < 0 || c > kMaxLayerSize) r.fail("layers", "widths must be in [0, 2147483647], got " + std::to_string(c));
  double dropout = r.number("dropout", 0.5, "fraction", "dropout in the classifier",
                            [](double v) { return v >= 0 && v < 1 ? "" : "must be in [0, 1)"; });
  return [plan, dropout](ModelBuilder& b, const ModelSpec& s) {
    Inputs in = image_inputs(b, s);
    int x = in.x;
    int conv_i = 0, pool_i = 0;
    for (long long c : plan) {
      if (c == 0) {
        x = b.max_pool(x, 2, 2, 0, "pool" + std::to_string(++pool_i));
      } else {
        std::string name = "conv" + std::to_string(++conv_i);
        x = b.relu(b.conv(x, static_cast<int>(c), 3, 1, 1, true, name), name + ".relu");
      }
    }
    // torchvision's AdaptiveAvgPool2d(7) is an identity at 224 px (7x7 maps already).
    int logits = classifier(b, x, s.classes, dropout, false);
    b.softmax_cross_entropy(logits, in.labels, "loss");
  };
}

ModelBuildFn parse_alexnet(SpecReader& r) {
  double dropout = r.number("dropout", 0.5, "fraction", "dropout in the classifier");
  return [dropout](ModelBuilder& b, const ModelSpec& s) {
    Inputs in = image_inputs(b, s);
    int x = b.relu(b.conv(in.x, 64, 11, 4, 2, true, "conv1"), "relu1");
    x = b.max_pool(x, 3, 2, 0, "pool1");
    x = b.relu(b.conv(x, 192, 5, 1, 2, true, "conv2"), "relu2");
    x = b.max_pool(x, 3, 2, 0, "pool2");
    x = b.relu(b.conv(x, 384, 3, 1, 1, true, "conv3"), "relu3");
    x = b.relu(b.conv(x, 256, 3, 1, 1, true, "conv4"), "relu4");
    x = b.relu(b.conv(x, 256, 3, 1, 1, true, "conv5"), "relu5");
    x = b.max_pool(x, 3, 2, 0, "pool5");  // 6x6 at 224 px: adaptive pool is an identity
    int logits = classifier(b, x, s.classes, dropout, true);
    b.softmax_cross_entropy(logits, in.labels, "loss");
  };
}

}  // namespace xpusim::zoo
