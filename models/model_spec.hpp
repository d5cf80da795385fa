// What a model is to every layer above models/: a ModelSpec (name, dataset, input shape,
// classes, the reference recipe and the function that builds its forward graph). Below both
// sources of models: the zoo (models/zoo/catalog.hpp, YAML files) and ONNX import
// (models/onnx/onnx_import.hpp); models/zoo.hpp finds a model in either and builds its graph.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/spec_reader.hpp"
#include "models/builder.hpp"
#include "models/llm_shape.hpp"

namespace xpusim {

struct ModelSpec;

// A family parses its `params:` mapping once and returns the function that builds the
// forward graph from those parsed parameters. It may fill the spec's family-derived fields
// (the transformer family sets `llm`); the fields above `params` are read when it runs.
using ModelBuildFn = std::function<void(ModelBuilder&, const ModelSpec&)>;
using FamilyParser = std::function<ModelBuildFn(SpecReader& params, ModelSpec& spec)>;

// What one sample is: an image [C, H, W] or a sequence [T] of tokens or feature vectors.
enum class ModelTask { image, sequence };

struct ModelSpec {
  std::string name;
  std::string description;
  std::string family;
  std::string dataset;            // key into the dataset catalog (imagenet, cifar10, ...)
  ModelTask task = ModelTask::image;
  std::vector<int64_t> input;     // image: [C, H, W]; sequence: [T]
  int64_t features = 0;           // sequence: 0 = int32 token ids; F = float features [T, F] (one-hot)
  int64_t classes = 0;
  // Tokens in one sample for families with token_throughput (the sequence length T), else 0:
  // predict/run/compare then report throughput_tokens_per_s = samples/s x T.
  int64_t tokens_per_sample = 0;
  std::optional<int64_t> reference_params;  // parameter count of the reference implementation
  std::string reference_source;
  std::string optimizer;          // the reference training recipe's optimizer
  std::string file;               // where it was loaded from
  // What an importer noticed that explains the counts (an ONNX export in eval mode, whose
  // BatchNorms torch folded into the convolutions); shown by `graph`. Empty for zoo models.
  std::vector<std::string> notes;
  // Decoder-only language models (the transformer family with a causal LM head): the closed-form
  // shape the large-model layer plans with (models/llm_shape.hpp); empty for every other model.
  std::optional<LlmShape> llm;
  // A learned position table as long as the run's sequence (llm-foundry's max_seq_len):
  // apply_seq_len (models/zoo_seq_len.hpp) sets llm->max_positions with the sequence length.
  bool positions_follow_seq_len = false;
  ModelBuildFn build;
};

}  // namespace xpusim
