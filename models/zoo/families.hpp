// Declarations of the builder families; the registry list is in families.cpp.
#pragma once
#include "models/zoo/catalog.hpp"

namespace xpusim::zoo {

ModelBuildFn parse_resnet(SpecReader& p);
ModelBuildFn parse_wide_resnet(SpecReader& p);
ModelBuildFn parse_vgg(SpecReader& p);
ModelBuildFn parse_alexnet(SpecReader& p);
ModelBuildFn parse_inception_v3(SpecReader& p);
ModelBuildFn parse_inception_v4(SpecReader& p);
ModelBuildFn parse_sequential(SpecReader& p);
ModelBuildFn parse_ncf(SpecReader& p);
ModelBuildFn parse_word2vec(SpecReader& p);
ModelBuildFn parse_gnmt(SpecReader& p);
ModelBuildFn parse_faster_rcnn(SpecReader& p);
ModelBuildFn parse_transformer(SpecReader& p, ModelSpec& spec);

// Largest layer size (channels, units, kernel, vocabulary) a model file may give: the
// builder works in int, and OpGraph::add_tensor bounds the products.
constexpr long long kMaxLayerSize = 2147483647;

// The check every layer-size key takes (SpecReader::integer's validator): "" when v is a size.
inline const char* layer_size_check(long long v) { return v > 0 && v <= kMaxLayerSize ? "" : "must be in [1, 2147483647]"; }

// Shared input helper: image input + labels, or token ids + labels.
struct Inputs {
  int x = -1;
  int labels = -1;
};
Inputs image_inputs(ModelBuilder& b, const ModelSpec& s);

}  // namespace xpusim::zoo
