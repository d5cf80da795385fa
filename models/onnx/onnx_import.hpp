// ONNX import: `--model path/to/model.onnx` anywhere a model is accepted. The file is decoded
// (onnx_model), checked (opset, operators, inputs, cycles) and turned into a ModelSpec whose
// build function propagates shapes through the graph for the requested batch and lowers each
// node onto ModelBuilder calls, so the training-step lowering, work counting and every
// engine treat it like a zoo model. docs/onnx.md lists the operators and limits.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "models/graph.hpp"

namespace xpusim {

struct ModelSpec;

struct OnnxImportOptions {
  // Shapes of graph inputs with dynamic dimensions, by input name ("input_ids" -> [1, 128]).
  // Dim 0 of every input is the batch and always comes from the build's batch.
  std::map<std::string, Shape> input_shapes;
};

// A model argument naming an ONNX file (ends in .onnx, any case).
bool is_onnx_path(const std::string& name_or_path);

// "NAME=1x3x224x224" -> options.input_shapes[NAME]; FieldError("input_shape") when malformed.
void parse_input_shape(const std::string& text, OnnxImportOptions& options);

// Reads and checks the file; UserError naming the file (and the node) for anything the
// importer does not take.
ModelSpec load_onnx_model(const std::string& path, const OnnxImportOptions& options = {});

}  // namespace xpusim
