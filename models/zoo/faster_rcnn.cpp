// Faster R-CNN with a ResNet-50 FPN backbone as torchvision builds it
// (torchvision.models.detection.fasterrcnn_resnet50_fpn; Ren et al. 2015, Lin et al. 2017), one
// training step on images already resized and padded (GeneralizedRCNNTransform: shorter side
// 800, longer at most 1333, padded to a multiple of 32).
//
// What is exact: every layer with parameters, hence the parameter count (41,755,286 with 91
// COCO classes: the backbone's batch norms are FrozenBatchNorm2d, buffers, not parameters), and
// the FLOPs of every conv and dense layer. What is priced approximately, and why:
// - Frozen batch norm is an affine per channel: a Scale op of the same traffic.
// - The RPN head (3x3 conv, objectness and box 1x1 convs) is one set of weights applied to the
//   five levels P2..P6 (conv_like). Its two losses (binary cross-entropy and smooth L1 over the
//   sampled anchors) are one cross-entropy over the concatenated outputs per level: the same
//   element-wise traffic.
// - Anchor decoding, NMS and the proposal sampler are not GEMM or conv work and are left out
//   (the post-processing the studies time is small next to the backbone at batch 1-4).
// - MultiScaleRoIAlign gathers `rois` 7x7 windows per image from P2..P5: a copy of the pooled
//   tensor [N x rois, 256, 7, 7] read from P2 (the level most boxes of COCO's size map to).
// - The box head (two 1024-unit dense layers) and predictor (91 classes, 91 x 4 box deltas)
//   are exact; their losses are one cross-entropy over the concatenated outputs.
// - Layers torchvision freezes (conv1 and layer1 with trainable_backbone_layers = 3) still
//   count their weight gradients: the builder has no frozen weights (about 2% of the
//   backbone's backward FLOPs).
#include "models/zoo/families.hpp"

namespace xpusim::zoo {

namespace {

struct FasterRcnnParams {
  std::vector<long long> blocks;  // ResNet stages
  long long fpn_channels = 256;
  long long anchors = 3;  // per location per level (three aspect ratios, one size per level)
  long long rois = 512;   // sampled proposals per image in the box head (training)
  long long box_head = 1024;
};

// conv -> frozen batch norm (a per-channel affine without parameters) -> optional ReLU.
int conv_frozen_bn(ModelBuilder& b, int x, int filters, int k, int s, int p, const std::string& name, bool relu) {
  int y = b.conv(x, filters, k, s, p, false, name + ".conv");
  y = b.scale(y, 1.0, name + ".frozen_bn");
  return relu ? b.relu(y, name + ".relu") : y;
}

// ResNet-50 v1.5 body; returns the outputs of the four stages (C2..C5).
std::vector<int> backbone(ModelBuilder& b, int x, const FasterRcnnParams& p) {
  x = conv_frozen_bn(b, x, 64, 7, 2, 3, "backbone.stem", true);
  x = b.max_pool(x, 3, 2, 1, "backbone.stem.maxpool");
  std::vector<int> stages;
  int64_t channels = 64;
  for (size_t stage = 0; stage < p.blocks.size(); ++stage) {
    const int width = 64 << stage, out_ch = width * 4;
    for (long long blk = 0; blk < p.blocks[stage]; ++blk) {
      const std::string name = "backbone.layer" + std::to_string(stage + 1) + "." + std::to_string(blk);
      const int stride = (blk == 0 && stage > 0) ? 2 : 1;
      int shortcut = x;
      if (stride != 1 || channels != out_ch)
        shortcut = conv_frozen_bn(b, x, out_ch, 1, stride, 0, name + ".downsample", false);
      int y = conv_frozen_bn(b, x, width, 1, 1, 0, name + ".1", true);
      y = conv_frozen_bn(b, y, width, 3, stride, 1, name + ".2", true);
      y = conv_frozen_bn(b, y, out_ch, 1, 1, 0, name + ".3", false);
      x = b.relu(b.add({y, shortcut}, name + ".add"), name + ".relu");
      channels = out_ch;
    }
    stages.push_back(x);
  }
  return stages;
}

// Feature pyramid: 1x1 lateral convs, nearest 2x upsampling added top-down, 3x3 output convs
// (all with bias), and P6 as a stride-2 1x1 max-pool of P5 (LastLevelMaxPool).
std::vector<int> fpn(ModelBuilder& b, const std::vector<int>& c, int channels) {
  std::vector<int> inner(c.size()), out(c.size());
  for (size_t i = c.size(); i-- > 0;) {
    const std::string lvl = std::to_string(i);
    inner[i] = b.conv(c[i], channels, 1, 1, 0, true, "fpn.inner" + lvl);
    if (i + 1 < c.size()) {
      const int up = b.copy_to(inner[i + 1], b.shape(inner[i]), 2, "fpn.upsample" + lvl);
      inner[i] = b.add({inner[i], up}, "fpn.topdown" + lvl);
    }
    out[i] = b.conv(inner[i], channels, 3, 1, 1, true, "fpn.layer" + lvl);
  }
  out.push_back(b.max_pool(out.back(), 1, 2, 0, "fpn.pool"));
  return out;
}

void build_faster_rcnn(ModelBuilder& b, const ModelSpec& s, const FasterRcnnParams& p) {
  Inputs in = image_inputs(b, s);
  const int ch = static_cast<int>(p.fpn_channels), a = static_cast<int>(p.anchors);
  const std::vector<int> levels = fpn(b, backbone(b, in.x, p), ch);

  // RPN: one head shared by every level.
  int conv0 = -1, cls0 = -1, box0 = -1;
  for (size_t i = 0; i < levels.size(); ++i) {
    const std::string lvl = "rpn.p" + std::to_string(i + 2);
    int t, cls, box;
    if (i == 0) {
      t = conv0 = b.conv(levels[i], ch, 3, 1, 1, true, lvl + ".conv");
      t = b.relu(t, lvl + ".relu");
      cls = cls0 = b.conv(t, a, 1, 1, 0, true, lvl + ".cls_logits");
      box = box0 = b.conv(t, 4 * a, 1, 1, 0, true, lvl + ".bbox_pred");
    } else {
      t = b.relu(b.conv_like(levels[i], conv0, lvl + ".conv"), lvl + ".relu");
      cls = b.conv_like(t, cls0, lvl + ".cls_logits");
      box = b.conv_like(t, box0, lvl + ".bbox_pred");
    }
    const int both = b.flatten(b.concat({cls, box}, 1, lvl + ".outputs"), lvl + ".flat");
    b.softmax_cross_entropy(both, in.labels, lvl + ".loss", /*auxiliary=*/true);
  }

  // Box head on the sampled proposals.
  const int64_t n = b.shape(in.x)[0], r = n * p.rois;
  int x = b.copy_to(levels[0], {r, ch, 7, 7}, 0, "roi_align");
  x = b.flatten(x, "roi_heads.flat");
  x = b.relu(b.dense(x, p.box_head, true, "roi_heads.box_head.fc6"), "roi_heads.box_head.relu6");
  x = b.relu(b.dense(x, p.box_head, true, "roi_heads.box_head.fc7"), "roi_heads.box_head.relu7");
  const int cls = b.dense(x, s.classes, true, "roi_heads.box_predictor.cls_score");
  const int box = b.dense(x, 4 * s.classes, true, "roi_heads.box_predictor.bbox_pred");
  b.softmax_cross_entropy(b.concat({cls, box}, 1, "roi_heads.outputs"), in.labels, "loss");
}

}  // namespace

ModelBuildFn parse_faster_rcnn(SpecReader& r) {
  FasterRcnnParams p;
  p.blocks = r.integers("blocks", std::vector<long long>{3, 4, 6, 3}, "blocks",
                        "bottleneck blocks per ResNet stage (ResNet-50: [3, 4, 6, 3])");
  if (p.blocks.size() != 4) r.fail("blocks", "the FPN takes four ResNet stages, got " + std::to_string(p.blocks.size()));
  for (long long n : p.blocks)
    if (n < 1 || n > 1000) r.fail("blocks", "each stage needs 1 to 1000 blocks, got " + std::to_string(n));
  const auto positive = layer_size_check;
  p.fpn_channels = r.integer("fpn_channels", 256, "channels", "width of every pyramid level", positive);
  p.anchors = r.integer("anchors", 3, "anchors", "anchors per location per level (aspect ratios)", positive);
  p.rois = r.integer("rois", 512, "boxes", "proposals per image the box head trains on (torchvision: 512)",
                     [](long long v) { return v > 0 && v <= 100000 ? "" : "must be in [1, 100000]"; });
  p.box_head = r.integer("box_head", 1024, "units", "width of the two dense layers of the box head", positive);
  return [p](ModelBuilder& b, const ModelSpec& s) { build_faster_rcnn(b, s, p); };
}

}  // namespace xpusim::zoo
