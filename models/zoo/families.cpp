#include "models/zoo/families.hpp"

namespace xpusim {

namespace {
// A family whose parser reads only its params (every family but the transformer's).
FamilyParser plain(ModelBuildFn (*parse)(SpecReader&)) {
  return [parse](SpecReader& r, ModelSpec&) { return parse(r); };
}
}  // namespace

const std::vector<FamilyEntry>& model_families() {
  static const std::vector<FamilyEntry> families = {
      {"resnet", "ResNet v1.5 (torchvision): bottleneck or basic blocks", ModelTask::image, plain(zoo::parse_resnet)},
      {"wide_resnet", "Wide ResNet (Zagoruyko & Komodakis 2016), pre-activation, CIFAR", ModelTask::image, plain(zoo::parse_wide_resnet)},
      {"vgg", "VGG (torchvision, no batch-norm)", ModelTask::image, plain(zoo::parse_vgg)},
      {"alexnet", "AlexNet (torchvision one-tower variant)", ModelTask::image, plain(zoo::parse_alexnet)},
      {"inception_v3", "Inception v3 (torchvision, with auxiliary logits)", ModelTask::image, plain(zoo::parse_inception_v3)},
      {"inception_v4", "Inception v4 (Szegedy et al. 2017; TF-Slim, no auxiliary head)", ModelTask::image, plain(zoo::parse_inception_v4)},
      {"faster_rcnn", "Faster R-CNN, ResNet-50 FPN backbone (torchvision fasterrcnn_resnet50_fpn)", ModelTask::image, plain(zoo::parse_faster_rcnn)},
      {"sequential", "a list of layers in YAML (Keras Sequential style)", std::nullopt, plain(zoo::parse_sequential)},
      {"ncf", "Neural collaborative filtering, NeuMF (He et al. 2017; MLPerf)", ModelTask::sequence, plain(zoo::parse_ncf)},
      {"word2vec", "word2vec skip-gram with sampled (NCE) loss", ModelTask::sequence, plain(zoo::parse_word2vec)},
      {"gnmt", "GNMT: LSTM encoder-decoder with attention (Wu et al. 2016; MLPerf)", ModelTask::sequence, plain(zoo::parse_gnmt)},
      {"transformer", "Transformer encoder/decoder: BERT, GPT-2/3, MPT, Llama (RMSNorm, SwiGLU, rotary, GQA), Mixtral (MoE)", ModelTask::sequence,
       zoo::parse_transformer, /*token_throughput=*/true},
  };
  return families;
}

namespace zoo {

Inputs image_inputs(ModelBuilder& b, const ModelSpec& s) {
  Inputs in;
  in.x = b.image_input(s.input[0], s.input[1], s.input[2]);
  in.labels = b.labels();
  return in;
}

}  // namespace zoo
}  // namespace xpusim
