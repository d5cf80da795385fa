#include "models/zoo/families.hpp"

namespace xpusim {

const std::vector<FamilyEntry>& model_families() {
  static const std::vector<FamilyEntry> families = {
      {"resnet", "ResNet v1.5 (torchvision): bottleneck or basic blocks", zoo::parse_resnet},
      {"wide_resnet", "Wide ResNet (Zagoruyko & Komodakis 2016), pre-activation, CIFAR", zoo::parse_wide_resnet},
      {"vgg", "VGG (torchvision, no batch-norm)", zoo::parse_vgg},
      {"alexnet", "AlexNet (torchvision one-tower variant)", zoo::parse_alexnet},
      {"inception_v3", "Inception v3 (torchvision, with auxiliary logits)", zoo::parse_inception_v3},
      {"sequential", "a list of layers in YAML (Keras Sequential style)", zoo::parse_sequential},
      {"ncf", "Neural collaborative filtering, NeuMF (He et al. 2017; MLPerf)", zoo::parse_ncf},
      {"word2vec", "word2vec skip-gram with sampled (NCE) loss", zoo::parse_word2vec},
      {"gnmt", "GNMT: LSTM encoder-decoder with attention (Wu et al. 2016; MLPerf)", zoo::parse_gnmt},
      {"transformer", "Transformer encoder/decoder: BERT (post-LN) and GPT-2 (pre-LN, causal) styles",
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
