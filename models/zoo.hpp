// The model zoo: configs/models/<name>.yaml files, each naming a builder family (C++ in
// models/zoo/) and that family's parameters. A new model of an existing family is one
// YAML file; a new family is one file in models/zoo/ plus one line in models/zoo/families.cpp.
#pragma once
#include <yaml-cpp/yaml.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/spec_reader.hpp"
#include "common/config_paths.hpp"
#include "models/builder.hpp"
#include "models/onnx/onnx_import.hpp"
#include "models/training.hpp"

namespace xpusim {

struct ModelSpec;

// A family parses its `params:` mapping once and returns the function that builds the
// forward graph from those parsed parameters.
using ModelBuildFn = std::function<void(ModelBuilder&, const ModelSpec&)>;
using FamilyParser = std::function<ModelBuildFn(SpecReader& params)>;

// What one sample is: an image [C, H, W] or a sequence [T] of tokens or feature vectors.
enum class ModelTask { image, sequence };

struct FamilyEntry {
  std::string name;
  std::string description;
  // The kind of sample the family's builder reads (image families index input[0..2]); empty:
  // either, as the layers say (sequential). load_model_spec rejects a file whose task differs.
  std::optional<ModelTask> task;
  FamilyParser parse;
  // Whether a sample is a sequence whose every token is a unit of work (Transformers):
  // its models report throughput in tokens as well as in samples (sequences).
  bool token_throughput = false;
};
const std::vector<FamilyEntry>& model_families();

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
  ModelBuildFn build;
};

// Loads and validates one model YAML.
ModelSpec load_model_spec(const std::string& path);

// Every model in configs/models/, sorted by name.
std::vector<ModelSpec> load_zoo();
// A zoo name, a model YAML path, or an ONNX file (*.onnx, models/onnx/onnx_import.hpp; the
// options give shapes of its dynamic inputs). FieldError("model") when unknown.
ModelSpec find_model(const std::string& name_or_path, const OnnxImportOptions& onnx = {});

struct GraphOptions {
  int64_t batch = 1;
  Precision precision = Precision::fp32;
  bool training = true;
  // Task::inference builds the forward-only inference graph (models/inference.hpp) and
  // ignores `training` and `training_options`.
  Task task = Task::train;
  TrainingOptions training_options;
};
// Builds the forward graph (and lowers it to a training step when options.training, or to
// an inference pass when options.task is inference), with work counted on every op.
OpGraph build_graph(const ModelSpec& spec, const GraphOptions& options);

}  // namespace xpusim
