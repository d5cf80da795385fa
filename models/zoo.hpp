// Finding a model and building its graph, above both sources of models: a zoo name or model
// YAML (models/zoo/catalog.hpp) or an ONNX file (models/onnx/onnx_import.hpp), both giving a
// ModelSpec (models/model_spec.hpp). The zoo's loaders are re-exported for callers that list it.
#pragma once
#include <cstdint>
#include <string>

#include "common/config_paths.hpp"
#include "models/model_spec.hpp"
#include "models/onnx/onnx_import.hpp"
#include "models/training.hpp"
#include "models/zoo/catalog.hpp"

namespace xpusim {

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
